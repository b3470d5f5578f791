"""Shared inference utilities (stereoprobe.batching)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from stereoprobe import batching
from stereoprobe.batching import (
    chunked,
    inference_context,
    padded_tokens,
    progress,
    resolve_device,
    resolve_precision,
    token_budget_batches,
)
from stereoprobe.errors import StereoprobeError


def skewed_lengths(n: int = 2000, seed: int = 0) -> np.ndarray:
    """Mostly short sequences with a long tail, shuffled (like templated probes of mixed size)."""
    rng = np.random.default_rng(seed)
    short = rng.integers(8, 24, size=int(n * 0.8))
    long = rng.integers(60, 200, size=n - len(short))
    out = np.concatenate([short, long])
    rng.shuffle(out)
    return out


def check_batches(lengths, batches, max_tokens, max_batch=None):
    lengths = np.asarray(lengths)
    seen = np.concatenate(batches) if batches else np.zeros(0, int)
    assert sorted(seen.tolist()) == list(range(len(lengths)))  # every index exactly once
    for b in batches:
        assert len(b) >= 1 and b.dtype.kind == "i"
        if max_batch is not None:
            assert len(b) <= max_batch
        if len(b) > 1:
            assert lengths[b].max() * len(b) <= max_tokens
        # a lone batch may exceed the budget only when its single item is over-long
        elif lengths[b].max() > max_tokens:
            assert len(b) == 1


@pytest.mark.parametrize("bucket", [True, False])
@pytest.mark.parametrize("window", [None, 1, 7, 256, 10_000])
@pytest.mark.parametrize("max_batch", [None, 1, 16])
def test_coverage_and_budget(bucket, window, max_batch):
    lengths = skewed_lengths(1000)
    batches = list(token_budget_batches(lengths, 1024, max_batch=max_batch, bucket=bucket, window=window))
    check_batches(lengths, batches, 1024, max_batch)


def test_over_long_items_form_their_own_batch():
    lengths = [4, 50, 4, 4, 60, 4]
    for bucket in (True, False):
        batches = [b.tolist() for b in token_budget_batches(lengths, 16, bucket=bucket)]
        assert [1] in batches and [4] in batches
        check_batches(lengths, [np.array(b) for b in batches], 16)


def test_no_bucketing_keeps_order():
    lengths = skewed_lengths(500)
    batches = list(token_budget_batches(lengths, 512, bucket=False))
    np.testing.assert_array_equal(np.concatenate(batches), np.arange(500))


def test_bucketing_reduces_padding():
    lengths = skewed_lengths(4000)
    plain = padded_tokens(lengths, token_budget_batches(lengths, 2048, bucket=False))
    bucketed = padded_tokens(lengths, token_budget_batches(lengths, 2048, bucket=True))
    windowed = padded_tokens(lengths, token_budget_batches(lengths, 2048, bucket=True, window=500))
    real = int(lengths.sum())
    assert real <= bucketed < plain
    assert real <= windowed < plain
    assert bucketed < 1.2 * real  # nearly no padding left
    assert plain > 2 * real  # the skewed stream wastes most of an unsorted batch


def test_windows_stay_local_and_stream():
    lengths = skewed_lengths(1000)
    consumed = []

    def lazy():
        for i, n in enumerate(lengths):
            consumed.append(i)
            yield int(n)

    gen = token_budget_batches(lazy(), 512, window=100)
    first = next(gen)
    assert len(consumed) == 100  # only the first window was read
    assert first.max() < 100
    rest = list(gen)
    batches = [first, *rest]
    check_batches(lengths, batches, 512)
    for b in batches:  # no batch spans two windows
        assert len(set((b // 100).tolist())) == 1


def test_bucketing_sorts_longest_first_with_stable_ties():
    lengths = [3, 9, 3, 9, 5]
    batches = [b.tolist() for b in token_budget_batches(lengths, 100)]
    assert batches == [[1, 3, 4, 0, 2]]
    batches = [b.tolist() for b in token_budget_batches(lengths, 18)]
    assert batches == [[1, 3], [4, 0, 2]]


def test_deterministic():
    lengths = skewed_lengths(3000)
    runs = [
        [b.tolist() for b in token_budget_batches(lengths, 1000, max_batch=32, window=300)]
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]
    # lists, numpy arrays and iterators give the same batches
    assert runs[0] == [
        b.tolist() for b in token_budget_batches(iter(lengths.tolist()), 1000, max_batch=32, window=300)
    ]


def test_empty_input():
    assert list(token_budget_batches([], 10)) == []
    assert list(token_budget_batches(iter(()), 10, window=5)) == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_tokens": 0}, "max_tokens=0 is not a positive integer"),
        ({"max_tokens": 10.5}, "max_tokens=10.5"),
        ({"max_batch": 0}, "max_batch=0"),
        ({"window": -1}, "window=-1"),
        ({"lengths": [1, -2]}, "non-negative integers"),
        ({"lengths": [1.5, 2]}, "non-negative integers"),
        ({"lengths": [[1, 2]]}, "1-D"),
    ],
)
def test_batching_validation(kwargs, match):
    args = {"lengths": [1, 2, 3], "max_tokens": 10, **kwargs}
    with pytest.raises(StereoprobeError, match=match):
        token_budget_batches(**args)  # fails at the call, not on first iteration
    with pytest.raises(StereoprobeError, match=match):
        list(token_budget_batches(**args, window=2) if "window" not in kwargs else token_budget_batches(**args))


def test_resolve_device_cpu_and_auto():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device().type == expected


@pytest.mark.parametrize("bad", ["gpu", "tpu0", "", "cuda:x", 3])
def test_resolve_device_unknown(bad):
    with pytest.raises(StereoprobeError, match="pass 'auto', 'cpu', 'cuda'"):
        resolve_device(bad)


def test_resolve_device_cuda_unavailable(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(StereoprobeError, match="no CUDA GPU.*device='cpu'"):
        resolve_device("cuda")
    with pytest.raises(StereoprobeError, match="no CUDA GPU"):
        resolve_device("cuda:1")
    assert resolve_device("auto") == torch.device("cpu")


def test_resolve_device_gpu_index(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == torch.device("cuda:0")
    with pytest.raises(StereoprobeError, match="only 1 GPU"):
        resolve_device("cuda:3")


def test_precision_on_cpu():
    assert resolve_precision("cpu") == torch.float32
    assert resolve_precision("cpu", "auto") == torch.float32
    assert resolve_precision("cpu", "FP32") == torch.float32
    assert resolve_precision("cpu", "bfloat16") == torch.bfloat16
    assert resolve_precision("cpu", "fp16") == torch.float16


def test_precision_on_cuda_is_decided_by_bf16_support(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("cuda", "auto") == torch.bfloat16
    assert resolve_precision("cuda", "fp16") == torch.float16
    assert resolve_precision("cuda", "fp32") == torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_precision("cuda", "auto") == torch.float16
    with pytest.raises(StereoprobeError, match="does not support bfloat16; pass precision='fp16'"):
        resolve_precision("cuda", "bf16")


@pytest.mark.parametrize("bad", ["fp8", "int8", "", None, 16.0])
def test_precision_validation(bad):
    with pytest.raises(StereoprobeError, match="pass one of auto, fp32, bf16, fp16"):
        resolve_precision("cpu", bad)
    with pytest.raises(StereoprobeError, match="precision="):
        with inference_context("cpu", bad):
            pass  # pragma: no cover


def test_inference_context_cpu():
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with inference_context("cpu") as dtype:
        y = lin(x)
        assert torch.is_inference_mode_enabled()
        assert not torch.is_autocast_enabled("cpu")
    assert dtype == torch.float32 and y.dtype == torch.float32 and not y.requires_grad
    assert not torch.is_inference_mode_enabled()
    with inference_context("cpu", "bf16") as dtype:
        assert torch.is_autocast_enabled("cpu")
        assert lin(x).dtype == torch.bfloat16
    assert dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")


def test_inference_context_bad_device():
    with pytest.raises(StereoprobeError, match="device='gpu'"):
        with inference_context("gpu"):
            pass  # pragma: no cover


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_inference_context_cuda():  # pragma: no cover - runs on the device machine
    lin = torch.nn.Linear(4, 4).cuda()
    with inference_context("cuda") as dtype:
        y = lin(torch.randn(2, 4, device="cuda"))
    assert dtype in (torch.bfloat16, torch.float16) and y.dtype == dtype


def test_progress_respects_env(monkeypatch, capsys):
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")
    assert list(progress(range(3), desc="quiet")) == [0, 1, 2]
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "1")
    assert list(progress(iter(range(3)), total=3, desc="loud", mininterval=0)) == [0, 1, 2]
    assert "loud" in capsys.readouterr().err
    assert list(progress([1, 2], disable=True)) == [1, 2]
    assert capsys.readouterr().err == ""


def test_chunked():
    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunked([], 3)) == []
    assert list(chunked("abcd", 2)) == [["a", "b"], ["c", "d"]]
    consumed = []

    def lazy():
        for i in range(10):
            consumed.append(i)
            yield i

    it = chunked(lazy(), 4)
    assert next(it) == [0, 1, 2, 3] and len(consumed) == 4
    with pytest.raises(StereoprobeError, match="size=0 is not a positive integer"):
        chunked(range(3), 0)


def test_public_names():
    for name in batching.__all__:
        assert getattr(batching, name).__doc__ or name == "PRECISIONS"


@pytest.mark.parametrize("seed", range(5))
def test_fast_sorted_cut_matches_greedy_cut(seed):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 50, size=500)
    lens[rng.integers(0, 500, size=5)] = 400  # a few over-long items
    order = np.argsort(-lens, kind="stable")
    for max_tokens, max_batch in [(64, None), (100, 7), (1, None), (10_000, None), (10_000, 3)]:
        fast = [b.tolist() for b in batching._cut_sorted(order, lens, max_tokens, max_batch)]
        slow = [b.tolist() for b in batching._cut(order, lens, max_tokens, max_batch)]
        assert fast == slow


def test_the_default_budget_follows_the_device_of_the_weights(tiny_bert_qa):
    """None picks 2,048 tokens on a CPU and 65,536 on a GPU (benchmarks/batch_budget.py); a given budget stays."""
    from types import SimpleNamespace

    from stereoprobe.batching import DEFAULT_BATCH_TOKENS, batch_tokens_for
    from stereoprobe.models import load
    from stereoprobe.unqover.score_qa import QAScorer

    assert DEFAULT_BATCH_TOKENS == {"cpu": 2048, "accelerator": 65536}
    assert batch_tokens_for(SimpleNamespace(device=torch.device("cuda", 1)), None) == 65536
    assert batch_tokens_for(SimpleNamespace(device=torch.device("mps")), None) == 65536
    assert batch_tokens_for(SimpleNamespace(device=torch.device("cuda")), 4096) == 4096
    loaded = load(str(tiny_bert_qa), "qa", device="cpu")
    assert QAScorer(loaded).batch_tokens == 2048 and QAScorer(loaded, batch_tokens=512).batch_tokens == 512
