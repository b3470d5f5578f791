"""How a probe runs, apart from what it studies: one frozen object that every entry point takes.

A study is a model, a dataset, a sample and how a prompted model is asked (its template, chat, rung, thinking,
samples and temperature: :class:`stereoprobe.prompting.Prompting`, part of each probe's question); a run is where and how it is computed — device, precision, the token
budget of a batch, CPU threads, the engine and its workers, the score store and progress bars. The three probes'
``report`` functions (:func:`stereoprobe.unqover.report`, :func:`stereoprobe.nli.report`,
:func:`stereoprobe.sodapop.report`), the store-level scorers below them (``score_dataset``, ``score_pairs``,
``run_probe``, …: keyword ``options``), the command line and the book's chapters all take one :class:`RunOptions`,
so the same settings are spelled once, checked once, and give the same numbers wherever they are used. No
setting here changes a score beyond floating-point noise except ``precision`` (and it enters the score store's
key, so bf16 and fp32 scores are kept apart).

>>> RunOptions()
RunOptions(device='auto', precision='auto', batch_tokens=None, threads=None, engine='local', workers=None, store=None, progress=None, smoke=False, concurrency=None, max_requests=None, tokenizer=None)
>>> RunOptions(device="cpu", batch_tokens=2048).replace(precision="fp32").precision
'fp32'
>>> RunOptions(device="gpu")
Traceback (most recent call last):
stereoprobe.errors.StereoprobeError: RunOptions device='gpu' is not a device; pass auto, cpu, cuda, cuda:N (GPU N) or mps.
>>> RunOptions(workers=2)
Traceback (most recent call last):
stereoprobe.errors.StereoprobeError: workers=2 needs engine='ray'; the local engine runs in this one process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

from .choices import PRECISIONS, is_device
from .errors import StereoprobeError


def _positive_int(name: str, value: Any, example: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise StereoprobeError(f"RunOptions {name}={value!r} is not a positive integer; pass e.g. {example}, or None "
                               "for the default.")


class RunState:
    """What a run opens and learns as it goes, held by its :class:`RunOptions` and gone with it: a served model's
    session (its client, journal and budget of requests), the first-use probe's verdict on an endpoint, the check of
    a chat template — each under a key of what it depends on (the model's name, the endpoint's address, the score
    store), never under the ``id()`` of an object. A copy sent to another process (a Ray worker) starts empty;
    :meth:`RunOptions.replace` makes a new run with a state of its own.

    >>> state = RunState()
    >>> state.get(("probe", "http://127.0.0.1:8000"), lambda: "verdict"), len(state)
    ('verdict', 1)
    >>> state.get(("probe", "http://127.0.0.1:8000"), lambda: "asked again")
    'verdict'
    """

    def __init__(self):
        self._items: dict = {}
        self._lock = threading.RLock()

    def get(self, key: tuple, make):
        """The item under ``key``, made by ``make()`` the first time (an error leaves nothing behind)."""
        with self._lock:
            if key not in self._items:
                self._items[key] = make()
            return self._items[key]

    def __len__(self) -> int:
        return len(self._items)

    def __reduce__(self):
        return (RunState, ())


@dataclass(frozen=True)
class RunOptions:
    """Where and how a probe computes its scores (not what it studies).

    * ``device`` — ``auto`` (a GPU if torch sees one, else the CPU), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
    * ``precision`` — ``auto`` (bf16 on a GPU that has it, else fp16; fp32 on a CPU), ``fp32``, ``bf16`` or
      ``fp16``. SODAPOP reads ``auto`` as fp32: its top-10 fills are tie-sensitive.
    * ``batch_tokens`` — padded tokens per batch; None: 2,048 on a CPU, 65,536 on a GPU
      (:data:`stereoprobe.batching.DEFAULT_BATCH_TOKENS`).
    * ``threads`` — torch's CPU threads while the probe runs (restored afterwards); None: torch's own choice, one
      per core, which with passive waiting (:data:`~stereoprobe.options.WAIT_POLICY`) is the best choice alone and beside a busy
      neighbour (measured: ``benchmarks/threads.py``). The probes' ``report`` and ``score`` functions apply it
      (:meth:`~stereoprobe.RunOptions.applied`); around a store-level scorer called directly, use
      ``with options.applied():``.
    * ``engine`` / ``workers`` — ``local`` (this process) or ``ray`` (Ray Data workers: this machine's GPUs, or the
      cluster at ``RAY_ADDRESS``; ``workers`` of them, default one per GPU). Identical results.
    * ``store`` — the score-store folder (a path or a :class:`~stereoprobe.store.ScoreStore`); None:
      ``scores/`` in the stereoprobe cache folder. Every forward pass is stored once and reused.
    * ``progress`` — progress bars; None: on unless ``STEREOPROBE_PROGRESS=0``.
    * ``smoke`` — resolve ``zoo:`` and ``lab:`` names to their seconds-sized smoke builds (tests, the smoke
      profile of the book).
    * ``concurrency`` / ``max_requests`` — served models (:mod:`stereoprobe.served`): requests in flight at once
      (None: 16), and a budget of requests for the run (the requests answered under this object; None: none) that
      stops cleanly; the same call goes on.
    * ``tokenizer`` — served chat models on the exact rung: the model's own tokenizer (a hub id or a folder), whose
      chat template is applied here, for a server that does not apply it itself (None: the server's, through its
      ``/tokenize``; :mod:`stereoprobe.served.chat_exact`).

    Beside the settings, an object holds the state of its run (:attr:`state`, a :class:`RunState`): what the run
    opened and learned (a served model's session and budget, an endpoint's probe), kept for every report and row
    read with the same object, and started afresh by a new one (or :meth:`replace`).
    """

    device: str = "auto"
    precision: str = "auto"
    batch_tokens: int | None = None
    threads: int | None = None
    engine: str = "local"
    workers: int | None = None
    store: Any = None
    progress: bool | None = None
    smoke: bool = False
    concurrency: int | None = None
    max_requests: int | None = None
    tokenizer: str | None = None
    #: The run's state (:class:`RunState`): not a setting, so neither compared, shown nor copied.
    state: RunState = field(default_factory=RunState, init=False, repr=False, compare=False)

    def __post_init__(self):
        from .engine import check_engine

        if not is_device(self.device):
            raise StereoprobeError(f"RunOptions device={self.device!r} is not a device; pass auto, cpu, cuda, cuda:N "
                                   "(GPU N) or mps.")
        if self.precision not in PRECISIONS:
            raise StereoprobeError(f"RunOptions precision={self.precision!r} is not known; pass one of "
                                   f"{', '.join(PRECISIONS)}.")
        _positive_int("batch_tokens", self.batch_tokens, "2048")
        _positive_int("threads", self.threads, "1")
        _positive_int("concurrency", self.concurrency, "16")
        _positive_int("max_requests", self.max_requests, "1000")
        check_engine(self.engine, self.workers)
        if self.tokenizer is not None and (not isinstance(self.tokenizer, (str, os.PathLike)) or not str(self.tokenizer)):
            raise StereoprobeError(f"RunOptions tokenizer={self.tokenizer!r} is not a name; pass a hub id or a folder "
                                   "with the served model's tokenizer files, or None for the server's chat template.")
        if self.store is not None and not isinstance(self.store, (str, os.PathLike)) and not hasattr(self.store, "run"):
            raise StereoprobeError(f"RunOptions store={self.store!r} is neither a folder path nor a ScoreStore; pass "
                                   "a path, or None for the cache folder's scores/.")

    def replace(self, **changes) -> "RunOptions":
        """A copy with ``changes`` (checked like a new one): a new run, with a :class:`RunState` of its own."""
        return dataclasses.replace(self, **changes)

    @property
    def show_progress(self) -> bool:
        """Whether progress bars show (``progress``, or the ``STEREOPROBE_PROGRESS`` default)."""
        from .batching import progress_enabled

        return progress_enabled() if self.progress is None else bool(self.progress)

    def dtype(self, auto: str | None = None) -> str:
        """The dtype the run computes in, resolved once for the run (kept in its :attr:`state`): ``float32``,
        ``bfloat16`` or ``float16`` on the device its workers use (:func:`stereoprobe.engine.worker_device`,
        :func:`stereoprobe.engine.compute_dtype`). ``auto``: what ``precision="auto"`` means for this probe (SODAPOP's
        ``"fp32"``), None for the device's default. Everything below the entry points receives this name, so no
        layer decides ``auto`` again.

        >>> RunOptions(device="cpu").dtype(), RunOptions(device="cpu", precision="bf16").dtype()
        ('float32', 'bfloat16')
        """
        precision = auto if self.precision == "auto" and auto is not None else self.precision

        def resolve() -> str:
            from .engine import compute_dtype, worker_device

            return compute_dtype(worker_device(self.device, self.engine), precision)

        return self.state.get(("dtype", precision), resolve)

    def score_store(self):
        """The :class:`~stereoprobe.store.ScoreStore` scores go to: ``store``, or with None the cache folder's
        ``scores/``."""
        from .store import ScoreStore

        return self.store if hasattr(self.store, "run") else ScoreStore(self.store)

    @contextlib.contextmanager
    def applied(self) -> Iterator["RunOptions"]:
        """Inside the block torch uses ``threads`` CPU threads (when set); the previous count is restored."""
        if self.threads is None:
            yield self
            return
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield self
        finally:
            torch.set_num_threads(before)


#: OpenMP's wait policy in the processes stereoprobe starts itself (the ``stereoprobe`` command, the book's kernels):
#: torch's threads sleep at a barrier instead of spinning. Passive waiting with every core (``threads=None``) is the
#: best worst case of spinning, passive and one thread, alone and beside a busy neighbour (``benchmarks/threads.py``;
#: the figures are in the book's *Rerunning at scale*, CPU threads), so it is the default. It must be set before torch
#: starts its thread pool: a Python session that imported torch already keeps its policy (set
#: ``OMP_WAIT_POLICY=PASSIVE`` before starting Python, or pass ``RunOptions(threads=1)`` on a shared machine).
WAIT_POLICY = "PASSIVE"


def prefer_passive_waiting(env=os.environ) -> str:
    """Set ``OMP_WAIT_POLICY`` to :data:`WAIT_POLICY` in ``env`` unless the user chose one; returns the policy.

    >>> prefer_passive_waiting({}), prefer_passive_waiting({"OMP_WAIT_POLICY": "ACTIVE"})
    ('PASSIVE', 'ACTIVE')
    """
    return env.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)


def as_options(options: "RunOptions | None" = None, **overrides) -> RunOptions:
    """``options`` (default :class:`RunOptions`) with the ``overrides`` that are not None — how the entry points
    accept both one object and the occasional keyword.

    >>> as_options(None, device="cpu").device, as_options(RunOptions(precision="fp32"), device=None).precision
    ('cpu', 'fp32')
    """
    if options is not None and not isinstance(options, RunOptions):
        raise StereoprobeError(f"options={options!r} is not a RunOptions; pass stereoprobe.RunOptions(device=..., ...).")
    base = options or RunOptions()
    changes = {k: v for k, v in overrides.items() if v is not None}
    return base.replace(**changes) if changes else base


__all__ = ["RunOptions", "RunState", "WAIT_POLICY", "as_options", "prefer_passive_waiting"]
