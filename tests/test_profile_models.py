"""A profile that names a model a chapter cannot use is refused before any chapter runs (stereoprobe.book.heads): a QA
key naming a classifier or a causal LM, an LM key naming a QA model, an NLI key naming a classifier without
entailment/neutral/contradiction labels, a chat key naming a causal LM without a chat template, in one line naming the
profile key and the model, exit status 2, no notebook executed. The same check on a hub id in the Hugging Face cache
is in tests/test_profiles_hub.py."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
import yaml

from stereoprobe.book import load_profile
from stereoprobe.paths import checkout_root

ROOT = checkout_root()

E = sys.modules["stereoprobe_test_families"]
C = sys.modules["stereoprobe_test_causal_families"]


def _chat_book(tmp: Path) -> Path:
    """A book of one chapter that declares the chat chapter's keys (``chat_models``, ``causal_lab_models``) and fails
    if ever executed, and a profile ``tiny`` that sets the device."""
    root = tmp / "book"
    (root / "notebooks").mkdir(parents=True)
    (root / "params").mkdir()
    (root / "params" / "tiny.yaml").write_text("device: cpu\n", encoding="utf-8")
    (root / "book").mkdir()
    (root / "book" / "intro.md").write_text("# Intro\n", encoding="utf-8")
    (root / "_config.yml").write_text("title: chat\n", encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/chat_probe\n",
                                   encoding="utf-8")
    (root / "notebooks" / "chat_probe.py").write_text(
        '# %% [markdown]\n# # Chat\n\n# %% tags=["parameters"]\nchat_models = ["zoo:smollm2-135m-instruct"]\n'
        'causal_lab_models = ["lab:causal-biased"]\nprofile = "cpu"\n\n# %%\nraise SystemExit("executed")\n',
        encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def wrong_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Local model folders a chapter cannot use, and one it can."""
    tmp = tmp_path_factory.mktemp("wrong")
    return {
        "nli": E.build("bert", "nli", tmp / "nli"),  # a good NLI classifier, but no QA model
        "qa": E.build("bert", "qa", tmp / "qa"),
        "generic-labels": E.build("bert", "nli", tmp / "generic", id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}),
        "two-labels": E.build("bert", "nli", tmp / "two", id2label={0: "entailment", 1: "contradiction"}),
        "causal-no-chat": C.build("mistral", tmp / "mistral"),
        "causal-chat": C.build("qwen2", tmp / "qwen2"),
    }


def _refusal(root: Path, tmp: Path, capsys, *args: str) -> str:
    """Run ``stereoprobe book`` in this process: it must stop with exit status 2, one line on stderr, no notebook
    executed; returns that line."""
    from stereoprobe.cli import book_main

    build = tmp / "build"
    started = time.perf_counter()
    assert book_main(["--root", str(root), "--build-dir", str(build), "--execute-only", "-q", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert not list(build.rglob("*.ipynb")), "a chapter was executed"
    assert time.perf_counter() - started < 60  # no kernel was started
    return err


@pytest.mark.parametrize("key, model, profile_key, why", [
    ("models", "nli", "--set models", r"a sequence classifier \(BertForSequenceClassification\); the chapter "
     r"reasoning_errors needs an extractive-QA model"),
    ("lm_models", "qa", "--set lm_models", r"an extractive-QA model \(BertForQuestionAnswering\); .* needs a masked LM"),
    ("biased_inferences.nli_models", "generic-labels", "--set biased_inferences.nli_models",
     r"a classifier whose labels \(0: LABEL_0, 1: LABEL_1, 2: LABEL_2\) do not name entailment, neutral and "
     r"contradiction; the chapter biased_inferences needs an NLI classifier"),
    ("biased_inferences.nli_models", "two-labels", "--set biased_inferences.nli_models", r"a classifier whose labels \(0: "
     r"entailment, 1: contradiction\) do not name"),
    ("discovering_biases.mcq_model", "qa", "--set discovering_biases.mcq_model", r"an extractive-QA model .* needs a "
     r"multiple-choice model"),
    ("discovering_biases.mlm", "causal-chat", "--set discovering_biases.mlm", r"a causal LM \(Qwen2ForCausalLM\)"),
])
def test_a_model_a_chapter_cannot_use_is_refused_before_any_chapter(key, model, profile_key, why, wrong_models,
                                                                    tmp_path, capsys) -> None:
    value = str(wrong_models[model])
    listed = key.split(".")[-1] not in ("mcq_model", "mlm")  # the other keys take lists
    err = _refusal(ROOT, tmp_path, capsys, "--profile", "smoke", "--set", f"{key}=[{value}]" if listed else f"{key}={value}")
    assert re.match(rf"error: {re.escape(profile_key)} names '{re.escape(value)}', which is {why}", err), err
    assert err.endswith("(nothing was executed).")


def test_a_profile_key_is_named_as_written(wrong_models, tmp_path, capsys) -> None:
    """The key as the profile file spells it: top level, or under notebooks; the profile's name."""
    mine = load_profile("smoke")[1]
    mine["notebooks"]["biased_inferences"]["nli_models"] = ["zoo:minilm-nli", str(wrong_models["qa"])]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(mine), encoding="utf-8")
    err = _refusal(ROOT, tmp_path, capsys, "--profile", str(path))
    assert err.startswith(f"error: profile mine: notebooks.biased_inferences.nli_models names '{wrong_models['qa']}', "
                          "which is an extractive-QA model (BertForQuestionAnswering); the chapter biased_inferences "
                          "needs an NLI classifier")
    mine["notebooks"]["biased_inferences"]["nli_models"] = ["zoo:minilm-nli"]
    mine["models"] = [str(wrong_models["causal-no-chat"])]
    path.write_text(yaml.safe_dump(mine), encoding="utf-8")
    err = _refusal(ROOT, tmp_path, capsys, "--profile", str(path))
    assert err.startswith(f"error: profile mine: models names '{wrong_models['causal-no-chat']}', which is a causal LM "
                          "(MistralForCausalLM); the chapter reasoning_errors needs an extractive-QA model")


def test_a_chat_key_without_a_chat_template_is_refused(wrong_models, tmp_path, capsys) -> None:
    """The chat chapter's keys (params/gpu.yaml: chat_models; causal_lab_models), on a chapter that declares them."""
    root = _chat_book(tmp_path)
    no_chat, chat, qa = (str(wrong_models[k]) for k in ("causal-no-chat", "causal-chat", "qa"))
    err = _refusal(root, tmp_path, capsys, "--profile", "tiny", "--set", f"chat_models=[{chat}, {no_chat}]")
    assert err == (f"error: --set chat_models names '{no_chat}', which is a causal LM without a chat template "
                   "(tokenizer_config.json, chat_template.jinja); the chapter chat_probe needs a causal chat LM: "
                   "…ForCausalLM or a GGUF file, with a chat template there: name such a model in that key (nothing "
                   "was executed).")
    err = _refusal(root, tmp_path, capsys, "--profile", "tiny", "--set", f"causal_lab_models=[{qa}]")
    assert "--set causal_lab_models names" in err and "needs a causal LM (…ForCausalLM, or a GGUF file)" in err
    # a causal LM without a template is fine where no chat is needed; then the planted chapter runs (and fails)
    from stereoprobe.book import run_notebooks
    from stereoprobe.book.params import NotebookExecutionError

    with pytest.raises(NotebookExecutionError, match="executed"):
        run_notebooks("tiny", only=["chat_probe"], out_dir=tmp_path / "ran", root=root, progress=False,
                      overrides={"causal_lab_models": [no_chat], "chat_models": [chat]})


def test_what_the_check_leaves_to_the_chapters(wrong_models, tmp_path) -> None:
    """A model that is right passes; so do a model that is not local (the chapter's own loading error says what to
    do), the project's zoo:/lab:/asset: models and any model for the name encoder."""
    from stereoprobe.book.heads import problem

    assert problem(str(wrong_models["qa"]), "qa") is None
    assert problem(str(wrong_models["nli"]), "nli") is None
    assert problem(str(wrong_models["causal-chat"]), "chat") is None
    assert problem(str(wrong_models["causal-no-chat"]), "causal") is None
    assert problem("nobody-has/this-model", "qa") is None
    assert problem(str(tmp_path / "no-such-folder"), "qa") is None
    assert problem("zoo:minilm-nli", "qa") is None and problem("lab:qa-biased", "nli") is None
    assert problem(str(wrong_models["causal-chat"]), "encoder") is None
    # relative folders are read from where the chapters run
    assert problem("nli", "qa", base=wrong_models["nli"].parent).startswith("a sequence classifier")


def test_gguf_files_are_checked_from_their_header(tmp_path) -> None:
    """A GGUF file holds a causal LM: refused for any other key; for a chat key, its header must carry a chat
    template (tokenizer.chat_template)."""
    pytest.importorskip("gguf", reason="the gguf package is not installed")
    from stereoprobe.book.heads import problem

    plain = C.tiny_gguf(tmp_path / "plain.gguf")
    chat = C.tiny_gguf(tmp_path / "chat.gguf", chat_template="{{ messages[0]['content'] }}")
    assert problem(str(plain), "qa") == problem(str(chat), "nli") == "a GGUF file, which holds a causal LM"
    assert problem(str(plain), "chat") == "a GGUF file without a chat template"
    assert problem(str(chat), "chat") is None and problem(str(plain), "causal") is None
