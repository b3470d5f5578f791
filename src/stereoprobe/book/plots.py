"""The shared figure style: seaborn, white facecolor (readable in dark mode), one palette."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


def style() -> None:
    """Apply the book's style to every later figure."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.facecolor": "white", "savefig.facecolor": "white", "figure.dpi": 100,
                         "axes.titleweight": "bold"})


def diverging_heatmap(table: pd.DataFrame, *, title: str, cbar_label: str, ax=None, annotate: bool | None = None,
                      limit: float | None = None):
    """A heatmap centred on 0 (red = positive, blue = negative), symmetric colour limits."""
    style()
    if ax is None:
        _, ax = plt.subplots(figsize=(max(5.0, 2.5 + 1.1 * table.shape[1]), 1.0 + 0.3 * table.shape[0]))
    values = table.to_numpy(dtype=float)
    lim = limit or float(np.nanmax(np.abs(values))) or 1.0
    if annotate is None:
        annotate = table.size <= 200
    sns.heatmap(table, cmap="RdBu_r", center=0, vmin=-lim, vmax=lim, annot=annotate, fmt=".2f", annot_kws={"size": 8},
                cbar_kws={"label": cbar_label}, ax=ax, linewidths=0.3, linecolor="white")
    ax.set_title(title)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.figure.tight_layout()
    return ax


def paired_bars(table: pd.DataFrame, *, x: str, y: str, hue: str, title: str, ylabel: str, ax=None,
                lo: str | None = None, hi: str | None = None):
    """Grouped bars of ``y`` by ``x`` and ``hue``, with error bars from ``lo``/``hi`` columns when given."""
    style()
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    sns.barplot(data=table, x=x, y=y, hue=hue, ax=ax, errorbar=None)
    if lo is not None and hi is not None:
        for container, (_, group) in zip(ax.containers, table.groupby(hue, sort=False)):
            xs = [bar.get_x() + bar.get_width() / 2 for bar in container]
            ys = group[y].to_numpy()
            err = np.vstack([ys - group[lo].to_numpy(), group[hi].to_numpy() - ys])
            ax.errorbar(xs, ys, yerr=err, fmt="none", ecolor="black", capsize=3, lw=1)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("")
    ax.figure.tight_layout()
    return ax


def abbreviate(subject: str) -> str:
    """The authors' tick labels (Plot_ranks.ipynb): a hyphenated name becomes first letter + "." + the rest
    capitalised (``African-American`` → ``A.American``); other names are title-cased (``sri lanka`` →
    ``Sri Lanka``; the current list's ``Native American`` was ``native-american``, N.American, in the paper)."""
    head, sep, rest = subject.partition("-")
    if sep and rest:
        return f"{head[:1].upper()}.{rest.title()}"
    return subject.title()


def rank_plot(ranks: pd.DataFrame, *, title: str, top: int | None = None, bottom: int | None = None, ax=None,
              label: str = "ours", reference_label: str = "paper"):
    """UnQover Figs. 4–5: mean rank (± population std) of each subject across models, best first.

    ``ranks``: :func:`stereoprobe.unqover.metrics.rank_subjects` output (index subject, ``avg_rank``,
    ``std_rank``), in plotting order; ``top``/``bottom`` keep only the first/last rows (the paper's Fig. 4
    shows the top 8 and bottom 8 of 69). Columns ``paper_avg_rank``/``paper_std_rank``
    (:func:`stereoprobe.book.tables.unqover.ranks_beside_paper`) are drawn beside ours as hollow markers.
    """
    style()
    rows = ranks
    if top is not None or bottom is not None:
        head = ranks.head(top or 0)
        tail = ranks.tail(bottom or 0)
        rows = pd.concat([head, tail[~tail.index.isin(head.index)]])
    if ax is None:
        _, ax = plt.subplots(figsize=(max(5.0, 0.45 * len(rows) + 1.5), 3.6))
    xs = np.arange(len(rows))
    paper = "paper_avg_rank" in rows
    shift = 0.15 if paper else 0.0
    ax.errorbar(xs - shift, rows["avg_rank"], yerr=rows["std_rank"], fmt="o", capsize=3, label=label)
    if paper:
        ax.errorbar(xs + shift, rows["paper_avg_rank"].to_numpy(), yerr=rows["paper_std_rank"].to_numpy(), fmt="o",
                    mfc="none", capsize=3, label=reference_label)
        ax.legend(loc="upper left", fontsize=8)
    if top and bottom and len(rows) < len(ranks):
        ax.axvline(top - 0.5, color="grey", lw=0.8, ls="--")
    ax.set_xticks(xs)
    ax.set_xticklabels([abbreviate(s) for s in rows.index], rotation=60, ha="right")
    ax.set_ylabel("rank by γ(x) (1 = most negative)")
    ax.set_title(title)
    ax.figure.tight_layout()
    return ax


def intensity_panels(ours: pd.DataFrame, paper: pd.DataFrame | None, *, metric: str, datasets: list[str],
                     ylabel: str):
    """UnQover Fig. 3 / Fig. 6 layout: one panel per bias class; bars grouped by setting (paper SQuAD /
    NewsQA / LM, then ours), one bar per model; our bars carry their 95% CI.

    ``ours``: rows ``dataset, setting, model, <metric>, <metric>_lo, <metric>_hi``; ``paper``: rows
    ``dataset, setting, model, value`` (:func:`stereoprobe.book.tables.unqover.paper_fig3_fig6` for the metric).
    """
    style()
    fig, axes = plt.subplots(2, 2, figsize=(11, 6.5), sharey=False)
    labels = list(dict.fromkeys(([*paper["model"]] if paper is not None else []) + [*ours["model"]]))
    colors = dict(zip(labels, sns.color_palette("colorblind", len(labels))))
    for ax, dataset in zip(axes.flat, datasets):
        groups = []
        if paper is not None:
            p = paper[paper["dataset"] == dataset]
            for setting, g in p.groupby("setting", sort=False):
                groups.append((f"paper\n{setting}", g.assign(lo=np.nan, hi=np.nan)[["model", "value", "lo", "hi"]]))
        o = ours[ours["dataset"] == dataset]
        for setting, g in o.groupby("setting", sort=False):
            g = g.rename(columns={metric: "value", f"{metric}_lo": "lo", f"{metric}_hi": "hi"})
            groups.append((f"ours\n{setting}", g[["model", "value", "lo", "hi"]]))
        x0, ticks = 0.0, []
        for name, g in groups:
            width = 0.8 / max(1, len(g))
            for k, r in enumerate(g.itertuples(index=False)):
                x = x0 + (k - (len(g) - 1) / 2) * width
                hatch = "//" if name.startswith("paper") else None
                ax.bar(x, r.value, width=width * 0.95, color=colors[r.model], hatch=hatch, edgecolor="white",
                       label=r.model)
                if not np.isnan(r.lo):  # an interval, not value ± error: a basic interval may lie below the bar
                    ax.vlines(x, r.lo, r.hi, color="black", lw=1)
                    ax.hlines([r.lo, r.hi], x - width * 0.2, x + width * 0.2, color="black", lw=1)
            ticks.append((x0, name))
            x0 += 1.0
        ax.set_xticks([t for t, _ in ticks])
        ax.set_xticklabels([n for _, n in ticks], fontsize=8)
        ax.set_title(dataset.capitalize())
        ax.set_ylabel(ylabel)
    handles, names = [], []
    for ax in axes.flat:
        for h, n in zip(*ax.get_legend_handles_labels()):
            if n not in names:
                handles.append(h)
                names.append(n)
    fig.legend(handles, names, loc="lower center", ncol=min(6, len(names)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
