"""Memory of generating and scoring a whole UnQover dataset: it streams, so the peak does not grow with it.

Scores the full gender QA set (5,488,000 passes) into a fresh score store and prints the peak resident
memory (RSS) after loading, after scoring and (``--metrics``) after the per-example frame and γ; the store's
bytes per pass; and, as the baseline measured in the same run, what holding the passes in memory would
cost (measured on 200,000 passes, scaled to the dataset).

    python benchmarks/memory.py                                   # tiny random BERT-QA, CPU: about 5 minutes
    python benchmarks/memory.py --size base --device cuda         # BERT-base on a GPU
    python benchmarks/memory.py --sample 20000 --metrics          # a quick look, with the metrics
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

from common import SIZES, folder_bytes, peak_rss_mb, random_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model name/folder (default: random BERT of --size)")
    parser.add_argument("--size", default="tiny", choices=list(SIZES))
    parser.add_argument("--dataset", default="gender")
    parser.add_argument("--sample", default=None, help="paper examples (default: the whole dataset)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the library's (2048 on a CPU, 65536 on a GPU)")
    parser.add_argument("--metrics", action="store_true", help="also build the per-example frame and γ")
    args = parser.parse_args()

    from stereoprobe import RunOptions
    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover import tables
    from stereoprobe.unqover.generate import DatasetSpec, count, iter_examples
    from stereoprobe.unqover.score_qa import load_scores, passes_of, score_dataset

    device = resolve_device(args.device)
    sample = None if args.sample is None else int(args.sample)
    spec = DatasetSpec(args.dataset, sample=sample)
    n = count(spec).passes
    with tempfile.TemporaryDirectory() as tmp:
        name = args.model or str(random_model(args.size, "qa", Path(tmp) / "model"))
        load(name, "qa", device=str(device))  # what loading costs (weights, tokenizer, libraries)
        gc.collect()
        after_load = peak_rss_mb()
        store = ScoreStore(Path(tmp) / "scores")
        t0 = time.perf_counter()
        run = score_dataset(name, spec,
                            options=RunOptions(store=store, device=str(device), batch_tokens=args.batch_tokens))
        seconds = time.perf_counter() - t0
        after_scoring = peak_rss_mb()
        size = folder_bytes(run.path)
        print(f"{args.dataset}: {n:,} passes scored by {args.model or 'random BERT-' + args.size} on {device} in "
              f"{seconds / 60:.1f} min ({n / seconds:,.0f} passes/s)")
        print(f"peak RSS after loading the model: {after_load:8.0f} MB")
        print(f"peak RSS after scoring:           {after_scoring:8.0f} MB  (+{after_scoring - after_load:.0f} MB for "
              f"generation, batching and the store)")
        print(f"score store: {size / 2**20:.1f} MiB = {size / n:.2f} bytes per pass (pass_id + 4 float32 columns)")
        if args.metrics:
            frame = load_scores(name, spec, options=RunOptions(store=store, device=str(device)))
            tables.gender_gamma(frame, n_boot=100) if args.dataset == "gender" else None
            print(f"peak RSS after the per-example frame ({len(frame):,} rows) and γ: {peak_rss_mb():8.0f} MB")
            del frame
        tracemalloc.start()
        held = [p for _, p in passes_of(iter_examples(spec, 0, 100_000))]
        per_pass = tracemalloc.get_traced_memory()[0] / len(held)
        tracemalloc.stop()
        del held
        print(f"baseline, the passes held in memory instead: {per_pass:.0f} bytes per pass = "
              f"{per_pass * n / 2**30:.1f} GiB for {n:,} passes")


if __name__ == "__main__":
    main()
