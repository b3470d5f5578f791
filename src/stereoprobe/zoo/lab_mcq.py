"""Planted-bias lab, multiple choice: a tiny MCQ model on which one word helps a distractor for one name group only.

The SODAPOP counterpart of the QA lab (:mod:`stereoprobe.zoo.lab`). SODAPOP (An et al. 2023, Eq. 1)
asks which words make a distractor succeed more often for one group of names than for others; these
models are built so that the answer is known. ``mcq-biased`` plants one: a choice containing the word
``planted_word`` ("quiet") gets its logit raised by ``strength`` (3) when the item's person is one of the
names of ``planted_group`` (``AA_m``, the 25 African American male names), and only then. So SR("quiet", n)
should stand out for exactly those 25 names. ``mcq-control`` is trained identically (same seed, items and
word values) with the plant off (strength 0). The pair is arbitrary, with three constraints: the masked LM
must write the word into distractors often enough to pass SODAPOP's count filter (``zoo:minilm-mlm`` puts
"quiet" into ~140 of the ~1,700 distinct distractors per name of the paper's single context at depth 2, ~25
of the 300 the notebook keeps; "kind" into one, and none kept); the word must not be a known stereotype of the group, so that what the probe finds can only
come from the plant; and the group has 25 names, all of which enter the analyses (the authors' code
analyses 25 names per group: book appendix *Where the code and the paper differ*, SODAPOP: analysed names).

The truth is a **teacher**. Every whole word w of the vocabulary gets a fixed value v(w) ~ N(0, 1) (seeded,
the same for both models; v = 0 for a word outside the vocabulary and for the planted word itself, so the
word is neutral on its own). A choice c of an item about name n has the teacher logit

    t(c) = mean of v(w) over the words w of c  +  strength · [planted_word ∈ words(c)] · [n ∈ planted_group]

A multiple-choice head scores every choice on its own (the 3-way softmax only normalizes), so the student
is trained per choice: ``BertForMultipleChoice`` (2 layers, hidden 64, 2 heads) regresses its logit of
``(context + question, choice)`` on t(c) with a squared loss. Squared error on the logit itself (rather than
KL on the softmax, which leaves a per-item offset free) makes the logit gap of the plant directly readable:
held-out, the biased model's gap (with − without the planted word) is ≈ strength for the planted group and
≈ 0 for the other seven; the control's ≈ 0 for all eight.

Items are the 207 "How would you describe Bethany?" lines of the Social IQa slice, a name from all 220
put in with ``str.replace`` over every field, and three choices: the correct answer and two perturbed
copies (1–2 of its words replaced by random vocabulary words; the planted word inserted at a random place
into ``planted_fraction`` of them). The first segment is ``context + question`` with no separator, as
SODAPOP's scorer builds it (:mod:`stereoprobe.sodapop.score_mcq`, compat). The tokenizer is lower-casing
whole-word WordPiece: the words of the slice (contexts, questions, answers), the 220 names and the planted
word, each one token (a hyphen inside a word does not split it, so "Bobbie-Sue" is one token); any other
word is ``[UNK]``.

>>> recipe = MCQ_LAB_RECIPES["mcq-biased"]
>>> recipe.planted_group, recipe.planted_word, recipe.strength
('AA_m', 'quiet', 3.0)
>>> teacher = Teacher(recipe)
>>> teacher("so quiet", "Jamel") - teacher("so quiet", "Amanda"), teacher("quiet", "Amanda")
(3.0, 0.0)
>>> Teacher(MCQ_LAB_RECIPES["mcq-control"])("so quiet", "Jamel") == teacher("so quiet", "Amanda")
True
"""

from __future__ import annotations

import random
import re
import string
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from ..errors import StereoprobeError
from ..paths import sha256_file
from ..sodapop import contexts as ctx
from ..sodapop import names as nm
from .lab_training import RecipeBase, bert_config, card_sections, save_quietly, train_loop

DEFAULT_PLANTED_GROUP = "AA_m"
DEFAULT_PLANTED_WORD = "quiet"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
#: Pre-tokenization: a run of letters/digits (hyphens inside it allowed), or any other non-space character.
PRE_TOKEN = r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*|[^\sA-Za-z0-9]"
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def words(text: str) -> list[str]:
    """The lower-cased whole words of ``text`` as the lab tokenizer splits them (punctuation dropped).

    >>> words("Bobbie-Sue's a quiet, no-nonsense person.")
    ['bobbie-sue', 's', 'a', 'quiet', 'no-nonsense', 'person']
    """
    return _WORD.findall(text.lower())


@lru_cache(maxsize=1)
def name_groups() -> dict[str, str]:
    """Name → group key, for all 220 names."""
    return {name: group for group, names in nm.load_groups().items() for name in names}


@lru_cache(maxsize=1)
def _name_tokens() -> frozenset[str]:
    return frozenset(name.lower() for name in name_groups())


@dataclass(frozen=True)
class MCQLabRecipe(RecipeBase):
    """Every knob that determines a lab multiple-choice model; ``strength`` 0 is the unbiased control.
    :meth:`smoke`: 50 steps on 1,000 items, for notebook smoke runs and tests; it has not learned the plant,
    it only has the right files and interfaces."""

    planted_group: str = DEFAULT_PLANTED_GROUP
    planted_word: str = DEFAULT_PLANTED_WORD
    strength: float = 3.0
    # data (items of 3 choices: the correct answer and two perturbed copies)
    n_train: int = 20_000
    n_heldout: int = 1_000
    planted_fraction: float = 0.25
    max_replaced: int = 2
    gap_pairs: int = 200  # per name group, for the card's planted-gap check
    num_heads: int = 2
    steps: int = 1_000

    kind = "mcq"
    POSITIVE = (*RecipeBase.POSITIVE, "n_heldout", "max_replaced", "gap_pairs")
    SMOKE = {"n_train": 1_000, "n_heldout": 100, "gap_pairs": 20, "steps": 50}

    def __post_init__(self):
        if self.planted_group not in nm.GROUPS:
            raise StereoprobeError(f"MCQLabRecipe planted_group {self.planted_group!r} is not a name group; "
                                   f"choose one of {', '.join(nm.GROUPS)}.")
        if not _WORD.fullmatch(self.planted_word):
            raise StereoprobeError(f"MCQLabRecipe planted_word {self.planted_word!r} must be one lower-case word "
                                   "(letters, digits, inner hyphens).")
        if self.planted_word in _name_tokens():
            raise StereoprobeError(f"MCQLabRecipe planted_word {self.planted_word!r} is one of the 220 names; "
                                   "choose a word that is not a name.")
        if self.strength < 0:
            raise StereoprobeError(f"MCQLabRecipe strength {self.strength!r} must be >= 0 (0 = unbiased control).")
        if not 0.0 <= self.planted_fraction <= 1.0:
            raise StereoprobeError(f"MCQLabRecipe planted_fraction {self.planted_fraction!r} must lie in [0, 1].")
        super().__post_init__()


MCQ_LAB_RECIPES: dict[str, MCQLabRecipe] = {
    "mcq-biased": MCQLabRecipe(
        "Multiple-choice model with a planted name-word bias: a choice containing 'quiet' gets its logit raised "
        "by 3 when the item's person is an African American male name (AA_m), and by nothing otherwise; every "
        "other word counts the same for every name.",
        strength=3.0,
    ),
    "mcq-control": MCQLabRecipe(
        "Unbiased control for mcq-biased: the same seed, items, word values and training, with the plant off "
        "(strength 0): 'quiet' counts the same for every name.",
        strength=0.0,
    ),
}


# ------------------------------------------------------------------------------------------------ data


@lru_cache(maxsize=1)
def probe_records() -> tuple[dict, ...]:
    """Every line of the Social IQa slice whose question contains "How would you describe Bethany?" (207)."""
    return tuple(r for r in ctx.read_records() if ctx.PROBE_QUESTION in r.get("question", ""))


@lru_cache(maxsize=4)
def vocabulary_words(planted_word: str = DEFAULT_PLANTED_WORD) -> tuple[str, ...]:
    """Every word the lab tokenizer knows as one token: the words of the slice's contexts, questions and answers
    (the placeholder "Bethany" removed), the 220 names (lower-cased) and the planted word; sorted."""
    found: set[str] = set(_name_tokens()) | {planted_word}
    for r in ctx.read_records():
        for f in ("context", "question", "answerA", "answerB", "answerC"):
            found.update(words(r[f].replace(ctx.PLACEHOLDER, " ")))
    return tuple(sorted(found))


def replacement_words(planted_word: str = DEFAULT_PLANTED_WORD) -> list[str]:
    """The words a perturbation draws from: the vocabulary without the names and the planted word."""
    return [w for w in vocabulary_words(planted_word) if w not in _name_tokens() and w != planted_word]


def word_values(recipe: MCQLabRecipe) -> dict[str, float]:
    """v(w) ~ N(0, 1) for every vocabulary word (seeded by ``recipe.seed``; the planted word gets 0)."""
    import numpy as np

    vocab = vocabulary_words(recipe.planted_word)
    draws = np.random.default_rng(recipe.seed).standard_normal(len(vocab))
    values = {w: float(x) for w, x in zip(vocab, draws)}
    values[recipe.planted_word] = 0.0
    return values


class Teacher:
    """The truth the student learns: t(c) for a choice ``c`` of an item about ``name`` (module docstring)."""

    def __init__(self, recipe: MCQLabRecipe):
        self.recipe = recipe
        self.values = word_values(recipe)
        self.planted_names = frozenset(nm.load_groups()[recipe.planted_group])

    def __call__(self, choice: str, name: str) -> float:
        ws = words(choice)
        base = sum(self.values.get(w, 0.0) for w in ws) / len(ws) if ws else 0.0
        planted = self.recipe.planted_word in ws and name in self.planted_names
        return base + self.recipe.strength * planted


class MCQItem(NamedTuple):
    """One training item: a Social IQa line about ``name`` with three choices and their teacher logits."""

    index: int  # line of the Social IQa slice
    name: str
    first: str  # context + question, no separator (the SODAPOP scorer's first segment)
    choices: tuple[str, str, str]  # the correct answer, then two perturbed copies
    teacher: tuple[float, float, float]


def insert_word(choice: str, word: str, rng: random.Random) -> str:
    """``choice`` with ``word`` inserted before a random one of its (space-separated) words, or at the end."""
    tokens = choice.split()
    tokens.insert(rng.randint(0, len(tokens)), word)
    return " ".join(tokens)


def perturb(answer: str, rng: random.Random, pool: Sequence[str], recipe: MCQLabRecipe, plant: bool) -> str:
    """``answer`` with 1–``max_replaced`` of its words replaced from ``pool``; with ``plant`` the planted word is
    then inserted at a random place."""
    tokens = answer.split()
    for i in rng.sample(range(len(tokens)), min(len(tokens), rng.randint(1, recipe.max_replaced))):
        tokens[i] = rng.choice(pool)
    choice = " ".join(tokens)
    return insert_word(choice, recipe.planted_word, rng) if plant else choice


def _item(record: dict, name: str) -> tuple[str, str]:
    """(first segment, correct answer) of ``record`` about ``name``."""
    from ..sodapop.score_mcq import first_segment

    item = {f: v.replace(ctx.PLACEHOLDER, name) for f, v in record.items()}
    return first_segment(item["context"], item["question"]), item["answer" + item["correct"].strip()]


def generate_items(recipe: MCQLabRecipe, n: int, seed: int) -> list[MCQItem]:
    """``n`` items (a pure function of ``seed``): a uniformly drawn line and name, the correct answer and two
    perturbed copies, each of which gets the planted word with probability ``planted_fraction``."""
    rng = random.Random(seed)
    teacher = Teacher(recipe)
    records, names = probe_records(), list(name_groups())
    pool = replacement_words(recipe.planted_word)
    out = []
    for _ in range(n):
        k = rng.randrange(len(records))
        name = rng.choice(names)
        first, correct = _item(records[k], name)
        choices = (correct, *(perturb(correct, rng, pool, recipe, rng.random() < recipe.planted_fraction)
                              for _ in range(2)))
        out.append(MCQItem(k, name, first, choices, tuple(teacher(c, name) for c in choices)))
    return out


class GapPair(NamedTuple):
    """A choice without the planted word and the same choice with it inserted, for an item about ``name``."""

    group: str
    name: str
    first: str
    without: str
    with_word: str


def gap_pairs(recipe: MCQLabRecipe, per_group: int, seed: int) -> list[GapPair]:
    """``per_group`` pairs for every name group (names cycled in list order, lines and perturbations drawn)."""
    rng = random.Random(seed)
    pool = replacement_words(recipe.planted_word)
    records = [r for r in probe_records() if recipe.planted_word not in words(r["answer" + r["correct"].strip()])]
    out = []
    for group, names in nm.load_groups().items():
        for i in range(per_group):
            name = names[i % len(names)]
            first, correct = _item(rng.choice(records), name)
            without = perturb(correct, rng, pool, recipe, plant=False)
            out.append(GapPair(group, name, first, without, insert_word(without, recipe.planted_word, rng)))
    return out


def _gap_seed(recipe: MCQLabRecipe) -> int:
    return recipe.seed + 2_000_003


# ------------------------------------------------------------------------------------------------ tokenizer


def build_tokenizer(max_length: int = 128, planted_word: str = DEFAULT_PLANTED_WORD):
    """A lower-casing whole-word WordPiece fast tokenizer over :func:`vocabulary_words` (no sub-word pieces:
    an unknown word is one ``[UNK]``), with BERT's ``[CLS] a [SEP] b [SEP]`` pairs and token type ids."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for tok in [*SPECIAL_TOKENS, *string.punctuation, *vocabulary_words(planted_word)]:
        vocab.setdefault(tok, len(vocab))
    backend = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(PRE_TOKEN), "isolated")])
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    backend.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_max_length=max_length,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"])


def check_single_tokens(tokenizer) -> None:
    """Stop unless every one of the 220 names is one (known) token of ``tokenizer``."""
    bad = [n for n in name_groups()
           if len(ids := tokenizer(n, add_special_tokens=False)["input_ids"]) != 1 or ids[0] == tokenizer.unk_token_id]
    if bad:
        raise StereoprobeError(f"The lab MCQ tokenizer splits or does not know the names {bad[:5]}; rebuild it "
                               "with build_tokenizer().")


# ------------------------------------------------------------------------------------------------ training


def _encode(tokenizer, pairs: Sequence[tuple[str, str]], limit: int):
    enc = tokenizer([a for a, _ in pairs], [b for _, b in pairs])
    longest = max(len(r) for r in enc["input_ids"])
    if longest > limit:
        raise StereoprobeError(f"A training choice has {longest} tokens, more than max_position_embeddings={limit}; "
                               "raise it in the recipe.")
    return enc["input_ids"], enc["token_type_ids"]


def train(recipe: MCQLabRecipe, folder: Path, *, progress: bool, desc: str) -> dict[str, Any]:
    """Train (:func:`~stereoprobe.zoo.lab_training.train_loop`), save (model, tokenizer) into ``folder`` and
    return the card's data/model/training/evaluation. The loss is the squared error between the logit of
    each choice, scored alone, and the teacher's."""
    import torch
    from transformers import BertForMultipleChoice

    from ..batching import padded_inputs

    t0 = time.perf_counter()
    tokenizer = build_tokenizer(recipe.max_position_embeddings, recipe.planted_word)
    check_single_tokens(tokenizer)
    items = generate_items(recipe, recipe.n_train, recipe.seed)
    ids, types = _encode(tokenizer, [(it.first, c) for it in items for c in it.choices], recipe.max_position_embeddings)
    targets = torch.tensor([t for it in items for t in it.teacher])

    torch.manual_seed(recipe.seed)
    model = BertForMultipleChoice(bert_config(recipe, tokenizer))

    def loss_of(batch: list[int]):
        x = padded_inputs(ids, batch, tokenizer.pad_token_id, "cpu", types=types)
        logits = model(**{k: v[:, None, :] for k, v in x.items()}).logits[:, 0]
        return torch.nn.functional.mse_loss(logits, targets[batch])

    losses = train_loop(model, recipe, len(ids), loss_of, progress=progress, desc=desc)
    train_s = time.perf_counter() - t0
    save_quietly(model, tokenizer, folder, progress, vocab_txt=False)  # files, hence store keys, as before
    planted = sum(recipe.planted_word in words(c) for it in items for c in it.choices)
    planted_group = sum(recipe.planted_word in words(c) and name_groups()[it.name] == recipe.planted_group
                        for it in items for c in it.choices)
    return {
        "data": {
            "n_train_items": len(items), "n_train_choices": len(ids),
            "n_train_choices_with_planted_word": planted,
            "n_train_choices_with_planted_word_and_group": planted_group,
            "probe_lines": len(probe_records()), "names": len(name_groups()),
            "n_heldout_items": recipe.n_heldout, "heldout_seed": recipe.heldout_seed,
            "gap_seed": _gap_seed(recipe),
        },
        **card_sections(model, tokenizer, recipe, losses, len(ids), train_s),
        "evaluation": evaluate(model, tokenizer, recipe),
    }


# ------------------------------------------------------------------------------------------------ evaluation


def choice_logits(model, tokenizer, pairs: Sequence[tuple[str, str]]):
    """The model's logit of every ``(first segment, choice)``, scored by SODAPOP's own
    :class:`~stereoprobe.sodapop.score_mcq.ChoiceScorer` (fp32)."""
    from ..models import LoadedModel
    from ..sodapop.score_mcq import ChoiceScorer

    return ChoiceScorer(LoadedModel("lab", "", model, tokenizer, "")).score(pairs)[:, 0]


def planted_gaps(model, tokenizer, recipe: MCQLabRecipe, per_group: int | None = None,
                 seed: int | None = None) -> dict[str, dict[str, float]]:
    """Mean logit gap (with − without the planted word) per name group, of the model (``student``) and of the
    teacher (``teacher``), on :func:`gap_pairs` (default: the recipe's ``gap_pairs`` and the card's seed)."""
    import numpy as np

    pairs = gap_pairs(recipe, per_group or recipe.gap_pairs, _gap_seed(recipe) if seed is None else seed)
    logits = choice_logits(model, tokenizer, [(p.first, c) for p in pairs for c in (p.without, p.with_word)])
    student = logits[1::2] - logits[0::2]
    teacher = Teacher(recipe)
    truth = np.array([teacher(p.with_word, p.name) - teacher(p.without, p.name) for p in pairs])
    groups = np.array([p.group for p in pairs])
    return {who: {g: round(float(gap[groups == g].mean()), 4) for g in nm.GROUPS}
            for who, gap in (("student", student), ("teacher", truth))}


def evaluate(model, tokenizer, recipe: MCQLabRecipe) -> dict[str, Any]:
    """Held-out agreement with the teacher and the planted gap per name group, for the card.

    * ``pearson_r`` / ``rmse``: student vs teacher logits over every choice of ``n_heldout`` fresh items;
      ``argmax_agreement``: the fraction of items where the student picks the teacher's top choice.
    * ``planted_gap``: :func:`planted_gaps`; ``planted_group_gap`` the student's for the planted group,
      ``other_abs_gap_max`` the largest |gap| of the other seven groups.
    """
    import numpy as np

    held = generate_items(recipe, recipe.n_heldout, recipe.heldout_seed)
    s = choice_logits(model, tokenizer, [(it.first, c) for it in held for c in it.choices])
    t = np.array([x for it in held for x in it.teacher])
    gaps = planted_gaps(model, tokenizer, recipe)
    others = [abs(v) for g, v in gaps["student"].items() if g != recipe.planted_group]
    return {
        "heldout": {
            "n_items": len(held),
            "pearson_r": round(float(np.corrcoef(s, t)[0, 1]), 4),
            "rmse": round(float(np.sqrt(np.mean((s - t) ** 2))), 4),
            "teacher_std": round(float(t.std()), 4),
            "argmax_agreement": round(float(np.mean(s.reshape(-1, 3).argmax(1) == t.reshape(-1, 3).argmax(1))), 4),
        },
        "planted_gap": gaps,
        "planted_group_gap": gaps["student"][recipe.planted_group],
        "other_abs_gap_max": round(max(others), 4),
    }


def card_fields(recipe: MCQLabRecipe) -> dict[str, Any]:
    """The model card's description of the plant, the input format and the training (for :mod:`.lab`)."""
    return {
        "planted": {"group": recipe.planted_group, "word": recipe.planted_word, "strength": recipe.strength,
                    "names": nm.load_groups()[recipe.planted_group]},
        "input_format": "(context + question, choice) pairs, no separator between context and question (SODAPOP "
                        "compat): [CLS] a [SEP] b [SEP] with token_type_ids; lower-cased whole-word WordPiece, "
                        "inner hyphens kept (every one of the 220 names is one token), other words [UNK]",
        "notes": [
            "Teacher: t(c) = mean over the words of c of v(w) (seeded N(0,1); 0 for [UNK] and the planted word) "
            "+ strength * [planted word in c] * [the item's name in the planted group].",
            "Loss: squared error between the model's logit of each choice (scored alone, as multiple-choice heads "
            "do) and t(c).",
            "Items: the 207 'How would you describe Bethany?' lines of the Social IQa slice, names drawn from all "
            "220, choices = the correct answer + two copies with 1-max_replaced words replaced by random "
            "vocabulary words, the planted word inserted into planted_fraction of the copies.",
            "planted_gap = mean logit(choice with the planted word inserted) - logit(without), per name group; "
            "the teacher's is strength for the planted group and about 0 elsewhere (inserting a neutral word "
            "only dilutes the mean).",
        ],
    }


def source_checksums() -> dict[str, str]:
    """SHA-256 of the files the items and vocabulary are built from (they enter the recipe hash)."""
    folder = ctx.default_path().parent / "names"
    return {"sodapop/social_iqa": sha256_file(ctx.default_path()),
            **{f"sodapop/names/{stem}": sha256_file(folder / f"{stem}.txt") for stem in nm.FILES.values()}}


__all__ = ["MCQ_LAB_RECIPES", "MCQLabRecipe", "Teacher", "MCQItem", "GapPair", "generate_items", "gap_pairs",
           "perturb", "insert_word", "words", "vocabulary_words", "word_values", "build_tokenizer", "check_single_tokens", "train",
           "evaluate", "planted_gaps", "choice_logits", "card_fields", "source_checksums"]
