"""The set-up a newcomer relies on: one set of pins, two commands, CI calling the test command."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pins(lines):
    return {m.group(1).lower(): m.group(2) for m in (re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)$", line.strip()) for line in lines) if m}


def test_environment_yml_carries_the_constraints_pins():
    constraints = _pins((ROOT / "constraints.txt").read_text().splitlines())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert _pins(pip) == constraints
    assert constraints["torch"] == "2.13.0"
    assert constraints["jupyter-book"].startswith("1.")


def test_both_make_targets_install_the_pins():
    makefile = (ROOT / "Makefile").read_text()
    assert "-c constraints.txt" in makefile
    for target in ("book", "test"):
        assert re.search(rf"^{target}: \$\(STAMP\)", makefile, re.M), f"make {target} must depend on the set-up"
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme


def test_dev_extra_pins_jupyter_book_1():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"jupyter-book<2"' in pyproject
