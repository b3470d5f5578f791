"""Bias-NLI scoring speed: the full gender set (1,936,512 pairs), timed, against a plain loop in the same run.

Baseline: batches of 32 pairs in generation order, tokenized per batch, fp32, no bucketing, results
copied to the host per batch (a typical predictor loop). Ours (``score_pairs``): token-budget batches
bucketed by length, results kept on the device until the end of a shard, bf16 autocast on GPU, written
to the score store shard by shard. The probabilities are checked against each other.

    python benchmarks/nli.py                                     # zoo:minilm-nli, 4,000 pairs, then the projection
    python benchmarks/nli.py --pairs all                         # the whole gender set into a fresh store
    python benchmarks/nli.py --model roberta-large-mnli --device cuda --pairs all
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def reference_probabilities(loaded, pairs, columns, batch: int = 32) -> np.ndarray:
    import torch

    tok, model = loaded.tokenizer, loaded.model
    out = np.empty((len(pairs), 3), dtype=np.float32)
    for b in range(0, len(pairs), batch):
        chunk = pairs[b : b + batch]
        enc = tok([p for p, _ in chunk], [h for _, h in chunk], padding=True, return_tensors="pt").to(model.device)
        with torch.no_grad():
            probs = model(**enc).logits.float().softmax(-1).cpu().numpy()
        out[b : b + len(chunk)] = probs[:, columns]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="zoo:minilm-nli")
    parser.add_argument("--probe", default="gender")
    parser.add_argument("--pairs", default="4000", help="pairs for the comparison, or 'all' to also score the whole set")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the library's (2048 on a CPU, 65536 on a GPU)")
    args = parser.parse_args()

    import torch

    from stereoprobe import RunOptions
    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from stereoprobe.nli.scoring import NLIScorer, score_pairs
    from stereoprobe.nli.templates import TemplateSpec, count, iter_pairs

    device = resolve_device(args.device)
    full = TemplateSpec(args.probe)
    n_all = count(full).pairs
    k = n_all if args.pairs == "all" else int(args.pairs)
    loaded = load(args.model, "nli", device=str(device), precision="fp32")  # the plain loop's weights: fp32
    ours_model = loaded if args.precision == "fp32" else load(args.model, "nli", device=str(device),
                                                               precision=args.precision)
    scorer = NLIScorer(ours_model, args.batch_tokens, args.precision)
    pairs = [(p.premise, p.hypothesis) for p in iter_pairs(full, 0, min(k, 20_000))]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    print(f"{args.model} on {device} · Bias-NLI {args.probe}: {n_all:,} pairs · threads {torch.get_num_threads()}")
    reference_probabilities(loaded, pairs[:64], list(scorer._columns))
    scorer.score(pairs[:64])
    t0 = time.perf_counter()
    base = reference_probabilities(loaded, pairs, list(scorer._columns))
    sync()
    t_base = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = scorer.score(pairs)
    sync()
    t_ours = time.perf_counter() - t0
    rate = len(pairs) / t_ours
    print(f"  plain loop (batch 32, fp32):  {len(pairs) / t_base:9,.0f} pairs/s")
    print(f"  ours ({args.precision}):{'':<16}{rate:9,.0f} pairs/s   ratio {t_base / t_ours:5.2f}×   "
          f"max |Δp| {np.abs(ours - base).max():.1e}")
    print(f"  the full {args.probe} set at this rate: {n_all / rate / 60:.1f} min")
    if args.pairs == "all":
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run = score_pairs(args.model, full, options=RunOptions(
                store=Path(tmp), device=str(device), precision=args.precision, batch_tokens=args.batch_tokens))
            seconds = time.perf_counter() - t0
            size = sum(p.stat().st_size for p in run.path.glob("part-*.parquet"))
        print(f"  scored all {run.n_rows():,} pairs into the store in {seconds / 60:.1f} min "
              f"({run.n_rows() / seconds:,.0f} pairs/s; {size / run.n_rows():.1f} bytes per pair stored)")


if __name__ == "__main__":
    main()
