"""Post-hoc debiasing of a multiple-choice encoder (stereoprobe.sodapop.debias; An et al. 2023, §6): the encoder
hook on a tiny BertForMultipleChoice, INLP and SentenceDebias on planted data, the offline attribute corpus."""

from __future__ import annotations

import numpy as np
import pytest

from stereoprobe.errors import ProjectionError
from stereoprobe.sodapop import debias as db

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONTEXT = "the man met his sister at the city . who was a nurse ?"
CHOICES = [["the man", "the woman", "the boy"], ["a nurse", "a hunter", "an accountant"]]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random BertForMultipleChoice (hidden 32, 2 layers, no dropout) and its WordPiece tokenizer."""
    import torch
    from transformers import BertConfig, BertForMultipleChoice, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_mcq")
    words = set((CONTEXT + " " + " ".join(c for cs in CHOICES for c in cs)).split()) - {".", "?"}
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,?!-'") + sorted(words | {"he", "she", "her"})
    vocab += list("abcdefghijklmnopqrstuvwxyz") + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    tok = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return BertForMultipleChoice(config).eval(), tok


def _inputs(tok):
    """Two questions × three choices → (2, 3, seq) tensors, as BertForMultipleChoice takes them."""
    flat = tok([CONTEXT] * 6, [c for cs in CHOICES for c in cs], padding=True, return_tensors="pt")
    return {k: v.view(2, 3, -1) for k, v in flat.items()}


def _logits(model, tok):
    import torch

    with torch.inference_mode():
        return model(**_inputs(tok)).logits


def _null_projection(d: int, k: int, seed: int = 0) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, k)))
    return np.eye(d) - q @ q.T


# ------------------------------------------------------------------------------------------------ hook


def test_hook_changes_logits_and_restores_them_exactly(tiny):
    import torch

    model, tok = tiny
    before = _logits(model, tok)
    with db.debiased(model, P=_null_projection(32, 8)):
        during = _logits(model, tok)
    assert during.shape == (2, 3)
    assert not torch.allclose(before, during, atol=1e-4)
    assert torch.equal(_logits(model, tok), before)
    assert not model.bert.encoder._forward_hooks


def test_identity_projection_leaves_logits_unchanged(tiny):
    import torch

    model, tok = tiny
    before = _logits(model, tok)
    with db.debiased(model, P=np.eye(32)):
        assert torch.equal(_logits(model, tok), before)


def test_hook_matches_manual_projection_before_pooler(tiny):
    """Logits with the hook = classifier(pooler(P h)) recomputed by hand from the un-hooked encoder states."""
    import torch

    model, tok = tiny
    P = _null_projection(32, 5, seed=1)
    flat = {k: v.view(6, -1) for k, v in _inputs(tok).items()}
    with torch.inference_mode():
        h = model.bert(**flat).last_hidden_state
        manual = model.classifier(model.bert.pooler(h @ torch.tensor(P, dtype=torch.float32).T)).view(2, 3)
    with db.debiased(model, P=P):
        assert torch.allclose(_logits(model, tok), manual, atol=1e-5)


def test_sentence_debias_hook_leaves_states_orthogonal_to_b(tiny):
    import torch

    model, tok = tiny
    b = np.random.default_rng(2).normal(size=32) * 3.0  # not unit: the hook divides by b·b
    seen = []
    handle = model.bert.pooler.register_forward_pre_hook(lambda _m, args: seen.append(args[0].clone()))
    try:
        with db.debiased(model, b=b):
            _logits(model, tok)
        _logits(model, tok)
    finally:
        handle.remove()
    hooked, plain = seen
    unit = torch.tensor(b / np.linalg.norm(b), dtype=torch.float32)
    assert hooked.shape[0] == 6  # (batch·choices, seq, d): the flattened multiple-choice states
    assert (hooked @ unit).abs().max() < 1e-5
    assert (plain @ unit).abs().max() > 1e-2


def test_fit_variant_equals_the_hook(tiny):
    """DebiasFit.variant() (score_mcq's one-pass path) applies the same projection as the hook."""
    import torch

    model, _ = tiny
    fit = db.DebiasFit("sentence_debias", "gender", np.random.default_rng(3).normal(size=32), {}, "k")
    h = torch.randn(4, 7, 32)
    assert torch.allclose(fit.variant().apply(h), db.DebiasedEncoder(model, b=fit.b).project(h), atol=1e-5)


# ----------------------------------------------------------------------------------------- algorithms


def test_inlp_removes_planted_linear_information():
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(0)
    n, d = 900, 20
    y = np.repeat([1, 0, -1], n // 3)
    means = {1: 3.0 * np.eye(d)[0], 0: 3.0 * np.eye(d)[1], -1: -3.0 * np.eye(d)[0]}
    X = rng.normal(size=(n, d)) + np.stack([means[v] for v in y])
    dev = []
    P = db.inlp_projection(X, y, n_iterations=4, callback=lambda _i, acc: dev.append(acc))
    assert len(dev) == 4 and dev[0] > 0.9 and dev[-1] < 0.5
    assert np.allclose(P, P.T, atol=1e-10) and np.allclose(P @ P, P, atol=1e-10)
    assert round(np.trace(P)) == d - 4 * 3  # 3 classes: each one-vs-rest classifier removes 3 dimensions
    X_train, _, X_test, y_train, _, y_test = db._inlp_splits(X, y, 0)
    final = LinearSVC(fit_intercept=False, dual=False, random_state=0).fit(X_train @ P, y_train).score(X_test @ P, y_test)
    majority = np.unique(y_test, return_counts=True)[1].max() / len(y_test)
    assert final < majority + 0.1


def test_sentence_debias_recovers_a_planted_direction():
    rng = np.random.default_rng(1)
    n, d = 200, 16
    v = rng.normal(size=d)
    v /= np.linalg.norm(v)
    base = rng.normal(size=(n, 1, d)) * 4.0
    E = base + np.stack([v, -v])[None] * rng.uniform(0.5, 1.5, size=(n, 1, 1)) + 0.05 * rng.normal(size=(n, 2, d))
    b = db.sentence_debias_direction(E)
    assert np.isclose(np.linalg.norm(b), 1.0) and abs(b @ v) > 0.98


# ------------------------------------------------------------------------------------------ corpus


def test_counterfactual_tuples_swap_words():
    race = db.counterfactual_tuples("race", sentences=["The Black cat sat."])
    assert race == [("the black cat sat.", "the caucasian cat sat.", "the asian cat sat."),
                    ("the black cat sat.", "the white cat sat.", "the asian cat sat.")]
    gender = db.counterfactual_tuples("gender", sentences=["Mr. Smith thanked her, kindly."])
    assert ("mr. smith thanked her, kindly.", "mrs. smith thanked her, kindly.") in gender
    assert ("mr. smith thanked him, kindly.", "mr. smith thanked her, kindly.") in gender
    assert ("mr. smith thanked his, kindly.", "mr. smith thanked her, kindly.") in gender
    assert len(gender) == 4  # mr./mrs., mr./ms., him/her, his/her
    assert db.counterfactual_tuples("gender", max_tuples=3, sentences=["he and he", "she ran", "his dog", "a man"]) \
        == db.counterfactual_tuples("gender", max_tuples=3, sentences=["he and he", "she ran", "his dog", "a man"])


def test_attribute_sentences_from_the_offline_corpus():
    data = db.attribute_sentences("gender", max_sentences=60)
    assert {k: len(v) for k, v in data.items()} == {"male": 60, "female": 60, "neutral": 60}
    male = {w for w, _ in db.attribute_words("gender")}
    female = {w for _, w in db.attribute_words("gender")}
    words = lambda s: {db._match(t, male | female) for t in s.split()} - {None}  # noqa: E731
    assert all(words(s) and words(s) <= male for s in data["male"])
    assert all(words(s) and words(s) <= female for s in data["female"])
    assert not any(words(s) for s in data["neutral"]) and all(len(s.split()) >= 4 for s in data["neutral"])
    assert db.attribute_sentences("gender", max_sentences=60) == data  # seeded
    race = db.attribute_sentences("race", max_sentences=30)
    assert set(race) == {"attribute", "neutral"} and len(race["attribute"]) == 30


def test_fit_debias_end_to_end_and_cached(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path))
    model, tok = tiny
    fit = db.fit_debias(model, tok, "inlp", "gender", fingerprint="tiny", n_iterations=3, max_sentences=30)
    assert fit.P.shape == (32, 32) and fit.b is None
    assert fit.diagnostics["n_sentences"] == {"male": 30, "female": 30, "neutral": 30}
    assert len(fit.diagnostics["dev_accuracy"]) == 3 and fit.diagnostics["rank_removed"] == 9
    again = db.fit_debias(model, tok, "inlp", "gender", fingerprint="tiny", n_iterations=3, max_sentences=30)
    assert again.key == fit.key and np.array_equal(again.P, fit.P) and again.diagnostics == fit.diagnostics
    assert len(list((tmp_path / "sodapop_debias").glob("inlp-gender-*.npy"))) == 1
    sd = db.fit_debias(model, tok, "sentence_debias", "race", fingerprint="tiny", max_tuples=20,
                       encoder_source=(model, tok))
    assert sd.b.shape == (32,) and np.isclose(np.linalg.norm(sd.b), 1.0) and sd.diagnostics["tuple_size"] == 3


# ------------------------------------------------------------------------------------------ errors


def test_errors_name_the_culprit(tiny):
    import torch

    model, tok = tiny
    with pytest.raises(ProjectionError, match="Linear has no encoder"):
        db.debiased(torch.nn.Linear(2, 2), P=np.eye(2))
    with pytest.raises(ProjectionError, match="exactly one of P"):
        db.debiased(model, P=np.eye(32), b=np.ones(32))
    with pytest.raises(ProjectionError, match=r"P has shape \(8, 8\).*hidden size is 32"):
        db.debiased(model, P=np.eye(8))
    with pytest.raises(ProjectionError, match="'lasso'"):
        db.fit_debias(model, tok, "lasso", fingerprint="x")
    with pytest.raises(ProjectionError, match="'age'"):
        db.fit_debias(model, tok, "inlp", "age", fingerprint="x")
    with pytest.raises(ProjectionError, match="Too few gender attribute sentences"):
        db.fit_debias(model, tok, "inlp", "gender", fingerprint="x", max_sentences=3, cache=False)
    with pytest.raises(ProjectionError, match="at least two labels"):
        db.inlp_projection(np.ones((20, 3)), np.zeros(20))
    with pytest.raises(ProjectionError, match="zero embedding"):
        db.sentence_debias_direction(np.zeros((3, 2, 4)))
