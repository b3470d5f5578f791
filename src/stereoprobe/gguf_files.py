"""GGUF model files (llama.cpp's format) as transformers loads them: where the file is, what its header says.

transformers reads a GGUF causal LM with ``from_pretrained(folder, gguf_file=name)`` (model and tokenizer) and
dequantizes its weights; the ``gguf`` package reads the header. :func:`gguf_header` gives the architecture (checked
against what transformers can load before loading) and the quantisation type (``Q4_1``, ``Q8_0``, …), which
:func:`gguf_fingerprint` appends to the file's hash, so that scores of two quantisations of one model are stored
apart. :func:`stereoprobe.models.load` uses them for head ``causal``.

Parsing a GGUF file's metadata is slow (the ``gguf`` package reads its 49,152-token vocabulary entry by entry: about
6 s for SmolLM2-135M on two cores, and transformers parses the file again for the tokenizer, the config and the
weights, 44 s in all). So the header's facts and, for a model small enough, a transformers copy of the dequantized
model (config, ``model.safetensors`` in float32, tokenizer with its chat template) are kept in the cache folder,
``gguf/<hash of the file>/``, made once from the file and read in under a second after: the same weights, tokens and
chat template bit for bit (``tests/test_causal.py``), the same fingerprint (the file's).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from .errors import ModelLoadError

#: The largest dequantized model (float32 bytes) whose transformers copy the cache keeps: 2 GiB, about 537 million
#: parameters (SmolLM2-135M-Instruct: 0.5 GiB). A larger GGUF file is dequantized from the file at every load, as
#: transformers does, rather than taking four bytes a weight of disk.
COPY_MAX_BYTES = 2 << 30


def gguf_location(path: str, *, must_exist: bool = True) -> tuple[Path, str] | None:
    """(folder, file name) of a GGUF model: ``path`` is a ``.gguf`` file, or a folder whose only weights are one
    ``.gguf`` file; None for anything else (a missing ``.gguf`` path raises unless ``must_exist`` is false)."""
    p = Path(path).expanduser()
    if p.suffix.lower() == ".gguf":
        if p.is_file():
            return p.parent, p.name
        if must_exist:
            raise ModelLoadError(f"GGUF file {path!r} does not exist; check the path.")
        return None
    if p.is_dir() and not any(p.glob("*.safetensors")) and not any(p.glob("pytorch_model*.bin")):
        files = sorted(f.name for f in p.glob("*.gguf"))
        if len(files) > 1:
            raise ModelLoadError(f"{path!r} holds several GGUF files ({', '.join(files[:3])}); pass the path of the "
                                 "one to load.")
        if files:
            return p, files[0]
    return None


def _file_key(file: Path) -> tuple[str, int, int]:
    """(resolved path, size, mtime): the cache key of a file's header and fingerprint."""
    stat = file.stat()
    return str(file.resolve()), stat.st_size, stat.st_mtime_ns


def gguf_header(file: Path) -> tuple[str, str]:
    """(architecture, quantisation type such as ``Q4_1``) of a GGUF file, read from its header with the ``gguf``
    package (``general.file_type``; else its weights' most common type); cached per file, size and mtime.

    Raises :class:`ModelLoadError` saying ``pip install gguf`` when the package is missing, and naming the file when
    it is cut short or no GGUF file at all.
    """
    return _header(*_file_key(Path(file)))[:2]


@lru_cache(maxsize=16)
def _header(file: str, size: int, mtime: int) -> tuple[str, str, bool, int]:
    """(architecture, quantisation type, whether it carries a chat template, number of weights): read from the
    header once per file version, then from ``header.json`` in its cache folder."""
    import importlib.util

    from .atomic import atomic_file
    from .paths import cache_dir

    if importlib.util.find_spec("gguf") is None:  # transformers needs it to load the file, whatever is cached
        raise ModelLoadError(f"Loading the GGUF file {file!r} needs the gguf package; run `pip install gguf`.")
    saved = cache_dir() / "gguf" / _content_hash(file, size) / "header.json"
    try:
        data = json.loads(saved.read_text(encoding="utf-8"))
        return str(data["architecture"]), str(data["quantisation"]), bool(data["chat"]), int(data["weights"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    facts = _read_header(file)
    saved.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(saved) as f:
        json.dump(dict(zip(("architecture", "quantisation", "chat", "weights"), facts)), f)
    return facts


def _read_header(file: str) -> tuple[str, str, bool, int]:
    from collections import Counter

    import gguf

    try:
        reader = gguf.GGUFReader(file)
        arch = reader.fields["general.architecture"].contents()
        field = reader.fields.get("general.file_type")
        if field is not None:
            quant = gguf.LlamaFileType(field.contents()).name.removeprefix("MOSTLY_")
        else:
            quant = Counter(t.tensor_type.name for t in reader.tensors).most_common(1)[0][0]
        chat = "tokenizer.chat_template" in reader.fields
        weights = sum(int(t.n_elements) for t in reader.tensors)
    except (ValueError, IndexError, KeyError, OSError, EOFError) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise ModelLoadError(f"{file} is not a complete GGUF file ({first}); the download or copy was cut short: "
                             "fetch it again.") from None
    return str(arch), str(quant), chat, weights


def gguf_fingerprint(file: Path) -> str:
    """The fingerprint of a GGUF file: a hash of its name, size and first and last 8 MiB, then its quantisation
    type (``…-q4_1``)."""
    return _fingerprint(*_file_key(file))


@lru_cache(maxsize=16)
def _fingerprint(file: str, size: int, mtime: int) -> str:
    return f"{_content_hash(file, size)}-{_header(file, size, mtime)[1].lower()}"


@lru_cache(maxsize=16)
def _content_hash(file: str, size: int) -> str:
    """A hash of the file's name, size and first and last 8 MiB (as for big safetensors): its cache folder's name."""
    h = hashlib.sha256()
    with open(file, "rb") as f:
        h.update(Path(file).name.encode() + str(size).encode())
        h.update(f.read(8 << 20))
        f.seek(max(0, size - (8 << 20)))
        h.update(f.read())
    return h.hexdigest()[:16]


def gguf_copy_folder(file: Path) -> Path | None:
    """Where the cache keeps the transformers copy of a GGUF file (``gguf/<hash>/checkpoint``), or None when the
    model is too large to keep one (:data:`COPY_MAX_BYTES`). The folder exists once the copy is whole. (Copies
    written before the tied embedding was saved, ``gguf/<hash>/transformers``, are not read.)"""
    from .paths import cache_dir

    key = _file_key(Path(file))
    if 4 * _header(*key)[3] > COPY_MAX_BYTES:
        return None
    return cache_dir() / "gguf" / _content_hash(*key[:2]) / "checkpoint"


def save_gguf_copy(folder: Path, model, tokenizer) -> None:
    """Write ``model`` (dequantized from a GGUF file, float32) and its tokenizer to ``folder`` as transformers writes
    a checkpoint (transformers refuses ``save_pretrained`` of a model loaded from GGUF; its weights are plain
    tensors here, so they are written as they are): a standard folder that any loader reads (vLLM serves it)."""
    import copy

    from safetensors.torch import save_file

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    save_file(checkpoint_tensors(model), str(Path(folder) / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(folder)


def checkpoint_tensors(model) -> dict:
    """``model``'s state dict as transformers saves it: of tensors that share storage (a tied embedding), the one
    a tie points FROM is left out (``lm_head.weight``; the model's ``_tied_weights_keys``), the one it points to
    kept (``model.embed_tokens.weight``), which the config's ``tie_word_embeddings`` restores. (safetensors'
    ``save_model`` keeps an arbitrary one of them: it kept ``lm_head.weight`` only, and a loader that does not tie,
    such as vLLM's for this folder, then has no embedding.)"""
    tied = getattr(model, "_tied_weights_keys", None) or {}
    followers = set(tied) if isinstance(tied, (dict, list, tuple, set)) else set()
    groups: dict = {}
    state = model.state_dict()
    for name, tensor in state.items():
        groups.setdefault((tensor.device, tensor.untyped_storage().data_ptr(), tensor.storage_offset(),
                           tuple(tensor.shape)), []).append(name)
    out = {}
    for names in groups.values():
        kept = [n for n in names if n not in followers] or names[:1]
        out[kept[0]] = state[kept[0]].detach().contiguous()
    return dict(sorted(out.items()))


def gguf_is_chat(file: Path) -> bool:
    """Whether a GGUF file's header carries a chat template (``tokenizer.chat_template``): a chat model. False when
    the ``gguf`` package is missing or the header does not read (loading then says why)."""
    try:
        return _header(*_file_key(Path(file)))[2]
    except ModelLoadError:
        return False


def check_gguf(file: Path, name: str, head: str) -> None:
    """Refuse, in one sentence, a GGUF file that transformers cannot load as ``head`` (only ``causal`` here) or whose
    architecture it cannot read."""
    if head != "causal":
        what = "a causal chat LM (a GGUF file with a chat template)" if gguf_is_chat(file) else "a causal LM (a GGUF file)"
        raise ModelLoadError(f"{name!r} is {what}, which loads with head 'causal' only, not {head!r}.")
    arch, _ = gguf_header(file)
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    if arch in NOT_ARCHITECTURES or transformers_architecture(arch) not in GGUF_SUPPORTED_ARCHITECTURES:
        import transformers

        shown = arch if len(arch) <= 40 else arch[:40] + "…"
        raise ModelLoadError(f"{name!r} is a GGUF file of architecture {shown!r}, which transformers "
                             f"{transformers.__version__} cannot load; use a model of a supported architecture "
                             "(llama, mistral, qwen2, gemma2, phi3, …) or its safetensors release.")


#: llama.cpp's architecture names that transformers spells otherwise (its ``load_gguf_checkpoint`` renames them).
GGUF_SPELLINGS = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss", "minimax-m2": "minimax_m2"}
#: Names in transformers' list of GGUF architectures that are sections of the file, not architectures.
NOT_ARCHITECTURES = frozenset({"general", "tokenizer"})


def transformers_architecture(arch: str) -> str:
    """The name transformers gives a GGUF file's ``general.architecture``.

    >>> transformers_architecture("qwen2moe"), transformers_architecture("llama")
    ('qwen2_moe', 'llama')
    """
    return GGUF_SPELLINGS.get(arch, arch)
