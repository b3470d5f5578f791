"""The UnQover chapters' tables and quoted numbers (stereoprobe.book.views.unqover) on small synthetic tables and the
paper's reference values (the notebooks staying thin: tests/test_chapters.py)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from stereoprobe.book.views import unqover as chapter

from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover import metrics

matplotlib.use("Agg")


def _errors(models=("zoo:minilm-qa", "lab:qa-biased")) -> pd.DataFrame:
    return pd.DataFrame({"model": list(models), "delta": [0.25, 0.0125][:len(models)],
                         "epsilon": [0.5, 0.02][:len(models)], "avg_s": [0.4, 0.3][:len(models)],
                         "keys": [100, 100][:len(models)]})


def test_error_numbers_keys_order_and_lab_note():
    numbers = chapter.error_numbers(_errors())
    assert list(numbers)[:6] == ["delta_zoo_minilm_qa", "eps_zoo_minilm_qa", "avgs_zoo_minilm_qa",
                                 "delta_lab_qa_biased", "eps_lab_qa_biased", "avgs_lab_qa_biased"]
    assert numbers["first_model"] == "zoo:minilm-qa" and numbers["first_delta"] == 0.25
    assert "at most 0.013" in numbers["lab_note"]  # the lab model's δ, not the zoo model's
    assert chapter.error_numbers(_errors(("zoo:minilm-qa",)))["lab_note"] == ""


def test_fig2_numbers_are_the_worked_example():
    paired = metrics.pair_examples(metrics.example_scores())
    bias = metrics.comparative_bias(paired)
    numbers = chapter.fig2_numbers(paired, bias)
    assert numbers["fig2_C"] == pytest.approx(float(bias["C"].iloc[0]))
    assert numbers["fig2_delta"] == pytest.approx(float(metrics.positional_error(paired)))
    assert numbers["fig2_eps"] == pytest.approx(float(metrics.attribute_error(paired)))
    assert all(isinstance(v, float) for v in numbers.values())


def test_count_numbers_formats_the_counts():
    n = type("N", (), {"paper_examples": 1234567, "passes": 4938268})()
    assert chapter.count_numbers(n, ["a", "b"], "clean") == {"n_examples": "1,234,567", "n_passes": "4,938,268",
                                                             "n_models": 2, "mode": "clean"}


def test_planted_numbers_use_the_first_model_or_the_first_by_name():
    recovery = pd.DataFrame({"model": ["lab:z", "lab:z", "lab:a"], "rank": [2, 5, 9], "of": [30, 30, 30]})
    assert chapter.planted_occupation_numbers(recovery, {"x": "f", "y": "m"}) == {
        "planted_model": "lab:z", "planted_worst_rank": 5, "planted_n": 2}
    # nationality: the worst rank of the lab model it names, the first given (cb3c729; was: the first by name)
    assert chapter.cluster_recovery_numbers(recovery) == {"lab_model": "lab:z", "lab_worst_rank": 5, "lab_cells": 30}
    assert chapter.planted_occupations({}, {}).empty


def test_show_functions_say_when_nothing_was_planted(capsys):
    chapter.show_cluster_recovery(pd.DataFrame())
    chapter.show_planted_occupations(pd.DataFrame(), {})
    out = capsys.readouterr().out.splitlines()
    assert out == ["No lab masked LM in `lab_lm_models`: nothing was planted.",
                   "No lab model in `lab_models`: nothing was planted."]


def test_top_subjects_and_top_subject_numbers():
    gammas = {"m1": pd.DataFrame({"subject": list("abcdef")}), "m2": pd.DataFrame({"subject": list("fedcba")})}
    table = chapter.top_subjects(gammas, k=5)
    assert table.index.tolist() == [1, 2, 3, 4, 5] and table.index.name == "rank by γ(x)"
    assert table["m2"].tolist() == list("fedcb")
    numbers = chapter.top_subject_numbers({"ethnicity": {"gammas": gammas}, "religion": {"gammas": gammas}})
    paper = tables.paper_ranks("religion")
    assert numbers == {"paper_top_religion": paper.index[0].title(),
                       "paper_top_religion_rank": f"{paper['avg_rank'].iloc[0]:.1f}",
                       "ours_top_ethnicity": "a", "ours_top_religion": "a"}


def test_agreement_numbers_and_view():
    agreement = pd.Series({"rho": -0.25, "p_value": 0.5, "subjects": 12})
    assert chapter.agreement_numbers(agreement) == {"rho": "-0.25", "rho_p": "0.5", "rho_n": 12}
    html = chapter.agreement_view(agreement, "ours vs paper").to_html()
    assert "ours vs paper" in html and "-0.250" in html


def test_western_table_puts_ours_above_the_papers():
    paper = tables.paper_gamma_x("nationality")[tables.PAPER_MODELS]
    west = chapter.western_table(paper.iloc[:, :2])
    assert west.columns[0] == "source"
    assert west["source"].tolist() == ["ours"] * 2 + ["paper"] * 5
    ours, theirs = west[west.source == "ours"], west[west.source == "paper"].iloc[:2]
    np.testing.assert_allclose(ours["Δγ"].to_numpy(), theirs["Δγ"].to_numpy())


def test_paper_ranks_figure_reproduces_the_printed_ranks():
    ranked = chapter._paper_ranked("religion")
    printed = tables.paper_ranks("religion")
    np.testing.assert_allclose(ranked["avg_rank"].reindex(printed.index).to_numpy(), printed["avg_rank"].to_numpy(),
                               atol=0.051)


def test_plots_draw_and_return_our_ranks():
    import matplotlib.pyplot as plt

    paper = tables.paper_gamma_x("religion")[tables.PAPER_MODELS]
    gammas = {m: pd.DataFrame({"subject": paper.index, "gamma": paper[m].to_numpy(),
                               "gamma_lo": paper[m].to_numpy() - 0.01, "gamma_hi": paper[m].to_numpy() + 0.01})
              for m in ("BERT_B", "RoBERTa_B")}
    ranks = chapter.plot_rank_figures("religion", gammas)
    assert len(plt.gcf().axes) == 2
    assert set(ranks.columns) >= {"avg_rank", "paper_avg_rank"} and len(ranks) == len(paper)
    ax = chapter.plot_gamma_ci(gammas, "γ")
    assert ax.get_title() == "γ"
    plt.close("all")


# ------------------------------------------------------------------ comparing models

def _grid() -> pd.DataFrame:
    """Two bias classes × (the zoo QA model, its masked LM), with μ/η and their intervals."""
    rows = []
    for dataset in ("gender", "religion"):
        for model, setting, mu in (("zoo:minilm-qa", "QA", 0.30), ("zoo:minilm-mlm", "LM", 0.10)):
            rows.append({"dataset": dataset, "setting": setting, "model": model, "model_id": model, "mu": mu,
                         "mu_lo": mu - 0.02, "mu_hi": mu + 0.02, "eta": 0.5, "eta_lo": 0.45, "eta_hi": 0.55,
                         "subjects": 140})
    return pd.DataFrame(rows)


def test_model_sizes_count_each_model_once_in_order():
    sizes = chapter.model_sizes(["zoo:minilm-qa"], ["zoo:minilm-mlm", "zoo:minilm-qa"])
    assert list(sizes) == ["zoo:minilm-qa", "zoo:minilm-mlm"]
    assert all(20e6 < n < 25e6 for n in sizes.values())  # MiniLM-L6: 22.7 M with the heads
    assert sizes["zoo:minilm-mlm"] > sizes["zoo:minilm-qa"]  # the masked LM's head is larger than the span head
    table = chapter.sizes_table(sizes)
    assert table["parameters"].tolist() == list(sizes.values()) and table["parameters"].dtype == "int64"


def test_grid_view_shows_the_metric_with_its_interval():
    mu, eta = chapter.grid_view(_grid(), "mu"), chapter.grid_view(_grid(), "eta")
    assert list(mu.data.columns) == ["dataset", "setting", "model", "mu", "mu_lo", "mu_hi", "subjects"]
    assert list(eta.data.columns) == ["dataset", "setting", "model", "eta", "eta_lo", "eta_hi"]
    html = mu.to_html()
    assert ">[0.280,<" in html and ">0.320]<" in html and ">mu 95% CI<" in html and ">140<" in html


def test_plot_intensity_draws_four_panels_beside_the_paper():
    import matplotlib.pyplot as plt

    fig = chapter.plot_intensity(_grid(), "eta")
    assert len(fig.axes) == 4 and [ax.get_ylabel() for ax in fig.axes] == ["η"] * 4
    assert [ax.get_title() for ax in fig.axes] == [d.capitalize() for d in tables.BIAS_CLASSES]
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[0].startswith("paper") and labels[-1] == "ours\nLM"
    plt.close("all")


def test_paper_claim_numbers_on_the_papers_bars():
    paper = tables.paper_claims()
    numbers = chapter.paper_claim_numbers(paper)
    assert numbers == {"paper_larger_holds": 19, "paper_larger_of": 24, "paper_newsqa_holds": 20,
                       "paper_newsqa_of": 20}  # 3 size pairs × 2 settings × 4 classes; 5 models × 4 classes
    assert all(type(v) is int for v in numbers.values())
    assert "larger QA models are more biased" in chapter.claims_view(paper).to_html()


def test_claim_numbers_count_the_testable_claims():
    sizes = {"zoo:minilm-qa": 22_566_146, "zoo:minilm-mlm": 22_744_506}
    claims = tables.our_claims(_grid(), sizes)
    assert chapter.claim_numbers(claims) == {"testable_claims": 1}  # only "fine-tuning shifts μ": QA vs its LM


def test_every_table_says_what_it_is():
    paired = metrics.pair_examples(metrics.example_scores())
    scores = chapter.fig2_scores_view(metrics.example_scores())
    assert list(scores.data.columns) == ["subj1", "subj2", "s1_pos", "s2_pos", "s1_neg", "s2_neg"]
    assert scores.caption.startswith("Fig. 2 (paper)") and "0.73" in scores.to_html()
    bias = chapter.fig2_bias_view(metrics.comparative_bias(paired))
    assert "+0.1575" in bias.to_html() and "Eq. 6" in bias.caption
    assert ">—<" in bias.to_html() and ">None<" not in bias.to_html()  # the attribute has no cluster
    errors = chapter.errors_view(_errors())
    assert "δ" in errors.caption and chapter.errors_view(_errors(), caption="masked LMs").caption == "masked LMs"
    table5 = chapter.table5_view(_errors(), _errors(("zoo:minilm-mlm",)))
    assert table5.caption.startswith("Table 5 (paper) and ours")
    assert {"ours: QA", "ours: LM"} <= set(table5.data.index.get_level_values("source"))
    claims = tables.paper_claims()
    assert chapter.claims_view(claims).caption.startswith("The paper's claims checked on its own bars")
    assert chapter.claims_view(tables.our_claims(_grid(), {"zoo:minilm-qa": 1, "zoo:minilm-mlm": 1})).caption \
        .startswith("The paper's claims on the models run here")
    assert chapter.grid_view(_grid(), "eta").caption.endswith("(our bars of Fig. 6)")
    assert chapter.paper_table2_view().caption.startswith("Table 2 (paper)")
    assert chapter.sizes_table({"m": 1}).attrs["caption"] == "Parameters per model"


def test_shared_occupations_view_is_table3():
    gammas = {m: pd.DataFrame({"subject": ["female", "female", "male"], "attr": ["nurse", "pilot", "pilot"],
                               "gamma": [0.5, 0.1, 0.4]}) for m in ("a", "b")}
    view = chapter.shared_occupations_view(gammas, k=1)
    pd.testing.assert_frame_equal(view.data, tables.shared_occupations(gammas, k=1))
    assert view.caption == "Table 3 (ours): the occupations in every model's top 1 by γ, per gender"
