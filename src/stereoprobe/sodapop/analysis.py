"""SODAPOP's statistics on success-rate vectors (book appendix *Where the code and the paper differ*, SODAPOP).

An, Li, Zhao, Rudinger, "SODAPOP: Open-Ended Discovery of Social Biases in Social Commonsense Reasoning
Models", EACL 2023 (§4–6, Tables 2–4, 9–21); the authors' ``process_distractor_results.py`` and
``p_test.py``. ``sr`` is always a names × words DataFrame of success rates
(:func:`stereoprobe.sodapop.success.sr_matrix`); groups are lists of names (rows of ``sr``).

* **Relative difference** (``process_distractor_results.py``): with S = Σ_{n∈G} SR(w, n) and m = S/|G|, the paper's Eq. 2–4 give
  ``RD = (m1 − m2) / ((m1 + m2)/2)``; the code prints ``RD_code = Σ(G1 − G2) / mean(S1/|G1|, S2/|G2|)``,
  which is |G| × RD for equal sizes (25× in the paper's tables, which most likely show RD_code).
* **Permutation test** (``p_test.py``): two-sided, on d = m1 − m2. ``method="compat"`` reproduces ``p_test.py``
  (the same ``RandomState(10)`` permutations for every word, strict ``>``, p = count/N without +1, so p
  can be 0 and moves in steps of 1/N). ``"sampled"`` is the usual Monte-Carlo p-value (count(≥)+1)/(N+1)
  (Phipson & Smyth 2010), ``"exact"`` enumerates every split. The paper tests only the 30 printed words
  per pair; :func:`rd_table` tests every vocabulary word and adds Benjamini–Hochberg q-values over them.
* **Separability** (``process_distractor_results.py``): binary KMeans on the SR vectors of two groups, accuracy max(acc, 1 − acc).
* **t-SNE** (``process_distractor_results.py``) coordinates of four groups.

>>> sr = pd.DataFrame({"kind": [0.4, 0.5, 0.1, 0.2], "rude": [0.1, 0.1, 0.3, 0.3]},
...                   index=["a1", "a2", "b1", "b2"])
>>> relative_difference(sr, ["a1", "a2"], ["b1", "b2"]).round(3).to_dict()
{'kind': 1.0, 'rude': -1.0}
>>> rd_table(sr, ["a1", "a2"], ["b1", "b2"], method="exact", n_perm=10)[["word", "rd_code", "p"]]
   word  rd_code         p
0  rude     -2.0  0.333333
1  kind      2.0  0.333333
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations
from math import comb
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import MetricsError
from ..paths import data_dir, missing_data_fix
from ..stats import adjust_pvalues

__all__ = [
    "TABLE9_PAIRS", "CODE_KMEANS_PAIRS", "RD_PAIRS", "RD_PAIRS_FIXED",
    "relative_difference", "top_words", "permutation_indices", "permutation_method", "permutation_pvalues", "qvalues",
    "rd_table",
    "kmeans_accuracy", "separability_table", "tsne_coordinates", "reference",
]

Scale = Literal["paper", "code"]
Method = Literal["compat", "sampled", "exact"]
Pair = tuple[str, str]

#: Table 9 (and Table 2, its first 8 rows) of An et al. 2023, in the paper's row order.
TABLE9_PAIRS: tuple[Pair, ...] = (
    ("EA_f", "EA_m"), ("AA_f", "AA_m"), ("HS_f", "HS_m"), ("AS_f", "AS_m"),
    ("EA_f", "AA_f"), ("EA_m", "AA_m"), ("EA_f", "AS_f"), ("EA_m", "AS_m"),
    ("EA_f", "HS_f"), ("EA_m", "HS_m"), ("AA_f", "AS_f"), ("AA_m", "AS_m"),
    ("AA_f", "HS_f"), ("AA_m", "HS_m"), ("HS_f", "AS_f"), ("HS_m", "AS_m"),
)
#: The 18 KMeans pairs of the released code (no HS–AS pairs; two mixed and two reversed duplicates;
#: book appendix *Where the code and the paper differ*, SODAPOP: KMeans pairs).
CODE_KMEANS_PAIRS: tuple[Pair, ...] = (
    ("EA_f", "EA_m"), ("AA_f", "AA_m"), ("HS_f", "HS_m"), ("AS_f", "AS_m"),
    ("EA_f", "AA_f"), ("EA_m", "AA_m"), ("EA_f", "AA_m"), ("EA_m", "AA_f"),
    ("EA_f", "AS_f"), ("EA_m", "AS_m"), ("EA_f", "HS_f"), ("EA_m", "HS_m"),
    ("AA_f", "AS_f"), ("AA_m", "AS_m"), ("AA_f", "HS_f"), ("AA_m", "HS_m"),
    ("HS_f", "AA_f"), ("HS_m", "AA_m"),
)
#: The code's 16 RD/permutation-test pairs, last one (HS_f, AS_m) kept as released (likely a typo;
#: book appendix *Where the code and the paper differ*, SODAPOP: last RD pair).
RD_PAIRS: tuple[Pair, ...] = (
    ("AA_f", "EA_f"), ("AS_f", "EA_f"), ("HS_f", "EA_f"), ("AA_m", "EA_m"),
    ("AS_m", "EA_m"), ("HS_m", "EA_m"), ("AA_f", "AS_f"), ("AA_f", "HS_f"),
    ("HS_f", "AS_f"), ("AA_m", "AS_m"), ("AA_m", "HS_m"), ("HS_m", "AS_m"),
    ("EA_f", "EA_m"), ("AA_f", "AA_m"), ("AS_f", "AS_m"), ("HS_f", "AS_m"),
)
#: :data:`RD_PAIRS` with the last pair read as (HS_f, HS_m).
RD_PAIRS_FIXED: tuple[Pair, ...] = RD_PAIRS[:-1] + (("HS_f", "HS_m"),)

METHODS = ("compat", "sampled", "exact")
#: |d| values within this fraction of a word's largest |SR| count as ties: the float error of a 50-term
#: sum is ~1e-14 of it, so only exact ties (identical splits, repeated SR values) fall inside. The literal
#: loop of ``p_test.py`` decides such ties by rounding noise of its summation order.
_TIE_RTOL = 1e-11
#: Float64 elements per permutation chunk (two chunk-sized arrays are alive at once).
_CHUNK_ELEMS = 1 << 21


def _block(sr: pd.DataFrame, names: Sequence[str], role: str) -> np.ndarray:
    names = list(names)
    missing = [n for n in names if n not in sr.index]
    if missing:
        raise MetricsError(f"{role} names {missing[:3]} are not rows of the SR matrix; pass names from sr.index.")
    if not names or len(set(names)) != len(names):
        raise MetricsError(f"{role} is empty or repeats a name; pass distinct names.")
    # C order: a sum over axis 0 then adds rows one by one, as the code's np.sum over a list of vectors does
    return np.ascontiguousarray(sr.loc[names].to_numpy(dtype=float))


def _groups(sr: pd.DataFrame, g1: Sequence[str], g2: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    if set(g1) & set(g2):
        raise MetricsError(f"Names {sorted(set(g1) & set(g2))[:3]} are in both groups; pass disjoint groups.")
    return _block(sr, g1, "G1"), _block(sr, g2, "G2")


def _rd(sr: pd.DataFrame, g1: Sequence[str], g2: Sequence[str]) -> pd.DataFrame:
    """Group means and both RD scales for the words that pass the code's skip rules."""
    x1, x2 = _groups(sr, g1, g2)
    n1, n2 = len(x1), len(x2)
    s1, s2 = x1.sum(axis=0), x2.sum(axis=0)
    diff = (x1 - x2).sum(axis=0) if n1 == n2 else s1 - s2
    m1, m2 = s1 / n1, s2 / n2
    keep = (s1 != 0) & (s2 != 0) & (diff != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        table = pd.DataFrame({"word": sr.columns, "mean_g1": m1, "mean_g2": m2,
                              "rd_paper": (m1 - m2) / ((m1 + m2) / 2), "rd_code": diff / ((m1 + m2) / 2)})
    return table[keep].reset_index(drop=True)


def _check_scale(scale: str) -> str:
    if scale not in ("paper", "code"):
        raise MetricsError(f"Unknown RD scale {scale!r}; choose 'paper' (Eq. 4) or 'code' (|G| × Eq. 4).")
    return f"rd_{scale}"


def relative_difference(sr: pd.DataFrame, g1_names: Sequence[str], g2_names: Sequence[str],
                        scale: Scale = "paper") -> pd.Series:
    """RD(w, G1, G2) per word, in vocabulary order (``process_distractor_results.py``; An et al. 2023, Eq. 2–4).

    With S_i = Σ_{n∈G_i} SR(w, n) and m_i = S_i/|G_i|:

    * ``"paper"``: RD = (m1 − m2) / ((m1 + m2)/2);
    * ``"code"``:  RD = Σ_k (G1_k − G2_k) / mean(S1/|G1|, S2/|G2|) = |G| × RD_paper for equal sizes.
      The released code subtracts the two groups' arrays, which fails for unequal sizes; then this
      function uses S1 − S2 as the numerator (the code's formula read with sums, not a multiple of RD_paper;
      book appendix *Where the code and the paper differ*, SODAPOP: scale of RD).

    Words are skipped, as in the code, when S1 = 0, S2 = 0 or the numerator is 0. Sums run row by row
    like the code's, so these float tests agree with it bit for bit (a mathematically zero numerator that
    rounds to ±1e-17 is kept, as there).

    >>> sr = pd.DataFrame({"w": [0.75, 0.25], "z": [0.0, 0.5]}, index=["a", "b"])
    >>> relative_difference(sr, ["a"], ["b"], scale="code").to_dict()
    {'w': 1.0}
    """
    column = _check_scale(scale)
    table = _rd(sr, g1_names, g2_names)
    return pd.Series(table[column].to_numpy(), index=pd.Index(table["word"], name="word"), name=column)


def top_words(sr: pd.DataFrame, g1: Sequence[str], g2: Sequence[str], k: int = 15,
              scale: Scale = "paper") -> pd.DataFrame:
    """The k words most associated with each group, as the code prints them (``process_distractor_results.py``;
    Tables 3, 10–21).

    Words are sorted ascending by RD (stable: ties keep vocabulary order); side ``G2`` is the first k
    (most negative first), side ``G1`` the last k reversed (largest first). As in the code, the two
    lists overlap when fewer than 2k words have an RD. Columns: side, rank (1…k), word, rd_paper, rd_code.

    >>> sr = pd.DataFrame({"x": [0.4, 0.1], "y": [0.1, 0.2], "z": [0.3, 0.3]}, index=["a", "b"])
    >>> top_words(sr, ["a"], ["b"], k=1)[["side", "rank", "word"]].values.tolist()
    [['G1', 1, 'x'], ['G2', 1, 'y']]
    """
    column = _check_scale(scale)
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise MetricsError(f"k={k!r} is not a positive integer; pass e.g. k=15.")
    ordered = _rd(sr, g1, g2).sort_values(column, kind="stable").reset_index(drop=True)
    g1_side = ordered.iloc[::-1].head(k).assign(side="G1")
    g2_side = ordered.head(k).assign(side="G2")
    out = pd.concat([g1_side, g2_side], ignore_index=True)
    out["rank"] = out.groupby("side").cumcount() + 1
    return out[["side", "rank", "word", "rd_paper", "rd_code"]]


@lru_cache(maxsize=2)
def _permutations(n_total: int, n_perm: int, seed: int) -> np.ndarray:
    dtype = np.int8 if n_total <= 127 else np.int16 if n_total <= 32767 else np.int32
    rng = np.random.RandomState(seed)
    out = np.empty((n_perm, n_total), dtype=dtype)
    base = np.arange(n_total, dtype=dtype)
    for row in out:  # legacy shuffle draws are sequential with rejection sampling: no closed vectorization
        row[:] = base
        rng.shuffle(row)
    out.flags.writeable = False
    return out


def permutation_indices(n_total: int, n_perm: int, seed: int = 10) -> np.ndarray:
    """``n_perm × n_total`` matrix whose row i is the i-th ``np.random.RandomState(seed).permutation(n_total)``
    (the permutations of ``p_test.py``). The legacy shuffle draws the same numbers whatever the array holds, so row i also orders
    ``np.random.permutation(G1 + G2)`` after ``np.random.seed(seed)``, as in ``p_test.py``. Stored as
    int8/int16, read-only and cached (10⁶ × 50 takes about 2 s and 50 MB).

    >>> rs = np.random.RandomState(10)
    >>> bool((permutation_indices(5, 2, seed=10) == [rs.permutation(5), rs.permutation(5)]).all())
    True
    """
    if not (isinstance(n_total, (int, np.integer)) and n_total >= 2 and isinstance(n_perm, (int, np.integer))
            and n_perm >= 1):
        raise MetricsError(f"Need n_total ≥ 2 and n_perm ≥ 1 integers, got {n_total!r} and {n_perm!r}.")
    return _permutations(int(n_total), int(n_perm), int(seed))


def _splits(method: str, n1: int, n2: int, n_perm: int, seed: int) -> np.ndarray:
    """Rows of G1 positions (into the stacked [G1; G2] rows) for every resampled split."""
    n_total = n1 + n2
    if method == "exact":
        total = comb(n_total, n1)
        if total > n_perm:
            raise MetricsError(f"Exact enumeration needs C({n_total}, {n1}) = {total:.3g} splits, more than "
                               f"n_perm={n_perm}; use method='sampled' or 'compat', or raise n_perm.")
        return np.array(list(combinations(range(n_total), n1)), dtype=np.int16).reshape(total, n1)
    if method == "compat":
        if n1 != n2:
            raise MetricsError(f"method='compat' needs equal group sizes (p_test.py asserts it), got {n1} and {n2}; "
                               "truncate the groups or use method='sampled'.")
        n_perm = min(n_perm, comb(n_total, n1) * 100)  # p_test.py: min(10**6, C(2n, n) · 100)
    return permutation_indices(n_total, n_perm, seed)[:, :n1]


def permutation_method(n1: int, n2: int, n_perm: int, method: str = "auto") -> str:
    """The permutation test to run for groups of n1 and n2 names with a budget of ``n_perm`` splits.

    ``"auto"`` is ``"exact"`` when there are no more than ``n_perm`` splits (C(n1 + n2, n1): every split is
    enumerated and p is exact), else ``"sampled"`` (n_perm random splits). Any other method (``"compat"``,
    ``"sampled"``, ``"exact"``) is returned as given. The chapter and ``stereoprobe sodapop report`` both
    choose the test this way; with 25 names per group, as in the authors' ``p_test.py``, "auto" samples.

    >>> permutation_method(8, 8, 100_000), permutation_method(25, 25, 1_000_000)
    ('exact', 'sampled')
    >>> permutation_method(25, 25, 1_000_000, "compat")
    'compat'
    """
    if method == "auto":
        if not all(isinstance(n, (int, np.integer)) and n >= 1 for n in (n1, n2, n_perm)):
            raise MetricsError(f"Need positive integers for the group sizes and n_perm, got {n1!r}, {n2!r} and "
                               f"{n_perm!r}.")
        return "exact" if comb(int(n1) + int(n2), int(n1)) <= n_perm else "sampled"
    if method not in METHODS:
        raise MetricsError(f"Unknown permutation method {method!r}; choose 'auto' or one of: {', '.join(METHODS)}.")
    return method


def permutation_pvalues(sr: pd.DataFrame, g1: Sequence[str], g2: Sequence[str], words: Sequence[str] | None = None,
                        n_perm: int = 1_000_000, seed: int = 10, method: Method = "compat",
                        chunk: int | None = None) -> pd.Series:
    """Two-sided permutation p-values of d(w) = mean_{G1} SR(w) − mean_{G2} SR(w), one per word
    (An et al. 2023, §4.3; ``p_test.py``; book appendix *Where the code and the paper differ*, SODAPOP:
    permutation test).

    The split A†/B† is the first |G1| / remaining rows of the stacked [G1; G2] under each permutation;
    every word sees the same permutations (the code resets the seed per word). With N splits and d0 the
    observed difference:

    * ``"compat"``: p = #{|d†| > |d0|} / N with N = min(n_perm, C(2n, n)·100) (10⁶ for n = 25); equal sizes.
    * ``"sampled"``: p = (#{|d†| ≥ |d0|} + 1) / (N + 1), N = n_perm.
    * ``"exact"``: all C(n1+n2, n1) splits (error if more than n_perm), p = #{|d†| ≥ |d0|} / C.

    Ties are decided with a tolerance of 1e-11 × max|SR(w)| (see ``_TIE_RTOL``); otherwise ``"compat"``
    equals the literal loop. Vectorized: group sums of a chunk of splits are one product of a 0/1
    membership matrix with the SR block. ``chunk`` = splits per chunk (default: ~2M matrix elements).

    >>> sr = pd.DataFrame({"w": [1.0, 0.9, 0.0, 0.1]}, index=list("abcd"))
    >>> permutation_pvalues(sr, ["a", "b"], ["c", "d"], method="exact", n_perm=6).round(4).tolist()
    [0.3333]
    """
    if method not in METHODS:
        raise MetricsError(f"Unknown permutation method {method!r}; choose one of: {', '.join(METHODS)}.")
    if not (isinstance(n_perm, (int, np.integer)) and n_perm >= 1):
        raise MetricsError(f"n_perm={n_perm!r} is not a positive integer; pass e.g. n_perm=1_000_000.")
    if chunk is not None and not (isinstance(chunk, (int, np.integer)) and chunk >= 1):
        raise MetricsError(f"chunk={chunk!r} is not a positive integer; pass e.g. chunk=10_000 or leave it None.")
    if words is not None:
        missing = [w for w in words if w not in sr.columns]
        if missing:
            raise MetricsError(f"Words {missing[:3]} are not columns of the SR matrix; pass vocabulary words.")
        sr = sr[list(words)]
    x1, x2 = _groups(sr, g1, g2)
    n1, n2 = len(x1), len(x2)
    x = np.vstack([x1, x2])
    members = _splits(method, n1, n2, int(n_perm), seed)
    n_splits = len(members)
    total = x.sum(axis=0)
    d0 = np.abs(x1.mean(axis=0) - x2.mean(axis=0))
    tol = _TIE_RTOL * np.abs(x).max(axis=0, initial=0.0)
    above, at_least = d0 + tol, d0 - tol
    step = chunk or max(1, _CHUNK_ELEMS // max(x.shape[1], x.shape[0]))
    count = np.zeros(x.shape[1], dtype=np.int64)
    for start in range(0, n_splits, step):
        rows = members[start:start + step]
        membership = np.zeros((len(rows), len(x)))
        np.put_along_axis(membership, rows.astype(np.intp), 1.0, axis=1)
        s1 = membership @ x
        d = np.abs(s1 / n1 - (total - s1) / n2)
        count += (d > above).sum(axis=0) if method == "compat" else (d >= at_least).sum(axis=0)
    if method == "compat":
        p = count / n_splits
    elif method == "sampled":
        p = (count + 1) / (n_splits + 1)
    else:
        p = count / n_splits
    return pd.Series(p, index=pd.Index(sr.columns, name="word"), name="p")


def qvalues(p) -> np.ndarray | pd.Series:
    """Benjamini–Hochberg (1995) adjusted p-values (FDR q-values) via statsmodels; a Series keeps its index.

    q_(i) = min_{j ≥ i} min(1, m · p_(j) / j) over the m p-values sorted ascending.

    >>> qvalues([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.04, 0.04]
    """
    q = adjust_pvalues(np.asarray(p, dtype=float), "fdr_bh")
    return pd.Series(q, index=p.index, name="q") if isinstance(p, pd.Series) else q


def rd_table(sr: pd.DataFrame, g1: Sequence[str], g2: Sequence[str], words: Sequence[str] | None = None,
             n_perm: int = 1_000_000, method: Method = "compat", seed: int = 10) -> pd.DataFrame:
    """Every word with an RD (skip rules of :func:`relative_difference`), with both RD scales, its permutation p-value and BH q-value.

    Columns: word, side (G1 if RD > 0), mean_g1, mean_g2, rd_paper, rd_code, p, q; sorted ascending by
    rd_paper (the code's order: the G2 words first). ``words`` restricts the table to some vocabulary
    words. Unlike the paper, which tests only the 15 + 15 printed words per pair, all listed words are
    tested and q controls the false discovery rate over them (Benjamini & Hochberg 1995); under
    ``"compat"`` p can be 0, so report it as p < 1/N.

    >>> sr = pd.DataFrame({"w": [0.5, 0.4, 0.1, 0.2]}, index=list("abcd"))
    >>> rd_table(sr, ["a", "b"], ["c", "d"], method="sampled", n_perm=200)[["word", "side", "rd_code"]].values.tolist()
    [['w', 'G1', 2.0]]
    """
    table = _rd(sr, g1, g2)
    if words is not None:
        missing = [w for w in words if w not in sr.columns]
        if missing:
            raise MetricsError(f"Words {missing[:3]} are not columns of the SR matrix; pass vocabulary words.")
        table = table[table["word"].isin(list(words))]
    if table.empty:
        raise MetricsError("No word has a relative difference for these groups (all sums or differences are 0); "
                           "check the groups and the SR matrix.")
    p = permutation_pvalues(sr, g1, g2, table["word"].tolist(), n_perm=n_perm, seed=seed, method=method)
    table = table.assign(side=np.where(table["rd_paper"] > 0, "G1", "G2"), p=p.to_numpy(), q=qvalues(p.to_numpy()))
    table = table.sort_values("rd_paper", kind="stable").reset_index(drop=True)
    return table[["word", "side", "mean_g1", "mean_g2", "rd_paper", "rd_code", "p", "q"]]


#: The columns of :func:`rd_table` (and of the empty table :func:`rd_between` returns when no word differs).
RD_COLUMNS = ("word", "side", "mean_g1", "mean_g2", "rd_paper", "rd_code", "p", "q")
#: The permutation tests' seed: the authors' 10 (``p_test.py``).
PERMUTATION_SEED = 10


def permutation_options(n1: int, n2: int, *, n_perm: int, p_method: str = "auto", seed: int = PERMUTATION_SEED) -> dict:
    """Keyword arguments of :func:`rd_table` for groups of n1 and n2 names: the test chosen by
    :func:`permutation_method` and the seed (the authors' 10)."""
    return dict(n_perm=n_perm, method=permutation_method(n1, n2, n_perm, p_method), seed=seed)


def rd_between(sr: pd.DataFrame, groups: Mapping[str, Sequence[str]], g1: str, g2: str, *, n_perm: int,
               p_method: str = "auto", seed: int = PERMUTATION_SEED) -> tuple[pd.DataFrame, str | None]:
    """:func:`rd_table` of groups g1 vs g2 with :func:`permutation_options`, and None; on a grid so small that no
    word's success rates differ between the groups, an empty table with :data:`RD_COLUMNS` and why. The book's
    SODAPOP chapter and :func:`stereoprobe.sodapop.report` both compare groups this way."""
    try:
        settings = permutation_options(len(groups[g1]), len(groups[g2]), n_perm=n_perm, p_method=p_method, seed=seed)
        return rd_table(sr, groups[g1], groups[g2], **settings), None
    except MetricsError as err:
        return pd.DataFrame(columns=list(RD_COLUMNS)), f"{g1} vs {g2}: {err}"


def kmeans_accuracy(X, y_true, seed: int = 0) -> float:
    """Binary KMeans "classification accuracy" (``process_distractor_results.py``; An et al. 2023, Table 2/9).

    ``KMeans(n_clusters=2, random_state=seed, n_init=10, algorithm="elkan")`` (the scikit-learn 1.0
    defaults of the original run: k-means++, 10 restarts, Elkan for dense data), fitted and predicted on
    X without scaling; acc = mean(pred = y_true) aligned as max(acc, 1 − acc), so chance is 0.5 (computed
    as max(k, n − k)/n, which is exact; the code's 1 − acc can be 1 ulp off, e.g. 0.5800000000000001).

    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> kmeans_accuracy(X, [1, 1, 0, 0]), kmeans_accuracy(X, [0, 0, 1, 1])
    (1.0, 1.0)
    """
    from sklearn.cluster import KMeans

    X = np.asarray(X, dtype=float)
    y = np.asarray(y_true)
    if X.ndim != 2 or y.shape != (len(X),) or not np.isin(y, (0, 1)).all() or len(X) < 2:
        raise MetricsError(f"Need a 2-D X (≥ 2 rows) and one 0/1 label per row, got X {X.shape} and y {y.shape}.")
    pred = KMeans(n_clusters=2, random_state=seed, n_init=10, algorithm="elkan").fit(X).predict(X)
    hits = int(np.sum(pred == y))
    return max(hits, len(y) - hits) / len(y)


def separability_table(sr: pd.DataFrame, groups: Mapping[str, Sequence[str]],
                       pairs: Sequence[Pair] = TABLE9_PAIRS, seed: int = 0) -> pd.DataFrame:
    """KMeans accuracy for each pair of groups (as the authors' code computes it): X = [G1 rows; G2 rows], y = [1]·|G1| + [0]·|G2|.

    ``groups`` maps group keys to names (e.g. :func:`stereoprobe.sodapop.names.analysis_groups`). Columns:
    pair ("G1-G2"), g1, g2, accuracy; compare with ``reference("table9")``.

    >>> sr = pd.DataFrame({"w": [0.0, 0.1, 0.9, 1.0]}, index=list("abcd"))
    >>> separability_table(sr, {"X": ["a", "b"], "Y": ["c", "d"]}, pairs=[("X", "Y")]).values.tolist()
    [['X-Y', 'X', 'Y', 1.0]]
    """
    rows = []
    for g1, g2 in pairs:
        missing = [g for g in (g1, g2) if g not in groups]
        if missing:
            raise MetricsError(f"Groups {missing} are not in groups; pass e.g. names.analysis_groups().")
        x1, x2 = _groups(sr, groups[g1], groups[g2])
        acc = kmeans_accuracy(np.vstack([x1, x2]), [1] * len(x1) + [0] * len(x2), seed=seed)
        rows.append((f"{g1}-{g2}", g1, g2, acc))
    return pd.DataFrame(rows, columns=["pair", "g1", "g2", "accuracy"])


def tsne_coordinates(sr: pd.DataFrame, groups: Mapping[str, Sequence[str]], g1_race: str, g2_race: str,
                     seed: int = 10) -> pd.DataFrame:
    """2-D t-SNE of the SR vectors of four groups (``process_distractor_results.py``; An et al. 2023, Fig. 4–5, 8–13).

    Rows are [G1 female; G2 female; G1 male; G2 male] (group keys ``{race}_f`` / ``{race}_m``), embedded
    by ``TSNE(n_components=2, learning_rate="auto", init="random", random_state=seed,
    perplexity=min(30, n − 1))`` (perplexity 30, the default, for the paper's 100 names). Columns: name,
    group, x, y.
    """
    from sklearn.manifold import TSNE

    keys = [f"{g1_race}_f", f"{g2_race}_f", f"{g1_race}_m", f"{g2_race}_m"]
    missing = [k for k in keys if k not in groups]
    if missing:
        raise MetricsError(f"Groups {missing} are not in groups; pass race keys such as 'EA' and 'AA'.")
    names = [n for k in keys for n in groups[k]]
    X = _block(sr, names, "The t-SNE")
    if len(X) < 2:
        raise MetricsError("t-SNE needs at least 2 names; pass larger groups.")
    xy = TSNE(n_components=2, learning_rate="auto", init="random", random_state=seed,
              perplexity=min(30.0, len(X) - 1.0)).fit_transform(X)
    return pd.DataFrame({"name": names, "group": [k for k in keys for _ in groups[k]], "x": xy[:, 0], "y": xy[:, 1]})


_REFERENCES = {"table9": "paper_table9.tsv", "top_words": "paper_top_words.tsv"}


def reference(kind: Literal["table9", "top_words"]) -> pd.DataFrame:
    """Numbers printed in An et al. 2023, as transcribed in ``data/sodapop/reference``.

    * ``"table9"``: KMeans accuracies, 16 pairs (Table 9's order; Table 2 = first 8 rows, columns bert and
      inlp_race) × 8 models: bert, inlp_race, inlp_gender, sd_race, sd_gender, dropout, cda_race, cda_gender.
    * ``"top_words"``: table, setting, g1, g2, side, rank, word, rd, p for the top-5 words per side of
      Tables 3, 4, 6, 13, 21 and ranks 6–15 of Table 10 (which extends Table 3; its rd/p were not
      transcribed, left empty). rd is as printed (most likely the code's 25× scale: book appendix *Where
      the code and the paper differ*, SODAPOP: scale of RD); p is empty where not printed.

    >>> reference("table9").shape, len(reference("top_words"))
    ((16, 11), 70)
    """
    if kind not in _REFERENCES:
        raise MetricsError(f"Unknown reference {kind!r}; choose 'table9' or 'top_words'.")
    path = data_dir() / "sodapop" / "reference" / _REFERENCES[kind]
    if not path.is_file():
        raise MetricsError(f"{path}: reference table not found; {missing_data_fix()}.")
    return pd.read_csv(path, sep="\t", dtype={"table": str, "word": str}, keep_default_na=False,
                       na_values={"rd": [""], "p": [""]})
