"""The generated reading of UnQover, shared by a served model's generated rung
and a local causal LM's (:mod:`stereoprobe.unqover.prompted`, through either backend of
:mod:`stereoprobe.backends`): the chat messages of every pass, the replies parsed into a subject, an abstention or unparsed
(:func:`stereoprobe.served.parse.parse_answer`; the unknown option's label or text is an abstention), and the
shares per pass that the score frame holds (:mod:`stereoprobe.unqover.abstention` reads them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["chat_passes", "parse_replies", "answer_shares"]


def chat_passes(template, examples):
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


def parse_replies(template, examples, labels, replies, thinking_row: str | None = None) -> pd.DataFrame:
    """The replies of a generated reading (per pass, plain question then negated, per example: (content, reasoning)
    per sample), one row per pass and sample, parsed (:func:`stereoprobe.unqover.prompted.answers`' columns).
    ``thinking_row``: the row's label where thinking was asked, to warn when no reply carries reasoning."""
    from ..served.parse import parse_answer, reasoning_text

    records = []
    for k, ex in enumerate(examples):
        for polarity in (0, 1):
            for j, (text, reasoning) in enumerate(replies[2 * k + polarity]):
                parsed = parse_answer(text, template.options([ex.ans1, ex.ans2]), labels)
                kind, choice = parsed.kind, -1 if parsed.choice is None else parsed.choice
                if choice == 2:  # the unknown option
                    kind, choice = "unknown", -1
                records.append({"pass_id": 2 * ex.index + polarity, "sample": j, "text": text,
                                "reasoning": reasoning or reasoning_text(text), "kind": kind, "choice": choice,
                                "rule": parsed.rule})
    out = pd.DataFrame.from_records(records)
    if thinking_row and not out["reasoning"].str.strip().any():
        import warnings

        from ..errors import StereoprobeWarning

        warnings.warn(f"{thinking_row}: thinking was asked but no answer carries reasoning (no reasoning field, no "
                      "think block): the server may ignore chat_template_kwargs, or the model not think; the row "
                      "measures the model as it answered.", StereoprobeWarning, stacklevel=3)
    return out


def answer_shares(parsed: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pass (in pass order): the shares of a pass's answers naming slot 1's and slot 2's subject, abstaining and
    unparsed (s1, s2, u, x: they sum to 1)."""
    n = parsed.groupby("pass_id")["sample"].count().to_numpy()
    picks = parsed.assign(c0=parsed["choice"] == 0, c1=parsed["choice"] == 1, u=parsed["kind"] == "unknown",
                          x=parsed["kind"] == "unparsed").groupby("pass_id")[["c0", "c1", "u", "x"]]
    s1, s2, u, x = (picks.sum().to_numpy() / n[:, None]).T
    return s1, s2, u, x
