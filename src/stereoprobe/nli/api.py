"""Bias-NLI from Python: :func:`report` and :func:`score`, what ``stereoprobe nli report|score`` run.

A report scores the template pairs of each probe (gender, nationality, religion; Dev et al. 2020, §3) with each
NLI classifier, through the score store, and returns one table per probe: the net neutral NN, the fraction
neutral FN and the thresholds T:0.5 and T:0.7 (§4), each with a bootstrap interval, one row per model.

A causal or chat LM (a ``*ForCausalLM`` config, or a ``.gguf`` file) is asked zero-shot through NLI prompt
templates, its label words renormalised (:mod:`stereoprobe.nli.score_causal`): one row per template, named
``<model> · nli:<template>``, with the mean probability mass of its label words (``label_mass``).

>>> import tempfile
>>> from stereoprobe import RunOptions, nli
>>> run = RunOptions(device="cpu", smoke=True, progress=False, store=tempfile.mkdtemp())
>>> rep = nli.report(["zoo:minilm-nli"], ["gender", "religion"], sample=60, n_boot=50, options=run)
>>> list(rep), rep.files()
(['gender', 'religion'], ['nli_gender_neutrality.csv', 'nli_religion_neutrality.csv'])
>>> row = rep["gender"].iloc[0]
>>> int(row["pairs"]), bool(0 <= row["FN"] <= 1 and row["NN_lo"] <= row["NN"] <= row["NN_hi"])
(60, True)
"""

from __future__ import annotations

import dataclasses

import json
from typing import Sequence

from ..errors import MetricsError, StereoprobeError
from ..naming import model_labels
from ..options import RunOptions, as_options
from ..reports import Report
from .templates import PROBES, TemplateSpec


def _models(models: Sequence[str] | str) -> list[str]:
    models = [models] if isinstance(models, str) else list(models)
    if not models:
        raise StereoprobeError("models is empty; pass one or more NLI classifiers (hub ids, folders, zoo: names).")
    model_labels(models, option="model")
    return models


def probe_specs(probes: Sequence[str] | str = "all", *, sample: float | int | None = None,
                seed: int = 0) -> dict[str, TemplateSpec]:
    """probe → the :class:`~stereoprobe.nli.templates.TemplateSpec` of its pairs (the repository's word lists, a
    seeded sample); ``"all"`` is the three probes."""
    probes = [probes] if isinstance(probes, str) else list(probes)
    names = list(PROBES) if "all" in probes else list(dict.fromkeys(map(str, probes)))
    if not names:
        raise StereoprobeError(f"probes is empty; pass one or more of {', '.join(PROBES)}, or 'all'.")
    return {p: TemplateSpec(p, sample=sample, seed=seed) for p in names}


def _own_labels(model, smoke: bool = False) -> list | None:
    """The labels of ``model`` (a name or a :class:`~stereoprobe.modelref.ModelRef`) from its local ``config.json``
    when they identify the three classes on their own (then a label order is not used); None when they are generic
    or cannot be read without loading it."""
    from ..models import local_folder, resolve
    from .measures import label_indices

    try:
        id2label = json.loads((local_folder(resolve(model, smoke=smoke)) / "config.json").read_text(
            encoding="utf-8"))["id2label"]
        label_indices(id2label)  # a MetricsError (a StereoprobeError) when they need an order
        return list(id2label.values())
    except (StereoprobeError, OSError, TypeError, KeyError, ValueError, AttributeError):
        return None


def label_orders(models: Sequence[str], label_order: Sequence[str] | str | None, *, option: str = "label_order",
                 smoke: bool = False) -> dict[str, tuple | None]:
    """model → the label order it is scored with: ``label_order`` (the classes of LABEL_0, LABEL_1, LABEL_2, as a
    sequence or a comma-separated string) for models with generic LABEL_k names, None for models that name their
    labels. Refused before any work if the order is malformed or no model can use it."""
    from .measures import label_indices

    from ..modelref import name_of

    if label_order is None:
        return dict.fromkeys(map(name_of, models))
    shown = label_order if isinstance(label_order, str) else ",".join(label_order)
    order = tuple(v.strip() for v in (label_order.split(",") if isinstance(label_order, str) else label_order))
    try:
        label_indices([f"LABEL_{i}" for i in range(3)], order)  # the names, checked before any model is loaded
    except MetricsError:
        raise StereoprobeError(f"{option} {shown!r} must name entailment, neutral and contradiction once each (the "
                               "classes of LABEL_0, LABEL_1, LABEL_2); pass e.g. entailment,neutral,contradiction.")
    if not models:
        raise StereoprobeError(f"{option} is for NLI classifiers whose labels are LABEL_0..LABEL_2, and none of the "
                               f"models is a classifier; drop {option}.")
    own = {name_of(m): _own_labels(m, smoke) for m in models}
    if all(own.values()):
        model, labels = next(iter(own.items()))
        raise StereoprobeError(f"{option} is only for models whose labels are LABEL_0..LABEL_2; {model} names its "
                               f"labels ({', '.join(labels)}), which are used; drop {option}.")
    return {m: None if own[m] else order for m in own}


def model_kinds(models: Sequence[str], variant: str | None = None, *, smoke: bool = False) -> dict[str, str]:
    """model → ``nli`` (a classifier) or ``causal`` (zero-shot through prompts): from each config (``variant=None``)
    or as asked, a model of the other kind refused (:func:`stereoprobe.models.choose_kind`)."""
    return {ref.name: ref.kind for ref in resolve(models, variant, smoke=smoke)}


def resolve(models: Sequence[str] | str, variant: str | None = None, *, smoke: bool = False) -> list:
    """The models of a report, each resolved once (:func:`stereoprobe.modelref.resolve_models`): ``nli`` or
    ``causal`` from each config (``variant=None``) or as asked, a model of the other kind refused."""
    from ..modelref import resolve_models
    from .readers import READERS

    if variant not in (None, "nli", "causal"):
        raise StereoprobeError(f"Unknown variant {variant!r}; choose nli (a classifier) or causal (a causal LM, "
                               "zero-shot), or leave it out.")
    return resolve_models(_models(models), native="nli", asked=variant, smoke=smoke, allowed=list(READERS))


def _ask(refs, label_order, templates, words, smoke: bool, **prompting):
    """What the report asks every model (:class:`~stereoprobe.nli.readers.Pairs`; ``prompting``: the fields of
    :class:`~stereoprobe.prompting.Prompting`, checked there): the label orders of classifiers and the causal and
    served LMs' templates, checked before any work; prompt settings without such a model are refused, since they
    would be silently ignored."""
    from ..prompts import select
    from .readers import Pairs, prompted
    from .score_causal import with_words

    ask = Pairs(**prompting)
    chosen: list = []
    if not any(prompted(ref) for ref in refs):
        asked = (["template"] if templates is not None else []) + (["label-word"] if words is not None else [])
        if asked + ask.prompt_settings():
            raise StereoprobeError(f"{', '.join(asked + ask.prompt_settings())} settings are for causal and served "
                                   "LMs, and none of the models is one; leave them out (or pass such a model).")
    else:
        if isinstance(words, str):
            words = [w.strip() for w in words.split(",")]
        chosen = [with_words(t, words) for t in select(templates, "nli")]
    orders = label_orders([ref for ref in refs if ref.kind == "nli"], label_order, smoke=smoke)
    return dataclasses.replace(ask, label_orders=orders, templates=tuple(chosen))


def score(models: Sequence[str] | str, probes: Sequence[str] | str = "all", *, sample: float | int | None = None,
          seed: int = 0, label_order: Sequence[str] | str | None = None, variant: str | None = None,
          templates: Sequence | str | None = None, words: Sequence[str] | str | None = None,
          chat: bool | None = None, rung: str | None = None, samples: int = 1, temperature: float | None = None,
          options: RunOptions | None = None) -> dict[tuple[str, str], object]:
    """Score each probe's pairs with each model into the score store; returns (model, probe) → its complete
    :class:`~stereoprobe.store.StoreRun` (a causal LM: (``<model> · nli:<template>``, probe))."""
    from ..modelref import RowKey
    from .readers import reader_for

    models = _models(models)
    specs = probe_specs(probes, sample=sample, seed=seed)
    run = as_options(options)
    refs = resolve(models, variant, smoke=run.smoke)
    ask = _ask(refs, label_order, templates, words, run.smoke, chat=chat, rung=rung, samples=samples,
               temperature=temperature)
    out: dict[tuple[str, str], object] = {}
    with run.applied():
        for ref in refs:
            reader = reader_for(ref)
            for p, spec in specs.items():
                for row in reader.rows(ref, ask, run):
                    out[(RowKey(ref.name, row.scorer, row.template, row.rung).label, p)] = \
                        reader.score(ref, ask, row, spec, run)
    return out


def report(models: Sequence[str] | str, probes: Sequence[str] | str = "all", *, sample: float | int | None = None,
           seed: int = 0, n_boot: int = 1000, label_order: Sequence[str] | str | None = None,
           variant: str | None = None, templates: Sequence | str | None = None,
           words: Sequence[str] | str | None = None, chat: bool | None = None, rung: str | None = None,
           samples: int = 1, temperature: float | None = None, options: RunOptions | None = None) -> Report:
    """NN, FN, T:0.5 and T:0.7 with bootstrap intervals, per model, for each probe (one table each).

    ``models``: NLI classifiers or causal LMs (hub ids, local folders, ``.gguf`` files, ``zoo:`` names); labelled in
    the tables as :func:`stereoprobe.naming.model_labels` shortens them. ``probes``: gender, nationality, religion,
    a list of them, or ``"all"``. ``sample``: pairs per probe (an int), a fraction, or None for all.
    ``label_order``: the classes of LABEL_0..LABEL_2 for classifiers with generic label names. ``variant``: None
    (each model's config decides), ``nli`` or ``causal``. Causal LMs only: ``templates`` (shipped names or YAML
    files; default both shipped NLI templates, :mod:`stereoprobe.prompts`), ``words`` (label words for
    entailment, neutral, contradiction, instead of each template's own), ``chat`` (the chat template, a plain
    prompt, or None: whichever the tokenizer has). Served models (``openai-api/<service>/<model>``,
    :mod:`stereoprobe.served`) read the same templates; ``rung`` forces the rung of the ladder they are read on
    (``exact``, ``next-token``, ``generated``; None: the best each gives), and a ``served`` table says which rung
    produced each row; ``samples`` and ``temperature``: on the generated rung, answers per pair (1: greedy) and their
    temperature (None: 0 for one sample, 1.0 for several), the class shares of the answers read as probabilities
    (:class:`~stereoprobe.prompting.Prompting`). ``options``: how it runs
    (:class:`~stereoprobe.options.RunOptions`). The tables are those of ``stereoprobe nli report``.

    Each model is resolved once (:class:`~stereoprobe.modelref.ModelRef`) and read by the reader of its kind
    (:mod:`stereoprobe.nli.readers`).
    """
    from ..served import provenances, served_table
    from .readers import frames
    from .reporting import measures_table

    models = _models(models)
    specs = probe_specs(probes, sample=sample, seed=seed)
    if not (isinstance(n_boot, int) and n_boot >= 1):
        raise StereoprobeError(f"n_boot={n_boot!r} must be a positive integer; pass e.g. n_boot=1000.")
    run = as_options(options)
    refs = resolve(models, variant, smoke=run.smoke)
    ask = _ask(refs, label_order, templates, words, run.smoke, chat=chat, rung=rung, samples=samples,
               temperature=temperature)
    result = {}
    with run.applied():
        by_row = frames(refs, ask, specs, run)
        for probe in specs:
            probs = {(row.label, p): frame for (row, p), frame in by_row.items() if p == probe}
            table = measures_table(probs, ("model", "probe"), n_boot=n_boot, seed=seed)
            if ask.templates:
                mass = {key[0]: float(f["label_mass"].mean()) for key, f in probs.items() if "label_mass" in f}
                table["label_mass"] = table["model"].map(mass)
            result[probe] = table
        read = {key: provenances(run).get(key) for key in by_row}
        served = served_table(read)
        if served is not None:
            served.insert(1, "probe", [p for (row, p), facts in read.items() if facts is not None])
            result["served"] = served
    return Report(f"Bias-NLI: {len(models)} model(s) × {len(specs)} probe(s), "
                  f"{'all' if sample is None else sample} pairs per probe", result,
                  stems={p: f"nli_{p}_neutrality" if p != "served" else "nli_served" for p in result},
                  headings={p: f"nli {p} neutrality" if p != "served" else "nli served" for p in result})


__all__ = ["label_orders", "model_kinds", "probe_specs", "report", "resolve", "score"]
