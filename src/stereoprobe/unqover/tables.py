"""Moved in 0.8.0: the UnQover report's tables to :mod:`stereoprobe.unqover.reporting` (the probe's), the chapters' and
the paper's tables to :mod:`stereoprobe.book.tables.unqover` (the book layer's). The old names still work, with a
:class:`DeprecationWarning` naming the new home, until a later release."""

from __future__ import annotations

from ..deprecation import moved

_MOVED = {
    "BIAS_CLASSES": "stereoprobe.book.tables.unqover",
    "PAPER_MODELS": "stereoprobe.book.tables.unqover",
    "base_lm": "stereoprobe.book.tables.unqover",
    "cluster_bias": "stereoprobe.unqover.reporting",
    "cluster_matrix": "stereoprobe.unqover.reporting",
    "female_gamma_matrix": "stereoprobe.book.tables.unqover",
    "flag_degenerate": "stereoprobe.unqover.reporting",
    "gamma_matrix": "stereoprobe.book.tables.unqover",
    "gather": "stereoprobe.unqover.reporting",
    "gather_lm": "stereoprobe.unqover.reporting",
    "gender_gamma": "stereoprobe.unqover.reporting",
    "geoscheme": "stereoprobe.book.tables.unqover",
    "intensity": "stereoprobe.unqover.reporting",
    "intensity_grid": "stereoprobe.book.tables.unqover",
    "intensity_row": "stereoprobe.book.tables.unqover",
    "lab_card": "stereoprobe.book.tables.unqover",
    "lab_planted": "stereoprobe.book.tables.unqover",
    "lm_spec_for": "stereoprobe.unqover.reporting",
    "model_report": "stereoprobe.unqover.reporting",
    "occupation": "stereoprobe.unqover.reporting",
    "our_claims": "stereoprobe.book.tables.unqover",
    "paper_claims": "stereoprobe.book.tables.unqover",
    "paper_fig3_fig6": "stereoprobe.book.tables.unqover",
    "paper_gamma_x": "stereoprobe.book.tables.unqover",
    "paper_models": "stereoprobe.book.tables.unqover",
    "paper_ranks": "stereoprobe.book.tables.unqover",
    "paper_table2": "stereoprobe.book.tables.unqover",
    "paper_table5": "stereoprobe.book.tables.unqover",
    "planted_cluster_recovery": "stereoprobe.book.tables.unqover",
    "planted_recovery": "stereoprobe.book.tables.unqover",
    "rank_agreement": "stereoprobe.book.tables.unqover",
    "ranks_beside_paper": "stereoprobe.book.tables.unqover",
    "reasoning_errors": "stereoprobe.unqover.reporting",
    "setting_of": "stereoprobe.book.tables.unqover",
    "shared_occupations": "stereoprobe.book.tables.unqover",
    "side_by_side": "stereoprobe.book.tables.unqover",
    "spec_for": "stereoprobe.unqover.reporting",
    "subject_attribute_gammas": "stereoprobe.book.tables.unqover",
    "subject_gammas": "stereoprobe.book.tables.unqover",
    "subject_key": "stereoprobe.book.tables.unqover",
    "subject_table": "stereoprobe.book.tables.unqover",
    "table5_beside_paper": "stereoprobe.book.tables.unqover",
    "top_occupations": "stereoprobe.unqover.reporting",
    "top_pairs": "stereoprobe.book.tables.unqover",
    "western_summary": "stereoprobe.book.tables.unqover",
}

__getattr__ = moved(__name__, _MOVED, since="0.8.0")
