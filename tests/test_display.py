"""How the book's tables render (stereoprobe.book.display): numbers stay numbers until the Styler formats them, text
left and numbers right, intervals shown as "[lo, hi]", captions escaped, "—" for a missing value, a big frame
by its head and tail; and importing stereoprobe changes nothing about how a user's DataFrames render."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest

from stereoprobe.book import display

LEFT = "text-align: left;"
RIGHT = "text-align: right;"


def _cells(html: str, text: str) -> list[str]:
    """The ``class`` attributes of the cells whose content is ``text``."""
    return re.findall(rf'<t[dh][^>]*class="([^"]*)"[^>]*>\s*{re.escape(text)}\s*</t[dh]>', html)


def _column_style(html: str, j: int, header: bool = False) -> str:
    """The CSS :func:`display.styled` gives the ``j``-th column's data cells (or its header cells)."""
    selector = rf"th\.col_heading\.level\d\.col{j}" if header else rf"td\.col{j}"
    m = re.search(rf"#T_\w+ {selector} \{{([^}}]*)\}}", html)
    return " ".join(m.group(1).split()) if m else ""


def test_a_dataframe_left_aligns_its_text_columns_and_not_its_numbers():
    frame = pd.DataFrame({"model": ["minilm", "roberta"], "delta": [0.41234, 0.037], "keys": [2000, 180],
                          "note": ["1,234", "x"]})
    html = display.table_html(frame)
    assert _column_style(html, 0) == LEFT and _column_style(html, 0, header=True) == LEFT
    assert _column_style(html, 1) == RIGHT and _column_style(html, 2, header=True) == RIGHT
    assert _column_style(html, 3) == LEFT  # a string that spells a number is text: numbers stay numbers
    assert _cells(html, "0.4123") and _cells(html, "0.0370") and _cells(html, "2,000")  # formatted by the Styler
    assert frame["delta"].tolist() == [0.41234, 0.037]


def test_an_interval_pair_reads_as_one_bracketed_column_and_stays_numbers():
    frame = pd.DataFrame({"model": ["a", "b"], "gamma": [0.25, 0.5], "ci_low": [0.125, float("nan")],
                          "ci_high": [0.375, float("nan")]})
    styler = display.styled(frame, {"gamma": "{:+.3f}"})
    html = styler.to_html()
    assert _cells(html, "+0.250") and _cells(html, "[+0.125,") and _cells(html, "+0.375]")
    assert _cells(html, "95% CI") and "ci_low" not in html and "ci_high" not in html  # one heading
    assert _cells(html, display.MISSING) == ["data row1 col2"] and "nan" not in html.lower()
    assert _column_style(html, 2) == "text-align: right; padding-right: 0;"  # the two cells close up
    assert _column_style(html, 3) == "text-align: left; padding-left: 0.3em;"
    assert styler.data is frame and frame["ci_low"].dtype == float


def test_named_intervals_take_their_estimates_format():
    frame = pd.DataFrame({"NN": [0.5], "NN_lo": [0.25], "NN_hi": [0.75], "mu_ci_low": [0.1], "mu_ci_high": [0.2]})
    assert display.intervals(frame.columns) == {1: (2, "NN", "NN 95% CI"), 3: (4, None, "mu 95% CI")}
    html = display.styled(frame, {"NN": "{:.2f}"}).to_html()
    assert _cells(html, "0.50") and _cells(html, "[0.25,") and _cells(html, "0.75]")
    assert _cells(html, "NN 95% CI") and _cells(html, "mu 95% CI")


def test_styled_formats_every_missing_value_and_escapes_text():
    frame = pd.DataFrame({"word": ["<b>", None], "x": [1.0, None], "n": pd.array([3, None], dtype="Int64")})
    html = display.styled(frame, caption="A <caption>").to_html()
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert len(_cells(html, display.MISSING)) == 3
    assert "nan" not in html.lower() and "<NA>" not in html


def test_a_big_frame_shows_its_head_and_tail():
    frame = pd.DataFrame({"word": [f"w{i}" for i in range(5000)], "sr": [i / 5000 for i in range(5000)]})
    html = display.table_html(frame)
    assert "5,000 rows × 2 columns, the first and last 5 rows shown" in html
    assert "w2500" not in html and _cells(html, "w4999") and _cells(html, "w0")
    assert html.count("<tr") < 15
    assert re.search(r"tbody tr:nth-child\(6\) > \* \{\s*border-top: 2px dashed", html)  # where the rest would be


def test_a_frame_truncated_sideways_shows_its_first_and_last_columns():
    frame = pd.DataFrame({f"n{i}": [float(i) + 0.5] for i in range(24)} | {"last word": ["calm"]})
    with pd.option_context("display.max_columns", 20):
        html = display.table_html(frame)
    assert "the first and last 10 columns shown" in html and ">n12<" not in html
    assert _cells(html, "calm") == ["data row0 col19"] and _column_style(html, 19) == LEFT
    assert _cells(html, "0.500") and _cells(html, "23.5")


def test_grouped_rows_and_columns():
    index = pd.MultiIndex.from_tuples([("here", "gender"), ("here", "race"), ("paper", "gender")],
                                      names=["source", "attribute"])
    frame = pd.DataFrame({("G1", "word"): ["quiet", "kind", "calm"], ("G1", "rd"): [0.5, 0.25, 0.125]},
                         index=index)
    html = display.table_html(frame)
    assert _cells(html, "kind") and _cells(html, "0.250")
    assert _column_style(html, 0) == LEFT and _column_style(html, 1, header=True) == RIGHT
    assert re.search(r"th\.col_heading\.level1\.col1", html)  # the columns' last level


def test_captions_for_frames_and_stylers():
    frame = pd.DataFrame({"a": [1]})
    captioned = display.captioned(frame, "Table 2 (paper): <γ> per occupation")
    assert frame.attrs == {} and isinstance(captioned, pd.DataFrame)
    assert "<caption>Table 2 (paper): &lt;γ&gt; per occupation</caption>" in display.table_html(captioned)
    assert "Table 2 (paper)" in display.table_html(captioned.style)  # a Styler of a captioned frame
    styler = display.captioned(frame.style, "own caption")
    assert styler.caption == "own caption" and "<caption>own caption</caption>" in display.table_html(styler)


def test_a_styler_is_aligned_by_position_and_rendered_as_it_is():
    frame = pd.DataFrame({"set": ["Gendered", "Gendered"], "cosine": [0.8, 0.76]}, index=[0, 0])
    styler = frame.style.format({"cosine": "{:.2f}"}).hide(axis="index")
    html = display.table_html(styler)
    uuid = re.search(r'<table id="(T_\w+)"', html).group(1)
    assert re.search(rf"#{uuid} td\.col0 \{{\s*text-align: left;\s*\}}", html)
    assert re.search(rf"#{uuid} td\.col1 \{{\s*text-align: right;", html)
    assert re.search(rf"#{uuid} th\.col_heading\.level0\.col1 \{{\s*text-align: right;", html)
    assert styler.table_styles in (None, [])  # the caller's Styler is not changed
    assert _cells(html, "0.76") and _cells(html, "0.80")  # its own formats


def test_table_html_is_the_stylers_own_html():
    """No edit of pandas' HTML: what table_html returns is what the Styler writes."""
    styler = display.styled(display.captioned(pd.DataFrame({"q < 0.05": [1], "w": ["a"]}), "words with q < 0.05"))
    html = display.table_html(styler)
    assert display.table_html(styler) == html and styler.caption == "words with q < 0.05"  # left as it was
    assert html == copy.copy(styler).set_caption("words with q &lt; 0.05").to_html()  # styled aligned it already


def test_a_hyphenated_word_of_long_text_stays_on_one_line():
    frame = pd.DataFrame({"model": ["zoo:minilm-qa"], "note": ["fine-tuned on SQuAD with a projection removed"],
                          "x": [-0.25]})
    html = display.table_html(frame)
    assert '<span style="white-space: nowrap;">fine-tuned</span> on SQuAD' in html
    assert _cells(html, "zoo:minilm-qa") and _cells(html, "-0.250")  # short text and numbers as they are
    assert "white-space: normal" in _column_style(html, 1)


@pytest.mark.parametrize("kind, values", [("number", [1, 2]), ("text", ["1,234", "+0.25", None]),
                                          ("text", ["a", "b"]), ("text", [True, False]),
                                          ("long", ["x" * 31]), ("text", ["x" * 30]), ("text", [None, None]),
                                          ("number", [float("nan")]), ("number", [1, 2.5, None])])
def test_column_kinds(kind, values):
    assert display._kind(pd.Series(values)) == kind


def test_the_kernel_renders_through_table_html_only_after_the_opt_in(monkeypatch):
    from IPython.core.formatters import HTMLFormatter

    html = HTMLFormatter()
    shell = SimpleNamespace(display_formatter=SimpleNamespace(formatters={"text/html": html}))
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    frame = display.captioned(pd.DataFrame({"word": ["calm"], "x": [float("nan")]}), "A caption")
    assert html(frame) == frame._repr_html_()  # pandas' own view until a chapter opts in
    display.use_book_style()
    out = html(frame)
    assert "<caption>A caption</caption>" in out and _cells(out, display.MISSING) and "NaN" not in out
    assert "<caption>A caption</caption>" in html(frame.style)


_PROBE = r"""
import json, sys
import pandas as pd
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
if sys.argv[1] == "import":
    import importlib, pkgutil
    import stereoprobe
    for mod in pkgutil.walk_packages(stereoprobe.__path__, "stereoprobe."):  # every module, the probes' too
        if not mod.name.endswith(".__main__"):  # `python -m` entry points run a command when imported
            importlib.import_module(mod.name)
frame = pd.DataFrame({"model": ["a", "b"], "gamma": [0.123456789, float("nan")], "n": [1000, 2]})
options = {key: repr(pd.get_option(key)) for key in pd._config.config._registered_options}
data, _ = shell.display_formatter.format(frame)
print(json.dumps({"repr_html": frame._repr_html_(), "kernel_html": data.get("text/html"), "options": options,
                  "styler": frame.style.set_uuid("x").to_html()}))
"""


def test_importing_stereoprobe_changes_nothing_about_how_dataframes_render():
    """stereoprobe and its probes' modules imported in a fresh IPython shell: a plain DataFrame renders as in
    a shell that did not import them, and every pandas option is as it was."""
    def run(arg: str) -> dict:
        out = subprocess.run([sys.executable, "-c", _PROBE, arg], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    plain, imported = run("plain"), run("import")
    assert imported["options"] == plain["options"]
    assert imported["repr_html"] == plain["repr_html"]
    assert imported["kernel_html"] == plain["kernel_html"] == plain["repr_html"]
    assert imported["styler"] == plain["styler"]
