"""The chat template on the exact rung (stereoprobe.served.chat_exact), against the reference server serving the chat
lab's control model (a chat template with its own BOS): the server's template through ``/tokenize`` and
``/detokenize`` as vLLM gives it, or the one of ``--tokenizer``; each checked by the server's own chat completion;
refused in one line where neither can be had or they disagree. A real vLLM: tests/test_served_vllm.py."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions, unqover
from stereoprobe.errors import StereoprobeError

serve = sys.modules["stereoprobe_test_served_reference"].serve  # tests/conftest.py loads tests/served_reference.py

NAME = "openai-api/ref/ref-model"
LAB = "lab:chat-control"


@pytest.fixture(scope="module")
def chat_lm():
    from stereoprobe import models

    loaded = models.load(LAB, "causal", device="cpu")
    return loaded.model, loaded.tokenizer


def _run(tmp_path, **more) -> RunOptions:
    return RunOptions(device="cpu", progress=False, store=tmp_path / "store", **more)


def _numbers(table: pd.DataFrame) -> np.ndarray:
    return table.select_dtypes("number").to_numpy(dtype=float)


KW = dict(sample=6, variant="causal", templates=["qa", "letters-unknown"], n_boot=20)


def test_the_server_s_chat_template_gives_the_local_chat_model_s_numbers(chat_lm, monkeypatch, tmp_path):
    server = serve(chat_lm, monkeypatch)
    try:
        local = unqover.report(LAB, "gender", options=_run(tmp_path), **KW)
        served = unqover.report(NAME, "gender", options=_run(tmp_path), **KW)
        assert served["served"]["chat"].tolist() == [True, True]
        for table in ("reasoning_errors", "intensity"):
            np.testing.assert_allclose(_numbers(served[table]), _numbers(local[table]), atol=1e-5)
        paths = [r[0] for r in server.requests]
        assert "/tokenize" in paths and "/detokenize" in paths
        # the rendered texts carry the template's BOS once: sent without the tokenizer's own special tokens
        echoed = [r[1] for r in server.requests if r[0] == "/v1/completions" and r[1].get("echo")
                  and r[1]["prompt"].startswith("<s>")]
        assert echoed and all(b.get("add_special_tokens") is False for b in echoed)
        # the budget counts the rows' model requests only (rendering and the check are not the run's)
        facts = served["served"]
        passes = 6 * 2 * 2
        asked = (facts["requests"] - facts["retries"]).tolist()  # a request retried after a reset counts twice
        assert asked == [2 * passes, 3 * passes], facts
        # chat off: the plain prompts, as for a local model with chat off
        plain = unqover.report(NAME, "gender", chat=False, options=_run(tmp_path / "plain"), **KW)
        assert plain["served"]["chat"].tolist() == [False, False]
        assert not np.allclose(_numbers(plain["intensity"]), _numbers(served["intensity"]))
    finally:
        server.__exit__(None, None, None)


def test_a_server_without_tokenize_reads_plain_unless_a_tokenizer_is_named(chat_lm, monkeypatch, tmp_path):
    from stereoprobe.zoo import lab

    server = serve(chat_lm, monkeypatch, tokenize=False)
    try:
        quiet = unqover.report(NAME, "gender", options=_run(tmp_path / "a"), **KW)
        assert quiet["served"]["chat"].tolist() == [False, False]  # as a base model: plain prompts, no warning
        with pytest.raises(StereoprobeError, match="does not apply a chat template for the exact rung") as err:
            unqover.report(NAME, "gender", chat=True, options=_run(tmp_path / "b"), **KW)
        assert "\n" not in str(err.value) and "--tokenizer" in str(err.value)
        folder = str(lab.lab_model_path("chat-control"))
        named = unqover.report(NAME, "gender", options=_run(tmp_path / "c", tokenizer=folder), **KW)
        local = unqover.report(LAB, "gender", options=_run(tmp_path / "c"), **KW)
        assert named["served"]["chat"].tolist() == [True, True]
        np.testing.assert_allclose(_numbers(named["intensity"]), _numbers(local["intensity"]), atol=1e-5)
    finally:
        server.__exit__(None, None, None)


def test_a_tokenizer_whose_template_differs_is_refused_in_one_line(chat_lm, monkeypatch, tmp_path):
    """Bad input: ``--tokenizer`` naming a tokenizer whose chat template is not the server's (here: another version
    of it, whose generation prompt always closes an empty think block): the check's two readings of the same token
    disagree; exit 2, one line, nothing scored."""
    import os
    import subprocess
    import sys

    from stereoprobe import models
    from stereoprobe.zoo import lab

    other = models.load_tokenizer(str(lab.lab_model_path("chat-control")))
    switch = "{%- if enable_thinking is defined and enable_thinking is false %}"
    assert switch in other.chat_template
    other.chat_template = other.chat_template.replace(switch, "{%- if true %}")
    other.save_pretrained(tmp_path / "other")
    server = serve(chat_lm, monkeypatch)
    try:
        with pytest.raises(StereoprobeError, match="reads otherwise than the server's chat completions") as err:
            unqover.report(NAME, "gender", options=_run(tmp_path / "a", tokenizer=str(tmp_path / "other")), **KW)
        assert "\n" not in str(err.value)
        env = {**os.environ, "REF_BASE_URL": server.base_url, "STEREOPROBE_PROGRESS": "0"}
        proc = subprocess.run([sys.executable, "-m", "stereoprobe.cli", "unqover", "report", "-m", NAME, "--variant",
                               "causal", "--sample", "4", "--template", "qa", "--tokenizer", str(tmp_path / "other"),
                               "--store", str(tmp_path / "b"), "-o", str(tmp_path / "out")],
                              capture_output=True, text=True, env=env)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert proc.returncode == 2 and len(errors) == 1 and "reads otherwise" in errors[0], proc.stderr
        assert not (tmp_path / "out").exists()
    finally:
        server.__exit__(None, None, None)


def test_a_chat_exact_rung_forced_on_a_server_without_prompt_log_probabilities_is_refused(chat_lm, monkeypatch,
                                                                                          tmp_path):
    """Bad input: chat and the exact rung asked of a server whose completions give no prompt log-probabilities (echo
    refused, no prompt_logprobs): one line, before anything is scored."""
    server = serve(chat_lm, monkeypatch, echo="refuse")
    try:
        with pytest.raises(StereoprobeError, match="does not give the exact rung") as err:
            unqover.report(NAME, "gender", chat=True, rung="exact", options=_run(tmp_path), **KW)
        assert "\n" not in str(err.value)
        assert not [r for r in server.requests if r[0] == "/tokenize"]  # refused before any rendering
    finally:
        server.__exit__(None, None, None)
