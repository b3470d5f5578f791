"""Shipped weights, stored smaller and read back bit for bit (``<file>.bs4.xz``).

The package ships trained weights: the lab models' ``model.safetensors``, the zoo parts
(``data/zoo/<recipe>.safetensors``) and the static NLI models' ``weights.safetensors``. Each is committed as
``<file>.bs4.xz``: the file's bytes regrouped by position in each 4-byte word (every first byte, then every
second byte, ...: the float32 signs and exponents, which repeat, come together, the mantissas after them) and
compressed with xz. That stores them in 84 % of the bytes (the trained mantissas do not compress); the file
itself is packed, not its tensors, so no tensor is rounded or changed.

:func:`read_bytes` gives the original file back, from ``<file>`` when it is there (a rebuilt model) or else from
``<file>.bs4.xz``; the SHA-256 on a card, a model's fingerprint (the unpacked folder holds the original files) and
every output are the original file's. The lab models load with ``from_pretrained``, which reads a folder:
:func:`unpack_folder` writes the committed folder, unpacked, into the cache once.

A rebuilt model is committed packed with ``python -m stereoprobe.packed FILE...`` (each ``FILE`` is replaced by
``FILE.bs4.xz``, after checking that it unpacks to the same bytes).
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import sys
from pathlib import Path

import numpy as np

SUFFIX = ".bs4.xz"
_WORD = 4  # float32: the byte regrouping that lets xz see the exponents together


def packed_path(path: str | os.PathLike) -> Path:
    """``<path>.bs4.xz``, where ``path`` is stored packed."""
    return Path(f"{os.fspath(path)}{SUFFIX}")


def _regroup(blob: bytes, inverse: bool = False) -> bytes:
    n = len(blob) // _WORD * _WORD
    words = np.frombuffer(blob, np.uint8, count=n)
    words = words.reshape(_WORD, -1).T if inverse else words.reshape(-1, _WORD).T
    return words.tobytes() + blob[n:]


def pack(blob: bytes) -> bytes:
    """``blob`` packed: regrouped by byte position, then xz-compressed."""
    return lzma.compress(_regroup(blob), preset=9 | lzma.PRESET_EXTREME)


def unpack(blob: bytes) -> bytes:
    """The bytes :func:`pack` was given, bit for bit."""
    return _regroup(lzma.decompress(blob), inverse=True)


def exists(path: str | os.PathLike) -> bool:
    """Whether ``path`` is there, plain or packed."""
    return Path(path).is_file() or packed_path(path).is_file()


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of ``path``: the file itself when it is there, else unpacked from ``<path>.bs4.xz``."""
    path = Path(path)
    if path.is_file() or not packed_path(path).is_file():
        return path.read_bytes()  # a missing file raises FileNotFoundError naming the plain path
    return unpack(packed_path(path).read_bytes())


def sha256(path: str | os.PathLike) -> str:
    """SHA-256 of the bytes of ``path``, plain or packed (what the cards record). A packed file that does not
    unpack (damaged) gives the digest of its own bytes, which matches no card: the caller refuses it as for a
    plain file that fails its checksum."""
    try:
        blob = read_bytes(path)
    except (lzma.LZMAError, EOFError):
        blob = packed_path(path).read_bytes()
    return hashlib.sha256(blob).hexdigest()


def unpack_folder(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy the files of ``src`` into ``dst``, each ``<file>.bs4.xz`` as ``<file>``, unpacked."""
    dst = Path(dst)
    for f in sorted(Path(src).iterdir()):
        if f.name.endswith(SUFFIX):
            (dst / f.name[:-len(SUFFIX)]).write_bytes(unpack(f.read_bytes()))
        elif f.is_file():
            shutil.copyfile(f, dst / f.name)


def pack_file(path: str | os.PathLike) -> Path:
    """Replace ``path`` with ``<path>.bs4.xz`` (checked to unpack to the same bytes); returns the packed file."""
    path = Path(path)
    blob = path.read_bytes()
    packed = pack(blob)
    if unpack(packed) != blob:
        raise RuntimeError(f"{path} does not unpack to the same bytes")  # pragma: no cover - lzma is lossless
    target = packed_path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(packed)
    tmp.chmod(0o644)
    os.replace(tmp, target)
    path.unlink()
    return target


def main(argv: list[str] | None = None) -> int:
    for name in sys.argv[1:] if argv is None else argv:
        size = Path(name).stat().st_size
        target = pack_file(name)
        print(f"{target}: {size:,} -> {target.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
