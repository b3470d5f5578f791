"""Grouped bootstrap, intervals and p-value adjustment (stereoprobe.stats)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from stereoprobe import stats
from stereoprobe.errors import MetricsError, StereoprobeError


def _groups(n_groups: int, n: int, seed: int = 0, loc: float = 0.3, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    values = rng.normal(loc, scale, size=n_groups * n)
    return values, np.repeat(np.arange(n_groups), n)


def test_grouped_mean_counts_and_empty_groups():
    means, counts = stats.grouped_mean([1.0, 3.0, 10.0], [2, 2, 0], n_groups=4)
    assert counts.tolist() == [1, 0, 2, 0]
    assert means[0] == 10.0 and means[2] == 2.0 and np.isnan(means[1]) and np.isnan(means[3])


def test_group_codes_sorted_labels():
    codes, labels = stats.group_codes(["b", "a", "c", "a"])
    assert labels.tolist() == ["a", "b", "c"] and codes.tolist() == [1, 0, 2, 0]
    with pytest.raises(MetricsError):
        stats.group_codes(["a", None])


def test_bootstrap_is_reproducible_with_a_seed_and_changes_without():
    values, codes = _groups(5, 30)
    a = stats.bootstrap_means(values, codes, n_boot=200, seed=7)
    b = stats.bootstrap_means(values, codes, n_boot=200, seed=7)
    c = stats.bootstrap_means(values, codes, n_boot=200, seed=8)
    assert a.shape == (5, 200)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_replicates_are_resampled_means_of_the_group_itself():
    values = np.array([0.0, 1.0, 10.0, 20.0, 30.0])
    codes = np.array([0, 0, 1, 1, 1])
    reps = stats.bootstrap_means(values, codes, n_groups=3, n_boot=500, seed=0)
    assert set(np.round(reps[0], 9)) <= {0.0, 0.5, 1.0}  # means of 2 draws from {0, 1}
    assert reps[1].min() >= 10 and reps[1].max() <= 30  # never borrows from another group
    assert np.isnan(reps[2]).all()  # empty group
    assert set(np.round(reps[0], 9)) == {0.0, 0.5, 1.0}  # and all outcomes do occur


def test_replicate_moments_match_bootstrap_theory():
    # mean of the replicates -> the sample mean; their sd -> population sd (ddof=0) / sqrt(n)
    values, codes = _groups(3, 50, seed=3)
    reps = stats.bootstrap_means(values, codes, n_boot=20_000, seed=1)
    for g in range(3):
        x = values[codes == g]
        assert reps[g].mean() == pytest.approx(x.mean(), abs=4 * x.std() / np.sqrt(50) / np.sqrt(20_000))
        assert reps[g].std() == pytest.approx(x.std() / np.sqrt(50), rel=0.03)


def test_groups_are_resampled_independently():
    # two groups with identical values: shared resampling indices would make their replicates identical
    x = np.random.default_rng(0).normal(size=100)
    reps = stats.bootstrap_means(np.r_[x, x], np.repeat([0, 1], 100), n_boot=3000, seed=0)
    assert abs(np.corrcoef(reps[0], reps[1])[0, 1]) < 0.08


def test_chunking_does_not_change_the_distribution(monkeypatch):
    # tiny blocks force many chunks and replicate blocks per group; the moments must not move
    values, codes = _groups(4, 200, seed=5)
    big = stats.bootstrap_means(values, codes, n_boot=4000, seed=0)
    monkeypatch.setattr(stats, "_BLOCK", 256)
    small = stats.bootstrap_means(values, codes, n_boot=4000, seed=0)
    assert not np.array_equal(big, small)
    np.testing.assert_allclose(small.mean(axis=1), big.mean(axis=1), atol=0.01)
    np.testing.assert_allclose(small.std(axis=1), big.std(axis=1), rtol=0.06)


def test_unequal_group_sizes_and_unsorted_codes():
    rng = np.random.default_rng(2)
    sizes = [1, 2, 7, 300]
    codes = np.concatenate([np.full(n, g) for g, n in enumerate(sizes)])
    perm = rng.permutation(codes.size)
    values = rng.normal(size=codes.size)
    reps = stats.bootstrap_means(values[perm], codes[perm], n_boot=2000, seed=0)
    assert np.all(reps[0] == values[codes == 0][0])  # a single value cannot vary
    means, _ = stats.grouped_mean(values, codes)
    np.testing.assert_allclose(reps.mean(axis=1), means, atol=0.1)
    assert reps[3].std() < reps[2].std()


def test_ci_contains_estimate_and_shrinks_with_n():
    widths = []
    for n in (50, 200, 800):
        values, codes = _groups(20, n, seed=n)
        t = stats.bootstrap_mean_ci(values, codes, n_boot=1000, seed=0)
        assert ((t["lo"] <= t["mean"]) & (t["mean"] <= t["hi"])).all()
        assert (t["n"] == n).all()
        widths.append(float((t["hi"] - t["lo"]).mean()))
    assert widths[0] > widths[1] > widths[2]
    assert widths[0] / widths[2] == pytest.approx(4.0, rel=0.15)  # width ~ 1/sqrt(n)


def test_percentile_ci_covers_a_known_mean_at_about_the_nominal_rate():
    # 600 independent samples of size 60 from N(0.3, 1): how many 90% and 95% CIs contain 0.3?
    values, codes = _groups(600, 60, seed=11)
    reps = stats.bootstrap_means(values, codes, n_boot=1000, seed=0)
    for level in (0.90, 0.95):
        lo, hi = stats.interval(reps, level)
        coverage = np.mean((lo <= 0.3) & (0.3 <= hi))
        assert level - 0.05 <= coverage <= level + 0.035, (level, coverage)


def test_percentile_interval_agrees_with_scipy_bootstrap():
    x = np.random.default_rng(4).exponential(size=80)
    ours = stats.bootstrap_mean_ci(x, n_boot=20_000, seed=0)
    ref = sps.bootstrap((x,), np.mean, n_resamples=20_000, method="percentile", random_state=0).confidence_interval
    assert ours["lo"].iloc[0] == pytest.approx(ref.low, abs=0.01)
    assert ours["hi"].iloc[0] == pytest.approx(ref.high, abs=0.01)
    assert ours["group"].iloc[0] == 0


def test_interval_methods():
    reps = np.arange(101.0)
    lo, hi = stats.interval(reps, 0.9)
    assert (lo, hi) == pytest.approx((5.0, 95.0))
    lo, hi = stats.interval(reps, 0.9, estimate=60.0, method="basic")
    assert (lo, hi) == pytest.approx((25.0, 115.0))
    # bc reduces to percentile when the estimate is the median of the replicates (z0 = 0)
    sym = np.random.default_rng(0).normal(size=(3, 4001))
    med = np.median(sym, axis=1)
    np.testing.assert_allclose(stats.interval(sym, 0.95, estimate=med, method="bc"), stats.interval(sym, 0.95), atol=1e-9)
    # bc moves the interval toward the estimate when replicates sit above it
    lo_bc, hi_bc = stats.interval(sym[0], 0.95, estimate=np.quantile(sym[0], 0.3), method="bc")
    lo_p, hi_p = stats.interval(sym[0], 0.95)
    assert lo_bc < lo_p and hi_bc < hi_p
    with pytest.raises(MetricsError, match="estimate"):
        stats.interval(reps, 0.9, method="basic")
    with pytest.raises(MetricsError, match="method"):
        stats.interval(reps, 0.9, method="bca")


def test_bootstrap_statistic_of_group_means():
    values, codes = _groups(10, 40, seed=9, loc=0.0, scale=0.2)
    values = values + np.repeat(np.linspace(-0.5, 0.5, 10), 40)
    stat = lambda m: np.abs(m).max(axis=0)  # noqa: E731
    est = stats.bootstrap_statistic(values, codes, stat, n_boot=1000, seed=0)
    means, _ = stats.grouped_mean(values, codes)
    assert est.value == pytest.approx(np.abs(means).max())
    assert est.lo < est.value < est.hi
    again = stats.bootstrap_statistic(values, codes, stat, n_boot=1000, seed=0)
    assert again == est
    with pytest.raises(MetricsError, match="axis 0"):
        stats.bootstrap_statistic(values, codes, lambda m: m, n_boot=50)


def test_max_statistic_bias_is_what_basic_corrects():
    # all true means are 0: the max of |means| is pure noise and its replicates sit above it
    values, codes = _groups(30, 50, seed=1, loc=0.0)
    stat = lambda m: np.abs(m).max(axis=0)  # noqa: E731
    pct = stats.bootstrap_statistic(values, codes, stat, n_boot=1000, seed=0)
    basic = stats.bootstrap_statistic(values, codes, stat, n_boot=1000, seed=0, method="basic")
    assert basic.value == pct.value
    # basic = 2*value - percentile bounds, swapped
    assert basic.lo == pytest.approx(2 * pct.value - pct.hi) and basic.hi == pytest.approx(2 * pct.value - pct.lo)


def test_adjust_pvalues():
    p = np.array([0.01, 0.04, 0.03, 0.5])
    holm = stats.adjust_pvalues(p)
    # Holm by hand: sorted 0.01, 0.03, 0.04, 0.5 -> 0.04, 0.09, 0.09 (monotone), 0.5
    np.testing.assert_allclose(holm, [0.04, 0.09, 0.09, 0.5])
    np.testing.assert_allclose(stats.adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 1.0])
    with pytest.raises(MetricsError):
        stats.adjust_pvalues([0.2, 1.5])
    with pytest.raises(MetricsError, match="method"):
        stats.adjust_pvalues([0.2], "nonsense")


@pytest.mark.parametrize("kwargs, match", [
    ({"n_boot": 0}, "n_boot"),
    ({"n_boot": 2.5}, "n_boot"),
])
def test_invalid_bootstrap_arguments(kwargs, match):
    with pytest.raises(MetricsError, match=match):
        stats.bootstrap_means([1.0, 2.0], [0, 0], **kwargs)


def test_invalid_inputs_are_stereoprobe_errors():
    with pytest.raises(StereoprobeError, match="codes"):
        stats.bootstrap_means([1.0, 2.0], [0])
    with pytest.raises(MetricsError, match="NaN"):
        stats.bootstrap_means([1.0, np.nan], [0, 0])
    with pytest.raises(MetricsError, match="non-negative"):
        stats.grouped_mean([1.0, 2.0], [0, -1])
    with pytest.raises(MetricsError, match="level"):
        stats.interval(np.arange(10.0), 95)
