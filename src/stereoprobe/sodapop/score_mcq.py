"""Scoring SODAPOP's MCQs with any multiple-choice model, one forward pass per distinct choice (``utils.py``).

A multiple-choice head (``AutoModelForMultipleChoice``) encodes each choice on its own — the pair
``(context + question, answer)`` — and maps its pooled encoding to one logit; the softmax across the three
choices only normalizes. A choice's logit therefore does not depend on the other two choices, and the
distractors of one (name, context) recur in many MCQs (the correct answer in every one). So every
distinct (name, context, choice) is scored once, into the score store (:mod:`stereoprobe.store`, resumable),
and every MCQ's prediction is derived from the stored logits: identical to scoring MCQs whole (a test
checks it), with ``3 × MCQs`` encodings reduced to ``distinct choices`` (:func:`saving`).

Encoding (compat): first segment ``context + question`` with **no separator** (the authors' code:
"…afterwards.How would you describe Amanda?"), second segment the answer; ``join=" "`` is the clean
alternative (it matters for BPE tokenizers, not for BERT's). The authors padded to 128 tokens; here
batches are padded to their longest member, which changes nothing under the attention mask.

Prediction: ``argmax`` over slots A, B, C, first slot on ties (numpy). An MCQ is a *success* for the
distractor in the predicted slot when the prediction is not the label; per (name, context) the authors'
sets (``load_from_dir`` in ``process_distractor_results.py``) are ``all`` = distractor strings in the two
wrong slots and ``wrong`` = strings picked in a failed MCQ.

Post-hoc debiased variants (INLP, SentenceDebias: :mod:`stereoprobe.sodapop.debias`) act on the encoder's
last hidden states before the pooler. The pooler of BERT-like models reads only the first token, so
projecting that token's state is the same as projecting every token; all variants are therefore scored
from **one** encoder pass per choice (one stored column per variant).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ..engine import ModelJob
from ..errors import MetricsError, StereoprobeError
from ..options import RunOptions, as_options
from .contexts import LETTERS
from .distractors import GenerationConfig, Unit, mcqs_of, run_precision

#: Choices per score-store shard.
SHARD_CHOICES = 4096


@dataclass(frozen=True)
class Variant:
    """A post-hoc projection of the encoder's last hidden states: ``P h`` (INLP) or ``h − (h·b)b/(b·b)`` (SentenceDebias)."""

    name: str
    kind: str  # "matrix" | "direction"
    array: np.ndarray = field(repr=False)

    def __post_init__(self):
        if self.kind not in ("matrix", "direction"):
            raise StereoprobeError(f"variant {self.name!r}: kind {self.kind!r} is unknown; use matrix or direction.")
        if not self.name.replace("_", "").replace("-", "").isalnum():
            raise StereoprobeError(f"variant name {self.name!r} must be letters, digits, '-' or '_'.")

    def digest(self) -> str:
        a = np.ascontiguousarray(self.array, dtype=np.float64)
        return hashlib.sha256(self.kind.encode() + a.tobytes()).hexdigest()[:12]

    def apply(self, h):
        import torch

        a = torch.as_tensor(self.array, dtype=h.dtype, device=h.device)
        if self.kind == "matrix":
            return h @ a.T
        return h - (h @ a)[..., None] * a / (a @ a)


def _fast_parts(model):
    """(base, pooler, head) when the logit is ``classifier(dropout(pooler(last_hidden)))`` (BERT, RoBERTa, …)."""
    base = getattr(model, "base_model", None)
    pooler = getattr(base, "pooler", None)
    classifier = getattr(model, "classifier", None)
    if base is None or pooler is None or classifier is None or type(model).__name__ not in (
            "BertForMultipleChoice", "RobertaForMultipleChoice", "XLMRobertaForMultipleChoice",
            "CamembertForMultipleChoice", "ElectraForMultipleChoice", "MegatronBertForMultipleChoice"):
        return None
    return base, pooler, classifier  # the dropout between them is the identity in evaluation


class ChoiceScorer:
    """Logits of single choices ``(first, answer)`` with one loaded multiple-choice model and its variants."""

    def __init__(self, loaded, variants: Sequence[Variant] = (), batch_tokens: int | None = None, precision: str = "fp32"):
        if "MultipleChoice" not in type(loaded.model).__name__:
            raise StereoprobeError(f"{loaded.name!r} is a {type(loaded.model).__name__}, not a multiple-choice model; "
                                   "pass an AutoModelForMultipleChoice checkpoint (e.g. zoo:minilm-mcq).")
        self.loaded, self.variants = loaded, list(variants)
        from ..batching import batch_tokens_for

        self.batch_tokens, self.precision = batch_tokens_for(loaded.model, batch_tokens), precision
        self.fast = _fast_parts(loaded.model)
        from ..readout import Readout

        self._readout = Readout(loaded.model)
        if self.variants and self.fast is None:
            raise StereoprobeError(f"{type(loaded.model).__name__} has no BERT-style pooler + classifier, so the "
                                   "debiased variants cannot be scored from one pass; score them one at a time with "
                                   "stereoprobe.sodapop.debias.debiased(model, ...) around a plain scoring run.")
        self.passes = 0

    @property
    def columns(self) -> list[str]:
        return ["logit"] + [f"logit_{v.name}" for v in self.variants]

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """(n, 1 + variants) float32 logits of the choices ``(first segment, answer)``."""
        import torch

        from ..batching import inference_context, padded_inputs, token_budget_batches
        from ..readout import fp32_call

        tok, model = self.loaded.tokenizer, self.loaded.model
        enc = tok([a for a, _ in pairs], [b for _, b in pairs], add_special_tokens=True)
        ids = enc["input_ids"]
        types = enc.get("token_type_ids")
        lengths = np.array([len(e) for e in ids])
        out = np.zeros((len(pairs), len(self.columns)), dtype=np.float32)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        batches = list(token_budget_batches(lengths, self.batch_tokens, bucket=True))
        results = []  # on the device until every batch is queued (no host sync per batch)
        with inference_context(model.device, self.precision):
            for batch in batches:
                x = padded_inputs(ids, batch, pad, model.device, types=types)
                if self.fast is None:  # any multiple-choice model: one choice per "question"
                    x = {k: v[:, None, :] for k, v in x.items()}
                    results.append(self._readout.head(x, self._readout.body(x)).logits[:, :1].float())
                    continue
                base, pooler, classifier = self.fast  # pooler and classifier in fp32 (stereoprobe.readout)
                h = base(**x).last_hidden_state[:, :1]
                heads = [h] + [v.apply(h) for v in self.variants]
                results.append(torch.cat([fp32_call(classifier, fp32_call(pooler, g))[:, :1].float() for g in heads], 1))
        if batches:
            out[np.concatenate(batches)] = torch.cat(results).cpu().numpy()
        self.passes += len(pairs)
        return out


def first_segment(item_context: str, question: str, join: str = "") -> str:
    """``context + join + question`` (compat: no separator)."""
    return f"{item_context}{join}{question}"


def unit_choices(unit: Unit, mcqs: pd.DataFrame) -> list[str]:
    return sorted(set(mcqs[[f"choice{c}" for c in LETTERS]].to_numpy().ravel().tolist()))


def _unit_pairs(unit: Unit, config: GenerationConfig, join: str) -> list[tuple[str, str]]:
    """(first segment, choice) for the distinct choices of one unit, sorted."""
    from .contexts import substitute

    item = substitute(unit.context, unit.name)
    first = first_segment(item["context"], item["question"], join)
    return [(first, choice) for choice in unit_choices(unit, mcqs_of(unit, config))]


def choice_stream(units: Sequence[Unit], config: GenerationConfig, join: str = "") -> Iterator[tuple[int, tuple[str, str]]]:
    """(pass id, (first segment, choice)) for every distinct choice of every unit, units in order, choices sorted."""
    k = 0
    for u in units:
        for pair in _unit_pairs(u, config, join):
            yield k, pair
            k += 1


def dataset_fingerprint(units: Sequence[Unit], config: GenerationConfig, join: str) -> str:
    """Hash of the exact choice stream (so any change of names, contexts, generation or cap is a new run)."""
    h = hashlib.sha256(json.dumps({"join": join, "v": 1}).encode())
    for _, (first, choice) in choice_stream(units, config, join):
        h.update(first.encode())
        h.update(b"\x1f")
        h.update(choice.encode())
        h.update(b"\x1e")
    return h.hexdigest()[:16]


@dataclass(kw_only=True)
class ScoreJob(ModelJob):
    """Shard ``i`` of the distinct-choice stream scored by ``model`` with its variants: what a worker (local or
    Ray, :mod:`stereoprobe.engine`) computes on its own. ``ends[k]`` is the stream position after unit ``k``."""

    units: Sequence[Unit]
    config: GenerationConfig
    ends: np.ndarray
    variants: Sequence[Variant] = ()
    join: str = ""

    def score_shard(self, i: int) -> dict[str, np.ndarray]:
        if "scorer" not in self.state:
            loaded = self.state.get("loaded") or self.load_model("mcq")
            self.state["scorer"] = ChoiceScorer(loaded, self.variants, self.batch_tokens, self.precision)
        scorer = self.state["scorer"]
        start, stop = self.span(i)
        ids, pairs = [], []
        for k in range(int(np.searchsorted(self.ends, start, side="right")), len(self.units)):
            base = int(self.ends[k - 1]) if k else 0
            for j, pair in enumerate(_unit_pairs(self.units[k], self.config, self.join)):
                if start <= base + j < stop:
                    ids.append(base + j)
                    pairs.append(pair)
            if self.ends[k] >= stop:
                break
        out = scorer.score(pairs)
        return {"pass_id": np.array(ids, dtype=np.int64), **{c: out[:, k] for k, c in enumerate(scorer.columns)}}

    def model_fingerprint(self) -> str | None:
        scorer = self.state.get("scorer")
        return scorer.loaded.fingerprint if scorer is not None else None


def score_choices(mcq_model: str, units: Sequence[Unit], config: GenerationConfig, *, variants: Sequence[Variant] = (),
                  join: str = "", options: RunOptions | None = None) -> pd.DataFrame:
    """Logits of every distinct (name, context, choice), scoring only what the store lacks.

    ``options`` (:class:`~stereoprobe.options.RunOptions`, None: the defaults) say how, at
    :func:`~stereoprobe.sodapop.distractors.run_precision`; ``engine="ray"`` spreads the missing shards over
    ``workers`` Ray workers with identical results (:mod:`stereoprobe.engine`). Returns a frame ``unit, name,
    context, choice, logit[, logit_<variant>…]`` in stream order.
    """
    from ..engine import fill, worker_device
    from ..models import model_fingerprint

    if join not in ("", " "):
        raise StereoprobeError(f"join must be '' (compat) or ' ' (clean), got {join!r}.")
    options = as_options(options)
    engine, smoke, precision = options.engine, options.smoke, run_precision(options)
    dev = worker_device(options.device, engine)
    model_fp = model_fingerprint(mcq_model, smoke=smoke)
    columns = ["logit"] + [f"logit_{v.name}" for v in variants]
    mode = "mcq-" + ("nosep" if join == "" else "space") + "-" + precision
    if variants:
        mode += "-" + hashlib.sha256("|".join(f"{v.name}:{v.digest()}" for v in variants).encode()).hexdigest()[:12]
    run = options.score_store().run(model_fp, dataset_fingerprint(units, config, join), mode,
                                    {c: np.float32 for c in columns})
    per_unit = [len(unit_choices(u, mcqs_of(u, config))) for u in units]
    ends = np.cumsum(per_unit, dtype=np.int64) if per_unit else np.zeros(0, dtype=np.int64)
    n = int(ends[-1]) if len(ends) else 0
    job = ScoreJob(n_rows=n, shard_size=SHARD_CHOICES, model=mcq_model, units=list(units), config=config, ends=ends,
                   variants=tuple(variants), join=join, batch_tokens=options.batch_tokens, device=dev,
                   precision=options.dtype(auto="fp32"), smoke=smoke)
    fill(run, job, engine=engine, workers=options.workers, progress=options.show_progress,
         desc=f"{mcq_model} · {n:,} distinct choices")
    logits = run.read()
    meta_rows = [(k, u.name, u.context.index, c) for k, u in enumerate(units)
                 for c in unit_choices(u, mcqs_of(u, config))]
    frame = pd.DataFrame(meta_rows, columns=["unit", "name", "context", "choice"])
    if len(frame) != len(logits):
        from ..errors import StoreError

        raise StoreError(f"The stored logits in {run.path} ({len(logits)}) do not match the {len(frame)} choices; "
                         "delete that folder to recompute them.")
    for c in columns:
        frame[c] = logits[c].to_numpy()
    return frame


def decided(scores: np.ndarray) -> np.ndarray:
    """Each row's answer: the slot with the highest score, or -1 where no single slot has it (a tie, or no finite
    score) — a question a served model left without one answer (:mod:`stereoprobe.sodapop.prompted`).

    >>> decided(np.array([[0.2, 0.7, 0.1], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [-np.inf, -np.inf, -np.inf]])).tolist()
    [1, -1, -1, -1]
    """
    top = scores.max(axis=1, keepdims=True) if len(scores) else np.zeros((0, 1))
    single = (scores == top).sum(axis=1) == 1
    return np.where(single & np.isfinite(top[:, 0]), scores.argmax(axis=1) if len(scores) else 0, -1)


def outcomes(units: Sequence[Unit], config: GenerationConfig, logits: pd.DataFrame,
             column: str = "logit") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The authors' per-(name, context) sets (their ``load_from_dir``) and each unit's accuracy.

    Returns ``(outcomes, summary)``: outcomes has one row per distinct distractor of a unit — ``name,
    context, distractor, wrong`` (picked in at least one failed MCQ) — and summary one row per unit
    with ``mcqs, accuracy``. ``logits`` has a score per distinct choice of a unit (the model's answer to a MCQ is
    the choice of its three with the highest score), or, with an ``mcq`` column, a score per slot of every MCQ
    (a served model's letter rungs, :func:`stereoprobe.sodapop.prompted.letter_frame`): there a MCQ without one
    answer (:func:`decided`) is neither right nor wrong, the accuracy is over the MCQs answered and the summary adds
    ``answered``, their share.
    """
    frames, summary = [], []
    per_question = "mcq" in logits.columns
    starts = np.flatnonzero(np.r_[True, np.diff(logits["unit"].to_numpy()) != 0])
    bounds = dict(zip(logits["unit"].to_numpy()[starts], zip(starts, np.r_[starts[1:], len(logits)])))
    for k, u in enumerate(units):
        a, b = bounds.get(k, (0, 0))
        rows = logits.iloc[a:b]
        mcqs = mcqs_of(u, config)
        choices = mcqs[[f"choice{c}" for c in LETTERS]].to_numpy()
        if per_question:
            if len(rows) != 3 * len(mcqs):
                raise MetricsError(f"The letter scores of {u.name} in context {u.context.index} have {len(rows)} "
                                   f"rows for {len(mcqs)} MCQs; score the units again.")
            pred = decided(rows[column].to_numpy(np.float64).reshape(-1, 3))
        else:
            lookup = dict(zip(rows["choice"], rows[column].to_numpy()))
            arr = np.vectorize(lookup.__getitem__, otypes=[np.float32])(choices) if len(mcqs) else np.zeros((0, 3), np.float32)
            pred = arr.argmax(axis=1)
        label = int(mcqs["label"].iloc[0]) if len(mcqs) else 0
        wrong_slots = [i for i in range(3) if i != label]
        distractors = np.unique(choices[:, wrong_slots].ravel())
        answered = pred >= 0
        failed = answered & (pred != label)
        picked = set(choices[np.flatnonzero(failed), pred[failed]].tolist())
        frames.append(pd.DataFrame({"name": u.name, "context": u.context.index, "distractor": distractors,
                                    "wrong": [d in picked for d in distractors]}))
        row = {"name": u.name, "context": u.context.index, "mcqs": len(mcqs),
               "accuracy": float((pred[answered] == label).mean()) if answered.any() else float("nan")}
        if per_question:
            row["answered"] = float(answered.mean()) if len(mcqs) else float("nan")
        summary.append(row)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["name", "context", "distractor", "wrong"])
    return out, pd.DataFrame(summary)


def saving(units: Sequence[Unit], config: GenerationConfig) -> dict[str, int | float]:
    """Encodings of whole-MCQ scoring (3 per MCQ) vs distinct choices scored here."""
    mcqs = distinct = 0
    for u in units:
        m = mcqs_of(u, config)
        mcqs += len(m)
        distinct += len(unit_choices(u, m))
    return {"mcqs": mcqs, "encodings_whole": 3 * mcqs, "encodings_distinct": distinct,
            "ratio": (3 * mcqs / distinct) if distinct else float("nan")}


def score_whole(loaded, mcqs: pd.DataFrame, first: str) -> np.ndarray:
    """The reference: every MCQ scored whole, 3 choices per forward pass as the authors do → (n, 3) logits."""
    import torch

    tok, model = loaded.tokenizer, loaded.model
    out = []
    with torch.inference_mode():
        for _, row in mcqs.iterrows():
            pair = ([first] * 3, [row[f"choice{c}"] for c in LETTERS])
            width = max(128, max(map(len, tok(*pair)["input_ids"])))  # the authors pad to 128
            enc = tok(*pair, padding="max_length", max_length=width, return_tensors="pt")
            out.append(model(**{k: v[None].to(model.device) for k, v in enc.items()}).logits[0].float().cpu().numpy())
    return np.array(out, dtype=np.float32).reshape(-1, 3)
