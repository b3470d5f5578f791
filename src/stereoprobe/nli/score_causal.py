"""Bias-NLI zero-shot with a causal (decoder-only) or chat LM: label words as continuations.

Dev et al. (2020) score premise/hypothesis pairs with an NLI classifier. A causal LM has no classifier head; it
is shown the pair through a prompt template of task ``nli`` (:mod:`stereoprobe.prompts`: the shipped
``true-false-neither`` is lm-evaluation-harness's ANLI/MNLI prompt, ``yes-maybe-no`` the GPT-3 style) and each of
the three label words (entailment, neutral, contradiction: "True", "Neither", "False") is scored as the
continuation of the prompt. P(entail), P(neutral), P(contradict) are the three probabilities renormalised over
the three words, so NN, FN, T:τ and every other measure of :mod:`stereoprobe.nli.measures` follow unchanged.
The label words are a choice, and an overridable one (``words=``); the store also keeps ``label_mass``, the
probability the model put on the three words together before renormalising (a model that never answers with
a label word gives renormalised noise: check it). The pair's prompt is shared by its three words
(:class:`stereoprobe.causal.CausalScorer`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..causal import PromptJob, prepare_run
from ..errors import StereoprobeError
from ..modelref import progress_label
from ..options import RunOptions, as_options
from ..prompts import PromptTemplate
from .measures import PROB_COLUMNS
from .templates import TemplateSpec, count, fingerprint, iter_pairs

SHARD_PAIRS = 20_000
#: Columns of a causal NLI run: the renormalised probabilities and the mass of the three label words.
CAUSAL_COLUMNS = (*PROB_COLUMNS, "label_mass")


def with_words(template: PromptTemplate, words: Sequence[str] | None) -> PromptTemplate:
    """``template`` with other label words (entailment, neutral, contradiction), checked; None keeps its own."""
    if not isinstance(template, PromptTemplate) or template.task != "nli":
        raise StereoprobeError(f"template {template!r} is not an NLI prompt template; pass one of "
                               "stereoprobe.prompts.templates('nli').")
    if words is None:
        return template
    if isinstance(words, str) or len(words) != 3:
        raise StereoprobeError(f"words={words!r} must be three label words, for entailment, neutral and "
                               "contradiction, e.g. ('Yes', 'Maybe', 'No').")
    return dataclasses.replace(template, words=tuple(words))


def pair_requests(template: PromptTemplate, tokenizer, chat: bool, premise: str,
                  hypothesis: str) -> list[tuple[str, str]]:
    """The three requests of one pair: its prompt and each label word (entailment, neutral, contradiction)."""
    prompt = template.prompt(tokenizer, chat=chat, premise=premise, hypothesis=hypothesis)
    return [(prompt, template.continuation(prompt, w)) for w in template.words]


def renormalised(logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, 3) log-probabilities of the label words → the (n, 3) probabilities over the three and their total mass.

    >>> p, mass = renormalised(np.log(np.array([[0.2, 0.1, 0.1]])))
    >>> np.round(p, 3).tolist(), np.round(mass, 3).tolist()
    ([[0.5, 0.25, 0.25]], [0.4])
    """
    logp = np.asarray(logp, np.float64)
    top = logp.max(axis=1, keepdims=True)
    w = np.exp(logp - top)
    total = w.sum(axis=1, keepdims=True)
    return w / total, (np.exp(top) * total)[:, 0]


@dataclass(kw_only=True)
class CausalNLIJob(PromptJob):
    """Shard ``i`` of ``spec``'s pairs scored zero-shot by a causal LM through one template (local or Ray worker)."""

    spec: TemplateSpec

    def score_shard(self, i: int) -> dict[str, np.ndarray]:
        scorer = self.scorer()
        chunk = list(iter_pairs(self.spec, *self.span(i)))
        reqs = [r for p in chunk for r in pair_requests(self.template, scorer.tokenizer, self.chat, p.premise,
                                                         p.hypothesis)]
        probs, mass = renormalised(scorer.logprobs(reqs).logprob.reshape(-1, 3))
        return {"pass_id": np.fromiter((p.index for p in chunk), dtype=np.int64, count=len(chunk)),
                **{c: probs[:, k].astype(np.float32) for k, c in enumerate(PROB_COLUMNS)},
                "label_mass": mass.astype(np.float32)}


def score_causal_pairs(model: str, spec: TemplateSpec, template: PromptTemplate, *, chat: bool | None = None,
                       words: Sequence[str] | None = None, options: RunOptions | None = None,
                       shard_pairs: int = SHARD_PAIRS):
    """Score every pair of ``spec`` zero-shot with the causal LM ``model`` through ``template`` (task ``nli``) into
    the score store (resuming; nothing twice). ``words`` overrides the template's label words; ``chat``: the chat
    template, a plain prompt, or (None) whichever the tokenizer has. The label words are checked on the tokenizer
    (spelled without its unknown token, cut cleanly after the prompt) before any weight loads. Returns the complete
    :class:`~stereoprobe.store.StoreRun` (``entail, neutral, contradiction, label_mass``)."""
    from ..causal import continuation_tokens
    from ..engine import fill

    run_options = as_options(options)
    template = with_words(template, words)
    if isinstance(shard_pairs, bool) or not isinstance(shard_pairs, (int, np.integer)) or shard_pairs < 1:
        raise StereoprobeError(f"shard_pairs={shard_pairs!r} is not a positive integer; pass e.g. {SHARD_PAIRS}.")
    smoke, engine = run_options.smoke, run_options.engine
    tok, model_fp, use_chat, dev, dtype = prepare_run(model, chat, run_options)
    first = next(iter_pairs(spec, 0, 1), None)
    if first is not None:
        for prompt, cont in pair_requests(template, tok, use_chat, first.premise, first.hypothesis):
            continuation_tokens(tok, prompt, cont)
    kind = f"causal-nli-{template.name}-{template.digest}-{'chat' if use_chat else 'plain'}-{dtype}"
    store = run_options.score_store()
    run = store.run(model_fp, fingerprint(spec), kind, {c: np.float32 for c in CAUSAL_COLUMNS})
    if run.is_complete():
        return run
    n = count(spec).pairs
    job = CausalNLIJob(n_rows=n, shard_size=int(shard_pairs), model=model, spec=spec, template=template,
                       chat=use_chat, batch_tokens=run_options.batch_tokens, device=dev, precision=dtype, smoke=smoke)
    label = progress_label(model)
    return fill(run, job, engine=engine, workers=run_options.workers, progress=run_options.show_progress,
                desc=f"{label} · nli:{template.name} · Bias-NLI {spec.probe} ({n:,} pairs)")


def load_causal_probabilities(model: str, spec: TemplateSpec, template: PromptTemplate, **kwargs):
    """Per-pair probabilities of a causal LM (scoring what the store lacks) in the frame of
    :func:`stereoprobe.nli.scoring.load_probabilities` (the input of :mod:`stereoprobe.nli.measures`), plus
    ``label_mass``. ``kwargs`` go to :func:`score_causal_pairs`."""
    from .scoring import run_frame

    return run_frame(score_causal_pairs(model, spec, template, **kwargs), spec, CAUSAL_COLUMNS)


__all__ = ["CAUSAL_COLUMNS", "with_words", "pair_requests", "renormalised", "score_causal_pairs",
           "load_causal_probabilities"]
