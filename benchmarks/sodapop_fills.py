"""SODAPOP distractors: the host's time per masked input, the masked LM's forward left out.

A generation (``distractors.generate_units``) is run once per decoding with the real masked LM, recording
every top-M id matrix it gets; the host side is then replayed on those matrices (no forward pass), both ways
in the same run:

* before: each row decoded by its own tokenizer call (``FillMasker.fills``: one joint ``decode`` per row for
  compat, one ``decode`` per new id for clean), as generation did until the vocabulary tables;
* after: ``FillMasker.fills_many`` — every id decoded once per tokenizer, rows joined or filtered with numpy.

and the neighbours' word tokenization: before, every fill's whole text (context, prompt, answer) re-tokenized with
every rule of the word tokenizer (``distractors._neighbours_full``, ``treebank.tokenize_every_rule``: the authors'
step); after, the answer's words behind the prompt's last word only (``distractors._neighbours``: its texts repeat
across names), the rules that cannot match skipped (``treebank.tokenize``). The same words either way.

Printed per masked input: the decoding alone (cold: the per-id caches start empty, as in a fresh process; warm: a
second pass over the same matrices) and the whole host side of generation (decoding plus the neighbours' word
tokenization, whose cache is cleared before each replay), with their ratios; the multisets of both replays are checked equal to the recorded run's.

    python benchmarks/sodapop_fills.py                         # zoo:minilm-mlm, context 3, 8 names, depth 2
    python benchmarks/sodapop_fills.py --mlm roberta-base --names 16
"""

from __future__ import annotations

import argparse
import time

import numpy as np


class Replay:
    """A masker that answers ``top_ids`` from recorded matrices (no model) and decodes with ``masker``."""

    def __init__(self, masker, recorded: dict[str, np.ndarray], vectorised: bool):
        self.masker, self.recorded, self.vectorised, self.passes = masker, recorded, vectorised, 0

    def top_ids(self, texts, progress_desc=None):
        self.passes += len(texts)
        return np.stack([self.recorded[t] for t in texts])

    def fills_many(self, top):
        return self.masker.fills_many(top) if self.vectorised else [self.masker.fills(row) for row in top]


def fresh(masker_cls, loaded, config):
    """A masker with empty per-id caches (its own and the tokenizer's table), as in a new process."""
    from stereoprobe.sodapop import distractors as D

    D._VOCABS.pop(loaded.tokenizer, None)
    return masker_cls(loaded, config.top_m, config.decoding)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mlm", default="zoo:minilm-mlm")
    parser.add_argument("--context", type=int, default=3)
    parser.add_argument("--names", type=int, default=8, help="names, taken round-robin from the 8 groups")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()

    from stereoprobe.batching import resolve_device
    from stereoprobe.models import load
    from sodapop import round_robin_names
    from stereoprobe.sodapop import contexts
    from stereoprobe.sodapop import distractors as D

    device = resolve_device(args.device)
    chosen = round_robin_names(args.names)
    (context,) = contexts.probe_contexts(indices=[args.context])
    loaded = load(args.mlm, "mlm", device=str(device), precision="fp32")
    print(f"writer {args.mlm} ({type(loaded.tokenizer).__name__}) on {device} · context {args.context} "
          f"(L = {len(D.word_tokenize(context.answer))}) · {len(chosen)} names · depth {args.depth} · "
          f"word tokenizer {D.tokenizer_mode()}")
    for decoding in ("compat", "clean"):
        config = D.GenerationConfig(depth=args.depth, decoding=decoding)
        recorded: dict[str, np.ndarray] = {}

        class Recording(D.FillMasker):
            def top_ids(self, texts, progress_desc=None):
                top = super().top_ids(texts, progress_desc)
                recorded.update(zip(texts, top))
                return top

        units = [D.make_unit(n, context) for n in chosen]
        D.generate_units(units, fresh(Recording, loaded, config), config)
        tops = [recorded[t] for t in recorded]
        n = len(tops)
        matrix = np.stack(tops)

        timings = {}
        for label, vectorised in (("before", False), ("after", True)):
            masker = fresh(D.FillMasker, loaded, config)
            t_decode = []
            for _ in range(2):  # cold (empty per-id caches), then warm
                t0 = time.perf_counter()
                fills = masker.fills_many(matrix) if vectorised else [masker.fills(row) for row in matrix]
                t_decode.append(time.perf_counter() - t0)
            masker = fresh(D.FillMasker, loaded, config)
            replayed = [D.make_unit(u.name, context) for u in units]
            D.word_tokenize.cache_clear()
            tail, skipping = D._neighbours, D.treebank.tokenize
            if not vectorised:  # before: every fill's whole text re-tokenized with every rule (the authors' step)
                D._neighbours, D.treebank.tokenize = D._neighbours_full, D.treebank.tokenize_every_rule
            try:
                t0 = time.perf_counter()
                D.generate_units(replayed, Replay(masker, recorded, vectorised), config)
                t_host = time.perf_counter() - t0
            finally:
                D._neighbours, D.treebank.tokenize = tail, skipping
            timings[label] = (t_decode, t_host, fills, all(r.candidates == u.candidates for r, u in zip(replayed, units)))
        (d0, h0, f0, same0), (d1, h1, f1, same1) = timings["before"], timings["after"]
        us = 1e6 / n
        print(f"{decoding}: {n:,} masked inputs")
        for k, state in enumerate(("cold", "warm")):
            print(f"  decoding the top-{config.top_m} ({state}): before {d0[k] * us:7.1f} µs/input   after "
                  f"{d1[k] * us:7.1f} µs/input   ratio {d0[k] / d1[k]:6.1f}×   same fills: {f0 == f1}")
        print(f"  whole host side (+ neighbours): before {h0 * us:7.1f} µs/input   after {h1 * us:7.1f} µs/input   "
              f"ratio {h0 / h1:6.2f}×   multisets equal: {same0 and same1}")


if __name__ == "__main__":
    main()
