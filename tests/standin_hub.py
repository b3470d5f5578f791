"""A stand-in Hugging Face hub: tiny random-weight models under every hub id the book's profiles name.

The ``gpu`` profile (params/gpu.yaml) reads the paper's models from the hub: UnQover's ten QA models and five masked
LMs (Li et al. 2020, Sec. 4 and Table 5), two Bias-NLI classifiers with named labels (Dev et al. 2020, Sec. 5), the
masked LM that writes SODAPOP's distractors and the encoder of its name embeddings (An et al. 2023, Sec. 3), and the
chat models of the chat chapter. No test can download them, so :data:`STANDINS` says what each one is (its
architecture family, its head, its label names in the model's own order, its chat template) and :func:`build_hub`
writes a tiny random model of that kind (tests/families.py, tests/causal_families.py: the family's real tokenizer
kind, a vocabulary that spells the probes' subjects) into a Hugging Face cache folder, in the layout
``huggingface_hub`` writes (``models--org--name/blobs``, ``snapshots/<revision>`` of links to the blobs,
``refs/main``). With ``HF_HUB_CACHE`` pointing there and ``HF_HUB_OFFLINE=1``, ``from_pretrained("org/name")``
and ``snapshot_download("org/name", local_files_only=True)`` find them through the hub library's own code, as on
the machine of a user who downloaded the real ones.

:func:`profile_hub_ids` reads every hub id the profiles in ``params/`` name (top level and per notebook, in the
keys :data:`stereoprobe.book.heads.MODEL_KEYS` lists); :func:`require_standins` fails with the list of those the
table lacks. A profile may also name a model on the reader's own server (``openai-api/<service>/<model>``, the
chapter *What chat models say*): :data:`SERVED_STANDINS` says which tiny model answers for it, and
:func:`serve_standins` serves them with the package's reference server while a run reads them.

From the command line, to try a profile as a new user would::

    python tests/standin_hub.py /tmp/hub          # then HF_HUB_CACHE=/tmp/hub HF_HUB_OFFLINE=1 stereoprobe book ...
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

#: the encoder families (tests/families.py) and decoder families (tests/causal_families.py), loaded once by
#: tests/conftest.py under these names (and by :func:`_families` when this file runs as a script)
ENCODERS, DECODERS = "stereoprobe_test_families", "stereoprobe_test_causal_families"

#: Mistral 7B Instruct v0.3's chat template, shortened to what a prompt needs ([INST] … [/INST], no system role):
#: the decoder family "mistral" has none, its real instruct models do.
MISTRAL_CHAT = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
                "message['content'] | trim + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + "
                "message['content'] | trim + eos_token }}{% else %}{{ message['content'] | trim + '\n\n' }}{% endif %}"
                "{% endfor %}")

#: roberta-large-mnli's labels, in its config's order
MNLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
#: the sentence-transformers cross-encoders' NLI labels, in their order (model card: contradiction, entailment, neutral)
CROSS_ENCODER_LABELS = {0: "contradiction", 1: "entailment", 2: "neutral"}


@dataclass(frozen=True)
class StandIn:
    """What a hub id must be for the chapter that reads it: a ``family`` of tests/families.py (encoders, with
    ``head`` qa, mlm, nli or mcq) or of tests/causal_families.py (``head`` causal), the NLI ``labels`` in the real
    model's order, and for a chat model its ``chat`` template (None: the family's own)."""

    family: str
    head: str
    labels: dict = field(default_factory=dict)
    chat: str | None = None

    @property
    def causal(self) -> bool:
        return self.head == "causal"


def _qa(family: str) -> StandIn:
    return StandIn(family, "qa")


#: Every hub id of params/*.yaml and what it stands in for. The UnQover models are the authors' (Li et al. 2020,
#: Sec. 4: DistilBERT, BERT-base, BERT-large, RoBERTa-base, RoBERTa-large fine-tuned on SQuAD and NewsQA); the masked
#: LMs are their bases (Table 5's LM rows). bert-base-uncased is also SODAPOP's name encoder (An et al. 2023,
#: Sec. 3.3), which reads its masked-LM checkpoint as an encoder; roberta-base also writes SODAPOP's distractors.
STANDINS: dict[str, StandIn] = {
    **{f"tli8hf/unqover-{base}-{data}": _qa(family) for data in ("squad", "newsqa")
       for base, family in (("distilbert-base-uncased", "distilbert"), ("bert-base-uncased", "bert"),
                            ("bert-large-uncased", "bert"), ("roberta-base", "roberta"), ("roberta-large", "roberta"))},
    "distilbert-base-uncased": StandIn("distilbert", "mlm"),
    "bert-base-uncased": StandIn("bert", "mlm"),
    "bert-large-uncased-whole-word-masking": StandIn("bert", "mlm"),
    "roberta-base": StandIn("roberta", "mlm"),
    "roberta-large": StandIn("roberta", "mlm"),
    # Bias-NLI's hub classifiers (Dev et al. 2020, Sec. 5 used RoBERTa fine-tuned on MNLI), with their label orders
    "roberta-large-mnli": StandIn("roberta", "nli", MNLI_LABELS),
    "cross-encoder/nli-deberta-v3-base": StandIn("deberta-v3", "nli", CROSS_ENCODER_LABELS),
    # the chat chapter's models (params/gpu.yaml, chat_models): each with its chat template
    "meta-llama/Llama-3.1-8B-Instruct": StandIn("llama3", "causal"),
    "Qwen/Qwen2.5-7B-Instruct": StandIn("qwen2", "causal"),
    "google/gemma-2-9b-it": StandIn("gemma2", "causal"),
    "mistralai/Mistral-7B-Instruct-v0.3": StandIn("mistral", "causal", chat=MISTRAL_CHAT),
}


#: Every served model of params/*.yaml (``openai-api/<service>/<model>``, found at ``<SERVICE>_BASE_URL``: a reader's
#: own vLLM server) and the stand-in that answers for it: a tiny random model of the family, with its chat template,
#: behind the tests' reference server (tests/reference_server.py's ReferenceServer, which answers every rung of
#: the ladder) under the model's name on that server (:func:`serve_standins`).
SERVED_STANDINS: dict[str, StandIn] = {
    # the chapter "What chat models say" (params/gpu.yaml, chat_say.chat_models)
    "openai-api/vllm/meta-llama/Llama-3.1-8B-Instruct": StandIn("llama3", "causal"),
}


# -- the hub ids of the profiles -----------------------------------------------------------------------------------
def is_hub_id(name: str) -> bool:
    """A model name that the hub resolves: no project prefix (zoo:, lab:, asset:), no path, no GGUF file."""
    from stereoprobe.providers import PROJECT_PREFIXES

    if not isinstance(name, str) or name.partition(":")[0] in PROJECT_PREFIXES or name.lower().endswith(".gguf"):
        return False
    return not name.startswith((".", "/", "~")) and name.count("/") <= 1


def _profile_names(params_dir: Path, keep) -> dict[str, list[str]]:
    """{name: ["profile key", …]} of the values of the model keys (:data:`stereoprobe.book.heads.MODEL_KEYS`) of every
    profile ``params_dir/*.yaml``, at the top level and under ``notebooks``, that ``keep(name)`` accepts."""
    import yaml

    from stereoprobe.book.heads import MODEL_KEYS

    found: dict[str, list[str]] = {}
    for path in sorted(Path(params_dir).glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        layers = [("", data)] + [(f"notebooks.{stem}.", part) for stem, part in (data.get("notebooks") or {}).items()]
        for where, layer in layers:
            for key, value in (layer or {}).items():
                if key in MODEL_KEYS:
                    for name in value if isinstance(value, list) else [value]:
                        if keep(name):
                            found.setdefault(name, []).append(f"{path.stem}: {where}{key}")
    return found


def profile_hub_ids(params_dir: Path) -> dict[str, list[str]]:
    """{hub id: ["profile key", …]} of every profile ``params_dir/*.yaml`` (:func:`_profile_names`)."""
    return _profile_names(params_dir, is_hub_id)


def profile_served_names(params_dir: Path) -> dict[str, list[str]]:
    """{served name: ["profile key", …]} of every profile ``params_dir/*.yaml``: its ``openai-api/…`` values
    (:func:`_profile_names`)."""
    from stereoprobe.served.endpoint import claims

    return _profile_names(params_dir, claims)


def require_served_standins(names) -> None:
    """Fail, listing them with the profile keys that name them, when served names have no stand-in in
    :data:`SERVED_STANDINS`."""
    missing = {n: where for n, where in dict(names).items() if n not in SERVED_STANDINS}
    if missing:
        listed = "; ".join(f"{n} ({', '.join(where)})" for n, where in sorted(missing.items()))
        raise AssertionError(f"{len(missing)} served model(s) of params/*.yaml have no stand-in in "
                             f"tests/standin_hub.py SERVED_STANDINS: {listed}")


@contextmanager
def serve_standins(folder: Path, names=None) -> Iterator[dict[str, str]]:
    """Serve the stand-in of every served name of ``names`` (default: all of :data:`SERVED_STANDINS`) on 127.0.0.1
    while the block runs, each built into ``folder`` and answering under the model's name; yields the environment
    that points the names' services at them (``<SERVICE>_BASE_URL``), for a run in another process."""
    from contextlib import ExitStack

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from stereoprobe.served.endpoint import PREFIX, variable

    ReferenceServer = _loaded("stereoprobe_test_reference_server", "reference_server.py").ReferenceServer

    _, decoders = _families()
    env: dict[str, str] = {}
    with ExitStack() as stack:
        for name in names if names is not None else SERVED_STANDINS:
            service, _, model_name = name[len(PREFIX):].partition("/")
            where = decoders.build(SERVED_STANDINS[name].family, Path(folder) / revision_of(name), seed=seed_of(name))
            model = AutoModelForCausalLM.from_pretrained(where).eval()
            server = stack.enter_context(ReferenceServer(model, AutoTokenizer.from_pretrained(where),
                                                         model_name=model_name))
            env[variable(service, "BASE_URL")] = server.base_url
        yield env


def require_standins(ids) -> None:
    """Fail, listing them with the profile keys that name them, when hub ids have no stand-in in :data:`STANDINS`."""
    missing = {i: where for i, where in dict(ids).items() if i not in STANDINS}
    if missing:
        listed = "; ".join(f"{i} ({', '.join(where)})" for i, where in sorted(missing.items()))
        raise AssertionError(f"{len(missing)} hub id(s) of params/*.yaml have no stand-in in tests/standin_hub.py "
                             f"STANDINS (add each with its family, head, labels and chat template): {listed}")


# -- building -------------------------------------------------------------------------------------------------------
def _loaded(name: str, filename: str):
    """A helper module of the tests (a file beside this one) as tests/conftest.py loads it, as ``name``; outside
    pytest (benchmarks/gpu_book.py, which puts tests/ on ``sys.path``) imported here and kept under that name."""
    if name not in sys.modules:
        import importlib

        sys.modules[name] = importlib.import_module(Path(filename).stem)
    return sys.modules[name]


def _families():
    """(tests/families.py, tests/causal_families.py) as tests/conftest.py loads them."""
    return _loaded(ENCODERS, "families.py"), _loaded(DECODERS, "causal_families.py")


def seed_of(hub_id: str) -> int:
    """A seed of its own per id: two stand-ins of one family never share weights, so never a fingerprint (the score
    store is keyed by it: a shared one would serve one model's scores to the other without loading it)."""
    return int.from_bytes(hashlib.sha256(hub_id.encode()).digest()[:4], "little")


def build_model(hub_id: str, folder: Path) -> Path:
    """The stand-in of ``hub_id`` (:data:`STANDINS`) saved to ``folder`` as ``save_pretrained`` writes it."""
    encoders, decoders = _families()
    standin = STANDINS[hub_id]
    if standin.causal:
        decoders.build(standin.family, folder, seed=seed_of(hub_id))
        if standin.chat is not None:
            tok = decoders.tokenizer_of(standin.family)
            before = tok.chat_template
            tok.chat_template = standin.chat
            try:
                tok.save_pretrained(folder)
            finally:
                tok.chat_template = before
    else:
        encoders.build(standin.family, standin.head, folder, seed=seed_of(hub_id), id2label=standin.labels or None)
    return folder


def repo_folder(cache: Path, hub_id: str) -> Path:
    """``models--org--name``: where huggingface_hub caches the model ``org/name`` (``models--name`` without org)."""
    return Path(cache) / ("models--" + hub_id.replace("/", "--"))


def id_of(path: Path, cache: Path) -> str:
    """The hub id whose cached files hold ``path`` (a file under ``cache/models--org--name/…``)."""
    repo = Path(path).relative_to(cache).parts[0]
    return repo.removeprefix("models--").replace("--", "/")


def revision_of(hub_id: str) -> str:
    """A commit hash (40 hex digits) for the stand-in's snapshot and refs/main."""
    return hashlib.sha1(f"stand-in {hub_id}".encode()).hexdigest()


#: files the hub keeps in git LFS (its default .gitattributes): their blobs are named by SHA-256, the others by git's
#: blob SHA-1
LFS_SUFFIXES = (".safetensors", ".bin", ".model", ".gguf", ".h5", ".msgpack", ".onnx")


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def store(folder: Path, cache: Path, hub_id: str, *, not_downloaded: dict[str, bytes] | None = None) -> Path:
    """Put the files of ``folder`` into the hub cache ``cache`` as ``hub_id``, as ``hf download`` (huggingface_hub's
    ``snapshot_download``) leaves them: each file a blob named by its hash, the snapshot a folder of relative links to
    the blobs, ``refs/main`` naming the snapshot and ``trees/<revision>.json`` listing the repository's files.
    ``not_downloaded``: files of the repository the tree lists but the snapshot lacks (a download with ``--include``
    patterns, say without the pickle weights). Returns the snapshot folder."""
    repo = repo_folder(cache, hub_id)
    revision = revision_of(hub_id)
    snapshot = repo / "snapshots" / revision
    if repo.exists():
        shutil.rmtree(repo)
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    tree = {}
    for f in sorted(Path(folder).iterdir()):
        if not f.is_file():
            continue
        data = f.read_bytes()
        tree[f.name] = _tree_entry(f.name, data)
        blob = repo / "blobs" / (tree[f.name].get("lfs_sha256") or tree[f.name]["blob_id"])
        blob.write_bytes(data)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / f.name)
    for name, data in (not_downloaded or {}).items():
        tree[name] = _tree_entry(name, data)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    (repo / "trees").mkdir()
    (repo / "trees" / f"{revision}.json").write_text(json.dumps({"format_version": 1, "files": dict(sorted(
        tree.items()))}, indent=1))
    return snapshot


def _tree_entry(name: str, data: bytes) -> dict:
    """A file's entry in the cached tree listing (huggingface_hub._tree_cache: size, git blob id, LFS hash)."""
    entry = {"size": len(data), "blob_id": _git_blob_sha1(data)}
    if name.endswith(LFS_SUFFIXES):
        sha = hashlib.sha256(data).hexdigest()
        entry = {"size": len(data), "blob_id": _git_blob_sha1(f"oid sha256:{sha}".encode()), "lfs_sha256": sha,
                 "lfs_size": len(data)}
    return entry


#: What an encoder's repository holds besides the files its stand-in has, which a download with ``--include`` leaves
#: out: the paper's 2019–2020 checkpoints carry pickle and TensorFlow weights too, and a user fetches only
#: ``hf download ID --include "*.json" "*.txt" "*.safetensors"``. Listed in the cached tree, absent from the snapshot.
NOT_DOWNLOADED = {"pytorch_model.bin": b"pickle weights, not downloaded", "tf_model.h5": b"TensorFlow weights"}


def build_hub(cache: Path, ids=None) -> dict[str, Path]:
    """A hub cache at ``cache`` with the stand-in of every id of ``ids`` (default: all of :data:`STANDINS`), the
    encoders downloaded without their :data:`NOT_DOWNLOADED` files, the chat models whole; {hub id: snapshot}."""
    import tempfile

    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    snapshots = {}
    with tempfile.TemporaryDirectory(prefix="standin-") as tmp:
        for hub_id in ids if ids is not None else STANDINS:
            folder = build_model(hub_id, Path(tmp) / revision_of(hub_id))
            partial = None if STANDINS[hub_id].causal else NOT_DOWNLOADED
            snapshots[hub_id] = store(folder, cache, hub_id, not_downloaded=partial)
    return snapshots


def hub_environment(cache: Path, home: Path) -> dict[str, str]:
    """The environment of a run that reads the stand-in hub at ``cache`` offline, with nothing else of the user's
    Hugging Face folder (``home``: token, other caches)."""
    return {"HF_HUB_CACHE": str(cache), "HF_HOME": str(home), "HF_HUB_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1"}


def describe(snapshot: Path) -> dict:
    """What a snapshot's files say it is (for the tests): architectures, id2label, whether it has a chat template."""
    config = json.loads((snapshot / "config.json").read_text())
    tok = json.loads((snapshot / "tokenizer_config.json").read_text())
    return {"architectures": config.get("architectures"), "id2label": config.get("id2label"),
            "chat": bool(tok.get("chat_template")) or (snapshot / "chat_template.jinja").is_file()}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "standin-hub")
    for hub_id, snapshot in build_hub(out).items():
        print(f"{hub_id}: {snapshot}")
    print(f"HF_HUB_CACHE={out.resolve()} HF_HUB_OFFLINE=1")
