"""Run the chapter notebooks with papermill, then build the HTML book with Jupyter Book.

The chapters come from ``_toc.yml`` (the single source of truth): every toc entry that is a
jupytext notebook (``notebooks/<stem>.py``, py:percent, with a cell tagged ``parameters``) is
read in memory with jupytext, parameterized from a profile (``params/<name>.yaml``) and
executed with papermill on a kernel that is *this* interpreter (``sys.executable``), so
nothing has to be installed at user level. Executed copies are written atomically to
``_build/executed/<stem>.ipynb``, with the chapter's *execution key* (:func:`execution_key`: its code
cells, its parameters, the package's files and version, the library versions, the local models it
names); a later build reuses an executed copy whose key is unchanged and only puts the current prose
(markdown cells) into it, so a prose edit never re-executes a chapter. :func:`build_book` then stages the
book sources into
``_build/src`` and runs ``jupyter-book build -W -n --keep-going`` from the same environment;
the HTML ends up in ``_build/html``. Sphinx never executes a notebook
(``execute_notebooks: "off"`` in ``_config.yml``).

Profiles: the top-level keys of ``params/<name>.yaml`` are parameters shared by all
notebooks; an optional ``notebooks:`` mapping ``{stem: {parameter: value}}`` overrides them
per notebook. Each notebook receives only the parameters its ``parameters`` cell declares,
plus ``profile`` (the profile name) when it declares it.

The sources of the book are in a clone of the repository, not in the installed package: every function
takes ``root``, the clone's root folder, by default the one :func:`stereoprobe.paths.checkout_root` finds.

Command line (``stereoprobe book``, the same command and options; ``--help`` lists them)::

    python -m stereoprobe.book --profile cpu                  # what `make book` runs
    python -m stereoprobe.book --profile gpu --set models='[my/qa-model]'
    python -m stereoprobe.book --profile smoke --only reasoning_errors --execute-only
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stereoprobe import paths
from stereoprobe.atomic import atomic_file, build_lock
from stereoprobe.choices import MODES, PRECISIONS, is_device
from stereoprobe.errors import StereoprobeError
from stereoprobe.publish import Repository, repository

__all__ = [
    "BookBuildError",
    "Chapter",
    "NotebookExecutionError",
    "available_profiles",
    "book_root",
    "build_book",
    "chapters",
    "figures_without_alt",
    "load_profile",
    "notebook_parameters",
    "overrides_from_assignments",
    "resolve_parameters",
    "run_notebooks",
]

#: Kernel name registered (in a temporary JUPYTER_PATH entry) for the running interpreter.
KERNEL_NAME = "stereoprobe-python"

#: The kernelspec written into executed notebooks (portable: any Python 3 kernel).
PORTABLE_KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}



class BookBuildError(StereoprobeError):
    """``jupyter-book build`` failed (with ``-W``, any Sphinx warning fails the build)."""


class NotebookExecutionError(StereoprobeError):
    """A chapter notebook raised while executing (or its kernel died or timed out).

    ``str(error)`` is one sentence naming the notebook and the failing cell; ``details``
    holds the tail of the traceback.
    """

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


# --------------------------------------------------------------------------- parameters


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_models(value: Any) -> Any:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(m, str) and m for m in value):
        raise ValueError("a non-empty list of model names (HF hub ids, local folders or zoo/lab names)")
    return value


def _check_sample(value: Any) -> Any:
    if value is None or (_is_int(value) and value >= 1):
        return value
    if isinstance(value, float) and 0.0 < value <= 1.0:
        return value
    raise ValueError("null (full dataset), a fraction in (0, 1] or a positive integer")


def _check_choice(choices: tuple[str, ...]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value in choices:
            return value
        raise ValueError("one of " + ", ".join(repr(c) for c in choices))

    return check


def _check_device(value: Any) -> Any:
    if is_device(value):
        return value
    raise ValueError("a device: 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'")


def _check_int(minimum: int | None, allow_none: bool = False) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if (_is_int(value) and (minimum is None or value >= minimum)) or (allow_none and value is None):
            return value
        text = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise ValueError(text + (" or null" if allow_none else ""))

    return check


def _check_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    raise ValueError("true or false")


#: The shared notebook parameters (fixed names across chapters) and their validators.
KNOWN_PARAMETERS: dict[str, Callable[[Any], Any]] = {
    "models": _check_models,
    "sample": _check_sample,
    "mode": _check_choice(MODES),
    "batch_tokens": _check_int(1, allow_none=True),  # null: the default of the device
    "device": _check_device,
    "precision": _check_choice(PRECISIONS),
    "seed": _check_int(None),
    "n_boot": _check_int(0),
    "smoke_models": _check_bool,
}

#: Keys a profile may not set: ``profile`` is injected, ``notebooks`` holds the overrides.
_RESERVED = ("profile", "notebooks")


def _parse_assignment(text: str) -> tuple[str, Any]:
    """Parse a ``--set`` assignment ``KEY=VALUE``; VALUE is read as YAML.

    >>> _parse_assignment("models=[lab:qa-biased, my/model]")
    ('models', ['lab:qa-biased', 'my/model'])
    >>> _parse_assignment("reasoning_errors.sample=0.5")
    ('reasoning_errors.sample', 0.5)
    >>> _parse_assignment("sample=null")
    ('sample', None)
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise StereoprobeError(f"Cannot read --set {text!r}: write KEY=VALUE (VALUE in YAML, e.g. sample=0.1).")
    try:
        return key, yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError as exc:
        raise StereoprobeError(f"Cannot read the value of --set {text!r} as YAML: {exc}.") from None


def overrides_from_assignments(assignments: Sequence[str]) -> dict[str, Any]:
    """Turn ``KEY=VALUE`` / ``STEM.KEY=VALUE`` strings into a profile-shaped mapping."""
    out: dict[str, Any] = {}
    for text in assignments:
        key, value = _parse_assignment(text)
        if "." in key:
            stem, _, name = key.partition(".")
            out.setdefault("notebooks", {}).setdefault(stem, {})[name] = value
        else:
            out[key] = value
    return out


# --------------------------------------------------------------------------- profiles


def book_root(root: os.PathLike[str] | str | None = None) -> Path:
    """``root``, or else the clone of the repository found by :func:`stereoprobe.paths.checkout_root`; a folder
    without the book's sources stops with one sentence saying where they are."""
    found = paths.checkout_root() if root is None else Path(root).expanduser()
    if found is not None and all((found / marker).exists() for marker in paths.CHECKOUT_MARKERS):
        return found
    where = "the current folder is not in one" if root is None else f"{root} is not one"
    raise StereoprobeError(f"The book's sources (_toc.yml, notebooks/, book/, params/) are in a clone of the "
                           f"stereoprobe repository and {where}: clone the repository with git and run the command "
                           f"from the clone's root, or pass --root DIR.")


def _params_dir(root: Path) -> Path:
    return root / "params"


def available_profiles(root: Path | None = None) -> list[str]:
    """Names of the profiles in ``params/`` (``smoke``, ``cpu``, ``gpu``, ...)."""
    return sorted(p.stem for p in _params_dir(book_root(root)).glob("*.yaml"))


def load_profile(profile: str | os.PathLike[str], root: Path | None = None) -> tuple[str, dict[str, Any]]:
    """Read a profile by name (``params/<name>.yaml``) or path to a YAML file.

    Returns ``(name, mapping)``. An unknown name raises :class:`StereoprobeError` listing
    the valid profiles.
    """
    root = book_root(root)
    text = os.fspath(profile)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or os.sep in text or (os.altsep and os.altsep in text):
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_file():
            raise StereoprobeError(f"Profile file {text} does not exist: pass an existing .yaml file "
                                   f"or one of the profiles {', '.join(available_profiles(root))}.")
        name = path.stem
    else:
        path = _params_dir(root) / f"{text}.yaml"
        if not path.is_file():
            valid = ", ".join(available_profiles(root)) or "(none found)"
            raise StereoprobeError(f"Unknown profile {text!r}: choose one of {valid} "
                                   f"(files params/<name>.yaml) or pass a path to a .yaml file.")
        name = text
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise StereoprobeError(f"Profile {path} is not valid YAML: {exc}.") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StereoprobeError(f"Profile {path} must be a mapping of parameter names to values.")
    return name, data


# --------------------------------------------------------------------------- table of contents


@dataclass(frozen=True)
class Chapter:
    """One toc entry: ``file`` as written in ``_toc.yml``, its ``source`` and its ``kind``.

    ``kind`` is ``"notebook"`` (a jupytext ``.py`` to execute), ``"ipynb"`` (a notebook
    copied as is) or ``"text"`` (``.md``/``.rst``).
    """

    file: str
    source: Path
    kind: str

    @property
    def stem(self) -> str:
        return self.source.stem


def _toc_files(node: Any) -> Iterator[str]:
    """Every ``file`` entry of a (sphinx-external-toc) toc tree, in reading order.

    >>> list(_toc_files({"root": "intro", "parts": [{"chapters": [{"file": "a", "sections": [{"file": "b"}]}]}]}))
    ['intro', 'a', 'b']
    """
    if isinstance(node, dict):
        if "root" in node:
            yield str(node["root"])
        if "file" in node:
            yield str(node["file"])
        for key in ("parts", "chapters", "sections", "subtrees", "entries"):
            for child in node.get(key) or []:
                yield from _toc_files(child)
    elif isinstance(node, list):
        for child in node:
            yield from _toc_files(child)


def chapters(root: Path | None = None) -> list[Chapter]:
    """The toc entries of ``_toc.yml`` in order, each resolved to its source file."""
    root = book_root(root)
    toc_path = root / "_toc.yml"
    if not toc_path.is_file():
        raise StereoprobeError(f"No table of contents at {toc_path}: the book needs a _toc.yml at the repository root.")
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8")) or {}
    out: list[Chapter] = []
    for file in _toc_files(toc):
        base = root / file
        candidates = [base] if base.suffix in (".py", ".ipynb", ".md", ".rst") else [
            base.with_name(base.name + ext) for ext in (".py", ".ipynb", ".md", ".rst")]
        found = [c for c in candidates if c.is_file()]
        if not found:
            raise StereoprobeError(f"_toc.yml lists {file!r} but no {file}.py/.ipynb/.md exists: "
                                   f"create the file or remove the entry.")
        source = found[0]
        kind = {".py": "notebook", ".ipynb": "ipynb"}.get(source.suffix, "text")
        out.append(Chapter(file=file, source=source, kind=kind))
    stems = [c.stem for c in out if c.kind == "notebook"]
    dupes = sorted({s for s in stems if stems.count(s) > 1})
    if dupes:
        raise StereoprobeError(f"Two chapter notebooks share the name {', '.join(dupes)}: "
                               f"rename one (executed copies and profile overrides are keyed by name).")
    return out


def _read_notebook(path: Path) -> Any:
    import jupytext

    try:
        return jupytext.read(path)
    except Exception as exc:  # noqa: BLE001 - jupytext raises many types
        raise StereoprobeError(f"Cannot read notebook {path} with jupytext: {exc}.") from None


def _parameters_cell_index(nb: Any) -> int:
    for i, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return i
    return -1


def notebook_parameters(nb: Any) -> dict[str, Any]:
    """The parameters declared in the notebook's ``parameters`` cell, with their defaults
    (as source text), using papermill's own parser."""
    from papermill.translators import papermill_translators

    idx = _parameters_cell_index(nb)
    if idx < 0:
        return {}
    translator = papermill_translators.find_translator("python3", "python")
    return {p.name: p.default for p in translator.inspect(nb.cells[idx])}


# --------------------------------------------------------------------------- resolution


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def resolve_parameters(
    profile_name: str,
    profile: Mapping[str, Any],
    declared: Mapping[str, Mapping[str, Any]],
    overrides: Mapping[str, Any] | None = None,
    where: str = "profile",
) -> dict[str, dict[str, Any]]:
    """Validate a profile (plus overrides) and return the parameters for each notebook.

    ``declared`` maps notebook stem -> parameters its ``parameters`` cell declares. Unknown
    top-level keys, unknown notebook names, parameters a notebook does not declare and
    invalid values of the shared parameters raise :class:`StereoprobeError`.

    >>> declared = {"nb": {"models": "[]", "sample": "None", "profile": "'cpu'"}}
    >>> resolve_parameters("smoke", {"sample": 10, "seed": 1}, declared)
    {'nb': {'sample': 10, 'profile': 'smoke'}}
    >>> resolve_parameters("smoke", {"sample": 10, "color": "red"}, declared)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stereoprobe.errors.StereoprobeError: profile smoke: unknown key 'color': ...
    """
    known = set(KNOWN_PARAMETERS)
    for params in declared.values():
        known |= set(params)
    known -= {"profile"}

    layers: list[tuple[str, Mapping[str, Any]]] = [(f"{where} {profile_name}", profile)]
    if overrides:
        layers.append(("--set", overrides))

    for label, layer in layers:
        bad_reserved = [k for k in layer if k == "profile"]
        if bad_reserved:
            raise StereoprobeError(f"{label}: 'profile' is set by stereoprobe.book from the profile name; remove it.")
        unknown = sorted(k for k in layer if k not in known and k != "notebooks")
        if unknown:
            names = ", ".join(repr(k) for k in unknown)
            raise StereoprobeError(
                f"{label}: unknown key{'s' if len(unknown) > 1 else ''} {names}: known parameters are "
                f"{', '.join(sorted(known))}, plus 'notebooks' for per-notebook overrides.")
        per_nb = layer.get("notebooks") or {}
        if not isinstance(per_nb, Mapping):
            raise StereoprobeError(f"{label}: 'notebooks' must map notebook names to {{parameter: value}} mappings.")
        for stem, params in per_nb.items():
            if stem not in declared:
                raise StereoprobeError(f"{label}: {stem!r} (under 'notebooks') is not a chapter notebook: "
                                       f"use one of {', '.join(declared)}.")
            if not isinstance(params, Mapping):
                raise StereoprobeError(f"{label}: notebooks.{stem} must be a mapping of parameter names to values.")
            extra = sorted(k for k in params if k not in declared[stem] or k == "profile")
            if extra:
                raise StereoprobeError(
                    f"{label}: notebook {stem!r} does not declare {', '.join(repr(k) for k in extra)} "
                    f"in its parameters cell (it declares {', '.join(sorted(declared[stem]))}).")

    def check(label: str, key: str, value: Any) -> Any:
        validator = KNOWN_PARAMETERS.get(key)
        if validator is None:
            return value
        try:
            return validator(value)
        except ValueError as exc:
            raise StereoprobeError(f"{label}: {key} = {value!r} is invalid: use {exc}.") from None

    result: dict[str, dict[str, Any]] = {}
    for stem, params in declared.items():
        merged: dict[str, Any] = {}
        for label, layer in layers:
            for key, value in layer.items():
                if key != "notebooks":
                    merged[key] = check(label, key, value)
            for key, value in ((layer.get("notebooks") or {}).get(stem) or {}).items():
                merged[key] = check(f"{label} (notebooks.{stem})", key, value)
        if "profile" in params:
            merged["profile"] = profile_name
        result[stem] = {k: v for k, v in merged.items() if k in params}
    return result


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
        spec["env"] = {"STEREOPROBE_PROGRESS": "0", "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore:IProgress not found"}
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


def _cell_lines(path: Path, n_cells: int) -> list[int | None]:
    """Best-effort 1-based line numbers of each cell's ``# %%`` marker in a py:percent file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    markers = [i + 1 for i, line in enumerate(lines) if re.match(r"^# %%", line)]
    if len(markers) == n_cells:
        return list(markers)
    if len(markers) == n_cells - 1:
        return [None, *markers]
    return [None] * n_cells


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _say(message: str, progress: bool) -> None:
    if progress:
        print(f"[stereoprobe.book] {message}", file=sys.stderr, flush=True)


def _select(notebooks: list[Chapter], only: Sequence[str] | None) -> list[Chapter]:
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


def _resolve_dir(path: os.PathLike[str] | str, root: Path) -> Path:
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


def _is_injected(cell: Any) -> bool:
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
    code = iter([c for c in executed.cells if c.cell_type == "code" and not _is_injected(c)])
    injected = [c for c in executed.cells if _is_injected(c)]
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

    idx = _parameters_cell_index(nb)
    injected = [c for c in nb.cells if _is_injected(c)]
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

    rel = _rel(chapter.source, root)
    n_source_cells = len(nb.cells)
    param_idx = _parameters_cell_index(nb)
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
        line = _cell_lines(chapter.source, n_source_cells)[src_idx] if 0 <= src_idx < n_source_cells else None
        first = next((ln.strip() for ln in str(exc.source).splitlines() if ln.strip()), "")
        where = f"cell {src_idx + 1}" + (f" (line {line})" if line else "") + f", In [{exc.exec_count}]"
        message = (f"Notebook {rel} failed in {where} `{first[:80]}` with {exc.ename}: "
                   f"{_strip_ansi(str(exc.evalue)).strip()[:300]}")
        details = _strip_ansi("\n".join(exc.traceback or []))
        raise NotebookExecutionError(message, "\n".join(details.splitlines()[-25:])) from None
    except StereoprobeError:
        raise
    except Exception as exc:  # noqa: BLE001 - kernel died, cell timeout, kernel failed to start, ...
        kind = type(exc).__name__
        hint = f" (per-cell timeout {timeout} s; raise --timeout)" if "Timeout" in kind else ""
        raise NotebookExecutionError(f"Notebook {rel} could not be executed{hint}: {kind}: "
                                     f"{_strip_ansi(str(exc)).strip().splitlines()[0] if str(exc).strip() else ''}",
                                     _strip_ansi(str(exc))) from None

    # Clean, portable metadata: never embed the input notebook (papermill stores the
    # NotebookNode it was given as "input_path") or this machine's kernel name.
    executed.metadata["kernelspec"] = dict(PORTABLE_KERNELSPEC)
    pm = executed.metadata.setdefault("papermill", {})
    pm["input_path"] = rel
    pm["output_path"] = _rel(out_path, root)
    executed.metadata["stereoprobe"] = {"profile": profile_name, "parameters": params, "source": rel,
                                        "execution_key": key}
    show_parameters_used(executed, params, profile_name, rel)

    with atomic_file(out_path) as fh:
        nbformat.write(executed, fh)


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

    Returns the paths of the executed notebooks, in toc order.

    Raises :class:`StereoprobeError` for an unknown profile, unknown keys or invalid values,
    and :class:`NotebookExecutionError` naming the notebook and failing cell.
    """
    root = book_root(root)
    name, data = load_profile(profile, root)
    notebooks = [c for c in chapters(root) if c.kind == "notebook"]
    loaded = {c.stem: _read_notebook(c.source) for c in notebooks}
    declared = {stem: notebook_parameters(nb) for stem, nb in loaded.items()}
    for c in notebooks:
        if _parameters_cell_index(loaded[c.stem]) < 0:
            raise StereoprobeError(f"Notebook {_rel(c.source, root)} has no cell tagged 'parameters': "
                                   f'tag its parameters cell with `# %% tags=["parameters"]`.')
    resolved = resolve_parameters(name, data, declared, overrides)
    selected = _select(notebooks, only)
    out = _resolve_dir(out_dir, root)

    written: list[Path] = []
    failures: list[NotebookExecutionError] = []
    with _venv_kernel() as kernel_name:
        for i, chapter in enumerate(selected, 1):
            params = resolved[chapter.stem]
            target = out / f"{chapter.stem}.ipynb"
            key = execution_key(loaded[chapter.stem], params, chapter.source.parent)
            if not force and reuse_execution(loaded[chapter.stem], key, target):
                _say(f"[{i}/{len(selected)}] {_rel(chapter.source, root)}: code, parameters, package and libraries "
                     f"unchanged, reusing {_rel(target, root)} with the current prose", progress)
                written.append(target)
                continue
            shown = ", ".join(f"{k}={v!r}" for k, v in params.items() if k != "profile")
            _say(f"[{i}/{len(selected)}] {_rel(chapter.source, root)} (profile {name}): {shown}", progress)
            start = time.perf_counter()
            try:
                _execute_one(chapter, loaded[chapter.stem], params, name, key, target, kernel_name,
                             timeout, start_timeout, progress, root)
            except NotebookExecutionError as exc:
                _say(f"[{i}/{len(selected)}] FAILED after {time.perf_counter() - start:.1f} s: {exc}", progress)
                if not keep_going:
                    raise
                failures.append(exc)
                continue
            seconds = time.perf_counter() - start
            _say(f"[{i}/{len(selected)}] wrote {_rel(target, root)} in {seconds:.1f} s", progress)
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
        cells = [c for c in nbformat.read(executed[chapter.stem], as_version=4).cells if not _is_injected(c)]
        lines = _cell_lines(chapter.source, len(cells))  # the source's cells: the injected one left out
        for i in figures_without_alt(cells):
            first = next((ln.strip() for ln in cells[i].source.splitlines() if ln.strip()), "")
            found.append(f"{_rel(chapter.source, root)} cell {i + 1}" + (f" (line {lines[i]})" if lines[i] else "")
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
    pages that changed. When the book's GitHub repository is known (:func:`stereoprobe.publish.repository`), the
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
    build = _resolve_dir(build_dir, root)
    executed_dir = build / "executed"
    name, _ = load_profile(profile, root)
    notebooks = [c for c in chapters(root) if c.kind == "notebook"]
    to_run = _select(notebooks, only) if execute else []
    executed = {c.stem: executed_dir / f"{c.stem}.ipynb" for c in notebooks}
    missing = [c.stem for c in notebooks if c not in to_run and not executed[c.stem].is_file()]
    if missing:  # checked before executing anything
        raise StereoprobeError(f"No executed copy of {', '.join(missing)} in {_rel(executed_dir, root)}: "
                               f"build once without --only/--no-execute to execute every chapter.")
    if execute:
        run_notebooks(profile, only=only, out_dir=executed_dir, timeout=timeout, overrides=overrides,
                      progress=progress, root=root, force=force)
    for stem, path in executed.items():
        with contextlib.suppress(Exception):
            made_with = json.loads(path.read_text(encoding="utf-8"))["metadata"]["stereoprobe"]["profile"]
            if made_with != name:
                _say(f"note: {stem} was executed with profile {made_with!r}, not {name!r}", progress)

    _check_alt_text(notebooks, executed, root)

    staging = build / "src"
    _stage(root, staging, executed)
    cmd = [*_jupyter_book_command(), "build", str(staging), "--path-output", str(staging),
           "--builder", "html", "-W", "-n", "--keep-going"]
    log_path = build / "jupyter-book.log"
    _say(f"building the book: jupyter-book build {_rel(staging, root)} -W -n --keep-going", progress)
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
    warnings = [_strip_ansi(ln).strip().replace(str(staging) + os.sep, "")
                for ln in lines if re.search(r"WARNING|ERROR|CRITICAL", ln)]
    if rc != 0:
        first = "; ".join(warnings[:3]) or _strip_ansi("".join(lines[-5:])).strip()
        raise BookBuildError(f"jupyter-book build failed (exit {rc}, {len(warnings)} warnings/errors, "
                             f"log {_rel(log_path, root)}): {first}")
    built = staging / "_build" / "html"
    if not (built / "index.html").is_file():
        raise BookBuildError(f"jupyter-book reported success but {_rel(built, root)}/index.html is missing; "
                             f"see {_rel(log_path, root)}.")
    html = build / "html"
    if html.exists():
        shutil.rmtree(html)
    shutil.copytree(built, html)  # the staged copy stays: Sphinx's cache of the next build
    _say(f"book built in {time.perf_counter() - start:.1f} s: {_rel(html / 'index.html', root)}", progress)
    return html


# ``python -m stereoprobe.book``: the ``stereoprobe book`` command, whose options are defined once, in
# stereoprobe.cli (which imports this module); exit status 0 ok, 1 a notebook or the build failed, 2 bad input.
# Run as a script this file is the module ``__main__``, so importing the CLI here closes no import cycle.
if __name__ == "__main__":
    from stereoprobe.cli import book_main

    sys.exit(book_main())
