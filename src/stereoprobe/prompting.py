"""How a causal or chat LM is asked: the part of what a probe studies that every prompted probe shares.

Each probe states what it asks of every model of a report in one frozen object — UnQover's
:class:`~stereoprobe.unqover.readers.Passes`, Bias-NLI's :class:`~stereoprobe.nli.readers.Pairs`, SODAPOP's
:class:`~stereoprobe.sodapop.readers.Choices` — and for the models read through prompts (local causal and chat LMs,
served models: :mod:`stereoprobe.backends`) those objects are a :class:`Prompting`: whether the chat template is
used, the rung of the ladder, a reasoning model's thinking switch and budget, and on the generated rung how many
answers at which temperature. Each of these changes the numbers, so they belong to what is asked (as a scikit-learn
estimator's parameters do), not to :class:`~stereoprobe.options.RunOptions`, which says only where and how the same
numbers are computed. They are checked here, once, whichever probe asks.

>>> Prompting(rung="generated", samples=5).sampling()
(5, 1.0)
>>> Prompting().sampling(), Prompting(thinking=False).thinking_tag
((1, 0.0), 'off')
>>> Prompting(rung="best")
Traceback (most recent call last):
stereoprobe.errors.StereoprobeError: rung='best' is not a rung of the ladder; choose one of exact, next-token, generated, or leave it out (the best each model gives).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import StereoprobeError

__all__ = ["Prompting", "RUNGS"]

#: The rungs of the ladder, best first (:mod:`stereoprobe.backends`).
RUNGS = ("exact", "next-token", "generated")


@dataclass(frozen=True, kw_only=True)
class Prompting:
    """How a prompted model is asked (module doc).

    * ``chat`` — read through the model's chat template (None: where it has one; False: plain prompts).
    * ``rung`` — ``exact``, ``next-token`` or ``generated`` (None: the best each model gives).
    * ``thinking`` / ``think_budget`` — a reasoning model's thinking switched on or off through its chat template
      (None: the template's default), and the tokens its reasoning may take.
    * ``samples`` / ``temperature`` — the generated rung: answers per question (1: greedy) and their temperature
      (None: 0 for one sample, 1.0 for several); a pass's score is then the share of its answers naming each option.
    """

    chat: bool | None = None
    rung: str | None = None
    thinking: bool | None = None
    think_budget: int | None = None
    samples: int = 1
    temperature: float | None = None

    def __post_init__(self):
        if self.chat is not None and not isinstance(self.chat, bool):
            raise StereoprobeError(f"chat={self.chat!r} must be True, False or None (whichever the tokenizer has).")
        if self.rung is not None and self.rung not in RUNGS:
            raise StereoprobeError(f"rung={self.rung!r} is not a rung of the ladder; choose one of {', '.join(RUNGS)}, "
                                   "or leave it out (the best each model gives).")
        if self.thinking is not None and not isinstance(self.thinking, bool):
            raise StereoprobeError(f"thinking={self.thinking!r} must be True, False, 'both' or None (the chat "
                                   "template's default).")
        if self.think_budget is not None:
            if isinstance(self.think_budget, bool) or not isinstance(self.think_budget, int) or self.think_budget < 1:
                raise StereoprobeError(f"think_budget={self.think_budget!r} must be a positive number of tokens, "
                                       "e.g. 512.")
            if not self.thinking:
                raise StereoprobeError(f"think_budget={self.think_budget} is the reasoning's budget, and thinking is "
                                       "not on; pass thinking=True (--thinking on) or leave the budget out.")
        if self.thinking is not None and self.chat is False:
            raise StereoprobeError("thinking is switched in the chat template, and chat=False reads plain prompts; "
                                   "leave chat out (or True) to ask thinking.")
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise StereoprobeError(f"samples={self.samples!r} is not a positive integer; pass e.g. 5 (answers per "
                                   "question on the generated rung), or 1 for the greedy answer.")
        if self.temperature is not None and (isinstance(self.temperature, bool)
                                             or not isinstance(self.temperature, (int, float))
                                             or not 0 <= self.temperature <= 2):
            raise StereoprobeError(f"temperature={self.temperature!r} is not a number from 0 to 2; pass e.g. 1.0, or "
                                   "None (greedy for one sample, 1.0 for several).")

    #: The fields a report refuses for models that are not read through prompts (they would be silently ignored).
    PROMPT_FIELDS = ("chat", "rung", "thinking", "think_budget", "samples", "temperature")

    def prompt_settings(self) -> list[str]:
        """The prompt settings asked for away from their defaults (names of :attr:`PROMPT_FIELDS`)."""
        defaults = Prompting()
        return [f for f in self.PROMPT_FIELDS if getattr(self, f) != getattr(defaults, f)]

    def sampling(self) -> tuple[int, float]:
        """(answers per question, temperature) of the generated rung, the default temperature filled in."""
        if self.temperature is not None:
            return self.samples, float(self.temperature)
        return self.samples, 0.0 if self.samples == 1 else 1.0

    def generation(self) -> dict:
        """The keyword arguments of :meth:`stereoprobe.backends.Backend.generate` this object asks for."""
        samples, temperature = self.sampling()
        return {"samples": samples, "temperature": temperature, "thinking": self.thinking,
                "think_budget": self.think_budget}

    @property
    def thinking_tag(self) -> str:
        """How a row names the thinking setting: ``on``, ``off``, or empty (not asked)."""
        return "" if self.thinking is None else "on" if self.thinking else "off"
