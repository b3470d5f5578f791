"""Every chapter notebook of the book stays thin: its logic lives in the package (the probes' ``chapter`` modules,
``stereoprobe.zoo.chapter``), the notebook only calls and shows, and its plumbing (imports, option set-up) sits in
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
