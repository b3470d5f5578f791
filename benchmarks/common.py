"""What the benchmarks share: random models of a given size, FLOP counts and peaks, peak RSS.

Every benchmark measures its baseline in the same run and prints ratios; nothing here asserts a speed.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np

#: hidden size, layers, heads, feed-forward size
SIZES = {"base": (768, 12, 12, 3072), "large": (1024, 24, 16, 4096), "small": (512, 4, 8, 2048),
         "mini": (384, 6, 12, 1536), "tiny": (64, 2, 2, 128)}

#: nominal dense peak TFLOP/s by (GPU name fragment, dtype) — vendor datasheets (SXM parts, no sparsity)
NOMINAL_PEAK = {("H100", "bfloat16"): 989.4, ("H100", "float16"): 989.4, ("H100", "float32"): 66.9,
                ("H200", "bfloat16"): 989.4, ("H200", "float16"): 989.4, ("H200", "float32"): 66.9,
                ("A100", "bfloat16"): 312.0, ("A100", "float16"): 312.0, ("A100", "float32"): 19.5,
                ("L4", "bfloat16"): 121.0, ("L4", "float16"): 121.0, ("L4", "float32"): 30.3}


def random_model(size: str, head: str, folder: Path) -> Path:
    """A randomly initialised BERT of ``size`` with the bert-base-uncased vocabulary (MiniLM's tokenizer),
    saved to ``folder`` with a ``qa``, ``mlm`` or ``nli`` head: real shapes and tokens, no hub (speed only)."""
    import torch
    from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM, BertForQuestionAnswering,
                              BertForSequenceClassification)

    from stereoprobe.assets import asset_folder

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(asset_folder("minilm"))
    d, layers, heads, ff = SIZES[size]
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    extra = dict(num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()}) if head == "nli" else {}
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=ff, **extra)
    cls = {"qa": BertForQuestionAnswering, "mlm": BertForMaskedLM, "nli": BertForSequenceClassification}[head]
    cls(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def encoder_flops(config, lengths) -> float:
    """Forward FLOPs of a BERT-style encoder over sequences of ``lengths`` tokens (2 FLOPs per multiply-add):
    per layer and token 8d² (Q, K, V, output) + 4·d·d_ff (feed-forward) + 4·T·d (scores and mixing)."""
    d, ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    t = np.asarray(lengths, dtype=np.float64)
    return float(layers * (t * (8 * d * d + 4 * d * ff) + 4 * d * t * t).sum())


def matmul_peak(device, dtype, n: int = 4096, repeats: int = 10) -> float:
    """Achievable dense TFLOP/s of this device: an n×n matmul in ``dtype``, timed after a warm-up."""
    import torch

    dev = torch.device(device)
    if dev.type == "cpu":
        n = min(n, 2048)
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(2):
        a @ b
    sync()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync()
    return 2 * n**3 * repeats / (time.perf_counter() - t0) / 1e12


def nominal_peak(device, dtype) -> float | None:
    """The datasheet peak of a known GPU for ``dtype`` (None on CPUs and unknown GPUs)."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    name = torch.cuda.get_device_name(dev)
    for (fragment, kind), peak in NOMINAL_PEAK.items():
        if fragment in name and kind == str(dtype).replace("torch.", ""):
            return peak
    return None


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float | None:
    """Resident memory of this process now, in MB (Linux's /proc/self/status VmRSS; None elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def folder_bytes(folder: Path, pattern: str = "*.parquet") -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob(pattern))
