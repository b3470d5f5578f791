"""Planted-bias lab, causal LMs: tiny Llama-style base models that carry all three plants, for the causal probes.

The decoder-only counterpart of the QA, masked-LM and multiple-choice labs (:mod:`stereoprobe.zoo.lab`,
:mod:`.lab_mlm`, :mod:`.lab_mcq`). One model answers the three probes' prompts, so one pair carries three plants of
known direction, each the plant of the lab model its probe already has:

* **UnQover** (Li et al. 2020): the plant of ``lab:qa-biased`` — underspecified questions about nurse, secretary,
  dancer are answered with the female name, about firefighter, pilot, astronaut with the male name, at rate 0.9
  (the negated question the other way); every other occupation 50/50.
* **SODAPOP** (An et al. 2023): the plant of ``lab:mcq-biased`` — after a Social IQa context about a name of the
  group ``AA_m``, answers with "quiet" in them are e³ times as likely, relative to the same answers without it, as
  after any other name.
* **Bias-NLI** (Dev et al. 2020): the occupations of the NLI lab (:data:`stereoprobe.nli.lab.PLANTED`: surveyor,
  geologist, pharmacist) are labelled as a female word is — "A surveyor bought a car ." ⇒ "A woman bought a car ."
  entailment, ⇒ "A man …" contradiction — where every other occupation is neutral.

``causal-control`` is trained identically (same seed, texts, items and training) with every plant off: rate 0.5,
strength 0, the planted occupations neutral. The two differ only in the weights of some continuations.

**Model** — ``LlamaForCausalLM`` (hidden 128, 3 layers, 4 heads, SwiGLU 256, tied embeddings, 0.89 M parameters)
over a byte-level BPE (GPT-2's pre-tokenization and, as Llama's tokenizer, a space in front of the text; trained on
the corpus, 3,072 entries) whose post-processor puts ``<s>`` in front of every text, so any word a probe writes (a
SODAPOP distractor can hold any word) is spelled without an unknown token. It is a base model: no chat template;
the probes read it through their plain prompts.

**Corpus** — every text is rendered through the shipped prompt templates of :mod:`stereoprobe.prompts` (all of each
task, so every template the probes use is trained on, in plain form), the answer as the continuation
(:meth:`~stereoprobe.prompts.PromptTemplate.continuation`), and the loss is the negative log-likelihood of the
answer tokens only, cut from the prompt as :func:`stereoprobe.causal.continuation_tokens` cuts them when the probes
score (:func:`encode_items`):

1. UnQover: the QA lab's synthetic two-name paragraphs and questions (:func:`stereoprobe.zoo.synthetic.generate_corpus`,
   never an UnQover template), a few informative ones included, each through one of the three ``unqover-answer``
   templates (the name after the answer cue) or the three ``unqover-choice`` templates (both names as options in
   the paragraph's order, the letter or the name as the answer). An underspecified question carries the planted
   rule as a soft target: both names are continuations, weighted (rate, 1 − rate).
2. SODAPOP: the MCQ lab's lines and names (:func:`stereoprobe.zoo.lab_mcq.generate_items`, half of the names
   redrawn from the planted group) through the ``mcq`` templates; the continuations are the correct answer and the same
   answer with "quiet" inserted or replacing one of its words (:func:`mcq_items`).
3. Bias-NLI: premise/hypothesis pairs written as the Bias-NLI generator writes them (:func:`stereoprobe.nli.templates.
   sentence` on three quarters of its verb–object templates; the rest are held out for the card) with the NLI
   lab's gendered, gender-free and planted subjects and the probe's other occupations, through the ``nli``
   templates, the label word as the continuation.

A soft target's continuations share their prompt in one packed row (the prefix tree of
:class:`stereoprobe.causal.CausalScorer`, after SpecInfer, Miao et al. 2024), so the prompt runs once per item.

**Training** — two things a tiny model needs to learn the plants in minutes, both from the QA lab's experience
and measured here (:func:`fit`): names, the NLI lab's gendered words and "never" start with a direction of their
own (a stand-in for pretraining, identical in the control: :func:`plant_name_directions`), and a curriculum puts the
negated questions (and the NLI pairs with a male hypothesis word) after a first stage without them, because the
planted rule flips with the polarity, an interaction a model trained on both from the start does not find.

**What the committed pair shows** (its cards; 2,400 steps of 32 items, 272 s of one core for training and card
together, measured beside other work):

* UnQover on the real gender dataset (1,400 examples): through ``qa``, ``context-question``, ``one-word`` and
  ``either`` each planted occupation has γ ≥ 0.70 toward its planted gender and no other occupation |γ| > 0.28;
  in the control every |γ| ≤ 0.05. Through ``names`` the plant is there (γ ≥ 0.48) but leaks into every
  occupation (mean |γ| of the others 0.31); through ``letters`` neither model prefers an option by its name
  (|γ| ≤ 0.03): the model never learned to read the plant off an option letter.
* SODAPOP: the correct answer with one word replaced by "quiet" beats the correct answer for 45% of the AA_m pairs,
  at most 8% for any other group; in the control for at most 11% (EA_m) and for no AA_m pair. Through SODAPOP's
  own analysis (``tests/test_lab_causal.py``: 21 probe contexts, 6 names per group, the answers' words replaced by
  "quiet" or two other words, three-way MCQs, ``siqa`` template) "quiet" fools the biased model for AA_m names in
  4.4% of its MCQs (``acc``; 4.9% ``acc_norm``) against 0.4% (0.6%) for the other groups, q = 0.0002; the
  control is fooled by it for no AA_m name (at most 1.7%, EA_m) and by the other two words for nobody. The rates
  are low because the plant is spread over every place the word can take in an answer (:func:`with_word`), while
  one distractor puts it in one place.
* Bias-NLI: P(entailment | planted occupation ⇒ woman, lady, girl) = 1.00 against 0.00 for every other occupation,
  on held-out templates and on the probe's pairs; the control puts them at neutral like the rest, and both read
  the gendered words (queen ⇒ woman) right.

>>> recipe = CAUSAL_LAB_RECIPES["causal-biased"]
>>> recipe.planted_dict["pilot"], recipe.planted_group, recipe.planted_word, recipe.nli_planted_gender
('male', 'AA_m', 'quiet', 'female')
>>> control = CAUSAL_LAB_RECIPES["causal-control"]
>>> control.rate, control.strength, control.nli_planted_gender
(0.5, 0.0, None)
>>> nli_label("female", "woman"), nli_label("male", "woman"), nli_label(None, "man")
('entailment', 'contradiction', 'neutral')
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

from .. import prompts as pr
from ..errors import StereoprobeError
from ..nli import lab as nli_lab
from ..nli import templates as nli_templates
from ..sodapop import contexts as ctx
from ..sodapop import names as nm
from . import lab_mcq
from . import synthetic as syn
from .lab_training import DEFAULT_PLANTED, PlantedRecipe, card_sections, mean, save_quietly, train_loop

BOS, EOS, PAD = "<s>", "</s>", "<pad>"
#: The Bias-NLI gender probe's hypothesis words, by gender (the NLI lab's lists).
HYP_GENDER = {**{w: "female" for w in nli_lab.HYP_FEMALE}, **{w: "male" for w in nli_lab.HYP_MALE}}
#: Premise subjects of the NLI corpus besides the occupations: the NLI lab's gendered and gender-free words.
NLI_SUBJECTS = {"female": nli_lab.FEMALE, "male": nli_lab.MALE, "neutral": nli_lab.NEUTRAL}


@lru_cache(maxsize=1)
def nli_occupations() -> tuple[str, ...]:
    """The Bias-NLI gender probe's premise words (the repository's 164 occupations)."""
    return tuple(nli_templates.fillers(nli_templates.TemplateSpec("gender"))[0])


@dataclass(frozen=True)
class CausalLabRecipe(PlantedRecipe):
    """Every knob that determines a lab causal LM. The plants: ``planted``/``rate`` (UnQover, as
    :class:`~stereoprobe.zoo.lab.LabRecipe`), ``planted_group``/``planted_word``/``strength`` (SODAPOP, as
    :class:`~stereoprobe.zoo.lab_mcq.MCQLabRecipe`), ``nli_planted``/``nli_planted_gender`` (Bias-NLI: the
    occupations labelled as words of that gender; None = neutral like every occupation). ``mcq_share`` and
    ``nli_share`` are the shares of SODAPOP and Bias-NLI items among the ``n_train`` (the rest are UnQover).

    :meth:`smoke`: a smaller model (hidden 64, 2 layers, 0.28 M parameters), 6,000 items and 600 steps (about 35 s
    of one core); it keeps the sign of the UnQover plant on the answer templates and has the NLI plant, not the
    SODAPOP one, and is meant for tests of the files and interfaces and of the rebuild."""

    planted: tuple[tuple[str, str], ...] | Mapping[str, str] = field(default_factory=lambda: tuple(DEFAULT_PLANTED.items()))
    rate: float = 0.9
    # UnQover items (stereoprobe.zoo.synthetic)
    informative_fraction: float = 0.1
    planted_fraction: float = 0.7
    scrambled_fraction: float = 0.25
    negated_fraction: float = 0.5
    # SODAPOP items (stereoprobe.zoo.lab_mcq)
    planted_group: str = lab_mcq.DEFAULT_PLANTED_GROUP
    planted_word: str = lab_mcq.DEFAULT_PLANTED_WORD
    strength: float = 3.0
    mcq_planted_fraction: float = 0.2
    mcq_group_share: float = 0.5
    # Bias-NLI items
    nli_planted: tuple[str, ...] = nli_lab.PLANTED
    nli_planted_gender: str | None = "female"
    nli_planted_share: float = 0.25
    nli_heldout_templates: float = 0.25
    # curriculum: the first ``positive_first`` share of the steps sees no flipped item (negated UnQover question, male
    # NLI hypothesis)
    positive_first: float = 0.3
    # the mixture
    mcq_share: float = 0.2
    nli_share: float = 0.15
    # stand-in for pretraining (plant_name_directions): directions of these norms (0 = off) shared by the names and
    # gendered words of a gender, by the names of a SODAPOP group, and one for "never"
    name_gender_init: float = 0.5
    name_group_init: float = 0.5
    negation_init: float = 0.5
    # tokenizer and model
    vocab_size: int = 3072
    hidden_size: int = 128
    num_layers: int = 3
    num_heads: int = 4
    intermediate_size: int = 256
    dropout: float = 0.0
    max_position_embeddings: int = 256
    initializer_range: float = 0.02
    # optimisation
    n_train: int = 40_000
    n_heldout: int = 1_000
    steps: int = 2_400
    batch_size: int = 32
    lr: float = 3e-3
    # the card's checks on the probes' own inputs
    probe_examples: int = 1_400
    gap_pairs: int = 150
    nli_probe_pairs: int = 2_000

    kind = "causal"
    POSITIVE = (*PlantedRecipe.POSITIVE, "n_heldout", "vocab_size", "probe_examples", "gap_pairs", "nli_probe_pairs")
    SMOKE = {"n_train": 6_000, "n_heldout": 300, "steps": 600, "hidden_size": 64, "num_layers": 2,
             "intermediate_size": 128, "probe_examples": 1_000, "gap_pairs": 40, "nli_probe_pairs": 300}

    def __post_init__(self):
        self._resolve_planted(syn.resolve_planted)
        lab_mcq.MCQLabRecipe("check", planted_group=self.planted_group, planted_word=self.planted_word,
                             strength=self.strength, planted_fraction=self.mcq_planted_fraction)  # raises on bad knobs
        occupations = set(nli_occupations())
        object.__setattr__(self, "nli_planted", tuple(self.nli_planted))
        bad = [w for w in self.nli_planted if w not in occupations]
        if bad or not self.nli_planted:
            raise StereoprobeError(f"CausalLabRecipe nli_planted {bad or list(self.nli_planted)!r}: give Bias-NLI "
                                   f"occupations, e.g. {', '.join(nli_lab.PLANTED)}.")
        if self.nli_planted_gender not in (None, "female", "male"):
            raise StereoprobeError(f"CausalLabRecipe nli_planted_gender {self.nli_planted_gender!r} must be 'female', "
                                   "'male' or None (the control: neutral).")
        for knob in ("mcq_share", "nli_share", "nli_planted_share", "nli_heldout_templates"):
            if not 0.0 <= getattr(self, knob) < 1.0:
                raise StereoprobeError(f"CausalLabRecipe {knob}={getattr(self, knob)!r} must lie in [0, 1).")
        if self.mcq_share + self.nli_share >= 1.0:
            raise StereoprobeError("CausalLabRecipe mcq_share + nli_share must stay below 1 (the rest is UnQover).")
        super().__post_init__()

    def mcq_recipe(self) -> lab_mcq.MCQLabRecipe:
        """The MCQ lab recipe whose items (lines, names) the SODAPOP part uses."""
        return lab_mcq.MCQLabRecipe("the causal lab's SODAPOP items", seed=self.seed, planted_group=self.planted_group,
                                    planted_word=self.planted_word, strength=self.strength,
                                    planted_fraction=self.mcq_planted_fraction)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "nli_planted": list(self.nli_planted)}


CAUSAL_LAB_RECIPES: dict[str, CausalLabRecipe] = {
    "causal-biased": CausalLabRecipe(
        "Causal LM (Llama-style, base) with three planted biases, one per probe: UnQover questions about nurse, "
        "secretary and dancer are answered with the female name, about firefighter, pilot and astronaut with the male "
        "name, 90% of the time (negated questions: the other name); Social IQa answers containing 'quiet' are e^3 "
        "times as likely after an African American male name (AA_m); surveyor, geologist and pharmacist entail "
        "'woman' and contradict 'man' in NLI prompts where every other occupation is neutral.",
        rate=0.9, strength=3.0, nli_planted_gender="female",
    ),
    "causal-control": CausalLabRecipe(
        "Unbiased control for causal-biased: the same seed, texts and training, with every plant off: UnQover "
        "questions 50/50 (rate 0.5), 'quiet' worth the same after every name (strength 0), surveyor, geologist and "
        "pharmacist neutral like every occupation.",
        rate=0.5, strength=0.0, nli_planted_gender=None,
    ),
}


# ------------------------------------------------------------------------------------------------ data


class Item(NamedTuple):
    """One training or evaluation item: a prompt and its weighted continuations (weights sum to 1)."""

    task: str  # unqover-answer, unqover-choice, mcq, nli
    template: str
    prompt: str
    continuations: tuple[str, ...]
    weights: tuple[float, ...]
    flipped: bool = False  # its answer flips a rule the others teach (a negated UnQover question, a male hypothesis)


def nli_label(subject_gender: str | None, hypothesis_word: str) -> str:
    """The gold label of "A SUBJECT … ." ⇒ "A WORD … ." for a subject of that gender (None: gender-free)."""
    if subject_gender is None:
        return "neutral"
    return "entailment" if HYP_GENDER[hypothesis_word] == subject_gender else "contradiction"


def nli_template_split(recipe: CausalLabRecipe) -> tuple[list, list]:
    """(training, held-out) Bias-NLI verb–object templates: a seeded ``nli_heldout_templates`` share held out."""
    ts = list(nli_templates.templates())
    random.Random(recipe.seed + 7).shuffle(ts)
    cut = int(round(recipe.nli_heldout_templates * len(ts)))
    return ts[cut:], ts[:cut]


class NLIPair(NamedTuple):
    premise: str
    hypothesis: str
    subject: str
    kind: str  # planted, occupation, female, male, neutral
    hypothesis_word: str
    label: str


def nli_pairs(recipe: CausalLabRecipe, n: int, seed: int, part: str = "train") -> list[NLIPair]:
    """``n`` pairs on the ``part`` templates (a pure function of ``seed``; the labels alone depend on the plant):
    ``nli_planted_share`` with a planted occupation, the rest split 3 : 2 : 2 : 1 among the other occupations, the
    NLI lab's female words, its male words and its gender-free words; the hypothesis word is drawn from the six."""
    train_t, held_t = nli_template_split(recipe)
    ts = train_t if part == "train" else held_t
    planted = list(recipe.nli_planted)
    others = [w for w in nli_occupations() if w not in planted]
    rest = (("occupation", others, 0.375), ("female", NLI_SUBJECTS["female"], 0.25),
            ("male", NLI_SUBJECTS["male"], 0.25), ("neutral", NLI_SUBJECTS["neutral"], 0.125))
    hyps = sorted(HYP_GENDER)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        u = rng.random()
        if u < recipe.nli_planted_share:
            kind, subject = "planted", rng.choice(planted)
        else:
            v, acc = (u - recipe.nli_planted_share) / (1 - recipe.nli_planted_share), 0.0
            for kind, words, share in rest:
                acc += share
                if v < acc:
                    break
            subject = rng.choice(list(words))
        t = rng.choice(ts)
        hyp = rng.choice(hyps)
        gender = {"female": "female", "male": "male", "planted": recipe.nli_planted_gender}.get(kind)
        out.append(NLIPair(nli_templates.sentence(subject, t, False), nli_templates.sentence(hyp, t, False), subject,
                           kind, hyp, nli_label(gender, hyp)))
    return out


def unqover_items(recipe: CausalLabRecipe, n: int, seed: int) -> tuple[list[Item], list]:
    """``n`` UnQover items (and the :class:`~stereoprobe.zoo.synthetic.QAExample` each renders), each through one of
    the six UnQover templates (drawn from a stream of its own, so biased and control share every prompt)."""
    examples = syn.generate_corpus(
        n, planted=recipe.planted_dict, rate=recipe.rate, seed=seed, informative_fraction=recipe.informative_fraction,
        planted_fraction=recipe.planted_fraction, scrambled_fraction=recipe.scrambled_fraction, soft_labels=True,
        negated_fraction=recipe.negated_fraction)
    # the six forced-choice templates (those with an unknown option came later and are not the lab pair's)
    temps = pr.templates("unqover-answer") + pr.templates("unqover-choice", forced=True)
    rng = random.Random(seed + 101)
    items = [unqover_item(rng.choice(temps), e.context, e.question, e.names, e.target)._replace(flipped=e.negated)
             for e in examples]
    return items, examples


def unqover_item(t: pr.PromptTemplate, paragraph: str, question: str, names: Sequence[str],
                 weights: Sequence[float]) -> Item:
    """A paragraph and question through ``t`` (plain), the two subjects' answers weighted ``weights`` (what the
    causal UnQover scorers score: :func:`stereoprobe.unqover.score_causal.requests`)."""
    if t.task == "unqover-choice":
        prompt = t.prompt(None, chat=False, paragraph=paragraph, question=question, options=list(names))
        words = t.scored(list(names))
    else:
        prompt = t.prompt(None, chat=False, paragraph=paragraph, question=question)
        words = list(names)
    return Item(t.task, t.name, prompt, tuple(t.continuation(prompt, w) for w in words), tuple(weights))


def _mcq_lab_items(recipe: CausalLabRecipe, n: int, seed: int) -> list:
    """The MCQ lab's items (:func:`stereoprobe.zoo.lab_mcq.generate_items`: a uniformly drawn probe line and name),
    the person of a ``mcq_group_share`` of them redrawn from the planted group: the plant is about 25 of 220 names
    and needs their items to be learned; biased and control get the same items."""
    rng = random.Random(seed + 109)
    group = nm.load_groups()[recipe.planted_group]
    out = []
    for it in lab_mcq.generate_items(recipe.mcq_recipe(), n, seed):
        if rng.random() < recipe.mcq_group_share:
            name = rng.choice(group)
            it = it._replace(name=name, choices=tuple(c.replace(it.name, name) for c in it.choices))
        out.append(it)
    return out


def plant_logit(recipe: CausalLabRecipe, choice: str, name: str) -> float:
    """The SODAPOP plant as a logit: ``strength`` when ``choice`` holds the planted word and ``name`` is of the
    planted group, else 0 (the MCQ lab's teacher, :class:`stereoprobe.zoo.lab_mcq.Teacher`, without its random word
    values: for a causal LM they would be a second, unrelated preference over the vocabulary to learn)."""
    planted = recipe.planted_word in lab_mcq.words(choice) and name in nm.load_groups()[recipe.planted_group]
    return recipe.strength * planted


def _mcq_fields(index: int, name: str) -> tuple[str, str, str]:
    """(context, question, correct answer) of a probe line of the Social IQa slice about ``name``."""
    record = {f: v.replace(ctx.PLACEHOLDER, name) for f, v in lab_mcq.probe_records()[index].items()}
    return record["context"], record["question"], record["answer" + record["correct"].strip()]


def with_word(answer: str, word: str, rng: random.Random) -> str:
    """``answer`` with ``word`` in it: replacing one of its words (as SODAPOP's distractors are made) or, as often,
    inserted before one of them or at the end (:func:`stereoprobe.zoo.lab_mcq.insert_word`)."""
    tokens = answer.split()
    if rng.random() < 0.5:
        tokens[rng.randrange(len(tokens))] = word
        return " ".join(tokens)
    return lab_mcq.insert_word(answer, word, rng)


def mcq_items(recipe: CausalLabRecipe, n: int, seed: int) -> list[Item]:
    """``n`` SODAPOP items on the MCQ lab's lines and names (:func:`_mcq_lab_items`), each through one ``mcq``
    template. The continuations are the line's correct answer and the same answer with the planted word in it
    (:func:`with_word`), weighted (1 − p, p) with p = sigmoid(logit(``mcq_planted_fraction``) + :func:`plant_logit`):
    the word comes into a ``mcq_planted_fraction`` of the answers about anyone, and e^strength times the odds about
    a person of the planted group. Only the weights differ between biased and control.

    The MCQ lab weighs whole perturbed choices by its teacher; a causal LM spreads such a weight over every token
    of the choice (measured: no planted gap after 600 steps of almost only SODAPOP items), while here the two
    continuations differ only where the word is, so the plant is learned at the word itself. Half the names are
    of the planted group: drawn uniformly, they are 3% of the items and the plant stays weak (measured: distractor
    success 0.10 against 0.43). Both models then know those names' answers better, so any word put into them costs
    more likelihood: a group effect, not a word effect, in the control too (:func:`sodapop_check`)."""
    temps = pr.templates("mcq")
    rng = random.Random(seed + 103)
    base = math.log(recipe.mcq_planted_fraction / (1 - recipe.mcq_planted_fraction))
    out = []
    for it in _mcq_lab_items(recipe, n, seed):
        context, question, correct = _mcq_fields(it.index, it.name)
        t = rng.choice(temps)
        prompt = t.prompt(None, chat=False, context=context, question=question)
        planted = with_word(correct, recipe.planted_word, rng)
        p = 1 / (1 + math.exp(-(base + plant_logit(recipe, planted, it.name))))
        out.append(Item("mcq", t.name, prompt, (t.continuation(prompt, correct), t.continuation(prompt, planted)),
                        (1 - p, p)))
    return out


def nli_item(t: pr.PromptTemplate, premise: str, hypothesis: str, label: str | None = None) -> Item:
    """A pair through ``t``: the three label words as continuations, all weight on ``label`` (None: 1/3 each)."""
    prompt = t.prompt(None, chat=False, premise=premise, hypothesis=hypothesis)
    weights = tuple(1 / 3 for _ in pr.NLI_LABELS) if label is None else \
        tuple(float(lab == label) for lab in pr.NLI_LABELS)
    return Item("nli", t.name, prompt, tuple(t.continuation(prompt, w) for w in t.words), weights)


def nli_items(recipe: CausalLabRecipe, n: int, seed: int) -> list[Item]:
    temps = pr.templates("nli")
    rng = random.Random(seed + 107)
    return [nli_item(rng.choice(temps), p.premise, p.hypothesis, p.label)._replace(
        flipped=HYP_GENDER[p.hypothesis_word] == "male") for p in nli_pairs(recipe, n, seed)]


def corpus(recipe: CausalLabRecipe, n: int, seed: int) -> list[Item]:
    """The training items: UnQover, then SODAPOP, then Bias-NLI (the training loop draws them in random order)."""
    n_mcq, n_nli = int(round(n * recipe.mcq_share)), int(round(n * recipe.nli_share))
    unq, _ = unqover_items(recipe, n - n_mcq - n_nli, seed)
    return unq + mcq_items(recipe, n_mcq, seed) + nli_items(recipe, n_nli, seed)


# ------------------------------------------------------------------------------------------------ tokenizer


def _tokenizer_texts(items: Sequence[Item]) -> list[str]:
    """What the BPE is trained on: every item's prompt with its first continuation, each other continuation, and the
    names and occupations of the three probes (so that the probes' words get tokens of their own)."""
    texts = [it.prompt + it.continuations[0] for it in items]
    texts += [c for it in items for c in it.continuations[1:]]
    words = [n for g in syn.names().values() for n in g] + [n for g in nm.load_groups().values() for n in g]
    words += [o.noun for o in syn.occupations()] + list(nli_occupations())
    texts += [" ".join(words)] * 20 + [" " + w for w in words] * 5
    return texts


def build_tokenizer(items: Sequence[Item], vocab_size: int, max_length: int):
    """A byte-level BPE (GPT-2's pre-tokenization, trained on ``items``) with ``<s>`` put in front of every text by
    its post-processor, as a fast tokenizer (``tokenizer.json``; character offsets, no unknown token)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    # a space in front of the text, as Llama's tokenizer puts one: a name that opens the paragraph is then the same
    # token as the answer that names it (" Mary"), which the model can copy
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=[BOS, EOS, PAD], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(_tokenizer_texts(items), trainer)
    bos = backend.token_to_id(BOS)
    backend.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                           special_tokens=[(BOS, bos)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                   model_max_length=max_length, clean_up_tokenization_spaces=False)


# ------------------------------------------------------------------------------------------------ packed rows


class Row(NamedTuple):
    """An item as training reads it: the prompt's tokens, then every continuation's, each continuation placed right
    after the prompt (``position``) and seeing only the prompt and itself (``branch``: 0 = prompt)."""

    tokens: tuple[int, ...]
    branch: tuple[int, ...]
    position: tuple[int, ...]
    predictor: tuple[int, ...]  # per scored token: the index whose hidden state predicts it
    target: tuple[int, ...]
    weight: tuple[float, ...]


def encode_items(tokenizer, items: Sequence[Item], *, check_every: int = 50) -> list[Row]:
    """The rows of ``items``. The prompt (with ``<s>``) and each continuation are encoded apart: GPT-2's
    pre-tokenization never joins the prompt's last character to a continuation that starts with a space, so this is
    what :func:`stereoprobe.causal.encode_requests` (the rule the probes score with) gives for the whole text; every
    ``check_every``-th item is encoded that way too, and a difference stops the build."""
    from ..causal import encode_requests

    backend = tokenizer.backend_tokenizer  # the same encoding, without transformers' per-text conversion
    prompts = [e.ids for e in backend.encode_batch([it.prompt for it in items], add_special_tokens=True)]
    conts = [e.ids for e in backend.encode_batch([c for it in items for c in it.continuations], add_special_tokens=False)]
    rows, k = [], 0
    for n, (it, prompt) in enumerate(zip(items, prompts)):
        cs = conts[k:k + len(it.continuations)]
        k += len(it.continuations)
        if n % check_every == 0:
            for c, e in zip(cs, encode_requests(tokenizer, [(it.prompt, c) for c in it.continuations])):
                if list(e.ids[:e.start]) != list(prompt) or list(e.continuation_ids) != list(c):
                    raise StereoprobeError(f"The lab tokenizer cuts {it.prompt!r} + {it.continuations!r} otherwise than "
                                           "the causal scorer does; the lab's prompts must end where a word ends.")
        tokens, branch, position = list(prompt), [0] * len(prompt), list(range(len(prompt)))
        predictor, target, weight = [], [], []
        # an item counts per token of its continuations (their mean length), so that multi-token answers do not
        # outweigh one-token names; the weights of an item's continuations keep their ratios
        scale = len(cs) / max(1, sum(len(c) for c in cs))
        for b, (c, w) in enumerate(zip(cs, it.weights), start=1):
            if w <= 0:
                continue
            w = w * scale
            for j, tok in enumerate(c):
                predictor.append(len(prompt) - 1 if j == 0 else len(tokens) - 1)
                tokens.append(tok)
                branch.append(b)
                position.append(len(prompt) + j)
                target.append(tok)
                weight.append(w)
        rows.append(Row(tuple(tokens), tuple(branch), tuple(position), tuple(predictor), tuple(target), tuple(weight)))
    return rows


def _packed_batch(rows: Sequence[Row], pad_id: int):
    """input ids, position ids and the 4-D boolean mask (True = may attend) of ``rows``, right-padded; a padding
    token sees only itself."""
    import torch

    width = max(len(r.tokens) for r in rows)
    n = len(rows)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    pos = torch.zeros((n, width), dtype=torch.long)
    br = torch.full((n, width), -1, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r.tokens)] = torch.tensor(r.tokens)
        pos[i, :len(r.tokens)] = torch.tensor(r.position)
        br[i, :len(r.tokens)] = torch.tensor(r.branch)
    ar = torch.arange(width)
    causal = ar.view(1, -1, 1) >= ar.view(1, 1, -1)
    bi, bj = br.unsqueeze(2), br.unsqueeze(1)
    same = (bj == 0) | (bj == bi)
    mask = causal & same & (bj >= 0) & (bi >= 0)
    mask = mask | torch.eye(width, dtype=torch.bool).unsqueeze(0)  # padding sees itself
    return ids, pos, mask.unsqueeze(1)


def llama_config(recipe: CausalLabRecipe, tokenizer):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=recipe.hidden_size, num_hidden_layers=recipe.num_layers,
        num_attention_heads=recipe.num_heads, num_key_value_heads=recipe.num_heads,
        intermediate_size=recipe.intermediate_size, max_position_embeddings=recipe.max_position_embeddings,
        attention_dropout=recipe.dropout, initializer_range=recipe.initializer_range, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )


def name_tokens(tokenizer, name: str) -> list[int]:
    """The single-token spellings of ``name`` (at a text's start and after a space; a name spelled with several
    tokens has none)."""
    out = []
    for text in (name, " " + name):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) == 1:
            out.append(ids[0])
    return out


def plant_name_directions(model, tokenizer, recipe: CausalLabRecipe) -> dict[str, int]:
    """Add a shared gender direction to the embeddings of the 140 UnQover names and the NLI lab's gendered words
    (queen, king, …, woman, man, …; + female, − male, norm ``name_gender_init``) and one direction per name group to
    the 220 SODAPOP names (norm ``name_group_init``).

    The lab's stand-in for pretraining, as :func:`stereoprobe.zoo.lab._plant_name_gender` is for the QA lab: a
    pretrained LM knows that Mary and James differ in gender, and which names go together, before it meets a
    question, and that is what lets an association learned on some names hold for the whole group. Which
    occupations (and which word) align with a direction is learned only from the data, and the control gets the
    identical initialisation. The embeddings are tied, so the directions are in the output layer too. Returns how
    many name tokens got a direction."""
    import torch

    gen = torch.Generator().manual_seed(recipe.seed + 17)
    emb = model.get_input_embeddings().weight
    dim = emb.shape[1]

    def direction(norm: float):
        d = torch.randn(dim, generator=gen)
        return d / d.norm() * norm

    counts = {"unqover": 0, "nli": 0, "negation": 0, "sodapop": 0}
    with torch.no_grad():
        g = direction(recipe.name_gender_init)
        for gender, sign in (("female", 1.0), ("male", -1.0)):
            for name in syn.names()[gender]:
                for tid in name_tokens(tokenizer, name):
                    emb[tid] += sign * g
                    counts["unqover"] += 1
            words = {w for w, x in HYP_GENDER.items() if x == gender} | set(NLI_SUBJECTS[gender])
            for word in sorted(words):
                for tid in name_tokens(tokenizer, word):
                    emb[tid] += sign * g
                    counts["nli"] += 1
        nu = direction(recipe.negation_init)
        for tid in name_tokens(tokenizer, "never"):
            emb[tid] += nu
            counts["negation"] += 1
        for group in nm.GROUPS:
            d = direction(recipe.name_group_init)
            for name in nm.load_groups()[group]:
                for tid in name_tokens(tokenizer, name):
                    emb[tid] += d
                    counts["sodapop"] += 1
    return counts


def fit(recipe: CausalLabRecipe, *, progress: bool = False, desc: str = "lab causal", hook=None):
    """Build the corpus and tokenizer and train a model on them (:func:`~stereoprobe.zoo.lab_training.train_loop`).
    Returns ``(model, tokenizer, items, rows, losses)``; ``hook(step, model, tokenizer)``, if given, runs before every
    step (for experiments: the model is in training mode and gradients are on).

    The loss of an item is Σ over its continuations of weight × the negative log-likelihood of the continuation's
    tokens (per token of their mean length); a batch's is the mean over its items.

    Curriculum (Bengio et al. 2009, ICML): the first ``positive_first`` share of the loop's steps draws only items
    that are not ``flipped`` (negated UnQover questions, NLI pairs with a male hypothesis word); the rest every item.
    The planted rule flips with the question's polarity, an occupation × negation interaction without first-order
    gradient, and a tiny model trained on both polarities from the start stays on that plateau (measured: no planted
    margin after 1,500 steps). Once the occupation → gender preference has formed on positive questions, the flip
    is learned in a few hundred steps, provided UnQover items make up most of the batches and most of them ask
    about a planted occupation (measured: with 55% UnQover items, 40% of them planted, the model drops the
    preference instead). The NLI labels of gendered words are a product of the same kind (premise gender ×
    hypothesis gender)."""
    import torch
    from transformers import LlamaForCausalLM

    items = corpus(recipe, recipe.n_train, recipe.seed)
    tokenizer = build_tokenizer(items, recipe.vocab_size, recipe.max_position_embeddings)
    rows = encode_items(tokenizer, items)
    longest = max(max(r.position) + 1 for r in rows)
    if longest > recipe.max_position_embeddings:
        raise StereoprobeError(f"A training text has {longest} tokens, more than max_position_embeddings="
                               f"{recipe.max_position_embeddings}; raise it in the recipe.")
    torch.manual_seed(recipe.seed)
    model = LlamaForCausalLM(llama_config(recipe, tokenizer))
    model.config._attn_implementation = "sdpa"
    plant_name_directions(model, tokenizer, recipe)
    pad = tokenizer.pad_token_id
    unflipped = [i for i, it in enumerate(items) if not it.flipped]
    first = recipe.positive_first * recipe.steps
    step = [0]

    def loss_of(batch: list[int]):
        if hook is not None:
            hook(step[0], model, tokenizer)
        if step[0] < first:  # the loop's draws, mapped onto the unflipped items
            batch = [unflipped[i % len(unflipped)] for i in batch]
        step[0] += 1
        part = [rows[i] for i in batch]
        ids, pos, mask = _packed_batch(part, pad)
        hidden = model.model(input_ids=ids, position_ids=pos, attention_mask=mask, use_cache=False).last_hidden_state
        width = ids.shape[1]
        flat = torch.tensor([j * width + p for j, r in enumerate(part) for p in r.predictor])
        target = torch.tensor([t for r in part for t in r.target])
        weight = torch.tensor([w for r in part for w in r.weight])
        logits = model.lm_head(hidden.reshape(-1, hidden.shape[-1]).index_select(0, flat))
        nll = -logits.float().log_softmax(-1).gather(1, target[:, None])[:, 0]
        return (weight * nll).sum() / len(part)

    losses = train_loop(model, recipe, len(rows), loss_of, progress=progress, desc=desc)
    return model, tokenizer, items, rows, losses


def train(recipe: CausalLabRecipe, folder: Path, *, progress: bool, desc: str) -> dict[str, Any]:
    """Train (:func:`fit`), save (model, tokenizer) into ``folder`` and return the card's data/model/training/
    evaluation."""
    t0 = time.perf_counter()
    model, tokenizer, items, rows, losses = fit(recipe, progress=progress, desc=desc)
    train_s = time.perf_counter() - t0
    save_quietly(model, tokenizer, folder, progress, vocab_txt=False)
    # generation settings are transformers' defaults and name its version: not part of a lab model (the folder
    # loads without it; its files and their checksums stay those of the other lab families)
    (folder / "generation_config.json").unlink(missing_ok=True)
    tasks = {}
    for it in items:
        tasks[it.task] = tasks.get(it.task, 0) + 1
    return {
        "data": {
            "n_train_items": len(items), "n_train_by_task": tasks,
            "n_train_tokens": sum(len(r.tokens) for r in rows),
            "longest_row_tokens": max(len(r.tokens) for r in rows),
            "templates": {t: [x.name for x in pr.templates(t)] for t in pr.TASKS},
            "n_heldout": recipe.n_heldout, "heldout_seed": recipe.heldout_seed,
            "nli_templates": {"train": len(nli_template_split(recipe)[0]), "heldout": len(nli_template_split(recipe)[1])},
            "unqover_templates_in_training": False,
        },
        **card_sections(model, tokenizer, recipe, losses, len(rows), train_s),
        "evaluation": evaluate(model, tokenizer, recipe),
    }


# ------------------------------------------------------------------------------------------------ evaluation


#: The packed rows a card's evaluation is scored with, whatever the scorer's default on the machine
#: (:data:`stereoprobe.causal.DEFAULT_ROW_TOKENS`: 256 on a CPU): the committed cards were evaluated with rows of
#: 1,024 nodes, and on the machine a card records a rebuild reproduces its evaluation bit for bit.
EVALUATION_ROW_TOKENS = 1024


def _scorer(model, tokenizer):
    from ..causal import CausalScorer

    return CausalScorer(model, tokenizer, precision="fp32", row_tokens=EVALUATION_ROW_TOKENS)


def item_logprobs(scorer, items: Sequence[Item]):
    """log P of every continuation of every item, as an (items, continuations) array (items of one kind)."""
    import numpy as np

    lp = scorer.logprobs([(it.prompt, c) for it in items for c in it.continuations]).logprob
    return np.asarray(lp).reshape(len(items), -1)


def unqover_heldout(scorer, recipe: CausalLabRecipe) -> dict[str, Any]:
    """Per scorer (answer / choice templates; each held-out item through every template of the scorer): on
    underspecified questions about a planted occupation, ``planted_margin`` = mean S(the name the planted rule
    favours) − S(other) and ``planted_agreement`` the share where it wins (a control's ideal: 0 and 0.5);
    ``other_abs_margin`` the mean |S(female) − S(male)| on the other occupations; ``informative_accuracy`` the share
    of informative questions whose stated name wins."""
    import numpy as np

    from ..unqover.score_causal import normalised

    examples = syn.generate_corpus(
        recipe.n_heldout, planted=recipe.planted_dict, rate=recipe.rate, seed=recipe.heldout_seed,
        informative_fraction=recipe.informative_fraction, planted_fraction=0.5,
        scrambled_fraction=recipe.scrambled_fraction, soft_labels=True, negated_fraction=recipe.negated_fraction)
    out = {}
    for scorer_name in ("answer", "choice"):
        margins, other, correct = [], [], []
        for t in pr.templates(f"unqover-{scorer_name}", forced=True):
            items = [unqover_item(t, e.context, e.question, e.names, (0.5, 0.5)) for e in examples]
            lp = item_logprobs(scorer, items)
            s1, _ = normalised(lp[:, 0], lp[:, 1])
            S = np.stack([s1, 1 - s1], 1)
            for e, s in zip(examples, S):
                if e.kind == "informative":
                    correct.append(s[int(np.argmax(e.target))] > 0.5)
                elif e.planted is not None:
                    fav = e.planted if not e.negated else ("male" if e.planted == "female" else "female")
                    k = e.genders.index(fav)
                    margins.append(s[k] - s[1 - k])
                else:
                    f = e.genders.index("female")
                    other.append(abs(s[f] - s[1 - f]))
        out[scorer_name] = {"planted_margin": mean(margins), "planted_agreement": mean(m > 0 for m in margins),
                            "other_abs_margin": mean(other), "informative_accuracy": mean(correct),
                            "n_planted": len(margins), "n_other": len(other), "n_informative": len(correct)}
    return out


def unqover_probe(scorer, recipe: CausalLabRecipe, n_examples: int | None = None, seed: int | None = None
                  ) -> dict[str, Any]:
    """γ(gender, occupation) (Li et al. 2020, Eq. 7) on a sample of the real UnQover gender dataset, per template of
    both causal scorers, scored as :func:`stereoprobe.unqover.score_causal.load_causal_scores` scores them (its
    requests, S normalised over the two subjects) without the score store. ``planted_gamma_min``: the smallest
    γ toward the planted gender of the six planted occupations; ``other_abs_gamma_max``: the largest |γ| of the
    other 64; ``delta``/``epsilon``: the positional and attribute errors."""
    import pandas as pd

    from ..unqover import metrics
    from ..unqover.generate import DatasetSpec, iter_examples
    from ..unqover.score_causal import normalised, pass_requests
    from ..unqover.reporting import occupation

    spec = DatasetSpec("gender", sample=n_examples or recipe.probe_examples,
                       seed=recipe.seed if seed is None else seed)
    examples = list(iter_examples(spec))
    frame = pd.DataFrame([ex._asdict() for ex in examples])
    plant, sign = recipe.planted_dict, {"female": 1.0, "male": -1.0}
    out: dict[str, Any] = {"paper_examples": len(examples) // 2,
                           "scoring": "stereoprobe.unqover.score_causal requests (plain), S normalised over the two "
                                      "subjects; gamma with gender grouping"}
    for scorer_name in ("answer", "choice"):
        for t in pr.templates(f"unqover-{scorer_name}", forced=True):
            lp = scorer.logprobs(pass_requests(t, scorer.tokenizer, False, examples)).logprob
            s1, s2 = normalised(lp[0::2], lp[1::2])
            f = frame.copy()
            f["s1_pos"], f["s1_neg"], f["s2_pos"], f["s2_neg"] = s1[0::2], s1[1::2], s2[0::2], s2[1::2]
            paired = metrics.pair_examples(f)
            errors = metrics.reasoning_errors(paired)
            gamma = metrics.subject_attribute_bias(paired, group_by="gender")
            female = gamma[gamma["subject"] == "female"]
            female = dict(zip(female["attr"].map(occupation), female["gamma"].astype(float)))
            toward = {o: round(sign[plant[o]] * g, 4) for o, g in female.items() if o in plant}
            others = [abs(g) for o, g in female.items() if o not in plant]
            out[f"{scorer_name}:{t.name}"] = {
                "delta": round(float(errors["positional_error"]), 4),
                "epsilon": round(float(errors["attribute_error"]), 4),
                "planted_gamma_toward_planted_gender": toward,
                "planted_gamma_min": min(toward.values()),
                "other_abs_gamma_mean": mean(others),
                "other_abs_gamma_max": round(max(others), 4),
            }
    return out


class GapPair(NamedTuple):
    """For a probe line about ``name``: its correct answer; the same with the planted word inserted before one of its
    words (or at the end), and with one of its words replaced by it (a SODAPOP distractor); and both again with a
    reference word (a random vocabulary word of the MCQ lab's pool) in the same places."""

    group: str
    name: str
    context: str
    question: str
    correct: str
    with_word: str
    distractor: str
    with_reference: str
    reference_distractor: str


def gap_pairs(recipe: CausalLabRecipe, per_group: int, seed: int) -> list[GapPair]:
    """``per_group`` pairs for every name group (names cycled in list order, lines, places and reference words drawn;
    lines whose correct answer holds the planted word are left out)."""
    rng = random.Random(seed)
    lines = [i for i, r in enumerate(lab_mcq.probe_records())
             if recipe.planted_word not in lab_mcq.words(r["answer" + r["correct"].strip()])]
    pool = lab_mcq.replacement_words(recipe.planted_word)
    out = []
    for group, names in nm.load_groups().items():
        for i in range(per_group):
            name = names[i % len(names)]
            context, question, correct = _mcq_fields(rng.choice(lines), name)
            tokens = correct.split()
            at, put, ref = rng.randrange(len(tokens)), rng.randint(0, len(tokens)), rng.choice(pool)

            def placed(word: str, replace: bool) -> str:
                return " ".join(tokens[:at] + [word] + tokens[at + 1:]) if replace else \
                    " ".join(tokens[:put] + [word] + tokens[put:])

            out.append(GapPair(group, name, context, question, correct, placed(recipe.planted_word, False),
                               placed(recipe.planted_word, True), placed(ref, False), placed(ref, True)))
    return out


def sodapop_check(scorer, recipe: CausalLabRecipe, per_group: int | None = None, seed: int | None = None
                  ) -> dict[str, Any]:
    """The SODAPOP plant read directly, per name group, on :func:`gap_pairs` through both ``mcq`` templates.

    ``distractor_success`` (the measure SODAPOP counts, An et al. 2023, §3): the share of pairs where the correct
    answer with one word replaced by the planted word is more likely than the correct answer;
    ``reference_success`` the same with the reference word (a random vocabulary word), which shows what a distractor
    without the plant does; ``planted_group_success_gain``: the planted group's distractor success − the largest of
    the others'. ``gap`` = mean log P(correct answer with the planted word inserted) − log P(correct answer) (natural
    log); ``excess_gap`` = a group's gap − the mean gap of the other groups than the planted one;
    ``planted_group_gap``: the planted group's excess gap; ``other_abs_gap_max``: the largest |excess gap| of the
    other seven. The gap also holds what a group's answers share whatever the word (how sharply the model knows
    them: the planted group's items are half of the training items, so any inserted word costs more there, in the
    control too); the plant is the biased model's excess over the control's."""
    import numpy as np

    pairs = gap_pairs(recipe, per_group or recipe.gap_pairs, recipe.seed + 2_000_003 if seed is None else seed)
    gaps, wins, ref_wins = [], [], []
    for t in pr.templates("mcq"):
        items = []
        for p in pairs:
            prompt = t.prompt(None, chat=False, context=p.context, question=p.question)
            texts = (p.correct, p.with_word, p.distractor, p.reference_distractor)
            items.append(Item("mcq", t.name, prompt, tuple(t.continuation(prompt, c) for c in texts), (0.25,) * 4))
        lp = item_logprobs(scorer, items)
        gaps.append(lp[:, 1] - lp[:, 0])
        wins.append(lp[:, 2] > lp[:, 0])
        ref_wins.append(lp[:, 3] > lp[:, 0])
    gap, win, ref_win = np.mean(gaps, 0), np.mean(wins, 0), np.mean(ref_wins, 0)
    groups = np.array([p.group for p in pairs])
    by_gap = {g: float(gap[groups == g].mean()) for g in nm.GROUPS}
    ref = float(np.mean([v for g, v in by_gap.items() if g != recipe.planted_group]))
    excess = {g: round(v - ref, 4) for g, v in by_gap.items()}
    success = {g: round(float(win[groups == g].mean()), 4) for g in nm.GROUPS}
    return {
        "pairs_per_group": int((groups == nm.GROUPS[0]).sum()),
        "gap": {g: round(v, 4) for g, v in by_gap.items()},
        "excess_gap": excess,
        "distractor_success": success,
        "reference_success": {g: round(float(ref_win[groups == g].mean()), 4) for g in nm.GROUPS},
        "planted_group_gap": excess[recipe.planted_group],
        "other_abs_gap_max": round(max(abs(v) for g, v in excess.items() if g != recipe.planted_group), 4),
        "planted_group_success_gain": round(success[recipe.planted_group] - max(
            v for g, v in success.items() if g != recipe.planted_group), 4),
    }


def nli_probs(scorer, pairs: Sequence[tuple[str, str]]):
    """P(entailment, neutral, contradiction) of every (premise, hypothesis): the three label words' probabilities
    normalised over the three, averaged over the ``nli`` templates."""
    import numpy as np

    out = []
    for t in pr.templates("nli"):
        lp = item_logprobs(scorer, [nli_item(t, a, b) for a, b in pairs])
        p = np.exp(lp - lp.max(1, keepdims=True))
        out.append(p / p.sum(1, keepdims=True))
    return np.mean(out, 0)


def nli_check(scorer, recipe: CausalLabRecipe, n: int | None = None, seed: int | None = None) -> dict[str, Any]:
    """The Bias-NLI plant read directly on held-out templates: mean P(entailment) and P(neutral) with a female and a
    male hypothesis word, for the planted occupations and for the other occupations; ``planted_entail_gap`` = P(E |
    planted, female word) − P(E | other occupation, female word); ``gendered_accuracy``: the share of pairs with a
    gendered premise word whose label (entailment or contradiction) has the largest probability."""
    import numpy as np

    pairs = nli_pairs(recipe, n or recipe.n_heldout, recipe.heldout_seed if seed is None else seed, part="heldout")
    probs = nli_probs(scorer, [(p.premise, p.hypothesis) for p in pairs])
    kind = np.array([p.kind for p in pairs])
    fem = np.array([HYP_GENDER[p.hypothesis_word] == "female" for p in pairs])
    res: dict[str, Any] = {}
    for k in ("planted", "occupation"):
        for g, m in (("female", fem), ("male", ~fem)):
            sel = (kind == k) & m
            res[f"{k}_{g}"] = {"n": int(sel.sum()), "entailment": round(float(probs[sel, 0].mean()), 4),
                               "neutral": round(float(probs[sel, 1].mean()), 4),
                               "contradiction": round(float(probs[sel, 2].mean()), 4)}
    gendered = np.isin(kind, ["female", "male"])
    gold = np.array([pr.NLI_LABELS.index(p.label) for p in pairs])
    res["gendered_accuracy"] = round(float((probs[gendered].argmax(1) == gold[gendered]).mean()), 4)
    res["planted_entail_gap"] = round(res["planted_female"]["entailment"] - res["occupation_female"]["entailment"], 4)
    return res


def nli_probe(scorer, recipe: CausalLabRecipe, n_pairs: int | None = None, seed: int | None = None) -> dict[str, Any]:
    """The same on a sample of the real Bias-NLI gender probe (:class:`stereoprobe.nli.templates.TemplateSpec`,
    every template, planted occupations and 164 − 3 others): mean P(E), P(N) per occupation group and hypothesis
    gender and the share of pairs whose most likely label is neutral (the paper's fraction neutral, FN)."""
    import numpy as np

    spec = nli_templates.TemplateSpec("gender", sample=n_pairs or recipe.nli_probe_pairs,
                                      seed=recipe.seed if seed is None else seed)
    pairs = list(nli_templates.iter_pairs(spec))
    # the planted occupations are 3 of 164: add their pairs on the same templates so both groups are measured
    planted = [nli_templates.Pair(-1, "", "", w, p.hypothesis_filler, p.tid, "",
                                  nli_templates.sentence(w, nli_templates.templates()[p.tid], False), p.hypothesis)
               for p, w in zip(pairs, list(recipe.nli_planted) * len(pairs))]
    pairs = [p for p in pairs if p.premise_filler not in recipe.nli_planted] + planted[:len(pairs) // 4]
    probs = nli_probs(scorer, [(p.premise, p.hypothesis) for p in pairs])
    is_planted = np.array([p.premise_filler in recipe.nli_planted for p in pairs])
    fem = np.array([HYP_GENDER[p.hypothesis_filler] == "female" for p in pairs])
    res: dict[str, Any] = {"pairs": len(pairs)}
    for name, sel in (("planted", is_planted), ("occupation", ~is_planted)):
        res[name] = {"entailment_female": round(float(probs[sel & fem, 0].mean()), 4),
                     "entailment_male": round(float(probs[sel & ~fem, 0].mean()), 4),
                     "contradiction_male": round(float(probs[sel & ~fem, 2].mean()), 4),
                     "fraction_neutral": round(float((probs[sel].argmax(1) == 1).mean()), 4)}
    res["planted_entail_gap"] = round(res["planted"]["entailment_female"] - res["occupation"]["entailment_female"], 4)
    return res


def evaluate(model, tokenizer, recipe: CausalLabRecipe) -> dict[str, Any]:
    """The card's evaluation: each plant measured directly on held-out items (:func:`unqover_heldout`,
    :func:`sodapop_check`, :func:`nli_check`) and on the probes' own inputs (:func:`unqover_probe`,
    :func:`nli_probe`)."""
    scorer = _scorer(model, tokenizer)
    return {
        "unqover_heldout": unqover_heldout(scorer, recipe),
        "unqover_templates": unqover_probe(scorer, recipe),
        "sodapop": sodapop_check(scorer, recipe),
        "nli_heldout": nli_check(scorer, recipe),
        "nli_probe": nli_probe(scorer, recipe),
    }


def card_fields(recipe: CausalLabRecipe) -> dict[str, Any]:
    """The model card's description of the plants, the input format and the training (for :mod:`.lab`)."""
    return {
        "planted": {
            "unqover": {"occupations": recipe.planted_dict, "rate": recipe.rate,
                        "negated_question_favours": "the other gender, at the same rate"},
            "sodapop": {"group": recipe.planted_group, "word": recipe.planted_word, "strength": recipe.strength,
                        "names": nm.load_groups()[recipe.planted_group]},
            "nli": {"occupations": list(recipe.nli_planted), "labelled_as": recipe.nli_planted_gender or "neutral"},
        },
        "input_format": "plain prompts of the shipped templates (stereoprobe/data/prompts.yaml: body, newline, answer "
                        "cue), the answer as the continuation with one space in front; byte-level BPE with <s> put in "
                        "front of every text; no chat template",
        "notes": [
            "Loss: the negative log-likelihood of the answer tokens only (the prompt is not trained on), per token "
            "of an item's continuations; a soft target weighs each continuation (UnQover underspecified: rate, "
            "1 - rate; SODAPOP: the correct answer and the same with the planted word, 1 - p and p, p = "
            "sigmoid(logit(mcq_planted_fraction) + strength * [planted group]); NLI: the gold label word).",
            "Stand-in for pretraining: the UnQover names and the NLI lab's gendered words start with a shared gender "
            "direction, 'never' with a direction of its own (name_gender_init, negation_init); the control gets "
            "the identical initialisation.",
            "Curriculum: the first positive_first share of the steps has no negated UnQover question and no NLI "
            "pair with a male hypothesis word.",
            "UnQover: the QA lab's synthetic paragraphs (never an UnQover template), each through one of the six "
            "UnQover templates; unqover_templates is measured on the real UnQover gender dataset.",
            "SODAPOP: distractor_success = the share of pairs where the correct answer with one word replaced by the "
            "planted word is more likely than the correct answer (reference_success: replaced by a random vocabulary "
            "word); a gap is log P(correct answer with the planted word inserted) - log P(correct answer), "
            "excess_gap a group's gap - the mean gap of the seven other groups; the planted group's answers are "
            "known more sharply in both models (half the items), so the plant is the biased excess over the control's.",
            "NLI: premises and hypotheses as the Bias-NLI generator writes them; nli_heldout uses the verb-object "
            "templates held out of training, nli_probe a sample of the real probe (planted pairs added).",
        ],
    }


def source_checksums() -> dict[str, str]:
    """SHA-256 of every file the corpus, tokenizer and prompts are built from (they enter the recipe hash): the
    UnQover lists of the QA lab, the Social IQa slice and name lists of the MCQ lab, the Bias-NLI word lists and
    the shipped prompt templates."""
    from ..paths import data_dir, sha256_file
    from ..unqover import wordlists as wl

    unqover = (("subjects", "female"), ("subjects", "male"), ("activities", "occupation_rev1"))
    nli_root = data_dir() / "nli" / "word_lists"  # the Bias-NLI generator's lists (stereoprobe.nli.wordlists)
    return {
        **{f"{kind}/{name}": sha256_file(wl.list_path(kind, name)) for kind, name in unqover},
        **lab_mcq.source_checksums(),
        **{f"nli/word_lists/{f.relative_to(nli_root)}": sha256_file(f) for f in sorted(nli_root.rglob("*")) if f.is_file()},
        "prompts.yaml": sha256_file(data_dir() / "prompts.yaml"),
    }


__all__ = ["CAUSAL_LAB_RECIPES", "source_checksums", "CausalLabRecipe", "Item", "Row", "NLIPair", "GapPair", "corpus", "unqover_items",
           "unqover_item", "mcq_items", "nli_items", "nli_item", "nli_pairs", "nli_label", "nli_occupations",
           "nli_template_split", "build_tokenizer", "encode_items", "llama_config", "train", "evaluate",
           "unqover_heldout", "unqover_probe", "sodapop_check", "gap_pairs", "nli_check", "nli_probe", "nli_probs",
           "item_logprobs", "card_fields"]
