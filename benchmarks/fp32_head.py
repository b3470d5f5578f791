"""What the fp32 head costs: every scorer in half precision with its head in fp32 (stereoprobe.readout, since 0.8.0)
against the same scorer with its head in the compute dtype (as before), same inputs, same run.

In a bf16 run the body (the transformer layers) computes in bf16 either way; what changes is the head: its weights
and its input in fp32 and autocast off, so its logits are not rounded to bf16's 8 significant bits before the
softmax (a logit of 10-30 is rounded by 0.03-0.125). The cost is the head's matrix product in fp32 (on a GPU in TF32,
exact for bf16 inputs) and the fp32 copy of its weights, made once per model.

    python benchmarks/fp32_head.py                     # the zoo's MiniLM QA, masked LM, NLI and MCQ models and
                                                       # SmolLM2-135M-Instruct, bf16 on the CPU
    python benchmarks/fp32_head.py --device cuda --precision bf16 --items 20000

Prints per scorer: items/s with the head in fp32 and in the compute dtype, their ratio (the cost), and the largest
difference of the scores between the two (what the fp32 head changes). The CPU may be shared: timings are of this run,
each the best of ``--repeats``, the two variants interleaved. A CPU without bf16 instructions (AVX2 only) runs bf16
products many times slower than fp32 ones, so there the fp32 head can even be the cheaper: the cost that matters is a
GPU's, or a CPU's with AVX-512 BF16 or AMX.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--items", type=int, default=100, help="UnQover passes (and causal requests); NLI pairs and "
                        "SODAPOP choices: twice as many")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--causal", default="zoo:smollm2-135m-instruct", help="the causal LM ('' to leave it out)")
    args = parser.parse_args()

    import torch

    from stereoprobe.batching import resolve_device
    from stereoprobe.causal import CausalScorer
    from stereoprobe.models import load
    from stereoprobe.nli.scoring import NLIScorer
    from stereoprobe.nli.templates import TemplateSpec, iter_pairs
    from stereoprobe.readout import compute_dtype_head
    from stereoprobe.sodapop.score_mcq import ChoiceScorer
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_lm import LMScorer
    from stereoprobe.unqover.score_qa import QAScorer, passes_of

    device, p = str(resolve_device(args.device)), args.precision
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    k = max(1, args.items // 2)
    passes = [x for _, x in passes_of(iter_examples(DatasetSpec("gender", sample=k, seed=0)))]
    lm_spec = DatasetSpec("gender", variant="lm-bert", sample=k, seed=0)
    lm_passes = [x for _, x in passes_of(iter_examples(lm_spec))]
    pairs = [(x.premise, x.hypothesis) for x in iter_pairs(TemplateSpec("gender", sample=4 * k))]
    cases = {}
    qa = load("zoo:minilm-qa", "qa", device=device, precision=p)
    cases["UnQover QA (zoo:minilm-qa), passes"] = (len(passes), lambda: QAScorer(qa, "compat", precision=p).score(passes))
    mlm = load("zoo:minilm-mlm", "mlm", device=device, precision=p)
    cases["UnQover masked LM (zoo:minilm-mlm, clean), passes"] = (
        len(lm_passes), lambda: LMScorer(mlm, lm_spec, "clean", precision=p).score(lm_passes))
    nli = load("zoo:minilm-nli", "nli", device=device, precision=p)
    cases["Bias-NLI (zoo:minilm-nli), pairs"] = (len(pairs), lambda: NLIScorer(nli, precision=p).score(pairs))
    mcq = load("zoo:minilm-mcq", "mcq", device=device, precision=p)
    cases["SODAPOP choices (zoo:minilm-mcq), choices"] = (len(pairs), lambda: ChoiceScorer(mcq, precision=p).score(pairs))
    if args.causal:
        lm = load(args.causal, "causal", device=device, precision=p)
        scorer = CausalScorer(lm, precision=p)
        requests = [(scorer.tokenizer.apply_chat_template([{"role": "user", "content": f"{c} {q}"}], tokenize=False,
                                                          add_generation_prompt=True) + "Answer:", " " + a)
                    for c, q, a1, a2 in passes[: k] for a in (a1, a2)]
        encoded = scorer.encode(requests)
        cases[f"causal ({args.causal}), requests"] = (len(encoded), lambda: scorer.score_encoded(encoded).logprob)
    print(f"device {device}, precision {p}, {torch.get_num_threads()} torch threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}", flush=True)
    print(f"{'scorer':52s} {'fp32 head/s':>12s} {p + ' head/s':>12s} {'cost':>7s} {'max |Δ score|':>14s}", flush=True)
    for label, (n, run) in cases.items():
        run()  # warm-up, and the fp32 copies of the head
        best = {True: None, False: None}
        outputs = {}
        for _ in range(args.repeats):
            for fp32 in (True, False):
                t0 = time.perf_counter()
                if fp32:
                    out = run()
                else:
                    with compute_dtype_head():
                        out = run()
                sync()
                seconds = time.perf_counter() - t0
                best[fp32] = seconds if best[fp32] is None else min(best[fp32], seconds)
                outputs[fp32] = np.asarray(out, dtype=np.float64)
        diff = float(np.abs(outputs[True] - outputs[False]).max())
        print(f"{label:52s} {n / best[True]:12.1f} {n / best[False]:12.1f} {best[True] / best[False]:6.2f}x "
              f"{diff:14.2e}", flush=True)


if __name__ == "__main__":
    main()
