"""Moved in 0.8.0 to :mod:`stereoprobe.book.plots` (the book layer: only the chapters use it). The old names still
work, with a :class:`DeprecationWarning` naming the new home, until a later release."""

from __future__ import annotations

from .deprecation import moved

_MOVED = {
    "abbreviate": "stereoprobe.book.plots",
    "diverging_heatmap": "stereoprobe.book.plots",
    "intensity_panels": "stereoprobe.book.plots",
    "paired_bars": "stereoprobe.book.plots",
    "rank_plot": "stereoprobe.book.plots",
    "style": "stereoprobe.book.plots",
}

__getattr__ = moved(__name__, _MOVED, since="0.8.0")
