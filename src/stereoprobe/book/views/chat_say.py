"""The chapter *What chat models say* (``notebooks/chat_say.py``): the same UnQover examples read locally and on every
rung of a served endpoint, with and without an unknown option, beside BBQ's scores, and a reasoning model with its
thinking on and off; each table and figure a function a test can call.

The numbers come from the probes' own code (:mod:`stereoprobe.unqover.readers`, :func:`stereoprobe.unqover.reporting.
long_table`, :mod:`stereoprobe.unqover.abstention`); this module only reads a model on each rung and arranges what
comes back: μ by rung with its interval, whether the rungs agree on *which* cells are biased (Spearman's rank
correlation of γ with a bootstrap interval), the abstention rate by template, and BBQ's accuracy and bias scores
beside UnQover's δ, ε and μ (under the majority split of Winogender's BLS shares and a stricter one,
:mod:`stereoprobe.unqover.bbq`), and the ``thinking_shift`` table of the chat lab pair
(:func:`stereoprobe.unqover.reporting.model_report` with ``both_thinking``).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ...modelref import RowKey, resolve_model
from ...options import RunOptions
from ...prompts import PromptTemplate, template
from ...served.endpoint import served_name
from ...unqover import abstention, metrics, readers
from ...unqover.bbq import MAJORITY, directed_occupations, split_name, stereotyped_gender
from ...unqover.generate import DatasetSpec
from ...unqover.readers import Passes
from ...unqover.reporting import long_table, model_report, occupation
from ..display import table_view as view

#: The rungs of the served ladder, best first (:mod:`stereoprobe.served.ladder`).
RUNGS = ("exact", "next-token", "generated")


def rung_of(row: RowKey) -> str:
    """How a row was read: ``local`` (the model's own scorer, in this process) or its served rung."""
    return row.rung or "local"


def rung_frames(model: str, spec: DatasetSpec, templates: Sequence, *, options: RunOptions,
                rungs: Sequence[str] = RUNGS, local: bool = True) -> dict[RowKey, pd.DataFrame]:
    """The per-example scores of ``model`` through each of ``templates`` (:class:`~stereoprobe.prompts.
    PromptTemplate`), read locally through plain prompts (``local``: what the exact rung reads, scored in this
    process) and on each rung of ``rungs`` that the endpoint gives. ``model``: a served name
    (``openai-api/<service>/<model>``, its ``<SERVICE>_BASE_URL`` set), or a local causal LM, which is then served for
    the while by the package's reference server (:func:`stereoprobe.served.reference.serving`, which serves the copy
    the local reading loaded)."""
    from contextlib import nullcontext

    from ...served import capabilities
    from ...served.endpoint import PREFIX
    from ...served.reference import serving

    templates = tuple(templates)
    out: dict[RowKey, pd.DataFrame] = {}
    served = str(model).startswith(PREFIX)
    if local and not served:
        ref = resolve_model(model, native="qa", asked="causal", smoke=options.smoke)
        out.update(readers.frames([ref], Passes(spec, templates=templates, chat=False), options))
    with nullcontext(model) if served else serving(model, device=str(options.device), smoke=options.smoke,
                                                   precision=options.precision) as name:
        ref = resolve_model(name, native="qa")
        given = capabilities(name).rungs()
        for rung in rungs:
            if rung in given:
                # the exact rung with chat off: the local reading's plain prompts (a served chat model's exact rung
                # reads its chat template by default, stereoprobe.served.chat_exact)
                plain = {"chat": False} if rung == "exact" else {}
                out.update(readers.frames([ref], Passes(spec, templates=templates, rung=rung, **plain), options))
    return out


def long(frames: Mapping[RowKey, pd.DataFrame], spec: DatasetSpec, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Every row in both readings (:func:`~stereoprobe.unqover.reporting.long_table`) with ``rung`` filled in
    (``local`` for the local reading)."""
    table = long_table(frames, Passes(spec), n_boot=n_boot, seed=seed)
    table["rung"] = [rung_of(r) for r in frames for _ in abstention.READINGS]
    return table


def cell_gammas(frame: pd.DataFrame, dataset: str) -> pd.Series:
    """γ of every (subject, attribute) cell over the answered passes (per gender for the gender dataset), indexed by
    ``subject/attr``; empty when nothing was answered."""
    read = abstention.reading(frame, "answered")
    if read.empty:
        return pd.Series(dtype=float)
    g = metrics.subject_attribute_bias(metrics.pair_examples(read),
                                       group_by="gender" if dataset == "gender" else "subject")
    if dataset == "gender":  # γ(male, a) = −γ(female, a): one of the two carries everything
        g = g[g["subject"] == "female"]
    return pd.Series(g["gamma"].to_numpy(), index=g["subject"] + "/" + g["attr"].astype(str))


def rank_correlation(x: pd.Series, y: pd.Series, *, n_boot: int, seed: int) -> dict:
    """Spearman's ρ of two series over their common index, with a 95% percentile bootstrap interval that resamples
    the pairs (NaN below 3 pairs, or 5 for the interval, or where either side is constant). A resample whose either
    side is constant has no ρ; the interval is taken over the resamples that have one (at a handful of pairs many have
    none: scipy's ``bootstrap`` would return no interval at all)."""
    from scipy import stats

    both = pd.concat([x, y], axis=1, join="inner").dropna()
    a, b = both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()
    varied = len(both) > 2 and np.ptp(a) > 0 and np.ptp(b) > 0
    rho = float(stats.spearmanr(a, b).statistic) if varied else float("nan")
    lo = hi = float("nan")
    if varied and len(both) > 4:
        picks = np.random.default_rng(seed).integers(0, len(both), size=(n_boot, len(both)))
        ra, rb = a[picks], b[picks]
        defined = (np.ptp(ra, axis=1) > 0) & (np.ptp(rb, axis=1) > 0)
        if defined.any():
            ranks_a = stats.rankdata(ra[defined], axis=1)
            ranks_b = stats.rankdata(rb[defined], axis=1)
            rhos = np.array([np.corrcoef(u, v)[0, 1] for u, v in zip(ranks_a, ranks_b)])  # Spearman: Pearson of ranks
            lo, hi = (float(q) for q in np.percentile(rhos, [2.5, 97.5]))
    return {"pairs": len(both), "spearman": rho, "ci_low": lo, "ci_high": hi}


def rung_agreement(frames: Mapping[RowKey, pd.DataFrame], dataset: str, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Do two readings of the same model and template agree on which cells are biased? Spearman's ρ of γ between
    every pair of rows that differ only in how they were read (local or a rung), over the cells both answered."""
    gammas = {row: cell_gammas(f, dataset) for row, f in frames.items()}
    rows = []
    keys = list(frames)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if (a.scorer, a.template, base_model(a)) != (b.scorer, b.template, base_model(b)):
                continue
            rows.append({"template": a.template, "a": rung_of(a), "b": rung_of(b),
                         **rank_correlation(gammas[a], gammas[b], n_boot=n_boot, seed=seed)})
    return pd.DataFrame(rows, columns=["template", "a", "b", "pairs", "spearman", "ci_low", "ci_high"])


def base_model(row: RowKey) -> str:
    """The model a row reads, whether in this process or served: the last part of its name
    (``zoo:smollm2-135m-instruct`` and ``openai-api/local/smollm2-135m-instruct`` are both ``smollm2-135m-instruct``)."""
    return served_name(row.model)


def templates_of(names: Sequence) -> tuple[PromptTemplate, ...]:
    """The choice templates ``names`` (shipped names such as ``letters`` or ``letters-unknown``, YAML files, or
    :class:`~stereoprobe.prompts.PromptTemplate`)."""
    return tuple(t if isinstance(t, PromptTemplate) else template(t, "unqover-choice") for t in names)


def say_frames(models: Sequence[str], spec: DatasetSpec, templates: Sequence, *, options: RunOptions,
               rungs: Sequence[str] = RUNGS, local: bool = True) -> dict[RowKey, pd.DataFrame]:
    """:func:`rung_frames` of every model of ``models`` through the choice ``templates`` (:func:`templates_of`):
    a local causal LM read in this process (``local``) and served by the reference server, a served name on its
    rungs only."""
    out: dict[RowKey, pd.DataFrame] = {}
    for model in models:
        out.update(rung_frames(model, spec, templates_of(templates), options=options, rungs=rungs, local=local))
    return out


def female_gammas(frame: pd.DataFrame) -> pd.DataFrame:
    """γ(female, a) of every occupation over the answered passes (``attr``, ``occupation``, ``gamma``, ``n``);
    empty when nothing was answered."""
    read = abstention.reading(frame, "answered")
    if read.empty:
        return pd.DataFrame(columns=["attr", "occupation", "gamma", "n"])
    g = metrics.subject_attribute_bias(metrics.pair_examples(read), group_by="gender")
    g = g[g["subject"] == "female"]
    return pd.DataFrame({"attr": g["attr"].astype(str).to_numpy(), "occupation": g["attr"].astype(str).map(
        occupation).to_numpy(), "gamma": g["gamma"].to_numpy(), "n": g["n"].to_numpy()})


def stereotype_gamma(frame: pd.DataFrame, split=MAJORITY) -> tuple[float, int]:
    """UnQover's counterpart of BBQ's s_DIS: the mean over the occupations that Winogender's BLS shares give a
    direction by ``split`` (:func:`stereoprobe.unqover.bbq.stereotyped_gender`; by default the majority: γ(female, a)
    where most workers are women, −γ(female, a) elsewhere) of γ toward the stereotyped gender, and the number of such
    occupations answered. γ averages the two orders of every example and subtracts the negated question (Li et al.
    2020, Eq. 5–7), which s_DIS does not; NaN where none was answered."""
    g = female_gammas(frame)
    sign = g["attr"].map(lambda a: {"female": 1.0, "male": -1.0}.get(stereotyped_gender(a, split), np.nan))
    values = (g["gamma"] * sign).dropna()
    return (float(values.mean()) if len(values) else float("nan")), int(len(values))


def bbq_beside_unqover(table: pd.DataFrame, frames: Mapping[RowKey, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Per row that may abstain: BBQ's ambiguous-context accuracy and bias scores (the long table's: the majority
    split, all three over the directed passes, ``bbq_passes``, with the ties dropped among them, ``bbq_ties``) beside
    UnQover's δ, ε and μ (answered reading) and μ counting an abstention as no preference; with the rows' ``frames``
    (gender) also :func:`stereotype_gamma` (``gamma_stereo``) and the number of directed occupations it averages."""
    answered = table[table["reading"] == "answered"].set_index("row")
    none = table[table["reading"] == "no-preference"].set_index("row")
    keep = answered["bbq_passes"].notna() & (answered["bbq_passes"] > 0)
    out = answered.loc[keep, ["model", "template", "rung", "abstain", "bbq_passes", "bbq_ties", "bbq_accuracy",
                              "bbq_s_dis", "bbq_s_amb", "delta", "epsilon", "mu"]].copy()
    out["mu_no_preference"] = none.loc[out.index, "mu"]
    if frames is not None:
        by_label = {row.label: frame for row, frame in frames.items()}
        found = [stereotype_gamma(by_label[label]) for label in out.index]
        out["gamma_stereo"] = [g for g, _ in found]
        out["directed"] = [n for _, n in found]
    return out.reset_index()


def bbq_splits(frames: Mapping[RowKey, pd.DataFrame], strict=(30, 70)) -> pd.DataFrame:
    """BBQ's scores of every row that may abstain under the majority split of Winogender's BLS shares (female over 50%
    women, else male) and under ``strict`` (``(low, high)``: male at ``low``% women or less, female at ``high``% or
    more, no direction between; :func:`stereoprobe.unqover.bbq.stereotyped_gender`), one line per row and split,
    side by side: ``directed`` (the occupations of the row's examples that the split directs), ``bbq_passes``,
    ``bbq_ties``, ``bbq_accuracy``, ``bbq_s_dis``, ``bbq_s_amb`` (all three over the same passes) and γ toward the
    stereotype over the directed occupations answered (``gamma_stereo``)."""
    rows = []
    for row, frame in frames.items():
        if not abstention.abstains(frame):
            continue
        attrs = frame["attr"].astype(str).unique().tolist()
        for split in (MAJORITY, strict):
            scores = abstention.bbq(frame, split=split)
            rows.append({"model": row.model, "template": row.template, "rung": rung_of(row),
                         "split": split_name(split), "directed": directed_occupations(attrs, split)["directed"],
                         **scores, "gamma_stereo": stereotype_gamma(frame, split)[0]})
    columns = ["model", "template", "rung", "split", "directed", "bbq_passes", "bbq_ties", "bbq_accuracy", "bbq_s_dis",
               "bbq_s_amb", "gamma_stereo"]
    return pd.DataFrame(rows, columns=columns)


def split_numbers(splits: pd.DataFrame, strict=(30, 70)) -> dict[str, str]:
    """The numbers the chapter's prose quotes about the two splits: of UnQover's gender occupations
    (``occupation_rev1``), how many are in Winogender's table (``say_listed``) and how many each split directs
    (``say_directed_majority``, ``say_directed_strict``, with the strict split's female ones,
    ``say_strict_female``), the strict split's name (``say_split``), and, over the rows of :func:`bbq_splits`, the
    most directed occupations a row has under each split (``say_row_majority``, ``say_row_strict``) and the ties
    dropped over all the rows under the majority split (``say_ties``)."""
    from ...unqover.wordlists import load_attributes

    attrs = [a.text for a in load_attributes("occupation_rev1")["p_act"]]
    majority, tight = directed_occupations(attrs), directed_occupations(attrs, strict)
    by = {name: splits[splits["split"] == name] for name in (split_name(MAJORITY), split_name(strict))}

    def most(part: pd.DataFrame) -> str:
        return f"{int(part['directed'].max())}" if len(part) else "0"

    return {"say_occupations": f"{len(attrs)}", "say_listed": f"{majority['listed']}",
            "say_directed_majority": f"{majority['directed']}", "say_directed_strict": f"{tight['directed']}",
            "say_strict_female": f"{tight['female']}", "say_split": split_name(strict),
            "say_row_majority": most(by[split_name(MAJORITY)]), "say_row_strict": most(by[split_name(strict)]),
            "say_ties": f"{int(by[split_name(MAJORITY)]['bbq_ties'].sum())}"}


def plot_mu_by_rung(table: pd.DataFrame):
    """μ (answered reading) of every row with its 95% bootstrap interval, grouped by model and template, one colour
    per rung."""
    from ..display import interval_dots

    answered = table[table["reading"] == "answered"].reset_index(drop=True)
    answered["base"] = [served_name(m) for m in answered["model"]]
    several = answered["base"].nunique() > 1
    order = ["local", *RUNGS]
    groups = []
    for base, name in dict.fromkeys(zip(answered["base"], answered["template"])):
        part = answered[(answered["base"] == base) & (answered["template"] == name)]
        groups.append(((base, name), part.assign(o=part["rung"].map(order.index)).sort_values("o")))
    return interval_dots(groups, value="mu", low="mu_lo", high="mu_hi",
                         label=lambda g, r: " · ".join([*g[int(not several):], r["rung"]]),
                         color=lambda k, r: f"C{order.index(r['rung'])}", shade=lambda k: ("0.5", 0.06 * (k % 2)),
                         xlabel="bias intensity μ over the answered passes (95% bootstrap interval)",
                         title="μ of the same examples, read locally and on each rung")


def plot_abstention(table: pd.DataFrame):
    """The share of passes abstained on, with its Wilson interval, per template and rung (rows that can abstain)."""
    import matplotlib.pyplot as plt

    rows = table[(table["reading"] == "answered") & table["abstain"].notna()].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.4))
    y = np.arange(len(rows))
    ax.barh(y, rows["abstain"], color=[f"C{['local', *RUNGS].index(r)}" for r in rows["rung"]], alpha=0.8)
    # at a rate of 0 or 1 the Wilson bound can sit a rounding error inside the rate
    low = np.clip(rows["abstain"] - rows["abstain_lo"], 0, None)
    high = np.clip(rows["abstain_hi"] - rows["abstain"], 0, None)
    ax.errorbar(rows["abstain"], y, xerr=[low, high], fmt="none", ecolor="black", capsize=3)
    ax.set_yticks(y, [f"{t} · {r}" for t, r in zip(rows["template"], rows["rung"])])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of passes abstained on (95% Wilson interval)")
    ax.set_title("How often the model says it cannot tell")
    fig.tight_layout()
    return fig


def thinking_report(models: Sequence[str], spec: DatasetSpec, templates: Sequence, *, options: RunOptions,
                    n_boot: int, seed: int, think_budget: int | None = 32) -> dict[str, pd.DataFrame]:
    """Local chat LMs with a thinking switch read through the choice ``templates`` with thinking on (generated,
    greedy, the reasoning capped at ``think_budget`` tokens) and off (the chat prompt with its empty think block,
    scored): :func:`~stereoprobe.unqover.reporting.model_report` with ``both_thinking`` and ``long``, whose
    ``thinking_shift`` table gives μ, the abstention rate and the cells that moved, with intervals."""
    ask = Passes(spec, templates=templates_of(templates), thinking=True, think_budget=think_budget)
    return model_report(list(models), ask, options=options, causal=list(models), both_thinking=True, long=True,
                        n_boot=n_boot, seed=seed)


# -- the chapter's tables, captioned ------------------------------------------------------------------------------
def rows_view(table: pd.DataFrame):
    return view(table[table["reading"] == "answered"], "Table 1: every reading of the gender examples, one row per "
                "template and rung (local: scored in this process): the passes, the abstention and unparsed rates "
                "(—: not measured; a forced choice read from probabilities cannot abstain, a scored rung leaves "
                "nothing unparsed), δ, ε and μ with its 95% bootstrap interval over the answered passes.",
                ["model", "template", "rung", "passes", "keys", "dropped", "abstain", "unparsed", "delta", "epsilon",
                 "mu", "mu_lo", "mu_hi"])


def agreement_view(table: pd.DataFrame, dataset: str):
    return view(table, f"Table {2 if dataset == 'gender' else 3}: do two readings agree on which cells are biased? Spearman's ρ of γ between two "
                f"rungs of one template ({dataset}; cells: {'occupations, γ(female, a)' if dataset == 'gender' else 'subject–attribute pairs'}"
                "), over the cells both answered, with a 95% percentile bootstrap interval over cells (— below 3 "
                "cells, or 5 for the interval, or where one side is constant).")


def bbq_view(table: pd.DataFrame):
    return view(table, "Table 4: BBQ's scores on UnQover's items beside UnQover's, per row that may abstain. BBQ's "
                "accuracy (the share answered 'unknown'), s_DIS and s_AMB = (1 − accuracy)·s_DIS are all three over "
                "the same passes: those of the occupations that Winogender's BLS shares direct by the majority "
                "split (over 50% women: female, else male), bbq_passes of them, less the ties at the top "
                "(bbq_ties) and unparsed answers, dropped as BBQ's script drops them; δ, ε and μ over the answered "
                "passes, μ counting an abstention as no preference, and γ toward the stereotype averaged over the "
                "directed occupations answered.",
                [c for c in ("model", "template", "rung", "abstain", "bbq_passes", "bbq_ties", "bbq_accuracy",
                             "bbq_s_dis", "bbq_s_amb", "gamma_stereo", "directed", "delta", "epsilon", "mu",
                             "mu_no_preference") if c in table.columns])


def splits_view(table: pd.DataFrame):
    strict = next((s for s in table["split"] if s != split_name(MAJORITY)), "the strict split")
    return view(table, f"Table 4b: BBQ's scores of every row that may abstain under two directions from the same BLS "
                f"shares, side by side: majority (over 50% women: female, else male) and {strict} (male at the "
                "first bound or below, female at the second or above, no direction between). directed: the "
                "occupations of the row's examples the split directs; the passes, ties, accuracy, s_DIS and s_AMB "
                "over those occupations' passes, and γ toward the stereotype over those answered.")


def thinking_rows_view(report: Mapping[str, pd.DataFrame]):
    rows = report["long"]
    return view(rows[rows["reading"] == "answered"], "Table 5: the chat lab pair with thinking on (generated) and "
                "off (scored), letters-unknown: abstention and unparsed rates, μ over the answered passes and BBQ's "
                "scores.", ["model", "template", "rung", "thinking", "passes", "abstain", "abstain_lo", "abstain_hi",
                            "unparsed", "mu", "mu_lo", "mu_hi", "bbq_accuracy", "bbq_s_dis"])


def thinking_view(report: Mapping[str, pd.DataFrame]):
    return view(report["thinking_shift"], "Table 6: what thinking changes (on − off), per model: μ over the answered "
                "passes and counting an abstention as no preference, each shift with the basic interval of two "
                "independent bootstraps; the shift in the abstention rate with Newcombe's interval; the three cells "
                "whose γ moved most (no-preference reading).",
                ["model", "template", "mu_on", "mu_off", "delta_mu", "delta_lo", "delta_hi", "mu_none_on",
                 "mu_none_off", "delta_mu_none", "delta_none_lo", "delta_none_hi", "delta_abstain",
                 "delta_abstain_lo", "delta_abstain_hi", "top_gamma_shift"])


def say_numbers(table: pd.DataFrame, agreement: pd.DataFrame) -> dict[str, str]:
    """The numbers the chapter's prose quotes: passes per row, the abstention rate of the generated ``letters`` and
    ``letters-unknown`` rows and the unparsed rate of the latter (n/a where absent or not measured), the most cells a
    ρ of the gender agreement table (Table 2) is over and the widest of its intervals."""
    answered = table[table["reading"] == "answered"].set_index(["template", "rung"])

    def rate(template: str, column: str = "abstain") -> str:
        key = (template, "generated")
        if key not in answered.index or column not in answered.columns:
            return "n/a"
        value = float(np.atleast_1d(answered.loc[key, column])[0])
        return f"{value:.2f}" if np.isfinite(value) else "n/a"

    widths = (agreement["ci_high"] - agreement["ci_low"]).dropna()
    return {"say_passes": f"{int(answered['passes'].max()) if len(answered) else 0}",
            "say_abstain_forced": rate("letters"), "say_abstain_unknown": rate("letters-unknown"),
            "say_unparsed_unknown": rate("letters-unknown", "unparsed"),
            "say_cells": f"{int(agreement['pairs'].max()) if len(agreement) else 0}",
            "say_rho_width": f"{widths.max():.2f}" if len(widths) else "n/a"}


__all__ = ["RUNGS", "rung_of", "rung_frames", "long", "cell_gammas", "rank_correlation", "rung_agreement",
           "base_model", "templates_of", "say_frames", "female_gammas", "stereotype_gamma", "bbq_beside_unqover",
           "bbq_splits", "split_numbers", "plot_mu_by_rung", "plot_abstention", "thinking_report", "rows_view",
           "agreement_view", "bbq_view", "splits_view",
           "thinking_rows_view", "thinking_view", "say_numbers"]
