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
