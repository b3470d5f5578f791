"""The planted-bias lab multiple-choice model (stereoprobe.zoo.lab_mcq): its tokenizer, teacher and items, smoke
builds, loading, and the planted name-group–word effect in the trained pair (and nothing in the control)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from stereoprobe import RunOptions
from stereoprobe.errors import StereoprobeError
from stereoprobe.models import lab_names, load
from stereoprobe.sodapop.names import GROUPS, load_groups
from stereoprobe.sodapop.score_mcq import first_segment
from stereoprobe.zoo import lab, lab_mcq

BIASED, CONTROL = lab.LAB_RECIPES["mcq-biased"], lab.LAB_RECIPES["mcq-control"]
PLANTED = load_groups()[BIASED.planted_group]


def test_recipes_are_registered_as_lab_models():
    assert {"lab:mcq-biased", "lab:mcq-control"} <= set(lab_names())
    assert (BIASED.planted_group, BIASED.planted_word, BIASED.strength, CONTROL.strength) == ("AA_m", "quiet", 3.0, 0.0)
    assert dataclasses.replace(BIASED, strength=0.0, description="x") == dataclasses.replace(CONTROL, description="x")
    assert lab.recipe_hash(BIASED) != lab.recipe_hash(CONTROL) != lab.recipe_hash(BIASED.smoke())


def test_every_name_is_one_token_and_other_words_are_unk():
    tok = lab_mcq.build_tokenizer()
    lab_mcq.check_single_tokens(tok)
    names = [n for group in load_groups().values() for n in group]
    assert len(names) == 220
    for name in names:
        assert tok.tokenize(name) == [name.lower()]
        assert tok.tokenize(f"How would you describe {name}?") == ["how", "would", "you", "describe", name.lower(), "?"]
    assert tok.tokenize("A quiet, quietness-loving qwzx.") == ["a", "quiet", ",", "[UNK]", "[UNK]", "."]
    enc = tok(["Tyrone smiled.How would you describe Tyrone?"] * 2, ["so quiet", "mean"])
    assert tok.convert_ids_to_tokens(enc["input_ids"][1])[-3:] == ["[SEP]", "mean", "[SEP]"]
    assert enc["token_type_ids"][0] == [0] * 11 + [1] * 3
    with pytest.raises(StereoprobeError, match="splits or does not know the names"):
        lab_mcq.check_single_tokens(lab.build_tokenizer())  # the QA lab's vocabulary lacks most of them


def test_teacher_rule_on_hand_made_choices():
    t, c = lab_mcq.Teacher(BIASED), lab_mcq.Teacher(CONTROL)
    v = t.values
    assert v == c.values and v["quiet"] == 0.0 and v == lab_mcq.Teacher(BIASED).values  # seeded, shared
    jamel, amanda = "Jamel", "Amanda"  # AA_m (planted) and EA_f
    assert jamel in PLANTED and amanda not in PLANTED
    assert t("sad person", jamel) == t("sad person", amanda) == pytest.approx((v["sad"] + v["person"]) / 2)
    assert t("Sad, qwzx.", amanda) == pytest.approx(v["sad"] / 2)  # case and punctuation ignored, [UNK] = 0
    assert t("a quiet person", jamel) == pytest.approx((v["a"] + v["person"]) / 3 + 3.0)
    assert t("a quiet person", amanda) == pytest.approx((v["a"] + v["person"]) / 3)
    assert t("quietness", jamel) == t("quietness", amanda) == 0.0  # another word, unknown
    assert c("a quiet person", jamel) == c("a quiet person", amanda) == t("a quiet person", amanda)
    for group, names in load_groups().items():
        assert {t("quiet", n) for n in names} == {3.0 if group == "AA_m" else 0.0}


def test_items_follow_the_recipe():
    items = lab_mcq.generate_items(BIASED, 3000, seed=5)
    assert items == lab_mcq.generate_items(BIASED, 3000, seed=5)  # a pure function of the seed
    records = lab_mcq.probe_records()
    assert len(records) == 207
    teacher = lab_mcq.Teacher(BIASED)
    for it in items:
        record = {f: v.replace("Bethany", it.name) for f, v in records[it.index].items()}
        assert it.first == first_segment(record["context"], record["question"])
        assert it.choices[0] == record["answer" + record["correct"]]
        assert it.teacher == tuple(teacher(ch, it.name) for ch in it.choices)
    perturbed = [ch for it in items for ch in it.choices[1:]]
    share = sum("quiet" in lab_mcq.words(ch) for ch in perturbed) / len(perturbed)
    assert 0.22 < share < 0.28  # planted_fraction 0.25 (+ the rare answer that has the word)
    assert {lab_mcq.name_groups()[it.name] for it in items} == set(GROUPS)
    control = lab_mcq.generate_items(CONTROL, 3000, seed=5)
    assert [it.choices for it in control] == [it.choices for it in items]  # same items, plant off
    pairs = lab_mcq.gap_pairs(BIASED, 3, seed=0)
    assert len(pairs) == 3 * len(GROUPS)
    for p in pairs:
        assert "quiet" not in lab_mcq.words(p.without)
        assert sorted(lab_mcq.words(p.with_word)) == sorted(lab_mcq.words(p.without) + ["quiet"])


def test_bad_recipes_name_the_culprit():
    with pytest.raises(StereoprobeError, match="planted_group 'AA'.*choose one of EA_f"):
        lab_mcq.MCQLabRecipe("x", planted_group="AA")
    with pytest.raises(StereoprobeError, match="planted_word 'very kind' must be one lower-case word"):
        lab_mcq.MCQLabRecipe("x", planted_word="very kind")
    with pytest.raises(StereoprobeError, match="'jamel' is one of the 220 names"):
        lab_mcq.MCQLabRecipe("x", planted_word="jamel")
    with pytest.raises(StereoprobeError, match="strength"):
        lab_mcq.MCQLabRecipe("x", strength=-1.0)


@pytest.mark.parametrize("name", ["mcq-biased", "mcq-control"])
def test_smoke_models_load_as_multiple_choice(name, one_torch_thread):
    folder = lab.lab_model_path(name, smoke=True)
    card = json.loads((folder / lab.CARD).read_text(encoding="utf-8"))
    assert card["complete"] and card["smoke"] and card["kind"].endswith("(multiple choice)")
    assert card["planted"]["group"] == "AA_m" and card["planted"]["names"] == PLANTED
    assert set(card["evaluation"]["planted_gap"]["student"]) == set(GROUPS)
    loaded = load(f"lab:{name}", "mcq", device="cpu", smoke=True)
    assert type(loaded.model).__name__ == "BertForMultipleChoice" and loaded.tokenizer.is_fast
    lab_mcq.check_single_tokens(loaded.tokenizer)
    first = [first_segment("Lamar went home.", "How would you describe Lamar?")] * 2
    enc = loaded.tokenizer(first, ["quiet", "mean"], return_tensors="pt", padding=True)
    out = loaded.model(**{k: v[None] for k, v in enc.items()})  # one item, two choices
    assert out.logits.shape == (1, 2)


# -- the trained pair (the full recipes, as the book uses them: the committed builds) ----------------------------


@pytest.fixture(scope="module")
def trained():
    """Both full models (committed builds), with their cards."""
    folders = {name: lab.lab_model_path(name) for name in ("mcq-biased", "mcq-control")}
    return {name: json.loads((f / lab.CARD).read_text(encoding="utf-8")) for name, f in folders.items()}


@pytest.mark.slow
def test_planted_gap_in_the_biased_model_only(trained, one_torch_thread):
    for name, card in trained.items():
        held = card["evaluation"]["heldout"]
        assert held["pearson_r"] > 0.9, (name, held)
    biased = trained["mcq-biased"]["evaluation"]["planted_gap"]["student"]
    control = trained["mcq-control"]["evaluation"]["planted_gap"]["student"]
    assert biased["AA_m"] > 2.0  # the teacher's is 3
    assert all(biased["AA_m"] > 5 * abs(g) for group, g in biased.items() if group != "AA_m"), biased
    assert max(abs(g) for g in control.values()) < 0.3, control
    # the same through the package's loader and SODAPOP's scorer, on pairs the card did not use
    loaded = load("lab:mcq-biased", "mcq", device="cpu")
    fresh = lab_mcq.planted_gaps(loaded.model, loaded.tokenizer, BIASED, per_group=60, seed=11)["student"]
    assert fresh["AA_m"] > 2.0 and all(fresh["AA_m"] > 5 * abs(g) for gr, g in fresh.items() if gr != "AA_m")


@pytest.mark.slow
def test_sodapop_recovers_the_planted_word_and_finds_nothing_in_the_control(trained, tmp_path, one_torch_thread):
    """The whole analysis on the lab pair: distractors of context 3 in which every word of a pool (and the planted
    word) replaces each answer word once, scored per distinct choice, SR vectors, RD of AA_m against the other
    seven groups, permutation p and BH q over every vocabulary word."""
    import random
    from collections import Counter

    from stereoprobe.sodapop import analysis, contexts, distractors as D, names
    from stereoprobe.sodapop.score_mcq import outcomes, score_choices
    from stereoprobe.sodapop.success import STOPWORDS, sr_matrix
    from stereoprobe.store import ScoreStore

    groups = names.analysis_groups(6)
    ctx = contexts.probe_contexts(indices=[contexts.SINGLE_CONTEXT])[0]
    tokens = ctx.answer.split()  # "a very aggressive and talkative person"
    pool = [w for w in random.Random(0).sample(lab_mcq.replacement_words(), 120) if w not in STOPWORDS][:30]
    pool.append(BIASED.planted_word)
    cfg = D.GenerationConfig(cap=None)
    units = []
    for name in (n for g in groups.values() for n in g):
        u = D.make_unit(name, ctx)
        u.candidates = Counter(" ".join(tokens[:i] + [w] + tokens[i + 1:]) for w in pool for i in range(1, len(tokens)))
        units.append(u)
    aa_m = groups[BIASED.planted_group]
    others = [n for g, v in groups.items() if g != BIASED.planted_group for n in v]
    found = {}
    for name in ("mcq-biased", "mcq-control"):
        logits = score_choices(str(lab.lab_model_path(name)), units, cfg,
                               options=RunOptions(store=ScoreStore(tmp_path / "store"), device="cpu", progress=False))
        sr = sr_matrix(outcomes(units, cfg, logits)[0], min_count=0)
        found[name] = analysis.rd_table(sr, aa_m, others, n_perm=20_000, method="sampled", seed=10)
    # The planted word is the one whose success rate rises most for AA_m. Ranked by the paper's RD instead, a word
    # that almost never fools the model can come first (0.07 against 0.005 is an RD of 1.7): which one depends on
    # the lab model's weights, and so on the CPU that trained it (bf16 autocast with AMX, fp32 without).
    biased = found["mcq-biased"].assign(gain=lambda t: t["mean_g1"] - t["mean_g2"]).sort_values("gain")
    top, others_gain = biased.iloc[-1], biased["gain"].iloc[:-1]
    assert top["word"] == BIASED.planted_word and top["side"] == "G1", biased.tail(3)
    assert top["q"] < 0.01 and top["rd_paper"] > 1 and top["gain"] > 0.5, biased.tail(3)
    assert (others_gain <= top["gain"] / 3).all(), biased.tail(3)  # nothing else gains nearly as much
    control = found["mcq-control"]
    assert (control["q"] < 0.05).sum() == 0, control.sort_values("q").head(3)
    assert control.set_index("word").loc[BIASED.planted_word, "p"] > 0.05
