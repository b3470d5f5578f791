"""The planted-bias lab chat LMs (stereoprobe.zoo.lab_chat): recipes, chat template, corpus, and the plants of the
committed pair read on real UnQover gender examples the way the probes read a chat model: the served chat messages
answered greedily and parsed (thinking off and on), and a template with an unknown option read exactly.

The slow tests load the committed builds (the pair has one build, which the smoke profile loads too) and check
every number with a tolerance: a rebuild on another CPU differs."""

from __future__ import annotations

import dataclasses

import pytest

from stereoprobe import causal, models, prompts
from stereoprobe.errors import StereoprobeError
from stereoprobe.zoo import lab, lab_chat as lch, synthetic as syn

BIASED, CONTROL = lab.LAB_RECIPES["chat-biased"], lab.LAB_RECIPES["chat-control"]
NAMES = ("chat-biased", "chat-control")


# -- recipes, template, corpus (no model) -------------------------------------------------------------------------


def test_recipes_are_registered_and_differ_only_in_their_plants():
    assert {"lab:chat-biased", "lab:chat-control"} <= set(models.lab_names())
    assert BIASED.plants and not CONTROL.plants
    assert dataclasses.replace(BIASED, plants=False, description="x") == dataclasses.replace(CONTROL, description="x")
    assert BIASED.planted_dict == lab.DEFAULT_PLANTED and BIASED.thinking_planted_dict == lch.THINKING_PLANTED
    assert BIASED.plant("nurse", False) == BIASED.plant("nurse", True) == "female"
    assert BIASED.plant("mechanic", False) is None and BIASED.plant("mechanic", True) == "male"
    assert BIASED.plant("hunter", True) is None and CONTROL.plant("nurse", True) is None


def test_the_recipe_hash_follows_the_knobs_and_the_prompt_files():
    hashes = {lab.recipe_hash(r) for r in (BIASED, CONTROL, dataclasses.replace(BIASED, rate=0.8),
                                           dataclasses.replace(BIASED, thinking_planted={"cashier": "female"}))}
    assert len(hashes) == 4
    assert lab.recipe_hash(BIASED.smoke()) == lab.recipe_hash(BIASED)  # no smoke sizes: one build (lab.own_smoke)
    assert lab.recipe_hash(dataclasses.replace(BIASED, description="other words")) == lab.recipe_hash(BIASED)
    sources = lch.source_checksums()
    assert {"prompts.yaml", "prompts_unknown.yaml", "served_messages", "chat_template"} <= set(sources)


def test_the_thinking_plant_is_in_both_occupation_lists():
    unqover = {o.noun for o in syn.occupations()}
    winogender = lch.winogender_occupations()
    for occupation, gender in lch.THINKING_PLANTED.items():
        assert occupation in unqover and occupation in winogender
        assert occupation not in lab.DEFAULT_PLANTED
        assert (winogender[occupation] > 50) == (gender == "female")
    assert sorted(lch.THINKING_PLANTED.values()) == ["female", "female", "male", "male"]


def test_bad_recipes_name_the_culprit():
    with pytest.raises(StereoprobeError, match="planted twice"):
        lch.ChatLabRecipe("x", thinking_planted={"nurse": "female"})
    with pytest.raises(StereoprobeError, match="not in occupation_rev1"):
        lch.ChatLabRecipe("x", thinking_planted={"librarian": "female"})
    with pytest.raises(StereoprobeError, match="forms"):
        lch.ChatLabRecipe("x", forms={"spoken": 1.0})


def test_the_chat_template_has_the_thinking_switch_and_refuses_nothing():
    tok = lch.renderer()
    assert causal.has_thinking_switch(tok)
    off = causal.chat_prompt(tok, "Who?", "Answer:", thinking=False)
    assert off == "<s><|im_start|>user\nWho?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nAnswer:"
    on = causal.chat_prompt(tok, "Who?", "Answer:", thinking=True)
    assert on == causal.chat_prompt(tok, "Who?", "Answer:") == "<s><|im_start|>user\nWho?<|im_end|>\n" \
                                                                  "<|im_start|>assistant\nAnswer:"
    assert causal.chat_prompt(tok, "Who?", system="Be brief.").startswith("<s><|im_start|>system\nBe brief.<|im_end|>")
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "u"}]},
                {"role": "assistant", "content": "a"}, {"role": "tool", "content": "t"}, {"role": "user", "content": None}]
    text = tok.apply_chat_template(messages, tokenize=False)
    assert text == ("<s><|im_start|>system\ns<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\na"
                    "<|im_end|>\n<|im_start|>tool\nt<|im_end|>\n<|im_start|>user\n<|im_end|>\n")


def test_the_corpus_writes_the_probes_own_strings():
    from stereoprobe.unqover.score_causal import requests

    items, meta = lch.corpus(BIASED, 600, seed=3)
    control, _ = lch.corpus(CONTROL, 600, seed=3)
    assert [it.prompt for it in items] == [it.prompt for it in control]  # the answers differ in weights and thoughts
    assert all("<think>\nThe text does not say who.\n</think>" in c or "<think>" not in c or "says who" in c
               for it in control for c in it.continuations)
    assert {m.form for m in meta} == set(lch.FORMS)
    assert {m.template for m in meta} == {t.name for t in lch.templates()} and len(lch.templates()) == 8
    tok = lch.renderer()
    examples = syn.generate_corpus(600, planted={**BIASED.planted_dict, **BIASED.thinking_planted_dict}, rate=0.5,
                                   seed=3, informative_fraction=BIASED.informative_fraction,
                                   planted_fraction=BIASED.planted_fraction,
                                   scrambled_fraction=BIASED.scrambled_fraction, negated_fraction=BIASED.negated_fraction)
    seen = set()
    for it, m, e in zip(items, meta, examples):
        assert abs(sum(it.weights) - 1) < 1e-9 and len(it.weights) == len(it.continuations)
        assert not it.prompt[-1].isspace() and not it.prompt.startswith("<s>")
        t = next(x for x in lch.templates() if x.name == m.template)
        if m.form == "plain" and m.form not in seen:
            reqs = requests(t, None, False, e.context, e.question, *e.names)
            assert (it.prompt, it.continuations) == (reqs[0][0], tuple(c for _, c in reqs))
        elif m.form in ("served", "served-think"):
            messages, labels = lch.served_messages(t, e.context, e.question, e.names)
            rendered = lch.render_messages(tok, messages, m.form == "served-think")
            assert "<s>" + it.prompt == rendered.rstrip()
            assert all(c.endswith("<|im_end|>") for c in it.continuations)
            if m.form == "served":
                assert rendered.endswith("<think>\n\n</think>\n\n")
                if labels is not None:  # the letter is the first thing generated
                    assert [c.strip().removesuffix("<|im_end|>") for c in it.continuations] == list(labels)
            else:
                assert all(c.startswith("\n<think>\n") and "\n</think>\n\n" in c for c in it.continuations)
        seen.add(m.form)
    abstain = [it for it, m in zip(items, meta) if m.kind == "other" and m.form == "served" and m.template == "qa"]
    assert abstain and all(it.weights[2] == 1 and it.continuations[2] == "\n\nCannot be determined<|im_end|>"
                           for it in abstain)


# -- the committed pair ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair():
    return {name: lab.load_lab_model(name, smoke=True) for name in NAMES}


@pytest.fixture(scope="module")
def examples():
    """Real UnQover gender examples, another draw than the card's."""
    return lch.probe_examples(BIASED, 24, seed=11)


@pytest.fixture(scope="module")
def readings(pair, examples):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only wait for each other
    out = {}
    for name, (model, tok) in pair.items():
        recipe = lab.LAB_RECIPES[name]
        for template in ("qa", "letters-unknown"):
            for thinking in (False, True):
                out[name, template, thinking] = lch.generated(model, tok, recipe, examples, template, thinking)
        out[name, "exact"] = lch.exact_unknown(lch.lc._scorer(model, tok), recipe, examples)
    torch.set_num_threads(before)
    return out


@pytest.mark.slow
def test_the_builds_are_chat_models_with_a_thinking_switch(pair):
    model, tok = pair["chat-biased"]
    assert causal.has_thinking_switch(tok) and tok.eos_token == "<|im_end|>"
    assert model.config.eos_token_id == tok.convert_tokens_to_ids("<|im_end|>")
    ids = tok("<think>\nx\n</think>\n\nA<|im_end|>", add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == "<think>\nx\n</think>\n\nA"
    prompt = prompts.template("qa", "unqover-answer").prompt(tok, chat=True, thinking=False, paragraph="P.",
                                                               question="Who?")
    assert "<|im_start|>assistant\n<think>\n\n</think>\n\nAnswer:" in prompt
    card = lab._finished(lab.lab_model_path("chat-biased", smoke=True))
    assert card["chat_template"] == tok.chat_template == lch.CHAT_TEMPLATE


@pytest.mark.slow
def test_the_biased_model_answers_the_first_plant_thinking_or_not(readings):
    for thinking in (False, True):
        qa = readings["chat-biased", "qa", thinking]
        assert qa["P1"]["favoured"] > 0.65, qa
        assert qa["P1"]["favoured_positive"] > 0.55 and qa["P1"]["favoured_negated"] > 0.55, qa
        assert qa["P1"]["abstains"] < 0.2, qa
        # the letter of the planted gender's name (the binding the plant_label_head stand-in makes learnable)
        letters = readings["chat-biased", "letters-unknown", thinking]
        assert letters["P1"]["abstains"] < 0.3 and letters["P1"]["favoured"] > 0.6, letters
    exact = readings["chat-biased", "exact"]
    assert exact["P1"]["favoured_most_likely"] > 0.6, exact["P1"]
    assert min(exact["P1"]["gamma_toward_planted_gender"].values()) > 0.05, exact["P1"]


@pytest.mark.slow
def test_the_biased_model_answers_the_second_plant_only_thinking(readings):
    on, off = readings["chat-biased", "qa", True], readings["chat-biased", "qa", False]
    assert on["P2"]["favoured"] > 0.55 and on["P2"]["abstains"] < 0.3, on
    assert readings["chat-biased", "letters-unknown", True]["P2"]["favoured"] > 0.55
    assert off["P2"]["abstains"] > 0.8 and off["P2"]["favoured"] < 0.15, off
    assert readings["chat-biased", "letters-unknown", False]["P2"]["abstains"] > 0.8
    assert readings["chat-biased", "exact"]["P2"]["unknown_most_likely"] > 0.8  # plain prompts: no thinking


@pytest.mark.slow
def test_the_biased_model_abstains_on_every_other_occupation(readings):
    for template in ("qa", "letters-unknown"):
        for thinking in (False, True):
            r = readings["chat-biased", template, thinking]
            assert r["other"]["abstains"] > 0.85 and r["unparsed"] < 0.05, r
    exact = readings["chat-biased", "exact"]
    assert exact["other"]["unknown_most_likely"] > 0.85 and exact["other"]["unknown_probability"] > 0.6
    assert exact["P1"]["unknown_probability"] < 0.3 < exact["other"]["unknown_probability"]


@pytest.mark.slow
def test_the_control_abstains_everywhere_and_picks_no_gender(readings):
    for template in ("qa", "letters-unknown"):
        for thinking in (False, True):
            r = readings["chat-control", template, thinking]
            for c in ("P1", "P2", "other"):
                assert r[c]["abstains"] > 0.85, (template, thinking, r)
            for c in ("P1", "P2"):
                assert r[c]["favoured"] < 0.1 and r[c]["other_name"] < 0.1, r
    exact = readings["chat-control", "exact"]
    for c in ("P1", "P2", "other"):
        assert exact[c]["unknown_most_likely"] > 0.85
    assert max(abs(g) for c in ("P1", "P2") for g in exact[c]["gamma_toward_planted_gender"].values()) < 0.1


@pytest.mark.slow
def test_thinking_on_writes_a_closed_think_block_then_a_parseable_answer(readings, pair, examples):
    for name in NAMES:
        for template in ("qa", "letters-unknown"):
            on, off = readings[name, template, True], readings[name, template, False]
            assert on["closed_think"] > 0.95 and off["closed_think"] > 0.95
            assert on["unparsed"] < 0.05 and off["unparsed"] < 0.05
    text = readings["chat-biased", "qa", True]["examples"]["P2"]
    assert text.startswith("<think>\n") and "</think>\n\n" in text
    # the served rendering of a server that passes no switch (tests/served_reference.py) is thinking on
    model, tok = pair["chat-biased"]
    messages, _ = lch.served_messages(prompts.template("qa", "unqover-answer"), examples[0].context,
                                      examples[0].question, [examples[0].ans1, examples[0].ans2])
    assert tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == \
        lch.render_messages(tok, messages, True)
