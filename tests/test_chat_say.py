"""The views of the chapter on what chat models say (stereoprobe.book.views.chat_say), on the chat lab pair, whose
answers are known: it abstains on every occupation but its planted ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions
from stereoprobe.book.views import chat_say as view
from stereoprobe.prompts import template
from stereoprobe.unqover.generate import DatasetSpec


def test_rank_correlation_is_one_with_itself_and_minus_one_reversed():
    x = pd.Series(np.arange(8.0), index=[f"c{i}" for i in range(8)])
    same = view.rank_correlation(x, x, n_boot=200, seed=0)
    assert same == pytest.approx({"pairs": 8, "spearman": 1.0, "ci_low": 1.0, "ci_high": 1.0})
    assert view.rank_correlation(x, -x, n_boot=200, seed=0)["spearman"] == -1.0
    # only the common cells count; too few pairs, or a constant side, give no ρ
    assert view.rank_correlation(x, x.iloc[:6], n_boot=200, seed=0)["pairs"] == 6
    assert np.isnan(view.rank_correlation(x.iloc[:2], x.iloc[:2], n_boot=200, seed=0)["spearman"])
    assert np.isnan(view.rank_correlation(x, x * 0, n_boot=200, seed=0)["spearman"])
    interval = view.rank_correlation(x, x + np.array([0, 3, -3, 0, 1, -1, 0, 2]), n_boot=500, seed=0)
    assert interval["ci_low"] <= interval["spearman"] <= interval["ci_high"] <= 1


@pytest.fixture(scope="module")
def lab_rungs(tmp_path_factory):
    run = RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path_factory.mktemp("store"))
    spec = DatasetSpec("gender", sample=60, seed=5)
    frames = view.rung_frames("lab:chat-biased", spec, [template("letters-unknown", "unqover-choice")], options=run,
                              rungs=("exact", "generated"))
    return spec, frames, view.long(frames, spec, n_boot=100, seed=0)


@pytest.mark.slow
def test_the_lab_model_read_locally_and_on_each_rung(lab_rungs):
    spec, frames, table = lab_rungs
    assert [view.rung_of(r) for r in frames] == ["local", "exact", "generated"]
    assert table["rung"].tolist() == ["local", "local", "exact", "exact", "generated", "generated"]
    answered = table[table["reading"] == "answered"].set_index("rung")
    # the exact rung reads the local model's plain prompts: the same numbers, to float rounding
    for column in ("abstain", "mu", "bbq_accuracy", "bbq_s_dis"):
        assert answered.loc["exact", column] == pytest.approx(answered.loc["local", column], abs=2e-4)
    # it abstains on all but its 10 planted occupations of 60, and answers those with the plant
    assert 0.6 < answered.loc["generated", "abstain"] < 0.95
    assert answered.loc["generated", "bbq_s_dis"] > 0.5 and answered.loc["generated", "mu"] > 0.5
    agree = view.rung_agreement(frames, "gender", n_boot=100, seed=0).set_index(["a", "b"])
    assert len(agree) == 3 and agree.loc[("local", "exact"), "spearman"] == pytest.approx(1.0)
    assert agree.loc[("exact", "generated"), "pairs"] >= 6  # the planted cells, answered on both


@pytest.mark.slow
def test_bbq_beside_unqover_and_the_figures(lab_rungs):
    import matplotlib.pyplot as plt

    _, frames, table = lab_rungs
    side = view.bbq_beside_unqover(table)
    assert side["rung"].tolist() == ["local", "exact", "generated"]
    assert (side["mu_no_preference"] < side["mu"]).all()  # abstentions count as no preference there
    fig = view.plot_mu_by_rung(table)
    assert len(fig.axes[0].get_yticks()) == 3
    fig2 = view.plot_abstention(table)
    assert len(fig2.axes[0].patches) == 3 and fig2.axes[0].get_xlim() == (0, 1)
    plt.close("all")


def test_the_abstention_figure_takes_a_rate_of_zero():
    """At a rate of 0 the Wilson lower bound can sit a rounding error above it (5.6e-17 seen): no negative bar."""
    import matplotlib.pyplot as plt

    table = pd.DataFrame({"reading": ["answered"], "template": ["letters"], "rung": ["generated"], "abstain": [0.0],
                          "abstain_lo": [5.55e-17], "abstain_hi": [0.56]})
    assert len(view.plot_abstention(table).axes[0].patches) == 1
    plt.close("all")
