"""Scoring Bias-NLI pairs with any NLI classifier (Dev et al. 2020, Tables 1, 3, 5, 15): entailment /
neutral / contradiction probabilities per pair, stored once per (model, pair set, precision) in the score store.

Any ``AutoModelForSequenceClassification`` with three NLI labels works, by hub id, folder or project name
(``zoo:minilm-nli`` by default). Its classes are found through ``config.id2label``
(:func:`stereoprobe.nli.measures.label_indices`), never by position: a model whose labels cannot be
identified stops before anything is scored, with its labels listed (pass ``label_order`` for generic
``LABEL_0..2`` names). Input: the tokenizer's standard pair encoding of (premise, hypothesis); the
probabilities are a softmax over the three logits in fp32.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..engine import ModelJob
from ..errors import StereoprobeError
from ..modelref import progress_label
from ..models import LoadedModel, load
from ..options import RunOptions, as_options
from . import measures
from .templates import TemplateSpec, count, fingerprint, iter_pairs, templates

SHARD_PAIRS = 20_000
PROB_COLUMNS = measures.PROB_COLUMNS


@dataclass
class NLIScorer:
    """(premise, hypothesis) pairs → (n, 3) probabilities in the order entail, neutral, contradiction."""

    loaded: LoadedModel
    batch_tokens: int | None = None
    precision: str = "auto"
    label_order: Sequence[str] | None = None
    _columns: tuple[int, int, int] = field(init=False, repr=False)

    def __post_init__(self):
        from ..batching import batch_tokens_for

        self.batch_tokens = batch_tokens_for(self.loaded.model, self.batch_tokens)
        config = self.loaded.model.config
        if getattr(config, "num_labels", 3) != 3:
            raise StereoprobeError(f"{self.loaded.name!r} has {config.num_labels} labels; an NLI model needs 3 "
                                   "(entailment, neutral, contradiction).")
        self._columns = measures.label_indices(config.id2label, self.label_order)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        from ..batching import inference_context, padded_inputs, progress, token_budget_batches
        from ..readout import Readout

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
        columns = list(self._columns)
        readout = Readout(model)  # the classifier in fp32 (stereoprobe.readout)
        results = []  # on the device until the end (no host sync per batch)
        with inference_context(device, self.precision):
            for batch in progress(batches, desc="batches", leave=False, disable=len(batches) < 20):
                inputs = padded_inputs(ids, batch, pad, device, types=types)
                logits = readout.head(inputs, readout.body(inputs)).logits
                results.append(logits.float().softmax(-1)[:, columns])
        if batches:
            import torch

            out[np.concatenate(batches)] = torch.cat(results).cpu().numpy()
        return out


@dataclass(kw_only=True)
class ScoreJob(ModelJob):
    """Shard ``i`` of ``spec``'s pairs scored by ``model`` (optionally projected at test time): what a worker
    (local or Ray, :mod:`stereoprobe.engine`) computes on its own."""

    spec: TemplateSpec
    label_order: Sequence[str] | None = None
    projection: object = None
    sentences: Sequence[str] | None = None
    suffix: str = ""

    def _scorer(self) -> NLIScorer:
        state = self.state
        if "scorer" not in state:
            loaded = state.get("loaded") or self.load_model("nli")
            scorer = NLIScorer(loaded, self.batch_tokens, self.precision, self.label_order)  # labels checked first
            if self.projection is not None and "context" not in state:
                from .contextual import test_time_projection

                context, suffix = test_time_projection(loaded, self.projection, self.sentences)
                if suffix != self.suffix:
                    raise StereoprobeError(f"the projection {self.projection!r} gives other directions here ({suffix}) "
                                           f"than on the driver ({self.suffix}); use the same model files everywhere.")
                state["context"] = context
            if "context" in state and not state.get("entered"):
                state["context"].__enter__()
                state["entered"] = True
            state["loaded"], state["scorer"] = loaded, scorer
        return state["scorer"]

    def score_shard(self, i: int) -> dict[str, np.ndarray]:
        scorer = self._scorer()
        chunk = list(iter_pairs(self.spec, *self.span(i)))
        out = scorer.score([(p.premise, p.hypothesis) for p in chunk])
        return {"pass_id": np.fromiter((p.index for p in chunk), dtype=np.int64, count=len(chunk)),
                **{c: out[:, k] for k, c in enumerate(PROB_COLUMNS)}}

    def model_fingerprint(self) -> str | None:
        loaded = self.state.get("loaded")
        return loaded.fingerprint if loaded is not None else None

    def close(self) -> None:
        """Remove a test-time projection's hooks from the model this process scored with."""
        if self.state.pop("entered", False):
            self.state["context"].__exit__(None, None, None)


def score_pairs(model: str, spec: TemplateSpec, *, label_order: Sequence[str] | None = None, projection=None,
                sentences: Sequence[str] | None = None, shard_pairs: int = SHARD_PAIRS,
                options: RunOptions | None = None):
    """Score every pair of ``spec`` with ``model`` into the score store (resuming; nothing twice); ``options``
    (:class:`~stereoprobe.options.RunOptions`, None: the defaults) say how.

    ``projection`` scores the model with a *test-time* projection (the paper's proj@test, Table 15; see
    :func:`stereoprobe.nli.contextual.test_time_projection`): ``"gender"`` (proj@test), ``"random:<i>"``
    (rand@test control i), ``"layers:all"`` (every layer; ``sentences`` estimate its directions) or a
    (k, d) array of input directions. Such scores are stored apart, under a digest of the directions.
    ``engine="ray"`` spreads the missing shards over ``workers`` Ray workers with identical results
    (:mod:`stereoprobe.engine`). The model is loaded (and its labels checked) as soon as some shard is
    missing, before any scoring. Returns the complete :class:`~stereoprobe.store.StoreRun`.
    """
    from ..engine import fill, worker_device
    from ..models import model_fingerprint

    options = as_options(options)
    engine, smoke = options.engine, options.smoke
    if isinstance(shard_pairs, bool) or not isinstance(shard_pairs, (int, np.integer)) or shard_pairs < 1:
        raise StereoprobeError(f"shard_pairs={shard_pairs!r} is not a positive integer; pass e.g. {SHARD_PAIRS}.")
    dev = worker_device(options.device, engine)
    dtype = options.dtype()
    state: dict = {}
    suffix = ""
    if projection is not None:
        from .contextual import test_time_projection

        # the directions come from the weights in the run's precision (every worker recomputes and compares them)
        state["loaded"] = load(model, "nli", device=dev if engine == "local" else "cpu", smoke=smoke, precision=dtype)
        state["context"], suffix = test_time_projection(state["loaded"], projection, sentences)
    model_fp = state["loaded"].fingerprint if state else model_fingerprint(model, smoke=smoke)
    order = "-".join(label_order) if label_order else "id2label"
    store = options.score_store()
    run = store.run(model_fp, fingerprint(spec), f"nli-{order}-{dtype}{suffix}", {c: np.float32 for c in PROB_COLUMNS})
    if run.is_complete():
        return run
    n = count(spec).pairs
    job = ScoreJob(n_rows=n, shard_size=int(shard_pairs), model=model, spec=spec, batch_tokens=options.batch_tokens,
                   device=dev, precision=dtype, smoke=smoke, label_order=label_order, projection=projection,
                   sentences=sentences, suffix=suffix)
    if engine == "local":
        job.state.update(state)
        job._scorer()  # load the model and check its labels before anything is scored
    label = progress_label(model)
    what = f" · {projection}" if isinstance(projection, str) else (" · projected" if projection is not None else "")
    try:
        return fill(run, job, engine=engine, workers=options.workers, progress=options.show_progress,
                    desc=f"{label}{what} · Bias-NLI {spec.probe} ({n:,} pairs)")
    finally:
        job.close()


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


def load_probabilities(model: str, spec: TemplateSpec, *, options: RunOptions | None = None,
                       **study) -> pd.DataFrame:
    """Per-pair probabilities of ``model`` on ``spec`` (scoring whatever the store lacks): the input of
    :mod:`stereoprobe.nli.measures` — ``index, premise_word, hypothesis_word, tid, verb, object, entail,
    neutral, contradiction``. ``options`` and ``study`` (e.g. ``projection="gender"``) go to :func:`score_pairs`."""
    return run_frame(score_pairs(model, spec, options=options, **study), spec, PROB_COLUMNS)


def run_frame(run, spec: TemplateSpec, columns: Sequence[str]) -> pd.DataFrame:
    """:func:`pairs_frame` with the stored ``columns`` of a complete run of ``spec``'s pairs, checked pair by pair."""
    from ..errors import StoreError

    raw = run.read()
    meta = pairs_frame(spec)
    if not np.array_equal(raw["pass_id"].to_numpy(dtype=np.int64), meta["index"].to_numpy()):
        raise StoreError(f"The stored scores in {run.path} do not match the pairs of {spec.probe}; "
                         "delete that folder to recompute them.")
    for c in columns:
        meta[c] = raw[c].to_numpy()
    return meta
