"""Every causal family through the three probes' command lines, and every refusal in one line with exit 2.

For each of the twelve tiny decoder families of tests/causal_families.py (GPT-2, Pythia, OPT, Llama with
SentencePiece and with Llama 3's BPE, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3, Phi-3, OLMo 2):
``stereoprobe unqover report`` (both scorers), ``stereoprobe nli report`` (zero-shot, label words) and
``stereoprobe sodapop report`` (the causal LM as the multiple-choice model, acc and acc_norm) run, recognise the model
as causal from its config, write their tables with one row per template, and use the chat template exactly where the
family has one. That the scored tokens spell the subjects, options and label words, that a planted logit boost wins
and that the label words map right is asserted on the same families in tests/test_causal_probes.py.
"""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

C = sys.modules["stereoprobe_test_causal_families"]  # loaded by tests/conftest.py
FAMILIES = list(C.FAMILIES)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("causal_cli")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch, tmp_path):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")
    monkeypatch.setenv("STEREOPROBE_ALLOW_PICKLE", "0")


def family(root, name: str):
    folder = root / name
    if not (folder / "config.json").is_file():
        C.build(name, folder)
    return folder


def refused(result, *needles):
    code, out, err = result
    assert code == 2, (code, out, err)
    line = err.strip().splitlines()[-1]  # (a fixture's own loading bar may precede it in the captured stderr)
    assert line.startswith("error: ") and err.count("error: ") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in line, (n, line)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_through_the_three_probes(cli, root, tmp_path, name):
    folder = str(family(root, name))
    store = str(tmp_path / "store")
    chat = "chat" if C.FAMILIES[name].chat else "plain"
    code, out, err = cli("unqover", "report", "-m", folder, "-d", "gender", "--sample", "6", "--template", "qa",
                         "--template", "letters", "--n-boot", "10", "--device", "cpu", "--store", store,
                         "-o", str(tmp_path / "uq"))
    assert code == 0, err
    errors = pd.read_csv(tmp_path / "uq" / "gender_reasoning_errors.csv")
    assert errors["model"].tolist() == [f"{name} · answer:qa", f"{name} · choice:letters"]
    assert (errors["keys"] == 6).all() and (errors["avg_s"].round(6) == 0.5).all()
    spread = pd.read_csv(tmp_path / "uq" / "gender_template_spread.csv")
    assert spread[["scorer", "templates"]].values.tolist() == [["answer", 1], ["choice", 1]]
    runs = [p.name for p in (tmp_path / "store").rglob("*") if p.is_dir() and p.name.startswith("causal-")]
    assert runs and all(f"-{chat}-" in r for r in runs), runs

    code, out, err = cli("nli", "report", "-m", folder, "-p", "gender", "--sample", "8", "--template",
                         "yes-maybe-no", "--n-boot", "10", "--device", "cpu", "--store", store,
                         "-o", str(tmp_path / "nli"))
    assert code == 0, err
    table = pd.read_csv(tmp_path / "nli" / "nli_gender_neutrality.csv")
    assert table["model"].tolist() == [f"{name} · nli:yes-maybe-no"] and table["pairs"].tolist() == [8]
    assert 0 < table["label_mass"].iloc[0] <= 1

    code, out, err = cli("sodapop", "report", "--mcq-model", folder, "--mlm", "lab:mlm-biased", "--names-per-group",
                         "1", "--depth", "1", "--cap", "4", "--n-perm", "10", "--pair", "AA_m:EA_m", "--device", "cpu",
                         "--store", store, "-o", str(tmp_path / "sp"))
    assert code == 0, err
    units = pd.read_csv(tmp_path / "sp" / "sodapop_units.csv")
    assert len(units) == 8 and units[["accuracy", "accuracy_norm"]].notna().all().all()
    assert (tmp_path / "sp" / "sodapop_rd_AA_m_EA_m_norm.csv").is_file()
    assert "through the siqa prompt" in out


# -- refusals: one line naming the culprit and the fix, exit 2, before any model runs where possible -------------------
def test_a_causal_lm_asked_for_qa_spans_and_an_encoder_asked_for_prompts(cli, root):
    folder = str(family(root, "qwen2"))
    refused(cli("unqover", "report", "-m", folder, "--variant", "qa", "--sample", "4"), "is a causal LM",
            "--variant causal")
    refused(cli("unqover", "report", "-m", "lab:qa-biased", "--variant", "causal", "--sample", "4"),
            "is not a causal LM", "leave out --variant causal")
    refused(cli("nli", "report", "-m", "zoo:minilm-nli", "-p", "gender", "--variant", "causal", "--sample", "4"),
            "is not a causal LM")
    refused(cli("sodapop", "report", "--mcq-model", folder, "--variant", "mcq"), "is a causal LM, not a multiple-choice")
    refused(cli("unqover", "report", "-m", "lab:qa-biased", "--template", "qa", "--sample", "4"),
            "are for causal and served LMs", "none of the models is one")


def test_chat_without_a_chat_template(cli, root):
    refused(cli("unqover", "report", "-m", str(family(root, "gpt2")), "--chat", "--sample", "4"),
            "--chat", "no chat template", "--no-chat")
    refused(cli("nli", "report", "-m", str(family(root, "opt")), "-p", "gender", "--chat", "--sample", "4"),
            "no chat template")


def test_bad_templates(cli, root, tmp_path):
    folder = str(family(root, "llama"))
    bad = tmp_path / "bad.yaml"
    bad.write_text('name: mine\ntask: unqover-answer\nuser: "{paragraph}"\nanswer: "Answer:"\n')
    refused(cli("unqover", "report", "-m", folder, "--template", str(bad), "--sample", "4"),
            "lacks the placeholder {question}")
    refused(cli("unqover", "report", "-m", folder, "--template", "letterz", "--sample", "4"), "'letterz'",
            "qa, context-question, one-word")
    long = tmp_path / "long.yaml"
    long.write_text('name: long\ntask: unqover-answer\nuser: "{paragraph} ' + "and so on " * 150
                    + '{question}"\nanswer: "Answer:"\n')
    refused(cli("unqover", "report", "-m", folder, "--template", str(long), "--sample", "4"),
            "context window of 256 tokens", "shorten the prompt")
    refused(cli("sodapop", "report", "--mcq-model", folder, "--template", "qa"), "Unknown mcq template 'qa'",
            "siqa, context-question")


def test_a_word_the_tokenizer_cannot_spell(cli, root, tmp_path):
    """Llama's SentencePiece BPE without its byte fallback (read as the tokenizer.json says, not rebuilt by the Llama
    tokenizer class): a label word outside its vocabulary is its unknown token."""
    import shutil

    folder = tmp_path / "llama-no-bytes"
    shutil.copytree(family(root, "llama"), folder)
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["model"]["byte_fallback"], spec["model"]["unk_token"] = False, "<unk>"
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "PreTrainedTokenizerFast"}))
    refused(cli("nli", "report", "-m", str(folder), "-p", "gender", "--sample", "4", "--words", "Yes,Maybe,❄"),
            "unknown token", "❄")


def test_gguf_files_cut_short_or_of_an_unknown_architecture(cli, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 20)
    refused(cli("unqover", "report", "-m", str(cut), "--sample", "4"), "not a complete GGUF file", "fetch it again")


@pytest.mark.parametrize("how, needles", [
    ("base", ["is not a causal LM"]),
    ("no-tokenizer", ["tokenizer"]),
    ("pickle", ["pickle", "--allow-pickle"]),
    ("remote", ["trust_remote_code"]),
])
def test_the_encoders_refusals(cli, root, tmp_path, how, needles):
    src = family(root, "gpt2")
    dst = tmp_path / how
    if how == "base":
        C.build("gpt2", dst, base_only=True)
    elif how == "no-tokenizer":
        C.copy_without(src, dst, C.TOKENIZER_FILES)
    elif how == "pickle":
        C.pickle_only_copy(src, dst, "gpt2")
    else:
        C.remote_code_copy(src, dst)
    refused(cli("unqover", "report", "-m", str(dst), "--variant", "causal", "--sample", "4"), *needles)
