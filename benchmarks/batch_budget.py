"""Throughput of the UnQover scorers against the token budget per batch (``batch_tokens``).

Baseline: 8,192 tokens per batch (the library's default before 0.5.0). The same passes of the same model are scored
with each budget in the same run, a QA model and a masked LM; prints passes/s, the ratio to the
baseline and the largest score difference (batches hold different neighbours, so only the padding of
a pass can change: compat mode pads like the authors' code, clean mode masks the padding).

On a CPU a smaller budget is faster (probably because a smaller batch's activations stay in the caches);
``stereoprobe.batching.DEFAULT_BATCH_TOKENS`` and the ``cpu`` profile use 2,048 there. On a GPU a larger
budget is faster (the default there and the ``gpu`` profiles: 65,536).

    python benchmarks/batch_budget.py                                  # MiniLM (zoo), gender, 2,400 passes
    python benchmarks/batch_budget.py --budgets 8192 32768 65536 --device cuda --passes 40000
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qa-model", default="zoo:minilm-qa")
    parser.add_argument("--lm-model", default="zoo:minilm-mlm")
    parser.add_argument("--dataset", default="gender")
    parser.add_argument("--passes", type=int, default=2400)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--baseline", type=int, default=8192)
    args = parser.parse_args()

    import torch

    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from stereoprobe.unqover import score_lm
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.reporting import lm_spec_for
    from stereoprobe.unqover.score_qa import QAScorer, passes_of

    device = resolve_device(args.device)
    budgets = sorted(set(args.budgets) | {args.baseline})
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    print(f"device {device} · threads {torch.get_num_threads()} · {args.passes:,} {args.dataset} passes per model")

    def sweep(label: str, make_scorer, passes) -> None:
        rates, scores = {}, {}
        make_scorer(args.baseline).score(passes[:200])  # warm-up
        for budget in budgets:
            scorer = make_scorer(budget)
            t0 = time.perf_counter()
            scores[budget] = scorer.score(passes)
            sync()
            rates[budget] = len(passes) / (time.perf_counter() - t0)
        base = rates[args.baseline]
        for budget in budgets:
            diff = np.abs(np.asarray(scores[budget]) - np.asarray(scores[args.baseline])).max()
            print(f"  {label:<16} batch_tokens {budget:>6,}: {rates[budget]:7.1f} passes/s  ratio {rates[budget] / base:5.2f}×"
                  f"  max |Δ score| {diff:.1e}")

    qa = load(args.qa_model, "qa", device=str(device))
    spec = DatasetSpec(args.dataset, sample=max(1, args.passes // 4), seed=0)
    passes = [p for _, p in passes_of(iter_examples(spec))][: args.passes]
    sweep(f"QA {args.qa_model}", lambda b: QAScorer(qa, "compat", batch_tokens=b), passes)

    lm = load(args.lm_model, "mlm", device=str(device))
    lm_spec = lm_spec_for(args.lm_model, spec)
    lm_passes = [p for _, p in passes_of(iter_examples(lm_spec))][: args.passes]
    sweep(f"LM {args.lm_model}", lambda b: score_lm.LMScorer(lm, lm_spec, "compat", batch_tokens=b), lm_passes)


if __name__ == "__main__":
    main()
