"""Bias-NLI (Dev et al., AAAI 2020): template pairs that should be neutral, neutrality measures, projection debiasing.

From Python: :func:`report` (the tables of ``stereoprobe nli report``) and :func:`score` (fill the score store),
both taking a :class:`~stereoprobe.options.RunOptions`; :func:`probe_specs` names the pairs a run reads. Below them,
public as well: the store-level functions (:func:`score_pairs` / :func:`load_probabilities` for NLI classifiers,
:func:`score_causal_pairs` / :func:`load_causal_probabilities` for causal LMs) and the seam a new kind of model plugs
into (:class:`Pairs`, :func:`register_reader`). These names are the probe's public surface (the book's *Python API*
page); the submodules are its implementation.
"""

from __future__ import annotations

import importlib

from .api import label_orders, probe_specs, report, score
from .templates import PROBES, TemplateSpec

_LAZY = {"score_pairs": "scoring", "load_probabilities": "scoring", "score_causal_pairs": "score_causal",
         "load_causal_probabilities": "score_causal", "Pairs": "readers", "register_reader": "readers"}

__all__ = ["PROBES", "Pairs", "TemplateSpec", "label_orders", "load_causal_probabilities", "load_probabilities",
           "probe_specs", "register_reader", "report", "score", "score_causal_pairs", "score_pairs"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
