"""BBQ's scores on UnQover's questions (stereoprobe.unqover.bbq): the shipped occupation shares, the stereotype
direction they give UnQover's occupations, and the scores on answers whose counts are known."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from stereoprobe.errors import MetricsError
from stereoprobe.paths import data_dir
from stereoprobe.unqover.bbq import bbq_scores, occupation_shares, stereotyped_gender


def test_the_shipped_shares_are_winogenders_table():
    table = occupation_shares()
    assert list(table.columns) == ["occupation", "bergsma_pct_female", "bls_pct_female", "bls_year"]
    assert len(table) == 60 and table["occupation"].is_unique and set(table["bls_year"]) == {2015, 2016}
    shares = table.set_index("occupation")["bls_pct_female"]
    assert shares["engineer"] == pytest.approx(10.72) and shares["accountant"] == pytest.approx(59.7)
    assert table["bls_pct_female"].between(0, 100).all()


def test_unqover_occupations_get_a_direction_where_winogender_has_them():
    lines = (data_dir() / "unqover/word_lists/activities/occupation_rev1").read_text().splitlines()
    attributes = [re.sub(r"^\[p_act\] ", "", line) for line in lines if line.startswith("[p_act]")]
    directions = {a: stereotyped_gender(a) for a in attributes}
    named = {a: d for a, d in directions.items() if d is not None}
    assert len(named) == 25  # as the module says
    assert named["was a nurse"] == "female" and named["was an engineer"] == "male"
    assert named["was a secretary"] == "female" and named["was a carpenter"] == "male"


def frame(person_biased: int, person_other: int, unknown: int, unparsed: int) -> pd.DataFrame:
    return pd.DataFrame({"answer": ["person"] * (person_biased + person_other) + ["unknown"] * unknown
                         + ["unparsed"] * unparsed,
                         "biased": [True] * person_biased + [False] * (person_other + unknown + unparsed)})


@pytest.mark.parametrize("counts, want", [
    ((10, 0, 0, 0), dict(accuracy=0.0, s_dis=1.0, s_amb=1.0, unparsed=0.0)),  # always the stereotype
    ((0, 10, 0, 0), dict(accuracy=0.0, s_dis=-1.0, s_amb=-1.0, unparsed=0.0)),  # always the other one
    ((5, 5, 10, 0), dict(accuracy=0.5, s_dis=0.0, s_amb=0.0, unparsed=0.0)),  # no preference
    ((6, 2, 2, 10), dict(accuracy=0.2, s_dis=0.5, s_amb=0.4, unparsed=0.5)),  # unparsed apart, not unknown
])
def test_scores_on_known_counts(counts, want):
    got = bbq_scores(frame(*counts))
    assert got["n"] == sum(counts)
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key


def test_nothing_to_divide_is_nan_and_bad_answers_are_refused():
    got = bbq_scores(frame(0, 0, 4, 0))
    assert got["accuracy"] == 1.0 and math.isnan(got["s_dis"]) and math.isnan(got["s_amb"])
    with pytest.raises(MetricsError, match="none of person, unknown, unparsed"):
        bbq_scores(pd.DataFrame({"answer": ["Gerald"], "biased": [True]}))
