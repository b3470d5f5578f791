"""What a chat model says (issue 39's chapter, in progress): the same UnQover examples read locally and on every rung
of a served endpoint, with and without an unknown option, beside BBQ's scores; each table and figure a function a
test can call.

The numbers come from the probes' own code (:mod:`stereoprobe.unqover.readers`, :func:`stereoprobe.unqover.reporting.
long_table`, :mod:`stereoprobe.unqover.abstention`); this module only reads a model on each rung and arranges what
comes back: μ by rung with its interval, whether the rungs agree on *which* cells are biased (Spearman's rank
correlation of γ with a bootstrap interval), the abstention rate by template, and BBQ's accuracy and bias scores
beside UnQover's δ, ε and μ.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ...modelref import RowKey, resolve_model
from ...options import RunOptions
from ...unqover import abstention, metrics, readers
from ...unqover.generate import DatasetSpec
from ...unqover.readers import Passes
from ...unqover.reporting import long_table

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
    the while by the package's reference server (:func:`stereoprobe.served.reference.serving`)."""
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
    with nullcontext(model) if served else serving(model, device=str(options.device), smoke=options.smoke) as name:
        ref = resolve_model(name, native="qa")
        given = capabilities(name).rungs()
        for rung in rungs:
            if rung in given:
                out.update(readers.frames([ref], Passes(spec, templates=templates, rung=rung), options))
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
    the pairs (scipy; NaN below 3 pairs, or 5 for the interval, or where either side is constant)."""
    from scipy import stats

    both = pd.concat([x, y], axis=1, join="inner").dropna()
    a, b = both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()
    varied = len(both) > 2 and np.ptp(a) > 0 and np.ptp(b) > 0
    rho = float(stats.spearmanr(a, b).statistic) if varied else float("nan")
    lo = hi = float("nan")
    if varied and len(both) > 4:
        res = stats.bootstrap((a, b), lambda u, v: stats.spearmanr(u, v).statistic, paired=True, vectorized=False,
                              n_resamples=n_boot, method="percentile", random_state=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return {"pairs": len(both), "spearman": rho, "ci_low": lo, "ci_high": hi}


def rung_agreement(frames: Mapping[RowKey, pd.DataFrame], dataset: str, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Do two readings of the same model and template agree on which cells are biased? Spearman's ρ of γ between
    every pair of rows that differ only in how they were read (local or a rung), over the cells both answered."""
    gammas = {row: cell_gammas(f, dataset) for row, f in frames.items()}
    rows = []
    keys = list(frames)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if (a.scorer, a.template) != (b.scorer, b.template):
                continue
            rows.append({"template": a.template, "a": rung_of(a), "b": rung_of(b),
                         **rank_correlation(gammas[a], gammas[b], n_boot=n_boot, seed=seed)})
    return pd.DataFrame(rows, columns=["template", "a", "b", "pairs", "spearman", "ci_low", "ci_high"])


def bbq_beside_unqover(table: pd.DataFrame) -> pd.DataFrame:
    """Per row of a template with an unknown option: BBQ's ambiguous-context accuracy and bias scores beside
    UnQover's δ, ε and μ (answered reading) and μ counting an abstention as no preference."""
    answered = table[table["reading"] == "answered"].set_index("row")
    none = table[table["reading"] == "no-preference"].set_index("row")
    keep = answered["bbq_passes"].notna() & (answered["bbq_passes"] > 0)
    out = answered.loc[keep, ["template", "rung", "abstain", "bbq_accuracy", "bbq_s_dis", "bbq_s_amb", "delta",
                              "epsilon", "mu"]].copy()
    out["mu_no_preference"] = none.loc[out.index, "mu"]
    return out.reset_index()


def plot_mu_by_rung(table: pd.DataFrame):
    """μ (answered reading) of every row with its 95% bootstrap interval, grouped by template, one marker per rung."""
    import matplotlib.pyplot as plt

    answered = table[table["reading"] == "answered"].reset_index(drop=True)
    templates = list(dict.fromkeys(answered["template"]))
    order = ["local", *RUNGS]
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(answered) + 1.4))
    y, ticks, labels = 0, [], []
    for k, template in enumerate(templates):
        part = answered[answered["template"] == template]
        part = part.assign(o=part["rung"].map(order.index)).sort_values("o")
        for _, r in part.iterrows():
            err = [[max(r["mu"] - r["mu_lo"], 0)], [max(r["mu_hi"] - r["mu"], 0)]] if np.isfinite(r["mu"]) else None
            ax.errorbar(r["mu"], y, xerr=err, fmt="o", color=f"C{order.index(r['rung'])}", capsize=3)
            ticks.append(y)
            labels.append(f"{template} · {r['rung']}")
            y += 1
        ax.axhspan(y - len(part) - 0.5, y - 0.5, color="0.5", alpha=0.06 * (k % 2))
    ax.set_yticks(ticks, labels)
    ax.invert_yaxis()
    ax.set_xlabel("bias intensity μ over the answered passes (95% bootstrap interval)")
    ax.set_title("μ of the same examples, read locally and on each rung")
    fig.tight_layout()
    return fig


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


__all__ = ["RUNGS", "rung_of", "rung_frames", "long", "cell_gammas", "rank_correlation", "rung_agreement",
           "bbq_beside_unqover", "plot_mu_by_rung", "plot_abstention"]
