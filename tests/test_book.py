"""The book: every chapter notebook runs with the smoke profile, the book builds with -W, and
bad profiles / failing notebooks / Sphinx warnings stop with errors that name the culprit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stereoprobe.book import (
    BookBuildError,
    NotebookExecutionError,
    available_profiles,
    build_book,
    chapters,
    load_profile,
    notebook_parameters,
    resolve_parameters,
    run_notebooks,
)
from stereoprobe.errors import StereoprobeError
from stereoprobe.paths import checkout_root

ROOT = checkout_root()

NOTEBOOKS = [c for c in chapters() if c.kind == "notebook"]


@pytest.fixture(scope="module")
def smoke_executed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Execute every chapter notebook once with the smoke profile (shared by the tests below)."""
    build = tmp_path_factory.mktemp("book")
    paths = run_notebooks("smoke", out_dir=build / "executed", timeout=900)
    return build, paths


# --------------------------------------------------------------------------- smoke execution


@pytest.mark.slow
def test_smoke_profile_executes_every_chapter_notebook(smoke_executed: tuple[Path, list[Path]]) -> None:
    build, paths = smoke_executed
    assert [p.name for p in paths] == [f"{c.stem}.ipynb" for c in NOTEBOOKS]
    assert not list((build / "executed").glob(".*tmp")), "temporary files left behind"
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        errors = [o for c in code for o in c.get("outputs", []) if o["output_type"] == "error"]
        assert not errors, f"{path.name}: error output {errors[0].get('ename')}: {errors[0].get('evalue')}"
        assert any(c.get("outputs") for c in code), f"{path.name} has no outputs"
        unexecuted = [c for c in code if "".join(c["source"]).strip() and not c.get("execution_count")]
        assert not unexecuted, f"{path.name} has unexecuted code cells"
        assert any("injected-parameters" in c["metadata"].get("tags", []) for c in code)
        assert nb["metadata"]["stereoprobe"]["profile"] == "smoke"
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        assert not nb["metadata"]["papermill"]["exception"]
        # papermill would otherwise embed the whole input notebook here
        assert isinstance(nb["metadata"]["papermill"]["input_path"], str)


@pytest.mark.slow
def test_book_builds_with_warnings_as_errors(smoke_executed: tuple[Path, list[Path]]) -> None:
    build, _ = smoke_executed
    html = build_book("smoke", build_dir=build, execute=False)  # reuse the executed notebooks
    assert html == build / "html"
    assert (html / "index.html").is_file()
    for chapter in chapters():
        page = html / f"{chapter.file}.html"
        assert page.is_file(), f"missing page {page}"
    intro = (html / "book" / "intro.html").read_text(encoding="utf-8")
    assert "Li <em>et al.</em>" in intro  # {cite:t} resolved against references.bib
    assert 'class="citation"' in intro  # the bibliography is rendered
    models = (html / "notebooks" / "models_used.html").read_text(encoding="utf-8")
    for name in ("zoo:minilm-mlm", "zoo:minilm-qa", "zoo:minilm-nli", "zoo:minilm-mcq", "lab:qa-biased"):
        assert name in models, f"the models chapter does not show {name}"
    assert "The capital of France is [MASK]." in models  # the masked LM's probe fills
    nationality = (html / "notebooks" / "nationality.html").read_text(encoding="utf-8")
    for text in ("Table 4", "Fig. 4", "Mann", "lab:mlm-biased", "Norway", "rank W"):
        assert text in nationality, f"the nationality chapter lacks {text!r}"
    groups = (html / "notebooks" / "ethnicity_religion.html").read_text(encoding="utf-8")
    for text in ("Table 12", "Table 13", "paper RoBERTa_B SQuAD", "Fig. 5"):
        assert text in groups, f"the ethnicity and religion chapter lacks {text!r}"
    comparing = (html / "notebooks" / "comparing_models.html").read_text(encoding="utf-8")
    for text in ("larger QA models are more biased", "NewsQA models are less biased than SQuAD models",
                 "fine-tuning shifts bias", "zoo:minilm-mlm"):
        assert text in comparing, f"the comparing-models chapter lacks {text!r}"
    nli = (html / "notebooks" / "biased_inferences.html").read_text(encoding="utf-8")
    for text in ("1,936,512", "Table 7", "Tables 8–10", "Table 15", "proj@train/test", "rand@test", "−gen",
                 "zoo:minilm-nli-proj", "Rude × Iraqi", "static layer"):
        assert text in nli, f"the Bias-NLI chapter lacks {text!r}"
    sodapop = (html / "notebooks" / "discovering_biases.html").read_text(encoding="utf-8")
    for text in ("Table 1", "Tables 2 and 9", "Table 5", "109,830", "saving ×", "ofof", "lab:mcq-biased",
                 "inlp-race", "sentence_debias-gender", "q &lt; 0.05", "European-American female"):
        assert text in sodapop, f"the SODAPOP chapter lacks {text!r}"
    staged = build / "src"
    assert (staged / "book" / "references.bib").is_file()
    assert {p.name for p in (staged / "notebooks").iterdir()} == {f"{c.stem}.ipynb" for c in NOTEBOOKS}


# --------------------------------------------------------------------------- profiles


def test_profiles_are_valid_for_every_chapter() -> None:
    assert {"smoke", "cpu", "gpu", "gpu-zoo"} <= set(available_profiles())
    declared = {c.stem: notebook_parameters(_read(c.source)) for c in NOTEBOOKS}
    for name in ("smoke", "cpu", "gpu", "gpu-zoo"):
        profile_name, data = load_profile(name)
        resolved = resolve_parameters(profile_name, data, declared)
        assert set(resolved) == {c.stem for c in NOTEBOOKS}
    assert load_profile("smoke")[1]["smoke_models"] is True
    gpu = load_profile("gpu")[1]
    assert gpu["sample"] is None
    assert len(gpu["models"]) == 10 and all(m.startswith("tli8hf/unqover-") for m in gpu["models"])
    offline = load_profile("gpu-zoo")[1]  # the same full scale with the offline zoo: every model a zoo/lab/asset name
    assert offline["sample"] is None and offline["device"] == "cuda"
    assert {k: v for k, v in offline["notebooks"]["discovering_biases"].items() if k not in ("mlm", "name_encoder")} == \
        {k: v for k, v in gpu["notebooks"]["discovering_biases"].items() if k not in ("mlm", "name_encoder")}
    names = [m for key in ("models", "lm_models", "lab_models", "lab_lm_models") for m in offline[key]]
    names += [m for part in offline["notebooks"].values() for v in part.values() if isinstance(v, list)
              for m in v if isinstance(m, str)]
    assert names and all(m.split(":")[0] in ("zoo", "lab", "asset") for m in names)


def test_unknown_profile_lists_the_valid_ones() -> None:
    with pytest.raises(StereoprobeError, match=r"Unknown profile 'nope'.*cpu.*gpu.*smoke"):
        run_notebooks("nope")


def test_unknown_profile_key_is_named(tmp_path: Path) -> None:
    profile = tmp_path / "mine.yaml"
    profile.write_text(yaml.safe_dump({"sample": 10, "colour": "red", "flavour": 1}))
    with pytest.raises(StereoprobeError, match=r"unknown keys 'colour', 'flavour'"):
        run_notebooks(str(profile), out_dir=tmp_path)
    profile.write_text(yaml.safe_dump({"notebooks": {"no_such_chapter": {"sample": 1}}}))
    with pytest.raises(StereoprobeError, match=r"'no_such_chapter'.*not a chapter notebook"):
        run_notebooks(str(profile), out_dir=tmp_path)
    with pytest.raises(StereoprobeError, match=r"mode = 'fast' is invalid"):
        run_notebooks("smoke", out_dir=tmp_path, overrides={"mode": "fast"})
    with pytest.raises(StereoprobeError, match=r"'profile' is set by stereoprobe.book"):
        run_notebooks("smoke", out_dir=tmp_path, overrides={"profile": "x"})
    with pytest.raises(StereoprobeError, match=r"'nope' is not a chapter notebook"):
        run_notebooks("smoke", only=["nope"], out_dir=tmp_path)
    assert not list(tmp_path.glob("*.ipynb"))


def test_parameters_are_filtered_to_those_a_notebook_declares() -> None:
    declared = {"a": {"sample": "1", "profile": "''"}, "b": {"models": "[]", "seed": "0"}}
    resolved = resolve_parameters(
        "smoke", {"sample": 5, "seed": 3, "models": "x", "notebooks": {"b": {"seed": 7}}}, declared)
    assert resolved == {"a": {"sample": 5, "profile": "smoke"}, "b": {"seed": 7, "models": ["x"]}}
    with pytest.raises(StereoprobeError, match=r"notebook 'a' does not declare 'seed'"):
        resolve_parameters("smoke", {"notebooks": {"a": {"seed": 1}}}, declared)


def test_cli_reports_bad_input_with_exit_status_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "stereoprobe.book", "--profile", "nope"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert "Unknown profile 'nope'" in proc.stderr


# --------------------------------------------------------------------------- failures


def _fake_book(root: Path, intro: str = "# Intro\n\nHello.\n") -> None:
    """A minimal book (config and bib from the real one) with a failing and a passing notebook."""
    (root / "notebooks").mkdir(parents=True)
    (root / "params").mkdir()
    (root / "book").mkdir()
    for name in ("_config.yml", "book/references.bib"):
        (root / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    (root / "params" / "tiny.yaml").write_text("sample: 3\nseed: 1\n")
    (root / "book" / "intro.md").write_text(intro)
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/bad\n  - file: notebooks/good\n")
    (root / "notebooks" / "good.py").write_text(
        '# %% [markdown]\n# # Good\n\n# %% tags=["parameters"]\nsample = 1\nprofile = ""\n\n'
        "# %%\nprint(sample, profile)\n")
    (root / "notebooks" / "bad.py").write_text(
        '# %% [markdown]\n# # Bad\n\n# %% tags=["parameters"]\nsample = 1\n\n# %%\nx = sample\n\n'
        '# %%\ny = x + 1\nraise ValueError("planted failure")\n\n# %%\nprint("never")\n')


@pytest.mark.slow
def test_failing_notebook_names_the_cell_and_leaves_no_partial_output(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _fake_book(root)
    out = tmp_path / "executed"
    out.mkdir()
    (out / "bad.ipynb").write_text("previous complete copy")
    with pytest.raises(NotebookExecutionError) as info:
        run_notebooks("tiny", out_dir=out, root=root, keep_going=True, progress=False)
    message = str(info.value)
    assert "notebooks/bad.py" in message
    assert "cell 4 (line 10)" in message  # the py:percent cell and its `# %%` line
    assert "ValueError: planted failure" in message
    assert "planted failure" in info.value.details  # the traceback tail
    assert (out / "bad.ipynb").read_text() == "previous complete copy"  # untouched
    good = json.loads((out / "good.ipynb").read_text())  # keep_going ran the other one
    assert good["cells"][-1]["outputs"][0]["text"] == ["3 tiny\n"]
    assert sorted(p.name for p in out.iterdir()) == ["bad.ipynb", "good.ipynb"]

    with pytest.raises(StereoprobeError):  # without keep_going the build stops before Sphinx
        build_book("tiny", build_dir=tmp_path / "build", root=root, progress=False)
    assert not (tmp_path / "build" / "html").exists()


@pytest.mark.slow
def test_sphinx_warning_fails_the_build(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _fake_book(root, intro="# Intro\n\nSee {cite:p}`no_such_key`.\n")
    (root / "notebooks" / "bad.py").write_text('# %% tags=["parameters"]\nsample = 1\n\n# %% [markdown]\n# # Fine\n')
    with pytest.raises(BookBuildError, match=r"no_such_key"):
        build_book("tiny", build_dir=tmp_path / "build", root=root, progress=False)
    assert (tmp_path / "build" / "jupyter-book.log").is_file()
    assert not (tmp_path / "build" / "html").exists()


@pytest.mark.slow
def test_prose_edits_reuse_the_execution_and_code_edits_do_not(tmp_path: Path) -> None:
    """The execution cache: a markdown edit refreshes the executed copy without running it (the outputs keep
    their values, the prose is the new one, an added markdown cell included); a code edit, a parameter change
    or --force executes again."""
    root = tmp_path / "repo"
    _fake_book(root)
    good = root / "notebooks" / "good.py"
    good.write_text('# %% [markdown]\n# # Good\n\n# %% tags=["parameters"]\nsample = 1\nprofile = ""\n\n'
                    "# %%\nimport time\nprint(sample, time.time_ns())\n")
    out = tmp_path / "executed"

    def run(**kwargs):
        run_notebooks("tiny", only=["good"], out_dir=out, root=root, progress=False, **kwargs)
        nb = json.loads((out / "good.ipynb").read_text())
        printed = nb["cells"][-1]["outputs"][0]["text"][0]
        return nb, printed

    first, stamp = run()
    key = first["metadata"]["stereoprobe"]["execution_key"]
    good.write_text(good.read_text().replace("# # Good", "# # Good, now retitled\n\n# %% [markdown]\n# New prose."))
    second, again = run()
    assert again == stamp  # not executed
    assert second["metadata"]["stereoprobe"]["execution_key"] == key
    prose = ["".join(c["source"]) for c in second["cells"] if c["cell_type"] == "markdown"]
    assert prose == ["# Good, now retitled", "New prose."]
    code = [c for c in second["cells"] if c["cell_type"] == "code"]
    assert [c["metadata"].get("tags", []) for c in code] == [["parameters"], ["injected-parameters", "remove-cell"], []]
    assert "".join(code[0]["source"]) == ("# Parameters of this page (profile tiny; the defaults are in "
                                          "notebooks/good.py)\nsample = 3\nprofile = \"tiny\"")  # one block, as run
    assert run(force=True)[1] != stamp  # --force executes
    _, forced = run()
    good.write_text(good.read_text().replace("print(sample,", "print(sample + 0,"))
    assert run()[1] != forced  # a code edit executes
    _, edited = run()
    (root / "params" / "tiny.yaml").write_text("sample: 4\nseed: 1\n")
    assert run()[1].split()[0] == "4"  # a parameter change executes


@pytest.mark.slow
def test_a_stylesheet_edit_reaches_the_html(tmp_path: Path) -> None:
    """Sphinx copies static files only when a page is out of date: a change to a staged file that is not a page
    (here the book's CSS) rebuilds every page, a prose edit only its own."""
    root = tmp_path / "repo"
    _fake_book(root)
    (root / "notebooks" / "bad.py").write_text('# %% tags=["parameters"]\nsample = 1\n\n# %% [markdown]\n# # Fine\n')
    (root / "book" / "_static").mkdir()
    css = root / "book" / "_static" / "stereoprobe.css"
    css.write_text("table { margin: 1px; }\n")
    build = tmp_path / "build"
    html = build_book("tiny", build_dir=build, root=root, progress=False)
    assert (html / "_static" / "stereoprobe.css").read_text() == "table { margin: 1px; }\n"
    css.write_text("table { margin: 2px; }\n")
    build_book("tiny", build_dir=build, root=root, progress=False, execute=False)
    assert (html / "_static" / "stereoprobe.css").read_text() == "table { margin: 2px; }\n"
    (root / "book" / "intro.md").write_text("# Intro\n\nHello again.\n")
    build_book("tiny", build_dir=build, root=root, progress=False, execute=False)
    log = (build / "jupyter-book.log").read_text()
    assert "Hello again." in (html / "book" / "intro.html").read_text()
    assert "reading sources... [100%] book/intro" in re.sub(r"\x1b\[[0-9;]*m", "", log)
    assert "notebooks/good" not in re.sub(r"\x1b\[[0-9;]*m", "", log).split("reading sources")[-1].split("\n")[0]


def _read(path: Path):
    import jupytext

    return jupytext.read(path)
