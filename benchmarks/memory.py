"""Memory of generating and scoring a whole UnQover dataset: it streams, so the peak does not grow with it.

Scores the full gender QA set (5,488,000 passes) into a fresh score store and prints the peak resident
memory (RSS) after loading, after scoring and (``--metrics``) after the per-example frame and γ; the store's
bytes per pass; and, as the baseline measured in the same run, what holding the passes in memory would
cost (measured on 200,000 passes, scaled to the dataset). A thread samples the resident memory while it scores
(``--every`` seconds) and prints it over time with the passes stored by then (``--csv``: every sample, to a file);
``--minutes`` stops the scoring after that long, as Ctrl-C would, and shows the memory until then.

``--profile gpu-zoo`` runs what that profile's chapters run (``sample: null``, its mode, token budget per batch and
precision, params/gpu-zoo.yaml) on ``--device``: the book's scale path, on the CPU with a tiny model (book/scale.md,
*Memory*, has the runs).

    python benchmarks/memory.py                                   # tiny random BERT-QA, CPU: about 5 minutes
    python benchmarks/memory.py --size base --device cuda         # BERT-base on a GPU
    python benchmarks/memory.py --sample 20000 --metrics          # a quick look, with the metrics
    python benchmarks/memory.py --profile gpu-zoo --dataset ethnicity --device cpu  # the gpu-zoo path, on a CPU
    python benchmarks/memory.py --profile gpu-zoo --device cpu --minutes 12          # the first 12 minutes of gender
"""

from __future__ import annotations

import _thread
import argparse
import gc
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from common import SIZES, current_rss_mb, folder_bytes, peak_rss_mb, random_model


class Timeline(threading.Thread):
    """Samples (seconds, resident MB, shards stored under ``store``) every ``every`` seconds until stopped."""

    def __init__(self, store: Path, every: float, minutes: float | None = None) -> None:
        super().__init__(daemon=True)
        self.store, self.every, self.samples = store, every, []
        self.done = threading.Event()
        self.t0 = time.perf_counter()
        self.deadline = None if minutes is None else self.t0 + 60 * minutes

    def sample(self) -> None:
        shards = sum(1 for _ in self.store.rglob("part-*.parquet")) if self.store.exists() else 0
        self.samples.append((time.perf_counter() - self.t0, current_rss_mb(), shards))

    def run(self) -> None:
        while not self.done.wait(self.every):
            self.sample()
            if self.deadline is not None and time.perf_counter() > self.deadline:
                _thread.interrupt_main()  # as Ctrl-C: the store keeps the whole shards written so far
                return

    def stop(self) -> list[tuple[float, float | None, int]]:
        self.done.set()
        self.join()
        self.sample()
        return self.samples


def show_timeline(samples, passes: int, shard_passes: int, rows: int = 9) -> None:
    """RSS at ``rows`` evenly spaced moments of the scoring (start, …, middle, …, end), the passes stored by then."""
    if not samples or samples[0][1] is None:
        print("(no RSS timeline: /proc/self/status is Linux's)")
        return
    picks = sorted({round(i * (len(samples) - 1) / (rows - 1)) for i in range(rows)})
    print(f"resident memory while scoring ({len(samples)} samples):")
    print("    time s   passes stored   RSS MB")
    for i in picks:
        t, rss, shards = samples[i]
        print(f"  {t:8.1f}   {min(shards * shard_passes, passes):13,}   {rss:6.0f}")
    values = [rss for _, rss, _ in samples]
    print(f"  RSS over the scoring: min {min(values):.0f} MB, max {max(values):.0f} MB "
          f"(spread {max(values) - min(values):.0f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model name/folder (default: random BERT of --size)")
    parser.add_argument("--size", default="tiny", choices=list(SIZES))
    parser.add_argument("--dataset", default="gender")
    parser.add_argument("--profile", default=None, help="take sample, mode, batch_tokens and precision from "
                        "params/<PROFILE>.yaml (gpu-zoo: the whole dataset, 65,536 tokens per batch)")
    parser.add_argument("--sample", default=None, help="paper examples (default: the whole dataset)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the library's (2048 on a CPU, 65536 on a GPU)")
    parser.add_argument("--every", type=float, default=0.5, help="seconds between two samples of the resident memory")
    parser.add_argument("--csv", default=None, help="write every sample (seconds, passes stored, RSS MB) to this file")
    parser.add_argument("--minutes", type=float, default=None, help="stop the scoring after this long, as Ctrl-C would "
                        "(the store keeps its whole shards), and show the memory until then")
    parser.add_argument("--metrics", action="store_true", help="also build the per-example frame and γ")
    args = parser.parse_args()

    from stereoprobe import RunOptions
    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover import reporting as tables
    from stereoprobe.unqover.generate import DatasetSpec, count, iter_examples
    from stereoprobe.unqover.score_qa import SHARD_PASSES, load_scores, passes_of, score_dataset

    device = resolve_device(args.device)
    sample, mode, precision, batch_tokens = args.sample, "compat", "auto", args.batch_tokens
    if args.profile:
        from stereoprobe.book import load_profile

        profile = load_profile(args.profile)[1]
        sample = profile.get("sample") if args.sample is None else args.sample
        mode, precision = profile.get("mode", mode), profile.get("precision", precision)
        batch_tokens = profile.get("batch_tokens") if batch_tokens is None else batch_tokens
    sample = None if sample is None else int(sample)
    spec = DatasetSpec(args.dataset, mode=mode, sample=sample)
    n = count(spec).passes
    with tempfile.TemporaryDirectory() as tmp:
        name = args.model or str(random_model(args.size, "qa", Path(tmp) / "model"))
        load(name, "qa", device=str(device))  # what loading costs (weights, tokenizer, libraries)
        gc.collect()
        after_load = peak_rss_mb()
        store = ScoreStore(Path(tmp) / "scores")
        options = RunOptions(store=store, device=str(device), precision=precision, batch_tokens=batch_tokens)
        timeline = Timeline(Path(tmp) / "scores", args.every, args.minutes)
        timeline.sample()
        timeline.start()
        t0 = time.perf_counter()
        try:
            run = score_dataset(name, spec, mode=mode, options=options)
        except KeyboardInterrupt:  # --minutes: stopped as Ctrl-C stops it
            run = None
        seconds = time.perf_counter() - t0
        samples = timeline.stop()
        after_scoring = peak_rss_mb()
        done = n if run is not None else min(samples[-1][2] * SHARD_PASSES, n)
        setting = f"profile {args.profile}: " if args.profile else ""
        print(f"{setting}{args.dataset}: {done:,} of {n:,} passes scored by {args.model or 'random BERT-' + args.size} "
              f"on {device} in {seconds / 60:.1f} min ({done / seconds:,.0f} passes/s; {mode}, "
              f"{options.batch_tokens or 'default'} tokens per batch, {precision})"
              + ("" if run is not None else f"; stopped after {args.minutes:g} min (--minutes)"))
        print(f"peak RSS after loading the model: {after_load:8.0f} MB")
        print(f"peak RSS after scoring:           {after_scoring:8.0f} MB  (+{after_scoring - after_load:.0f} MB for "
              f"generation, batching and the store)")
        show_timeline(samples, n, SHARD_PASSES)
        if args.csv:
            Path(args.csv).write_text("seconds,passes_stored,rss_mb\n" + "".join(
                f"{t:.2f},{min(k * SHARD_PASSES, n)},{rss:.1f}\n" for t, rss, k in samples), encoding="utf-8")
        if run is None:
            return
        size = folder_bytes(run.path)
        print(f"score store: {size / 2**20:.1f} MiB = {size / n:.2f} bytes per pass (pass_id + 4 float32 columns)")
        if args.metrics:
            frame = load_scores(name, spec, options=options, mode=mode)
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
