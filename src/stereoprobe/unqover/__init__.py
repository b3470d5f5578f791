"""UnQover (Li et al., Findings of EMNLP 2020): underspecified questions that probe QA models, masked LMs and causal
and chat LMs.

From Python: :func:`report` (the tables of ``stereoprobe unqover report``) and :func:`score` (fill the score
store), both taking a :class:`~stereoprobe.options.RunOptions`; :func:`dataset_spec` names the examples a run
reads. Below them, public as well: the store-level functions (:func:`score_dataset` / :func:`load_scores` for QA
models and masked LMs, :func:`score_causal_passes` / :func:`load_causal_scores` for causal LMs, :func:`gather` /
:func:`gather_lm` for several models) and the seam a new kind of model plugs into (:class:`Passes`, what the probe
asks; :func:`register_reader`). These names are the probe's public surface (the book's *Python API* page); the
submodules are its implementation.
"""

from __future__ import annotations

import importlib

from .api import MODEL_VARIANTS, TABLES, dataset_spec, report, score
from .generate import DATASETS, DatasetSpec

_LAZY = {"score_dataset": "score_qa", "load_scores": "score_qa", "score_causal_passes": "score_causal",
         "load_causal_scores": "score_causal", "gather": "reporting", "gather_lm": "reporting", "Passes": "readers",
         "register_reader": "readers"}

__all__ = ["DATASETS", "MODEL_VARIANTS", "TABLES", "DatasetSpec", "Passes", "dataset_spec", "gather", "gather_lm",
           "load_causal_scores", "load_scores", "register_reader", "report", "score", "score_causal_passes",
           "score_dataset"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
