"""Scoring Bias-NLI pairs: label mapping through id2label, the store pipeline, the zoo NLI model."""

from __future__ import annotations

import numpy as np
import pytest

from stereoprobe import RunOptions
from stereoprobe.errors import StereoprobeError
from stereoprobe.nli import measures
from stereoprobe.nli.scoring import load_probabilities, pairs_frame, score_pairs
from stereoprobe.nli.templates import TemplateSpec
from stereoprobe.store import ScoreStore

SPEC = TemplateSpec("nationality", sample=300, seed=1)


def test_labels_are_found_through_id2label_in_any_order(tmp_path, tiny_nli):
    order = {0: "contradiction", 1: "entailment", 2: "neutral"}
    model = tiny_nli(tmp_path / "m", order)
    probs = load_probabilities(model, SPEC,
                               options=RunOptions(store=ScoreStore(tmp_path / "s"), device="cpu", progress=False))
    assert len(probs) == 300 and list(probs.columns[-3:]) == list(measures.PROB_COLUMNS)
    np.testing.assert_allclose(probs[list(measures.PROB_COLUMNS)].sum(axis=1), 1.0, atol=1e-5)
    # the same model with its classes renamed in the canonical order gives the columns permuted back
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from stereoprobe.models import LoadedModel
    from stereoprobe.nli.scoring import NLIScorer

    m = AutoModelForSequenceClassification.from_pretrained(model)
    tok = AutoTokenizer.from_pretrained(model)
    pair = [("An evil person ate a bagel .", "A Swiss person ate a bagel .")]
    got = NLIScorer(LoadedModel("t", model, m, tok, "0"), label_order=None).score(pair)[0]
    with torch.inference_mode():
        raw = m(**tok(*pair[0], return_tensors="pt")).logits.softmax(-1)[0].numpy()
    np.testing.assert_allclose(got, raw[[1, 2, 0]], atol=1e-6)  # entail, neutral, contradiction


def test_unmappable_labels_stop_before_scoring_and_list_them(tmp_path, tiny_nli):
    model = tiny_nli(tmp_path / "m", {0: "positive", 1: "negative", 2: "mixed"})
    store = ScoreStore(tmp_path / "s")
    with pytest.raises(StereoprobeError, match="positive.*negative.*mixed"):
        score_pairs(model, SPEC, options=RunOptions(store=store, device="cpu", progress=False))
    assert not any((tmp_path / "s").rglob("*.parquet"))  # nothing half-written
    generic = tiny_nli(tmp_path / "g", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(StereoprobeError, match="LABEL_0"):
        score_pairs(generic, SPEC, options=RunOptions(store=store, device="cpu", progress=False))
    ok = score_pairs(generic, SPEC, label_order=("entailment", "neutral", "contradiction"),
                     options=RunOptions(store=store, device="cpu", progress=False))
    assert ok.is_complete()


def test_two_labels_are_refused(tmp_path, tiny_nli):
    model = tiny_nli(tmp_path / "m", {0: "entailment", 1: "not_entailment"})
    with pytest.raises(StereoprobeError, match="2 labels"):
        score_pairs(model, SPEC, options=RunOptions(store=ScoreStore(tmp_path / "s"), device="cpu", progress=False))


def test_pairs_frame_matches_the_generator():
    frame = pairs_frame(SPEC)
    assert len(frame) == 300 and frame["index"].is_monotonic_increasing
    assert set(frame["hypothesis_word"]) <= {w for w in frame["hypothesis_word"].cat.categories}
    assert frame["tid"].between(0, 1967).all()


@pytest.mark.slow
def test_zoo_nli_model_scores_and_resumes(tmp_path):
    store = ScoreStore(tmp_path / "s")
    first = load_probabilities("zoo:minilm-nli", SPEC, options=RunOptions(store=store, device="cpu", progress=False))
    again = load_probabilities("zoo:minilm-nli", SPEC, options=RunOptions(store=store, device="cpu", progress=False))
    np.testing.assert_array_equal(first[list(measures.PROB_COLUMNS)], again[list(measures.PROB_COLUMNS)])
    table = measures.neutrality(first, n_boot=100)
    assert 0 < table.loc["NN", "value"] < 1 and table.loc["NN", "lo"] <= table.loc["NN", "value"]
