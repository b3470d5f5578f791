"""Every chapter notebook of the book stays thin: its logic lives in the package (``stereoprobe.book.views``), the notebook only calls and shows, and its plumbing (imports, option set-up) sits in
a cell of its own whose input the page hides."""

from __future__ import annotations

import re

import pytest

from stereoprobe import book

NOTEBOOKS = [c for c in book.chapters() if c.kind == "notebook"]
MAX_LOGIC_LINES = 40


def _first_cell_after_parameters(path):
    """The first code cell after the ``parameters`` cell, as jupytext reads it."""
    import jupytext

    cells = jupytext.read(path).cells
    params = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    return next(c for c in cells[params + 1:] if c.cell_type == "code")


def test_the_book_has_chapter_notebooks():
    assert len(NOTEBOOKS) >= 8


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=[c.stem for c in NOTEBOOKS])
def test_the_notebook_only_calls_the_package(chapter, logic_lines):
    lines = logic_lines(chapter.source)
    assert len(lines) <= MAX_LOGIC_LINES, (f"{chapter.stem}: {len(lines)} logic lines: move logic into the "
                                           f"package's chapter module")
    branches = [line for line in lines if re.match(r"\s*(def|class|for|while|if|with|try)\b", line)]
    assert not branches, f"{chapter.stem}: move these into the package: {branches}"


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=[c.stem for c in NOTEBOOKS])
def test_the_plumbing_cell_after_the_parameters_is_hidden(chapter):
    cell = _first_cell_after_parameters(chapter.source)
    assert "hide-input" in cell.metadata.get("tags", []), f"{chapter.stem}: tag the imports cell hide-input"
    assert re.search(r"^(import|from) \S", cell.source, re.MULTILINE), f"{chapter.stem}: no import in {cell.source!r}"


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=[c.stem for c in NOTEBOOKS])
def test_the_plumbing_cell_opts_in_to_the_book_tables(chapter):
    """Importing stereoprobe leaves a kernel's tables alone (tests/test_display.py); a chapter asks for the
    book's rendering in its set-up cell."""
    cell = _first_cell_after_parameters(chapter.source)
    assert re.search(r"^use_book_style\(\)", cell.source, re.MULTILINE), f"{chapter.stem}: call use_book_style()"


# -- exercises and the "What this chapter needs" box ----------------------------------------------------------------
#: A MyST colon fence that opens a directive (``:::{exercise}``, ``:::{solution} label`` …) and its options.
_FENCE = re.compile(r"^(?P<colons>:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<arg>.*?)\s*$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*?)\s*$")
_LABEL = re.compile(r"^(?P<prefix>[a-z]+(?:-[a-z]+)*)-ex-(?P<number>[1-9][0-9]*)$")
MIN_EXERCISES = 4
MIN_SOLUTION_WORDS = 30  # a worked solution, not a stub


def _markdown(path) -> list[str]:
    """The markdown cells of a chapter notebook, as jupytext reads them (comment markers removed)."""
    import jupytext

    return [c.source for c in jupytext.read(path).cells if c.cell_type == "markdown"]


def _before_parameters(path) -> list[str]:
    """The markdown cells before the ``parameters`` cell."""
    import jupytext

    out = []
    for cell in jupytext.read(path).cells:
        if "parameters" in cell.metadata.get("tags", []):
            return out
        if cell.cell_type == "markdown":
            out.append(cell.source)
    return out


def _directives(text: str) -> list[dict]:
    """Every colon-fence directive of ``text`` (nested ones too): name, argument, options, body and the
    (start, end) line numbers of the whole block."""
    lines = text.splitlines()
    found = []
    for start, line in enumerate(lines):
        m = _FENCE.match(line)
        if not m:
            continue
        colons, depth, options, i = m["colons"], 1, {}, start + 1
        while i < len(lines) and (o := _OPTION.match(lines[i])):
            options[o["key"]] = o["value"]
            i += 1
        body_start = i
        while i < len(lines):
            inner = _FENCE.match(lines[i])
            if inner and inner["colons"] == colons:
                depth += 1
            elif lines[i].strip() == colons:
                depth -= 1
                if depth == 0:
                    break
            i += 1
        assert depth == 0, f"the {{{m['name']}}} directive opened on line {start + 1} is never closed"
        found.append({"name": m["name"], "arg": m["arg"], "options": options,
                      "body": "\n".join(lines[body_start:i]).strip(), "lines": (start, i)})
    return found


def _exercises_section(path) -> str:
    """The text from the chapter's ``## Exercises`` heading to the next level-2 heading (or the end)."""
    text = "\n".join(_markdown(path))
    m = re.search(r"^## Exercises[ \t]*$(?P<section>.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert m, "the chapter has no '## Exercises' section"
    return m["section"]


def _exercises(path) -> tuple[list[dict], list[dict], str]:
    section = _exercises_section(path)
    blocks = [d for d in _directives(section) if d["name"] in ("exercise", "solution")]
    lines = section.splitlines()
    for d in blocks:  # what is left outside the exercise and solution blocks
        for i in range(d["lines"][0], d["lines"][1] + 1):
            lines[i] = ""
    return ([d for d in blocks if d["name"] == "exercise"], [d for d in blocks if d["name"] == "solution"],
            "\n".join(lines))


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=[c.stem for c in NOTEBOOKS])
def test_every_exercise_is_labelled_and_has_one_hidden_solution(chapter):
    exercises, solutions, rest = _exercises(chapter.source)
    assert len(exercises) >= MIN_EXERCISES, f"{chapter.stem}: {len(exercises)} exercises, want at least {MIN_EXERCISES}"
    labels = [e["options"].get("label", "") for e in exercises]
    assert all(labels), f"{chapter.stem}: every {{exercise}} needs a :label:"
    assert len(set(labels)) == len(labels), f"{chapter.stem}: duplicate exercise labels {labels}"
    matches = [_LABEL.match(label) for label in labels]
    assert all(matches), f"{chapter.stem}: labels {labels} do not follow <chapter>-ex-<n>"
    assert len({m["prefix"] for m in matches}) == 1, f"{chapter.stem}: one label prefix per chapter, not {labels}"
    assert [int(m["number"]) for m in matches] == list(range(1, len(labels) + 1)), f"{chapter.stem}: {labels}"
    for e in exercises:
        assert e["body"], f"{chapter.stem}: exercise {e['options']['label']} is empty"
    for label in labels:
        mine = [s for s in solutions if s["arg"] == label]
        assert len(mine) == 1, f"{chapter.stem}: {len(mine)} {{solution}} blocks for exercise {label}, want exactly 1"
        assert "dropdown" in mine[0]["options"].get("class", "").split(), \
            f"{chapter.stem}: the solution of {label} must be hidden (:class: dropdown)"
        words = len(mine[0]["body"].split())
        assert words >= MIN_SOLUTION_WORDS, f"{chapter.stem}: the solution of {label} has {words} words: work it out"
    strays = [s["arg"] for s in solutions if s["arg"] not in labels]
    assert not strays, f"{chapter.stem}: solutions {strays} point at no exercise of this chapter"
    plain = [line for line in rest.splitlines() if re.match(r"\s*\d+[.)]\s", line)]
    assert not plain, f"{chapter.stem}: a plain numbered list under '## Exercises': {plain}; use {{exercise}} blocks"


def test_exercise_labels_are_unique_across_the_book():
    labels = [e["options"]["label"] for c in NOTEBOOKS for e in _exercises(c.source)[0]]
    assert len(labels) == len(set(labels)), sorted(label for label in labels if labels.count(label) > 1)


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=[c.stem for c in NOTEBOOKS])
def test_every_chapter_says_what_it_needs(chapter):
    boxes = [d for text in _before_parameters(chapter.source) for d in _directives(text)
             if d["name"] in ("admonition", "note") and "What this chapter needs" in d["arg"] + d["body"]]
    assert len(boxes) == 1, f"{chapter.stem}: want one 'What this chapter needs' box before the parameters cell"
    body = boxes[0]["body"]
    for needed in ("`cpu` profile", "`gpu` profile", "{doc}`/book/scale`"):
        assert needed in body, f"{chapter.stem}: the 'What this chapter needs' box does not mention {needed}"


def test_the_instructors_page_links_to_labelled_exercises():
    text = (book.book_root() / "book" / "instructors.md").read_text(encoding="utf-8")
    labels = {e["options"]["label"] for c in NOTEBOOKS for e in _exercises(c.source)[0]}
    refs = re.findall(r"\{(?:ref|numref)\}`(?:[^`<]*<)?([^`<>]+)>?`", text)
    assert refs, "book/instructors.md refers to no exercise by label"
    unknown = sorted({r for r in refs if "-ex-" in r} - labels)
    assert not unknown, f"book/instructors.md refers to exercises that do not exist: {unknown}"


#: The method each chapter teaches, shown from the package's own source (display.show_method), not copied.
SHOWN_METHODS = {"reasoning_errors": ("unqover.metrics._key_errors", "unqover.metrics.positional_error",
                                      "unqover.metrics.attribute_error"),
                 "discovering_biases": ("sodapop.success.success_rates", "sodapop.analysis._rd"),
                 "biased_inferences": ("nli.measures.net_neutral", "nli.measures.fraction_neutral",
                                       "nli.measures._indicators")}


@pytest.mark.parametrize("stem", sorted(SHOWN_METHODS))
def test_the_chapter_shows_the_code_of_the_method_it_teaches(stem):
    from stereoprobe.book.display import _function, method_source

    source = next(c for c in NOTEBOOKS if c.stem == stem).source.read_text(encoding="utf-8")
    shown = re.findall(r'"(stereoprobe\.[\w.]+)"', " ".join(re.findall(r"^show_method\(((?:.|\n)*?)\)$", source,
                                                                     re.MULTILINE)))
    assert {f"stereoprobe.{name}" for name in SHOWN_METHODS[stem]} <= set(shown), f"{stem} shows {shown}"
    for name in shown:  # each names a function of the package whose source can be shown
        assert method_source(_function(name)).startswith(f"def {name.rpartition('.')[2]}(")
