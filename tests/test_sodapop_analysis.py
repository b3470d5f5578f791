"""SODAPOP success rates, vocabulary and statistics (stereoprobe.sodapop.success / .analysis): the
authors' process_distractor_results.py and p_test.py, and the numbers printed in An et al. 2023."""

from __future__ import annotations

import string
from collections import defaultdict
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
import scipy.special

from stereoprobe.errors import MetricsError
from stereoprobe.paths import data_dir
from stereoprobe.sodapop import analysis as an
from stereoprobe.sodapop import names as names_mod
from stereoprobe.sodapop import success as su


def _outcomes(rows):
    return pd.DataFrame(rows, columns=["name", "context", "distractor", "wrong"])


TOY = _outcomes([
    ("A", 0, "good good boy", True),
    ("A", 0, "boy", False),
    ("A", 1, "good", False),
    ("A", 1, "Good boy", False),
    ("B", 0, "boy good", True),
    ("B", 1, "boy good", False),  # the same string in another context counts again
])


# ---------------------------------------------------------------- counts, SR, vocabulary (Eq. 1)

def test_stopwords_are_nltk_37_english():
    lines = (data_dir() / "sodapop" / "nltk_stopwords_english.txt").read_text().splitlines()
    assert len(lines) == len(set(lines)) == 179 and len(su.STOPWORDS) == 179
    assert lines[:3] == ["i", "me", "my"] and lines[-1] == "wouldn't"
    assert "the" in su.STOPWORDS and "The" not in su.STOPWORDS


def test_word_counts_occurrences_vs_presence():
    occ_all, occ_wrong = su.word_counts(TOY, "occurrences")
    pre_all, pre_wrong = su.word_counts(TOY, "presence")
    assert occ_all.names.tolist() == ["A", "B"] and occ_all.words.tolist() == ["good", "boy", "Good"]
    assert occ_all.frame().values.tolist() == [[3, 3, 1], [2, 2, 0]]
    assert occ_wrong.frame().values.tolist() == [[2, 1, 0], [1, 1, 0]]
    assert pre_all.frame().values.tolist() == [[2, 3, 1], [2, 2, 0]]
    assert pre_wrong.frame().values.tolist() == [[1, 1, 0], [1, 1, 0]]
    with pytest.raises(MetricsError, match="count mode"):
        su.word_counts(TOY, "tokens")
    spaced, _ = su.word_counts(_outcomes([("A", 0, "kind  rude ", False)]))  # split(" "), not split()
    assert spaced.words.tolist() == ["kind", "", "rude"] and spaced.frame().values.tolist() == [[1, 2, 1]]


def test_success_rates_ratio_of_pooled_sums():
    occ = su.success_rates(*su.word_counts(TOY)).frame()
    pre = su.success_rates(*su.word_counts(TOY, "presence")).frame()
    assert occ.loc["A"].tolist() == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert pre.loc["A"].tolist() == pytest.approx([1 / 2, 1 / 3, 0.0])
    assert occ.loc["B"].tolist() == pytest.approx([0.5, 0.5, 0.0])


def test_outcomes_contract_is_checked():
    with pytest.raises(MetricsError, match="repeats"):
        su.word_counts(pd.concat([TOY, TOY.iloc[:1]]))
    with pytest.raises(MetricsError, match="bool"):
        su.word_counts(TOY.assign(wrong=TOY["wrong"].astype(int)))
    with pytest.raises(MetricsError, match="columns"):
        su.word_counts(TOY.drop(columns="context"))


def _vocab(counts: dict, min_count=50, **kw):
    return su.vocabulary(pd.DataFrame(counts, index=["A", "B"]), min_count, **kw)


@pytest.mark.parametrize("word, kept", [
    ("kind", True),
    ("the", False),         # stopword
    ("The", True),          # the stopword test is case-sensitive
    ("", False),            # "" in string.punctuation
    ("()", False),          # substring of string.punctuation
    ("-", False),
    ("--", True),           # not a substring, and "-" is the allowed character
    ("well-read", True),
    ("n't", False),         # punctuation other than "-"
    ("ofof.", False),
])
def test_vocabulary_text_rules(word, kept):
    assert _vocab({"anchor": [99, 99], word: [99, 99]}) == (["anchor", word] if kept else ["anchor"])


def test_vocabulary_count_rules_and_empty_error():
    assert "()" in string.punctuation
    assert _vocab({"a1": [51, 51], "a2": [50, 99], "a3": [99, 50]}) == ["a1"]      # strictly > min_count
    assert _vocab({"a1": [100, 51], "a2": [100, 10]}) == ["a1"]                     # for every name
    assert _vocab({"a1": [3, 3], "a2": [1, 5]}, min_count=2) == ["a1"]
    assert _vocab({"kind": [99, 99], "nice": [99, 99]}, stopwords={"nice"}) == ["kind"]
    with pytest.raises(MetricsError, match=r"min_count=50.*2 names.*1 candidate"):
        _vocab({"kind": [99, 50], "the": [99, 99]})


def _literal_sr(outcomes: pd.DataFrame, min_count: int):
    """process_person_to_vocab + get_all_vocab of process_distractor_results.py, on the outcome rows."""
    person_to_all, person_to_wrong = defaultdict(list), defaultdict(list)
    for r in outcomes.itertuples():
        person_to_all[r.name].append(r.distractor)
        person_to_wrong[r.name]  # defaultdict: every person gets a key, as in load_from_dir
        if r.wrong:
            person_to_wrong[r.name].append(r.distractor)
    vocab_all, vocab_wrong = {}, {}
    for person in person_to_wrong:
        vocab_wrong[person], vocab_all[person] = defaultdict(int), defaultdict(int)
        for choice in person_to_wrong[person]:
            for word in choice.split(" "):
                vocab_wrong[person][word] += 1
        for choice in person_to_all[person]:
            for word in choice.split(" "):
                vocab_all[person][word] += 1
        for word in vocab_wrong[person]:
            vocab_wrong[person][word] /= vocab_all[person][word]
    stop = su.STOPWORDS
    vocab = []
    for w in list(vocab_all[list(vocab_all)[0]]):
        if w in stop or w in string.punctuation or any(c in string.punctuation and c != "-" for c in w):
            continue
        if (np.array([vocab_all[k][w] for k in vocab_all]) > min_count).all():
            vocab.append(w)
    return pd.DataFrame([[vocab_wrong[p][w] for w in vocab] for p in vocab_all], index=list(vocab_all), columns=vocab)


def test_sr_matrix_equals_the_literal_code_on_random_outcomes():
    rng = np.random.default_rng(0)
    lexicon = ["kind", "rude", "the", "The", "Happy", "n't", ".", "well-read", "ofof", "funny", "a", "()"]
    rows = []
    for name in ["Ann", "Bob", "Cid", "Dee"]:
        for context in range(4):
            seen = set()
            for _ in range(60):
                d = " ".join(rng.choice(lexicon, size=rng.integers(1, 5)))
                if d not in seen:
                    seen.add(d)
                    rows.append((name, context, d, bool(rng.random() < 0.3)))
    outcomes = _outcomes(rows)
    ours = su.sr_matrix(outcomes, min_count=20)
    literal = _literal_sr(outcomes, 20)
    assert ours.columns.tolist() == literal.columns.tolist() and len(literal.columns) >= 3
    np.testing.assert_allclose(ours.to_numpy(), literal.to_numpy(), rtol=0, atol=1e-15)
    assert ours.attrs["mode"] == "occurrences" and ours.attrs["n_names"] == 4


def test_sr_matrix_rows_and_filter_over_all_loaded_names():
    sr = su.sr_matrix(TOY, names=["B", "A"], min_count=1)
    assert sr.index.tolist() == ["B", "A"] and sr.columns.tolist() == ["good", "boy"]  # "Good" is absent for B
    assert su.sr_matrix(TOY, names=["A"], min_count=0).columns.tolist() == ["good", "boy"]  # "Good": 0 for B
    with pytest.raises(MetricsError, match="no distractors"):
        su.sr_matrix(TOY, names=["A", "Zoe"], min_count=1)


# ---------------------------------------------------------------- relative difference (Eq. 2–4)

def _sr(values: dict, names) -> pd.DataFrame:
    return pd.DataFrame(values, index=list(names))


def test_relative_difference_hand_computed_and_skip_rules():
    sr = _sr({"w": [0.2, 0.4, 0.1, 0.1], "zero1": [0, 0, 0.1, 0.2], "zero2": [0.1, 0.2, 0, 0],
              "same": [0.25, 0.75, 0.5, 0.5]}, "abcd")
    paper = an.relative_difference(sr, ["a", "b"], ["c", "d"], "paper")
    code = an.relative_difference(sr, ["a", "b"], ["c", "d"], "code")
    assert paper.index.tolist() == ["w"] and paper["w"] == pytest.approx(1.0) and code["w"] == pytest.approx(2.0)
    unequal = an.relative_difference(sr, ["a", "b", "c"], ["d"], "code")  # (S1 − S2) / mean(S1/3, S2/1)
    assert unequal["w"] == pytest.approx((0.7 - 0.1) / ((0.7 / 3 + 0.1) / 2))
    with pytest.raises(MetricsError, match="scale"):
        an.relative_difference(sr, ["a"], ["c"], "percent")
    with pytest.raises(MetricsError, match="both groups"):
        an.relative_difference(sr, ["a", "b"], ["b"], "paper")


def _random_sr(n_per_group=25, n_words=40, seed=0):
    rng = np.random.default_rng(seed)
    names = [f"n{i}" for i in range(2 * n_per_group)]
    sr = pd.DataFrame(rng.integers(1, 64, size=(2 * n_per_group, n_words)) / 64, index=names,
                      columns=[f"w{j}" for j in range(n_words)])
    return sr, names[:n_per_group], names[n_per_group:]


def test_rd_code_is_25_times_rd_paper():
    sr, g1, g2 = _random_sr()
    paper, code = an.relative_difference(sr, g1, g2, "paper"), an.relative_difference(sr, g1, g2, "code")
    assert paper.index.equals(code.index) and len(paper) > 30
    np.testing.assert_allclose(code.to_numpy(), 25 * paper.to_numpy(), rtol=1e-12)


def test_top_words_order_as_printed_by_the_code():
    sr = _sr({"p1": [0.5, 0.1], "p2": [0.3, 0.1], "n1": [0.1, 0.5], "n2": [0.1, 0.3], "z": [0.2, 0.25]}, "ab")
    top = an.top_words(sr, ["a"], ["b"], k=2)
    assert top[["side", "rank", "word"]].values.tolist() == [
        ["G1", 1, "p1"], ["G1", 2, "p2"], ["G2", 1, "n1"], ["G2", 2, "n2"]]
    np.testing.assert_allclose(top["rd_code"], top["rd_paper"])  # |G| = 1


# ---------------------------------------------------------------- permutation test (p_test.py)

def _literal_p_value(X, Y, person_to_vocab_wrong, word, n_perm):
    """p_test.p_value_sample, with the 10**6 cap replaced by n_perm."""
    state = np.random.get_state()
    try:
        np.random.seed(10)
        assert len(X) == len(Y)
        length = len(X)
        diff = lambda A, B: (np.average([person_to_vocab_wrong[a][word] for a in A])  # noqa: E731
                             - np.average([person_to_vocab_wrong[b][word] for b in B]))
        diff_orig = diff(X, Y)
        num = min(n_perm, int(scipy.special.comb(length * 2, length) * 100))
        larger = 0
        for _ in range(num):
            permute = np.random.permutation(X + Y)
            if abs(diff(permute[:length], permute[length:])) > abs(diff_orig):
                larger += 1
        return larger / float(num)
    finally:
        np.random.set_state(state)


@pytest.mark.parametrize("n, n_perm", [(3, 500), (5, 1500)])
def test_vectorized_compat_equals_the_literal_loop(n, n_perm):
    sr, g1, g2 = _random_sr(n, 8, seed=n)  # multiples of 1/64: exact sums, many tied splits
    sr["tied"] = [0.5] * n + [0.25] * n
    as_dict = {name: row.to_dict() for name, row in sr.iterrows()}
    ours = an.permutation_pvalues(sr, g1, g2, n_perm=n_perm, method="compat")
    literal = [_literal_p_value(g1, g2, as_dict, w, n_perm) for w in sr.columns]
    assert ours.tolist() == literal


def test_vectorized_compat_equals_the_literal_loop_on_continuous_data():
    rng = np.random.default_rng(7)
    names = [f"n{i}" for i in range(50)]
    sr = pd.DataFrame(rng.random((50, 3)) * np.array([1.0, 0.3, 0.05]) + np.r_[np.zeros(25), np.full(25, 0.02)][:, None],
                      index=names, columns=["a", "b", "c"])
    as_dict = {name: row.to_dict() for name, row in sr.iterrows()}
    ours = an.permutation_pvalues(sr, names[:25], names[25:], n_perm=1000, method="compat")
    assert ours.tolist() == [_literal_p_value(names[:25], names[25:], as_dict, w, 1000) for w in sr.columns]


def test_permutation_indices_match_randomstate_and_are_compact():
    idx = an.permutation_indices(50, 300, seed=10)
    rs = np.random.RandomState(10)
    assert all((rs.permutation(50) == row).all() for row in idx)
    assert idx.dtype == np.int8 and not idx.flags.writeable


def test_pvalues_identical_and_separated_groups():
    rng = np.random.default_rng(1)
    values = rng.random(25)
    sr = pd.DataFrame({"same": np.r_[values, values[::-1]], "apart": np.r_[np.full(25, 0.9), np.full(25, 0.1)]},
                      index=[f"n{i}" for i in range(50)])
    g1, g2 = sr.index[:25].tolist(), sr.index[25:].tolist()
    p = an.permutation_pvalues(sr, g1, g2, n_perm=5000, method="compat")
    assert p["same"] > 0.99 and p["apart"] == 0.0
    sampled = an.permutation_pvalues(sr, g1, g2, n_perm=5000, method="sampled")
    assert sampled["apart"] == 1 / 5001 and sampled["same"] == 1.0
    with pytest.raises(MetricsError, match="equal group sizes"):
        an.permutation_pvalues(sr, g1, g2[:-1], n_perm=10, method="compat")


def test_compat_smallest_nonzero_p_is_one_over_n():
    # stacked values [5, 4, 2 | 3, 1, 0]: only the splits {5, 4, 3} / {2, 1, 0} beat |d0| = 7/3
    sr = _sr({"w": [5.0, 4.0, 2.0, 3.0, 1.0, 0.0]}, "abdcef")
    best = [{0, 1, 3}, {2, 4, 5}]
    rows = an.permutation_indices(6, 2000, seed=10)
    first_hit = next(k for k, row in enumerate(rows) if set(row[:3].tolist()) in best)
    n = first_hit + 1
    p = an.permutation_pvalues(sr, ["a", "b", "d"], ["c", "e", "f"], n_perm=n, method="compat")
    assert p["w"] == 1 / n
    p_all = an.permutation_pvalues(sr, ["a", "b", "d"], ["c", "e", "f"], n_perm=2000, method="compat")
    assert (p_all * 2000).round(9).eq((p_all * 2000).round()).all() and 0 < p_all["w"] < 0.2


def test_exact_method_equals_brute_force():
    sr, g1, g2 = _random_sr(4, 6, seed=3)
    x = sr.loc[g1 + g2].to_numpy()
    brute = []
    for j in range(x.shape[1]):
        d0 = abs(x[:4, j].mean() - x[4:, j].mean())
        splits = list(combinations(range(8), 4))
        hits = sum(abs(x[list(s), j].mean() - np.delete(x[:, j], list(s)).mean()) >= d0 for s in splits)
        brute.append(hits / len(splits))
    exact = an.permutation_pvalues(sr, g1, g2, n_perm=70, method="exact")
    np.testing.assert_allclose(exact.to_numpy(), brute, rtol=0, atol=1e-15)
    with pytest.raises(MetricsError, match="C\\(8, 4\\)"):
        an.permutation_pvalues(sr, g1, g2, n_perm=69, method="exact")


def test_qvalues_bh_monotone_and_at_least_p():
    p = pd.Series([0.001, 0.2, 0.03, 0.04, 0.5, 0.0], index=list("abcdef"))
    q = an.qvalues(p)
    assert q.index.equals(p.index) and (q >= p).all() and (q <= 1).all()
    order = np.argsort(p.to_numpy(), kind="stable")
    assert np.all(np.diff(q.to_numpy()[order]) >= 0)
    assert q["e"] == 0.5 and q["c"] == pytest.approx(0.06)


def test_rd_table_columns_order_and_q():
    sr, g1, g2 = _random_sr(25, 12, seed=4)
    table = an.rd_table(sr, g1, g2, n_perm=2000, method="compat")
    assert table.columns.tolist() == ["word", "side", "mean_g1", "mean_g2", "rd_paper", "rd_code", "p", "q"]
    assert table["rd_paper"].is_monotonic_increasing and (table["q"] >= table["p"]).all()
    np.testing.assert_allclose(table["rd_code"], 25 * table["rd_paper"], rtol=1e-12)
    assert set(table["side"]) <= {"G1", "G2"} and (table["side"].eq("G1") == table["rd_paper"].gt(0)).all()
    small = an.rd_table(sr, g1, g2, words=["w0", "w1"], n_perm=100, method="sampled")
    assert sorted(small["word"]) == ["w0", "w1"]


# ---------------------------------------------------------------- KMeans, t-SNE (Tables 2/9, Fig. 4–5)

def test_kmeans_accuracy_separated_identical_and_label_flip():
    rng = np.random.default_rng(5)
    apart = np.vstack([rng.normal(0, 0.1, (25, 4)), rng.normal(3, 0.1, (25, 4))])
    y = np.r_[np.ones(25, int), np.zeros(25, int)]
    assert an.kmeans_accuracy(apart, y) == 1.0 == an.kmeans_accuracy(apart, 1 - y)
    same = rng.normal(0, 1, (50, 4))
    acc = an.kmeans_accuracy(same, y)
    assert acc == an.kmeans_accuracy(same, 1 - y) and 0.5 <= acc <= 0.7
    with pytest.raises(MetricsError, match="0/1 label"):
        an.kmeans_accuracy(same, y[:-1])


def test_pair_constants():
    assert len(an.TABLE9_PAIRS) == len(an.RD_PAIRS) == len(an.RD_PAIRS_FIXED) == 16
    assert len(an.CODE_KMEANS_PAIRS) == 18 and len(set(an.TABLE9_PAIRS)) == 16
    assert an.RD_PAIRS[-1] == ("HS_f", "AS_m") and an.RD_PAIRS_FIXED[-1] == ("HS_f", "HS_m")
    keys = {g for pairs in (an.TABLE9_PAIRS, an.CODE_KMEANS_PAIRS, an.RD_PAIRS) for pair in pairs for g in pair}
    assert keys <= set(names_mod.GROUPS)


def test_separability_table_and_tsne_on_synthetic_groups():
    rng = np.random.default_rng(6)
    groups = {g: [f"{g}{i}" for i in range(6)] for g in ("EA_f", "AA_f", "EA_m", "AA_m")}
    shift = {"EA_f": 0.0, "AA_f": 0.0, "EA_m": 2.0, "AA_m": 2.0}
    sr = pd.concat([pd.DataFrame(rng.normal(shift[g], 0.1, (6, 3)), index=n) for g, n in groups.items()])
    table = an.separability_table(sr, groups, pairs=[("EA_f", "EA_m"), ("AA_f", "AA_m")])
    assert table.values.tolist() == [["EA_f-EA_m", "EA_f", "EA_m", 1.0], ["AA_f-AA_m", "AA_f", "AA_m", 1.0]]
    with pytest.raises(MetricsError, match="HS_f"):
        an.separability_table(sr, groups, pairs=[("HS_f", "EA_f")])
    xy = an.tsne_coordinates(sr, groups, "EA", "AA")
    assert xy.columns.tolist() == ["name", "group", "x", "y"] and len(xy) == 24
    assert xy["group"].tolist() == ["EA_f"] * 6 + ["AA_f"] * 6 + ["EA_m"] * 6 + ["AA_m"] * 6
    assert np.isfinite(xy[["x", "y"]].to_numpy()).all()


# ---------------------------------------------------------------- reference numbers (Tables 3–4, 6, 9–21)

def test_reference_tables():
    t9 = an.reference("table9")
    models = ["bert", "inlp_race", "inlp_gender", "sd_race", "sd_gender", "dropout", "cda_race", "cda_gender"]
    assert t9.shape == (16, 11) and t9.columns.tolist()[3:] == models
    assert list(zip(t9["g1"], t9["g2"])) == list(an.TABLE9_PAIRS)
    assert t9.loc[0, "dropout"] == 1.0 and t9.loc[1, "inlp_gender"] == 0.9 and t9[models].stack().between(0.5, 1).all()
    assert (t9["bert"] == t9["sd_race"]).all()  # SentenceDebias leaves every row unchanged (Table 9)
    top = an.reference("top_words")
    assert len(top) == 70 and set(top["table"]) == {"3", "4", "6", "10", "13", "21"}
    assert top.groupby(["table", "side"]).size().to_dict() == {
        (t, s): (10 if t == "10" else 5) for t in ("3", "4", "6", "10", "13", "21") for s in ("G1", "G2")}
    ally = top[(top["table"] == "3") & (top["word"] == "ally")].iloc[0]
    assert ally["rd"] == 0.04 and ally["p"] == 0.0
    assert top[top["table"] == "10"][["rd", "p"]].isna().all().all() and "Happy" in set(top["word"])
    assert (np.sign(top["rd"].dropna()) == top.loc[top["rd"].notna(), "side"].map({"G1": 1, "G2": -1})).all()
    with pytest.raises(MetricsError, match="table9"):
        an.reference("table2")
