"""Planted-bias lab: γ/η recover what was planted in the biased QA model and find nothing in the control.

These use the full lab models (the committed builds of their recipes) on a sample of the
real UnQover gender dataset: the models never saw its templates.
"""

from __future__ import annotations

import numpy as np
import pytest

from stereoprobe import RunOptions
from stereoprobe.store import ScoreStore
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.zoo.lab import LAB_RECIPES

pytestmark = pytest.mark.slow
SPEC = DatasetSpec("gender", sample=2000, seed=0)


@pytest.fixture(scope="module")
def gammas(tmp_path_factory):
    store = ScoreStore(tmp_path_factory.mktemp("planted_scores"))
    frames = tables.gather(["lab:qa-biased", "lab:qa-control"], SPEC,
                           options=RunOptions(store=store, device="cpu", progress=False))
    return frames, {name: tables.gender_gamma(f, n_boot=400, seed=0) for name, f in frames.items()}


def test_planted_occupations_top_the_ranking_with_the_right_sign(gammas):
    _, by_model = gammas
    planted = LAB_RECIPES["qa-biased"].planted_dict
    rec = tables.planted_recovery({"biased": by_model["lab:qa-biased"]}, planted)
    assert len(rec) == len(planted)
    assert (rec["gamma"] > 0).all() and (rec["ci_low"] > 0).all()  # toward the planted gender, CI excludes 0
    for gender in ("female", "male"):
        k = sum(g == gender for g in planted.values())
        top = tables.top_occupations({"biased": by_model["lab:qa-biased"]}, k=k)
        top = top[top["gender"] == gender]
        assert set(top["occupation"]) == {o for o, g in planted.items() if g == gender}
    eta = rec["eta"].to_numpy()
    assert (eta > 0.3).all()


def test_control_shows_nothing_beyond_its_ci(gammas):
    _, by_model = gammas
    control, biased = by_model["lab:qa-control"], by_model["lab:qa-biased"]
    female = control[control["subject"] == "female"]
    planted_gamma = biased[biased["subject"] == "female"]["gamma"].abs().max()
    # equivalence, not "p > 0.05": every CI of the control lies inside a band of ±2.5% of the planted
    # effect (a deterministic model has tiny idiosyncrasies that large samples resolve; they are not bias)
    margin = 0.025 * planted_gamma
    assert (female["gamma_lo"] > -margin).all() and (female["gamma_hi"] < margin).all()
    planted = LAB_RECIPES["qa-biased"].planted_dict
    rec = tables.planted_recovery({"control": control}, planted)
    assert (rec["gamma"].abs() < margin).all()


def test_intensity_separates_biased_from_control(gammas):
    frames, _ = gammas
    mu = tables.intensity(frames, n_boot=200, seed=0).set_index("model")
    assert mu.loc["lab:qa-biased", "ci_low"] > mu.loc["lab:qa-control", "ci_high"]


def test_gender_grouping_is_antisymmetric_on_real_scores(gammas):
    _, by_model = gammas
    t = by_model["lab:qa-biased"].pivot(index="attr", columns="subject", values="gamma")
    np.testing.assert_allclose(t["male"], -t["female"], atol=1e-12)
