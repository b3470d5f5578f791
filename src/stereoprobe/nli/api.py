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


def _own_labels(model: str, smoke: bool = False) -> list | None:
    """The labels of ``model`` from its local ``config.json`` when they identify the three classes on their own
    (then a label order is not used); None when they are generic or cannot be read without loading it."""
    from ..models import local_folder, resolve
    from .measures import label_indices

    if model.startswith("lab:"):  # built on first use, and never an NLI model: loading says so
        return None
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

    if label_order is None:
        return dict.fromkeys(models)
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
    own = {m: _own_labels(m, smoke) for m in models}
    if all(own.values()):
        model, labels = next(iter(own.items()))
        raise StereoprobeError(f"{option} is only for models whose labels are LABEL_0..LABEL_2; {model} names its "
                               f"labels ({', '.join(labels)}), which are used; drop {option}.")
    return {m: None if own[m] else order for m in models}


def model_kinds(models: Sequence[str], variant: str | None = None, *, smoke: bool = False) -> dict[str, str]:
    """model → ``nli`` (a classifier) or ``causal`` (zero-shot through prompts): from each config (``variant=None``)
    or as asked, a model of the other kind refused (:func:`stereoprobe.models.choose_kind`)."""
    from ..models import choose_kind

    if variant not in (None, "nli", "causal"):
        raise StereoprobeError(f"Unknown variant {variant!r}; choose nli (a classifier) or causal (a causal LM, "
                               "zero-shot), or leave it out.")
    return {m: choose_kind(m, variant, "nli", smoke=smoke) for m in models}


def _causal_templates(kinds: dict[str, str], templates, words, chat) -> list:
    """The NLI templates causal models are asked with (label words overridden by ``words``), checked before any
    work; settings without a causal model are refused, since they would be silently ignored."""
    from ..prompts import select
    from .score_causal import with_words

    if "causal" not in kinds.values():
        if templates is not None or words is not None or chat is not None:
            raise StereoprobeError("template, label-word and chat settings are for causal LMs, and none of the models "
                                   "is one; leave them out (or pass a causal LM).")
        return []
    if isinstance(words, str):
        words = [w.strip() for w in words.split(",")]
    return [with_words(t, words) for t in select(templates, "nli")]


def _frames(models, labels, kinds, orders, specs, chosen, chat, run):
    """(label, probe) → the per-pair probabilities the measures read, for every model (a causal LM: per template)."""
    from .score_causal import load_causal_probabilities
    from .scoring import load_probabilities

    out = {}
    for probe, spec in specs.items():
        for label, m in zip(labels, models):
            if kinds[m] == "causal":
                for t in chosen:
                    out[(f"{label} · nli:{t.name}", probe)] = load_causal_probabilities(m, spec, t, chat=chat,
                                                                                       options=run)
            else:
                out[(label, probe)] = load_probabilities(m, spec, label_order=orders[m], options=run)
    return out


def score(models: Sequence[str] | str, probes: Sequence[str] | str = "all", *, sample: float | int | None = None,
          seed: int = 0, label_order: Sequence[str] | str | None = None, variant: str | None = None,
          templates: Sequence | str | None = None, words: Sequence[str] | str | None = None,
          chat: bool | None = None, options: RunOptions | None = None) -> dict[tuple[str, str], object]:
    """Score each probe's pairs with each model into the score store; returns (model, probe) → its complete
    :class:`~stereoprobe.store.StoreRun` (a causal LM: (``<model> · nli:<template>``, probe))."""
    from .score_causal import score_causal_pairs
    from .scoring import score_pairs

    models = _models(models)
    specs = probe_specs(probes, sample=sample, seed=seed)
    run = as_options(options)
    kinds = model_kinds(models, variant, smoke=run.smoke)
    chosen = _causal_templates(kinds, templates, words, chat)
    orders = label_orders([m for m in models if kinds[m] != "causal"], label_order, smoke=run.smoke)
    out: dict[tuple[str, str], object] = {}
    with run.applied():
        for m in models:
            for p, spec in specs.items():
                if kinds[m] == "causal":
                    out.update({(f"{m} · nli:{t.name}", p): score_causal_pairs(m, spec, t, chat=chat, options=run)
                                for t in chosen})
                else:
                    out[(m, p)] = score_pairs(m, spec, label_order=orders[m], options=run)
    return out


def report(models: Sequence[str] | str, probes: Sequence[str] | str = "all", *, sample: float | int | None = None,
           seed: int = 0, n_boot: int = 1000, label_order: Sequence[str] | str | None = None,
           variant: str | None = None, templates: Sequence | str | None = None,
           words: Sequence[str] | str | None = None, chat: bool | None = None,
           options: RunOptions | None = None) -> Report:
    """NN, FN, T:0.5 and T:0.7 with bootstrap intervals, per model, for each probe (one table each).

    ``models``: NLI classifiers or causal LMs (hub ids, local folders, ``.gguf`` files, ``zoo:`` names); labelled in
    the tables as :func:`stereoprobe.naming.model_labels` shortens them. ``probes``: gender, nationality, religion,
    a list of them, or ``"all"``. ``sample``: pairs per probe (an int), a fraction, or None for all.
    ``label_order``: the classes of LABEL_0..LABEL_2 for classifiers with generic label names. ``variant``: None
    (each model's config decides), ``nli`` or ``causal``. Causal LMs only: ``templates`` (shipped names or YAML
    files; default both shipped NLI templates, :mod:`stereoprobe.prompts`), ``words`` (label words for
    entailment, neutral, contradiction, instead of each template's own), ``chat`` (the chat template, a plain
    prompt, or None: whichever the tokenizer has). ``options``: how it runs
    (:class:`~stereoprobe.options.RunOptions`). The tables are those of ``stereoprobe nli report``.
    """
    from . import tables

    models = _models(models)
    labels = model_labels(models, option="model")
    specs = probe_specs(probes, sample=sample, seed=seed)
    if not (isinstance(n_boot, int) and n_boot >= 1):
        raise StereoprobeError(f"n_boot={n_boot!r} must be a positive integer; pass e.g. n_boot=1000.")
    run = as_options(options)
    kinds = model_kinds(models, variant, smoke=run.smoke)
    chosen = _causal_templates(kinds, templates, words, chat)
    orders = label_orders([m for m in models if kinds[m] != "causal"], label_order, smoke=run.smoke)
    result = {}
    with run.applied():
        frames = _frames(models, labels, kinds, orders, specs, chosen, chat, run)
        for probe in specs:
            probs = {key: frame for key, frame in frames.items() if key[1] == probe}
            table = tables.measures_table(probs, ("model", "probe"), n_boot=n_boot, seed=seed)
            if chosen:
                mass = {key[0]: float(f["label_mass"].mean()) for key, f in probs.items() if "label_mass" in f}
                table["label_mass"] = table["model"].map(mass)
            result[probe] = table
    return Report(f"Bias-NLI: {len(models)} model(s) × {len(specs)} probe(s), "
                  f"{'all' if sample is None else sample} pairs per probe", result,
                  stems={p: f"nli_{p}_neutrality" for p in result}, headings={p: f"nli {p} neutrality" for p in result})


__all__ = ["label_orders", "model_kinds", "probe_specs", "report", "score"]
