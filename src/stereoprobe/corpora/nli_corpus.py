"""A synthetic, label-balanced 3-way NLI corpus generated from WordNet lexical relations.

Purpose: fine-tune a BERT-family encoder into an NLI model for the Bias-NLI probes (Dev et al. 2020)
without any crowd-sourced NLI data. Every pair is built from one lexical relation that WordNet
(Miller 1995; Princeton WordNet licence; read by :mod:`stereoprobe.corpora.wordnet`) states explicitly,
inside short SNLI-style frames, so the label follows from the relation and the frame's logic:

* **hypernymy** (``@``) between concrete nouns (animals, plants, artifacts, food — only lemmas whose
  most frequent SemCor sense is that synset): a hyponym entails its hypernym in upward contexts
  (``"A tourist is looking at a pelican." → "A tourist is looking at a sea bird."``), the reverse is
  neutral; under negation monotonicity flips (``"Nobody saw any bird." → "Nobody saw any pigeon."``
  is entailment, the reverse neutral) and an affirmed hyponym contradicts a negated hypernym;
  "the only animal in the picture is a X" makes disjoint co-hyponyms contradict (leaves with
  single-inheritance chains, neither an ancestor of the other, no usage category such as "houseplant");
* **verb troponymy** (``@`` between verbs) inside a curated set of everyday activities, each hyponym
  checked against WordNet at load time (``sprint`` ⊂ ``run``, ``whisper`` ⊂ ``speak``, ``nap`` ⊂
  ``sleep``); activities from incompatible groups (sleeping vs running, sitting vs standing) contradict
  for the same person, compatible ones (walking and laughing) are neutral;
* **adjective antonymy** (``!``) and **similarity** (``&``, satellite → head) for 25 curated antonym
  pairs, each checked against WordNet and restricted to the noun classes (WordNet subtrees) it applies
  to: ``"The cider is hot." → "The cider is cold."`` (contradiction), ``"… is not cold."`` (entailment),
  ``"The cider is scorching." → "… is hot."`` (entailment), ``"… is not hot." → "… is cold."``
  (neutral for contrary pairs, entailment for complementary ones such as asleep/awake);
* **added or dropped information**: dropping a modifier or an adverbial entails, adding one is neutral;
  a generic subject ("someone", "a person") is entailed by a specific one and vice versa is neutral.

**The rules.** Every pair is made by one rule, a function named after the label it gives and what the
hypothesis does to the premise: ``e_…`` rules make entailments, ``n_…`` neutral pairs and ``c_…``
contradictions. The rule's name is the pair's ``kind`` (:class:`~stereoprobe.corpora.examples.NLIExample`);
:data:`KINDS` lists each label's rules with their weights. Premise and hypothesis describe the same scene
(SNLI's convention: both describe one photo), so a hypothesis about "the tourist" is about the premise's
"a tourist"; the contradictions rely on it. Most examples below are from ``generate(6000, seed=0)``.

*Object nouns* (a perceived object, an upward-monotone position):

* ``e_hypernym`` (entailment): hyponym → hypernym, "A student is sketching a skyscraper." → "The student
  is sketching an edifice.": sketching a skyscraper is sketching an edifice.
* ``n_hyponym`` (neutral): the reverse, hypernym → hyponym: an edifice need not be a skyscraper. Sometimes
  the premise's place or adverbial is left out of the hypothesis; the pair stays neutral.
* ``e_drop_info`` (entailment): the hypothesis drops a modifier, a place or an adverbial of the premise
  ("… examined some appetizer in the street." → "… examined some appetizer."); it says less.
* ``n_add_info`` (neutral): the hypothesis adds one ("… photographed a baboon." → "… photographed a
  waterlogged baboon.").
* ``e_subject_general`` (entailment): a specific subject → a generic one, "A visitor is sleeping." →
  "A person is sleeping."
* ``n_subject_specific`` (neutral): the reverse, "Someone is filming a toilet." → "A pedestrian is
  filming a toilet."

*Negation* (a negated object or activity is downward-monotone, so the direction of hypernymy flips):

* ``e_negation_downward`` (entailment): negated hypernym → negated hyponym, "Nobody saw any bird." →
  "Nobody saw any pigeon.", "Nobody is walking." → "No one is waddling.": no bird means no pigeon.
* ``n_negation_upward`` (neutral): negated hyponym → negated hypernym ("Nobody is describing any
  storeroom." → "Nobody is describing any room.": another room may be described), or an affirmed
  hypernym → a negated hyponym ("The volunteer is drinking a glass of water." → "No one is sipping a glass
  of water.": drinking need not be sipping).
* ``c_negation`` (contradiction): an affirmed noun or activity against the negation of the same one or of
  its hypernym, "A family filmed a tavern." → "No one filmed any tavern.", "The hiker is stomping." →
  "No one is walking."

*"The only" frames* (exactly one animal or plant in a picture, garden, field, …):

* ``e_only_hypernym`` (entailment): "The only animal in the field is a penguin." → "… is a sea bird.":
  the one animal is a penguin, so it is a sea bird.
* ``n_only_hyponym`` (neutral): the reverse, "… is a terrier." → "… is a schnauzer.": not every terrier is.
* ``c_only_cohyponym`` (contradiction): two disjoint members of the class, "The only plant in the room is
  a cactus." → "… is a plectranthus.": the one plant cannot be both. Only leaves of the vocabulary with
  single-inheritance chains, neither an ancestor of the other, outside the usage categories of
  :data:`_CROSS_CUTTING` ("houseplant", "pet").

*Adjectives* (the :data:`ADJECTIVE_PAIRS`, on the noun classes each applies to or on people; predicate
frames "The X is …", relative clauses "The X that the tourist saw was …" and, for people, a place):

* ``c_antonym`` (contradiction): an adjective, or one of its satellites, against its antonym for the same
  thing, "The oatmeal is warm." → "The oatmeal is cool.", "A pedestrian spotted a narrow barricade." →
  "The barricade that the pedestrian spotted was wide."
* ``e_antonym_negation`` (entailment): an adjective (or a satellite) → "not" its antonym, "The sundial is
  safe." → "The sundial is not dangerous."; for complementary pairs also "not" one → the other, "The
  freetail is not asleep." → "The freetail is awake."
* ``n_negated_contrary`` (neutral): "not" one of a contrary (gradable) pair → the other, "The cellar is not
  narrow." → "The cellar is wide.": it may be in between. Pairs whose middle is unclear never have a
  negated premise.
* ``e_satellite`` (entailment): satellite → its head (WordNet's similarity ``&``; the satellite is the
  narrower word), "The knife is keen." → "The knife is sharp."
* ``n_head_to_satellite`` (neutral): head → satellite, "The hiker is tired." → "The hiker is exhausted."
* ``n_other_attribute`` (neutral): adjectives of two unrelated dimensions, "The bedpost is cheap." → "The
  bedpost is safe."; dimensions that constrain each other (:data:`_DIM_CONFLICTS`) and life or presence
  (:data:`_NO_OTHER_ATTRIBUTE`) are never paired.

*Activities* (the :data:`ACTIVITIES`: WordNet troponyms of everyday root verbs):

* ``e_verb_hypernym`` (entailment): troponym → root, "A spectator is scribbling a postcard." → "The
  spectator is writing a postcard.": scribbling is a way of writing.
* ``n_verb_hyponym`` (neutral): root → troponym, "Someone is running in the snow." → "Someone is jogging."
* ``c_incompatible_action`` (contradiction): the same person in two activities of groups nobody can do at
  once (:data:`_INCOMPATIBLE`), "A passenger is climbing in the square." → "The passenger is snoozing in
  the square."
* ``n_compatible_action`` (neutral): two activities one can do at once (:data:`_COMPATIBLE`), "The child
  is reading a newspaper in the park." → "The child is grinning in the park."

Every label uses the same frames (negation, "the only", adjective predicates, relative clauses,
activities and locations occur in all three labels, weighted by :data:`KINDS` so that each frame family
has about the same share of every label), and the corpus is a pure function of ``seed``. Measured on
``generate(60000, seed=0)`` (first 30,000 pairs; chance 0.33): a logistic regression on premise/hypothesis
length and word-overlap features alone (:func:`surface_baseline`, 5-fold CV) reaches 0.42; a
hypothesis-only bag of words and bigrams reaches 0.67 (3-fold CV; the hypernym words themselves carry
part of it — SNLI's hypothesis-only baseline is about the same). Generating 60,000 pairs takes about 3 s
on one CPU core, reading WordNet included.

**No probe word anywhere.** No premise or hypothesis contains, as a whole word (case-insensitive,
hyphens split), any entry of the project's probe lists: ``data/nli/word_lists/**`` and
``data/nli/paper_supplement/*`` (Dev et al. 2020: occupations, gendered words, demonyms, religions,
polarity words, objects, verbs, adjectives), ``data/unqover/word_lists/nouns/**`` (UnQover subjects:
names, countries, demonyms, ethnicities, religions) and the occupation nouns of the UnQover attribute
lists (``activities/occupation_*``). :func:`probe_words` returns that set. Subjects are generic
("someone", "a tourist", "two children"). As a consequence common nouns such as *dog*, *cat*, *car*,
*apple* (they are Bias-NLI object words) and adjectives such as *old*, *clean*, *dark* never appear.

:func:`generate_splits` partitions the *specific* lexical items (the hyponym nouns, the hyponym
activity verbs, the adjective pairs) between train and held-out, so held-out accuracy measures
generalisation over WordNet, not memorisation; category words (hypernyms such as "bird"), root
activities ("running"), subjects and frames are shared.

Limits: the frames are short and templated; WordNet's taxonomy includes technical category words
("placental", "passerine") and some of its co-hyponyms may overlap in the real world; mass/count
use is approximated by class (food takes "some"); the antonym/noun-class compatibility table and the
activity (in)compatibility table are hand-written (every WordNet fact they rely on is verified at
load time and dropped if absent).

>>> ex = generate(6, seed=0)
>>> sorted(e.label for e in ex)
['contradiction', 'contradiction', 'entailment', 'entailment', 'neutral', 'neutral']
>>> generate(6, seed=0) == ex
True
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..errors import CorpusError
from .examples import NLIExample, tokens  # the pair type and word tokens the probe shares (re-exported here)
from ..paths import data_dir, missing_data_fix
from . import wordnet as wn

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
#: Share of the specific lexical items held out by :func:`generate_splits`.
HELDOUT_FRACTION = 0.2


# ---------------------------------------------------------------------------------------- probe words


def _read_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]


def _unqover_term(line: str) -> str | None:
    if not line or line.startswith("#"):
        return None
    if line.startswith("["):
        parts = line.split(None, 1)
        if len(parts) < 2:
            return None
        line = parts[1]
    if "|" in line:
        line = line.split("|", 1)[1]
    return line.strip() or None


@lru_cache(maxsize=4)
def _probe_words(root: str) -> frozenset[str]:
    base = Path(root)
    folders = [base / "nli" / "word_lists", base / "nli" / "paper_supplement",
               base / "unqover" / "word_lists" / "nouns"]
    for folder in folders:
        if not folder.is_dir():
            raise CorpusError(
                f"The probe word lists folder {folder} is missing; {missing_data_fix()}."
            )
    words: set[str] = set()
    for folder in folders[:2]:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            words.update(line.lower() for line in _read_lines(path) if line and not line.startswith("#"))
    for path in sorted(p for p in folders[2].rglob("*") if p.is_file()):
        for line in _read_lines(path):
            term = _unqover_term(line)
            if term:
                words.add(term.lower())
    activities = base / "unqover" / "word_lists" / "activities"
    for path in sorted(activities.glob("occupation*")) if activities.is_dir() else []:
        for line in _read_lines(path):
            term = _unqover_term(line)
            if term and tokens(term):
                words.add(tokens(term)[-1])
    return frozenset(w for w in words if tokens(w))


def probe_words() -> frozenset[str]:
    """Every probe entry (lower case; multi-word entries kept as phrases) the corpus must never contain.

    >>> {"accountant", "woman", "muslim", "mary", "dog", "spoke to"} <= probe_words()
    True
    """
    return _probe_words(str(data_dir()))


class _Banned:
    """Whole-word matcher for single words and multi-word phrases (on :func:`tokens`)."""

    def __init__(self, entries: Iterable[str]):
        singles: set[str] = set()
        phrases: set[tuple[str, ...]] = set()
        for entry in entries:
            toks = tuple(tokens(entry))
            if len(toks) == 1:
                singles.add(toks[0])
            elif toks:
                phrases.add(toks)
        self.singles = frozenset(singles)
        self.phrases = tuple(sorted(phrases))

    def hits(self, text: str) -> list[str]:
        toks = tokens(text)
        found = [t for t in toks if t in self.singles]
        if self.phrases:
            joined = " " + " ".join(toks) + " "
            found += [" ".join(p) for p in self.phrases if " " + " ".join(p) + " " in joined]
        return found

    def ok(self, text: str) -> bool:
        return not self.hits(text)


def probe_hits(text: str, extra: Iterable[str] = ()) -> list[str]:
    """Probe entries (and ``extra`` words) that occur in ``text`` as whole words.

    >>> probe_hits("The accountant spoke to a woman."), probe_hits("A tourist saw a spaniel.")
    (['accountant', 'woman', 'spoke to'], [])
    """
    return _Banned(set(probe_words()) | {w.lower() for w in extra}).hits(text)


# ------------------------------------------------------------------------------------------- lexicon

#: Noun classes = WordNet subtrees, by (lemma, lexicographer file) of their root synset.
NOUN_CLASSES: dict[str, tuple[str, str]] = {
    "animal": ("animal", "noun.Tops"),
    "plant": ("plant", "noun.Tops"),
    "food": ("food", "noun.Tops"),
    "beverage": ("beverage", "noun.food"),
    "edible fruit": ("edible fruit", "noun.food"),
    "baked goods": ("baked goods", "noun.food"),
    "container": ("container", "noun.artifact"),
    "clothing": ("clothing", "noun.artifact"),
    "furniture": ("furniture", "noun.artifact"),
    "device": ("device", "noun.artifact"),
    "implement": ("implement", "noun.artifact"),
    "edge tool": ("edge tool", "noun.artifact"),
    "sword": ("sword", "noun.artifact"),
    "vehicle": ("vehicle", "noun.artifact"),
    "structure": ("structure", "noun.artifact"),
    "toy": ("toy", "noun.artifact"),
    "musical instrument": ("musical instrument", "noun.artifact"),
    "weapon": ("weapon", "noun.artifact"),
    "machine": ("machine", "noun.artifact"),
    "hominid": ("hominid", "noun.animal"),
    "mammal": ("mammal", "noun.animal"),
    "bird": ("bird", "noun.animal"),
}
#: A noun must fall under one of these classes to be used at all.
_MAIN_CLASSES = ("animal", "plant", "food", "container", "clothing", "furniture", "device", "implement",
                 "vehicle", "structure", "toy", "musical instrument", "weapon")
_CONCRETE_LEXNAMES = frozenset({"noun.animal", "noun.artifact", "noun.food", "noun.plant"})
#: Category words too abstract, technical-looking or mass-only to read naturally after "a".
_BAD_HYPERNYMS = frozenset("""
instrumentation instrumentality artifact artefact object whole entity thing matter unit part organism being
commodity setup outlet covering creation product article ware young queen dainty nourishment sustenance
nutriment foodstuff solid fluid liquid placental mammalian craniate chordate eutherian clothing equipment
furniture weaponry footwear hardware armor armour housing lodging transport produce alcohol machinery apparel
attire wear gear luggage baggage jewelry jewellery merchandise ammunition cutlery crockery glassware tableware
dishware pottery livestock cattle poultry fauna flora vegetation foliage timber lumber obstruction barrier
system accessory way means facility medium beef veal mutton pork structure construction human humankind
hominid homo mankind
""".split())
_MASS_NOUNS = frozenset("""
grass moss seaweed clover wheat corn rice barley hay algae lichen kelp bamboo heather mistletoe cattle poultry
livestock vermin clothing equipment furniture weaponry footwear hardware armor armour jewelry merchandise
ammunition cutlery crockery glassware tableware pottery luggage baggage gear apparel attire machinery
hosiery nightclothes garb laundry underwear lingerie feed slop cud
""".split())

#: Usage categories that cut across WordNet's taxonomy (a begonia can be a houseplant): never used as
#: the members of a "the only animal/plant … is" contradiction.
_CROSS_CUTTING = frozenset("""
houseplant wildflower weed pest pet ornamental evergreen perennial annual biennial succulent aquatic
predator prey larva young hybrid crossbreed mongrel purebred stray game herbivore carnivore omnivore
insectivore scavenger vermin parasite migrant mutant specimen creature beast mount stock flower shrub
herb vine tree bush grass climber creeper seedling sapling houseplant bloom flora fauna
""".split())

#: Curated antonym pairs: (a, b, noun classes ("people" = person subjects), negation, dimension,
#: satellites of a, satellites of b). ``negation`` says what "not a" gives: "contrary" (gradable, "not hot"
#: leaves "cold" open: neutral), "complementary" ("not asleep" = "awake": entailment) or "unclear" (pairs
#: with a fuzzy middle, never used with a negated premise). Antonymy and satellites are verified in WordNet.
ADJECTIVE_PAIRS: tuple[tuple[str, str, tuple[str, ...], str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("hot", "cold", ("food", "beverage"), "contrary", "temperature",
     ("sizzling", "red-hot", "scorching", "blistering"), ("icy", "ice-cold", "frozen", "chilly", "frosty")),
    ("warm", "cool", ("food", "beverage"), "contrary", "temperature", (), ()),
    ("wet", "dry", ("animal", "clothing", "furniture", "toy", "plant", "vehicle"), "unclear", "moisture",
     ("damp", "moist", "soggy", "waterlogged"), ("parched", "bone-dry")),
    ("full", "empty", ("container", "vehicle"), "contrary", "fill", ("brimming", "overflowing", "stuffed"), ()),
    ("open", "closed", ("container",), "complementary", "aperture", ("ajar", "wide-open"), ()),
    ("large", "small", ("animal", "plant", "container", "furniture", "device", "vehicle", "structure", "toy",
                        "musical instrument", "weapon", "implement", "clothing"), "contrary", "size",
     ("enormous", "gigantic", "massive", "immense", "giant", "colossal"),
     ("miniature", "minute", "pocket-size", "diminutive")),
    ("expensive", "cheap", ("clothing", "furniture", "device", "vehicle", "toy", "musical instrument",
                            "weapon", "implement", "container", "beverage"), "contrary", "price",
     ("costly", "overpriced", "pricey"), ("low-cost", "bargain-priced")),
    ("sweet", "sour", ("beverage", "edible fruit"), "contrary", "taste", (), ("acidic",)),
    ("soft", "hard", ("furniture", "toy", "baked goods"), "contrary", "hardness", ("squashy", "mushy"), ()),
    ("alive", "dead", ("animal", "plant"), "complementary", "life", (), ("lifeless",)),
    ("asleep", "awake", ("mammal", "bird", "people"), "complementary", "sleep", (), ("wide-awake",)),
    ("wild", "tame", ("mammal", "bird"), "unclear", "domestication", ("feral", "undomesticated"),
     ("domesticated", "tamed")),
    ("safe", "dangerous", ("animal", "weapon", "device", "vehicle", "structure"), "unclear", "danger",
     (), ("hazardous", "treacherous")),
    ("sharp", "dull", ("edge tool", "sword"), "unclear", "edge", ("keen",), ("blunt",)),
    ("quiet", "noisy", ("machine", "vehicle", "musical instrument", "people"), "contrary", "noise",
     ("silent", "noiseless"), ("clattery", "rackety")),
    ("smooth", "rough", ("furniture", "implement", "toy"), "unclear", "texture", ("glassy",), ("bumpy",)),
    ("wide", "narrow", ("structure", "furniture"), "contrary", "width", (), ()),
    ("deep", "shallow", ("container",), "contrary", "depth", (), ()),
    ("loose", "tight", ("clothing",), "contrary", "fit", ("baggy",), ("skintight", "tight-fitting")),
    ("comfortable", "uncomfortable", ("furniture", "clothing", "people"), "unclear", "comfort", ("cozy",), ()),
    ("fast", "slow", ("animal", "vehicle"), "contrary", "speed", ("speedy", "swift", "quick"),
     ("sluggish", "slow-moving")),
    ("happy", "unhappy", ("people",), "contrary", "mood", ("blissful",), ("miserable",)),
    ("tired", "rested", ("people",), "unclear", "fatigue", ("exhausted", "weary"), ("untired",)),
    ("present", "absent", ("people",), "complementary", "presence", (), ()),
    ("fresh", "stale", ("baked goods",), "unclear", "freshness", (), ()),
)
#: Dimensions never combined in "other attribute" (neutral) pairs: they constrain each other.
_DIM_CONFLICTS = frozenset({("temperature", "temperature")})
_NO_OTHER_ATTRIBUTE = frozenset({"life", "presence"})

#: Everyday activities: root verb -> its WordNet troponyms used here (each verified as a hyponym).
ACTIVITIES: dict[str, tuple[str, ...]] = {
    "run": ("jog", "sprint", "trot", "scamper", "scurry", "lope"),
    "walk": ("stroll", "amble", "saunter", "stride", "march", "hike", "tiptoe", "limp", "hobble", "shuffle",
             "stagger", "trudge", "plod", "strut", "swagger", "waddle", "wade", "toddle", "prowl", "stomp",
             "pace"),
    "sleep": ("nap", "doze", "snooze", "catnap"),
    "swim": ("breaststroke", "backstroke", "snorkel"),
    "sit": ("perch", "squat"),
    "stand": (),
    "climb": (),
    "read": (),
    "dance": ("waltz", "tango", "foxtrot", "jive", "jig", "boogie", "quickstep"),
    "sing": ("hum", "croon", "chant", "yodel", "warble", "carol"),
    "laugh": ("giggle", "chuckle", "chortle", "snicker", "snigger", "titter", "guffaw", "cackle"),
    "cry": ("sob", "whimper", "wail", "bawl", "blubber", "snivel"),
    "speak": ("whisper", "shout", "mumble", "mutter", "murmur", "stammer", "stutter", "yell", "scream",
              "holler", "bellow"),
    "smile": ("grin", "beam", "smirk"),
    "jump": ("hop", "vault", "hurdle"),
    "write": ("scribble", "type"),
    "drink": ("sip", "gulp", "guzzle", "quaff"),
}
#: Complements kept identical in premise and hypothesis (transitive activities).
_COMPLEMENTS: dict[str, tuple[str, ...]] = {
    "drink": ("some water", "some tea", "some juice", "a glass of water"),
    "write": ("a note", "a message", "a postcard"),
    "read": ("a book", "a newspaper", "a map", "a letter"),
}
#: Groups that one person cannot do at the same time (contradiction).
_INCOMPATIBLE: frozenset[frozenset[str]] = frozenset(frozenset(p) for p in (
    ("sleep", "run"), ("sleep", "walk"), ("sleep", "swim"), ("sleep", "dance"), ("sleep", "climb"),
    ("sleep", "jump"), ("sleep", "write"), ("sleep", "read"), ("sleep", "drink"),
    ("sit", "run"), ("sit", "walk"), ("sit", "stand"), ("sit", "jump"), ("sit", "swim"),
    ("stand", "run"), ("stand", "walk"), ("stand", "swim"),
    ("run", "walk"), ("run", "swim"), ("walk", "swim"), ("swim", "climb"),
))
#: Groups one person can do at the same time (neutral).
_COMPATIBLE: frozenset[frozenset[str]] = frozenset(frozenset(p) for p in [
    (a, b) for a in ("run", "walk", "sit", "stand", "dance", "climb")
    for b in ("sing", "laugh", "cry", "speak", "smile")
] + [("sit", "read"), ("sit", "write"), ("sit", "drink"), ("stand", "read"), ("stand", "drink"),
     ("walk", "drink"), ("swim", "smile"), ("swim", "laugh"), ("read", "smile"), ("read", "laugh"),
     ("write", "smile"), ("drink", "smile"), ("drink", "laugh")])

_GERUND_EXCEPTIONS = {"foxtrot": "foxtrotting", "catnap": "catnapping", "quickstep": "quickstepping",
                      "boogie": "boogieing",
                      "tiptoe": "tiptoeing", "squat": "squatting", "carol": "caroling", "yodel": "yodeling",
                      "snivel": "sniveling", "lie": "lying", "die": "dying", "be": "being", "see": "seeing"}


def gerund(verb: str) -> str:
    """The -ing form by the usual spelling rules (final-e drop, CVC doubling for one syllable).

    >>> [gerund(v) for v in ("run", "hike", "sprint", "foxtrot", "whisper", "tiptoe", "sob", "squat")]
    ['running', 'hiking', 'sprinting', 'foxtrotting', 'whispering', 'tiptoeing', 'sobbing', 'squatting']
    """
    if verb in _GERUND_EXCEPTIONS:
        return _GERUND_EXCEPTIONS[verb]
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "oe", "ye")):
        return verb[:-1] + "ing"
    vowel_groups = re.findall(r"[aeiou]+", verb)
    if len(vowel_groups) == 1 and re.search(r"[^aeiou][aeiou][^aeiouwxy]$", verb):
        return verb + verb[-1] + "ing"
    return verb + "ing"


@dataclass(frozen=True)
class _Subject:
    indef: str
    definite: str | None
    plural: bool  # verb agreement
    general: bool = False
    collective: bool = False  # "a family": grammatically singular, generalises to "some people"

    @property
    def many(self) -> bool:
        return self.plural or self.collective


SUBJECTS: tuple[_Subject, ...] = (
    _Subject("someone", None, False, True), _Subject("somebody", None, False, True),
    _Subject("a person", "the person", False, True), _Subject("some people", "the people", True, True),
    _Subject("a child", "the child", False), _Subject("a student", "the student", False),
    _Subject("a tourist", "the tourist", False), _Subject("a visitor", "the visitor", False),
    _Subject("a hiker", "the hiker", False), _Subject("a traveler", "the traveler", False),
    _Subject("a passenger", "the passenger", False), _Subject("a cyclist", "the cyclist", False),
    _Subject("a pedestrian", "the pedestrian", False), _Subject("a spectator", "the spectator", False),
    _Subject("a volunteer", "the volunteer", False), _Subject("a kid", "the kid", False),
    _Subject("two children", "the two children", True), _Subject("three tourists", "the three tourists", True),
    _Subject("a group of students", "the group of students", False, collective=True),
    _Subject("two hikers", "the two hikers", True), _Subject("a family", "the family", False, collective=True),
)

#: Object verbs: (progressive participle, past, base) — extensional perception verbs valid for any
#: concrete noun; ``None`` where the progressive reads badly.
OBJECT_VERBS: tuple[tuple[str | None, str, str], ...] = (
    ("looking at", "looked at", "look at"), ("pointing at", "pointed at", "point at"),
    ("staring at", "stared at", "stare at"), ("taking a picture of", "took a picture of", "take a picture of"),
    ("drawing", "drew", "draw"), ("photographing", "photographed", "photograph"), ("filming", "filmed", "film"),
    ("watching", "watched", "watch"), ("describing", "described", "describe"), ("sketching", "sketched", "sketch"),
    ("painting a picture of", "painted a picture of", "paint a picture of"), (None, "noticed", "notice"),
    (None, "spotted", "spot"), (None, "saw", "see"), ("examining", "examined", "examine"),
)
LOCATIONS: tuple[str, ...] = (
    "in the park", "near the river", "in the garden", "on the beach", "by the lake", "in the street",
    "on a hill", "in a field", "near the station", "behind the museum", "in the yard", "at the zoo",
    "in the forest", "on the bridge", "in the square", "near the fountain",
)
WATER_LOCATIONS: tuple[str, ...] = ("in the lake", "in the pool", "in the sea", "in the river")
ADVERBIALS: tuple[str, ...] = (
    "in the rain", "in the morning", "at night", "after school", "for the first time", "in the afternoon",
    "before noon", "in the snow", "at sunset", "on a sunny day", "during the holidays", "with great care",
)
PICTURES = frozenset({"picture", "photo", "drawing", "painting", "video", "poster", "sketch", "cartoon"})
ONLY_PLACES: tuple[str, ...] = (
    "picture", "photo", "garden", "yard", "room", "field", "drawing", "painting", "video", "courtyard",
    "clearing", "greenhouse", "poster", "sketch", "cartoon",
)
_NOBODY = ("Nobody", "No one")


@dataclass(frozen=True)
class _Noun:
    lemma: str
    offset: int
    classes: frozenset[str]
    mass: bool
    hypernyms: tuple[str, ...]
    single_chain: bool
    ancestors: frozenset[int]


@dataclass(frozen=True)
class _AdjPair:
    key: int
    a: str
    b: str
    classes: frozenset[str]
    negation: str
    dim: str
    sats_a: tuple[str, ...]
    sats_b: tuple[str, ...]


@dataclass(frozen=True)
class _Activity:
    verb: str
    root: str
    ing: str

    @property
    def is_root(self) -> bool:
        return self.verb == self.root


@dataclass(frozen=True)
class _Lexicon:
    nouns: tuple[_Noun, ...]
    pairs: tuple[_AdjPair, ...]
    activities: tuple[_Activity, ...]
    subjects: tuple[_Subject, ...]
    verbs: tuple[tuple[str | None, str, str], ...]
    locations: tuple[str, ...]
    water_locations: tuple[str, ...]
    adverbials: tuple[str, ...]
    only_places: tuple[str, ...]
    banned: _Banned


def _gloss_frequencies() -> Counter[str]:
    text = []
    for pos in ("noun", "verb", "adj", "adv"):
        for syn in wn.read_synsets(pos).values():
            text.extend(syn.definitions)
            text.extend(syn.examples)
    return Counter(tokens("\n".join(text)))


def _best_sense(lemma: str, synsets: dict[int, wn.Synset], index: dict[str, tuple[int, ...]],
                counts: dict[tuple[str, int], int], lexname: str | None = None) -> int | None:
    """The lemma's synset with the highest SemCor count (unique), or its only synset if untagged.

    With ``lexname`` the choice is restricted to that lexicographer file and ties go to the first synset.
    """
    offsets = [o for o in index.get(lemma, ()) if lexname is None or synsets[o].lexname == lexname]
    if not offsets:
        return None
    tagged = [(counts.get((lemma, o), 0), o) for o in offsets]
    top = max(c for c, _ in tagged)
    if top == 0:
        return offsets[0] if len(offsets) == 1 or lexname is not None else None
    best = [o for c, o in tagged if c == top]
    return best[0] if len(best) == 1 or lexname is not None else None


def _adj_is_antonym(a: str, b: str) -> bool:
    synsets = wn.read_synsets("adj")
    for off in wn.lookup(a, "adj"):
        syn = synsets[off]
        for src, target, tgt in syn.antonyms():
            if src and syn.lemmas[src - 1].lower() != a:
                continue
            lemmas = synsets[target].lemmas
            if (tgt and lemmas[tgt - 1].lower() == b) or (not tgt and b in lemmas):
                return True
    return False


def _adj_is_satellite(sat: str, head: str) -> bool:
    synsets = wn.read_synsets("adj")
    return any(synsets[o].pos == "s" and any(head in synsets[t].lemmas for t in synsets[o].targets("&"))
               for o in wn.lookup(sat, "adj"))


def _verb_isa(verb: str, root: str, depth: int = 3) -> bool:
    synsets = wn.read_synsets("verb")
    for off in wn.lookup(verb, "verb"):
        frontier = {off}
        for _ in range(depth):
            frontier = {t for f in frontier for t in synsets[f].targets("@")}
            if any(root in synsets[f].lemmas for f in frontier):
                return True
    return False


def _inflected_forms() -> set[str]:
    """Every inflected form WordNet lists in its exception files ("geese", "ran", "better")."""
    inflected = set()
    for name in ("noun.exc", "verb.exc", "adj.exc"):
        with open(wn.wordnet_file(name), encoding="utf-8", errors="replace") as f:
            inflected.update(line.split()[0].replace("_", " ") for line in f if line.strip())
    return inflected


def _frame_words() -> set[str]:
    """The words of the frames' locations, adverbials, places, complements, subjects and object verbs."""
    frame_words = set(tokens(" ".join(LOCATIONS + WATER_LOCATIONS + ADVERBIALS + ONLY_PLACES)))
    frame_words |= set(tokens(" ".join(c for cs in _COMPLEMENTS.values() for c in cs)))
    frame_words |= set(tokens(" ".join(f"{s.indef} {s.definite or ''}" for s in SUBJECTS)))
    frame_words |= set(tokens(" ".join(" ".join(x or "" for x in v) for v in OBJECT_VERBS)))
    return frame_words


class _NounSelector:
    """Chooses the corpus's nouns and their category words from WordNet's nouns and SemCor's sense counts.

    A noun is a single concrete word (animal, artifact, food or plant synset) under one of the
    :data:`_MAIN_CLASSES`, in its most frequent sense, attested in SemCor or in WordNet's glosses, mostly
    used as a noun, never a probe word, a frame word, a person, a plural or an inflected form. Its category
    words are the good lemmas of its hypernyms up to three levels up (:meth:`hypernyms`).
    """

    def __init__(self, banned: _Banned):
        self.banned = banned
        self.synsets = wn.read_synsets("noun")
        self.counts = wn.tag_counts("noun")
        self.freq = _gloss_frequencies()
        self.index = wn.read_index("noun")
        self.roots = self._class_roots()
        self.adj_counts, self.verb_counts = wn.tag_counts("adj"), wn.tag_counts("verb")
        self.adj_index, self.verb_index = wn.read_index("adj"), wn.read_index("verb")
        self.inflected = _inflected_forms()
        # lemmas that also name people in SemCor-attested use ("queen", "cardinal") are not used as objects
        self.person_lemmas = {name.lower() for s in self.synsets.values() if s.lexname == "noun.person"
                              for name in s.lemmas if self.counts.get((name.lower(), s.offset), 0) > 0}
        self.frame_words = _frame_words()
        self._senses: dict[str, int | None] = {}
        self._ancestors: dict[int, dict[int, int]] = {}
        self._chains: dict[int, bool] = {}
        self._hypernym_lemmas: dict[int, str | None] = {}

    def _class_roots(self) -> dict[int, str]:
        """The root synset of every :data:`NOUN_CLASSES` entry -> the class name."""
        roots = {}
        for key, (lemma, lexname) in NOUN_CLASSES.items():
            off = _best_sense(lemma, self.synsets, self.index, self.counts, lexname)
            if off is None:
                raise CorpusError(f"WordNet has no {lexname} synset for {lemma!r}; the WordNet files look incomplete.")
            roots[off] = key
        return roots

    def nouns(self) -> list[_Noun]:
        """Every usable noun, in alphabetical order of lemma."""
        nouns = []
        for lemma in sorted(self.index):
            noun = self.noun(lemma)
            if noun is not None:
                nouns.append(noun)
        return nouns

    def noun(self, lemma: str) -> _Noun | None:
        """The lemma as a corpus noun (classes, category words, ancestry), or None if it does not qualify."""
        off = self.object_sense(lemma)
        if off is None:
            return None
        anc = self.ancestors(off)
        classes = frozenset(self.roots[a] for a in set(anc) | {off} if a in self.roots)
        if not classes & set(_MAIN_CLASSES) or "hominid" in classes:
            return None
        if "vehicle" in classes:  # WordNet files wheeled vehicles under "container"; nobody fills a bicycle
            classes -= {"container"}
        return _Noun(lemma, off, classes, "food" in classes, self.hypernyms(lemma, off, classes),
                     self.single_chain(off), frozenset(anc))

    def object_sense(self, lemma: str) -> int | None:
        """The synset of a single-word lemma that can name a concrete object in the corpus, else None."""
        if " " in lemma or not lemma.isalpha():
            return None
        off = self.best_sense(lemma)
        if off is None or self.synsets[off].lexname not in _CONCRETE_LEXNAMES or lemma not in self.synsets[off].lemmas:
            return None
        if lemma in self.frame_words or lemma in self.person_lemmas:  # frame words ("garden") are shared by design
            return None
        if not self.good_lemma(lemma, off, 1) or lemma in _MASS_NOUNS or lemma in _BAD_HYPERNYMS:
            return None
        if self.counts.get((lemma, off), 0) == 0 and self.freq[lemma] < 3:
            return None
        if self.other_pos_dominates(lemma, self.counts.get((lemma, off), 0)):
            return None
        return off

    def hypernyms(self, lemma: str, off: int, classes: frozenset[str]) -> tuple[str, ...]:
        """Category words of a noun: a lemma of each ancestor up to three levels up, nearest first."""
        hypers: list[str] = []
        for a, depth in sorted(self.ancestors(off).items(), key=lambda x: (x[1], x[0])):
            if depth > 3:
                continue
            h = self.hypernym_lemma(a)
            if h == "container" and "vehicle" in classes:
                continue
            if h and h != lemma and h not in hypers and not set(h.split()) & {lemma}:
                hypers.append(h)
        return tuple(hypers)

    def best_sense(self, lemma: str) -> int | None:
        """The noun synset of ``lemma`` with the (unique) highest SemCor count (:func:`_best_sense`)."""
        if lemma not in self._senses:
            self._senses[lemma] = _best_sense(lemma, self.synsets, self.index, self.counts)
        return self._senses[lemma]

    def other_pos_dominates(self, lemma: str, noun_count: int) -> bool:
        """Adjectives or verbs used as nouns ("dietary", "thwart"): the other part of speech is as frequent."""
        for pos_index, pos_counts in ((self.adj_index, self.adj_counts), (self.verb_index, self.verb_counts)):
            if lemma in pos_index:
                other = max((pos_counts.get((lemma, o), 0) for o in pos_index[lemma]), default=0)
                if noun_count == 0 or other >= noun_count:
                    return True
        return False

    def ancestors(self, off: int) -> dict[int, int]:
        """Every hypernym ancestor of a synset -> its shortest distance (1 = direct hypernym)."""
        if off not in self._ancestors:
            out: dict[int, int] = {}
            for h in self.synsets[off].targets("@"):
                out[h] = 1
                for a, d in self.ancestors(h).items():
                    if d + 1 < out.get(a, 99):
                        out[a] = d + 1
            self._ancestors[off] = out
        return self._ancestors[off]

    def single_chain(self, off: int) -> bool:
        """Does the synset have at most one hypernym (class or instance) at every level up to the top?"""
        if off not in self._chains:
            hs = self.synsets[off].targets("@", "@i")
            self._chains[off] = len(hs) <= 1 and all(self.single_chain(h) for h in hs)
        return self._chains[off]

    def good_lemma(self, lemma: str, off: int, max_words: int) -> bool:
        """A plain lower-case lemma of at most ``max_words`` words, not plural, inflected or a probe word,
        whose most frequent sense is ``off``."""
        if not re.fullmatch(r"[a-z]+(?: [a-z]+)*", lemma) or len(lemma.split()) > max_words or len(lemma) < 3:
            return False
        index = self.index
        if lemma.endswith("s") and (lemma[:-1] in index or lemma[:-2] in index or lemma[:-3] + "y" in index):
            return False
        if lemma.endswith(("ware", "wear", "ing", "ism")) or lemma in self.inflected:
            return False
        if lemma.endswith("s") and not lemma.endswith(("ss", "us", "is", "os")):  # plural-only: "binoculars"
            return False
        if not self.banned.ok(lemma):
            return False
        return self.best_sense(lemma) == off

    def hypernym_lemma(self, off: int) -> str | None:
        """The synset's category word: its most SemCor-frequent good lemma of at most two words that is
        neither too abstract (:data:`_BAD_HYPERNYMS`) nor a mass noun; None if it has none."""
        if off not in self._hypernym_lemmas:
            counts = self.counts
            options = [(counts.get((name.lower(), off), 0), -i, name) for i, name in enumerate(self.synsets[off].lemmas)
                       if counts.get((name.lower(), off), 0) >= 1 and self.good_lemma(name, off, 2)
                       and name not in _BAD_HYPERNYMS and name not in _MASS_NOUNS]
            self._hypernym_lemmas[off] = max(options)[2] if options else None
        return self._hypernym_lemmas[off]


def _adjective_pairs(banned: _Banned) -> list[_AdjPair]:
    """The :data:`ADJECTIVE_PAIRS` that WordNet confirms as antonyms, with their confirmed satellites."""
    pairs = []
    for key, (a, b, classes, negation, dim, sats_a, sats_b) in enumerate(ADJECTIVE_PAIRS):
        if not (_adj_is_antonym(a, b) or _adj_is_antonym(b, a)) or not banned.ok(f"{a} {b}"):
            continue
        pairs.append(_AdjPair(
            key, a, b, frozenset(classes), negation, dim,
            tuple(s for s in sats_a if _adj_is_satellite(s, a) and banned.ok(s)),
            tuple(s for s in sats_b if _adj_is_satellite(s, b) and banned.ok(s)),
        ))
    return pairs


def _activities(banned: _Banned) -> list[_Activity]:
    """The :data:`ACTIVITIES` roots WordNet knows, each followed by its troponyms that WordNet confirms."""
    activities = []
    for root, hyponyms in ACTIVITIES.items():
        if not wn.lookup(root, "verb") or not banned.ok(gerund(root)):
            continue
        activities.append(_Activity(root, root, gerund(root)))
        activities.extend(_Activity(h, root, gerund(h)) for h in hyponyms
                          if _verb_isa(h, root) and banned.ok(gerund(h)))
    return activities


@lru_cache(maxsize=8)
def _lexicon(wordnet_folder: str, data_folder: str, exclude: frozenset[str]) -> _Lexicon:
    """Every lexical item the corpus may use, all free of probe words and ``exclude``d words.

    ``wordnet_folder`` only keys the cache: the WordNet readers (:mod:`stereoprobe.corpora.wordnet`) find the folder
    themselves.
    """
    banned = _Banned(set(_probe_words(data_folder)) | set(exclude))
    nouns = _NounSelector(banned).nouns()

    def keep(items: Sequence[str]) -> tuple[str, ...]:
        return tuple(x for x in items if banned.ok(x))

    return _Lexicon(
        nouns=tuple(nouns), pairs=tuple(_adjective_pairs(banned)), activities=tuple(_activities(banned)),
        subjects=tuple(s for s in SUBJECTS if banned.ok(f"{s.indef} {s.definite or ''}")),
        verbs=tuple(v for v in OBJECT_VERBS if banned.ok(" ".join(x or "" for x in v))),
        locations=keep(LOCATIONS), water_locations=keep(WATER_LOCATIONS), adverbials=keep(ADVERBIALS),
        only_places=keep(ONLY_PLACES), banned=banned,
    )


def _get_lexicon(exclude: Iterable[str]) -> _Lexicon:
    return _lexicon(str(wn.wordnet_dir()), str(data_dir()), frozenset(w.lower() for w in exclude if w.strip()))


# -------------------------------------------------------------------------------------------- pools


class _Pool:
    """The lexical items one corpus (or one side of a split) may use."""

    def __init__(self, lex: _Lexicon, nouns: Sequence[_Noun], pairs: Sequence[_AdjPair],
                 activities: Sequence[_Activity]):
        self.lex = lex
        self.nouns = list(nouns)
        self.hyper_nouns = [n for n in self.nouns if n.hypernyms]
        self.only_nouns = {c: [n for n in self.nouns if c in n.classes and n.single_chain] for c in ("animal", "plant")}
        # entailment/neutral "only" pairs need hypernymy only, not disjointness: any member of the class
        self.only_hyper = {c: [n for n in self.nouns if c in n.classes and n.hypernyms] for c in ("animal", "plant")}
        categories = {h for n in lex.nouns for h in n.hypernyms} | _CROSS_CUTTING
        self.only_leaves = {c: [n for n in v if n.lemma not in categories] for c, v in self.only_nouns.items()}
        self.pairs = list(pairs)
        self.people_pairs = [p for p in self.pairs if "people" in p.classes]
        self.pair_nouns = {p.key: [n for n in self.nouns if n.classes & p.classes] for p in self.pairs}
        self.noun_pairs: dict[int, list[_AdjPair]] = {}
        for p in self.pairs:
            for n in self.pair_nouns[p.key]:
                self.noun_pairs.setdefault(n.offset, []).append(p)
        self.object_pairs = [p for p in self.pairs if self.pair_nouns[p.key]]
        self.sat_pairs = [p for p in self.object_pairs if p.sats_a or p.sats_b]
        self.people_sat_pairs = [p for p in self.people_pairs if p.sats_a or p.sats_b]
        self.activities = list(activities)
        roots = {a.root for a in self.activities}
        self.root_acts = {a.root: a for a in lex.activities if a.is_root and a.root in roots}
        self.hypo_acts = [a for a in self.activities if not a.is_root]
        self.by_root: dict[str, list[_Activity]] = {}
        for a in self.activities:
            self.by_root.setdefault(a.root, []).append(a)
        self.incompatible = [tuple(sorted(p)) for p in sorted(_INCOMPATIBLE, key=sorted) if p <= set(self.by_root)]
        self.compatible = [tuple(sorted(p)) for p in sorted(_COMPATIBLE, key=sorted) if p <= set(self.by_root)]
        self.def_subjects = [s for s in lex.subjects if s.definite]
        self.specific_subjects = [s for s in lex.subjects if not s.general]


def _full_pool(lex: _Lexicon) -> _Pool:
    return _Pool(lex, lex.nouns, lex.pairs, lex.activities)


def _split_pools(lex: _Lexicon, seed: int) -> tuple[_Pool, _Pool]:
    rng = random.Random(f"stereoprobe-nli-split-{seed}")

    def part(items: list, key: Callable) -> tuple[set, set]:
        keys = sorted({key(x) for x in items})
        rng.shuffle(keys)
        k = max(1, round(len(keys) * HELDOUT_FRACTION))
        return set(keys[k:]), set(keys[:k])

    n_train, n_held = part(list(lex.nouns), lambda n: n.offset)
    p_train, p_held = part(list(lex.pairs), lambda p: p.key)
    hypos = [a for a in lex.activities if not a.is_root]
    a_train, a_held = part(hypos, lambda a: a.verb)
    roots = [a for a in lex.activities if a.is_root]

    def pool(nk: set, pk: set, ak: set) -> _Pool:
        return _Pool(lex, [n for n in lex.nouns if n.offset in nk], [p for p in lex.pairs if p.key in pk],
                     roots + [a for a in hypos if a.verb in ak])

    return pool(n_train, p_train, a_train), pool(n_held, p_held, a_held)


# ------------------------------------------------------------------------------------ surface helpers


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _np(noun: str, det: str, mass: bool, adj: str | None = None) -> str:
    phrase = f"{adj} {noun}" if adj else noun
    if det == "the":
        return f"the {phrase}"
    if det == "any":
        return f"any {phrase}"
    if mass:
        return f"some {phrase}"
    return f"{wn.indefinite_article(phrase)} {phrase}"


class _Builder:
    """Sentence pieces drawn with one rng."""

    def __init__(self, rng: random.Random, pool: _Pool):
        self.rng = rng
        self.pool = pool

    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def subject(self, definite: bool = False, specific: bool = False) -> _Subject:
        if specific:
            pool = [s for s in self.pool.specific_subjects if s.definite or not definite]
        else:
            pool = self.pool.def_subjects if definite else self.pool.lex.subjects
        return self.choice(pool)

    def verb(self, tense: str | None = None) -> tuple[tuple[str | None, str, str], str]:
        verb = self.choice(self.pool.lex.verbs)
        if tense is None:
            tense = "past" if verb[0] is None or self.rng.random() < 0.4 else "prog"
        if tense == "prog" and verb[0] is None:
            verb = self.choice([v for v in self.pool.lex.verbs if v[0]])
        return verb, tense

    @staticmethod
    def vp(verb, tense: str, plural: bool, negated: bool = False) -> str:
        prog, past, base = verb
        if tense == "prog":
            aux = "are" if plural else "is"
            return f"{aux} not {prog}" if negated else f"{aux} {prog}"
        return f"did not {base}" if negated else past

    def clause(self, subj: str, verb, tense: str, plural: bool, obj: str, extra: str = "",
               negated: bool = False) -> str:
        tail = f" {extra}" if extra else ""
        return _cap(f"{subj} {self.vp(verb, tense, plural, negated)} {obj}{tail}")

    def premise_subject(self, subj: _Subject) -> str:
        return subj.definite if subj.definite and self.rng.random() < 0.3 else subj.indef

    def hyp_subject(self, subj: _Subject, premise_form: str) -> str:
        if subj.definite and self.rng.random() < 0.7:
            return subj.definite
        return premise_form

    def location(self, act: _Activity | None = None) -> str:
        if act is not None and act.root == "swim":
            return self.choice(self.pool.lex.water_locations)
        return self.choice(self.pool.lex.locations)

    def info(self, act: _Activity | None = None) -> str:
        return self.location(act) if self.rng.random() < 0.5 else self.choice(self.pool.lex.adverbials)

    def act_phrase(self, act: _Activity) -> str:
        comp = _COMPLEMENTS.get(act.root)
        return f"{act.ing} {self.choice(comp)}" if comp else act.ing

    def act_clause(self, subj: str, plural: bool, act_phrase: str, extra: str = "", negated: bool = False) -> str:
        aux = "are" if plural else "is"
        neg = " not" if negated else ""
        tail = f" {extra}" if extra else ""
        return _cap(f"{subj} {aux}{neg} {act_phrase}{tail}")


# --------------------------------------------------------------------------------------------- kinds
# The rules: e_* make entailments, n_* neutral pairs, c_* contradictions (the module docstring describes each).

Pair = tuple[str, str]


def _object_frame(b: _Builder, noun_p: str, noun_h: str, mass_p: bool, mass_h: bool,
                  adj_p: str | None = None, adj_h: str | None = None, extra_p: str = "", extra_h: str = "",
                  subj_general_h: bool = False, subj_specific_p: bool = False) -> Pair:
    subj = b.subject(specific=subj_specific_p)
    verb, tense = b.verb()
    sp = b.premise_subject(subj)
    if subj_general_h:
        sh = "some people" if subj.many else b.choice(("someone", "somebody", "a person"))
        plural_h = subj.many
    else:
        sh, plural_h = b.hyp_subject(subj, sp), subj.plural
    det = "a"
    p = b.clause(sp, verb, tense, subj.plural, _np(noun_p, det, mass_p, adj_p), extra_p)
    h = b.clause(sh, verb, tense, plural_h, _np(noun_h, det, mass_h, adj_h), extra_h)
    return p, h


def _hyper(b: _Builder, nouns: list[_Noun], avoid: str = "") -> tuple[_Noun, str] | None:
    n = b.choice(nouns)
    options = [h for h in n.hypernyms if h != avoid]
    return (n, b.choice(options)) if options else None


def e_hypernym(b: _Builder) -> Pair:
    n, h = _hyper(b, b.pool.hyper_nouns)
    extra = b.location() if b.rng.random() < 0.3 else ""
    return _object_frame(b, n.lemma, h, n.mass, n.mass, extra_p=extra, extra_h=extra)


def n_hyponym(b: _Builder) -> Pair:
    n, h = _hyper(b, b.pool.hyper_nouns)
    r = b.rng.random()
    extra = b.info() if r < 0.6 else ""
    # with r < 0.3 the premise's extra information is dropped: still neutral (the hyponym adds information)
    return _object_frame(b, h, n.lemma, n.mass, n.mass, extra_p=extra, extra_h=extra if r >= 0.3 else "")


def _adj_for(b: _Builder, n: _Noun) -> str | None:
    pairs = b.pool.noun_pairs.get(n.offset)
    if not pairs:
        return None
    p = b.choice(pairs)
    return b.choice((p.a, p.b) + p.sats_a + p.sats_b)


def _with_info(b: _Builder, in_premise: bool) -> Pair | None:
    """The same sentence with and without a modifier, an adverbial or a place: the side that has it says
    more (premise → entailment, hypothesis → neutral). The random draws are the same for both sides."""
    side = "p" if in_premise else "h"
    if b.rng.random() < 0.5:
        n = b.choice(b.pool.nouns)
        adj = _adj_for(b, n)
        if adj is None:
            return None
        return _object_frame(b, n.lemma, n.lemma, n.mass, n.mass, **{f"adj_{side}": adj})
    if b.rng.random() < 0.5:
        n = b.choice(b.pool.nouns)
        return _object_frame(b, n.lemma, n.lemma, n.mass, n.mass, **{f"extra_{side}": b.info()})
    act = b.choice(b.pool.activities)
    subj = b.subject()
    sp = b.premise_subject(subj)
    phrase = b.act_phrase(act)
    if in_premise:  # (the draws in the order the corpus has always made them)
        premise = b.act_clause(sp, subj.plural, phrase, b.info(act))
        return premise, b.act_clause(b.hyp_subject(subj, sp), subj.plural, phrase)
    hyp_subject = b.hyp_subject(subj, sp)
    return b.act_clause(sp, subj.plural, phrase), b.act_clause(hyp_subject, subj.plural, phrase, b.info(act))


def e_drop_info(b: _Builder) -> Pair | None:
    return _with_info(b, in_premise=True)


def n_add_info(b: _Builder) -> Pair | None:
    return _with_info(b, in_premise=False)


def e_subject_general(b: _Builder) -> Pair:
    if b.rng.random() < 0.6:
        n = b.choice(b.pool.nouns)
        return _object_frame(b, n.lemma, n.lemma, n.mass, n.mass, subj_general_h=True, subj_specific_p=True)
    act = b.choice(b.pool.activities)
    subj = b.subject(specific=True)
    phrase = b.act_phrase(act)
    general = "some people" if subj.many else b.choice(("someone", "somebody", "a person"))
    extra = b.location(act) if b.rng.random() < 0.4 else ""
    return (b.act_clause(b.premise_subject(subj), subj.plural, phrase, extra),
            b.act_clause(general, subj.many, phrase, extra))


def n_subject_specific(b: _Builder) -> Pair:
    p, h = e_subject_general(b)
    # reverse the direction: the generic subject in the premise, the specific one in the hypothesis
    return h, p


def _hypo_act(b: _Builder) -> tuple[_Activity, _Activity]:
    act = b.choice(b.pool.hypo_acts)
    return act, b.pool.root_acts[act.root]


def e_verb_hypernym(b: _Builder) -> Pair:
    act, root = _hypo_act(b)
    subj = b.subject()
    sp = b.premise_subject(subj)
    comp = _COMPLEMENTS.get(act.root)
    c = f" {b.choice(comp)}" if comp else ""
    extra = b.location(act) if b.rng.random() < 0.5 else ""
    return (b.act_clause(sp, subj.plural, act.ing + c, extra),
            b.act_clause(b.hyp_subject(subj, sp), subj.plural, root.ing + c, extra))


def n_verb_hyponym(b: _Builder) -> Pair:
    act, root = _hypo_act(b)
    subj = b.subject()
    sp = b.premise_subject(subj)
    comp = _COMPLEMENTS.get(act.root)
    c = f" {b.choice(comp)}" if comp else ""
    r = b.rng.random()
    extra = b.info(act) if r < 0.7 else ""
    return (b.act_clause(sp, subj.plural, root.ing + c, extra),
            b.act_clause(b.hyp_subject(subj, sp), subj.plural, act.ing + c, extra if r >= 0.35 else ""))


def _nobody_obj(b: _Builder, verb, tense: str, noun: str, mass: bool) -> str:
    return b.clause(b.choice(_NOBODY), verb, tense, False, _np(noun, "any", mass))


def _negated_obj(b: _Builder, subj: _Subject, verb, tense: str, noun: str, mass: bool) -> str:
    if subj.definite and b.rng.random() < 0.5:
        return b.clause(subj.definite, verb, tense, subj.plural, _np(noun, "any", mass), negated=True)
    return _nobody_obj(b, verb, tense, noun, mass)


def _negation_pair(b: _Builder, p_noun: str, h_noun: str, mass: bool, premise_negated: bool) -> Pair:
    """Premise affirmative (or negated), hypothesis negated, same verb."""
    subj = b.subject()
    verb, tense = b.verb()
    if premise_negated:
        p = _negated_obj(b, subj, verb, tense, p_noun, mass)
        if p.startswith(("Nobody", "No one")):
            h = _nobody_obj(b, verb, tense, h_noun, mass)
        else:
            h = b.clause(subj.definite, verb, tense, subj.plural, _np(h_noun, "any", mass), negated=True)
        return p, h
    sp = b.premise_subject(subj)
    p = b.clause(sp, verb, tense, subj.plural, _np(p_noun, "a", mass))
    return p, _negated_obj(b, subj, verb, tense, h_noun, mass)


def _act_negation_pair(b: _Builder, p_act: _Activity, h_act: _Activity, premise_negated: bool) -> Pair:
    subj = b.subject()
    comp = _COMPLEMENTS.get(p_act.root)
    c = f" {b.choice(comp)}" if comp else ""
    nobody = b.choice(_NOBODY)
    if premise_negated:
        return (b.act_clause(nobody, False, p_act.ing + c), b.act_clause(b.choice(_NOBODY), False, h_act.ing + c))
    sp = b.premise_subject(subj)
    p = b.act_clause(sp, subj.plural, p_act.ing + c)
    if subj.definite and b.rng.random() < 0.5:
        return p, b.act_clause(subj.definite, subj.plural, h_act.ing + c, negated=True)
    return p, b.act_clause(nobody, False, h_act.ing + c)


def e_negation_downward(b: _Builder) -> Pair:
    """Under negation a hypernym entails its hyponyms: "Nobody saw any bird." → "Nobody saw any pigeon."."""
    if b.rng.random() < 0.7:
        n, h = _hyper(b, b.pool.hyper_nouns)
        return _negation_pair(b, h, n.lemma, n.mass, premise_negated=True)
    act, root = _hypo_act(b)
    return _act_negation_pair(b, root, act, premise_negated=True)


def n_negation_upward(b: _Builder) -> Pair:
    """Negated hyponym vs negated hypernym, or affirmed hypernym vs negated hyponym: neither follows."""
    r = b.rng.random()
    if r < 0.35:
        n, h = _hyper(b, b.pool.hyper_nouns)
        return _negation_pair(b, n.lemma, h, n.mass, premise_negated=True)
    if r < 0.7:
        n, h = _hyper(b, b.pool.hyper_nouns)
        return _negation_pair(b, h, n.lemma, n.mass, premise_negated=False)
    act, root = _hypo_act(b)
    if b.rng.random() < 0.5:
        return _act_negation_pair(b, act, root, premise_negated=True)
    return _act_negation_pair(b, root, act, premise_negated=False)


def c_negation(b: _Builder) -> Pair:
    """Affirmed vs negated same (or hyponym vs hypernym) object/activity."""
    r = b.rng.random()
    if r < 0.3:
        n = b.choice(b.pool.nouns)
        return _negation_pair(b, n.lemma, n.lemma, n.mass, premise_negated=False)
    if r < 0.6:
        n, h = _hyper(b, b.pool.hyper_nouns)
        return _negation_pair(b, n.lemma, h, n.mass, premise_negated=False)
    if r < 0.8:
        act = b.choice(b.pool.activities)
        return _act_negation_pair(b, act, act, premise_negated=False)
    act, root = _hypo_act(b)
    return _act_negation_pair(b, act, root, premise_negated=False)


def _pred(b: _Builder, pair_pool: list[_AdjPair], people: bool) -> tuple[str, bool, _AdjPair, _Noun | None]:
    """A definite subject for a predicate: (phrase, plural, pair, noun)."""
    if people:
        p = b.choice(pair_pool)
        subj = b.subject(definite=True)
        return subj.definite, subj.plural, p, None
    p = b.choice(pair_pool)
    n = b.choice(b.pool.pair_nouns[p.key])
    return f"the {n.lemma}", False, p, n


def _pred_sentence(subject: str, plural: bool, adj: str, negated: bool = False) -> str:
    return _cap(f"{subject} {'are' if plural else 'is'}{' not' if negated else ''} {adj}")


def _attributive(b: _Builder, n: _Noun, adj_p: str, adj_h: str, negated_h: bool = False) -> Pair | None:
    """"A tourist is looking at a wet pelican." → "The pelican that the tourist is looking at is dry."."""
    subj = b.subject(definite=True)
    verb, tense = b.verb()
    sp = b.premise_subject(subj)
    p = b.clause(sp, verb, tense, subj.plural, _np(n.lemma, "a", n.mass, adj_p))
    rel = f"{subj.definite} {b.vp(verb, tense, subj.plural)}"
    h = _cap(f"the {n.lemma} that {rel} {'was' if tense == 'past' else 'is'}{' not' if negated_h else ''} {adj_h}")
    return p, h


def _adj_pair_example(b: _Builder, pick: Callable[[_AdjPair], tuple[str, str, bool] | None],
                      sats_only: bool = False) -> Pair | None:
    people = b.pool.people_pairs and b.rng.random() < 0.2
    if people:
        pool = b.pool.people_sat_pairs if sats_only else b.pool.people_pairs
    else:
        pool = b.pool.sat_pairs if sats_only else b.pool.object_pairs
    if not pool:
        return None
    subject, plural, p, n = _pred(b, pool, bool(people))
    picked = pick(p)
    if picked is None:
        return None
    adj_p, adj_h, negated_h = picked
    if n is not None and b.rng.random() < 0.5:
        return _attributive(b, n, adj_p, adj_h, negated_h)
    if n is None and b.rng.random() < 0.5:
        subj_indef = subject.replace("the ", "a ", 1) if subject.startswith("the ") else subject
        # "A tourist is asleep in the park." → "The tourist is awake."
        loc = b.location()
        premise = _cap(f"{subj_indef} {'are' if plural else 'is'} {adj_p} {loc}")
        return premise, _pred_sentence(subject, plural, adj_h, negated_h)
    return _pred_sentence(subject, plural, adj_p), _pred_sentence(subject, plural, adj_h, negated_h)


def _side(b: _Builder, p: _AdjPair) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """(adjective, its antonym, satellites of the adjective, satellites of the antonym), random side."""
    if b.rng.random() < 0.5:
        return p.a, p.b, p.sats_a, p.sats_b
    return p.b, p.a, p.sats_b, p.sats_a


def c_antonym(b: _Builder) -> Pair | None:
    def pick(p: _AdjPair):
        x, y, sx, sy = _side(b, p)
        if sx and b.rng.random() < 0.4:  # a satellite contradicts the other head: "scorching" vs "cold"
            return b.choice(sx), y, False
        return x, y, False
    return _adj_pair_example(b, pick)


def e_antonym_negation(b: _Builder) -> Pair | None:
    def pick(p: _AdjPair):
        x, y, sx, _ = _side(b, p)
        if sx and b.rng.random() < 0.3:
            x = b.choice(sx)
        return x, y, True
    if b.rng.random() < 0.3:  # complementary pairs: "not asleep" entails "awake"
        pool = [p for p in b.pool.pairs if p.negation == "complementary"]
        return _negated_premise(b, pool)
    return _adj_pair_example(b, pick)


def _negated_premise(b: _Builder, pool: list[_AdjPair]) -> Pair | None:
    people_pool = [p for p in pool if "people" in p.classes]
    object_pool = [p for p in pool if b.pool.pair_nouns.get(p.key)]
    if people_pool and (not object_pool or b.rng.random() < 0.3):
        subject, plural, p, _ = _pred(b, people_pool, True)
    elif object_pool:
        subject, plural, p, _ = _pred(b, object_pool, False)
    else:
        return None
    x, y, _, _ = _side(b, p)
    return _pred_sentence(subject, plural, x, negated=True), _pred_sentence(subject, plural, y)


def n_negated_contrary(b: _Builder) -> Pair | None:
    """"The cider is not hot." → "The cider is cold." is neutral for gradable (contrary) pairs."""
    return _negated_premise(b, [p for p in b.pool.pairs if p.negation == "contrary"])


def _satellite_example(b: _Builder, from_satellite: bool) -> Pair | None:
    """A satellite adjective and its head ("acidic" / "sour"): satellite → head entails, head → satellite
    is neutral (the head is the wider word)."""
    def pick(p: _AdjPair):
        options = [(s, p.a) for s in p.sats_a] + [(s, p.b) for s in p.sats_b]
        sat, head = b.choice(options)
        return (sat, head, False) if from_satellite else (head, sat, False)
    return _adj_pair_example(b, pick, sats_only=True)


def e_satellite(b: _Builder) -> Pair | None:
    return _satellite_example(b, from_satellite=True)


def n_head_to_satellite(b: _Builder) -> Pair | None:
    return _satellite_example(b, from_satellite=False)


def n_other_attribute(b: _Builder) -> Pair | None:
    """Two adjectives from unrelated dimensions: "The pelican is wet." → "The pelican is fast."."""
    def compatible(p: _AdjPair, q: _AdjPair) -> bool:
        return (p.key != q.key and p.dim != q.dim and (p.dim, q.dim) not in _DIM_CONFLICTS
                and q.dim not in _NO_OTHER_ATTRIBUTE and p.dim not in _NO_OTHER_ATTRIBUTE)

    def any_adj(p: _AdjPair) -> str:
        return b.choice((p.a, p.b) + p.sats_a + p.sats_b)

    if b.pool.people_pairs and b.rng.random() < 0.2:
        p = b.choice(b.pool.people_pairs)
        others = [q for q in b.pool.pairs if "people" in q.classes and compatible(p, q)]
        if not others:
            return None
        subj = b.subject(definite=True)
        return (_pred_sentence(subj.definite, subj.plural, any_adj(p)),
                _pred_sentence(subj.definite, subj.plural, any_adj(b.choice(others))))
    n = b.choice(b.pool.nouns)
    pairs = b.pool.noun_pairs.get(n.offset, [])
    if not pairs:
        return None
    p = b.choice(pairs)
    others = [q for q in b.pool.pairs if n.classes & q.classes and compatible(p, q)]
    if not others:
        return None
    x, y = any_adj(p), any_adj(b.choice(others))
    if b.rng.random() < 0.5:
        return _attributive(b, n, x, y)
    return _pred_sentence(f"the {n.lemma}", False, x), _pred_sentence(f"the {n.lemma}", False, y)


def _act_pair(b: _Builder, pairs: list[tuple[str, str]]) -> Pair:
    g1, g2 = b.choice(pairs)
    if b.rng.random() < 0.5:
        g1, g2 = g2, g1
    a1, a2 = b.choice(b.pool.by_root[g1]), b.choice(b.pool.by_root[g2])
    subj = b.subject(definite=True)
    sp = b.premise_subject(subj)
    swims = (a1.root == "swim") + (a2.root == "swim")
    # a location only where it suits both activities ("in the pool" for two swimming activities)
    extra = b.location(a1) if swims != 1 and b.rng.random() < 0.5 else ""
    return (b.act_clause(sp, subj.plural, b.act_phrase(a1), extra),
            b.act_clause(subj.definite, subj.plural, b.act_phrase(a2), extra if b.rng.random() < 0.5 else ""))


def c_incompatible_action(b: _Builder) -> Pair:
    return _act_pair(b, b.pool.incompatible)


def n_compatible_action(b: _Builder) -> Pair:
    return _act_pair(b, b.pool.compatible)


def _only(b: _Builder, x: str, y: str, cls: str) -> Pair:
    place = b.choice(b.pool.lex.only_places)
    frames = ["The only {c} in the {p} is {x}.", "There is only one {c} in the {p}, and it is {x}.",
              "In the {p}, the only {c} is {x}."]
    if place in PICTURES:
        frames.append("The {p} shows just one {c}: {x}.")
    frame = b.choice(frames)
    return (frame.format(c=cls, p=place, x=_np(x, "a", False)), frame.format(c=cls, p=place, x=_np(y, "a", False)))


def _only_class(b: _Builder, need_hyper: bool) -> str | None:
    classes = [c for c in ("animal", "plant") if (b.pool.only_hyper if need_hyper else b.pool.only_nouns)[c]]
    return b.choice(classes) if classes else None


def _only_hyper(b: _Builder, upward: bool) -> Pair | None:
    """A one-member frame (:func:`_only`) about a hyponym and its hypernym: the hypernym in the hypothesis
    (``upward``: entailment) or in the premise (neutral)."""
    cls = _only_class(b, True)
    if cls is None:
        return None
    picked = _hyper(b, b.pool.only_hyper[cls], avoid=cls)
    if picked is None:
        return None
    low, high = picked[0].lemma, picked[1]
    return _only(b, low, high, cls) if upward else _only(b, high, low, cls)


def e_only_hypernym(b: _Builder) -> Pair | None:
    return _only_hyper(b, upward=True)


def n_only_hyponym(b: _Builder) -> Pair | None:
    return _only_hyper(b, upward=False)


def c_only_cohyponym(b: _Builder) -> Pair | None:
    """Disjoint members of one class: leaves of the vocabulary with single-inheritance chains, neither
    above the other, and no usage category ("houseplant", "pet") that cuts across the taxonomy."""
    cls = _only_class(b, False)
    if cls is None or not b.pool.only_leaves[cls]:
        return None
    nouns = b.pool.only_leaves[cls]
    x, y = b.choice(nouns), b.choice(nouns)
    if x.offset == y.offset or x.offset in y.ancestors or y.offset in x.ancestors or x.lemma in y.hypernyms \
            or y.lemma in x.hypernyms:
        return None
    return _only(b, x.lemma, y.lemma, cls)


#: The rules of each label (the module docstring says what each does and why it gives its label) with their
#: weights (per 60 examples of the label). The weights give every frame family about the same share of each
#: label — negation frames, "the only" frames, adjective predicates and activities each make 20% of
#: entailment, 20% of neutral and 25% of contradiction — so a frame does not give the label away; the
#: affirmative object frames (hypernym, added/dropped information, subject) make the remaining 20% of
#: entailment and neutral.
KINDS: dict[str, tuple[tuple[Callable[[_Builder], Pair | None], int], ...]] = {
    "entailment": ((e_hypernym, 4), (e_drop_info, 4), (e_subject_general, 4), (e_negation_downward, 12),
                   (e_only_hypernym, 12), (e_antonym_negation, 6), (e_satellite, 6), (e_verb_hypernym, 12)),
    "neutral": ((n_hyponym, 4), (n_add_info, 4), (n_subject_specific, 4), (n_negation_upward, 12),
                (n_only_hyponym, 12), (n_negated_contrary, 4), (n_head_to_satellite, 4), (n_other_attribute, 4),
                (n_verb_hyponym, 6), (n_compatible_action, 6)),
    "contradiction": ((c_negation, 15), (c_only_cohyponym, 15), (c_antonym, 15), (c_incompatible_action, 15)),
}


def kind_schedule(label: str) -> list[Callable[[_Builder], Pair | None]]:
    """One cycle of the label's rules, interleaved by smooth weighted round-robin (deterministic).

    >>> sched = kind_schedule("contradiction")
    >>> len(sched), [f.__name__ for f in sched[:4]]
    (60, ['c_negation', 'c_only_cohyponym', 'c_antonym', 'c_incompatible_action'])
    """
    weights = KINDS[label]
    total = sum(w for _, w in weights)
    current = [0] * len(weights)
    out = []
    for _ in range(total):
        current = [c + w for c, (_, w) in zip(current, weights)]
        best = max(range(len(weights)), key=lambda i: (current[i], -i))
        current[best] -= total
        out.append(weights[best][0])
    return out


# ------------------------------------------------------------------------------------------ generate


def _label_counts(n: int) -> dict[str, int]:
    base, rest = divmod(n, len(LABELS))
    return {label: base + (1 if i < rest else 0) for i, label in enumerate(LABELS)}


def _generate(n: int, seed: int, pool: _Pool, avoid: frozenset[tuple[str, str]] = frozenset(),
              tries: int = 400) -> list[NLIExample]:
    if n < 0:
        raise CorpusError(f"n={n} must be non-negative.")
    rng = random.Random(seed)
    b = _Builder(rng, pool)
    banned = pool.lex.banned
    seen: set[tuple[str, str]] = set()
    out: list[NLIExample] = []
    for label, count in _label_counts(n).items():
        schedule = kind_schedule(label)
        fallbacks = [k for k, _ in KINDS[label]]
        exhausted: set[str] = set()  # rules that cannot make new pairs from this pool (small held-out pools)
        for i in range(count):
            candidates = [schedule[i % len(schedule)]] + fallbacks
            for kind in candidates:
                if kind.__name__ in exhausted:
                    continue
                for _ in range(tries):
                    pair = kind(b)
                    if pair is None or pair in seen or pair in avoid or pair[0] == pair[1]:
                        continue
                    if not (banned.ok(pair[0]) and banned.ok(pair[1])):
                        continue
                    seen.add(pair)
                    out.append(NLIExample(pair[0], pair[1], label, kind.__name__))
                    break
                else:
                    exhausted.add(kind.__name__)
                    continue
                break
            else:
                raise CorpusError(
                    f"Could not generate a new {label} example ({len(out)} made): every rule ran out of new "
                    f"pairs; ask for fewer examples or exclude fewer words."
                )
    rng.shuffle(out)
    return out


def generate(n: int, seed: int = 0, exclude: Iterable[str] = ()) -> list[NLIExample]:
    """``n`` distinct NLI pairs: ``n // 3`` per label (the remainder goes to entailment, then neutral).

    A pure function of ``seed`` (and the WordNet files). ``exclude`` adds words (case-insensitive whole
    words) to the probe words that never appear. Within a label the rules follow :data:`KINDS`' weights.
    """
    return _generate(n, seed, _full_pool(_get_lexicon(exclude)))


def generate_splits(n_train: int, n_heldout: int, seed: int = 0,
                    exclude: Iterable[str] = ()) -> tuple[list[NLIExample], list[NLIExample]]:
    """Train and held-out corpora over disjoint specific lexical items (and so disjoint pairs).

    The hyponym nouns, hyponym activity verbs and adjective pairs are split 80/20 by a seeded shuffle;
    held-out examples use only held-out items. Category words, root activities, subjects and frames are
    shared. Each side is label-balanced like :func:`generate`; in the small held-out pool a rule that runs
    out of new pairs (e.g. "other attribute" when few adjective pairs share a noun class) is replaced by
    the label's other rules, so the label counts stay exact while the rule mix may differ slightly.
    """
    lex = _get_lexicon(exclude)
    train_pool, held_pool = _split_pools(lex, seed)
    train = _generate(n_train, seed, train_pool)
    held = _generate(n_heldout, seed + 1_000_003, held_pool,
                     avoid=frozenset((e.premise, e.hypothesis) for e in train))
    return train, held


def split_items(seed: int = 0, exclude: Iterable[str] = ()) -> dict[str, tuple[set[str], set[str]]]:
    """The (train, held-out) specific items of :func:`generate_splits`: ``nouns``, ``verbs``, ``adjectives``."""
    train, held = _split_pools(_get_lexicon(exclude), seed)

    def items(pool: _Pool) -> dict[str, set[str]]:
        return {"nouns": {n.lemma for n in pool.nouns}, "verbs": {a.verb for a in pool.hypo_acts},
                "adjectives": {f"{p.a}/{p.b}" for p in pool.pairs}}

    t, h = items(train), items(held)
    return {k: (t[k], h[k]) for k in t}


def surface_features(ex: NLIExample) -> list[float]:
    """Length and overlap features of a pair (for the hypothesis-only/surface baseline)."""
    p, h = tokens(ex.premise), tokens(ex.hypothesis)
    sp, sh = set(p), set(h)
    return [len(p), len(h), len(h) - len(p), len(sh & sp) / max(1, len(sh)), len(sh - sp), len(sp - sh)]


def surface_baseline(examples: Sequence[NLIExample], folds: int = 5, seed: int = 0) -> float:
    """Cross-validated accuracy of a logistic regression on :func:`surface_features` alone."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = [surface_features(e) for e in examples]
    y = [e.label for e in examples]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    return float(cross_val_score(model, x, y, cv=folds).mean())
