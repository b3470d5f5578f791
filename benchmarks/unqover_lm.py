"""Throughput of the UnQover masked-LM scorer: vocabulary head at the masks only vs on every token.

Baseline: the whole model's logits (every position × the vocabulary), indexed at the mask afterwards —
what a ``fill-mask`` pipeline and the authors' ``lm/predict.py`` compute. Ours (``mask_logits``): the
encoder on every token, the head only at the mask. Same batches, same model, same run; the compat-mode
scores are checked equal.

    python benchmarks/unqover_lm.py                                  # zoo:minilm-mlm, nationality, 4,000 passes
    python benchmarks/unqover_lm.py --model bert-base-uncased --device cuda --passes 100000

Prints passes/s of both and their ratio.
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="zoo:minilm-mlm")
    parser.add_argument("--passes", type=int, default=4000)
    parser.add_argument("--dataset", default="nationality")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the library's (2048 on a CPU, 65536 on a GPU)")
    args = parser.parse_args()

    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from stereoprobe.unqover import score_lm
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.reporting import lm_spec_for
    from stereoprobe.unqover.score_qa import passes_of

    device = resolve_device(args.device)
    loaded = load(args.model, "mlm", device=device)
    spec = lm_spec_for(args.model, DatasetSpec(args.dataset, sample=max(1, args.passes // 4), seed=0))
    passes = [p for _, p in passes_of(iter_examples(spec))][: args.passes]

    def full_logits(model, input_ids, attention_mask, masks):
        return model(input_ids=input_ids, attention_mask=attention_mask).logits[masks]

    def run(patch: bool):
        scorer = score_lm.LMScorer(loaded, spec, "compat", batch_tokens=args.batch_tokens)
        scorer.score(passes[:200])  # warm-up
        t0 = time.perf_counter()
        if patch:
            with mock.patch.object(score_lm, "mask_logits", full_logits):
                out = scorer.score(passes)
        else:
            out = scorer.score(passes)
        return out, len(passes) / (time.perf_counter() - t0)

    base, base_rate = run(patch=True)
    ours, rate = run(patch=False)
    print(f"{args.model} on {device}, {len(passes):,} {spec.dataset} passes ({spec.variant})")
    print(f"  whole-model logits: {base_rate:8.1f} passes/s")
    print(f"  head at the masks:  {rate:8.1f} passes/s   ratio {rate / base_rate:.2f}x")
    print(f"  max |score difference| = {np.abs(ours - base).max():.2e}")


if __name__ == "__main__":
    main()
