"""UnQover from Python: :func:`report` and :func:`score`, what ``stereoprobe unqover report|score`` run.

A report scores the paper examples of one dataset with each model (through the score store: nothing is scored
twice, a killed run resumes) and returns the command line's three tables as DataFrames:

* ``reasoning_errors`` — positional error δ, attribute error ε (Li et al. 2020, Eq. 3–4) and the mean score;
* ``intensity`` — model bias intensity μ (Eq. 8) with its bootstrap interval (``ci_low``, ``ci_high``) and the
  count-based η;
* ``top_gamma`` — the ``top`` occupations per gender by γ(x, a) (gender), or the subjects with the highest and
  lowest γ(x) (nationality, ethnicity, religion);
* ``template_spread`` — with causal LMs only: the spread of δ, ε and μ over the prompt templates, beside μ's
  bootstrap interval;
* ``served`` — with served models only: each row's rung and what it cost;
* ``abstention`` — with a row that may abstain (a template with an unknown option, ``letters-unknown`` or
  ``names-unknown``, or a served model's generated answers): its abstention and unparsed rates with intervals, μ
  over the answered passes and counting an abstention as no preference, and BBQ's scores
  (:mod:`stereoprobe.unqover.abstention`); the other tables read such a row over its answered passes;
* ``thinking_shift`` — with ``thinking="both"``: per model and template, μ with thinking on and off, the shift and
  its interval, the shifts in the abstention and unparsed rates, the cells whose γ moved most;
* ``long`` — with ``long=True``: every row in one long table (for a paper's table, one ``pivot``).

A causal or chat LM (a ``*ForCausalLM`` config, or a ``.gguf`` file) is read through prompt templates
(:mod:`stereoprobe.unqover.score_causal`): one row per scorer (``answer``, ``choice``) and template, named
``<model> · <scorer>:<template>``.

>>> import tempfile
>>> from stereoprobe import RunOptions, unqover
>>> run = RunOptions(device="cpu", smoke=True, progress=False, store=tempfile.mkdtemp())
>>> rep = unqover.report(["lab:qa-biased", "lab:qa-control"], "gender", sample=40, options=run)
>>> list(rep), rep.files()[0]
(['reasoning_errors', 'intensity', 'top_gamma'], 'gender_reasoning_errors.csv')
>>> mu = rep["intensity"].set_index("model")["mu"]
>>> bool(mu["lab:qa-biased"] > 10 * mu["lab:qa-control"])  # the planted bias, and its control
True
"""

from __future__ import annotations

import dataclasses

from typing import Sequence

from ..errors import StereoprobeError
from ..naming import model_labels
from ..options import RunOptions, as_options
from ..reports import Report
from .generate import DATASETS, DatasetSpec

#: The tables of a report, in order (file ``<dataset>_<table>.csv``).
TABLES = ("reasoning_errors", "intensity", "top_gamma")
#: What ``variant`` takes: ``qa`` (extractive-QA models), ``lm`` (masked LMs, each reading the subject lists and mask
#: token of its own tokenizer), an LM variant chosen by hand, or ``causal`` (causal and chat LMs, through prompt
#: templates); None: each model's config decides between ``qa`` and ``causal``.
MODEL_VARIANTS = ("qa", "lm", "lm-bert", "lm-roberta", "causal")


def _models(models: Sequence[str] | str) -> list[str]:
    models = [models] if isinstance(models, str) else list(models)
    if not models:
        raise StereoprobeError("models is empty; pass one or more model names (hub ids, folders, zoo: or lab: names).")
    model_labels(models, option="model")  # one given twice: refused before any work
    return models


def dataset_spec(dataset: str = "gender", *, sample: float | int | None = None, seed: int = 0, mode: str = "compat",
                 newsqa: bool = False, variant: str | None = "qa", subjects: int | None = None,
                 attributes: int | None = None) -> DatasetSpec:
    """The :class:`~stereoprobe.unqover.generate.DatasetSpec` a report reads (``variant="lm"`` reads the QA
    spec, which each masked LM turns into the LM variant of its tokenizer; causal LMs read the QA spec)."""
    variant = "qa" if variant in (None, "causal") else variant
    if variant not in MODEL_VARIANTS:
        raise StereoprobeError(f"Unknown variant {variant!r}; choose one of: {', '.join(MODEL_VARIANTS)}.")
    if dataset not in DATASETS:
        raise StereoprobeError(f"Unknown dataset {dataset!r}; choose one of: {', '.join(DATASETS)}.")
    return DatasetSpec(dataset, variant="qa" if variant == "lm" else variant, newsqa=newsqa, mode=mode,
                       sample=sample, seed=seed, subjects=subjects, attributes=attributes)


def model_kinds(models: Sequence[str], variant: str | None, *, smoke: bool = False) -> dict[str, str]:
    """Each model's kind in a report: ``causal`` or the variant's own (``qa``, ``lm``, …); with ``variant=None`` the
    model's config decides between ``qa`` and ``causal`` (:func:`stereoprobe.models.choose_kind`, which also
    refuses a causal LM asked for QA spans or masked-LM fills, and a model that is not one asked for ``causal``)."""
    return {ref.name: ref.kind for ref in resolve(models, variant, smoke=smoke)}


def resolve(models: Sequence[str] | str, variant: str | None, *, smoke: bool = False) -> list:
    """The models of a report, each resolved once (:func:`stereoprobe.modelref.resolve_models`) for ``variant``:
    None (its config decides between ``qa`` and ``causal``), ``qa``, ``lm``/``lm-bert``/``lm-roberta`` (masked
    LMs) or ``causal``; a model of the other kind is refused before any work."""
    from ..modelref import resolve_models
    from .readers import READERS

    if variant is not None and variant not in MODEL_VARIANTS:
        raise StereoprobeError(f"Unknown variant {variant!r}; choose one of: {', '.join(MODEL_VARIANTS)}.")
    native = "qa" if variant in (None, "causal") else variant
    asked = variant if variant == "causal" else (None if variant is None else native)
    return resolve_models(_models(models), native=native, asked=asked, smoke=smoke, allowed=list(READERS))


def _ask(refs, spec: DatasetSpec, *, mode: str, variant: str | None, shard_passes: int | None, scorers, templates,
         **prompting):
    """What the report asks every model (:class:`~stereoprobe.unqover.readers.Passes`; ``prompting``: the fields of
    :class:`~stereoprobe.prompting.Prompting`, checked there); templates and prompt settings are refused without a
    causal or served model, where they would be silently ignored."""
    from .readers import Passes, prompted
    from .score_causal import scorer_templates
    from .score_qa import SHARD_PASSES

    ask = Passes(spec, mode=mode, shard_passes=shard_passes or SHARD_PASSES, lm=variant == "lm", **prompting)
    if not any(prompted(ref) for ref in refs):
        asked = (["scorer"] if scorers is not None else []) + (["template"] if templates is not None else [])
        if asked + ask.prompt_settings():
            raise StereoprobeError(f"{', '.join(asked + ask.prompt_settings())} settings are for causal and served "
                                   "LMs, and none of the models is one; leave them out (or pass such a model).")
        return ask
    return dataclasses.replace(ask, templates=tuple(scorer_templates(scorers, templates)))


def score(models: Sequence[str] | str, dataset: str = "gender", *, sample: float | int | None = None, seed: int = 0,
          subjects: int | None = None, attributes: int | None = None, mode: str = "compat", newsqa: bool = False, variant: str | None = None, shard_passes: int | None = None,
          scorers: Sequence[str] | str | None = None, templates: Sequence | str | None = None,
          chat: bool | None = None, rung: str | None = None, samples: int = 1, temperature: float | None = None,
          options: RunOptions | None = None) -> dict[str, object]:
    """Score ``dataset`` with each model into the score store; returns model → its complete
    :class:`~stereoprobe.store.StoreRun` (``run.read()`` gives the raw start/end scores per pass; a causal LM's
    runs are keyed ``<model> · <scorer>:<template>``, with the subjects' log-probabilities per pass)."""
    from ..modelref import RowKey
    from .readers import reader_for

    models = _models(models)
    spec = dataset_spec(dataset, sample=sample, seed=seed, mode=mode, newsqa=newsqa, variant=variant,
                        subjects=subjects, attributes=attributes)
    run = as_options(options)
    refs = resolve(models, variant, smoke=run.smoke)
    ask = _ask(refs, spec, mode=mode, variant=variant, shard_passes=shard_passes, scorers=scorers,
               templates=templates, chat=chat, rung=rung, samples=samples, temperature=temperature)
    out: dict[str, object] = {}
    with run.applied():
        for ref in refs:
            reader = reader_for(ref)
            for row in reader.rows(ref, ask, run):
                out[RowKey(ref.name, row.scorer, row.template, row.rung).label] = reader.score(ref, ask, row, run)
    return out


def report(models: Sequence[str] | str, dataset: str = "gender", *, sample: float | int | None = None, seed: int = 0,
           subjects: int | None = None, attributes: int | None = None, mode: str = "compat", newsqa: bool = False, variant: str | None = None, n_boot: int = 1000, top: int = 3,
           shard_passes: int | None = None, scorers: Sequence[str] | str | None = None,
           templates: Sequence | str | None = None, chat: bool | None = None, rung: str | None = None,
           thinking: bool | str | None = None, think_budget: int | None = None, samples: int = 1,
           temperature: float | None = None, long: bool = False, options: RunOptions | None = None) -> Report:
    """Reasoning errors, bias intensity μ and the top γ of each model on one UnQover dataset.

    ``models``: hub ids, local folders, ``.gguf`` files, ``zoo:`` or ``lab:`` names (labelled in the tables as
    :func:`stereoprobe.naming.model_labels` shortens them). ``dataset``: gender, nationality, ethnicity or
    religion. ``sample``: paper examples (an int), a fraction (a float in (0, 1]) or None for all; ``subjects`` and
    ``attributes``: draw that many subjects of each list and that many attributes first, and the sample among their
    examples (fuller cells for μ's interval; :class:`~stereoprobe.unqover.generate.DatasetSpec`). ``mode``:
    ``compat`` (the authors' code) or ``clean``. ``variant``: None (each model's config decides: extractive QA or
    causal), ``qa``, ``lm`` (masked LMs, each reading the lists of its own tokenizer), ``lm-bert``, ``lm-roberta`` or
    ``causal``. Causal LMs only: ``scorers`` (``answer``, ``choice``; default both), ``templates`` (shipped names or
    YAML files; default every shipped template of each scorer, :mod:`stereoprobe.prompts`), ``chat`` (the chat
    template, a plain prompt, or None: whichever the tokenizer has). Served models
    (``openai-api/<service>/<model>``, :mod:`stereoprobe.served`) read the same templates; ``rung`` forces the rung
    of the ladder they are read on (``exact``, ``next-token``, ``generated``; None: the best each gives). ``n_boot``: bootstrap resamples of the
    intervals; ``top``: rows per group in ``top_gamma``; ``shard_passes``: passes per score-store shard (default
    20,000; the unit of resumption). ``thinking``: a reasoning model's thinking on (True), off (False) or both
    (``"both"``: every row both ways, and the ``thinking_shift`` table of the shifts in μ, γ and abstention with
    their intervals) through its chat template's ``enable_thinking`` (served: ``chat_template_kwargs``; with thinking on only the generated rung
    reads the answer, after the reasoning); ``think_budget``: the tokens the reasoning may take (a reply cut inside
    it is unparsed, never a subject). ``samples`` and ``temperature``: on the generated rung, answers per question
    (1: greedy) and their temperature (None: 0 for one sample, 1.0 for several), S the share of the answers naming
    each subject (:class:`~stereoprobe.prompting.Prompting`). ``long``: add the ``long`` table, every row in both readings of
    :mod:`~stereoprobe.unqover.abstention` with its model, scorer, rung, template, thinking setting, abstention and
    unparsed rates, δ, ε, μ and BBQ's scores, one line each (:func:`stereoprobe.unqover.reporting.long_table`; a
    paper's table is one ``pivot`` of it). ``options``: how it runs (:class:`~stereoprobe.options.RunOptions`). The
    tables are those of ``stereoprobe unqover report``; a row that may abstain (a template with an unknown option,
    or a served model's generated answers) is read over its answered passes, and the ``abstention`` table adds its
    rates, μ counting an abstention as no preference and BBQ's scores.

    Each model is resolved once (:class:`~stereoprobe.modelref.ModelRef`) and read by the reader of its kind
    (:mod:`stereoprobe.unqover.readers`).
    """
    from .reporting import model_report

    models = _models(models)
    spec = dataset_spec(dataset, sample=sample, seed=seed, mode=mode, newsqa=newsqa, variant=variant,
                        subjects=subjects, attributes=attributes)
    if not (isinstance(top, int) and top >= 1) or not (isinstance(n_boot, int) and n_boot >= 1):
        raise StereoprobeError(f"top={top!r} and n_boot={n_boot!r} must be positive integers; pass e.g. top=3, "
                               "n_boot=1000.")
    run = as_options(options)
    refs = resolve(models, variant, smoke=run.smoke)
    both = thinking == "both"
    ask = _ask(refs, spec, mode=mode, variant=variant, shard_passes=shard_passes, scorers=scorers,
               templates=templates, chat=chat, rung=rung, thinking=True if both else thinking,
               think_budget=think_budget, samples=samples, temperature=temperature)
    with run.applied():
        result = model_report(refs, ask, n_boot=n_boot, top=top, seed=seed, options=run, long=bool(long),
                              both_thinking=both)
    return Report(f"UnQover {dataset}: {len(refs)} model(s), {'all' if sample is None else sample} paper examples, "
                  f"{mode} mode", result, stems={k: f"{dataset}_{k}" for k in result},
                  headings={k: k for k in result})


__all__ = ["MODEL_VARIANTS", "TABLES", "dataset_spec", "model_kinds", "report", "resolve", "score"]
