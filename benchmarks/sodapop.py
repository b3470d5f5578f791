"""SODAPOP at scale: distractor generation against the one-sentence-per-call loop, and MCQ scoring passes.

Generation baseline (``reference_generate``): the authors' recursion written plainly — every FILL call,
repetitions included, masks one position of one sentence and runs the masked LM on that one input
(batch 1, every position's logits, as a ``fill-mask`` pipeline call does), then decodes the top 10 and
recurses. Ours (``distractors.generate``): every distinct sentence filled once, the masked inputs of
every (name, context) of a block in token-budget batches, the vocabulary head at the mask only. The
multisets are checked equal.

MCQ scoring: the authors score every MCQ whole (3 encodings); ours scores each distinct (name, context,
choice) once. Both counts are printed for the generated grid, and both ways are timed on a subset.

    python benchmarks/sodapop.py                                   # zoo:minilm-mlm, context 3, 8 names, depth 2
    python benchmarks/sodapop.py --mlm roberta-base --device cuda --names 32 --depth 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter

import numpy as np


def round_robin_names(n: int) -> list[str]:
    """The first ``n`` names taken round-robin from the groups (every group's first name, then every second, …)."""
    from stereoprobe.sodapop import names

    groups = names.load_groups()
    pool = [g[k] for k in range(max(map(len, groups.values()))) for g in groups.values() if k < len(g)]
    return pool[:n]


def reference_generate(loaded, unit, config) -> Counter:
    """GEN(answer, depth) of the authors' code, one masked input per forward pass (no memo, no batching)."""
    import torch

    from stereoprobe.sodapop.distractors import MASK, FillMasker, _masked, _neighbours_full, word_tokenize

    tok, model = loaded.tokenizer, loaded.model
    decoder = FillMasker(loaded, config.top_m, config.decoding)

    def fill(sentence: str) -> list[str]:
        tokens = word_tokenize(sentence)
        out = []
        for i in range(len(tokens)):
            text = _masked(unit.prefix, tokens, i)
            enc = tok(text.replace(MASK, tok.mask_token), return_tensors="pt").to(model.device)
            with torch.no_grad():
                logits = model(**enc).logits[0]
            position = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0])
            ids = torch.topk(logits[position].float(), config.top_m).indices.tolist()
            # the whole text re-tokenized per fill, as the authors' code (its word tokenizer skips the rules that
            # cannot match, as ours does: the baseline is the faster for it)
            out += _neighbours_full(unit.prefix, tokens, i, decoder.fills(ids))
        return out

    def gen(sentence: str, depth: int) -> Counter:
        found = Counter()
        for x in fill(sentence):
            if config.recursion == "code" or depth == 1:
                found[x] += 1
            if depth > 1:
                found += gen(x, depth - 1)
        return found

    return gen(unit.answer, config.depth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mlm", default="zoo:minilm-mlm")
    parser.add_argument("--mcq-model", default="zoo:minilm-mcq")
    parser.add_argument("--context", type=int, default=3)
    parser.add_argument("--names", type=int, default=8, help="names, taken round-robin from the 8 groups")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--cap", type=int, default=10000)
    parser.add_argument("--mcq-subset", type=int, default=300, help="MCQs timed both ways")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the library's (2048 on a CPU, 65536 on a GPU)")
    args = parser.parse_args()

    import torch

    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from stereoprobe.sodapop import contexts
    from stereoprobe.sodapop import distractors as D
    from stereoprobe.sodapop import score_mcq as S

    device = resolve_device(args.device)
    chosen = round_robin_names(args.names)
    (context,) = contexts.probe_contexts(indices=[args.context])
    config = D.GenerationConfig(depth=args.depth, cap=args.cap)
    loaded = load(args.mlm, "mlm", device=str(device), precision="fp32")  # SODAPOP runs fp32 (the authors' too)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    print(f"writer {args.mlm} on {device} · context {args.context} (L = {len(D.word_tokenize(context.answer))}) · "
          f"{len(chosen)} names · depth {args.depth} · threads {torch.get_num_threads()}")

    import os

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["STEREOPROBE_CACHE"] = tmp  # a cold distractor cache
        masker = D.FillMasker(loaded, config.top_m, config.decoding, args.batch_tokens)
        units = [D.make_unit(n, context) for n in chosen]
        t0 = time.perf_counter()
        D.generate_units(units, masker, config)
        sync()
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        reference = [reference_generate(loaded, u, config) for u in units]
        sync()
        t_ref = time.perf_counter() - t0
    same = all(r == u.candidates for r, u in zip(reference, units))
    ref_calls = sum(u.compat_passes for u in units)
    print(f"  one sentence per call: {ref_calls:>9,} masked-LM calls  {t_ref:8.1f} s")
    print(f"  batched and memoized:  {masker.passes:>9,} masked inputs  {t_ours:8.1f} s   ratio {t_ref / t_ours:6.1f}×   "
          f"multisets equal: {same}")

    saving = S.saving(units, config)
    print(f"MCQ scoring of this grid (cap {args.cap:,}): {saving['mcqs']:,} MCQs = {saving['encodings_whole']:,} "
          f"encodings whole vs {saving['encodings_distinct']:,} distinct choices ({saving['ratio']:.2f}× fewer)")
    mcq = load(args.mcq_model, "mcq", device=str(device), precision="fp32")
    frames = [D.mcqs_of(u, config) for u in units]
    subset = [(u, f.head(max(1, args.mcq_subset // len(units)))) for u, f in zip(units, frames)]
    firsts = {u.name: "".join(contexts.substitute(u.context, u.name)[k] for k in ("context", "question")) for u in units}
    t0 = time.perf_counter()
    whole = [S.score_whole(mcq, f, firsts[u.name]) for u, f in subset]
    sync()
    t_whole = time.perf_counter() - t0
    pairs = sorted({(firsts[u.name], c) for u, f in subset for c in f[["choiceA", "choiceB", "choiceC"]].to_numpy().ravel()})
    scorer = S.ChoiceScorer(mcq, batch_tokens=args.batch_tokens)
    t0 = time.perf_counter()
    logits = dict(zip(pairs, scorer.score(pairs)[:, 0]))
    sync()
    t_distinct = time.perf_counter() - t0
    mine = np.concatenate([[[logits[firsts[u.name], c] for c in row] for row in f[["choiceA", "choiceB", "choiceC"]].to_numpy()]
                           for u, f in subset])
    n = sum(len(f) for _, f in subset)
    print(f"  {n:,} MCQs whole (3 choices, padded to 128): {t_whole:6.1f} s; their {len(pairs):,} distinct choices "
          f"batched: {t_distinct:6.1f} s   ratio {t_whole / t_distinct:5.1f}×   same predictions: "
          f"{bool((mine.argmax(1) == np.concatenate(whole).argmax(1)).all())}")


if __name__ == "__main__":
    main()
