"""The fingerprinted, resumable Parquet score store (stereoprobe.store)."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from stereoprobe import atomic
from stereoprobe import store as store_mod
from stereoprobe.engine import ShardJob, fill
from stereoprobe.errors import StereoprobeError, StoreError
from stereoprobe.store import PASS_ID, ScoreStore

SCHEMA = {"start": np.float32, "end": np.float32}


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")


@pytest.fixture
def store(tmp_path):
    return ScoreStore(tmp_path / "scores")


def chunk_cols(i: int, size: int = 10, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + i)
    return {
        PASS_ID: np.arange(i * size, (i + 1) * size),
        "start": rng.random(size, dtype=np.float32),
        "end": rng.random(size, dtype=np.float32),
    }


def write_all(run, n_shards: int, size: int = 10) -> None:
    for i in range(n_shards):
        run.write_shard(i, chunk_cols(i, size))
    run.finish(n_shards, n_shards * size)


def test_default_root_is_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    assert ScoreStore().root == tmp_path / "cache" / "scores"


def test_round_trip(store):
    run = store.run("modelA", "dataX", "compat", SCHEMA)
    write_all(run, 3)
    assert run.is_complete()
    df = run.read()
    assert list(df.columns) == [PASS_ID, "start", "end"]
    assert df[PASS_ID].dtype == np.uint32 and df["start"].dtype == np.float32
    np.testing.assert_array_equal(df[PASS_ID].to_numpy(), np.arange(30))
    expected = np.concatenate([chunk_cols(i)["start"] for i in range(3)])
    np.testing.assert_array_equal(df["start"].to_numpy(), expected)
    assert list(run.read(["end"]).columns) == ["end"]
    assert list(run.read(["end", PASS_ID]).columns) == [PASS_ID, "end"]
    assert [len(d) for d in run.iter_shards()] == [10, 10, 10]
    assert run.n_rows() == 30
    assert store.runs() == [("modelA", "dataX", "compat")]
    # reopening the same key finds it complete
    assert store.run("modelA", "dataX", "compat", SCHEMA).is_complete()


def test_layout_and_metadata(store):
    run = store.run("m", "d", "compat", SCHEMA)
    run.write_shard(0, chunk_cols(0))
    path = store.root / "m" / "d" / "compat" / "part-00000.parquet"
    assert path.exists()
    meta = json.loads(pq.read_metadata(path).metadata[b"stereoprobe.store"])
    assert meta["model_fp"] == "m" and meta["dataset_fp"] == "d" and meta["mode"] == "compat"
    assert meta["schema"] == {"start": "float32", "end": "float32"}
    assert meta["shard"] == 0 and meta["n_rows"] == 10
    assert set(meta["sha256"]) == {PASS_ID, "start", "end"}


def test_empty_run_and_empty_shard(store):
    run = store.run("m", "d", "compat", SCHEMA)
    run.finish(0, 0)
    df = run.read()
    assert len(df) == 0 and list(df.columns) == [PASS_ID, "start", "end"]
    run2 = store.run("m", "d", "clean", SCHEMA)
    run2.write_shard(0, {PASS_ID: [], "start": [], "end": []})
    run2.write_shard(1, chunk_cols(1))
    run2.finish(2, 10)
    assert len(run2.read()) == 10


def test_casts_and_validation(store):
    run = store.run("m", "d", "compat", {"p": np.float32, "k": np.int16, "ok": bool})
    run.write_shard(0, {PASS_ID: [0, 1], "p": [0.5, 1.0], "k": [3, 4], "ok": [True, False]})
    with pytest.raises(StoreError, match="missing \\['ok'\\]"):
        run.write_shard(1, {PASS_ID: [2], "p": [0.5], "k": [1]})
    with pytest.raises(StoreError, match="unexpected \\['zz'\\]"):
        run.write_shard(1, {PASS_ID: [2], "p": [0.5], "k": [1], "ok": [True], "zz": [1]})
    with pytest.raises(StoreError, match="has 2 values"):
        run.write_shard(1, {PASS_ID: [2], "p": [0.5, 0.1], "k": [1], "ok": [True]})
    with pytest.raises(StoreError, match="cannot be stored as int16"):
        run.write_shard(1, {PASS_ID: [2], "p": [0.5], "k": [1.5], "ok": [True]})
    with pytest.raises(StoreError, match="outside int16"):
        run.write_shard(1, {PASS_ID: [2], "p": [0.5], "k": [70000], "ok": [True]})
    with pytest.raises(StoreError, match="1-D"):
        run.write_shard(1, {PASS_ID: [2], "p": [[0.5]], "k": [1], "ok": [True]})
    with pytest.raises(StoreError, match="strictly increasing"):
        run.write_shard(1, {PASS_ID: [3, 2], "p": [0.5, 0.5], "k": [1, 1], "ok": [True, True]})
    with pytest.raises(StoreError, match="must increase through"):
        run.write_shard(1, {PASS_ID: [1], "p": [0.5], "k": [1], "ok": [True]})
    with pytest.raises(StoreError, match="int64"):
        run.write_shard(1, {PASS_ID: [2**32], "p": [0.5], "k": [1], "ok": [True]})
    assert not run.has_shard(1)


def test_int64_pass_ids(store):
    run = store.run("m", "d", "compat", {"p": np.float32}, pass_id_dtype=np.int64)
    run.write_shard(0, {PASS_ID: [2**33, 2**33 + 1], "p": [0.0, 1.0]})
    run.finish(1, 2)
    df = run.read()
    assert df[PASS_ID].dtype == np.int64 and df[PASS_ID].iloc[0] == 2**33


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model_fp": "a/b"}, "model_fp 'a/b' cannot name a store folder"),
        ({"dataset_fp": ".."}, "dataset_fp '..' cannot name"),
        ({"mode": ""}, "mode '' cannot name"),
        ({"schema": {}}, "non-empty dict"),
        ({"schema": {PASS_ID: np.float32}}, "other than 'pass_id'"),
        ({"schema": {"s": object}}, "does not hold"),
        ({"schema": {"s": "nonsense-dtype"}}, "does not understand"),
        ({"pass_id_dtype": np.int32}, "pass_id_dtype int32 is not supported"),
    ],
)
def test_bad_keys_and_schemas(store, kwargs, match):
    args = {"model_fp": "m", "dataset_fp": "d", "mode": "compat", "schema": SCHEMA, **kwargs}
    with pytest.raises(StoreError, match=match) as info:
        store.run(**args)
    assert isinstance(info.value, StereoprobeError)


def test_crash_during_write_leaves_no_shard(store, monkeypatch):
    run = store.run("m", "d", "compat", SCHEMA)
    real_write = pq.write_table

    def dying_write(table, where, **kwargs):
        where.write(b"PAR1 half a shard")  # some bytes hit the disk, then the process "dies"
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(store_mod.pq, "write_table", dying_write)
    with pytest.raises(KeyboardInterrupt):
        run.write_shard(0, chunk_cols(0))
    assert not run.has_shard(0)
    assert not run.shard_path(0).exists()
    assert list(run.path.iterdir()) == []  # no temp file left either
    monkeypatch.setattr(store_mod.pq, "write_table", real_write)
    run.write_shard(0, chunk_cols(0))
    assert run.has_shard(0)


def test_crash_keeps_previous_shard_intact(store, monkeypatch):
    run = store.run("m", "d", "compat", SCHEMA)
    run.write_shard(0, chunk_cols(0))
    before = run.shard_path(0).read_bytes()

    def dying_write(table, where, **kwargs):
        where.write(b"garbage")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_mod.pq, "write_table", dying_write)
    with pytest.raises(StoreError, match="No space left on device"):
        run.write_shard(0, chunk_cols(0, seed=5))
    assert run.shard_path(0).read_bytes() == before


def test_stale_temp_files_are_cleaned(store):
    run = store.run("m", "d", "compat", SCHEMA)
    # a temp file of a writer that was SIGKILLed (pid no longer alive) on this host
    dead_pid = 2**22 + 12345
    while atomic.pid_alive(dead_pid):  # pragma: no cover - pick a pid that is not running
        dead_pid += 1
    stale = run.path / f".part-00000.parquet.{atomic.HOST}.{dead_pid}.deadbeef.tmp"
    stale.write_bytes(b"PAR1 half")
    live = run.path / f".part-00001.parquet.{atomic.HOST}.{os.getpid()}.cafecafe.tmp"
    live.write_bytes(b"PAR1 being written by a live process")
    run = store.run("m", "d", "compat", SCHEMA)
    assert not stale.exists()
    assert live.exists()  # a live writer's temp file is left alone
    assert not run.has_shard(0)


def test_resume_reports_only_missing_shards(store):
    run = store.run("m", "d", "compat", SCHEMA)
    run.write_shard(0, chunk_cols(0))
    run.write_shard(1, chunk_cols(1))
    del run  # "kill"
    run = store.run("m", "d", "compat", SCHEMA)
    assert not run.is_complete()
    assert run.missing_shards(5) == [2, 3, 4]
    with pytest.raises(StoreError, match="cannot finish: 3 of 5 shards are missing"):
        run.finish(5, 50)
    for i in run.missing_shards(5):
        run.write_shard(i, chunk_cols(i))
    run.finish(5, 50)
    np.testing.assert_array_equal(run.read()[PASS_ID].to_numpy(), np.arange(50))


class Chunks(ShardJob):
    """Shards of ``chunk_cols``: shard 2 is 'killed' the first time it is computed."""

    def __init__(self, n_shards: int, size: int = 10, kill: int | None = None):
        super().__init__(n_rows=n_shards * size, shard_size=size)
        self.calls: list[int] = []
        self.kill = kill

    def score_shard(self, i):
        self.calls.append(i)
        if i == self.kill and self.calls.count(i) == 1:
            raise KeyboardInterrupt("killed")
        return chunk_cols(i, size=self.shard_size)


def test_fill_resumes_and_skips(store):
    run = store.run("m", "d", "compat", SCHEMA)
    job = Chunks(4, kill=2)
    with pytest.raises(KeyboardInterrupt):
        fill(run, job, progress=False)
    assert run.missing_shards(4) == [2, 3]
    fill(run, job, progress=False)
    assert job.calls == [0, 1, 2, 2, 3]
    assert run.is_complete() and run.n_rows() == 40
    fill(run, job, progress=False)  # complete: nothing is computed
    assert job.calls == [0, 1, 2, 2, 3]
    np.testing.assert_array_equal(run.read()[PASS_ID].to_numpy(), np.arange(40))


def test_fill_notices_a_changed_shard_size(store):
    run = store.run("m", "d", "compat", SCHEMA)
    run.write_shard(0, chunk_cols(0, size=10))
    with pytest.raises(StoreError, match="holds 10 rows but shard 0 of this run has 20"):
        fill(run, Chunks(2, size=20), progress=False)


def test_fill_rejects_a_scorer_that_drops_rows(store):
    class Short(Chunks):
        def score_shard(self, i):
            return {k: v[:-1] for k, v in chunk_cols(i).items()}

    run = store.run("m", "d", "compat", SCHEMA)
    with pytest.raises(StoreError, match="came back with 9 rows instead of 10"):
        fill(run, Short(2), progress=False)
    assert not run.shard_path(0).exists()


def test_truncated_shard_is_reported(store):
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 2)
    path = run.shard_path(1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError, match=f"{path}.*delete {path}"):
        run.read()
    with pytest.raises(StoreError, match="cannot be opened as Parquet"):
        run.has_shard(1)
    # deleting it, as the message says, reopens the run for exactly that shard
    path.unlink()
    assert not run.is_complete()
    assert run.missing_shards(2) == [1]
    run.write_shard(1, chunk_cols(1))
    run.finish(2, 20)
    assert len(run.read()) == 20


def _flip_byte_in_data(path, column: str) -> None:
    """Flip one byte inside the data pages of ``column`` (not the footer)."""
    md = pq.read_metadata(path)
    names = [md.schema.column(j).name for j in range(md.num_columns)]
    col = md.row_group(0).column(names.index(column))
    start = col.data_page_offset
    data = bytearray(path.read_bytes())
    pos = start + col.total_compressed_size - 3
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))


def test_flipped_bytes_are_reported(store):
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 2, size=1000)
    path = run.shard_path(0)
    _flip_byte_in_data(path, "end")
    assert run.has_shard(0)  # the footer is intact: cheap check passes ...
    with pytest.raises(StoreError, match=f"score shard {path}.*delete {path}"):
        run.read()  # ... but reading catches it
    run.read(["start"])  # other columns stay readable


def test_checksum_mismatch(store, monkeypatch):
    """Data that decodes fine but differs from what was written fails the sha256 check."""
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 2)
    path = run.shard_path(1)
    table = pq.read_table(path)
    meta = table.schema.metadata
    tampered = table.set_column(1, "start", [np.zeros(10, np.float32)]).replace_schema_metadata(meta)
    pq.write_table(tampered, path)
    assert run.has_shard(1)
    with pytest.raises(StoreError, match=f"{path} column 'start' fails its sha256 checksum.*delete {path}"):
        run.read()
    assert len(run.read(["end"])) == 20


def test_shard_from_another_model_is_reported(store):
    a = store.run("modelA", "d", "compat", SCHEMA)
    b = store.run("modelB", "d", "compat", SCHEMA)
    write_all(a, 2)
    b.write_shard(0, chunk_cols(0))
    shutil.copy(a.shard_path(1), b.shard_path(1))
    with pytest.raises(StoreError, match="holds model_fp='modelA' but this run expects 'modelB'"):
        b.has_shard(1)
    with pytest.raises(StoreError, match=f"delete {b.shard_path(1)}"):
        b.missing_shards(2)


def test_shard_moved_to_another_index_is_reported(store):
    run = store.run("m", "d", "compat", SCHEMA)
    run.write_shard(0, chunk_cols(0))
    shutil.copy(run.shard_path(0), run.shard_path(1))
    with pytest.raises(StoreError, match="says it is shard 0, not 1"):
        run.has_shard(1)


def test_schema_change_is_reported(store):
    write_all(store.run("m", "d", "compat", SCHEMA), 1)
    other = store.run("m", "d", "compat", {"start": np.float64, "end": np.float32})
    with pytest.raises(StoreError, match="schema"):
        other.is_complete()
    with pytest.raises(StoreError, match="schema"):
        other.has_shard(0)


def test_modes_and_fingerprints_are_isolated(store):
    keys = [("m1", "d1", "compat"), ("m1", "d1", "clean"), ("m2", "d1", "compat"), ("m1", "d2", "compat")]
    for seed, key in enumerate(keys):
        run = store.run(*key, SCHEMA)
        for i in range(2):
            run.write_shard(i, chunk_cols(i, seed=100 * seed))
        run.finish(2, 20)
    firsts = {key: store.run(*key, SCHEMA).read()["start"].iloc[0] for key in keys}
    assert len(set(firsts.values())) == len(keys)
    assert store.runs() == sorted(keys)
    assert not store.run("m1", "d1", "other", SCHEMA).has_shard(0)


def test_incomplete_run_read_is_reported(store):
    run = store.run("m", "d", "compat", SCHEMA)
    run.write_shard(0, chunk_cols(0))
    with pytest.raises(StoreError, match="is incomplete .*rerun the scoring"):
        run.read()
    with pytest.raises(StoreError, match="incomplete"):
        list(run.iter_shards())


def test_missing_shard_after_finish_is_reported(store):
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 3)
    run.shard_path(1).unlink()
    assert not run.is_complete()
    with pytest.raises(StoreError, match=r"1 of 3 shards are missing \(first .*part-00001.parquet"):
        run.read()


def test_extra_shard_is_reported(store):
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 2)
    manifest = run.manifest_path.read_bytes()
    run.write_shard(5, chunk_cols(5))  # a leftover from a longer stream; writing reopens the run
    assert not run.is_complete()
    with pytest.raises(StoreError, match="part-00005.parquet lies beyond the run's 2 shards"):
        run.finish(2, 20)
    run.manifest_path.write_bytes(manifest)
    with pytest.raises(StoreError, match=r"part-00005.parquet lies beyond the run's 2 shards .*; delete it"):
        run.read()
    run.shard_path(5).unlink()
    assert len(run.read()) == 20


def test_finish_validates_row_count(store):
    run = store.run("m", "d", "compat", SCHEMA)
    run.write_shard(0, chunk_cols(0))
    with pytest.raises(StoreError, match="hold 10 rows, not 11"):
        run.finish(1, 11)
    assert not run.is_complete()


def test_corrupted_manifest_is_reported(store):
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 1)
    run.manifest_path.write_text("{not json")
    with pytest.raises(StoreError, match="_manifest.json is not valid JSON; delete"):
        run.is_complete()
    run.manifest_path.unlink()
    run.finish(1, 10)  # the shards are kept; finishing again rebuilds it
    assert run.is_complete()


def test_manifest_row_count_tampering(store):
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 2)
    manifest = json.loads(run.manifest_path.read_text())
    manifest["n_rows"] = 25
    run.manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="counts 25 rows but the shards hold 20"):
        run.read()


def test_unknown_columns_on_read(store):
    run = store.run("m", "d", "compat", SCHEMA)
    write_all(run, 1)
    with pytest.raises(StoreError, match=r"column\(s\) \['nope'\]"):
        run.read(["nope"])


def test_storage_is_small(store):
    """pass_id + 4 random float32 columns stay well under 20 bytes per pass."""
    n = 200_000
    rng = np.random.default_rng(0)
    run = store.run("m", "d", "compat", {c: np.float32 for c in "abcd"})
    run.write_shard(0, {PASS_ID: np.arange(n), **{c: rng.random(n, dtype=np.float32) for c in "abcd"}})
    assert run.shard_path(0).stat().st_size / n < 20
    run.finish(1, n)
    df = run.read()
    assert isinstance(df, pd.DataFrame) and len(df) == n


def test_random_bit_flips_never_change_data_silently(tmp_path):
    """Any single bit flipped anywhere in a shard either raises StoreError or leaves the data intact."""
    rng = np.random.default_rng(1)
    for k in range(60):
        run = ScoreStore(tmp_path / str(k)).run("m", "d", "compat", SCHEMA)
        write_all(run, 1, size=300)
        ref = run.read()
        path = run.shard_path(0)
        data = bytearray(path.read_bytes())
        data[rng.integers(len(data))] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(data))
        try:
            run.has_shard(0)
            df = run.read()
        except StoreError as exc:
            assert str(path) in str(exc)
        else:
            pd.testing.assert_frame_equal(df, ref)
