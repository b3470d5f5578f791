"""Throughput of the UnQover QA scorer against the authors' loop, same model, same run.

Baseline (``reference_scores``): batches of 100 passes in file order, tokenized per batch, fp32, no
bucketing — what ``qa_hf/predict.py`` does. Ours (``QAScorer``): cached tokenization, token-budget
batches grouped by padded length, ``inference_mode``, bf16 autocast on GPU. Both produce the same
compat-mode numbers (checked here too).

    python benchmarks/unqover_qa.py                        # random BERT-base-size model, 2,000 passes
    python benchmarks/unqover_qa.py --model lab:qa-biased --passes 20000
    python benchmarks/unqover_qa.py --device cuda --passes 200000

Prints passes/s of both and their ratio.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

import numpy as np


def random_bert(size: str, folder: Path) -> Path:
    """A randomly initialised BERT of the given size, with the lab model's vocabulary (speed only)."""
    from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering

    from stereoprobe.models import resolve

    tokenizer = AutoTokenizer.from_pretrained(resolve("lab:qa-control"))
    dims = {"base": (768, 12, 12, 3072), "small": (512, 4, 8, 2048), "mini": (256, 4, 4, 1024)}[size]
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=dims[0], num_hidden_layers=dims[1],
                        num_attention_heads=dims[2], intermediate_size=dims[3])
    BertForQuestionAnswering(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model name/folder (default: random BERT of --size)")
    parser.add_argument("--size", default="base", choices=["base", "small", "mini"])
    parser.add_argument("--passes", type=int, default=2000)
    parser.add_argument("--dataset", default="gender")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: 8192 on CPU, 65536 on GPU")
    args = parser.parse_args()

    import torch

    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_qa import QAScorer, passes_of, reference_scores

    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        name = args.model or str(random_bert(args.size, Path(tmp) / f"bert-{args.size}"))
        loaded = load(name, "qa", device=str(device))
        examples = itertools.islice(iter_examples(DatasetSpec(args.dataset, sample=args.passes // 4 + 1, seed=0)), args.passes // 2)
        passes = [p for _, p in passes_of(examples)]
        budget = args.batch_tokens or (65536 if device.type == "cuda" else 8192)
        label = args.model or f"random BERT-{args.size}"
        print(f"model: {label} · device: {device} · {len(passes):,} passes of {args.dataset} · threads {torch.get_num_threads()}")

        reference_scores(loaded, passes[:200])  # warm-up of both paths
        QAScorer(loaded, "compat", batch_tokens=budget).score(passes[:200])

        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        t0 = time.perf_counter()
        base = reference_scores(loaded, passes)
        sync()
        t_base = time.perf_counter() - t0

        variants = [("ours compat, fp32", "compat", "fp32"), ("ours clean, fp32", "clean", "fp32")]
        if device.type == "cuda":
            variants += [("ours compat, bf16 autocast", "compat", "auto"), ("ours clean, bf16 autocast", "clean", "auto")]
        results = {}
        for label_mode, mode, precision in variants:
            scorer = QAScorer(loaded, mode, batch_tokens=budget, precision=precision)
            t0 = time.perf_counter()
            ours = scorer.score(passes)
            sync()
            results[label_mode] = (time.perf_counter() - t0, np.abs(ours - base).max())

    print(f"{'reference loop (batch 100, fp32)':<30} {len(passes) / t_base:>10,.1f} passes/s")
    for label_mode, (t, diff) in results.items():
        print(f"{label_mode:<30} {len(passes) / t:>10,.1f} passes/s   ratio {t_base / t:5.2f}×   "
              f"max |Δ| vs reference {diff:.1e}")
    print("(compat must match the reference exactly; clean differs by design: padding masked, pair encoding)")


if __name__ == "__main__":
    main()
