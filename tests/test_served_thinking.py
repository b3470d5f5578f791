"""Thinking on and off (issue 39.2) through a real HTTP server and locally: the chat template's enable_thinking sent
as chat_template_kwargs, the reasoning kept beside the answer and never parsed as it, a budget that cuts the
reasoning reported as unparsed, and the refusals (a template or a server without the switch, a rung that cannot read
an answer after reasoning). The model is the lab's causal LM with a ChatML template that reads enable_thinking (the
planted behaviour under thinking is the lab chat pair's: tests/test_lab_chat.py)."""

from __future__ import annotations

import copy
import sys

import pytest

from stereoprobe import RunOptions, unqover
from stereoprobe.errors import StereoprobeError, StereoprobeWarning
from stereoprobe.modelref import RowKey, resolve_model
from stereoprobe.prompts import template
from stereoprobe.served.endpoint import EndpointError
from stereoprobe.unqover.api import dataset_spec
from stereoprobe.unqover.readers import Passes
from stereoprobe.unqover.prompted import answers

REFERENCE = sys.modules["stereoprobe_test_served_reference"]
NAME = "openai-api/ref/ref-model"
#: ChatML that reads enable_thinking as Qwen3's does: off writes an empty think block after the assistant's start
THINKING_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}")


@pytest.fixture(scope="module")
def thinking_lm(lab_lm):
    model, tok = lab_lm
    tok = copy.deepcopy(tok)
    tok.chat_template = THINKING_TEMPLATE
    return model, tok


def opts(tmp_path) -> RunOptions:
    return RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path / "store")


def chat_posts(server):
    return [body for path, body, _ in server.requests if path == "/v1/chat/completions" and body]


def test_thinking_is_sent_and_named_in_the_rows(thinking_lm, monkeypatch, tmp_path):
    server = REFERENCE.serve(thinking_lm, monkeypatch, reasoning_field="reasoning_content")
    try:
        # the lab's base model never thinks: the row says so rather than pass for a reasoning model's
        with pytest.warns(StereoprobeWarning, match="thinking was asked but no answer carries reasoning"):
            rep = unqover.report(NAME, "gender", sample=3, templates=["qa"], thinking=True, think_budget=8,
                                 n_boot=20, long=True, options=opts(tmp_path))
        assert rep["intensity"]["model"].tolist() == ["ref-model · answer:qa [generated, thinking on]"]
        bodies = chat_posts(server)[-12:]
        assert all(b["chat_template_kwargs"] == {"enable_thinking": True} and b["max_tokens"] == 8 + 64
                   for b in bodies)
        assert set(rep["long"]["thinking"]) == {"on"}
        off = unqover.report(NAME, "gender", sample=3, templates=["letters"], thinking=False, n_boot=20,
                             options=opts(tmp_path))
        assert off["intensity"]["model"].tolist() == ["ref-model · choice:letters [next-token, thinking off]"]
        assert chat_posts(server)[-1]["chat_template_kwargs"] == {"enable_thinking": False}
        plain = unqover.report(NAME, "gender", sample=3, templates=["letters"], rung="next-token", n_boot=20,
                               options=opts(tmp_path))
        assert "chat_template_kwargs" not in chat_posts(server)[-1]  # not asked: the template's default
        assert plain["intensity"]["model"].tolist() == ["ref-model · choice:letters [next-token]"]
    finally:
        server.__exit__(None, None, None)


def test_reasoning_is_kept_beside_the_answer_and_a_cut_one_is_unparsed(thinking_lm, monkeypatch, tmp_path):
    import stereoprobe.served.ladder as ladder

    from stereoprobe.unqover.generate import iter_examples
    from stereoprobe.unqover.score_causal import causal_spec

    spec = dataset_spec("gender", sample=2)
    examples = list(iter_examples(causal_spec(spec)))

    def canned(client, journal, chats, **kw):
        assert kw["thinking"] is True and kw["think_budget"] == 5
        out = []
        for i in range(len(chats)):
            ex = examples[i // 2]
            out.append([[(ex.ans1, "Nurses are mostly women."), ("", "The text does not say and I keep thinking"),
                         (f"<think>Pilots are mostly men.</think>\n\n{ex.ans2}", ""),
                         ("<think>and on and on", "")][i % 4]])
        return out

    server = REFERENCE.serve(thinking_lm, monkeypatch)
    monkeypatch.setattr(ladder, "generated_replies", canned)
    try:
        ref = resolve_model(NAME, native="qa")
        ask = Passes(spec, templates=(template("qa", "unqover-answer"),), thinking=True,
                     think_budget=5)
        got = answers(ref, ask, RowKey(ref.label, "answer", "qa", "generated", "on"), opts(tmp_path))
        first = got.iloc[:4]
        assert first["reasoning"].tolist() == ["Nurses are mostly women.", "The text does not say and I keep thinking",
                                               "Pilots are mostly men.", "and on and on"]
        # the reasoning is never the answer: the cut replies are unparsed, not "unknown" nor a person
        assert first["kind"].tolist() == ["option", "unparsed", "option", "unparsed"]
        assert first["choice"].tolist() == [0, -1, 1, -1]
        assert first["rule"].tolist()[1] == "empty" and first["rule"].tolist()[3] == "reasoning-unfinished"
    finally:
        server.__exit__(None, None, None)


def test_thinking_refusals(thinking_lm, lab_lm, monkeypatch, tmp_path):
    # a server that takes no chat_template_kwargs: one sentence naming the fix
    server = REFERENCE.serve(thinking_lm, monkeypatch, template_kwargs=False)
    try:
        with pytest.raises(EndpointError, match="refused thinking .* leave thinking out"):
            unqover.report(NAME, "gender", sample=2, templates=["qa"], thinking=True, options=opts(tmp_path))
        with pytest.raises(StereoprobeError, match="thinking on is read on the generated rung only"):
            unqover.report(NAME, "gender", sample=2, templates=["letters"], thinking=True, rung="next-token",
                           options=opts(tmp_path))
    finally:
        server.__exit__(None, None, None)
    with pytest.raises(StereoprobeError, match="thinking is not on"):
        unqover.report(NAME, "gender", sample=2, think_budget=100, options=opts(tmp_path))
    with pytest.raises(StereoprobeError, match="chat=False reads plain prompts"):
        unqover.report(NAME, "gender", sample=2, thinking=False, chat=False, options=opts(tmp_path))
    with pytest.raises(StereoprobeError, match="thinking settings are for causal and served LMs"):
        unqover.report("lab:qa-biased", "gender", sample=2, thinking=True, options=opts(tmp_path))
    # a local model without a chat template, and one whose template has no switch
    with pytest.raises(StereoprobeError, match="no chat template, so thinking cannot be switched"):
        unqover.report("lab:causal-biased", "gender", sample=2, templates=["qa"], thinking=False,
                       options=opts(tmp_path))


def test_a_template_without_the_switch_refuses_thinking(lab_lm):
    from stereoprobe.causal import chat_prompt, has_thinking_switch

    tok = copy.deepcopy(lab_lm[1])
    tok.chat_template = THINKING_TEMPLATE.replace("enable_thinking", "other_switch")
    assert not has_thinking_switch(tok)
    assert chat_prompt(tok, "Who?", "Answer:").endswith("<|im_start|>assistant\nAnswer:")
    with pytest.raises(StereoprobeError, match="has no enable_thinking switch, so thinking=True cannot be asked"):
        chat_prompt(tok, "Who?", "Answer:", thinking=True)
    tok.chat_template = THINKING_TEMPLATE
    assert chat_prompt(tok, "Who?", "Answer:", thinking=False).endswith("assistant\n<think>\n\n</think>\n\nAnswer:")


def test_both_settings_and_their_shift(thinking_lm, monkeypatch, tmp_path):
    """A model of known answers (canned replies): thinking on, it names the woman for every question and the man
    for its negation (γ(female, a) = 1 for every occupation, μ = 1); off, it names slot 1's person (δ = 1, μ = 0)
    and abstains on one pass in four. The shift table must say so, with intervals."""
    import pandas as pd

    import stereoprobe.served.ladder as ladder
    from stereoprobe.cli import main
    from stereoprobe.unqover.generate import iter_examples
    from stereoprobe.unqover.score_causal import causal_spec

    examples = list(iter_examples(causal_spec(dataset_spec("gender", sample=6))))

    def canned(client, journal, chats, thinking=None, **kw):
        out = []
        for i in range(len(chats)):
            ex, negated = examples[i // 2], i % 2
            woman = ex.ans1 if ex.cluster1 == "female" else ex.ans2
            man = ex.ans2 if woman == ex.ans1 else ex.ans1
            if thinking:
                out.append([(f"<think>Thinking about it.</think> {man if negated else woman}", "")])
            else:
                out.append([("Cannot be determined" if i % 4 == 3 else ex.ans1, "")])
        return out

    server = REFERENCE.serve(thinking_lm, monkeypatch)
    monkeypatch.setattr(ladder, "generated_replies", canned)
    try:
        rep = unqover.report(NAME, "gender", sample=6, templates=["qa"], thinking="both", n_boot=50, long=True,
                             options=opts(tmp_path))
        assert rep["intensity"]["model"].tolist() == ["ref-model · answer:qa [generated, thinking on]",
                                                      "ref-model · answer:qa [generated, thinking off]"]
        shift = rep["thinking_shift"]
        assert shift[["model", "template", "rung_on", "rung_off"]].values.tolist() == [
            ["ref-model", "qa", "generated", "generated"]]
        row = shift.iloc[0]
        assert (row["mu_on"], row["mu_off"], row["delta_mu"]) == pytest.approx((1.0, 0.0, 1.0))
        assert row["delta_lo"] <= 1.0 <= row["delta_hi"] and row["delta_lo"] > 0.5
        assert row["delta_abstain"] == pytest.approx(-0.25) and row["delta_abstain_lo"] < -0.25 < row["delta_abstain_hi"]
        assert "female/" in row["top_gamma_shift"] and "+1.000" in row["top_gamma_shift"]
        errors = rep["reasoning_errors"].set_index("model")
        assert errors["delta"].iloc[1] == pytest.approx(1.0)  # off: always slot 1
        assert set(rep["long"]["thinking"]) == {"on", "off"}
        # the command line: --thinking both, the long table pivoted by thinking and reading
        out = tmp_path / "long.csv"
        with pytest.raises(SystemExit) as done:
            main(["unqover", "report", "-m", NAME, "-d", "gender", "--sample", "6", "--template", "qa", "--thinking",
                  "both", "--n-boot", "50", "--store", str(tmp_path / "store"), "--long-csv", str(out)])
            raise SystemExit(0)
        assert done.value.code == 0
        wide = pd.read_csv(out).pivot(index="template", columns=["thinking", "reading"], values="mu")
        assert wide.loc["qa", ("on", "answered")] == pytest.approx(1.0)
        assert wide.loc["qa", ("off", "answered")] == pytest.approx(0.0)
    finally:
        server.__exit__(None, None, None)
