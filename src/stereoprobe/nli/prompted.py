"""Bias-NLI on a causal or chat LM, local or behind a server, on each rung of the ladder its backend gives
(:mod:`stereoprobe.backends`, :mod:`stereoprobe.served.ladder`).

Every pair's entailment, neutral and contradiction probabilities, read three ways, each report row saying which:

* **exact** — the log-probabilities of the template's three label words after its prompt, renormalised over
  the three, with their mass (a local model's through the score store, :mod:`stereoprobe.nli.score_causal`; a
  served model's the same requests);
* **next-token** — the label words' probabilities as the first token the model generates, renormalised (a word a
  server spells with more than one token is read by its first, which must differ between the three; a local model
  needs each word to be one token of its vocabulary);
* **generated** — the label word generated (greedy) and parsed (:func:`stereoprobe.served.parse.parse_answer`; the
  words themselves are the options, so "Neither" is the neutral word, not an abstention): the pair's probabilities
  are the shares of its answers. A pair whose answers are all unparsed has no label: it is left out of the
  measures (NN, FN, T:τ are means over the pairs that have one) and counted in the report's ``served`` table —
  never folded into a label.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import StereoprobeError
from ..modelref import ModelRef, RowKey
from ..options import RunOptions
from .measures import PROB_COLUMNS
from .score_causal import pair_requests, renormalised
from .scoring import pairs_frame
from .templates import TemplateSpec, count, iter_pairs

__all__ = ["rows", "frame", "answers", "read_answers", "template_of"]

#: The rungs an NLI template can be read on (its label words are the options).
FITS = ("exact", "next-token", "generated")


def rows(ref: ModelRef, ask, options: RunOptions) -> list[RowKey]:
    """One row per NLI template asked, on the rung its backend chooses (``ask.rung`` when forced); a local model's
    exact rows keep their 0.9 labels (no rung named)."""
    from ..backends import backend_for

    backend = backend_for(ref, options)
    out = []
    for t in ask.templates:
        rung = backend.choose(FITS, ask.rung)
        out.append(RowKey(ref.label, "nli", t.name, "" if backend.stores_exact and rung == "exact" else rung))
    return out


def template_of(ask, row: RowKey):
    for t in ask.templates:
        if t.name == row.template:
            return t
    raise StereoprobeError(f"No NLI template named {row.template!r} was asked for.")


def _chats(template, pairs) -> list[list[dict]]:
    from ..served.prompting import messages, words_instruction

    instruction = words_instruction(template.words)
    return [messages(template.body(premise=p.premise, hypothesis=p.hypothesis), instruction, template.system)
            for p in pairs]


def answers(ref: ModelRef, ask, row: RowKey, spec: TemplateSpec, options: RunOptions) -> pd.DataFrame:
    """The generated answers of a ``generated`` row: ``pass_id`` (the pair), ``sample``, the raw ``text`` and its
    parse (``kind``: option or unparsed; ``choice``: 0 entailment, 1 neutral, 2 contradiction; ``rule``)."""
    from ..backends import backend_for

    return read_answers(backend_for(ref, options), ask, row, spec)


def read_answers(backend, ask, row: RowKey, spec: TemplateSpec) -> pd.DataFrame:
    """:func:`answers` of ``row`` from ``backend`` (a :class:`stereoprobe.backends.Backend`)."""
    from ..served.parse import parse_answer

    template = template_of(ask, row)
    pairs = list(iter_pairs(spec, 0, count(spec).pairs))
    replies = backend.generate(_chats(template, pairs), **ask.generation(), desc=f"{row.label} · Bias-NLI {spec.probe}")
    records = []
    for p, samples in zip(pairs, replies):
        for j, (text, _) in enumerate(samples):
            parsed = parse_answer(text, list(template.words), None, unknown=False)
            records.append({"pass_id": p.index, "sample": j, "text": text, "kind": parsed.kind,
                            "choice": -1 if parsed.choice is None else parsed.choice, "rule": parsed.rule})
    return pd.DataFrame.from_records(records)


def frame(ref: ModelRef, ask, row: RowKey, spec: TemplateSpec, options: RunOptions) -> pd.DataFrame:
    """The per-pair probabilities of ``row`` in the frame of :func:`stereoprobe.nli.scoring.load_probabilities`,
    plus ``label_mass`` (exact and next-token); a served row's :class:`~stereoprobe.served.Provenance` kept in the
    run's state under ``(row, probe)``, as UnQover's (:func:`stereoprobe.unqover.prompted.frame`)."""
    from ..backends import backend_for

    backend = backend_for(ref, options)
    template = template_of(ask, row)
    rung = row.rung or "exact"
    if rung == "exact" and backend.stores_exact:  # the store-backed scorer (sharded, resumable, Ray-capable)
        from .score_causal import load_causal_probabilities

        return load_causal_probabilities(ref, spec, template, chat=ask.chat, options=options)
    pairs = list(iter_pairs(spec, 0, count(spec).pairs))
    meta = pairs_frame(spec)
    desc = f"{row.label} · Bias-NLI {spec.probe}"
    facts: dict = {"rung": rung, "passes": len(pairs)}
    before = backend.counts()
    keep = np.ones(len(pairs), dtype=bool)
    if rung == "exact":
        _, lp, facts["chat"] = backend.loglikelihood(
            lambda tok, chat: [r for p in pairs for r in pair_requests(template, tok, chat, p.premise,
                                                                        p.hypothesis)], ask.chat, desc)
        probs, mass = renormalised(lp.reshape(-1, 3))
        meta["label_mass"] = mass
        facts["label_mass"] = float(mass.mean())
    elif rung == "next-token":
        raw, mass, bounded = backend.label_probabilities(_chats(template, pairs), list(template.words), desc=desc)
        probs = raw / raw.sum(axis=1, keepdims=True)
        meta["label_mass"] = mass
        facts.update(label_mass=float(mass.mean()), bounded=float(bounded.mean()))
    else:
        parsed = read_answers(backend, ask, row, spec)
        counts = np.zeros((len(pairs), 3))
        position = {p.index: i for i, p in enumerate(pairs)}
        for pid, choice in zip(parsed["pass_id"], parsed["choice"]):
            if choice >= 0:
                counts[position[pid], choice] += 1
        keep = counts.sum(axis=1) > 0
        probs = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
        facts.update(unparsed=float((parsed["kind"] == "unparsed").mean()))
    for k, column in enumerate(PROB_COLUMNS):
        meta[column] = probs[:, k]
    backend.record((row, spec.probe), desc, facts, before)  # a served row: what it cost, who answered
    return meta[keep].reset_index(drop=True)
