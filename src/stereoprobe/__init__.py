"""stereoprobe: a reproducible companion to three papers on stereotyping bias in language models.

UnQover (Li et al., 2020), SODAPOP (An et al., 2023) and Bias-NLI (Dev et al., 2020). From Python, each paper's
probe has a ``report`` that returns the command line's tables as pandas DataFrames, and one
:class:`RunOptions` says how every probe runs (device, precision, batch budget, threads, engine, store, progress):

>>> import stereoprobe
>>> sorted(n for n in stereoprobe.__all__ if n[0].islower())
['nli', 'sodapop', 'unqover']
>>> stereoprobe.RunOptions(device="cpu").device
'cpu'

``stereoprobe.unqover.report``, ``stereoprobe.nli.report`` and ``stereoprobe.sodapop.report`` are imported on first
use, so ``import stereoprobe`` stays light.
"""

from __future__ import annotations

import importlib

__version__ = "0.8.0"  # the one version number: pyproject.toml, CITATION.cff and `stereoprobe --version` read it

_LAZY = {"RunOptions": ("stereoprobe.options", "RunOptions"), "Report": ("stereoprobe.reports", "Report"),
         "unqover": ("stereoprobe.unqover", None), "nli": ("stereoprobe.nli", None),
         "sodapop": ("stereoprobe.sodapop", None)}

__all__ = ["Report", "RunOptions", "__version__", "nli", "sodapop", "unqover"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'stereoprobe' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = importlib.import_module(module)
    return value if attr is None else getattr(value, attr)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
