"""A model's own output head read in fp32, on the positions a probe scores, in chunks of bounded size.

Every scorer of the package turns a model's last hidden states into logits through the model's own head code (the
vocabulary projection with whatever the family adds: Gemma 2's ``final_logit_softcapping``, Cohere's ``logit_scale``,
a classifier's pooler and dense layer, …), then takes a softmax or log-softmax. Two things go wrong when that head
runs in the compute dtype of a half-precision run:

* **Rounding.** bf16 keeps 8 significant bits, so a logit of 10–30 is rounded by 0.03–0.125 before the
  log-softmax, an error of that size in every score. Here the body (the transformer layers) runs in the compute
  dtype, and the head runs with its weights and inputs in fp32 and autocast off, so its logits carry the body's
  rounding only. A causal LM's vocabulary projection reads its body's bf16 output, whose products TF32 computes
  exactly: on a CUDA GPU that head runs in TF32 (``Readout(tf32=True)``), 8x the fp32 rate on an H100.
* **Memory.** The logits of ``positions × vocabulary`` in fp32, with their log-softmax, take 8 bytes per entry:
  65,536 scored positions of Llama 3's 128,256-word vocabulary are 67 GB. Here the head runs on at most
  :func:`rows_per_chunk` positions at a time, :data:`HEAD_BYTES` of fp32 logits (1 GiB by default), so the head's
  working memory stays below about 4 × :data:`HEAD_BYTES` (the logits, their log-softmax and a family's
  temporaries) plus the head's weights in fp32, whatever the share of positions scored.

How: :meth:`Readout.body` runs the model's own ``forward`` with a hook on its body (the decoder or encoder whose
output the head reads) that keeps only the hidden states of the positions asked for (and lets the head see one of
them, so nothing large is computed in the compute dtype); :meth:`Readout.head` runs the model's own ``forward``
again with the body replaced, for that one call, by those kept hidden states (a slice of them) in fp32, and the head's
parameters replaced by fp32 copies (:func:`torch.func.functional_call`, tied weights followed). Where the head's
weights are fp32 already (an fp32 run), nothing is copied.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Iterator

import torch

__all__ = ["HEAD_BYTES", "Readout", "body_of", "fp32_call", "rows_per_chunk", "model_dtype", "compute_dtype_head"]

#: fp32 logits per head chunk, in bytes (1 GiB): a chunk holds ``HEAD_BYTES // (4 × vocabulary)`` positions.
HEAD_BYTES = 1 << 30

#: fp32 copies of half-precision head parameters, per model (dropped with the model).
_FP32: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()
#: True: heads run in fp32 (the default); False inside :func:`compute_dtype_head` (benchmarks compare the two).
_HEAD_FP32 = [True]


@contextlib.contextmanager
def compute_dtype_head() -> Iterator[None]:
    """Inside the block heads run in the compute dtype, as before stereoprobe 0.8.0 (for the benchmarks' comparison
    of the cost of fp32 heads only: the scores are rounded as the module doc says)."""
    _HEAD_FP32.append(False)
    try:
        yield
    finally:
        _HEAD_FP32.pop()


def rows_per_chunk(vocabulary: int, head_bytes: int | None = None) -> int:
    """Positions per head chunk: as many fp32 logit rows of ``vocabulary`` entries as fit in ``head_bytes`` (default
    :data:`HEAD_BYTES`), at least one.

    >>> rows_per_chunk(128_256), rows_per_chunk(30_522), rows_per_chunk(10**12)
    (2092, 8794, 1)
    """
    budget = HEAD_BYTES if head_bytes is None else int(head_bytes)
    return max(1, budget // (4 * max(1, int(vocabulary))))


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype most of ``model``'s floating-point weights have (the dtype it runs in; a few modules a family keeps
    in fp32 do not change it).

    >>> model_dtype(torch.nn.Linear(2, 2).to(torch.bfloat16))
    torch.bfloat16
    """
    counts: dict[torch.dtype, int] = {}
    for p in model.parameters():
        if p.is_floating_point():
            counts[p.dtype] = counts.get(p.dtype, 0) + p.numel()
    return max(counts, key=counts.get) if counts else torch.float32


def body_of(model: torch.nn.Module) -> torch.nn.Module | None:
    """The module whose output the head reads: the decoder transformers names (``get_decoder``: OPT's
    ``model.decoder``, which its causal LM calls directly; Llama's ``model``; GPT-2's ``transformer``) unless that is
    the vocabulary projection itself (ModernBERT's ``decoder``), else the base model (``base_model_prefix``: BERT's
    ``bert``, …); None if there is none."""
    try:
        body = model.get_decoder() if hasattr(model, "get_decoder") else None
    except (AttributeError, NotImplementedError, ValueError):
        body = None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if isinstance(body, torch.nn.Module) and body is not model and body is not head:
        return body
    prefix = getattr(model, "base_model_prefix", "")
    body = getattr(model, prefix, None) if prefix else None
    return body if isinstance(body, torch.nn.Module) and body is not model else None


def _fp32_copies(model: torch.nn.Module, names: list[str]) -> dict[str, torch.Tensor]:
    """fp32 copies of the named parameters (cached for the model while their sources are unchanged)."""
    params = dict(model.named_parameters(remove_duplicate=False))
    cache = _FP32.setdefault(model, {})
    out, shared = {}, {}
    for name in names:
        p = params[name]
        if id(p) in shared:  # a tied weight (BERT's decoder bias is its predictions' bias): one copy for all names
            out[name] = shared[id(p)]
            continue
        key = (p.data_ptr(), p.dtype, p.device, tuple(p.shape))
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = p.detach().float()
        out[name] = shared[id(p)] = hit
    return out


def _autocast_off(device: torch.device):
    return torch.autocast(device_type=device.type, enabled=False)


def fp32_call(module: torch.nn.Module, *inputs):
    """``module(*inputs)`` with its parameters and floating-point inputs in fp32 and autocast off (a small head:
    a classifier, a masked LM's vocabulary head). With :func:`compute_dtype_head` active, a plain call.

    >>> lin = torch.nn.Linear(2, 1).to(torch.bfloat16)
    >>> fp32_call(lin, torch.ones(1, 2, dtype=torch.bfloat16)).dtype
    torch.float32
    """
    if not _HEAD_FP32[-1]:
        return module(*inputs)
    args = tuple(x.float() if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs)
    device = next((p.device for p in module.parameters()), torch.device("cpu"))
    names = [n for n, p in module.named_parameters(remove_duplicate=False) if p.dtype != torch.float32
             and p.is_floating_point()]
    with _autocast_off(device):
        if not names:
            return module(*args)
        return torch.func.functional_call(module, _fp32_copies(module, names), args, tie_weights=True, strict=False)


def _cast(value: Any, rows: slice | None = None, hidden: bool = False):
    if torch.is_tensor(value):
        if hidden and rows is not None:
            value = value[:, rows]
        return value.float() if value.is_floating_point() else value
    return value


class Readout:
    """Reads ``model``'s head in fp32 at chosen positions (module doc). ``body``: the module whose output the head
    reads (default :func:`body_of`)."""

    def __init__(self, model: torch.nn.Module, body: torch.nn.Module | None = None, *, tf32: bool = False):
        self.model = model
        #: on a CUDA device, the head's fp32 products in TF32 (exact where its inputs are bf16 or fp16 numbers, as a
        #: causal LM's vocabulary projection of its body's half-precision output is; 8x the fp32 rate on an H100)
        self.tf32 = bool(tf32)
        #: the module whose output the head reads
        self.body_module = body if body is not None else body_of(model)
        if self.body_module is None:
            raise ValueError(f"{type(model).__name__} has no body module its head reads from")
        prefix = next(name for name, module in model.named_modules() if module is self.body_module)
        inside = prefix + "."
        #: head parameters that are not fp32 (copied to fp32 for the head's call)
        self.half = [n for n, p in model.named_parameters(remove_duplicate=False)
                     if not n.startswith(inside) and p.is_floating_point() and p.dtype != torch.float32]
        self.device = next(model.parameters()).device

    def body(self, inputs: dict, keep: torch.Tensor | None = None):
        """Run the model's forward on ``inputs`` and return its body's output, where ``keep`` (flat indices into
        batch × length, on the model's device) gives the positions kept: the hidden states become ``[1, len(keep),
        width]``; the head of that call sees only the first of them."""
        captured = {}

        def hook(module, args, output):
            hidden = output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0]
            if keep is not None:
                hidden = hidden.reshape(-1, hidden.shape[-1]).index_select(0, keep).unsqueeze(0)
            captured["out"] = _replace_hidden(output, hidden)
            if keep is None:
                return output
            return _replace_hidden(output, hidden[:, :1])  # the head of this call: one position, discarded

        handle = self.body_module.register_forward_hook(hook)
        try:
            self.model(**inputs)
        finally:
            handle.remove()
        return captured["out"]

    def head(self, inputs: dict, output, rows: slice | None = None):
        """The model's forward on ``inputs`` with the body's ``output`` given (its hidden states' ``rows`` along the
        second axis, for a chunk of kept positions), the head's weights and inputs in fp32, autocast off."""
        if not _HEAD_FP32[-1]:
            stub = _replace_hidden(output, _hidden(output)[:, rows] if rows is not None else _hidden(output))
            with _stubbed(self.body_module, stub):
                return self.model(**inputs)
        stub = _map_output(output, rows)
        tf32 = self.tf32 and self.device.type == "cuda"
        with _stubbed(self.body_module, stub), _autocast_off(self.device), _matmul_tf32(tf32):
            if not self.half:
                return self.model(**inputs)
            return torch.func.functional_call(self.model, _fp32_copies(self.model, self.half), (), inputs,
                                              tie_weights=True, strict=False)


def _hidden(output):
    return output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0]


def _replace_hidden(output, hidden):
    if hasattr(output, "last_hidden_state"):
        return type(output)(**{**output, "last_hidden_state": hidden})
    return (hidden, *output[1:])


def _map_output(output, rows: slice | None):
    """The body's output with every floating tensor in fp32 (the hidden states' ``rows`` only)."""
    if hasattr(output, "last_hidden_state"):
        fields = {k: _cast(v, rows, k == "last_hidden_state") for k, v in output.items()}
        return type(output)(**fields)
    return tuple(_cast(v, rows, i == 0) for i, v in enumerate(output))


@contextlib.contextmanager
def _matmul_tf32(on: bool) -> Iterator[None]:
    """fp32 matrix products in TF32 inside the block when ``on`` (torch's float32 matmul precision ``high``)."""
    if not on:
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


@contextlib.contextmanager
def _stubbed(module: torch.nn.Module, output) -> Iterator[None]:
    """``module`` returns ``output`` for every call inside the block (its own forward is not run)."""
    had = "forward" in module.__dict__
    old = module.__dict__.get("forward")
    module.forward = lambda *args, **kwargs: output
    try:
        yield
    finally:
        if had:
            module.forward = old
        else:
            del module.forward
