"""UnQover on a model behind a server or an API, on each rung of the ladder (:mod:`stereoprobe.served.ladder`).

S(x | τ) of the two subjects of every pass, read three ways, each report row saying which:

* **exact** — the subjects' log-probabilities after the template's plain prompt, exactly as a local causal LM
  gives them (:mod:`stereoprobe.unqover.score_causal`: the same requests, ``answer`` and ``choice`` templates),
  normalised over the two subjects;
* **next-token** — a ``choice`` template whose options carry letters: the letters' probabilities as the first token
  the model generates, normalised over the two (the mass the two letters take is reported);
* **generated** — the answer generated (greedy) and parsed (:func:`stereoprobe.served.parse.parse_answer`): S of a
  subject is the share of the pass's answers that name it (0 or 1 with one greedy answer); an abstention and an
  unparsed answer give neither subject anything and are counted apart, never folded into a subject or into each
  other.

δ, ε, avg S, γ, η and μ then follow as for every model (:mod:`stereoprobe.unqover.metrics`), the paragraph's order
and the negation still cancelled by the metric (Li et al. 2020, Eq. 5–8).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import StereoprobeError
from ..modelref import ModelRef, RowKey
from ..options import RunOptions
from .generate import count, example_keys, iter_examples
from .score_causal import causal_spec, normalised, pass_requests

__all__ = ["fits", "rows", "frame", "answers"]


def fits(template) -> tuple[str, ...]:
    """The rungs a template can be read on: a choice template whose options show their letters all three, any
    other the exact and generated rungs."""
    if template.task == "unqover-choice" and "{label}" in template.option:
        return ("exact", "next-token", "generated")
    return ("exact", "generated")


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


def _chat_passes(template, examples, rung: str):
    """Per pass (plain question, then negated, per example): the chat messages and the options' labels shown."""
    from ..served.prompting import NAME_INSTRUCTION, letters_instruction, messages

    lettered = template.task == "unqover-choice" and "{label}" in template.option
    if template.task == "unqover-choice":
        instruction = letters_instruction(template.labels) if lettered else "Answer with one of the options only."
    else:
        instruction = NAME_INSTRUCTION
    out = []
    for ex in examples:
        for question in (ex.question, ex.negated_question):
            fields = dict(paragraph=ex.context, question=question)
            if template.task == "unqover-choice":
                fields["options"] = [ex.ans1, ex.ans2]
            out.append(messages(template.body(**fields), instruction, template.system))
    return out, (list(template.labels) if lettered else None)


def answers(ref: ModelRef, ask, row: RowKey, options: RunOptions) -> pd.DataFrame:
    """The generated answers of a ``generated`` row, one per pass and sample: ``pass_id``, ``sample``, the raw
    ``text`` as the server returned it, and its parse (``kind``: option, unknown or unparsed; ``choice``: 0 for the
    slot-1 subject, 1 for slot 2; ``rule``)."""
    from ..served import session
    from ..served.ladder import generated_answers
    from ..served.parse import parse_answer

    if row.rung != "generated":
        raise StereoprobeError(f"{row.label} is read on the {row.rung} rung; only generated rows have answers.")
    s = session(ref, options)
    template = _template(ask, row)
    examples, _ = _examples(causal_spec(ask.spec))
    chats, labels = _chat_passes(template, examples, "generated")
    texts = generated_answers(s.client, s.journal, chats, samples=s.samples, temperature=s.temperature,
                              **s.ask(f"{row.label} · {ask.spec.dataset}"))
    records = []
    for k, ex in enumerate(examples):
        for polarity in (0, 1):
            for j, text in enumerate(texts[2 * k + polarity]):
                parsed = parse_answer(text, [ex.ans1, ex.ans2], labels)
                records.append({"pass_id": 2 * ex.index + polarity, "sample": j, "text": text, "kind": parsed.kind,
                                "choice": -1 if parsed.choice is None else parsed.choice, "rule": parsed.rule})
    return pd.DataFrame.from_records(records)


def rows(ref: ModelRef, ask) -> list[RowKey]:
    """One row per template asked (:class:`~stereoprobe.unqover.readers.Passes`), on the rung the ladder chooses
    for it: ``ask.rung`` when forced, else the best the endpoint gives that the template fits."""
    from ..served import capabilities
    from ..served.ladder import choose

    caps = capabilities(ref)
    return [RowKey(ref.label, t.task.removeprefix("unqover-"), t.name, choose(caps, fits(t), ask.rung, ref.name))
            for t in ask.templates]


def frame(ref: ModelRef, ask, row: RowKey, options: RunOptions) -> pd.DataFrame:
    """The per-example scores of ``row`` in the columns of :func:`stereoprobe.unqover.score_qa.load_scores`
    (asking the server what the store lacks); ``attrs["served"]``: the rung, the passes, the label mass and the
    share of bounded labels (next-token), of abstentions and of unparsed answers (generated), and the model ids and
    system fingerprints the server reported."""
    from ..served import session
    from ..served.ladder import exact_logprobs, label_probabilities

    if ask.chat and row.rung == "exact":
        raise StereoprobeError(f"{ref.name!r} is read on the exact rung through plain prompts (a completion "
                               "request does not apply the chat template); leave chat out.")
    s = session(ref, options)
    template = _template(ask, row)
    examples, meta = _examples(causal_spec(ask.spec))
    desc = f"{row.label} · {ask.spec.dataset}"
    facts: dict = {"rung": row.rung, "passes": 2 * len(examples)}
    before = s.counts()
    if row.rung == "exact":
        lp = exact_logprobs(s.client, s.journal, pass_requests(template, None, False, examples), **s.ask(desc))
        s1, s2 = normalised(lp[0::2], lp[1::2])
    elif row.rung == "next-token":
        chats, labels = _chat_passes(template, examples, row.rung)
        probs, mass, bounded = label_probabilities(s.client, s.journal, chats, labels, s.caps.top_k,
                                                   **s.ask(desc))
        with np.errstate(divide="ignore"):
            s1, s2 = normalised(np.log(probs[:, 0]), np.log(probs[:, 1]))
        facts.update(label_mass=float(mass.mean()), bounded=float(bounded.mean()))
    else:
        parsed = answers(ref, ask, row, options)
        n = parsed.groupby("pass_id")["sample"].count().to_numpy()
        picks = parsed.assign(c0=parsed["choice"] == 0, c1=parsed["choice"] == 1).groupby("pass_id")[["c0", "c1"]]
        shares = picks.sum().to_numpy() / n[:, None]
        s1, s2 = shares[:, 0], shares[:, 1]
        facts.update(unknown=float((parsed["kind"] == "unknown").mean()),
                     unparsed=float((parsed["kind"] == "unparsed").mean()))
    meta["s1_pos"], meta["s1_neg"] = s1[0::2], s1[1::2]
    meta["s2_pos"], meta["s2_neg"] = s2[0::2], s2[1::2]
    meta.attrs["served"] = s.finish(desc, facts, before)
    return meta
