"""vLLM's ``prompt_logprobs`` as the exact rung's second source, through a real HTTP server.

The reference server of tests/served_reference.py serves the planted-bias lab's causal LM with an echo the probe
refuses (refused outright, or shifted by one position as llama-cpp-python's) and, switched on, ``prompt_logprobs``
as vLLM gives them (vllm/entrypoints/openai/completion/protocol.py): the exact rung must then read them and give
the local causal scorer's numbers; where neither source works the rung is refused naming both reasons. How the
decoded tokens are placed on the prompt's characters, and what is refused rather than guessed, is checked on
answers written by hand.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions, unqover
from stereoprobe.errors import StereoprobeWarning
from stereoprobe.served.endpoint import EndpointError
from stereoprobe.served.ladder import continuation_logprob

REFERENCE = sys.modules["stereoprobe_test_served_reference"]  # tests/conftest.py loads it, and has lab_lm
ReferenceServer, serve = REFERENCE.ReferenceServer, REFERENCE.serve

NAME = "openai-api/ref/ref-model"
LAB = "lab:causal-biased"


def opts(tmp_path, **more) -> RunOptions:
    return RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path / "store", **more)


def _numbers(table: pd.DataFrame) -> np.ndarray:
    return table.select_dtypes("number").to_numpy(dtype=float)


# -- through the server --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("echo", ["refuse", "shifted"])
def test_an_unusable_echo_gives_way_to_prompt_logprobs(lab_lm, monkeypatch, echo):
    from stereoprobe.served import capabilities

    server = serve(lab_lm, monkeypatch, echo=echo, prompt_logprobs=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", StereoprobeWarning)  # the exact rung is there: nothing to warn of
            caps = capabilities(NAME)
        assert caps.exact is None and caps.exact_via == "prompt_logprobs"
        assert caps.rungs() == ["exact", "next-token", "generated"]
        assert "as prompt_logprobs" in caps.evidence
        assert ("echoed" in caps.evidence) == (echo == "shifted")  # the shifted echo's evidence is kept beside it
    finally:
        server.__exit__(None, None, None)


def test_unqover_exact_rung_through_prompt_logprobs_gives_the_local_causal_numbers(lab_lm, monkeypatch, tmp_path):
    """A shifted echo beside right prompt_logprobs: the exact rung reads the latter, never the echo."""
    from stereoprobe.served.ladder import PROBE_PROMPTS

    server = serve(lab_lm, monkeypatch, echo="shifted", prompt_logprobs=True)
    try:
        run = opts(tmp_path)
        kw = dict(sample=12, templates=["qa", "letters"], n_boot=50)
        local = unqover.report(LAB, "gender", options=run, **kw)
        served = unqover.report(NAME, "gender", rung="exact", options=run, **kw)
        for table in ("reasoning_errors", "intensity"):
            np.testing.assert_allclose(_numbers(served[table]), _numbers(local[table]), atol=2e-4)
        assert served["served"]["rung"].tolist() == ["exact", "exact"]
        passes = [r[1] for r in server.requests if r[0] == "/v1/completions"
                  and not r[1]["prompt"].startswith(PROBE_PROMPTS)]
        assert passes and all(b.get("prompt_logprobs") == 0 and not b.get("echo") and "logprobs" not in b
                              for b in passes)
    finally:
        server.__exit__(None, None, None)


def test_neither_source_refuses_the_exact_rung_naming_both(lab_lm, monkeypatch, tmp_path):
    from stereoprobe.served import capabilities

    server = serve(lab_lm, monkeypatch, echo="refuse")  # and no prompt_logprobs: the parameter is ignored
    try:
        with pytest.warns(StereoprobeWarning, match="no exact log-probabilities"):
            caps = capabilities(NAME)
        assert caps.exact.startswith("it refuses echo with logprobs")
        assert "it gives no usable prompt_logprobs (none came back)" in caps.exact
        assert caps.rungs() == ["next-token", "generated"]
        with pytest.raises(EndpointError, match="does not give the exact rung: it refuses echo.*, and it gives no "
                                                "usable prompt_logprobs") as e:
            unqover.report(NAME, "gender", sample=4, templates="qa", rung="exact", options=opts(tmp_path))
        assert "\n" not in str(e.value)
    finally:
        server.__exit__(None, None, None)


# -- placing the decoded tokens on the prompt's characters ---------------------------------------------------------
def _answer(*pieces: tuple[str, float]) -> dict:
    """A vLLM completion answer whose prompt_logprobs hold ``pieces`` (decoded token, logprob) after the first."""
    positions = [None] + [{str(i + 7): {"logprob": v, "rank": 1, "decoded_token": t}} for i, (t, v) in
                          enumerate(pieces)]
    return {"choices": [{"index": 0, "text": "x", "logprobs": None, "prompt_logprobs": positions}]}


@pytest.mark.parametrize("pieces", [
    [("The", -1.0), (" capital", -2.0), (" is", -3.0), (" Paris", -4.0)],  # a BOS first
    [(" capital", -2.0), (" is", -3.0), (" Paris", -4.0)],  # no BOS: the first token is "The"
    [(" The", -1.0), (" capital", -2.0), (" is", -3.0), (" Paris", -4.0)],  # a BOS and an added leading space
])
def test_the_continuation_is_read_where_the_decoded_tokens_fall(pieces):
    assert continuation_logprob(_answer(*pieces), "The capital is", "The capital is Paris", "prompt_logprobs") == -4.0
    assert continuation_logprob(_answer(*pieces), "The capital", "The capital is Paris", "prompt_logprobs") == -7.0


@pytest.mark.parametrize("answer, prompt, culprit", [
    (_answer(("caf", -1.0), ("\ufffd", -2.0), ("\ufffd", -3.0)), "caf", "unusable .*their decoded tokens spell"),
    (_answer(("caf", -1.0), ("", -2.0), ("\u00e9", -3.0)), "caf", "a token decoded to nothing"),
    (_answer(("The", -1.0), (" capital", -2.0), (" isParis", -3.0)), "The capital is", "merges the end"),
    ({"choices": [{"index": 0, "text": "x", "prompt_logprobs": None}]}, "The capital is", r"unusable \(none came"),
    ({"choices": [{"index": 0, "text": "x", "prompt_logprobs": [None, {"1": {"logprob": -1.0, "decoded_token": "a"},
                                                                     "2": {"logprob": -2.0, "decoded_token": "b"}}]}]},
     "The capital is", "the prompt's own token"),
])
def test_what_cannot_be_placed_is_refused_in_one_sentence(answer, prompt, culprit):
    full = "café" if prompt == "caf" else "The capital isParis"
    with pytest.raises(EndpointError, match=culprit) as e:
        continuation_logprob(answer, prompt, full, "prompt_logprobs")
    assert "\n" not in str(e.value) and str(e.value).endswith(".")
