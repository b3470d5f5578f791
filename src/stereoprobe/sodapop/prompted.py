"""SODAPOP with a causal or chat LM, local or behind a server, as the multiple-choice model, on each rung of the
ladder its backend gives (:mod:`stereoprobe.backends`).

* **exact** (:mod:`stereoprobe.served.ladder`) — each distinct (name, context, choice) gets the log-probability of
  the choice after the ``mcq`` template's prompt (through the chat template where the model has one,
  :mod:`stereoprobe.served.chat_exact`), as a local causal LM gives it
  (:mod:`stereoprobe.sodapop.score_causal`, which reads a local model's through the score store): ``acc`` (summed)
  and ``acc_norm`` (per character, the whitespace moved from the prompt counted as lm-evaluation-harness counts
  it); the analysis follows unchanged.
* **next-token** and **generated** — the letter rungs: one chat request per multiple-choice question, the
  template's user text followed by the three options lettered A–C in the item's slot order (HELM's layout,
  :func:`stereoprobe.served.prompting.lettered`) and the instruction to answer with a letter. A question has one
  score per slot rather than one per distinct choice (the letters' probabilities depend on the other two options
  and their order), so the frame has a row per (question, slot) (:func:`letter_frame`) and
  :func:`stereoprobe.sodapop.score_mcq.outcomes` reads it per question. Next-token: the letters' probabilities as
  the first generated token (the label mass and the share of bounded letters reported; a local model's over its
  whole vocabulary, never bounded); the model's answer is the
  letter with the highest probability. Generated: the answer generated (greedy, or ``samples`` at a temperature),
  parsed (:func:`stereoprobe.served.parse.parse_answer`); the model's answer is the option most of its samples
  name. A question with no single answer (every letter outside the returned top-k, an abstention, an unparsed
  answer, samples tied) is neither right nor wrong: it is counted apart (the report's ``answered`` share, the
  served table's ``unknown`` and ``unparsed``), never folded into a wrong answer or a distractor's success.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import StereoprobeError
from ..modelref import ModelRef
from ..options import RunOptions, as_options
from ..prompting import Prompting
from .contexts import LETTERS, substitute
from .distractors import GenerationConfig, Unit, mcqs_of
from .score_causal import unit_requests
from .score_mcq import unit_choices

__all__ = ["FITS", "rung_of", "check", "score_served_choices", "question_messages", "answers", "letter_frame",
           "provenance_key"]

#: The rungs SODAPOP reads a served model on, best first.
FITS = ("exact", "next-token", "generated")


def rung_of(ref: ModelRef, rung: str | None, options: RunOptions) -> str:
    """The rung ``ref`` is read on: ``rung`` when forced (refused when its backend lacks it), else the best it
    gives (:meth:`stereoprobe.backends.Backend.choose`)."""
    from ..backends import backend_for

    return backend_for(ref, options).choose(FITS, rung)


def check(ref: ModelRef, rung: str | None, chat: bool | None, options: RunOptions) -> str:
    """Refuse, before any distractor is written, an endpoint, a forced rung or a chat setting SODAPOP cannot read;
    the rung it will be read on."""
    return rung_of(ref, rung, options)


def score_served_choices(ref: ModelRef, units: Sequence[Unit], config: GenerationConfig, template, *,
                         chat: bool | None = None, options: RunOptions | None = None) -> pd.DataFrame:
    """Log-likelihood of every distinct (name, context, choice) under the model ``ref`` through ``template`` (task
    ``mcq``; through the chat template as a local chat model is read, unless ``chat`` is False or a server cannot
    give it: :func:`stereoprobe.served.chat_exact.uses_chat`), asked of its backend
    (:meth:`stereoprobe.backends.Backend.loglikelihood`): the frame of
    :func:`stereoprobe.sodapop.score_causal.score_causal_choices` (``logit``, ``logit_norm``); a served model's
    :class:`~stereoprobe.served.Provenance` kept in the run's state under :func:`provenance_key`."""
    from ..backends import backend_for
    from ..causal import split_whitespace

    backend = backend_for(ref, as_options(options))
    before = backend.counts()
    desc = f"{ref.label} · mcq:{template.name}"
    reqs, lp, use_chat = backend.loglikelihood(
        lambda tok, chat: [r for u in units for r in unit_requests(u, config, template, tok, chat)], chat, desc)
    chars = np.array([len(split_whitespace(p, c)[1]) for p, c in reqs], dtype=np.float64)
    frame = pd.DataFrame([(k, u.name, u.context.index, c) for k, u in enumerate(units)
                          for c in unit_choices(u, mcqs_of(u, config))], columns=["unit", "name", "context", "choice"])
    frame["logit"], frame["logit_norm"] = lp, lp / np.maximum(chars, 1)
    backend.record(provenance_key(ref), desc, {"rung": "exact", "passes": len(reqs), "chat": use_chat}, before)
    return frame


def provenance_key(ref: ModelRef) -> tuple:
    """The key of a SODAPOP reading's :class:`~stereoprobe.served.Provenance` in the run's state (one multiple-choice
    model per report)."""
    return ("sodapop", ref.label)


def question_messages(unit: Unit, config: GenerationConfig, template) -> list[list[dict]]:
    """The chat messages of each multiple-choice question of ``unit`` (in ``mcq`` order): the template's user text,
    then the options lettered in slot order, then the letters instruction.

    The shipped ``siqa`` template asks ``Q: {context} {question}``, and the options follow it line by line
    (``A. …``, ``B. …``, ``C. …``).
    """
    from ..served.prompting import letters_instruction, lettered, messages

    item = substitute(unit.context, unit.name)
    body = template.body(context=item["context"], question=item["question"])
    mcqs = mcqs_of(unit, config)
    options = mcqs[[f"choice{c}" for c in LETTERS]].to_numpy()
    return [messages(f"{body}\n{lettered(list(row), LETTERS)}", letters_instruction(LETTERS), template.system)
            for row in options]


def _questions(units: Sequence[Unit], config: GenerationConfig) -> pd.DataFrame:
    """One row per question of every unit: ``unit, name, context, mcq`` and the three options ``A, B, C``."""
    frames = []
    for k, u in enumerate(units):
        mcqs = mcqs_of(u, config)
        frames.append(pd.DataFrame({"unit": k, "name": u.name, "context": u.context.index, "mcq": mcqs["mcq"],
                                    **{c: mcqs[f"choice{c}"].to_numpy() for c in LETTERS}}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["unit", "name", "context", "mcq", *LETTERS])


def answers(ref: ModelRef, units: Sequence[Unit], config: GenerationConfig, template, *,
            prompting: Prompting = Prompting(), options: RunOptions | None = None) -> pd.DataFrame:
    """The generated answers, one per question and sample: ``unit, name, context, mcq, sample``, the raw ``text``
    as the model returned it and its parse (``kind``: option, unknown or unparsed; ``choice``: the slot 0–2, -1
    for none; ``rule``); ``prompting``: how many samples at which temperature."""
    from ..backends import backend_for

    return _answers(backend_for(ref, as_options(options)), ref, units, config, template, prompting)


def _answers(backend, ref, units, config, template, prompting: Prompting) -> pd.DataFrame:
    from ..served.parse import parse_answer

    questions = _questions(units, config)
    chats = [m for u in units for m in question_messages(u, config, template)]
    replies = backend.generate(chats, **prompting.generation(), desc=f"{ref.label} · mcq:{template.name} [generated]")
    records = []
    for q, shown in zip(questions.itertuples(index=False), replies):
        for j, (text, _) in enumerate(shown):
            parsed = parse_answer(text, [getattr(q, c) for c in LETTERS], LETTERS)
            records.append({"unit": q.unit, "name": q.name, "context": q.context, "mcq": q.mcq, "sample": j,
                            "text": text, "kind": parsed.kind, "choice": -1 if parsed.choice is None else parsed.choice,
                            "rule": parsed.rule})
    return pd.DataFrame.from_records(records, columns=["unit", "name", "context", "mcq", "sample", "text", "kind",
                                                       "choice", "rule"])


def letter_frame(ref: ModelRef, units: Sequence[Unit], config: GenerationConfig, template, rung: str, *,
                 prompting: Prompting = Prompting(), options: RunOptions | None = None) -> pd.DataFrame:
    """Every question's three slots scored on a letter rung (module doc): one row per (question, slot) with
    ``unit, name, context, mcq, slot, choice`` and ``logit`` — the letter's log-probability (next-token) or the
    share of the samples naming the slot (generated); a served model's :class:`~stereoprobe.served.Provenance` (the
    rung, the questions, the label mass and share of bounded letters, or the shares of abstentions and unparsed
    answers, and what it cost) kept in the run's state under :func:`provenance_key`. ``prompting``: how the model is asked (on the generated rung, its samples and temperature)."""
    from ..backends import backend_for

    if rung not in ("next-token", "generated"):
        raise StereoprobeError(f"{rung!r} is not a letter rung; choose next-token or generated.")
    run = as_options(options)
    backend = backend_for(ref, run)
    before = backend.counts()
    questions = _questions(units, config)
    desc = f"{ref.label} · mcq:{template.name} [{rung}]"
    facts: dict = {"rung": rung, "passes": len(questions)}
    if rung == "next-token":
        chats = [m for u in units for m in question_messages(u, config, template)]
        probs, mass, bounded = backend.label_probabilities(chats, LETTERS, desc=desc)
        with np.errstate(divide="ignore"):
            scores = np.log(probs)
        facts.update(label_mass=float(mass.mean()) if len(mass) else float("nan"),
                     bounded=float(bounded.mean()) if len(bounded) else float("nan"))
    else:
        raw = _answers(backend, ref, units, config, template, prompting)
        picks = np.zeros((len(questions), len(LETTERS)))
        keys = pd.MultiIndex.from_frame(questions[["unit", "mcq"]])
        rows = keys.get_indexer(pd.MultiIndex.from_frame(raw[["unit", "mcq"]]))
        chosen = raw["choice"].to_numpy() >= 0
        np.add.at(picks, (rows[chosen], raw["choice"].to_numpy()[chosen]), 1.0)
        scores = picks / prompting.samples
        facts.update(unknown=float((raw["kind"] == "unknown").mean()) if len(raw) else float("nan"),
                     unparsed=float((raw["kind"] == "unparsed").mean()) if len(raw) else float("nan"))
    slots = len(LETTERS)
    frame = questions.loc[questions.index.repeat(slots), ["unit", "name", "context", "mcq"]].reset_index(drop=True)
    frame["slot"] = np.tile(np.arange(slots), len(questions))
    frame["choice"] = questions[list(LETTERS)].to_numpy().ravel() if len(questions) else []
    frame["logit"] = scores.ravel()
    backend.record(provenance_key(ref), desc, facts, before)
    return frame
