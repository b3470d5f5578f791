"""The committed lab models (stereoprobe/data/lab): loaded instead of retrained, checked, reproducible.

Every ``lab:`` model ships as a trained HuggingFace folder with its card, full size and smoke size. These
tests check that each one matches its recipe and its card, that nothing trains when one is asked for, that
a damaged one is refused with the rebuild command, and that the recipes still reproduce the committed
builds (smoke builds: QA in tests/test_lab.py, in ``make test``; multiple choice here, marked ``recipes``, in ``make
test-recipes`` with the causal LM's and the static Bias-NLI lab's; the masked LM, whose smoke build takes 40 s, shares
their training loop).

What "reproduce" means: training runs on one thread with a fixed seed, so the same code gives the same bytes
on the same CPU and library versions, which each card records (``machine``; :mod:`stereoprobe.machine`).
Elsewhere the kernels round differently and the weights differ; the vocabulary, configuration and the planted
effect on the card's evaluation must still agree within ``machine.REBUILD_ATOL + REBUILD_RTOL * |card|``
(0.05 + 10 %), with the plant ranked first exactly where the card ranks it first. Measured for that tolerance:
the six full recipes rebuilt on an AMD EPYC (Zen 5, AVX-512) against the committed builds from another CPU differ
by at most 0.024, except mcq-biased's planted group gap (2.99 vs 2.83, 5.6 %); the smoke recipes rebuilt with
torch's generic kernels by at most 0.007. That retraining on generic kernels (the test marked ``portability``)
runs in ``make test-portability``, not in ``make test``: 2.7 minutes of CPU with the static Bias-NLI lab's.
"""

from __future__ import annotations

import json
import shutil

import pytest

from stereoprobe import machine, packed
from stereoprobe.errors import StereoprobeError
from stereoprobe.paths import sha256_file
from stereoprobe.zoo import lab

#: every committed build: full and smoke size, one build for a recipe without smoke sizes (the chat pair: its plants
#: need the whole training; lab.own_smoke)
BUILDS = [(name, smoke) for name in sorted(lab.LAB_RECIPES) for smoke in (False, True) if not smoke or
          lab.own_smoke(name)]
FILES = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"}


def _card(folder):
    return json.loads((folder / lab.CARD).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name,smoke", BUILDS, ids=[f"{n}{'-smoke' if s else ''}" for n, s in BUILDS])
def test_every_lab_model_is_committed_with_its_recipe(name, smoke):
    recipe = lab.LAB_RECIPES[name].smoke() if smoke else lab.LAB_RECIPES[name]
    committed = lab.committed_dir(name, smoke)
    card = _card(committed)
    assert card["name"] == name and card["smoke"] is smoke and card["complete"] is True
    assert card["recipe_hash"] == lab.recipe_hash(recipe)
    assert card["recipe"] == json.loads(json.dumps(recipe.to_dict()))
    files = FILES - {"vocab.txt"} if name.startswith(("mcq", "causal", "chat")) else FILES  # no WordPiece vocabulary
    # the weights ship packed (stereoprobe.packed); what loads is the committed folder unpacked into the cache, the
    # very files the card's checksums describe
    packed_weights = packed.packed_path(committed / lab.WEIGHTS)
    assert {p.name for p in committed.iterdir()} == files - {lab.WEIGHTS} | {packed_weights.name, lab.CARD}
    folder = lab.committed_model(name, smoke)
    assert folder.parent.parent.name == "lab" and folder.name.startswith(committed.name + "-")
    assert {p.name for p in folder.iterdir()} == files | {lab.CARD} and _card(folder) == card
    assert card["checksums"] == {f: sha256_file(folder / f) for f in sorted(files)}
    assert card["training"]["threads"] == lab.TRAIN_THREADS == 1
    # the machine that trained it: recorded for every build since 0.6.0 (the smoke builds, the causal pair), and said
    # so otherwise
    if smoke or name.startswith(("causal", "chat")):
        assert card["machine"]["recorded"] is True and set(machine.MATCH_KEYS) <= set(card["machine"])
    else:
        assert card["machine"] == machine.NOT_RECORDED
    # 0.55 MB (QA, masked LM) to 1.5 MB (MCQ), the chat LM 0.72 MB; the causal LM 3.5 MB (full) and 1.1 MB (smoke);
    # packed, 84 % of that
    assert (folder / "model.safetensors").stat().st_size < (4_000_000 if name.startswith("causal") else 2_000_000)
    assert packed_weights.stat().st_size < 0.86 * (folder / "model.safetensors").stat().st_size


def test_asking_for_a_lab_model_never_trains(monkeypatch, tmp_path):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path))
    monkeypatch.setattr(lab, "build_lab_model", lambda *a, **k: pytest.fail("trained a committed lab model"))
    for name, smoke in BUILDS:
        folder = lab.lab_model_path(name, smoke)
        assert folder == lab.committed_model(name, smoke) and folder.parent == tmp_path / "lab" / "committed"
    # a recipe without smoke sizes: the smoke profile loads its one build
    for name in ("chat-biased", "chat-control"):
        assert not lab.own_smoke(name) and lab.lab_model_path(name, smoke=True) == lab.committed_model(name)
    assert [p.name for p in (tmp_path / "lab").iterdir()] == ["committed"]  # unpacked there, nothing trained


def test_committed_full_models_carry_their_plants():
    """The card's evaluation of each committed full-size model: the planted effect is there, the control has
    none (the thresholds the book's planted-bias claims rest on)."""
    qa, qa0 = (_card(lab.committed_dir(n))["evaluation"] for n in ("qa-biased", "qa-control"))
    assert qa["heldout"]["planted_margin"] > 0.6 and abs(qa0["heldout"]["planted_margin"]) < 0.1
    assert qa["unqover_templates"]["planted_gamma_min"] > 0.5
    mlm, mlm0 = (_card(lab.committed_dir(n))["evaluation"] for n in ("mlm-biased", "mlm-control"))
    assert mlm["heldout"]["planted_agreement"] > 0.9 and abs(mlm0["heldout"]["planted_margin"]) < 0.05
    mcq, mcq0 = (_card(lab.committed_dir(n))["evaluation"] for n in ("mcq-biased", "mcq-control"))
    assert mcq["planted_group_gap"] > 2.0 and mcq["other_abs_gap_max"] < 0.5
    assert abs(mcq0["planted_group_gap"]) < 0.5


@pytest.fixture
def damaged(monkeypatch, tmp_path):
    """A copy of the committed qa-biased build standing in for the package's, one byte of its weights flipped."""
    data = tmp_path / "data" / "lab"
    shutil.copytree(lab.committed_dir("qa-biased"), data / "qa-biased")
    monkeypatch.setattr(lab, "committed_dir", lambda name, smoke=False: data / f"{name}{'-smoke' if smoke else ''}")
    weights = packed.packed_path(data / "qa-biased" / "model.safetensors")  # shipped packed
    blob = bytearray(weights.read_bytes())
    blob[-1] ^= 1
    weights.write_bytes(bytes(blob))
    return data


def test_a_damaged_committed_model_is_refused_with_the_rebuild_command(damaged):
    with pytest.raises(StereoprobeError) as e:
        lab.lab_model_path("qa-biased")
    assert str(e.value) == (f"The committed lab model {damaged}/qa-biased is damaged (model.safetensors does not "
                            "match its card); reinstall stereoprobe, or rebuild it with `stereoprobe zoo build "
                            f"lab:qa-biased -o {damaged}`.")


def test_the_cli_says_so_in_one_line(damaged, cli, tmp_path):
    code, out, err = cli("unqover", "score", "-m", "lab:qa-biased", "-d", "gender", "--sample", "2",
                         "--device", "cpu", "--store", str(tmp_path / "store"))
    assert code == 2 and out == ""
    assert err.startswith("error: The committed lab model ") and err.count("\n") == 1 and "zoo build" in err


def test_a_changed_recipe_is_trained_into_the_cache_not_read_from_the_package(monkeypatch, tmp_path):
    import dataclasses

    changed = dataclasses.replace(lab.LAB_RECIPES["mcq-biased"], seed=1)
    monkeypatch.setitem(lab.LAB_RECIPES, "mcq-biased", changed)
    assert lab.committed_model("mcq-biased", smoke=True) is None
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path))
    folder = lab.lab_model_path("mcq-biased", smoke=True)
    assert folder == tmp_path / "lab" / f"mcq-biased-smoke-{lab.recipe_hash(changed.smoke())}"
    assert _card(folder)["recipe"]["seed"] == 1


@pytest.mark.slow
@pytest.mark.recipes  # make test-recipes, not make test
@pytest.mark.parametrize("name", ["mcq-biased"])  # QA: tests/test_lab.py; the masked LM (40 s) shares the loop
def test_the_recipe_reproduces_the_committed_build(name, cli, tmp_path, reproduces):
    """``stereoprobe zoo build lab:NAME --smoke`` retrains the smoke recipe: the committed bytes on the machine
    the card records, the committed plant within tolerance on any other."""
    code, out, err = cli("zoo", "build", f"lab:{name}", "--smoke", "-o", str(tmp_path))
    assert code == 0, err
    built, committed = tmp_path / f"{name}-smoke", lab.committed_dir(name, smoke=True)
    assert out.startswith(f"lab:{name}: {built} (recipe {lab.recipe_hash(lab.LAB_RECIPES[name].smoke())}")
    if not reproduces(built, committed):  # another machine: training is still deterministic here
        again = tmp_path / "again"
        assert cli("zoo", "build", f"lab:{name}", "--smoke", "-o", str(again))[0] == 0
        assert sha256_file(again / f"{name}-smoke" / "model.safetensors") == sha256_file(built / "model.safetensors")


@pytest.mark.portability  # make test-portability (2.7 min on 2 cores), run by the publish workflow
@pytest.mark.parametrize("name", ["qa-biased", "mlm-biased", "causal-biased"])  # smoke builds that carry their plant
def test_a_rebuild_on_other_kernels_keeps_the_plant(name, tmp_path):
    """Portability, shown on this machine: with torch's generic kernels instead of its vectorised ones
    (``ATEN_CPU_CAPABILITY=default``) and MKL's conditional-numerical-reproducibility mode ``COMPATIBLE`` (the
    code path MKL takes on an unknown CPU), training gives other weights, and they must still carry the committed
    plant within tolerance, so a test of this file that holds on one CPU only fails here."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "STEREOPROBE_PROGRESS": "0"}
    run = subprocess.run([sys.executable, "-m", "stereoprobe.cli", "zoo", "build", f"lab:{name}", "--smoke", "-o",
                          str(tmp_path)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    built, committed = tmp_path / f"{name}-smoke", lab.committed_dir(name, smoke=True)
    card, rebuilt = _card(committed), _card(built)
    assert rebuilt["machine"]["aten_capability"] == "DEFAULT"
    assert machine.differences(card["machine"], rebuilt["machine"]), "trained on the card's own kernels"
    assert machine.evaluation_differences(card["evaluation"], rebuilt["evaluation"]) == []


def test_zoo_build_refuses_an_unknown_lab_model_before_training(cli, monkeypatch):
    monkeypatch.setattr(lab, "build_lab_model", lambda *a, **k: pytest.fail("trained"))
    code, out, err = cli("zoo", "build", "lab:qa-biassed")
    assert code == 2 and out == ""
    assert err == ("error: Unknown lab model 'lab:qa-biassed'; choose one of: lab:causal-biased, lab:causal-control, "
                   "lab:chat-biased, lab:chat-control, lab:mcq-biased, lab:mcq-control, lab:mlm-biased, lab:mlm-control, lab:qa-biased, lab:qa-control.\n")
