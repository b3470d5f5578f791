"""The book: every chapter notebook runs with the smoke profile, the book builds with -W and is checked like a
website (internal links and anchors, alt text, no raw output), and bad profiles / failing notebooks / Sphinx
warnings / figures without alt text stop with errors that name the culprit. The smoke execution of every chapter and
the checks of the book built from it are marked ``book`` (``make test-book``, beside ``make test`` in CI); the small
books of the error tests run in ``make test``."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from bs4 import BeautifulSoup, NavigableString

from stereoprobe.book import (
    BookBuildError,
    NotebookExecutionError,
    available_profiles,
    build_book,
    chapters,
    figures_without_alt,
    load_profile,
    notebook_parameters,
    resolve_parameters,
    run_notebooks,
)
from stereoprobe.book.execute import read_notebook, solution_code
from stereoprobe.book.heads import MODEL_KEYS
from stereoprobe.errors import StereoprobeError
from stereoprobe.paths import checkout_root

ROOT = checkout_root()

NOTEBOOKS = [c for c in chapters() if c.kind == "notebook"]


#: What the worked solutions' code needs to run at the smoke profile's size (run_notebooks(solutions=...)): smaller
#: sweeps, the lab's smoke builds, a temporary file, and the zoo models where a solution reads the gpu profile's
#: paper models ("-squad"). Everything else of every solution runs as printed.
SMOKE_SOLUTION_EDITS = {
    "gender-ex-1": [("(2000, 1000, 500, 250, 125, 60)", "(60,)")],
    "sodapop-ex-4": [("(8, 12, 16, 20, 25)", "(2,)"), ('RunOptions(device="cpu", progress=False)',
                                                       'RunOptions(device="cpu", progress=False, smoke=True)'),
                     ("cap=600", "cap=10"), ("depth=2", "depth=1")],
    "sodapop-ex-5": [("from stereoprobe.sodapop import abc_model as abc\n",
                      "from stereoprobe.sodapop import abc_model as abc\nimport os, tempfile\n"
                      "my_abc = os.path.join(tempfile.mkdtemp(), 'my_abc.tsv')\n"), ('"my_abc.tsv"', "my_abc")],
    "ethnicity-ex-4": [('n.endswith("-squad")', "True")],
    "nationality-ex-4": [('name.endswith("-squad")', "True")],
}


@pytest.fixture(scope="module")
def smoke_executed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Execute every chapter notebook once with the smoke profile, each followed by its worked solutions' code
    (hidden cells), shared by the tests below."""
    build = tmp_path_factory.mktemp("book")
    paths = run_notebooks("smoke", out_dir=build / "executed", timeout=900, solutions=SMOKE_SOLUTION_EDITS)
    return build, paths


@pytest.fixture(scope="module")
def smoke_html(smoke_executed: tuple[Path, list[Path]]) -> Path:
    """The HTML book built once from those notebooks (shared by the build test and the website checks)."""
    build, _ = smoke_executed
    return build_book("smoke", build_dir=build, execute=False)  # reuse the executed notebooks


# --------------------------------------------------------------------------- smoke execution


@pytest.mark.slow
@pytest.mark.book  # make test-book (6 to 16 minutes, one process), not make test
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
        # every worked solution's code ran after the chapter, in its kernel, hidden from the page
        ran = [c for c in code if "solution" in c.get("metadata", {}).get("tags", [])]
        expected = solution_code(read_notebook(next(c.source for c in NOTEBOOKS if f"{c.stem}.ipynb" == path.name)))
        assert len(ran) == len(expected), f"{path.name}: {len(ran)} solution cells ran, {len(expected)} written"
        assert all("remove-cell" in c["metadata"]["tags"] for c in ran)
        # the downloadable copy holds no progress bar either (the kernel runs with TQDM_DISABLE=1)
        stderr = "".join("".join(o.get("text", "")) for c in code for o in c.get("outputs", [])
                         if o.get("name") == "stderr")
        bars = [what for what, pattern in RAW_OUTPUT.items() if pattern.search(stderr)]
        assert not bars, f"{path.name}: its stderr outputs hold {bars}"
        assert any("injected-parameters" in c["metadata"].get("tags", []) for c in code)
        assert nb["metadata"]["stereoprobe"]["profile"] == "smoke"
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        assert not nb["metadata"]["papermill"]["exception"]
        # papermill would otherwise embed the whole input notebook here
        assert isinstance(nb["metadata"]["papermill"]["input_path"], str)


@pytest.mark.slow
@pytest.mark.book  # make test-book (6 to 16 minutes, one process), not make test
def test_book_builds_with_warnings_as_errors(smoke_executed: tuple[Path, list[Path]], smoke_html: Path) -> None:
    build, _ = smoke_executed
    html = smoke_html
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


# --------------------------------------------------------------------------- checked like a website


def _pages(html: Path) -> list[Path]:
    """The pages of a built book (the theme's templates under _static are not pages)."""
    return sorted(p for p in html.rglob("*.html") if "_static" not in p.relative_to(html).parts)


def _soup(path: Path) -> BeautifulSoup:
    """The parsed page, parsed once for all three checks (read only: the cache is keyed on the file's state)."""
    stat = path.stat()
    return _parse(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _parse(path: Path, mtime_ns: int, size: int) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def broken_links(html: Path) -> tuple[list[str], int, int]:
    """Every href/src of every page that points inside the site (no scheme, no host) must name an existing file
    and its #fragment an id of the target page: (problems, links checked, anchors checked)."""
    ids: dict[Path, set[str]] = {}
    problems, links, anchors = [], 0, 0
    for page in _pages(html):
        for tag in _soup(page).find_all(lambda t: t.has_attr("href") or t.has_attr("src")):
            for url in (tag.get("href"), tag.get("src")):
                parts = urlsplit(url or "")
                if not url or url == "#" or parts.scheme or parts.netloc:
                    continue
                links += 1
                target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
                target = target / "index.html" if target.is_dir() else target
                where = f"{page.relative_to(html)}: {url!r}"
                if not target.is_file():
                    problems.append(f"{where}: no such file")
                elif parts.fragment and target.suffix == ".html":
                    anchors += 1
                    if target not in ids:
                        ids[target] = {t["id"] for t in _soup(target).find_all(id=True)}
                    if unquote(parts.fragment) not in ids[target]:
                        problems.append(f"{where}: no id {unquote(parts.fragment)!r} in {target.name}")
    return problems, links, anchors


def images_without_alt(html: Path) -> tuple[list[str], int]:
    """Every <img> needs a description as alt text: not empty, not its file name (myst-nb's default), at least
    three words. Returns (problems, images checked)."""
    problems, n = [], 0
    for page in _pages(html):
        for img in _soup(page).find_all("img"):
            n += 1
            alt, src = (img.get("alt") or "").strip(), img.get("src") or ""
            name = Path(urlsplit(src).path).name
            if len(alt.split()) < 3 or (name and name in alt) or re.search(r"\.(png|jpe?g|svg|gif)$", alt, re.I):
                problems.append(f"{page.relative_to(html)}: <img src={src!r}> has alt {alt!r}")
    return problems, n


#: Output a page must never show; precise enough that prose about them (say, on progress bars) passes.
RAW_OUTPUT = {
    "a stack trace": re.compile(r"Traceback \(most recent call last\)"),
    "a progress bar": re.compile(r"\d%\||\[\d+:\d\d<|\d(?:[A-Za-z]+/s|s/[A-Za-z]+)\]|[█▉▊▋▌▍▎▏]{2,}"),  # tqdm's
    "a Python warning": re.compile(r"\b[A-Z]\w*Warning: |\.py:\d+: \w*Warning\b"),
}


def raw_output(html: Path) -> list[str]:
    """Stack traces, tqdm bars and lines of Python's warnings module in the visible text of any page (the first
    of each kind per page)."""
    problems = []
    for page in _pages(html):
        text = " ".join(s for s in _soup(page).find_all(string=True)  # no comments, no script (other types)
                        if type(s) is NavigableString and s.parent.name not in ("script", "style", "noscript"))
        for what, pattern in RAW_OUTPUT.items():
            if m := pattern.search(text):
                problems.append(f"{page.relative_to(html)} shows {what}: {text[max(0, m.start() - 40):m.end() + 40]!r}")
    return problems


def _plant(path: Path, html: str) -> None:
    """Put ``html`` at the start of the page's main content (or its body)."""
    page = path.read_text(encoding="utf-8")
    at = page.find('<article class="bd-article">')
    at = page.index(">", at) + 1 if at >= 0 else page.index("<body>") + len("<body>")
    path.write_text(page[:at] + html + page[at:], encoding="utf-8")


@pytest.mark.slow
@pytest.mark.book  # make test-book (6 to 16 minutes, one process), not make test
def test_the_book_is_checked_like_a_website(smoke_html: Path, tmp_path: Path) -> None:
    html = smoke_html
    problems, links, anchors = broken_links(html)
    assert not problems, "broken internal links: " + "; ".join(problems[:10])
    assert len(_pages(html)) >= len(chapters()) and links > 500 and anchors > 100
    problems, images = images_without_alt(html)
    assert not problems, "images without alt text: " + "; ".join(problems)
    assert images >= 10  # the chapters' figures
    problems = raw_output(html)
    assert not problems, "; ".join(problems[:5])

    # the checks fail on a copy with a broken link, a broken anchor, an image without alt text and raw output
    copy = tmp_path / "html"
    shutil.copytree(html, copy)
    _plant(copy / "book" / "intro.html",
           '<a href="../notebooks/nationality.html#no-such-section">x</a> <a href="gone.html">y</a>'
           '<img src="../_images/plot.png" alt="../_images/plot.png"/>'
           '<div class="cell_output"><pre>Traceback (most recent call last):\n'
           "scoring: 100%|██████████| 105/105 [00:00&lt;00:00, 3277.43it/s]\n"
           "/x/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found.</pre></div>")
    problems, _, _ = broken_links(copy)
    assert problems == ["book/intro.html: '../notebooks/nationality.html#no-such-section': no id 'no-such-section' "
                        "in nationality.html", "book/intro.html: 'gone.html': no such file",
                        "book/intro.html: '../_images/plot.png': no such file"]
    assert [p.split(">")[0] for p in images_without_alt(copy)[0]] == ["book/intro.html: <img src='../_images/plot.png'"]
    assert {p.split(":")[0] for p in raw_output(copy)} == {"book/intro.html shows a stack trace",
                                                           "book/intro.html shows a progress bar",
                                                           "book/intro.html shows a Python warning"}


def test_site_checks_on_a_planted_site(tmp_path: Path) -> None:
    """The checkers themselves, on a three-page site: what passes (prose about progress bars and warnings
    included) and every kind of failure."""
    (tmp_path / "a").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "theme.css").write_text("")
    (tmp_path / "_static" / "macros.html").write_text("<a href=\"{{ pathto('x') }}\">template, not a page</a>")
    (tmp_path / "fig.png").write_bytes(b"")
    (tmp_path / "index.html").write_text(
        '<html><head><link href="_static/theme.css?digest=1" rel="stylesheet"></head><body id="top">'
        '<a href="a/page.html#results">results</a> <a href="#top">top</a> <a href="#">menu</a> '
        '<a href="https://example.org/x#y">web</a> <a href="mailto:a@b.c">mail</a> '
        '<img src="fig.png" alt="Bars of the bias of each subject, one per model."/>'
        "<p>The scale page explains progress bars, a UserWarning and a Traceback.</p></body></html>")
    (tmp_path / "a" / "page.html").write_text('<html><body><h2 id="results">R</h2><a href="../index.html#top">'
                                              "back</a></body></html>")
    assert broken_links(tmp_path) == ([], 5, 3)
    assert images_without_alt(tmp_path) == ([], 1)
    assert raw_output(tmp_path) == []

    page = tmp_path / "a" / "page.html"
    page.write_text(page.read_text().replace("</body>", '<a href="../index.html#bottom">x</a><a href="b.html">y</a>'
                                             '<img src="../fig.png" alt="fig.png"/><img src="../fig.png"/>'
                                             "<pre>Epoch 1: 40%|████      | 4/10 [00:01&lt;00:02, 2.0it/s]\n"
                                             "run.py:3: FutureWarning: will change</pre></body>"))
    problems, _, _ = broken_links(tmp_path)
    assert problems == ["a/page.html: '../index.html#bottom': no id 'bottom' in index.html",
                        "a/page.html: 'b.html': no such file"]
    assert len(images_without_alt(tmp_path)[0]) == 2
    assert [p.split(":")[0] for p in raw_output(tmp_path)] == ["a/page.html shows a progress bar",
                                                               "a/page.html shows a Python warning"]


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
    names += [m for part in offline["notebooks"].values() for key, v in part.items() if key in MODEL_KEYS
              for m in (v if isinstance(v, list) else [v])]
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
    (root / "book" / "_ext").mkdir()
    for name in ("_config.yml", "book/references.bib", "book/_ext/apidata.py"):  # the config's local extension too
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


def test_a_figure_without_alt_text_stops_the_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before Sphinx runs: one error naming the notebook, the cell and its line, exit status 2 (the source lacks
    something); executed copies are written by hand, so no kernel starts."""
    import jupytext
    import nbformat

    from stereoprobe.cli import book_main

    root = tmp_path / "repo"
    _fake_book(root)
    executed = tmp_path / "build" / "executed"
    executed.mkdir(parents=True)
    figure = nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
    for stem in ("bad", "good"):
        nb = jupytext.read(root / "notebooks" / f"{stem}.py")
        if stem == "good":  # its last cell (line 8 of good.py) drew a figure
            nb.cells[-1].outputs = [figure]
        nbformat.write(nb, executed / f"{stem}.ipynb")
    with pytest.raises(StereoprobeError, match=r"^A figure has no alt text: notebooks/good.py cell 3 \(line 8\) "
                                               r"`print\(sample, profile\)`\. .*mystnb=\{\"image\": \{\"alt\""):
        build_book("tiny", build_dir=tmp_path / "build", root=root, execute=False, progress=False)
    assert not (tmp_path / "build" / "src").exists()  # stopped before staging and Sphinx
    assert book_main(["--profile", "tiny", "--root", str(root), "--build-dir", str(tmp_path / "build"),
                      "--no-execute", "-q"]) == 2
    assert "error: A figure has no alt text: notebooks/good.py cell 3 (line 8)" in capsys.readouterr().err
    nb = nbformat.read(executed / "good.ipynb", as_version=4)
    nb.cells[-1].metadata["mystnb"] = {"image": {"alt": "What the planted figure shows."}}
    assert figures_without_alt(nb.cells) == []


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
    good.write_text(good.read_text().replace("# %%\nimport time", '# %% mystnb={"image": {"alt": "A clock."}}\n'
                                                                   "import time"))
    third, again = run()  # alt text is not part of the key: no execution, the copy takes the new metadata
    assert again == stamp
    last = third["cells"][-1]["metadata"]
    assert last["mystnb"] == {"image": {"alt": "A clock."}} and last["papermill"]["status"] == "completed"
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


def test_every_smoke_edit_names_a_worked_solution_of_the_book() -> None:
    labels = {label for c in NOTEBOOKS for label, _ in solution_code(read_notebook(c.source))}
    assert len(labels) >= 15  # the chapters' worked solutions with code
    assert set(SMOKE_SOLUTION_EDITS) <= labels, f"stale edits: {sorted(set(SMOKE_SOLUTION_EDITS) - labels)}"
