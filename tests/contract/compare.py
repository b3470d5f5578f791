#!/usr/bin/env python
"""Compare two outputs of report_contract.py, case by case and file by file.

    python compare.py <outA> <outB> [--quiet]

For each case: ``identical`` (every CSV byte for byte, no error on either side), or per file ``differs`` (which
columns, how many rows differ in each, the largest absolute numeric difference; ``differs in timing only`` where
only the served tables' requests/retries counts differ), ``only in A`` / ``only in B``, and
the one-line errors of each side (an error that is the same on both sides, the output folder's path aside, is said
once). Standard library only. --quiet prints only the cases that are not identical, and the summary.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import sys
from pathlib import Path


def _read(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return (rows[0] if rows else []), rows[1:]


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    x, y = _num(a), _num(b)
    return x is not None and y is not None and math.isnan(x) and math.isnan(y)


def diff_csv(a: Path, b: Path) -> list[str]:
    """What differs between two CSVs: header, row count, and per common column the rows that differ (aligned by
    position) with the largest absolute numeric difference."""
    head_a, rows_a = _read(a)
    head_b, rows_b = _read(b)
    out = []
    only_a = [c for c in head_a if c not in head_b]
    only_b = [c for c in head_b if c not in head_a]
    if only_a:
        out.append(f"columns only in A: {', '.join(only_a)}")
    if only_b:
        out.append(f"columns only in B: {', '.join(only_b)}")
    common = [c for c in head_a if c in head_b]
    if [c for c in head_a if c in common] != [c for c in head_b if c in common]:
        out.append("column order differs")
    if len(rows_a) != len(rows_b):
        out.append(f"rows: A {len(rows_a)}, B {len(rows_b)} (compared the first {min(len(rows_a), len(rows_b))})")
    n = min(len(rows_a), len(rows_b))
    ia, ib = {c: head_a.index(c) for c in common}, {c: head_b.index(c) for c in common}
    cols = []
    overall = 0.0
    for c in common:
        differing, worst, textual = 0, 0.0, False
        for ra, rb in zip(rows_a[:n], rows_b[:n]):
            va = ra[ia[c]] if ia[c] < len(ra) else ""
            vb = rb[ib[c]] if ib[c] < len(rb) else ""
            if _same(va, vb):
                continue
            differing += 1
            x, y = _num(va), _num(vb)
            if x is None or y is None or math.isnan(x) != math.isnan(y):
                textual = True
            elif not (math.isnan(x) or math.isinf(x) or math.isinf(y)):
                worst = max(worst, abs(x - y))
        if differing:
            overall = max(overall, worst)
            what = f"{c} ({differing}/{n} rows"
            what += (", text" if textual else "") + (f", max |Δ| {worst:.3g}" if worst else "") + ")"
            cols.append(what)
    if cols:
        out.append(f"columns differing: {'; '.join(cols)}")
        out.append(f"max |Δ| over numbers: {overall:.3g}")
    if not out:
        out.append("same values, other bytes (formatting)")
    return out


#: columns that count HTTP requests and retries in the served tables: they depend on timing (a server that drops a
#: connection under load), not on the code; a file differing only in them is said to differ "in timing only"
VOLATILE = ("requests", "retries")


def timing_only(a: Path, b: Path) -> bool:
    head_a, rows_a = _read(a)
    head_b, rows_b = _read(b)
    if head_a != head_b or len(rows_a) != len(rows_b):
        return False
    keep = [i for i, c in enumerate(head_a) if c not in VOLATILE]
    return all([ra[i] for i in keep] == [rb[i] for i in keep] for ra, rb in zip(rows_a, rows_b))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _error(out: Path, case: str) -> str | None:
    path = out / "errors" / f"{case}.txt"
    return path.read_text().strip() if path.exists() else None


def _cases(out: Path) -> list[str]:
    names = {p.name for p in (out / "csv").glob("*") if p.is_dir()}
    names |= {p.stem for p in (out / "errors").glob("*.txt")}
    return sorted(names)


def _order(a: Path, b: Path) -> list[str]:
    """The cases in report_contract.py's order where known, then the rest by name."""
    names = set(_cases(a)) | set(_cases(b))
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from report_contract import CASES

        known = [c for c in CASES if c in names]
    except Exception:  # noqa: BLE001
        known = []
    return known + sorted(names - set(known))


def _meta(out: Path, case: str) -> dict:
    path = out / "meta" / f"{case}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def compare(a: Path, b: Path, quiet: bool = False) -> int:
    a, b = a.resolve(), b.resolve()
    print(f"A = {a}\nB = {b}")
    for side, out in (("A", a), ("B", b)):
        src = out / "source.txt"
        if src.exists():
            info = dict(line.split("\t", 1) for line in src.read_text().splitlines() if "\t" in line)
            print(f"{side}: {info.get('src', '?')} ({info.get('git', '?')})")
    counts = {"identical": 0, "timing only": 0, "differs": 0, "same error": 0, "error": 0}
    for case in _order(a, b):
        lines = []
        ea, eb = _error(a, case), _error(b, case)
        if ea or eb:
            na = ea.replace(str(a), "<out>") if ea else None
            nb = eb.replace(str(b), "<out>") if eb else None
            if na and na == nb:
                lines.append(f"  error on both sides: {na}")
            else:
                if ea:
                    lines.append(f"  error in A: {na}")
                if eb:
                    lines.append(f"  error in B: {nb}")
        fa = {p.name: p for p in (a / "csv" / case).glob("*.csv")}
        fb = {p.name: p for p in (b / "csv" / case).glob("*.csv")}
        same_files, timing = 0, 0
        for name in sorted(set(fa) | set(fb)):
            if name not in fb:
                lines.append(f"  {name}: only in A")
            elif name not in fa:
                lines.append(f"  {name}: only in B")
            elif _sha(fa[name]) == _sha(fb[name]):
                same_files += 1
            elif timing_only(fa[name], fb[name]):
                timing += 1
                lines.append(f"  {name}: differs in timing only — " + " | ".join(diff_csv(fa[name], fb[name])[:1]))
            else:
                detail = diff_csv(fa[name], fb[name])
                lines.append(f"  {name}: differs — " + " | ".join(detail))
        files = len(set(fa) | set(fb))
        if (fa or fb) and not (ea or eb) and same_files == files:
            status = "identical"
        elif (fa or fb) and not (ea or eb) and same_files + timing == files:
            status = "timing only"
        elif ea and eb and not (fa or fb) and ea.replace(str(a), "<out>") == eb.replace(str(b), "<out>"):
            status = "same error"
        elif ea or eb:
            status = "error"
        else:
            status = "differs"
        counts[status] += 1
        if lines and same_files:
            lines.append(f"  ({same_files} other file{'s' if same_files > 1 else ''} identical)")
        ma, mb = _meta(a, case), _meta(b, case)
        if ma and mb:
            for key in ("title", "notes", "warnings"):
                va, vb = ma.get(key), mb.get(key)
                if key == "warnings":  # the served model's address and the cache folder differ between runs
                    va = [w.replace(str(a), "<out>") for w in va or []]
                    vb = [w.replace(str(b), "<out>") for w in vb or []]
                if va != vb:
                    lines.append(f"  report {key} differs: A {json.dumps(va)[:300]} | B {json.dumps(vb)[:300]}")
        if status == "identical" and not lines:
            if not quiet:
                print(f"{case}: identical ({same_files} files)")
        else:
            print(f"{case}: {status if status != 'identical' else 'identical CSVs (report text differs)'}")
            for line in lines:
                print(line)
    print("summary: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return 0 if counts["differs"] == counts["error"] == 0 else 1


if __name__ == "__main__":
    args = [x for x in sys.argv[1:] if not x.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    sys.exit(compare(Path(args[0]), Path(args[1]), quiet="--quiet" in sys.argv))
