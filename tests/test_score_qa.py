"""QA scoring (the authors' qa_hf/predict.py) on tiny random BERT/RoBERTa models built locally."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import stereoprobe.models
from stereoprobe import RunOptions
from stereoprobe.errors import ModelLoadError, StereoprobeError
from stereoprobe.models import load
from stereoprobe.store import ScoreStore
from stereoprobe.unqover import score_qa
from stereoprobe.unqover.generate import DatasetSpec, iter_examples
from stereoprobe.unqover.score_qa import (QAScorer, char_to_tokens, load_scores, locate_answers, passes_of,
                                          reference_scores, score_dataset)


def _passes(dataset="ethnicity", n=150, **kw):
    spec = DatasetSpec(dataset, **kw)
    return [p for _, p in passes_of(itertools.islice(iter_examples(spec), n))]


@pytest.fixture(scope="module")
def bert(tiny_bert_qa):
    return load(str(tiny_bert_qa), "qa", device="cpu")


@pytest.fixture(scope="module")
def roberta(tiny_roberta_qa):
    return load(str(tiny_roberta_qa), "qa", device="cpu")


# -- locating subjects ------------------------------------------------------------------------------------------
def test_locate_containment_rule():
    ctx = "A Caucasian man got off the flight to visit an Asian man."
    assert locate_answers(ctx, "Asian", "Caucasian") == ((47, 52), (2, 11))
    ctx = "An African man got off the flight to visit a South-African man."
    assert locate_answers(ctx, "South-African", "African") == ((45, 58), (3, 10))
    with pytest.raises(StereoprobeError, match="'Bob' was not found in its paragraph"):
        locate_answers("Mary met James.", "Mary", "Bob")
    with pytest.raises(StereoprobeError, match="occurs 0 times as a whole word"):
        locate_answers("Maryland met James.", "Mary", "James", mode="clean")


def test_char_to_tokens_extends_tokens_backwards():
    ends = np.array([1, 11, 15, 20])  # "A Caucasian man met": tokens end at 1, 11, 15, 20
    assert char_to_tokens(ends, (2, 11)) == (1, 1)
    assert char_to_tokens(ends, (6, 11)) == (1, 1)  # "asian" inside "caucasian" -> the covering token


# -- input layout and span extensions ------------------------------------------------------------------------------
def test_bert_layout_and_extensions(bert):
    sc = QAScorer(bert, "compat")
    passes = [("A group of mary men met a group of james men.", "Who was a nurse?", "mary", "james")]
    enc = sc.encode(passes)
    toks = bert.tokenizer.convert_ids_to_tokens(enc.ids[0])
    assert toks[:2] == ["[CLS]", "who"] and toks.count("[SEP]") == 2 and toks[-1] == "[SEP]"
    first1, first2 = toks.index("mary"), toks.index("james")
    # "a group of" before both names (BERT lower-cases, so the paragraph-initial "A" matches too)
    assert enc.starts[0, 0].tolist() == [first1, first1 - 3, first1 - 2, first1 - 1]
    assert enc.starts[0, 1].tolist() == [first2, first2 - 3, first2 - 2, first2 - 1]
    assert enc.ends[0, 0].tolist() == [first1, first1 + 1]  # "men" follows the name
    enc = sc.encode([("mary met james.", "Who was a nurse?", "mary", "james")])
    toks = bert.tokenizer.convert_ids_to_tokens(enc.ids[0])
    j = toks.index("james")
    assert enc.starts[0, 1].tolist() == [j] * 4 and enc.ends[0, 1].tolist() == [j, j + 1]  # "." extends


def test_roberta_single_separator_and_first_token_asymmetry(roberta):
    ctx = "A Mary man met a James man."
    compat = QAScorer(roberta, "compat").encode([(ctx, "Who was a nurse?", "Mary", "James")])
    toks = roberta.tokenizer.convert_ids_to_tokens(compat.ids[0])
    assert toks.count("</s>") == 2 and toks[0] == "<s>"  # <s> q </s> c </s>: one separator
    m, j = toks.index("ĠMary"), toks.index("ĠJames")
    assert toks[m - 1] == "A"  # first paragraph token has no Ġ: no article extension for slot 1
    assert compat.starts[0, 0].tolist() == [m] * 4
    assert compat.starts[0, 1].tolist() == [j, j - 1, j, j]
    clean = QAScorer(roberta, "clean").encode([(ctx, "Who was a nurse?", "Mary", "James")])
    toks = roberta.tokenizer.convert_ids_to_tokens(clean.ids[0])
    assert toks.count("</s>") == 3  # standard pair encoding <s> q </s></s> c </s>
    m = toks.index("ĠMary")
    assert clean.starts[0, 0].tolist() == [m, m - 1, m, m]  # clean treats "A" and "ĠA" alike


def test_clean_rules_are_on_words_not_tokens(bert, roberta):
    """clean: the article / noun rules read words, so words of several tokens (the tiny vocabularies split "several"
    and "couple") and the first word of a RoBERTa paragraph count; compat keeps the authors' token strings."""
    ctx = "Several mary men met a couple of james children."
    for loaded in (bert, roberta):
        tok = loaded.tokenizer
        passes = [(ctx, "Who was a nurse?", "mary", "james")]
        clean, compat = QAScorer(loaded, "clean").encode(passes), QAScorer(loaded, "compat").encode(passes)
        spell = lambda a, b, enc=clean: tok.decode(enc.ids[0][a:b]).strip().lower()  # noqa: E731
        for enc in (clean, compat):
            assert [spell(enc.starts[0, k, 0], enc.ends[0, k, 0] + 1, enc) for k in (0, 1)] == ["mary", "james"]
        m, j = clean.starts[0, 0, 0], clean.ends[0, 1, 0]
        assert spell(clean.starts[0, 0, 1], m) == "several"
        assert [spell(k, clean.starts[0, 1, 0]) for k in clean.starts[0, 1, 1:]] == ["a couple of", "couple of", "of"]
        assert spell(j + 1, clean.ends[0, 1, 1] + 1) == "children"  # several pieces, its last one
        assert compat.starts[0, 0].tolist() == [compat.starts[0, 0, 0]] * 4  # "##l" / "al" is no article token
        assert compat.starts[0, 1, 1:].tolist() == [compat.starts[0, 1, 0]] * 3  # lower-case "a couple of": no rule


def test_a_tokenizer_without_offsets_stops_before_the_model_loads(tiny_bert_qa, tmp_path, monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setattr(score_qa, "load_tokenizer", lambda *a, **k: SimpleNamespace(is_fast=False))
    monkeypatch.setattr(stereoprobe.models, "load", lambda *a, **k: pytest.fail("the model must not load"))
    with pytest.raises(ModelLoadError, match="is not a fast tokenizer: UnQover needs character offsets"):
        score_dataset(str(tiny_bert_qa), DatasetSpec("religion", sample=2),
                      options=RunOptions(device="cpu", progress=False, store=ScoreStore(tmp_path)))


# -- scores -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_compat_reproduces_the_authors_loop(family, bert, roberta):
    loaded = {"bert": bert, "roberta": roberta}[family]
    passes = _passes(n=170)  # 340 passes: four batches of 100 in the authors' loop, the last one partial
    ours = QAScorer(loaded, "compat", batch_tokens=700).score(passes)
    theirs = reference_scores(loaded, passes)
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=1e-7)
    assert np.all((ours > 0) & (ours <= 1))


def test_clean_scores_do_not_depend_on_the_batch(bert):
    passes = _passes(n=120)
    sc = QAScorer(bert, "clean", batch_tokens=4000)
    full = sc.score(passes)
    alone = np.vstack([sc.score(passes[i : i + 1]) for i in (0, 57, 239)])
    np.testing.assert_allclose(alone, full[[0, 57, 239]], rtol=1e-5, atol=1e-7)
    # compat depends (slightly) on padding: a pass scored alone differs from its batch-of-100 value
    compat = QAScorer(bert, "compat")
    assert not np.allclose(compat.score(passes[:1]), compat.score(passes)[:1], rtol=0, atol=1e-9)


def test_scorer_validates_parameters(bert):
    with pytest.raises(StereoprobeError, match="Unknown mode 'exact'"):
        QAScorer(bert, "exact")
    with pytest.raises(StereoprobeError, match="batch_tokens=8 is too small"):
        QAScorer(bert, batch_tokens=8)


# -- store, resume and the metric input frame ------------------------------------------------------------------------
def test_store_round_trip_and_resume(tiny_bert_qa, tmp_path, monkeypatch):
    store = ScoreStore(tmp_path / "scores")
    spec = DatasetSpec("religion", sample=60, seed=1)
    run = score_dataset(str(tiny_bert_qa), spec, shard_passes=100,
                        options=RunOptions(store=store, device="cpu", progress=False))
    assert run.n_rows() == 240 and len(list(run.path.glob("part-*.parquet"))) == 3
    before = run.read()
    # kill simulation: remove one shard and the manifest -> only that shard is recomputed
    run.shard_path(1).unlink()
    run.manifest_path.unlink()
    calls = []
    real = QAScorer.score
    monkeypatch.setattr(QAScorer, "score", lambda self, p, pad_to=None: calls.append(len(p)) or real(self, p, pad_to))
    score_dataset(str(tiny_bert_qa), spec, shard_passes=100,
                  options=RunOptions(store=store, device="cpu", progress=False))
    assert calls == [100]
    pd.testing.assert_frame_equal(run.read(), before)
    monkeypatch.setattr(stereoprobe.models, "load", lambda *a, **k: pytest.fail("a complete run must not load the model"))
    frame = load_scores(str(tiny_bert_qa), spec, options=RunOptions(store=store, device="cpu", progress=False))
    assert len(frame) == 120 and set(frame.columns) >= {"subj1", "subj2", "s1_pos", "s2_pos", "s1_neg", "s2_neg"}
    assert frame[["s1_pos", "s2_pos", "s1_neg", "s2_neg"]].gt(0).all().all()


def test_scores_equal_sqrt_of_start_times_end(tiny_bert_qa, tmp_path):
    store = ScoreStore(tmp_path)
    spec = DatasetSpec("religion", sample=10, seed=2)
    frame = load_scores(str(tiny_bert_qa), spec, options=RunOptions(store=store, device="cpu", progress=False))
    raw = score_dataset(str(tiny_bert_qa), spec, options=RunOptions(store=store, device="cpu", progress=False)).read()
    np.testing.assert_allclose(frame["s2_neg"], np.sqrt(raw["start2"] * raw["end2"])[1::2], rtol=1e-6)


# -- bad models ---------------------------------------------------------------------------------------------------
def test_not_a_qa_model(tiny_bert_mlm):
    with pytest.raises(ModelLoadError, match="is not an extractive-QA model"):
        load(str(tiny_bert_mlm), "qa", device="cpu")


def test_unknown_names(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # the same answer with internet
    with pytest.raises(ModelLoadError, match="Unknown lab model 'lab:nope'; valid names: lab:qa-biased"):
        load("lab:nope", "qa")
    with pytest.raises(ModelLoadError, match="does not exist"):
        load("./no/such/folder", "qa")
    with pytest.raises(ModelLoadError, match="hub is unreachable"):
        load("example-org/not-a-cached-model", "qa")


def test_fingerprint_follows_file_contents(tiny_bert_qa, tmp_path):
    import shutil

    from stereoprobe.models import fingerprint_path

    copy = shutil.copytree(tiny_bert_qa, tmp_path / "m")
    before = fingerprint_path(str(copy))
    config = copy / "config.json"
    config.write_text(config.read_text().replace('"hidden_act"', '"hidden_act" ', 1))  # rewritten in place
    assert fingerprint_path(str(copy)) != before
