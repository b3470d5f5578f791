"""benchmarks/gpu_book.py: the chapters executed with the gpu profile's models at their real sizes, for a lent GPU.

The fast tests check what the GPU run rests on (the chapters read as papermill and jupytext read them, the profile's
parameters resolved with the run's sizes, a stand-in of the real shape for every hub id); the dry run executes every
chapter on the CPU with the families' tiny shapes, refusing every package the lent machines lack, so the prepared
command cannot rot before a GPU is lent (about 5 minutes: marker ``profiles``, make test-profiles).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stereoprobe.book import chapters, notebook_parameters
from stereoprobe.book.execute import read_notebook
from stereoprobe.paths import checkout_root

ROOT = checkout_root()
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_book as G  # noqa: E402

H = sys.modules["stereoprobe_test_standin_hub"]  # tests/standin_hub.py, loaded by tests/conftest.py
NOTEBOOKS = [c for c in chapters() if c.kind == "notebook"]


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=lambda c: c.stem)
def test_the_cells_and_parameters_are_papermills(chapter) -> None:
    """Without jupytext and papermill (the lent machines have neither), the same code cells in the same order, the
    same parameters cell and the same declared parameters as they read."""
    nb = read_notebook(chapter.source)
    code = [c for c in nb.cells if c.cell_type == "code"]
    mine = [c for c in G.percent_cells(chapter.source) if c["kind"] == "code"]
    assert [c["source"] for c in mine] == [c.source for c in code]
    assert [("parameters" in c["tags"]) for c in mine] == [("parameters" in c.metadata.get("tags", [])) for c in code]
    params = next(c["source"] for c in mine if "parameters" in c["tags"])
    assert G.declared_parameters(params) == notebook_parameters(nb)


def test_the_gpu_run_resolves_every_chapter_with_the_cpu_sizes_and_the_gpu_models() -> None:
    plan = G.plan("gpu", [], None, "cuda")
    assert [c["stem"] for c in plan] == [c.stem for c in NOTEBOOKS]
    by = {c["stem"]: c["parameters"] for c in plan}
    gender = by["gender_occupations"]
    assert gender["sample"] == 2000 and gender["run"]["device"] == "cuda" and gender["run"]["batch_tokens"] == 65536
    assert len(gender["models"]) == 10 and gender["profile"] == "gpu"  # the paper's ten QA models, kept
    assert by["chat_models"]["chat_models"] == ["meta-llama/Llama-3.1-8B-Instruct"]  # the first of four 8B models
    assert (by["chat_models"]["sample"], by["chat_models"]["nationality_sample"]) == (40, 30)  # cpu.yaml's
    assert by["biased_inferences"]["rand_finetuned"] == ["zoo:minilm-nli-rand0"]
    assert by["biased_inferences"]["random_controls"] == 4  # the gpu profile's 8 back at the notebook's default
    sodapop = by["discovering_biases"]
    assert (sodapop["mlm"], sodapop["name_encoder"]) == ("roberta-base", "bert-base-uncased")  # the paper's models
    assert (sodapop["single_depth"], sodapop["names_per_group"], sodapop["n_perm"]) == (2, 8, 100_000)
    assert by["chat_say"]["templates"] == ["letters", "letters-unknown"] and by["chat_say"]["sample"] == 200
    tiny = {c["stem"]: c["parameters"] for c in G.plan("gpu", ["sample=7"], ["gender_occupations"], "cpu", tiny=True)}
    assert list(tiny) == ["gender_occupations"] and tiny["gender_occupations"]["sample"] == 7
    assert tiny["gender_occupations"]["run"]["device"] == "cpu" and len(tiny["gender_occupations"]["models"]) == 10
    hub = {m for c in plan for m in G.named_models(c) if H.is_hub_id(m)}
    assert len(hub) >= 17 and hub <= set(G.SHAPES) <= set(H.STANDINS)
    with pytest.raises(SystemExit, match="not a chapter"):
        G.plan("gpu", [], ["no_such_chapter"], "cuda")


def test_a_standin_has_the_real_shape(tmp_path: Path) -> None:
    """DistilBERT's masked LM at its real size (67 M parameters): the config's widths are the real model's, the
    weights bf16, the vocabulary rows past the trained tokenizer never among the top fills."""
    import torch
    from safetensors.torch import load_file

    about = G.build_standin("distilbert-base-uncased", tmp_path, tiny=False, device="cpu")
    assert about["shape"] == "real" and 66_000_000 < about["parameters"] < 68_000_000
    config = json.loads((tmp_path / "config.json").read_text())
    assert {k: config[k] for k in ("dim", "n_layers", "n_heads", "hidden_dim", "vocab_size")} == {
        "dim": 768, "n_layers": 6, "n_heads": 12, "hidden_dim": 3072, "vocab_size": 30_522}
    weights = load_file(str(tmp_path / "model.safetensors"))
    bias = weights["vocab_projector.bias"]
    assert bias.dtype == torch.bfloat16 and bool((bias[about["tokenizer_entries"]:] == -30).all())
    snapshot = G.store_large(tmp_path, tmp_path / "hub", "distilbert-base-uncased")
    assert (snapshot / "config.json").resolve().parent.name == "blobs"


def test_bad_sets_and_missing_assets_stop_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="write key=value"):
        G.parse_sets(["sample"])
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_book.py"), "--tiny", "--device", "cpu",
                           "--out", str(tmp_path / "out"), "--assets", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "--carry-assets" in proc.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "out" / "gpu_book.json").exists()


@pytest.mark.slow
@pytest.mark.profiles  # make test-profiles (about 5 minutes on 2 cores), run by the publish workflow
def test_every_chapter_runs_in_the_dry_run(tmp_path: Path) -> None:
    assets = tmp_path / "assets"
    run = [sys.executable, str(ROOT / "benchmarks" / "gpu_book.py"), "--assets", str(assets)]
    subprocess.run([*run, "--carry-assets"], check=True, capture_output=True, timeout=300)
    proc = subprocess.run([*run, "--tiny", "--device", "cpu", "--device-packages-only", "--budget", "3000",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=3600)
    doc = json.loads((tmp_path / "out" / "gpu_book.json").read_text())
    failed = {k: (c["status"], (c.get("error") or {}).get("message")) for k, c in doc["chapters"].items()
              if c["status"] != "ok"}
    assert proc.returncode == 0 and not failed, failed
    assert list(doc["chapters"]) == [c.stem for c in NOTEBOOKS]
    for stem, c in doc["chapters"].items():
        assert c["cells_done"] == c["code_cells"] and c["wall_seconds"] > 0, stem
        assert sum(cell["seconds"] for cell in c["cells"]) <= c["wall_seconds"]
    assert doc["chapters"]["gender_occupations"]["glued"]["n_examples"]  # the chapter's glued values recorded
    assert set(doc["world"]["hub"]) >= {"tli8hf/unqover-roberta-large-squad", "meta-llama/Llama-3.1-8B-Instruct"}


def test_the_entry_points_travel_as_metadata(tmp_path: Path) -> None:
    """The lent machine runs src/ uninstalled: the zoo's zoo:, lab: and asset: names and its corpora must be found
    through the metadata gpu_book writes beside the asset stand-ins (the first H200 run had none: every zoo: and lab:
    model was refused)."""
    import importlib.metadata as md
    import tomllib

    G.entry_points(tmp_path)
    (dist,) = md.distributions(path=[str(tmp_path)])
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    found = {group: {e.name: e.value for e in dist.entry_points if e.group == group} for group in declared}
    assert found == declared and set(found["stereoprobe.providers"]) == {"zoo", "lab", "asset"}
    assert dist.metadata["Name"] == "stereoprobe"
