"""Tables, figures and quoted numbers of the UnQover chapters (Li et al., "UNQOVERing Stereotyping Biases via
Underspecified Questions", Findings of EMNLP 2020), so that the notebooks only call and show.

The computations live in :mod:`stereoprobe.book.tables.unqover` and :mod:`~stereoprobe.unqover.metrics`; this module
(book layer) arranges them the way each chapter shows them:

* "Reasoning errors" (§3, Fig. 2, Table 5) — :func:`count_numbers`, :func:`fig2_numbers`, :func:`fig2_scores_view`,
  :func:`fig2_bias_view`, :func:`errors_view`, :func:`error_numbers`, :func:`table5_view`;
* "Gender and occupations" (§5, Tables 2 and 3) — :func:`gender_gammas`, :func:`table2_view`,
  :func:`paper_table2_view`, :func:`planted_occupations`, :func:`show_planted_occupations`,
  :func:`planted_occupation_numbers`, :func:`shared_occupations_view`, :func:`intensity_view`;
* "Nationality" (§6, Table 4, Fig. 4) — :func:`run_line`, :func:`top_pairs_view`, :func:`plot_cluster_heatmap`,
  :func:`plot_paper_ranks`, :func:`plot_our_ranks`, :func:`agreement_numbers`, :func:`agreement_view`,
  :func:`western_view`, :func:`show_cluster_recovery`, :func:`cluster_recovery_numbers`, :func:`top_subjects`;
* "Ethnicity and religion" (appendix, Tables 12/13, Fig. 5) — :func:`gather_datasets`, :func:`subject_view`,
  :func:`plot_gamma_ci`, :func:`plot_rank_figures`, :func:`top_subject_numbers`;
* "Comparing models" (Figs. 3 and 6, the paper's three claims) — :func:`model_sizes`, :func:`plot_intensity`,
  :func:`grid_view`, :func:`claims_view`, :func:`paper_claim_numbers`, :func:`sizes_table`,
  :func:`claim_numbers`.

Functions named ``*_view`` return a pandas Styler with a caption (:func:`stereoprobe.book.display.styled`: its data stay
numbers, an interval is two float columns ``ci_low``/``ci_high``; the cell's result; styling needs jinja2, the
``book`` extra),
``show_*`` display their table themselves, ``plot_*`` draw on a new matplotlib figure (the notebook then calls
``plt.show()``), ``*_numbers`` return a {glue key: value} mapping for :func:`stereoprobe.book.display.glue_all`, in
the order the chapter glues them.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from stereoprobe.book import plots
from stereoprobe.book.display import MISSING, captioned, show, styled
from stereoprobe.models import parameter_count
from stereoprobe.options import RunOptions
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover import metrics
from stereoprobe.unqover.generate import Counts, DatasetSpec, count

__all__ = [
    "AGREEMENT_FORMAT", "CI_FORMAT", "agreement_numbers", "agreement_view", "claim_numbers", "claims_view",
    "count_numbers", "error_numbers", "errors_view", "fig2_bias_view", "fig2_numbers", "fig2_scores_view",
    "gather_datasets", "gender_gammas", "grid_view", "intensity_view", "model_sizes", "paper_claim_numbers",
    "paper_table2_view", "planted_occupation_numbers", "planted_occupations", "plot_cluster_heatmap",
    "plot_gamma_ci", "plot_intensity", "plot_our_ranks", "plot_paper_ranks", "plot_rank_figures", "run_line",
    "shared_occupations_view", "show_cluster_recovery", "show_planted_occupations", "sizes_table",
    "subject_view", "table2_view", "table5_view", "top_pairs_view", "top_subject_numbers", "top_subjects",
    "western_view",
]

#: The format of a Spearman agreement row (:func:`agreement_view`).
AGREEMENT_FORMAT = {"rho": "{:+.3f}", "p_value": "{:.3g}", "subjects": "{:.0f}"}
#: γ with its 95% CI (the interval is shown as "[lo, hi]" in γ's format: :func:`stereoprobe.book.display.styled`).
CI_FORMAT = {"gamma": "{:+.3f}"}
_ERRORS_FORMAT = {"delta": "{:.3f}", "epsilon": "{:.3f}", "avg_s": "{:.3f}", "keys": "{:,}"}


# -- every chapter -------------------------------------------------------------------------------------------------
def _glue_key(model: str) -> str:
    """A model label as a glue key (``:``, ``-``, ``/`` become ``_``).

    >>> _glue_key("zoo:minilm-qa")
    'zoo_minilm_qa'
    """
    return model.replace(":", "_").replace("-", "_").replace("/", "_")


# -- reasoning errors (§3: Fig. 2, Table 5) ------------------------------------------------------------------------
def count_numbers(n: Counts, models: Sequence[str], mode: str) -> dict:
    """The run's size as the chapter quotes it: paper examples (Table 1 "#Ex"), forward passes, models, mode."""
    return {"n_examples": f"{n.paper_examples:,}", "n_passes": f"{n.passes:,}", "n_models": len(models),
            "mode": mode}


def fig2_numbers(paired: pd.DataFrame, bias: pd.DataFrame) -> dict:
    """C, δ and ε of the paper's worked example (Fig. 2), from :func:`metrics.pair_examples` of
    :func:`metrics.example_scores` and its :func:`metrics.comparative_bias`."""
    return {"fig2_C": float(bias["C"].iloc[0]), "fig2_delta": float(metrics.positional_error(paired)),
            "fig2_eps": float(metrics.attribute_error(paired))}


def fig2_scores_view(scores: pd.DataFrame):
    """The scores of the paper's worked example (:func:`metrics.example_scores`), as Fig. 2 prints them."""
    shown = scores[["subj1", "subj2", "s1_pos", "s2_pos", "s1_neg", "s2_neg"]]
    return captioned(styled(shown, precision=2).hide(axis="index"),
                     "Fig. 2 (paper): RoBERTa-B (SQuAD) scores S of the subject in slot 1 and in slot 2, for "
                     "“Who was a hunter?” (pos) and its negation (neg), in both name orders")


def fig2_bias_view(bias: pd.DataFrame):
    """The subject biases B and the comparative bias C of the worked example (:func:`metrics.comparative_bias`;
    its attribute has no cluster: "None" in the authors' files, shown as —)."""
    no_cluster = {"attr_cluster": lambda v: MISSING if v == "None" else html.escape(str(v), quote=False)}
    return captioned(styled(bias, {"B_xa": "{:+.4f}", "B_xb": "{:+.4f}", "C": "{:+.4f}"} | no_cluster)
                     .hide(axis="index"),
                     "Fig. 2 worked through: subject biases B(xa), B(xb) (Eq. 5) and comparative bias C(xa, xb) "
                     "(Eq. 6) of the example")


def errors_view(errors: pd.DataFrame, caption: str | None = None):
    """A :func:`tables.reasoning_errors` table (δ, ε, mean S per model; Table 5), formatted and captioned
    (``caption`` replaces the default one)."""
    return captioned(styled(errors, _ERRORS_FORMAT).hide(axis="index"), caption or (
        "Reasoning errors per model (Table 5's measures): positional error δ, attribute error ε, mean score S"))


def table5_view(errors: pd.DataFrame, lm_errors: pd.DataFrame | None = None):
    """:func:`tables.table5_beside_paper`: our δ, ε and mean S (QA models, masked LMs) below the paper's rows."""
    return captioned(styled(tables.table5_beside_paper(errors, lm_errors), "{:.3f}"),
                     "Table 5 (paper) and ours: δ, ε and mean S of the paper's SQuAD, NewsQA and masked-LM models, "
                     "then of the models run here")


def error_numbers(errors: pd.DataFrame) -> dict:
    """δ, ε and mean S of every model (keys ``delta_<model>`` …), those of the first model, and a note on the
    ``lab:`` models (empty without one) comparing their δ with the paper's 0.15–0.57 (Table 5)."""
    out: dict = {}
    for row in errors.itertuples():
        key = _glue_key(row.model)
        out[f"delta_{key}"] = float(row.delta)
        out[f"eps_{key}"] = float(row.epsilon)
        out[f"avgs_{key}"] = float(row.avg_s)
    first = errors.iloc[0]
    out |= {"first_model": first.model, "first_delta": float(first.delta), "first_eps": float(first.epsilon),
            "first_avgs": float(first.avg_s)}
    lab = [m for m in errors.model if m.startswith("lab:")]
    out["lab_note"] = (
        "The lab models were trained on paragraphs with other wordings, in both name orders and with negated "
        "questions, so the UnQover templates are new to them but order and negation are not: compare their δ "
        f"(at most {errors[errors.model.isin(lab)].delta.max():.3f}) with 0.15–0.57 for the paper's models."
    ) if lab else ""
    return out


# -- gender and occupations (§5, Table 2) --------------------------------------------------------------------------
def gender_gammas(frames: Mapping[str, pd.DataFrame], *, n_boot: int = 1000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """:func:`tables.gender_gamma` of every model."""
    return {name: tables.gender_gamma(frame, n_boot=n_boot, seed=seed) for name, frame in frames.items()}


def table2_view(gammas: Mapping[str, pd.DataFrame], k: int = 3):
    """Our Table 2: the ``k`` most biased occupations per model and gender (:func:`tables.top_occupations`)."""
    styler = styled(tables.top_occupations(gammas, k=k), CI_FORMAT | {"eta": "{:+.2f}"}).hide(axis="index")
    return captioned(styler, f"Table 2 (ours): the {k} occupations of highest γ per model and gender, with 95% "
                             "bootstrap intervals and η")


def paper_table2_view():
    """The paper's Table 2 (``data/unqover/reference/``)."""
    styler = styled(tables.paper_table2(), {"gamma": "{:+.2f}", "eta": "{:.2f}"})
    styler = styler.hide(axis="index")
    return captioned(styler, "Table 2 (paper): the occupations of highest γ per model and gender, with η")


def planted_occupations(gammas: Mapping[str, pd.DataFrame], planted: Mapping[str, str]) -> pd.DataFrame:
    """:func:`tables.planted_recovery`, or an empty table when nothing was planted (no ``lab:`` model).

    >>> planted_occupations({}, {}).empty
    True
    """
    return tables.planted_recovery(gammas, planted) if planted else pd.DataFrame()


def show_planted_occupations(recovery: pd.DataFrame, planted: Mapping[str, str]) -> None:
    """Show where the planted occupations land, or say that nothing was planted."""
    if planted:
        show(captioned(styled(recovery, CI_FORMAT | {"eta": "{:+.2f}"}).hide(axis="index"),
                       "The planted occupations in the lab models: γ toward the planted gender (95% interval), η, "
                       "and its rank among the occupations (of: how many)"))
    else:
        print("No lab model in `lab_models`: nothing was planted.")


def planted_occupation_numbers(recovery: pd.DataFrame, planted: Mapping[str, str]) -> dict:
    """The first lab model, the worst rank of its planted occupations and how many were planted (``—``, 0, 0
    without a lab model).

    >>> planted_occupation_numbers(pd.DataFrame(), {})
    {'planted_model': '—', 'planted_worst_rank': 0, 'planted_n': 0}
    """
    if not (planted and len(recovery)):
        return {"planted_model": "—", "planted_worst_rank": 0, "planted_n": 0}
    worst = recovery.groupby("model")["rank"].max()
    first = recovery["model"].iloc[0]
    return {"planted_model": first, "planted_worst_rank": int(worst.loc[first]), "planted_n": len(planted)}


def shared_occupations_view(gammas: Mapping[str, pd.DataFrame], k: int = 10):
    """Table 3: the occupations in the top ``k`` (by γ) of every model, per gender
    (:func:`tables.shared_occupations`)."""
    return captioned(styled(tables.shared_occupations(gammas, k=k)).hide(axis="index"),
                     f"Table 3 (ours): the occupations in every model's top {k} by γ, per gender")


def intensity_view(mu: pd.DataFrame):
    """A :func:`tables.intensity` table (μ with its 95% CI, η), formatted."""
    return captioned(styled(mu, {"mu": "{:.3f}", "eta": "{:.3f}"}).hide(axis="index"),
                     "Bias intensity μ of every model (Eq. 8) with its 95% bootstrap interval, "
                     "and the count-based intensity η")


# -- nationality (§6: Table 4, Fig. 4) -----------------------------------------------------------------------------
def run_line(profile: str, n: Counts, qa_frames: Mapping, lm_frames: Mapping) -> str:
    """The line the nationality chapter prints about its run."""
    return (f"profile {profile}: {n.paper_examples:,} paper examples per QA model; "
            f"{len(qa_frames)} QA model(s), {len(lm_frames)} masked LM(s)")


def top_pairs_view(gammas_xa: Mapping[str, pd.DataFrame], k: int = 3, geo: pd.DataFrame | None = None):
    """Table 4: the ``k`` most biased (country, attribute) pairs per model (:func:`tables.top_pairs`)."""
    return captioned(styled(tables.top_pairs(gammas_xa, k=k, geo=geo), CI_FORMAT).hide(axis="index"),
                     f"Table 4 (ours): per model, the most biased (country, attribute) pair of each of the {k} "
                     "countries ranked first, with γ, the values behind it (n) and its 95% interval")


def plot_cluster_heatmap(frames: Mapping[str, pd.DataFrame], gammas: Mapping[str, pd.DataFrame], *, shown: int = 8,
                         n_boot: int = 1000, seed: int = 0):
    """γ(country, cluster) of the first model for its ``shown`` countries with the highest and the ``shown``
    with the lowest γ(x) (``gammas``: :func:`tables.subject_gammas`, sorted by γ)."""
    first = next(iter(frames))
    by_cluster = tables.cluster_bias(frames[first], n_boot=n_boot, seed=seed)
    order = gammas[first]["subject"]
    rows = list(order.head(shown)) + list(order.tail(shown))
    matrix = tables.cluster_matrix(by_cluster).reindex(rows)
    return plots.diverging_heatmap(matrix, title=f"γ(country, cluster): {first}", cbar_label="γ(x, cluster)")


def _paper_ranked(dataset: str) -> pd.DataFrame:
    """The paper's ranks (Figs. 4–5) recomputed by :func:`metrics.rank_subjects` from the authors' γ(x) of the
    five SQuAD models (``visualization/Plot_ranks.ipynb``), rows in RoBERTa-B's γ order."""
    gamma = tables.paper_gamma_x(dataset)[tables.PAPER_MODELS]
    return metrics.rank_subjects(gamma.sort_values("RoBERTa_B", ascending=False, kind="stable"))


def plot_paper_ranks(dataset: str, *, title: str, top: int | None = None, bottom: int | None = None, ax=None):
    """The paper's rank figure (Fig. 4 for nationality, Fig. 5 for ethnicity and religion)."""
    return plots.rank_plot(_paper_ranked(dataset), title=title, top=top, bottom=bottom, ax=ax, label="paper")


def plot_our_ranks(ranks: pd.DataFrame, n_models: int, *, top: int = 8, bottom: int = 8):
    """Our nationality rank figure (Fig. 4 layout) from :func:`tables.ranks_beside_paper`."""
    return plots.rank_plot(ranks, title=f"Ours ({n_models} model(s)): mean rank by γ(x)", top=top, bottom=bottom)


def agreement_numbers(agreement: pd.Series) -> dict:
    """Spearman's ρ, its p-value and the number of subjects (:func:`tables.rank_agreement`) as the prose
    quotes them.

    >>> agreement_numbers(pd.Series({"rho": 0.5, "p_value": 0.0123, "subjects": 8}))
    {'rho': '+0.50', 'rho_p': '0.012', 'rho_n': 8}
    """
    return {"rho": f"{agreement['rho']:+.2f}", "rho_p": f"{agreement['p_value']:.2g}",
            "rho_n": int(agreement["subjects"])}


def agreement_view(agreement: pd.Series, label: str):
    """A :func:`tables.rank_agreement` series as one formatted row named ``label``."""
    return captioned(styled(agreement.to_frame(label).T, AGREEMENT_FORMAT),
                     "Agreement with the paper's ranking: Spearman's ρ between our mean ranks and the paper's, its "
                     "p-value, over the subjects both rank")


def western_table(matrix: pd.DataFrame, geo: pd.DataFrame | None = None,
                  western_areas: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`tables.western_summary` of our models (``source`` "ours") above that of the paper's five SQuAD
    models (``source`` "paper", from the authors' γ(x))."""
    west = pd.concat([tables.western_summary(matrix, geo, western_areas).assign(source="ours"),
                      tables.western_summary(tables.paper_gamma_x("nationality")[tables.PAPER_MODELS], geo,
                                             western_areas).assign(source="paper")])
    return west[["source"] + [c for c in west.columns if c != "source"]]


def western_view(matrix: pd.DataFrame, geo: pd.DataFrame | None = None, western_areas: Sequence[str] | None = None):
    """:func:`western_table`, formatted."""
    return captioned(styled(western_table(matrix, geo, western_areas),
        {"γ W": "{:+.4f}", "γ non-W": "{:+.4f}", "Δγ": "{:+.4f}", "rank W": "{:.1f}", "middle": "{:.1f}",
         "p": "{:.2g}"}).hide(axis="index"),
        "Western (W) vs non-Western countries per model, ours and the paper's SQuAD models: countries, mean γ(x), "
        "their difference Δγ, the Western mean rank beside the middle rank, Mann–Whitney p")


def show_cluster_recovery(recovery: pd.DataFrame) -> None:
    """Show where the planted (country, cluster) cells land (:func:`tables.planted_cluster_recovery`), or say
    that nothing was planted."""
    if len(recovery):
        show(captioned(styled(recovery, CI_FORMAT).hide(axis="index"),
                       "The planted (country, cluster) cells in the lab masked LMs: γ (95% interval) and its rank "
                       "among the cells (of: how many)"))
    else:
        print("No lab masked LM in `lab_lm_models`: nothing was planted.")


def cluster_recovery_numbers(recovery: pd.DataFrame) -> dict:
    """The first lab model of ``recovery`` (the first given, the biased one in the chapter), the worst rank of
    its planted cells, and the number of cells they rank among (``—``, 0, 0 without a lab model).

    >>> rows = pd.DataFrame({"model": ["lab:z", "lab:z", "lab:a"], "rank": [1, 3, 90], "of": [240, 240, 240]})
    >>> cluster_recovery_numbers(rows)
    {'lab_model': 'lab:z', 'lab_worst_rank': 3, 'lab_cells': 240}
    >>> cluster_recovery_numbers(pd.DataFrame())
    {'lab_model': '—', 'lab_worst_rank': 0, 'lab_cells': 0}
    """
    if not len(recovery):
        return {"lab_model": "—", "lab_worst_rank": 0, "lab_cells": 0}
    first = recovery[recovery["model"] == recovery["model"].iloc[0]]
    return {"lab_model": first["model"].iloc[0], "lab_worst_rank": int(first["rank"].max()),
            "lab_cells": int(first["of"].iloc[0])}


def top_subjects(gammas: Mapping[str, pd.DataFrame], k: int = 5) -> pd.DataFrame:
    """The ``k`` subjects with the highest γ(x), one column per model (``gammas`` sorted by γ, as
    :func:`tables.subject_gammas` returns them).

    >>> top_subjects({"m": pd.DataFrame({"subject": ["a", "b", "c"]})}, k=2)["m"].to_dict()
    {1: 'a', 2: 'b'}
    """
    return captioned(pd.DataFrame({name: t["subject"].head(k).tolist() for name, t in gammas.items()},
                                  index=pd.RangeIndex(1, k + 1, name="rank by γ(x)")),
                     f"The {k} subjects of highest γ(x), one column per model")


# -- ethnicity and religion (appendix: Tables 12/13, Fig. 5) ------------------------------------------------------
def gather_datasets(datasets: Iterable[str], models: Sequence[str], lm_models: Sequence[str], *, sample,
                    mode: str = "compat", seed: int = 0, n_boot: int = 1000,
                    options: RunOptions | None = None) -> dict[str, dict]:
    """Score ``models`` (QA) and ``lm_models`` (masked LMs) on each dataset in ``mode`` with the run ``options``
    and print its size; per dataset a dict with its ``spec``, the ``frames`` and their :func:`tables.subject_gammas`
    (``gammas``)."""
    results = {}
    for dataset in datasets:
        spec = DatasetSpec(dataset, mode=mode, sample=sample, seed=seed)
        frames = tables.gather(models, spec, mode=mode, options=options) | \
            tables.gather_lm(lm_models, spec, mode=mode, options=options)
        results[dataset] = {"spec": spec, "frames": frames,
                            "gammas": tables.subject_gammas(frames, n_boot=n_boot, seed=seed)}
        print(f"{dataset}: {count(spec).paper_examples:,} paper examples per model, {len(frames)} model(s)")
    return results


def subject_view(gammas: Mapping[str, pd.DataFrame], dataset: str):
    """Tables 12/13: :func:`tables.subject_table`, formatted (a missing subject shows as —)."""
    table = {"ethnicity": "Table 12", "religion": "Table 13"}.get(dataset, "Tables 12/13")
    return captioned(styled(tables.subject_table(gammas, dataset), "{:+.4f}"),
                     f"{table} ({dataset}), ours: γ(x) and η(x) per subject and model, beside the paper's "
                     "RoBERTa-B (SQuAD) γ(x)")


def plot_gamma_ci(gammas: Mapping[str, pd.DataFrame], title: str):
    """γ(x) of every model as grouped bars with its 95% bootstrap CI."""
    long = pd.concat([t.assign(model=name) for name, t in gammas.items()])
    ax = plots.paired_bars(long, x="subject", y="gamma", hue="model", title=title, ylabel="γ(x)", lo="gamma_lo",
                           hi="gamma_hi")
    ax.tick_params(axis="x", rotation=60)
    return ax


def plot_rank_figures(dataset: str, gammas: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Fig. 5 for ``dataset``: the paper's ranks above ours (hollow markers: the paper over the same subjects);
    returns our :func:`tables.ranks_beside_paper` table."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(8, 7.5))
    plot_paper_ranks(dataset, title=f"Paper: {dataset} (5 SQuAD models)", ax=axes[0])
    matrix = tables.gamma_matrix(gammas)
    ranks = tables.ranks_beside_paper(matrix, dataset)
    plots.rank_plot(ranks, title=f"Ours: {dataset} ({matrix.shape[1]} model(s)); hollow: the paper, same subjects",
                    ax=axes[1])
    return ranks


def top_subject_numbers(results: Mapping[str, Mapping]) -> dict:
    """The paper's top religion (Fig. 5) with its mean rank, and the subject of highest γ(x) of our first model
    per dataset (``results``: :func:`gather_datasets`)."""
    paper_rel = tables.paper_ranks("religion")
    out = {"paper_top_religion": paper_rel.index[0].title(),
           "paper_top_religion_rank": f"{paper_rel['avg_rank'].iloc[0]:.1f}"}
    for dataset, result in results.items():
        gammas = result["gammas"]
        out[f"ours_top_{dataset}"] = gammas[next(iter(gammas))]["subject"].iloc[0]
    return out


# -- comparing models (Figs. 3 and 6, the paper's three claims) ----------------------------------------------------
#: The y-axis label of each metric of the intensity grid.
_METRIC_LABELS = {"mu": "μ", "eta": "η"}
#: The paper's claims whose comparisons the chapter quotes: glue key part → claim (:func:`tables.paper_claims`).
_QUOTED_CLAIMS = {"larger": "larger QA models are more biased",
                  "newsqa": "NewsQA models are less biased than SQuAD models"}


def model_sizes(models: Sequence[str], lm_models: Sequence[str], *, smoke: bool = False) -> dict[str, int]:
    """Parameters per model id, QA models then masked LMs, each model once (:func:`parameter_count`)."""
    return {m: parameter_count(m, smoke=smoke) for m in dict.fromkeys([*models, *lm_models])}


def plot_intensity(grid: pd.DataFrame, metric: str):
    """Fig. 3 (``metric`` "mu") or Fig. 6 ("eta"): the paper's bars (:func:`tables.paper_fig3_fig6`) beside ours
    (``grid``: :func:`tables.intensity_grid`), one panel per bias class."""
    paper = tables.paper_fig3_fig6()
    return plots.intensity_panels(grid, paper[paper["metric"] == metric], metric=metric,
                                  datasets=tables.BIAS_CLASSES, ylabel=_METRIC_LABELS[metric])


def grid_view(grid: pd.DataFrame, metric: str):
    """``metric`` ("mu" or "eta") of every bias class and model of a :func:`tables.intensity_grid` with its 95%
    interval, formatted; the μ table also gives the number of subjects behind each row."""
    bounds = [metric, f"{metric}_lo", f"{metric}_hi"]
    columns = ["dataset", "setting", "model", *bounds] + (["subjects"] if metric == "mu" else [])
    what = ("Bias intensity μ per bias class and model with its 95% interval (our bars of Fig. 3), and the "
            "subjects behind each row") if metric == "mu" else (
            f"Count-based intensity {_METRIC_LABELS.get(metric, metric)} per bias class and model with its 95% "
            "interval (our bars of Fig. 6)")
    return captioned(styled(grid[columns], {metric: "{:.3f}"}).hide(axis="index"), what)


def claims_view(claims: pd.DataFrame, caption: str | None = None):
    """A claims table (:func:`tables.paper_claims`, :func:`tables.our_claims`) without its index, captioned
    by its kind (``caption`` replaces that)."""
    default = ("The paper's claims checked on its own bars (Fig. 3): comparisons that hold, of how many, and the "
               "exceptions") if "holds" in claims.columns else (
               "The paper's claims on the models run here: the comparisons each allows, and the result")
    return captioned(styled(claims).hide(axis="index"), caption or default)


def paper_claim_numbers(paper_claims: pd.DataFrame) -> dict[str, int]:
    """How many of its comparisons each quoted claim wins on the paper's own bars, and of how many
    (``paper_<claim>_holds``, ``paper_<claim>_of``; ``paper_claims``: :func:`tables.paper_claims`).

    >>> claims = pd.DataFrame({"claim": list(_QUOTED_CLAIMS.values()), "holds": [7, 3], "of": [12, 20]})
    >>> paper_claim_numbers(claims)
    {'paper_larger_holds': 7, 'paper_larger_of': 12, 'paper_newsqa_holds': 3, 'paper_newsqa_of': 20}
    """
    held = paper_claims.set_index("claim")
    out = {}
    for key, claim in _QUOTED_CLAIMS.items():
        out[f"paper_{key}_holds"] = int(held.loc[claim, "holds"])
        out[f"paper_{key}_of"] = int(held.loc[claim, "of"])
    return out


def sizes_table(sizes: Mapping[str, int]) -> pd.DataFrame:
    """:func:`model_sizes` as a one-column table of integers (the book shows them thousands separated).

    >>> sizes_table({"zoo:minilm-qa": 22713218}).to_dict()
    {'parameters': {'zoo:minilm-qa': 22713218}}
    """
    return captioned(pd.Series(sizes, name="parameters", dtype="int64").to_frame(), "Parameters per model")


def claim_numbers(claims: pd.DataFrame) -> dict[str, int]:
    """How many of the three claims the models run here can test (:func:`tables.our_claims` rows with at least
    one comparison).

    >>> claim_numbers(pd.DataFrame({"comparisons": [0, 2, 1]}))
    {'testable_claims': 2}
    """
    return {"testable_claims": int((claims["comparisons"] > 0).sum())}
