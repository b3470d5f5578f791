"""Load any model by hub id, local folder, GGUF file (causal LMs) or project name (``lab:…``), per head type.

Safe by default: safetensors preferred, ``trust_remote_code=False``. Where the hub is unreachable (as on
the machines this book is built on), a hub id that is not already cached stops with a message that says
so and how to pass a local folder instead.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import ModelLoadError, StereoprobeError, StereoprobeWarning
from .gguf_files import check_gguf, gguf_copy_folder, gguf_fingerprint, gguf_header, gguf_location, save_gguf_copy
from .providers import PROJECT_PREFIXES, model_provider, require_model_provider

HEADS = ("qa", "mlm", "nli", "mcq", "base", "causal")
_AUTO = {
    "base": "AutoModel",
    "causal": "AutoModelForCausalLM",
    "qa": "AutoModelForQuestionAnswering",
    "mlm": "AutoModelForMaskedLM",
    "nli": "AutoModelForSequenceClassification",
    "mcq": "AutoModelForMultipleChoice",
}
_DESCRIBE = {"base": "an encoder", "qa": "an extractive-QA model (AutoModelForQuestionAnswering)", "mlm": "a masked LM",
             "nli": "a sequence-classification (NLI) model", "mcq": "a multiple-choice model",
             "causal": "a causal LM (AutoModelForCausalLM)"}


@dataclass
class LoadedModel:
    """A model, its tokenizer, and what identifies them."""

    name: str  # as the user gave it
    path: str  # resolved local folder or hub id
    model: object
    tokenizer: object
    fingerprint: str  # hash of the weight/config/tokenizer files

    @property
    def dtype(self) -> str:
        """The dtype the weights were loaded in (``float32``, ``bfloat16``, ``float16``): what the model runs in."""
        from .readout import model_dtype

        return str(model_dtype(self.model)).replace("torch.", "")


def lab_names() -> list[str]:
    """The ``lab:`` model names (their provider: :mod:`stereoprobe.zoo.providers`)."""
    return require_model_provider("lab", "lab:").names()


def resolve(name: str, *, smoke: bool = False) -> str:
    """Turn a project name (``zoo:minilm-qa``, ``lab:qa-biased``, ``asset:minilm``) into a local folder; other names pass through.

    A prefix means what its provider says (:mod:`stereoprobe.providers`: the zoo registers ``zoo``, ``lab`` and
    ``asset``); a name with another prefix that nothing registers is a hub id or a path.
    """
    if _is_ref(name):  # a ModelRef: resolved when it was made (stereoprobe.modelref)
        return name.path
    prefix, colon, _ = name.partition(":")
    if not colon:
        return name
    if prefix in PROJECT_PREFIXES:
        return require_model_provider(prefix, name).resolve(name, smoke)
    provider = model_provider(prefix)
    return name if provider is None else provider.resolve(name, smoke)


def _is_ref(model) -> bool:
    """Whether ``model`` is a :class:`stereoprobe.modelref.ModelRef` (resolved once, at a probe's boundary)."""
    return hasattr(model, "path") and hasattr(model, "kind") and hasattr(model, "location")


def _files_fingerprint(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        if p.is_file() and (p.suffix in (".json", ".safetensors", ".bin", ".txt", ".model") or p.name == "merges.txt"):
            if p.name == "model_card.json":
                continue
            stat = p.stat()
            h.update(p.name.encode())
            if stat.st_size > 64 << 20:  # big weights: hash size + first/last 8 MiB (fast, still content-based)
                with open(p, "rb") as f:
                    h.update(str(stat.st_size).encode())
                    h.update(f.read(8 << 20))
                    f.seek(-(8 << 20), os.SEEK_END)
                    h.update(f.read())
            else:
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


@lru_cache(maxsize=32)
def _fingerprint_cached(folder: str, stats: tuple) -> str:
    return _files_fingerprint(Path(folder))


def _stats(folder: Path) -> tuple:
    """(name, size, mtime) of every file: the cache key, so a file rewritten in place is re-hashed."""
    return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file()))


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the model hub answers at all (a quick TCP connect; honours ``HF_HUB_OFFLINE``)."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def local_folder(path: str) -> Path | None:
    """The local folder holding ``path``: itself, or its snapshot in the hub cache; None if neither."""
    folder = Path(path)
    if folder.is_dir():
        return folder
    from huggingface_hub import errors, snapshot_download

    try:
        return Path(snapshot_download(path, local_files_only=True))
    except getattr(errors, "IncompleteSnapshotError", ()) as err:
        # the cache's tree listing names files the snapshot lacks: a download of some of them (`hf download ID
        # --include …`, without the pickle, TensorFlow or ONNX weights); the folder holds what was downloaded, and
        # check_folder / loading say if that is not enough
        return Path(err.snapshot_path)
    except Exception:  # noqa: BLE001 - not cached (or not a valid id)
        return None


def fingerprint_path(path: str) -> str | None:
    """Fingerprint of a model's files without loading it (None when the files are not local); a GGUF file's ends
    in its quantisation type (``…-q4_1``), so scores of two quantisations of one model are stored apart."""
    gguf = gguf_location(path, must_exist=False)
    if gguf is not None:
        return gguf_fingerprint(gguf[0] / gguf[1])
    folder = local_folder(path)
    if folder is None:
        return None
    return _fingerprint_cached(str(folder.resolve()), _stats(folder))


#: Files a folder's tokenizer can be built from (any one of them): fast ``tokenizer.json``, WordPiece, byte-level BPE,
#: SentencePiece.
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model", "spm.model",
                   "tokenizer.model")
#: Probe words every English tokenizer encodes (a tokenizer that turns most of them into its unknown token is broken).
_PROBE_WORDS = "the woman met the man in the city . she was a nurse and he was a doctor".split()
ALLOW_PICKLE_ENV = "STEREOPROBE_ALLOW_PICKLE"


def pickle_allowed() -> bool:
    """Whether ``pytorch_model.bin`` (pickle) weights may be loaded: only after an explicit opt-in
    (``--allow-pickle`` on the command line, or ``STEREOPROBE_ALLOW_PICKLE=1``)."""
    return os.environ.get(ALLOW_PICKLE_ENV, "") not in ("", "0")


def check_remote_code(config: dict, name: str) -> None:
    """Refuse, in one sentence, a model whose config (a ``config.json`` read as a dict) needs code from its own
    repository: an ``auto_map`` and a ``model_type`` transformers does not know."""
    if config.get("auto_map"):
        from transformers import CONFIG_MAPPING

        if config.get("model_type") not in CONFIG_MAPPING:
            raise ModelLoadError(
                f"{name!r} needs code from its own repository (trust_remote_code, auto_map of its config.json), which "
                "stereoprobe never runs; use a model whose architecture ships with transformers.")


def check_folder(folder: Path, name: str) -> None:
    """Refuse, in one sentence with the fix, a model folder that cannot give trustworthy scores: no weights,
    pickle-only weights without the opt-in, unreadable safetensors, or no tokenizer files."""
    safetensors = sorted(folder.glob("*.safetensors"))
    bins = sorted(folder.glob("pytorch_model*.bin"))
    if not safetensors and not bins:
        raise ModelLoadError(f"{name!r} holds no model weights (model.safetensors); pass the folder that "
                             "`save_pretrained` wrote.")
    if not safetensors and not pickle_allowed():
        raise ModelLoadError(
            f"{name!r} has only pickle weights ({bins[0].name}), which can run arbitrary code when loaded; convert "
            "them to safetensors (`model.save_pretrained(folder)` in transformers) or, if you trust the file, rerun "
            "with --allow-pickle.")
    from safetensors import SafetensorError, safe_open

    for f in safetensors:
        try:
            with safe_open(str(f), "pt") as st:
                st.keys()
        except (SafetensorError, OSError) as err:
            raise ModelLoadError(f"{f} is not a complete safetensors file ({str(err).splitlines()[0]}); the "
                                 "download or copy was cut short: fetch the model again.") from None
    try:
        config = json.loads((folder / "config.json").read_text()) if (folder / "config.json").is_file() else {}
    except (ValueError, OSError) as err:
        raise ModelLoadError(f"{folder / 'config.json'} cannot be read ({err}); fetch the model again.") from None
    check_remote_code(config, name)
    if not any((folder / t).is_file() for t in TOKENIZER_FILES):
        raise ModelLoadError(
            f"{name!r} has no tokenizer files ({', '.join(TOKENIZER_FILES[:3])} …); save the tokenizer of the "
            "model it was fine-tuned from into the folder (`tokenizer.save_pretrained(folder)`).")


def _check_tokenizer(tokenizer, name: str, folder: Path | None) -> None:
    """A fast tokenizer (character offsets) that knows English words; a byte-level BPE mask token that absorbs
    the space before it, as the hub's ``tokenizer.json`` of RoBERTa has it (transformers 5 drops that when it
    builds the tokenizer from ``vocab.json``/``merges.txt`` alone)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"{name!r} has no fast tokenizer (needed for character offsets); pass a model folder "
                             "with tokenizer.json.")
    unk = tokenizer.unk_token_id
    if unk is not None:
        ids = [tokenizer(w, add_special_tokens=False)["input_ids"] for w in _PROBE_WORDS]
        unknown = [w for w, i in zip(_PROBE_WORDS, ids) if not i or all(t == unk for t in i)]
        if len(unknown) * 2 > len(_PROBE_WORDS):
            raise ModelLoadError(
                f"The tokenizer of {name!r} turns common English words ({', '.join(list(dict.fromkeys(unknown))[:4])}) "
                f"into its unknown token {tokenizer.unk_token!r}; its vocabulary files are missing or wrong, so save "
                "the tokenizer of the model it was fine-tuned from into the folder.")
    mask = tokenizer.mask_token
    if mask and folder is not None and not (folder / "tokenizer.json").is_file():
        from tokenizers import AddedToken

        from .tokenization import describe_tokenizer

        if describe_tokenizer(tokenizer).family == "roberta":
            tokenizer.add_special_tokens({"mask_token": AddedToken(mask, lstrip=True, rstrip=False, normalized=False,
                                                                   special=True)})


def _missing(info: dict, head: str) -> list[str]:
    """Weights transformers had to initialise at random (missing, or of the wrong shape): a head the checkpoint
    lacks. An encoder (``base``) may lack only its pooler, which nothing here reads."""
    keys = sorted(info.get("missing_keys") or ()) + sorted(k[0] if isinstance(k, tuple) else k
                                                             for k in info.get("mismatched_keys") or ())
    return [k for k in keys if not (head == "base" and "pooler" in k)]


def load(name, head: str, *, device: str = "auto", smoke: bool = False, precision: str = "auto") -> LoadedModel:
    """Load ``name`` (hub id, local folder, or ``lab:…``; or a :class:`stereoprobe.modelref.ModelRef`, already
    resolved) with the ``head`` type (qa, mlm, nli, mcq, base, causal).

    ``precision`` decides the dtype of the weights, whatever the checkpoint's: ``fp32``, ``bf16``, ``fp16`` or
    ``auto`` (bf16 on a GPU that has it, else fp16 on a GPU, fp32 on a CPU: :func:`stereoprobe.batching.resolve_precision`).
    A bf16 checkpoint asked for in fp32 is loaded in fp32, so the dtype a run's score store records is the one the
    model ran in.

    A causal LM may also be a GGUF file (``….gguf``, or a folder whose only weights are one): transformers
    dequantizes it (the ``gguf`` package must be installed); its fingerprint names its quantisation type.

    Stops with one clear :class:`ModelLoadError` when the model cannot be had offline, has no trained head of
    this type (any weight transformers would initialise at random, for any architecture), has only pickle
    weights without the opt-in (:func:`pickle_allowed`), needs remote code (never run), or has a missing or
    broken tokenizer.
    """
    import transformers
    from transformers import AutoTokenizer

    from .batching import quiet_transformers, resolve_device, resolve_precision

    if head not in HEADS:
        raise ModelLoadError(f"Unknown head type {head!r}; choose one of {', '.join(HEADS)}.")
    dev = resolve_device(device)
    dtype = resolve_precision(dev, precision)
    if _is_ref(name):  # a ModelRef: resolved once, named as the user named it
        name, path = name.name, name.path
    else:
        path = resolve(name, smoke=smoke)
    gguf = gguf_location(path) if head == "causal" or path.lower().endswith(".gguf") else None
    if gguf is not None:
        check_gguf(gguf[0] / gguf[1], name, head)
        return _load_gguf(name, path, *gguf, dev, dtype)
    local = Path(path).is_dir()
    if not local and (path.startswith((".", "/", "~")) or path.count("/") > 1):
        raise ModelLoadError(f"Model folder {path!r} does not exist; check the path.")
    folder = local_folder(path)
    if folder is None and not hub_reachable():
        raise _unreachable(name)
    if folder is not None:
        check_folder(folder, name)
    allow = pickle_allowed()
    if allow:
        import warnings

        warnings.warn(f"Loading {name!r} with pickle weights allowed (--allow-pickle): only do this for files you "
                      "trust.", StereoprobeWarning, stacklevel=2)
    kwargs = dict(trust_remote_code=False)
    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
            model, info = getattr(transformers, _AUTO[head]).from_pretrained(
                path, output_loading_info=True, use_safetensors=None if allow else True, dtype=dtype, **kwargs)
    except OSError as err:
        if local:
            raise ModelLoadError(f"Could not load model folder {path!r}: {err}".split("\n")[0]) from err
        raise ModelLoadError(
            f"Could not load {name!r}: there is no local folder of that name and the model hub is unreachable "
            "(or the id is wrong, or it has no safetensors weights: then rerun with --allow-pickle if you trust "
            "it); download the model where you have internet (e.g. `hf download ID --local-dir DIR`) "
            "and pass the folder path instead."
        ) from err
    except (ValueError, KeyError) as err:
        first = str(err).splitlines()[0]
        if "trust_remote_code" in first:
            raise ModelLoadError(f"{name!r} needs code from its own repository (trust_remote_code), which stereoprobe "
                                 "never runs; use a model whose architecture ships with transformers.") from None
        raise ModelLoadError(f"{name!r} is not {_DESCRIBE[head]}: {first}") from err
    fresh = _missing(info, head)
    if fresh:
        raise ModelLoadError(
            f"{name!r} is not {_DESCRIBE[head]}: its weights lack {', '.join(fresh[:2])}{' …' if len(fresh) > 2 else ''}"
            ", which would be randomly initialised; pass a checkpoint fine-tuned with this head."
        )
    if head == "mlm" and getattr(model.config, "is_encoder_decoder", False):
        raise ModelLoadError(f"{name!r} is an encoder-decoder ({model.config.model_type}), not a masked LM that "
                             "predicts a word at its mask; pass an encoder masked LM (BERT, RoBERTa, DeBERTa, …).")
    if head == "causal":
        _check_causal(model.config, name)
    _check_tokenizer(tokenizer, name, folder)
    model.eval().to(dev)
    _check_dtype(model, dtype, name)
    fp = fingerprint_path(path) or hashlib.sha256(model.config.to_json_string().encode()).hexdigest()[:16]
    return LoadedModel(name, path, model, tokenizer, fp)


def _check_causal(config, name: str) -> None:
    """Refuse an encoder that transformers would wrap as a decoder (``BertLMHeadModel``…): its weights never learnt
    to predict the next token."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    kind = config.model_type
    if getattr(config, "is_encoder_decoder", False) or (
            kind in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not (config.is_decoder or getattr(config, "causal", False))):
        raise ModelLoadError(f"{name!r} is an {'encoder-decoder' if config.is_encoder_decoder else 'encoder'} "
                             f"({kind}), not a causal LM trained to predict the next token; pass a decoder-only model "
                             "(GPT-2, Llama, Qwen, Gemma, …).")


def _check_dtype(model, dtype, name: str) -> None:
    """The weights are in ``dtype`` (the store's key says so); a checkpoint that loads otherwise (quantised weights,
    a family that keeps most of its weights in fp32) is refused in one sentence."""
    from .readout import model_dtype

    got = model_dtype(model)
    if got != dtype:
        have = str(got).replace("torch.", "")
        short = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(have, "fp32")
        raise ModelLoadError(f"{name!r} loads with {have} weights though {str(dtype).replace('torch.', '')} was asked "
                             f"for; pass the precision it has (--precision {short}), or a checkpoint that is not "
                             "quantised.")


def _load_gguf(name: str, path: str, folder: Path, file: str, dev, dtype) -> LoadedModel:
    """A causal LM and its tokenizer from a GGUF file: from the cache's transformers copy of it
    (:func:`~stereoprobe.gguf_files.gguf_copy_folder`), made from the file on first use; a model too large for a copy
    is dequantized from the file (by transformers, to ``dtype``) at every load."""
    import torch

    from .atomic import atomic_folder, build_lock

    copy = gguf_copy_folder(folder / file)
    if copy is None:
        model, tokenizer = _read_gguf(name, folder, file, dtype)
    else:
        if not copy.is_dir():
            with build_lock(copy):
                if not copy.is_dir():  # another process may have made it meanwhile
                    model, tokenizer = _read_gguf(name, folder, file, torch.float32)
                    _check_dtype(model, torch.float32, name)  # dequantized: plain float32 tensors to write
                    with atomic_folder(copy) as tmp:
                        save_gguf_copy(tmp, model, tokenizer)
                    del model, tokenizer
        model, tokenizer = _read_gguf_copy(name, copy, dtype)
    _check_tokenizer(tokenizer, name, None)
    model.eval().to(dev)
    _check_dtype(model, dtype, name)
    return LoadedModel(name, path, model, tokenizer, fingerprint_path(str(folder / file)))


def _read_gguf(name: str, folder: Path, file: str, dtype):
    """(model, tokenizer) read from the GGUF file itself: transformers parses and dequantizes it."""
    from functools import partial

    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers import AutoModelForCausalLM

    from .batching import progress_enabled, quiet_transformers

    bar = gguf_utils.tqdm  # its dequantizing bar is a plain tqdm: silenced as transformers' own bars are
    try:
        gguf_utils.tqdm = partial(bar, disable=not progress_enabled())
        with quiet_transformers():
            tokenizer = gguf_tokenizer(folder, file)
            model, info = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=file, output_loading_info=True,
                                                               trust_remote_code=False, dtype=dtype)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise ModelLoadError(f"Could not load the GGUF file {name!r} as {_DESCRIBE['causal']}: {first}") from err
    finally:
        gguf_utils.tqdm = bar
    fresh = _missing(info, "causal")
    if fresh:
        raise ModelLoadError(f"{name!r} is not {_DESCRIBE['causal']}: its GGUF file lacks {fresh[0]}, which would be "
                             "randomly initialised; pass a complete GGUF model.")
    return model, tokenizer


def _read_gguf_copy(name: str, copy: Path, dtype):
    """(model, tokenizer) from the cache's transformers copy of a GGUF file (the tokenizer a fresh copy of the one this
    process keeps, as :func:`gguf_tokenizer` gives it: a caller may change its own)."""
    from copy import deepcopy

    from transformers import AutoModelForCausalLM

    from .batching import quiet_transformers

    try:
        with quiet_transformers():
            tokenizer = deepcopy(_copy_tokenizer(str(copy)))
            model, info = AutoModelForCausalLM.from_pretrained(str(copy), output_loading_info=True,
                                                               trust_remote_code=False, dtype=dtype)
    except Exception as err:  # whatever fails (safetensors' own errors too), the copy is damaged
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise ModelLoadError(f"The cached copy of the GGUF file {name!r} in {copy} does not load ({first}); delete "
                             "that folder, and it is made again from the file.") from err
    if _missing(info, "causal"):
        raise ModelLoadError(f"The cached copy of the GGUF file {name!r} in {copy} lacks weights; delete that "
                             "folder, and it is made again from the file.")
    return model, tokenizer


def gguf_tokenizer(folder: Path, file: str):
    """The tokenizer stored in a GGUF file: from the cache's transformers copy of the file when there is one, else read
    once per process and file version (transformers rebuilds it from the file's metadata, several seconds for a 49k
    vocabulary); a fresh copy for every caller."""
    import copy

    target = Path(folder) / file
    copied = gguf_copy_folder(target)
    if copied is not None and copied.is_dir():
        return copy.deepcopy(_copy_tokenizer(str(copied)))
    stat = target.stat()
    return copy.deepcopy(_gguf_tokenizer(str(target), stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=4)
def _copy_tokenizer(folder: str):
    """The tokenizer of a GGUF file's transformers copy (one folder per file version: read once per process)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, trust_remote_code=False)


@lru_cache(maxsize=4)
def _gguf_tokenizer(target: str, _mtime: int, _size: int):
    import struct

    from transformers import AutoTokenizer

    path = Path(target)
    gguf_header(path)  # a file cut short is refused in one sentence here, before transformers parses it
    try:
        return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, trust_remote_code=False)
    except (struct.error, ValueError, EOFError) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0][:160]
        raise ModelLoadError(f"The tokenizer in the GGUF file {target} does not read ({first}); the file is cut "
                             "short or damaged: fetch it again.") from None


def load_tokenizer(name: str, *, smoke: bool = False):
    """The tokenizer of a model (hub id in the local cache, folder, ``zoo:``/``lab:`` name) without its weights
    (``AutoTokenizer`` only). None when there is no local copy or its tokenizer does not load: loading the model
    then says what is wrong (:func:`load`)."""
    if _is_ref(name):  # read once per ModelRef
        return name.tokenizer()
    path = resolve(name, smoke=smoke)
    try:
        gguf = gguf_location(path, must_exist=False)
    except ModelLoadError:  # several GGUF files: loading says which to pass
        return None
    folder = gguf[0] if gguf else local_folder(path)
    if folder is None:
        return None
    from transformers import AutoTokenizer

    from .batching import quiet_transformers

    try:
        with quiet_transformers():
            if gguf:
                return gguf_tokenizer(*gguf)
            return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError):
        return None


#: The files :func:`fetch` downloads from a hub repository: what loading reads (configs, safetensors weights,
#: tokenizer and chat-template files), never a repository's other formats (``original/*.pth``, ONNX, TensorFlow).
FETCH_PATTERNS = ("*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "*.jinja", "tokenizer*")


def _unreachable(name: str) -> ModelLoadError:
    return ModelLoadError(
        f"Could not load {name!r}: there is no local folder of that name and the model hub is unreachable; "
        "download the model where you have internet (e.g. `hf download ID --local-dir DIR`) "
        "and pass the folder path instead.")


def fetch(name: str, *, smoke: bool = False) -> str:
    """The local copy of ``name``'s files (a folder, a GGUF file, a hub snapshot), downloaded from the hub when it is
    not there yet (:data:`FETCH_PATTERNS`, and ``*.bin`` after the pickle opt-in); no weights are loaded. Stops with
    the sentence :func:`load` would say when the files cannot be had."""
    path = resolve(name, smoke=smoke)
    gguf = gguf_location(path, must_exist=False)
    if gguf is not None:
        return str(gguf[0] / gguf[1])
    if Path(path).is_dir():
        return path
    if path.startswith((".", "/", "~")) or path.count("/") > 1:
        raise ModelLoadError(f"Model folder {path!r} does not exist; check the path.")
    folder = local_folder(path)
    if folder is not None:
        return str(folder)
    if not hub_reachable():
        raise _unreachable(name)
    from huggingface_hub import snapshot_download

    patterns = list(FETCH_PATTERNS) + (["pytorch_model*.bin"] if pickle_allowed() else [])
    try:
        return snapshot_download(path, allow_patterns=patterns)
    except Exception as err:  # noqa: BLE001 - a wrong id, a gated or private repository, a broken connection
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise ModelLoadError(f"Could not download {name!r} from the model hub ({first}); check the id, and log in "
                             "(`hf auth login`) for a gated model.") from None


def model_fingerprint(name: str, *, smoke: bool = False) -> str:
    """The fingerprint of ``name``'s files (:func:`fingerprint_path`), fetched first when they are not local
    (:func:`fetch`): what keys a run in the score store, found without loading any weights (a GPU a worker will use
    stays free)."""
    if _is_ref(name):  # read once per ModelRef
        return name.fingerprint
    fp = fingerprint_path(resolve(name, smoke=smoke))
    if fp is None:
        fp = fingerprint_path(fetch(name, smoke=smoke))
    if fp is None:  # pragma: no cover - fetch returned a folder fingerprint_path cannot read
        raise ModelLoadError(f"Could not read the files of {name!r} after fetching them; fetch the model again.")
    return fp


def fingerprint_or_load(name: str, head: str, *, device: str = "auto", smoke: bool = False) -> tuple[str, None]:
    """Deprecated since 0.8.0 (it no longer loads anything): ``(model_fingerprint(name), None)``; use
    :func:`model_fingerprint`."""
    import warnings

    warnings.warn("stereoprobe.models.fingerprint_or_load is deprecated: it loads nothing since 0.8.0; use "
                  "model_fingerprint(name).", DeprecationWarning, stacklevel=2)
    return model_fingerprint(name, smoke=smoke), None


def parameter_count(name: str, smoke: bool = False) -> int:
    """Number of weights of a model (hub id in the local cache, folder, ``zoo:``/``lab:`` name), read from its
    weight files without building the model (safetensors headers, else a memory-mapped ``.bin``).

    Tied weights stored once count once. Raises :class:`ModelLoadError` when no local copy exists.
    """
    folder = local_folder(resolve(name, smoke=smoke))
    if folder is None:
        raise ModelLoadError(f"No local copy of {name!r} to count parameters from; load or download it first.")
    files = sorted(folder.glob("*.safetensors"))
    total = 0
    if files:
        from safetensors import safe_open

        for f in files:
            with safe_open(str(f), "pt") as st:
                for key in st.keys():
                    n = 1
                    for d in st.get_slice(key).get_shape():
                        n *= d
                    total += n
        return total
    bins = sorted(folder.glob("pytorch_model*.bin"))
    if not bins:
        raise ModelLoadError(f"{folder} holds no *.safetensors or pytorch_model*.bin weights to count.")
    import torch

    for f in bins:
        total += sum(t.numel() for t in torch.load(f, map_location="cpu", mmap=True, weights_only=True).values())
    return total


def _vocabulary_head(model):
    """The module that maps hidden states to vocabulary logits, for the common masked-LM classes (else None)."""
    name = type(model).__name__
    if name in ("BertForMaskedLM", "MegatronBertForMaskedLM") and hasattr(model, "cls"):
        return model.cls
    if name in ("RobertaForMaskedLM", "XLMRobertaForMaskedLM", "CamembertForMaskedLM") and hasattr(model, "lm_head"):
        return model.lm_head
    if name == "DistilBertForMaskedLM":
        import torch

        return torch.nn.Sequential(model.vocab_transform, model.activation, model.vocab_layer_norm,
                                   model.vocab_projector)
    return None


def mask_positions(encoded, mask_id: int, texts, need: str):
    """The position of the one mask token in each encoded input (lists of ids), as an int64 array; an input with
    none or several stops with one sentence naming it and ``need`` (what the caller requires). Checked on the host,
    before any batch runs.

    >>> mask_positions([[1, 9, 2], [9, 1]], 9, ["a [MASK] b", "[MASK] a"], "pass one mask.").tolist()
    [1, 0]
    """
    import numpy as np

    at = np.empty(len(encoded), dtype=np.int64)
    for i, ids in enumerate(encoded):
        hits = [j for j, t in enumerate(ids) if t == mask_id]
        if len(hits) != 1:
            raise StereoprobeError(f"Input {texts[i]!r} has {len(hits)} mask tokens; {need}")
        at[i] = hits[0]
    return at


def mask_logits(model, input_ids, attention_mask, masks):
    """Vocabulary logits at the masked positions only, (number of masks, vocabulary), in fp32.

    The encoder runs on every token, the vocabulary head only where ``masks`` is true, with its weights and input
    in fp32 (:mod:`stereoprobe.readout`): for a small encoder the head (hidden × 30k vocabulary) costs as much as all
    its layers, and UnQover reads one position per input. Models of other classes run their own head on the masked
    positions the same way (:class:`stereoprobe.readout.Readout`); the logits are the same either way
    (tests/test_score_lm.py). ``masks``: a boolean tensor of the input's shape, or the masked positions as flat
    indices into batch × length (an int64 tensor made on the host: no wait for the GPU to count them).
    """
    import torch

    from .readout import Readout, body_of, fp32_call

    keep = masks.reshape(-1).nonzero().squeeze(1) if masks.dtype == torch.bool else masks
    head = _vocabulary_head(model)
    body = body_of(model) if head is None and isinstance(model, torch.nn.Module) else None
    if head is None and body is None:  # no body to run apart from its head: the whole model, indexed
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
        return logits.reshape(-1, logits.shape[-1]).index_select(0, keep).float()
    if head is None:
        readout = Readout(model, body)
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        return readout.head(inputs, readout.body(inputs, keep)).logits[0].float()
    base = getattr(model, model.base_model_prefix)
    hidden = base(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return fp32_call(head, hidden.reshape(-1, hidden.shape[-1]).index_select(0, keep)).float()


def is_causal(name: str, *, smoke: bool = False) -> bool | None:
    """Whether ``name`` is a causal (decoder-only) LM, from its config alone: a GGUF file, or a config whose
    architecture is a ``*ForCausalLM`` (``GPT2LMHeadModel``, …) of transformers' causal-LM classes and not a masked
    or sequence-to-sequence one. None when no config can be read (no local copy and no hub: loading then says what
    to do)."""
    path = resolve(name, smoke=smoke)
    try:
        if gguf_location(path, must_exist=False) is not None:
            return True
    except ModelLoadError:  # several GGUF files in one folder: a causal LM whichever is meant
        return True
    if str(path).lower().endswith(".gguf"):
        gguf_location(path)  # a GGUF path that is not there: said here, not taken for "no config"
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    from .batching import quiet_transformers

    folder = local_folder(path)
    if folder is None and not hub_reachable():
        return None
    if folder is not None and (Path(folder) / "config.json").is_file():
        try:  # code from the model's own repository is refused here, not taken for "no config"
            check_remote_code(json.loads((Path(folder) / "config.json").read_text()), name)
        except ValueError:
            return None
    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(path, trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()) - set(MODEL_FOR_MASKED_LM_MAPPING_NAMES.values())
    return any(a in causal or a.endswith("ForCausalLM") for a in (config.architectures or ()))


def choose_kind(name: str, asked: str | None, native: str, *, option: str = "--variant",
                smoke: bool = False, shown: str | None = None) -> str:
    """How a probe reads ``name``: ``"causal"`` (a causal LM, through prompts) or ``native`` (the probe's own head:
    ``qa``, ``lm``, ``nli``, ``mcq``). Without ``asked`` the model's config decides (:func:`is_causal`); asked for
    one kind, a model of the other is refused in one sentence naming it (as ``shown``, default ``name``) and the fix,
    before anything loads."""
    causal = is_causal(name, smoke=smoke)
    name = shown or name
    what = _DESCRIBE.get(native) or ("a masked LM" if native.startswith("lm") else native)
    if asked is None:
        return "causal" if causal else native
    if asked == "causal" and causal is False:
        raise ModelLoadError(f"{name!r} is not a causal LM (its config names no *ForCausalLM architecture), so it "
                             f"cannot be scored through prompts; leave out {option} causal to read it as {what}.")
    if asked != "causal" and causal:
        raise ModelLoadError(f"{name!r} is a causal LM, not {what}; pass {option} causal (or leave {option} out) "
                             "to score it through prompt templates.")
    return asked

__all__ = ["LoadedModel", "fetch", "load", "model_fingerprint"]
