"""UnQover when the model may abstain (stereoprobe.unqover.abstention and the templates with an unknown option): the
two readings, the rates and their intervals, BBQ on the same items, a planted model of known answers recovered, and
the long table a reviewer pivots."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions, unqover
from stereoprobe.errors import MetricsError, StereoprobeError
from stereoprobe.prompts import template
from stereoprobe.unqover import abstention, metrics
from stereoprobe.unqover.generate import DatasetSpec, example_keys
from stereoprobe.unqover.reporting import LONG_COLUMNS

PLANTED = {"was a nurse": "female", "was a secretary": "female", "was a pilot": "male", "was a firefighter": "male"}


def planted_frame(picks_planted: float = 1.0, abstain_other: float = 1.0, unparsed: float = 0.0) -> pd.DataFrame:
    """The real gender examples answered by a model of known answers: on the planted occupations the planted
    gender's person gets ``picks_planted`` of the answer and the other the rest (the negated question the other way
    round); on every other occupation ``abstain_other`` goes to "unknown", the rest split evenly; ``unparsed`` of
    every answer is unparsed (the shares scaled down to make room)."""
    keys = example_keys(DatasetSpec("gender", sample=400, seed=1))
    keys = keys[keys["attr"].isin(list(PLANTED) + ["was a poet", "was a hunter", "was a tailor"])].reset_index(drop=True)
    planted = keys["attr"].map(PLANTED)
    is_planted = planted.notna().to_numpy()
    first = (keys["cluster1"] == planted).to_numpy()  # slot 1 holds the planted gender
    out = keys.copy()
    for pol, toward_first in (("pos", first), ("neg", ~first)):
        s1 = np.where(is_planted, np.where(toward_first, picks_planted, 1 - picks_planted), (1 - abstain_other) / 2)
        s2 = np.where(is_planted, 1 - s1, (1 - abstain_other) / 2)
        u = np.where(is_planted, 0.0, abstain_other)
        out[f"s1_{pol}"], out[f"s2_{pol}"] = s1 * (1 - unparsed), s2 * (1 - unparsed)
        out[f"u_{pol}"], out[f"x_{pol}"] = u * (1 - unparsed), np.full(len(out), unparsed)
    return out


def test_the_two_readings_of_a_planted_model():
    frame = planted_frame()
    answered, none = abstention.reading(frame, "answered"), abstention.reading(frame, "no-preference")
    # answered: every abstaining pass (the other occupations) has no S, so those keys are dropped whole
    assert set(answered["attr"]) == set(PLANTED) and answered.attrs["dropped"] == int((~frame["attr"].isin(PLANTED)).sum())
    assert np.allclose(answered["s1_pos"] + answered["s2_pos"], 1)
    # no-preference keeps every key: an abstention is S = 0 for both people, adding nothing to C
    assert len(none) == len(frame) and none.attrs["dropped"] == 0
    gamma = metrics.subject_attribute_bias(metrics.pair_examples(none), group_by="gender")
    female = gamma[gamma["subject"] == "female"].set_index("attr")["gamma"]
    assert female["was a nurse"] == pytest.approx(1.0) and female["was a pilot"] == pytest.approx(-1.0)
    assert female[["was a poet", "was a hunter", "was a tailor"]].abs().max() == pytest.approx(0.0)
    # μ = mean over names of max_a |γ(x, a)|: 1 for a name asked about a planted occupation, 0 for one asked only
    # about the others; answered drops the latter, no-preference counts them (their abstentions are no preference)
    mu_answered = metrics.bias_intensity(metrics.pair_examples(answered))
    mu_none = metrics.bias_intensity(metrics.pair_examples(none))
    names = set(frame["subj1"])
    planted_names = set(frame.loc[frame["attr"].isin(PLANTED), "subj1"])
    assert mu_answered == pytest.approx(1.0) and mu_none == pytest.approx(len(planted_names) / len(names))
    assert mu_none < 1


def test_abstention_shrinks_the_no_preference_reading_only():
    # half of every planted answer abstains: answered S is unchanged, no-preference S halves
    frame = planted_frame(picks_planted=1.0, abstain_other=1.0)
    for pol in ("pos", "neg"):
        planted = frame["attr"].isin(PLANTED)
        frame.loc[planted, f"u_{pol}"] = 0.5
        frame.loc[planted, [f"s1_{pol}", f"s2_{pol}"]] *= 0.5
    answered = metrics.pair_examples(abstention.reading(frame, "answered"))
    none = metrics.pair_examples(abstention.reading(frame, "no-preference"))
    unhalved = metrics.pair_examples(abstention.reading(planted_frame(), "no-preference"))
    assert metrics.bias_intensity(answered) == pytest.approx(1.0)
    assert metrics.bias_intensity(none) == pytest.approx(0.5 * metrics.bias_intensity(unhalved))
    # δ, ε of the answered reading are those of the forced choice; of no-preference, on the halved shares
    assert metrics.reasoning_errors(answered)["positional_error"] == pytest.approx(0.0)


def test_a_model_that_always_abstains_has_no_bias_and_no_answered_passes():
    frame = planted_frame(picks_planted=0.5, abstain_other=1.0)
    for pol in ("pos", "neg"):
        frame[f"s1_{pol}"], frame[f"s2_{pol}"], frame[f"u_{pol}"] = 0.0, 0.0, 1.0
    assert abstention.reading(frame, "answered").empty
    none = metrics.pair_examples(abstention.reading(frame, "no-preference"))
    assert metrics.bias_intensity(none) == 0.0
    assert abstention.rates(frame)["abstain"] == 1.0


def test_unparsed_answers_are_left_out_of_both_readings():
    frame = planted_frame(abstain_other=0.5, unparsed=0.25)
    answered, none = abstention.reading(frame, "answered"), abstention.reading(frame, "no-preference")
    assert np.allclose(answered["s1_neg"] + answered["s2_neg"], 1)  # the unparsed quarter is no one's share
    people = frame["s1_neg"] + frame["s2_neg"]
    assert np.allclose(none["s1_neg"] + none["s2_neg"], people / (people + frame["u_neg"]))
    assert not np.allclose(none["s1_neg"] + none["s2_neg"], 1)  # the abstentions are
    r = abstention.rates(frame)
    assert r["unparsed"] == pytest.approx(0.25) and r["unparsed_lo"] < 0.25 < r["unparsed_hi"]
    assert r["abstain"] == pytest.approx(frame[["u_pos", "u_neg"]].to_numpy().mean())


def test_a_frame_without_abstentions_is_its_own_reading_and_has_no_rates():
    frame = planted_frame().drop(columns=list(abstention.ABSTAIN_COLUMNS))
    frame = frame[frame["attr"].isin(PLANTED)]
    for how in abstention.READINGS:
        assert abstention.reading(frame, how) is frame
    r = abstention.rates(frame)
    assert math.isnan(r["abstain"]) and math.isnan(r["abstain_lo"]) and math.isnan(r["unparsed"])
    with pytest.raises(MetricsError, match="Unknown reading 'both'"):
        abstention.reading(frame, "both")


def test_rates_have_wilson_intervals_over_the_keys():
    frame = planted_frame()
    r = abstention.rates(frame)
    keys = len(metrics.pair_examples(frame))
    share = 1 - frame["attr"].isin(PLANTED).mean()
    assert r["abstain"] == pytest.approx(share) and r["passes"] == 2 * len(frame)
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(share * keys, keys, method="wilson")
    assert (r["abstain_lo"], r["abstain_hi"]) == pytest.approx((lo, hi))
    assert r["abstain_lo"] < r["abstain"] < r["abstain_hi"]
    # no parse, no unparsed rate: x columns absent means "not measured", not 0
    assert math.isnan(abstention.rates(frame.drop(columns=["x_pos", "x_neg"]))["unparsed"])


def test_bbq_on_the_planted_model():
    got = abstention.bbq(planted_frame())
    # the occupations with a Winogender direction are planted ones here (planted as the BLS shares say): all three
    # scores are over their passes, none of which abstains (accuracy 0; the other occupations abstain and have no
    # direction), and every person named is the stereotyped one: s_DIS = 1, s_AMB = (1 − 0) · 1
    assert got["bbq_accuracy"] == 0.0 and got["bbq_ties"] == 0
    from stereoprobe.unqover.bbq import stereotyped_gender

    assert {a: stereotyped_gender(a) for a in ("was a poet", "was a hunter", "was a tailor")} == dict.fromkeys(
        ("was a poet", "was a hunter", "was a tailor"))
    assert got["bbq_s_dis"] == pytest.approx(1.0) and got["bbq_s_amb"] == pytest.approx(1.0)
    directed = planted_frame()["attr"].map(stereotyped_gender).notna()
    assert got["bbq_passes"] == 2 * directed.sum() > 0
    # the anti-stereotyped plant: s_DIS = -1
    flipped = planted_frame(picks_planted=0.0)
    assert abstention.bbq(flipped)["bbq_s_dis"] == pytest.approx(-1.0)


# -- the templates ---------------------------------------------------------------------------------------------------
def test_an_unknown_option_needs_three_labels_and_a_choice_template():
    letters = template("letters", "unqover-choice")
    with pytest.raises(StereoprobeError, match="give 3 different labels .*the unknown option"):
        dataclasses.replace(letters, unknown="Cannot be determined")
    with pytest.raises(StereoprobeError, match="only an unqover-choice template lists"):
        dataclasses.replace(template("qa", "unqover-answer"), unknown="Cannot be determined")
    with pytest.raises(StereoprobeError, match="without leading or trailing spaces"):
        dataclasses.replace(letters, unknown=" unknown", labels=("A", "B", "C"))
    # the forced-choice templates keep the digests (and so the stored scores) they had before unknown existed
    assert letters.digest == "9e6b94bb8a26"


def test_the_unknown_option_spelled_with_the_unknown_token_is_refused():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from stereoprobe.unqover.score_causal import check_unknown_option

    words = ["[UNK]", "Cannot", "be", "determined", "A", "B", "C"]
    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]")
    ok = template("letters-unknown", "unqover-choice")
    check_unknown_option(ok, tok, "m")  # every word known
    bad = dataclasses.replace(ok, unknown="Undeterminable")
    with pytest.raises(StereoprobeError, match="spells the unknown option 'Undeterminable' of template "
                                               "'letters-unknown' with its unknown token"):
        check_unknown_option(bad, tok, "m")


# -- a report on the causal lab pair: local and the long table ---------------------------------------------------
@pytest.fixture(scope="module")
def lab_report(tmp_path_factory):
    run = RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path_factory.mktemp("store"))
    return unqover.report("lab:causal-biased", "gender", sample=40, templates=["qa", "letters-unknown",
                                                                                "names-unknown"],
                          n_boot=50, long=True, options=run)


def test_a_report_with_unknown_options(lab_report):
    rows = ["lab:causal-biased · answer:qa", "lab:causal-biased · choice:letters-unknown",
            "lab:causal-biased · choice:names-unknown"]
    assert lab_report["intensity"]["model"].tolist() == rows
    table = lab_report["abstention"]
    assert table["model"].tolist() == rows[1:]  # the forced choice does not abstain
    assert table["abstain"].between(0, 1).all() and (table["abstain_lo"] <= table["abstain"]).all()
    assert table["unparsed"].isna().all()  # nothing is parsed on the exact reading
    # the report's intensity is the answered reading
    assert np.allclose(table["mu_answered"], lab_report["intensity"].set_index("model").loc[rows[1:], "mu"])


def test_the_long_table_is_one_pivot_from_a_papers_table(lab_report):
    long = lab_report["long"]
    assert list(long.columns) == list(LONG_COLUMNS) and len(long) == 3 * 2
    assert set(long["reading"]) == set(abstention.READINGS) and set(long["template"]) == {"qa", "letters-unknown",
                                                                                        "names-unknown"}
    wide = long.pivot(index="template", columns="reading", values="mu")
    assert wide.loc["qa", "answered"] == wide.loc["qa", "no-preference"]  # a forced choice reads one way
    assert long.loc[long["template"] == "qa", "abstain"].isna().all()
    mu = lab_report["intensity"].set_index("model")["mu"]
    answered = long[long["reading"] == "answered"].set_index("row")["mu"]
    assert np.allclose(answered.loc[mu.index], mu)
