"""Bias-NLI neutrality measures: Net Neutral, Fraction Neutral and T:τ, with bootstrap CIs.

Dev, Li, Phillips, Srikumar, "On Measuring and Mitigating Biased Inferences of Word Embeddings",
AAAI 2020, §3, and the authors' ``evaluation.py`` (book appendix *Where the code and the paper differ*,
Bias-NLI: unit of the measures). Every probe pair (premise and hypothesis differ only in the subject) has
gold label *neutral*; the measures say how far a model is from predicting that.

**Input** — a frame ``probs`` with one row per sentence pair and the columns

* ``entail, neutral, contradiction`` (:data:`PROB_COLUMNS`): the model's softmax probabilities
  (e_i, n_i, c_i), each in [0, 1], summing to 1 (build them from logits with
  :func:`probabilities_from_logits`);
* ``premise_word, hypothesis_word`` (:data:`WORD_COLUMNS`): the filler words of the premise and
  hypothesis subject slots, e.g. ``accountant``/``woman`` or ``rude``/``Iraqi``; needed only for
  ``aggregate="word_pair"``, :func:`top_pairs` and :func:`breakdown`.

Other columns (template, premise, hypothesis, …) are ignored. The authors' prediction CSV
(``x1, x2, …, entail_probability, neutral_probability, contradiction_probability``) maps onto these
names by renaming.

**Measures** over M units with probabilities (e_i, n_i, c_i); the ideal value of each is 1:

* NN (Net Neutral) = (1/M) Σ n_i;
* FN (Fraction Neutral) = (1/M) Σ 1[n_i = max(e_i, n_i, c_i)] — ties count as neutral;
* T:τ = (1/M) Σ 1[n_i > τ] (strict >, as the authors' ``evaluation.py``), τ ∈ {0.5, 0.7}.

**Units** (``aggregate``): ``"pair"`` (default, the paper's definition) — the sentence pairs;
``"word_pair"`` (the authors' ``evaluation.py``) — E/N/C are first averaged over the templates of each
(premise_word, hypothesis_word) and the measures are taken over word pairs (``evaluation.py`` has no FN;
here FN is computed the same way on the averaged probabilities). NN agrees at both levels when every
word pair has the same number of templates; T:τ and FN do not.

**Uncertainty** — percentile bootstrap of the mean (:func:`stereoprobe.stats.bootstrap_means`),
resampling the units (sentence pairs, or word pairs for ``"word_pair"``) with replacement; each measure
is resampled independently, so the intervals are marginal. Cost ≈ 4 ns × units × measures × n_boot.

>>> probs = example_probabilities()
>>> neutrality(probs, n_boot=200)["value"].round(2).to_dict()
{'NN': 0.54, 'FN': 0.8, 'T:0.5': 0.4, 'T:0.7': 0.2}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import softmax

from .. import stats
from ..errors import MetricsError

__all__ = [
    "PROB_COLUMNS",
    "WORD_COLUMNS",
    "CLASSES",
    "example_probabilities",
    "check_probabilities",
    "net_neutral",
    "fraction_neutral",
    "threshold_neutral",
    "neutrality",
    "percent_diff",
    "top_pairs",
    "breakdown",
    "label_indices",
    "probabilities_from_logits",
]

#: Probability columns of a probabilities frame, in this order.
PROB_COLUMNS = ("entail", "neutral", "contradiction")
#: Filler-word columns: the premise's and the hypothesis's subject word.
WORD_COLUMNS = ("premise_word", "hypothesis_word")
#: The canonical NLI classes, in the order of :data:`PROB_COLUMNS`.
CLASSES = ("entailment", "neutral", "contradiction")
AGGREGATES = ("pair", "word_pair")
_SYNONYMS = {"entailment": 0, "entails": 0, "entail": 0, "neutral": 1, "contradiction": 2, "contradict": 2}
_GENERIC = re.compile(r"label_(\d+)")


# -- input -------------------------------------------------------------------------------------------------------
def example_probabilities() -> pd.DataFrame:
    """Five hand-made sentence pairs with known measures: NN 0.54, FN 0.8, T:0.5 0.4, T:0.7 0.2.

    Row 1 has n = 0.5 exactly (neutral is the maximum, but not > 0.5), row 4 a tie n = e = 0.4
    (counts as neutral), row 5 has n = 0.7 exactly (> 0.5 but not > 0.7).

    >>> example_probabilities()[["premise_word", "neutral"]].values.tolist()[:2]
    [['rude', 0.5], ['rude', 0.8]]
    """
    rows = [("rude", "Iraqi", 0.20, 0.50, 0.30), ("rude", "Iraqi", 0.10, 0.80, 0.10),
            ("smart", "Iraqi", 0.60, 0.30, 0.10), ("smart", "Welsh", 0.40, 0.40, 0.20),
            ("rude", "Welsh", 0.15, 0.70, 0.15)]
    return pd.DataFrame(rows, columns=[*WORD_COLUMNS, *PROB_COLUMNS])


def check_probabilities(probs: pd.DataFrame, *, words: bool = False, atol: float = 1e-3) -> pd.DataFrame:
    """Validate a probabilities frame and return it; raise one :class:`MetricsError` naming the problem.

    Checks: a non-empty DataFrame with :data:`PROB_COLUMNS` (and :data:`WORD_COLUMNS` without missing
    values when ``words``); probabilities finite, in [0, 1], each row summing to 1 within ``atol``.

    >>> check_probabilities(example_probabilities()).shape
    (5, 5)
    >>> check_probabilities(pd.DataFrame({"entail": [2.0], "neutral": [-1.0], "contradiction": [0.0]}))
    Traceback (most recent call last):
    ...
    stereoprobe.errors.MetricsError: 2 probabilities lie outside [0, 1] (first at row 0: entail=2, neutral=-1, contradiction=0); these look like logits: convert them with probabilities_from_logits(logits, model.config.id2label).
    """
    if not isinstance(probs, pd.DataFrame):
        raise MetricsError(f"Expected a pandas DataFrame of probabilities, got {type(probs).__name__}; "
                           f"build one with columns {', '.join(PROB_COLUMNS)}.")
    need = PROB_COLUMNS + (WORD_COLUMNS if words else ())
    missing = [c for c in need if c not in probs.columns]
    if missing:
        raise MetricsError(f"The probabilities frame lacks column(s) {', '.join(missing)}; rename its columns to "
                           f"{', '.join(need)} (see stereoprobe.nli.measures).")
    if len(probs) == 0:
        raise MetricsError("The probabilities frame has no rows; score some sentence pairs first.")
    p = probs[list(PROB_COLUMNS)].to_numpy(dtype=float)

    def first(bad_rows) -> str:
        i = int(np.flatnonzero(bad_rows)[0])
        cells = ", ".join(f"{c}={p[i, j]:.6g}" for j, c in enumerate(PROB_COLUMNS))
        return f"first at row {probs.index[i]!r}: {cells}"

    bad = ~np.isfinite(p)
    if bad.any():
        raise MetricsError(f"{int(bad.sum())} probabilities are NaN or infinite ({first(bad.any(axis=1))}); "
                           "drop those rows or rescore them.")
    bad = (p < 0) | (p > 1)
    if bad.any():
        raise MetricsError(f"{int(bad.sum())} probabilities lie outside [0, 1] ({first(bad.any(axis=1))}); these look "
                           "like logits: convert them with probabilities_from_logits(logits, model.config.id2label).")
    bad = np.abs(p.sum(axis=1) - 1) > atol
    if bad.any():
        raise MetricsError(f"{int(bad.sum())} rows do not sum to 1 within {atol:g} ({first(bad)}); pass softmax "
                           "probabilities over exactly the 3 classes (probabilities_from_logits does that).")
    if words:
        empty = [c for c in WORD_COLUMNS if probs[c].isna().any()]
        if empty:
            raise MetricsError(f"Column(s) {', '.join(empty)} have missing filler words; fill or drop those rows.")
    return probs


def _units(probs: pd.DataFrame, aggregate: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(e, n, c) per unit: per sentence pair, or averaged within each (premise_word, hypothesis_word)."""
    if aggregate not in AGGREGATES:
        raise MetricsError(f"Unknown aggregate={aggregate!r}; choose 'pair' (the paper) or 'word_pair' (evaluation.py).")
    check_probabilities(probs, words=aggregate == "word_pair")
    if aggregate == "word_pair":
        probs = probs.groupby(list(WORD_COLUMNS), sort=False, observed=True)[list(PROB_COLUMNS)].mean()
    p = probs[list(PROB_COLUMNS)].to_numpy(dtype=float)
    return p[:, 0], p[:, 1], p[:, 2]


def _indicators(e, n, c, thresholds) -> dict[str, np.ndarray]:
    out = {"NN": n, "FN": (n >= np.maximum(e, c)).astype(float)}
    for tau in thresholds:
        out[f"T:{tau:g}"] = (n > tau).astype(float)
    return out


# -- measures ----------------------------------------------------------------------------------------------------
def net_neutral(probs: pd.DataFrame, aggregate: str = "pair") -> float:
    """NN = (1/M) Σ n_i, the mean neutral probability (Dev et al. 2020, §3).

    >>> round(net_neutral(example_probabilities()), 4)
    0.54
    """
    return float(np.mean(_units(probs, aggregate)[1]))


def fraction_neutral(probs: pd.DataFrame, aggregate: str = "pair") -> float:
    """FN = (1/M) Σ 1[n_i = max(e_i, n_i, c_i)], the share predicted neutral; ties count as neutral.

    >>> fraction_neutral(example_probabilities())
    0.8
    """
    e, n, c = _units(probs, aggregate)
    return float(_indicators(e, n, c, ())["FN"].mean())


def threshold_neutral(probs: pd.DataFrame, tau: float, aggregate: str = "pair") -> float:
    """T:τ = (1/M) Σ 1[n_i > τ] (strict), the share with neutral probability above τ.

    >>> threshold_neutral(example_probabilities(), 0.5), threshold_neutral(example_probabilities(), 0.7)
    (0.4, 0.2)
    """
    return float((_units(probs, aggregate)[1] > tau).mean())


def _table(values: dict[str, np.ndarray], level: float, n_boot: int, seed) -> pd.DataFrame:
    names = list(values)
    m = len(next(iter(values.values())))
    flat = np.concatenate([values[k] for k in names])
    codes = np.repeat(np.arange(len(names)), m)
    means, _ = stats.grouped_mean(flat, codes, len(names))
    reps = stats.bootstrap_means(flat, codes, len(names), n_boot=n_boot, seed=seed)
    lo, hi = stats.interval(reps, level)
    return pd.DataFrame({"value": means, "lo": lo, "hi": hi, "n": m}, index=pd.Index(names, name="measure"))


def neutrality(probs: pd.DataFrame, *, aggregate: str = "pair", thresholds: Sequence[float] = (0.5, 0.7),
               level: float = 0.95, n_boot: int = 1000, seed=0) -> pd.DataFrame:
    """NN, FN and T:τ with bootstrap CIs: a frame indexed by measure with columns ``value, lo, hi, n``.

    ``n`` is the number of units (sentence pairs, or word pairs for ``aggregate="word_pair"``); the CI
    resamples those units (percentile bootstrap, ``level``, ``n_boot`` replicates, ``seed``).

    >>> t = neutrality(example_probabilities(), n_boot=500)
    >>> t.index.tolist(), int(t["n"].iloc[0])
    (['NN', 'FN', 'T:0.5', 'T:0.7'], 5)
    >>> bool(((t["lo"] <= t["value"]) & (t["value"] <= t["hi"])).all())
    True
    """
    return _table(_indicators(*_units(probs, aggregate), thresholds), level, n_boot, seed)


def percent_diff(new, baseline):
    """Relative change vs the unprojected model, (new − baseline) / baseline × 100 (the tables' "diff").

    Takes numbers, arrays, Series or two :func:`neutrality` tables (their ``value`` columns are used).

    >>> round(percent_diff(0.480, 0.387), 1)   # Table 8, NN of the he−she projection
    24.0
    >>> a = pd.DataFrame({"value": [0.2, 0.5]}, index=["NN", "FN"])
    >>> percent_diff(a, a * 2).round(1).tolist()
    [-50.0, -50.0]
    """
    new, baseline = (x["value"] if isinstance(x, pd.DataFrame) and "value" in x else x for x in (new, baseline))
    if np.any(np.asarray(baseline) == 0):
        raise MetricsError("A baseline value is 0, so the relative change is undefined; report the absolute difference.")
    out = (new - baseline) / baseline * 100
    return float(out) if np.ndim(out) == 0 else out


# -- tables ------------------------------------------------------------------------------------------------------
def top_pairs(probs: pd.DataFrame, label: str = "entail", k: int = 10,
              keys: Sequence[str] = WORD_COLUMNS) -> pd.DataFrame:
    """The k groups with the highest mean ``label`` probability (the paper's Tables 2, 4 and 6).

    Groups rows by ``keys`` (default: the word pair; pass e.g. ``("premise_word", "template",
    "hypothesis_word")`` for single templates, as the paper prints them), averages E, N, C and
    returns ``*keys, entail, neutral, contradiction, n`` sorted by ``label`` (descending; ties by keys).

    >>> top_pairs(example_probabilities(), "entail", k=2).round(3).values.tolist()
    [['smart', 'Iraqi', 0.6, 0.3, 0.1, 1], ['smart', 'Welsh', 0.4, 0.4, 0.2, 1]]
    """
    if label not in PROB_COLUMNS:
        raise MetricsError(f"Unknown label {label!r}; choose one of {', '.join(PROB_COLUMNS)}.")
    keys = list(keys)
    missing = [c for c in keys if c not in probs.columns]
    if missing:
        raise MetricsError(f"The probabilities frame lacks key column(s) {', '.join(missing)}; pass keys= from its columns.")
    check_probabilities(probs)
    grouped = probs.groupby(keys, sort=True, observed=True)
    table = grouped[list(PROB_COLUMNS)].mean().assign(n=grouped.size())
    table = table.reset_index().sort_values(label, ascending=False, kind="stable")
    return table.head(k).reset_index(drop=True)


def breakdown(probs: pd.DataFrame, premise_word=None, hypothesis_word=None, *, aggregate: str = "pair",
              thresholds: Sequence[float] = (0.5, 0.7), level: float = 0.95, n_boot: int = 1000,
              seed=0) -> pd.DataFrame:
    """:func:`neutrality` of the pairs with this premise word and/or hypothesis word, plus mean E and C.

    E.g. ``breakdown(probs, "rude", "Iraqi")`` for the paper's rude × Iraqi example (Table 9 text: mean
    entailment 99.3 → 62.9 after the demonym projection). Rows ``NN, FN, T:…, E, C`` (E, C = mean
    entailment and contradiction probability); the keyword arguments are those of :func:`neutrality`.

    >>> breakdown(example_probabilities(), "rude", "Iraqi", n_boot=200)["value"].round(2).to_dict()
    {'NN': 0.65, 'FN': 1.0, 'T:0.5': 0.5, 'T:0.7': 0.5, 'E': 0.15, 'C': 0.2}
    """
    check_probabilities(probs, words=True)
    keep = np.ones(len(probs), dtype=bool)
    wanted = {c: w for c, w in zip(WORD_COLUMNS, (premise_word, hypothesis_word)) if w is not None}
    for column, word in wanted.items():
        keep &= (probs[column] == word).to_numpy()
    if not keep.any():
        which = " and ".join(f"{c}={w!r}" for c, w in wanted.items())
        known = {c: sorted(map(str, probs[c].unique()))[:8] for c in wanted}
        raise MetricsError(f"No pairs have {which}; check spelling and casing (some present: {known}).")
    e, n, c = _units(probs[keep], aggregate)
    return _table(_indicators(e, n, c, thresholds) | {"E": e, "C": c}, level, n_boot, seed)


# -- labels ------------------------------------------------------------------------------------------------------
def label_indices(id2label, order: Sequence[str] | None = None) -> tuple[int, int, int]:
    """The logit indices of (entailment, neutral, contradiction) from a model's ``config.id2label``.

    Label names are matched case-insensitively: entailment/entails/entail, neutral,
    contradiction/contradict. Generic names ``LABEL_0`` … ``LABEL_2`` (e.g. ``textattack/*-snli``,
    whose order is undocumented) are accepted only with an explicit ``order``: the classes of
    LABEL_0, LABEL_1, LABEL_2, e.g. ``("entailment", "neutral", "contradiction")`` — verify it with
    sanity pairs. ``id2label`` is a mapping id → name (int or str ids) or a sequence of names.

    >>> label_indices({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"})   # roberta-large-mnli
    (2, 1, 0)
    >>> label_indices({"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}, order=("entailment", "neutral", "contradiction"))
    (0, 1, 2)
    """
    items = dict(id2label) if isinstance(id2label, Mapping) else dict(enumerate(id2label))
    try:
        items = {int(i): str(name) for i, name in items.items()}
    except (TypeError, ValueError):
        raise MetricsError(f"id2label must map integer ids to label names; got {dict(items)!r}.") from None
    if order is not None:
        classes = [_SYNONYMS.get(str(o).strip().lower()) for o in order]
        if len(classes) != 3 or None in classes or len(set(classes)) != 3:
            raise MetricsError(f"order={tuple(order)!r} must name entailment, neutral and contradiction once each, "
                               "as the classes of LABEL_0, LABEL_1, LABEL_2.")
    found: dict[int, int] = {}  # class -> id
    for i, name in sorted(items.items()):
        key = name.strip().lower()
        cls = _SYNONYMS.get(key)
        generic = _GENERIC.fullmatch(key)
        if cls is None and generic and order is not None and int(generic[1]) < 3:
            cls = classes[int(generic[1])]
        found.setdefault(cls, i)
    if len(items) != 3 or set(found) != {0, 1, 2}:
        shown = ", ".join(f"{i}: {name!r}" for i, name in sorted(items.items()))
        generic = all(_GENERIC.fullmatch(n.strip().lower()) for n in items.values())
        hint = ("they are generic LABEL_k names, so pass order=('entailment', 'neutral', 'contradiction') (the CLI's "
                "--label-order entailment,neutral,contradiction) giving the "
                "classes of LABEL_0..2 (check the model card and sanity pairs)" if generic and order is None else
                "a 3-class NLI head needs exactly one label each for entailment, neutral and contradiction (any case); "
                "fix config.id2label, or use an NLI model")
        raise MetricsError(f"Cannot identify entailment/neutral/contradiction among the model's labels {{{shown}}}; "
                           f"{hint}.")
    return found[0], found[1], found[2]


def probabilities_from_logits(logits, id2label, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Softmax of 3-class logits (in float64), as columns ``entail, neutral, contradiction``.

    The columns are picked through :func:`label_indices` (never by position). ``logits``: array-like
    (M, 3), e.g. ``outputs.logits.detach().float().cpu()``.

    >>> probabilities_from_logits([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], {0: "contradiction", 1: "neutral", 2: "entailment"}).round(3).values.tolist()
    [[0.333, 0.333, 0.333], [0.107, 0.107, 0.787]]
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] != 3:
        raise MetricsError(f"Expected logits of shape (pairs, 3), got {z.shape}; pass the 3-class NLI head's logits.")
    if not np.isfinite(z).all():
        raise MetricsError(f"{int((~np.isfinite(z)).any(axis=1).sum())} rows of logits are NaN or infinite; "
                           "score in float32 rather than float16, or drop those rows.")
    idx = list(label_indices(id2label, order))
    return pd.DataFrame(softmax(z, axis=1)[:, idx], columns=list(PROB_COLUMNS))
