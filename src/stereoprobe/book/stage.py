"""Staging the book's sources into ``_build/src`` (with the repository's settings and the launch buttons' install
cell), checking figures' alt text, and building the HTML with Jupyter Book (:func:`build_book`).
"""


from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from stereoprobe.atomic import atomic_file
from stereoprobe.errors import StereoprobeError
from stereoprobe.book.execute import cell_lines, is_injected, resolve_dir, say, select_chapters, strip_ansi, run_notebooks
from stereoprobe.book.params import BookBuildError, Chapter, rel_path, book_root, chapters, load_profile
from stereoprobe.book.publish import Repository, repository


# --------------------------------------------------------------------------- book build


def _jupyter_book_command() -> list[str]:
    """``jupyter-book`` from the running environment (no reliance on PATH)."""
    return [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]


def _copy(src: Path, dst: Path) -> bool:
    """Copy ``src`` to ``dst`` unless ``dst`` already holds the same bytes (an unchanged staged page keeps its
    modification time, so Sphinx does not rebuild it); True when it copied."""
    if dst.is_file() and dst.stat().st_size == src.stat().st_size and dst.read_bytes() == src.read_bytes():
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return True


def _stage_mathjax(folder: Path) -> None:
    """MathJax 3 for offline reading, from the pinned ``django-static-mathjax`` package (no CDN at view time).

    The SVG build is one self-contained file (no web fonts), served as ``_static/mathjax/tex-svg.js``;
    ``_config.yml`` points Sphinx's ``mathjax_path`` at it.
    """
    import importlib.util

    spec = importlib.util.find_spec("mathjax")
    script = Path(spec.origin).parent / "static" / "mathjax" / "es5" / "tex-svg.js" if spec and spec.origin else None
    if script is None or not script.is_file():
        raise BookBuildError(
            "MathJax is missing (the package django-static-mathjax provides it offline); "
            "run `make setup` or `pip install -c constraints.txt -e '.[dev]'`."
        )
    _copy(script, folder / "tex-svg.js")


#: Tags with which myst-nb leaves a cell's outputs off the page.
HIDDEN_OUTPUT_TAGS = frozenset({"remove-cell", "remove_cell", "remove-output", "remove_output"})

#: What a chapter writes on a figure cell's ``# %%`` line: myst-nb's cell-level image options.
ALT_TEXT_HEADER = '# %% mystnb={"image": {"alt": "What is plotted, its axes, what to look for."}}'


def figures_without_alt(cells: Sequence[Any]) -> list[int]:
    """Indexes of the code ``cells`` (of an executed notebook) that put an image on the page without alt text.

    myst-nb takes an image's alt text only from its cell's metadata, ``mystnb: {image: {alt: ...}}`` (a jupytext
    chapter writes it on the cell's header line, :data:`ALT_TEXT_HEADER`; the same text serves every image of the
    cell; output metadata sets only width and height); without it the HTML's alt is the image's file name.

    >>> import nbformat
    >>> figure = nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo="})
    >>> alt = {"mystnb": {"image": {"alt": "Bars of the bias of each subject."}}}
    >>> figures_without_alt([nbformat.v4.new_code_cell("plot()", outputs=[figure]),
    ...                      nbformat.v4.new_code_cell("plot()", outputs=[figure], metadata=alt),
    ...                      nbformat.v4.new_code_cell("plot()", outputs=[figure],
    ...                                                metadata={"tags": ["remove-output"]}),
    ...                      nbformat.v4.new_code_cell("1 + 1", outputs=[]),
    ...                      nbformat.v4.new_code_cell("plot()", outputs=[figure],
    ...                                                metadata={"mystnb": {"image": {"alt": "  "}}})])
    [0, 4]
    """
    missing = []
    for i, cell in enumerate(cells):
        meta = cell.get("metadata", {})
        if cell.get("cell_type") != "code" or HIDDEN_OUTPUT_TAGS & set(meta.get("tags", [])):
            continue
        if not any(k.startswith("image/") for out in cell.get("outputs", []) for k in out.get("data", {})):
            continue
        alt = ((meta.get("mystnb") or {}).get("image") or {}).get("alt")
        if not (isinstance(alt, str) and alt.strip()):
            missing.append(i)
    return missing


def _check_alt_text(notebooks: Sequence[Chapter], executed: Mapping[str, Path], root: Path) -> None:
    """One :class:`StereoprobeError` naming every chapter cell whose figure has no alt text
    (:func:`figures_without_alt`), before Sphinx writes pages whose images say only their file name."""
    import nbformat

    found = []
    for chapter in notebooks:
        cells = [c for c in nbformat.read(executed[chapter.stem], as_version=4).cells if not is_injected(c)]
        lines = cell_lines(chapter.source, len(cells))  # the source's cells: the injected one left out
        for i in figures_without_alt(cells):
            first = next((ln.strip() for ln in cells[i].source.splitlines() if ln.strip()), "")
            found.append(f"{rel_path(chapter.source, root)} cell {i + 1}" + (f" (line {lines[i]})" if lines[i] else "")
                         + f" `{first[:60]}`")
    if found:
        what = f"{len(found)} figures have" if len(found) > 1 else "A figure has"
        raise StereoprobeError(f"{what} no alt text: {'; '.join(found)}. Describe each figure on its cell's header "
                               f"line, `{ALT_TEXT_HEADER}` (myst-nb would write the image's file name "
                               f"instead), and build without --no-execute: the executed copies take it without "
                               f"executing again.")


#: The launch services of a book whose repository is known (sphinx-book-theme builds each page's links from them).
LAUNCH_URLS = {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}


def _write_if_changed(data: bytes, dst: Path) -> bool:
    """:func:`_copy` for generated content: ``dst`` keeps its modification time when it holds ``data`` already."""
    if dst.is_file() and dst.stat().st_size == len(data) and dst.read_bytes() == data:
        return False
    with atomic_file(dst, "wb") as fh:  # creates the folders
        fh.write(data)
    return True


def _config_with_repository(root: Path, repo: Repository) -> bytes:
    """``_config.yml`` with the repository's addresses (``repository.url``, ``html.baseurl``), its repository,
    issue and download buttons on and Binder/Colab launch buttons. ``repository.branch`` and ``path_to_book`` come
    from ``_config.yml`` (``gh-pages`` and ``_sources``: the published HTML carries each page's notebook at
    ``_sources/<page>.ipynb``, where the theme's launch links point)."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    config["repository"] = {**(config.get("repository") or {}), "url": repo.url}
    config["html"] = {**(config.get("html") or {}), "baseurl": repo.pages_url, "use_repository_button": True,
                      "use_issues_button": True, "use_download_button": True}
    config["launch_buttons"] = {**(config.get("launch_buttons") or {}), **LAUNCH_URLS}
    text = yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=120)
    return f"# _config.yml staged by stereoprobe.book for the GitHub repository {repo.slug}\n{text}".encode()


def _notebook_with_install_cell(path: Path, repo: Repository) -> bytes:
    """The executed notebook with a first code cell, tagged ``remove-cell`` (not on the page, never executed: the
    notebook is executed before it is staged), that installs the package from ``repo`` where the notebook is launched
    (Binder, Colab)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = {"cell_type": "code", "execution_count": None, "metadata": {"tags": ["remove-cell"]}, "outputs": [],
            "source": [repo.install_command]}
    if (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5):  # cell ids since nbformat 4.5
        cell["id"] = "stereoprobe-install"
    nb["cells"].insert(0, cell)
    return (json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()  # as nbformat writes


#: Staged files Sphinx reads as pages; a change to any other staged file (config, toc, CSS, bibliography) rebuilds
#: every page, since Sphinx copies static files only when some page is out of date.
PAGE_SUFFIXES = (".ipynb", ".md", ".rst")


def _stage(root: Path, staging: Path, executed: Mapping[str, Path]) -> None:
    """Bring ``staging`` to config, toc, book/ and the executed notebooks (same layout), copying only what
    changed and removing what is gone, so that Sphinx's own cache (``staging/_build``) rebuilds only the
    pages that changed. When the book's GitHub repository is known (:func:`stereoprobe.book.publish.repository`), the
    staged config and notebooks carry it (:func:`_config_with_repository`, :func:`_notebook_with_install_cell`);
    otherwise they are the sources as they are."""
    repo = repository(root)
    wanted: dict[Path, Path | bytes] = {}
    for name in ("_config.yml", "_toc.yml"):
        wanted[staging / name] = root / name
    if repo is not None:
        wanted[staging / "_config.yml"] = _config_with_repository(root, repo)
    if (root / "book").is_dir():
        for f in (root / "book").rglob("*"):
            if f.is_file() and not {"_build", ".ipynb_checkpoints", "__pycache__"} & set(f.parts):
                wanted[staging / f.relative_to(root)] = f
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    bibs = config.get("bibtex_bibfiles") or []
    for bib in [bibs] if isinstance(bibs, str) else bibs:
        if (root / bib).is_file():
            wanted.setdefault(staging / bib, root / bib)
    for chapter in chapters(root):
        if chapter.kind == "notebook":
            notebook = executed[chapter.stem]
            wanted[staging / Path(chapter.file).with_suffix(".ipynb")] = (
                notebook if repo is None else _notebook_with_install_cell(notebook, repo))
        else:
            wanted.setdefault(staging / chapter.source.relative_to(root), chapter.source)
    staging.mkdir(parents=True, exist_ok=True)
    keep = {staging / "_build", staging / "_static" / "mathjax"}
    for f in sorted(staging.rglob("*"), reverse=True):  # files first, then the folders they leave empty
        if any(k == f or k in f.parents for k in keep) or f in wanted:
            continue
        if f.is_file() or f.is_symlink():
            f.unlink()
        elif f.is_dir() and not any(f.iterdir()) and not any(f in w.parents for w in wanted):
            f.rmdir()
    changed = [dst for dst, src in wanted.items() if (_copy if isinstance(src, Path) else _write_if_changed)(src, dst)]
    if any(dst.suffix not in PAGE_SUFFIXES for dst in changed):
        shutil.rmtree(staging / "_build", ignore_errors=True)
    _stage_mathjax(staging / "_static" / "mathjax")


def build_book(
    profile: str = "cpu",
    *,
    only: Sequence[str] | None = None,
    build_dir: os.PathLike[str] | str = Path("_build"),
    timeout: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    execute: bool = True,
    progress: bool = True,
    root: Path | None = None,
    force: bool = False,
) -> Path:
    """Execute the notebooks (:func:`run_notebooks`), stage the sources, build the HTML.

    Layout under ``build_dir`` (default ``_build`` at the repository root):
    ``executed/`` (executed notebooks), ``src/`` (staged book sources: _config.yml,
    _toc.yml, book/, notebooks/<stem>.ipynb), ``html/`` (the book), ``jupyter-book.log``.

    Chapters whose executed copy has the current :func:`execution_key` are not executed again, only given
    the current prose (``force=True`` executes them anyway). ``only`` considers just those notebooks and
    reuses the executed copies of the others (which must exist); ``execute=False`` reuses every executed
    copy as it is. A chapter figure without alt text stops the build before Sphinx runs, with one
    :class:`StereoprobeError` naming its notebook and cell (:func:`figures_without_alt`). The staged sources keep
    Sphinx's cache, so only changed pages are rebuilt. The build runs ``jupyter-book build -W -n --keep-going``:
    any Sphinx warning fails it with a :class:`BookBuildError` quoting the first warnings (the full log is
    ``build_dir/jupyter-book.log``); a failed build leaves the previous ``html/`` in place.

    Returns the HTML folder (``build_dir/html``; open ``index.html``).
    """
    root = book_root(root)
    build = resolve_dir(build_dir, root)
    executed_dir = build / "executed"
    name, _ = load_profile(profile, root)
    notebooks = [c for c in chapters(root) if c.kind == "notebook"]
    to_run = select_chapters(notebooks, only) if execute else []
    executed = {c.stem: executed_dir / f"{c.stem}.ipynb" for c in notebooks}
    missing = [c.stem for c in notebooks if c not in to_run and not executed[c.stem].is_file()]
    if missing:  # checked before executing anything
        raise StereoprobeError(f"No executed copy of {', '.join(missing)} in {rel_path(executed_dir, root)}: "
                               f"build once without --only/--no-execute to execute every chapter.")
    if execute:
        run_notebooks(profile, only=only, out_dir=executed_dir, timeout=timeout, overrides=overrides,
                      progress=progress, root=root, force=force)
    for stem, path in executed.items():
        with contextlib.suppress(Exception):
            made_with = json.loads(path.read_text(encoding="utf-8"))["metadata"]["stereoprobe"]["profile"]
            if made_with != name:
                say(f"note: {stem} was executed with profile {made_with!r}, not {name!r}", progress)

    _check_alt_text(notebooks, executed, root)

    staging = build / "src"
    _stage(root, staging, executed)
    cmd = [*_jupyter_book_command(), "build", str(staging), "--path-output", str(staging),
           "--builder", "html", "-W", "-n", "--keep-going"]
    log_path = build / "jupyter-book.log"
    say(f"building the book: jupyter-book build {rel_path(staging, root)} -W -n --keep-going", progress)
    start = time.perf_counter()
    lines: list[str] = []
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          encoding="utf-8", errors="replace", cwd=str(staging), env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if progress:
                sys.stderr.write(line)
        rc = proc.wait()
    with atomic_file(log_path) as fh:
        fh.write("".join(lines))
    # Report warnings against the repository's paths, not the staged copies.
    warnings = [strip_ansi(ln).strip().replace(str(staging) + os.sep, "")
                for ln in lines if re.search(r"WARNING|ERROR|CRITICAL", ln)]
    if rc != 0:
        first = "; ".join(warnings[:3]) or strip_ansi("".join(lines[-5:])).strip()
        raise BookBuildError(f"jupyter-book build failed (exit {rc}, {len(warnings)} warnings/errors, "
                             f"log {rel_path(log_path, root)}): {first}")
    built = staging / "_build" / "html"
    if not (built / "index.html").is_file():
        raise BookBuildError(f"jupyter-book reported success but {rel_path(built, root)}/index.html is missing; "
                             f"see {rel_path(log_path, root)}.")
    html = build / "html"
    if html.exists():
        shutil.rmtree(html)
    shutil.copytree(built, html)  # the staged copy stays: Sphinx's cache of the next build
    say(f"book built in {time.perf_counter() - start:.1f} s: {rel_path(html / 'index.html', root)}", progress)
    return html
