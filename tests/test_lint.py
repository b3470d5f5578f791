"""The code passes ruff with the rules of pyproject.toml's [tool.ruff] (ruff pinned in constraints.txt, [dev] extra)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What `ruff check` covers: the package, the tests, the benchmarks and the chapters' jupytext sources.
PATHS = ("src", "tests", "benchmarks", "notebooks")


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed: `make setup` installs it (the [dev] extra, pinned in constraints.txt)")
def test_ruff_check_passes() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *PATHS],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"`ruff check {' '.join(PATHS)}` found problems:\n{done.stdout}{done.stderr}"
