"""Where the project's data and caches live (always inside the repository or the user cache)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: Repository root (src layout: src/stereoprobe/paths.py -> parents[2]).
ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The project's ``data/`` folder; ``STEREOPROBE_DATA`` overrides it."""
    return Path(os.environ.get("STEREOPROBE_DATA", ROOT / "data"))


def cache_dir() -> Path:
    """Where built lab/zoo models and score stores go; ``STEREOPROBE_CACHE`` overrides it."""
    path = Path(os.environ.get("STEREOPROBE_CACHE", ROOT / ".cache" / "stereoprobe"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file, read in 4 MiB blocks (weights, word lists, asset files)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()
