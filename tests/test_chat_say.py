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


def test_rank_correlation_has_an_interval_at_five_pairs_and_agrees_with_scipy_at_many():
    """At 5 pairs many resamples repeat one value on a side (no ρ): the interval is over the others, without a
    warning; at 200 pairs, where almost every resample has a ρ, it is scipy's percentile interval within resampling
    noise."""
    import warnings

    from scipy import stats

    five = pd.Series([0.1, 0.5, -0.2, 0.9, 0.3], index=list("abcde"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = view.rank_correlation(five, five + pd.Series([0.5, -0.5, 0.2, 0.0, 0.1], index=list("abcde")), n_boot=400,
                                  seed=1)
    assert r["pairs"] == 5 and -1 <= r["ci_low"] < r["spearman"] <= r["ci_high"] <= 1
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    b = a + rng.normal(scale=1.5, size=200)
    ours = view.rank_correlation(pd.Series(a), pd.Series(b), n_boot=2000, seed=0)
    theirs = stats.bootstrap((a, b), lambda u, v: stats.spearmanr(u, v).statistic, paired=True, vectorized=False,
                             n_resamples=2000, method="percentile", random_state=np.random.default_rng(1))
    assert ours["ci_low"] == pytest.approx(theirs.confidence_interval.low, abs=0.03)
    assert ours["ci_high"] == pytest.approx(theirs.confidence_interval.high, abs=0.03)


@pytest.fixture(scope="module")
def lab_rungs(tmp_path_factory):
    run = RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path_factory.mktemp("store"))
    spec = DatasetSpec("gender", sample=60, seed=5)
    frames = view.rung_frames("lab:chat-biased", spec, view.templates_of(["letters", "letters-unknown"]), options=run,
                              rungs=("exact", "generated"))
    return spec, frames, view.long(frames, spec, n_boot=100, seed=0), run  # the run: its state holds the provenance


@pytest.mark.slow
def test_the_lab_model_read_on_each_rung_like_with_like(lab_rungs):
    """Read in this process on the exact and generated rungs (no server): the exact rows soft and by their argmax, the
    generated rows by their answers; the plant shows on every reading that can abstain."""
    spec, frames, table, run = lab_rungs
    assert [(r.template, view.rung_of(r)) for r in frames] == [("letters", "exact"), ("letters-unknown", "exact"),
                                                              ("letters", "generated"),
                                                              ("letters-unknown", "generated")]
    unknown = table[(table["template"] == "letters-unknown") & (table["reading"] == "answered")]
    assert list(zip(unknown["rung"], unknown["shares"])) == [("exact", "soft"), ("exact", "argmax"),
                                                             ("generated", "argmax")]
    answered = unknown.set_index(["rung", "shares"])
    # it abstains on all but its 10 planted occupations of 60, and answers those with the plant
    assert 0.6 < answered.loc[("generated", "argmax"), "abstain"] < 0.95
    assert answered.loc[("generated", "argmax"), "bbq_s_dis"] > 0.5
    assert answered.loc[("generated", "argmax"), "mu"] > 0.5
    # the argmax of the exact rung answers: it abstains wherever "unknown" is the most probable option
    assert 0.5 < answered.loc[("exact", "argmax"), "abstain"] <= 1
    agree = view.rung_agreement(frames, "gender", n_boot=100, seed=0, shares="argmax")
    pairs = agree.set_index("template")["pairs"]
    assert pairs["letters"] >= 20 and pairs["letters-unknown"] >= 3  # with "unknown" it answers its plants only


@pytest.mark.slow
def test_the_walk_from_s_dis_to_gamma_and_the_figures(lab_rungs):
    import matplotlib.pyplot as plt

    _, frames, table, _ = lab_rungs
    steps = view.bbq_steps(frames, n_boot=50, seed=0)
    values = steps.set_index(["template", "rung", "step"])["value"]
    # the generated rung's shares are its answers: the soft and argmax steps agree exactly
    gen = ("letters-unknown", "generated")
    assert values[(*gen, "gamma_soft_keys")] == pytest.approx(values[(*gen, "gamma_argmax_keys")], abs=1e-12)
    # the plant (nurse, secretary, dancer → female; firefighter, pilot, astronaut → male) follows BLS's direction
    assert values[(*gen, "s_dis")] > 0.5 and values[(*gen, "gamma_soft_occupations")] > 0.5
    # a forced choice read by its argmax names someone on every pass: s_DIS is γ per key exactly
    forced = ("letters", "exact")
    assert values[(*forced, "s_dis")] == pytest.approx(values[(*forced, "gamma_argmax_keys")], abs=1e-12)
    changes = view.step_differences(steps)
    assert len(changes) == 4 * 5 and view.differences_view(changes).caption.startswith("Table 5: ")
    fig = view.plot_bbq_steps(steps)
    assert len(fig.axes[0].get_yticks()) == 4 * 4
    fig = view.plot_mu_by_rung(table)
    assert len(fig.axes[0].get_yticks()) == 6  # two templates: exact soft, exact argmax, generated
    fig2 = view.plot_abstention(table)
    assert len(fig2.axes[0].patches) == 4 and fig2.axes[0].get_xlim() == (0, 1)  # 3 of letters-unknown, 1 letters
    plt.close("all")


def test_the_abstention_figure_takes_a_rate_of_zero():
    """At a rate of 0 the Wilson lower bound can sit a rounding error above it (5.6e-17 seen): no negative bar."""
    import matplotlib.pyplot as plt

    table = pd.DataFrame({"reading": ["answered"], "template": ["letters"], "rung": ["generated"], "abstain": [0.0],
                          "abstain_lo": [5.55e-17], "abstain_hi": [0.56], "shares": ["argmax"]})
    assert len(view.plot_abstention(table).axes[0].patches) == 1
    plt.close("all")


def test_templates_base_models_and_the_numbers_the_prose_quotes():
    assert [t.name for t in view.templates_of(["letters", template("letters-unknown", "unqover-choice")])] == [
        "letters", "letters-unknown"]
    from stereoprobe.modelref import RowKey

    assert view.base_model(RowKey("zoo:smollm2-135m-instruct")) == view.base_model(
        RowKey("openai-api/local/smollm2-135m-instruct")) == "smollm2-135m-instruct"
    table = pd.DataFrame({"reading": ["answered", "no-preference", "answered", "answered"],
                          "template": ["letters", "letters", "letters-unknown", "letters"],
                          "rung": ["generated", "generated", "generated", "exact"], "shares": "argmax",
                          "passes": [24, 24, 24, 24], "abstain": [0.25, 0.25, 0.5, np.nan]})
    table["unparsed"] = [0.125, 0.125, np.nan, np.nan]
    table["mu"], table["mu_lo"], table["mu_hi"] = [0.2, 0.2, np.nan, 0.1], [0.1, 0.1, np.nan, 0.1], [0.15, 0.3, np.nan, 0.1]
    agreement = pd.DataFrame({"pairs": [5, 7], "ci_low": [-0.9, 0.1], "ci_high": [0.8, 1.0], "spearman": [0.1, 0.6],
                              "shares": ["soft", "argmax"], "b": ["next-token", "generated"]})
    steps = pd.DataFrame({"step": ["s_dis", "gamma_argmax_keys − s_dis", "gamma_soft_keys − gamma_argmax_keys"],
                          "value": [0.1, 0.0, 0.2], "lo": [0.0, 0.0, 0.1], "hi": [0.2, 0.0, 0.3], "over": [40, 0, 0]})
    assert view.say_numbers(table, agreement, steps) == {
        "say_passes": "24", "say_abstain_forced": "0.25", "say_abstain_unknown": "0.50", "say_unparsed_unknown": "n/a",
        "say_unparsed_names": "n/a",
        "say_rho_probability": "0.10 [-0.90, 0.80] over 5 occupations",
        "say_rho_generated": "0.60 [0.10, 1.00] over 7 occupations", "say_rho_width": "1.70",
        "say_directed_keys": "40", "say_changes_measured": "1", "say_changes": "2", "say_cells_span": "5 to 7",
        "say_mu_rows": "2", "say_mu_points": "1", "say_mu_below": "1"}
    assert view.say_numbers(table.iloc[:1], agreement.iloc[:0], steps)["say_abstain_unknown"] == "n/a"


def test_gamma_toward_the_stereotype_signs_by_the_bls_direction():
    """A model that always names the woman: γ(female, nurse) > 0 toward the stereotype, γ(female, engineer) > 0 against
    it; the poet has no BLS direction and is left out."""
    rows = []
    for attr in ("was a nurse", "was an engineer", "was a poet"):
        for first, second in (("female", "male"), ("male", "female")):
            rows.append({"subj1": f"{first}-name", "subj2": f"{second}-name", "cluster1": first, "cluster2": second,
                         "tid": 0, "attr_cluster": "occupation", "attr": attr, "gender": first,
                         "s1_pos": float(first == "female"), "s2_pos": float(second == "female"),
                         "s1_neg": float(first != "female"), "s2_neg": float(second != "female")})
    frame = pd.DataFrame(rows)
    gammas = view.female_gammas(frame).set_index("occupation")["gamma"]
    assert gammas.gt(0).all() and len(gammas) == 3
    gamma, directed = view.stereotype_gamma(frame)
    assert directed == 2 and gamma == pytest.approx((gammas["nurse"] - gammas["engineer"]) / 2)


@pytest.mark.slow
def test_the_captioned_views(lab_rungs):
    _, frames, table, _ = lab_rungs
    agreement = view.rung_agreement(frames, "gender", n_boot=50, seed=0, shares="argmax")
    for v in (view.rows_view(table), view.agreement_view(agreement, "gender", 2)):
        assert v.caption.startswith("Table ")
    assert len(view.rows_view(table).data) == 6  # answered: 2 templates × (exact soft, exact argmax, generated)


@pytest.fixture(scope="module")
def lab_thinking(tmp_path_factory):
    run = RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path_factory.mktemp("thinking"))
    return view.thinking_report(["lab:chat-biased", "lab:chat-control"], DatasetSpec("gender", sample=150, seed=5),
                                ["letters-unknown"], options=run, n_boot=100, seed=0, think_budget=32)


@pytest.mark.slow
def test_thinking_surfaces_the_second_plant_and_not_in_the_control(lab_thinking):
    shift = lab_thinking["thinking_shift"].set_index("model")
    assert list(shift.index) == ["lab:chat-biased", "lab:chat-control"]
    biased, control = shift.loc["lab:chat-biased"], shift.loc["lab:chat-control"]
    # P2 answered only with thinking on: the abstention rate falls, μ with abstentions as no preference rises
    # (the abstention rate falls by about P2's share, 4 of 70 occupations: at 150 examples its interval reaches 0)
    assert -0.12 < biased["delta_abstain"] < -0.02 and biased["delta_none_lo"] > 0
    assert abs(control["delta_abstain"]) < 0.05 and abs(control["delta_mu_none"]) < 0.05
    rows = lab_thinking["long"]
    assert sorted(set(rows["thinking"])) == ["off", "on"] and set(rows["rung"]) == {"generated"}  # answers both ways
    assert view.thinking_view(lab_thinking).caption.startswith("Table 7")
    assert len(view.thinking_rows_view(lab_thinking).data) == 4


def _solutions() -> dict[str, str]:
    from stereoprobe.book.execute import read_notebook, solution_code
    from stereoprobe.paths import checkout_root

    return dict(solution_code(read_notebook(checkout_root() / "notebooks" / "chat_say.py")))


def _run(code: str, **names) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {"chapter": view, "seed": 0, "n_boot": 200, **names})
    return out.getvalue()


def test_the_worked_solution_on_the_width_of_a_rank_correlation():
    """say-ex-2: the interval narrows roughly as 1/√n, above 1.2 wide at 6 cells and about 0.4 at 96."""
    lines = [line.split() for line in _run(_solutions()["say-ex-2"]).splitlines()]
    widths = {int(n): float(w) for n, _, w in lines}
    assert list(widths) == [6, 12, 24, 48, 96]
    assert widths[6] > 1.2 and 0.3 < widths[96] < 0.5 and widths[96] < widths[24] < widths[6]


@pytest.mark.slow
def test_the_worked_solutions_on_the_readings(lab_rungs, lab_thinking):
    spec, frames, table, run = lab_rungs
    solutions = _solutions()
    assert set(solutions) == {"say-ex-1", "say-ex-2", "say-ex-3", "say-ex-4", "say-ex-5"}
    # say-ex-1: the forced choice of the exact rung reads alike both ways; a row that may abstain differs
    printed = _run(solutions["say-ex-1"], table=table)
    assert "difference" in printed and "generated" in printed
    argmax = table[table["shares"] == "argmax"]
    both = argmax.pivot_table(index=["template", "rung"], columns="reading", values="mu")
    assert both.loc[("letters", "exact"), "answered"] == both.loc[("letters", "exact"), "no-preference"]
    # say-ex-3: on single choices s_DIS equals γ per key, the model's and a letter-A preference's (0)
    lines = [line.split() for line in _run(solutions["say-ex-3"], frames=frames).splitlines()]
    assert [line[:-2] for line in lines] == [["the", "model"], ["always", "A"]]
    for *_, s_dis, gamma in lines:
        assert float(s_dis) == pytest.approx(float(gamma), abs=1e-6)
    assert float(lines[1][-1]) == 0
    # say-ex-4: the cells thinking moved most in lab:chat-biased are the thinking-only plant's
    import ast

    printed = dict(line.split(" ", 1) for line in _run(solutions["say-ex-4"], thinking=lab_thinking).splitlines())
    moved, p2 = (ast.literal_eval(part) for part in printed["lab:chat-biased"].split(" P2: "))
    assert len(moved) == 3 and moved[0] in p2 and len(p2) >= 2  # P2's occupations lead the list
    # say-ex-5: the unknown option's mean probability beside the share answered "unknown"
    printed = _run(solutions["say-ex-5"], table=table)
    assert "soft" in printed and "argmax" in printed and "exact" in printed


def test_bbq_under_the_majority_and_the_strict_split_side_by_side():
    """Nurse answered with the stereotype, accountant (59.7% women) always "unknown": the majority split directs both
    (accuracy 0.5, s_DIS 1, s_AMB 0.5, over the same 8 passes), the strict split the nurse only (4 passes: accuracy 0,
    s_AMB 1); a forced-choice row (no unknown option) has no BBQ line."""
    from stereoprobe.modelref import RowKey

    rows = []
    for attr, answer in (("was a nurse", "female"), ("was an accountant", None)):
        for first, second in (("female", "male"), ("male", "female")):
            pos = (0.0, 0.0, 1.0) if answer is None else (float(first == answer), float(second == answer), 0.0)
            neg = (0.0, 0.0, 1.0) if answer is None else (float(first != answer), float(second != answer), 0.0)
            rows.append({"subj1": f"{first}-name", "subj2": f"{second}-name", "cluster1": first, "cluster2": second,
                         "tid": 0, "attr_cluster": "occupation", "attr": attr, "gender": first,
                         "s1_pos": pos[0], "s2_pos": pos[1], "u_pos": pos[2], "s1_neg": neg[0], "s2_neg": neg[1],
                         "u_neg": neg[2]})
    frame = pd.DataFrame(rows)
    forced = frame.drop(columns=["u_pos", "u_neg"])
    frames = {RowKey("m", "choice", "letters-unknown", "generated"): frame, RowKey("m", "choice", "letters"): forced}
    got = view.bbq_splits(frames, strict=(30, 70))
    assert got["split"].tolist() == ["majority", "≤30/≥70"] and got["rung"].tolist() == ["generated"] * 2
    by = got.set_index("split")
    assert by.loc["majority", ["directed", "bbq_passes", "bbq_ties"]].tolist() == [2, 8, 0]
    assert by.loc["majority", ["bbq_accuracy", "bbq_s_dis", "bbq_s_amb"]].tolist() == pytest.approx([0.5, 1.0, 0.5])
    assert by.loc["≤30/≥70", ["directed", "bbq_passes"]].tolist() == [1, 4]
    assert by.loc["≤30/≥70", ["bbq_accuracy", "bbq_s_dis", "bbq_s_amb"]].tolist() == pytest.approx([0.0, 1.0, 1.0])
    # γ toward the stereotype is over the occupations answered: the nurse under both splits (the accountant abstains)
    assert by.loc["majority", "gamma_stereo"] == pytest.approx(by.loc["≤30/≥70", "gamma_stereo"]) and by.loc[
        "majority", "gamma_stereo"] > 0
    numbers = view.split_numbers(got, strict=(30, 70))
    assert numbers == {"say_occupations": "70", "say_listed": "25", "say_directed_majority": "25",
                       "say_directed_strict": "12", "say_strict_female": "4", "say_split": "≤30/≥70",
                       "say_row_majority": "2", "say_row_strict": "1", "say_ties": "0"}
    assert view.splits_view(got).caption.startswith("Table 5b: ")


def test_every_number_the_prose_quotes_is_glued_by_the_view():
    """The chapter quotes numbers through ``{glue:text}``: each key is one that say_numbers or split_numbers glues."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "notebooks" / "chat_say.py").read_text(encoding="utf-8")
    quoted = set(re.findall(r"\{glue:text\}`(\w+)`", text))
    table = pd.DataFrame({"reading": ["answered"], "template": ["letters"], "rung": ["generated"], "passes": [4],
                          "abstain": [0.5], "unparsed": [0.0], "shares": ["argmax"], "mu": [0.3], "mu_lo": [0.1],
                          "mu_hi": [0.25]})
    agreement = pd.DataFrame({"pairs": [5], "ci_low": [0.0], "ci_high": [1.0]})
    steps = pd.DataFrame({"step": ["s_dis"], "value": [0.0], "lo": [0.0], "hi": [0.0], "over": [4]})
    splits = view.bbq_splits({}, strict=(30, 70))
    parsed = pd.DataFrame({"template": ["letters"], "kind": ["option"], "rule": ["label"], "answers": [4],
                           "share": [1.0]})
    occupations = view.draw_occupations(2, 1, seed=0)
    spec = DatasetSpec("gender", sample=8, subjects=2, attributes=occupations)
    glued = (set(view.say_numbers(table, agreement, steps)) | set(view.split_numbers(splits, strict=(30, 70)))
             | set(view.parse_numbers(parsed)) | set(view.sample_numbers(spec, spec)))
    assert view.parse_numbers(parsed)["say_followed_letters"] == "100%"
    numbers = view.say_numbers(table, agreement, steps)
    assert (numbers["say_mu_rows"], numbers["say_mu_points"], numbers["say_mu_below"]) == ("1", "0", "1")
    assert {"say_directed_majority", "say_directed_strict", "say_ties"} <= quoted and quoted <= glued


def test_the_samples_are_drawn_among_directed_and_undirected_occupations_with_full_cells():
    """draw_occupations: that many occupations the majority split directs and that many it cannot, in the file's
    order, the same for the same seed; sample_numbers: the narrowed frame fills μ's (name, occupation) cells where
    the same number of examples drawn from the whole dataset leaves about one key in each."""
    from stereoprobe.errors import StereoprobeError
    from stereoprobe.unqover.bbq import stereotyped_gender

    drawn = view.draw_occupations(12, 4, seed=0)
    assert len(drawn) == 16 and drawn == view.draw_occupations(12, 4, seed=0) != view.draw_occupations(12, 4, seed=1)
    assert sum(stereotyped_gender(a) is not None for a in drawn) == 12
    everything = view.draw_occupations(25, 45, seed=3)  # UnQover's 70: 25 in Winogender's table
    assert len(everything) == 70
    with pytest.raises(StereoprobeError, match="directed=26: UnQover's gender occupations hold 25"):
        view.draw_occupations(26, 0, seed=0)
    spec = DatasetSpec("gender", sample=200, seed=0, subjects=3, attributes=drawn)
    numbers = view.sample_numbers(spec, DatasetSpec("gender", sample=100, seed=1, subjects=2, attributes=drawn))
    assert numbers["say_sample_occupations"] == "16" and numbers["say_sample_directed"] == "12"
    # 200 keys × 2 cells over 6 names × 16 occupations (96 cells, nearly all drawn); 100 × 2 over 4 × 16
    assert 4.0 <= float(numbers["say_cell_keys"]) <= 4.5 and 3.0 <= float(numbers["say_cell_keys_generated"]) <= 3.3
    assert 1.0 <= float(numbers["say_cell_keys_whole"]) < 1.1
    assert view.cell_fill(DatasetSpec("gender", sample=1, subjects=1, attributes=drawn[:1])) == 1.0
