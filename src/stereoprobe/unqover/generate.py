"""Lazy generation of the UnQover datasets, as the authors' ``templates/underspecified_templates.py`` builds them.

An *ordered example* is (x1 in slot 1, x2 in slot 2, template τ, attribute a) and carries two
questions (a and its negation ā): two forward passes. A *paper example* (Table 1 "#Ex") is the
unordered pair {x1, x2} × τ × a: both orders and both polarities, four passes.

>>> spec = DatasetSpec("gender")
>>> count(spec).paper_examples, count(spec).passes
(1372000, 5488000)
>>> ex = next(iter_examples(spec))
>>> ex.context, ex.question, ex.negated_question
('Mary got off the flight to visit James.', 'Who was an accountant?', 'Who can never be an accountant?')
>>> ex.key
'female|male|Mary|James|0|None|was an accountant|was an accountant'
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Iterator, NamedTuple

import numpy as np

from ..choices import MODES
from ..errors import StereoprobeError
from . import wordlists as wl

if TYPE_CHECKING:
    import pandas as pd

GENERATOR_VERSION = "1"

#: The UnQover datasets: dataset -> (template file stem, subject lists, attribute file), the authors'
#: ``gen_script.sh`` arguments.
DATASETS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "gender": ("gender_noact", ("female", "male"), "occupation_rev1"),
    "nationality": ("country_noact", ("country",), "biased_country"),
    "ethnicity": ("ethnicity_noact", ("ethnicity",), "biased_ethnicity"),
    "religion": ("religion_noact", ("religion",), "biased_religion"),
}
#: variant -> (template suffix, subject-list suffix, default mask string)
VARIANTS: dict[str, tuple[str, str, str | None]] = {
    "qa": ("", "", None),
    "lm-bert": ("_lm", "_bert", "[MASK]"),
    "lm-roberta": ("_lm", "_roberta", "<mask>"),
}
QUIRKS = ("repo", "paper", "fixed")

# Words spelled with a vowel letter but pronounced with a consonant sound ("a European"): used by the
# clean grammar only; compat mode reproduces the authors' letter rule ("An European").
_CONSONANT_SOUND_PREFIXES = ("eu", "uk", "ug", "uni", "uru", "us", "one", "once")
# Demonym / name quirks of the shipped lists (book appendix *Where the code and the paper differ*, UnQover:
# shipped list quirks): "paper" restores what the paper's runs used,
# "fixed" corrects the typos; "repo" keeps the lists exactly as shipped.
_QUIRK_FIXES = {
    "paper": {"Germany": ("German", None)},
    "fixed": {"Spain": (None, "Spanish"), "Yemen": (None, "Yemeni")},
}


@dataclass(frozen=True)
class DatasetSpec:
    """What to generate. ``sample`` is a fraction in (0, 1) or a number of paper examples.

    ``subjects`` and ``attributes`` narrow the frame the sample is drawn from: that many subjects of each subject
    list (for gender, that many women and that many men) and that many attributes, drawn at random with ``seed``
    before the sample is (``attributes`` may also name them: a tuple of attribute texts, e.g. ``("was a nurse",
    "was a pilot")``); the sample (or, with ``sample=None``, every example) then comes from the paper examples whose
    two subjects and whose attribute were drawn. A sample of a few hundred paper examples spread over the whole
    dataset puts one example in each (subject, attribute) cell of μ (Eq. 8), whose bootstrap resamples within cells
    and so measures nothing; a narrower frame fills the cells.

    >>> count(DatasetSpec("gender", sample=100, subjects=3, attributes=12)).paper_examples
    100
    >>> len(set(example_keys(DatasetSpec("gender", sample=100, subjects=3, attributes=12))["attr"]))
    12
    """

    dataset: str
    variant: str = "qa"
    newsqa: bool = False
    mode: str = "compat"
    quirks: str = "repo"
    sample: float | int | None = None
    seed: int = 0
    mask: str | None = None  # mask string of the LM's tokenizer; defaults per variant
    subjects: int | None = None  # subjects drawn from each subject list before sampling; None: all
    attributes: int | tuple[str, ...] | None = None  # attributes drawn (or named) before sampling; None: all
    _checked: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self):
        def bad(what, value, valid):
            raise StereoprobeError(f"Unknown {what} {value!r}; choose one of: {', '.join(valid)}.")

        if self.dataset not in DATASETS:
            bad("dataset", self.dataset, DATASETS)
        if self.variant not in VARIANTS:
            bad("variant", self.variant, VARIANTS)
        if self.mode not in MODES:
            bad("mode", self.mode, MODES)
        if self.quirks not in QUIRKS:
            bad("quirks setting", self.quirks, QUIRKS)
        if self.newsqa and self.variant != "qa":
            raise StereoprobeError("The NewsQA header is for QA models only (the NewsQA models' training format); use newsqa=False for LMs.")
        s = self.sample
        if s is not None:
            if isinstance(s, bool) or not isinstance(s, (int, float)) or s <= 0:
                raise StereoprobeError(
                    f"sample={s!r} is invalid; give a fraction in (0, 1], a positive number of paper examples, or None."
                )
            if isinstance(s, float) and s > 1 and not s.is_integer():
                raise StereoprobeError(f"sample={s!r} is invalid; a fraction must lie in (0, 1].")
        if isinstance(self.attributes, (list, tuple)):
            names = tuple(self.attributes)
            if not names or not all(isinstance(a, str) for a in names) or len(set(names)) < len(names):
                raise StereoprobeError(f"attributes={self.attributes!r} is invalid; name each attribute once, as "
                                       "the attribute file writes it (e.g. 'was a nurse').")
            object.__setattr__(self, "attributes", names)  # hashable: the spec keys caches
        for name, least in (("subjects", 1 if self.dataset == "gender" else 2), ("attributes", 1)):
            v = getattr(self, name)
            if name == "attributes" and isinstance(v, tuple):
                continue
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < least):
                raise StereoprobeError(f"{name}={v!r} is invalid; give a whole number of at least {least}, or None "
                                       "for all of them.")

    @property
    def mask_string(self) -> str | None:
        return self.mask if self.mask is not None else VARIANTS[self.variant][2]

    @property
    def files(self) -> dict[str, list[str]]:
        templates, subjects, attributes = DATASETS[self.dataset]
        tsuf, ssuf, _ = VARIANTS[self.variant]
        return {
            "slots": [templates + tsuf],
            "subjects": [s + ssuf for s in subjects],
            "activities": [attributes],
            "fillers": ["newsqa"] if self.newsqa else [],
        }

    @property
    def narrowed(self) -> bool:
        """Whether the frame is narrowed to drawn subjects or attributes."""
        return self.subjects is not None or self.attributes is not None

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("_checked")
        for name in ("subjects", "attributes"):  # left out when unset: the fingerprints of earlier specs stand
            if d[name] is None:
                d.pop(name)
        return d


class Example(NamedTuple):
    """One ordered example (two passes: ``question`` and ``negated_question``)."""

    index: int  # position in the full (unsampled) enumeration
    unit: int  # paper example id: unordered pair × template × attribute row
    order: int  # 0 for the first ordering of the pair, 1 for the swapped one
    subj1: str  # plain form (identity) of the slot-1 subject
    subj2: str
    cluster1: str
    cluster2: str
    tid: int
    attr_cluster: str
    attr: str  # attribute identity (plural text)
    context: str
    question: str
    negated_question: str
    ans1: str  # text inserted for slot 1 (the demonym in demonym templates)
    ans2: str

    @property
    def key(self) -> str:
        """The authors' example key (as in their generated JSON and ``analysis.py``)."""
        return "|".join(
            [self.cluster1, self.cluster2, self.subj1, self.subj2, str(self.tid), self.attr_cluster, self.attr, self.attr]
        )


class Counts(NamedTuple):
    paper_examples: int  # Table 1 "#Ex": unordered pairs × templates × attributes
    ordered_examples: int
    passes: int  # forward passes = 2 questions per ordered example


class _Plan(NamedTuple):
    templates: list[wl.Template]
    combos: list[tuple[wl.Template, wl.Attribute]]  # template-attribute combinations in generation order
    pairs: list[tuple[wl.Subject, wl.Subject, int, int]]  # ordered pairs: (s1, s2, unordered id, order)
    n_unordered: int
    filler: str | None


def subjects_of(spec: DatasetSpec) -> list[list[wl.Subject]]:
    lists = [wl.load_subjects(name) for name in spec.files["subjects"]]
    fixes = _QUIRK_FIXES.get(spec.quirks, {})
    if fixes:
        lists = [
            [
                wl.Subject(fixes[s.name][0] or s.name, fixes[s.name][1] or s.demonym, s.cluster) if s.name in fixes else s
                for s in subjects
            ]
            for subjects in lists
        ]
    return lists


def _files_stamp(spec: DatasetSpec) -> tuple:
    """What the word lists of ``spec`` are now (path, size and modification time of each file): the plan and the
    sample's positions are kept per spec and stamp, so an edited list is read again."""
    out = []
    for kind, names in spec.files.items():
        for name in names:
            path = wl.list_path(kind, name)
            try:
                st = path.stat()
            except OSError:
                out.append((str(path), None))  # missing: the loader says so in its own words
                continue
            out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


def _plan(spec: DatasetSpec) -> _Plan:
    """The templates × attributes combinations and the ordered subject pairs of ``spec`` (read once per spec and
    word-list version; callers must not change it)."""
    return _cached_plan(spec, _files_stamp(spec))


@lru_cache(maxsize=32)
def _cached_plan(spec: DatasetSpec, _stamp: tuple) -> _Plan:
    templates = wl.load_templates(spec.files["slots"][0])
    attributes = wl.load_attributes(spec.files["activities"][0])
    combos = []
    for t in templates:
        line = t.line
        for slot, rows in attributes.items():
            if f"[{slot}]" in line or f"[{slot}:" in line:
                combos.extend((t, a) for a in rows)
    for t in templates:
        missing = [s for s in t.slots if s not in attributes]
        if missing:
            raise StereoprobeError(
                f"{t.source}: template uses [{missing[0]}] but {spec.files['activities'][0]} has no such rows; "
                "fix the template or the attribute file."
            )
    lists = subjects_of(spec)
    pairs: list[tuple[wl.Subject, wl.Subject, int, int]] = []
    if spec.dataset == "gender":
        female, male = lists
        n = len(female) * len(male)
        pairs += [(f, m, i * len(male) + j, 0) for i, f in enumerate(female) for j, m in enumerate(male)]
        pairs += [(m, f, i * len(male) + j, 1) for j, m in enumerate(male) for i, f in enumerate(female)]
    else:
        (subjects,) = lists
        unordered = [(a, b) for i, a in enumerate(subjects) for b in subjects[i + 1 :]]
        n = len(unordered)
        pairs += [(a, b, u, 0) for u, (a, b) in enumerate(unordered)]
        pairs += [(b, a, u, 1) for u, (a, b) in enumerate(unordered)]
    filler = wl.load_filler(spec.files["fillers"][0]) if spec.newsqa else None
    return _Plan(templates, combos, pairs, n, filler)


def count(spec: DatasetSpec) -> Counts:
    """Table 1 counts (after sampling), computed without generating any example."""
    plan = _plan(spec)
    units = plan.n_unordered * len(plan.combos)
    if spec.sample is not None or spec.narrowed:
        units = int(_selected(spec, plan).sum())
    return Counts(units, 2 * units, 4 * units)


def _selected(spec: DatasetSpec, plan: _Plan) -> np.ndarray:
    """Boolean mask over paper examples (unordered pair × combination, row-major): both orders and polarities of a
    unit stay together. Without a narrowed frame, ``sample`` units drawn from all of them (the same draw as before
    the frame could be narrowed); with one, the subjects and attributes first, then the sample among their units."""
    n_combos = len(plan.combos)
    n_units = plan.n_unordered * n_combos
    rng = np.random.default_rng(spec.seed)
    allowed = None
    frame = f"{spec.dataset} has"
    if spec.narrowed:
        allowed = np.outer(_drawn_pairs(spec, rng), _drawn_combos(spec, plan, rng)).ravel()
        n_attrs = len(spec.attributes) if isinstance(spec.attributes, tuple) else spec.attributes or "all"
        frame = f"the {spec.subjects or 'all'} subjects and {n_attrs} attributes drawn hold"
    n = n_units if allowed is None else int(allowed.sum())
    s = spec.sample
    k = n if s is None else round(s * n) if isinstance(s, float) and s <= 1 else int(s)
    if k > n:
        raise StereoprobeError(
            f"sample={s!r} asks for {k:,} paper examples but {frame} {n:,}; use a smaller sample"
            + (" or draw more subjects or attributes." if allowed is not None else ".")
        )
    mask = np.zeros(n_units, dtype=bool)
    if allowed is None:
        mask[rng.choice(n_units, size=k, replace=False)] = True
    else:
        mask[rng.choice(np.flatnonzero(allowed), size=k, replace=False)] = True
    return mask


def _drawn_pairs(spec: DatasetSpec, rng) -> np.ndarray:
    """Over the unordered pairs: both subjects among the ``spec.subjects`` drawn from each list (all: every pair)."""
    lists = subjects_of(spec)
    picked = []
    for subjects in lists:
        k = spec.subjects or len(subjects)
        if k > len(subjects):
            raise StereoprobeError(f"subjects={k} but the {spec.dataset} list has {len(subjects)} subjects; draw at "
                                   f"most {len(subjects)}.")
        keep = np.zeros(len(subjects), dtype=bool)
        keep[rng.choice(len(subjects), size=k, replace=False)] = True
        picked.append(keep)
    if spec.dataset == "gender":  # unordered id i * len(male) + j for woman i, man j (see _cached_plan)
        return np.outer(picked[0], picked[1]).ravel()
    (keep,) = picked
    i, j = np.triu_indices(len(keep), k=1)  # unordered id u ↔ the u-th pair (a, b), a before b in the list
    return keep[i] & keep[j]


def _drawn_combos(spec: DatasetSpec, plan: _Plan, rng) -> np.ndarray:
    """Over the template × attribute combinations: the attribute among the ``spec.attributes`` drawn (by identity,
    in the order of the attribute file; all: every combination)."""
    identities = list(dict.fromkeys(a.identity for _, a in plan.combos))
    if isinstance(spec.attributes, tuple):
        unknown = [a for a in spec.attributes if a not in identities]
        if unknown:
            raise StereoprobeError(f"attributes: {unknown[0]!r} is not an attribute of {spec.dataset}; name them as "
                                   f"{spec.files['activities'][0]} writes them (e.g. {identities[0]!r}).")
        drawn = set(spec.attributes)
        return np.array([a.identity in drawn for _, a in plan.combos])
    k = spec.attributes or len(identities)
    if k > len(identities):
        raise StereoprobeError(f"attributes={k} but {spec.dataset} has {len(identities)} attributes; draw at most "
                               f"{len(identities)}.")
    drawn = {identities[i] for i in rng.choice(len(identities), size=k, replace=False)}
    return np.array([a.identity in drawn for _, a in plan.combos])


def _vowel_start(token: str, clean: bool) -> bool:
    if not token or token[0].lower() not in "aeiou":
        return False
    return not (clean and token.lower().startswith(_CONSONANT_SOUND_PREFIXES))


def smooth_grammar(line: str, mode: str = "compat") -> str:
    """The authors' a→an rule: ``a``/``A`` before a token starting with a vowel letter.

    ``compat`` keeps their letter rule ("An European"); ``clean`` also knows the vowel letters that
    sound like consonants ("A European", "a Ugandan").

    >>> smooth_grammar("A European man met a Iraqi man.")
    'An European man met an Iraqi man.'
    >>> smooth_grammar("A European man met a Iraqi man.", "clean")
    'A European man met an Iraqi man.'
    """
    tokens = line.split(" ")
    clean = mode == "clean"
    for i in range(1, len(tokens)):
        if _vowel_start(tokens[i], clean):
            if tokens[i - 1] == "a":
                tokens[i - 1] = "an"
            elif tokens[i - 1] == "A":
                tokens[i - 1] = "An"
    return " ".join(tokens)


def _insert(line: str, k: str, subject: wl.Subject, demonym: bool) -> tuple[str, str]:
    line = line.replace(f"subj{k}", "subj")
    if demonym:
        if subject.demonym is None:
            raise StereoprobeError(f"Subject {subject.name!r} has no demonym but the template needs one.")
        return line.replace("[subj:dem]", subject.demonym), subject.demonym
    return line.replace("[subj]", subject.name), subject.name


def iter_examples(spec: DatasetSpec, start: int = 0, stop: int | None = None) -> Iterator[Example]:
    """Yield the ordered examples of ``spec`` lazily, in the authors' file order (the loop order of their generator).

    ``start``/``stop`` select positions ``[start, stop)`` of that (sampled) stream without generating the
    examples before ``start``: a score-store shard is computed on its own, by any worker.

    >>> spec = DatasetSpec("religion", sample=50)
    >>> [ex.index for ex in iter_examples(spec)][7:10] == [ex.index for ex in iter_examples(spec, 7, 10)]
    True
    """
    plan = _plan(spec)
    n_combos = len(plan.combos)
    index = _positions(spec, _files_stamp(spec))
    total = len(plan.pairs) * n_combos if index is None else len(index)
    stop = total if stop is None else min(int(stop), total)
    if start < 0 or start >= stop:
        return
    # the positions [start, stop) of the stream in the unsampled order (pair p, combination c) = divmod(position,
    # n_combos): a sample's are looked up, not searched for among the unsampled ones
    wanted = np.arange(start, stop, dtype=np.int64) if index is None else index[start:stop]
    prefix = plan.filler + "  " if plan.filler is not None else ""
    mask_string = spec.mask_string
    # step 2 (attribute substitution) depends only on the combination: do it once per combination
    filled = [
        t.line.replace(f"[{a.slot}]", a.text).replace(f"[{a.slot}:neg]", a.negated) for t, a in plan.combos
    ]
    for position in wanted.tolist():
        p, c = divmod(position, n_combos)
        s1, s2, unordered, order = plan.pairs[p]
        t, a = plan.combos[c]
        line, ans1 = _insert(filled[c], "1", s1, t.demonym1)
        line, ans2 = _insert(line, "2", s2, t.demonym2)
        line = prefix + smooth_grammar(line, spec.mode)
        if mask_string is not None:
            line = line.replace("[mask]", mask_string)
        context, question, negated = line.split("\t")
        yield Example(
            position, unordered * n_combos + c, order, s1.name, s2.name, s1.cluster, s2.cluster, t.tid, a.cluster,
            a.identity, context, question, negated, ans1, ans2,
        )


@lru_cache(maxsize=32)
def _positions(spec: DatasetSpec, _stamp: tuple) -> np.ndarray | None:
    """The positions of a sample's examples in the unsampled stream (pair × combination, in the authors' loop
    order), ascending; None without a sample (every position, in order). Kept per spec and word-list version."""
    if spec.sample is None and not spec.narrowed:
        return None
    plan = _plan(spec)
    n_combos = len(plan.combos)
    units = np.array([u for _, _, u, _ in plan.pairs], dtype=np.int64)
    mask = _selected(spec, plan).reshape(plan.n_unordered, n_combos)
    pair, combo = np.nonzero(mask[units])  # row-major: pairs in order, combinations in order within a pair
    index = pair * n_combos + combo
    index.setflags(write=False)
    return index


def example_keys(spec: DatasetSpec) -> pd.DataFrame:
    """The ordered examples of ``spec`` without their texts, built without generating them: ``index`` and the
    metric key columns ``subj1, subj2, cluster1, cluster2, tid, attr_cluster, attr`` (the same rows, in the
    same order, as :func:`iter_examples`; a few bytes per example instead of the sentences).

    >>> spec = DatasetSpec("religion", sample=30)
    >>> keys = example_keys(spec)
    >>> [ex.attr for ex in iter_examples(spec)] == keys["attr"].tolist(), len(keys)
    (True, 60)
    """
    import pandas as pd  # imported here: the CLI imports this module for its names, and pandas takes 0.6 s

    plan = _plan(spec)
    n_combos = len(plan.combos)
    index = _positions(spec, _files_stamp(spec))
    index = np.arange(len(plan.pairs) * n_combos, dtype=np.int64) if index is None else index.copy()
    pair, combo = index // n_combos, index % n_combos
    by_pair = {"subj1": [s1.name for s1, _, _, _ in plan.pairs], "subj2": [s2.name for _, s2, _, _ in plan.pairs],
               "cluster1": [s1.cluster for s1, _, _, _ in plan.pairs],
               "cluster2": [s2.cluster for _, s2, _, _ in plan.pairs]}
    by_combo = {"attr_cluster": [a.cluster for _, a in plan.combos], "attr": [a.identity for _, a in plan.combos]}
    frame = pd.DataFrame({"index": index})
    for c, values in by_pair.items():
        frame[c] = _categorical(values, pair)
    frame["tid"] = np.array([t.tid for t, _ in plan.combos], dtype=np.int16)[combo]
    for c, values in by_combo.items():
        frame[c] = _categorical(values, combo)
    return frame


def _categorical(values: list, rows: np.ndarray) -> pd.Categorical:
    """``pd.Categorical(values[rows])`` (sorted categories, only those that occur) without the long object array."""
    used = np.flatnonzero(np.bincount(rows, minlength=len(values)))
    categories, codes = np.unique(np.array(values, dtype=object)[used], return_inverse=True)
    code_of = np.full(len(values), -1, dtype=np.int32)
    code_of[used] = codes
    import pandas as pd  # see example_keys

    return pd.Categorical.from_codes(code_of[rows], categories=pd.Index(categories))


def fingerprint(spec: DatasetSpec) -> str:
    """A hash of everything that determines the examples: parameters, word-list bytes, generator version."""
    h = hashlib.sha256()
    h.update(json.dumps({"spec": spec.as_dict(), "version": GENERATOR_VERSION}, sort_keys=True).encode())
    for kind, names in spec.files.items():
        for name in names:
            h.update(f"{kind}/{name}".encode())
            h.update(wl.list_path(kind, name).read_bytes())
    return h.hexdigest()[:16]
