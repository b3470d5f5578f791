"""Names that moved, still reachable from their old module for a while, with a warning.

A module whose public names moved elsewhere gets a module-level ``__getattr__`` from :func:`moved`: the old name
still works (one :class:`DeprecationWarning` per use, naming the new home), and the new module is imported only
when an old name is used, so no import statement ties the two modules together (an old home below a new one in the
layers, ``tests/test_layers.py``, stays below it).

>>> __getattr__ = moved("stereoprobe.demo", {"old": "stereoprobe.naming:short_name"}, since="0.8.0")
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     __getattr__("old")("runs/a/model")
'model'
>>> str(caught[0].message)
'stereoprobe.demo.old moved to stereoprobe.naming.short_name in 0.8.0; import it from there (the old name goes in a later release).'
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Mapping


def moved(module: str, names: Mapping[str, str], *, since: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``names`` (old name → ``"new.module:new_name"``) of ``module``."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, _, attr = names[name].partition(":")
        warnings.warn(f"{module}.{name} moved to {target}.{attr or name} in {since}; import it from there (the old "
                      "name goes in a later release).", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(target), attr or name)

    return __getattr__
