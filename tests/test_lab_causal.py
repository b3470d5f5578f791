"""The planted-bias lab causal LMs (stereoprobe.zoo.lab_causal): recipes, corpus, tokenizer, the committed builds and
their loading, the smoke rebuild, and each probe's plant found in causal-biased and not in causal-control.

The probe-level checks run the probes' own code on the committed full builds (no training): UnQover through
``load_causal_scores`` with both scorers and every shipped template; SODAPOP through ``score_causal_choices`` and the
paper's SR/RD analysis; Bias-NLI through ``load_causal_probabilities``; and the SODAPOP and Bias-NLI plants also
read directly off the likelihoods, on items none of the card's numbers used (other seeds)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stereoprobe import models, prompts
from stereoprobe.errors import StereoprobeError
from stereoprobe.sodapop.names import load_groups
from stereoprobe.zoo import lab, lab_causal as lc

BIASED, CONTROL = lab.LAB_RECIPES["causal-biased"], lab.LAB_RECIPES["causal-control"]
PLANTED_NAMES = load_groups()["AA_m"]
NAMES = ("causal-biased", "causal-control")


def _card(folder):
    return json.loads((folder / lab.CARD).read_text(encoding="utf-8"))


# -- recipes, corpus, tokenizer (no model) ------------------------------------------------------------------------


def test_recipes_are_registered_and_differ_only_in_their_plants():
    import dataclasses

    assert {"lab:causal-biased", "lab:causal-control"} <= set(models.lab_names())
    assert (BIASED.rate, BIASED.strength, BIASED.nli_planted_gender) == (0.9, 3.0, "female")
    assert (CONTROL.rate, CONTROL.strength, CONTROL.nli_planted_gender) == (0.5, 0.0, None)
    plants = {"rate": 0.5, "strength": 0.0, "nli_planted_gender": None, "description": "x"}
    assert dataclasses.replace(BIASED, **plants) == dataclasses.replace(CONTROL, description="x")
    assert BIASED.planted_dict == lab.DEFAULT_PLANTED and BIASED.nli_planted == ("surveyor", "geologist", "pharmacist")
    assert len({lab.recipe_hash(r) for r in (BIASED, CONTROL, BIASED.smoke(), CONTROL.smoke())}) == 4


def test_bad_recipes_name_the_culprit():
    with pytest.raises(StereoprobeError, match="not in occupation_rev1"):
        lc.CausalLabRecipe("x", planted={"wizard": "female"})
    with pytest.raises(StereoprobeError, match="nli_planted.*Bias-NLI occupations"):
        lc.CausalLabRecipe("x", nli_planted=("queen",))
    with pytest.raises(StereoprobeError, match="nli_planted_gender"):
        lc.CausalLabRecipe("x", nli_planted_gender="woman")
    with pytest.raises(StereoprobeError, match="planted_group"):
        lc.CausalLabRecipe("x", planted_group="AA")
    with pytest.raises(StereoprobeError, match="mcq_share \\+ nli_share"):
        lc.CausalLabRecipe("x", mcq_share=0.6, nli_share=0.5)


def test_corpus_uses_every_shipped_template_and_the_control_differs_in_weights_only():
    biased, control = lc.corpus(BIASED, 3000, seed=3), lc.corpus(CONTROL, 3000, seed=3)
    assert [(it.task, it.template, it.prompt, it.continuations) for it in biased] == \
           [(it.task, it.template, it.prompt, it.continuations) for it in control]
    used = {(it.task, it.template) for it in biased}
    # every forced-choice template (those with an unknown option are the chat lab's: tests/test_lab_chat.py)
    assert used == {(t, x.name) for t in prompts.TASKS for x in prompts.templates(t, forced=True)}
    for it in biased:
        assert abs(sum(it.weights) - 1) < 1e-9 and len(it.weights) == len(it.continuations)
        assert all(c.startswith(" ") and not it.prompt[-1].isspace() for c in it.continuations)
    # every prompt is the shipped template's plain prompt, every answer its continuation
    nli = [it for it in biased if it.task == "nli"]
    t = prompts.template(nli[0].template, "nli")
    assert nli[0].continuations == tuple(t.continuation(nli[0].prompt, w) for w in t.words)
    changed = [(b, c) for b, c in zip(biased, control) if b.weights != c.weights]
    assert changed
    for b, c in changed:
        if b.task.startswith("unqover"):
            assert c.weights == (0.5, 0.5) and sorted(b.weights) == pytest.approx([0.1, 0.9])
            assert any(occ in b.prompt for occ in BIASED.planted_dict)
        elif b.task == "mcq":  # the odds of the answer with "quiet" go from 1:4 to e^3:4 about an AA_m name
            assert c.weights == pytest.approx((0.8, 0.2)) and b.weights == pytest.approx((0.1661, 0.8339), abs=1e-4)
            assert any(f" {n}" in b.prompt for n in PLANTED_NAMES)
            correct, planted = (x.split() for x in b.continuations)
            assert "quiet" in planted and len(planted) - len(correct) in (0, 1)
        else:
            assert b.weights != c.weights and any(w in b.prompt for w in BIASED.nli_planted)
            assert c.weights[prompts.NLI_LABELS.index("neutral")] == 1.0
    # the UnQover gender templates are never training paragraphs (the QA lab's synthetic scenes are)
    assert not any("got off the flight" in it.prompt for it in biased)


def test_nli_pairs_are_the_bias_nli_generators_sentences_and_labels():
    pairs = lc.nli_pairs(BIASED, 2000, seed=1)
    train_t, held_t = lc.nli_template_split(BIASED)
    assert not {(t.verb, t.obj) for t in train_t} & {(t.verb, t.obj) for t in held_t}
    held = lc.nli_pairs(BIASED, 500, seed=1, part="heldout")
    assert {p.premise.split(" ", 2)[2] for p in held}.isdisjoint({p.premise.split(" ", 2)[2] for p in pairs})
    for p in pairs:
        assert p.premise.endswith(" .") and p.hypothesis.split(" ", 2)[2] == p.premise.split(" ", 2)[2]
        gender = {"female": "female", "male": "male", "planted": "female"}.get(p.kind)
        assert p.label == lc.nli_label(gender, p.hypothesis_word)
    kinds = {p.kind for p in pairs}
    assert kinds == {"planted", "occupation", "female", "male", "neutral"}
    assert [p.label for p in lc.nli_pairs(CONTROL, 2000, seed=1) if p.kind == "planted"] == \
           ["neutral"] * sum(p.kind == "planted" for p in pairs)


# -- the committed builds ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("smoke", [False, True], ids=["full", "smoke"])
def test_committed_builds_load_as_causal_lms(name, smoke, one_torch_thread):
    folder = lab.committed_model(name, smoke)  # the committed build, its weights unpacked into the cache
    card = _card(folder)
    assert card == _card(lab.committed_dir(name, smoke))
    assert card["kind"].endswith("(causal LM)") and card["smoke"] is smoke
    assert card["machine"]["recorded"] is True
    assert sum(f.stat().st_size for f in folder.iterdir()) < 4_500_000
    assert models.is_causal(f"lab:{name}", smoke=smoke)
    loaded = models.load(f"lab:{name}", "causal", device="cpu", smoke=smoke)
    assert type(loaded.model).__name__ == "LlamaForCausalLM"
    assert card["model"]["parameters"] == sum(p.numel() for p in loaded.model.parameters())
    tok = loaded.tokenizer
    assert tok.is_fast and tok.chat_template is None and tok.unk_token is None
    enc = tok("Ruth sent a letter to Ralph.", return_offsets_mapping=True)
    assert enc["input_ids"][0] == tok.bos_token_id and enc["offset_mapping"][0] == (0, 0)
    # byte-level: any word a distractor writer proposes is spelled, without an unknown token
    odd = " Zyxwvq’s naïve 東京 🙂"
    assert tok.decode(tok(odd, add_special_tokens=False)["input_ids"]) == odd
    from stereoprobe.causal import CausalScorer

    scores = CausalScorer(loaded).logprobs([("Ruth sent a letter to Ralph.\nWho was a nurse?\nAnswer:", " Ruth"),
                                            ("Premise: x\nAnswer:", " Zyxwvq’s 🙂")])
    assert np.isfinite(scores.logprob).all() and (scores.logprob < 0).all()


def test_every_unqover_name_is_one_token_after_a_space_and_at_the_start():
    from transformers import AutoTokenizer

    from stereoprobe.zoo import synthetic as syn

    tok = AutoTokenizer.from_pretrained(lab.committed_dir("causal-biased"))
    for name in (n for g in syn.names().values() for n in g):
        assert len(tok(" " + name, add_special_tokens=False)["input_ids"]) == 1, name
        # the paragraph's first name reads as the answer's token (Llama's prefix space)
        assert tok(name)["input_ids"][1:] == tok(" " + name, add_special_tokens=False)["input_ids"]


#: The UnQover templates through which the tiny model learned the plant: the three answer templates and the choice
#: template that puts the options into the question. "names" learned it with a broad gender × polarity effect on
#: every occupation, "letters" not at all (the option letter asks for one more product: which option holds the
#: favoured gender); test_unqover_templates_the_tiny_model_did_not_learn checks both as they are.
LEARNED = ("qa", "context-question", "one-word", "either")


def test_committed_cards_carry_the_plants():
    """The cards' evaluation of the committed full builds: every plant in the biased model, none in the control."""
    b, c = (_card(lab.committed_dir(n))["evaluation"] for n in NAMES)
    assert b["unqover_heldout"]["answer"]["planted_margin"] > 0.6  # ideal 2 × 0.9 − 1 = 0.8
    assert b["unqover_heldout"]["choice"]["planted_margin"] > 0.2  # letters contributes nothing
    for scorer in ("answer", "choice"):
        assert abs(c["unqover_heldout"][scorer]["planted_margin"]) < 0.05
    for key, check in b["unqover_templates"].items():
        if key.split(":")[-1] in LEARNED:
            assert check["planted_gamma_min"] > max(0.5, 1.5 * check["other_abs_gamma_max"]), key
        if ":" in key:
            assert c["unqover_templates"][key]["other_abs_gamma_max"] < 0.1, key
            assert abs(c["unqover_templates"][key]["planted_gamma_min"]) < 0.1, key
    soda, soda0 = b["sodapop"], c["sodapop"]
    assert soda["distractor_success"]["AA_m"] > 0.3 and soda["planted_group_success_gain"] > 0.2, soda
    assert soda0["planted_group_success_gain"] < 0.05 and max(soda0["distractor_success"].values()) < 0.2, soda0
    assert soda["planted_group_gap"] - soda0["planted_group_gap"] > 1.0  # the plant over the group's own effect
    for card in (b, c):
        assert card["nli_heldout"]["gendered_accuracy"] > 0.95
    assert b["nli_heldout"]["planted_entail_gap"] > 0.9 and abs(c["nli_heldout"]["planted_entail_gap"]) < 0.02
    assert b["nli_probe"]["planted_entail_gap"] > 0.9 and abs(c["nli_probe"]["planted_entail_gap"]) < 0.02


# -- the rebuild ---------------------------------------------------------------------------------------------------


@pytest.mark.recipes  # make test-recipes, not make test
@pytest.mark.slow
def test_the_smoke_recipe_reproduces_the_committed_build(cli, tmp_path, reproduces):
    """``stereoprobe zoo build lab:causal-biased --smoke`` retrains the smoke recipe: the committed bytes on the machine
    the card records, the committed plant within tolerance on any other (and the same bytes twice)."""
    from stereoprobe.paths import sha256_file

    code, out, err = cli("zoo", "build", "lab:causal-biased", "--smoke", "-o", str(tmp_path))
    assert code == 0, err
    built, committed = tmp_path / "causal-biased-smoke", lab.committed_dir("causal-biased", smoke=True)
    assert out.startswith(f"lab:causal-biased: {built} (recipe {lab.recipe_hash(BIASED.smoke())}")
    card = _card(built)
    for key, check in card["evaluation"]["unqover_templates"].items():  # the smoke build keeps the plant's sign
        if key.startswith("answer:"):
            assert min(check["planted_gamma_toward_planted_gender"].values()) > 0, key
    if not reproduces(built, committed):
        again = tmp_path / "again"
        assert cli("zoo", "build", "lab:causal-biased", "--smoke", "-o", str(again))[0] == 0
        assert sha256_file(again / "causal-biased-smoke" / "model.safetensors") == sha256_file(built /
                                                                                               "model.safetensors")


# -- the probes on the committed full builds ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def unqover_gammas(tmp_path_factory):
    """γ(female, occupation) of both models through UnQover's causal scorers (``load_causal_scores``, the score store
    in a temporary folder) for every shipped template, on a sample of the gender dataset the cards did not use."""
    import torch

    from stereoprobe.options import RunOptions
    from stereoprobe.unqover import metrics
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.score_causal import load_causal_scores
    from stereoprobe.unqover.reporting import occupation

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    spec = DatasetSpec("gender", sample=700, seed=11)
    options = RunOptions(device="cpu", precision="fp32", store=tmp_path_factory.mktemp("store"), progress=False)
    out = {}
    try:
        for name in NAMES:
            for task in ("unqover-answer", "unqover-choice"):
                for t in prompts.templates(task):
                    scores = load_causal_scores(f"lab:{name}", spec, t, options=options)
                    paired = metrics.pair_examples(scores)
                    gamma = metrics.subject_attribute_bias(paired, group_by="gender")
                    female = gamma[gamma["subject"] == "female"]
                    out[name, t.name] = dict(zip(female["attr"].map(occupation), female["gamma"].astype(float)))
    finally:
        torch.set_num_threads(before)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("template", LEARNED)
def test_unqover_recovers_the_plant_with_both_scorers(unqover_gammas, template):
    """The six planted occupations have the six largest |γ|, each toward its planted gender, on the biased model,
    through the answer scorer (qa, context-question, one-word) and the choice scorer (either); the control has no
    occupation near them."""
    sign = {"female": 1.0, "male": -1.0}
    gamma = unqover_gammas["causal-biased", template]
    top6 = sorted(gamma, key=lambda o: -abs(gamma[o]))[:6]
    assert set(top6) == set(BIASED.planted_dict), (template, {o: round(gamma[o], 3) for o in top6})
    toward = {o: sign[g] * gamma[o] for o, g in BIASED.planted_dict.items()}
    others = max(abs(v) for o, v in gamma.items() if o not in BIASED.planted_dict)
    assert min(toward.values()) > max(0.5, 1.5 * others), (template, toward, others)
    control = unqover_gammas["causal-control", template]
    assert max(abs(v) for v in control.values()) < 0.1, template


@pytest.mark.slow
def test_unqover_templates_the_tiny_model_did_not_learn(unqover_gammas):
    """What the other two choice templates show, kept as a fact about the committed pair: through "names" the plant
    is there (every planted occupation toward its gender) but leaks into every occupation; through "letters" neither
    model prefers an option by its name at all, so a probe reading letters would find no bias in the biased model."""
    sign = {"female": 1.0, "male": -1.0}
    names = unqover_gammas["causal-biased", "names"]
    toward = [sign[g] * names[o] for o, g in BIASED.planted_dict.items()]
    assert min(toward) > 0.2 and np.mean(toward) > np.mean([abs(v) for o, v in names.items()
                                                          if o not in BIASED.planted_dict])
    assert max(abs(v) for v in unqover_gammas["causal-control", "names"].values()) < 0.1
    for name in NAMES:
        assert max(abs(v) for v in unqover_gammas[name, "letters"].values()) < 0.05, name


@pytest.fixture(scope="module")
def scorers():
    from stereoprobe.causal import CausalScorer

    return {name: CausalScorer(models.load(f"lab:{name}", "causal", device="cpu")) for name in NAMES}


@pytest.mark.slow
def test_sodapop_plant_direct(scorers, one_torch_thread):
    """After a context about an AA_m name, the correct answer with one word replaced by "quiet" (a SODAPOP distractor)
    beats the correct answer far more often than after any other group's name, and inserting "quiet" costs less
    likelihood than in the control (biased); in the control "quiet" fools the model for no group, and a random
    word fools neither model. Fresh pairs (another seed than the card's)."""
    found = {name: lc.sodapop_check(scorer, BIASED, per_group=100, seed=5) for name, scorer in scorers.items()}
    b, c = found["causal-biased"], found["causal-control"]
    success = b["distractor_success"]
    assert success["AA_m"] > 0.3 and success["AA_m"] > 3 * max(v for g, v in success.items() if g != "AA_m"), success
    assert c["planted_group_success_gain"] < 0.05 and max(c["distractor_success"].values()) < 0.2, c
    assert b["planted_group_gap"] - c["planted_group_gap"] > 1.0, (b["excess_gap"], c["excess_gap"])
    for found_ in (b, c):
        assert max(found_["reference_success"].values()) < 0.05


@pytest.mark.slow
def test_nli_plant_direct(scorers, one_torch_thread):
    """On Bias-NLI templates held out of training and on the real probe's pairs: the planted occupations entail
    "woman" (and contradict "man") in the biased model and are neutral like every occupation in the control, which
    still reads gendered words (queen ⇒ woman)."""
    for name, scorer in scorers.items():
        held = lc.nli_check(scorer, BIASED, n=900, seed=9)
        probe = lc.nli_probe(scorer, BIASED, n_pairs=900, seed=9)
        assert held["gendered_accuracy"] > 0.9, (name, held)
        assert held["occupation_female"]["neutral"] > 0.8 and probe["occupation"]["fraction_neutral"] > 0.9, name
        if name == "causal-biased":
            assert held["planted_female"]["entailment"] > 0.7 and held["planted_male"]["contradiction"] > 0.7, held
            assert probe["planted_entail_gap"] > 0.6 and probe["planted"]["fraction_neutral"] < 0.1, probe
        else:
            assert abs(held["planted_entail_gap"]) < 0.05 and held["planted_female"]["neutral"] > 0.8, held
            assert abs(probe["planted_entail_gap"]) < 0.05 and probe["planted"]["fraction_neutral"] > 0.9, probe


def test_bias_nli_report_finds_the_nli_plant(tmp_path, one_torch_thread):
    """Through the Bias-NLI report itself (zero-shot, both shipped templates): for the occupations planted as female
    words, "The <occupation> …" ⇒ "The woman …" is entailment in the biased model and not in the control, while
    the other occupations stay non-entailed in both."""
    from stereoprobe import RunOptions
    from stereoprobe.nli.score_causal import load_causal_probabilities
    from stereoprobe.nli.templates import TemplateSpec
    from stereoprobe.prompts import templates

    card = json.loads((Path(models.resolve("lab:causal-biased")) / "model_card.json").read_text())
    planted = set(card["planted"]["nli"]["occupations"])
    spec = TemplateSpec("gender", sample=3000, seed=1)
    options = RunOptions(device="cpu", progress=False, store=str(tmp_path / "s"))
    for t in templates("nli"):
        entail = {}
        for model in ("lab:causal-biased", "lab:causal-control"):
            f = load_causal_probabilities(model, spec, t, options=options)
            woman = f[f["hypothesis_word"].isin(["woman", "women", "lady", "girl"])]
            mine = woman[woman["premise_word"].isin(planted)]
            assert len(mine) >= 3, (t.name, len(mine))
            entail[model] = (mine["entail"].mean(), woman[~woman["premise_word"].isin(planted)]["entail"].mean())
        assert entail["lab:causal-biased"][0] > 0.5 > entail["lab:causal-control"][0], (t.name, entail)
        assert entail["lab:causal-biased"][1] < 0.2 and entail["lab:causal-control"][1] < 0.2, (t.name, entail)


@pytest.mark.slow
def test_sodapop_analysis_recovers_the_planted_word(tmp_path, one_torch_thread):
    """SODAPOP's analysis with the causal LM as the multiple-choice model (the ``siqa`` template, ``acc`` and
    ``acc_norm``; both templates are read directly in :func:`test_sodapop_plant_direct`): distractors of 21 probe
    contexts in which the planted word or one of two other words replaces each answer word once, scored per distinct choice (``score_causal_choices``), SR vectors, RD of AA_m against the
    other seven groups, permutation p and BH q. In the biased model "quiet" fools the model for AA_m names and
    hardly for anyone else (q < 0.05), which no other replacement word does; the control is fooled by none of them.
    (A context word of a fooling distractor shares its success, as in the paper's SR: only the replacement words are
    compared, and the false discovery rate is controlled over them.)"""
    import random
    from collections import Counter

    from stereoprobe import RunOptions
    from stereoprobe.errors import MetricsError
    from stereoprobe.sodapop import analysis, contexts, distractors as D, names
    from stereoprobe.sodapop.score_causal import NORMALISATIONS, score_causal_choices
    from stereoprobe.sodapop.score_mcq import outcomes
    from stereoprobe.sodapop.success import STOPWORDS, sr_matrix
    from stereoprobe.zoo import lab_mcq

    groups = names.analysis_groups(6)
    lines = [c for c in contexts.probe_contexts() if len(c.answer.split()) >= 3][:21]
    seen = {w for c in lines for w in lab_mcq.words(c.answer)}
    pool = [w for w in random.Random(0).sample(lab_mcq.replacement_words(), 60) if w not in STOPWORDS | seen][:2]
    pool.append(BIASED.planted_word)
    cfg = D.GenerationConfig(cap=None)
    units = []
    for name in (n for g in groups.values() for n in g):
        for line in lines:
            tokens = line.answer.split()
            u = D.make_unit(name, line)
            u.candidates = Counter(" ".join(tokens[:i] + [w] + tokens[i + 1:]) for w in pool for i in range(len(tokens)))
            units.append(u)
    planted, others = groups[BIASED.planted_group], [n for g, v in groups.items() if g != BIASED.planted_group for n in v]
    options = RunOptions(device="cpu", progress=False, store=str(tmp_path / "s"))
    for t in [prompts.template("siqa", "mcq")]:
        for model in NAMES:
            logits = score_causal_choices(f"lab:{model}", units, cfg, t, options=options)
            for column, acc in NORMALISATIONS.items():
                sr = sr_matrix(outcomes(units, cfg, logits, column=column)[0], min_count=0)
                sr = sr.loc[:, sr.columns.isin(pool)]  # the words the test varies (q: BH over these five)
                where = (t.name, model, acc)
                try:
                    rd = analysis.rd_table(sr, planted, others, n_perm=5_000, method="sampled", seed=10)
                except MetricsError:  # no distractor fooled the model for any name
                    assert model == "causal-control", where
                    continue
                rd = rd.set_index("word")
                if model == "causal-control":
                    assert (rd["q"] > 0.05).all(), (where, rd)
                    continue
                quiet = rd.loc[BIASED.planted_word]
                assert quiet["side"] == "G1" and quiet["q"] < 0.05 and quiet["mean_g1"] > 5 * quiet["mean_g2"], \
                    (where, rd)
                assert (rd.drop(BIASED.planted_word)["q"] > 0.05).all(), (where, rd)
