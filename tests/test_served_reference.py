"""The reference OpenAI-compatible server (tests/reference_server.py; the tests' helpers in
tests/served_reference.py) answers as the protocol says, with the log-probabilities of its model, and misbehaves
exactly as its switches say (only ``urllib`` speaks to it here)."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import torch


def _served_reference():
    """tests/served_reference.py, loaded once as ``stereoprobe_test_served_reference`` (tests/ is no package)."""
    name = "stereoprobe_test_served_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("served_reference.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


S = _served_reference()
CONTEXT, CONTINUATION = "The capital of France is", " Paris"
PROMPT = CONTEXT + CONTINUATION


@pytest.fixture(scope="module")
def lm() -> tuple[Any, Any]:
    """The tiny model and tokenizer, built once for the module."""
    return S.tiny_causal_lm()


def call(url: str, body: dict | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
    """GET ``url`` (POST ``body`` as JSON when given): (status, response headers, raw body), errors included."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def complete(server: Any, **body: Any) -> tuple[int, Any]:
    """POST a completions request (model, prompt and greedy decoding unless given): (status, parsed body)."""
    status, _, raw = call(server.base_url + "/completions",
                          {"model": server.model_name, "prompt": PROMPT, "temperature": 0, **body})
    return status, json.loads(raw)


def direct_logprobs(model: Any, tokenizer: Any, text: str) -> tuple[list[int], torch.Tensor]:
    """The token ids of ``text`` and the log-softmax of the model's logits at every position, straight from it."""
    ids = tokenizer(text)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    return ids, torch.log_softmax(logits.float(), dim=-1)


def test_models_lists_the_model(lm):
    """GET /v1/models names the one model, as JSON."""
    with S.ReferenceServer(*lm, model_name="tiny") as server:
        status, headers, raw = call(server.base_url + "/models")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(raw) == {"object": "list", "data": [
        {"id": "tiny", "object": "model", "created": 0, "owned_by": "reference"}]}
    assert server.requests[0][0] == "/v1/models"


def test_echo_exact_is_the_models_logprob(lm):
    """Echoed log-probabilities of the continuation add up to log P(continuation | context) of the model."""
    model, tokenizer = lm
    with S.ReferenceServer(model, tokenizer) as server:
        status, out = complete(server, max_tokens=0, echo=True, logprobs=3)
    assert status == 200 and out["object"] == "text_completion" and out["system_fingerprint"] == "fp_reference"
    choice = out["choices"][0]
    lp = choice["logprobs"]
    assert choice["text"] == PROMPT and "".join(lp["tokens"]) == PROMPT
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None and lp["tokens"][0] == ""  # the BOS
    assert lp["text_offset"] == sorted(lp["text_offset"]) and lp["text_offset"][-1] < len(PROMPT)
    assert out["usage"] == {"prompt_tokens": len(lp["tokens"]), "completion_tokens": 0,
                            "total_tokens": len(lp["tokens"])}
    served = sum(v for v, o in zip(lp["token_logprobs"], lp["text_offset"]) if o >= len(CONTEXT))
    assert served == pytest.approx(S.continuation_logprob(model, tokenizer, CONTEXT, CONTINUATION), abs=1e-4)
    ids, logp = direct_logprobs(model, tokenizer, PROMPT)
    for i in range(1, len(ids)):
        assert lp["token_logprobs"][i] == pytest.approx(float(logp[i - 1, ids[i]]), abs=1e-4)
        top = lp["top_logprobs"][i]
        assert len(top) == 3 and max(top.values()) == pytest.approx(float(logp[i - 1].max()), abs=1e-4)
    assert server.prompt_tokens == len(ids) and server.completion_tokens == 0


def test_echo_shifted_reports_the_following_distribution(lm):
    """llama-cpp-python's shift: token i's value comes from the distribution after it, top lists included."""
    model, tokenizer = lm
    with S.ReferenceServer(model, tokenizer) as exact_server, \
            S.ReferenceServer(model, tokenizer, echo="shifted") as shifted_server:
        exact = complete(exact_server, max_tokens=0, echo=True, logprobs=2)[1]["choices"][0]["logprobs"]
        shifted = complete(shifted_server, max_tokens=0, echo=True, logprobs=2)[1]["choices"][0]["logprobs"]
    ids, logp = direct_logprobs(model, tokenizer, PROMPT)
    assert shifted["tokens"] == exact["tokens"] and shifted["text_offset"] == exact["text_offset"]
    assert shifted["token_logprobs"][0] is not None
    assert shifted["token_logprobs"][1:] != pytest.approx(exact["token_logprobs"][1:], abs=1e-4)
    for i, token_id in enumerate(ids):
        assert shifted["token_logprobs"][i] == pytest.approx(float(logp[i, token_id]), abs=1e-4)
    for i in range(len(ids) - 1):
        assert shifted["top_logprobs"][i] == pytest.approx(exact["top_logprobs"][i + 1], abs=1e-5)


def test_echo_generated_only_zeros_and_refuse(lm):
    """llama.cpp's generated-only log-probabilities, all-zero prompt values, and a refused echo."""
    with S.ReferenceServer(*lm, echo="generated-only") as server:
        status, out = complete(server, max_tokens=3, echo=True, logprobs=1, ignore_eos=True)
    choice = out["choices"][0]
    assert status == 200 and choice["finish_reason"] == "length" and choice["text"].startswith(PROMPT)
    assert len(choice["logprobs"]["tokens"]) == len(choice["logprobs"]["token_logprobs"]) == 3
    assert choice["logprobs"]["text_offset"][0] == len(PROMPT) and None not in choice["logprobs"]["token_logprobs"]

    with S.ReferenceServer(*lm, echo="zeros") as server:
        lp = complete(server, max_tokens=0, echo=True, logprobs=1)[1]["choices"][0]["logprobs"]
    assert lp["token_logprobs"] == [0.0] * len(lp["tokens"])

    with S.ReferenceServer(*lm, echo="refuse") as server:
        status, out = complete(server, max_tokens=0, echo=True, logprobs=1)
        assert complete(server, max_tokens=1)[0] == 200  # no echo: answered
    assert status == 400 and out["error"]["message"] == "echo is not supported"
    assert out["error"]["type"] == "invalid_request_error"


def test_prompt_logprobs_as_vllm_gives_them(lm):
    """vLLM's prompt_logprobs: null first, then the prompt's own token first with the model's log-probability, its
    rank and decoded text, then the top alternatives; echo refused all the same; off, the parameter is ignored."""
    model, tokenizer = lm
    with S.ReferenceServer(model, tokenizer, echo="refuse", prompt_logprobs=True) as server:
        status, out = complete(server, max_tokens=1, prompt_logprobs=2)
        alone = complete(server, max_tokens=1, prompt_logprobs=0)[1]["choices"][0]["prompt_logprobs"]
        plain = complete(server, max_tokens=1)[1]["choices"][0]
        assert complete(server, max_tokens=0, echo=True, logprobs=1)[0] == 400
        assert complete(server, max_tokens=1, prompt_logprobs=21)[0] == 400
    ids, logp = direct_logprobs(model, tokenizer, PROMPT)
    positions = out["choices"][0]["prompt_logprobs"]
    assert status == 200 and len(positions) == len(ids) and positions[0] is None and alone[0] is None
    for i in range(1, len(ids)):
        dist = logp[i - 1]
        own_id, own = next(iter(positions[i].items()))
        assert int(own_id) == ids[i] and own["decoded_token"] == tokenizer.decode([ids[i]])
        assert own["logprob"] == pytest.approx(float(dist[ids[i]]), abs=1e-4)
        top = torch.topk(dist, 2).indices.tolist()
        assert own["rank"] == (top.index(ids[i]) + 1 if ids[i] in top else int((dist >= dist[ids[i]]).sum()))
        ranked = {int(k): v["rank"] for k, v in positions[i].items() if v["rank"] <= 2}
        assert sorted(ranked, key=ranked.get) == top and len(positions[i]) in (2, 3)
        assert list(alone[i]) == [own_id] and alone[i][own_id] == pytest.approx(own)
    assert "".join(next(iter(p.values()))["decoded_token"] for p in positions[1:]) == PROMPT  # BOS first
    start = len(tokenizer(CONTEXT)["input_ids"])
    served = sum(next(iter(p.values()))["logprob"] for p in positions[start:])
    assert served == pytest.approx(S.continuation_logprob(model, tokenizer, CONTEXT, CONTINUATION), abs=1e-4)
    assert plain["prompt_logprobs"] is None and plain["logprobs"] is None

    with S.ReferenceServer(model, tokenizer) as server:
        choice = complete(server, max_tokens=1, prompt_logprobs=1)[1]["choices"][0]
    assert "prompt_logprobs" not in choice


def test_chat_logprobs(lm):
    """Chat completions: top alternatives sorted and of the size asked; greedy tokens are the top ones."""
    body = {"model": "ref-model", "messages": [{"role": "system", "content": "Answer."},
                                               {"role": "user", "content": "The capital of France is"}],
            "max_tokens": 4, "temperature": 0, "logprobs": True, "top_logprobs": 5}
    with S.ReferenceServer(*lm) as server:
        status, _, raw = call(server.base_url + "/chat/completions", body)
        plain, ids = server.render_chat(body["messages"])
    out = json.loads(raw)
    assert status == 200 and out["object"] == "chat.completion"
    assert plain == "Answer.\n\nThe capital of France is\n" and out["usage"]["prompt_tokens"] == len(ids)
    choice = out["choices"][0]
    content = choice["logprobs"]["content"]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"] == "".join(
        t["token"] for t in content)
    first = content[0]
    values = [t["logprob"] for t in first["top_logprobs"]]
    assert len(values) == 5 and values == sorted(values, reverse=True)
    assert first["logprob"] == values[0] and first["token"] == first["top_logprobs"][0]["token"]
    assert bytes(first["bytes"]).decode("utf-8") == first["token"]

    with S.ReferenceServer(*lm, chat_logprobs=False) as server:
        assert json.loads(call(server.base_url + "/chat/completions", body)[2])["choices"][0]["logprobs"] is None
    with S.ReferenceServer(*lm, logprobs_error=True) as server:
        status, _, raw = call(server.base_url + "/chat/completions", body)
    assert status == 400 and json.loads(raw)["error"]["message"] == "logprobs are not supported"
    with S.ReferenceServer(*lm, max_top_logprobs=3) as server:
        assert call(server.base_url + "/chat/completions", body)[0] == 400


def test_seeded_sampling_repeats(lm):
    """Sampling with a seed gives the same text twice; ``n`` gives that many choices."""
    with S.ReferenceServer(*lm) as server:
        first = complete(server, max_tokens=5, temperature=1.0, seed=7, n=2)[1]
        second = complete(server, max_tokens=5, temperature=1.0, seed=7, n=2)[1]
    assert [c["text"] for c in first["choices"]] == [c["text"] for c in second["choices"]]
    assert [c["index"] for c in first["choices"]] == [0, 1]


def test_api_key(lm):
    """A key-protected server answers 401 without the right key (never echoing the key sent), 200 with it."""
    with S.ReferenceServer(*lm, api_key="sk-right-key") as server:
        missing = call(server.base_url + "/models")
        wrong = call(server.base_url + "/models", headers={"Authorization": "Bearer sk-wrong-key-12345"})
        right = call(server.base_url + "/models", headers={"Authorization": "Bearer sk-right-key"})
    for status, _, raw in (missing, wrong):
        error = json.loads(raw)["error"]
        assert status == 401 and error["code"] == "invalid_api_key"
        assert error["message"] == "Incorrect API key provided"
        assert b"sk-wrong-key" not in raw and b"sk-right-key" not in raw
    assert right[0] == 200 and server.requests[2][2]["authorization"] == "Bearer sk-right-key"


def test_fail_first_with_retry_after(lm):
    """The first two POSTs are rate limited with Retry-After, the third is answered."""
    with S.ReferenceServer(*lm, fail_first=2, fail_status=429, retry_after=1) as server:
        answers = [call(server.base_url + "/completions", {"model": "ref-model", "prompt": "Hi", "max_tokens": 1})
                   for _ in range(3)]
    assert [a[0] for a in answers] == [429, 429, 200]
    assert answers[0][1]["Retry-After"] == "1" and json.loads(answers[0][2])["error"]["code"] == "rate_limit_exceeded"
    assert server.failures_sent == 2 and server.post_count == 3


def test_context_wrong_model_and_malformed(lm):
    """Too long a prompt, an unknown model, and a truncated JSON answer."""
    with S.ReferenceServer(*lm, context=5) as server:
        status, out = complete(server, max_tokens=1)
    assert status == 400 and out["error"]["code"] == "context_length_exceeded"
    assert "maximum context length is 5 tokens" in out["error"]["message"]

    with S.ReferenceServer(*lm) as server:
        status, out = complete(server, model="gpt-9")
    assert status == 404 and out["error"]["code"] == "model_not_found"
    assert out["error"]["message"] == "The model `gpt-9` does not exist."

    with S.ReferenceServer(*lm, malformed=True) as server:
        status, _, raw = call(server.base_url + "/completions", {"model": "ref-model", "prompt": "Hi"})
    assert status == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)


def test_delay_lets_requests_overlap(lm):
    """Slow answers of concurrent requests overlap (the delay is outside the model lock)."""
    start = threading.Barrier(3)  # the three requests leave together, however busy the machine

    def together(server):
        start.wait()
        complete(server, max_tokens=1)

    with S.ReferenceServer(*lm, delay=1.0) as server:
        threads = [threading.Thread(target=together, args=(server,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert server.post_count == 3 and server.max_in_flight >= 2 and server.errors == []


def test_serving_a_model_by_name_sets_and_restores_its_variable(monkeypatch, tmp_path):
    import os

    from stereoprobe import RunOptions, unqover
    from stereoprobe.served import capabilities
    from stereoprobe_test_reference_server import serving

    monkeypatch.delenv("BOOKTEST_BASE_URL", raising=False)
    with serving("lab:causal-biased", service="booktest", smoke=True) as name:
        assert name == "openai-api/booktest/causal-biased" and os.environ["BOOKTEST_BASE_URL"].startswith("http://127.0.0.1:")
        assert capabilities(name).rungs() == ["exact", "next-token", "generated"]
        rep = unqover.report(name, "gender", sample=4, templates=["qa"], n_boot=20,
                             options=RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path))
        assert rep["served"]["rung"].tolist() == ["exact"]
    assert "BOOKTEST_BASE_URL" not in os.environ


def test_a_client_killed_mid_request_is_counted_not_recorded(lm):
    """A request whose body never arrives whole, and an answer nobody stays for (a killed client), leave the
    server serving, with nothing half-recorded for a test to trip on: the race of a killed run under ``-n 2``."""
    import socket
    import time

    body = json.dumps({"model": "ref-model", "prompt": PROMPT, "max_tokens": 1}).encode()
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()

    def wait_for(condition):
        deadline = time.monotonic() + 30
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert condition()

    with S.ReferenceServer(*lm, delay=0.5) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as cut:  # half the body, then gone
            cut.sendall(head + body[: len(body) // 2])
        wait_for(lambda: server.cut_requests == 1)
        with socket.create_connection(("127.0.0.1", server.port)) as gone:  # the whole body, gone before the answer
            gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
            gone.sendall(head + body)
            wait_for(lambda: server.in_flight == 1)
        wait_for(lambda: server.in_flight == 0)
        status, out = complete(server, max_tokens=1)  # still serving
    assert status == 200 and out["choices"][0]["text"]
    assert server.cut_requests == 1 and [r[1] for r in server.requests] == [json.loads(body), {
        "model": "ref-model", "prompt": PROMPT, "temperature": 0, "max_tokens": 1}]
    assert server.answers_lost <= 1 and server.errors == []  # a reset is seen on the write, or not at all (a
    # small answer can fit the socket's buffer before the peer's reset arrives)
