"""UnQover on a causal or chat LM, local or behind a server, on each rung of the ladder its backend gives
(:mod:`stereoprobe.backends`, :mod:`stereoprobe.served.ladder`): the one prompted reading of the probe.

S(x | τ) of the two subjects of every pass, read three ways, each report row saying which:

* **exact** — the subjects' log-probabilities after the template's prompt (a local model's through the score
  store, :func:`stereoprobe.unqover.score_causal.load_causal_scores`; a served model's the same requests):
  through the model's chat template (the server's or the one of ``--tokenizer``, checked at first use,
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
from ..prompting import Prompting
from .generate import count, example_keys, iter_examples
from .generated import answer_shares, chat_passes, parse_replies
from .score_causal import causal_spec, columns, normalised, pass_requests, per_example, shares

#: The next-token rung warns when the labels take less than this share of the first generated token's probability
#: on average: its shares then rest on a remainder the model hardly meant (a reasoning model opening its think
#: block, a preamble).
LABEL_MASS_WARN = 0.1

__all__ = ["fits", "rows", "frame", "answers", "read_answers", "template_of", "generated_answers", "generated_frame"]


def fits(template, thinking: bool | None = None, exact_thinks: bool = False) -> tuple[str, ...]:
    """The rungs a template can be read on: a choice template whose options show their letters all three, any
    other the exact and generated rungs; with thinking on only the generated rung (the answer comes after the
    reasoning, which neither a scored prompt nor the first generated token has), with thinking off only the chat
    rungs (a plain prompt, a server's exact rung, has no chat template to switch), and the exact rung too where
    ``exact_thinks`` (a local model: its chat template is applied here, with an empty think block before the cue)."""
    if thinking:
        return ("generated",)
    lettered = template.task == "unqover-choice" and "{label}" in template.option
    rungs = ("exact", "next-token", "generated") if lettered else ("exact", "generated")
    return rungs[1:] if thinking is False and not exact_thinks else rungs


def template_of(ask, row: RowKey):
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
    ``text`` as the model returned it, the ``reasoning`` (a server's reasoning field, or the think block of the
    text; empty without), and its parse (``kind``: option, unknown — the unknown option or an
    abstention in words — or unparsed; ``choice``: 0 for the slot-1 subject, 1 for slot 2, else -1; ``rule``)."""
    from ..backends import backend_for

    if row.rung != "generated":
        raise StereoprobeError(f"{row.label} is read on the {row.rung or 'exact'} rung; only generated rows have "
                               "answers.")
    return read_answers(backend_for(ref, options), ask.spec, template_of(ask, row), ask, label=row.label)


def read_answers(backend, spec, template, prompting: Prompting = Prompting(), *, label: str = "") -> pd.DataFrame:
    """:func:`answers` of ``template``'s passes over ``spec`` from ``backend`` (a
    :class:`stereoprobe.backends.Backend`), asked as ``prompting`` says (thinking, samples, temperature); ``label``
    names the row in the progress bar and the warnings."""
    examples, _ = _examples(causal_spec(spec))
    chats, labels = chat_passes(template, examples)
    replies = backend.generate(chats, **prompting.generation(), desc=f"{label} · {spec.dataset}")
    return parse_replies(template, examples, labels, replies, label if prompting.thinking else None)


def rows(ref: ModelRef, ask, options: RunOptions) -> list[RowKey]:
    """One row per template asked (:class:`~stereoprobe.unqover.readers.Passes`), on the rung its backend chooses
    for it (:meth:`stereoprobe.backends.Backend.choose`): ``ask.rung`` when forced, else the best the backend gives
    that the template fits. A local model's exact rows keep their 0.9 labels (no rung named: the default reading)."""
    from ..backends import backend_for

    backend = backend_for(ref, options)
    out = []
    for t in ask.templates:
        rung = backend.choose(fits(t, ask.thinking, backend.stores_exact), ask.rung)
        out.append(RowKey(ref.label, t.task.removeprefix("unqover-"), t.name,
                          "" if backend.stores_exact and rung == "exact" else rung, ask.thinking_tag))
    return out


def frame(ref: ModelRef, ask, row: RowKey, options: RunOptions) -> pd.DataFrame:
    """The per-example scores of ``row`` in the columns of :func:`stereoprobe.unqover.score_qa.load_scores`
    (asking the backend what its store lacks); a served row's :class:`~stereoprobe.served.Provenance` (the rung,
    the passes, the label mass and the share of bounded labels, of abstentions and of unparsed answers, what it
    cost, who answered) is kept in the run's state under ``row`` (:func:`stereoprobe.served.provenances`)."""
    from ..backends import backend_for

    backend = backend_for(ref, options)
    rung = row.rung or "exact"
    template = template_of(ask, row)
    if rung not in fits(template, ask.thinking, backend.stores_exact):
        why = ("thinking on is read on the generated rung only (the answer comes after the reasoning)" if ask.thinking
               else "thinking off is read on the chat rungs (a plain prompt has no thinking to switch)"
               if ask.thinking is False and rung == "exact"
               else f"its template is read on the {', '.join(fits(template))} rungs")
        raise StereoprobeError(f"{row.label}: {why}; pass one of those rungs, or leave rung out.")
    if rung == "exact" and backend.stores_exact:  # the store-backed scorer (sharded, resumable, Ray-capable)
        from .score_causal import load_causal_scores

        return load_causal_scores(ref, causal_spec(ask.spec), template, chat=ask.chat, options=options,
                                  shard_passes=ask.shard_passes, thinking=ask.thinking)
    examples, meta = _examples(causal_spec(ask.spec))
    desc = f"{row.label} · {ask.spec.dataset}"
    facts: dict = {"rung": rung, "passes": 2 * len(examples)}
    before = backend.counts()
    u = x = None
    if rung == "exact":
        _, lp, facts["chat"] = backend.loglikelihood(
            lambda tok, chat: pass_requests(template, tok, chat, examples), ask.chat, desc)
        lp = lp.reshape(-1, len(columns(template)))
        if template.unknown is None:
            s1, s2 = normalised(lp[:, 0], lp[:, 1])
        else:
            s1, s2, u = shares(lp).T
    elif rung == "next-token":
        chats, labels = chat_passes(template, examples)
        probs, mass, bounded = backend.label_probabilities(chats, labels, thinking=ask.thinking, desc=desc)
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
        s1, s2, u, x = answer_shares(read_answers(backend, ask.spec, template, ask, label=row.label))
        facts.update(unknown=float(u.mean()), unparsed=float(x.mean()))
    backend.record(row, desc, facts, before)  # a served row: what it cost and who answered (the served table)
    return per_example(meta, s1, s2, u, x)


def generated_answers(model, spec, template, *, thinking: bool | None = None, think_budget: int | None = None,
                      options: RunOptions | None = None) -> pd.DataFrame:
    """The generated reading of a local causal LM through one ``template``, its replies: the chat messages a
    server's generated rung sends (:func:`stereoprobe.unqover.generated.chat_passes`, through the model's own chat
    template, ``thinking`` its switch), the reply generated greedily in batches (:class:`stereoprobe.backends.Local`:
    up to ``think_budget`` tokens of reasoning and 64 of answer) and parsed as a served reply is
    (:func:`~stereoprobe.unqover.generated.parse_replies`: a reply cut inside its reasoning is unparsed): one row per
    pass with the reply's ``text``, its ``reasoning`` and its parse. Each reply is kept the moment its batch ends,
    as a served model's answers are (``<store>/generated/<model>.sqlite``), so a second call generates nothing and a
    killed one resumes with what it has."""
    from ..backends import Local
    from ..modelref import progress_label

    row = RowKey(progress_label(model), template.task.removeprefix("unqover-"), template.name, "generated",
                 "" if thinking is None else "on" if thinking else "off")
    return read_answers(Local(model, options), spec, template, Prompting(thinking=thinking, think_budget=think_budget),
                        label=row.label)


def generated_frame(model, spec, template, **kwargs) -> pd.DataFrame:
    """The score frame of a local causal LM's generated reading (:func:`generated_answers`, ``kwargs`` as there): per
    pass the shares of each subject, of abstentions and of unparsed replies (``u``, ``x``)."""
    from .generate import example_keys

    return per_example(example_keys(causal_spec(spec)), *answer_shares(generated_answers(model, spec, template,
                                                                                        **kwargs)))
