"""What the chapter modules (``stereoprobe.sodapop.chapter``, ``stereoprobe.nli.chapter``, …) need from the
notebook kernel: show a table where the chapter is, give it a caption, and glue numbers into its prose.

In a notebook kernel, every DataFrame and pandas Styler renders through :func:`table_html`: text columns
left-aligned and numbers right-aligned (headers too), long text wrapped, a caption above when it has one
(:func:`captioned`) and "—" for a missing value (:func:`no_nan`). Both import IPython / myst-nb only when called
(they come with the ``book`` extra); outside a kernel :func:`show` prints the object's text form.

>>> show("a table")
a table
"""

from __future__ import annotations

import copy
import html as _html
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = ["MISSING", "captioned", "glue_all", "no_nan", "show", "table_html"]

#: How the book's tables show a missing value: a paper that printed no number, an interval from fewer than two
#: values (:func:`stereoprobe.stats.no_interval_from_one`).
MISSING = "—"
_NAN = r"[+-]?(?:nan|NaN|<NA>|None)%?"
#: A cell that reads nan (formatted or not), or an interval of two (``[+nan, +nan]``).
_NAN_CELL = re.compile(rf"(<td[^>]*>)\s*(?:{_NAN}|\[\s*{_NAN}\s*,\s*{_NAN}\s*\])\s*(</td>)")
#: A string that is a number as a table prints it: 1,234 · +0.25 · 45.7% · 1e-05 · an interval [0.1, 0.3].
_NUMBER = r"(?:[+\-−]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?|[+-]?nan)"
_NUMBER_TEXT = re.compile(rf"\s*(?:{_NUMBER}|[(\[]\s*{_NUMBER}\s*,\s*{_NUMBER}\s*[)\]]|—|)\s*")
#: A text column holding a cell longer than this is "long" text: it wraps.
_LONG_TEXT = 30
#: The style of each kind of column (:func:`_kind`). Numbers and short text (names, labels) stay on one line;
#: long text wraps when the table is wider than the page, in a column at least 10em wide (a word longer than
#: that, such as a module path, breaks too).
_ALIGN = {"number": "text-align: right;", "text": "text-align: left;",
          "long": "text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 10em;"}
_HEAD_ALIGN = {"number": "text-align: right;", "text": "text-align: left;", "long": "text-align: left;"}
#: The text of a cell without markup, and a word in it that has a hyphen and letters (a model id, a variant).
_CELL_TEXT = re.compile(r"(<t[dh][^>]*>)([^<]*)(</t[dh]>)")
_HYPHENATED = re.compile(r"[^\s<>]*[A-Za-z]{2}[^\s<>]*")
_NO_BREAK = '<span style="white-space: nowrap;">{}</span>'


def no_nan(html: str) -> str:
    """A table's HTML with every cell that reads nan/NaN/<NA>/None (formatted or not, or an interval of two)
    shown as :data:`MISSING`.

    >>> no_nan('<td class="data">+nan</td><td>0.5</td><td>NaN</td><td>[+nan, +nan]</td>')
    '<td class="data">—</td><td>0.5</td><td>—</td><td>—</td>'
    >>> no_nan('<td>banana</td>')
    '<td>banana</td>'
    """
    return _NAN_CELL.sub(rf"\g<1>{MISSING}\g<2>", html)


def captioned(table, text: str):
    """``table`` (a Styler or a DataFrame) with the caption ``text``, which the book shows above it: a Styler
    through :meth:`~pandas.io.formats.style.Styler.set_caption`, a DataFrame as a copy whose ``attrs`` carry it
    (:func:`table_html` renders it; the copy stays a DataFrame for the code that reads it).

    >>> frame = captioned(pd.DataFrame({"a": [1]}), "Table 1: one row")
    >>> frame.attrs["caption"], captioned(frame.style, "Table 1").caption
    ('Table 1: one row', 'Table 1')
    """
    if isinstance(table, pd.DataFrame):
        out = table.copy(deep=False)
        out.attrs = {**table.attrs, "caption": text}
        return out
    return table.set_caption(text)


def _keep_hyphenated(html: str) -> str:
    """``html`` with every hyphenated word of its cells (at most 40 characters: ``zoo:minilm-qa``, ``non-W``)
    kept on one line where the cell's text wraps (a browser breaks lines after a hyphen).

    >>> _keep_hyphenated('<td>lab:qa-biased model</td><td>-0.25</td>')
    '<td><span style="white-space: nowrap;">lab:qa-biased</span> model</td><td>-0.25</td>'
    """
    def word(m: re.Match) -> str:
        w = m.group(0)
        return _NO_BREAK.format(w) if "-" in w and len(w) <= 40 else w

    return _CELL_TEXT.sub(lambda m: m.group(1) + _HYPHENATED.sub(word, m.group(2)) + m.group(3), html)


def _kind(column: pd.Series) -> str:
    """How a column reads: "number" (numbers, or strings that print numbers: ``1,234``, ``45.7%``,
    ``[0.1, 0.3]``), "text" (also an object column with no value), or "long" (text with a cell over 30
    characters)."""
    if pd.api.types.is_bool_dtype(column.dtype):
        return "text"
    if pd.api.types.is_numeric_dtype(column.dtype):
        return "number"
    values = column.dropna()
    if values.empty:
        return "text"
    if len(values) > 2000:  # a big frame shows its head and tail only
        values = pd.concat([values.head(1000), values.tail(1000)])
    strings = [str(v) for v in values]
    numeric = all((isinstance(v, (int, float)) and not isinstance(v, bool)) or _NUMBER_TEXT.fullmatch(s)
                  for v, s in zip(values, strings))
    if numeric:
        return "number"
    return "long" if max(map(len, strings), default=0) > _LONG_TEXT else "text"


def _kinds(frame: pd.DataFrame) -> list[str]:
    """:func:`_kind` of every column of ``frame``, by position (labels may repeat)."""
    return [_kind(frame.iloc[:, j]) for j in range(frame.shape[1])]


def _styler_html(styler) -> str:
    """A Styler's HTML: its columns aligned by kind (:func:`_kinds`, positional CSS for this table only), the
    caption of its data's ``attrs`` when it has none of its own, missing values as :data:`MISSING`."""
    styler = copy.copy(styler)  # the caller's Styler stays as it was
    data = styler.data
    level = f".level{data.columns.nlevels - 1}"
    styles = []
    for j, kind in enumerate(_kinds(data)):
        styles.append({"selector": f"td.col{j}", "props": _ALIGN[kind]})
        styles.append({"selector": f"th.col_heading{level}.col{j}", "props": _HEAD_ALIGN[kind]})
    styler.set_table_styles(styles, overwrite=False)
    if styler.caption is None and data.attrs.get("caption"):
        styler.set_caption(data.attrs["caption"])
    if isinstance(styler.caption, str):  # plain text ("q < 0.05"): pandas writes a caption unescaped
        styler.set_caption(_html.escape(styler.caption))
    return _keep_hyphenated(no_nan(styler.to_html()))


_ROW = re.compile(r"<tr[^>]*>.*?</tr>", re.S)
_CELL_OPEN = {"td": re.compile(r"<td(?=[\s>])"), "th": re.compile(r"<th(?=[\s>])")}


def _shown(n_columns: int, n_cells: int) -> list[int | None]:
    """The column positions behind the last ``n_cells`` cells of a row of a DataFrame's HTML, ``None`` for
    the "..." of a frame truncated horizontally (pandas shows the first and the last columns around it).

    >>> _shown(3, 3), _shown(25, 21)[9:12], _shown(25, 2)
    ([0, 1, 2], [9, None, 15], [0, None])
    """
    if n_cells == n_columns:
        return list(range(n_columns))
    head = n_cells // 2
    tail = n_cells - head - 1
    return [*range(head), None, *range(n_columns - tail, n_columns)]


def _align_cells(row: str, tag: str, styles: list[str | None]) -> str:
    """``row`` with an inline style on each of its last ``len(styles)`` ``tag`` cells (``None``: none)."""
    starts = [m.end() for m in _CELL_OPEN[tag].finditer(row)]
    if not styles or len(starts) < len(styles):
        return row
    starts = starts[-len(styles):]
    for end, style in sorted(zip(starts, styles), reverse=True):
        if style:
            row = f'{row[:end]} style="{style}"{row[end:]}'
    return row


def _frame_html(frame: pd.DataFrame) -> str:
    """A DataFrame's HTML as a notebook shows it (``_repr_html_``: pandas' number formatting, big frames
    truncated), with its columns aligned by kind, the caption of its ``attrs``, and missing values as
    :data:`MISSING`."""
    html = frame._repr_html_() or frame.to_html()
    if "<table" not in html:  # the info view of a frame too wide to print
        return html
    kinds = _kinds(frame)
    head, sep, rest = html.partition("<tbody>")
    rows = _ROW.findall(rest)
    n_cells = len(_CELL_OPEN["td"].findall(rows[0])) if rows else 0
    shown = _shown(len(kinds), n_cells) if n_cells else []
    body_styles = [None if j is None else _ALIGN[kinds[j]] for j in shown]
    head_styles = [None if j is None else _HEAD_ALIGN[kinds[j]] for j in shown]
    rest = _ROW.sub(lambda m: _align_cells(m.group(0), "td", body_styles), rest)
    header_rows = _ROW.findall(head)
    if len(header_rows) >= frame.columns.nlevels and head_styles:  # the columns' last level
        last = header_rows[frame.columns.nlevels - 1]
        head = head.replace(last, _align_cells(last, "th", head_styles), 1)
    text = frame.attrs.get("caption")
    if text:
        head = re.sub(r"<table[^>]*>", lambda m: f"{m.group(0)}\n  <caption>{_html.escape(text)}</caption>", head,
                      count=1)
    return _keep_hyphenated(no_nan(head + sep + rest))


def table_html(table) -> str:
    """The HTML the book shows for a DataFrame or a pandas Styler: text columns left-aligned and numbers
    right-aligned, header cells above them alike; long text wraps when the table is wider than the page (in a
    column at least 10em wide; a hyphenated word stays whole), numbers and short text never; the caption of
    :func:`captioned` above; every missing value as :data:`MISSING`. A DataFrame keeps pandas' notebook view
    (its number formatting, the head and tail of a big frame).

    >>> frame = pd.DataFrame({"word": ["calm", "loud"], "rd": [0.5, None]})
    >>> html = table_html(captioned(frame, "Two words"))
    >>> '<td style="text-align: left;">calm</td>' in html
    True
    >>> '<td style="text-align: right;">0.5</td>' in html
    True
    >>> "<caption>Two words</caption>" in html, "NaN" in html
    (True, False)
    """
    if isinstance(table, pd.DataFrame):
        return _frame_html(table)
    return _styler_html(table)


def _register_table_html() -> None:
    """In a notebook kernel: DataFrames and Stylers render through :func:`table_html` (run when a chapter
    module imports this one)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from pandas.io.formats.style import Styler

    html = shell.display_formatter.formatters["text/html"]
    html.for_type(Styler, table_html)
    html.for_type(pd.DataFrame, table_html)


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
