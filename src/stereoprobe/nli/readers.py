"""How each kind of model answers Bias-NLI: one reader per kind, behind one small protocol.

Bias-NLI asks every model the same thing (:class:`Pairs`): for each premise/hypothesis pair of a probe's templates,
the probabilities of entailment, neutral and contradiction (Dev et al. 2020, §3). A *reader* turns that into the
probe's frame (one row per pair: :func:`stereoprobe.nli.scoring.load_probabilities`'s columns, the input of
:mod:`stereoprobe.nli.measures`), through the score store:

* ``nli`` — a three-way classifier, its labels found by name (:mod:`stereoprobe.nli.scoring`);
* ``causal`` and ``served`` — a causal or chat LM, local or behind a server, asked zero-shot through NLI prompt
  templates, one report row per template on the rung of the ladder its backend reads it on
  (:mod:`stereoprobe.backends`, :mod:`stereoprobe.nli.prompted`; a local model's exact rows through the score
  store, :mod:`stereoprobe.nli.score_causal`).

:func:`register_reader` adds a reader for a new kind of model (:func:`stereoprobe.modelref.register_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

import pandas as pd

from ..modelref import ModelRef, Readers, RowKey
from ..options import RunOptions
from ..prompting import Prompting
from .templates import TemplateSpec

__all__ = ["Pairs", "Reader", "READERS", "register_reader", "reader_for", "ClassifierReader", "PromptedReader",
           "prompted"]


@dataclass(frozen=True)
class Pairs(Prompting):
    """What Bias-NLI asks of every model of a report, beside each probe's pairs: ``label_orders`` (model name → the
    classes of LABEL_0..LABEL_2, for classifiers with generic label names); ``templates``, how causal and served LMs
    are prompted (one row per template), and the rest of how they are asked — chat, rung, samples, temperature — as
    every prompted probe asks it (:class:`~stereoprobe.prompting.Prompting`)."""

    label_orders: Mapping[str, tuple | None] = field(default_factory=dict)
    templates: tuple = ()


class Reader(Protocol):
    """How one kind of model answers :class:`Pairs`."""

    def rows(self, ref: ModelRef, ask: Pairs, options: RunOptions) -> list[RowKey]:
        """The report rows the model gives."""

    def score(self, ref: ModelRef, ask: Pairs, row: RowKey, spec: TemplateSpec, options: RunOptions):
        """Fill the score store for ``row`` on ``spec``'s pairs; returns the complete store run."""

    def frame(self, ref: ModelRef, ask: Pairs, row: RowKey, spec: TemplateSpec,
              options: RunOptions) -> pd.DataFrame:
        """The per-pair probabilities of ``row`` on ``spec`` (scoring what the store lacks)."""


class ClassifierReader:
    """A three-way NLI classifier (:func:`~stereoprobe.nli.scoring.score_pairs`)."""

    def rows(self, ref: ModelRef, ask: Pairs, options: RunOptions) -> list[RowKey]:
        return [RowKey(ref.label)]

    def score(self, ref, ask, row, spec, options):
        from .scoring import score_pairs

        return score_pairs(ref, spec, label_order=ask.label_orders.get(ref.name), options=options)

    def frame(self, ref, ask, row, spec, options):
        from .scoring import load_probabilities

        return load_probabilities(ref, spec, label_order=ask.label_orders.get(ref.name), options=options)


class PromptedReader:
    """A causal or chat LM, local or behind a server, zero-shot through every NLI template asked: one row
    ``(model, "nli", template)`` each on the rung its backend chooses (:mod:`stereoprobe.backends`,
    :mod:`stereoprobe.nli.prompted`), with the mass of the label words."""

    prompted = True  # read through the report's prompt templates

    def rows(self, ref: ModelRef, ask: Pairs, options: RunOptions) -> list[RowKey]:
        from .prompted import rows

        return rows(ref, ask, options)

    def score(self, ref, ask, row, spec, options):
        """A local model's exact row: the complete store run; any other row is read into its frame."""
        from ..backends import backend_for
        from .prompted import template_of

        if not row.rung and backend_for(ref, options).stores_exact:
            from .score_causal import score_causal_pairs

            return score_causal_pairs(ref, spec, template_of(ask, row), chat=ask.chat, options=options)
        return self.frame(ref, ask, row, spec, options)

    def frame(self, ref, ask, row, spec, options):
        from .prompted import frame

        return frame(ref, ask, row, spec, options)


#: The reader of every kind of model Bias-NLI reads (:func:`register_reader` adds one).
READERS = Readers("Bias-NLI", "stereoprobe.nli.register_reader", {
    "nli": ClassifierReader(),
}, prompted=PromptedReader())
#: Read models of a kind (a :class:`~stereoprobe.modelref.ModelKind`'s name) with a reader.
register_reader = READERS.register
#: The reader of a ref's kind.
reader_for = READERS.of


#: Whether a ref is read through the report's prompt templates (a causal or served model).
prompted = READERS.prompted


def frames(refs: Sequence[ModelRef], ask: Pairs, specs: Mapping[str, TemplateSpec],
           options: RunOptions) -> dict[tuple[RowKey, str], pd.DataFrame]:
    """(row, probe) → the per-pair probabilities, probe by probe, in the models' order."""
    out = {}
    for probe, spec in specs.items():
        for ref in refs:
            reader = reader_for(ref)
            for row in reader.rows(ref, ask, options):
                out[(row, probe)] = reader.frame(ref, ask, row, spec, options)
    return out
