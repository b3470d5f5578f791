"""Moved in 0.8.0: the Bias-NLI report's table to :mod:`stereoprobe.nli.reporting` (the probe's), the chapter's and
the paper's tables to :mod:`stereoprobe.book.tables.nli` (the book layer's). The old names still work, with a
:class:`DeprecationWarning` naming the new home, until a later release."""

from __future__ import annotations

from ..deprecation import moved

_MOVED = {
    "BIASES": "stereoprobe.book.tables.nli",
    "MEASURES": "stereoprobe.nli.reporting",
    "REFERENCES": "stereoprobe.book.tables.nli",
    "SUBSPACE_LISTS": "stereoprobe.book.tables.nli",
    "TABLE7_SETS": "stereoprobe.book.tables.nli",
    "TOP_KEYS": "stereoprobe.book.tables.nli",
    "averaged": "stereoprobe.book.tables.nli",
    "bias_directions": "stereoprobe.book.tables.nli",
    "count_table": "stereoprobe.book.tables.nli",
    "measures_table": "stereoprobe.nli.reporting",
    "neutrality_row": "stereoprobe.nli.reporting",
    "paper_pairs_here": "stereoprobe.book.tables.nli",
    "probe_specs": "stereoprobe.book.tables.nli",
    "reference": "stereoprobe.book.tables.nli",
    "static_probabilities": "stereoprobe.book.tables.nli",
    "table7": "stereoprobe.book.tables.nli",
    "top_templates": "stereoprobe.book.tables.nli",
    "word_pair_pairs": "stereoprobe.book.tables.nli",
}

__getattr__ = moved(__name__, _MOVED, since="0.8.0")
