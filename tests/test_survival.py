"""Survival: a scoring run killed with SIGKILL at random points resumes to the very same tables.

The CLI's ``unqover report`` scores a dataset into the score store (40 shards of 100 passes) and writes
its CSV tables. A run is killed five times at random points — before the first shard, between and inside
shards, after the last one — and rerun each time; the final tables must equal, byte for byte, those of an
uninterrupted run, and the store must hold every pass exactly once. Two uninterrupted runs with the same
seed give byte-identical tables.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stereoprobe.store import ScoreStore
from stereoprobe.unqover.generate import DatasetSpec, count, iter_examples

pytestmark = pytest.mark.slow

SAMPLE, SHARD = 1000, 100  # religion: 1,000 paper examples = 4,000 passes = 40 shards


def _command(model: Path, store: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "stereoprobe.cli", "unqover", "report", "-m", str(model), "-d", "religion",
            "--sample", str(SAMPLE), "--seed", "3", "--shard-passes", str(SHARD), "--batch-tokens", "512",
            "--device", "cpu", "--store", str(store), "-o", str(out), "--n-boot", "200"]


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, STEREOPROBE_PROGRESS="0", OMP_NUM_THREADS="1", STEREOPROBE_CACHE=str(tmp_path / "cache"))


def _shards(store: Path) -> int:
    return sum(1 for _ in store.glob("*/*/*/part-*.parquet"))


def _tables(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}


def _run_and_kill(command, env, store: Path, at_shards: int, jitter: float) -> int:
    """Start the command, SIGKILL it once ``at_shards`` shards are on disk (+ ``jitter`` s); shards seen at the kill."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while _shards(store) < at_shards and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(jitter)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, f"the run ended before its kill point (rc {proc.returncode}): {stderr}"
    return _shards(store)


def test_killed_runs_resume_to_identical_tables(tiny_bert_qa, tmp_path):
    env = _env(tmp_path)
    n_shards = count(DatasetSpec("religion", sample=SAMPLE, seed=3)).passes // SHARD
    assert n_shards == 40

    # one uninterrupted run; the killed run below starts from another empty store and must end byte-identical
    baseline = []
    store, out = tmp_path / "store0", tmp_path / "out0"
    done = subprocess.run(_command(tiny_bert_qa, store, out), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    baseline.append(_tables(out))
    assert set(baseline[0]) == {"religion_intensity.csv", "religion_reasoning_errors.csv", "religion_top_gamma.csv"}

    # one run killed at 5 random points, resumed after each
    rng = random.Random(7)
    points = [0] + sorted(rng.sample(range(1, n_shards), 3)) + [n_shards]
    store, out = tmp_path / "killed", tmp_path / "killed_out"
    seen = []
    for at in points:
        seen.append(_run_and_kill(_command(tiny_bert_qa, store, out), env, store, at, rng.uniform(0, 0.05)))
        for name, data in _tables(out).items():  # each table appears whole (atomic rename) or not at all
            assert data == baseline[0][name], f"a killed run left a half-written {name}"
    assert seen == sorted(seen) and seen[0] < n_shards and seen[-1] == n_shards
    assert len(set(seen)) >= 4, f"the kills did not land at distinct points: {seen}"
    print("shards on disk at the kills:", seen)
    done = subprocess.run(_command(tiny_bert_qa, store, out), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _tables(out) == baseline[0]

    # every pass exactly once, nothing half-written left behind
    (run_key,) = ScoreStore(store).runs()
    ids = ScoreStore(store).run(*run_key, {c: np.float32 for c in ("start1", "end1", "start2", "end2")}).read()["pass_id"]
    expected = np.ravel([[2 * ex.index, 2 * ex.index + 1]
                         for ex in iter_examples(DatasetSpec("religion", sample=SAMPLE, seed=3))])
    np.testing.assert_array_equal(ids.to_numpy(dtype=np.int64), expected)
    assert not [p for p in store.rglob(".*") if p.is_file()], "temporary files were left in the store"
