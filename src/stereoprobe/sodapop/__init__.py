"""SODAPOP (An et al., EACL 2023): open-ended discovery of social biases in multiple-choice models.

From Python: :func:`report` (the tables of ``stereoprobe sodapop report``), taking a
:class:`~stereoprobe.options.RunOptions`. Below it, public as well: one run end to end (:class:`GridConfig`,
:func:`run_probe`, :func:`rescore`), the store-level scorers of the multiple-choice items (:func:`score_choices` for
encoders, :func:`score_causal_choices` for causal LMs) and the seam a new kind of model plugs into
(:class:`Choices`, :class:`Reading`, :func:`register_reader`). These names are the probe's public surface (the
book's *Python API* page); the submodules are its implementation (the ABC-model check is
:mod:`stereoprobe.sodapop.abc_model`).
"""

from __future__ import annotations

import importlib

from .api import DEFAULT_PAIRS, check_contexts, parse_pair, report
from .names import GROUPS

_LAZY = {"GridConfig": "probe", "run_probe": "probe", "rescore": "probe", "score_choices": "score_mcq",
         "score_causal_choices": "score_causal", "Choices": "readers", "Reading": "readers",
         "register_reader": "readers"}

__all__ = ["Choices", "DEFAULT_PAIRS", "GROUPS", "GridConfig", "Reading", "check_contexts", "parse_pair",
           "register_reader", "report", "rescore", "run_probe", "score_causal_choices", "score_choices"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
