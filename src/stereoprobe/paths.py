"""Where stereoprobe reads its data and writes its caches.

* **Data** (word lists, templates, names, the Social IQa slice, reference tables, zoo parts and cards)
  ships inside the package, in ``stereoprobe/data``, and is found through :mod:`importlib.resources`;
  ``STEREOPROBE_DATA`` points at another copy (tests use it for broken copies).
* **Caches** (score stores, merged zoo models, lab models, distractors, static NLI models) go to the
  user's cache folder (:func:`platformdirs.user_cache_dir`, e.g. ``~/.cache/stereoprobe`` on Linux);
  ``STEREOPROBE_CACHE`` moves them (the repository's Makefile sets it to ``.cache/stereoprobe``).
  Nothing is ever written into the installation prefix or the package folder, and every cache and output
  file or folder appears whole or not at all (:mod:`stereoprobe.atomic`).
* **The book's sources** (``_toc.yml``, ``notebooks/``, ``book/``, ``params/``) live in a clone of the
  repository only: :func:`checkout_root` finds one.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import tempfile
from pathlib import Path

from .errors import StereoprobeError

#: Files that mark the root of a clone of the stereoprobe repository (the book's sources).
CHECKOUT_MARKERS = ("_toc.yml", "_config.yml", "notebooks", "params")

_WRITABLE: set[Path] = set()  # cache folders checked in this process


def data_dir() -> Path:
    """The folder of the data that ships with the package; ``STEREOPROBE_DATA`` overrides it.

    >>> (data_dir() / "unqover" / "word_lists").is_dir()
    True
    """
    override = os.environ.get("STEREOPROBE_DATA")
    if override:
        return Path(override)
    folder = importlib.resources.files("stereoprobe") / "data"
    if not isinstance(folder, Path):  # an import from a zip file: the data cannot be read as files
        raise StereoprobeError("stereoprobe is imported from a zip archive, so its data files cannot be read; "
                               "install it as a normal (unzipped) package with pip.")
    return folder


def missing_data_fix() -> str:
    """The fix to name when a data file is missing: mend the ``STEREOPROBE_DATA`` copy, or reinstall."""
    override = os.environ.get("STEREOPROBE_DATA")
    if override:
        return (f"STEREOPROBE_DATA points at {override}, a copy of the package's data folder that lacks it: "
                "copy the file there from stereoprobe/data or unset STEREOPROBE_DATA")
    return "the file ships with stereoprobe: reinstall it (`pip install --force-reinstall --no-deps stereoprobe`)"


def cache_dir() -> Path:
    """The cache folder (created if missing): ``STEREOPROBE_CACHE`` or the user's cache folder.

    A folder that cannot be created or written to stops with one sentence naming it and the fix.
    """
    override = os.environ.get("STEREOPROBE_CACHE")
    if override:
        path, how = Path(override).expanduser(), "STEREOPROBE_CACHE"
    else:
        import platformdirs

        path, how = Path(platformdirs.user_cache_dir("stereoprobe", appauthor=False)), "the user cache folder"
    if path in _WRITABLE:
        return path
    fix = "set STEREOPROBE_CACHE to a writable folder (e.g. `export STEREOPROBE_CACHE=/tmp/stereoprobe-cache`)"
    try:
        writable_folder(path)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise StereoprobeError(f"The cache folder {path} ({how}) is not writable ({reason}); {fix}.") from None
    _WRITABLE.add(path)
    return path


def writable_folder(folder: Path) -> Path:
    """Create ``folder`` if missing; raise OSError unless a file can be created in it (a real write, so a
    read-only file system is caught for root too, whom permissions do not stop)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(13, "Permission denied", str(folder))
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-check.")
    os.close(fd)
    os.unlink(probe)
    return folder


def checkout_root() -> Path | None:
    """The root of the repository clone that holds the book's sources, or None for an installed package.

    The current folder (or one of its parents) counts when it holds ``_toc.yml``, ``_config.yml``,
    ``notebooks/`` and ``params/``; otherwise the clone this package runs from (an editable install).
    """
    here = Path.cwd().resolve()
    package = Path(__file__).resolve().parent
    for folder in (here, *here.parents, package.parents[1]):
        if all((folder / marker).exists() for marker in CHECKOUT_MARKERS):
            return folder
    return None


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file, read in 4 MiB blocks (weights, word lists, asset files)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()
