"""A fingerprinted, resumable Parquet score store shared by all three papers.

*Scores are assets*: every forward pass is stored once, keyed by
``(model fingerprint, dataset fingerprint, mode)``.  A run lives in the folder
``root/<model_fp>/<dataset_fp>/<mode>/`` and holds

* shards ``part-00000.parquet``, ``part-00001.parquet``, ... -- the caller streams its passes
  in a deterministic order and cuts them into fixed-size chunks; shard ``i`` holds chunk ``i``;
* ``_manifest.json`` -- written by :meth:`StoreRun.finish` once every shard is there.

Every shard has an integer column ``pass_id`` (the pass's position in the caller's stream,
strictly increasing through the whole run; ``uint32`` by default, ``int64`` on request) and the
caller's columns (numeric or bool, one value per pass).  Its Parquet key-value metadata records
the run key, the schema, the shard index, the row count, the first/last ``pass_id`` and a sha256
checksum per column, so a shard copied from another run, a truncated file or flipped bytes are
all caught with a :class:`~stereoprobe.errors.StoreError` that names the file and the fix.

Shards are written to a temporary file in the same folder and renamed into place
(:func:`stereoprobe.atomic.atomic_file`), so a killed run never leaves half a shard: rerunning
skips the shards that are there (:meth:`StoreRun.has_shard`, :meth:`StoreRun.missing_shards`)
and computes the rest.

Storage: ``pass_id`` is delta-encoded, float columns are byte-stream-split, all zstd-compressed;
one million passes of ``pass_id`` + four random float32 columns take about 13.5 bytes per pass.

The usual loop (:func:`stereoprobe.engine.fill` runs it for a job, locally or on Ray workers)::

    run = ScoreStore().run(model_fp, dataset_fp, "compat", {"start": np.float32, "end": np.float32})
    if not run.is_complete():
        n_shards = n_rows = 0
        for i, chunk in enumerate(chunked(passes, 4096)):
            if not run.has_shard(i):
                run.write_shard(i, score(chunk))      # {"pass_id": ..., "start": ..., "end": ...}
            n_shards, n_rows = i + 1, n_rows + len(chunk)
        run.finish(n_shards, n_rows)
    scores = run.read()
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import atomic_file, clean_stale
from .errors import StoreError
from .paths import cache_dir

__all__ = ["ScoreStore", "StoreRun", "PASS_ID"]

#: Name of the id column every shard carries.
PASS_ID = "pass_id"

#: Bumped when the on-disk layout changes; a shard of another format is reported, not misread.
FORMAT_VERSION = 1

_META_KEY = b"stereoprobe.store"
_MANIFEST = "_manifest.json"
_SHARD_RE = re.compile(r"^part-(\d{5,})\.parquet$")
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=@-]{0,127}$")
_ALLOWED_KINDS = "biuf"
_ALLOWED_ID_DTYPES = (np.dtype(np.uint32), np.dtype(np.int64))


def _shard_name(i: int) -> str:
    return f"part-{i:05d}.parquet"


def _check_key(what: str, value: str) -> str:
    if not isinstance(value, str) or not _KEY_RE.match(value):
        raise StoreError(
            f"{what} {value!r} cannot name a store folder; use 1-128 letters, digits or . _ - + = @ "
            "(not starting with a dot or dash), e.g. a hex digest."
        )
    return value


def _normalize_schema(schema: Mapping[str, Any]) -> dict[str, np.dtype]:
    if not isinstance(schema, Mapping) or not schema:
        raise StoreError(
            f"schema {schema!r} is not a non-empty dict of column name -> numpy dtype; "
            "pass e.g. {'start': np.float32, 'end': np.float32}."
        )
    out: dict[str, np.dtype] = {}
    for name, dtype in schema.items():
        if not isinstance(name, str) or not name or name == PASS_ID or name.startswith("__"):
            raise StoreError(
                f"schema column name {name!r} is not allowed; use a non-empty string other than "
                f"{PASS_ID!r} (the store adds that id column itself)."
            )
        try:
            dt = np.dtype(dtype)
        except TypeError as exc:
            raise StoreError(
                f"schema column {name!r} has dtype {dtype!r}, which numpy does not understand; "
                "use a numeric numpy dtype such as np.float32."
            ) from exc
        if dt.kind not in _ALLOWED_KINDS or dt.itemsize > 8 or dt.shape or dt.names:
            raise StoreError(
                f"schema column {name!r} has dtype {dt}, which the score store does not hold; "
                "use bool, an integer or a float dtype (one number per pass)."
            )
        out[name] = dt.newbyteorder("=")
    return out


def _schema_json(schema: Mapping[str, np.dtype]) -> dict[str, str]:
    return {name: dt.name for name, dt in schema.items()}


def _column_digest(name: str, values: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(f"{name}:{values.dtype.name}:{len(values)}:".encode())
    h.update(np.ascontiguousarray(values.astype(values.dtype.newbyteorder("<"), copy=False)).data)
    return h.hexdigest()


def _encoding(dt: np.dtype) -> str | None:
    if dt.kind == "f":
        return "BYTE_STREAM_SPLIT"
    if dt.kind in "iu":
        return "DELTA_BINARY_PACKED"
    return None  # bool: PLAIN (bit-packed), then compressed


class ScoreStore:
    """The on-disk home of every score: one folder per (model, dataset, mode) run.

    ``root`` defaults to ``cache_dir() / "scores"`` (``STEREOPROBE_CACHE`` moves it).

    >>> import tempfile, numpy as np
    >>> store = ScoreStore(tempfile.mkdtemp())
    >>> run = store.run("m0", "d0", "compat", {"p": np.float32})
    >>> run.path.relative_to(store.root).as_posix()
    'm0/d0/compat'
    >>> store.runs()
    []
    """

    def __init__(self, root: str | os.PathLike[str] | None = None):
        self.root = Path(root) if root is not None else cache_dir() / "scores"
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(
                f"score store root {self.root} is a file, not a folder; pass another root or move it."
            )

    def __repr__(self) -> str:
        return f"ScoreStore({str(self.root)!r})"

    def run(
        self,
        model_fp: str,
        dataset_fp: str,
        mode: str,
        schema: Mapping[str, Any],
        *,
        pass_id_dtype: Any = np.uint32,
    ) -> StoreRun:
        """Open (creating its folder) the run keyed by ``(model_fp, dataset_fp, mode)``.

        ``schema`` maps each caller column to a numpy dtype (bool, integer or float);
        ``pass_id`` is added by the store, as ``uint32`` unless ``pass_id_dtype=np.int64``
        (for runs with more than 4.29e9 passes).  Stale temporary files left by a killed
        writer are removed.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "clean", {"start": "float32"})
        >>> run.schema
        {'start': dtype('float32')}
        """
        return StoreRun(self.root, model_fp, dataset_fp, mode, schema, pass_id_dtype=pass_id_dtype)

    def runs(self) -> list[tuple[str, str, str]]:
        """The ``(model_fp, dataset_fp, mode)`` keys of the complete runs under ``root``, sorted.

        >>> import tempfile, numpy as np
        >>> store = ScoreStore(tempfile.mkdtemp())
        >>> run = store.run("m0", "d0", "compat", {"p": np.float32})
        >>> run.write_shard(0, {"pass_id": np.arange(3), "p": np.zeros(3, np.float32)})
        >>> run.finish(1, 3)
        >>> store.runs()
        [('m0', 'd0', 'compat')]
        """
        if not self.root.is_dir():
            return []
        found = []
        for manifest in self.root.glob(f"*/*/*/{_MANIFEST}"):
            mode_dir = manifest.parent
            found.append((mode_dir.parent.parent.name, mode_dir.parent.name, mode_dir.name))
        return sorted(found)


class StoreRun:
    """One run's folder of shards: check, write, finish, read.

    Create it with :meth:`ScoreStore.run`.  All methods raise
    :class:`~stereoprobe.errors.StoreError` with the offending file and the fix.

    >>> import tempfile, numpy as np
    >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"start": np.float32})
    >>> run.missing_shards(2)
    [0, 1]
    >>> run.write_shard(0, {"pass_id": [0, 1], "start": np.array([0.5, 0.25], np.float32)})
    >>> run.write_shard(1, {"pass_id": [2], "start": np.array([1.0], np.float32)})
    >>> run.finish(n_shards=2, n_rows=3)
    >>> run.read()
       pass_id  start
    0        0   0.50
    1        1   0.25
    2        2   1.00
    """

    def __init__(
        self,
        root: Path,
        model_fp: str,
        dataset_fp: str,
        mode: str,
        schema: Mapping[str, Any],
        *,
        pass_id_dtype: Any = np.uint32,
    ):
        self.model_fp = _check_key("model_fp", model_fp)
        self.dataset_fp = _check_key("dataset_fp", dataset_fp)
        self.mode = _check_key("mode", mode)
        self.schema = _normalize_schema(schema)
        id_dt = np.dtype(pass_id_dtype)
        if id_dt not in _ALLOWED_ID_DTYPES:
            raise StoreError(
                f"pass_id_dtype {id_dt} is not supported; use np.uint32 (default) or np.int64."
            )
        self.pass_id_dtype = id_dt
        self.path = Path(root) / model_fp / dataset_fp / mode
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the score folder {self.path} ({exc.strerror}); "
                "check its permissions or point STEREOPROBE_CACHE elsewhere."
            ) from exc
        clean_stale(self.path)  # temporary files of writers that died

    # ------------------------------------------------------------------ helpers
    def __repr__(self) -> str:
        return (
            f"StoreRun(model_fp={self.model_fp!r}, dataset_fp={self.dataset_fp!r}, "
            f"mode={self.mode!r}, path={str(self.path)!r})"
        )

    @property
    def manifest_path(self) -> Path:
        """The run's manifest file (present once :meth:`finish` succeeded)."""
        return self.path / _MANIFEST

    def shard_path(self, i: int) -> Path:
        """The file that holds shard ``i``.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.shard_path(7).name
        'part-00007.parquet'
        """
        return self.path / _shard_name(self._check_index(i))

    def _key(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "model_fp": self.model_fp,
            "dataset_fp": self.dataset_fp,
            "mode": self.mode,
            "schema": _schema_json(self.schema),
            "pass_id_dtype": self.pass_id_dtype.name,
        }

    @staticmethod
    def _check_index(i: Any) -> int:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or i < 0:
            raise StoreError(f"shard index {i!r} is not a non-negative integer; pass 0, 1, 2, ...")
        return int(i)

    def _shard_files(self) -> dict[int, Path]:
        files = {}
        for p in self.path.iterdir():
            m = _SHARD_RE.match(p.name)
            if m:
                files[int(m.group(1))] = p
        return files

    def _shard_meta(self, i: int) -> dict[str, Any] | None:
        """The shard's verified metadata (cheap: footer only), None if the file is absent."""
        path = self.path / _shard_name(i)
        if not path.exists():
            return None
        fix = f"delete {path} and rerun to recompute it"
        try:
            fmeta = pq.read_metadata(path)
            raw = (fmeta.metadata or {}).get(_META_KEY)
            meta = json.loads(raw) if raw is not None else None
        except (OSError, pa.ArrowException, ValueError) as exc:
            raise StoreError(f"score shard {path} cannot be opened as Parquet ({exc}); {fix}.") from exc
        if not isinstance(meta, dict):
            raise StoreError(f"score shard {path} carries no stereoprobe metadata; {fix}.")
        expected = self._key()
        for field, want in expected.items():
            if meta.get(field) != want:
                raise StoreError(
                    f"score shard {path} holds {field}={meta.get(field)!r} but this run expects "
                    f"{want!r} (a file copied from another run or written by older code); delete "
                    f"{path} (or the whole folder {self.path} if the code changed) and rerun."
                )
        if meta.get("shard") != i:
            raise StoreError(
                f"score shard {path} says it is shard {meta.get('shard')!r}, not {i}; {fix}."
            )
        digests = meta.get("sha256")
        ids_ok = all(
            meta.get(k) is None or (isinstance(meta.get(k), int) and not isinstance(meta.get(k), bool))
            for k in ("first_pass_id", "last_pass_id")
        ) and {"first_pass_id", "last_pass_id"} <= meta.keys()
        if (
            not ids_ok
            or not isinstance(digests, dict)
            or set(digests) != {PASS_ID, *self.schema}
            or not all(isinstance(d, str) for d in digests.values())
        ):
            raise StoreError(f"score shard {path} has damaged stereoprobe metadata; {fix}.")
        if meta.get("n_rows") != fmeta.num_rows:
            raise StoreError(
                f"score shard {path} holds {fmeta.num_rows} rows but its metadata says "
                f"{meta.get('n_rows')!r}; {fix}."
            )
        return meta

    # ------------------------------------------------------------------ resume
    def has_shard(self, i: int) -> bool:
        """Whether shard ``i`` is on disk and its metadata matches this run (footer read only).

        A missing shard gives ``False``; a shard that exists but cannot be opened, or that
        belongs to another run, raises :class:`StoreError` naming the file to delete.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.has_shard(0)
        False
        >>> run.write_shard(0, {"pass_id": [0], "p": np.float32([1.0])})
        >>> run.has_shard(0)
        True
        """
        return self._shard_meta(self._check_index(i)) is not None

    def missing_shards(self, n_shards: int) -> list[int]:
        """The indices in ``range(n_shards)`` whose shard is not on disk yet.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.write_shard(1, {"pass_id": [5], "p": np.float32([1.0])})
        >>> run.missing_shards(3)
        [0, 2]
        """
        n_shards = self._check_count("n_shards", n_shards)
        return [i for i in range(n_shards) if not self.has_shard(i)]

    @staticmethod
    def _check_count(what: str, n: Any) -> int:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise StoreError(f"{what} {n!r} is not a non-negative integer; pass the count you wrote.")
        return int(n)

    # ------------------------------------------------------------------ write
    def _prepare(self, i: int, columns: Mapping[str, Any]) -> dict[str, np.ndarray]:
        if not isinstance(columns, Mapping):
            raise StoreError(
                f"write_shard({i}) got {type(columns).__name__}, not a dict of column -> array; "
                f"pass {{'{PASS_ID}': ids, " + ", ".join(f"'{c}': ..." for c in self.schema) + "}."
            )
        expected = [PASS_ID, *self.schema]
        extra = [c for c in columns if c not in expected]
        missing = [c for c in expected if c not in columns]
        if extra or missing:
            raise StoreError(
                f"write_shard({i}) got columns {sorted(map(str, columns))} but the run's schema is "
                f"{expected}; pass exactly those (missing {missing}, unexpected {extra})."
            )
        out: dict[str, np.ndarray] = {}
        n = None
        for name in expected:
            arr = np.asarray(columns[name])
            if arr.ndim != 1:
                raise StoreError(
                    f"write_shard({i}) column {name!r} has shape {arr.shape}; pass a 1-D array "
                    "with one value per pass."
                )
            if n is None:
                n = len(arr)
            elif len(arr) != n:
                raise StoreError(
                    f"write_shard({i}) column {name!r} has {len(arr)} values but {PASS_ID!r} has "
                    f"{n}; pass one value per pass in every column."
                )
            dt = self.pass_id_dtype if name == PASS_ID else self.schema[name]
            out[name] = self._cast(i, name, arr, dt)
        ids = out[PASS_ID]
        if len(ids) > 1 and not np.all(ids[1:] > ids[:-1]):
            raise StoreError(
                f"write_shard({i}) got {PASS_ID!r} values that are not strictly increasing; number "
                "the passes by their position in the (deterministic) stream."
            )
        if i > 0 and len(ids):
            prev = self._shard_meta(i - 1)
            if prev is not None and prev["last_pass_id"] is not None and ids[0] <= prev["last_pass_id"]:
                raise StoreError(
                    f"write_shard({i}) starts at {PASS_ID}={int(ids[0])} but shard {i - 1} ends at "
                    f"{prev['last_pass_id']}; pass ids must increase through the run's shards."
                )
        return out

    @staticmethod
    def _cast(i: int, name: str, arr: np.ndarray, dt: np.dtype) -> np.ndarray:
        src = arr.dtype
        if len(arr) == 0 and src.kind in "fO":  # e.g. [] -> float64
            return arr.astype(dt)
        bad = StoreError(
            f"write_shard({i}) column {name!r} has dtype {src}, which cannot be stored as {dt}; "
            f"pass {dt} values (or change the run's schema)."
        )
        if dt.kind == "b":
            if src.kind != "b":
                raise bad
            return arr.astype(dt, copy=False)
        if dt.kind == "f":
            if src.kind not in "biuf":
                raise bad
            return arr.astype(dt, copy=False)
        # integer target
        if src.kind not in "biu":
            raise bad
        if len(arr) and src.kind != "b":
            info = np.iinfo(dt)
            lo, hi = arr.min(), arr.max()
            if lo < info.min or hi > info.max:
                hint = " (use pass_id_dtype=np.int64 for more passes)" if name == PASS_ID else ""
                raise StoreError(
                    f"write_shard({i}) column {name!r} has values in [{lo}, {hi}], outside {dt}"
                    f"{hint}; pass values that fit."
                )
        return arr.astype(dt, copy=False)

    def write_shard(self, i: int, columns: Mapping[str, Any]) -> None:
        """Validate ``columns`` (``pass_id`` + the schema's columns, equal lengths) and write shard ``i``.

        The file appears atomically (temp file in the same folder, fsync, ``os.replace``), so a
        crash leaves either the old state or the whole shard.  Values are cast to the schema's
        dtypes when that loses no kind (int into float, float64 into float32); ``pass_id`` must be
        strictly increasing and above the previous shard's.  Writing a shard reopens a finished run
        until :meth:`finish` is called again.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.write_shard(0, {"pass_id": np.arange(4), "p": np.linspace(0, 1, 4)})
        >>> run.shard_path(0).exists()
        True
        """
        i = self._check_index(i)
        cols = self._prepare(i, columns)
        ids = cols[PASS_ID]
        n = len(ids)
        meta = {
            **self._key(),
            "shard": i,
            "n_rows": n,
            "first_pass_id": int(ids[0]) if n else None,
            "last_pass_id": int(ids[-1]) if n else None,
            "sha256": {name: _column_digest(name, values) for name, values in cols.items()},
        }
        table = pa.table(
            {name: pa.array(values) for name, values in cols.items()},
            metadata={_META_KEY: json.dumps(meta, sort_keys=True).encode()},
        )
        encodings = {PASS_ID: _encoding(self.pass_id_dtype)}
        encodings.update({c: _encoding(dt) for c, dt in self.schema.items()})
        encodings = {c: e for c, e in encodings.items() if e is not None}

        final = self.path / _shard_name(i)
        try:
            with atomic_file(final, "wb") as f:
                pq.write_table(
                    table,
                    f,
                    row_group_size=max(n, 1),
                    use_dictionary=False,
                    column_encoding=encodings,
                    compression="zstd",
                    compression_level=3,
                    write_page_checksum=True,
                )
                self.manifest_path.unlink(missing_ok=True)  # the run reopens once the shard is written
        except OSError as exc:
            raise StoreError(
                f"could not write score shard {final} ({exc.strerror or exc}); free disk space or "
                "fix the folder's permissions and rerun (finished shards are kept)."
            ) from exc

    def finish(self, n_shards: int, n_rows: int) -> None:
        """Mark the run complete after checking shards ``0..n_shards-1`` (footers only).

        Every shard must be there and belong to this run, no shard beyond ``n_shards`` may
        exist, the row counts must add up to ``n_rows`` and ``pass_id`` must increase from one
        shard to the next.  The manifest is written atomically.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.write_shard(0, {"pass_id": [0, 1], "p": np.float32([0, 0])})
        >>> run.is_complete()
        False
        >>> run.finish(1, 2)
        >>> run.is_complete()
        True
        """
        n_shards = self._check_count("n_shards", n_shards)
        n_rows = self._check_count("n_rows", n_rows)
        metas = self._verify_layout(n_shards, when="finish")
        total = sum(m["n_rows"] for m in metas)
        if total != n_rows:
            raise StoreError(
                f"finish({n_shards}, {n_rows}) for {self.path}: the shards hold {total} rows, not "
                f"{n_rows}; pass the number of passes actually written (or delete the run to redo it)."
            )
        clean_stale(self.path)
        manifest = {
            **self._key(),
            "complete": True,
            "n_shards": n_shards,
            "n_rows": n_rows,
            "shard_rows": [m["n_rows"] for m in metas],
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        with atomic_file(self.manifest_path, "wb") as f:
            f.write(json.dumps(manifest, indent=1).encode())

    def _verify_layout(self, n_shards: int, when: str) -> list[dict[str, Any]]:
        files = self._shard_files()
        extra = sorted(k for k in files if k >= n_shards)
        if extra:
            path = files[extra[0]]
            raise StoreError(
                f"score shard {path} lies beyond the run's {n_shards} shards (left from a run with "
                f"another chunk size?); delete it and rerun."
            )
        metas = []
        prev_last: int | None = None
        prev_i = -1
        for i in range(n_shards):
            meta = self._shard_meta(i)
            if meta is None:
                missing = [k for k in range(n_shards) if k not in files]
                head = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
                verb = "cannot finish" if when == "finish" else "is incomplete"
                raise StoreError(
                    f"score run {self.path} {verb}: {len(missing)} of {n_shards} shards are missing "
                    f"(first {self.path / _shard_name(missing[0])}; indices {head}); rerun the "
                    "scoring to compute them."
                )
            first = meta["first_pass_id"]
            if first is not None and prev_last is not None and first <= prev_last:
                raise StoreError(
                    f"score shard {self.shard_path(i)} starts at {PASS_ID}={first}, not after shard "
                    f"{prev_i}'s {prev_last} (shards out of order); delete it and rerun."
                )
            if meta["last_pass_id"] is not None:
                prev_last, prev_i = meta["last_pass_id"], i
            metas.append(meta)
        return metas

    # ------------------------------------------------------------------ read
    def _manifest(self) -> dict[str, Any] | None:
        path = self.manifest_path
        fix = f"delete {path} (the shards are kept) and rerun to rebuild it"
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"score manifest {path} cannot be read ({exc.strerror}); {fix}.") from exc
        try:
            manifest = json.loads(raw)
            if not isinstance(manifest, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            raise StoreError(f"score manifest {path} is not valid JSON; {fix}.") from exc
        for field, want in self._key().items():
            if manifest.get(field) != want:
                raise StoreError(
                    f"score manifest {path} holds {field}={manifest.get(field)!r} but this run "
                    f"expects {want!r}; {fix}."
                )
        n_shards, n_rows = manifest.get("n_shards"), manifest.get("n_rows")
        if manifest.get("complete") is not True or not isinstance(n_shards, int) or not isinstance(n_rows, int):
            raise StoreError(f"score manifest {path} lacks complete/n_shards/n_rows; {fix}.")
        return manifest

    def is_complete(self) -> bool:
        """Whether :meth:`finish` succeeded and every shard it counted is still on disk.

        Deleting a (corrupted) shard therefore reopens the run, so the resume loop recomputes
        exactly that shard.  Checksums are verified by :meth:`read`, not here.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.is_complete()
        False
        """
        manifest = self._manifest()
        if manifest is None:
            return False
        return all((self.path / _shard_name(i)).exists() for i in range(manifest["n_shards"]))

    def n_rows(self) -> int:
        """Number of passes in the finished run (from the manifest).

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.write_shard(0, {"pass_id": [0, 1], "p": np.float32([0, 0])}); run.finish(1, 2)
        >>> run.n_rows()
        2
        """
        return self._complete_manifest()["n_rows"]

    def _complete_manifest(self) -> dict[str, Any]:
        manifest = self._manifest()
        if manifest is None:
            files = self._shard_files()
            raise StoreError(
                f"score run {self.path} is incomplete ({len(files)} shards on disk, never finished); "
                "rerun the scoring to complete it before reading."
            )
        return manifest

    def _columns(self, columns: Sequence[str] | str | None) -> list[str]:
        if columns is None:
            return [PASS_ID, *self.schema]
        if isinstance(columns, str):
            columns = [columns]
        unknown = [c for c in columns if c != PASS_ID and c not in self.schema]
        if unknown:
            raise StoreError(
                f"column(s) {unknown} are not in the run {self.path}; choose from "
                f"{[PASS_ID, *self.schema]}."
            )
        wanted = [PASS_ID, *(c for c in columns if c != PASS_ID)] if PASS_ID in columns else list(columns)
        return list(dict.fromkeys(wanted))

    def _read_shard(self, i: int, columns: list[str], meta: dict[str, Any]) -> pa.Table:
        path = self.path / _shard_name(i)
        fix = f"delete {path} and rerun to recompute it"
        try:
            table = pq.read_table(path, columns=columns, page_checksum_verification=True, use_threads=True)
        except (OSError, pa.ArrowException, ValueError) as exc:
            raise StoreError(f"score shard {path} cannot be read ({exc}); {fix}.") from exc
        if table.num_rows != meta["n_rows"]:
            raise StoreError(
                f"score shard {path} yields {table.num_rows} rows, not {meta['n_rows']}; {fix}."
            )
        for name in columns:
            dt = self.pass_id_dtype if name == PASS_ID else self.schema[name]
            col = table.column(name)
            try:
                values = col.to_numpy()
            except (pa.ArrowException, ValueError) as exc:  # nulls cannot be our data
                raise StoreError(f"score shard {path} column {name!r} is malformed; {fix}.") from exc
            if values.dtype != dt or col.null_count:
                raise StoreError(
                    f"score shard {path} column {name!r} reads as {values.dtype}, not {dt}; {fix}."
                )
            if _column_digest(name, values) != meta["sha256"].get(name):
                raise StoreError(
                    f"score shard {path} column {name!r} fails its sha256 checksum (corrupted on "
                    f"disk); {fix}."
                )
        return table.replace_schema_metadata(None)

    def iter_shards(self, columns: Sequence[str] | str | None = None) -> Iterator[pd.DataFrame]:
        """Yield the finished run shard by shard as DataFrames (for streaming metrics).

        Same checks as :meth:`read`; each shard is verified just before it is yielded.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"p": np.float32})
        >>> run.write_shard(0, {"pass_id": [0, 1], "p": np.float32([0, 1])})
        >>> run.write_shard(1, {"pass_id": [2], "p": np.float32([2])})
        >>> run.finish(2, 3)
        >>> [len(df) for df in run.iter_shards("p")]
        [2, 1]
        """
        cols = self._columns(columns)
        manifest = self._complete_manifest()
        metas = self._verify_layout(manifest["n_shards"], when="read")
        self._check_manifest_rows(manifest, metas)
        for i, meta in enumerate(metas):
            yield self._read_shard(i, cols, meta).to_pandas()

    def _check_manifest_rows(self, manifest: dict[str, Any], metas: list[dict[str, Any]]) -> None:
        rows = [m["n_rows"] for m in metas]
        if sum(rows) != manifest["n_rows"] or manifest.get("shard_rows", rows) != rows:
            raise StoreError(
                f"score manifest {self.manifest_path} counts {manifest['n_rows']} rows but the shards "
                f"hold {sum(rows)}; delete {self.manifest_path} (the shards are kept) and rerun."
            )

    def read(self, columns: Sequence[str] | str | None = None) -> pd.DataFrame:
        """The finished run as one DataFrame, shards concatenated in order.

        ``columns`` picks columns (``pass_id`` comes first when asked for; ``None`` = all).
        Every shard's metadata, row count and per-column sha256 are checked, as are the manifest
        and the set of shard files: a missing, extra, corrupted or foreign shard raises
        :class:`StoreError` naming the file and the fix.  An unfinished run raises too.

        >>> import tempfile, numpy as np
        >>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "lm", {"s": np.float32, "e": np.float32})
        >>> run.write_shard(0, {"pass_id": [0, 1], "s": np.float32([.5, .5]), "e": np.float32([1, 0])})
        >>> run.finish(1, 2)
        >>> run.read(["e"])
             e
        0  1.0
        1  0.0
        """
        cols = self._columns(columns)
        manifest = self._complete_manifest()
        metas = self._verify_layout(manifest["n_shards"], when="read")
        self._check_manifest_rows(manifest, metas)
        tables = [self._read_shard(i, cols, meta) for i, meta in enumerate(metas)]
        if not tables:
            schema = pa.schema(
                [(c, pa.from_numpy_dtype(self.pass_id_dtype if c == PASS_ID else self.schema[c])) for c in cols]
            )
            return schema.empty_table().to_pandas()
        frame = pa.concat_tables(tables).to_pandas()  # one numpy array per column, straight from the chunks
        del tables
        # Arrow's allocator keeps what the shard reads freed; hand it back (about 260 MB for the full gender set)
        pa.default_memory_pool().release_unused()
        return frame
