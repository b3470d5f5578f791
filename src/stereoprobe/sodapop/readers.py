"""How each kind of model answers SODAPOP's multiple-choice items: one reader per kind, behind one small protocol.

SODAPOP asks the model under test one thing (:class:`Choices`): a score for every distinct (name, context, answer
option) of the generated multiple-choice items, the highest of an item's three being the model's answer (An et al.
2023, §3.2). A *reader* turns the units into the probe's logit frame (``unit, name, context, choice, logit, …``,
in stream order), through the score store, and says which columns are the model's readings, each a report row
(:class:`Reading`):

* ``mcq`` — a multiple-choice encoder: one logit per choice (:mod:`stereoprobe.sodapop.score_mcq`), with its
  debiased variants when asked;
* ``causal`` and ``served`` — a causal or chat LM, local or behind a server, through an ``mcq`` prompt template on
  a rung of the ladder its backend gives (:mod:`stereoprobe.backends`): on the exact rung each choice's
  log-likelihood read two ways, ``acc`` (summed) and ``acc_norm`` (per character, lm-evaluation-harness's), two rows
  (a local model's through the score store, :mod:`stereoprobe.sodapop.score_causal`); on the next-token and
  generated rungs the letter it answers each question with (:mod:`stereoprobe.sodapop.prompted`).

:func:`register_reader` adds a reader for a new kind of model (:func:`stereoprobe.modelref.register_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import pandas as pd

from ..errors import StereoprobeError
from ..modelref import ModelRef, Readers, RowKey
from ..options import RunOptions
from ..prompting import Prompting

__all__ = ["Choices", "Reading", "Reader", "READERS", "register_reader", "reader_for", "EncoderReader",
           "PromptedReader"]


@dataclass(frozen=True)
class Choices(Prompting):
    """What SODAPOP asks of the multiple-choice model: ``variants`` (debiased variants of an encoder), ``join`` (the
    authors' first segment, ``""``, or a space), and for a causal or served LM its ``mcq`` ``template`` and the rest
    of how it is asked — chat, rung, samples, temperature — as every prompted probe asks it
    (:class:`~stereoprobe.prompting.Prompting`; None rung: the best its backend gives)."""

    variants: tuple = ()
    join: str = ""
    template: object = None


class Reading(NamedTuple):
    """One report row of the model: its key, the suffix of its tables (``""``, ``"_norm"``) and the logit column it
    reads (None: ``logit``)."""

    row: RowKey
    suffix: str
    column: str | None


class Reader(Protocol):
    """How one kind of model answers :class:`Choices`."""

    def check(self, ref: ModelRef, ask: Choices, options: RunOptions) -> None:
        """Refuse, before any distractor is written, a model or setting this reader cannot use."""

    def describe(self, ref: ModelRef, ask: Choices) -> str:
        """How the report's title says the model was asked (``" through the siqa prompt"``; may be empty)."""

    def readings(self, ref: ModelRef, ask: Choices, options: RunOptions) -> list[Reading]:
        """The model's report rows."""

    def logits(self, ref: ModelRef, units, config, ask: Choices, options: RunOptions) -> pd.DataFrame:
        """The logit frame of every distinct choice of ``units`` (scoring what the store lacks)."""


class EncoderReader:
    """A multiple-choice encoder (:func:`~stereoprobe.sodapop.score_mcq.score_choices`)."""

    def check(self, ref: ModelRef, ask: Choices, options: RunOptions) -> None:
        from ..models import load

        if ask.template is not None or ask.chat is not None:
            raise StereoprobeError("template and chat settings are for a causal LM, and the multiple-choice model is "
                                   "not one; leave them out (or pass a causal LM).")
        load(ref, "mcq", device="cpu", smoke=ref.smoke)  # a wrong head stops here, before any distractor

    def describe(self, ref: ModelRef, ask: Choices) -> str:
        return ""

    def readings(self, ref: ModelRef, ask: Choices, options: RunOptions) -> list[Reading]:
        return [Reading(RowKey(ref.label), "", None)]

    def logits(self, ref, units, config, ask, options):
        from .score_mcq import score_choices

        return score_choices(ref, units, config, variants=ask.variants, join=ask.join, options=options)


class PromptedReader:
    """A causal or chat LM, local or behind a server, through an ``mcq`` template on the rung its backend chooses or
    the user forces (:mod:`stereoprobe.backends`, :mod:`stereoprobe.sodapop.prompted`): on the exact rung
    ``acc`` and ``acc_norm`` (a local model's through the score store,
    :func:`~stereoprobe.sodapop.score_causal.score_causal_choices`), on a letter rung one ``letter`` row
    (:func:`~stereoprobe.sodapop.prompted.letter_frame`); a served model's rows marked with the rung, a local
    model's exact rows as in 0.9 (no rung named)."""

    prompted = True  # read through a prompt template

    def check(self, ref: ModelRef, ask: Choices, options: RunOptions) -> None:
        from ..backends import backend_for
        from .prompted import check

        if ask.variants or ask.join:
            raise StereoprobeError("Debiased variants and join are for multiple-choice encoders; a causal LM reads "
                                   "the prompt template's layout.")
        template(ask.template)
        check(ref, ask.rung, ask.chat, options)
        if backend_for(ref, options).stores_exact and ref.tokenizer() is not None:
            ref.chat(ask.chat)

    def describe(self, ref: ModelRef, ask: Choices) -> str:
        """How the report's title says the model was asked."""
        return f" through the {template(ask.template).name} prompt"

    def readings(self, ref: ModelRef, ask: Choices, options: RunOptions) -> list[Reading]:
        from ..backends import backend_for
        from .prompted import rung_of

        rung = rung_of(ref, ask.rung, options)
        if rung != "exact":
            return [Reading(RowKey(ref.label, "letter", "", rung), "", None)]
        tag = "" if backend_for(ref, options).stores_exact else "exact"
        return [Reading(RowKey(ref.label, "acc", "", tag), "", None),
                Reading(RowKey(ref.label, "acc_norm", "", tag), "_norm", "norm")]

    def logits(self, ref, units, config, ask, options):
        from ..backends import backend_for
        from .prompted import letter_frame, rung_of, score_served_choices

        rung = rung_of(ref, ask.rung, options)
        if rung != "exact":
            return letter_frame(ref, units, config, template(ask.template), rung, prompting=ask, options=options)
        if backend_for(ref, options).stores_exact:
            from .score_causal import score_causal_choices

            return score_causal_choices(ref, units, config, template(ask.template), chat=ask.chat, options=options)
        return score_served_choices(ref, units, config, template(ask.template), chat=ask.chat, options=options)


def template(asked):
    """The ``mcq`` prompt template asked for (a name or file; default ``siqa``)."""
    from ..prompts import PromptTemplate
    from ..prompts import template as find

    return asked if isinstance(asked, PromptTemplate) else find(asked if asked is not None else "siqa", "mcq")


#: The reader of every kind of model SODAPOP's multiple-choice items are put to (:func:`register_reader` adds one).
READERS = Readers("SODAPOP", "stereoprobe.sodapop.register_reader", {
    "mcq": EncoderReader(),
}, prompted=PromptedReader())
#: Read models of a kind (a :class:`~stereoprobe.modelref.ModelKind`'s name) with a reader.
register_reader = READERS.register
#: The reader of a ref's kind.
reader_for = READERS.of


