"""What the chapter modules (``stereoprobe.sodapop.chapter``, ``stereoprobe.nli.chapter``) need from the
notebook kernel: show a table where the chapter is, and glue numbers into its prose.

Both import IPython / myst-nb only when called (they come with the ``book`` extra); outside a kernel
:func:`show` prints the object's text form.

>>> show("a table")
a table
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = ["MISSING", "glue_all", "no_nan", "show"]

#: How the book's tables show a missing value: a paper that printed no number, an interval from fewer than two
#: values (:func:`stereoprobe.stats.no_interval_from_one`).
MISSING = "—"
_NAN_CELL = re.compile(r"(<td[^>]*>)\s*[+-]?(?:nan|NaN|<NA>|None)%?\s*(</td>)")


def no_nan(html: str) -> str:
    """A table's HTML with every cell that reads nan/NaN/<NA>/None (formatted or not) shown as :data:`MISSING`.

    >>> no_nan('<td class="data">+nan</td><td>0.5</td><td>NaN</td>')
    '<td class="data">—</td><td>0.5</td><td>—</td>'
    >>> doubled = pd.DataFrame({"w": ["a", "b"], "x": [1.0, None]}, index=[0, 0]).style
    >>> "—" in no_nan(_text_left(doubled).to_html())  # a repeated index keeps its default alignment
    True
    """
    return _NAN_CELL.sub(rf"\g<1>{MISSING}\g<2>", html)


def _text_left(styler):
    """Left-align the text columns of a Styler (the book's CSS right-aligns cells, for numbers)."""
    data = styler.data
    if not (data.index.is_unique and data.columns.is_unique):  # pandas selects subsets by label
        return styler
    text = [c for c in data.columns if not pd.api.types.is_numeric_dtype(data[c])]
    return styler.set_properties(subset=text, **{"text-align": "left"}) if text else styler


def _register_table_html() -> None:
    """In a notebook kernel: DataFrames and Stylers render through :func:`no_nan`, so no chapter table shows
    "nan" (run when a chapter module imports this one)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from pandas.io.formats.style import Styler

    html = shell.display_formatter.formatters["text/html"]
    html.for_type(Styler, lambda styler: no_nan(_text_left(styler).to_html()))
    html.for_type(pd.DataFrame, lambda frame: no_nan(frame._repr_html_() or frame.to_html()))


_register_table_html()


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
