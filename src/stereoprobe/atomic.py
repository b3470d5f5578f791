"""Atomic writes and build locks: every file and folder stereoprobe writes (score-store shards and manifests,
CSV tables, generated examples, executed notebooks, cached models, distractor units, …) appears whole or not
at all.

A file is written to a temporary file beside it, flushed and ``fsync``-ed, then renamed onto the target with
:func:`os.replace` (atomic when both names are in one folder) and the folder is ``fsync``-ed; on an error or
Ctrl-C the temporary file is removed and the target is left as it was, and a process killed outright leaves
at most a temporary file, never half a target. A folder is built the same way, in a temporary sibling.
Temporary names are ``.<target name>.<host>.<pid>.<8 hex digits>.tmp``: unique across the processes and
machines that share a folder, and telling :func:`clean_stale` whose leftovers they are. New files get the
mode :func:`open` gives (0o666 less the umask), like any other output.

:func:`build_lock` lets the processes of one machine that would build the same thing take turns: the second
waits, then finds the first one's result.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_file", "atomic_folder", "build_lock", "clean_stale"]

#: This machine's name as temporary names carry it (no dots: :func:`clean_stale` splits the names on dots).
HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())
_SUFFIX = ".tmp"


def temp_path(target: Path) -> Path:
    """A fresh name beside ``target`` for writing it: ``.<name>.<host>.<pid>.<8 hex digits>.tmp``."""
    return target.with_name(f".{target.name}.{HOST}.{os.getpid()}.{uuid.uuid4().hex[:8]}{_SUFFIX}")


def fsync_folder(folder: Path) -> None:
    """Make the renames in ``folder`` durable (skipped where a folder cannot be opened, e.g. on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w", *, encoding: str = "utf-8",
                newline: str | None = None) -> Iterator[IO[Any]]:
    """Write the file ``path`` whole or not at all: the block writes to the open temporary file this yields
    (``"w"``: text in ``encoding``, ``newline`` as :func:`open` takes it; ``"wb"``: bytes), which replaces
    ``path`` when the block ends without an error (missing folders are created).

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "sub" / "a.json"
    >>> with atomic_file(target) as f:
    ...     _ = f.write("{}")
    >>> target.read_text(), [p.name for p in target.parent.iterdir()]
    ('{}', ['a.json'])
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file mode {mode!r}: use 'w' (text) or 'wb' (bytes).")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, "xb") if mode == "wb" else open(tmp, "x", encoding=encoding, newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone after the rename; a half-written file after an error
    fsync_folder(path.parent)


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """Build the folder ``path`` whole or not at all: the block fills the empty temporary folder this yields,
    which replaces ``path`` (moved aside, then deleted) when the block ends without an error.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "model"
    >>> with atomic_folder(target) as tmp:
    ...     _ = (tmp / "card.json").write_text("{}")
    >>> [p.name for p in target.iterdir()], [p.name for p in target.parent.iterdir()]
    (['card.json'], ['model'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    tmp.mkdir()
    try:
        yield tmp
        for file in tmp.rglob("*"):
            if file.is_file():
                with open(file, "rb") as f, contextlib.suppress(OSError):  # Windows cannot fsync a read handle
                    os.fsync(f.fileno())
        fsync_folder(tmp)
        old = temp_path(path)
        if path.exists():
            os.replace(path, old)
        try:
            os.replace(tmp, path)
        except OSError:
            if old.exists():
                os.replace(old, path)  # put the previous folder back
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after the rename; a half-built folder after an error
    fsync_folder(path.parent)


def build_lock(path: str | os.PathLike):
    """A lock (:class:`filelock.FileLock`) for building ``path``, shared by the processes of this machine: under
    ``with build_lock(path):`` check whether ``path`` is built already, and build it if not. Its file lies in the
    temporary folder (``stereoprobe-locks/<hash of the resolved path>.lock``), outside the caches and outputs."""
    from filelock import FileLock

    locks = Path(tempfile.gettempdir()) / "stereoprobe-locks"
    locks.mkdir(exist_ok=True)
    key = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
    return FileLock(str(locks / f"{key}.lock"))


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (True when that cannot be told)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it runs, as another user
        return True
    return True


def clean_stale(folder: Path, max_age: float = 24 * 3600) -> None:
    """Delete the temporary files and folders in ``folder`` of writers that died: those of a process of this
    machine that no longer runs, those older than ``max_age`` seconds (another machine's) and unreadable names."""
    now = time.time()
    for tmp in folder.glob(f".*{_SUFFIX}"):
        parts = tmp.name.rsplit(".", 4)  # .<name>.<host>.<pid>.<hex>.tmp
        try:
            host, pid = parts[-4], int(parts[-3])
            stale = (host == HOST and not pid_alive(pid)) or now - tmp.stat().st_mtime > max_age
        except (IndexError, ValueError, OSError):
            stale = True
        if stale and tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif stale:
            tmp.unlink(missing_ok=True)
