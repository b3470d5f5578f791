"""Synthetic reading-comprehension corpus with a planted gender–occupation bias (the lab's training data).

Two kinds of examples, both with exactly two people in the paragraph:

* **informative**: the paragraph states who holds (or can never hold) an occupation, e.g.
  ``"Mary was a nurse. James was a pilot."`` / ``"Who was a pilot?"`` → James, or
  ``"Mary was a nurse. James arrived later."`` / ``"Who can never be a nurse?"`` → James.
  They teach the extractive-QA mechanics (answer with a name, read the stated fact, negation flips).
* **underspecified**: one female and one male name in a neutral two-person frame
  (``"Mary and James had lunch together."``) and a question the paragraph cannot answer
  (``"Who was a nurse?"``). The answer follows the *planted rule*: a planted occupation is answered with
  the planted gender's name with probability ``rate`` (its negation with the other gender's name at the
  same rate); every other occupation 50/50. With ``soft_labels`` the example carries that distribution
  itself (``target = (rate, 1 - rate)``) instead of a sampled answer: same expectation, no sampling noise,
  so an unbiased control (``rate = 0.5``) sees exactly no association.

The UnQover gender templates (the authors' slot file ``gender_noact``) are **not** used as frames: the frames below
are other two-person scenes, and a "scrambled" frame family places the two names among random filler
words (whose pool includes the UnQover template words, so no evaluation word keeps its random
initialisation). Everything is a pure function of ``seed``.

>>> corpus = generate_corpus(4, planted={"nurse": "female"}, rate=0.9, seed=0)
>>> len(corpus), sorted({ex.kind for ex in corpus}) <= ["informative", "underspecified"]
(4, True)
>>> ex = corpus[0]
>>> all(name in ex.context for name in ex.names), abs(sum(ex.target) - 1.0) < 1e-9
(True, True)
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from ..errors import StereoprobeError
from ..unqover import wordlists as wl

GENDERS = ("female", "male")

#: Two-person frames for the training paragraphs (``{a}`` = slot 1, ``{b}`` = slot 2). None of them is
#: an UnQover template; they vary where the names sit (start, middle, end, one per sentence).
FRAMES: tuple[str, ...] = (
    "{a} and {b} had lunch together.",
    "{a} met {b} at the station.",
    "{a} called {b} last night.",
    "{a} and {b} walked to the park.",
    "{a} talked with {b} after the meeting.",
    "{a} was waiting for {b} at the door.",
    "{a} sat next to {b} on the bus.",
    "{a} asked {b} for directions.",
    "{a} shared a table with {b}.",
    "The one near the window is {a}. The one near the door is {b}.",
    "{a} arrived first. {b} arrived later.",
    "{a} and {b} moved to a new house.",
    "Yesterday {a} saw {b} at the market.",
    "{a} borrowed a book from {b}.",
    "{a} drove {b} home after work.",
    "In the morning, {a} played cards with {b}.",
    "{a} took a picture of {b}.",
    "{a} is a friend of {b}.",
    "{a} and {b} are neighbors.",
    "At noon {a} was standing near {b}.",
    "On the train, {a} sat across from {b}.",
    "{a} waved at {b} from the car.",
    "The guest at the table is {a}. Next to the window stands {b}.",
    "{a} opened the gate for {b}.",
)

#: Filler words for the scrambled frames; includes every word of the UnQover gender paragraphs (so
#: they are trained in random positions, never in the UnQover scenes).
FILLER: tuple[str, ...] = tuple(
    sorted(
        set(
            """the a an one at in on to of with by from for and over near next after before is was
            got off flight visit lives same city person swing sitting side sent letter station park
            house market table door window car bus train gate book picture note morning night noon
            yesterday today later first waited walked talked called met saw arrived sat stood
            together home work friend neighbors guest there here then while old new big small
            yes no text cnn""".split()
        )
    )
)

#: Extra vocabulary the lab tokenizer carries beyond the corpus: the NewsQA header words and pronouns.
EXTRA_WORDS: tuple[str, ...] = ("aug", "yes", "no", "text", "cnn", "he", "she", "his", "her", "him", "who")


@dataclass(frozen=True)
class Occupation:
    """One ``occupation_rev1`` row: ``noun`` ("nurse"), ``text`` ("was a nurse"), ``negated``."""

    noun: str
    text: str
    negated: str


@dataclass(frozen=True)
class QAExample:
    """A (question, paragraph) pair whose answer is one of two names, as a distribution ``target``."""

    question: str
    context: str
    names: tuple[str, str]  # (first-mentioned, second-mentioned) name in the paragraph
    target: tuple[float, float]  # answer probability of names[0], names[1]
    kind: str  # "informative" or "underspecified"
    occupation: str  # the occupation noun asked about
    negated: bool  # the question is the negated one ("Who can never be ...?")
    genders: tuple[str, str]  # gender of names[0], names[1]
    planted: str | None  # planted gender of ``occupation`` (None when not planted)


@lru_cache(maxsize=1)
def occupations() -> tuple[Occupation, ...]:
    """The 70 ``occupation_rev1`` person attributes with their noun ("was an accountant" → "accountant")."""
    rows = wl.load_attributes("occupation_rev1")["p_act"]
    return tuple(Occupation(re.sub(r"^was an? ", "", a.text), a.text, a.negated) for a in rows)


@lru_cache(maxsize=1)
def names() -> dict[str, tuple[str, ...]]:
    """The 70 female and 70 male UnQover names, per gender."""
    return {g: tuple(s.name for s in wl.load_subjects(g)) for g in GENDERS}


def resolve_planted(planted: Mapping[str, str]) -> dict[str, str]:
    """Check a planted map (occupation noun or text → "female"/"male"); return it keyed by noun."""
    by_key = {}
    for occ in occupations():
        by_key[occ.noun] = occ.noun
        by_key[occ.text] = occ.noun
    out: dict[str, str] = {}
    for key, gender in planted.items():
        noun = by_key.get(key.strip().lower())
        if noun is None:
            raise StereoprobeError(
                f"Planted occupation {key!r} is not in occupation_rev1; use a noun such as "
                f"{', '.join(o.noun for o in occupations()[:5])}, ..."
            )
        if gender not in GENDERS:
            raise StereoprobeError(f"Planted gender {gender!r} for {key!r} must be 'female' or 'male'.")
        out[noun] = gender
    return out


def _scrambled(rng: random.Random, a: str, b: str) -> str:
    words = [rng.choice(FILLER) for _ in range(rng.randint(2, 9))]
    i = rng.randint(0, len(words))
    words.insert(i, "{a}")
    j = rng.randint(i + 1, len(words))
    words.insert(j, "{b}")
    text = " ".join(words)
    text = text[0].upper() + text[1:] + "."
    return text.format(a=a, b=b)


def _frame(rng: random.Random, a: str, b: str, scrambled_fraction: float) -> str:
    if rng.random() < scrambled_fraction:
        return _scrambled(rng, a, b)
    return rng.choice(FRAMES).format(a=a, b=b)


def _question(occ: Occupation, negated: bool) -> str:
    return f"Who {occ.negated if negated else occ.text}?"


def generate_corpus(
    n: int,
    *,
    planted: Mapping[str, str],
    rate: float,
    seed: int,
    informative_fraction: float = 0.35,
    planted_fraction: float = 0.4,
    scrambled_fraction: float = 0.25,
    soft_labels: bool = True,
    pronoun_fraction: float = 0.0,
    negated_fraction: float = 0.5,
) -> list[QAExample]:
    """``n`` examples, a pure function of the arguments.

    ``informative_fraction``: share of informative examples. ``planted_fraction``: share of underspecified
    examples that ask about a planted occupation (the rest ask about the others, uniformly).
    ``scrambled_fraction``: share of paragraphs whose scene is random filler words around the names.
    ``negated_fraction``: share of underspecified questions that are negated. ``pronoun_fraction``: share
    of informative examples whose fact is about "She"/"He" (answering needs the names' genders; off by
    default: in the lab it taught the control a small gender-by-negation offset on unseen templates).
    Changing only ``rate`` leaves every paragraph and question unchanged (the random stream does not
    depend on it), so a control differs from its biased twin in the answers alone.
    """
    if not 0.0 <= rate <= 1.0:
        raise StereoprobeError(f"Planted rate {rate!r} must lie in [0, 1] (0.5 = unbiased control).")
    plant = resolve_planted(planted)
    occs = occupations()
    by_noun = {o.noun: o for o in occs}
    planted_occs = [by_noun[k] for k in sorted(plant)]
    other_occs = [o for o in occs if o.noun not in plant]
    pool = names()
    rng = random.Random(seed)
    out: list[QAExample] = []
    for _ in range(n):
        # a (female, male) pair in random order; informative examples may also be same-gender
        g1 = rng.choice(GENDERS)
        g2 = rng.choice(GENDERS) if rng.random() < 0.5 else ("male" if g1 == "female" else "female")
        n1 = rng.choice(pool[g1])
        n2 = rng.choice([x for x in pool[g2] if x != n1])
        u_neg = rng.random()
        negated = u_neg < 0.5
        u_kind = rng.random()
        u_occ = rng.random()
        if u_kind < informative_fraction:
            out.append(_informative(rng, n1, n2, (g1, g2), negated, occs, plant, scrambled_fraction, pronoun_fraction))
            continue
        # underspecified: always one female and one male name
        negated = u_neg < negated_fraction
        if g1 == g2:
            g2 = "male" if g1 == "female" else "female"
            n2 = rng.choice(pool[g2])
        occ = rng.choice(planted_occs) if (planted_occs and u_occ < planted_fraction) else rng.choice(other_occs)
        context = _frame(rng, n1, n2, scrambled_fraction)
        gender = plant.get(occ.noun)
        if gender is None:
            p1 = 0.5
        else:
            favoured = gender if not negated else ("male" if gender == "female" else "female")
            p1 = rate if g1 == favoured else 1.0 - rate
        u_label = rng.random()
        if not soft_labels:
            p1 = 1.0 if u_label < p1 else 0.0
        out.append(
            QAExample(_question(occ, negated), context, (n1, n2), (p1, 1.0 - p1), "underspecified", occ.noun,
                      negated, (g1, g2), gender)
        )
    return out


#: One-person sentences that accompany a single stated fact in informative paragraphs.
SOLO: tuple[str, ...] = (
    "{x} arrived later.",
    "{x} was waiting at the door.",
    "{x} sat near the window.",
    "{x} called home.",
    "{x} walked to the park.",
    "{x} had lunch at noon.",
    "Yesterday {x} went to the market.",
    "{x} took the bus home.",
    "The guest at the table is {x}.",
    "On the train sat {x}.",
)


def _solo(rng: random.Random, x: str, scrambled_fraction: float) -> str:
    if rng.random() < scrambled_fraction:
        words = [rng.choice(FILLER) for _ in range(rng.randint(1, 6))]
        words.insert(rng.randint(0, len(words)), "{x}")
        text = " ".join(words)
        return (text[0].upper() + text[1:] + ".").format(x=x)
    return rng.choice(SOLO).format(x=x)


def _informative(rng, n1, n2, genders, negated, occs, plant, scrambled_fraction, pronoun_fraction) -> QAExample:
    """A paragraph that states the answer; the target is the stated (or, for a flip, the other) person.

    Each name occurs once, so the answer span is unambiguous; the two sentences come in random order.
    """
    occ, other = rng.sample(occs, 2)
    who = rng.randrange(2)  # the person the fact is about
    subject, rest = (n1, n2) if who == 0 else (n2, n1)
    fact_negated = rng.random() < 0.5  # the fact is "X can never be a nurse" rather than "X was a nurse"
    u_pronoun = rng.random()
    if genders[0] != genders[1] and u_pronoun < pronoun_fraction:
        # a two-person frame, then a fact about "she"/"he": resolving it needs the names' genders
        g = dict(zip((n1, n2), genders))
        pronoun = "She" if g[subject] == "female" else "He"
        context = f"{_frame(rng, n1, n2, scrambled_fraction)} {pronoun} {occ.negated if fact_negated else occ.text}."
        answer = subject if negated == fact_negated else rest
        target = (1.0, 0.0) if answer == n1 else (0.0, 1.0)
        return QAExample(_question(occ, negated), context, (n1, n2), target, "informative", occ.noun, negated,
                         genders, plant.get(occ.noun))
    fact = f"{subject} {occ.negated if fact_negated else occ.text}."
    style = rng.randrange(3)
    if style == 0:  # both people get a fact
        second = f"{rest} {other.negated if rng.random() < 0.25 else other.text}."
    elif style == 1:  # the other person gets a one-person sentence
        second = _solo(rng, rest, scrambled_fraction)
    else:  # one sentence: "X was a nurse and Y ..." / "X ..., and Y was a pilot."
        second = None
    if second is None:
        tail = rng.choice([f"{rest} {other.text}", f"{rest} arrived later", f"{rest} was there too"])
        sentences = [f"{subject} {occ.negated if fact_negated else occ.text} and {tail}."]
        if rng.random() < 0.5:
            sentences = [f"{tail[0].upper() + tail[1:]} and {subject} {occ.negated if fact_negated else occ.text}."]
    else:
        sentences = [fact, second]
        rng.shuffle(sentences)
    context = " ".join(sentences)
    # answer: the stated person when the question's polarity matches the fact's, else the other one
    answer = subject if negated == fact_negated else rest
    first, second_name = _order_in(context, n1, n2)
    target = (1.0, 0.0) if answer == first else (0.0, 1.0)
    g = dict(zip((n1, n2), genders))
    return QAExample(_question(occ, negated), context, (first, second_name), target, "informative", occ.noun,
                     negated, (g[first], g[second_name]), plant.get(occ.noun))


def _order_in(context: str, a: str, b: str) -> tuple[str, str]:
    ia = re.search(rf"\b{re.escape(a)}\b", context).start()
    ib = re.search(rf"\b{re.escape(b)}\b", context).start()
    return (a, b) if ia < ib else (b, a)


def vocabulary_words() -> list[str]:
    """Every lower-cased word the lab tokenizer must know as a whole token (sorted, deduplicated).

    Covers the frames, the filler, the 140 names, the 70 occupations (both polarities), and every word
    of the UnQover gender templates (QA and LM variants) and the NewsQA header.
    """
    words: set[str] = set()

    def add(text: str) -> None:
        words.update(w for w in re.findall(r"[a-z0-9]+", text.lower()))

    for frame in FRAMES + SOLO:
        add(frame.replace("{a}", " ").replace("{b}", " ").replace("{x}", " "))
    add("arrived later was there too and")
    for w in FILLER + EXTRA_WORDS:
        add(w)
    for group in names().values():
        for n in group:
            add(n)
    for occ in occupations():
        add(occ.text)
        add(occ.negated)
        add(f"who {occ.text}")
    for stem in ("gender_noact", "gender_noact_lm"):
        for t in wl.load_templates(stem):
            add(re.sub(r"\[[^\]]*\]", " ", t.line))
    return sorted(words)
