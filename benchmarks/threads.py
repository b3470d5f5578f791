"""CPU threads and the OpenMP wait policy, alone and beside a busy neighbour: which default to run with.

On a 2-core machine the nationality chapter scored in 161 s alone and took 611 s while a sweep of short jobs
ran at nice 19 beside it: torch's intra-op threads wait at barriers for a core that is busy. This benchmark
scores the same QA passes (MiniLM, the zoo's QA model, 2,048 tokens per batch) in a fresh process per setting:

* ``2 threads`` (torch's default on 2 cores: one per core; OpenMP's default wait policy, which spins a while),
* ``1 thread``,
* ``2 threads, passive``: ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep instead of spinning),

each **alone** and **beside a neighbour**: one process that keeps a core busy (plain Python arithmetic), at nice 19
(as the sweep of short jobs was) and at nice 0 (a second job of the same user, e.g. ``make test`` beside ``make
book``). The baseline is ``2 threads`` alone in the same run; the table gives passes/s, each setting's ratio to it,
and the slowdown a neighbour causes.

Measured (2026-11-26, AMD EPYC Zen 5, 2 cores, alone on the machine, best of 2), passes/s and ratio to 2 spinning
threads alone:

    setting               alone          nice 19 neighbour   nice 0 neighbour
    2 threads             323.3  1.00×   318.0  0.98×        112.1  0.35×
    1 thread              170.6  0.53×   174.0  0.54×        177.3  0.55×
    2 threads, passive    311.1  0.96×   235.5  0.73×        172.5  0.53×

A nice-19 neighbour costs 2 spinning threads almost nothing (the scheduler gives it little), a nice-0 one 2.9×: a
spinning thread waits at every barrier for the core the neighbour holds. Passive waiting keeps 96 % alone and
halves that loss, the best worst case: ``stereoprobe.options.WAIT_POLICY`` (the CLI and the book's kernels set it;
``RunOptions.threads`` stays None, one thread per core).

    python benchmarks/threads.py                   # 1,200 gender passes per setting, 3 repeats (best of)
    python benchmarks/threads.py --passes 2400 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SETTINGS = {"2 threads": {"threads": 2, "env": {}},
            "1 thread": {"threads": 1, "env": {}},
            "2 threads, passive": {"threads": 2, "env": {"OMP_WAIT_POLICY": "PASSIVE"}}}

WORKER = r"""
import json, sys, time
args = json.loads(sys.argv[1])
import torch
torch.set_num_threads(args["threads"])
from stereoprobe.models import load
from stereoprobe.unqover.generate import DatasetSpec, iter_examples
from stereoprobe.unqover.score_qa import QAScorer, passes_of
qa = load(args["model"], "qa", device="cpu")
spec = DatasetSpec("gender", sample=max(1, args["passes"] // 4), seed=0)
passes = [p for _, p in passes_of(iter_examples(spec))][: args["passes"]]
scorer = QAScorer(qa, "compat", batch_tokens=2048)
scorer.score(passes[:100])  # warm-up
best = 0.0
for _ in range(args["repeats"]):
    t0 = time.perf_counter()
    scorer.score(passes)
    best = max(best, len(passes) / (time.perf_counter() - t0))
print(json.dumps({"rate": best, "threads": torch.get_num_threads()}))
"""

NEIGHBOUR = "import os, sys\nos.nice(int(sys.argv[1]))\nx = 0\nwhile True:\n    x = (x * 1103515245 + 12345) % 2147483648\n"
#: The neighbours: none, one busy core at nice 19, one at nice 0.
NEIGHBOURS = {"alone": None, "nice 19": 19, "nice 0": 0}


def run(setting: dict, args, nice: int | None) -> float:
    env = {**os.environ, **setting["env"], "STEREOPROBE_PROGRESS": "0"}
    env.pop("OMP_NUM_THREADS", None)
    busy = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(nice)]) if nice is not None else None
    try:
        if busy:
            time.sleep(0.5)
        out = subprocess.run([sys.executable, "-c", WORKER, json.dumps({"threads": setting["threads"],
                              "model": args.model, "passes": args.passes, "repeats": args.repeats})],
                             env=env, capture_output=True, text=True, check=True)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    return json.loads(out.stdout.strip().splitlines()[-1])["rate"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="zoo:minilm-qa")
    parser.add_argument("--passes", type=int, default=1200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores · {args.model} · {args.passes:,} gender passes per setting, best of {args.repeats}")
    rates = {(name, nb): run(s, args, nice) for name, s in SETTINGS.items() for nb, nice in NEIGHBOURS.items()}
    base = rates["2 threads", "alone"]
    print(f"{'setting':<20}" + "".join(f"{nb:>22}" for nb in NEIGHBOURS))
    for name in SETTINGS:
        print(f"{name:<20}" + "".join(f"{rates[name, nb]:9.1f} p/s {rates[name, nb] / base:5.2f}×    " for nb in NEIGHBOURS))
    worst = {name: min(rates[name, nb] for nb in NEIGHBOURS) / base for name in SETTINGS}
    print("best over all (the largest of the worst ratios): "
          f"{max(worst, key=worst.get)} ({', '.join(f'{k} {v:.2f}×' for k, v in worst.items())})")

if __name__ == "__main__":
    main()
