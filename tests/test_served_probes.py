"""The three probes through a real HTTP server: the ladder's rungs, the first-use probe, a network that fails, a
run that is killed or runs out of budget, and a key that appears in no output.

The server is the reference server of tests/served_reference.py (the OpenAI protocol over the standard library's
HTTP server) serving the planted-bias lab's causal LM (lab:causal-biased, smoke build): through it the exact rung
must give the local causal scorer's numbers, and its switches make it answer as the servers the ladder must catch
do (llama-cpp-python's shifted echo, llama.cpp's generated-only log-probabilities, zeros, none).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions, nli, sodapop, unqover
from stereoprobe.errors import StereoprobeError, StereoprobeWarning
from stereoprobe.modelref import resolve_model
from stereoprobe.served import provenances
from stereoprobe.served.endpoint import EndpointError

REFERENCE = sys.modules["stereoprobe_test_served_reference"]  # tests/conftest.py loads it, and has lab_lm
ReferenceServer, serve = REFERENCE.ReferenceServer, REFERENCE.serve

NAME = "openai-api/ref/ref-model"
LAB = "lab:causal-biased"


@pytest.fixture
def server(lab_lm, monkeypatch):
    s = serve(lab_lm, monkeypatch)
    yield s
    s.__exit__(None, None, None)


def opts(tmp_path, **more) -> RunOptions:
    return RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path / "store", **more)


def _numbers(table: pd.DataFrame) -> np.ndarray:
    return table.select_dtypes("number").to_numpy(dtype=float)


# -- the exact rung is the local causal scorer ---------------------------------------------------------------------
def test_unqover_exact_rung_gives_the_local_causal_numbers(server, tmp_path):
    from stereoprobe.served import capabilities

    caps = capabilities(NAME)
    assert caps.rungs() == ["exact", "next-token", "generated"] and caps.models == ("ref-model",)
    run = opts(tmp_path)
    kw = dict(sample=12, templates=["qa", "letters"], n_boot=50)
    local = unqover.report(LAB, "gender", options=run, **kw)
    served = unqover.report(NAME, "gender", rung="exact", options=run, **kw)
    # labelled as model_labels shortens any name: the model's name on its server
    assert served["reasoning_errors"]["model"].tolist() == ["ref-model · answer:qa [exact]",
                                                             "ref-model · choice:letters [exact]"]
    for table in ("reasoning_errors", "intensity"):
        np.testing.assert_allclose(_numbers(served[table]), _numbers(local[table]), atol=2e-4)
    facts = served["served"]
    assert facts["rung"].tolist() == ["exact", "exact"] and facts["served_as"].tolist() == ["ref-model"] * 2
    assert facts["system_fingerprint"].tolist() == ["fp_reference"] * 2
    # asked once: a second report takes every answer from the store
    before = len(server.requests)
    again = unqover.report(NAME, "gender", rung="exact", options=run, **kw)
    assert len(server.requests) == before  # the same run: its probe's verdict and session kept in its state
    pd.testing.assert_frame_equal(again["intensity"], served["intensity"])


def test_nli_and_sodapop_exact_rung_give_the_local_causal_numbers(server, tmp_path):
    run = opts(tmp_path)
    local = nli.report(LAB, "gender", sample=10, templates="yes-maybe-no", n_boot=20, options=run)["gender"]
    served = nli.report(NAME, "gender", sample=10, templates="yes-maybe-no", n_boot=20, options=run)
    np.testing.assert_allclose(_numbers(served["gender"]), _numbers(local), atol=2e-4)
    assert served["served"]["rung"].tolist() == ["exact"] and served["served"]["probe"].tolist() == ["gender"]
    assert served["served"]["model"].tolist() == ["ref-model · nli:yes-maybe-no [exact]"]
    kw = dict(names_per_group=1, depth=1, cap=4, n_perm=10, pairs=["AA_m:EA_m"], options=run)
    local = sodapop.report(LAB, "lab:mlm-biased", **kw)
    served = sodapop.report(NAME, "lab:mlm-biased", **kw)
    np.testing.assert_allclose(served["units"][["accuracy", "accuracy_norm"]].to_numpy(),
                               local["units"][["accuracy", "accuracy_norm"]].to_numpy(), atol=1e-6)
    assert served["served"][["rung", "served_as"]].values.tolist() == [["exact", "ref-model"]]
    # chat asked of a model without a chat template (the lab's causal LM: the server's /tokenize refuses messages)
    with pytest.raises(StereoprobeError, match="does not apply a chat template for the exact rung") as err:
        sodapop.report(NAME, "lab:mlm-biased", chat=True, **kw)
    assert "\n" not in str(err.value)


def test_sodapop_letter_rungs_answer_each_question_with_a_letter(server, tmp_path):
    """Next-token: each question's A/B/C probabilities as the model computes them on the rendered chat prompt;
    generated: the parsed answers, one per question, every question answered, abstaining or unparsed."""
    import torch

    from stereoprobe.modelref import resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.sodapop.probe import GridConfig
    from stereoprobe.sodapop.distractors import generate
    from stereoprobe.sodapop.prompted import answers, letter_frame, question_messages

    run = opts(tmp_path)
    kw = dict(names_per_group=1, depth=1, cap=4, n_perm=10, pairs=["AA_m:EA_m"], options=run)
    rep = sodapop.report(NAME, "lab:mlm-biased", rung="next-token", **kw)
    facts = rep["served"].iloc[0]
    assert facts["model"] == "ref-model · letter [next-token]" and facts["passes"] == rep["units"]["mcqs"].sum()
    assert 0 < facts["label_mass"] <= 1 and 0 <= facts["bounded"] <= 1
    assert "answered" in rep["units"] and rep["units"]["answered"].between(0, 1).all()
    assert "answered" in rep.title

    grid = GridConfig(names_per_group=1, contexts=[3], depth=1, cap=4, dedup=False)
    units, _ = generate("lab:mlm-biased", ["Adam"], grid.probe_contexts(), grid.generation(), options=run)
    ref, siqa = resolve_model(NAME, native="mcq"), template("siqa", "mcq")
    frame = letter_frame(ref, units, grid.generation(), siqa, "next-token", options=run)
    assert len(frame) == 3 * 2 and frame["slot"].tolist() == [0, 1, 2] * 2
    model, tok = server.model, server.tokenizer
    text = "\n\n".join(m["content"] for m in question_messages(units[0], grid.generation(), siqa)[0]) + "\n"
    assert "\nA. " in text and "\nC. " in text and text.rstrip().endswith("A, B or C.")
    with torch.no_grad():
        logp = model(**tok(text, return_tensors="pt")).logits[0, -1].float().log_softmax(-1)
    shown = {}
    for value, i in zip(*[t.tolist() for t in logp.topk(20)]):
        shown.setdefault(tok.decode([i]), value)
    floor = min(np.exp(v) for v in shown.values())
    want = [np.log(sum(np.exp(v) for t, v in shown.items() if t.strip() == label) or floor) for label in "ABC"]
    np.testing.assert_allclose(frame["logit"].to_numpy()[:3], want, atol=1e-4)

    gen = sodapop.report(NAME, "lab:mlm-biased", rung="generated", **kw)
    facts = gen["served"].iloc[0]
    raw = answers(ref, units, grid.generation(), siqa, options=run)
    assert len(raw) == 2 and raw["text"].map(type).eq(str).all() and set(raw["kind"]) <= {"option", "unknown",
                                                                                          "unparsed"}
    shares = letter_frame(ref, units, grid.generation(), siqa, "generated", options=run)["logit"].to_numpy()
    assert set(np.unique(shares)) <= {0.0, 1.0} and shares.sum() == (raw["kind"] == "option").sum()
    answered = (gen["units"]["answered"] * gen["units"]["mcqs"]).sum() / gen["units"]["mcqs"].sum()
    assert abs(answered + facts["unknown"] + facts["unparsed"] - 1) < 1e-9


# -- the first-use probe catches what the peers sum silently ------------------------------------------------------
@pytest.mark.parametrize("echo, why", [
    ("shifted", "disagree with its own generation"),
    ("generated-only", "generated tokens only"),
    ("zeros", "0 for every prompt token"),
    ("refuse", "refuses echo"),
])
def test_a_wrong_echo_is_caught_and_the_exact_rung_refused(lab_lm, monkeypatch, tmp_path, echo, why):
    from stereoprobe.served import capabilities

    server = serve(lab_lm, monkeypatch, echo=echo)
    try:
        with pytest.warns(StereoprobeWarning, match="no exact log-probabilities"):
            caps = capabilities(NAME)
        assert why in caps.exact and caps.rungs() == ["next-token", "generated"]
        with pytest.raises(EndpointError, match=f"does not give the exact rung: .*{why}"):
            unqover.report(NAME, "gender", sample=4, templates="qa", rung="exact", options=opts(tmp_path))
        rep = unqover.report(NAME, "gender", sample=4, templates=["qa", "letters"], n_boot=20, options=opts(tmp_path))
        assert rep["served"]["rung"].tolist() == ["generated", "next-token"]
    finally:
        server.__exit__(None, None, None)


def test_next_token_rung_reads_the_letters_probabilities(server, tmp_path):
    """P(A), P(B) of the first generated token, as the model computes them on the rendered chat prompt."""
    import torch

    from stereoprobe.served.prompting import letters_instruction, messages
    from stereoprobe.unqover.generate import iter_examples
    from stereoprobe.unqover.prompted import frame
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.unqover.api import dataset_spec

    spec = dataset_spec("gender", sample=3)
    letters = template("letters", "unqover-choice")
    ref = resolve_model(NAME, native="qa")
    run, row = opts(tmp_path), RowKey(ref.label, "choice", "letters", "next-token")
    got = frame(ref, Passes(spec, templates=(letters,)), row, run)
    model, tok = server.model, server.tokenizer
    ex = next(iter_examples(spec))
    body = letters.body(paragraph=ex.context, question=ex.question, options=[ex.ans1, ex.ans2])
    text = "\n\n".join(m["content"] for m in messages(body, letters_instruction(letters.labels))) + "\n"
    with torch.no_grad():
        logp = model(**tok(text, return_tensors="pt")).logits[0, -1].float().log_softmax(-1)
    top = logp.topk(20)
    shown = {}  # the top 20 by decoded text, as the server lists them (the higher of two ids with one text)
    for value, i in zip(top.values.tolist(), top.indices.tolist()):
        shown.setdefault(tok.decode([i]), value)
    floor = min(np.exp(v) for v in shown.values())
    p = {label: sum(np.exp(v) for s, v in shown.items() if s.strip() == label) or floor for label in "AB"}
    assert abs(got["s1_pos"].iloc[0] - p["A"] / (p["A"] + p["B"])) < 1e-4
    facts = provenances(run)[row]
    assert facts.rung == "next-token" and 0 < facts.label_mass <= 1 and 0 <= facts.bounded <= 1


def test_generated_rung_keeps_abstentions_and_unparsed_apart(server, tmp_path):
    from stereoprobe.modelref import resolve_model, RowKey
    from stereoprobe.prompts import template
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import answers, frame

    ref = resolve_model(NAME, native="qa")
    ask = Passes(dataset_spec("gender", sample=4), templates=(template("qa", "unqover-answer"),))
    row = RowKey(ref.label, "answer", "qa", "generated")
    raw = answers(ref, ask, row, opts(tmp_path))
    assert len(raw) == 4 * 2 * 2 and set(raw["kind"]) <= {"option", "unknown", "unparsed"}
    assert raw["text"].map(type).eq(str).all()  # the raw text beside its parse
    run = opts(tmp_path)
    got = frame(ref, ask, row, run)
    shares = got[["s1_pos", "s2_pos", "s1_neg", "s2_neg"]].to_numpy()
    assert set(np.unique(shares)) <= {0.0, 1.0}
    facts = provenances(run)[row]
    picked = (raw["kind"] == "option").mean()
    assert abs(facts.unknown + facts.unparsed + picked - 1) < 1e-9 and facts.chat is None


# -- the network ---------------------------------------------------------------------------------------------------
def test_a_busy_server_is_retried_honouring_retry_after(lab_lm, monkeypatch, tmp_path):
    server = serve(lab_lm, monkeypatch, fail_first=3, fail_status=429, retry_after="0")
    try:
        rep = unqover.report(NAME, "gender", sample=4, templates="qa", n_boot=20, options=opts(tmp_path))
        assert len(rep["intensity"]) == 1 and server.failures_sent == 3
        posts = [r[1] for r in server.requests if r[1] is not None]
        assert posts[0] == posts[1] == posts[2] == posts[3]  # the refused request, sent again until answered
    finally:
        server.__exit__(None, None, None)


@pytest.mark.parametrize("behaviour, culprit", [
    (dict(api_key="right-key"), "set REF_API_KEY to a valid key"),
    (dict(malformed=True), "malformed JSON"),
    (dict(context=20), "longer than the server's context"),
    (dict(fail_first=100, fail_status=503), "kept failing"),
])
def test_bad_endpoints_are_one_sentence_naming_the_fix(lab_lm, monkeypatch, tmp_path, behaviour, culprit):
    monkeypatch.delenv("REF_API_KEY", raising=False)
    server = serve(lab_lm, monkeypatch, **behaviour)
    try:
        from stereoprobe.served import client

        monkeypatch.setattr(client, "TRIES", 2)
        monkeypatch.setattr(client, "MAX_WAIT", 0.01)
        with pytest.raises(EndpointError, match=culprit) as e:
            unqover.report(NAME, "gender", sample=4, templates="qa", rung="generated", options=opts(tmp_path))
        assert "\n" not in str(e.value)
    finally:
        server.__exit__(None, None, None)


def test_unreachable_and_unserved_models_are_refused_before_any_work(lab_lm, monkeypatch, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("REF_BASE_URL", f"http://127.0.0.1:{port}/v1")
    with pytest.raises(EndpointError, match=r"Cannot reach .* \(REF_BASE_URL\); start the server"):
        unqover.report(NAME, "gender", sample=4, templates="qa", options=opts(tmp_path))
    server = serve(lab_lm, monkeypatch)
    try:
        with pytest.raises(EndpointError, match="does not serve .other.; it serves ref-model: name one of these"):
            unqover.report("openai-api/ref/other", "gender", sample=4, templates="qa", options=opts(tmp_path))
    finally:
        server.__exit__(None, None, None)


# -- a run that stops: killed, or at its budget --------------------------------------------------------------------
def _pass_requests(server) -> list[str]:
    """The echoed completion requests the server received for the probe's passes (the first-use probe's aside)."""
    from stereoprobe.served.ladder import PROBE_CHAT, PROBE_PROMPTS

    return [str(sorted(r[1].items())) for r in server.requests if r[0].endswith("/completions")
            and isinstance(r[1], dict) and r[1].get("echo") and not r[1]["prompt"].startswith(PROBE_PROMPTS)
            and PROBE_CHAT not in r[1]["prompt"]]


def _cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "stereoprobe.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kw)


def test_a_budget_stops_cleanly_and_the_same_command_goes_on(server, tmp_path):
    args = ["unqover", "report", "-m", NAME, "--variant", "causal", "--sample", "6", "--template", "qa", "--rung",
            "exact", "--n-boot", "20", "--store", str(tmp_path / "store"), "--max-requests", "10", "--device", "cpu"]
    env = {"REF_BASE_URL": server.base_url, "STEREOPROBE_PROGRESS": "0"}
    first = _cli(*args, env=env)
    assert first.returncode == 2 and "stopped at the budget of 10 requests" in first.stderr, first.stderr
    assert len(_pass_requests(server)) == 10
    second = _cli(*args[:-4], "--device", "cpu", "-o", str(tmp_path / "out"), env=env)
    assert second.returncode == 0, second.stderr
    scored = _pass_requests(server)
    passes = 6 * 2 * 2 * 2  # paper examples × orders × questions × subjects
    assert len(scored) == len(set(scored)) == passes  # every pass asked once over the two runs
    assert (tmp_path / "out" / "gender_served.csv").is_file()


def test_a_killed_run_resumes_without_asking_again(lab_lm, monkeypatch, tmp_path):
    server = serve(lab_lm, monkeypatch, delay=0.02)
    try:
        args = ["unqover", "report", "-m", NAME, "--sample", "10", "--template", "qa", "--rung", "exact",
                "--n-boot", "20", "--store", str(tmp_path / "store"), "--concurrency", "2", "--device", "cpu"]
        env = {"REF_BASE_URL": server.base_url, "STEREOPROBE_PROGRESS": "0"}
        proc = subprocess.Popen([sys.executable, "-m", "stereoprobe.cli", *args], env={**os.environ, **env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while len(_pass_requests(server)) < 30 and time.time() < deadline:
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        while server.in_flight and time.time() < deadline:  # the answers the killed client did not stay for
            time.sleep(0.05)
        before = _pass_requests(server)
        passes = 10 * 2 * 2 * 2
        assert 30 <= len(before) < passes
        done = _cli(*args, env=env)
        assert done.returncode == 0, done.stderr
        after = _pass_requests(server)[len(before):]
        # every pass asked once over both runs, but those in flight at the kill (at most --concurrency 2)
        assert set(before + after) == set(after) | set(before) and len(set(before + after)) == passes
        assert len(before) + len(after) - passes <= 2
    finally:
        server.__exit__(None, None, None)


# -- the key appears nowhere ---------------------------------------------------------------------------------------
def test_the_key_appears_in_no_output(lab_lm, monkeypatch, tmp_path):
    sentinel = "sk-SENTINEL-7f3a9c"
    server = serve(lab_lm, monkeypatch, api_key=sentinel)
    try:
        env = {"REF_BASE_URL": server.base_url, "REF_API_KEY": sentinel, "STEREOPROBE_PROGRESS": "1"}
        store, out = tmp_path / "store", tmp_path / "out"
        runs = [
            _cli("unqover", "report", "-m", NAME, "--sample", "4", "--template", "qa", "--template", "letters",
                 "--n-boot", "20", "--store", str(store), "-o", str(out / "u"), "--device", "cpu", env=env),
            _cli("nli", "report", "-m", NAME, "-p", "gender", "--sample", "6", "--template", "yes-maybe-no",
                 "--n-boot", "20", "--store", str(store), "-o", str(out / "n"), "--device", "cpu", env=env),
            _cli("served", "probe", "-m", NAME, env=env),
            _cli("sodapop", "report", "--mcq-model", NAME, "--mlm", "lab:mlm-biased", "--names-per-group", "1",
                 "--depth", "1", "--cap", "4", "--n-perm", "10", "--pair", "AA_m:EA_m", "--rung", "next-token",
                 "--store", str(store), "-o", str(out / "s"), "--device", "cpu", env=env),
            # a refused key: the message names the variable, never the value
            _cli("unqover", "report", "-m", NAME, "--sample", "4", "--template", "qa", "--store", str(store),
                 "--device", "cpu", env={**env, "REF_API_KEY": sentinel + "-wrong"}),
            # a traceback from Python
            subprocess.run([sys.executable, "-c", "from stereoprobe import unqover, RunOptions; unqover.report("
                            f"{NAME!r}, 'gender', sample=4, templates='qa', options=RunOptions(store={str(store)!r}, "
                            "device='cpu'))"], capture_output=True, text=True,
                           env={**os.environ, **env, "REF_API_KEY": sentinel + "-wrong"}),
        ]
        assert [r.returncode for r in runs[:4]] == [0, 0, 0, 0], [r.stderr[-500:] for r in runs]
        assert (out / "s" / "sodapop_served.csv").is_file()
        assert runs[4].returncode == 2 and "REF_API_KEY" in runs[4].stderr
        assert "Traceback" in runs[5].stderr and "REF_API_KEY" in runs[5].stderr
        texts = [r.stdout + r.stderr for r in runs]
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert any(p.suffix == ".sqlite" for p in files) and any(p.suffix == ".csv" for p in files)
        for blob in [t.encode() for t in texts] + [p.read_bytes() for p in files]:
            assert sentinel.encode() not in blob
        assert all(r[2].get("authorization") == f"Bearer {sentinel}" for r in server.requests[:3])  # it was sent
    finally:
        server.__exit__(None, None, None)


# -- every rung of Bias-NLI, samples, and what a run costs ---------------------------------------------------------
def test_nli_on_the_next_token_and_generated_rungs(server, tmp_path):
    run = opts(tmp_path)
    kw = dict(sample=8, templates="true-false-neither", n_boot=20, options=run)
    nt = nli.report(NAME, "gender", rung="next-token", **kw)
    facts = nt["served"].iloc[0]
    assert facts["rung"] == "next-token" and 0 < facts["label_mass"] <= 1 and 0 <= facts["bounded"] <= 1
    assert nt["gender"]["model"].tolist() == ["ref-model · nli:true-false-neither [next-token]"]
    gen = nli.report(NAME, "gender", rung="generated", **kw)
    facts = gen["served"].iloc[0]
    assert facts["rung"] == "generated" and 0 <= facts["unparsed"] <= 1
    parsed = round(8 * (1 - facts["unparsed"]))  # one greedy answer per pair: the pairs with a label are measured
    assert gen["gender"]["pairs"].tolist() == [parsed] if parsed else gen["gender"].empty


def test_samples_give_shares_and_the_run_counts_its_requests(server, tmp_path):
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import answers, frame

    run = opts(tmp_path)
    ref = resolve_model(NAME, native="qa")
    ask = Passes(dataset_spec("gender", sample=2), templates=(template("qa", "unqover-answer"),), samples=3,
                 temperature=1.0)
    row = RowKey(ref.label, "answer", "qa", "generated")
    got = frame(ref, ask, row, run)
    raw = answers(ref, ask, row, run)
    assert len(raw) == 2 * 2 * 2 * 3 and raw.groupby("pass_id").size().eq(3).all()
    shares = got[["s1_pos", "s2_pos", "s1_neg", "s2_neg"]].to_numpy()
    assert set(np.round(np.unique(shares) * 3, 6)) <= {0.0, 1.0, 2.0, 3.0}
    asked = [r[1] for r in server.requests if r[1] and r[1].get("n") == 3]
    assert len(asked) == 2 * 2 * 2 and all(r["temperature"] == 1.0 for r in asked)
    facts = provenances(run)[row]
    assert facts.requests == 8 and facts.from_store == 0 and facts.completion_tokens > 0
    rerun = opts(tmp_path)
    again = frame(ref, ask, row, rerun)  # a new run: all from the store
    assert provenances(rerun)[row].requests == 0 and provenances(rerun)[row].from_store == 8
    pd.testing.assert_frame_equal(again, got)


def test_the_budget_is_the_runs_across_its_rows(server, tmp_path):
    """Two templates of 16 requests each under a budget of 20: the second row stops at 4, the run is stopped; the
    next run with the same budget finishes from the store plus the 12 left."""
    from stereoprobe.served.client import BudgetExhausted

    kw = dict(sample=2, templates=["qa", "context-question"], rung="exact", n_boot=20)
    with pytest.raises(BudgetExhausted, match="budget of 20 requests"):
        unqover.report(NAME, "gender", options=opts(tmp_path, max_requests=20), **kw)
    rep = unqover.report(NAME, "gender", options=opts(tmp_path, max_requests=20), **kw)
    assert rep["served"]["requests"].tolist() == [0, 12] and rep["served"]["from_store"].tolist() == [16, 4]


def test_the_state_of_a_run_is_held_by_its_options(server, tmp_path):
    """The endpoint's probe, its session (client, journal, budget) and the chat template's check belong to the run
    (its RunOptions' state), not to the process: the same options read again ask nothing new; a new run (a copy
    made with replace) probes the endpoint again; a copy sent to a worker starts empty."""
    import pickle

    from stereoprobe import served

    run = opts(tmp_path)
    first = served.session(resolve_model(NAME, native="causal"), run)
    assert served.session(resolve_model(NAME, native="causal"), run) is first and len(run.state) == 2  # the probe, the session
    kw = dict(sample=2, templates="qa", rung="exact", n_boot=10)
    unqover.report(NAME, "gender", options=run, **kw)
    before = len(server.requests)
    unqover.report(NAME, "gender", options=run, **kw)
    assert len(server.requests) == before
    fresh = run.replace()
    assert len(fresh.state) == 0 and fresh == run
    unqover.report(NAME, "gender", options=fresh, **kw)
    probe = [path for path, _, _ in server.requests[before:]]
    assert probe.count("/v1/models") == 1 and served.session(resolve_model(NAME, native="causal"), fresh) is not first
    assert len(pickle.loads(pickle.dumps(run)).state) == 0
