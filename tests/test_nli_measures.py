"""Bias-NLI neutrality measures (stereoprobe.nli.measures) and projection debiasing (stereoprobe.nli.projection)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stereoprobe.errors import MetricsError, StereoprobeError
from stereoprobe.nli import measures as M
from stereoprobe.nli import projection as P


def frame(rows):
    return pd.DataFrame(rows, columns=["premise_word", "hypothesis_word", "entail", "neutral", "contradiction"])


# Hand-computed table:            e     n     c    n=max?  n>0.5  n>0.7
HAND = frame([("nurse", "man",   0.20, 0.50, 0.30),  # yes    no (=0.5)  no
              ("nurse", "woman", 0.10, 0.80, 0.10),  # yes    yes        yes
              ("baker", "man",   0.60, 0.30, 0.10),  # no     no         no
              ("baker", "woman", 0.40, 0.40, 0.20),  # tie -> yes, no    no
              ("chef",  "man",   0.15, 0.70, 0.15),  # yes    yes        no (=0.7)
              ("chef",  "woman", 0.05, 0.05, 0.90)])  # no    no         no
# NN = (.5+.8+.3+.4+.7+.05)/6 = 2.75/6; FN = 4/6; T:0.5 = 2/6; T:0.7 = 1/6


# -- measures ----------------------------------------------------------------------------------------------------
def test_measures_by_hand():
    assert M.net_neutral(HAND) == pytest.approx(2.75 / 6)
    assert M.fraction_neutral(HAND) == pytest.approx(4 / 6)
    assert M.threshold_neutral(HAND, 0.5) == pytest.approx(2 / 6)
    assert M.threshold_neutral(HAND, 0.7) == pytest.approx(1 / 6)
    table = M.neutrality(HAND, n_boot=200)
    assert table.index.tolist() == ["NN", "FN", "T:0.5", "T:0.7"]
    assert table["value"].tolist() == pytest.approx([2.75 / 6, 4 / 6, 2 / 6, 1 / 6])
    assert (table["n"] == 6).all()


def test_tie_counts_as_neutral_and_threshold_is_strict():
    tie = frame([("a", "b", 0.45, 0.45, 0.10)])
    assert M.fraction_neutral(tie) == 1.0
    exact = frame([("a", "b", 0.25, 0.5, 0.25), ("a", "c", 0.15, 0.7, 0.15)])
    assert M.threshold_neutral(exact, 0.5) == 0.5   # only 0.7 > 0.5
    assert M.threshold_neutral(exact, 0.7) == 0.0   # 0.7 is not > 0.7


def test_pair_and_word_pair_aggregation():
    # word pair A: n = .9, .3 (mean .6); word pair B: n = .2, .2 (mean .2); two templates each
    probs = frame([("rude", "Iraqi", 0.05, 0.9, 0.05), ("rude", "Iraqi", 0.6, 0.3, 0.1),
                   ("wise", "Welsh", 0.4, 0.2, 0.4), ("wise", "Welsh", 0.1, 0.2, 0.7)])
    pair = M.neutrality(probs, aggregate="pair", n_boot=100)
    word = M.neutrality(probs, aggregate="word_pair", n_boot=100)
    assert pair.loc["NN", "value"] == pytest.approx(0.4) and word.loc["NN", "value"] == pytest.approx(0.4)
    assert pair.loc["T:0.5", "value"] == pytest.approx(0.25)   # 1 of 4 sentence pairs
    assert word.loc["T:0.5", "value"] == pytest.approx(0.5)    # 1 of 2 word pairs (mean .6)
    assert word.loc["FN", "value"] == pytest.approx(0.5)       # A: .6 is max; B: .2 < .55
    assert pair["n"].iloc[0] == 4 and word["n"].iloc[0] == 2
    with pytest.raises(MetricsError, match="aggregate"):
        M.net_neutral(probs, aggregate="template")


def test_ci_contains_estimate_and_shrinks_with_more_data():
    small = M.neutrality(HAND, n_boot=2000, seed=0)
    big = M.neutrality(pd.concat([HAND] * 50, ignore_index=True), n_boot=2000, seed=0)
    for t in (small, big):
        assert ((t["lo"] <= t["value"]) & (t["value"] <= t["hi"])).all()
    assert (big["hi"] - big["lo"] < small["hi"] - small["lo"]).all()
    assert big["value"].tolist() == pytest.approx(small["value"].tolist())
    again = M.neutrality(HAND, n_boot=2000, seed=0)
    pd.testing.assert_frame_equal(small, again)


def test_word_pair_ci_resamples_word_pairs():
    probs = pd.concat([HAND] * 3, ignore_index=True)   # 6 word pairs, 3 templates each
    t = M.neutrality(probs, aggregate="word_pair", n_boot=500)
    assert (t["n"] == 6).all()
    assert t.loc["NN", "value"] == pytest.approx(2.75 / 6)


@pytest.mark.parametrize("bad, message", [
    (HAND.assign(neutral=np.r_[np.nan, HAND["neutral"].iloc[1:]]), "NaN or infinite"),
    (HAND.assign(entail=HAND["entail"] * 10), "outside \\[0, 1\\]"),
    (HAND.assign(contradiction=0.0), "do not sum to 1"),
    (HAND.drop(columns="neutral"), "lacks column\\(s\\) neutral"),
    (HAND.iloc[:0], "no rows"),
])
def test_invalid_probabilities(bad, message):
    with pytest.raises(MetricsError, match=message):
        M.neutrality(bad, n_boot=10)


def test_word_columns_needed_only_for_word_pairs():
    probs = HAND.drop(columns=["premise_word"])
    assert M.net_neutral(probs) == pytest.approx(2.75 / 6)
    with pytest.raises(MetricsError, match="premise_word"):
        M.net_neutral(probs, aggregate="word_pair")


def test_percent_diff():
    assert M.percent_diff(0.480, 0.387) == pytest.approx((0.480 - 0.387) / 0.387 * 100)
    base = M.neutrality(HAND, n_boot=50)
    new = base.assign(value=base["value"] * 1.5)
    assert M.percent_diff(new, base).tolist() == pytest.approx([50.0] * 4)
    with pytest.raises(MetricsError, match="baseline"):
        M.percent_diff(0.3, 0.0)


def test_top_pairs_tables():
    probs = pd.concat([HAND, HAND.assign(entail=HAND["contradiction"], contradiction=HAND["entail"])],
                      ignore_index=True)
    top = M.top_pairs(probs, "entail", k=3)
    assert list(top.columns) == ["premise_word", "hypothesis_word", "entail", "neutral", "contradiction", "n"]
    assert len(top) == 3 and top["entail"].is_monotonic_decreasing
    assert (top["n"] == 2).all()
    row = top.iloc[0]
    assert (row["premise_word"], row["hypothesis_word"]) == ("chef", "woman")
    assert row["entail"] == pytest.approx((0.05 + 0.90) / 2)
    worst = M.top_pairs(HAND, "contradiction", k=1)
    assert worst[["premise_word", "hypothesis_word"]].values.tolist() == [["chef", "woman"]]
    with pytest.raises(MetricsError, match="Unknown label"):
        M.top_pairs(HAND, "contra")


def test_breakdown_by_word_and_word_pair():
    probs = M.example_probabilities()
    one = M.breakdown(probs, "rude", "Iraqi", n_boot=100)
    assert one.loc["NN", "value"] == pytest.approx(0.65)
    assert one.loc["E", "value"] == pytest.approx(0.15) and one.loc["C", "value"] == pytest.approx(0.20)
    assert one["n"].iloc[0] == 2
    by_word = M.breakdown(probs, hypothesis_word="Welsh", n_boot=100)
    assert by_word.loc["NN", "value"] == pytest.approx((0.4 + 0.7) / 2)
    with pytest.raises(MetricsError, match="Iraki"):
        M.breakdown(probs, "rude", "Iraki")


# -- labels ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("id2label, expected", [
    ({0: "entailment", 1: "neutral", 2: "contradiction"}, (0, 1, 2)),
    ({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, (2, 1, 0)),          # roberta-large-mnli
    ({"0": "contradiction", "1": "entailment", "2": "neutral"}, (1, 2, 0)),   # cross-encoder/nli-deberta-v3
    (["Entails", "Neutral", "Contradict"], (0, 1, 2)),
    ({2: " entail ", 0: "neutral", 1: "contradiction"}, (2, 0, 1)),
])
def test_label_mapping(id2label, expected):
    assert M.label_indices(id2label) == expected


def test_generic_labels_need_an_explicit_order():
    generic = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    with pytest.raises(MetricsError, match=r"LABEL_0.*LABEL_1.*LABEL_2.*order="):
        M.label_indices(generic)
    assert M.label_indices(generic, order=("entailment", "neutral", "contradiction")) == (0, 1, 2)
    assert M.label_indices(generic, order=("contradiction", "entailment", "neutral")) == (1, 2, 0)
    with pytest.raises(MetricsError, match="order="):
        M.label_indices(generic, order=("entailment", "entailment", "neutral"))


@pytest.mark.parametrize("id2label", [
    {0: "entailment", 1: "not_entailment"},
    {0: "positive", 1: "neutral", 2: "negative"},
    {0: "entailment", 1: "entailment", 2: "neutral"},
])
def test_unmappable_labels_are_listed(id2label):
    with pytest.raises(MetricsError) as err:
        M.label_indices(id2label)
    for name in id2label.values():
        assert repr(name) in str(err.value)


def test_probabilities_from_logits():
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    probs = M.probabilities_from_logits(logits, {0: "contradiction", 1: "neutral", 2: "entailment"})
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert list(probs.columns) == ["entail", "neutral", "contradiction"]
    np.testing.assert_allclose(probs.to_numpy(), expected[:, [2, 1, 0]])
    M.check_probabilities(probs)
    with pytest.raises(MetricsError, match="shape"):
        M.probabilities_from_logits(np.zeros((2, 2)), {0: "a", 1: "b"})


# -- projection --------------------------------------------------------------------------------------------------
rng = np.random.default_rng(42)
X = rng.standard_normal((30, 6))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_projection_removes_every_direction_and_is_idempotent(k):
    directions = rng.standard_normal((k, 6)) * 3.0          # neither unit nor orthogonal
    out = P.project_out(X, directions)
    np.testing.assert_allclose(out @ directions.T, 0.0, atol=1e-12)
    np.testing.assert_allclose(P.project_out(out, directions), out, atol=1e-12)
    # the component orthogonal to the subspace is untouched
    basis = P.orthonormalize(directions)
    np.testing.assert_allclose(X - out, (X @ basis.T) @ basis, atol=1e-12)


def test_non_unit_direction_is_normalized():
    b = np.array([0.0, 2.0, 0.0, 0.0, 0.0, 0.0])
    out = P.project_out(X, b)
    np.testing.assert_allclose(out, P.project_out(X, b / 2))
    np.testing.assert_allclose(out[:, 1], 0.0)
    np.testing.assert_allclose(np.delete(out, 1, axis=1), np.delete(X, 1, axis=1))
    # the authors' unnormalized formula x - (x.b) b would be wrong for ‖b‖ = 2
    assert not np.allclose(X - np.outer(X @ b, b), out)


def test_two_dimensional_subspace():
    d = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    basis = P.orthonormalize(d)
    np.testing.assert_allclose(basis @ basis.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(basis[0], [2 ** -0.5, 2 ** -0.5, 0.0])   # first direction, normalized
    np.testing.assert_allclose(P.project_out([[3.0, -2.0, 5.0]], d), [[0.0, 0.0, 5.0]], atol=1e-12)


def test_rank_deficient_directions():
    with pytest.raises(P.ProjectionError, match="rank-deficient"):
        P.orthonormalize([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0]])
    with pytest.raises(P.ProjectionError, match="zero"):
        P.orthonormalize([[0.0, 0.0, 0.0]])
    with pytest.raises(P.ProjectionError, match="dimension"):
        P.project_out(X, np.ones(5))
    assert issubclass(P.ProjectionError, StereoprobeError)


def test_projection_keeps_float32():
    out = P.project_out(X.astype(np.float32), [1.0, 0, 0, 0, 0, 0])
    assert out.dtype == np.float32


def test_subspace_sign_is_deterministic():
    words = rng.standard_normal((8, 6)) + np.array([5.0, 0, 0, 0, 0, 0])
    for method in ("svd_uncentered", "pca_centered"):
        sub = P.subspace(words, 2, method=method)
        np.testing.assert_allclose(sub @ sub.T, np.eye(2), atol=1e-12)
        for row in sub:
            assert row[np.abs(row).argmax()] > 0
        # same rows in another order / scaled give the same directions
        np.testing.assert_allclose(P.subspace(words[::-1] * 3.0, 2, method=method), sub, atol=1e-10)
    # the uncentred SVD of vectors sharing a common component finds that component first
    assert abs(P.subspace(words, 1)[0, 0]) > 0.9


def test_subspace_errors():
    with pytest.raises(P.ProjectionError, match="Only 2 word vectors for k=3"):
        P.subspace(rng.standard_normal((2, 6)), 3)
    with pytest.raises(P.ProjectionError, match="fewer than k=2"):
        P.subspace(np.tile([1.0, 2.0, 3.0], (4, 1)), 2)
    with pytest.raises(P.ProjectionError, match="method"):
        P.subspace(X, 1, method="pca")


def test_principal_value_ratios_known_singular_values():
    s = np.array([10.0, 5.7, 3.9, 2.4, 1.0])
    u, _ = np.linalg.qr(rng.standard_normal((9, 5)))
    v, _ = np.linalg.qr(rng.standard_normal((12, 5)))
    matrix = u @ np.diag(s) @ v.T
    np.testing.assert_allclose(P.principal_value_ratios(matrix), [0.57, 0.39, 0.24])
    np.testing.assert_allclose(P.principal_value_ratios(matrix, n=4), s[1:] / s[0])
    with pytest.raises(P.ProjectionError, match="at least 4"):
        P.principal_value_ratios(matrix[:3])


def test_gendered_set_and_gender_direction():
    words = [w for pair in P.GENDERED_PAIRS for w in pair] + ["he", "she"]
    lookup = {w: rng.standard_normal(6) * (i + 1) for i, w in enumerate(words)}
    diffs = P.pair_differences(P.GENDERED_PAIRS, lookup)
    assert diffs.shape == (9, 6)

    def unit(v):
        return v / np.linalg.norm(v)

    np.testing.assert_allclose(diffs[0], unit(lookup["man"]) - unit(lookup["woman"]))
    b = P.gender_direction(lookup)
    np.testing.assert_allclose(b, unit(unit(lookup["he"]) - unit(lookup["she"])))
    raw = P.gender_direction(lookup, method="raw")
    np.testing.assert_allclose(raw, unit(lookup["he"] - lookup["she"]))
    assert P.abs_cosine(b, -b) == pytest.approx(1.0)


def test_random_directions():
    r = P.random_directions(300, n=8, seed=0)
    assert r.shape == (8, 300)
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), 1.0)
    np.testing.assert_array_equal(r, P.random_directions(300, n=8, seed=0))
    assert not np.allclose(r, P.random_directions(300, n=8, seed=1))
    assert np.abs(r @ r.T - np.eye(8)).max() < 0.3   # nearly orthogonal in 300-d


def test_random_word_pc_directions_follow_the_script():
    from sklearn.decomposition import PCA

    vectors = rng.standard_normal((100, 25))
    r = P.random_word_pc_directions(vectors, n=3, seed=1, words=20)
    np.random.seed(1)   # what gen_random_bias.py does
    for row in r:
        rows = vectors[np.random.permutation(100)[:20]]
        np.testing.assert_allclose(row, PCA(n_components=20).fit(rows).components_[0], atol=1e-10)
    np.testing.assert_array_equal(r, P.random_word_pc_directions(vectors, n=3, seed=1))


def test_vectors_for_lists_all_missing_words():
    lookup = {"american": [1.0, 0.0], "french": [0.0, 1.0]}
    assert P.vectors_for(["french", "american"], lookup).tolist() == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(P.ProjectionError) as err:
        P.vectors_for(["american", "Chinese", "french", "korean", "korean"], lookup)
    message = str(err.value)
    assert "2 of 4 words are missing" in message and "'Chinese'" in message and "'korean'" in message
    assert "'american'" not in message


def test_projection_hook_on_embedding():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    emb = torch.nn.Embedding(20, 8, padding_idx=0)
    ids = torch.tensor([[0, 3, 5, 7], [1, 2, 19, 4]])
    before = emb(ids).detach().clone()
    b = np.random.default_rng(0).standard_normal(8) * 2.0
    handle = P.projection_hook(emb, b)
    out = emb(ids)
    unit = torch.as_tensor(b / np.linalg.norm(b), dtype=torch.float32)
    assert (out @ unit).abs().max().item() < 1e-5
    assert torch.all(out[0, 0] == 0)                                  # padding stays zero
    # with frozen embeddings the hook equals a one-off weight edit
    edited = torch.as_tensor(P.project_out(emb.weight.detach().numpy(), b))
    torch.testing.assert_close(out.detach(), edited[ids])
    handle.remove()
    torch.testing.assert_close(emb(ids).detach(), before)
    with pytest.raises(P.ProjectionError, match="dimension"):
        P.projection_hook(emb, np.ones(5))
