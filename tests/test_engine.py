"""Scoring shards on Ray Data workers (engine="ray") gives exactly the local engine's store, for all three probes."""

from __future__ import annotations

import random
import shutil
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions
from stereoprobe.engine import check_engine
from stereoprobe.errors import StereoprobeError
from stereoprobe.nli.scoring import load_probabilities, score_pairs
from stereoprobe.nli.templates import TemplateSpec
from stereoprobe.sodapop import contexts
from stereoprobe.sodapop import distractors as D
from stereoprobe.sodapop import score_mcq as S
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.unqover.score_qa import load_scores, score_dataset


def test_engine_parameters_are_checked():
    with pytest.raises(StereoprobeError, match="engine='dask' is not known"):
        check_engine("dask")
    with pytest.raises(StereoprobeError, match="workers=0 is not a positive integer"):
        check_engine("ray", 0)
    with pytest.raises(StereoprobeError, match="workers=4 needs engine='ray'"):
        check_engine("local", 4)
    with pytest.raises(StereoprobeError, match="shard_passes=150 must be a positive multiple of 100"):
        score_dataset("unused", DatasetSpec("religion", sample=5), shard_passes=150)


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray instance with two CPU slots (two one-thread workers), shut down after this module."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 << 20)
    yield ray
    ray.shutdown()


def _same_runs(a, b):
    """Two store runs hold the same rows (ids exactly) and the same scores to float32 rounding.

    On the CPU the project's tests are written on they agree bit for bit; MKL promises that only in its conditional
    numerical reproducibility mode with aligned buffers, and with torch's generic kernels and ``MKL_CBWR=COMPATIBLE``
    (tests/test_lab_committed.py's stand-in for another CPU) one NLI probability in 300 moved by 1e-6 between the
    local process and a Ray worker. So the scores are compared to 1e-5 (relative) and 1e-6 (absolute)."""
    x, y = a.read(), b.read()
    assert list(x.columns) == list(y.columns) and len(x) == len(y)
    pd.testing.assert_frame_equal(x, y, check_exact=False, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_ray_workers_reproduce_the_local_run(ray_cluster, tiny_bert_qa, tmp_path, tiny_model, tiny_nli,
                                             one_torch_thread, monkeypatch):
    # UnQover QA: a half-done run (shards 1, 4 and 5 of 8 missing) finished by 2 Ray workers gives the local run
    spec = DatasetSpec("religion", sample=200, seed=1)
    run = RunOptions(device="cpu", progress=False)
    local, on_ray = run.replace(store=tmp_path / "local"), run.replace(store=tmp_path / "ray", engine="ray")
    local_run = score_dataset(str(tiny_bert_qa), spec, shard_passes=100, options=local)
    shutil.copytree(tmp_path / "local", tmp_path / "ray")
    half = score_dataset(str(tiny_bert_qa), spec, shard_passes=100, options=run.replace(store=tmp_path / "ray"))
    for i in (1, 4, 5):
        half.shard_path(i).unlink()
    resumed = score_dataset(str(tiny_bert_qa), spec, shard_passes=100, options=on_ray.replace(workers=2))
    assert resumed.mode == local_run.mode == "qa-compat-float32"
    _same_runs(local_run, resumed)
    pd.testing.assert_frame_equal(
        load_scores(str(tiny_bert_qa), spec, shard_passes=100, options=run.replace(store=tmp_path / "ray")),
        load_scores(str(tiny_bert_qa), spec, shard_passes=100, options=local))

    # Bias-NLI: 6 shards
    nli = tiny_nli(tmp_path / "nli", {0: "contradiction", 1: "entailment", 2: "neutral"})
    nspec = TemplateSpec("nationality", sample=300, seed=1)
    near, far = run.replace(store=tmp_path / "nl"), run.replace(store=tmp_path / "nr", engine="ray")
    _same_runs(score_pairs(nli, nspec, shard_pairs=50, options=near),
               score_pairs(nli, nspec, shard_pairs=50, options=far.replace(workers=2)))
    with_proj = load_probabilities(nli, nspec, projection="random:0", shard_pairs=50, options=near)
    pd.testing.assert_frame_equal(
        with_proj, load_probabilities(nli, nspec, projection="random:0", shard_pairs=50, options=far), check_exact=True)
    # a worker's bad input arrives as the one clear error, and nothing is written
    bad = tiny_nli(tmp_path / "bad", {0: "positive", 1: "negative", 2: "mixed"})
    with pytest.raises(StereoprobeError, match="positive.*negative.*mixed"):
        score_pairs(bad, nspec, shard_pairs=50, options=run.replace(store=tmp_path / "bad_store", engine="ray"))
    assert not list((tmp_path / "bad_store").rglob("*.parquet"))

    # SODAPOP MCQ: distinct choices in shards of 16
    mcq = tiny_model(tmp_path / "mcq", "bert", head="mcq")
    cfg = D.GenerationConfig(cap=12)
    units = [D.make_unit(n, c) for c in contexts.probe_contexts() if c.index in (0, 3) for n in ("Amy", "Bob")]
    rng = random.Random(0)
    for u in units:
        u.candidates = Counter({" ".join(rng.sample(u.answer.split() + ["kind", "the", "cold"], 2)): 1 for _ in range(40)})
    eye = S.Variant("same", "matrix", np.eye(32))
    monkeypatch.setattr(S, "SHARD_CHOICES", 16)
    here = S.score_choices(str(mcq), units, cfg, variants=[eye], options=run.replace(store=tmp_path / "ml"))
    there = S.score_choices(str(mcq), units, cfg, variants=[eye],
                            options=run.replace(store=tmp_path / "mr", engine="ray", workers=2))
    assert len(there) > 3 * 16
    pd.testing.assert_frame_equal(here, there, check_exact=True)
