"""UnQover on a model behind a server or an API, on each rung of the ladder (:mod:`stereoprobe.served.ladder`).

S(x | τ) of the two subjects of every pass, read three ways, each report row saying which:

* **exact** — the subjects' log-probabilities after the template's prompt, exactly as a local causal LM gives
  them: through the model's chat template (the server's or the one of ``--tokenizer``, checked at first use,
  :mod:`stereoprobe.served.chat_exact`) where it has one and chat is not switched off, as a local chat model is
  read, else the plain prompt (:mod:`stereoprobe.unqover.score_causal`: the same requests, ``answer`` and ``choice`` templates),
  normalised over the two subjects (and the unknown option, for a template that lists one);
* **next-token** — a ``choice`` template whose options carry letters: the letters' probabilities as the first token
  the model generates, normalised over the letters (the mass they take is reported);
* **generated** — the answer generated (greedy) and parsed (:func:`stereoprobe.served.parse.parse_answer`): the
  share of the pass's answers that name each subject (0 or 1 with one greedy answer), that abstain (the unknown
  option, or an abstention in words, which a model may give with or without the option) and that are unparsed, each
  counted apart, never folded into a subject or into each other.

The shares of the unknown option and of unparsed answers are the frame's ``u`` and ``x`` columns, read two ways by
:mod:`stereoprobe.unqover.abstention` (over the answered passes, or an abstention as no preference).

δ, ε, avg S, γ, η and μ then follow as for every model (:mod:`stereoprobe.unqover.metrics`), the paragraph's order
and the negation still cancelled by the metric (Li et al. 2020, Eq. 5–8).
"""

from __future__ import annotations

import warnings

import pandas as pd

from ..errors import StereoprobeError
from ..modelref import ModelRef, RowKey
from ..options import RunOptions
from .generate import count, example_keys, iter_examples
from .generated import answer_shares, chat_passes, parse_replies
from .score_causal import causal_spec, columns, normalised, pass_requests, per_example, shares

#: The next-token rung warns when the labels take less than this share of the first generated token's probability
#: on average: its shares then rest on a remainder the model hardly meant (a reasoning model opening its think
#: block, a preamble).
LABEL_MASS_WARN = 0.1

__all__ = ["fits", "rows", "frame", "answers"]


def fits(template, thinking: bool | None = None) -> tuple[str, ...]:
    """The rungs a template can be read on: a choice template whose options show their letters all three, any
    other the exact and generated rungs; with thinking on only the generated rung (the answer comes after the
    reasoning, which neither a plain prompt nor the first generated token has), with thinking off only the chat
    rungs (a plain prompt, the exact rung's, has no chat template to switch)."""
    if thinking:
        return ("generated",)
    lettered = template.task == "unqover-choice" and "{label}" in template.option
    rungs = ("exact", "next-token", "generated") if lettered else ("exact", "generated")
    return rungs[1:] if thinking is False else rungs


def _template(ask, row: RowKey):
    for t in ask.templates:
        if t.task == f"unqover-{row.scorer}" and t.name == row.template:
            return t
    raise StereoprobeError(f"No {row.scorer} template named {row.template!r} was asked for.")


def _examples(spec):
    examples = list(iter_examples(spec, 0, count(spec).ordered_examples))
    meta = example_keys(spec)
    if [ex.index for ex in examples] != meta["index"].tolist():  # pragma: no cover - generate.py guarantees it
        raise StereoprobeError(f"The examples of {spec.dataset} do not match their keys; report this as a bug.")
    return examples, meta


def answers(ref: ModelRef, ask, row: RowKey, options: RunOptions) -> pd.DataFrame:
    """The generated answers of a ``generated`` row, one per pass and sample: ``pass_id``, ``sample``, the raw
    ``text`` as the server returned it, the ``reasoning`` (the server's reasoning field, or the think block of the
    text; empty without), and its parse (``kind``: option, unknown — the unknown option or an
    abstention in words — or unparsed; ``choice``: 0 for the slot-1 subject, 1 for slot 2, else -1; ``rule``)."""
    from ..served import session
    from ..served.ladder import generated_replies

    if row.rung != "generated":
        raise StereoprobeError(f"{row.label} is read on the {row.rung} rung; only generated rows have answers.")
    s = session(ref, options)
    template = _template(ask, row)
    examples, _ = _examples(causal_spec(ask.spec))
    chats, labels = chat_passes(template, examples)
    replies = generated_replies(s.client, s.journal, chats, samples=s.samples, temperature=s.temperature,
                                thinking=ask.thinking, think_budget=ask.think_budget,
                                **s.ask(f"{row.label} · {ask.spec.dataset}"))
    return parse_replies(template, examples, labels, replies, row.label if ask.thinking else None)


def rows(ref: ModelRef, ask) -> list[RowKey]:
    """One row per template asked (:class:`~stereoprobe.unqover.readers.Passes`), on the rung the ladder chooses
    for it: ``ask.rung`` when forced, else the best the endpoint gives that the template fits."""
    from ..served import capabilities
    from ..served.ladder import choose

    caps = capabilities(ref)
    return [RowKey(ref.label, t.task.removeprefix("unqover-"), t.name,
                   choose(caps, fits(t, ask.thinking), ask.rung, ref.name), ask.thinking_tag) for t in ask.templates]


def frame(ref: ModelRef, ask, row: RowKey, options: RunOptions) -> pd.DataFrame:
    """The per-example scores of ``row`` in the columns of :func:`stereoprobe.unqover.score_qa.load_scores`
    (asking the server what the store lacks); ``attrs["served"]``: the rung, the passes, the label mass and the
    share of bounded labels (next-token), of abstentions and of unparsed answers (generated), and the model ids and
    system fingerprints the server reported."""
    from ..served import session
    from ..served.chat_exact import exact_reading
    from ..served.ladder import label_probabilities

    template = _template(ask, row)
    if row.rung not in fits(template, ask.thinking):
        why = ("thinking on is read on the generated rung only (the answer comes after the reasoning)" if ask.thinking
               else "thinking off is read on the chat rungs (a plain prompt has no thinking to switch)"
               if ask.thinking is False and row.rung == "exact"
               else f"its template is read on the {', '.join(fits(template))} rungs")
        raise StereoprobeError(f"{row.label}: {why}; pass one of those rungs, or leave rung out.")
    s = session(ref, options)
    examples, meta = _examples(causal_spec(ask.spec))
    desc = f"{row.label} · {ask.spec.dataset}"
    facts: dict = {"rung": row.rung, "passes": 2 * len(examples)}
    before = s.counts()
    u = x = None
    if row.rung == "exact":
        _, lp, facts["chat"] = exact_reading(s, lambda tok, chat: pass_requests(template, tok, chat, examples),
                                             ask.chat, desc)
        lp = lp.reshape(-1, len(columns(template)))
        if template.unknown is None:
            s1, s2 = normalised(lp[:, 0], lp[:, 1])
        else:
            s1, s2, u = shares(lp).T
    elif row.rung == "next-token":
        chats, labels = chat_passes(template, examples)
        probs, mass, bounded = label_probabilities(s.client, s.journal, chats, labels, s.caps.top_k,
                                                   thinking=ask.thinking, **s.ask(desc))
        p = probs / probs.sum(axis=1, keepdims=True)
        s1, s2 = p[:, 0], p[:, 1]
        u = p[:, 2] if template.unknown is not None else None
        facts.update(label_mass=float(mass.mean()), bounded=float(bounded.mean()))
        if mass.mean() < LABEL_MASS_WARN:
            warnings.warn(f"{row.label}: the labels took {mass.mean():.1%} of the first generated token's "
                          "probability on average, so the model mostly begins its reply with something else (a "
                          "reasoning model's think block, a preamble) and these shares rest on that remainder; if it "
                          "thinks by default pass thinking off (--thinking off), or read it on the generated rung.",
                          stacklevel=2)
    else:
        s1, s2, u, x = answer_shares(answers(ref, ask, row, options))
        facts.update(unknown=float(u.mean()), unparsed=float(x.mean()))
    meta = per_example(meta, s1, s2, u, x)
    meta.attrs["served"] = s.finish(desc, facts, before)
    return meta
