"""Book layer for the "Models used" chapter (``notebooks/models_used.py``): the zoo's model cards as tables and
quoted numbers, the papers' models beside the book's defaults, and one UnQover result on three kinds of model, so
that the notebook only calls and shows.

The chapter's order:

* the zoo — :func:`zoo_view` (one column per model), :func:`card_numbers` (the held-out metrics, size and build
  time the prose quotes);
* what each model can do — :func:`fills_view` (the masked LM's plain probes);
* what the papers used instead — :func:`paper_models_view`;
* one UnQover result, three kinds of model — :func:`side_by_side_table`, :func:`side_by_side_view`,
  :func:`mu_numbers`.

Functions named ``*_view`` return a pandas Styler (the cell's result; styling needs jinja2, the ``book`` extra),
``*_numbers`` return a {glue key: text} mapping for :func:`stereoprobe.book.display.glue_all`, in the order the
chapter glues them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from stereoprobe.book.display import MISSING, captioned, styled
from stereoprobe.book.tables import unqover as tables
from stereoprobe.zoo import recipes

__all__ = ["ZOO_FORMAT", "card_numbers", "fills_view", "mu_numbers", "paper_models_view", "side_by_side_table",
           "side_by_side_view", "zoo_view"]

#: How :func:`zoo_view` shows each number of :func:`recipes.zoo_table` (a row of the view); the held-out metrics
#: are shown with three decimals.
ZOO_FORMAT = {"train examples": "{:,}", "held-out examples": "{:,}", "steps": "{:,}", "batch size": "{:,}",
              "trained params (M)": "{:.2f}", "train time (min)": "{:.1f}", "part (MB)": "{:.1f}"}
#: The models whose μ the chapter quotes: glue key → model.
MU_MODELS = {"zoo_mu": "zoo:minilm-qa", "lab_mu": "lab:qa-biased"}


# -- the zoo --------------------------------------------------------------------------------------------------------
def zoo_view(cards: Mapping[str, Mapping[str, Any]]):
    """:func:`recipes.zoo_table` of the model ``cards`` (:func:`recipes.cards`) with one column per model (a
    Styler: no truncated cells; each row formatted by :data:`ZOO_FORMAT`, a held-out metric with 3 decimals)."""
    table = recipes.zoo_table(cards).set_index("model").T
    styler = styled(table)
    for row in table.index:
        fmt = ZOO_FORMAT.get(row, "{:.3f}" if row.startswith("held-out ") and row != "held-out examples" else None)
        if fmt:
            styler.format(fmt, subset=pd.IndexSlice[[row], :], na_rep=MISSING)
    return captioned(styler, "The zoo's model cards: one column per model (task, training data, size, cost, "
                             "held-out quality)")


def card_numbers(cards: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The numbers the chapter quotes from the model cards: every float held-out metric as a percentage
    (``<model>_<metric>``, the model without its ``zoo:`` prefix, ``-`` as ``_``), then the size of the shipped
    parts in MB (``zoo_mb``) and the time to build the whole zoo in minutes (``zoo_minutes``).

    >>> card = {"metrics": {"top1": 0.4567, "n": 120}, "part": {"bytes": 2_500_000},
    ...         "training": {"wall_s": {"total": 600.0}}}
    >>> card_numbers({"zoo:minilm-mlm": card, "zoo:minilm-qa": card})
    {'minilm_mlm_top1': '45.7%', 'minilm_qa_top1': '45.7%', 'zoo_mb': '5.0', 'zoo_minutes': '20'}
    """
    out = {}
    for name, card in cards.items():
        key = name.split(":")[1].replace("-", "_")
        for metric, value in card["metrics"].items():
            if isinstance(value, float):
                out[f"{key}_{metric}"] = f"{value:.1%}"
    out["zoo_mb"] = f"{sum(c['part']['bytes'] for c in cards.values()) / 1e6:.1f}"
    out["zoo_minutes"] = f"{sum(c['training']['wall_s']['total'] for c in cards.values()) / 60:.0f}"
    return out


# -- what each model can do, what the papers used instead ----------------------------------------------------------
def fills_view(cards: Mapping[str, Mapping[str, Any]]):
    """The zoo masked LM's top-5 fills of the plain probes on its card (:func:`recipes.fills_table`)."""
    return captioned(styled(recipes.fills_table(cards)).hide(axis="index"),
                     "zoo:minilm-mlm's five most likely fills of each plain probe sentence (from its model card)")


def paper_models_view():
    """What each paper probed and the model that stands in for it here (:func:`recipes.paper_models_table`)."""
    return captioned(styled(recipes.paper_models_table()).hide(axis="index"),
                     "What each paper probed, and the model that stands in for it in this book")


# -- one UnQover result, three kinds of model ----------------------------------------------------------------------
def side_by_side_table(frames: Mapping[str, pd.DataFrame], *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One row per model of ``frames`` (:func:`tables.gather` on the gender dataset): μ with its 95% CI
    (``ci_low``, ``ci_high``), δ and the three top occupations per gender with their γ
    (:func:`tables.side_by_side`)."""
    gammas = {name: tables.gender_gamma(frame, n_boot=n_boot, seed=seed) for name, frame in frames.items()}
    mu = tables.intensity(frames, n_boot=n_boot, seed=seed).set_index("model")
    top = tables.top_occupations(gammas, k=3)
    return tables.side_by_side(mu, top, tables.reasoning_errors(frames))


def side_by_side_view(side: pd.DataFrame):
    """:func:`side_by_side_table`, formatted (μ with its interval as "[lo, hi]", δ, three decimals)."""
    return captioned(styled(side, precision=3).hide(axis="index"),
                     "UnQover on the gender–occupation dataset, one row per model: bias intensity μ with its 95% "
                     "bootstrap interval, positional error δ, and the three occupations of highest γ per gender")


def mu_numbers(side: pd.DataFrame) -> dict[str, str]:
    """μ of the zoo QA model and of the biased lab model (:data:`MU_MODELS`) as the prose quotes them, ``—`` for
    a model that was not run.

    >>> mu_numbers(pd.DataFrame({"model": ["lab:qa-biased"], "mu": [0.41234]}))
    {'zoo_mu': '—', 'lab_mu': '0.412'}
    """
    mu = side.set_index("model")["mu"]
    return {key: f"{mu.loc[model]:.3f}" if model in mu.index else "—" for key, model in MU_MODELS.items()}
