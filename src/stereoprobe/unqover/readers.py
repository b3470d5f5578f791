"""How each kind of model answers UnQover: one reader per kind, behind one small protocol.

UnQover asks every model the same thing (:class:`Passes`): the two questions of every ordered example of a dataset,
and for each the score S of each of the two subjects. A *reader* turns that into the probe's score frame (one row per
ordered example, ``s1_pos, s2_pos, s1_neg, s2_neg``: the input of :mod:`stereoprobe.unqover.metrics`), through the
score store:

* ``qa`` — an extractive-QA model: S from its span probabilities (:mod:`stereoprobe.unqover.score_qa`);
* ``lm``, ``lm-bert``, ``lm-roberta`` — a masked LM: S from its fill at the mask
  (:mod:`stereoprobe.unqover.score_lm`), ``lm`` reading the subject lists of its own tokenizer;
* ``causal`` and ``served`` — a causal or chat LM, local or behind a server: one row per template on the rung of
  the ladder its backend reads it on (:mod:`stereoprobe.backends`, :mod:`stereoprobe.unqover.prompted`): S from
  the log-probability of each subject after the prompt (exact; a local model's through the score store,
  :mod:`stereoprobe.unqover.score_causal`), the letters as the first generated token (next-token), or the answer
  generated and parsed (generated).

A model gives one or more report rows (:class:`~stereoprobe.modelref.RowKey`); the report engine
(:func:`stereoprobe.unqover.reporting.model_report`) asks each model's reader for its rows and their frames and never
looks at the kind itself. :func:`register_reader` adds a reader for a new kind of model
(:func:`stereoprobe.modelref.register_kind`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol, Sequence

import pandas as pd

from ..modelref import ModelRef, Readers, RowKey
from ..options import RunOptions
from ..prompting import Prompting
from .generate import DatasetSpec

__all__ = ["Passes", "Reader", "READERS", "register_reader", "reader_for", "SpanReader", "MaskedLMReader",
           "PromptedReader", "prompted"]


@dataclass(frozen=True)
class Passes(Prompting):
    """What UnQover asks of every model of a report: the ordered examples of ``spec`` (its QA variant, or an LM
    variant chosen by hand), scored in ``mode`` into store shards of ``shard_passes``. ``lm``: masked LMs read the
    LM variant of their own tokenizer. ``templates``: how causal and served LMs are prompted (one row per template),
    and the rest of how they are asked — chat, rung, thinking, samples, temperature — as every prompted probe asks
    it (:class:`~stereoprobe.prompting.Prompting`: each changes the numbers, so it is part of what is asked)."""

    spec: DatasetSpec
    mode: str = "compat"
    shard_passes: int = 20_000
    lm: bool = False
    templates: tuple = ()


class Reader(Protocol):
    """How one kind of model answers :class:`Passes`."""

    def rows(self, ref: ModelRef, ask: Passes, options: RunOptions) -> list[RowKey]:
        """The report rows the model gives."""

    def score(self, ref: ModelRef, ask: Passes, row: RowKey, options: RunOptions):
        """Fill the score store for ``row``; returns the complete :class:`~stereoprobe.store.StoreRun`."""

    def frame(self, ref: ModelRef, ask: Passes, row: RowKey, options: RunOptions) -> pd.DataFrame:
        """The per-example scores of ``row`` (scoring what the store lacks)."""


def spec_for(model: ModelRef | str, spec: DatasetSpec) -> DatasetSpec:
    """The dataset a QA model reads: NewsQA-trained QA models (name contains ``newsqa``) get the NewsQA header."""
    name = getattr(model, "name", model)
    if spec.variant == "qa" and "newsqa" in name.lower() and not spec.newsqa:
        return dataclasses.replace(spec, newsqa=True)
    return spec


class SpanReader:
    """An extractive-QA model: S = √(start · end) of each subject's span (Li et al. 2020, §2.2)."""

    def rows(self, ref: ModelRef, ask: Passes, options: RunOptions) -> list[RowKey]:
        return [RowKey(ref.label)]

    def spec(self, ref: ModelRef, ask: Passes) -> DatasetSpec:
        return spec_for(ref, ask.spec)

    def score(self, ref: ModelRef, ask: Passes, row: RowKey, options: RunOptions):
        from .score_qa import score_dataset

        return score_dataset(ref, self.spec(ref, ask), mode=ask.mode, shard_passes=ask.shard_passes, options=options)

    def frame(self, ref: ModelRef, ask: Passes, row: RowKey, options: RunOptions) -> pd.DataFrame:
        from .score_qa import load_scores

        return load_scores(ref, self.spec(ref, ask), mode=ask.mode, shard_passes=ask.shard_passes, options=options)


class MaskedLMReader(SpanReader):
    """A masked LM: S = the probability of each subject at the mask (Li et al. 2020, §2.3); with ``lm`` asked, the
    subject lists and mask token of its own tokenizer (:func:`~stereoprobe.unqover.score_lm.lm_spec_for_model`).
    A model whose scores carry no signal is flagged with a warning."""

    def spec(self, ref: ModelRef, ask: Passes) -> DatasetSpec:
        from .score_lm import lm_spec_for_model

        return lm_spec_for_model(ref, ask.spec) if ask.lm else ask.spec

    def frame(self, ref: ModelRef, ask: Passes, row: RowKey, options: RunOptions) -> pd.DataFrame:
        from .score_qa import load_scores

        frame = load_scores(ref, self.spec(ref, ask), mode=ask.mode, shard_passes=ask.shard_passes, options=options)
        flag_degenerate(ref.label, ref, frame)
        return frame


def flag_degenerate(label: str, model, frame: pd.DataFrame) -> str | None:
    """Warn (and return why) when a masked LM's subject scores carry no signal on the probe."""
    import warnings

    from ..errors import StereoprobeWarning
    from ..models import load_tokenizer
    from .score_lm import lm_degeneracy

    tok = load_tokenizer(model)
    why = lm_degeneracy(frame, vocab_size=len(tok) if tok is not None else None)
    if why:
        warnings.warn(f"{label}: {why}; its UnQover tables say nothing about its biases.", StereoprobeWarning,
                      stacklevel=3)
    return why


class PromptedReader:
    """A causal or chat LM, local or behind a server, through prompt templates: one row per template on the rung its
    backend chooses (:mod:`stereoprobe.backends`; :mod:`stereoprobe.unqover.prompted` reads every rung)."""

    prompted = True  # read through the report's prompt templates

    def rows(self, ref: ModelRef, ask: Passes, options: RunOptions) -> list[RowKey]:
        from .prompted import rows

        return rows(ref, ask, options)

    def score(self, ref: ModelRef, ask: Passes, row: RowKey, options: RunOptions):
        """A local model's exact row: the complete :class:`~stereoprobe.store.StoreRun`; any other row is read
        into its frame (a served model's store, and a generated reading's, is its answers)."""
        from ..backends import backend_for
        from .prompted import template_of

        if not row.rung and backend_for(ref, options).stores_exact:
            from .score_causal import causal_spec, score_causal

            return score_causal(ref, causal_spec(ask.spec), template_of(ask, row), chat=ask.chat, options=options,
                                shard_passes=ask.shard_passes, thinking=ask.thinking)
        return self.frame(ref, ask, row, options)

    def frame(self, ref: ModelRef, ask: Passes, row: RowKey, options: RunOptions) -> pd.DataFrame:
        from .prompted import frame

        return frame(ref, ask, row, options)


#: The reader of every kind of model UnQover reads (:func:`register_reader` adds one).
READERS = Readers("UnQover", "stereoprobe.unqover.register_reader", {
    "qa": SpanReader(),
    "lm": MaskedLMReader(),
    "lm-bert": MaskedLMReader(),
    "lm-roberta": MaskedLMReader(),
}, prompted=PromptedReader())
#: Read models of a kind (a :class:`~stereoprobe.modelref.ModelKind`'s name) with a reader.
register_reader = READERS.register
#: The reader of a ref's kind.
reader_for = READERS.of


#: Whether a ref is read through the report's prompt templates (a causal or served model).
prompted = READERS.prompted


def frames(refs: Sequence[ModelRef], ask: Passes, options: RunOptions) -> dict[RowKey, pd.DataFrame]:
    """Every report row's per-example scores, in the models' order."""
    out: dict[RowKey, pd.DataFrame] = {}
    for ref in refs:
        reader = reader_for(ref)
        for row in reader.rows(ref, ask, options):
            out[row] = reader.frame(ref, ask, row, options)
    return out
