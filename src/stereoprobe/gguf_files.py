"""GGUF model files (llama.cpp's format) as transformers loads them: where the file is, what its header says.

transformers reads a GGUF causal LM with ``from_pretrained(folder, gguf_file=name)`` (model and tokenizer) and
dequantizes its weights; the ``gguf`` package reads the header. :func:`gguf_header` gives the architecture (checked
against what transformers can load before loading) and the quantisation type (``Q4_1``, ``Q8_0``, …), which
:func:`gguf_fingerprint` appends to the file's hash, so that scores of two quantisations of one model are stored
apart. :func:`stereoprobe.models.load` uses them for head ``causal``.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from .errors import ModelLoadError


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
def _header(file: str, size: int, mtime: int) -> tuple[str, str, bool]:
    """(architecture, quantisation type, whether it carries a chat template): one read of the header."""
    import importlib.util

    if importlib.util.find_spec("gguf") is None:
        raise ModelLoadError(f"Loading the GGUF file {file!r} needs the gguf package; run `pip install gguf`.")
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
    except (ValueError, IndexError, KeyError, OSError, EOFError) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise ModelLoadError(f"{file} is not a complete GGUF file ({first}); the download or copy was cut short: "
                             "fetch it again.") from None
    return str(arch), str(quant), chat


def gguf_fingerprint(file: Path) -> str:
    """The fingerprint of a GGUF file: a hash of its name, size and first and last 8 MiB, then its quantisation
    type (``…-q4_1``)."""
    return _fingerprint(*_file_key(file))


@lru_cache(maxsize=16)
def _fingerprint(file: str, size: int, mtime: int) -> str:
    h = hashlib.sha256()
    with open(file, "rb") as f:  # size + first/last 8 MiB, as for big safetensors
        h.update(Path(file).name.encode() + str(size).encode())
        h.update(f.read(8 << 20))
        f.seek(max(0, size - (8 << 20)))
        h.update(f.read())
    return f"{h.hexdigest()[:16]}-{_header(file, size, mtime)[1].lower()}"


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
