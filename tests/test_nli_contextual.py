"""Contextual-embedding projection (Dev et al. 2020; the authors' bert_debias branch): the word-piece he − she direction, the test-time
hook, its equivalence with a weight edit, per-layer projection, and the zoo's proj@train/test variants."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

from stereoprobe.errors import ProjectionError
from stereoprobe.nli import contextual as ctx
from stereoprobe.nli.projection import random_directions

NLI = {0: "entailment", 1: "neutral", 2: "contradiction"}
PAIRS = [("a man ate a bagel .", "a nurse ate a bagel ."), ("he went to the market .", "she went to the market ."),
         ("yesterday she walked home alone .", "the woman is very good at this job .")]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random BertForSequenceClassification (3 NLI labels, no dropout) and its WordPiece tokenizer."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_nli")
    words = set(re.findall(r"[a-z]+", " ".join(ctx.DEFAULT_SENTENCES + tuple(p for pr in PAIRS for p in pr)).lower()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,?!-'") + sorted(words | {"he", "she"})
    vocab += list("abcdefghijklmnopqrstuvwxyz") + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    tok = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128, num_labels=3, id2label=NLI,
                        label2id={v: k for k, v in NLI.items()}, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return model, tok, folder


def _logits(model, tok, pairs=PAIRS):
    import torch

    enc = tok([p for p, _ in pairs], [h for _, h in pairs], padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model(**enc).logits


# ------------------------------------------------------------------------------------ the direction


def test_word_piece_direction_is_unit_and_matches_the_formula(tiny):
    model, tok, _ = tiny
    b = ctx.word_piece_direction(model, tok)
    W = model.get_input_embeddings().weight.detach().numpy().astype(float)
    he, she = W[tok.convert_tokens_to_ids("he")], W[tok.convert_tokens_to_ids("she")]
    expected = he / np.linalg.norm(he) - she / np.linalg.norm(she)
    np.testing.assert_allclose(b, expected / np.linalg.norm(expected), atol=1e-6)
    assert np.linalg.norm(b) == pytest.approx(1.0)
    raw = ctx.word_piece_direction(model, tok, method="raw")
    np.testing.assert_allclose(raw, (he - she) / np.linalg.norm(he - she), atol=1e-6)
    assert ctx.word_piece(tok, "he") == (tok.convert_tokens_to_ids("he"), "he")
    with pytest.raises(ProjectionError, match="unknown token"):
        ctx.word_piece(tok, "\u4e2d")  # not in the tiny vocabulary: [UNK]


def test_bpe_and_sentencepiece_take_the_leading_space_piece(tiny_roberta_qa):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer, PreTrainedTokenizerFast

    tok = AutoTokenizer.from_pretrained(tiny_roberta_qa)
    model = AutoModelForQuestionAnswering.from_pretrained(tiny_roberta_qa)
    (he_id, he_piece), (she_id, she_piece) = ctx.word_piece(tok, "he"), ctx.word_piece(tok, "she")
    assert (he_piece, she_piece) == ("\u0120he", "\u0120she")  # "Ġhe", "Ġshe": the in-sentence variants
    b = ctx.word_piece_direction(model, tok)
    W = model.get_input_embeddings().weight.detach().numpy().astype(float)
    d = W[he_id] / np.linalg.norm(W[he_id]) - W[she_id] / np.linalg.norm(W[she_id])
    np.testing.assert_allclose(b, d / np.linalg.norm(d), atol=1e-6)
    # SentencePiece-style (DeBERTa): Metaspace pre-tokenizer, "▁he"; a bare "▁" piece is never taken
    vocab = {"[UNK]": 0, "\u2581": 1, "\u2581he": 2, "\u2581she": 3, "he": 4, "she": 5}
    sp = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    sp.pre_tokenizer = pre_tokenizers.Metaspace()
    sp_tok = PreTrainedTokenizerFast(tokenizer_object=sp, unk_token="[UNK]")
    assert ctx.word_piece(sp_tok, "he") == (2, "\u2581he") and ctx.word_piece(sp_tok, "she") == (3, "\u2581she")


# ------------------------------------------------------------------------------------- test-time hook


def test_hook_changes_the_output_and_the_context_manager_removes_it(tiny):
    from stereoprobe.models import LoadedModel
    from stereoprobe.nli.scoring import NLIScorer

    model, tok, folder = tiny
    emb = model.get_input_embeddings()
    before = _logits(model, tok)
    scorer = NLIScorer(LoadedModel("tiny", str(folder), model, tok, "0"))
    plain = scorer.score(PAIRS)
    with ctx.projected(scorer, "gender") as basis:  # the scorer's own model object is hooked
        assert len(emb._forward_hooks) == 1 and basis.shape == (1, 16)
        inside = _logits(model, tok)
        probs = scorer.score(PAIRS)
    assert not emb._forward_hooks
    assert np.isfinite(inside.numpy()).all() and np.isfinite(probs).all()
    assert not np.allclose(inside.numpy(), before.numpy(), atol=1e-5) and not np.allclose(probs, plain, atol=1e-6)
    assert np.array_equal(_logits(model, tok).numpy(), before.numpy())
    # removed after an error too
    with pytest.raises(RuntimeError), ctx.projected(model, ctx.random_controls(model)[0]):
        raise RuntimeError("boom")
    assert not emb._forward_hooks


def test_projected_embeddings_are_orthogonal_to_the_directions(tiny):
    import torch

    from stereoprobe.nli.projection import project_out

    model, tok, _ = tiny
    emb = model.get_input_embeddings()
    ids = torch.arange(emb.weight.shape[0])[None, :]
    for directions in (ctx.word_piece_direction(model, tok), ctx.random_controls(model, n=3, seed=5)):
        with ctx.projected(model, directions) as basis:
            out = emb(ids)[0].detach().numpy()
        assert np.abs(out @ basis.T).max() < 1e-5
        ref = project_out(emb.weight.detach().numpy(), directions)  # the numpy formula
        np.testing.assert_allclose(out, ref, atol=1e-5)


def test_hook_equals_a_weight_edit_when_embeddings_are_frozen(tiny):
    """As in embedding_bias.py: projecting every looked-up row = replacing E by E − (E b) bᵀ, also through fine-tuning."""
    import torch

    model, tok, _ = tiny
    b = ctx.word_piece_direction(model, tok)
    hooked, edited = copy.deepcopy(model), ctx.project_input_embeddings_(copy.deepcopy(model), b)
    W = edited.get_input_embeddings().weight.detach().numpy()
    assert np.abs(W @ b).max() < 1e-5
    enc = tok([p for p, _ in PAIRS], [h for _, h in PAIRS], padding=True, return_tensors="pt")
    labels = torch.tensor([1, 1, 1])
    with ctx.projected(hooked, b):
        np.testing.assert_allclose(_logits(hooked, tok).numpy(), _logits(edited, tok).numpy(), atol=1e-5)
        for m in (hooked, edited):  # one fine-tuning step each, word embeddings frozen
            m.get_input_embeddings().weight.requires_grad_(False)
            opt = torch.optim.SGD([p for p in m.parameters() if p.requires_grad], lr=0.5)
            m.train()
            m(**enc, labels=labels).loss.backward()
            opt.step()
            m.eval()
        np.testing.assert_allclose(_logits(hooked, tok).numpy(), _logits(edited, tok).numpy(), atol=1e-5)
    assert not np.allclose(_logits(hooked, tok).numpy(), _logits(edited, tok).numpy(), atol=1e-5)  # hook gone


def test_dynamic_direction_follows_the_current_rows(tiny):
    import torch

    model, tok, _ = tiny
    m = copy.deepcopy(model)
    dyn = ctx.word_piece_direction(m, tok, dynamic=True)
    assert isinstance(dyn, ctx.DynamicDirection) and dyn.pieces == ("he", "she")
    with ctx.projected(m, dyn):
        same = _logits(m, tok)
    with ctx.projected(m, ctx.word_piece_direction(m, tok)):
        np.testing.assert_allclose(same.numpy(), _logits(m, tok).numpy(), atol=1e-5)
    with torch.no_grad():  # "fine-tuning" moves the he row: the dynamic direction moves with it
        m.get_input_embeddings().weight[dyn.he_id] += torch.linspace(-1, 1, 16)
    now = ctx.word_piece_direction(m, tok)
    ids = torch.tensor([[dyn.he_id, dyn.she_id, 7, 8]])
    with ctx.projected(m, dyn):
        out = m.get_input_embeddings()(ids)[0].detach().numpy()
    assert np.abs(out @ now).max() < 1e-5


def test_random_controls_are_the_seeded_gaussian_directions(tiny):
    model, tok, _ = tiny
    r = ctx.random_controls(model)
    np.testing.assert_array_equal(r, random_directions(16, 8, 0))
    np.testing.assert_array_equal(ctx.projection_directions(model, tok, "random:3")[0], r[3])


def test_unknown_projection_spec_is_one_clear_error(tiny):
    from stereoprobe.zoo.recipes import ZOO, ZooError, ZooRecipe, recipe

    model, tok, _ = tiny
    for bad in ("genders", "random", "random:-1", "random:x", "", None):
        with pytest.raises(ProjectionError, match=r"valid choices: 'gender' .*'random:<seed>'"):
            ctx.parse_projection(bad)
    with pytest.raises(ProjectionError, match="valid choices"), ctx.projected(model, "he-she", tokenizer=tok):
        pass
    with pytest.raises(ZooError, match=r"Recipe minilm-nli: Unknown projection 'race'; valid choices: 'gender'"):
        ZooRecipe(**{**ZOO["minilm-nli"].__dict__, "projection": "race"})
    with pytest.raises(ZooError, match="tied"):
        ZooRecipe(**{**ZOO["minilm-mlm"].__dict__, "projection": "gender"})
    with pytest.raises(ZooError, match=r"projection variants: zoo:minilm-nli-proj, zoo:minilm-nli-rand0 … "
                                       r"zoo:minilm-nli-rand7"):
        recipe("zoo:minilm-nli-rand")
    with pytest.raises(ZooError, match="valid names"):
        recipe("zoo:minilm-qa-proj")  # only the NLI model has variants


# ------------------------------------------------------------------------------ static vs all layers


def test_projected_layers_all_makes_every_layer_orthogonal_to_its_direction(tiny):
    import torch

    model, tok, _ = tiny
    enc = tok([p for p, _ in PAIRS], [h for _, h in PAIRS], padding=True, return_tensors="pt")
    with torch.inference_mode():
        plain = model(**enc, output_hidden_states=True)
    est = ctx.layer_directions(model, tok)
    assert est.n_layers == 3 and est.counts == (12, 12) and est.pair_differences.shape == (3, 12, 16)
    with ctx.projected_layers(model, tok, "all") as dirs:
        assert sorted(dirs) == [0, 1, 2]
        with torch.inference_mode():
            out = model(**enc, output_hidden_states=True)
    assert len(out.hidden_states) == 3
    for layer, h in enumerate(out.hidden_states):
        assert np.abs(h.numpy() @ dirs[layer]).max() < 1e-4, layer
        np.testing.assert_allclose(dirs[layer], est.directions[layer], atol=1e-6)
    assert np.isfinite(out.logits.numpy()).all() and not torch.allclose(out.logits, plain.logits, atol=1e-5)
    with torch.inference_mode():  # hooks removed
        assert torch.equal(model(**enc).logits, plain.logits)
    # "input": the word-piece projection, the same as projected(word_piece_direction)
    with ctx.projected_layers(model, tok, "input") as d:
        a = _logits(model, tok)
    with ctx.projected(model, d["input"]):
        np.testing.assert_allclose(a.numpy(), _logits(model, tok).numpy(), atol=1e-6)
    with ctx.projected_layers(model, tok, [2], directions=est) as only:
        assert list(only) == [2]
    with pytest.raises(ProjectionError, match="0..2"):
        with ctx.projected_layers(model, tok, [5]):
            pass


def test_layer_directions_from_plain_sentences_and_diagnostics(tiny):
    model, tok, _ = tiny
    est = ctx.layer_directions(model, tok, ["He said she went home.", "she went home", "he is good"])
    assert est.counts == (2, 2) and est.pair_differences is None
    assert np.allclose(np.linalg.norm(est.directions, axis=1), 1)
    with pytest.raises(ProjectionError, match="0 'she'"):
        ctx.layer_directions(model, tok, ["he went home"])
    table = ctx.layer_diagnostics(model, tok)
    assert list(table["layer"]) == [0, 1, 2] and table.loc[0, "name"] == "embeddings"
    assert {"diff_norm", "rel_diff", "cos_prev", "cos_word_piece", "sv2_sv1", "removed_input", "removed_all"} <= set(table)
    assert np.isnan(table.loc[0, "cos_prev"]) and table["cos_prev"][1:].between(-1, 1).all()
    assert table.loc[0, "removed_all"] == pytest.approx(1.0, abs=1e-5)  # layer 0: its own direction, exactly
    assert table["removed_input"].between(-10, 1).all() and table["sv2_sv1"].between(0, 1).all()


def test_projected_probabilities_are_stored_apart_from_the_plain_ones(tiny, tmp_path):
    from stereoprobe import RunOptions
    from stereoprobe.nli.scoring import load_probabilities
    from stereoprobe.nli.templates import TemplateSpec
    from stereoprobe.store import ScoreStore

    _, _, folder = tiny
    spec = TemplateSpec("nationality", sample=100, seed=1)
    store = ScoreStore(tmp_path / "s")
    kw = dict(options=RunOptions(store=store, device="cpu", progress=False))
    plain = load_probabilities(str(folder), spec, **kw)
    proj = load_probabilities(str(folder), spec, projection="gender", **kw)
    rand = load_probabilities(str(folder), spec, projection="random:0", **kw)
    assert len(proj) == 100 and list(proj["index"]) == list(plain["index"])
    cols = ["entail", "neutral", "contradiction"]
    assert not np.allclose(proj[cols], plain[cols], atol=1e-6) and not np.allclose(proj[cols], rand[cols], atol=1e-6)
    assert len(store.runs()) == 3
    again = load_probabilities(str(folder), spec, projection="gender", **kw)  # read back, not rescored
    assert again[cols].equals(proj[cols]) and len(store.runs()) == 3
    with pytest.raises(ProjectionError, match="layers:all"):
        load_probabilities(str(folder), spec, projection="layers:some", **kw)


# ------------------------------------------------------------------------------ zoo proj@train/test


def test_variant_names_resolve_to_the_nli_recipe_with_a_projection():
    from stereoprobe.errors import ModelLoadError
    from stereoprobe.models import load
    from stereoprobe.zoo import recipes

    base = recipes.ZOO["minilm-nli"]
    names = recipes.variant_names()
    assert names == ["zoo:minilm-nli-proj"] + [f"zoo:minilm-nli-rand{i}" for i in range(8)]
    assert recipes.zoo_names() == ["zoo:minilm-mlm", "zoo:minilm-qa", "zoo:minilm-nli", "zoo:minilm-mcq",
                                   "zoo:smollm2-135m-instruct"]  # the recipes, then the shipped chat model
    for name, spec in zip(names, ["gender"] + [f"random:{i}" for i in range(8)]):
        r = recipes.recipe(name)
        assert r.projection == spec and r.name == name[4:] and r.name not in recipes.ZOO
        same = {k: v for k, v in r.__dict__.items() if k not in ("name", "summary", "projection")}
        assert same == {k: v for k, v in base.__dict__.items() if k not in ("name", "summary", "projection")}
        assert recipes.corpus(r, smoke=True) == recipes.corpus(base, smoke=True)
    # through models.load, like any zoo name: the unbuilt part says how to build it
    if not recipes.card_path("minilm-nli-rand7").is_file():
        with pytest.raises(ModelLoadError, match="stereoprobe zoo build minilm-nli-rand7"):
            load("zoo:minilm-nli-rand7", "nli", device="cpu")


def test_smoke_train_of_the_projecting_variant_records_and_exports_the_projection(tmp_path, monkeypatch):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from stereoprobe.zoo import recipes

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    card = recipes.train("minilm-nli-proj", tmp_path / "parts", smoke=True, progress=False, threads=1)
    proj = card["projection"]
    assert card["name"] == "zoo:minilm-nli-proj" and card["recipe"]["projection"] == "gender"
    assert proj["spec"] == "gender" and proj["pieces"] == ["he", "she"] and proj["k"] == 1 and proj["dim"] == 384
    assert proj["cos_gender"] == pytest.approx(1.0) and proj["baseline"] == "zoo:minilm-nli"
    assert json.loads((tmp_path / "parts" / "minilm-nli-proj.card.json").read_text()) == card
    base = recipes.ZOO["minilm-nli"]
    assert card["training"]["steps"] == base.smoke_steps and card["training"]["lr"] == base.lr
    # the merged folder carries the projection as a weight edit, equal to the trained adapters + hook
    folder = recipes.zoo_model_path("minilm-nli-proj", tmp_path / "parts")
    merged = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    assert json.loads((folder / "model_card.json").read_text())["projection"] == proj
    r = recipes.recipe("minilm-nli-proj")
    model, _ = recipes._base_model(r)
    b = ctx.word_piece_direction(model, tok)
    assert np.abs(merged.get_input_embeddings().weight.detach().numpy() @ b).max() < 1e-5
    adapted = recipes._adapted(r, model)
    params = dict(adapted.named_parameters())
    with torch.no_grad():
        for n, t in load_file(str(tmp_path / "parts" / "minilm-nli-proj.safetensors")).items():
            params[n].copy_(t)
    adapted.eval()
    enc = tok(["He bought a coat."], ["She bought a coat."], return_tensors="pt")
    with torch.inference_mode(), ctx.projected(model, b):
        hooked = adapted(**enc).logits
    with torch.inference_mode():
        exported, unhooked = merged(**enc).logits, adapted(**enc).logits
    assert torch.allclose(hooked, exported, atol=1e-4) and not torch.allclose(unhooked, exported, atol=1e-4)
