"""Contextual name embeddings and how well they encode gender and race/ethnicity (SODAPOP's Table 1).

An, Li, Zhao, Rudinger, "SODAPOP", EACL 2023, §2 (Table 1, the motivating experiment): a name's embedding
is BERT's last-layer state averaged over its word pieces and over 1,000 Social IQa dev contexts; a logistic
regression trained on 414 of 622 names (Rosenman et al. 2022) and tested on the other 208 recovers gender
(train 99.52 %, test 85.58 %, chance 50 %) and race/ethnicity (chance 25 %) from it. The paper's name list
is not released, so :func:`table1` runs on the 220 seed names (:mod:`stereoprobe.sodapop.names`; 110 female / 110 male;
50 EA, 50 AA, 60 AS, 60 HS).

* :func:`sample_contexts` — the distinct ``context`` strings of the shipped Social IQa slice (1,298 of its
  1,302 lines; every one names the placeholder "Bethany", 166 of them twice): the first ``n`` in file order
  (``seed=None``) or a seeded sample of ``n`` kept in file order.
* :func:`name_embeddings` — each name replaces **every** "Bethany" of each context; the fast tokenizer's
  character offsets give the word pieces that overlap a name occurrence, and the name's vector in that
  context is the mean of those pieces' states at ``layer`` (all occurrences pooled, or the first only);
  the embedding is the mean over contexts::

      e(n) = 1/|C| Σ_{c∈C} 1/|P(n,c)| Σ_{t∈P(n,c)} h_t^(layer)(c[Bethany→n])

  Inputs are cut into token-budget batches (:func:`stereoprobe.batching.token_budget_batches`); with a
  ``fingerprint`` the result is cached under ``cache_dir()/"sodapop_names"``.
* :func:`probe_accuracy` — standardized features (z-scores fitted on the training names) and
  ``LogisticRegression(C=1, lbfgs, max_iter=10_000)`` on a seeded stratified split; ``chance`` is
  1/classes, ``majority`` the test accuracy of always answering the training split's most frequent class.
* :func:`table1` — the gender and race/ethnicity rows; :func:`tsne_names` — 2-D t-SNE of the embeddings.

Measured on all-MiniLM-L6-v2 (``asset:minilm``, last layer, 100 contexts with ``seed=0``, the 220 names,
146 train / 74 test): gender train 100, test 83.8 (majority 51.4); race/ethnicity train 100, test 48.6
(majority 27.0) — 270 s on one CPU thread.

>>> probe_accuracy(np.r_[np.zeros((6, 2)), np.ones((6, 2))], [0] * 6 + [1] * 6, test_size=1 / 3)["test_acc"]
1.0
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from ..atomic import atomic_file
from ..errors import MetricsError, StereoprobeError
from ..paths import cache_dir
from .contexts import PLACEHOLDER, read_records
from .names import gender_of, group_of, race_of

__all__ = ["PAPER_TABLE1", "sample_contexts", "locate_name", "name_embeddings", "probe_accuracy", "table1",
           "tsne_names"]

Occurrences = Literal["all", "first"]

#: Table 1 of An et al. 2023 (percent): 622 names, 414 train / 208 test. The race/ethnicity accuracies are
#: not transcribed here (NaN; read them from the paper's PDF).
PAPER_TABLE1 = pd.DataFrame({"train": [99.52, np.nan], "test": [85.58, np.nan], "chance": [50.0, 25.0]},
                            index=pd.Index(["gender", "race/ethnicity"], name="attribute"))


def sample_contexts(n_contexts: int = 1000, seed: int | None = 0, path: str | Path | None = None) -> list[str]:
    """``n_contexts`` distinct context strings of the Social IQa slice, in file order.

    ``seed=None`` takes the first ``n_contexts``; an integer draws them with ``np.random.default_rng(seed)``
    (without replacement) and keeps file order.

    >>> ctx = sample_contexts(3, seed=None)
    >>> len(ctx), all("Bethany" in c for c in ctx)
    (3, True)
    """
    distinct = list(dict.fromkeys(str(r.get("context", "")) for r in read_records(path)))
    distinct = [c for c in distinct if PLACEHOLDER in c]
    integer = isinstance(n_contexts, (int, np.integer)) and not isinstance(n_contexts, bool)
    if not integer or not 1 <= n_contexts <= len(distinct):
        raise StereoprobeError(f"n_contexts={n_contexts!r} must be an integer between 1 and {len(distinct)} "
                               "(the distinct contexts of the Social IQa slice).")
    if seed is None:
        return distinct[:n_contexts]
    chosen = np.sort(np.random.default_rng(seed).choice(len(distinct), size=int(n_contexts), replace=False))
    return [distinct[i] for i in chosen]


def _spans(context: str, name: str) -> tuple[str, list[tuple[int, int]]]:
    """``context`` with every placeholder replaced by ``name``, and the character span of each occurrence."""
    parts = context.split(PLACEHOLDER)
    spans, pos = [], len(parts[0])
    for part in parts[1:]:
        spans.append((pos, pos + len(name)))
        pos += len(name) + len(part)
    return name.join(parts), spans


def locate_name(tokenizer, context: str, name: str, occurrences: Occurrences = "all") -> tuple[list[int], list[int]]:
    """Token ids of ``context`` with ``name`` put in, and the positions of the name's word pieces.

    A piece belongs to the name when its character offsets (fast tokenizer, special tokens added) overlap
    an occurrence's span; ``occurrences="first"`` keeps the first occurrence only.
    """
    ids, positions = _locate(tokenizer, [context], name, occurrences)
    return ids[0], positions[0]


def _locate(tokenizer, contexts: Sequence[str], name: str, occurrences: Occurrences) -> tuple[list, list]:
    """:func:`locate_name` for many contexts, tokenized in one call."""
    if occurrences not in ("all", "first"):
        raise StereoprobeError(f"occurrences={occurrences!r} is not known; pass 'all' or 'first'.")
    texts, spans = zip(*(_spans(c, name) for c in contexts))
    bare = [c for c, s in zip(contexts, spans) if not s]
    if bare:
        raise StereoprobeError(f"The context {bare[0][:60]!r} does not contain {PLACEHOLDER!r}; pass contexts "
                               "that name the placeholder person.")
    enc = tokenizer(list(texts), return_offsets_mapping=True, add_special_tokens=True)
    positions = []
    for offsets, occ in zip(enc["offset_mapping"], spans):
        occ = occ[:1] if occurrences == "first" else occ
        positions.append([t for t, (s, e) in enumerate(offsets) if e > s and any(s < b and e > a for a, b in occ)])
    return [list(i) for i in enc["input_ids"]], positions


def _check_names(names: Sequence[str]) -> list[str]:
    names = list(names)
    bad = [n for n in names if not isinstance(n, str) or not n or any(c.isspace() for c in n)]
    if bad or not names:
        raise StereoprobeError(f"Names {bad[:3]} are not single first names (empty, or with spaces); pass a "
                               "non-empty list of names such as ['Amanda', 'Jamel'].")
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise StereoprobeError(f"Names {dups[:3]} are listed more than once; pass each name once.")
    return names


def _cache_path(fingerprint: str, names: list[str], contexts: list[str], layer: int, occurrences: str,
                dtype: str) -> Path:
    h = hashlib.sha256()
    h.update(json.dumps({"model": fingerprint, "names": names, "layer": layer, "occurrences": occurrences,
                         "dtype": dtype}).encode())
    for c in contexts:
        h.update(hashlib.sha256(c.encode()).digest())
    folder = cache_dir() / "sodapop_names"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{h.hexdigest()[:20]}.npz"


def name_embeddings(model, tokenizer, names: Sequence[str], *, n_contexts: int = 1000, seed: int | None = 0,
                    contexts: Sequence[str] | None = None, layer: int = -1, occurrences: Occurrences = "all",
                    max_tokens: int = 16384, max_batch: int | None = None, device: str = "auto",
                    precision: str = "auto", fingerprint: str | None = None) -> pd.DataFrame:
    """Names × hidden-size DataFrame of contextual name embeddings (An et al. 2023, §2; formula above).

    ``model`` is any ``AutoModel`` encoder (BERT, RoBERTa, … families) with its **fast** ``tokenizer``;
    ``contexts`` default to :func:`sample_contexts` ``(n_contexts, seed)``; ``layer`` indexes
    ``hidden_states`` (0 = embeddings, −1 = last layer). A name whose pieces are never found (the tokenizer
    drops it) or are all the unknown token stops with an error. With ``fingerprint`` (a string identifying
    the weights, e.g. :attr:`stereoprobe.models.LoadedModel.fingerprint`) the matrix is cached under
    ``cache_dir()/"sodapop_names"``, keyed by it plus the names, contexts, layer, occurrences and dtype.
    """
    import torch

    from ..batching import (inference_context, padded_inputs, progress, resolve_device, resolve_precision,
                            token_budget_batches)

    if not getattr(tokenizer, "is_fast", False):
        raise StereoprobeError("name_embeddings needs a fast tokenizer (character offsets); load the model's "
                               "tokenizer.json with AutoTokenizer (use_fast=True).")
    names = _check_names(names)
    texts = sample_contexts(n_contexts, seed) if contexts is None else [str(c) for c in contexts]
    if not texts:
        raise StereoprobeError("contexts is empty; pass context strings that contain 'Bethany'.")
    n_layers = int(model.config.num_hidden_layers)
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not -n_layers - 1 <= layer <= n_layers:
        raise StereoprobeError(f"layer={layer!r} is not a hidden-state index of this {n_layers}-layer model; pass "
                               f"an integer in [-{n_layers + 1}, {n_layers}] (0 = embeddings, -1 = last layer).")
    dev = resolve_device(device)
    dtype = resolve_precision(dev, precision)
    path = None
    if fingerprint is not None:
        path = _cache_path(str(fingerprint), names, texts, int(layer), occurrences, str(dtype))
        if path.is_file():
            with np.load(path, allow_pickle=False) as z:
                if z["names"].tolist() == names:
                    return pd.DataFrame(z["X"], index=pd.Index(names, name="name"))
    model.to(dev)
    model.eval()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    unk = tokenizer.unk_token_id
    X = np.zeros((len(names), int(model.config.hidden_size)), dtype=np.float64)
    with inference_context(dev, precision):
        for row, name in enumerate(progress(names, desc="name embeddings")):
            ids, positions = _locate(tokenizer, texts, name, occurrences)
            missing = sum(not p for p in positions)
            if missing:
                raise StereoprobeError(f"The tokenizer yields no word piece for {name!r} in {missing} of {len(texts)} "
                                       "contexts; pass a name made of characters the tokenizer keeps.")
            if unk is not None and all(ids[k][t] == unk for k, p in enumerate(positions) for t in p):
                raise StereoprobeError(f"{name!r} is only unknown tokens ({tokenizer.unk_token}) for this tokenizer, "
                                       "so it would embed like any unknown name; pass a name it can spell.")
            total = torch.zeros(X.shape[1], dtype=torch.float64)
            for batch in token_budget_batches([len(i) for i in ids], max_tokens, max_batch):
                x = padded_inputs(ids, batch, pad, dev)
                weights = torch.zeros(x["input_ids"].shape, dtype=torch.float32, device=dev)
                for r, k in enumerate(batch):
                    weights[r, positions[k]] = 1.0 / len(positions[k])
                out = model(**x, output_hidden_states=layer != -1)
                hidden = out.last_hidden_state if layer == -1 else out.hidden_states[layer]
                # elementwise, not einsum: autocast would run a matmul in bf16/fp16
                total += (weights[..., None] * hidden.float()).sum((0, 1)).double().cpu()
            X[row] = (total / len(texts)).numpy()
    X = X.astype(np.float32)
    if path is not None:
        with atomic_file(path, "wb") as f:
            np.savez(f, X=X, names=np.array(names))
    return pd.DataFrame(X, index=pd.Index(names, name="name"))


def probe_accuracy(X, labels: Sequence, test_size: float = 1 / 3, seed: int = 0, standardize: bool = True) -> dict:
    """Logistic-regression probe on a seeded stratified split (An et al. 2023, Table 1).

    ``StandardScaler`` (when ``standardize``; fitted on the training rows) then
    ``LogisticRegression(C=1.0, max_iter=10_000)``. Returns ``train_acc``, ``test_acc``, ``chance``
    (1/number of classes), ``majority`` (test accuracy of the training split's most frequent class),
    ``n_train``, ``n_test``, ``n_classes``. The paper's split, 414/208 of 622, is ``test_size ≈ 1/3``.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(labels)
    if X.ndim != 2 or len(X) != len(y):
        raise MetricsError(f"X must be a 2-D array with one row per label, got shape {X.shape} for {len(y)} labels.")
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2 or counts.min() < 2:
        raise MetricsError(f"The probe needs at least 2 classes with 2 examples each, got counts "
                           f"{dict(zip(classes.tolist(), counts.tolist()))}; pass more names per class.")
    try:
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError as e:
        raise MetricsError(f"test_size={test_size!r} cannot split {len(y)} examples of {len(classes)} classes "
                           f"stratified ({e}); pass a test_size that leaves every class in both parts.") from None
    steps = [StandardScaler()] if standardize else []
    clf = make_pipeline(*steps, LogisticRegression(C=1.0, max_iter=10_000)).fit(X_tr, y_tr)
    values, freq = np.unique(y_tr, return_counts=True)
    return {"train_acc": float(clf.score(X_tr, y_tr)), "test_acc": float(clf.score(X_te, y_te)),
            "chance": 1.0 / len(classes), "majority": float(np.mean(y_te == values[np.argmax(freq)])),
            "n_train": int(len(y_tr)), "n_test": int(len(y_te)), "n_classes": int(len(classes))}


def table1(emb: pd.DataFrame, groups: Mapping[str, Sequence[str]], test_size: float = 1 / 3, seed: int = 0,
           standardize: bool = True) -> pd.DataFrame:
    """Table 1 on our names: rows "gender" (2 classes) and "race/ethnicity" (4), accuracies in percent.

    ``emb`` is :func:`name_embeddings`' output, ``groups`` maps group keys (``EA_f`` …) to names; every
    grouped name must be a row of ``emb``. Compare with :data:`PAPER_TABLE1` (622 other names).
    """
    owner = group_of({g: list(v) for g, v in groups.items()})
    missing = [n for n in owner if n not in emb.index]
    if missing:
        raise MetricsError(f"Names {missing[:3]} of the groups have no embedding; compute name_embeddings for "
                           "every grouped name.")
    names = list(owner)
    X = emb.loc[names].to_numpy()
    rows = {}
    for attr, labels in (("gender", [gender_of(owner[n]) for n in names]),
                         ("race/ethnicity", [race_of(owner[n]) for n in names])):
        r = probe_accuracy(X, labels, test_size=test_size, seed=seed, standardize=standardize)
        rows[attr] = {"train": 100 * r["train_acc"], "test": 100 * r["test_acc"], "chance": 100 * r["chance"],
                      "majority": 100 * r["majority"], "n_train": r["n_train"], "n_test": r["n_test"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("attribute")


def tsne_names(X, names: Sequence[str], groups: Mapping[str, Sequence[str]], seed: int = 10) -> pd.DataFrame:
    """2-D t-SNE of name embeddings: columns name, group, x, y (rows in ``names`` order).

    ``TSNE(n_components=2, learning_rate="auto", init="random", random_state=seed,
    perplexity=min(30, n − 1))``, the settings of SODAPOP's SR-vector plots (``process_distractor_results.py``).
    """
    from sklearn.manifold import TSNE

    X = np.asarray(X, dtype=np.float64)
    names = list(names)
    owner = group_of({g: list(v) for g, v in groups.items()})
    orphans = [n for n in names if n not in owner]
    if X.ndim != 2 or len(X) != len(names) or len(names) < 2:
        raise MetricsError(f"X must have one row per name (at least 2), got shape {X.shape} for {len(names)} names.")
    if orphans:
        raise MetricsError(f"Names {orphans[:3]} are in no group; pass groups that cover every name.")
    xy = TSNE(n_components=2, learning_rate="auto", init="random", random_state=seed,
              perplexity=min(30.0, len(X) - 1.0)).fit_transform(X)
    return pd.DataFrame({"name": names, "group": [owner[n] for n in names], "x": xy[:, 0], "y": xy[:, 1]})
