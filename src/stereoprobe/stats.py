"""Bootstrap confidence intervals and multiple-testing control, shared by the three papers.

Everything here is vectorized over *many groups at once*: a metric such as UnQover's γ(x, a) is a
mean of C values inside each of thousands of cells, and its uncertainty is a bootstrap of each cell
mean. The functions take a flat array of values plus an integer group code per value, so the same
code serves UnQover cells, Bias-NLI templates and SODAPOP name groups.

Resampling model (state it next to every CI you report): the **percentile bootstrap of the mean**
(Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13). In each replicate, every group
independently draws as many values as it has, uniformly with replacement, from its own values; the
replicate statistic is the group mean. Groups are resampled independently of one another. This treats
the values inside a group as exchangeable draws; if they share structure (the same partner subject or
template across cells), the intervals describe sampling variability of the values, not of that
structure.

>>> import numpy as np
>>> values = np.array([0.1, 0.3, 0.2, -0.4, -0.2, -0.3, -0.1])
>>> groups = np.array([0, 0, 0, 1, 1, 1, 1])
>>> table = bootstrap_mean_ci(values, groups, n_boot=2000, seed=0)
>>> table[["group", "mean", "n"]].round(3).to_dict("list")
{'group': [0, 1], 'mean': [0.2, -0.25], 'n': [3, 4]}
>>> bool((table["lo"] <= table["mean"]).all() and (table["mean"] <= table["hi"]).all())
True
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from .errors import MetricsError

__all__ = [
    "Estimate",
    "group_codes",
    "grouped_mean",
    "bootstrap_means",
    "interval",
    "bootstrap_mean_ci",
    "no_interval_from_one",
    "bootstrap_statistic",
    "adjust_pvalues",
]

#: Upper bound on the number of resampled values held in memory at once (about 3 arrays of this many
#: 8-byte numbers). It fixes the chunking, and therefore which random numbers go where: results are
#: reproducible for a given seed, data and numpy version.
_BLOCK = 1 << 22

METHODS = ("percentile", "basic", "bc")


class Estimate(NamedTuple):
    """A point estimate with its confidence interval (``lo``, ``hi``)."""

    value: float
    lo: float
    hi: float


def _check_level(level: float) -> float:
    if not (isinstance(level, (int, float)) and 0 < float(level) < 1):
        raise MetricsError(f"Confidence level {level!r} is not a number in (0, 1); pass e.g. 0.95.")
    return float(level)


def _check_n_boot(n_boot: int) -> int:
    if not (isinstance(n_boot, (int, np.integer)) and n_boot >= 1):
        raise MetricsError(f"n_boot={n_boot!r} is not a positive integer; pass e.g. n_boot=1000.")
    return int(n_boot)


def _prepare(values, codes, n_groups):
    values = np.asarray(values, dtype=float).ravel()
    codes = np.asarray(codes).ravel()
    if codes.shape != values.shape:
        raise MetricsError(f"Got {values.size} values but {codes.size} group codes; pass one code per value.")
    if values.size and not np.isfinite(values).all():
        bad = int((~np.isfinite(values)).sum())
        raise MetricsError(f"{bad} values are NaN or infinite; drop or fix them before bootstrapping.")
    if codes.size and (not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0):
        raise MetricsError("Group codes must be non-negative integers; use stats.group_codes(labels) to make them.")
    codes = codes.astype(np.intp, copy=False)
    top = int(codes.max()) + 1 if codes.size else 0
    if n_groups is None:
        n_groups = top
    elif n_groups < top:
        raise MetricsError(f"n_groups={n_groups} is smaller than the largest group code + 1 ({top}); omit n_groups.")
    return values, codes, int(n_groups)


def group_codes(groups) -> tuple[np.ndarray, pd.Index]:
    """Integer codes (0 … k−1, in sorted label order) and the labels, for any array of group labels.

    >>> codes, labels = group_codes(["b", "a", "b"])
    >>> codes.tolist(), labels.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    codes, uniques = pd.factorize(np.asarray(groups), sort=True)
    if (codes < 0).any():
        raise MetricsError("Group labels contain missing values (NaN/None); fill or drop them first.")
    return codes.astype(np.intp), pd.Index(uniques)


def grouped_mean(values, codes, n_groups: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and count of ``values`` per group code; the mean of an empty group is NaN.

    >>> means, counts = grouped_mean([1.0, 2.0, 4.0], [0, 0, 2], n_groups=3)
    >>> means.tolist(), counts.tolist()
    ([1.5, nan, 4.0], [2, 0, 1])
    """
    values, codes, n_groups = _prepare(values, codes, n_groups)
    counts = np.bincount(codes, minlength=n_groups)
    sums = np.bincount(codes, weights=values, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means, counts


def bootstrap_means(values, codes, n_groups: int | None = None, *, n_boot: int = 1000, seed=0) -> np.ndarray:
    """Bootstrap replicates of every group's mean, as an array of shape ``(n_groups, n_boot)``.

    Replicate b of group g is the mean of n_g values drawn uniformly with replacement from the n_g
    values of group g; groups and replicates are independent (the resampling unit is the single value
    within its group). Empty groups get NaN rows. Cost is O(len(values) · n_boot) with small
    constants (about 4 ns per resampled value); memory is bounded by chunking.

    ``seed`` is anything :func:`numpy.random.default_rng` accepts; the same seed and data give the
    same replicates.

    >>> reps = bootstrap_means([1.0, 1.0, 5.0, 7.0], [0, 0, 1, 1], n_boot=4, seed=1)
    >>> reps.shape, reps[0].tolist()
    ((2, 4), [1.0, 1.0, 1.0, 1.0])
    >>> bool(set(reps[1].tolist()) <= {5.0, 6.0, 7.0})
    True
    """
    values, codes, n_groups = _prepare(values, codes, n_groups)
    n_boot = _check_n_boot(n_boot)
    rng = np.random.default_rng(seed)
    out = np.full((n_groups, n_boot), np.nan)
    if values.size == 0:
        return out
    order = np.argsort(codes, kind="stable")
    v = values[order]
    counts = np.bincount(codes, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    groups = np.flatnonzero(counts)
    per_chunk = max(1, _BLOCK // n_boot)  # values per chunk when all replicates fit in one block
    # chunks of consecutive non-empty groups: a new chunk starts where a group's first value crosses a
    # multiple of per_chunk (a group larger than that gets a chunk, and replicate blocks, of its own)
    first = np.cumsum(counts[groups]) - counts[groups]
    cut = np.flatnonzero(np.diff(first // per_chunk)) + 1
    bounds = np.concatenate(([0], cut, [groups.size]))
    for i, j in zip(bounds[:-1], bounds[1:]):
        g = groups[i:j]
        sizes = counts[g]
        total = int(sizes.sum())
        lo = starts[g[0]]
        chunk = v[lo : lo + total]
        local = starts[g] - lo
        itype = np.int32 if total < 2**31 else np.intp
        base = np.repeat(local, sizes).astype(itype)
        scale = np.repeat(sizes, sizes).astype(float)
        rows = max(1, min(n_boot, _BLOCK // total))
        for b0 in range(0, n_boot, rows):
            nb = min(rows, n_boot - b0)
            u = rng.random((nb, total))
            u *= scale
            # u < 1 - 2**-53 (numpy's 53-bit floats), so round-to-nearest keeps u * n < n: no clipping needed
            idx = u.astype(itype)
            idx += base
            sums = np.add.reduceat(chunk.take(idx), local, axis=1)
            out[g, b0 : b0 + nb] = (sums / sizes).T
    return out


def _row_quantiles(sorted_reps: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Linear-interpolation quantiles (numpy's default rule), one probability per row."""
    n = sorted_reps.shape[-1]
    pos = np.clip(q, 0.0, 1.0) * (n - 1)
    below = np.floor(pos).astype(np.intp)
    above = np.minimum(below + 1, n - 1)
    frac = pos - below
    lo = np.take_along_axis(sorted_reps, below[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(sorted_reps, above[..., None], axis=-1)[..., 0]
    return lo + frac * (hi - lo)


def interval(replicates, level: float = 0.95, *, estimate=None, method: str = "percentile"):
    """Two-sided bootstrap interval from replicates along the last axis; returns ``(lo, hi)``.

    * ``percentile``: the α/2 and 1−α/2 quantiles of the replicates (Efron & Tibshirani 1993, §13.3).
    * ``basic``: 2·θ̂ − those quantiles, swapped (Davison & Hinkley 1997, §5.2); needs ``estimate``.
    * ``bc``: bias-corrected percentile (Efron 1987): quantiles at Φ(2·z0 ± z_{1−α/2}) with
      z0 = Φ⁻¹(share of replicates below θ̂, ties counted half); needs ``estimate``. Use it for
      statistics whose bootstrap distribution is shifted, such as a maximum of means.

    α = 1 − level. NaN replicates give NaN bounds.

    >>> reps = np.arange(101.0)
    >>> [round(float(x), 6) for x in interval(reps, 0.9)]
    [5.0, 95.0]
    >>> [round(float(x), 6) for x in interval(reps, 0.9, estimate=60.0, method="basic")]
    [25.0, 115.0]
    """
    level = _check_level(level)
    if method not in METHODS:
        raise MetricsError(f"Unknown interval method {method!r}; choose one of: {', '.join(METHODS)}.")
    reps = np.asarray(replicates, dtype=float)
    alpha = 1.0 - level
    if method == "percentile":
        lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2], axis=-1)
        return lo, hi
    if estimate is None:
        raise MetricsError(f"Interval method {method!r} needs the point estimate; pass estimate=...")
    est = np.asarray(estimate, dtype=float)
    if method == "basic":
        qlo, qhi = np.quantile(reps, [alpha / 2, 1 - alpha / 2], axis=-1)
        return 2 * est - qhi, 2 * est - qlo
    # bias-corrected percentile
    srt = np.sort(reps, axis=-1)
    n = srt.shape[-1]
    below = (reps < est[..., None]).sum(axis=-1) + 0.5 * (reps == est[..., None]).sum(axis=-1)
    p0 = np.clip(below / n, 0.5 / n, 1 - 0.5 / n)
    z0 = ndtri(p0)
    z = ndtri(1 - alpha / 2)
    q_lo = np.broadcast_to(ndtr(2 * z0 - z), srt.shape[:-1])
    q_hi = np.broadcast_to(ndtr(2 * z0 + z), srt.shape[:-1])
    lo, hi = _row_quantiles(srt, q_lo), _row_quantiles(srt, q_hi)
    nan = np.isnan(reps).any(axis=-1)
    return np.where(nan, np.nan, lo), np.where(nan, np.nan, hi)


def bootstrap_mean_ci(values, groups=None, *, level: float = 0.95, n_boot: int = 1000, seed=0,
                      method: str = "percentile") -> pd.DataFrame:
    """Mean of ``values`` per group with a bootstrap CI: columns ``group, mean, lo, hi, n``.

    ``groups`` holds one label per value (any hashable labels; None = a single group labelled 0).
    Resampling: values within each group, independently across groups (see :func:`bootstrap_means`).

    >>> t = bootstrap_mean_ci([0.0, 1.0] * 50, ["x"] * 100, n_boot=500, seed=0)
    >>> t[["group", "mean", "n"]].to_dict("list")
    {'group': ['x'], 'mean': [0.5], 'n': [100]}
    >>> bool(0.38 < t["lo"].iloc[0] < 0.5 < t["hi"].iloc[0] < 0.62)
    True
    """
    values = np.asarray(values, dtype=float).ravel()
    if groups is None:
        codes, labels = np.zeros(values.size, dtype=np.intp), pd.Index([0])
    else:
        codes, labels = group_codes(groups)
    means, counts = grouped_mean(values, codes, len(labels))
    reps = bootstrap_means(values, codes, len(labels), n_boot=n_boot, seed=seed)
    lo, hi = no_interval_from_one(*interval(reps, level, estimate=means, method=method), counts)
    return pd.DataFrame({"group": labels, "mean": means, "lo": lo, "hi": hi, "n": counts})


def no_interval_from_one(lo, hi, n):
    """``(lo, hi)`` with NaN where a group has fewer than two values: resampling one value gives a zero-width
    interval that says nothing about uncertainty (tables show "—").

    >>> no_interval_from_one(np.array([0.1, 0.5]), np.array([0.3, 0.5]), np.array([40, 1]))
    (array([0.1, nan]), array([0.3, nan]))
    """
    few = np.asarray(n) < 2
    return np.where(few, np.nan, lo), np.where(few, np.nan, hi)


def bootstrap_statistic(values, codes, statistic: Callable[[np.ndarray], np.ndarray], n_groups: int | None = None, *,
                        level: float = 0.95, n_boot: int = 1000, seed=0, method: str = "percentile") -> Estimate:
    """CI of a statistic of *group means* (e.g. μ = mean over subjects of max over attributes of |mean|).

    ``statistic`` maps an array of group means of shape ``(n_groups, k)`` to shape ``(k,)`` (one value per
    column); it is called once on the observed means (k = 1) and once on the ``(n_groups, n_boot)``
    replicate means of :func:`bootstrap_means`. The resampling unit is therefore the value within its
    group; the statistic is recomputed on every replicate. Note: for a maximum of noisy means the
    replicates sit above the estimate (the max picks up noise), so the percentile interval is shifted
    upward; ``method="basic"`` undoes that shift (``"bc"`` cannot once all replicates exceed the estimate).

    >>> values = [0.5, 0.7, -0.1, 0.1, 0.2, 0.4]
    >>> codes = [0, 0, 1, 1, 2, 2]
    >>> est = bootstrap_statistic(values, codes, lambda m: np.abs(m).max(axis=0), n_boot=1000, seed=0)
    >>> round(est.value, 3), bool(est.lo <= est.value <= est.hi)
    (0.6, True)
    """
    values, codes, n_groups = _prepare(values, codes, n_groups)
    means, _ = grouped_mean(values, codes, n_groups)
    value = float(np.asarray(statistic(means[:, None])).reshape(-1)[0])
    reps = np.asarray(statistic(bootstrap_means(values, codes, n_groups, n_boot=n_boot, seed=seed)), dtype=float)
    if reps.shape != (n_boot,):
        raise MetricsError(f"The statistic returned shape {reps.shape} for {n_boot} replicates; reduce over axis 0 only.")
    lo, hi = interval(reps, level, estimate=value, method=method)
    return Estimate(value, float(lo), float(hi))


def adjust_pvalues(pvalues, method: str = "holm") -> np.ndarray:
    """Multiple-testing adjusted p-values (thin wrapper of statsmodels' ``multipletests``).

    ``method``: ``holm`` (Holm 1979, family-wise error), ``bonferroni``, ``fdr_bh`` (Benjamini &
    Hochberg 1995, false discovery rate), or any other statsmodels method name.

    >>> adjust_pvalues([0.01, 0.02, 0.03], method="bonferroni").round(2).tolist()
    [0.03, 0.06, 0.09]
    >>> adjust_pvalues([0.01, 0.02, 0.03], method="fdr_bh").round(2).tolist()
    [0.03, 0.03, 0.03]
    """
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise MetricsError("p-values must lie in [0, 1] with no NaN; check the test that produced them.")
    try:
        return multipletests(p.ravel(), method=method)[1].reshape(p.shape)
    except ValueError as exc:
        raise MetricsError(f"Unknown multiple-testing method {method!r}; use e.g. 'holm', 'bonferroni' or 'fdr_bh'.") from exc
