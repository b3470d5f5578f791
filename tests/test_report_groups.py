"""Nationality, ethnicity/religion and model-comparison tables: geoscheme, paper references, rank-figure
inputs, Table 4 selection, Western summary, Fig. 3/6 references, the claims, count-based η CI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stereoprobe.book import plots
from stereoprobe.unqover import metrics as M
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover import wordlists as wl


def test_geoscheme_covers_exactly_the_country_list():
    geo = tables.geoscheme()
    subjects = [s.name for s in wl.load_subjects("country")]
    assert sorted(geo.index) == sorted(subjects) and len(geo) == 69
    assert geo.loc["Somalia", "area"] == "Eastern Africa" and geo.loc["Somalia", "region"] == "Africa"
    assert geo.loc["Switzerland", "subregion"] == "Western Europe" and geo.loc["Switzerland", "western"] == 1
    assert geo.loc["America", "m49_code"] == "840" and geo.loc["Afghanistan", "m49_code"] == "004"
    assert geo.loc["Kosovo", "m49_code"] == ""  # no M49 code, stated in the file
    assert geo["western"].sum() == 20
    western_areas = set(geo.loc[geo["western"] == 1, "area"])
    assert western_areas == {"Northern America", "Northern Europe", "Western Europe", "Southern Europe",
                             "Australia and New Zealand"}
    # intermediate regions exist exactly for Sub-Saharan Africa and Latin America and the Caribbean
    inter = geo[geo["intermediate_region"] != ""]
    assert set(inter["subregion"]) == {"Sub-Saharan Africa", "Latin America and the Caribbean"}


@pytest.mark.parametrize("dataset,lists", [("nationality", ["country"]), ("ethnicity", ["ethnicity"]),
                                           ("religion", ["religion"])])
def test_paper_gamma_keys_match_the_word_lists(dataset, lists):
    paper = tables.paper_gamma_x(dataset)
    names = {tables.subject_key(s.name) for name in lists for s in wl.load_subjects(name)}
    assert set(paper.index) == names  # the two stale keys (german, native-american) are renamed
    assert list(paper.columns) == tables.PAPER_MODELS + ["avg_rank", "std_rank"]


@pytest.mark.parametrize("dataset", ["ethnicity", "religion"])
def test_rank_figure_inputs_reproduce_the_printed_ranks(dataset):
    paper = tables.paper_gamma_x(dataset)
    ranked = M.rank_subjects(paper[tables.PAPER_MODELS].sort_values("RoBERTa_B", ascending=False, kind="stable"))
    assert list(ranked.index) == list(tables.paper_ranks(dataset).index)  # the printed order
    assert np.allclose(ranked["avg_rank"], paper.loc[ranked.index, "avg_rank"])
    assert np.allclose(ranked["std_rank"].round(2), paper.loc[ranked.index, "std_rank"])


def test_rank_figure_inputs_nationality_and_paper_points():
    paper = tables.paper_gamma_x("nationality")
    ranked = M.rank_subjects(paper[tables.PAPER_MODELS])
    ok = np.isclose(ranked["avg_rank"], paper.loc[ranked.index, "avg_rank"])
    assert ok.sum() >= 40  # the rest differ only through 4-decimal ties (tests/test_metrics.py restores them)
    printed = tables.paper_ranks("nationality")
    assert printed.index[0] == "somalia" and printed.loc["somalia", "avg_rank"] == 5.0
    assert printed.loc["somalia", "std_rank"] == pytest.approx(4.56)
    assert printed.loc["switzerland", "avg_rank"] == pytest.approx(65.6)
    religion = tables.paper_ranks("religion")
    assert religion.index[0] == "muslim" and religion.loc["muslim", "avg_rank"] == pytest.approx(1.8)


def test_ranks_beside_paper_and_agreement():
    paper = tables.paper_gamma_x("religion")
    matrix = paper[tables.PAPER_MODELS].rename(index=str.title)  # our tables use the list's spelling
    ranks = tables.ranks_beside_paper(matrix, "religion")
    assert np.allclose(ranks["avg_rank"], ranks["paper_avg_rank"])
    agree = tables.rank_agreement(ranks)
    assert agree["rho"] == pytest.approx(1.0) and agree["subjects"] == 11
    reversed_ = tables.ranks_beside_paper(-matrix, "religion")
    assert tables.rank_agreement(reversed_)["rho"] < -0.9
    # a subset of subjects: the paper is re-ranked over the same subjects (ranks 1..k, not 1..11)
    part = tables.ranks_beside_paper(matrix.iloc[:5], "religion")
    assert sorted(part["paper_avg_rank"].round(6)) == sorted(part["avg_rank"].round(6))
    assert part["paper_avg_rank"].max() <= 5


def test_subject_table_layout():
    gammas = {"m": pd.DataFrame({"subject": ["Muslim", "Atheist"], "gamma": [0.02, -0.01], "eta": [0.5, -0.2],
                                 "n": [10, 10]})}
    table = tables.subject_table(gammas, "religion")
    assert list(table.columns) == [("m", "γ"), ("m", "η"), ("paper RoBERTa_B SQuAD", "γ")]
    assert list(table.index) == ["Muslim", "Atheist"]
    assert table.loc["Atheist", ("paper RoBERTa_B SQuAD", "γ")] == pytest.approx(
        tables.paper_gamma_x("religion").loc["atheist", "RoBERTa_B"])


def test_abbreviated_tick_labels():
    assert plots.abbreviate("African-American") == "A.American"
    assert plots.abbreviate("Middle-Eastern") == "M.Eastern"
    assert plots.abbreviate("Native American") == "Native American"
    assert plots.abbreviate("somalia") == "Somalia" and plots.abbreviate("sri lanka") == "Sri Lanka"


def _cells(rows):
    return pd.DataFrame(rows, columns=["subject", "attr", "attr_cluster", "gamma", "eta", "n"])


def test_top_pairs_keeps_the_best_pair_of_each_new_country():
    table = _cells([
        ("Iraq", "were thieves", "crime", 0.30, 1.0, 9), ("Iraq", "were rude", "rude", 0.25, 1.0, 9),
        ("Peru", "were poor", "poor", 0.20, 0.5, 9), ("Chile", "were rude", "rude", 0.10, 0.5, 9),
        ("Peru", "were rude", "rude", 0.28, 1.0, 9), ("Norway", "were poor", "poor", -0.4, -1.0, 9),
    ])
    top = tables.top_pairs({"m": table}, k=3)
    assert list(top["country"]) == ["Iraq", "Peru", "Chile"]
    assert list(top["attribute"]) == ["were thieves", "were rude", "were rude"]
    assert list(top["area"]) == ["Western Asia", "South America", "South America"]
    assert list(top["rank"]) == [1, 2, 3]
    assert list(top.columns) == ["model", "rank", "country", "area", "cluster", "attribute", "gamma", "n"]


def test_top_pairs_carry_the_interval_as_numbers():
    table = _cells([("Iraq", "were thieves", "crime", 0.30, 1.0, 9), ("Peru", "were poor", "poor", 0.20, 0.5, 1)])
    table["gamma_lo"], table["gamma_hi"] = [0.1, np.nan], [0.45, np.nan]  # one value: no interval
    top = tables.top_pairs({"m": table}, k=2)
    assert list(top.columns) == ["model", "rank", "country", "area", "cluster", "attribute", "gamma", "ci_low",
                                 "ci_high", "n"]
    assert top["ci_low"].dtype == float and top["ci_high"].dtype == float
    first = top.iloc[0]
    assert first["ci_low"] <= first["gamma"] <= first["ci_high"]
    assert top["ci_low"].isna().tolist() == [False, True]


def test_cluster_bias_pools_attributes_count_weighted():
    rng = np.random.default_rng(0)
    rows = []
    for a, b in [("Iraq", "Peru"), ("Iraq", "Chile"), ("Chile", "Peru")]:
        for attr, cluster in [("x1", "crime"), ("x2", "crime"), ("y1", "poor")]:
            for tid in range(2):
                s = rng.uniform(0, 1, 4)
                for first, second in ((a, b), (b, a)):
                    rows.append({"subj1": first, "subj2": second, "cluster1": "None", "cluster2": "None", "tid": tid,
                                 "attr_cluster": cluster, "attr": attr, "s1_pos": s[0], "s2_pos": s[1],
                                 "s1_neg": s[2], "s2_neg": s[3]})
                    s = s[[1, 0, 3, 2]]
    frame = pd.DataFrame(rows)
    by_attr = M.subject_attribute_bias(M.pair_examples(frame))
    by_cluster = tables.cluster_bias(frame, ci=None)
    crime = by_attr[(by_attr.subject == "Iraq") & by_attr.attr.isin(["x1", "x2"])]
    expected = (crime.gamma * crime.n).sum() / crime.n.sum()
    got = by_cluster[(by_cluster.subject == "Iraq") & (by_cluster.attr == "crime")]
    assert got["gamma"].iloc[0] == pytest.approx(expected) and got["n"].iloc[0] == crime.n.sum()
    assert tables.cluster_matrix(by_cluster).shape == (3, 2)


def test_western_summary():
    geo = tables.geoscheme()
    gamma = pd.Series({s: (-0.02 if w else 0.03) for s, w in geo["western"].items()})
    out = tables.western_summary(gamma.to_frame("m"), geo).iloc[0]
    assert out["W"] == 20 and out["non-W"] == 49
    assert out["Δγ"] == pytest.approx(-0.05)
    assert out["rank W"] == pytest.approx(59.5) and out["middle"] == 35  # ranks 50..69
    assert out["p"] < 1e-6
    custom = tables.western_summary(gamma.to_frame("m"), geo, western_areas=["Western Europe"]).iloc[0]
    assert custom["W"] == 4
    with pytest.raises(ValueError, match="Unknown M49 area"):
        tables.western_summary(gamma.to_frame("m"), geo, western_areas=["Europe"])
    with pytest.raises(ValueError, match="not in the geoscheme"):
        tables.western_summary(pd.DataFrame({"m": [0.1]}, index=["Atlantis"]), geo)
    paper = tables.western_summary(tables.paper_gamma_x("nationality")[tables.PAPER_MODELS], geo)
    assert (paper["Δγ"] < 0).all()  # every paper model: Western countries less negative


def test_paper_fig3_fig6_reference():
    ref = tables.paper_fig3_fig6()
    assert len(ref) == 2 * 4 * 3 * 5
    mu = ref[ref.metric == "mu"].set_index(["dataset", "setting", "model"])["value"]
    assert mu[("gender", "SQuAD", "BERT_L")] == pytest.approx(0.423)
    assert mu[("nationality", "SQuAD", "RoBERTa_L")] == pytest.approx(0.226)
    eta = ref[ref.metric == "eta"].set_index(["dataset", "setting", "model"])
    assert eta.loc[("gender", "NewsQA", "BERT_L"), "value"] == pytest.approx(0.84)  # "0.83~0.85"
    assert eta.loc[("gender", "NewsQA", "BERT_L"), "approx"]
    assert eta.loc[("nationality", "NewsQA", "BERT_L"), "value"] == pytest.approx(0.39)  # "~0.39"
    assert not eta.loc[("gender", "SQuAD", "BERT_L"), "approx"]


def test_paper_claims_on_the_papers_bars():
    claims = tables.paper_claims().set_index("claim")
    larger = claims.loc["larger QA models are more biased"]
    assert larger["of"] == 4 * 2 * 3 and 0 < larger["holds"] < larger["of"]
    assert "RoBERTa_L below RoBERTa_B (NewsQA gender)" in larger["exceptions"]  # the paper's own exception
    assert "RoBERTa_L below RoBERTa_B (NewsQA religion)" in larger["exceptions"]
    newsqa = claims.loc["NewsQA models are less biased than SQuAD models"]
    assert newsqa["of"] == 20 and newsqa["holds"] == 20  # "everywhere" holds on the measured bars


def _grid_row(dataset, setting, model, model_id, mu, half=0.01):
    return {"dataset": dataset, "setting": setting, "model": model, "model_id": model_id, "mu": mu,
            "mu_lo": mu - half, "mu_hi": mu + half}


def test_our_claims_verdicts():
    grid = pd.DataFrame([
        _grid_row("gender", "SQuAD", "bert-s", "org/bert-small-squad", 0.10),
        _grid_row("gender", "SQuAD", "bert-l", "org/bert-large-squad", 0.30),
        _grid_row("gender", "NewsQA", "bert-l-n", "org/bert-large-newsqa", 0.20),
        _grid_row("gender", "SQuAD", "zoo:minilm-qa", "zoo:minilm-qa", 0.18),
        _grid_row("gender", "LM", "zoo:minilm-mlm", "zoo:minilm-mlm", 0.05),
    ]).replace({"setting": {"SQuAD": "SQuAD"}})
    grid.loc[3, "setting"] = "QA"
    sizes = {"org/bert-small-squad": 10, "org/bert-large-squad": 30, "org/bert-large-newsqa": 30,
             "zoo:minilm-qa": 22, "zoo:minilm-mlm": 22}
    claims = tables.our_claims(grid, sizes).set_index("claim")
    assert "bert-l vs bert-s (SQuAD gender): holds" in claims.loc["larger QA models are more biased", "result"]
    assert "higher after fine-tuning" in claims.loc["fine-tuning shifts bias", "result"]
    assert "bert-l-n vs its SQuAD twin (gender): holds" in claims.loc[
        "NewsQA models are less biased than SQuAD models", "result"]
    one = tables.our_claims(grid.iloc[[3, 4]], sizes).set_index("claim")
    assert one.loc["larger QA models are more biased", "comparisons"] == 0
    assert one.loc["larger QA models are more biased", "result"].startswith("not testable")
    assert one.loc["fine-tuning shifts bias", "comparisons"] == 1


def test_setting_and_base_lm():
    assert tables.setting_of("tli8hf/unqover-roberta-base-newsqa", False) == "NewsQA"
    assert tables.setting_of("tli8hf/unqover-roberta-base-squad", False) == "SQuAD"
    assert tables.setting_of("zoo:minilm-qa", False) == "QA" and tables.setting_of("anything", True) == "LM"
    assert tables.base_lm("tli8hf/unqover-bert-large-uncased-newsqa") == "bert-large-uncased-whole-word-masking"
    assert tables.base_lm("zoo:minilm-qa") == "zoo:minilm-mlm" and tables.base_lm("x/y") is None


def test_count_bias_intensity_ci():
    frame = M.example_scores()
    assert M.count_bias_intensity(frame) == 1.0
    rng = np.random.default_rng(1)
    rows = []
    for a, b in [("A", "B"), ("A", "C"), ("B", "C")]:
        for attr in ("p", "q"):
            for tid in range(6):
                s = rng.uniform(0, 1, 4)
                for first, second in ((a, b), (b, a)):
                    rows.append({"subj1": first, "subj2": second, "cluster1": "None", "cluster2": "None",
                                 "tid": tid, "attr_cluster": "c", "attr": attr, "s1_pos": s[0], "s2_pos": s[1],
                                 "s1_neg": s[2], "s2_neg": s[3]})
                    s = s[[1, 0, 3, 2]]
    paired = M.pair_examples(pd.DataFrame(rows))
    eta = M.count_bias_intensity(paired, ci=0.95, n_boot=300, seed=0)
    assert list(eta.index) == ["eta", "eta_lo", "eta_hi", "eta_bias"]
    assert eta["eta"] == pytest.approx(M.count_bias_intensity(paired))
    assert eta["eta_lo"] < eta["eta_hi"] and eta["eta_bias"] > 0  # mean of |noisy means| is biased upward
    with pytest.raises(M.MetricsError, match="confidence level"):
        M.count_bias_intensity(paired, ci=2)
