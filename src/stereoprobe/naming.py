"""The names of models in report tables: one rule for the three probes (UnQover, Bias-NLI, SODAPOP).

Project names (``lab:qa-biased``, ``zoo:minilm-qa``, ``asset:minilm``) stay as given; a hub id or a folder is
shown by its shortest path suffix that no other model of the same table shares: its last part when that is
unique (``tli8hf/unqover-bert-base-squad`` → ``unqover-bert-base-squad``), more parts otherwise
(``runs/a/model`` and ``runs/b/model`` → ``a/model`` and ``b/model``). A model listed twice is an error.

>>> model_labels(["zoo:minilm-qa", "runs/a/model", "runs/b/model/", "tli8hf/unqover-roberta-base-squad"])
['zoo:minilm-qa', 'a/model', 'b/model', 'unqover-roberta-base-squad']
"""

from __future__ import annotations

import posixpath
from typing import Sequence

from .errors import StereoprobeError

PROJECT_PREFIXES = ("lab:", "zoo:", "asset:")


def _parts(model: str) -> tuple[str, ...]:
    if model.startswith(PROJECT_PREFIXES):
        return (model,)
    return tuple(posixpath.normpath(model).split("/"))  # a leading "/" keeps an empty first part


def model_labels(models: Sequence[str], option: str = "model") -> list[str]:
    """A unique, short label per model, in order (see the module); ``option`` names the input in the error."""
    parts = [_parts(m) for m in models]
    seen: dict[tuple[str, ...], str] = {}
    for model, p in zip(models, parts):
        if p in seen:
            same = "" if seen[p] == model else f" (as {seen[p]})"
            raise StereoprobeError(f"{option} {model} is given twice{same}; pass each model once.")
        seen[p] = model
    longest = max(map(len, parts), default=0)
    labels = []
    for i, p in enumerate(parts):
        k = next(k for k in range(1, longest + 1) if all(q[-k:] != p[-k:] for j, q in enumerate(parts) if j != i))
        labels.append("/".join(p[-k:]) or "/")
    return labels


def short_name(model: str) -> str:
    """The label of one model on its own (:func:`model_labels` of one)."""
    return model_labels([model])[0]
