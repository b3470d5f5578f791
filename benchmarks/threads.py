"""CPU threads and the OpenMP wait policy, alone and beside a busy neighbour: which default to run with.

On a 2-core machine the nationality chapter scored in 161 s alone and took 611 s while a sweep of short jobs
ran at nice 19 beside it: torch's intra-op threads wait at barriers for a core that is busy. This benchmark
scores the same QA passes (MiniLM, the zoo's QA model, 2,048 tokens per batch) in a fresh process per setting:

* ``2 threads`` (torch's default on 2 cores: one per core; OpenMP's default wait policy, which spins a while),
* ``1 thread``,
* ``2 threads, passive``: ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep instead of spinning),

each **alone** and **beside a neighbour**: one process that keeps a core busy (plain Python arithmetic, nice 19,
as the sweep of short jobs was). The baseline is ``2 threads`` alone in the same run; the table gives
passes/s and each setting's ratio to it, and the slowdown a neighbour causes.

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

NEIGHBOUR = "import os\nos.nice(19)\nx = 0\nwhile True:\n    x = (x * 1103515245 + 12345) % 2147483648\n"


def run(setting: dict, args, neighbour: bool) -> float:
    env = {**os.environ, **setting["env"], "STEREOPROBE_PROGRESS": "0"}
    env.pop("OMP_NUM_THREADS", None)
    busy = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if neighbour else None
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
    rates = {(name, nb): run(s, args, nb) for name, s in SETTINGS.items() for nb in (False, True)}
    base = rates["2 threads", False]
    print(f"{'setting':<20} {'alone':>14} {'ratio':>7} {'beside a neighbour':>20} {'ratio':>7} {'slowdown':>9}")
    for name in SETTINGS:
        a, b = rates[name, False], rates[name, True]
        print(f"{name:<20} {a:9.1f} p/s {a / base:6.2f}× {b:15.1f} p/s {b / base:6.2f}× {a / b:8.2f}×")
    worst = {name: min(rates[name, False], rates[name, True]) / base for name in SETTINGS}
    print("best over both (the larger of the two worse ratios): "
          f"{max(worst, key=worst.get)} ({', '.join(f'{k} {v:.2f}×' for k, v in worst.items())})")


if __name__ == "__main__":
    main()
