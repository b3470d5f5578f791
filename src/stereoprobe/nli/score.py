"""Scoring Bias-NLI pairs with any NLI classifier (spec §4, §5.5): entailment / neutral / contradiction
probabilities per pair, stored once per (model, pair set, precision) in the score store.

Any ``AutoModelForSequenceClassification`` with three NLI labels works, by hub id, folder or project name
(``zoo:minilm-nli`` by default). Its classes are found through ``config.id2label``
(:func:`stereoprobe.nli.measures.label_indices`), never by position: a model whose labels cannot be
identified stops before anything is scored, with its labels listed (pass ``label_order`` for generic
``LABEL_0..2`` names). Input: the tokenizer's standard pair encoding of (premise, hypothesis); the
probabilities are a softmax over the three logits in fp32.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import StereoprobeError
from ..models import LoadedModel, load
from . import measures
from .templates import TemplateSpec, count, fingerprint, iter_pairs, templates

SHARD_PAIRS = 20_000
PROB_COLUMNS = measures.PROB_COLUMNS
DEFAULT_MODEL = "zoo:minilm-nli"


@dataclass
class NLIScorer:
    """(premise, hypothesis) pairs → (n, 3) probabilities in the order entail, neutral, contradiction."""

    loaded: LoadedModel
    batch_tokens: int = 8192
    precision: str = "auto"
    label_order: Sequence[str] | None = None
    _columns: tuple[int, int, int] = field(init=False, repr=False)

    def __post_init__(self):
        config = self.loaded.model.config
        if getattr(config, "num_labels", 3) != 3:
            raise StereoprobeError(f"{self.loaded.name!r} has {config.num_labels} labels; an NLI model needs 3 "
                                   "(entailment, neutral, contradiction).")
        self._columns = measures.label_indices(config.id2label, self.label_order)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        from ..batching import inference_context, padded_inputs, progress, token_budget_batches

        tok = self.loaded.tokenizer
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], truncation=True)
        ids = enc["input_ids"]
        types = enc.get("token_type_ids")
        lengths = np.array([len(x) for x in ids])
        model = self.loaded.model
        device = model.device
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        out = np.zeros((len(pairs), 3), dtype=np.float32)
        batches = list(token_budget_batches(lengths, self.batch_tokens, bucket=True))
        with inference_context(device, self.precision):
            for batch in progress(batches, desc="batches", leave=False, disable=len(batches) < 20):
                inputs = padded_inputs(ids, batch, pad, device, types=types)
                probs = model(**inputs).logits.float().softmax(-1).cpu().numpy()
                out[batch] = probs[:, list(self._columns)]
        return out


def _run_for(model: str, spec: TemplateSpec, device: str, precision: str, store, smoke: bool, label_order,
             suffix: str = "", loaded: LoadedModel | None = None):
    from ..batching import resolve_precision
    from ..models import fingerprint_path, resolve
    from ..store import ScoreStore

    dtype = str(resolve_precision(device, precision)).replace("torch.", "")
    model_fp = loaded.fingerprint if loaded is not None else fingerprint_path(resolve(model, smoke=smoke))
    if model_fp is None:  # not local: loading says what to do (hub unreachable / bad id)
        model_fp = load(model, "nli", device=device, smoke=smoke).fingerprint
    order = "-".join(label_order) if label_order else "id2label"
    store = store if store is not None else ScoreStore()
    return store.run(model_fp, fingerprint(spec), f"nli-{order}-{dtype}{suffix}", {c: np.float32 for c in PROB_COLUMNS})


def score_pairs(model: str, spec: TemplateSpec, *, batch_tokens: int = 8192, device: str = "auto",
                precision: str = "auto", store=None, smoke: bool = False, progress: bool = True,
                label_order: Sequence[str] | None = None, projection=None, sentences: Sequence[str] | None = None):
    """Score every pair of ``spec`` with ``model`` into the score store (resuming; nothing twice).

    ``projection`` scores the model with a *test-time* projection (spec §5.5; see
    :func:`stereoprobe.nli.contextual.test_time_projection`): ``"gender"`` (proj@test), ``"random:<i>"``
    (rand@test control i), ``"layers:all"`` (every layer; ``sentences`` estimate its directions) or a
    (k, d) array of input directions. Such scores are stored apart, under a digest of the directions.
    The model is loaded (and its labels checked) as soon as some shard is missing, before any scoring.
    Returns the complete :class:`~stereoprobe.store.StoreRun`.
    """
    from ..batching import chunked

    loaded, context, suffix = None, contextlib.nullcontext(), ""
    if projection is not None:
        from .contextual import test_time_projection

        loaded = load(model, "nli", device=device, smoke=smoke)
        context, suffix = test_time_projection(loaded, projection, sentences)
    run = _run_for(model, spec, device, precision, store, smoke, label_order, suffix, loaded)
    if run.is_complete():
        return run
    loaded = loaded or load(model, "nli", device=device, smoke=smoke)
    scorer = NLIScorer(loaded, batch_tokens, precision, label_order)

    def score(chunk):
        out = scorer.score([(p.premise, p.hypothesis) for p in chunk])
        return {"pass_id": np.fromiter((p.index for p in chunk), dtype=np.int64, count=len(chunk)),
                **{c: out[:, k] for k, c in enumerate(PROB_COLUMNS)}}

    n = count(spec).pairs
    label = Path(model).name if Path(model).is_dir() else model
    what = f" · {projection}" if isinstance(projection, str) else (" · projected" if projection is not None else "")
    with context:
        return run.fill(chunked(iter_pairs(spec), SHARD_PAIRS), score, progress=progress, total=-(-n // SHARD_PAIRS),
                        desc=f"{label}{what} · Bias-NLI {spec.probe} ({n:,} pairs)")


def pairs_frame(spec: TemplateSpec) -> pd.DataFrame:
    """The pairs of ``spec`` without their sentences: ``index, premise_word, hypothesis_word, tid, verb, object``
    (``verb``/``object``: the template, as the paper's Tables 2, 4 and 6 print it)."""
    cols: dict[str, list] = {"index": [], "premise_word": [], "hypothesis_word": [], "tid": []}
    for p in iter_pairs(spec):
        cols["index"].append(p.index)
        cols["premise_word"].append(p.premise_filler)
        cols["hypothesis_word"].append(p.hypothesis_filler)
        cols["tid"].append(p.tid)
    tid = np.asarray(cols["tid"], dtype=np.int16)
    table = templates()
    verbs = pd.Categorical([t.verb for t in table])
    objects = pd.Categorical([t.obj for t in table])
    return pd.DataFrame({"index": np.asarray(cols["index"], dtype=np.int64),
                         "premise_word": pd.Categorical(cols["premise_word"]),
                         "hypothesis_word": pd.Categorical(cols["hypothesis_word"]),
                         "tid": tid, "verb": verbs[tid], "object": objects[tid]})


def load_probabilities(model: str, spec: TemplateSpec, **options) -> pd.DataFrame:
    """Per-pair probabilities of ``model`` on ``spec`` (scoring whatever the store lacks): the input of
    :mod:`stereoprobe.nli.measures` — ``index, premise_word, hypothesis_word, tid, verb, object, entail,
    neutral, contradiction``. ``options`` go to :func:`score_pairs` (e.g. ``projection="gender"``)."""
    from ..errors import StoreError

    run = score_pairs(model, spec, **options)
    raw = run.read()
    meta = pairs_frame(spec)
    if not np.array_equal(raw["pass_id"].to_numpy(dtype=np.int64), meta["index"].to_numpy()):
        raise StoreError(f"The stored scores in {run.path} do not match the pairs of {spec.probe}; "
                         "delete that folder to recompute them.")
    for c in PROB_COLUMNS:
        meta[c] = raw[c].to_numpy()
    return meta
