"""What the chapter modules (``stereoprobe.book.views.sodapop``, ``stereoprobe.book.views.nli``, …) need from the
notebook kernel: show a table where the chapter is, give it a caption, and glue numbers into its prose.

Tables hold numbers: a point estimate and its interval are float columns (``gamma``, ``ci_low``, ``ci_high``),
and only their rendering turns them into text. :func:`styled` makes the book's pandas Styler of a DataFrame: a
format per column (given, or chosen from its values), :data:`MISSING` for a missing value, an interval pair
shown as "[lo, hi]" under one heading, text left-aligned and numbers right-aligned (headers too), long text
wrapped, every label and text cell HTML-escaped. :func:`table_html` renders a DataFrame that way (a big one by
its head and tail) and gives any Styler the same alignment and an escaped caption (:func:`captioned`).

Importing this module changes nothing about how DataFrames render. A chapter opts in once, in its set-up cell,
with :func:`use_book_style`: from then on the kernel renders every DataFrame and Styler through
:func:`table_html`. The kernel-side helpers import IPython / myst-nb only when called (they come with the
``book`` extra); outside a kernel :func:`show` prints the object's text form.

>>> show("a table")
a table
"""

from __future__ import annotations

import copy
import html as _html
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["INTERVAL_LABEL", "MISSING", "captioned", "float_format", "glue_all", "interval_dots", "intervals",
           "method_source", "show", "show_method", "styled", "table_html", "table_view", "use_book_style"]

#: How the book's tables show a missing value: a paper that printed no number, an interval from fewer than two
#: values (:func:`stereoprobe.stats.no_interval_from_one`).
MISSING = "—"
#: The heading an interval pair is shown under (the book's intervals are 95% bootstrap intervals).
INTERVAL_LABEL = "95% CI"
#: A text column holding a cell longer than this is "long" text: it wraps.
_LONG_TEXT = 30
#: The style of each kind of column (:func:`_kind`). Numbers and short text (names, labels) stay on one line
#: (the book's stylesheet); long text wraps when the table is wider than the page, in a column at least 10em
#: wide (a word longer than that, such as a module path, breaks too).
_ALIGN = {"number": "text-align: right;", "text": "text-align: left;",
          "long": "text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 10em;"}
_HEAD_ALIGN = {"number": "text-align: right;", "text": "text-align: left;", "long": "text-align: left;"}
#: The two cells of an interval read as one "[lo, hi]": the low end closes up to the right, the high end to
#: the left, and the heading sits over the pair's opening bracket.
_LOW_END = "text-align: right; padding-right: 0;"
_HIGH_END = "text-align: left; padding-left: 0.3em;"
_LOW_HEAD = "text-align: left; padding-right: 0;"
#: A word of a cell's text with a hyphen and letters (a model id, a variant), kept on one line in wrapping text.
_HYPHENATED = re.compile(r"\S*[A-Za-z]{2}\S*")
_NO_BREAK = '<span style="white-space: nowrap;">{}</span>'
#: Where the rows or columns a big frame leaves out would be.
_GAP_ROW = "border-top: 2px dashed var(--pst-color-border, #8c959f);"
_GAP_COLUMN = "border-left: 2px dashed var(--pst-color-border, #8c959f);"

Format = str | Callable[[Any], str]


def captioned(table, text: str):
    """``table`` (a Styler or a DataFrame) with the caption ``text``, which the book shows above it: a Styler
    through :meth:`~pandas.io.formats.style.Styler.set_caption`, a DataFrame as a copy whose ``attrs`` carry it
    (:func:`table_html` renders it; the copy stays a DataFrame for the code that reads it). The caption is text,
    not markup: :func:`table_html` escapes it.

    >>> frame = captioned(pd.DataFrame({"a": [1]}), "Table 1: one row")
    >>> frame.attrs["caption"], captioned(frame.style, "Table 1").caption
    ('Table 1: one row', 'Table 1')
    """
    if isinstance(table, pd.DataFrame):
        out = table.copy(deep=False)
        out.attrs = {**table.attrs, "caption": text}
        return out
    return table.set_caption(text)


# -- how a column reads ---------------------------------------------------------------------------------------------
def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _kind(column: pd.Series) -> str:
    """How a column reads: "number" (a numeric dtype, or an object column of numbers only), "text" (also
    booleans and a column with no value), or "long" (text with a cell over 30 characters). A string is text,
    whatever it spells.

    >>> [_kind(pd.Series(v)) for v in ([1, 2], [0.5, None], ["1,234"], [True], ["x" * 31], [None], [3, "a"])]
    ['number', 'number', 'text', 'text', 'long', 'text', 'text']
    """
    if pd.api.types.is_bool_dtype(column.dtype):
        return "text"
    if pd.api.types.is_numeric_dtype(column.dtype):
        return "number"
    values = column.dropna()
    if values.empty:
        return "text"
    if len(values) > 2000:  # a big frame shows its head and tail only
        values = pd.concat([values.head(1000), values.tail(1000)])
    if all(_is_number(v) for v in values):
        return "number"
    return "long" if max(len(str(v)) for v in values) > _LONG_TEXT else "text"


def _kinds(frame: pd.DataFrame) -> list[str]:
    """:func:`_kind` of every column of ``frame``, by position (labels may repeat)."""
    return [_kind(frame.iloc[:, j]) for j in range(frame.shape[1])]


def float_format(values) -> str:
    """The format of a column of floats that shows its smallest non-zero magnitude with three significant
    digits (thousands separated, at most six decimals; ``.3g`` below that), and whole numbers as such.

    >>> float_format([0.41234, 0.037]), float_format([0.5, None]), float_format([1234.5, 22.3])
    ('{:,.4f}', '{:,.3f}', '{:,.1f}')
    >>> float_format([2.0, 40.0]), float_format([1e-9, 0.5]), float_format([float("nan")])
    ('{:,.0f}', '{:.3g}', '{:,.3f}')
    """
    arr = np.abs(pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float))
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return "{:,.3f}"
    if np.all(arr == np.round(arr)) and arr.max() < 1e15:
        return "{:,.0f}"
    smallest = arr[arr > 0].min()
    decimals = max(0, 2 - math.floor(math.log10(smallest)))
    return "{:.3g}" if decimals > 6 else f"{{:,.{decimals}f}}"


def _keep_hyphenated(text: str) -> str:
    """HTML-escaped ``text`` with every hyphenated word (at most 40 characters: ``zoo:minilm-qa``, ``non-W``)
    kept on one line where the text wraps (a browser breaks lines after a hyphen).

    >>> _keep_hyphenated("lab:qa-biased model <b>")
    '<span style="white-space: nowrap;">lab:qa-biased</span> model &lt;b&gt;'
    """
    def word(m: re.Match) -> str:
        w = m.group(0)
        return _NO_BREAK.format(w) if "-" in w and len(w) <= 40 else w

    return _HYPHENATED.sub(word, _html.escape(str(text), quote=False))


def _cell_text(value) -> str:
    """A cell of an object column as text: a number by :func:`float_format` (an integer thousands separated),
    anything else as its escaped ``str``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return f"{value:,}"
    if _is_number(value):
        return float_format([value]).format(value)
    return _html.escape(str(value), quote=False)


def _default_format(column: pd.Series, kind: str) -> Format:
    """The format of a column no format was given for (:func:`styled`)."""
    if kind == "number" and pd.api.types.is_integer_dtype(column.dtype):
        return "{:,}"
    if kind == "number" and pd.api.types.is_float_dtype(column.dtype):
        return float_format(column)
    if kind == "long":
        return _keep_hyphenated
    return _cell_text


# -- intervals ------------------------------------------------------------------------------------------------------
def intervals(columns, label: str = INTERVAL_LABEL) -> dict[int, tuple[int, str | None, str]]:
    """The interval pairs among ``columns``, by the position of the low end: (position of the high end, the
    point estimate's column or None, the heading). A pair is two adjacent columns ``ci_low, ci_high`` (the
    point estimate is the column before them), ``<name>_ci_low, <name>_ci_high`` or ``<name>_lo, <name>_hi``
    (the point estimate is ``<name>``, which must be a column).

    >>> intervals(["gamma", "ci_low", "ci_high", "eta"])
    {1: (2, 'gamma', '95% CI')}
    >>> intervals(["NN", "NN_lo", "NN_hi", "FN_lo", "FN_hi", "mu_ci_low", "mu_ci_high"])
    {1: (2, 'NN', 'NN 95% CI'), 5: (6, None, 'mu 95% CI')}
    """
    names = list(columns)
    found = {}
    for j, (low, high) in enumerate(itertools.pairwise(names)):
        if not (isinstance(low, str) and isinstance(high, str)):
            continue
        if (low, high) == ("ci_low", "ci_high"):
            point = names[j - 1] if j > 0 and isinstance(names[j - 1], str) else None
            found[j] = (j + 1, point, label)
        elif low.endswith("_ci_low") and high == low[:-len("_ci_low")] + "_ci_high":
            name = low[:-len("_ci_low")]
            found[j] = (j + 1, name if name in names else None, f"{name} {label}")
        elif low.endswith("_lo") and high == low[:-len("_lo")] + "_hi" and low[:-len("_lo")] in names:
            name = low[:-len("_lo")]
            found[j] = (j + 1, name, f"{name} {label}")
    return found


def _bracketed(fmt: Format, opening: bool) -> Callable[[Any], str]:
    """``fmt`` of one end of an interval with its bracket: "[lo," or "hi]"."""
    def text(value) -> str:
        number = fmt(value) if callable(fmt) else fmt.format(value)
        return f"[{number}," if opening else f"{number}]"

    return text


# -- the book's Styler ----------------------------------------------------------------------------------------------
def _alignment(data: pd.DataFrame, kinds: list[str], pairs: Mapping[int, tuple]) -> list[dict]:
    """Positional CSS (this table only) that aligns every column by its kind, header cells alike, and closes
    up the two cells of each interval pair."""
    level = f".level{data.columns.nlevels - 1}"
    low_ends = {j: hi for j, (hi, _, _) in pairs.items()}
    high_ends = set(low_ends.values())
    styles = []
    for j, kind in enumerate(kinds):
        cell, head = _ALIGN[kind], _HEAD_ALIGN[kind]
        if j in low_ends:
            cell, head = _LOW_END, _LOW_HEAD
        elif j in high_ends:
            cell, head = _HIGH_END, _HIGH_END
        styles.append({"selector": f"td.col{j}", "props": cell})
        styles.append({"selector": f"th.col_heading{level}.col{j}", "props": head})
    return styles


def styled(frame: pd.DataFrame, formats: Format | Mapping[Any, Format] | None = None, *, caption: str | None = None,
           na_rep: str = MISSING, precision: int | None = None, interval_label: str = INTERVAL_LABEL):
    """The book's Styler of ``frame``; its data stay the numbers they are.

    ``formats``: one format (a format string such as ``"{:+.3f}"`` or a callable) for every numeric column,
    or one per column label. A column without one gets its default: integers thousands separated, floats by
    :func:`float_format` (with ``precision``: that many decimals), text HTML-escaped (long text wraps, a
    hyphenated word stays whole). Every missing value shows as ``na_rep``. An interval pair (:func:`intervals`) shows as "[lo, hi]" under one heading
    ("95% CI", or "<name> 95% CI"), in the format given for its low end, else for its point estimate; a
    missing interval as ``na_rep``. Text columns are aligned left, numbers right (:func:`_kind`). The caption
    is ``caption``, else the one of ``frame.attrs`` (:func:`captioned`); :func:`table_html` escapes it.

    >>> frame = pd.DataFrame({"model": ["a<b"], "gamma": [0.25], "ci_low": [0.125], "ci_high": [0.5]})
    >>> html = styled(frame, {"gamma": "{:+.2f}"}).hide(axis="index").to_html()
    >>> [t in html for t in ("a&lt;b", "+0.25", "[+0.12,", "+0.50]", ">95% CI<", "ci_low")]
    [True, True, True, True, True, False]
    """
    if isinstance(formats, Mapping):
        given = dict(formats)
    elif formats is None:
        given = {}
    else:
        given = {c: formats for c, k in zip(frame.columns, _kinds(frame)) if k == "number"}
    kinds = _kinds(frame)
    if precision is not None:
        for label, kind, dtype in zip(frame.columns, kinds, frame.dtypes):
            if kind == "number" and not pd.api.types.is_integer_dtype(dtype):
                given.setdefault(label, f"{{:,.{precision}f}}")
    pairs = intervals(frame.columns, interval_label)
    low_of = {hi: lo for lo, (hi, _, _) in pairs.items()}
    for lo, (hi, point, _) in pairs.items():  # an estimate and its interval read alike
        j = list(frame.columns).index(point) if point is not None else None
        if j is not None and kinds[j] != "number":
            point, j = None, None
        values = [frame.iloc[:, k] for k in (j, lo, hi) if k is not None]
        fmt = given.get(frame.columns[lo]) or given.get(point) or float_format(pd.concat(values))
        given.setdefault(frame.columns[lo], fmt)
        if point is not None:
            given.setdefault(point, fmt)
    styler = frame.style
    for j, (label, kind) in enumerate(zip(frame.columns, kinds)):
        column = frame.iloc[:, j]
        subset = pd.IndexSlice[:, [label]]
        if j in pairs or j in low_of:
            lo = j if j in pairs else low_of[j]
            styler.format(_bracketed(given[frame.columns[lo]], j == lo), subset=subset,
                          na_rep=na_rep if j == lo else "")
        elif label in given:
            styler.format(given[label], subset=subset, na_rep=na_rep)
        else:
            styler.format(_default_format(column, kind), subset=subset, na_rep=na_rep)
    headings = {frame.columns[lo]: heading for lo, (_, _, heading) in pairs.items()}
    headings |= {frame.columns[hi]: "" for hi, _, _ in pairs.values()}
    styler.format_index(lambda v: headings.get(v, _keep_hyphenated(v)), axis="columns", level=frame.columns.nlevels - 1)
    if frame.columns.nlevels > 1:
        styler.format_index(escape="html", axis="columns", level=list(range(frame.columns.nlevels - 1)))
    styler.format_index(escape="html", axis="index", na_rep=na_rep)
    styler.set_table_styles(_alignment(frame, kinds, pairs), overwrite=False)
    text = caption if caption is not None else frame.attrs.get("caption")
    if text:
        styler.set_caption(text)
    return styler


def _truncated(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[dict], str]:
    """What a notebook shows of ``frame`` (pandas' ``display.max_rows`` / ``min_rows`` / ``max_columns``: the
    head and tail of a big frame, the first and last columns of a wide one), CSS that marks where the rest
    would be, and a note saying how big ``frame`` is ("" when it is all shown).

    >>> shown, css, note = _truncated(pd.DataFrame({"x": range(100)}))
    >>> len(shown), shown.index[4:6].tolist(), note
    (10, [4, 95], '100 rows × 1 columns, the first and last 5 rows shown')
    """
    rows, cols = frame.shape
    max_rows, max_cols = pd.get_option("display.max_rows"), pd.get_option("display.max_columns")
    css, notes = [], []
    if max_rows and rows > max_rows:
        shown = min(pd.get_option("display.min_rows") or max_rows, max_rows)
        head = max(shown // 2, 1)
        frame = pd.concat([frame.iloc[:head], frame.iloc[rows - (shown - head):]])
        css.append({"selector": f"tbody tr:nth-child({head + 1}) > *", "props": _GAP_ROW})
        notes.append(f"the first {head} and last {shown - head} rows shown" if shown - head != head
                     else f"the first and last {head} rows shown")
    if max_cols and cols > max_cols:
        head = max_cols // 2
        frame = pd.concat([frame.iloc[:, :head], frame.iloc[:, cols - head:]], axis=1)
        css.append({"selector": f".col{head}", "props": _GAP_COLUMN})
        notes.append(f"the first and last {head} columns shown")
    note = f"{rows:,} rows × {cols:,} columns, " + " and ".join(notes) if notes else ""
    return frame, css, note


def table_html(table) -> str:
    """The HTML the book shows for a DataFrame or a pandas Styler, escaped caption above (:func:`captioned`).

    A DataFrame renders as :func:`styled` makes it; a big one by its head and tail (pandas' display options),
    a dashed line where the rest would be and its size after the caption. A Styler keeps its own formats and
    gets the alignment of :func:`styled` (text left, numbers right) unless it has it already; the caller's
    Styler is left as it was.

    >>> frame = pd.DataFrame({"word": ["calm", "loud"], "rd": [0.5, None]})
    >>> html = table_html(captioned(frame, "Two words & more"))
    >>> "<caption>Two words &amp; more</caption>" in html, "NaN" in html, ">0.500<" in html, ">—<" in html
    (True, False, True, True)
    """
    if isinstance(table, pd.DataFrame):
        shown, gaps, note = _truncated(table)
        styler = styled(shown, caption=table.attrs.get("caption")).set_table_styles(gaps, overwrite=False)
        if note:
            styler.set_caption(f"{styler.caption} ({note})" if styler.caption else note)
    else:
        styler = copy.copy(table)  # the caller's Styler stays as it was
        data = styler.data
        align = _alignment(data, _kinds(data), intervals(data.columns))
        selectors = {style.get("selector") for style in styler.table_styles or []}
        if align and align[0]["selector"] not in selectors:
            styler.set_table_styles(align, overwrite=False)
        if styler.caption is None and data.attrs.get("caption"):
            styler.set_caption(data.attrs["caption"])
    if isinstance(styler.caption, str):  # plain text ("q < 0.05"): pandas writes a caption unescaped
        styler.set_caption(_html.escape(styler.caption, quote=False))
    return styler.to_html()


# -- the notebook kernel --------------------------------------------------------------------------------------------
def use_book_style() -> None:
    """Opt in to the book's tables (a chapter's set-up cell calls it): in the running IPython kernel, every
    DataFrame and Styler renders through :func:`table_html` from now on. Outside a kernel, and without this
    call, nothing changes: importing stereoprobe leaves pandas' options and rendering alone."""
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


def method_source(func: Callable, *, docstring: str = "summary") -> str:
    """The source of ``func`` as it is in the package, for a chapter to show the few lines that compute what it
    teaches (d2l's ``#@save`` idea, the other way round: the book shows the code, it does not copy it).

    ``docstring="summary"`` keeps the docstring's first line (the formula it implements, where it names one),
    ``"full"`` all of it, ``"none"`` drops it.

    >>> from stereoprobe.nli.measures import fraction_neutral
    >>> lines = method_source(fraction_neutral).splitlines()
    >>> len(lines), lines[0]
    (4, 'def fraction_neutral(probs: pd.DataFrame, aggregate: str = "pair") -> float:')
    >>> for line in lines[2:]:  # the docstring's first line stands between
    ...     print(line)
        e, n, c = _units(probs, aggregate)
        return float(_indicators(e, n, c, ())["FN"].mean())
    """
    import ast
    import inspect
    import textwrap

    if docstring not in ("summary", "full", "none"):
        raise ValueError(f"docstring={docstring!r}; pass 'summary', 'full' or 'none'.")
    source = textwrap.dedent(inspect.getsource(func))
    tree = ast.parse(source)
    node = tree.body[0]
    first = node.body[0] if node.body else None
    if docstring == "full" or not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                                   and isinstance(first.value.value, str)):
        return source.rstrip("\n")
    lines = source.splitlines()
    indent = " " * first.col_offset
    keep = [] if docstring == "none" else [f'{indent}"""{first.value.value.strip().splitlines()[0].strip()}"""']
    return "\n".join(lines[: first.lineno - 1] + keep + lines[first.end_lineno:]).rstrip("\n")


def _function(ref: Callable | str) -> Callable:
    """A function, or one named by its dotted path (``"stereoprobe.nli.measures.net_neutral"``)."""
    if callable(ref):
        return ref
    import importlib

    module, _, name = ref.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"{ref!r} names no function; pass a dotted path such as "
                         "'stereoprobe.nli.measures.net_neutral'.") from None


def show_method(*funcs: Callable | str, docstring: str = "summary") -> None:
    """Show the source of ``funcs`` (functions or their dotted paths; :func:`method_source`) as highlighted Python
    in a chapter, each under a line naming where it lives (``stereoprobe.unqover.metrics.positional_error``);
    prints it outside a kernel.

    >>> show_method("stereoprobe.nli.measures.net_neutral")  # doctest: +ELLIPSIS
    # stereoprobe.nli.measures.net_neutral
    def net_neutral(...
    """
    funcs = tuple(_function(f) for f in funcs)
    text = "\n\n\n".join(f"# {f.__module__}.{f.__qualname__}\n{method_source(f, docstring=docstring)}" for f in funcs)
    try:
        from IPython import get_ipython
        from IPython.display import Code
    except ImportError:
        print(text)
        return
    if get_ipython() is None:
        print(text)
    else:
        show(Code(text, language="python"))


def glue_all(values: Mapping[str, Any]) -> None:
    """``myst_nb.glue(key, value, display=False)`` for every item: the values the chapter's prose
    quotes with ``{glue:text}`key```."""
    from myst_nb import glue

    for key, value in values.items():
        glue(key, value, display=False)


def interval_dots(groups: Sequence[tuple[str, pd.DataFrame]], *, value: str, low: str, high: str, label: Callable,
                  color: Callable, xlabel: str, title: str, shade: Callable[[int], tuple[str, float]] | None = None):
    """A dot per row with its interval as error bars, the rows of a group together in a shaded band, first row on
    top: ``groups`` is [(name, rows)]; ``label(name, row)`` and ``color(k, row)`` (k: the group's index) name and
    colour each dot, ``shade(k)`` gives the band's (colour, alpha) (default: the group's colour, faint). A row with no
    value gets a tick and no dot."""
    import matplotlib.pyplot as plt

    n = sum(len(rows) for _, rows in groups)
    fig, ax = plt.subplots(figsize=(8, 0.5 * n + 1.4))
    y, ticks, labels = 0, [], []
    for k, (name, rows) in enumerate(groups):
        for _, r in rows.iterrows():
            if np.isfinite(r[value]):
                err = [[max(r[value] - r[low], 0)], [max(r[high] - r[value], 0)]] if np.isfinite(r[low]) else None
                ax.errorbar(r[value], y, xerr=err, fmt="o", color=color(k, r), capsize=3)
            ticks.append(y)
            labels.append(label(name, r))
            y += 1
        band, alpha = shade(k) if shade else (f"C{k}", 0.06)
        ax.axhspan(y - len(rows) - 0.5, y - 0.5, color=band, alpha=alpha)
    ax.set_yticks(ticks, labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def table_view(table: pd.DataFrame, caption: str, columns: Sequence[str] | None = None):
    """The book's styled table of ``table`` (its ``columns``, default all; index dropped) with its caption."""
    frame = table if columns is None else table[list(columns)]
    return styled(captioned(frame.reset_index(drop=True), caption))
