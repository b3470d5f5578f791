"""The book's parameters: checks of every known parameter, ``--set`` assignments, the profiles in ``params/``,
the chapters of ``_toc.yml`` and the parameters each notebook receives (:func:`resolve_parameters`).
"""


from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stereoprobe import paths
from stereoprobe.choices import MODES, PRECISIONS, is_device
from stereoprobe.errors import StereoprobeError

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
    "engine": _check_choice(("local", "ray")),
    "workers": _check_int(1, allow_none=True),
    "threads": _check_int(1, allow_none=True),
}

#: The profile keys that say how a chapter runs, and the :class:`stereoprobe.RunOptions` field each one sets. A
#: profile (and ``--set``) spells them flat, as before; a chapter declares one parameter ``run`` and receives them
#: gathered into it (only those the profile sets: ``RunOptions(**run)`` fills in the rest).
RUN_KEYS = {"device": "device", "precision": "precision", "batch_tokens": "batch_tokens", "threads": "threads",
            "engine": "engine", "workers": "workers", "smoke_models": "smoke"}

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


def read_notebook(path: Path) -> Any:
    import jupytext

    try:
        return jupytext.read(path)
    except Exception as exc:  # noqa: BLE001 - jupytext raises many types
        raise StereoprobeError(f"Cannot read notebook {path} with jupytext: {exc}.") from None


def parameters_cell_index(nb: Any) -> int:
    for i, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return i
    return -1


def notebook_parameters(nb: Any) -> dict[str, Any]:
    """The parameters declared in the notebook's ``parameters`` cell, with their defaults
    (as source text), using papermill's own parser."""
    from papermill.translators import papermill_translators

    idx = parameters_cell_index(nb)
    if idx < 0:
        return {}
    translator = papermill_translators.find_translator("python3", "python")
    return {p.name: p.default for p in translator.inspect(nb.cells[idx])}


# --------------------------------------------------------------------------- resolution


def rel_path(path: Path, root: Path) -> str:
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

    A notebook that declares ``run`` receives the profile's :data:`RUN_KEYS` gathered into it.

    >>> declared = {"nb": {"models": "[]", "sample": "None", "profile": "'cpu'"}}
    >>> resolve_parameters("smoke", {"sample": 10, "seed": 1}, declared)
    {'nb': {'sample': 10, 'profile': 'smoke'}}
    >>> resolve_parameters("cpu", {"device": "cpu", "smoke_models": False}, {"nb": {"run": "dict()"}})
    {'nb': {'run': {'device': 'cpu', 'smoke': False}}}
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
            extra = sorted(k for k in params if (k not in declared[stem] or k == "profile")
                           and not (k in RUN_KEYS and "run" in declared[stem]))
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
        if "run" in params and "run" not in merged:
            run = {field: merged[key] for key, field in RUN_KEYS.items() if key in merged}
            if run:
                merged["run"] = run
        result[stem] = {k: v for k, v in merged.items() if k in params}
    return result


