"""Executing the chapter notebooks with papermill, and the execution cache: a chapter whose execution key
(:func:`execution_key`) is unchanged is not executed again, only given the current prose.
"""


from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


from stereoprobe import paths
from stereoprobe.atomic import atomic_file, build_lock
from stereoprobe.errors import StereoprobeError
from stereoprobe.options import WAIT_POLICY
from stereoprobe.book.heads import check_models
from stereoprobe.book.params import (KERNEL_NAME, PORTABLE_KERNELSPEC, Chapter, NotebookExecutionError, parameters_cell_index,
                                     read_notebook, rel_path, book_root, chapters, load_profile, notebook_parameters,
                                     resolve_parameters)


# --------------------------------------------------------------------------- execution


@contextlib.contextmanager
def _venv_kernel() -> Iterator[str]:
    """Register a kernelspec for ``sys.executable`` in a temporary JUPYTER_PATH entry.

    JUPYTER_PATH directories take precedence over user and system kernel directories, so a
    stale user-level ``python3`` kernel can never hijack execution, and nothing needs to be
    installed with ``ipykernel install``.
    """
    try:
        from ipykernel.kernelspec import get_kernel_dict
    except ImportError:
        raise StereoprobeError(f"ipykernel is not installed for {sys.executable}: "
                               f"run `pip install -e '.[dev]'` in this environment.") from None
    with tempfile.TemporaryDirectory(prefix="stereoprobe-kernel-") as tmp:
        spec_dir = Path(tmp) / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        # ipykernel's own spec (it declares e.g. CurveZMQ support), pinned to this interpreter.
        spec = dict(get_kernel_dict())
        spec["argv"] = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec["display_name"] = f"Python 3 ({sys.prefix})"
        # No progress bars in the executed copies (the pages drop stderr, but readers download the .ipynb):
        # the package's own bars, every tqdm bar of the libraries (transformers' "Loading weights"), and the
        # warning tqdm.auto gives at import in a kernel without ipywidgets.
        spec["env"] = {"STEREOPROBE_PROGRESS": "0", "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore:IProgress not found",
                       # torch's threads sleep at barriers (stereoprobe.options.WAIT_POLICY: measured, the best
                       # worst case alone and beside a busy neighbour) unless the user chose a policy
                       "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", WAIT_POLICY)}
        (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = tmp if not old else tmp + os.pathsep + old
        try:
            yield KERNEL_NAME
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


def _kernel_manager_config() -> dict[str, Any]:
    """Engine kwargs for nbclient: CurveZMQ-encrypted kernel transport where pyzmq supports it
    (jupyter_client >= 8.7 defaults to plain TCP, which ipykernel >= 7 warns about)."""
    try:
        import zmq
        from jupyter_client.manager import KernelManager
        from traitlets.config import Config
    except ImportError:  # pragma: no cover - all are dependencies of nbclient
        return {}
    if not zmq.has("curve") or not KernelManager.class_traits().get("transport_encryption"):
        return {}
    return {"config": Config({"KernelManager": {"transport_encryption": "auto"}})}


def cell_lines(path: Path, n_cells: int) -> list[int | None]:
    """Best-effort 1-based line numbers of each cell's ``# %%`` marker in a py:percent file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    markers = [i + 1 for i, line in enumerate(lines) if re.match(r"^# %%", line)]
    if len(markers) == n_cells:
        return list(markers)
    if len(markers) == n_cells - 1:
        return [None, *markers]
    return [None] * n_cells


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def say(message: str, progress: bool) -> None:
    if progress:
        print(f"[stereoprobe.book] {message}", file=sys.stderr, flush=True)


def select_chapters(notebooks: list[Chapter], only: Sequence[str] | None) -> list[Chapter]:
    if only is None:
        return notebooks
    if isinstance(only, str):
        only = [only]
    by_key: dict[str, Chapter] = {}
    for c in notebooks:
        for key in (c.stem, c.file, c.file + ".py", c.source.name):
            by_key[key] = c
    picked: list[Chapter] = []
    for name in only:
        key = name[:-6] if name.endswith(".ipynb") else name
        chapter = by_key.get(key) or by_key.get(Path(key).name) or by_key.get(Path(key).stem)
        if chapter is None:
            raise StereoprobeError(f"{name!r} is not a chapter notebook in _toc.yml: "
                                   f"choose from {', '.join(c.stem for c in notebooks)}.")
        if chapter not in picked:
            picked.append(chapter)
    return [c for c in notebooks if c in picked]  # toc order


def resolve_dir(path: os.PathLike[str] | str, root: Path) -> Path:
    path = Path(path)
    return path if path.is_absolute() else root / path


#: Libraries whose version can change a chapter's numbers; they enter every execution key.
KEYED_LIBRARIES = ("torch", "transformers", "tokenizers", "numpy", "pandas", "scipy", "scikit-learn", "statsmodels",
                   "matplotlib", "seaborn", "nltk", "peft", "safetensors")


@functools.lru_cache(maxsize=1)
def package_digest() -> str:
    """SHA-256 over every file of the installed ``stereoprobe`` package (code and data: word lists, the zoo's
    parts, the committed lab models), so a chapter re-executes when anything it can read from the package
    changes. About 30 MB, hashed once per process."""
    import stereoprobe

    top = Path(stereoprobe.__file__).parent
    h = hashlib.sha256()
    for f in sorted(top.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(f"{f.relative_to(top).as_posix()}\0{paths.sha256_file(f)}\n".encode())
    return h.hexdigest()


def _library_versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in KEYED_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _local_models(value: Any, base: Path) -> dict[str, list[Any]]:
    """Name, size and modification time of the files of every parameter value that is a local file or folder
    (a user's model folder): a retrained folder gets a new key. Hub ids and ``zoo:``/``lab:`` names are
    covered by the library versions and :func:`package_digest`."""
    found: dict[str, list[Any]] = {}
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if not isinstance(item, str) or ":" in item.split("/")[0]:
            continue
        path = (base / item).expanduser() if not Path(item).expanduser().is_absolute() else Path(item).expanduser()
        if path.exists():
            files = sorted(path.rglob("*")) if path.is_dir() else [path]
            found[item] = [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files if f.is_file()]
    return found


def execution_key(nb: Any, params: Mapping[str, Any], base: Path) -> str:
    """The hash that decides whether a chapter's executed copy is still current.

    It covers what can change the outputs: the code cells (source and tags, in order), the parameters papermill
    injects, the package's version and files (:func:`package_digest`), the versions of :data:`KEYED_LIBRARIES`,
    and the files of local model folders named in the parameters. Markdown cells are left out: prose edits keep
    the key; so is the metadata of code cells other than tags (a figure's alt text), which :func:`reuse_execution`
    takes from the source. What it cannot see (a hub model updated under the same name) needs ``--force``.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Prose."), nbformat.v4.new_code_cell("1 + 1")])
    >>> key = execution_key(nb, {"seed": 0}, Path("."))
    >>> nb.cells[0].source = "Other prose."
    >>> execution_key(nb, {"seed": 0}, Path(".")) == key, execution_key(nb, {"seed": 1}, Path(".")) == key
    (True, False)
    """
    from stereoprobe import __version__

    code = [[c.source, sorted(c.get("metadata", {}).get("tags", []))] for c in nb.cells if c.cell_type == "code"]
    local = {k: _local_models(v, base) for k, v in params.items()}
    blob = json.dumps({"code": code, "parameters": params, "version": __version__, "package": package_digest(),
                       "libraries": _library_versions(), "local": {k: v for k, v in local.items() if v}},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def is_injected(cell: Any) -> bool:
    return "injected-parameters" in cell.get("metadata", {}).get("tags", [])


#: Code-cell metadata an executed copy keeps when it is reused (:func:`reuse_execution`): papermill's timings and
#: status, and the tags (part of the execution key, so the source's, but papermill writes ``[]`` for none).
EXECUTION_METADATA = ("papermill", "execution", "tags")


def _cell_state(cells: Sequence[Any]) -> list[str]:
    return [json.dumps([c.source, c.get("metadata", {})], sort_keys=True, default=str) for c in cells]


def reuse_execution(nb: Any, key: str, out_path: Path) -> bool:
    """Refresh the executed copy ``out_path`` from the source notebook ``nb`` if its execution key is ``key``:
    its code cells keep their outputs and take the metadata of ``nb``'s (e.g. a figure's alt text), plus what
    :data:`EXECUTION_METADATA` the execution wrote; its markdown cells become those of ``nb`` (added, removed or
    edited prose included). False when there is no such copy (the chapter must be executed)."""
    import nbformat

    try:
        executed = nbformat.read(out_path, as_version=4)
    except Exception:  # noqa: BLE001 - missing or unreadable: execute
        return False
    if executed.metadata.get("stereoprobe", {}).get("execution_key") != key:
        return False
    before = _cell_state(executed.cells)
    code = iter([c for c in executed.cells if c.cell_type == "code" and not is_injected(c)])
    injected = [c for c in executed.cells if is_injected(c)]
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            done = next(code)
            ran = {k: v for k, v in done.metadata.items() if k in EXECUTION_METADATA}
            done.metadata = nbformat.from_dict({**cell.get("metadata", {}), **ran})
            cells.append(done)
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                cells.extend(injected)
        else:
            cells.append(cell)
    if _cell_state(cells) != before:
        executed.cells = cells
        with atomic_file(out_path) as fh:
            nbformat.write(executed, fh)
    return True


def show_parameters_used(nb: Any, params: Mapping[str, Any], profile_name: str, source: str) -> None:
    """Make the executed copy show one parameters block, with the values it ran with.

    papermill adds an ``injected-parameters`` cell after the notebook's ``parameters`` cell, so a page would show
    the defaults and then the profile's values. Here each injected value replaces its default in the
    ``parameters`` cell (its comment kept; the cell keeps its tag, so the downloaded notebook reruns the page as
    built) and the injected cell is tagged ``remove-cell``. When a value cannot be placed (a parameter on several
    lines) both cells stay as papermill left them.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[
    ...     nbformat.v4.new_code_cell("sample = 8000  # examples\\nseed = 0", metadata={"tags": ["parameters"]}),
    ...     nbformat.v4.new_code_cell("# Parameters\\nsample = 200\\n", metadata={"tags": ["injected-parameters"]})])
    >>> show_parameters_used(nb, {"sample": 200}, "smoke", "notebooks/x.py")
    >>> print(nb.cells[0].source)
    # Parameters of this page (profile smoke; the defaults are in notebooks/x.py)
    sample = 200  # examples
    seed = 0
    >>> nb.cells[1].metadata["tags"]
    ['injected-parameters', 'remove-cell']
    """
    from papermill.translators import papermill_translators

    idx = parameters_cell_index(nb)
    injected = [c for c in nb.cells if is_injected(c)]
    if idx < 0 or not injected:
        return
    translator = papermill_translators.find_translator("python3", "python")
    remaining = dict(params)
    lines = []
    for line in nb.cells[idx].source.splitlines():
        m = re.match(r"^(\w+)(\s*=\s*)(.*?)(\s+#.*)?$", line)
        if m and m.group(1) in remaining:
            line = f"{m.group(1)}{m.group(2)}{translator.translate(remaining.pop(m.group(1)))}{m.group(4) or ''}"
        lines.append(line)
    if remaining:
        return
    nb.cells[idx].source = "\n".join([f"# Parameters of this page (profile {profile_name}; the defaults are in "
                                      f"{source})", *lines])
    for cell in injected:
        cell.metadata["tags"] = [*cell.metadata.get("tags", []), "remove-cell"]


def _execute_one(
    chapter: Chapter,
    nb: Any,
    params: dict[str, Any],
    profile_name: str,
    key: str,
    out_path: Path,
    kernel_name: str,
    timeout: float | None,
    start_timeout: float,
    progress: bool,
    root: Path,
) -> None:
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    rel = rel_path(chapter.source, root)
    n_source_cells = len(nb.cells)
    param_idx = parameters_cell_index(nb)
    try:
        executed = papermill.execute_notebook(
            nb,
            None,  # nothing is written while running; the result is written atomically below
            parameters=params,
            kernel_name=kernel_name,
            language="python",
            progress_bar=progress,
            start_timeout=int(start_timeout),
            execution_timeout=timeout,
            cwd=str(chapter.source.parent),
            **_kernel_manager_config(),
        )
    except PapermillExecutionError as exc:
        # papermill inserts an "injected-parameters" cell right after the parameters cell.
        src_idx = exc.cell_index
        if params and param_idx >= 0 and exc.cell_index > param_idx:
            src_idx -= 1
        line = cell_lines(chapter.source, n_source_cells)[src_idx] if 0 <= src_idx < n_source_cells else None
        first = next((ln.strip() for ln in str(exc.source).splitlines() if ln.strip()), "")
        where = f"cell {src_idx + 1}" + (f" (line {line})" if line else "") + f", In [{exc.exec_count}]"
        message = (f"Notebook {rel} failed in {where} `{first[:80]}` with {exc.ename}: "
                   f"{strip_ansi(str(exc.evalue)).strip()[:300]}")
        details = strip_ansi("\n".join(exc.traceback or []))
        raise NotebookExecutionError(message, "\n".join(details.splitlines()[-25:])) from None
    except StereoprobeError:
        raise
    except Exception as exc:  # noqa: BLE001 - kernel died, cell timeout, kernel failed to start, ...
        kind = type(exc).__name__
        hint = f" (per-cell timeout {timeout} s; raise --timeout)" if "Timeout" in kind else ""
        raise NotebookExecutionError(f"Notebook {rel} could not be executed{hint}: {kind}: "
                                     f"{strip_ansi(str(exc)).strip().splitlines()[0] if str(exc).strip() else ''}",
                                     strip_ansi(str(exc))) from None

    # Clean, portable metadata: never embed the input notebook (papermill stores the
    # NotebookNode it was given as "input_path") or this machine's kernel name.
    executed.metadata["kernelspec"] = dict(PORTABLE_KERNELSPEC)
    pm = executed.metadata.setdefault("papermill", {})
    pm["input_path"] = rel
    pm["output_path"] = rel_path(out_path, root)
    executed.metadata["stereoprobe"] = {"profile": profile_name, "parameters": params, "source": rel,
                                        "execution_key": key}
    show_parameters_used(executed, params, profile_name, rel)

    with atomic_file(out_path) as fh:
        nbformat.write(executed, fh)


#: A worked solution: a MyST ``{solution}`` directive (in a chapter's markdown) and the Python blocks inside it.
_SOLUTION = re.compile(r"^:::\{solution\}\s+(\S+)\s*\n(.*?)^:::\s*$", re.MULTILINE | re.DOTALL)
_PYTHON_BLOCK = re.compile(r"^```python\s*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def solution_code(nb: Any) -> list[tuple[str, str]]:
    r"""(label, code) of every ```` ```python ```` block inside a ``{solution}`` directive of ``nb``'s markdown cells,
    in order: the code a reader of a worked solution is told to run after the chapter.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
    ...     ":::{solution} ex-1\n:class: dropdown\n\nRun\n\n```python\nprint(1)\n```\n:::")])
    >>> solution_code(nb)
    [('ex-1', 'print(1)\n')]
    """
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for label, body in _SOLUTION.findall(cell.source):
                found += [(label, code) for code in _PYTHON_BLOCK.findall(body)]
    return found


def _append_solutions(nb: Any, edits: Mapping[str, Sequence[tuple[str, str]]]) -> None:
    """Append ``nb``'s worked solutions (:func:`solution_code`, edited by ``edits``) as hidden code cells."""
    import nbformat

    for label, code in solution_code(nb):
        for old, new in edits.get(label, ()):
            if old not in code:
                raise StereoprobeError(f"The edit {old!r} of solution {label} matches nothing in its code; update "
                                       "the edit to the solution's current code.")
            code = code.replace(old, new)
        nb.cells.append(nbformat.v4.new_code_cell(f"# the worked solution {label}\n{code}",
                                                  metadata={"tags": ["remove-cell", "solution"]}))


def run_notebooks(
    profile: str,
    only: Sequence[str] | None = None,
    out_dir: os.PathLike[str] | str = Path("_build/executed"),
    timeout: float | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    keep_going: bool = False,
    progress: bool = True,
    start_timeout: float = 120,
    root: Path | None = None,
    force: bool = False,
    solutions: Mapping[str, Sequence[tuple[str, str]]] | bool = False,
) -> list[Path]:
    """Execute the chapter notebooks of ``_toc.yml`` with a parameter profile.

    Parameters
    ----------
    profile : profile name (``smoke``, ``cpu``, ``gpu``: ``params/<name>.yaml``) or a path to
        a YAML file of the same shape.
    only : notebook names (stems such as ``"reasoning_errors"``, or toc paths) to execute;
        ``None`` executes every chapter notebook, in toc order.
    out_dir : where the executed ``<stem>.ipynb`` copies go (relative paths are taken from
        the repository root). Each is written atomically: a failing notebook leaves the
        previous copy (if any) untouched and no partial file.
    timeout : per-cell execution timeout in seconds (``None``: no limit).
    overrides : profile-shaped mapping applied on top of the profile (``--set``).
    keep_going : run the remaining notebooks after a failure (the error is still raised
        at the end, naming every failed notebook).
    progress : print one line per notebook and papermill's per-cell progress bar.
    force : execute even the chapters whose executed copy has the current :func:`execution_key` (by default
        those are only refreshed with the current prose, :func:`reuse_execution`).
    solutions : also run each chapter's worked solutions (:func:`solution_code`) after it, in its kernel, as
        cells tagged ``remove-cell`` (the page never shows them); a mapping ``{solution label: [(old, new), …]}``
        edits their code first (the tests run them at the smoke profile's sizes). A failing solution fails the
        chapter, naming its label.

    Returns the paths of the executed notebooks, in toc order.

    Raises :class:`StereoprobeError` for an unknown profile, unknown keys or invalid values,
    and :class:`NotebookExecutionError` naming the notebook and failing cell.
    """
    root = book_root(root)
    name, data = load_profile(profile, root)
    notebooks = [c for c in chapters(root) if c.kind == "notebook"]
    loaded = {c.stem: read_notebook(c.source) for c in notebooks}
    declared = {stem: notebook_parameters(nb) for stem, nb in loaded.items()}
    if solutions:
        edits = solutions if isinstance(solutions, Mapping) else {}
        for nb in loaded.values():
            _append_solutions(nb, edits)
    for c in notebooks:
        if parameters_cell_index(loaded[c.stem]) < 0:
            raise StereoprobeError(f"Notebook {rel_path(c.source, root)} has no cell tagged 'parameters': "
                                   f'tag its parameters cell with `# %% tags=["parameters"]`.')
    resolved = resolve_parameters(name, data, declared, overrides)
    selected = select_chapters(notebooks, only)
    # a model the chapters cannot use (wrong head, no NLI labels, no chat template) stops here, before any chapter
    check_models(name, data, overrides, {c.stem: (resolved[c.stem], c.source.parent) for c in selected})
    out = resolve_dir(out_dir, root)

    written: list[Path] = []
    failures: list[NotebookExecutionError] = []
    with _venv_kernel() as kernel_name:
        for i, chapter in enumerate(selected, 1):
            params = resolved[chapter.stem]
            target = out / f"{chapter.stem}.ipynb"
            key = execution_key(loaded[chapter.stem], params, chapter.source.parent)
            if not force and reuse_execution(loaded[chapter.stem], key, target):
                say(f"[{i}/{len(selected)}] {rel_path(chapter.source, root)}: code, parameters, package and libraries "
                     f"unchanged, reusing {rel_path(target, root)} with the current prose", progress)
                written.append(target)
                continue
            shown = ", ".join(f"{k}={v!r}" for k, v in params.items() if k != "profile")
            say(f"[{i}/{len(selected)}] {rel_path(chapter.source, root)} (profile {name}): {shown}", progress)
            start = time.perf_counter()
            try:
                _execute_one(chapter, loaded[chapter.stem], params, name, key, target, kernel_name,
                             timeout, start_timeout, progress, root)
            except NotebookExecutionError as exc:
                say(f"[{i}/{len(selected)}] FAILED after {time.perf_counter() - start:.1f} s: {exc}", progress)
                if not keep_going:
                    raise
                failures.append(exc)
                continue
            seconds = time.perf_counter() - start
            say(f"[{i}/{len(selected)}] wrote {rel_path(target, root)} in {seconds:.1f} s", progress)
            record_timing(out.parent, name, chapter.stem, seconds, params)
            written.append(target)
    if failures:
        if len(failures) == 1:
            raise failures[0]
        raise NotebookExecutionError(f"{len(failures)} notebooks failed: " + "; ".join(str(f) for f in failures),
                                     "\n\n".join(f.details for f in failures))
    return written


def record_timing(out_dir: Path, profile: str, stem: str, seconds: float, params: Mapping[str, Any]) -> Path:
    """Add one chapter's wall time to ``<out_dir>/timings-<profile>.json`` (atomically; other chapters kept);
    the runner passes the build folder (``_build/timings-cpu.json``), beside the executed notebooks.

    The file records, per chapter, the seconds, the date, the device parameter and the machine (GPU name or
    CPU count): the numbers behind the book's "Rerunning at scale" page.

    >>> import tempfile
    >>> path = record_timing(Path(tempfile.mkdtemp()), "cpu", "nationality", 12.345, {"device": "cpu"})
    >>> json.loads(path.read_text())["chapters"]["nationality"]["seconds"]
    12.3
    """
    path = Path(out_dir) / f"timings-{profile}.json"
    with build_lock(path):  # two builds at once: each keeps the other's chapters
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        chapters_done = data.get("chapters") if isinstance(data.get("chapters"), dict) else {}
        chapters_done[stem] = {"seconds": round(seconds, 1), "date": time.strftime("%Y-%m-%d %H:%M"),
                               "device": params.get("device"), "machine": _machine()}
        with atomic_file(path) as fh:
            json.dump({"profile": profile, "chapters": chapters_done}, fh, indent=1)
    return path


def _machine() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return f"{torch.cuda.device_count()}× {torch.cuda.get_device_name(0)}"
    except Exception:  # noqa: BLE001 - timing is informative only
        pass
    return f"CPU, {os.cpu_count()} cores"


