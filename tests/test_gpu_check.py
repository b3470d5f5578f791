"""benchmarks/gpu_check.py, the one command a lent GPU machine runs (make gpu-check), at tiny sizes on the CPU.

The GPU run itself cannot happen here, so the same script runs end to end with ``--tiny --device cpu``: every section
(the causal scorer against lm-evaluation-harness's loop with its fp32 reference, the memory bound, the UnQover QA
target, the gender set timed, distractor generation, Bias-NLI) must finish without an error and record sane numbers,
and ``--device-packages-only`` refuses every import the GPU machines cannot satisfy (platformdirs, nltk, …), as that
machine would. On a CPU there are no GPU memory statistics: those fields are null. Marked slow: the tiny run takes
25 to 30 s on 2 CPU cores (34 s with the file's other test, beside another test run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
SECTIONS = ("machine", "causal", "memory", "qa", "gender_qa", "distractors", "nli")


def _run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "STEREOPROBE_PROGRESS": "0", "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict, Path]:
    out = tmp_path_factory.mktemp("gpu-check")
    done = _run("--tiny", "--device", "cpu", "--device-packages-only", "--out", str(out))
    doc = json.loads((out / "gpu_check.json").read_text()) if (out / "gpu_check.json").is_file() else {}
    return done, doc, out


def test_every_section_runs_without_an_error(tiny_run) -> None:
    done, doc, out = tiny_run
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for name in SECTIONS:
        section = doc["sections"][name]
        assert section["status"] == "ok" and "error" not in section, (name, section)
    log = (out / "gpu_check.log").read_text(encoding="utf-8")
    assert "summary:" in log and "sections not ok: none" in log
    assert doc["wall_seconds"] > 0 and doc["about"]["tiny"] is True


def test_only_the_gpu_machines_packages_are_needed(tiny_run) -> None:
    _, doc, _ = tiny_run
    about = doc["about"]
    assert {"platformdirs", "nltk", "peft", "gguf", "wn", "names", "ray", "papermill", "jupyter_book"} \
        <= set(about["refused_packages"])
    assert "sentence_transformers" not in about["refused_packages"]  # the GPU machines have it
    assert "nltk" in about["imports_refused"]  # SODAPOP asked for Punkt and fell back to its vendored rules
    assert doc["sections"]["distractors"]["sentence_tokenizer"] == "line"


def test_causal_scorer_against_lm_eval_loop(tiny_run) -> None:
    _, doc, _ = tiny_run
    causal = doc["sections"]["causal"]
    assert causal["model"]["vocabulary"] == 32_000 and causal["model"]["attn_implementation"] == "sdpa"
    assert causal["model"]["dtype"] == "bfloat16"
    requests = causal["requests"]
    assert requests["requests"] == requests["unqover_requests"] + 3 * requests["siqa_items"] > 0
    assert requests["sharing_factor"] > 1
    assert causal["sharing"]["share"] is True and causal["sharing"]["why_not_shared"] is None
    for key in ("baseline", "ours", "ours_share_false"):
        run = causal["runs"][key]
        assert run["requests_per_s"] > 0 and run["tflops"] > 0 and run["computed_tokens"] > 0, key
        assert run["peak_gib"] is None  # no GPU memory statistics on a CPU
        assert run["max_abs_dlogp_vs_baseline"] < 0.05, key  # bf16 rounding of a tiny model
    assert causal["runs"]["ours"]["computed_tokens"] < causal["runs"]["baseline"]["computed_tokens"]
    assert causal["runs"]["ours"]["head_positions"] < causal["runs"]["baseline"]["head_positions"]
    packed = causal["packed_vs_separate"]
    assert packed["within"] is True and packed["max_abs_dlogp"] <= packed["tolerance"] == 0.5
    reference = causal["fp32_reference"]
    assert "skipped" not in reference and reference["copy_dtype"] == "float32"
    assert reference["ours_fp32_packed_max_abs_dlogp"] < 1e-3  # packed rows against separate sequences, in fp32
    assert reference["ours_bf16_fp32_head_max_abs_dlogp"] < 0.05
    assert reference["ours_bf16_bf16_head_max_abs_dlogp"] < 0.05
    whole = causal["whole_gender_qa_template"]
    assert whole["derived"] is True and 0 < whole["ours_hours"] < whole["lm_eval_loop_hours"]


def test_memory_of_a_fully_scored_batch(tiny_run) -> None:
    _, doc, _ = tiny_run
    memory = doc["sections"]["memory"]
    assert memory["batches"] == 1 and memory["padded_tokens"] <= memory["batch_tokens"]
    assert memory["scored_share"] > 0.9  # nearly every node predicts a scored token
    assert memory["peak_gib_above_weights"] is None and memory["within_bound"] is None  # measurable on a GPU only
    assert memory["bound_gib"] > 4  # 4 x HEAD_BYTES, the fp32 head and the activations
    assert memory["unchunked_head_gib"] > 0


def test_qa_gender_distractors_nli(tiny_run) -> None:
    _, doc, _ = tiny_run
    sections = doc["sections"]
    for family in ("roberta", "bert"):
        qa = sections["qa"][family]
        assert qa["authors_loop"]["passes_per_s"] > 0
        assert qa["compat_fp32"]["max_abs_diff_vs_authors_loop"] <= 1e-5  # compat reproduces the authors' loop
        assert qa["compat_bf16"]["max_abs_diff_vs_authors_loop"] < 0.01
        assert qa["compat_bf16"]["ratio"] > 0
    gender = sections["gender_qa"]
    assert gender["passes"] > 0 and gender["passes_per_s"] > 0 and gender["host_pipeline_passes_per_s"] > 0
    assert gender["derived"] is True and gender["full_set"] == 5_488_000 and gender["full_set_minutes"] > 0
    distractors = sections["distractors"]
    assert distractors["identical_multisets"] is True and distractors["ratio"] > 0
    assert distractors["ours_masked_inputs"] <= distractors["baseline_calls"]
    nli = sections["nli"]
    assert nli["ratio"] > 0 and nli["max_abs_dp"] < 0.01
    assert nli["pairs"] > 0 and nli["derived"] is True and nli["full_set"] == 1_936_512
    targets = {(s["section"], s["what"]) for s in doc["summary"]}
    assert ("gender_qa", "whole gender QA set (5,488,000 passes), BERT-base bf16") in targets
    assert all(s["passed"] in (True, False, None) for s in doc["summary"])


def test_no_gpu_is_one_clear_line(tmp_path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = _run("--out", str(tmp_path), timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--device cpu" in done.stderr
