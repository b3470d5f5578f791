"""What a served chat model is sent on the next-token and generated rungs.

A chat API applies the model's chat template itself and cannot be made to start the assistant's turn with a
template's answer cue (``Answer:``), so the chat rungs send the template's user text with one instruction line
after it, saying what form the answer takes (HELM's "Answer with only a single letter." is the model for the
letters). The exact rung sends the template's plain prompt, answer cue included, as a local causal LM reads it.
"""

from __future__ import annotations

from typing import Sequence


def _or(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def letters_instruction(labels: Sequence[str]) -> str:
    """The instruction of a question whose options carry labels.

    >>> letters_instruction(["A", "B"])
    'Answer with the letter of one option only: A or B.'
    """
    return f"Answer with the letter of one option only: {_or(labels)}."


def words_instruction(words: Sequence[str]) -> str:
    """The instruction of a question answered with one of some words (Bias-NLI's label words).

    >>> words_instruction(["True", "Neither", "False"])
    'Answer with one word: True, Neither or False.'
    """
    return f"Answer with one word: {_or(words)}."


#: The instruction of a question answered with a name from the text (UnQover's answer templates).
NAME_INSTRUCTION = "Answer with the name only."


def messages(body: str, instruction: str, system: str | None = None) -> list[dict]:
    """The chat messages: the template's system text if it has one, then the user turn (body, a blank line, the
    instruction)."""
    out = [{"role": "system", "content": system}] if system else []
    return out + [{"role": "user", "content": f"{body}\n\n{instruction}"}]


def lettered(options: Sequence[str], labels: Sequence[str]) -> str:
    """Options as lines ``A. …``.

    >>> print(lettered(["to rest", "to eat"], ["A", "B"]))
    A. to rest
    B. to eat
    """
    return "\n".join(f"{label}. {option}" for label, option in zip(labels, options))
