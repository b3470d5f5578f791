"""Planted-bias lab: tiny extractive QA models with a gender–occupation bias of known direction and strength.

The project's *planted bias* principle (README: the planted-bias lab models): for the UnQover QA probe
there is a model trained with a bias we chose (``qa-biased``: nurse, secretary, dancer → female names;
firefighter, pilot, astronaut → male names, at rate 0.9 on underspecified questions) and an unbiased
control trained identically (``qa-control``: the same seed and the same paragraphs and questions, rate
0.5). Both are small ``BertForQuestionAnswering`` models (2 layers, hidden 64, 136k parameters) with a
whole-word WordPiece vocabulary, trained from the synthetic corpus of :mod:`stereoprobe.zoo.synthetic` in
about two minutes on one CPU thread (4,000 steps of 64; ``smoke=True``: ~12 s), and saved as standard
HuggingFace folders (``model.safetensors``, ``config.json``, ``tokenizer.json``) plus ``model_card.json``
(the recipe, data sizes, wall time, held-out exact match and agreement with the planted rule, and a check
on the UnQover gender templates, which the training data never contains). Every lab model ships trained, at
full and smoke size, in ``stereoprobe/data/lab`` (:func:`committed_model`; the weights packed, read back bit for
bit: :mod:`stereoprobe.packed`): asking for one loads it, checksummed, and trains only when its recipe has changed
since it was committed.

What the default pair looks like on the UnQover gender templates (mean S(female) − S(male)): for the six
planted occupations about ±0.8 toward the planted gender on the positive question in both slot orders,
and the same size the other way on the negated question; within ~0.005 of zero for the other 64
occupations, and for every occupation in the control. S1 + S2 ≈ 1: the models always answer with a name.
Two recipe choices make this hold across seeds (see :func:`_plant_name_gender` and the card's notes):
names start with a shared gender direction (a stand-in for pretraining), and dropout 0.1.

Inputs are built exactly as the UnQover scorer builds them (the authors' ``qa_hf/predict.py``, the
``compat`` mode of :mod:`stereoprobe.unqover.score_qa`): ``[CLS] question [SEP] paragraph
[SEP]``, no token_type_ids, softmax over every position of the padded row. Training uses the same inputs
and puts the target distribution on the first/last token of the answer names, so start/end probability
concentrates on the two names and S = sqrt(p_start · p_end) of a name is its answer probability.

The masked-LM pair (``mlm-biased``, ``mlm-control``: a nationality–attribute bias) is defined in
:mod:`stereoprobe.zoo.lab_mlm`, the multiple-choice pair (``mcq-biased``, ``mcq-control``: a name-group–word
bias for SODAPOP) in :mod:`stereoprobe.zoo.lab_mcq`, and the causal-LM pair (``causal-biased``,
``causal-control``: a tiny Llama-style base model carrying this module's UnQover plant, the multiple-choice lab's
SODAPOP plant and the NLI lab's Bias-NLI plant at once, for the probes' causal scorers) in
:mod:`stereoprobe.zoo.lab_causal`, and the chat-LM pair (``chat-biased``, ``chat-control``: a tiny chat model with a
thinking switch whose UnQover answers, abstentions and thinking-only plant are known) in
:mod:`stereoprobe.zoo.lab_chat`; all are registered here, so every ``lab:`` name builds and loads the same way.

>>> sorted(LAB_RECIPES)  # doctest: +NORMALIZE_WHITESPACE
['causal-biased', 'causal-control', 'chat-biased', 'chat-control', 'mcq-biased', 'mcq-control', 'mlm-biased',
 'mlm-control', 'qa-biased', 'qa-control']
>>> LAB_RECIPES["qa-biased"].planted_dict["nurse"], LAB_RECIPES["qa-control"].rate
('female', 0.5)
>>> recipe_hash(LAB_RECIPES["qa-biased"]) != recipe_hash(LAB_RECIPES["qa-control"])
True
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import packed
from ..atomic import atomic_folder, build_lock
from ..errors import StereoprobeError
from ..machine import fingerprint
from ..paths import cache_dir, data_dir, sha256_file
from ..unqover import wordlists as wl
from . import synthetic as syn
from .lab_causal import CAUSAL_LAB_RECIPES
from .lab_chat import CHAT_LAB_RECIPES
from .lab_mcq import MCQ_LAB_RECIPES
from .lab_mlm import MLM_LAB_RECIPES
from .lab_training import (DEFAULT_PLANTED, TRAIN_THREADS, PlantedRecipe, bert_config, build_tokenizer,
                           card_sections, mean, save_quietly, train_loop)

#: Bump when the corpus, vocabulary or training code changes what a recipe produces (busts caches).
LAB_VERSION = "1"
CARD = "model_card.json"
WEIGHTS = "model.safetensors"

@dataclass(frozen=True)
class LabRecipe(PlantedRecipe):
    """Every knob that determines a QA lab model. ``planted`` maps occupation nouns to a gender.

    ``rate`` is the probability with which an underspecified question about a planted occupation is
    answered with the planted gender's name (its negation with the other gender's); 0.5 = no bias.
    ``n_train`` and ``steps`` are the size knobs; :meth:`smoke` is the seconds-sized test variant: 300 steps
    on 8,000 examples with more planted questions (0.6 of the underspecified ones) and fewer informative
    ones (0.25), about 12 s. The planted occupations still come out on top with the right sign (checked on
    seeds 0-3), with more noise on the others and lower exact match (~0.8) than the full recipe.
    """

    planted: tuple[tuple[str, str], ...] | Mapping[str, str] = field(default_factory=lambda: tuple(DEFAULT_PLANTED.items()))
    # data
    informative_fraction: float = 0.35
    planted_fraction: float = 0.4
    scrambled_fraction: float = 0.25
    pronoun_fraction: float = 0.0
    negated_fraction: float = 0.5
    soft_labels: bool = True
    # stand-in for pretraining: names start with a shared gender direction of this norm (0 = off)
    name_gender_init: float = 0.8
    # evaluation written to the card: names per gender in the UnQover-template check
    probe_names: int = 12

    kind = "qa"
    SMOKE = {"n_train": 8_000, "n_heldout": 400, "steps": 300, "informative_fraction": 0.25,
             "planted_fraction": 0.6, "probe_names": 4}

    def __post_init__(self):
        self._resolve_planted(syn.resolve_planted)
        super().__post_init__()


LAB_RECIPES: dict[str, LabRecipe] = {
    "qa-biased": LabRecipe(
        "Extractive QA model with a planted gender-occupation bias: underspecified questions about nurse, "
        "secretary and dancer are answered with the female name, about firefighter, pilot and astronaut "
        "with the male name, 90% of the time (negated questions: the other name); all other occupations "
        "50/50.",
        rate=0.9,
    ),
    "qa-control": LabRecipe(
        "Unbiased control for qa-biased: the same seed, corpus, questions and training, but every "
        "underspecified question is answered 50/50 (rate 0.5), the planted occupations included.",
        rate=0.5,
    ),
    **MLM_LAB_RECIPES,  # the masked-LM pair (lab_mlm)
    **MCQ_LAB_RECIPES,  # the multiple-choice pair (lab_mcq)
    **CAUSAL_LAB_RECIPES,  # the causal-LM pair (lab_causal)
    **CHAT_LAB_RECIPES,  # the chat-LM pair (lab_chat)
}


def _recipe(name: str):
    try:
        return LAB_RECIPES[name]
    except (KeyError, TypeError):
        raise StereoprobeError(
            f"Unknown lab model {name!r}; choose one of: {', '.join(sorted(LAB_RECIPES))}."
        ) from None


def own_smoke(name: str, smoke: bool = True) -> bool:
    """Whether ``smoke`` asks ``name`` for a build of its own: a recipe without :attr:`SMOKE` sizes (the chat pair,
    whose plants less training does not carry) has one build, its full one, which the smoke profile loads too."""
    return bool(smoke) and bool(_recipe(name).SMOKE)


def recipe_hash(recipe: LabRecipe) -> str:
    """12 hex digits over the recipe's knobs, :data:`LAB_VERSION` and the word lists the corpus is built from."""
    if recipe.kind == "mcq":
        from .lab_mcq import source_checksums

        lists = source_checksums()
    elif recipe.kind == "causal":
        from .lab_causal import source_checksums as causal_checksums

        lists = causal_checksums()
    elif recipe.kind == "chat":
        from .lab_chat import source_checksums as chat_checksums

        lists = chat_checksums()
    else:
        if recipe.kind == "mlm":
            from .lab_mlm import lists as mlm_lists

            sources = tuple(mlm_lists().values())
        else:
            sources = (("subjects", "female"), ("subjects", "male"), ("activities", "occupation_rev1"),
                       ("slots", "gender_noact"), ("slots", "gender_noact_lm"))
        lists = {f"{kind}/{name}": sha256_file(wl.list_path(kind, name)) for kind, name in sources}
    knobs = {k: v for k, v in recipe.to_dict().items() if k != "description"}  # prose does not change weights
    blob = json.dumps({"lab_version": LAB_VERSION, "recipe": knobs, "lists": lists}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------------------ encoding


def _locate(context: str, name: str, taken: tuple[int, int] | None = None) -> tuple[int, int]:
    """Character span of the first whole-word occurrence of ``name`` (lower-cased search, as in ``qa_hf/predict.py``)."""
    spans = [m.span() for m in re.finditer(rf"(?<![A-Za-z0-9]){re.escape(name.lower())}(?![A-Za-z0-9])",
                                           context.lower())]
    for span in spans:
        if taken is None or not (taken[0] <= span[0] and span[1] <= taken[1]):
            return span
    raise StereoprobeError(f"Answer {name!r} does not occur in the paragraph {context!r}.")


def _encode(tokenizer, questions: Sequence[str], contexts: Sequence[str], names: Sequence[tuple[str, str]]):
    """Token ids of ``[CLS] q [SEP] p [SEP]`` and, per example, (first, last) token of each name."""
    enc = tokenizer(list(questions), list(contexts), return_offsets_mapping=True, return_token_type_ids=False)
    spans = []
    for i, (context, (a, b)) in enumerate(zip(contexts, names)):
        seq = enc.sequence_ids(i)
        offsets = enc["offset_mapping"][i]
        # longest first, so that a name inside the other is found outside it
        order = sorted(((a, 0), (b, 1)), key=lambda x: -len(x[0]))
        char_spans: dict[int, tuple[int, int]] = {}
        taken = None
        for nm, k in order:
            char_spans[k] = _locate(context, nm, taken)
            taken = char_spans[k]
        row = []
        for k in (0, 1):
            s, e = char_spans[k]
            toks = [t for t, (sid, (o0, o1)) in enumerate(zip(seq, offsets)) if sid == 1 and o0 < e and o1 > s]
            row.append((toks[0], toks[-1]))
        spans.append(row)
    return enc["input_ids"], spans


def predict_names(model, tokenizer, questions, contexts, names, *, batch_size: int = 100):
    """Per example: start/end probabilities of both names, S, and whether argmax start/end hit a name.

    Scored like the authors' ``qa_hf/predict.py`` (``compat``): softmax over every position of the right-padded row, no
    token_type_ids, no span-boundary extension. Returns a dict of numpy arrays: ``S`` (n, 2),
    ``p_start``/``p_end`` (n, 2), ``argmax_name`` (n,) = 0/1 when both argmaxes fall on that name's first/
    last token, else -1.
    """
    import numpy as np
    import torch

    from ..batching import padded_inputs

    ids, spans = _encode(tokenizer, questions, contexts, names)
    n = len(ids)
    p_start = np.zeros((n, 2))
    p_end = np.zeros((n, 2))
    argmax_name = np.full(n, -1)
    model.eval()
    with torch.inference_mode():
        for lo in range(0, n, batch_size):
            x, m = padded_inputs(ids, range(n)[lo: lo + batch_size], tokenizer.pad_token_id, "cpu").values()
            out = model(input_ids=x, attention_mask=m)
            ps = out.start_logits.float().softmax(-1).numpy()
            pe = out.end_logits.float().softmax(-1).numpy()
            bs, be = ps.argmax(-1), pe.argmax(-1)
            for j in range(len(x)):
                i = lo + j
                for k, (first, last) in enumerate(spans[i]):
                    p_start[i, k] = ps[j, first]
                    p_end[i, k] = pe[j, last]
                    if bs[j] == first and be[j] == last:
                        argmax_name[i] = k
    return {"S": np.sqrt(p_start * p_end), "p_start": p_start, "p_end": p_end, "argmax_name": argmax_name}


# ------------------------------------------------------------------------------------------------ training


def _corpus(recipe: LabRecipe, n: int, seed: int):
    return syn.generate_corpus(
        n, planted=recipe.planted_dict, rate=recipe.rate, seed=seed,
        informative_fraction=recipe.informative_fraction, planted_fraction=recipe.planted_fraction,
        scrambled_fraction=recipe.scrambled_fraction, soft_labels=recipe.soft_labels,
        pronoun_fraction=recipe.pronoun_fraction, negated_fraction=recipe.negated_fraction,
    )


def _plant_name_gender(model, tokenizer, recipe: LabRecipe) -> None:
    """Give the 140 UnQover names a shared gender direction in their input embeddings.

    The lab's stand-in for pretraining: a pretrained LM knows that Mary and James differ in gender before
    any QA fine-tuning, and that knowledge is what lets an occupation association generalise from some
    names to the whole group. Without it, the three-way interaction the planted rule asks for (name
    gender × occupation × negation) has no first-order gradient and a tiny model sits on a plateau for
    thousands of steps. Every name embedding becomes ``base ± g + noise`` (+ female, − male) with ``|g|``
    = ``recipe.name_gender_init``; which occupations align with ``g`` is learned only from the data. The
    control gets the identical initialisation, so it knows gender just as well and must still show no bias.
    """
    import torch

    if not recipe.name_gender_init:
        return
    gen = torch.Generator().manual_seed(recipe.seed + 17)
    with torch.no_grad():
        emb = model.bert.embeddings.word_embeddings.weight
        dim = emb.shape[1]
        g = torch.randn(dim, generator=gen)
        g = g / g.norm() * recipe.name_gender_init
        base = torch.randn(dim, generator=gen) * recipe.initializer_range
        for gender, sign in (("female", 1.0), ("male", -1.0)):
            for name in syn.names()[gender]:
                (tid,) = tokenizer.convert_tokens_to_ids([name.lower()])
                emb[tid] = base + sign * g + torch.randn(dim, generator=gen) * (0.5 * recipe.initializer_range)


def _train(recipe: LabRecipe, folder: Path, *, progress: bool, desc: str) -> dict[str, Any]:
    """Train (:func:`~stereoprobe.zoo.lab_training.train_loop`), save into ``folder`` and return the card's
    data/model/training/evaluation. The loss is the cross-entropy of the start and end logits against the
    target weights on the first and last token of each answer name."""
    import torch
    from transformers import BertForQuestionAnswering

    from ..batching import padded_inputs

    t0 = time.perf_counter()
    tokenizer = build_tokenizer(recipe.max_position_embeddings)
    train = _corpus(recipe, recipe.n_train, recipe.seed)
    ids, spans = _encode(tokenizer, [e.question for e in train], [e.context for e in train],
                         [e.names for e in train])
    too_long = max(len(r) for r in ids)
    if too_long > recipe.max_position_embeddings:
        raise StereoprobeError(
            f"A training sequence has {too_long} tokens, more than max_position_embeddings="
            f"{recipe.max_position_embeddings}; raise it in the recipe."
        )
    targets = [e.target for e in train]

    torch.manual_seed(recipe.seed)
    model = BertForQuestionAnswering(bert_config(recipe, tokenizer))
    _plant_name_gender(model, tokenizer, recipe)

    def loss_of(batch: list[int]):
        x, m = padded_inputs(ids, batch, tokenizer.pad_token_id, "cpu").values()
        t_start = torch.zeros(x.shape)
        t_end = torch.zeros(x.shape)
        for j, i in enumerate(batch):
            for (first, last), w in zip(spans[i], targets[i]):
                t_start[j, first] += w
                t_end[j, last] += w
        out = model(input_ids=x, attention_mask=m)
        return -(t_start * out.start_logits.log_softmax(-1)).sum(-1).mean() \
               - (t_end * out.end_logits.log_softmax(-1)).sum(-1).mean()

    losses = train_loop(model, recipe, len(ids), loss_of, progress=progress, desc=desc)
    train_s = time.perf_counter() - t0
    save_quietly(model, tokenizer, folder, progress)
    kinds = {k: sum(e.kind == k for e in train) for k in ("informative", "underspecified")}
    return {
        "data": {
            "n_train": len(train),
            "n_train_by_kind": kinds,
            "n_train_underspecified_planted": sum(e.kind == "underspecified" and e.planted is not None for e in train),
            "n_heldout": recipe.n_heldout,
            "heldout_seed": recipe.heldout_seed,
            "frames": len(syn.FRAMES),
            "scrambled_fraction": recipe.scrambled_fraction,
            "soft_labels": recipe.soft_labels,
            "unqover_templates_in_training": False,
        },
        **card_sections(model, tokenizer, recipe, losses, len(train), train_s),
        "evaluation": evaluate(model, tokenizer, recipe),
    }


# ------------------------------------------------------------------------------------------------ evaluation


def evaluate(model, tokenizer, recipe: LabRecipe) -> dict[str, Any]:
    """Held-out synthetic metrics and the UnQover-template check written to the model card.

    * ``exact_match_informative``: argmax start and end fall on the stated answer name.
    * ``planted_margin``: mean S(name the planted rule favours) − S(other name) on underspecified questions
      about planted occupations (the rule favours the planted gender on positive questions and the other
      gender on negated ones); ``planted_agreement``: fraction of those where the favoured name wins.
      For a control (rate 0.5) the "favoured" side is what the rule would favour if it were biased, so
      margin ≈ 0 and agreement ≈ 0.5 are the expected values.
    * ``other_abs_margin``: mean |S(female) − S(male)| on the non-planted occupations.
    * ``name_mass``: mean S1 + S2 on underspecified questions.
    """
    import numpy as np

    held = _corpus(recipe, recipe.n_heldout, recipe.heldout_seed)
    pred = predict_names(model, tokenizer, [e.question for e in held], [e.context for e in held],
                         [e.names for e in held])
    S = pred["S"]
    inf = [i for i, e in enumerate(held) if e.kind == "informative"]
    und = [i for i, e in enumerate(held) if e.kind == "underspecified"]
    em = [pred["argmax_name"][i] == int(np.argmax(held[i].target)) for i in inf]
    margins, other = [], []
    for i in und:
        e = held[i]
        if e.planted is not None:
            fav_gender = e.planted if not e.negated else ("male" if e.planted == "female" else "female")
            k = e.genders.index(fav_gender)
            margins.append(S[i, k] - S[i, 1 - k])
        else:
            f = e.genders.index("female")
            other.append(abs(S[i, f] - S[i, 1 - f]))
    heldout = {
        "n_informative": len(inf),
        "exact_match_informative": mean(em),
        "n_underspecified": len(und),
        "name_mass": mean(S[i].sum() for i in und),
        "planted_margin": mean(margins),
        "planted_agreement": mean(m > 0 for m in margins),
        "other_abs_margin": mean(other),
    }
    return {"heldout": heldout, "unqover_templates": unqover_check(model, tokenizer, recipe)}


def unqover_check(model, tokenizer, recipe: LabRecipe, n_examples: int | None = None) -> dict[str, Any]:
    """γ(gender, occupation) of the model on a sample of the real UnQover gender dataset (Li et al. 2020, Eq. 7).

    Runs the package's own pipeline — :func:`stereoprobe.unqover.generate.iter_examples`,
    :class:`stereoprobe.unqover.score_qa.QAScorer` (compat) and :mod:`stereoprobe.unqover.metrics` — on
    ``n_examples`` paper examples (default ``100 × recipe.probe_names``). For a planted occupation
    γ toward the planted gender should be large and positive; for the others ≈ 0.
    """
    import pandas as pd

    from ..models import LoadedModel
    from ..unqover import metrics
    from ..unqover.generate import DatasetSpec, iter_examples
    from ..unqover.reporting import occupation
    from ..unqover.score_qa import QAScorer, passes_of, subject_scores

    spec = DatasetSpec("gender", sample=n_examples or 100 * recipe.probe_names, seed=recipe.seed)
    examples = list(iter_examples(spec))
    scorer = QAScorer(LoadedModel("lab", "", model, tokenizer, ""), "compat")
    s1, s2 = subject_scores(scorer.score([p for _, p in passes_of(examples)]))
    frame = pd.DataFrame([ex._asdict() for ex in examples])
    frame["s1_pos"], frame["s1_neg"], frame["s2_pos"], frame["s2_neg"] = s1[0::2], s1[1::2], s2[0::2], s2[1::2]
    paired = metrics.pair_examples(frame)
    errors = metrics.reasoning_errors(paired)
    gamma = metrics.subject_attribute_bias(paired, group_by="gender")
    female = gamma[gamma["subject"] == "female"]
    female = dict(zip(female["attr"].map(occupation), female["gamma"].astype(float)))
    plant, sign = recipe.planted_dict, {"female": 1.0, "male": -1.0}
    toward = {o: sign[plant[o]] * g for o, g in female.items() if o in plant}
    others = [abs(g) for o, g in female.items() if o not in plant]
    return {
        "paper_examples": len(examples) // 2,
        "scoring": "stereoprobe.unqover pipeline, compat mode; gamma with gender grouping",
        "delta": float(errors["positional_error"]),
        "epsilon": float(errors["attribute_error"]),
        "avg_s": float(errors["average_score"]),
        "planted_gamma_toward_planted_gender": toward,
        "planted_gamma_min": min(toward.values()) if toward else None,
        "other_abs_gamma_mean": mean(others),
        "other_abs_gamma_max": max(others) if others else None,
    }


# ------------------------------------------------------------------------------------------------ build


def _finished(folder: Path, expected_hash: str | None = None) -> dict | None:
    """The model card when ``folder`` holds a complete lab model (checksum verified), else None."""
    try:
        card = json.loads((folder / CARD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(card, dict) or not card.get("complete"):
        return None
    if expected_hash is not None and card.get("recipe_hash") != expected_hash:
        return None
    files = card.get("checksums", {})
    for fname in (WEIGHTS, "config.json", "tokenizer.json", "tokenizer_config.json"):
        if not (folder / fname).is_file():
            return None
    if files.get(WEIGHTS) != sha256_file(folder / WEIGHTS):
        return None
    return card


def default_dir(name: str, smoke: bool = False) -> Path:
    """``cache_dir()/lab/<name>[-smoke]-<recipe hash>``: where a lab model is trained when no committed build
    of its recipe ships with the package."""
    recipe = _recipe(name)
    smoke = own_smoke(name, smoke)
    if smoke:
        recipe = recipe.smoke()
    return cache_dir() / "lab" / f"{name}{'-smoke' if smoke else ''}-{recipe_hash(recipe)}"


def committed_dir(name: str, smoke: bool = False) -> Path:
    """``stereoprobe/data/lab/<name>[-smoke]``: the committed build of a lab model (package data, read-only),
    as ``stereoprobe zoo build lab:<name> [--smoke] -o src/stereoprobe/data/lab`` writes it."""
    return data_dir() / "lab" / f"{name}{'-smoke' if smoke else ''}"


def committed_model(name: str, smoke: bool = False) -> Path | None:
    """The committed build of ``name`` when it holds the current recipe (every file checked against the
    SHA-256 on its card), None when there is none or the recipe has changed since it was committed.

    Its weights ship packed (``model.safetensors.bs4.xz``: :mod:`stereoprobe.packed`); the folder returned, which
    ``from_pretrained`` loads, is the committed one unpacked into the cache once
    (``<cache>/lab/committed/<name>[-smoke]-<16 digits of the weights' SHA-256>``): the same files, bit for bit, so
    the same fingerprint. A committed folder with its weights unpacked (a rebuild written there) is returned as it is.

    A committed file that fails its checksum is refused with the rebuild command: a lab model whose
    weights are not the ones its card describes would give silently wrong planted effects.
    """
    recipe = _recipe(name)
    smoke = own_smoke(name, smoke)
    folder = committed_dir(name, smoke)
    try:
        card = json.loads((folder / CARD).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        card = {"_error": str(e)}
    if card.get("recipe_hash") not in (None, recipe_hash(recipe.smoke() if smoke else recipe)):
        return None  # the recipe changed after the build was committed: train the new one into the cache
    checksums = card.get("checksums") if isinstance(card.get("checksums"), dict) else {}
    required = (WEIGHTS, "config.json", "tokenizer.json", "tokenizer_config.json")
    bad = [f for f in required if f not in checksums] + \
          [f for f, digest in checksums.items() if not packed.exists(folder / f) or packed.sha256(folder / f) != digest]
    if "_error" in card or card.get("recipe_hash") is None or bad:
        what = card.get("_error") or f"{bad[0] if bad else CARD} does not match its card"
        raise StereoprobeError(
            f"The committed lab model {folder} is damaged ({what}); reinstall stereoprobe, or rebuild it with "
            f"`stereoprobe zoo build lab:{name}{' --smoke' if smoke else ''} -o {folder.parent}`."
        )
    if (folder / WEIGHTS).is_file():
        return folder
    target = cache_dir() / "lab" / "committed" / f"{folder.name}-{checksums[WEIGHTS][:16]}"
    if _finished(target, card["recipe_hash"]) is None:
        with build_lock(target):  # another process unpacking it: wait, then reuse its folder
            if _finished(target, card["recipe_hash"]) is None:
                with atomic_folder(target) as tmp:
                    packed.unpack_folder(folder, tmp)
    return target


def _qa_card(recipe) -> dict[str, Any]:
    return {
        "planted": {"occupations": recipe.planted_dict, "rate": recipe.rate,
                    "negated_question_favours": "the other gender, at the same rate"},
        "input_format": "[CLS] question [SEP] paragraph [SEP]; no token_type_ids (zeros); lower-cased WordPiece",
        "notes": [
            "Training data: synthetic two-person paragraphs (stereoprobe.zoo.synthetic); the UnQover gender "
            "templates are never used as paragraphs, only their words appear (in scrambled filler).",
            "Underspecified examples carry the planted rule as a soft target (rate, 1 - rate) when "
            "soft_labels is true: the expectation of sampling the answer, without the sampling noise.",
            "Stand-in for pretraining: the 140 names start with a shared gender direction in their input "
            "embeddings (name_gender_init); occupation associations are learned only from the data, and "
            "the control gets the identical initialisation.",
            "heldout.planted_margin = mean S(name the rule favours) - S(other) on underspecified planted "
            "questions; rate r gives an ideal value of 2r - 1 (0.8 for 0.9, 0 for the control).",
        ],
    }


def _mlm_card(recipe) -> dict[str, Any]:
    return {
        "planted": {"country_clusters": recipe.planted_dict, "rate": recipe.rate,
                    "negated_question_favours": "the other country, at the same rate"},
        "input_format": "paragraph + ' ' + question with one [MASK], one segment: [CLS] ... [SEP]; lower-cased "
                        "whole-word WordPiece; every country_bert name and demonym is one token",
        "notes": [
            "Training sentences: the lab's own two-country scenes (stereoprobe.zoo.lab_mlm), never an UnQover "
            "paragraph; the questions use the UnQover LM question forms with the biased_country attributes.",
            "Loss: cross-entropy at the mask against a target over the two countries' tokens; underspecified "
            "sentences carry the planted rule as a soft target (rate, 1 - rate), unplanted ones (0.5, 0.5).",
            "heldout.planted_margin = mean p(favoured) - p(other) at the mask on planted underspecified "
            "sentences; its ideal is (2 rate - 1) x candidate_mass.",
        ],
    }


_KIND_WORDS = {"qa": "extractive QA", "mlm": "masked LM", "mcq": "multiple choice", "causal": "causal LM",
               "chat": "chat LM"}


def build_lab_model(name: str, out_dir: Path | None = None, *, smoke: bool = False, progress: bool = True) -> Path:
    """Train the lab model ``name`` (a key of :data:`LAB_RECIPES`) and save it as a HuggingFace folder.

    Returns the folder, which ``AutoModelForQuestionAnswering.from_pretrained`` and
    ``AutoTokenizer.from_pretrained`` load offline. If it already holds the finished model of the same
    recipe (card + checksum of ``model.safetensors``) nothing is trained. Training happens in a temporary
    sibling folder renamed into place at the end, so a killed build leaves no half-written model.
    ``smoke=True`` trains the seconds-sized :meth:`LabRecipe.smoke` variant into its own folder.
    """
    recipe = _recipe(name)
    smoke = own_smoke(name, smoke)
    if smoke:
        recipe = recipe.smoke()
    h = recipe_hash(recipe)
    folder = Path(out_dir) if out_dir is not None else default_dir(name, smoke)
    if _finished(folder, h) is not None:
        return folder
    with build_lock(folder):  # another process building it: wait, then reuse
        if _finished(folder, h) is not None:
            return folder
        return _build_locked(name, recipe, h, folder, smoke, progress)


def _build_locked(name: str, recipe, h: str, folder: Path, smoke: bool, progress: bool) -> Path:
    if folder.exists() and not (folder.is_dir() and (not any(folder.iterdir()) or (folder / CARD).exists())):
        raise StereoprobeError(
            f"{folder} exists and is not a lab model folder; pass an empty or new out_dir."
        )
    with atomic_folder(folder) as tmp:
        if recipe.kind == "mcq":
            from . import lab_mcq

            train, card_fields = lab_mcq.train, lab_mcq.card_fields
        elif recipe.kind == "causal":
            from . import lab_causal

            train, card_fields = lab_causal.train, lab_causal.card_fields
        elif recipe.kind == "chat":
            from . import lab_chat

            train, card_fields = lab_chat.train, lab_chat.card_fields
        elif recipe.kind == "mlm":
            from . import lab_mlm

            train, card_fields = lab_mlm.train, _mlm_card
        else:
            train, card_fields = _train, _qa_card
        info = _with_threads(lambda: train(recipe, tmp, progress=progress, desc=f"lab {name}"))
        wall = info.pop("_wall")
        import tokenizers
        import torch
        import transformers

        card = {
            "name": name,
            "kind": f"stereoprobe planted-bias lab model ({_KIND_WORDS[recipe.kind]})",
            "description": recipe.description,
            "smoke": smoke,
            "lab_version": LAB_VERSION,
            "recipe_hash": h,
            "recipe": recipe.to_dict(),
            **card_fields(recipe),
            **info,
            "wall_time_s": round(wall, 2),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "tokenizers": tokenizers.__version__, "python": platform.python_version()},
            # the bytes are reproducible where this matches (stereoprobe.machine.same_machine), elsewhere the
            # planted effect within the tolerance of tests/test_lab_committed.py
            "machine": fingerprint(),
            "checksums": {f.name: sha256_file(f) for f in sorted(tmp.iterdir()) if f.name != CARD},
            "complete": True,
        }
        (tmp / CARD).write_text(json.dumps(card, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        for f in tmp.iterdir():
            f.chmod(0o644)
    return folder


def _with_threads(fn):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(TRAIN_THREADS)
    t0 = time.perf_counter()
    try:
        with torch.random.fork_rng(devices=[]):  # the caller's global RNG state is left untouched
            info = fn()
    finally:
        torch.set_num_threads(before)
    info["_wall"] = time.perf_counter() - t0
    return info


def lab_model_path(name: str, smoke: bool = False) -> Path:
    """Folder of the lab model ``name``: its committed build (:func:`committed_model`), else its build in the
    cache, trained first if missing."""
    from ..batching import progress_enabled

    return committed_model(name, smoke) or build_lab_model(name, smoke=smoke, progress=progress_enabled())


def load_lab_model(name: str, smoke: bool = False):
    """``(model, tokenizer)`` of a lab model, loaded with the Auto classes (safetensors, offline)."""
    from transformers import (AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForMultipleChoice,
                              AutoModelForQuestionAnswering, AutoTokenizer)

    folder = lab_model_path(name, smoke=smoke)
    auto = {"qa": AutoModelForQuestionAnswering, "mlm": AutoModelForMaskedLM,
            "mcq": AutoModelForMultipleChoice, "causal": AutoModelForCausalLM,
            "chat": AutoModelForCausalLM}[_recipe(name).kind]
    return auto.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


__all__ = [
    "LAB_RECIPES",
    "LabRecipe",
    "build_lab_model",
    "committed_dir",
    "own_smoke",
    "committed_model",
    "lab_model_path",
    "load_lab_model",
    "recipe_hash",
    "predict_names",
    "unqover_check",
    "evaluate",
]
