"""SODAPOP with a causal (decoder-only) or chat LM as the multiple-choice model.

An (AutoModelForMultipleChoice) encoder gives each choice one logit; a causal LM gives each choice the
log-likelihood of its text as the continuation of the item's context and question, read through a prompt template
of task ``mcq`` (:mod:`stereoprobe.prompts`; the shipped ``siqa`` one is lm-evaluation-harness's Social IQa
prompt, ``"Q: {context} {question}"`` / ``"A:"``). As in lm-evaluation-harness, two predictions come from it:

* ``acc`` — the choice with the largest summed log-probability (stored as ``logit``);
* ``acc_norm`` — the largest log-probability per character of the choice as scored (stored as ``logit_norm``).

A choice's score does not depend on the other two choices, so every distinct (name, context, choice) is scored
once, exactly as for the encoders (:mod:`stereoprobe.sodapop.score_mcq`), here with the context and question
prompt shared by all of a unit's choices (:class:`stereoprobe.causal.CausalScorer` runs it once). Success rates,
RD, p-values and the rest follow unchanged from the argmax over a MCQ's three slots
(:func:`stereoprobe.sodapop.score_mcq.outcomes` with ``column="logit"`` or ``"logit_norm"``). The distractors
are still written by a masked LM: the SODAPOP algorithm (An et al. 2023, Alg. 1) fills masks in the middle of
an answer, which a left-to-right model cannot do without seeing the words that follow.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..causal import PromptJob, prepare_run
from ..errors import StereoprobeError
from ..options import RunOptions, as_options
from ..prompts import PromptTemplate
from .contexts import substitute
from .distractors import GenerationConfig, Unit, mcqs_of
from .score_mcq import unit_choices

#: The two predictions of a causal multiple-choice model: stored column → lm-evaluation-harness's name.
NORMALISATIONS = {"logit": "acc", "logit_norm": "acc_norm"}
#: Choices per score-store shard.
SHARD_CHOICES = 4096


def unit_requests(unit: Unit, config: GenerationConfig, template: PromptTemplate, tokenizer,
                  chat: bool) -> list[tuple[str, str]]:
    """(prompt, continuation) of each distinct choice of one (name, context), choices sorted."""
    item = substitute(unit.context, unit.name)
    prompt = template.prompt(tokenizer, chat=chat, context=item["context"], question=item["question"])
    return [(prompt, template.continuation(prompt, c)) for c in unit_choices(unit, mcqs_of(unit, config))]


def _fingerprint(units: Sequence[Unit], config: GenerationConfig) -> str:
    """Hash of the exact (context, question, choice) stream: any change of names, contexts or generation is a new run."""
    h = hashlib.sha256(json.dumps({"causal": 1}).encode())
    for u in units:
        item = substitute(u.context, u.name)
        h.update(f"{item['context']}\x1f{item['question']}\x1d".encode())
        for c in unit_choices(u, mcqs_of(u, config)):
            h.update(c.encode() + b"\x1e")
    return h.hexdigest()[:16]


@dataclass(kw_only=True)
class CausalChoiceJob(PromptJob):
    """Shard ``i`` of the distinct-choice stream scored by a causal LM through one template (local or Ray worker)."""

    units: Sequence[Unit]
    config: GenerationConfig
    ends: np.ndarray

    def score_shard(self, i: int) -> dict[str, np.ndarray]:
        scorer = self.scorer()
        start, stop = self.span(i)
        ids, reqs = [], []
        for k in range(int(np.searchsorted(self.ends, start, side="right")), len(self.units)):
            base = int(self.ends[k - 1]) if k else 0
            for j, r in enumerate(unit_requests(self.units[k], self.config, self.template, scorer.tokenizer,
                                                self.chat)):
                if start <= base + j < stop:
                    ids.append(base + j)
                    reqs.append(r)
            if self.ends[k] >= stop:
                break
        s = scorer.logprobs(reqs)
        return {"pass_id": np.array(ids, dtype=np.int64), "logit": s.logprob.astype(np.float32),
                "logit_norm": s.per_char.astype(np.float32)}


def score_causal_choices(model: str, units: Sequence[Unit], config: GenerationConfig, template: PromptTemplate, *,
                         chat: bool | None = None, options: RunOptions | None = None) -> pd.DataFrame:
    """Log-likelihood of every distinct (name, context, choice) under the causal LM ``model`` through ``template``
    (task ``mcq``), scoring only what the store lacks. ``chat``: the chat template, a plain prompt, or (None)
    whichever the tokenizer has. Returns ``unit, name, context, choice, logit, logit_norm`` in stream order
    (``logit``: summed log-probability, ``acc``; ``logit_norm``: per character, ``acc_norm``)."""
    from ..causal import continuation_tokens
    from ..engine import fill

    run_options = as_options(options)
    if not isinstance(template, PromptTemplate) or template.task != "mcq":
        raise StereoprobeError(f"template {template!r} is not a multiple-choice prompt template; pass one of "
                               "stereoprobe.prompts.templates('mcq').")
    smoke, engine = run_options.smoke, run_options.engine
    tok, model_fp, use_chat, dev, dtype = prepare_run(model, chat, run_options)
    if units:  # the first unit's choices cut cleanly and spell without the unknown token, before any weight loads
        for prompt, cont in unit_requests(units[0], config, template, tok, use_chat):
            continuation_tokens(tok, prompt, cont)
    kind = f"causal-mcq-{template.name}-{template.digest}-{'chat' if use_chat else 'plain'}-{dtype}"
    store = run_options.score_store()
    run = store.run(model_fp, _fingerprint(units, config), kind, {c: np.float32 for c in NORMALISATIONS})
    per_unit = [len(unit_choices(u, mcqs_of(u, config))) for u in units]
    ends = np.cumsum(per_unit, dtype=np.int64) if per_unit else np.zeros(0, dtype=np.int64)
    n = int(ends[-1]) if len(ends) else 0
    job = CausalChoiceJob(n_rows=n, shard_size=SHARD_CHOICES, model=model, units=list(units), config=config,
                          ends=ends, template=template, chat=use_chat, batch_tokens=run_options.batch_tokens,
                          device=dev, precision=dtype, smoke=smoke)
    fill(run, job, engine=engine, workers=run_options.workers, progress=run_options.show_progress,
         desc=f"{model} · mcq:{template.name} · {n:,} distinct choices")
    scores = run.read()
    frame = pd.DataFrame([(k, u.name, u.context.index, c) for k, u in enumerate(units)
                          for c in unit_choices(u, mcqs_of(u, config))], columns=["unit", "name", "context", "choice"])
    if len(frame) != len(scores):
        from ..errors import StoreError

        raise StoreError(f"The stored scores in {run.path} ({len(scores)}) do not match the {len(frame)} choices; "
                         "delete that folder to recompute them.")
    for c in NORMALISATIONS:
        frame[c] = scores[c].to_numpy()
    return frame


__all__ = ["NORMALISATIONS", "unit_requests", "score_causal_choices"]
