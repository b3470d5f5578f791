"""UnQover masked-LM scoring (the authors' lm/predict.py): single-token subjects, the compat top-10 rule, the he/she max,
clean probabilities, and the store pipeline on the zoo masked LM."""

from __future__ import annotations

import numpy as np
import pytest

import stereoprobe.models
from stereoprobe import RunOptions
from stereoprobe.errors import StereoprobeError
from stereoprobe.models import LoadedModel
from stereoprobe.unqover.generate import DatasetSpec, iter_examples
from stereoprobe.unqover.score_lm import LMScorer, check_single_tokens, lm_degeneracy, lm_spec_for_model


@pytest.fixture(scope="module")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    from stereoprobe.assets import asset_folder

    return AutoTokenizer.from_pretrained(asset_folder("minilm"))


class _FixedLM:
    """A stand-in masked LM whose logits at every position are one fixed vector."""

    def __init__(self, logits):
        import torch

        self.logits = torch.as_tensor(logits, dtype=torch.float32)
        self.device = torch.device("cpu")

    def __call__(self, input_ids, attention_mask):
        from types import SimpleNamespace

        b, length = input_ids.shape
        return SimpleNamespace(logits=self.logits.expand(b, length, -1).clone())


def _scorer(tokenizer, ranking: dict[str, float], mode: str, he_she=None) -> tuple[LMScorer, np.ndarray]:
    logits = np.full(len(tokenizer), -20.0, dtype=np.float32)
    for word, value in ranking.items():
        logits[tokenizer.convert_tokens_to_ids(word)] = value
    loaded = LoadedModel("fixed", "fixed", _FixedLM(logits), tokenizer, "0")
    spec = DatasetSpec("gender", variant="lm-bert", sample=5)
    probs = np.exp(logits - logits.max())
    return LMScorer(loaded, spec, mode=mode, he_she=he_she), probs / probs.sum()


def _pass(tokenizer):
    return ("Mary lives in the same city with Patrick.", "[MASK] was a detective.", "Mary", "Patrick")


def test_compat_keeps_the_top_10_only_and_takes_the_he_she_max(minilm_tokenizer):
    # she > he > ten other words > mary: "mary" is 13th, so compat gives it 0 unless she/he stands in
    ranking = {"she": 10.0, "he": 9.0, **{w: 8.0 - 0.1 * i for i, w in enumerate(
        "it they we you i this that there one nobody".split())}, "mary": 5.0, "patrick": 4.0}
    plain, p = _scorer(minilm_tokenizer, ranking, "compat", he_she=False)
    out = plain.score([_pass(minilm_tokenizer)])
    assert out[0].tolist() == [0.0, 0.0, 0.0, 0.0]  # neither name in the top 10: exactly zero (lm/predict.py's top-10 rule)
    hs, p = _scorer(minilm_tokenizer, ranking, "compat")  # default for gender in compat: he/she on
    out = hs.score([_pass(minilm_tokenizer)])
    she, he = p[minilm_tokenizer.convert_tokens_to_ids("she")], p[minilm_tokenizer.convert_tokens_to_ids("he")]
    np.testing.assert_allclose(out[0], [she, she, he, he], rtol=1e-5)  # Mary → max(p_she, 0), Patrick → p_he


def test_compat_uses_the_name_when_it_beats_the_pronoun(minilm_tokenizer):
    ranking = {"mary": 10.0, "she": 9.0, "he": 8.0, "patrick": 7.0}
    scorer, p = _scorer(minilm_tokenizer, ranking, "compat")
    out = scorer.score([_pass(minilm_tokenizer)])
    ids = minilm_tokenizer.convert_tokens_to_ids
    np.testing.assert_allclose(out[0], [p[ids("mary")]] * 2 + [p[ids("he")]] * 2, rtol=1e-5)


def test_clean_is_the_subject_token_probability_untruncated(minilm_tokenizer):
    ranking = {"she": 10.0, "he": 9.0, **{w: 8.0 for w in "it they we you i this that there one nobody".split()},
               "mary": 5.0, "patrick": 4.0}
    scorer, p = _scorer(minilm_tokenizer, ranking, "clean")
    assert scorer.he_she is False
    out = scorer.score([_pass(minilm_tokenizer)])
    ids = minilm_tokenizer.convert_tokens_to_ids
    np.testing.assert_allclose(out[0], [p[ids("mary")]] * 2 + [p[ids("patrick")]] * 2, rtol=1e-5)
    assert out[0, 0] > 0


def test_every_bert_list_subject_is_one_minilm_token(minilm_tokenizer):
    for dataset in ("gender", "nationality", "ethnicity", "religion"):
        ids = check_single_tokens(DatasetSpec(dataset, variant="lm-bert"), minilm_tokenizer)
        assert len(set(ids.values())) == len(ids)  # distinct subjects, distinct tokens


def test_multi_token_subjects_are_listed_by_name_in_one_error(tiny_bert_mlm):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_mlm)
    with pytest.raises(StereoprobeError) as info:
        check_single_tokens(DatasetSpec("gender", variant="lm-bert"), tok)
    message = str(info.value)
    assert "not a single token" in message and "lm-bert" in message
    assert "Elizabeth (" in message or "elizabeth (" in message.lower()
    assert "Mary (" not in message  # one token in the tiny vocabulary


def test_subjects_are_checked_from_the_tokenizer_before_any_model_loads(tiny_bert_mlm, tmp_path, monkeypatch):
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover import score_qa

    monkeypatch.setattr(stereoprobe.models, "load", lambda *a, **k: pytest.fail("the model must not load"))
    with pytest.raises(StereoprobeError, match=r"for this bert tokenizer: .*Christian \(9 tokens"):
        score_qa.score_dataset(str(tiny_bert_mlm), DatasetSpec("religion", variant="lm-bert", sample=2),
                               options=RunOptions(device="cpu", progress=False, store=ScoreStore(tmp_path)))


def test_lm_lists_follow_the_tokenizer(tiny_bert_mlm, tiny_model, tmp_path):
    spec = DatasetSpec("gender", sample=10, newsqa=True)
    roberta = tiny_model(tmp_path / "roberta-free-name", "roberta", "mlm")  # no "roberta" needed in the name:
    assert lm_spec_for_model(str(roberta), spec).variant == "lm-roberta"  # the tokenizer decides
    assert lm_spec_for_model(str(tiny_bert_mlm), spec).variant == "lm-bert"
    bert = lm_spec_for_model("bert-base-uncased", spec)  # no local copy: the authors' name rule
    assert (bert.variant, bert.newsqa, bert.mask_string) == ("lm-bert", False, "[MASK]")
    assert lm_spec_for_model("roberta-large", spec).mask_string == "<mask>"


def test_degenerate_lm_predictions_are_named(minilm_tokenizer):
    # compat, no subject (nor he/she) ever in the top 10: every score is exactly 0
    scorer, _ = _scorer(minilm_tokenizer, {w: 5.0 for w in "it they we you i this that there one nobody".split()},
                        "compat", he_she=False)
    assert "every subject probability is 0" in lm_degeneracy(scorer.score([_pass(minilm_tokenizer)] * 3))
    # clean, a flat LM: every subject at 1/V
    scorer, _ = _scorer(minilm_tokenizer, {}, "clean")
    out = scorer.score([_pass(minilm_tokenizer)])
    np.testing.assert_allclose(out, 1 / len(minilm_tokenizer), rtol=1e-4)
    assert "the same" in lm_degeneracy(out)
    rng = np.random.default_rng(0)
    near = (1 + 0.3 * rng.random((50, 4))) / 30522
    assert "near-uniform" in lm_degeneracy(near)
    collapsed = 10 ** rng.uniform(-12, -6, (50, 4))  # all mass on other words
    assert lm_degeneracy(collapsed) is None and "10 / vocabulary size" in lm_degeneracy(collapsed, vocab_size=30522)
    # a working LM: the named subjects get real probability; compat zeros alone are the authors' normal case
    import pandas as pd

    frame = pd.DataFrame({"s1_pos": [0.3, 0.0, 0.01], "s2_pos": [0.0, 0.2, 0.0], "s1_neg": [0.1, 0.0, 0.0],
                          "s2_neg": [0.0, 0.0, 0.4], "subj1": ["a", "b", "c"]})
    assert lm_degeneracy(frame, vocab_size=30522) is None
    assert lm_degeneracy(frame.assign(s1_pos=0.0, s2_pos=0.0, s1_neg=0.0, s2_neg=0.0)) is not None


def test_exactly_one_mask_per_input(minilm_tokenizer):
    scorer, _ = _scorer(minilm_tokenizer, {"she": 1.0}, "compat")
    with pytest.raises(StereoprobeError, match="2 mask tokens"):
        scorer.score([("[MASK] lives here.", "[MASK] was a detective.", "Mary", "Patrick")])


def test_lm_pipeline_on_the_zoo_masked_lm(tmp_path, monkeypatch):
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover import metrics
    from stereoprobe.unqover.score_qa import load_scores

    spec = DatasetSpec("religion", variant="lm-bert", sample=20)
    store = ScoreStore(tmp_path / "scores")
    frame = load_scores("zoo:minilm-mlm", spec, mode="clean", options=RunOptions(store=store, progress=False))
    assert len(frame) == 2 * 20 and sum(1 for _ in iter_examples(spec)) == 40
    values = frame[["s1_pos", "s2_pos", "s1_neg", "s2_neg"]].to_numpy()
    assert (values > 0).all() and (values < 1).all()  # clean: a probability for every subject
    again = load_scores("zoo:minilm-mlm", spec, mode="clean", options=RunOptions(store=store, progress=False))
    assert again.equals(frame)
    errors = metrics.reasoning_errors(metrics.pair_examples(frame))
    assert 0 <= errors["positional_error"] < 0.5


def test_lm_variant_follows_the_model_family_and_table5_gets_lm_rows():
    import pandas as pd

    from stereoprobe.book.tables import unqover as tables

    spec = DatasetSpec("gender", sample=10, newsqa=True)
    assert tables.lm_spec_for("roberta-large", spec).variant == "lm-roberta"
    assert tables.lm_spec_for("roberta-large", spec).mask_string == "<mask>"
    assert tables.lm_spec_for("zoo:minilm-mlm", spec).variant == "lm-bert"
    assert tables.lm_spec_for("bert-base-uncased", spec).newsqa is False
    qa = pd.DataFrame({"model": ["zoo:minilm-qa"], "delta": [0.4], "epsilon": [0.5], "avg_s": [0.4], "keys": [8]})
    lm = pd.DataFrame({"model": ["zoo:minilm-mlm"], "delta": [0.1], "epsilon": [0.2], "avg_s": [0.25], "keys": [8]})
    table = tables.table5_beside_paper(qa, lm)
    assert table.loc[("ours: LM", "zoo:minilm-mlm"), "avg_s"] == 0.25
    assert table.loc[("paper: LM", "BERT_B"), "delta"] == pytest.approx(0.25)
    assert ("ours: LM", "zoo:minilm-mlm") not in tables.table5_beside_paper(qa).index


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert"])
def test_mask_logits_equal_the_full_models_logits(family):
    """The head runs only at the masks; the logits there are those of the whole model."""
    import torch
    from transformers import (BertConfig, BertForMaskedLM, DistilBertConfig, DistilBertForMaskedLM, RobertaConfig,
                              RobertaForMaskedLM)

    from stereoprobe.models import _vocabulary_head, mask_logits

    torch.manual_seed(0)
    small = dict(vocab_size=97, max_position_embeddings=40)
    model = {
        "bert": lambda: BertForMaskedLM(BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                                   intermediate_size=32, **small)),
        "roberta": lambda: RobertaForMaskedLM(RobertaConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                                            intermediate_size=32, pad_token_id=1, **small)),
        "distilbert": lambda: DistilBertForMaskedLM(DistilBertConfig(dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                                                     **small)),
    }[family]().eval()
    assert _vocabulary_head(model) is not None
    ids = torch.randint(5, 97, (3, 12))
    att = torch.ones_like(ids)
    att[2, 9:] = 0
    masks = torch.zeros_like(ids, dtype=torch.bool)
    masks[0, 3] = masks[1, 0] = masks[2, 8] = True
    with torch.inference_mode():
        full = model(input_ids=ids, attention_mask=att).logits[masks]
        fast = mask_logits(model, ids, att, masks)
    assert fast.shape == (3, 97)
    torch.testing.assert_close(fast, full, rtol=1e-5, atol=1e-5)
