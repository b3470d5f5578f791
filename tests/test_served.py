"""Served models without a server: the model string, the key's variable, the rung in a row's name, the options.

The ladder, the three probes, the network's failures and the key's absence from every output run against real HTTP
servers in tests/test_served_probes.py (the reference server of tests/served_reference.py) and, in
``make test-served``, against llama.cpp's server and ``transformers serve`` (tests/test_served_real.py).
"""

from __future__ import annotations

import pytest

from stereoprobe import RunOptions
from stereoprobe.errors import StereoprobeError, StereoprobeWarning
from stereoprobe.modelref import RowKey, resolve_model, resolve_models
from stereoprobe.served.client import _retry_after, request_key
from stereoprobe.served.endpoint import EndpointError, claims, parse, redact, variable
from stereoprobe.unqover.api import resolve as unqover_resolve


def test_a_served_model_is_named_as_inspect_names_one(monkeypatch):
    monkeypatch.setenv("VLLM_BASE_URL", "http://127.0.0.1:8000/v1/")
    ep = parse("openai-api/vllm/meta-llama/Llama-3.1-8B-Instruct")
    assert (ep.service, ep.model, ep.base_url) == ("vllm", "meta-llama/Llama-3.1-8B-Instruct",
                                                   "http://127.0.0.1:8000/v1")
    assert (ep.url_variable, ep.key_variable) == ("VLLM_BASE_URL", "VLLM_API_KEY")
    assert ep.url("completions") == "http://127.0.0.1:8000/v1/completions"
    assert ep.url("/tokenize") == "http://127.0.0.1:8000/tokenize"  # vLLM's routes at the root
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert parse("openai-api/openai/gpt-4o-mini").base_url == "https://api.openai.com/v1"
    assert variable("my-lab.gpu", "API_KEY") == "MY_LAB_GPU_API_KEY"
    assert claims("openai-api/x/y") and not claims("openai/gpt-oss-20b") and not claims("zoo:minilm-qa")


def test_a_served_model_resolves_once_to_its_kind(monkeypatch):
    monkeypatch.setenv("VLLM_BASE_URL", "http://127.0.0.1:8000/v1")
    ref = resolve_model("openai-api/vllm/m", native="qa")
    assert (ref.kind, ref.location, ref.path) == ("served", "served", "openai-api/vllm/m")
    assert ref.tokenizer() is None and len(ref.fingerprint) == 64
    refs = resolve_models(["openai-api/vllm/m", "openai-api/vllm/n"], native="nli")
    assert [r.kind for r in refs] == ["served", "served"]
    with pytest.raises(StereoprobeError, match="not what --variant qa asks for"):
        resolve_model("openai-api/vllm/m", native="qa", asked="qa")
    # a served model is a causal LM read through prompts: --variant causal holds it beside local causal LMs
    assert resolve_model("openai-api/vllm/m", native="qa", asked="causal").kind == "served"
    assert [r.kind for r in unqover_resolve(["openai-api/vllm/m", "lab:causal-biased"], "causal", smoke=True)] == [
        "served", "causal"]


@pytest.mark.parametrize("name, culprit", [
    ("openai-api/vllm", "does not name a served model"),
    ("openai-api//m", "does not name a served model"),
    ("openai-api/nothere/m", "set NOTHERE_BASE_URL"),
])
def test_bad_model_strings_name_the_fix(monkeypatch, name, culprit):
    monkeypatch.delenv("NOTHERE_BASE_URL", raising=False)
    with pytest.raises(EndpointError, match=culprit) as e:
        parse(name)
    assert "\n" not in str(e.value)


def test_the_url_keeps_no_password_and_plain_http_to_another_machine_is_warned(monkeypatch, recwarn):
    monkeypatch.setenv("LAB_BASE_URL", "http://user:hunter2@10.0.0.7:8000/v1")
    with pytest.warns(StereoprobeWarning, match="clear text"):
        ep = parse("openai-api/lab/m")
    assert ep.base_url == "http://10.0.0.7:8000/v1" and "hunter2" not in ep.fingerprint + repr(ep)
    monkeypatch.setenv("LAB_BASE_URL", "https://10.0.0.7/v1")
    monkeypatch.setenv("LOCAL_BASE_URL", "http://localhost:8080/v1")
    recwarn.clear()
    parse("openai-api/lab/m"), parse("openai-api/local/m")
    assert not [w for w in recwarn if issubclass(w.category, StereoprobeWarning)]
    monkeypatch.setenv("LAB_BASE_URL", "ftp://x")
    with pytest.raises(EndpointError, match="LAB_BASE_URL='ftp://x' is not an http"):
        parse("openai-api/lab/m")


def test_the_key_is_read_from_its_variable_only_and_redacted(monkeypatch):
    monkeypatch.setenv("LAB_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("LAB_API_KEY", "sk-sentinel-123456")
    ep = parse("openai-api/lab/m")
    assert ep.key() == "sk-sentinel-123456"
    assert "sk-sentinel" not in repr(ep) + ep.fingerprint + ep.name
    assert redact("bad key sk-sentinel-123456 sent", ep) == "bad key *** sent"
    assert "sk-sentinel" not in request_key("completions", {"model": "m", "prompt": "x"})


def test_a_row_names_its_rung_and_the_options_are_checked():
    assert RowKey("openai-api/v/m", "nli", "yes-maybe-no", "generated").label == \
        "openai-api/v/m · nli:yes-maybe-no [generated]"
    assert RowKey("lab:causal-biased", "answer", "qa").label == "lab:causal-biased · answer:qa"
    assert RunOptions(concurrency=4, max_requests=10).max_requests == 10
    for bad in (dict(concurrency=0), dict(max_requests=-1), dict(max_requests=True)):
        with pytest.raises(StereoprobeError, match="positive integer"):
            RunOptions(**bad)


def test_retry_after_takes_seconds_or_a_date():
    import email.utils
    import time

    assert _retry_after("2") == 2.0 and _retry_after(None) is None and _retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= _retry_after(later) <= 31
