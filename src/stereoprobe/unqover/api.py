"""UnQover from Python: :func:`report` and :func:`score`, what ``stereoprobe unqover report|score`` run.

A report scores the paper examples of one dataset with each model (through the score store: nothing is scored
twice, a killed run resumes) and returns the command line's three tables as DataFrames:

* ``reasoning_errors`` — positional error δ, attribute error ε (Li et al. 2020, Eq. 3–4) and the mean score;
* ``intensity`` — model bias intensity μ (Eq. 8) with its bootstrap interval (``ci_low``, ``ci_high``) and the
  count-based η;
* ``top_gamma`` — the ``top`` occupations per gender by γ(x, a) (gender), or the subjects with the highest and
  lowest γ(x) (nationality, ethnicity, religion).

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

from typing import Sequence

from ..errors import StereoprobeError
from ..naming import model_labels
from ..options import RunOptions, as_options
from ..reports import Report
from .generate import DATASETS, DatasetSpec

#: The tables of a report, in order (file ``<dataset>_<table>.csv``).
TABLES = ("reasoning_errors", "intensity", "top_gamma")
#: What ``variant`` takes: ``qa`` (extractive-QA models), ``lm`` (masked LMs, each reading the subject lists and mask
#: token of its own tokenizer), or an LM variant chosen by hand.
MODEL_VARIANTS = ("qa", "lm", "lm-bert", "lm-roberta")


def _models(models: Sequence[str] | str) -> list[str]:
    models = [models] if isinstance(models, str) else list(models)
    if not models:
        raise StereoprobeError("models is empty; pass one or more model names (hub ids, folders, zoo: or lab: names).")
    model_labels(models, option="model")  # one given twice: refused before any work
    return models


def dataset_spec(dataset: str = "gender", *, sample: float | int | None = None, seed: int = 0, mode: str = "compat",
                 newsqa: bool = False, variant: str = "qa") -> DatasetSpec:
    """The :class:`~stereoprobe.unqover.generate.DatasetSpec` a report reads (``variant="lm"`` reads the QA
    spec, which each masked LM turns into the LM variant of its tokenizer)."""
    if variant not in MODEL_VARIANTS:
        raise StereoprobeError(f"Unknown variant {variant!r}; choose one of: {', '.join(MODEL_VARIANTS)}.")
    if dataset not in DATASETS:
        raise StereoprobeError(f"Unknown dataset {dataset!r}; choose one of: {', '.join(DATASETS)}.")
    return DatasetSpec(dataset, variant="qa" if variant == "lm" else variant, newsqa=newsqa, mode=mode,
                       sample=sample, seed=seed)


def score(models: Sequence[str] | str, dataset: str = "gender", *, sample: float | int | None = None, seed: int = 0,
          mode: str = "compat", newsqa: bool = False, variant: str = "qa", shard_passes: int | None = None,
          options: RunOptions | None = None) -> dict[str, object]:
    """Score ``dataset`` with each model into the score store; returns model → its complete
    :class:`~stereoprobe.store.StoreRun` (``run.read()`` gives the raw start/end scores per pass)."""
    from .score_qa import SHARD_PASSES, score_dataset
    from .tables import lm_spec_for, spec_for

    models = _models(models)
    spec = dataset_spec(dataset, sample=sample, seed=seed, mode=mode, newsqa=newsqa, variant=variant)
    run = as_options(options)
    with run.applied():
        return {m: score_dataset(m, (lm_spec_for if variant == "lm" else spec_for)(m, spec), mode=mode,
                                 shard_passes=shard_passes or SHARD_PASSES, options=run) for m in models}


def report(models: Sequence[str] | str, dataset: str = "gender", *, sample: float | int | None = None, seed: int = 0,
           mode: str = "compat", newsqa: bool = False, variant: str = "qa", n_boot: int = 1000, top: int = 3,
           shard_passes: int | None = None, options: RunOptions | None = None) -> Report:
    """Reasoning errors, bias intensity μ and the top γ of each model on one UnQover dataset.

    ``models``: hub ids, local folders, ``zoo:`` or ``lab:`` names (labelled in the tables as
    :func:`stereoprobe.naming.model_labels` shortens them). ``dataset``: gender, nationality, ethnicity or
    religion. ``sample``: paper examples (an int), a fraction (a float in (0, 1]) or None for all. ``mode``:
    ``compat`` (the authors' code) or ``clean``. ``variant``: ``qa`` (extractive QA), ``lm`` (masked LMs, each
    reading the lists of its own tokenizer), ``lm-bert`` or ``lm-roberta``. ``n_boot``: bootstrap resamples of the
    intervals; ``top``: rows per group in ``top_gamma``; ``shard_passes``: passes per score-store shard (default
    20,000; the unit of resumption). ``options``: how it runs (:class:`~stereoprobe.options.RunOptions`). The
    tables are those of ``stereoprobe unqover report``.
    """
    from . import tables
    from .score_qa import SHARD_PASSES

    models = _models(models)
    spec = dataset_spec(dataset, sample=sample, seed=seed, mode=mode, newsqa=newsqa, variant=variant)
    if not (isinstance(top, int) and top >= 1) or not (isinstance(n_boot, int) and n_boot >= 1):
        raise StereoprobeError(f"top={top!r} and n_boot={n_boot!r} must be positive integers; pass e.g. top=3, "
                               "n_boot=1000.")
    run = as_options(options)
    with run.applied():
        result = tables.model_report(models, spec, mode=mode, n_boot=n_boot, top=top, seed=seed, lm=variant == "lm",
                                     shard_passes=shard_passes or SHARD_PASSES, options=run)
    return Report(f"UnQover {dataset}: {len(models)} model(s), {'all' if sample is None else sample} paper examples, "
                  f"{mode} mode", result, stems={k: f"{dataset}_{k}" for k in result},
                  headings={k: k for k in result})


__all__ = ["MODEL_VARIANTS", "TABLES", "dataset_spec", "report", "score"]
