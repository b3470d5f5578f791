#!/usr/bin/env python
"""Write every report CSV of every probe x model kind x rung of one stereoprobe source tree, so that two versions of
the code can be compared byte for byte (compare.py beside this file).

    python report_contract.py --src <checkout>/src --out <folder> [--only PATTERN] [--list] [--timeout S]

Each case runs in its own subprocess with PYTHONPATH=<src> first (the worker checks that ``stereoprobe.__file__``
lies under --src), ``STEREOPROBE_CACHE=<out>/cache`` (one per side: lab/zoo builds, merged zoo models) and a score
store of its own (``<out>/store/<case>``: no case reads another's scores, nor the other side's), device cpu,
smoke=True, progress off, small samples and fixed seeds. Output:

    <out>/csv/<case>/<stem>.csv   the Report's tables, written by Report.write_csv
    <out>/meta/<case>.json        the Report's title, notes, table names, warnings raised, seconds, stereoprobe file
    <out>/errors/<case>.txt       one line, for a case that failed (the others go on)
    <out>/logs/<case>.log         the case's stdout/stderr (full traceback of a failure)
    <out>/manifest.tsv            case, file, sha256, rows (data rows of each CSV)
    <out>/timings.tsv             case, status, seconds

``--only`` takes fnmatch patterns (comma-separated, e.g. ``'unqover-*,nli-served-*'``); a plain word matches as a
substring. A rerun replaces the outputs of the cases it runs and keeps the others; the manifest covers every case
on disk.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CHAT = "lab:chat-biased"
CAUSAL = "lab:causal-biased"
RUNGS = ("exact", "next-token", "generated")

UNQOVER = dict(dataset="gender", sample=8, seed=5, n_boot=50, long=True)
NLI = dict(probes="gender", sample=10, seed=0, n_boot=20)
SODAPOP = dict(mlm="lab:mlm-biased", names_per_group=1, depth=1, cap=4, n_perm=10, pairs=["AA_m:EA_m"], seed=10)

# the chat model's templates per rung: the exact rung reads every shipped kind, next-token reads letters, generated
# reads an answer template and a letters one (as tests/test_chat_lab_probes.py does)
UNQOVER_CHAT_TEMPLATES = {"exact": ["qa", "letters", "letters-unknown"], "next-token": ["letters", "letters-unknown"],
                          "generated": ["qa", "letters-unknown"]}


def _cases() -> dict[str, dict]:
    """name -> {probe, model, served, kwargs}. ``model`` is passed as the first argument (UnQover and Bias-NLI: the
    models; SODAPOP: the multiple-choice model); with ``served`` the model is served by the reference server and its
    ``openai-api/chatlab/<name>`` passed instead."""
    cases: dict[str, dict] = {}

    def add(name, probe, model, served=False, **kwargs):
        cases[name] = dict(probe=probe, model=model, served=served, kwargs=kwargs)

    # UnQover: extractive QA, masked LM, causal LM (three templates), chat LM locally and served on every rung
    add("unqover-qa", "unqover", "lab:qa-biased", **UNQOVER)
    # lab:mlm-biased's tokenizer has the nationality lists' words (its plant is on nationality), not the gender names
    add("unqover-mlm", "unqover", "lab:mlm-biased", variant="lm", **{**UNQOVER, "dataset": "nationality"})
    add("unqover-mlm-bert", "unqover", "zoo:minilm-mlm", variant="lm-bert", **UNQOVER)
    add("unqover-causal", "unqover", CAUSAL, templates=["qa", "letters", "letters-unknown"], **UNQOVER)
    for where in ("chat", "served"):
        for rung in RUNGS:
            # thinking off on the chat rungs (the exact rung reads a plain prompt: a served model refuses thinking
            # there, so it is left out there for both)
            thinking = {} if rung == "exact" else {"thinking": False}
            add(f"unqover-{where}-{rung}", "unqover", CHAT, served=where == "served", rung=rung,
                templates=UNQOVER_CHAT_TEMPLATES[rung], **thinking, **UNQOVER)
        add(f"unqover-{where}-generated-thinking-both", "unqover", CHAT, served=where == "served", rung="generated",
            thinking="both", think_budget=32, templates=["qa"], **UNQOVER)
    # Bias-NLI: classifier, causal LM (both shipped templates), chat LM locally and served on every rung
    add("nli-classifier", "nli", "zoo:minilm-nli", **NLI)
    add("nli-causal", "nli", CAUSAL, **NLI)
    for where in ("chat", "served"):
        for rung in RUNGS:
            add(f"nli-{where}-{rung}", "nli", CHAT, served=where == "served", rung=rung, **NLI)
        # the letters-free template alone on the next-token rung (true-false-neither's labels may be no one token)
        add(f"nli-{where}-next-token-yes-maybe-no", "nli", CHAT, served=where == "served", rung="next-token",
            templates="yes-maybe-no", **NLI)
    # SODAPOP: multiple-choice encoder, causal LM, chat LM locally and served on every rung
    add("sodapop-mcq", "sodapop", "lab:mcq-biased", **SODAPOP)
    add("sodapop-causal", "sodapop", CAUSAL, **SODAPOP)
    for where in ("chat", "served"):
        for rung in RUNGS:
            add(f"sodapop-{where}-{rung}", "sodapop", CHAT, served=where == "served", rung=rung, **SODAPOP)
    return cases


CASES = _cases()


def select(only: str | None) -> list[str]:
    if not only:
        return list(CASES)
    patterns = [p.strip() for p in only.split(",") if p.strip()]
    picked = []
    for name in CASES:
        for p in patterns:
            if any(c in p for c in "*?[") and fnmatch.fnmatchcase(name, p) or p == name or (
                    not any(c in p for c in "*?[") and p in name):
                picked.append(name)
                break
    return picked


# ----------------------------------------------------------------------------------------------- the worker side

def _one_line(err: BaseException, limit: int = 400) -> str:
    text = " ".join(str(err).split())
    if len(text) > limit:
        text = text[:limit] + " …"
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _reference_serving():
    """The reference server's ``serving``: the package's (``stereoprobe.served.reference``) in a tree that still holds
    it (0.8.0 to 0.9's first commits), else this checkout's tests/reference_server.py."""
    try:
        from stereoprobe.served.reference import serving  # the tree under test holds it
    except ImportError:
        import importlib.util

        spec = importlib.util.spec_from_file_location("stereoprobe_test_reference_server",
                                                      Path(__file__).resolve().parents[1] / "reference_server.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        serving = module.serving
    return serving


def worker(case: str, src: Path, out: Path) -> int:
    """Run one case in this process (started by the driver with PYTHONPATH=<src>)."""
    import warnings

    spec = CASES[case]
    meta: dict = {"case": case, "probe": spec["probe"], "model": spec["model"], "served": spec["served"],
                  "kwargs": spec["kwargs"]}
    start = time.perf_counter()
    import stereoprobe

    where = Path(stereoprobe.__file__).resolve()
    meta["stereoprobe_file"] = str(where)
    if src.resolve() not in where.parents:
        raise SystemExit(f"stereoprobe was imported from {where}, not from under --src {src}")
    from stereoprobe import RunOptions

    store = out / "store" / case
    # concurrency: requests in flight at once to the reference server. Its ThreadingHTTPServer listens with a backlog
    # of 5, so the default 16 gets connections dropped and retried, and the served tables' requests/retries counts
    # vary from run to run (scores do not); fewer than 5 keeps those counts stable
    concurrency = int(os.environ.get("REPORT_CONTRACT_CONCURRENCY", "4")) or None
    options = RunOptions(device="cpu", smoke=True, progress=False, store=str(store), concurrency=concurrency)
    probe = {"unqover": "stereoprobe.unqover", "nli": "stereoprobe.nli", "sodapop": "stereoprobe.sodapop"}
    import importlib

    report = importlib.import_module(probe[spec["probe"]]).report
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if spec["served"]:
            serving = _reference_serving()

            with serving(spec["model"], service="chatlab", device="cpu", smoke=True) as name:
                meta["served_name"] = name
                rep = report(name, **spec["kwargs"], options=options)
        else:
            rep = report(spec["model"], **spec["kwargs"], options=options)
    folder = out / "csv" / case
    paths = rep.write_csv(folder)
    meta.update(title=rep.title, notes=list(rep.notes), tables=list(rep), files=[p.name for p in paths],
                warnings=sorted({f"{w.category.__name__}: {' '.join(str(w.message).split())}" for w in caught}),
                seconds=round(time.perf_counter() - start, 2))
    (out / "meta" / f"{case}.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    print(f"{case}: {len(paths)} tables in {meta['seconds']} s")
    return 0


# ----------------------------------------------------------------------------------------------- the driver side

def _rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as f:
        return max(0, sum(1 for _ in csv.reader(f)) - 1)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(out: Path) -> Path:
    lines = ["case\tfile\tsha256\trows"]
    for folder in sorted(p for p in (out / "csv").glob("*") if p.is_dir()):
        for path in sorted(folder.glob("*.csv")):
            lines.append(f"{folder.name}\t{path.name}\t{_sha256(path)}\t{_rows(path)}")
    manifest = out / "manifest.tsv"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def _env(src: Path, out: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(STEREOPROBE_CACHE=str(out / "cache"), STEREOPROBE_PROGRESS="0", OMP_WAIT_POLICY="PASSIVE",
               TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1", CUDA_VISIBLE_DEVICES="")
    env.pop("STEREOPROBE_DATA", None)  # the tree's own data
    return env


def run_case(case: str, src: Path, out: Path, python: str, timeout: float) -> tuple[str, float]:
    for stale in (out / "csv" / case, out / "store" / case):
        shutil.rmtree(stale, ignore_errors=True)
    for stale in (out / "errors" / f"{case}.txt", out / "meta" / f"{case}.json"):
        stale.unlink(missing_ok=True)
    log = out / "logs" / f"{case}.log"
    start = time.perf_counter()
    with open(log, "w") as f:
        try:
            proc = subprocess.run([python, str(Path(__file__).resolve()), "--worker", case, "--src", str(src),
                                   "--out", str(out)], stdout=f, stderr=subprocess.STDOUT, env=_env(src, out),
                                  cwd=str(out), timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
    seconds = time.perf_counter() - start
    error = out / "errors" / f"{case}.txt"
    if rc == 0:
        return "ok", seconds
    if not error.exists():
        if rc is None:
            line = f"TimeoutError: the case ran past {timeout:.0f} s"
        else:
            tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
            line = f"exit status {rc}: {tail[-1] if tail else '(no output)'}"
        error.write_text(line + "\n")
    shutil.rmtree(out / "csv" / case, ignore_errors=True)  # a failed case leaves no CSVs
    return "error", seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, required=True, help="the tree's src folder (holding stereoprobe/)")
    parser.add_argument("--out", type=Path, required=True, help="output folder (created)")
    parser.add_argument("--only", help="fnmatch patterns of case names, comma-separated (a plain word: substring)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the cases (default: this one)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per case (default 300)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    src, out = args.src.resolve(), args.out.resolve()

    if args.worker:
        # this process: PYTHONPATH=<src> already first; make sure anyway
        if sys.path[:1] != [str(src)]:
            sys.path.insert(0, str(src))
        try:
            return worker(args.worker, src, out)
        except BaseException as err:  # noqa: BLE001  (one line for the record, the traceback into the log)
            import traceback

            traceback.print_exc()
            (out / "errors" / f"{args.worker}.txt").write_text(_one_line(err) + "\n")
            return 1

    if args.list:
        for name in select(args.only):
            print(name)
        return 0
    if not (src / "stereoprobe" / "__init__.py").is_file():
        parser.error(f"--src {src} holds no stereoprobe/__init__.py")
    cases = select(args.only)
    if not cases:
        parser.error(f"--only {args.only!r} matches no case; --list shows them")
    for sub in ("csv", "meta", "errors", "logs", "store", "cache"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    check = subprocess.run([args.python, "-c", "import stereoprobe; print(stereoprobe.__file__)"], env=_env(src, out),
                           cwd=str(out), capture_output=True, text=True)
    found = Path(check.stdout.strip() or "?").resolve()
    print(f"stereoprobe from {found}", flush=True)
    if check.returncode or src not in found.parents:
        print(f"error: stereoprobe is not imported from under --src {src}: {check.stderr.strip()[-500:]}",
              file=sys.stderr)
        return 2
    git = subprocess.run(["git", "-C", str(src), "describe", "--always", "--dirty"], capture_output=True, text=True)
    (out / "source.txt").write_text(f"src\t{src}\nstereoprobe\t{found}\ngit\t{git.stdout.strip()}\n"
                                    f"python\t{args.python}\n")

    timings = {}
    timing_file = out / "timings.tsv"
    if timing_file.exists():  # keep the other cases' lines of an earlier run
        for line in timing_file.read_text().splitlines()[1:]:
            name, *rest = line.split("\t")
            timings[name] = rest
    total = time.perf_counter()
    for i, case in enumerate(cases, 1):
        status, seconds = run_case(case, src, out, args.python, args.timeout)
        timings[case] = [status, f"{seconds:.1f}"]
        extra = ""
        if status != "ok":
            extra = " — " + (out / "errors" / f"{case}.txt").read_text().strip()[:200]
        print(f"[{i:2d}/{len(cases)}] {case:42s} {status:5s} {seconds:6.1f} s{extra}", flush=True)
    order = {name: i for i, name in enumerate(CASES)}
    timing_file.write_text("case\tstatus\tseconds\n" + "".join(
        f"{name}\t" + "\t".join(rest) + "\n" for name, rest in sorted(timings.items(),
                                                                     key=lambda kv: order.get(kv[0], 1e9))))
    manifest = write_manifest(out)
    failed = sum(1 for c in cases if timings[c][0] != "ok")
    print(f"{len(cases)} cases ({failed} failed) in {time.perf_counter() - total:.1f} s; manifest: {manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
