"""Fill a score-store run shard by shard: in this process (``engine="local"``) or on Ray workers
(``engine="ray"``: the GPUs or CPUs of this machine, or of a whole Ray cluster).

A :class:`ShardJob` knows how many shards its run has and computes any shard ``i`` from scratch: the
probes' generators are random access (:func:`stereoprobe.unqover.generate.iter_examples` ``start``/
``stop``, :func:`stereoprobe.nli.templates.iter_pairs` likewise), so a shard does not depend on the
shards before it. A worker therefore takes any missing shard, in any order, and computes exactly the
rows — the same batches, the same padding, the same numbers — that the one-process run computes.

The Ray engine is Ray Data batch inference: a dataset of the missing shard indices, mapped by a pool
of actors (``workers`` of them, one GPU each on a GPU cluster) that load the model once and return
each shard's columns; the driver writes every shard into the score store as it arrives (atomic, as
always), so the store needs no shared file system and a killed run resumes with either engine. Start
a cluster with ``ray start`` and set ``RAY_ADDRESS`` to use several machines; without it a local Ray
instance is started on this machine.

>>> import tempfile, numpy as np
>>> from stereoprobe.store import ScoreStore
>>> class Squares(ShardJob):
...     def score_shard(self, i):
...         ids = np.arange(i * self.shard_size, i * self.shard_size + self.rows(i))
...         return {"pass_id": ids, "sq": (ids ** 2).astype(np.float32)}
>>> job = Squares(n_rows=5, shard_size=2)
>>> run = ScoreStore(tempfile.mkdtemp()).run("m0", "d0", "compat", {"sq": np.float32})
>>> fill(run, job, progress=False).read()["sq"].tolist()
[0.0, 1.0, 4.0, 9.0, 16.0]
"""

from __future__ import annotations

import abc
import io
import logging
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .choices import ENGINES
from .errors import StereoprobeError, StoreError

__all__ = ["ENGINES", "ShardJob", "ModelJob", "fill", "check_engine", "worker_device", "compute_dtype", "ray_workers"]

#: Accepted ``engine`` names.


def check_engine(engine: str, workers: int | None = None) -> str:
    """Validate the ``engine``/``workers`` parameters; returns the engine name.

    >>> check_engine("ray", 2)
    'ray'
    >>> check_engine("spark")
    Traceback (most recent call last):
    ...
    stereoprobe.errors.StereoprobeError: engine='spark' is not known; pass 'local' (this process) or 'ray' (Ray Data workers on this machine or the cluster at RAY_ADDRESS).
    """
    if engine not in ENGINES:
        raise StereoprobeError(f"engine={engine!r} is not known; pass 'local' (this process) or 'ray' (Ray Data "
                               "workers on this machine or the cluster at RAY_ADDRESS).")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1):
        raise StereoprobeError(f"workers={workers!r} is not a positive integer; pass e.g. workers=4 (one per GPU), "
                               "or None for one worker per GPU of the cluster.")
    if engine == "local" and workers not in (None, 1):
        raise StereoprobeError(f"workers={workers} needs engine='ray'; the local engine runs in this one process.")
    return engine


@dataclass
class ShardJob(abc.ABC):
    """The rows of a store run, cut into shards of ``shard_size`` rows; subclasses compute one shard.

    Subclasses implement :meth:`score_shard` (loading their model on first use) and must be picklable:
    the Ray engine ships the job to every worker.
    """

    n_rows: int
    shard_size: int
    #: what a worker builds on first use (loaded model, scorer); never pickled, so each worker builds its own
    state: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "state": {}}

    @property
    def n_shards(self) -> int:
        return -(-self.n_rows // self.shard_size)

    def rows(self, i: int) -> int:
        """Rows of shard ``i`` (the last shard may be shorter)."""
        return min(self.shard_size, self.n_rows - i * self.shard_size)

    def span(self, i: int) -> tuple[int, int]:
        """Positions ``[start, stop)`` of shard ``i``'s rows in the run's stream."""
        start = i * self.shard_size
        return start, start + self.rows(i)

    @abc.abstractmethod
    def score_shard(self, i: int) -> dict[str, np.ndarray]:
        """The columns of shard ``i`` (``pass_id`` + the run's schema), one row per pass."""

    def model_fingerprint(self) -> str | None:
        """The fingerprint of the model a worker loaded (checked against the run's key); None if no model."""
        return None



@dataclass(kw_only=True)
class ModelJob(ShardJob):
    """A shard job that scores with one model (hub id, folder, ``zoo:``/``lab:`` name) and the run settings every
    worker needs to load and run it: the probes' jobs add what they read."""

    model: str
    batch_tokens: int | None = None
    device: str = "cpu"
    precision: str = "fp32"
    smoke: bool = False

    def load_model(self, head: str):
        """The job's model loaded on this worker (:func:`stereoprobe.models.load`) with its weights in the job's
        precision: the dtype the run's store key records."""
        from .models import load

        return load(self.model, head, device=self.device, smoke=self.smoke, precision=self.precision)

def worker_device(device: str, engine: str = "local") -> str:
    """The device the scoring workers will use (it decides the precision and so the store key).

    Local: :func:`~stereoprobe.batching.resolve_device`. Ray: ``"cuda"`` when ``device`` is auto/cuda and
    the cluster has GPUs, else ``"cpu"`` (the driver itself may have no GPU).
    """
    from .batching import resolve_device

    if engine == "local":
        return str(resolve_device(device))
    name = str(device).strip().lower()
    if name == "cpu":
        return "cpu"
    gpus = _ray_resources().get("GPU", 0)
    if gpus:
        return "cuda"
    if name.startswith("cuda"):
        raise StereoprobeError(f"device={device!r} was requested but the Ray cluster has no GPU; pass device='cpu' "
                               "(or 'auto'), or start the cluster's workers with GPUs.")
    return "cpu"


def compute_dtype(device: str, precision: str) -> str:
    """The dtype name the workers compute in (part of the store key): ``float32``, ``bfloat16`` or ``float16``.

    Resolved on this machine (:func:`~stereoprobe.batching.resolve_precision`); a driver without a GPU that
    sends work to GPU workers cannot resolve ``"auto"`` and is asked for the precision by name.

    >>> compute_dtype("cpu", "auto"), compute_dtype("cpu", "bf16")
    ('float32', 'bfloat16')
    """
    import torch

    from .batching import DTYPES, PRECISION_ALIASES, resolve_precision

    if str(device).startswith("cuda") and not torch.cuda.is_available():  # GPU workers, driver without a GPU
        name = PRECISION_ALIASES.get(str(precision).strip().lower())
        if name in (None, "auto"):
            raise StereoprobeError(f"precision={precision!r} cannot be resolved on this machine, which has no GPU, for "
                                   "the cluster's GPU workers; pass precision='bf16' (or 'fp16', 'fp32') by name.")
        return str(DTYPES[name]).replace("torch.", "")
    return str(resolve_precision(device, precision)).replace("torch.", "")


def fill(run, job: ShardJob, *, engine: str = "local", workers: int | None = None, progress: bool = True,
         desc: str | None = None):
    """Compute the shards of ``run`` that are missing, with ``engine``, then finish the run.

    A complete run is returned untouched (no model is loaded). Every shard on disk must hold the rows
    the job gives it (a changed shard size is reported with the fix). Returns ``run``.
    """
    check_engine(engine, workers)
    if run.is_complete():
        return run
    from .batching import progress as _progress

    missing = []
    for i in range(job.n_shards):
        meta = run._shard_meta(i)
        if meta is None:
            missing.append(i)
        elif meta["n_rows"] != job.rows(i):
            raise StoreError(
                f"score shard {run.shard_path(i)} holds {meta['n_rows']} rows but shard {i} of this run has "
                f"{job.rows(i)} (written with another shard size?); delete {run.path} to recompute the run."
            )
    bar = _progress(None, total=job.n_shards, initial=job.n_shards - len(missing), unit="shard",
                    desc=desc or f"scoring {run.mode}", disable=not progress)
    try:
        if engine == "local" or not missing:
            for i in missing:
                _write(run, job, i, job.score_shard(i))
                bar.update()
        else:
            _fill_ray(run, job, missing, workers, bar)
    finally:
        bar.close()
    run.finish(job.n_shards, job.n_rows)
    return run


def _write(run, job: ShardJob, i: int, columns: dict[str, Any]) -> None:
    ids = np.asarray(columns.get("pass_id", ()))
    if len(ids) != job.rows(i):
        raise StoreError(f"shard {i} of {run.path} came back with {len(ids)} rows instead of {job.rows(i)}; "
                         "the scorer must return one row per pass.")
    run.write_shard(i, columns)


# -- Ray ---------------------------------------------------------------------------------------------------
def _ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is a dependency
        raise StereoprobeError("engine='ray' needs Ray; install it with `pip install 'ray[data]'`.") from exc
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        except ConnectionError as exc:
            raise StereoprobeError(f"could not connect to the Ray cluster at RAY_ADDRESS={address!r} ({exc}); start it "
                                   "with `ray start --head` or unset RAY_ADDRESS for a local one.") from exc
    return ray


def _ray_resources() -> dict[str, float]:
    return dict(_ray().cluster_resources())


def _pack(columns: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in columns.items()})
    return buf.getvalue()


def _unpack(blob: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


class _ShardWorker:
    """A Ray Data actor: loads the job's model once, turns shard indices into packed columns.

    A bad input (:class:`~stereoprobe.errors.StereoprobeError`) comes back as the row's ``error`` instead of
    being raised, so that the driver can stop with that one sentence (Ray would bury it in a traceback).
    """

    def __init__(self, job: ShardJob, threads: int | None, expected_fp: str | None):
        import socket

        if threads:
            import torch

            torch.set_num_threads(threads)
        self.job, self.expected_fp, self.host = job, expected_fp, socket.gethostname()
        self.checked = False

    def _score(self, i: int) -> bytes:
        columns = self.job.score_shard(i)
        if not self.checked:
            fp = self.job.model_fingerprint()
            if self.expected_fp is not None and fp is not None and fp != self.expected_fp:
                raise StereoprobeError(
                    f"the model files on Ray worker {self.host} differ from the driver's (fingerprint {fp} vs "
                    f"{self.expected_fp}); put the model in a folder every node sees, or pass a hub id.")
            self.checked = True
        return _pack(columns)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        blobs, errors = [], []
        for i in batch["shard"].tolist():
            try:
                blobs.append(self._score(int(i)))
                errors.append("")
            except StereoprobeError as err:
                blobs.append(b"")
                errors.append(str(err) or type(err).__name__)
        return {"shard": batch["shard"], "columns": np.array(blobs, dtype=object), "error": np.array(errors)}


def ray_workers(workers: int | None, resources: dict, on_gpu: bool, shards: int) -> tuple[int, int | None]:
    """(Ray workers, torch threads per CPU worker) for ``shards`` missing shards on a cluster with ``resources``: one
    worker per GPU by default (each holds one GPU), never more than the GPUs Ray sees, with one warning line when
    more were asked for; on CPUs half the cores by default, the cores shared out among them.

    >>> ray_workers(None, {"GPU": 2, "CPU": 16}, True, 10), ray_workers(None, {"CPU": 8}, False, 10)
    ((2, None), (4, 2))
    """
    gpus, cpus = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 1)))
    if on_gpu and not gpus:
        raise StereoprobeError("the job asks for a GPU but the Ray cluster has none; pass device='cpu'.")
    if workers is None:
        workers = gpus if on_gpu else max(1, cpus // 2)
    elif on_gpu and workers > gpus:  # each worker holds one GPU: more would wait for a GPU that never frees
        import warnings

        from .errors import StereoprobeWarning

        warnings.warn(f"workers={workers} but the Ray cluster has {gpus} GPU(s); running {gpus} workers, one per GPU.",
                      StereoprobeWarning, stacklevel=3)
        workers = gpus
    workers = max(1, min(workers, shards))
    return workers, (None if on_gpu else max(1, cpus // workers))


def _fill_ray(run, job: ShardJob, missing: list[int], workers: int | None, bar) -> None:
    _ray()  # Ray started, or connected to the cluster at RAY_ADDRESS
    import ray.data  # (binds `ray` as well)

    resources = _ray_resources()
    on_gpu = getattr(job, "device", "cpu") != "cpu"
    workers, threads = ray_workers(workers, resources, on_gpu, len(missing))
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    shards = ray.data.from_items([{"shard": i} for i in missing], override_num_blocks=len(missing))
    scored = shards.map_batches(
        _ShardWorker, fn_constructor_kwargs={"job": job, "threads": threads, "expected_fp": run.model_fp},
        batch_size=1, compute=ray.data.ActorPoolStrategy(size=workers), num_gpus=1 if on_gpu else 0,
        num_cpus=1 if on_gpu else threads, batch_format="numpy")
    for row in scored.iter_rows():
        if row["error"]:
            raise StereoprobeError(row["error"])
        _write(run, job, int(row["shard"]), _unpack(row["columns"]))
        bar.update()
