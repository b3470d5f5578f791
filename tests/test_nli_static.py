"""The static-embedding Bias-NLI model (stereoprobe.nli.static), on a tiny synthetic embedding table."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from stereoprobe.assets import Embeddings
from stereoprobe.errors import CorpusError, ModelLoadError, StereoprobeError
from stereoprobe.nli import measures
from stereoprobe.nli import static as S
from stereoprobe.corpora.examples import NLIExample

WORDS = [f"w{i}" for i in range(190)] + ["a", "nurse", "ate", "bagel", ".", "nobody", "man", "woman", "he", "she"]
CONTENT = [f"w{i}" for i in range(60)]
DIM = 32  # with fewer dimensions locked dropout (whole dimensions per sentence) slows learning identity
UNSEEN = [f"w{i}" for i in range(60, 80)]  # in the embeddings, never in the toy training corpus
TINY = dict(hidden=32, mlp=64, dropout=0.1, batch_size=16, lr=3e-3, patience=None, threads=1, progress=False)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def emb() -> Embeddings:
    rng = np.random.default_rng(0)
    return Embeddings(list(WORDS), rng.normal(0, 1, size=(len(WORDS), DIM)).astype(np.float32))


def toy(n: int, seed: int, pool=CONTENT) -> list[NLIExample]:
    """Identical sentences entail; a hypothesis with "nobody" contradicts; one sharing no word is neutral."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        chosen = rng.sample(pool, rng.randint(3, 6))
        premise = " ".join(chosen) + " ."
        label = ("entailment", "neutral", "contradiction")[i % 3]
        if label == "entailment":
            hyp = premise
        else:
            words = rng.sample([w for w in pool if w not in chosen], rng.randint(3, 6))
            if label == "contradiction":
                words[rng.randrange(len(words))] = "nobody"
            hyp = " ".join(words) + " ."
        out.append(NLIExample(premise, hyp, label, "toy"))
    return out


@pytest.fixture(scope="module")
def trained(emb):
    return S.train_static(toy(1200, 0), toy(90, 1), emb, epochs=6, seed=1, **TINY)


# -- tokens and data -------------------------------------------------------------------------------------------
def test_tokenize():
    assert S.tokenize("A nurse ate a bagel .") == S.tokenize("A nurse ate a bagel.") == \
        ["a", "nurse", "ate", "a", "bagel", "."]
    assert S.tokenize("Two dogs, (running)!") == ["two", "dogs", ",", "(", "running", ")", "!"]
    assert S.tokenize("She doesn't like John's hat") == ["she", "does", "n't", "like", "john", "'s", "hat"]


def test_read_snli_jsonl(tmp_path):
    path = tmp_path / "snli.jsonl"
    rows = [{"gold_label": "entailment", "sentence1": "A man sleeps.", "sentence2": "A person sleeps."},
            {"gold_label": "-", "sentence1": "A b.", "sentence2": "C d."},
            {"gold_label": "contradiction", "sentence1": "A man sleeps.", "sentence2": "A man runs.", "pairID": "x"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    ex = S.read_snli(path)
    assert [(e.premise, e.hypothesis, e.label) for e in ex] == [
        ("A man sleeps.", "A person sleeps.", "entailment"), ("A man sleeps.", "A man runs.", "contradiction")]
    assert S.read_snli(path, limit=1) == ex[:1]
    path.write_text(json.dumps(rows[0]) + "\n{not json\n")
    with pytest.raises(CorpusError, match=r"snli\.jsonl:2: not a JSON object"):
        S.read_snli(path)
    path.write_text(json.dumps({"gold_label": "entailment", "sentence1": "x"}) + "\n")
    with pytest.raises(CorpusError, match=r"snli\.jsonl:1: expected a JSON object with gold_label"):
        S.read_snli(path)
    path.write_text(json.dumps({**rows[0], "gold_label": "entails"}) + "\n")
    with pytest.raises(CorpusError, match=r"snli\.jsonl:1: unknown label 'entails'"):
        S.read_snli(path)


def test_read_snli_tsv_and_missing(tmp_path):
    header = "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1\tsentence2\tpairID"
    lines = [header, "neutral\t( A )\t( B )\tA dog \"runs\".\tA dog runs fast.\t1",
             "-\t( A )\t( B )\tX.\tY.\t2", "entailment\t( A )\t( B )\tA cat.\tAn animal.\t3"]
    path = tmp_path / "snli_1.0_dev.txt"
    path.write_text("\n".join(lines) + "\n")
    ex = S.read_snli(path)
    assert [(e.premise, e.label) for e in ex] == [('A dog "runs".', "neutral"), ("A cat.", "entailment")]
    path.write_text("\n".join([*lines, "neutral\tonly two"]) + "\n")
    with pytest.raises(CorpusError, match=r"snli_1\.0_dev\.txt:5: 2 tab-separated field"):
        S.read_snli(path)
    path.write_text("label\ts1\ts2\nneutral\ta\tb\n")
    with pytest.raises(CorpusError, match=r"snli_1\.0_dev\.txt:1: the header"):
        S.read_snli(path)
    with pytest.raises(CorpusError, match="does not exist"):
        S.read_snli(tmp_path / "nope.jsonl")


def test_corpus_errors(emb):
    with pytest.raises(CorpusError, match="training corpus is empty"):
        S.train_static([], toy(3, 1), emb, **TINY)
    bad = [NLIExample("a b", "a b", "entails", "x")]
    with pytest.raises(CorpusError, match="unknown label 'entails'"):
        S.train_static(toy(3, 0) + bad, toy(3, 1), emb, **TINY)
    with pytest.raises(StereoprobeError, match="2 word.*zebra, okapi"):
        S.train_static(toy(3, 0), toy(3, 1), emb, require=["nurse", "zebra", "okapi"], **TINY)


# -- embedding table -------------------------------------------------------------------------------------------
def test_oov_mapping_is_seeded(emb):
    toks = ["a", "qqq", "nurse", "qqq", "zzz"]
    t1, t2, t3 = (S.StaticEmbeddingTable(emb, ["a", "nurse"], seed=s) for s in (5, 5, 6))
    ids = t1.encode(toks)
    assert ids[0] == S.BOS and ids[1] == t1.index["a"] and ids[3] == t1.index["nurse"]
    assert all(S.OOV_START <= ids[i] < S.OOV_START + S.N_OOV for i in (2, 4, 5))
    assert ids == t2.encode(toks)  # same seed, same mapping (and no dependence on call order)
    sentences = [[f"oov{i}", "a"] for i in range(50)]
    assert [t1.encode(s) for s in sentences] != [t3.encode(s) for s in sentences]
    assert len({t1.encode(["qqq"] * 40)[i] for i in range(1, 41)}) > 10  # per occurrence, not per word type
    np.testing.assert_array_equal(t1.specials, t2.specials)
    assert not np.array_equal(t1.specials, t3.specials)
    assert np.all(t1.specials[S.PAD] == 0) and abs(t1.specials[S.OOV_START:].std() - S.OOV_STD) < 0.01


def test_projected_matrix(emb):
    dirs = np.random.default_rng(3).normal(size=(2, DIM))
    table = S.StaticEmbeddingTable(emb, ["a", "nurse", "w3"], directions=dirs)
    table.encode(["w100", "he"])  # lazily added words are projected too
    m = table.matrix()
    assert m.shape == (S.OOV_START + S.N_OOV + 5, DIM)
    basis = np.linalg.qr(dirs.T)[0].T
    assert np.abs(m @ basis.T).max() < 1e-5
    assert np.all(m[S.PAD] == 0)
    plain = S.StaticEmbeddingTable(emb, ["a"], directions=None)
    np.testing.assert_allclose(m[table.index["a"]], emb["a"] - (emb["a"] @ basis.T) @ basis, atol=1e-5)
    np.testing.assert_array_equal(plain.matrix()[plain.index["a"]], emb["a"])
    assert S.directions_sha256(dirs) == S.directions_sha256(dirs * 3) != S.directions_sha256(dirs[:1])
    with pytest.raises(StereoprobeError, match="dimension 3"):
        S.StaticEmbeddingTable(emb, directions=np.ones(3))


# -- the model ---------------------------------------------------------------------------------------------------
def test_toy_task_is_learned(trained):
    meta = trained.metadata
    assert meta["heldout_accuracy"] >= 0.9, meta["curve"]
    assert 1 <= meta["best_epoch"] <= meta["epochs_run"] == 6
    assert set(meta["heldout_per_label"]) == set(S.LABELS)
    assert trained.accuracy(toy(60, 2)) >= 0.85
    # unseen (but embedded) words are looked up at prediction time
    assert trained.accuracy(toy(60, 3, pool=UNSEEN)) >= 0.6


def test_predict_probabilities_in_enc_order(trained):
    assert S.LABELS == measures.CLASSES and len(measures.PROB_COLUMNS) == 3
    pairs = [("w1 w2 w3 .", "w1 w2 w3 ."), ("w4 w5 w6 .", "w7 nobody w8 ."), ("w9 w10 w11 .", "w12 w13 w14 .")]
    p = trained.predict(pairs, batch_size=2, progress=False)
    assert p.shape == (3, 3) and np.allclose(p.sum(axis=1), 1) and (p >= 0).all()
    assert p.argmax(axis=1).tolist() == [0, 2, 1]
    assert trained.predict([], progress=False).shape == (0, 3)
    assert trained.oov_words(["A nurse ate qqq.", "W1 zz w2"]) == ["qqq", "zz"]
    with pytest.raises(StereoprobeError, match="pairs\\[0\\]"):
        trained.predict([("only one",)], progress=False)


def test_padding_is_masked(trained):
    """A pair's probabilities do not depend on the other (longer or shorter) pairs in its batch."""
    pairs = [(e.premise, e.hypothesis) for e in toy(40, 4)]
    pairs += [("w1 .", "w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 ."), ("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 .", "w5 .")]
    together = trained.predict(pairs, batch_size=64, progress=False)
    alone = np.vstack([trained.predict([p], progress=False) for p in pairs])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_determinism(emb):
    train, held = toy(90, 0), toy(30, 1)
    pairs = [(e.premise, e.hypothesis) for e in held]
    import torch

    state = torch.random.get_rng_state()
    a = S.train_static(train, held, emb, epochs=1, seed=7, **TINY).predict(pairs, progress=False)
    assert torch.equal(state, torch.random.get_rng_state())  # the caller's RNG is left alone
    b = S.train_static(train, held, emb, epochs=1, seed=7, **TINY).predict(pairs, progress=False)
    c = S.train_static(train, held, emb, epochs=1, seed=8, **TINY).predict(pairs, progress=False)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_save_load_roundtrip(trained, emb, tmp_path):
    pairs = [("w1 qqq w3 .", "w1 w2 w3 ."), ("w61 w62 .", "nobody w63 .")]
    before = trained.predict(pairs, progress=False)
    folder = trained.save(tmp_path / "model")
    assert sorted(p.name for p in folder.iterdir()) == [S.CARD, S.WEIGHTS]
    card = json.loads((folder / S.CARD).read_text())
    assert card["config"]["embedding_source"]["fingerprint"] == S.embeddings_fingerprint(emb)
    assert card["metadata"]["heldout_accuracy"] == trained.metadata["heldout_accuracy"]
    loaded = S.StaticNLI.load(folder, emb)
    np.testing.assert_array_equal(loaded.predict(pairs, progress=False), before)
    other = Embeddings(list(WORDS), emb.vectors + 1)
    with pytest.raises(ModelLoadError, match="not the ones it was trained on"):
        S.StaticNLI.load(folder, other)
    with pytest.raises(ModelLoadError, match="was trained on the embeddings 'custom'"):
        S.StaticNLI.load(folder)
    with pytest.raises(ModelLoadError, match="holds no complete"):
        S.StaticNLI.load(tmp_path / "missing", emb)


def test_save_load_with_directions(emb, tmp_path):
    dirs = np.random.default_rng(1).normal(size=(1, DIM))
    model = S.train_static(toy(30, 0), toy(9, 1), emb, directions=dirs, epochs=1, **TINY)
    assert model.config["directions_sha256"] == S.directions_sha256(dirs)
    pairs = [("w1 w2 .", "w70 he .")]
    loaded = S.StaticNLI.load(model.save(tmp_path / "m"), emb)
    np.testing.assert_array_equal(loaded.predict(pairs, progress=False), model.predict(pairs, progress=False))
    m, n = model.table.matrix(), loaded.table.matrix()
    np.testing.assert_array_equal(m[:S.OOV_START + S.N_OOV], n[:S.OOV_START + S.N_OOV])
    for w in ["w1", "w70", "he", "."]:
        np.testing.assert_array_equal(m[model.table.index[w]], n[loaded.table.index[w]])


def test_cached_train_reuses(emb, tmp_path, monkeypatch):
    calls = []
    real = S.train_static

    def counting(*args, **kwargs):
        calls.append(kwargs.get("directions"))
        return real(*args, **kwargs)

    monkeypatch.setattr(S, "train_static", counting)
    train, held = toy(30, 0), toy(9, 1)
    settings = {k: v for k, v in TINY.items() if k not in ("threads", "progress")}
    first = S.cached_train(train, held, emb, root=tmp_path, epochs=1, progress=False, **settings)
    second = S.cached_train(train, held, emb, root=tmp_path, epochs=1, progress=False, **settings)
    assert len(calls) == 1 and first.metadata["cache_hit"] is False and second.metadata["cache_hit"] is True
    assert second.path == first.path and first.path.parent == tmp_path
    pairs = [("w1 w2 .", "w3 nobody .")]
    np.testing.assert_array_equal(first.predict(pairs, progress=False), second.predict(pairs, progress=False))
    S.cached_train(train, held, emb, root=tmp_path, epochs=1, progress=False, directions=np.ones(DIM), **settings)
    assert len(calls) == 2  # other directions: another key
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folders left
    with pytest.raises(StereoprobeError, match="Unknown training setting"):
        S.cache_key(train, held, emb, epoch=3)


def test_glove_table_if_installed():
    from stereoprobe.assets import AssetError, glove

    try:
        g = glove()
    except AssetError:
        pytest.skip("the GloVe asset is not installed")
    from stereoprobe.nli.projection import gender_direction

    b = gender_direction(g)
    table = S.StaticEmbeddingTable(g, directions=b)
    ids = table.encode(S.tokenize("A nurse ate a bagel."))
    assert min(ids[1:]) >= S.OOV_START + S.N_OOV  # every template word has its own (projected) GloVe row
    assert np.abs(table.matrix() @ b).max() < 1e-4
    assert S.embeddings_fingerprint(g) == S.embeddings_fingerprint(g)
