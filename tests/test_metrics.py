"""UnQover metrics (Li et al. 2020, Eqs. 2–8; the authors' analysis.py): golden Fig. 2 numbers, Proposition 1,
grouping, ranks, errors, scale."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stereoprobe.errors import MetricsError, StereoprobeError
from stereoprobe.paths import data_dir
from stereoprobe.unqover import metrics as M

COLS = ["subj1", "subj2", "cluster1", "cluster2", "tid", "attr_cluster", "attr", "s1_pos", "s2_pos", "s1_neg", "s2_neg"]


# -- builders ------------------------------------------------------------------------------------------------------
def frame_from_s(quads, x="Gerald", y="Jennifer", cx="male", cy="female", attr="was a hunter"):
    """Key i = (x, y, tid i, attr); quad = S for τ12 (x in slot 1) then τ21 (y in slot 1), each (s1a, s2a, s1ā, s2ā)."""
    rows = []
    for tid, q in enumerate(quads):
        rows.append((x, y, cx, cy, tid, "None", attr, *q[:4]))
        rows.append((y, x, cy, cx, tid, "None", attr, *q[4:]))
    return pd.DataFrame(rows, columns=COLS)


def frame_from_c(keys):
    """Ordered examples whose comparative bias is exactly the given C(x, y) (|C| ≤ 0.5).

    S(x | ·, a) = 0.5 + C, S(x | ·, ā) = 0.5 − C and S(y | ·) = 0.5 in both orders, so B(x) = 2C, B(y) = 0.
    """
    rows = []
    for x, y, cx, cy, tid, attr, c in keys:
        rows.append((x, y, cx, cy, tid, "None", attr, 0.5 + c, 0.5, 0.5 - c, 0.5))
        rows.append((y, x, cy, cx, tid, "None", attr, 0.5, 0.5 + c, 0.5, 0.5 - c))
    return pd.DataFrame(rows, columns=COLS)


def synthetic_gender(n_female=70, n_male=70, n_tid=4, n_attr=70, seed=0, planted=None):
    """A scores frame shaped like the gender dataset: every (female, male) pair in both orders × tid × attr."""
    rng = np.random.default_rng(seed)
    fem = np.array([f"Female{i:03d}" for i in range(n_female)], dtype=object)
    mal = np.array([f"Male{i:03d}" for i in range(n_male)], dtype=object)
    attrs = np.array([f"was a job{i:03d}" for i in range(n_attr)], dtype=object)
    f, m, t, a = (g.ravel() for g in np.meshgrid(np.arange(n_female), np.arange(n_male), np.arange(n_tid),
                                                 np.arange(n_attr), indexing="ij"))
    n = f.size
    s = rng.uniform(0, 0.5, size=(2 * n, 4))
    if planted is not None:  # push the female name with index 0 toward attribute 0 (positive question)
        hit = np.flatnonzero((f == 0) & (a == 0))
        s[hit, 0] += planted  # slot 1 = the female name in the first block
        s[n + hit, 1] += planted  # slot 2 = the female name in the swapped block
    return pd.DataFrame({
        "subj1": np.concatenate([fem[f], mal[m]]), "subj2": np.concatenate([mal[m], fem[f]]),
        "cluster1": np.repeat(np.array(["female", "male"], dtype=object), n),
        "cluster2": np.repeat(np.array(["male", "female"], dtype=object), n),
        "tid": np.concatenate([t, t]), "attr_cluster": "None", "attr": np.concatenate([attrs[a], attrs[a]]),
        "s1_pos": s[:, 0], "s2_pos": s[:, 1], "s1_neg": s[:, 2], "s2_neg": s[:, 3],
    })


# -- Fig. 2 golden example (Li et al. 2020, Fig. 2) ----------------------------------------------------------------
FIG2 = [(0.26, 0.73, 0.35, 0.62, 0.45, 0.54, 0.86, 0.12)]


def test_fig2_golden_numbers():
    paired = M.pair_examples(frame_from_s(FIG2))
    assert len(paired) == 1
    row = paired.iloc[0]
    assert (row["xa"], row["xb"]) == ("Gerald", "Jennifer")
    # E2 lists Jennifer in slot 1: S(slot1|a)=0.45 is Jennifer's, S(slot2|a)=0.54 is Gerald's
    assert (row["sb_e2_pos"], row["sa_e2_pos"], row["sb_e2_neg"], row["sa_e2_neg"]) == (0.45, 0.54, 0.86, 0.12)
    bias = M.comparative_bias(paired).iloc[0]
    assert bias["B_xa"] == pytest.approx(0.165, abs=1e-12)
    assert bias["B_xb"] == pytest.approx(-0.15, abs=1e-12)
    assert bias["C"] == pytest.approx(0.1575, abs=1e-12)  # Eq. 6 with the ½ (the paper's text says 0.31)
    assert M.positional_error(paired) == pytest.approx(0.2575, abs=1e-12)
    assert M.attribute_error(paired) == pytest.approx(0.3475, abs=1e-12)
    assert M.average_score(paired) == pytest.approx(3.93 / 8, abs=1e-12)
    errors = M.reasoning_errors(paired)
    assert errors["positional_error"] == M.positional_error(paired) and errors["n_keys"] == 1


def test_fig2_example_helper_matches_and_raw_frames_are_accepted():
    paired = M.pair_examples(M.example_scores())
    expected = M.pair_examples(frame_from_s(FIG2))
    pd.testing.assert_frame_equal(paired.drop(columns="tid"), expected.drop(columns="tid"))
    assert M.comparative_bias(M.example_scores())["C"].iloc[0] == pytest.approx(0.1575)
    gamma = M.subject_attribute_bias(M.example_scores())
    assert gamma.set_index("subject")["gamma"].to_dict() == pytest.approx({"Gerald": 0.1575, "Jennifer": -0.1575})


def test_pairing_ignores_row_order_and_extra_columns():
    frame = synthetic_gender(4, 3, 2, 3, seed=1)
    frame["model"] = "m"
    shuffled = frame.sample(frac=1.0, random_state=0)
    pd.testing.assert_frame_equal(M.pair_examples(frame), M.pair_examples(shuffled))
    assert len(M.pair_examples(frame)) == 4 * 3 * 2 * 3
    assert list(M.pair_examples(frame).columns) == list(M.KEY_COLUMNS + M.S_COLUMNS)


def test_xa_is_the_smaller_lower_cased_name():
    # raw code-point order would put "Zed" before "adam"; analysis.py sorts lower-cased names
    frame = frame_from_s(FIG2, x="Zed", y="adam")
    row = M.pair_examples(frame).iloc[0]
    assert (row["xa"], row["xb"]) == ("adam", "Zed")
    # and C is reported for (adam, Zed): the Fig. 2 value with the sign flipped
    assert M.comparative_bias(frame)["C"].iloc[0] == pytest.approx(-0.1575)


def test_categorical_inputs():
    frame = synthetic_gender(3, 3, 1, 2, seed=2)
    cat = frame.astype({c: "category" for c in ["subj1", "subj2", "cluster1", "cluster2", "attr_cluster", "attr"]})
    pd.testing.assert_frame_equal(M.comparative_bias(frame), M.comparative_bias(cat))


# -- Proposition 1 (hypothesis) ----------------------------------------------------------------------------------
unit = st.floats(0.0, 1.0, allow_nan=False)
quads = st.lists(st.tuples(*[unit] * 8), min_size=1, max_size=5)


def _c(frame):
    return M.comparative_bias(frame).sort_values("tid")["C"].to_numpy()


@settings(max_examples=60, deadline=None)
@given(quads)
def test_c_is_antisymmetric(qs):
    c = _c(frame_from_s(qs))
    # rename Gerald so that he sorts after Jennifer: the key now reports C(Jennifer, Zed) = −C(Gerald, Jennifer)
    flipped = M.comparative_bias(frame_from_s(qs, x="Zed")).sort_values("tid")
    assert (flipped["xa"] == "Jennifer").all()
    np.testing.assert_array_equal(flipped["C"].to_numpy(), -c)
    # and γ gets +C for xa and −C for xb
    gamma = M.subject_attribute_bias(frame_from_s(qs))
    n = len(qs)
    assert gamma.set_index("subject")["gamma"].to_dict() == pytest.approx({"Gerald": c.sum() / n, "Jennifer": -c.sum() / n})


@settings(max_examples=60, deadline=None)
@given(quads)
def test_c_does_not_depend_on_which_order_is_e1(qs):
    # S(x | τ12, q) <-> S(x | τ21, q) for both subjects and both questions
    swapped = [(q[5], q[4], q[7], q[6], q[1], q[0], q[3], q[2]) for q in qs]
    np.testing.assert_array_equal(_c(frame_from_s(swapped)), _c(frame_from_s(qs)))
    assert M.positional_error(frame_from_s(swapped)) == pytest.approx(M.positional_error(frame_from_s(qs)))


@settings(max_examples=60, deadline=None)
@given(quads)
def test_c_is_unchanged_by_exchanging_a_and_negation_with_subjects_swapped(qs):
    frame = frame_from_s(qs)
    other = frame.copy()
    other[["subj1", "subj2", "cluster1", "cluster2"]] = frame[["subj2", "subj1", "cluster2", "cluster1"]].to_numpy()
    other[["s1_pos", "s2_pos", "s1_neg", "s2_neg"]] = frame[["s1_neg", "s2_neg", "s1_pos", "s2_pos"]].to_numpy()
    np.testing.assert_allclose(_c(other), _c(frame), atol=1e-15)
    # exchanging a and ā alone flips the sign
    only_q = frame.copy()
    only_q[["s1_pos", "s2_pos", "s1_neg", "s2_neg"]] = frame[["s1_neg", "s2_neg", "s1_pos", "s2_pos"]].to_numpy()
    np.testing.assert_allclose(_c(only_q), -_c(frame), atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=5), st.lists(st.tuples(*[unit] * 4), min_size=5, max_size=5))
def test_c_is_zero_without_order_and_polarity_dependence(fs, gs):
    # S(x | E, q) = f(x): no bias at all
    qs = [(fx, fy, fx, fy, fy, fx, fy, fx) for fx, fy in fs]
    assert (_c(frame_from_s(qs)) == 0).all()
    # S depends on the order but not on the polarity: still C = 0 (δ absorbs it)
    qs = [(g[0], g[1], g[0], g[1], g[2], g[3], g[2], g[3]) for g in gs[: len(fs)]]
    assert (_c(frame_from_s(qs)) == 0).all()
    assert (M.subject_attribute_bias(frame_from_s(qs))["eta"] == 0).all()  # sign(0) = 0


@settings(max_examples=60, deadline=None)
@given(quads)
def test_ranges(qs):
    frame = frame_from_s(qs)
    assert (np.abs(_c(frame)) <= 1).all()
    for value in M.reasoning_errors(frame)[["positional_error", "attribute_error", "average_score"]]:
        assert 0 <= value <= 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[unit] * 8), min_size=1, max_size=5))
def test_average_score_is_at_most_half_when_the_two_candidates_share_one_unit(raw):
    # per question S1 + S2 <= 1
    qs = [tuple(v for i in range(0, 8, 2) for v in (r[i], r[i + 1] * (1 - r[i]))) for r in raw]
    assert 0 <= M.average_score(frame_from_s(qs)) <= 0.5 + 1e-12


# -- grouping, γ, η, μ ---------------------------------------------------------------------------------------------
TOY = [  # C(female name, male name) per attribute, hand-computed below
    ("F1", "M1", "female", "male", 0, "a1", 0.2), ("F1", "M2", "female", "male", 0, "a1", 0.1),
    ("F2", "M1", "female", "male", 0, "a1", -0.3), ("F2", "M2", "female", "male", 0, "a1", 0.0),
    ("F1", "M1", "female", "male", 0, "a2", -0.1), ("F1", "M2", "female", "male", 0, "a2", 0.1),
    ("F2", "M1", "female", "male", 0, "a2", 0.1), ("F2", "M2", "female", "male", 0, "a2", 0.3),
]


def test_toy_gamma_eta_mu_by_hand():
    frame = frame_from_c(TOY)
    g = M.subject_attribute_bias(frame).set_index(["subject", "attr"])
    expected = {  # (γ, η) per (name, attr)
        ("F1", "a1"): (0.15, 1.0), ("F1", "a2"): (0.0, 0.0), ("F2", "a1"): (-0.15, -0.5), ("F2", "a2"): (0.2, 1.0),
        ("M1", "a1"): (0.05, 0.0), ("M1", "a2"): (0.0, 0.0), ("M2", "a1"): (-0.05, -0.5), ("M2", "a2"): (-0.2, -1.0),
    }
    for key, (gamma, eta) in expected.items():
        assert g.loc[key, "gamma"] == pytest.approx(gamma, abs=1e-12), key
        assert g.loc[key, "eta"] == pytest.approx(eta), key
        assert g.loc[key, "n"] == 2
    # μ per name: mean(0.15, 0.2, 0.05, 0.2); count-based η: mean(½(1+0), ½(.5+1), 0, ½(.5+1))
    assert M.bias_intensity(frame) == pytest.approx(0.15)
    assert M.count_bias_intensity(frame) == pytest.approx(0.5)
    # gender grouping: γ(female, a1) = 0, γ(female, a2) = 0.1; η(female) = 0.25, 0.5
    gg = M.subject_attribute_bias(frame, group_by="gender").set_index(["subject", "attr"])
    assert gg.loc[("female", "a1"), "gamma"] == pytest.approx(0.0, abs=1e-12)
    assert gg.loc[("female", "a2"), "gamma"] == pytest.approx(0.1)
    assert gg.loc[("female", "a1"), "eta"] == 0.25 and gg.loc[("female", "a2"), "eta"] == 0.5
    assert (gg["n"] == 4).all()
    assert M.bias_intensity(frame, group_by="gender") == pytest.approx(0.1)
    assert M.count_bias_intensity(frame, group_by="gender") == pytest.approx(0.375)
    # μ over the two gender groups is smaller than μ over names (book appendix *Where the code and the paper differ*, UnQover: μ for gender)
    assert M.bias_intensity(frame, group_by="gender") < M.bias_intensity(frame)
    # γ(x) pools everything: F1 = (0.2 + 0.1 − 0.1 + 0.1) / 4
    sb = M.subject_bias(frame).set_index("subject")
    assert sb.loc["F1", "gamma"] == pytest.approx(0.075) and sb.loc["F1", "n"] == 4
    assert sb.loc["M2", "eta"] == pytest.approx(-0.75)  # signs −1, 0, −1, −1
    assert list(M.subject_bias(frame)["gamma"]) == sorted(sb["gamma"], reverse=True)


def test_mu_per_name_exceeds_mu_per_gender_when_names_disagree():
    # F1 is pushed toward a1 and F2 away from it against every partner: the gender group averages them out
    keys = []
    for m in ("M1", "M2", "M3"):
        for tid in range(2):
            keys += [("F1", m, "female", "male", tid, "a1", 0.3), ("F2", m, "female", "male", tid, "a1", -0.3),
                     ("F1", m, "female", "male", tid, "a2", 0.05), ("F2", m, "female", "male", tid, "a2", 0.05)]
    frame = frame_from_c(keys)
    assert M.bias_intensity(frame, group_by="gender") == pytest.approx(0.05)
    per_name = M.bias_intensity(frame)
    # females: 0.3 each; males: γ(M, a1) = 0, γ(M, a2) = −0.05  ->  (0.3 + 0.3 + 3 · 0.05) / 5
    assert per_name == pytest.approx((0.6 + 0.15) / 5)


def test_gamma_x_is_count_weighted_over_attributes():
    # a person attribute with 3 templates and a location attribute with 1 (nationality-like)
    keys = [("Xland", "Yland", "None", "None", t, "p_attr", 0.3) for t in range(3)]
    keys += [("Xland", "Yland", "None", "None", 3, "l_attr", -0.3)]
    frame = frame_from_c(keys)
    g = M.subject_attribute_bias(frame).set_index(["subject", "attr"])["gamma"]
    assert g[("Xland", "p_attr")] == pytest.approx(0.3) and g[("Xland", "l_attr")] == pytest.approx(-0.3)
    sb = M.subject_bias(frame).set_index("subject")
    assert sb.loc["Xland", "gamma"] == pytest.approx(0.15)  # not the uniform mean 0 of γ(x, a)
    assert sb.loc["Yland", "gamma"] == pytest.approx(-0.15) and sb.loc["Xland", "n"] == 4


def test_gender_grouping_is_exactly_antisymmetric():
    frame = synthetic_gender(6, 5, 2, 4, seed=3)
    g = M.subject_attribute_bias(frame, group_by="gender", ci=0.9, n_boot=200, seed=1)
    fem = g[g["subject"] == "female"].set_index("attr").sort_index()
    mal = g[g["subject"] == "male"].set_index("attr").sort_index()
    np.testing.assert_array_equal(mal["gamma"].to_numpy(), -fem["gamma"].to_numpy())
    np.testing.assert_array_equal(mal["eta"].to_numpy(), -fem["eta"].to_numpy())
    np.testing.assert_array_equal(mal["gamma_lo"].to_numpy(), -fem["gamma_hi"].to_numpy())
    assert (fem["n"] == 6 * 5 * 2).all() and (mal["n"] == fem["n"]).all()
    # rows: female then male, each by γ descending
    assert list(g["subject"]) == ["female"] * 4 + ["male"] * 4
    assert g["gamma"].iloc[:4].is_monotonic_decreasing and g["gamma"].iloc[4:].is_monotonic_decreasing
    # balanced design: γ(female, a) is the mean of the female names' γ(name, a)
    per_name = M.subject_attribute_bias(frame)
    fem_names = per_name[per_name["subject"].str.startswith("Female")].groupby("attr")["gamma"].mean().sort_index()
    np.testing.assert_allclose(fem["gamma"].to_numpy(), fem_names.to_numpy(), atol=1e-12)
    sb = M.subject_bias(frame, group_by="gender").set_index("subject")["gamma"]
    assert sb["male"] == -sb["female"]


def test_gender_grouping_rejects_non_gender_clusters():
    frame = frame_from_c([("Xland", "Yland", "None", "None", 0, "a", 0.1)])
    with pytest.raises(MetricsError, match="group_by='subject'"):
        M.subject_attribute_bias(frame, group_by="gender")
    with pytest.raises(MetricsError, match="group_by"):
        M.subject_attribute_bias(frame, group_by="country")


def test_subject_attribute_ci_contains_gamma_and_is_reproducible():
    frame = synthetic_gender(4, 4, 3, 3, seed=4)
    a = M.subject_attribute_bias(frame, ci=0.95, n_boot=300, seed=5)
    b = M.subject_attribute_bias(frame, ci=0.95, n_boot=300, seed=5)
    pd.testing.assert_frame_equal(a, b)
    assert ((a["gamma_lo"] <= a["gamma"]) & (a["gamma"] <= a["gamma_hi"])).all()
    assert list(a.columns) == ["subject", "attr", "attr_cluster", "gamma", "eta", "n", "gamma_lo", "gamma_hi"]
    c = M.subject_attribute_bias(frame, ci=0.95, n_boot=300, seed=6)
    assert not np.array_equal(a["gamma_lo"], c["gamma_lo"])
    sb = M.subject_bias(frame, ci=0.95, n_boot=300, seed=5)
    assert ((sb["gamma_lo"] <= sb["gamma"]) & (sb["gamma"] <= sb["gamma_hi"])).all()


def test_bias_intensity_ci_recovers_a_planted_bias():
    frame = synthetic_gender(8, 8, 2, 5, seed=6, planted=0.4)
    gamma = M.subject_attribute_bias(frame).set_index(["subject", "attr"])["gamma"]
    assert gamma[("Female000", "was a job000")] == gamma.max() > 0.15
    mu = M.bias_intensity(frame, ci=0.95, n_boot=400, seed=0)
    assert list(mu.index) == ["mu", "mu_lo", "mu_hi", "mu_bias", "n_subjects"]
    assert mu["mu"] == pytest.approx(M.bias_intensity(frame)) and mu["n_subjects"] == 16
    assert mu["mu_lo"] < mu["mu_hi"]
    assert mu["mu_bias"] > 0  # the max of noisy means: replicates sit above the estimate
    pct = M.bias_intensity(frame, ci=0.95, n_boot=400, seed=0, method="percentile")
    assert pct["mu_lo"] + pct["mu_hi"] == pytest.approx(4 * mu["mu"] - mu["mu_lo"] - mu["mu_hi"])  # basic = mirror


def test_intensity_intervals_are_clipped_at_zero(monkeypatch):
    """μ and η are means of absolute values: a basic interval's 2θ̂ − q_hi below 0 (noise dominating, a few keys
    per cell) is reported as 0, an upper bound below 0 too; bounds above 0 are kept."""
    frame = synthetic_gender(3, 3, 1, 4, seed=2)
    monkeypatch.setattr(M.stats, "interval", lambda *a, **k: (np.float64(-0.1), np.float64(0.2)))
    mu = M.bias_intensity(frame, ci=0.95, n_boot=20, seed=0)
    eta = M.count_bias_intensity(frame, ci=0.95, n_boot=20, seed=0)
    assert (mu["mu_lo"], mu["mu_hi"], eta["eta_lo"], eta["eta_hi"]) == (0.0, 0.2, 0.0, 0.2)
    monkeypatch.setattr(M.stats, "interval", lambda *a, **k: (np.float64(-0.3), np.float64(-0.1)))
    assert M.bias_intensity(frame, ci=0.95, n_boot=20, seed=0)[["mu_lo", "mu_hi"]].tolist() == [0.0, 0.0]


def test_reasoning_errors_by_template():
    frame = synthetic_gender(3, 3, 4, 2, seed=7)
    by = M.reasoning_errors(frame, by="tid")
    assert list(by.index) == [0, 1, 2, 3] and (by["n_keys"] == 3 * 3 * 2).all()
    overall = M.reasoning_errors(frame)
    assert by["positional_error"].mean() == pytest.approx(overall["positional_error"])
    with pytest.raises(MetricsError, match="group"):
        M.reasoning_errors(frame, by="nope")


# -- ranks (Fig. 4/5) ------------------------------------------------------------------------------------------------
MODELS = ["robertabase", "robertalarge", "distilbert", "bertbase", "bertlarge"]

# The nationality γ(x) table is rounded to 4 decimals and has 24 ties. The authors ranked unrounded values,
# so a tie's order is the order of the unrounded γ. An exhaustive search over all tie orders finds exactly
# one assignment consistent with the printed avg_rank/std_rank of every row; here it is (best rank first).
# For robertabase/robertalarge it happens to be alphabetical, for distilbert/bertbase it is not.
TIE_ORDER = {
    "robertabase": [["mozambique", "sri lanka"], ["india", "morocco"], ["saudi arabia", "venezuela"], ["iran", "syria"]],
    "robertalarge": [["india", "korea"], ["belgium", "france"]],
    "distilbert": [["australia", "greece", "britain"], ["france", "ireland", "romania"], ["israel", "hungary"],
                   ["turkey", "iceland"], ["korea", "morocco"], ["sri lanka", "poland"], ["eritrea", "ethiopia"],
                   ["libya", "uzbekistan"], ["japan", "kosovo"], ["haiti", "burma"]],
    "bertbase": [["canada", "honduras"], ["thailand", "panama"], ["indonesia", "turkey"], ["russia", "iran"],
                 ["morocco", "syria"], ["namibia", "libya"], ["haiti", "sri lanka"]],
    "bertlarge": [["indonesia", "peru"]],
}


def _reference():
    return pd.read_csv(data_dir() / "unqover" / "reference" / "reference_gamma_x_squad_models.tsv", sep="\t",
                       comment="#")


def _check(ranked: pd.DataFrame, ref: pd.DataFrame) -> pd.Series:
    ref = ref.set_index("subject").loc[ranked.index]
    ok = np.isclose(ranked["avg_rank"], ref["avg_rank"]) & np.isclose(ranked["std_rank"].round(2), ref["std_rank"])
    return pd.Series(ok, index=ranked.index)


@pytest.mark.parametrize("dataset", ["ethnicity", "religion"])
def test_rank_reproduction_without_ties(dataset):
    ref = _reference().query("dataset == @dataset")
    gamma = ref.set_index("subject")[MODELS]
    assert not gamma.apply(lambda c: c.duplicated().any()).any()
    ranked = M.rank_subjects(gamma)
    assert _check(ranked, ref).all()
    assert list(ranked.columns) == [f"rank_{m}" for m in MODELS] + ["avg_rank", "std_rank"]
    # the notebook's subject order is robertabase's (analysis.py prints γ descending); the stable sort keeps it
    authors_order = gamma.sort_values("robertabase", ascending=False, kind="stable")
    assert list(M.rank_subjects(authors_order).index) == list(ref["subject"])


def test_rank_reproduction_nationality_with_the_unrounded_tie_order():
    ref = _reference().query("dataset == 'country'")
    gamma = ref.set_index("subject")[MODELS]
    # the fixture covers exactly the ties present in the table
    ties = {m: sorted(sorted(g.index) for _, g in gamma.groupby(m)[m] if len(g) > 1) for m in MODELS}
    assert ties == {m: sorted(sorted(group) for group in TIE_ORDER[m]) for m in MODELS}

    # with the 4-decimal values alone, every subject without a tie reproduces exactly, whatever the tie rule
    tied = {s for groups in TIE_ORDER.values() for group in groups for s in group}
    ok = _check(M.rank_subjects(gamma), ref)
    assert ok[[s for s in ok.index if s not in tied]].all()
    assert not ok.all()  # ... and the tied rows cannot all match: the rounding lost the order

    # restoring the unrounded order (tiny offsets) reproduces all 69 rows, and the printed row order
    unrounded = gamma.copy()
    for model, groups in TIE_ORDER.items():
        for group in groups:
            for k, subject in enumerate(group):
                unrounded.loc[subject, model] -= k * 1e-7
    authors_order = unrounded.sort_values("robertabase", ascending=False, kind="stable")
    ranked = M.rank_subjects(authors_order)
    assert _check(ranked, ref).all()
    assert list(ranked.index) == list(ref["subject"])
    assert ranked.iloc[0].name == "somalia" and ranked["avg_rank"].iloc[-1] == pytest.approx(65.6)


def test_rank_subjects_rules():
    g = pd.DataFrame({"m1": [0.2, 0.2, 0.1], "m2": [0.3, 0.1, 0.2]}, index=["x", "y", "z"])
    first = M.rank_subjects(g)
    assert first.loc["x", "rank_m1"] == 1 and first.loc["y", "rank_m1"] == 2  # ties: input order
    assert M.rank_subjects(g.iloc[[1, 0, 2]]).loc["y", "rank_m1"] == 1
    assert M.rank_subjects(g, ties="min").loc["y", "rank_m1"] == 1
    assert first.loc["y", "std_rank"] == pytest.approx(np.std([2, 3]))  # population std
    with pytest.raises(MetricsError, match="numeric"):
        M.rank_subjects(g.assign(name="a"))
    with pytest.raises(MetricsError, match="missing"):
        M.rank_subjects(g.assign(m3=[0.1, np.nan, 0.2]))
    with pytest.raises(MetricsError, match="ties"):
        M.rank_subjects(g, ties="random")


# -- errors ----------------------------------------------------------------------------------------------------------
def test_missing_partner_is_an_error_naming_the_example():
    frame = synthetic_gender(3, 2, 2, 2, seed=8)
    broken = frame.drop(index=[5, 7])
    with pytest.raises(MetricsError) as err:
        M.pair_examples(broken)
    msg = str(err.value)
    assert isinstance(err.value, StereoprobeError)
    assert msg.startswith("2 ordered examples have no subject-swapped partner")
    # it names one of the two examples left without partner (the partners of the dropped rows)
    lone = []
    for r in (5, 7):
        d = frame.loc[r]
        partner = frame[(frame["subj1"] == d["subj2"]) & (frame["subj2"] == d["subj1"]) & (frame["tid"] == d["tid"])
                        & (frame["attr"] == d["attr"])].iloc[0]
        lone.append(f"subj1={partner['subj1']!r}, subj2={partner['subj2']!r}, tid={int(partner['tid'])!r}, "
                    f"attr={partner['attr']!r}")
    assert any(text in msg for text in lone), msg
    assert "score both subject orders" in msg and msg.replace("e.g. ", "").count(". ") == 0  # one sentence
    # metrics on the raw frame raise the same error
    with pytest.raises(MetricsError, match="no subject-swapped partner"):
        M.positional_error(broken)


def test_missing_partner_names_the_lone_example():
    frame = frame_from_s(FIG2)
    with pytest.raises(MetricsError, match=r"subj1='Jennifer', subj2='Gerald', tid=0, attr='was a hunter'"):
        M.pair_examples(frame.iloc[[1]])
    # a partner under another template is no partner
    other = frame.copy()
    other.loc[1, "tid"] = 3
    with pytest.raises(MetricsError, match="2 ordered examples have no subject-swapped partner"):
        M.pair_examples(other)


def test_duplicate_examples_are_an_error():
    frame = frame_from_s(FIG2 * 2)
    dup = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    with pytest.raises(MetricsError, match=r"1 ordered examples occur more than once \(e.g. subj1='Gerald'"):
        M.pair_examples(dup)


@pytest.mark.parametrize("change, match", [
    (lambda f: f.drop(columns="s2_neg"), "lacks column"),
    (lambda f: f.assign(s1_pos=[np.nan, 0.1]), "missing scores"),
    (lambda f: f.assign(s1_pos=[1.5, 0.1]), "outside"),
    (lambda f: f.assign(s1_pos=["a", "b"]), "not numeric"),
    (lambda f: f.assign(subj2=f["subj1"]), "same subject in both slots"),
    (lambda f: f.assign(cluster1=["male", "male"]), "clusters"),
    (lambda f: f.iloc[:0], "no rows"),
])
def test_bad_scores_frames(change, match):
    with pytest.raises(MetricsError, match=match):
        M.pair_examples(change(frame_from_s(FIG2)))


def test_bad_arguments():
    with pytest.raises(MetricsError, match="ci="):
        M.subject_attribute_bias(M.example_scores(), ci=95)
    with pytest.raises(MetricsError, match="paired frame"):
        M.positional_error(pd.DataFrame({"x": [1]}))


# -- scale -------------------------------------------------------------------------------------------------------------
def test_full_gender_scale_synthetic():
    """2,744,000 ordered examples (70 + 70 names, 4 templates, 70 occupations): the point metrics run in seconds."""
    frame = synthetic_gender()
    assert len(frame) == 2_744_000
    paired = M.pair_examples(frame)
    assert len(paired) == 1_372_000
    errors = M.reasoning_errors(paired)
    assert errors["n_keys"] == 1_372_000
    # S ~ U(0, 0.5) independently: E|S - S'| = 1/6, avg S = 1/4
    assert errors["positional_error"] == pytest.approx(1 / 6, abs=2e-3)
    assert errors["average_score"] == pytest.approx(0.25, abs=2e-3)
    gamma = M.subject_attribute_bias(paired)
    assert len(gamma) == 140 * 70 and (gamma["n"] == 280).all()  # 70 partners × 4 templates (Table 1's gender set)
    gender = M.subject_attribute_bias(paired, group_by="gender")
    assert len(gender) == 140 and (gender["n"] == 19_600).all()
    mu_name, mu_gender = M.bias_intensity(paired), M.bias_intensity(paired, group_by="gender")
    assert mu_name > mu_gender > 0
    assert 0 < M.count_bias_intensity(paired) < 1
    assert len(M.subject_bias(paired)) == 140
