"""Zoo corpus generation speed: the synthetic QA corpus, against tokenizing the same items, in the same run.

The QA recipe (``zoo:minilm-qa``) generates its training items on the fly from seeded pools
(:mod:`stereoprobe.zoo.qa_corpus`); generation must stay a small cost next to the tokenization the trainer
does on every item anyway. Baseline: MiniLM's fast tokenizer on the generated (question, context) pairs, in
batches of 256, as the trainer encodes them. The ratio printed is generation time / tokenization time.

    python benchmarks/zoo_corpora.py              # 10,000 items
    python benchmarks/zoo_corpora.py --items 50000
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from stereoprobe.assets import asset_folder
    from stereoprobe.zoo import qa_corpus

    qa_corpus.generate(10, seed=5)  # warm the pools (read once per process)
    start = time.perf_counter()
    items = qa_corpus.generate(args.items, seed=5)
    generation = time.perf_counter() - start

    tok = AutoTokenizer.from_pretrained(asset_folder("minilm"))
    start = time.perf_counter()
    for b in range(0, len(items), 256):
        chunk = items[b : b + 256]
        tok([it.question for it in chunk], [it.context for it in chunk], truncation=True, max_length=384)
    tokenization = time.perf_counter() - start

    print(f"QA corpus: {len(items):,} items generated in {generation:.2f} s ({len(items) / generation:,.0f} items/s)")
    print(f"baseline, tokenizing them: {tokenization:.2f} s ({len(items) / tokenization:,.0f} items/s)")
    print(f"generation / tokenization: {generation / tokenization:.2f}×")


if __name__ == "__main__":
    main()
