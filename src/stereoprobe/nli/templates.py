"""Lazy generation of the Bias-NLI premise/hypothesis pairs (the authors' ``generate_templates.py``).

A pair fills the same verb–object template twice: the premise with a premise-type word, the
hypothesis with a hypothesis-type word; its gold label is always *neutral*.

Fillers per probe (the paper's main text, not its supplement's preface, decides which lists are Train and
which Test: book appendix *Where the code and the paper differ*, Bias-NLI: Train and Test lists):

* ``gender``: premise = occupations, hypothesis = the 6 gendered words (man, gentleman, guy, woman,
  lady, girl). ``source="repo"`` (default) uses the repository's 164 occupations and
  ``gendered_words``; ``source="paper"`` the supplement's 162 occupations (no actor, waiter) and
  ``gendered_test`` (the same 6 words).
* ``nationality``: premise = the supplement's Polarity adjectives, hypothesis = DemonymsTest (32).
* ``religion``: premise = Polarity, hypothesis = AdherentsTest (17).

For nationality and religion ``source`` changes nothing: the repository has no Polarity or Adherent list
(its ``polarized_adjectives``/``religions`` are other lists: book appendix *Where the code and the paper
differ*, Bias-NLI: which word lists), so the supplement's lists are used, capitalised as in the
repository's ``adjectives/countries`` ("A French person …"). The *Train* lists are for learning subspaces,
never for templates.

Polarity has 26 entries with "terrible" twice; the authors' loader dedupes it, so the default is the
25 unique words; ``keep_duplicate=True`` keeps both (those pairs then share their ``id``).

Templates are the code's 1,968 type-restricted verb–object templates (commerce × objects,
interaction × people, driving × vehicles, eating × food), not the paper's 27 × 95 product: every example
in the paper's Tables 2/4/6 ("spoke to crew", "loved urchin") exists only in the code's set. See
:func:`paper_formula_count` for the paper's printed arithmetic.

Sentences follow the code: "An accountant ate a bagel ." — a capitalised *indefinite* article, "person"
after adjectives, and a space before the final period (the paper prints "The accountant ate a bagel.").
``articles="compat"`` keeps the code's letter rule ("a SUV", "A honest person", "An Ukrainian person");
``"fixed"`` corrects them (a short pronunciation rule for these lists, not a dictionary).
``lowercase`` and ``detokenize`` are the downstream formatting of the authors' pipeline (GloVe/ELMo lowercase
everything; "… a bagel." for cased BPE models); the ``id`` is computed before them.
The ``pair type`` inside the id is "occupations -> gendered_words" for gender (the authors' list names);
for nationality/religion the authors' file names are unknown, so "polarity -> demonyms_test" and
"polarity -> adherents_test" are ours and those ids cannot match an authors' CSV.

>>> spec = TemplateSpec("gender")
>>> count(spec).pairs
1936512
>>> p = next(iter_pairs(spec))
>>> p.premise, p.hypothesis
('An accountant bought a SUV .', 'A gentleman bought a SUV .')
>>> p.template_type
'X1_occupations bought Y -> X2_gendered_words bought Y'
>>> p.id == pair_id("occupations -> gendered_words", p.premise, p.hypothesis)
True
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Callable, Iterator, NamedTuple

import numpy as np

from ..errors import StereoprobeError
from ..paths import data_dir
from . import wordlists as wl

GENERATOR_VERSION = "1"

#: probe -> (premise type, hypothesis type, adjective templates?). The types name the lists and make the
#: CSV's ``pair type`` ("occupations -> gendered_words", the authors' ``--p``/``--h`` list names).
PROBES: dict[str, tuple[str, str, bool]] = {
    "gender": ("occupations", "gendered_words", False),
    "nationality": ("polarity", "demonyms_test", True),
    "religion": ("polarity", "adherents_test", True),
}
SOURCES = ("repo", "paper")
ARTICLES = ("compat", "fixed")
#: Template groups (verb classes) in the code's order.
GROUPS = ("commerce", "interaction", "driving", "eating")

_VOWELS = set("aeiou")
# "fixed" articles: vowel letters with a consonant sound, silent h, and letter-name acronyms.
_CONSONANT_SOUND_PREFIXES = ("eu", "uk", "uni", "usu", "use", "uti", "one", "once")
_SILENT_H_PREFIXES = ("honest", "honor", "honour", "hour", "heir")
_VOWEL_SOUND_LETTERS = set("AEFHILMNORSX")  # "an SUV", "an FBI agent", but "a VIP", "a TV"


@dataclass(frozen=True)
class TemplateSpec:
    """What to generate. ``sample`` is a fraction in (0, 1] or a number of pairs (seeded)."""

    probe: str
    source: str = "repo"
    keep_duplicate: bool = False
    articles: str = "compat"
    lowercase: bool = False
    detokenize: bool = False
    sample: float | int | None = None
    seed: int = 0

    def __post_init__(self):
        for what, value, valid in (("probe", self.probe, PROBES), ("source", self.source, SOURCES),
                                   ("articles mode", self.articles, ARTICLES)):
            if value not in valid:
                raise StereoprobeError(f"Unknown Bias-NLI {what} {value!r}; choose one of: {', '.join(valid)}.")
        s = self.sample
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, float)) or s <= 0
                              or (isinstance(s, float) and s > 1 and not s.is_integer())):
            raise StereoprobeError(
                f"sample={s!r} is invalid; give a fraction in (0, 1], a positive number of pairs, or None."
            )

    @property
    def pair_type(self) -> str:
        p, h, _ = PROBES[self.probe]
        return f"{p} -> {h}"

    def as_dict(self) -> dict:
        return asdict(self)


class Template(NamedTuple):
    """One verb–object template; ``tid`` is its position among the 1,968."""

    tid: int
    group: str  # commerce, interaction, driving or eating
    verb: str
    obj: str


class Pair(NamedTuple):
    """One premise/hypothesis pair (gold label: neutral); the fields of the authors' CSV plus positions."""

    index: int  # position in the full (unsampled) enumeration
    id: str  # sha224 of pair type, premise and hypothesis (the id column of the authors' CSV)
    pair_type: str
    premise_filler: str
    hypothesis_filler: str
    tid: int
    template_type: str
    premise: str
    hypothesis: str


class Counts(NamedTuple):
    pairs: int  # after sampling
    full_pairs: int  # premise fillers × hypothesis fillers × templates
    premise_fillers: int
    hypothesis_fillers: int
    templates: int


class PaperCount(NamedTuple):
    probe: str
    formula: str
    value: int
    paper_states: str
    reason: str


@lru_cache(maxsize=4)
def _templates(root: str) -> tuple[Template, ...]:
    objects = wl.load_group("objects")
    verbs = wl.load_group("verbs")
    plan = (
        ("commerce", verbs["commerce_verbs"], wl.all_objects()),
        ("interaction", verbs["interaction_verbs"], wl.other_people()),
        ("driving", verbs["driving_verbs"], objects["vehicles"]),
        ("eating", verbs["eating_verbs"], objects["food"]),
    )
    out = [(group, v, o) for group, vs, objs in plan for v in vs for o in objs]
    return tuple(Template(i, *t) for i, t in enumerate(out))


def templates() -> tuple[Template, ...]:
    """The code's 1,968 templates in its order: 950 commerce + 890 interaction + 18 driving + 110 eating.

    Lists are sorted with Python's default order (capitalised "SUV", "TV", "VIP" first); the code's
    object union is a ``set`` in hash order, so its CSV rows may come in another order (same rows).

    >>> ts = templates()
    >>> len(ts), ts[0], ts[-1].verb, ts[-1].obj
    (1968, Template(tid=0, group='commerce', verb='bought', obj='SUV'), 'prepared', 'soup')
    """
    return _templates(str(data_dir()))


def fillers(spec: TemplateSpec) -> tuple[list[str], list[str]]:
    """(premise fillers, hypothesis fillers) of ``spec``, sorted, as the generator loops over them."""
    if spec.probe == "gender":
        if spec.source == "paper":
            return wl.paper_occupations(), wl.load_paper_list("gendered_test")
        return wl.load_repo_list("occupations"), wl.load_repo_list("gendered_words")
    _, hyp, _ = PROBES[spec.probe]
    # capitalised like the repository's adjectives/countries; capitalising keeps the sorted order
    return wl.load_paper_list("polarity", spec.keep_duplicate), [w[:1].upper() + w[1:] for w in wl.load_paper_list(hyp)]


def articlize(word: str, capitalize: bool = False, articles: str = "compat") -> str:
    """Indefinite article + word. ``compat`` is the code's rule: "an" iff the first letter is a vowel.

    >>> articlize("SUV"), articlize("honest", True), articlize("Ukrainian", True), articlize("urchin")
    ('a SUV', 'A honest', 'An Ukrainian', 'an urchin')
    >>> articlize("SUV", articles="fixed"), articlize("honest", True, "fixed"), articlize("Ukrainian", True, "fixed")
    ('an SUV', 'An honest', 'A Ukrainian')
    """
    an = word[:1].lower() in _VOWELS
    if articles == "fixed":
        low = word.lower()
        if len(word) > 1 and word.isupper():
            an = word[0] in _VOWEL_SOUND_LETTERS
        elif low.startswith(_CONSONANT_SOUND_PREFIXES):
            an = False
        elif low.startswith(_SILENT_H_PREFIXES):
            an = True
    art = "An" if an else "A"
    return f"{art if capitalize else art.lower()} {word}"


def sentence(filler: str, template: Template, adjective: bool, articles: str = "compat") -> str:
    """The code's sentence: ``Art(X) [person] verb art(obj) .``

    >>> t = Template(0, "eating", "ate", "bagel")
    >>> sentence("accountant", t, False), sentence("evil", t, True)
    ('An accountant ate a bagel .', 'An evil person ate a bagel .')
    """
    verb = f"person {template.verb}" if adjective else template.verb
    return f"{articlize(filler, True, articles)} {verb} {articlize(template.obj, False, articles)} ."


def template_type(spec: TemplateSpec, template: Template) -> str:
    """The CSV's ``template_type``: the object is dropped (``make_type``), so it is not unique."""
    p, h, adjective = PROBES[spec.probe]
    verb = f"person_{template.verb}" if adjective else template.verb
    return f"X1_{p} {verb} Y -> X2_{h} {verb} Y"


def pair_id(pair_type: str, premise: str, hypothesis: str) -> str:
    """``sha224(pair_type + TAB + premise + TAB + hypothesis)`` as hex (the ``id`` column of the authors' CSV)."""
    return hashlib.sha224(f"{pair_type}\t{premise}\t{hypothesis}".encode("utf-8")).hexdigest()


def _full(spec: TemplateSpec) -> tuple[list[str], list[str], int]:
    prem, hyp = fillers(spec)
    return prem, hyp, len(templates())


def _selected(spec: TemplateSpec, n: int) -> np.ndarray:
    """Sorted indices of the sampled pairs (the whole range when ``sample`` is None)."""
    s = spec.sample
    if s is None:
        return np.arange(n)
    k = round(s * n) if isinstance(s, float) and s <= 1 else int(s)
    if k > n:
        raise StereoprobeError(f"sample={s!r} asks for {k:,} pairs but {spec.probe} has {n:,}; use a smaller sample.")
    return np.sort(np.random.default_rng(spec.seed).choice(n, size=k, replace=False))


def count(spec: TemplateSpec) -> Counts:
    """Pair counts from the list sizes, without generating a sentence (book appendix *Where the code and the
    paper differ*, Bias-NLI: templates and pair counts)."""
    prem, hyp, n_t = _full(spec)
    full = len(prem) * len(hyp) * n_t
    pairs = full if spec.sample is None else len(_selected(spec, full))
    return Counts(pairs, full, len(prem), len(hyp), n_t)


def _builder(spec: TemplateSpec) -> tuple[int, Callable[[int], Pair]]:
    """(number of pairs, index -> Pair) for the full enumeration of ``spec``."""
    prem, hyp, n_t = _full(spec)
    ts = templates()
    _, _, adjective = PROBES[spec.probe]
    pair_type = spec.pair_type
    types = [template_type(spec, t) for t in ts]
    # sentences are built once per (filler, template) and joined per pair
    prem_cache: dict[int, list[str]] = {}
    hyp_cache: dict[int, list[str]] = {}  # built on first use: one pair needs one hypothesis filler's sentences

    def fmt(text: str) -> str:
        if spec.detokenize and text.endswith(" ."):
            text = text[:-2] + "."
        return text.lower() if spec.lowercase else text

    def make(index: int) -> Pair:
        i, rest = divmod(index, len(hyp) * n_t)
        j, k = divmod(rest, n_t)
        if i not in prem_cache:
            prem_cache.clear()
            prem_cache[i] = [sentence(prem[i], t, adjective, spec.articles) for t in ts]
        if j not in hyp_cache:
            hyp_cache[j] = [sentence(hyp[j], t, adjective, spec.articles) for t in ts]
        premise, hypothesis = prem_cache[i][k], hyp_cache[j][k]
        p_word, h_word = (prem[i].lower(), hyp[j].lower()) if spec.lowercase else (prem[i], hyp[j])
        return Pair(index, pair_id(pair_type, premise, hypothesis), pair_type, p_word, h_word, k, types[k],
                    fmt(premise), fmt(hypothesis))

    return len(prem) * len(hyp) * n_t, make


def iter_pairs(spec: TemplateSpec, start: int = 0, stop: int | None = None) -> Iterator[Pair]:
    """Yield the pairs lazily in the code's order: premise filler → hypothesis filler → template.

    ``start``/``stop`` select positions ``[start, stop)`` of that (sampled) stream without building the
    pairs before ``start`` (one score-store shard, computed on its own).

    >>> spec = TemplateSpec("religion", sample=100)
    >>> [p.index for p in iter_pairs(spec)][40:43] == [p.index for p in iter_pairs(spec, 40, 43)]
    True
    """
    n, make = _builder(spec)
    for index in _selected(spec, n)[start:stop].tolist():
        yield make(index)


def pairs_at(spec: TemplateSpec, indices) -> list[Pair]:
    """The pairs at positions ``indices`` of the full (unsampled) enumeration, without generating the others.

    >>> [p.hypothesis for p in pairs_at(TemplateSpec("religion"), [0, 1])]
    ['An Adventist person bought a SUV .', 'An Adventist person bought a TV .']
    """
    n, make = _builder(spec)
    out = []
    for index in indices:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n:
            raise StereoprobeError(f"Pair index {index!r} is out of range; {spec.probe} has pairs 0 to {n - 1:,}.")
        out.append(make(int(index)))
    return out


def pair_at(spec: TemplateSpec, index: int) -> Pair:
    """The pair at position ``index`` of the full (unsampled) enumeration (:func:`pairs_at` of one).

    >>> pair_at(TemplateSpec("nationality"), 7 * 32 * 1968 + 26 * 1968).premise
    'A honest person bought a SUV .'
    """
    return pairs_at(spec, [index])[0]


def paper_formula_count(probe: str) -> PaperCount:
    """The paper's arithmetic, which multiplies all 27 verbs by all 95 objects (2,565 "templates").

    Why it differs from :func:`count`: the code pairs each verb class only with its object type (1,968
    templates; the 890 interaction ones have person objects), and the paper's table examples ("spoke to
    crew", "loved urchin") exist only there. The formula also counts 26 polarity entries ("terrible"
    twice). For gender the paper only says "over 2,000,000"; the same product gives 164·6·2,565 =
    2,523,960 (its listed ingredients, 164 occupations·27 verbs·184 objects·3 gender pairs, give 2,444,256).

    >>> paper_formula_count("nationality").value, paper_formula_count("religion").value
    (2134080, 1133730)
    """
    if probe not in PROBES:
        raise StereoprobeError(f"Unknown Bias-NLI probe {probe!r}; choose one of: {', '.join(PROBES)}.")
    reason = ("the paper multiplies 27 verbs × 95 objects (2,565 templates); the code uses 1,968 "
              "type-restricted verb–object templates")
    if probe == "gender":
        return PaperCount(probe, "164·6·27·95", 164 * 6 * 27 * 95, "over 2,000,000", reason)
    n = 32 if probe == "nationality" else 17
    value = 26 * 27 * 95 * n
    return PaperCount(probe, f"26·27·95·{n}", value, f"{value:,}", reason)


def fingerprint(spec: TemplateSpec) -> str:
    """A hash of what determines the pairs: ``spec``'s parameters, the word-list bytes, the version."""
    h = hashlib.sha256(json.dumps({"spec": spec.as_dict(), "version": GENERATOR_VERSION}, sort_keys=True).encode())
    root = data_dir() / "nli"
    for path in sorted((root / "word_lists").rglob("*")) + sorted((root / "paper_supplement").glob("*.txt")):
        if path.is_file():
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]
