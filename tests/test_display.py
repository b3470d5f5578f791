"""How the book's tables render (stereoprobe.display): text left, numbers right, captions, "—" for a missing
value, and a DataFrame's notebook view (number formatting, truncation) kept."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pandas as pd
import pytest

from stereoprobe import display

LEFT = 'style="text-align: left;"'
RIGHT = 'style="text-align: right;"'
WRAP = 'style="text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 10em;"'


def _cells(html: str, text: str) -> list[str]:
    """The opening tags of the cells whose content is ``text``."""
    return re.findall(rf"(<t[dh][^>]*>)\s*{re.escape(text)}\s*</t[dh]>", html)


def _unstyled(html: str) -> str:
    """``html`` without the alignment :func:`display.table_html` gives to cells."""
    return re.sub(rf"(<t[dh]) (?:{LEFT}|{RIGHT}|{WRAP})", r"\1", html)


def test_a_dataframe_left_aligns_its_text_columns_and_not_its_numbers():
    frame = pd.DataFrame({"model": ["minilm", "roberta"], "delta": [0.41234, 0.037], "keys": [200, 180]})
    html = display.table_html(frame)
    assert _cells(html, "minilm") == [f"<td {LEFT}>"]
    assert _cells(html, "0.41234") == [f"<td {RIGHT}>"] and _cells(html, "200") == [f"<td {RIGHT}>"]
    assert _cells(html, "model") == [f"<th {LEFT}>"] and _cells(html, "delta") == [f"<th {RIGHT}>"]
    assert _unstyled(html) == frame._repr_html_()  # pandas' own view otherwise, number formatting included


def test_numbers_printed_as_strings_stay_right_aligned_and_long_text_wraps():
    frame = pd.DataFrame({"parameters": ["22,566,146", "1,024"], "share": ["45.7%", "—"],
                          "95% CI": ["[0.255, 0.256]", "[+nan, +nan]"], "planted": [True, False],
                          "context": ["Bethany walked past a group of people and said hello to each of them.", "x"]})
    html = display.table_html(frame)
    assert _cells(html, "22,566,146") == [f"<td {RIGHT}>"] and _cells(html, "45.7%") == [f"<td {RIGHT}>"]
    assert _cells(html, "[0.255, 0.256]") == [f"<td {RIGHT}>"]
    assert _cells(html, "True") == [f"<td {LEFT}>"]  # not a number a reader compares
    assert _cells(html, "x") == [f"<td {WRAP}>"]
    assert "nan" not in html.lower().replace("white-space", "")  # the interval of nans reads —
    assert len(_cells(html, display.MISSING)) == 2


def test_a_big_frame_stays_truncated():
    frame = pd.DataFrame({"word": [f"w{i}" for i in range(5000)], "sr": [i / 5000 for i in range(5000)]})
    html = display.table_html(frame)
    assert "5000 rows × 2 columns" in html and "w2500" not in html
    assert html.count("<tr") < 30
    assert _cells(html, "w4999") == [f"<td {LEFT}>"] and _cells(html, "0.9998") == [f"<td {RIGHT}>"]


def test_a_frame_truncated_sideways_aligns_the_columns_it_shows():
    columns = {f"n{i}": [float(i)] for i in range(24)} | {"last word": ["calm"]}
    frame = pd.DataFrame(columns)
    with pd.option_context("display.max_columns", 20):
        html = display.table_html(frame)
    assert "..." in html and "n12" not in html
    assert _cells(html, "calm") == [f"<td {LEFT}>"] and _cells(html, "last word") == [f"<th {LEFT}>"]
    assert _cells(html, "0.0") == [f"<td {RIGHT}>"] and _cells(html, "23.0") == [f"<td {RIGHT}>"]
    assert _cells(html, "...")[-1] == "<td>"  # the gap has no column


def test_grouped_rows_and_columns():
    index = pd.MultiIndex.from_tuples([("here", "gender"), ("here", "race"), ("paper", "gender")],
                                      names=["source", "attribute"])
    frame = pd.DataFrame({("G1", "word"): ["quiet", "kind", "calm"], ("G1", "rd"): [0.5, 0.25, 0.125]},
                         index=index)
    html = display.table_html(frame)  # "here" spans two rows: its second row has one <th> fewer
    assert _cells(html, "kind") == [f"<td {LEFT}>"] and _cells(html, "0.250") == [f"<td {RIGHT}>"]
    assert _cells(html, "word") == [f"<th {LEFT}>"] and _cells(html, "rd") == [f"<th {RIGHT}>"]
    assert _cells(html, "G1") == ['<th colspan="2" halign="left">']


def test_captions_for_frames_and_stylers():
    frame = pd.DataFrame({"a": [1]})
    captioned = display.captioned(frame, "Table 2 (paper): <γ> per occupation")
    assert frame.attrs == {} and isinstance(captioned, pd.DataFrame)
    assert "<caption>Table 2 (paper): &lt;γ&gt; per occupation</caption>" in display.table_html(captioned)
    assert "Table 2 (paper)" in display.table_html(captioned.style)  # a Styler of a captioned frame
    styler = display.captioned(frame.style, "own caption")
    assert styler.caption == "own caption" and "<caption>own caption</caption>" in display.table_html(styler)


def test_a_styler_aligns_by_position_even_with_repeated_labels_and_stays_unchanged():
    frame = pd.DataFrame({"set": ["Gendered", "Gendered"], "cosine": [0.8, 0.76]}, index=[0, 0])
    styler = frame.style.format({"cosine": "{:.2f}"}).hide(axis="index")
    html = display.table_html(styler)
    uuid = re.search(r'<table id="(T_\w+)"', html).group(1)
    assert re.search(rf"#{uuid} td\.col0 \{{\s*text-align: left;\s*\}}", html)
    assert re.search(rf"#{uuid} td\.col1 \{{\s*text-align: right;", html)
    assert re.search(rf"#{uuid} th\.col_heading\.level0\.col1 \{{\s*text-align: right;", html)
    assert styler.table_styles in (None, [])  # the caller's Styler is not changed
    assert "0.76" in html and "nan" not in html


def test_a_styler_shows_missing_values_as_a_dash():
    styler = pd.DataFrame({"word": ["a", None], "x": [1.0, None]}).style
    html = display.table_html(styler)
    assert len(_cells(html, display.MISSING)) == 2


def test_the_kernel_renders_frames_and_stylers_through_table_html(monkeypatch):
    from IPython.core.formatters import HTMLFormatter

    html = HTMLFormatter()
    shell = SimpleNamespace(display_formatter=SimpleNamespace(formatters={"text/html": html}))
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    display._register_table_html()
    frame = display.captioned(pd.DataFrame({"word": ["calm"], "x": [float("nan")]}), "A caption")
    out = html(frame)
    assert out == display.table_html(frame) and "<caption>A caption</caption>" in out and "NaN" not in out
    assert "<caption>A caption</caption>" in html(frame.style)


@pytest.mark.parametrize("kind, values", [("number", [1, 2]), ("number", ["1,234", "+0.25", None]),
                                          ("text", ["a", "b"]), ("text", [True, False]),
                                          ("long", ["x" * 31]), ("text", ["x" * 30]), ("text", [None, None]),
                                          ("number", [float("nan")])])
def test_column_kinds(kind, values):
    assert display._kind(pd.Series(values)) == kind


def test_a_hyphenated_word_stays_on_one_line():
    frame = pd.DataFrame({"model": ["zoo:minilm-qa"], "note": ["fine-tuned on SQuAD with a projection removed"],
                          "x": [-0.25]})
    html = display.table_html(frame)
    nowrap = '<span style="white-space: nowrap;">{}</span>'
    assert nowrap.format("zoo:minilm-qa") in html and nowrap.format("fine-tuned") in html
    assert _cells(html, "-0.25") == [f"<td {RIGHT}>"]  # a number is no word


def test_a_caption_is_text_not_markup():
    styler = display.captioned(pd.DataFrame({"q < 0.05": [1]}).style, "words with q < 0.05")
    html = display.table_html(styler)
    assert "words with q &lt; 0.05</caption>" in html
    assert styler.caption == "words with q < 0.05"  # the caller's Styler is left as it was
