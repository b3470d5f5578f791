"""Shared fixtures: tiny randomly initialised BERT/RoBERTa models built locally (no hub access)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

os.environ.setdefault("STEREOPROBE_PROGRESS", "0")
# pytest-xdist: share the cores among the workers (torch, and the kernels and commands the tests start, read
# OMP_NUM_THREADS when they import it). Two workers with two threads each on two cores wait for each other; with
# one worker more than the cores (make test) each has one thread.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("OMP_NUM_THREADS",
                          str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))

#: The test files that take longest (worker-seconds of one fresh-clone `make test`, 2 AVX2 cores, 2026-12-05), longest
#: first: they are collected first, so that `--dist loadfile` hands them out before the many short files and no
#: worker is left with a long file at the end while the other idles (longest-first scheduling). Order only: every
#: test still runs, each file's tests in their own order.
LONGEST_FIRST = ("test_lab_causal.py", "test_install.py", "test_zoo.py", "test_served_probes.py", "test_engine.py",
                 "test_causal.py", "test_causal_probes.py", "test_survival.py", "test_chat_lab_probes.py", "test_lab.py",
                 "test_gpu_check.py", "test_precision.py", "test_chat_say.py", "test_served_book.py",
                 "test_served_chat_exact.py", "test_nli_lab.py", "test_backends.py", "test_book.py",
                 "test_profiles_hub.py")


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def _helper_module(name: str, filename: str):
    """Load a helper module of the tests (a file beside this one that is no test file) once, as ``name``."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(filename))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# The model families the tests build (encoders; causal LMs, which reuse the encoders' corpus and savers), the
# stand-in hub built from them and the reference OpenAI-compatible server, importable by these names from any test
# module: pytest loads this file first.
_helper_module("stereoprobe_test_families", "families.py")
_helper_module("stereoprobe_test_causal_families", "causal_families.py")
_helper_module("stereoprobe_test_standin_hub", "standin_hub.py")
_helper_module("stereoprobe_test_reference_server", "reference_server.py")  # an OpenAI-compatible test server
_helper_module("stereoprobe_test_served_reference", "served_reference.py")  # its helpers: models, direct values



_WORDS = """mary james john patricia gerald jennifer alice bob got off the flight to visit lives in same city with
person over swing is sitting by side sent a letter who was an accountant can never be nurse hunter
he she from place has people that which man woman boy girl group of men women met african jewish asian
caucasian south american america afghan afghanistan uzbekistan uzbekistani european french france
reputation being barbarian barbarians civilized full savages were taking classes aug yes no text cnn""".split()


def build_tiny(folder: Path, family: str, head: str = "qa", seed: int = 0) -> Path:
    """A tiny random model of ``family`` (bert/roberta) with a QA, MLM or multiple-choice head, saved to ``folder``."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import (BertConfig, BertForMaskedLM, BertForMultipleChoice, BertForQuestionAnswering,
                              BertTokenizerFast, RobertaConfig, RobertaForMaskedLM, RobertaForMultipleChoice,
                              RobertaForQuestionAnswering, RobertaTokenizerFast)

    heads = {"bert": {"qa": BertForQuestionAnswering, "mlm": BertForMaskedLM, "mcq": BertForMultipleChoice},
             "roberta": {"qa": RobertaForQuestionAnswering, "mlm": RobertaForMaskedLM, "mcq": RobertaForMultipleChoice}}

    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    if family == "bert":
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,?!-()[]'") + sorted(set(_WORDS))
        vocab += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"] + list("abcdefghijklmnopqrstuvwxyz")
        (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
        tok = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True)
        config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=256)
        model = heads["bert"][head](config)
    else:
        bpe = ByteLevelBPETokenizer()
        text = " ".join(_WORDS) + " " + " ".join(w.capitalize() for w in _WORDS)
        bpe.train_from_iterator([text] * 5, vocab_size=600, min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        bpe.save_model(str(folder))
        tok = RobertaTokenizerFast(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
        config = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=258, pad_token_id=tok.pad_token_id)
        model = heads["roberta"][head](config)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_bert_qa(tmp_path_factory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("tiny_bert_qa"), "bert")


@pytest.fixture(scope="session")
def tiny_roberta_qa(tmp_path_factory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("tiny_roberta_qa"), "roberta")


@pytest.fixture(scope="session")
def tiny_bert_mlm(tmp_path_factory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("tiny_bert_mlm"), "bert", head="mlm")


@pytest.fixture(scope="session")
def tiny_model():
    """:func:`build_tiny` for tests that need another family/head (``tiny_model(folder, "roberta", "mcq")``)."""
    return build_tiny


def build_tiny_nli(folder, id2label):
    """A tiny random 1-layer BERT sequence classifier with the given labels and MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from stereoprobe.assets import asset_folder

    tok = AutoTokenizer.from_pretrained(asset_folder("minilm"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, num_labels=len(id2label), id2label=id2label,
                        label2id={v: k for k, v in id2label.items()})
    BertForSequenceClassification(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_nli():
    """:func:`build_tiny_nli`: ``tiny_nli(folder, {0: "entailment", 1: "neutral", 2: "contradiction"})``."""
    return build_tiny_nli


@pytest.fixture(autouse=True)
def _fresh_sharing_verdicts():
    """Every test probes prefix sharing afresh (a test may make a model's packed rows disagree on purpose)."""
    causal = sys.modules.get("stereoprobe.causal")
    if causal is not None:
        causal._VERDICTS.clear()
        causal._BARE_VERDICTS.clear()
    yield


@pytest.fixture(scope="session")
def lab_lm():
    """(model, tokenizer) of the planted-bias lab's causal LM (smoke build): what the served tests' reference server
    serves (tests/served_reference.py)."""
    from stereoprobe import models

    loaded = models.load("lab:causal-biased", "causal", device="cpu", smoke=True)
    return loaded.model, loaded.tokenizer


@pytest.fixture
def one_torch_thread():
    """Tiny models: OpenMP threads only add synchronisation (seconds per call on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _logic_lines(path: Path) -> list[str]:
    """Non-blank, non-comment lines of the code cells, the parameters cell and the opt-in to the book's tables
    (``use_book_style()``, plumbing every chapter has: tests/test_chapters.py) and ``show_method(...)`` (it shows the
    package's source, computes nothing) excluded."""
    out, kind = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# %%"):
            kind = "markdown" if "[markdown]" in line else "params" if re.search(r"tags=\[.*parameters", line) else "code"
        elif kind == "code" and line.strip() and not line.strip().startswith(("#", "use_book_style()", "show_method(")):
            out.append(line)
    return out


@pytest.fixture
def logic_lines():
    """``logic_lines(path)``: the logic lines of a chapter notebook, for the tests that keep chapters thin."""
    return _logic_lines


@pytest.fixture
def cli(capsys):
    """``cli(*args)``: run the ``stereoprobe`` command line in this process; (exit code, stdout, stderr)."""
    from stereoprobe.cli import main

    def run(*args):
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
            raise SystemExit(0)
        out = capsys.readouterr()
        return exit_info.value.code, out.out, out.err

    return run


def _reproduces(built, committed) -> bool:
    """A rebuild against the committed build: the same bytes on the machine its card records (same CPU and
    library versions, :func:`stereoprobe.machine.same_machine`); anywhere the same files, the same vocabulary
    and configuration, and the same planted effect within :data:`stereoprobe.machine.REBUILD_ATOL`/``RTOL``."""
    import json

    from stereoprobe import machine, packed
    from stereoprobe.paths import sha256_file

    card, rebuilt = (json.loads((d / "model_card.json").read_text(encoding="utf-8")) for d in (committed, built))
    names = {p.name.removesuffix(packed.SUFFIX) for p in committed.iterdir()}  # the committed weights ship packed
    assert {p.name for p in built.iterdir()} == names
    for f in names - {"model.safetensors", "config.json", "model_card.json"}:
        assert (built / f).read_bytes() == packed.read_bytes(committed / f), f  # text, not floats: equal anywhere
    config = [{k: v for k, v in json.loads((d / "config.json").read_text()).items() if k != "transformers_version"}
              for d in (built, committed)]
    assert config[0] == config[1]
    assert rebuilt["machine"] == machine.fingerprint()
    assert machine.evaluation_differences(card["evaluation"], rebuilt["evaluation"]) == []
    if machine.same_machine(card["machine"]):
        assert sha256_file(built / "model.safetensors") == card["checksums"]["model.safetensors"]
        assert rebuilt["evaluation"] == card["evaluation"]
    return machine.same_machine(card["machine"])


@pytest.fixture
def reproduces():
    """``reproduces(built, committed)``: assert that a rebuilt lab model reproduces its committed build (bit for bit
    where the card's machine is this one, the planted effect within tolerance anywhere); True when bit for bit."""
    return _reproduces
