"""One SODAPOP run end to end: distractors → MCQs → per-choice logits → the per-(name, context) sets.

>>> cfg = GridConfig(names_per_group=2, contexts=[3], depth=2, cap=20)
>>> cfg.generation().depth, cfg.generation().cap
(2, 20)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from ..errors import StereoprobeError
from ..options import RunOptions
from . import contexts as ctx_mod
from . import names as names_mod
from .distractors import GenerationConfig, Unit, generate, units_frame
from .score_mcq import Variant, outcomes, saving, score_choices


@dataclass(frozen=True)
class GridConfig:
    """Which names and contexts, and how distractors are made (``contexts=None``: the 50 probe contexts)."""

    names_per_group: int | None = None  # None: every name of every group (220); the analyses use the first 25
    contexts: Sequence[int] | None = None
    depth: int = 3
    top_m: int = 10
    decoding: str = "compat"
    recursion: str = "code"
    dedup: bool = True
    cap: int | None = 10000
    seed: int = 10

    def generation(self) -> GenerationConfig:
        return GenerationConfig(depth=self.depth, top_m=self.top_m, decoding=self.decoding, recursion=self.recursion,
                                dedup=self.dedup, cap=self.cap, seed=self.seed)

    def groups(self) -> dict[str, list[str]]:
        groups = names_mod.load_groups()
        if self.names_per_group is None:
            return groups
        return names_mod.analysis_groups(self.names_per_group)

    def probe_contexts(self) -> list[ctx_mod.Context]:
        return ctx_mod.probe_contexts(indices=None if self.contexts is None else list(self.contexts))


@dataclass
class ProbeRun:
    """The units (with their distractors), the per-choice logits and what it cost."""

    grid: GridConfig
    groups: dict[str, list[str]]
    units: list[Unit]
    generation: dict
    logits: pd.DataFrame
    variants: list[str] = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    @property
    def config(self) -> GenerationConfig:
        return self.grid.generation()

    def outcomes(self, variant: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The authors' per-(name, context) sets (``load_from_dir``) and per-unit accuracy for the model
        (``None``) or one of its variants."""
        column = "logit" if variant is None else f"logit_{variant}"
        if column not in self.logits:
            raise StereoprobeError(f"no variant {variant!r} in this run; variants: {self.variants}.")
        return outcomes(self.units, self.config, self.logits, column)

    def units_table(self) -> pd.DataFrame:
        return units_frame(self.units, self.config)

    def saving(self) -> dict:
        return saving(self.units, self.config)


def run_probe(mcq_model: str, mlm: str, grid: GridConfig, *, variants: Sequence[Variant] = (), join: str = "",
              options: RunOptions | None = None, template=None, chat: bool | None = None,
              rung: str | None = None, samples: int = 1, temperature: float | None = None) -> ProbeRun:
    """Generate (cached) and score (score store) one grid of names × contexts; both resume after a kill.

    ``options`` (:class:`~stereoprobe.options.RunOptions`) go to :func:`~stereoprobe.sodapop.distractors.generate`
    and :func:`~stereoprobe.sodapop.score_mcq.score_choices`; ``engine``/``workers`` spread the multiple-choice
    scoring over Ray workers (:mod:`stereoprobe.engine`). With an ``mcq`` prompt ``template`` the multiple-choice
    model is a causal LM (:func:`~stereoprobe.sodapop.score_causal.score_causal_choices`, ``chat`` as there): its
    run has the variant ``norm`` (``acc_norm``) beside the plain logits (``acc``). ``rung``, ``samples``,
    ``temperature``: the rung a causal or served model is read on, and on the generated rung its answers per question
    and their temperature (:class:`~stereoprobe.prompting.Prompting`, :mod:`stereoprobe.sodapop.prompted`).
    """
    from ..modelref import ModelRef
    from .readers import READERS, Choices, reader_for

    ask = Choices(variants=tuple(variants), join=join, template=template, chat=chat, rung=rung, samples=samples,
                  temperature=temperature)
    # a resolved model is read by the reader of its kind; a name by the causal reader with a template, else as an
    # encoder (as in 0.7.0)
    reader = reader_for(mcq_model) if isinstance(mcq_model, ModelRef) else (READERS.prompted_reader if template
                                                                                   is not None else READERS["mcq"])
    if template is not None and (variants or join):
        raise StereoprobeError("Debiased variants and join are for multiple-choice encoders; a causal LM reads "
                               "the prompt template's layout.")
    groups = grid.groups()
    everyone = [n for g in groups.values() for n in g]
    t0 = time.perf_counter()
    units, meta = generate(mlm, everyone, grid.probe_contexts(), grid.generation(), options=options)
    t1 = time.perf_counter()
    logits = reader.logits(mcq_model, units, grid.generation(), ask, options)
    t2 = time.perf_counter()
    return ProbeRun(grid, groups, units, meta, logits, [c[len("logit_"):] for c in logits if c.startswith("logit_")],
                    {"generation": t1 - t0, "scoring": t2 - t1})


def rescore(run: ProbeRun, mcq_model: str, *, options: RunOptions | None = None, **study) -> ProbeRun:
    """The same units scored by another multiple-choice model (e.g. a lab model): distractors are shared.
    ``options`` and ``study`` (``variants``, ``join``) go to :func:`~stereoprobe.sodapop.score_mcq.score_choices`."""
    t0 = time.perf_counter()
    logits = score_choices(mcq_model, run.units, run.config, options=options, **study)
    return ProbeRun(run.grid, run.groups, run.units, run.generation, logits,
                    [c[len("logit_"):] for c in logits if c.startswith("logit_")], {"scoring": time.perf_counter() - t0})
