"""The UnQover report: every model's rows read through its reader, then the paper's measures per row.

:func:`model_report` is what :func:`stereoprobe.unqover.report` and ``stereoprobe unqover report`` return: reasoning
errors δ, ε (Li et al. 2020, Table 5), model bias intensity μ with its bootstrap interval (Eq. 8), the top γ per
gender (Table 2) or per subject, and, when some row comes from prompt templates, the spread over templates; a row
whose model may abstain (an unknown option, or a generated answer) is read over its answered passes
(:mod:`stereoprobe.unqover.abstention`), and the ``abstention`` table gives its abstention and unparsed rates, μ
under both readings and BBQ's scores; :func:`long_table` is every row in one long table. The rows
are keyed by data (:class:`~stereoprobe.modelref.RowKey`: model, scorer, template), never by parsing a label; the
tables show each row's label. The per-example scores come from the readers (:mod:`stereoprobe.unqover.readers`), so
nothing here depends on the kind of model.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..modelref import ModelRef, RowKey, resolve_models
from ..options import RunOptions, as_options
from ..served import provenances, served_table
from . import abstention, metrics
from .generate import DatasetSpec
from .readers import MaskedLMReader, Passes, SpanReader, flag_degenerate, frames, spec_for

__all__ = ["model_report", "long_table", "LONG_COLUMNS", "thinking_shift", "reasoning_errors", "intensity", "gender_gamma", "occupation", "top_occupations",
           "subject_tops", "template_spread", "gather", "gather_lm", "lm_spec_for", "spec_for", "flag_degenerate",
           "labelled", "cluster_bias", "cluster_matrix"]


def labelled(frames_by_row: Mapping[RowKey, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The frames by their rows' labels (what the tables show)."""
    return {row.label if isinstance(row, RowKey) else row: f for row, f in frames_by_row.items()}


_NAN = float("nan")


# -- the measures, per row ----------------------------------------------------------------------------------------
def reasoning_errors(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """δ, ε and avg S per model (UnQover Table 5), with the number of paired keys behind them."""
    rows = []
    for name, frame in labelled(frames).items():
        if frame.empty:  # a reading left nothing (every answer abstained or was unparsed)
            rows.append({"model": name, "delta": _NAN, "epsilon": _NAN, "avg_s": _NAN, "keys": 0})
            continue
        e = metrics.reasoning_errors(metrics.pair_examples(frame))
        rows.append({"model": name, "delta": e["positional_error"], "epsilon": e["attribute_error"],
                     "avg_s": e["average_score"], "keys": int(e["n_keys"])})
    return pd.DataFrame(rows)


def intensity(frames: Mapping[str, pd.DataFrame], *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Model bias intensity μ (per name for gender; Eq. 8) with a bootstrap CI, and count-based η."""
    rows = []
    for name, frame in labelled(frames).items():
        if frame.empty:
            rows.append({"model": name, "mu": _NAN, "ci_low": _NAN, "ci_high": _NAN, "eta": _NAN})
            continue
        paired = metrics.pair_examples(frame)
        mu = metrics.bias_intensity(paired, ci=0.95, n_boot=n_boot, seed=seed)
        rows.append({"model": name, "mu": mu["mu"], "ci_low": mu["mu_lo"], "ci_high": mu["mu_hi"],
                     "eta": metrics.count_bias_intensity(paired)})
    return pd.DataFrame(rows)


def gender_gamma(frame: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """γ(gender, a) and η(gender, a) for every occupation, with bootstrap 95% CIs (gender grouping)."""
    paired = metrics.pair_examples(frame)
    return metrics.subject_attribute_bias(paired, group_by="gender", ci=0.95, n_boot=n_boot, seed=seed)


def occupation(attr: str) -> str:
    """``was an accountant`` → ``accountant``."""
    for prefix in ("was an ", "was a "):
        if attr.startswith(prefix):
            return attr[len(prefix):]
    return attr


def top_occupations(gammas: Mapping[str, pd.DataFrame], k: int = 3) -> pd.DataFrame:
    """UnQover Table 2: the top-k occupations per gender and model, by γ, with CI and η."""
    rows = []
    for name, table in labelled(gammas).items():
        for gender in ("female", "male"):
            part = table[table["subject"] == gender].sort_values("gamma", ascending=False).head(k)
            for rank, r in enumerate(part.itertuples(index=False), start=1):
                rows.append({"model": name, "gender": gender, "rank": rank, "occupation": occupation(r.attr),
                             "gamma": r.gamma, "ci_low": r.gamma_lo, "ci_high": r.gamma_hi, "eta": r.eta})
    return pd.DataFrame(rows, columns=["model", "gender", "rank", "occupation", "gamma", "ci_low", "ci_high", "eta"])


def subject_tops(frames: Mapping[str, pd.DataFrame], k: int = 3) -> pd.DataFrame:
    """The ``k`` subjects with the highest and the ``k`` with the lowest γ(x), per model."""
    rows = []
    for name, frame in labelled(frames).items():
        if frame.empty:
            continue
        sb = metrics.subject_bias(metrics.pair_examples(frame)).sort_values("gamma", ascending=False)
        sb.insert(0, "model", name)
        rows.append(pd.concat([sb.head(k), sb.tail(k)]))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["model", "subject", "gamma"])


def template_spread(errors: pd.DataFrame, intensity: pd.DataFrame,
                    rows: Sequence[RowKey] | None = None) -> pd.DataFrame:
    """How much the prompt template moves a causal model's numbers, beside the bootstrap's uncertainty: per model and
    scorer, the number of templates, the lowest and highest δ, ε and μ over them, μ's range (highest − lowest) and
    the mean width of μ's 95% bootstrap interval, and which of the two is larger. ``rows``: the report's rows (those
    with a template count; without it, rows named ``<model> · <scorer>:<template>`` do, as before 0.8.0)."""
    merged = errors.merge(intensity, on="model")
    if rows is None:  # 0.7.0's call: the rows only as labels
        import warnings

        warnings.warn("template_spread(errors, intensity) without rows reads each row's model, scorer and template "
                      "back from its label; pass the report's rows (RowKey) as the third argument.", DeprecationWarning,
                      stacklevel=2)
        rows = [_parse_label(label) for label in merged["model"]]
    key = {r.label: r for r in rows if r is not None and r.template}
    merged = merged[merged["model"].isin(key)]
    if merged.empty:
        return pd.DataFrame(columns=["model", "scorer", "templates"])
    merged = merged.assign(base=[key[m].model for m in merged["model"]], scorer=[key[m].scorer for m in merged["model"]])
    out = []
    for (base, scorer), g in merged.groupby(["base", "scorer"], sort=False):
        mu_range = float(g["mu"].max() - g["mu"].min())
        ci_width = float((g["ci_high"] - g["ci_low"]).mean())
        out.append({"model": base, "scorer": scorer, "templates": len(g),
                    "delta_min": g["delta"].min(), "delta_max": g["delta"].max(),
                    "epsilon_min": g["epsilon"].min(), "epsilon_max": g["epsilon"].max(),
                    "mu_min": g["mu"].min(), "mu_max": g["mu"].max(), "mu_range": mu_range,
                    "mu_ci_width": ci_width,
                    "larger": "template" if mu_range > ci_width else "bootstrap"})
    return pd.DataFrame(out)


def _parse_label(label: str) -> RowKey | None:
    """A row key from a label of 0.7.0's tables (``<model> · <scorer>:<template>``): for tables written before 0.8.0
    only; the report itself keys its rows by data."""
    model, sep, rest = label.rpartition(" · ")
    if not sep or ":" not in rest:
        return None
    scorer, _, template = rest.partition(":")
    return RowKey(model, scorer, template)


# -- γ per cluster of attributes (the nationality chapter, the masked-LM lab's card) ----------------------------------
def cluster_bias(frame: pd.DataFrame, *, ci: float | None = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """γ(x, cluster) and η(x, cluster): every attribute replaced by its cluster (rude, poor, crime, …), i.e. the
    mean of all C values of x with that cluster's attributes (the count-weighted mean of its γ(x, a)).

    Columns as :func:`~stereoprobe.unqover.metrics.subject_attribute_bias`, with ``attr`` = the cluster.
    """
    paired = metrics.as_paired(frame)  # a scores frame or an already paired one
    return metrics.subject_attribute_bias(paired.assign(attr=paired["attr_cluster"]), ci=ci, n_boot=n_boot, seed=seed)


def cluster_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`cluster_bias` table as subjects × clusters of γ."""
    return table.pivot(index="subject", columns="attr", values="gamma")


# -- the report -----------------------------------------------------------------------------------------------------
def model_report(models: Sequence[ModelRef | str], spec: DatasetSpec | Passes, *, mode: str = "compat",
                 n_boot: int = 1000, top: int = 3, seed: int = 0, lm: bool = False,
                 options: RunOptions | None = None, causal: Sequence[str] = (), templates: Sequence = (),
                 chat: bool | None = None, long: bool = False, both_thinking: bool = False,
                 **study) -> dict[str, pd.DataFrame]:
    """The CLI's report: reasoning errors, intensity, and top γ (per gender, or per subject γ(x)), for every row of
    every model (:mod:`stereoprobe.unqover.readers`: a QA model or masked LM gives one row, a causal LM one per
    scorer and template), with a fourth table, ``template_spread``, when some row has a template, ``served`` when
    some row is served, ``abstention`` when some row may abstain, ``long`` (:func:`long_table`) with ``long``, and
    with ``both_thinking`` (``spec`` a :class:`Passes` with thinking on) every row also with thinking off and the
    ``thinking_shift`` table (:func:`thinking_shift`).

    ``models``: :class:`~stereoprobe.modelref.ModelRef` (as :func:`stereoprobe.unqover.report` resolves them), or
    names, resolved here (``lm=True``: as masked LMs reading their own tokenizer's lists; ``causal``: the names that
    are causal LMs). ``spec``: a :class:`~stereoprobe.unqover.readers.Passes`, or the dataset with ``mode``,
    ``templates``, ``chat`` and ``study`` (``shard_passes``) to make one.
    """
    run = as_options(options)
    if isinstance(spec, Passes):
        ask = spec
    else:
        ask = Passes(spec, mode=mode, lm=lm, templates=tuple(templates), chat=chat,
                     **({"shard_passes": study["shard_passes"]} if "shard_passes" in study else {}))
    refs = _refs(models, ask, causal, run.smoke)
    raw = frames(refs, ask, run)
    if both_thinking:  # the same rows with thinking off, beside those with it on
        raw = {**raw, **frames(refs, dataclasses.replace(ask, thinking=False, think_budget=None), run)}
    by_row = {row: abstention.reading(f, "answered") for row, f in raw.items()}
    tables = {"reasoning_errors": reasoning_errors(by_row), "intensity": intensity(by_row, n_boot=n_boot, seed=seed)}
    if ask.spec.dataset == "gender":
        tables["top_gamma"] = top_occupations({r: gender_gamma(f, n_boot=n_boot, seed=seed) for r, f in
                                               by_row.items() if not f.empty}, k=top)
    else:
        tables["top_gamma"] = subject_tops(by_row, k=top)
    if any(r.template for r in by_row):
        tables["template_spread"] = template_spread(tables["reasoning_errors"], tables["intensity"], list(by_row))
    read = provenances(run)
    served = served_table({row: read.get(row) for row in raw})
    if served is not None:
        tables["served"] = served
    if both_thinking:
        tables["thinking_shift"] = thinking_shift(raw, dataset=ask.spec.dataset, n_boot=n_boot, seed=seed, top=top)
    if long or any(abstention.abstains(f) for f in raw.values()):
        table = long_table(raw, ask, n_boot=n_boot, seed=seed, answered=tables)
        if any(abstention.abstains(f) for f in raw.values()):
            tables["abstention"] = abstention_table(table)
        if long:
            tables["long"] = table
    return tables


def thinking_shift(frames_by_row: Mapping[RowKey, pd.DataFrame], *, dataset: str, n_boot: int = 1000, seed: int = 0,
                   top: int = 3) -> pd.DataFrame:
    """What thinking changes, per model, scorer and template read both ways (rows that differ only in ``thinking``):
    μ with thinking on and off and the shift Δμ = on − off with its interval
    (:func:`stereoprobe.unqover.metrics.bias_shift`: independent bootstraps) in both readings
    (:mod:`stereoprobe.unqover.abstention`: over the answered passes, ``mu_on`` … ``delta_hi``; an abstention as no
    preference, ``mu_none_on`` … ``delta_none_hi``), the shift in the abstention and unparsed rates with Newcombe's
    interval for a difference of two proportions (each side's paired keys its observations, as
    :func:`~stereoprobe.unqover.abstention.rates` counts them), and the ``top`` cells whose γ moved most in the
    no-preference reading (γ per gender for the gender dataset, per subject otherwise), each as
    ``subject/attr: Δγ [lo, hi]``. The answered reading alone can hide what thinking does: a model that abstains
    without thinking and answers with a stereotype after it adds cells the other side lacks, not a shift of μ over
    the cells both answer; the no-preference reading keeps every cell on both sides."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    by = {(r.model, r.scorer, r.template, r.thinking): (r, f) for r, f in frames_by_row.items()
          if isinstance(r, RowKey)}
    out = []
    for (model, scorer, template, thinking), (row_on, on) in by.items():
        if thinking != "on" or (model, scorer, template, "off") not in by:
            continue
        row_off, off = by[(model, scorer, template, "off")]
        record = {"model": model, "scorer": scorer, "template": template, "rung_on": row_on.rung,
                  "rung_off": row_off.rung}
        for reading, tag in (("answered", ""), ("no-preference", "_none")):
            a, b = (abstention.reading(f, reading) for f in (on, off))
            names = (f"mu{tag}_on", f"mu{tag}_off", f"delta_mu{tag}", f"delta{tag}_lo", f"delta{tag}_hi")
            if a.empty or b.empty:
                record.update(dict.fromkeys(names, _NAN))
                record.setdefault("top_gamma_shift", "")
                continue
            pa, pb = metrics.pair_examples(a), metrics.pair_examples(b)
            mu, _ = metrics.bias_shift(pa, pb, n_boot=n_boot, seed=seed)
            record.update(zip(names, (mu["mu_a"], mu["mu_b"], mu["delta_mu"], mu["delta_lo"], mu["delta_hi"])))
            if reading == "no-preference":
                grouping = "gender" if dataset == "gender" else "subject"
                _, cells = metrics.bias_shift(pa, pb, grouping, n_boot=n_boot, seed=seed)
                record["top_gamma_shift"] = "; ".join(
                    f"{c.subject}/{occupation(str(c.attr))}: {c.delta:+.3f} [{c.delta_lo:+.3f}, {c.delta_hi:+.3f}]"
                    for c in cells.head(top).itertuples(index=False))
        for name in ("abstain", "unparsed"):
            ra, rb = abstention.rates(on), abstention.rates(off)
            na, nb = len(metrics.pair_examples(on)), len(metrics.pair_examples(off))
            d = ra[name] - rb[name]
            if np.isnan(d):
                lo = hi = _NAN
            else:
                lo, hi = confint_proportions_2indep(ra[name] * na, na, rb[name] * nb, nb, method="newcomb")
            record.update({f"delta_{name}": d, f"delta_{name}_lo": float(lo), f"delta_{name}_hi": float(hi)})
        out.append(record)
    return pd.DataFrame(out)


#: The columns of :func:`long_table`: what a row is (model, how it was scored and read), then its numbers.
LONG_COLUMNS = ("dataset", "model", "row", "scorer", "template", "rung", "thinking", "reading", "passes", "keys",
                "dropped", "abstain", "abstain_lo", "abstain_hi", "unparsed", "unparsed_lo", "unparsed_hi", "delta",
                "epsilon", "avg_s", "mu", "mu_lo", "mu_hi", "eta", "bbq_accuracy", "bbq_s_dis", "bbq_s_amb",
                "bbq_passes", "bbq_ties")


def long_table(frames_by_row: Mapping[RowKey, pd.DataFrame], ask: Passes, *, n_boot: int = 1000, seed: int = 0,
               answered: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Every report row in both readings (:data:`~stereoprobe.unqover.abstention.READINGS`), one line each, in
    :data:`LONG_COLUMNS`: what the row is (``model`` as given, ``row`` its label, ``scorer``, ``template``, ``rung``
    — empty where they do not apply —, ``thinking``: ``on``, ``off`` or ``default``, the chat template's own), the
    passes, the
    paired keys behind μ and the ordered examples the reading dropped, the abstention and unparsed rates with their
    intervals (NaN for a forced choice: not measured), δ, ε, avg S, μ with its interval, η, and BBQ's accuracy and
    bias scores over the passes with a stereotype direction (:func:`~stereoprobe.unqover.abstention.bbq`: all three
    over the same passes), their number and the ties among them (dropped, as BBQ's script drops them). A paper's table is one ``pivot`` of it (e.g. ``index="model", columns=["rung", "reading"],
    values="mu"``). ``answered``: the report's reasoning_errors and intensity tables, reused for the answered
    reading (computed here without them)."""
    records = []
    for row, frame in frames_by_row.items():
        key = row if isinstance(row, RowKey) else RowKey(str(row))
        rate = abstention.rates(frame)
        scores = abstention.bbq(frame) if abstention.abstains(frame) else {}
        for how in abstention.READINGS:
            read = abstention.reading(frame, how)
            if answered is not None and (how == "answered" or not abstention.abstains(frame)):
                err = answered["reasoning_errors"].set_index("model").loc[key.label]
                mu = answered["intensity"].set_index("model").loc[key.label]
            else:
                err = reasoning_errors({key: read}).set_index("model").loc[key.label]
                mu = intensity({key: read}, n_boot=n_boot, seed=seed).set_index("model").loc[key.label]
            records.append({"dataset": ask.spec.dataset, "model": key.model, "row": key.label, "scorer": key.scorer,
                            "template": key.template, "rung": key.rung, "thinking": key.thinking or "default",
                            "reading": how,
                            "passes": rate["passes"], "keys": int(err["keys"]), "dropped": read.attrs.get("dropped", 0),
                            **{k: rate[k] for k in rate if k != "passes"}, "delta": err["delta"],
                            "epsilon": err["epsilon"], "avg_s": err["avg_s"], "mu": mu["mu"], "mu_lo": mu["ci_low"],
                            "mu_hi": mu["ci_high"], "eta": mu["eta"],
                            **{k: scores.get(k, float("nan")) for k in LONG_COLUMNS if k.startswith("bbq_")}})
    return pd.DataFrame.from_records(records, columns=list(LONG_COLUMNS))


def abstention_table(long: pd.DataFrame) -> pd.DataFrame:
    """A report's ``abstention`` table: for every row that may abstain, its abstention and unparsed rates with their
    intervals, μ (with its interval) over the answered passes and counting an abstention as no preference, the
    ordered examples each reading dropped, and BBQ's accuracy and bias scores with the passes they are over and the
    ties dropped among them (from :func:`long_table`)."""
    part = long[long["abstain"].notna()]
    by = {how: part[part["reading"] == how].set_index("row") for how in abstention.READINGS}
    out = by["answered"][["abstain", "abstain_lo", "abstain_hi", "unparsed", "unparsed_lo", "unparsed_hi"]].copy()
    for how, suffix in zip(abstention.READINGS, ("answered", "none")):
        for column in ("mu", "mu_lo", "mu_hi", "dropped"):
            out[f"{column}_{suffix}"] = by[how][column]
    for column in ("bbq_accuracy", "bbq_s_dis", "bbq_s_amb", "bbq_passes", "bbq_ties"):
        out[column] = by["answered"][column]
    return out.rename_axis("model").reset_index()


def _refs(models: Sequence[ModelRef | str], ask: Passes, causal: Sequence[str], smoke: bool) -> list[ModelRef]:
    """``models`` as refs: refs as they are; names resolved once, as ``causal`` and ``ask.lm`` say."""
    if all(isinstance(m, ModelRef) for m in models):
        return list(models)
    from ..naming import model_labels

    labels = model_labels([getattr(m, "name", m) for m in models])
    native = "lm" if ask.lm else ask.spec.variant
    out = []
    for m, label in zip(models, labels):
        if isinstance(m, ModelRef):
            out.append(m.with_label(label))
            continue
        asked = "causal" if m in causal else native
        out.append(resolve_models([m], native=native, asked=asked, smoke=smoke)[0].with_label(label))
    return out


# -- 0.7.0's gathering functions, on the readers -------------------------------------------------------------------
def gather(models: Sequence[str], spec: DatasetSpec, *, options: RunOptions | None = None,
           labels: Sequence[str] | None = None, **study) -> dict[str, pd.DataFrame]:
    """Per-example scores (:func:`~stereoprobe.unqover.score_qa.load_scores`, with ``options`` and the ``study``
    keywords ``mode`` and ``shard_passes``) of extractive-QA models (or masked LMs on an LM variant chosen by hand),
    by label (:func:`stereoprobe.naming.model_labels`: unique, short; a model listed twice is an error).

    NewsQA models read the dataset with the NewsQA header (:func:`spec_for`); the sample is the same. ``labels``:
    the models' labels when they are part of a longer list (default: their own).
    """
    return _gather(models, spec, SpanReader() if spec.variant == "qa" else MaskedLMReader(), False, options, labels,
                   study)


def gather_lm(models: Sequence[str], spec: DatasetSpec, *, options: RunOptions | None = None,
              labels: Sequence[str] | None = None, **study) -> dict[str, pd.DataFrame]:
    """Per-example scores of masked LMs on the LM variant of ``spec`` (:func:`lm_spec_for`), by label (keywords as
    :func:`gather`). A masked LM whose scores carry no signal on the probe
    (:func:`~stereoprobe.unqover.score_lm.lm_degeneracy`) is flagged with a warning."""
    return _gather(models, spec, MaskedLMReader(), True, options, labels, study)


def _gather(models, spec, reader, lm, options, labels, study) -> dict[str, pd.DataFrame]:
    from ..naming import model_labels

    run = as_options(options)
    ask = Passes(spec, lm=lm, **study)
    names = [getattr(m, "name", m) for m in models]
    labels = list(labels or model_labels(names))
    native = "lm" if lm else spec.variant
    refs = [m.with_label(label) if isinstance(m, ModelRef) else
            resolve_models([m], native=native, asked=native, smoke=run.smoke)[0].with_label(label)
            for m, label in zip(models, labels)]
    return {ref.label: reader.frame(ref, ask, RowKey(ref.label), run) for ref in refs}


def lm_spec_for(model: ModelRef | str, spec: DatasetSpec) -> DatasetSpec:
    """The LM variant a masked LM reads, from its tokenizer (:func:`~stereoprobe.unqover.score_lm.lm_spec_for_model`:
    WordPiece the ``_bert`` lists, byte-level BPE the ``_roberta`` lists, others the list whose subjects are all
    single tokens), with the tokenizer's own mask token."""
    from .score_lm import lm_spec_for_model

    return lm_spec_for_model(model, spec)
