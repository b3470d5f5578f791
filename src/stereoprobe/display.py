"""What the chapter modules (``stereoprobe.sodapop.chapter``, ``stereoprobe.nli.chapter``) need from the
notebook kernel: show a table where the chapter is, and glue numbers into its prose.

Both import IPython / myst-nb only when called (they come with the ``book`` extra); outside a kernel
:func:`show` prints the object's text form.

>>> show("a table")
a table
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["glue_all", "show"]


def show(obj: Any) -> None:
    """Display ``obj`` (a DataFrame, a pandas Styler, a figure …) as a cell output, like IPython's
    ``display``; prints it when IPython is not running."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # no IPython at all: a plain print
        print(obj)
        return
    if get_ipython() is None:
        print(obj)
    else:
        display(obj)


def glue_all(values: Mapping[str, Any]) -> None:
    """``myst_nb.glue(key, value, display=False)`` for every item: the values the chapter's prose
    quotes with ``{glue:text}`key```."""
    from myst_nb import glue

    for key, value in values.items():
        glue(key, value, display=False)
