#!/usr/bin/env bash
# One lent GPU machine, one call (issue 54): `make gpu-check` (the targets: QA, distractors, the causal scorer with
# its row widths) and then `make gpu-book` (every chapter with the gpu profile's models at their real sizes), each
# under its own time limit so that both report within the device tool's ten minutes, their outputs gathered in $OUT
# (at most eight files, two folders down). Run from the repository root with the machine's own python3, nothing
# installed; the zoo assets' small files travel in .gpu/assets (make gpu-assets; the tool's carry).
#
#   bash benchmarks/gpu_lease.sh OUT [CHECK_SECONDS] [BOOK_SECONDS]
set -u
out=${1:?usage: gpu_lease.sh OUT [CHECK_SECONDS] [BOOK_SECONDS]}
check=${2:-190}
book=${3:-360}
export PYTHONPATH=src PYTHONUNBUFFERED=1
mkdir -p "$out/check" "$out/book"
work=$(mktemp -d /tmp/gpu-lease.XXXXXX)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$out/nvidia-smi.csv" 2>&1
# the causal section first reads 1,000 UnQover examples and 400 Social IQa items, the book its sizes (gpu_book.py)
timeout -k 10 $((check + 20)) python3 benchmarks/gpu_check.py --out "$out/check" --budget "$check" \
    --sections machine,qa,distractors,causal > "$work/check.out" 2>&1
echo "gpu_check exit $?" >> "$out/check/gpu_check.log"
timeout -k 10 $((book + 30)) python3 benchmarks/gpu_book.py --out "$work/book" --work "$work/world" \
    --budget "$book" > "$work/book.out" 2>&1
echo "gpu_book exit $?" >> "$work/book/gpu_book.log"
cp "$work/book/gpu_book.json" "$work/book/gpu_book.log" "$out/book/" 2>/dev/null
# each chapter's output (what it printed, its tracebacks), and both commands' own output, in one archive
tar czf "$out/book/outputs.tgz" -C "$work" check.out book.out $(cd "$work" && ls book/*.out 2>/dev/null)
df -h /tmp >> "$out/nvidia-smi.csv"
rm -rf "$work"
