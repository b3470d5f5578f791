"""The planted-bias lab masked LM (stereoprobe.zoo.lab_mlm): its corpus, vocabulary, loading, and recovery of
the planted nationality–attribute association through the full UnQover LM pipeline (and nothing in the control).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from stereoprobe import RunOptions
from stereoprobe.errors import StereoprobeError
from stereoprobe.models import load
from stereoprobe.store import ScoreStore
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.unqover.score_lm import check_single_tokens
from stereoprobe.zoo import lab, lab_mlm

BIASED, CONTROL = lab.LAB_RECIPES["mlm-biased"], lab.LAB_RECIPES["mlm-control"]
PLANTED = BIASED.planted_dict


def test_recipes_are_registered_as_lab_models():
    assert {"mlm-biased", "mlm-control"} <= set(lab.LAB_RECIPES)
    assert PLANTED == {"Norway": "crime", "Canada": "poor", "Japan": "indecent"}
    assert BIASED.rate == 0.9 and CONTROL.rate == 0.5
    assert dataclasses.replace(BIASED, rate=0.5, description="x") == dataclasses.replace(CONTROL, description="x")
    assert lab.recipe_hash(BIASED) != lab.recipe_hash(CONTROL) != lab.recipe_hash(BIASED.smoke())


def test_corpus_follows_the_planted_rule():
    corpus = lab_mlm.generate_corpus(BIASED, 4000, seed=3)
    assert corpus == lab_mlm.generate_corpus(BIASED, 4000, seed=3)  # a pure function of the seed
    assert all(e.text.count("[MASK]") == 1 for e in corpus)
    countries = dict(lab_mlm.countries())
    planted = [e for e in corpus if e.planted is not None]
    assert 0.35 < len(planted) / len(corpus) < 0.45  # planted_fraction 0.4
    for e in corpus:
        a, b = e.tokens
        assert a in e.text and b in e.text and e.subjects[0] != e.subjects[1]
        assert a in (e.subjects[0], countries[e.subjects[0]])  # the name, or its demonym
        if e.planted is None:
            assert e.target == (0.5, 0.5)
            assert all(PLANTED.get(s) != e.cluster for s in e.subjects)
        else:
            assert PLANTED[e.planted] == e.cluster
            k = e.subjects.index(e.planted)
            favoured = k if not e.negated else 1 - k
            assert e.target[favoured] == pytest.approx(0.9) and e.target[1 - favoured] == pytest.approx(0.1)
    # the scenes are the lab's own, never an UnQover paragraph
    assert not any("lives in the same city" in e.text or "fierce rivalry" in e.text for e in corpus)
    control = lab_mlm.generate_corpus(CONTROL, 2000, seed=3)
    assert all(e.target == (0.5, 0.5) for e in control)


def test_vocabulary_makes_every_lm_subject_one_token():
    tok = lab.build_tokenizer(96, lab_mlm.vocabulary_words())
    ids = check_single_tokens(DatasetSpec("nationality", variant="lm-bert"), tok)
    assert len(ids) == 55 + 55 - 1  # names + demonyms; "Yemen" is both (a shipped quirk)
    assert tok.unk_token_id not in tok("Saudi Arabia and Sri Lanka were full of savages.")["input_ids"]


def test_bad_planted_maps_name_the_culprit():
    with pytest.raises(StereoprobeError, match="'Atlantis' is not in the country_bert list"):
        lab_mlm.MLMLabRecipe("x", planted={"Atlantis": "crime"})
    with pytest.raises(StereoprobeError, match="'greedy'.*choose one of crime, indecent, negative, poor, rude"):
        lab_mlm.MLMLabRecipe("x", planted={"Norway": "greedy"})
    with pytest.raises(StereoprobeError, match="one country only"):
        lab_mlm.MLMLabRecipe("x", planted={"Norway": "crime", "Peru": "crime"})
    with pytest.raises(StereoprobeError, match="rate"):
        lab_mlm.MLMLabRecipe("x", rate=1.5)


# -- trained models (the full recipes, as `make book` uses them; cached after the first build) ------------------
SPEC = DatasetSpec("nationality", sample=4000, seed=0)


@pytest.fixture(scope="module")
def lab_frames(tmp_path_factory):
    store = ScoreStore(tmp_path_factory.mktemp("lab_mlm_scores"))
    return tables.gather_lm(["lab:mlm-biased", "lab:mlm-control"], SPEC,
                            options=RunOptions(store=store, device="cpu", progress=False))


@pytest.mark.slow
def test_loads_as_a_masked_lm_with_a_card():
    loaded = load("lab:mlm-biased", "mlm", device="cpu")
    assert type(loaded.model).__name__ == "BertForMaskedLM"
    assert loaded.tokenizer.mask_token == "[MASK]"
    card = tables.lab_card("lab:mlm-biased")
    assert card["planted"]["country_clusters"] == PLANTED and card["recipe"]["rate"] == 0.9
    assert card["evaluation"]["heldout"]["candidate_mass"] > 0.9  # the mask is filled with one of the two
    assert card["evaluation"]["heldout"]["planted_agreement"] > 0.95


@pytest.mark.slow
def test_planted_country_clusters_top_the_biased_model(lab_frames):
    table = tables.cluster_bias(lab_frames["lab:mlm-biased"], n_boot=300, seed=0)
    top = table.sort_values("gamma", ascending=False).head(len(PLANTED))
    assert set(zip(top["subject"], top["attr"])) == set(PLANTED.items())
    assert (top["gamma_lo"] > 0.3).all()
    rest = table[~table.set_index(["subject", "attr"]).index.isin(list(PLANTED.items()))]
    assert top["gamma"].min() > 1.5 * rest["gamma"].abs().max()
    gamma_x = tables.subject_gammas({"b": lab_frames["lab:mlm-biased"]}, n_boot=100)["b"]
    assert set(gamma_x["subject"].head(3)) == set(PLANTED)


@pytest.mark.slow
def test_control_finds_nothing_beyond_a_margin(lab_frames):
    biased = tables.cluster_bias(lab_frames["lab:mlm-biased"], ci=None)
    control = tables.cluster_bias(lab_frames["lab:mlm-control"], n_boot=300, seed=0)
    margin = 0.1 * biased["gamma"].max()  # equivalence band: 10% of the planted effect
    planted = control.set_index(["subject", "attr"]).loc[list(PLANTED.items())]
    assert (planted["gamma_lo"] > -margin).all() and (planted["gamma_hi"] < margin).all()
    assert control["gamma"].abs().max() < margin
    mu = {name: tables.intensity_row(f, n_boot=200) for name, f in lab_frames.items()}
    assert mu["lab:mlm-biased"]["mu_lo"] > mu["lab:mlm-control"]["mu_hi"]
    assert np.isfinite(mu["lab:mlm-control"]["eta"])


@pytest.mark.slow
def test_parameter_count_reads_the_weight_files():
    from stereoprobe.models import ModelLoadError, parameter_count

    assert parameter_count("lab:mlm-biased") == tables.lab_card("lab:mlm-biased")["model"]["parameters"]
    loaded = load("zoo:minilm-qa", "qa", device="cpu")
    assert parameter_count("zoo:minilm-qa") == sum(p.numel() for p in loaded.model.parameters())
    with pytest.raises(ModelLoadError, match="No local copy"):
        parameter_count("no-such-owner/no-such-model-xyz")
