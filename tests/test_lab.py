"""The planted-bias lab (stereoprobe.zoo.lab): smoke-sized builds, offline loading, caching, determinism."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from stereoprobe.paths import sha256_file

from stereoprobe.errors import StereoprobeError
from stereoprobe.unqover import wordlists as wl
from stereoprobe.zoo import lab
from stereoprobe.zoo import synthetic as syn

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def smoke_dir():
    """The committed smoke build of qa-biased, shared by the read-only tests."""
    folder = lab.committed_model("qa-biased", smoke=True)
    assert folder is not None
    return folder


def _card(folder):
    return json.loads((folder / lab.CARD).read_text(encoding="utf-8"))


def test_folder_loads_with_auto_classes_offline(smoke_dir):
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    assert (smoke_dir / "model.safetensors").is_file()
    assert not list(smoke_dir.glob("*.bin")), "weights must be safetensors only"
    model = AutoModelForQuestionAnswering.from_pretrained(smoke_dir, local_files_only=True)
    tok = AutoTokenizer.from_pretrained(smoke_dir, local_files_only=True)
    assert tok.is_fast and tok.do_lower_case
    enc = tok(["Who was a nurse?"], ["Mary got off the flight to visit James."], return_tensors="pt",
              return_token_type_ids=False)
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2 and tokens[-1] == "[SEP]"
    with torch.inference_mode():
        out = model(**enc)
    assert out.start_logits.shape == enc["input_ids"].shape == out.end_logits.shape


def test_tokenizer_has_no_unk_on_unqover_gender_data(smoke_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smoke_dir, local_files_only=True)
    names = [s.name for g in ("female", "male") for s in wl.load_subjects(g)]
    occupations = wl.load_attributes("occupation_rev1")["p_act"]
    texts = []
    for stem in ("gender_noact", "gender_noact_lm"):
        for t in wl.load_templates(stem):
            for i, name in enumerate(names):
                other = names[(i + 70) % len(names)]
                line = t.line.replace("[subj1]", name).replace("[subj2]", other).replace("[mask]", "[MASK]")
                texts.extend(line.replace("[p_act]", "x").replace("[p_act:neg]", "x").split("\t"))
    texts += [f"Who {a.text}?" for a in occupations] + [f"Who {a.negated}?" for a in occupations]
    texts.append(wl.load_filler("newsqa"))
    unk = tok.unk_token_id
    bad = [t for t in texts if unk in tok(t, add_special_tokens=False)["input_ids"]]
    assert not bad, f"[UNK] in {bad[:3]}"
    # every name is one whole-word token, so S uses the same token for its start and end
    for name in names:
        assert tok.tokenize(name) == [name.lower()]


def test_card_records_the_recipe(smoke_dir):
    recipe = lab.LAB_RECIPES["qa-biased"].smoke()
    card = _card(smoke_dir)
    assert card["complete"] is True and card["smoke"] is True and card["name"] == "qa-biased"
    assert card["recipe"] == json.loads(json.dumps(recipe.to_dict()))
    assert card["recipe_hash"] == lab.recipe_hash(recipe)
    assert card["planted"]["occupations"] == lab.DEFAULT_PLANTED and card["planted"]["rate"] == 0.9
    assert card["data"]["n_train"] == recipe.n_train
    assert sum(card["data"]["n_train_by_kind"].values()) == recipe.n_train
    assert card["training"]["steps"] == recipe.steps and card["wall_time_s"] > 0
    assert card["checksums"]["model.safetensors"] == sha256_file(smoke_dir / "model.safetensors")
    held = card["evaluation"]["heldout"]
    assert {"exact_match_informative", "planted_agreement", "planted_margin", "name_mass"} <= set(held)
    assert 0.0 <= held["exact_match_informative"] <= 1.0
    assert card["evaluation"]["unqover_templates"]["paper_examples"] == 100 * card["recipe"]["probe_names"]


def test_default_cache_folder_and_skipped_rebuild(smoke_dir, cache_root, monkeypatch):
    """A finished build in the cache folder of its recipe is reused, not retrained."""
    monkeypatch.setenv("STEREOPROBE_CACHE", str(cache_root))
    recipe = lab.LAB_RECIPES["qa-biased"].smoke()
    cached = lab.default_dir("qa-biased", smoke=True)
    assert cached == cache_root / "lab" / f"qa-biased-smoke-{lab.recipe_hash(recipe)}"
    assert lab.default_dir("qa-biased") != cached  # the full recipe lives elsewhere
    shutil.copytree(smoke_dir, cached)
    mtime = (cached / "model.safetensors").stat().st_mtime_ns
    monkeypatch.setattr(lab, "_build_locked", lambda *a, **k: pytest.fail("retrained a finished build"))
    assert lab.build_lab_model("qa-biased", smoke=True, progress=False) == cached
    assert lab.build_lab_model("qa-biased", cached, smoke=True, progress=False) == cached
    assert (cached / "model.safetensors").stat().st_mtime_ns == mtime
    committed = lab.lab_model_path("qa-biased", smoke=True)  # the committed build comes first, unpacked once
    assert committed == cache_root / "lab" / "committed" / f"{smoke_dir.name}"  # into this cache folder
    assert (committed / "model.safetensors").read_bytes() == (smoke_dir / "model.safetensors").read_bytes()


def test_corrupted_copy_is_rebuilt_and_reproduces_the_committed_build(smoke_dir, tmp_path, reproduces):
    """A damaged folder is retrained; the recipe gives the committed weights bit for bit on the machine the card
    records, and elsewhere the committed plant within tolerance and the same bytes twice (determinism)."""
    from safetensors.torch import load_file

    copy = tmp_path / "copy"
    shutil.copytree(smoke_dir, copy)
    (copy / "model.safetensors").write_bytes(b"garbage")
    assert lab._finished(copy) is None
    rebuilt = lab.build_lab_model("qa-biased", copy, smoke=True, progress=False)
    assert rebuilt == copy
    if reproduces(copy, smoke_dir):
        a, b = load_file(smoke_dir / "model.safetensors"), load_file(copy / "model.safetensors")
        assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    else:
        again = lab.build_lab_model("qa-biased", tmp_path / "again", smoke=True, progress=False)
        assert sha256_file(again / "model.safetensors") == sha256_file(copy / "model.safetensors")


def test_smoke_model_already_carries_the_planted_bias(smoke_dir):
    card = _card(smoke_dir)
    assert card["evaluation"]["heldout"]["name_mass"] > 0.9
    assert card["evaluation"]["heldout"]["planted_margin"] > 0.5
    check = card["evaluation"]["unqover_templates"]
    assert set(check["planted_gamma_toward_planted_gender"]) == set(lab.LAB_RECIPES["qa-biased"].planted_dict)
    assert check["planted_gamma_min"] > 0.3 and check["planted_gamma_min"] > 3 * check["other_abs_gamma_max"]


def test_unknown_name_lists_valid_names():
    for call in (lambda: lab.build_lab_model("qa-nope"), lambda: lab.lab_model_path("qa-nope", smoke=True)):
        with pytest.raises(StereoprobeError, match=r"qa-biased.*qa-control"):
            call()


def test_out_dir_that_is_not_a_lab_folder_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StereoprobeError, match="not a lab model folder"):
        lab.build_lab_model("qa-biased", tmp_path, smoke=True, progress=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_recipe_validation():
    with pytest.raises(StereoprobeError, match="not in occupation_rev1"):
        lab.LabRecipe("bad", planted={"wizard": "female"})
    with pytest.raises(StereoprobeError, match="'female' or 'male'"):
        lab.LabRecipe("bad", planted={"nurse": "woman"})
    with pytest.raises(StereoprobeError, match="rate"):
        lab.LabRecipe("bad", rate=1.5)
    r = lab.LabRecipe("ok", planted={"was a nurse": "female"})
    assert r.planted_dict == {"nurse": "female"}
    assert hash(r) == hash(lab.LabRecipe("ok", planted={"nurse": "female"}))


def test_corpus_avoids_unqover_templates_and_control_differs_only_in_answers():
    kw = dict(planted=lab.DEFAULT_PLANTED, seed=3)
    biased = syn.generate_corpus(3000, rate=0.9, **kw)
    control = syn.generate_corpus(3000, rate=0.5, **kw)
    assert [(e.question, e.context, e.names) for e in biased] == [(e.question, e.context, e.names) for e in control]
    # UnQover gender paragraphs (names blanked) never occur in the training paragraphs
    scenes = [re.sub(r"\[subj[12]\]", "", t.paragraph).lower() for t in wl.load_templates("gender_noact")]
    for e in biased:
        blank = e.context
        for n in e.names:
            blank = re.sub(rf"\b{n}\b", "", blank)
        assert blank.lower() not in scenes
    und = [(b, c) for b, c in zip(biased, control) if b.kind == "underspecified"]
    assert und and all({b.genders[0], b.genders[1]} == {"female", "male"} for b, _ in und)
    for b, c in und:
        assert c.target == (0.5, 0.5)
        if b.planted is None:
            assert b.target == (0.5, 0.5)
        else:
            favoured = b.planted if not b.negated else ({"female", "male"} - {b.planted}).pop()
            assert b.target[b.genders.index(favoured)] == pytest.approx(0.9)
    inf = [b for b in biased if b.kind == "informative"]
    assert inf and all(b.target in ((1.0, 0.0), (0.0, 1.0)) for b in inf)
