"""Throughput of the UnQover QA scorer against the authors' loop, same model, same run, and its FLOP utilization.

Baseline (``reference_scores``): batches of 100 passes in file order, tokenized per batch, fp32, no
bucketing — what ``qa_hf/predict.py`` does. Ours (``QAScorer``): cached tokenization, token-budget
batches grouped by padded length, ``inference_mode``, results kept on the device until the end, bf16
autocast on GPU. Both produce the same compat-mode numbers (checked here too).

    python benchmarks/unqover_qa.py                        # random BERT-base-size model, 2,000 gender passes
    python benchmarks/unqover_qa.py --model lab:qa-biased --passes 20000
    python benchmarks/unqover_qa.py --device cuda --passes 200000

Prints passes/s of both and their ratio; the model FLOPs per second and the model-FLOP utilization (MFU:
useful FLOPs, padding excluded, over the peak — the datasheet peak on known GPUs, and the peak of a large
matmul measured in this run); the host pipeline alone (generation + tokenization + span search, no model);
and what the measured rate means for the full gender set (5,488,000 passes).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from common import SIZES, encoder_flops, matmul_peak, nominal_peak, random_model

FULL_GENDER = 5_488_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model name/folder (default: random BERT of --size)")
    parser.add_argument("--size", default="base", choices=list(SIZES))
    parser.add_argument("--passes", type=int, default=2000)
    parser.add_argument("--dataset", default="gender")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the library's (2048 on a CPU, 65536 on a GPU)")
    args = parser.parse_args()

    import torch

    from stereoprobe.batching import resolve_device, resolve_precision
    from stereoprobe.models import load
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_qa import QAScorer, passes_of, reference_scores

    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        name = args.model or str(random_model(args.size, "qa", Path(tmp) / f"bert-{args.size}"))
        loaded = load(name, "qa", device=str(device), precision="fp32")  # the authors' loop and ours in fp32
        spec = DatasetSpec(args.dataset)

        t0 = time.perf_counter()  # the host pipeline alone: generation, tokenization, spans, padding lengths
        passes = [p for _, p in passes_of(iter_examples(spec, 0, args.passes // 2))]
        t_gen = time.perf_counter() - t0
        probe = QAScorer(loaded, "compat")
        t0 = time.perf_counter()
        enc = probe.encode(passes)
        t_enc = time.perf_counter() - t0
        host_rate = len(passes) / (t_gen + t_enc)
        label = args.model or f"random BERT-{args.size}"
        print(f"model: {label} · device: {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'})"
              f" · {len(passes):,} {args.dataset} passes of {enc.lengths.mean():.1f} tokens · threads {torch.get_num_threads()}")

        reference_scores(loaded, passes[:200])  # warm-up of both paths
        QAScorer(loaded, "compat", batch_tokens=args.batch_tokens).score(passes[:200])

        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        t0 = time.perf_counter()
        base = reference_scores(loaded, passes)
        sync()
        t_base = time.perf_counter() - t0

        variants = [("ours compat, fp32", "compat", "fp32"), ("ours clean, fp32", "clean", "fp32")]
        if device.type == "cuda":
            variants += [("ours compat, bf16", "compat", "auto"), ("ours clean, bf16", "clean", "auto")]
        results = {}
        half = load(name, "qa", device=str(device), precision="auto") if device.type == "cuda" else None
        for label_mode, mode, precision in variants:
            weights = loaded if precision == "fp32" else half  # bf16 runs load bf16 weights (models.load)
            scorer = QAScorer(weights, mode, batch_tokens=args.batch_tokens, precision=precision)
            t0 = time.perf_counter()
            ours = scorer.score(passes)
            sync()
            results[label_mode] = (time.perf_counter() - t0, np.abs(ours - base).max(), resolve_precision(device, precision))

        flops = encoder_flops(loaded.model.config, enc.lengths)
        peaks = {dt: matmul_peak(device, dt) for dt in {r[2] for r in results.values()}}

    def utilization(seconds: float, dtype) -> str:
        achieved = flops / seconds / 1e12
        nominal = nominal_peak(device, dtype)
        text = f"{achieved:8.3f} TFLOP/s  MFU {achieved / peaks[dtype]:6.1%} of the measured {peaks[dtype]:.3g}"
        return text + (f", {achieved / nominal:6.1%} of the datasheet {nominal:.0f}" if nominal else "")

    print(f"{'host pipeline alone (no model)':<32} {host_rate:>11,.0f} passes/s  (generation {len(passes) / t_gen:,.0f}/s, "
          f"encoding {len(passes) / t_enc:,.0f}/s)")
    print(f"{'reference loop (batch 100, fp32)':<32} {len(passes) / t_base:>11,.1f} passes/s  "
          f"{utilization(t_base, torch.float32)}")
    best = None
    for label_mode, (t, diff, dtype) in results.items():
        print(f"{label_mode:<32} {len(passes) / t:>11,.1f} passes/s  ratio {t_base / t:6.2f}×  max |Δ| vs reference "
              f"{diff:.1e}  {utilization(t, dtype)}")
        best = min(best or t, t)
    print("(compat fp32 must match the reference exactly; clean differs by design: padding masked, pair encoding)")
    rate = len(passes) / best
    print(f"full gender set ({FULL_GENDER:,} passes) at the best rate: {FULL_GENDER / rate / 60:.1f} min of scoring; "
          f"the host pipeline alone needs {FULL_GENDER / host_rate / 60:.1f} min")


if __name__ == "__main__":
    main()
