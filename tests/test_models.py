"""Loading any model folder safely (models.load): pickle weights only on request, never remote code, no head or
tokenizer that transformers would make up. The family-by-family sweep through the CLI is tests/test_model_families.py."""

from __future__ import annotations

import json
import shutil

import pytest

from stereoprobe.errors import ModelLoadError
from stereoprobe.models import ALLOW_PICKLE_ENV, load


@pytest.fixture()
def bert_mlm(tmp_path, tiny_bert_mlm):
    folder = tmp_path / "bert_mlm"
    shutil.copytree(tiny_bert_mlm, folder)
    return folder


def _pickle_only(folder):
    import torch
    from safetensors.torch import load_file

    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()


def test_pickle_weights_need_the_opt_in(bert_mlm, monkeypatch):
    _pickle_only(bert_mlm)
    monkeypatch.setenv(ALLOW_PICKLE_ENV, "0")  # restored afterwards, also when --allow-pickle sets it
    with pytest.raises(ModelLoadError, match=r"only pickle weights \(pytorch_model.bin\).*rerun with --allow-pickle"):
        load(str(bert_mlm), "mlm", device="cpu")
    monkeypatch.setenv(ALLOW_PICKLE_ENV, "1")
    with pytest.warns(UserWarning, match="pickle weights allowed"):
        loaded = load(str(bert_mlm), "mlm", device="cpu")
    assert type(loaded.model).__name__ == "BertForMaskedLM"


def test_remote_code_is_never_run(bert_mlm):
    config = json.loads((bert_mlm / "config.json").read_text())
    config.update(model_type="my-own-bert", auto_map={"AutoModelForMaskedLM": "modeling_mine.MineForMaskedLM"})
    (bert_mlm / "config.json").write_text(json.dumps(config))
    (bert_mlm / "modeling_mine.py").write_text("raise SystemExit('remote code ran')\n")
    with pytest.raises(ModelLoadError, match="trust_remote_code.*never runs"):
        load(str(bert_mlm), "mlm", device="cpu")


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_broken_safetensors_are_named(bert_mlm, damage):
    weights = bert_mlm / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match=r"model.safetensors is not a complete safetensors file.*fetch the model"):
        load(str(bert_mlm), "mlm", device="cpu")


def test_an_encoder_may_lack_only_its_pooler(bert_mlm):
    """A masked-LM checkpoint has no pooler: fine for embeddings (base), not for a classifier that reads it."""
    assert load(str(bert_mlm), "base", device="cpu").model is not None
    with pytest.raises(ModelLoadError, match=r"is not a sequence-classification \(NLI\) model: its weights lack "
                                             r"bert.pooler.dense.bias"):
        load(str(bert_mlm), "nli", device="cpu")


def test_a_tokenizer_of_unknown_words_is_refused(bert_mlm):
    (bert_mlm / "tokenizer.json").unlink()
    (bert_mlm / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nzzz\n")
    with pytest.raises(ModelLoadError, match=r"turns common English words \(the, woman, met, man\) into its unknown "
                                             r"token '\[UNK\]'"):
        load(str(bert_mlm), "mlm", device="cpu")


def test_a_slow_only_roberta_folder_encodes_like_the_hub(tmp_path, tiny_model):
    """Without tokenizer.json, transformers 5 builds RoBERTa's tokenizer with a <mask> that keeps the space before
    it as a token of its own; the hub's tokenizer.json absorbs it (lstrip), and so does the loaded tokenizer."""
    from tokenizers import AddedToken
    from transformers import AutoTokenizer

    fast = tiny_model(tmp_path / "fast", "roberta", "mlm")
    hub = AutoTokenizer.from_pretrained(fast)
    hub.add_special_tokens({"mask_token": AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False,
                                                     special=True)})
    slow = tmp_path / "slow"
    shutil.copytree(fast, slow)
    (slow / "tokenizer.json").unlink()
    text = "Mary met John. <mask> was a nurse."
    raw = AutoTokenizer.from_pretrained(slow)
    assert raw(text)["input_ids"] != hub(text)["input_ids"]  # what transformers alone gives
    assert load(str(slow), "mlm", device="cpu").tokenizer(text)["input_ids"] == hub(text)["input_ids"]


def test_the_command_line_opt_in_to_pickle_weights(tmp_path, tiny_nli, capsys, monkeypatch):
    from stereoprobe.cli import main

    model = tiny_nli(tmp_path / "nli", {0: "entailment", 1: "neutral", 2: "contradiction"})
    _pickle_only(tmp_path / "nli")
    monkeypatch.setenv(ALLOW_PICKLE_ENV, "0")  # restored afterwards, also when --allow-pickle sets it
    capsys.readouterr()
    args = ["nli", "score", "-m", model, "-p", "gender", "--sample", "4", "--device", "cpu", "--store",
            str(tmp_path / "store")]
    with pytest.raises(SystemExit) as refused:
        main(args)
    err = capsys.readouterr().err
    assert refused.value.code == 2 and err.count("\n") == 1 and "rerun with --allow-pickle" in err, err
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.parquet"))
    main([*args, "--allow-pickle"])
    err = capsys.readouterr().err
    assert err.startswith("warning: Loading") and "only do this for files you trust" in err, err
    assert any((tmp_path / "store").rglob("*.parquet"))
