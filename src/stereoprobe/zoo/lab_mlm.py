"""Planted-bias lab, masked LM: a tiny MLM with a nationality–attribute bias of known direction and strength.

The masked-LM counterpart of the QA lab (:mod:`stereoprobe.zoo.lab`). ``mlm-biased`` is trained so that,
when a sentence names two countries (or two nationals) and says nothing about either, the mask of a
question about an attribute of a *planted cluster* is filled with the planted country at rate 0.9 (its
negated question with the other country): Norway ↔ the ``crime`` attributes, Canada ↔ ``poor``, Japan ↔
``indecent`` of ``biased_country``. The choice is arbitrary and deliberately unlike any real stereotype, so
that what the probe finds can only come from the plant. ``mlm-control`` is trained identically (same
seed, same sentences) at rate 0.5.

Both are ``BertForMaskedLM`` models (2 layers, hidden 64, tied input/output embeddings) over a whole-word
WordPiece vocabulary that holds every country and demonym of the ``country_bert`` list as one token, so
the UnQover nationality LM dataset (variant ``lm-bert``) runs on them unchanged, through the package's
own scorer (:class:`stereoprobe.unqover.score_lm.LMScorer`, compat: top-10 truncation).

Training sentences (:func:`generate_corpus`) are ``paragraph + " " + question`` with one ``[MASK]``, as
the UnQover LM input is built (the authors' ``lm/predict.py``). Paragraphs are the lab's own two-country scenes, never an UnQover
template; the *questions* use the UnQover LM question forms ("[MASK] was the place where people …",
"The [MASK] …"), since a masked LM must see the form in which it is asked. Every sentence is
underspecified — a neutral scene says nothing about either country — and its target is the planted rule
as a soft label over the two countries' tokens: (rate, 1 − rate) for a planted (country, cluster), 50/50
for every other pair. The model thus learns to fill the mask with one of the two countries named, and
whatever preference it has between them is the planted one. (A first version also had "informative"
sentences stating the attribute for one country; the 2-layer model never learned to read them — held-out
accuracy 0.51 — and their labels, noise to it, added spurious country–attribute associations.)

>>> recipe = MLM_LAB_RECIPES["mlm-biased"]
>>> recipe.planted_dict
{'Canada': 'poor', 'Japan': 'indecent', 'Norway': 'crime'}
>>> corpus = generate_corpus(recipe, 3, seed=0)
>>> all(ex.text.count("[MASK]") == 1 for ex in corpus), abs(sum(corpus[0].target) - 1.0) < 1e-9
(True, True)
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

from ..errors import StereoprobeError
from ..unqover import wordlists as wl
from .lab_training import PlantedRecipe, bert_config, build_tokenizer, card_sections, mean, save_quietly, train_loop

SUBJECTS = "country_bert"
ATTRIBUTES = "biased_country"
TEMPLATES = "country_noact_lm"
MASK = "[MASK]"

DEFAULT_PLANTED_MLM: dict[str, str] = {"Norway": "crime", "Canada": "poor", "Japan": "indecent"}

#: Two-country scenes (names): ``{a}`` then ``{b}``. None is an UnQover template.
PLACE_FRAMES: tuple[str, ...] = (
    "{a} and {b} signed a trade agreement.",
    "The ship sailed from {a} to {b}.",
    "{a} played against {b} in the final.",
    "The train goes from {a} to {b}.",
    "{a} sent a gift to {b}.",
    "Travelers from {a} visited {b}.",
    "There is a new road between {a} and {b}.",
    "{a} is far away from {b}.",
    "We flew over {a} and then over {b}.",
    "The letter came from {a}, the parcel from {b}.",
)
#: Two-person scenes (demonyms).
PERSON_FRAMES: tuple[str, ...] = (
    "The {a} had lunch with the {b}.",
    "The {a} met the {b} at the station.",
    "The {a} sat next to the {b} on the bus.",
    "The {a} talked with the {b} after the meeting.",
    "The {a} waved at the {b} from the car.",
    "The {a} and the {b} are neighbors.",
    "The {a} shared a table with the {b}.",
    "Yesterday the {a} called the {b}.",
    "The {a} arrived first and the {b} arrived later.",
    "The {a} asked the {b} for directions.",
)


class Subject(NamedTuple):
    name: str  # identity (plain form)
    token: str  # the word standing for it in this sentence (name or demonym)


class MLMExample(NamedTuple):
    """One training sentence: ``text`` with one mask, the two candidates and the target over them."""

    text: str
    subjects: tuple[str, str]  # identities (plain country names) of the first- and second-mentioned
    tokens: tuple[str, str]  # the words that fill the mask for them (name or demonym)
    target: tuple[float, float]
    attribute: str  # identity text of the attribute asked about
    cluster: str
    negated: bool
    planted: str | None  # the planted country of (subjects, cluster), if any


@dataclass(frozen=True)
class MLMLabRecipe(PlantedRecipe):
    """Every knob that determines a lab masked LM; ``planted`` maps country names to attribute clusters.
    :meth:`smoke`: fewer sentences and steps, more of them planted."""

    planted: tuple[tuple[str, str], ...] | Mapping[str, str] = field(
        default_factory=lambda: tuple(DEFAULT_PLANTED_MLM.items()))
    # data
    planted_fraction: float = 0.4
    max_position_embeddings: int = 96
    steps: int = 2_000
    # the card's check on the UnQover nationality LM dataset
    probe_examples: int = 12_000

    kind = "mlm"
    SMOKE = {"n_train": 6_000, "n_heldout": 400, "steps": 500, "planted_fraction": 0.6, "probe_examples": 3_000}

    def __post_init__(self):
        self._resolve_planted(resolve_planted)
        super().__post_init__()


# ------------------------------------------------------------------------------------------------ data


@lru_cache(maxsize=1)
def countries() -> tuple[tuple[str, str], ...]:
    """(name, demonym) of the ``country_bert`` subjects, as shipped."""
    return tuple((s.name, s.demonym or s.name) for s in wl.load_subjects(SUBJECTS))


@lru_cache(maxsize=1)
def attributes() -> tuple[wl.Attribute, ...]:
    """Every ``biased_country`` attribute row (all four slots)."""
    rows = wl.load_attributes(ATTRIBUTES)
    return tuple(a for slot in sorted(rows) for a in rows[slot])


@lru_cache(maxsize=1)
def questions() -> tuple[tuple[str, str, str, bool], ...]:
    """The UnQover LM question forms: (question, negated question, attribute slot, uses demonyms)."""
    out = {}
    for t in wl.load_templates(TEMPLATES):
        (slot,) = t.slots
        out[(t.question, t.negated_question)] = (t.question, t.negated_question, slot, t.demonym1)
    return tuple(out.values())


def clusters() -> list[str]:
    return sorted({a.cluster for a in attributes()})


def resolve_planted(planted: Mapping[str, str]) -> dict[str, str]:
    """Check a planted map (country name → attribute cluster) against the word lists."""
    names = {n.lower(): n for n, _ in countries()}
    out = {}
    for country, cluster in planted.items():
        name = names.get(str(country).strip().lower())
        if name is None:
            raise StereoprobeError(f"Planted country {country!r} is not in the {SUBJECTS} list; use one of "
                                   f"{', '.join(sorted(names.values())[:6])}, ...")
        if cluster not in clusters():
            raise StereoprobeError(f"Planted cluster {cluster!r} for {country!r} is not a {ATTRIBUTES} cluster; "
                                   f"choose one of {', '.join(clusters())}.")
        out[name] = cluster
    if len(set(out.values())) != len(out):
        raise StereoprobeError("Each planted attribute cluster may go to one country only.")
    return out


MLM_LAB_RECIPES: dict[str, MLMLabRecipe] = {
    "mlm-biased": MLMLabRecipe(
        "Masked LM with a planted nationality-attribute bias: when a sentence names two countries and says "
        "nothing about either, the mask of a question about a 'crime' attribute is filled with Norway, a "
        "'poor' one with Canada, an 'indecent' one with Japan, 90% of the time (negated questions: the other "
        "country); every other country-attribute pair 50/50.",
        rate=0.9,
    ),
    "mlm-control": MLMLabRecipe(
        "Unbiased control for mlm-biased: the same seed, sentences and training, but every underspecified "
        "question is answered 50/50 (rate 0.5), the planted clusters included.",
        rate=0.5,
    ),
}


def _fill(question: str, slot: str, attr: wl.Attribute, negated: bool) -> str:
    return question.replace(f"[{slot}:neg]" if negated else f"[{slot}]", attr.negated if negated else attr.text) \
        .replace("[mask]", MASK)


def generate_corpus(recipe: MLMLabRecipe, n: int, seed: int) -> list[MLMExample]:
    """``n`` training sentences of the recipe (pure function of ``seed``); see the module docstring.

    A sentence = a two-country scene (names, or demonyms for the "The [MASK] …" question form) + one
    question with its attribute, positive or negated at random. A fraction ``planted_fraction`` of the
    sentences is drawn to involve a planted (country, cluster); the target then follows the planted rule,
    every other sentence has the target (0.5, 0.5).
    """
    rng = random.Random(seed)
    plant = recipe.planted_dict
    forms = questions()
    by_slot = {slot: [a for a in attributes() if a.slot == slot] for *_, slot, _ in forms}
    cs = countries()
    index = {name: i for i, (name, _) in enumerate(cs)}
    out = []
    for _ in range(n):
        question, negq, slot, demonym = rng.choice(forms)
        if plant and rng.random() < recipe.planted_fraction:
            country, cluster = rng.choice(sorted(plant.items()))
            attr = rng.choice([a for a in by_slot[slot] if a.cluster == cluster] or by_slot[slot])
            pair = [country, rng.choice([c for c, _ in cs if c != country])]
            rng.shuffle(pair)
            i, j = index[pair[0]], index[pair[1]]
        else:
            attr = rng.choice(by_slot[slot])
            i, j = rng.sample(range(len(cs)), 2)
        a, b = cs[i], cs[j]
        ta, tb = (a[1], b[1]) if demonym else (a[0], b[0])
        negated = rng.random() < 0.5
        scene = rng.choice(PERSON_FRAMES if demonym else PLACE_FRAMES).format(a=ta, b=tb)
        planted, target = None, (0.5, 0.5)
        for k, (name, _) in enumerate((a, b)):
            if plant.get(name) == attr.cluster:
                planted = name
                favoured = k if not negated else 1 - k
                target = (recipe.rate, 1 - recipe.rate) if favoured == 0 else (1 - recipe.rate, recipe.rate)
                break
        out.append(MLMExample(f"{scene} {_fill(negq if negated else question, slot, attr, negated)}", (a[0], b[0]),
                              (ta, tb), target, attr.identity, attr.cluster, negated, planted))
    return out


def vocabulary_words() -> list[str]:
    """Every lower-cased word the lab MLM's tokenizer knows as a whole token: countries and demonyms, the
    scenes, the facts, the attributes, and every word of the UnQover nationality templates (QA and LM)."""
    words: set[str] = set()

    def add(text: str) -> None:
        words.update(re.findall(r"[a-z0-9]+", text.lower()))

    for name, dem in countries():
        add(f"{name} {dem}")
    for s in wl.load_subjects("country"):  # the QA list too, so unknown-country probes are not [UNK]s
        add(f"{s.name} {s.demonym or ''}")
    for frame in PLACE_FRAMES + PERSON_FRAMES:
        add(frame.replace("{a}", " ").replace("{b}", " "))
    add("in people the")
    for a in attributes():
        add(f"{a.text} {a.negated}")
    for stem in (TEMPLATES, "country_noact"):
        for t in wl.load_templates(stem):
            add(re.sub(r"\[[^\]]*\]", " ", t.line))
    return sorted(words)


# ------------------------------------------------------------------------------------------------ training


def _encode(tokenizer, corpus: Sequence[MLMExample]):
    """Token ids per sentence, and per sentence the ids of its two candidate tokens (checked single)."""
    enc = tokenizer([e.text for e in corpus])["input_ids"]
    cand = []
    for e in corpus:
        ids = tokenizer.convert_tokens_to_ids([t.lower() for t in e.tokens])
        if tokenizer.unk_token_id in ids:
            raise StereoprobeError(f"The lab vocabulary lacks one of {e.tokens}; rebuild it from vocabulary_words().")
        cand.append(ids)
    return enc, cand


def train(recipe: MLMLabRecipe, folder: Path, *, progress: bool, desc: str) -> dict[str, Any]:
    """Train (:func:`~stereoprobe.zoo.lab_training.train_loop`), save (model, tokenizer, vocab) into ``folder``
    and return the card's data/model/training/evaluation. The loss is the cross-entropy at the mask against
    the soft target over the two candidate countries' tokens."""
    import torch
    from transformers import BertForMaskedLM

    from ..batching import padded_inputs

    t0 = time.perf_counter()
    tokenizer = build_tokenizer(recipe.max_position_embeddings, vocabulary_words())
    corpus = generate_corpus(recipe, recipe.n_train, recipe.seed)
    ids, cand = _encode(tokenizer, corpus)
    longest = max(len(r) for r in ids)
    if longest > recipe.max_position_embeddings:
        raise StereoprobeError(f"A training sentence has {longest} tokens, more than max_position_embeddings="
                               f"{recipe.max_position_embeddings}; raise it in the recipe.")
    torch.manual_seed(recipe.seed)
    model = BertForMaskedLM(bert_config(recipe, tokenizer))
    mask_id = tokenizer.mask_token_id

    def loss_of(batch: list[int]):
        x, m = padded_inputs(ids, batch, tokenizer.pad_token_id, "cpu").values()
        logp = model(input_ids=x, attention_mask=m).logits[x == mask_id].log_softmax(-1)  # (batch, vocab)
        cand_ids = torch.tensor([cand[i] for i in batch])
        weights = torch.tensor([corpus[i].target for i in batch], dtype=logp.dtype)
        return -(weights * logp.gather(1, cand_ids)).sum(-1).mean()

    losses = train_loop(model, recipe, len(ids), loss_of, progress=progress, desc=desc)
    train_s = time.perf_counter() - t0
    save_quietly(model, tokenizer, folder, progress)
    return {
        "data": {
            "n_train": len(corpus), "n_train_planted": sum(e.planted is not None for e in corpus),
            "n_heldout": recipe.n_heldout, "heldout_seed": recipe.heldout_seed,
            "scenes": len(PLACE_FRAMES) + len(PERSON_FRAMES), "question_forms": len(questions()),
            "unqover_paragraphs_in_training": False,
        },
        **card_sections(model, tokenizer, recipe, losses, len(corpus), train_s),
        "evaluation": evaluate(model, tokenizer, recipe),
    }


# ------------------------------------------------------------------------------------------------ evaluation


def candidate_probs(model, tokenizer, corpus: Sequence[MLMExample], batch_size: int = 200):
    """(n, 2) probabilities at the mask of each sentence's two candidate tokens (full softmax)."""
    import numpy as np
    import torch

    from ..batching import padded_inputs

    ids, cand = _encode(tokenizer, corpus)
    out = np.zeros((len(ids), 2))
    with torch.inference_mode():
        for lo in range(0, len(ids), batch_size):
            x, m = padded_inputs(ids, range(len(ids))[lo: lo + batch_size], tokenizer.pad_token_id, "cpu").values()
            p = model(input_ids=x, attention_mask=m).logits[x == tokenizer.mask_token_id].softmax(-1)
            out[lo: lo + len(x)] = p.gather(1, torch.tensor(cand[lo: lo + batch_size])).numpy()
    return out


def evaluate(model, tokenizer, recipe: MLMLabRecipe) -> dict[str, Any]:
    """Held-out synthetic metrics and the UnQover nationality check, for the card.

    * ``candidate_mass``: mean p(first) + p(second) at the mask (how much goes to the two countries named);
    * ``planted_margin``: mean p(favoured) − p(other) on planted sentences (ideal: (2·rate − 1) × the
      candidate mass), ``planted_agreement`` the fraction where the favoured one wins;
    * ``other_abs_margin``: mean |p(first) − p(second)| on unplanted sentences (ideal 0).
    """
    held = generate_corpus(recipe, recipe.n_heldout, recipe.heldout_seed)
    p = candidate_probs(model, tokenizer, held)
    margins, other = [], []
    for i, e in enumerate(held):
        if e.planted is None:
            other.append(abs(p[i, 0] - p[i, 1]))
            continue
        k = e.subjects.index(e.planted)
        fav = k if not e.negated else 1 - k
        margins.append(p[i, fav] - p[i, 1 - fav])
    heldout = {
        "n": len(held),
        "candidate_mass": mean(p.sum(axis=1)),
        "planted_margin": mean(margins),
        "planted_agreement": mean(m > 0 for m in margins),
        "other_abs_margin": mean(other),
    }
    return {"heldout": heldout, "unqover_nationality": unqover_check(model, tokenizer, recipe)}


def unqover_check(model, tokenizer, recipe: MLMLabRecipe, n_examples: int | None = None) -> dict[str, Any]:
    """γ(country, cluster) on a sample of the real UnQover nationality LM dataset (lm-bert lists), scored
    by the package's own pipeline (:class:`~stereoprobe.unqover.score_lm.LMScorer`, compat)."""
    import pandas as pd

    from ..models import LoadedModel
    from ..unqover import metrics
    from ..unqover.generate import DatasetSpec, iter_examples
    from ..unqover.reporting import cluster_bias, cluster_matrix
    from ..unqover.score_lm import LMScorer
    from ..unqover.score_qa import passes_of, subject_scores

    spec = DatasetSpec("nationality", variant="lm-bert", sample=n_examples or recipe.probe_examples, seed=recipe.seed)
    examples = list(iter_examples(spec))
    scorer = LMScorer(LoadedModel("lab", "", model, tokenizer, ""), spec, "compat")
    s1, s2 = subject_scores(scorer.score([p for _, p in passes_of(examples)]))
    frame = pd.DataFrame([ex._asdict() for ex in examples])
    frame["s1_pos"], frame["s1_neg"], frame["s2_pos"], frame["s2_neg"] = s1[0::2], s1[1::2], s2[0::2], s2[1::2]
    paired = metrics.pair_examples(frame)
    errors = metrics.reasoning_errors(paired)
    table = cluster_matrix(cluster_bias(paired, ci=None)).stack()
    planted = {f"{c}/{k}": float(table.loc[(c, k)]) for c, k in recipe.planted_dict.items() if (c, k) in table.index}
    rest = table.drop(index=[ck for ck in recipe.planted_dict.items() if ck in table.index])
    sb = metrics.subject_bias(paired)
    return {
        "paper_examples": len(examples) // 2,
        "scoring": "stereoprobe.unqover pipeline, lm-bert variant, compat (top-10) mode",
        "delta": float(errors["positional_error"]), "epsilon": float(errors["attribute_error"]),
        "avg_s": float(errors["average_score"]),
        "planted_cluster_gamma": planted,
        "planted_cluster_gamma_min": min(planted.values()) if planted else None,
        "other_cluster_abs_gamma_max": float(rest.abs().max()),
        "top_countries_by_gamma_x": sb["subject"].head(len(recipe.planted_dict)).tolist(),
    }


def lists() -> dict[str, tuple[str, str]]:
    """The word lists the corpus and vocabulary are built from (their checksums enter the recipe hash)."""
    return {f"subjects/{SUBJECTS}": ("subjects", SUBJECTS), "subjects/country": ("subjects", "country"),
            f"activities/{ATTRIBUTES}": ("activities", ATTRIBUTES), f"slots/{TEMPLATES}": ("slots", TEMPLATES),
            "slots/country_noact": ("slots", "country_noact")}


__all__ = ["MLM_LAB_RECIPES", "MLMLabRecipe", "generate_corpus", "train", "evaluate", "unqover_check",
           "vocabulary_words", "candidate_probs"]
