"""Shared inference utilities: token-budget batching, devices, precision, progress, chunking.

* :func:`token_budget_batches` cuts a stream of sequence lengths into batches whose padded size
  (longest length x batch size) stays within a token budget, optionally sorting by length inside
  windows of consecutive items so that padding shrinks while the stream stays a stream.
* :func:`resolve_device` / :func:`resolve_precision` / :func:`inference_context` turn the user's
  ``device``/``precision`` parameters into a :class:`torch.device`, an autocast dtype and a
  ``torch.inference_mode()`` + ``torch.autocast`` context.
* :func:`progress` is tqdm that ``STEREOPROBE_PROGRESS=0`` silences; :func:`chunked` cuts a
  stream into lists (the store's shards).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Sequence, TypeVar

import numpy as np
import torch
from tqdm import tqdm

from .choices import PRECISIONS
from .errors import StereoprobeError

__all__ = [
    "token_budget_batches",
    "padded_tokens",
    "DEFAULT_BATCH_TOKENS",
    "batch_tokens_for",
    "device_kind",
    "resolve_device",
    "resolve_precision",
    "inference_context",
    "progress",
    "quiet_transformers",
    "chunked",
    "to_device",
    "PRECISIONS",
]

T = TypeVar("T")

#: Accepted ``precision`` names (aliases map to the first four).
PRECISION_ALIASES = {
    "auto": "auto",
    "fp32": "fp32",
    "float32": "fp32",
    "32": "fp32",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "16": "fp16",
}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


#: Token budget per batch when none is given, by where the model's weights are. On a CPU a small batch is
#: fastest (``benchmarks/batch_budget.py``: 2,048 tokens score 1.2-1.4x faster than 8,192 on 2 cores); on a
#: GPU a large one (the ``gpu`` profiles' 65,536; lower it if the GPU runs out of memory).
DEFAULT_BATCH_TOKENS = {"cpu": 2048, "accelerator": 65536}


def batch_tokens_for(model: Any, batch_tokens: int | None) -> int:
    """``batch_tokens``, or when it is None the :data:`DEFAULT_BATCH_TOKENS` of the device ``model`` is on.

    >>> batch_tokens_for(torch.nn.Linear(2, 2), None), batch_tokens_for(torch.nn.Linear(2, 2), 512)
    (2048, 512)
    """
    if batch_tokens is not None:
        return batch_tokens
    device = getattr(model, "device", None)  # a transformers model's
    if device is None:
        try:
            device = next(model.parameters()).device
        except (AttributeError, StopIteration):  # a stand-in without weights
            device = "cpu"
    return DEFAULT_BATCH_TOKENS[device_kind(device)]


def device_kind(device: Any) -> str:
    """``"cpu"`` or ``"accelerator"``: the key of the defaults that depend on where the weights are
    (:data:`DEFAULT_BATCH_TOKENS`, :data:`stereoprobe.causal.DEFAULT_ROW_TOKENS`).

    >>> device_kind("cpu"), device_kind(torch.device("cuda", 1)), device_kind("mps")
    ('cpu', 'accelerator', 'accelerator')
    """
    return "cpu" if torch.device(device).type == "cpu" else "accelerator"


def positive_int(name: str, value: Any, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise StereoprobeError(f"{name}={value!r} is not a positive integer; pass e.g. {name}=4096.")
    return int(value)


def _cut(order: np.ndarray, lens: np.ndarray, max_tokens: int, max_batch: int | None) -> Iterator[np.ndarray]:
    """Greedy cut of ``order`` (indices into ``lens``) into budget-respecting batches."""
    start = 0
    longest = 0
    for pos in range(len(order)):
        length = int(lens[order[pos]])
        size = pos - start
        new_longest = max(longest, length)
        if size and (new_longest * (size + 1) > max_tokens or (max_batch is not None and size >= max_batch)):
            yield order[start:pos]
            start, longest = pos, length
        else:
            longest = new_longest
    if start < len(order):
        yield order[start:]


def _cut_sorted(order: np.ndarray, lens: np.ndarray, max_tokens: int, max_batch: int | None) -> Iterator[np.ndarray]:
    """The same greedy cut for ``order`` sorted by decreasing length, one step per batch.

    The first item of each batch is its longest, so the batch holds ``max_tokens // longest``
    items (at least one, at most ``max_batch``).
    """
    start, n = 0, len(order)
    cap = n if max_batch is None else max_batch
    while start < n:
        longest = int(lens[order[start]])
        size = max(1, max_tokens // longest) if longest else n
        stop = min(n, start + min(size, cap))
        yield order[start:stop]
        start = stop


def token_budget_batches(
    lengths: Iterable[int],
    max_tokens: int,
    max_batch: int | None = None,
    bucket: bool = True,
    window: int | None = None,
) -> Iterator[np.ndarray]:
    """Yield arrays of indices into ``lengths`` whose padded size fits ``max_tokens``.

    A batch ``b`` satisfies ``max(lengths[b]) * len(b) <= max_tokens`` (and
    ``len(b) <= max_batch``), except that a single item longer than ``max_tokens`` forms a batch
    of its own.  With ``bucket=True`` the indices of each window of ``window`` consecutive items
    (all items if ``window`` is None) are sorted by decreasing length (ties keep their order), so
    similar lengths share a batch and the longest batch of each window comes first (an
    out-of-memory error shows up at once); batches never span two windows, so ``lengths`` may be
    a lazy iterator when ``window`` is set.  With ``bucket=False`` the original order is kept.
    Every index appears exactly once; the result is deterministic.  Scatter results back with
    ``out[batch] = scores``.

    >>> [b.tolist() for b in token_budget_batches([5, 1, 5, 1], max_tokens=10)]
    [[0, 2], [1, 3]]
    >>> [b.tolist() for b in token_budget_batches([5, 1, 5, 1], max_tokens=10, bucket=False)]
    [[0, 1], [2, 3]]
    >>> [b.tolist() for b in token_budget_batches([3, 30, 3], max_tokens=8, bucket=False)]
    [[0], [1], [2]]
    """
    max_tokens = positive_int("max_tokens", max_tokens)
    max_batch = positive_int("max_batch", max_batch, allow_none=True)
    window = positive_int("window", window, allow_none=True)
    if window is None:  # read everything now, so bad lengths fail at the call
        blocks: Iterable[np.ndarray] = [_as_lengths(lengths)]
    else:
        it = iter(lengths)
        blocks = (_as_lengths(block) for block in iter(lambda: list(islice(it, window)), []))
    return _budget_batches(blocks, max_tokens, max_batch, bool(bucket))


def _as_lengths(items: Iterable[int]) -> np.ndarray:
    try:
        arr = np.asarray(items if isinstance(items, (list, tuple, np.ndarray)) else list(items))
    except (TypeError, ValueError) as exc:
        raise StereoprobeError(
            "lengths must be a sequence of non-negative integers (tokens per item); "
            "pass e.g. [len(ids) for ids in encodings['input_ids']]."
        ) from exc
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or arr.min() < 0:
        raise StereoprobeError(
            f"lengths must be a 1-D sequence of non-negative integers, got dtype {arr.dtype} "
            f"and shape {arr.shape}; pass e.g. [len(ids) for ids in encodings['input_ids']]."
        )
    return arr.astype(np.int64, copy=False)


def _budget_batches(
    blocks: Iterable[np.ndarray], max_tokens: int, max_batch: int | None, bucket: bool
) -> Iterator[np.ndarray]:
    offset = 0
    for lens in blocks:
        if bucket:
            order = np.argsort(-lens, kind="stable")
            batches = _cut_sorted(order, lens, max_tokens, max_batch)
        else:
            batches = _cut(np.arange(len(lens)), lens, max_tokens, max_batch)
        for batch in batches:
            yield batch + offset
        offset += len(lens)


def padded_tokens(lengths: Iterable[int], batches: Iterable[np.ndarray]) -> int:
    """Total tokens fed to the model, padding included: ``sum(max(len) * size)`` over batches.

    >>> lengths = [5, 1, 5, 1]
    >>> padded_tokens(lengths, token_budget_batches(lengths, 10, bucket=False))
    20
    >>> padded_tokens(lengths, token_budget_batches(lengths, 10))
    12
    """
    lens = np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths)
    return int(sum(int(lens[b].max()) * len(b) for b in batches if len(b)))


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Turn ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"`` into a usable device.

    ``"auto"`` picks CUDA when torch sees a GPU, else the CPU.  An unknown name, or a GPU that
    is not there, raises :class:`~stereoprobe.errors.StereoprobeError` saying what to pass.

    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("auto").type in {"cpu", "cuda"}
    True
    """
    if isinstance(device, torch.device):
        name = str(device)
    elif isinstance(device, str):
        name = device.strip().lower()
    else:
        raise StereoprobeError(
            f"device={device!r} is not a string; pass 'auto', 'cpu', 'cuda' or 'cuda:N'."
        )
    if name == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        raise StereoprobeError(
            f"device={device!r} is not a device name; pass 'auto', 'cpu', 'cuda' or 'cuda:N'."
        ) from exc
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise StereoprobeError(
                f"device={device!r} was requested but torch sees no CUDA GPU here; pass "
                "device='cpu' (or 'auto', which falls back to the CPU)."
            )
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise StereoprobeError(
                f"device={device!r} names GPU {dev.index} but only {count} GPU(s) are visible; "
                f"pass one of cuda:0..cuda:{count - 1}."
            )
        return dev
    if dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise StereoprobeError(
                f"device={device!r} was requested but torch sees no Apple MPS device; pass "
                "device='cpu' (or 'auto')."
            )
        return dev
    raise StereoprobeError(
        f"device={device!r} is not supported; pass 'auto', 'cpu', 'cuda' or 'cuda:N'."
    )


def resolve_precision(device: str | torch.device, precision: str = "auto") -> torch.dtype:
    """The compute dtype :func:`inference_context` will use (record it in the store's mode).

    ``"auto"`` is bf16 on a CUDA GPU that supports it, else fp16 on CUDA, and fp32 elsewhere.
    ``"fp32"``/``"bf16"``/``"fp16"`` (or ``float32``/``bfloat16``/``float16``) are taken
    literally; on the CPU bf16/fp16 use CPU autocast.  bf16 on a GPU without bf16 support raises.

    >>> resolve_precision("cpu")
    torch.float32
    >>> resolve_precision("cpu", "bf16")
    torch.bfloat16
    """
    if not isinstance(precision, str) or precision.strip().lower() not in PRECISION_ALIASES:
        raise StereoprobeError(
            f"precision={precision!r} is not known; pass one of {', '.join(PRECISIONS)}."
        )
    name = PRECISION_ALIASES[precision.strip().lower()]
    dev = resolve_device(device)
    if dev.type != "cuda":
        return torch.float32 if name == "auto" else DTYPES[name]
    bf16_ok = torch.cuda.is_bf16_supported()
    if name == "auto":
        return torch.bfloat16 if bf16_ok else torch.float16
    if name == "bf16" and not bf16_ok:
        raise StereoprobeError(
            f"precision='bf16' was requested but GPU {dev} does not support bfloat16; pass "
            "precision='fp16' or 'auto'."
        )
    return DTYPES[name]


@contextlib.contextmanager
def inference_context(device: str | torch.device = "auto", precision: str = "auto") -> Iterator[torch.dtype]:
    """``torch.inference_mode()`` plus ``torch.autocast`` at the resolved precision.

    Yields the compute dtype (see :func:`resolve_precision`); fp32 means no autocast at all.
    Move the model and inputs to ``resolve_device(device)`` yourself.

    >>> with inference_context("cpu") as dtype:
    ...     y = torch.ones(2, 2) @ torch.ones(2, 2)
    >>> dtype, y.dtype, y.requires_grad
    (torch.float32, torch.float32, False)
    >>> with inference_context("cpu", "bf16"):
    ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    torch.bfloat16
    """
    dev = resolve_device(device)
    dtype = resolve_precision(dev, precision)
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.inference_mode())
        if dtype != torch.float32:
            stack.enter_context(torch.autocast(device_type=dev.type, dtype=dtype))
        yield dtype


def progress_enabled() -> bool:
    """Whether progress bars show: on unless ``STEREOPROBE_PROGRESS`` is 0, false, no or off."""
    value = os.environ.get("STEREOPROBE_PROGRESS", "1").strip().lower()
    return value not in {"0", "false", "no", "off", ""}


@contextlib.contextmanager
def quiet_transformers(progress: bool | None = None, *, hide_future_warnings: bool = False) -> Iterator[None]:
    """Silence transformers inside the block, all restored afterwards: its log below errors (e.g. its
    multi-line load report: :func:`stereoprobe.models.load` says what is wrong in one sentence), its progress
    bars unless ``progress`` (default: on unless ``STEREOPROBE_PROGRESS=0``) and, with ``hide_future_warnings``,
    the deprecation warnings of calls into it (peft's, when the zoo trains)."""
    import warnings

    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    if not (progress_enabled() if progress is None else progress):
        hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings() if hide_future_warnings else contextlib.nullcontext():
            if hide_future_warnings:
                warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def progress(iterable: Iterable[T], total: int | None = None, desc: str | None = None, **kwargs: Any) -> tqdm:
    """A text tqdm bar over ``iterable`` (on stderr); ``STEREOPROBE_PROGRESS=0`` silences it.

    Extra keyword arguments go to :class:`tqdm.tqdm` (``disable=True`` also silences it).

    >>> sum(progress(range(4), desc="demo", disable=True))
    6
    """
    disable = bool(kwargs.pop("disable", False)) or not progress_enabled()
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    return tqdm(iterable, total=total, desc=desc, disable=disable, dynamic_ncols=True, **kwargs)


def padded_inputs(ids: Sequence[Sequence[int]], batch: Sequence[int], pad_id: int, device, *,
                  types: Sequence[Sequence[int]] | None = None, width: int | None = None) -> dict:
    """Model inputs for the rows ``batch`` (indices into ``ids``: an array of :func:`token_budget_batches`, a
    list, a range) of the token lists ``ids``, right-padded with ``pad_id`` to ``width`` (default: the longest
    row): ``input_ids``, ``attention_mask`` (1 on real tokens) and, when ``types`` is given,
    ``token_type_ids`` (0 on padding), as int64 tensors on ``device``, in that order. The one padding helper of
    the package (the static NLI model takes the lengths, ``attention_mask.sum(1)``).

    >>> x = padded_inputs([[5, 6, 7], [8]], np.array([1, 0]), 0, "cpu")
    >>> x["input_ids"].tolist(), x["attention_mask"].tolist()
    ([[8, 0, 0], [5, 6, 7]], [[1, 0, 0], [1, 1, 1]])
    >>> ids, mask = padded_inputs([[5, 6, 7], [8]], range(1), 0, "cpu").values()
    >>> ids.tolist(), mask.sum(1).tolist()
    ([[5, 6, 7]], [3])
    """
    lengths = [len(ids[i]) for i in batch]
    width = max(lengths) if width is None else width
    x = np.full((len(batch), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    tt = np.zeros((len(batch), width), dtype=np.int64) if types is not None else None
    for r, (i, n) in enumerate(zip(batch, lengths)):
        x[r, :n] = ids[i]
        mask[r, :n] = 1
        if tt is not None:
            tt[r, :n] = types[i]
    arrays = {"input_ids": x, "attention_mask": mask} | ({"token_type_ids": tt} if tt is not None else {})
    return {k: to_device(v, device) for k, v in arrays.items()}


def to_device(array: np.ndarray, device) -> torch.Tensor:
    """``array`` as a tensor on ``device``: on a CUDA device from pinned host memory without blocking (the copy
    overlaps the GPU's work and the host goes on), elsewhere a plain copy.

    >>> to_device(np.arange(3), "cpu").tolist()
    [0, 1, 2]
    """
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def chunked(iterable: Iterable[T], size: int) -> Iterator[list[T]]:
    """Cut a stream into lists of ``size`` items (the last may be shorter), lazily.

    >>> list(chunked(range(5), 2))
    [[0, 1], [2, 3], [4]]
    """
    size = positive_int("size", size)
    return _chunks(iter(iterable), size)


def _chunks(it: Iterator[T], size: int) -> Iterator[list[T]]:
    while chunk := list(islice(it, size)):
        yield chunk
