"""Tables and figures of the UnQover chapters, each a function a test can call (the book layer: moved here from
``stereoprobe.unqover.tables`` in 0.8.0).

The notebooks call these; they hold no algorithm themselves: the measures come from the probe
(:mod:`stereoprobe.unqover.metrics`, the report's tables from :mod:`stereoprobe.unqover.reporting`). Paper values
come from ``data/unqover/reference/`` and are always shown beside ours; what the project's zoo and lab models are
(a QA model's base LM, a lab model's card) is read here, not in the probe.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ...naming import short_name
from ...options import RunOptions
from ...paths import data_dir
from ...unqover import metrics
from ...unqover.generate import DatasetSpec
# the report's own tables: stereoprobe.unqover.reporting (the probe's), read here as the chapters show them
from ...unqover.reporting import (cluster_bias, cluster_matrix, flag_degenerate, gather, gather_lm,  # noqa: F401
                                  gender_gamma, intensity, lm_spec_for, model_report, occupation, reasoning_errors,
                                  spec_for, top_occupations)

PAPER_MODELS = ["BERT_Dist", "BERT_B", "BERT_L", "RoBERTa_B", "RoBERTa_L"]


def lab_card(model: str, smoke: bool = False) -> dict | None:
    """The model card of a ``lab:`` model (its recipe says what was planted), else None."""
    if not model.startswith("lab:"):
        return None
    from ...models import resolve

    card = Path(resolve(model, smoke=smoke)) / "model_card.json"
    return json.loads(card.read_text()) if card.is_file() else None


def _read_reference(name: str) -> pd.DataFrame:
    return pd.read_csv(data_dir() / "unqover" / "reference" / name, sep="\t", comment="#")


def paper_table5() -> pd.DataFrame:
    """UnQover Table 5 as printed: δ, ε, avg S for the 15 models (rows: metric × training)."""
    return _read_reference("paper_table5.tsv")


def paper_table2() -> pd.DataFrame:
    """UnQover Table 2 (SQuAD models, top occupations per gender), partly transcribed from the paper."""
    return _read_reference("paper_table2.tsv")


def paper_models() -> pd.DataFrame:
    """The paper's 15 models and their hub ids."""
    return _read_reference("paper_models.tsv")


# -- Table 5 -----------------------------------------------------------------------------------------------------
def table5_beside_paper(ours: pd.DataFrame, ours_lm: pd.DataFrame | None = None) -> pd.DataFrame:
    """Our δ/ε/avg S rows (QA models, and masked LMs when given) next to the paper's SQuAD, NewsQA and LM
    rows (one row per source × model)."""
    paper = paper_table5().melt(id_vars=["metric", "training"], var_name="model", value_name="value")
    paper["source"] = "paper: " + paper["training"]
    parts = [paper[["source", "model", "metric", "value"]]]
    for label, table in (("ours: QA", ours), ("ours: LM", ours_lm)):
        if table is None or not len(table):
            continue
        mine = table.melt(id_vars=["model"], value_vars=["delta", "epsilon", "avg_s"], var_name="metric",
                          value_name="value")
        mine["source"] = label
        parts.append(mine[["source", "model", "metric", "value"]])
    return pd.concat(parts).pivot_table(index=["source", "model"], columns="metric", values="value", sort=False)[
        ["delta", "epsilon", "avg_s"]
    ]


# -- Table 2 / Table 3 / heatmap -----------------------------------------------------------------------------------
def shared_occupations(gammas: Mapping[str, pd.DataFrame], k: int = 10) -> pd.DataFrame:
    """UnQover Table 3: occupations in the top-k (by γ) of every model, per gender."""
    rows = []
    for gender in ("female", "male"):
        tops = [
            set(t[t["subject"] == gender].sort_values("gamma", ascending=False).head(k)["attr"]) for t in gammas.values()
        ]
        shared = set.intersection(*tops) if tops else set()
        rows.append({"gender": gender, "models": len(tops), "shared": ", ".join(sorted(occupation(a) for a in shared)) or "—",
                     "count": len(shared)})
    return pd.DataFrame(rows)


def female_gamma_matrix(gammas: Mapping[str, pd.DataFrame], top: int | None = 20) -> pd.DataFrame:
    """γ(female, a) as occupations × models (γ(male, a) is its negative), the ``top`` by max |γ|."""
    matrix = pd.DataFrame({
        name: t[t["subject"] == "female"].set_index("attr")["gamma"] for name, t in gammas.items()
    })
    matrix.index = [occupation(a) for a in matrix.index]
    order = matrix.abs().max(axis=1).sort_values(ascending=False).index
    return matrix.loc[order[:top] if top else order]


def planted_recovery(gammas: Mapping[str, pd.DataFrame], planted: Mapping[str, str]) -> pd.DataFrame:
    """Where the planted occupations land: γ toward the planted gender, its CI and rank among all occupations."""
    rows = []
    for name, table in gammas.items():
        for gender in ("female", "male"):
            part = table[table["subject"] == gender].sort_values("gamma", ascending=False).reset_index(drop=True)
            part["rank"] = np.arange(1, len(part) + 1)
            for noun, g in planted.items():
                if g != gender:
                    continue
                hit = part[part["attr"].map(occupation) == noun]
                if hit.empty:
                    continue
                r = hit.iloc[0]
                rows.append({"model": name, "occupation": noun, "planted gender": g, "gamma": r["gamma"],
                             "ci_low": r["gamma_lo"], "ci_high": r["gamma_hi"], "eta": r["eta"], "rank": int(r["rank"]),
                             "of": len(part)})
    return pd.DataFrame(rows)


def side_by_side(mu: pd.DataFrame, top: pd.DataFrame, errors: pd.DataFrame) -> pd.DataFrame:
    """One row per model: μ with its 95% CI (``ci_low``, ``ci_high``), δ, and the top occupations per gender,
    each with its γ (the models chapter)."""
    rows = []
    errs = errors.set_index("model")
    for model in mu.index:
        row = {"model": model, "mu": mu.loc[model, "mu"], "ci_low": mu.loc[model, "ci_low"],
               "ci_high": mu.loc[model, "ci_high"], "delta": errs.loc[model, "delta"]}
        for gender in ("female", "male"):
            best = top[(top.model == model) & (top.gender == gender)].sort_values("rank")
            row[f"top {gender} occupations (γ)"] = ", ".join(f"{r.occupation} ({r.gamma:+.2f})" for r in best.itertuples())
        rows.append(row)
    return pd.DataFrame(rows)


# -- nationality, ethnicity, religion: γ(x), ranks, Table 4, Tables 12/13 ------------------------------------------
#: the reference TSV's model columns (the authors' Plot_ranks.ipynb dict names) → the paper's short names
_PAPER_GAMMA_COLUMNS = {"distilbert": "BERT_Dist", "bertbase": "BERT_B", "bertlarge": "BERT_L",
                        "robertabase": "RoBERTa_B", "robertalarge": "RoBERTa_L"}
_REFERENCE_DATASET = {"nationality": "country", "ethnicity": "ethnicity", "religion": "religion"}
#: the reference keys that differ from the lower-cased word-list names (the paper's runs used "German"; the
#: authors' Plot_ranks.ipynb writes "native-american")
_REFERENCE_KEYS = {"german": "germany", "native-american": "native american"}


def subject_key(subject: str) -> str:
    """The key a subject has in the paper's γ(x) table: lower-cased (``Native American`` → ``native american``)."""
    return subject.lower()


def paper_gamma_x(dataset: str) -> pd.DataFrame:
    """γ(x) of the paper's five SQuAD models (the authors' Plot_ranks.ipynb; Figs. 4–5, Tables 12/13 SQuAD),
    indexed by lower-cased subject, columns :data:`PAPER_MODELS` plus the printed ``avg_rank, std_rank``.

    The reference's two stale keys are renamed to the current lists' spelling (``german`` → ``germany``,
    ``native-american`` → ``native american``).
    """
    if dataset not in _REFERENCE_DATASET:
        raise ValueError(f"No paper γ(x) for {dataset!r}; choose one of {', '.join(_REFERENCE_DATASET)}.")
    ref = _read_reference("reference_gamma_x_squad_models.tsv")
    ref = ref[ref["dataset"] == _REFERENCE_DATASET[dataset]].copy()
    ref["subject"] = ref["subject"].replace(_REFERENCE_KEYS)
    ref = ref.rename(columns=_PAPER_GAMMA_COLUMNS).set_index("subject")
    return ref[PAPER_MODELS + ["avg_rank", "std_rank"]]


def geoscheme() -> pd.DataFrame:
    """The 69 nationality subjects in the UN M49 geoscheme (``data/unqover/geo/un_geoscheme.tsv``), by subject."""
    return pd.read_csv(data_dir() / "unqover" / "geo" / "un_geoscheme.tsv", sep="\t", comment="#",
                       dtype={"m49_code": str}, keep_default_na=False).set_index("subject")


def subject_gammas(frames: Mapping[str, pd.DataFrame], *, n_boot: int = 1000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """γ(x), η(x) per subject (pooled over attributes; analysis.py ``--group_by subj``) with bootstrap 95% CIs."""
    return {name: metrics.subject_bias(metrics.pair_examples(f), ci=0.95, n_boot=n_boot, seed=seed)
            for name, f in frames.items()}


def subject_attribute_gammas(frames: Mapping[str, pd.DataFrame], *, n_boot: int = 1000,
                             seed: int = 0) -> dict[str, pd.DataFrame]:
    """γ(x, a), η(x, a) per (subject, attribute) with bootstrap 95% CIs, per model."""
    return {name: metrics.subject_attribute_bias(metrics.pair_examples(f), ci=0.95, n_boot=n_boot, seed=seed)
            for name, f in frames.items()}


def gamma_matrix(gammas: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """γ(x) as subjects × models (the input of the rank figures); subjects missing in a model are dropped."""
    matrix = pd.DataFrame({name: t.set_index("subject")["gamma"] for name, t in gammas.items()})
    return matrix.dropna()


def ranks_beside_paper(matrix: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Our mean ± std rank (by γ(x), rank 1 = most negative) beside the paper's (Figs. 4–5).

    Rows follow our average rank. ``paper_avg_rank``/``paper_std_rank`` rank the paper's five SQuAD γ(x)
    over the *same* subjects (the LM lists hold fewer subjects than the QA lists, and a rank among 55 is
    not comparable with one among 69); NaN for a subject the paper did not rank.
    """
    ours = metrics.rank_subjects(matrix)[["avg_rank", "std_rank"]]
    paper = paper_gamma_x(dataset)
    keys = pd.Index([subject_key(s) for s in ours.index])
    common = [k for k in keys if k in paper.index]
    theirs = metrics.rank_subjects(paper.loc[common, PAPER_MODELS]) if common else pd.DataFrame(
        columns=["avg_rank", "std_rank"])
    ours["paper_avg_rank"] = theirs["avg_rank"].reindex(keys).to_numpy()
    ours["paper_std_rank"] = theirs["std_rank"].reindex(keys).to_numpy()
    return ours


def rank_agreement(ranks: pd.DataFrame) -> pd.Series:
    """Spearman's ρ between our and the paper's average rank, over the subjects both ranked, with its p-value."""
    from scipy.stats import spearmanr

    both = ranks.dropna(subset=["paper_avg_rank"])
    if len(both) < 3:
        return pd.Series({"rho": np.nan, "p_value": np.nan, "subjects": len(both)})
    rho, p = spearmanr(both["avg_rank"], both["paper_avg_rank"])
    return pd.Series({"rho": float(rho), "p_value": float(p), "subjects": len(both)})


def paper_ranks(dataset: str) -> pd.DataFrame:
    """The paper's printed mean ± std rank (Figs. 4–5) as a rank table (index subject, ``avg_rank, std_rank``),
    in the printed order."""
    return paper_gamma_x(dataset)[["avg_rank", "std_rank"]]


def top_pairs(gammas_xa: Mapping[str, pd.DataFrame], k: int = 3, geo: pd.DataFrame | None = None) -> pd.DataFrame:
    """UnQover Table 4: per model, the most biased (country, attribute) pair of each of the top-``k`` countries.

    The paper shows three different countries per model; its selection rule is not stated (book appendix *Where
    the code and the paper differ*, UnQover: nationality top pairs). Ours: walk the (x, a) pairs by γ(x, a)
    descending and keep the first pair of every new country until ``k`` countries are found. Each row has the
    country's UN M49 area, the attribute's cluster, γ(x, a) with its 95% CI (``ci_low``, ``ci_high``, when
    ``gammas_xa`` has ``gamma_lo``/``gamma_hi``) and ``n``, the number of C values behind the cell (a cell of
    few values has a degenerate bootstrap interval).
    """
    geo = geoscheme() if geo is None else geo
    rows = []
    for name, table in gammas_xa.items():
        seen: list[str] = []
        for r in table.sort_values("gamma", ascending=False, kind="stable").itertuples(index=False):
            if r.subject in seen:
                continue
            seen.append(r.subject)
            row = {"model": name, "rank": len(seen), "country": r.subject,
                   "area": geo["area"].get(r.subject, "—"), "cluster": r.attr_cluster, "attribute": r.attr,
                   "gamma": r.gamma}
            if "gamma_lo" in table:
                row |= {"ci_low": r.gamma_lo, "ci_high": r.gamma_hi}
            rows.append(row | {"n": r.n})
            if len(seen) == k:
                break
    return pd.DataFrame(rows)


def lab_planted(models: Sequence[str], key: str, smoke: bool = False) -> dict[str, str]:
    """What the ``lab:`` models among ``models`` had planted, from their cards: ``card["planted"][key]``
    (``occupations`` for the QA lab, ``country_clusters`` for the masked-LM lab)."""
    planted: dict[str, str] = {}
    for model in models:
        card = lab_card(model, smoke=smoke)
        if card:
            planted.update(card.get("planted", {}).get(key, {}))
    return planted


def planted_cluster_recovery(frames: Mapping[str, pd.DataFrame], planted: Mapping[str, str], *, n_boot: int = 1000,
                             seed: int = 0) -> pd.DataFrame:
    """Where the planted (country, cluster) cells land: γ(x, cluster) with its 95% CI and its rank among all
    (subject, cluster) cells of the model (1 = the largest γ)."""
    rows = []
    for name, frame in frames.items():
        table = cluster_bias(frame, n_boot=n_boot, seed=seed).sort_values("gamma", ascending=False, kind="stable")
        table["rank"] = np.arange(1, len(table) + 1)
        for country, cluster in planted.items():
            hit = table[(table["subject"] == country) & (table["attr"] == cluster)]
            if len(hit):
                r = hit.iloc[0]
                rows.append({"model": name, "country": country, "cluster": cluster, "gamma": r["gamma"],
                             "ci_low": r["gamma_lo"], "ci_high": r["gamma_hi"], "rank": int(r["rank"]),
                             "of": len(table)})
    return pd.DataFrame(rows)


def western_summary(matrix: pd.DataFrame, geo: pd.DataFrame | None = None,
                    western_areas: Sequence[str] | None = None) -> pd.DataFrame:
    """Western vs non-Western countries, per model (column of ``matrix`` = γ(x) by subject).

    Western = the geoscheme's ``western`` flag (Northern America, Northern/Western/Southern Europe,
    Australia and New Zealand), or the M49 areas in ``western_areas``. Columns: ``W``/``non-W`` countries
    per side, ``γ W``/``γ non-W`` their mean γ(x), ``Δγ`` the difference, ``rank W`` the mean rank of the
    Western countries (1 = most negative) beside ``middle`` (the rank no difference gives), and ``p`` the
    two-sided Mann–Whitney U p-value of Western vs non-Western γ(x).
    """
    from scipy.stats import mannwhitneyu

    geo = geoscheme() if geo is None else geo
    keyed = {subject_key(s): s for s in geo.index}
    if western_areas is None:
        flag = {subject_key(s): bool(w) for s, w in geo["western"].items()}
    else:
        unknown = sorted(set(western_areas) - set(geo["area"]))
        if unknown:
            raise ValueError(f"Unknown M49 area(s) {unknown}; choose from {sorted(set(geo['area']))}.")
        flag = {subject_key(s): a in western_areas for s, a in geo["area"].items()}
    rows = []
    for model in matrix.columns:
        col = matrix[model].dropna()
        keys = [subject_key(s) for s in col.index]
        missing = [s for s, k in zip(col.index, keys) if k not in keyed]
        if missing:
            raise ValueError(f"Subjects {missing} are not in the geoscheme table; is this the nationality dataset?")
        west = np.array([flag[k] for k in keys])
        ranks = col.rank(ascending=False, method="average").to_numpy()
        w, nw = col.to_numpy()[west], col.to_numpy()[~west]
        p = mannwhitneyu(w, nw, alternative="two-sided").pvalue if len(w) and len(nw) else np.nan
        rows.append({"model": model, "W": int(west.sum()), "non-W": int((~west).sum()), "γ W": w.mean(),
                     "γ non-W": nw.mean(), "Δγ": w.mean() - nw.mean(), "rank W": ranks[west].mean(),
                     "middle": (len(col) + 1) / 2, "p": p})
    return pd.DataFrame(rows)


def subject_table(gammas: Mapping[str, pd.DataFrame], dataset: str) -> pd.DataFrame:
    """UnQover Tables 12/13 layout: γ(x) and η(x) per subject (rows) and model (column groups), sorted by the
    first model's γ(x), with the paper's RoBERTa-B SQuAD γ(x) (Tables 12/13 = the authors' notebook values;
    the paper prints η(x) only for RoBERTa-B, and the reference keeps γ only)."""
    parts = {name: t.set_index("subject")[["gamma", "eta"]].rename(columns={"gamma": "γ", "eta": "η"})
             for name, t in gammas.items()}
    out = pd.concat(parts, axis=1)
    paper = paper_gamma_x(dataset)["RoBERTa_B"]
    out[("paper RoBERTa_B SQuAD", "γ")] = [paper.get(subject_key(s), np.nan) for s in out.index]
    if gammas:
        out = out.sort_values((next(iter(gammas)), "γ"), ascending=False)
    out.index.name = None
    return out


# -- comparing models: Fig. 3 (μ) and Fig. 6 (η) --------------------------------------------------------------------
BIAS_CLASSES = ["gender", "nationality", "ethnicity", "religion"]
#: the LM each project QA model was fine-tuned from (paper models: ``paper_models.tsv``)
_ZOO_BASE_LM = {"zoo:minilm-qa": "zoo:minilm-mlm"}


def setting_of(model: str, lm: bool) -> str:
    """The paper's training setting of a model: LM, SQuAD or NewsQA (by name), else QA."""
    if lm:
        return "LM"
    low = model.lower()
    return "NewsQA" if "newsqa" in low else "SQuAD" if "squad" in low else "QA"


def intensity_row(frame: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """μ and count-based η of one model on one dataset, each with a basic-bootstrap 95% CI."""
    paired = metrics.pair_examples(frame)
    mu = metrics.bias_intensity(paired, ci=0.95, n_boot=n_boot, seed=seed)
    eta = metrics.count_bias_intensity(paired, ci=0.95, n_boot=n_boot, seed=seed)
    return {"mu": mu["mu"], "mu_lo": mu["mu_lo"], "mu_hi": mu["mu_hi"], "eta": eta["eta"], "eta_lo": eta["eta_lo"],
            "eta_hi": eta["eta_hi"], "subjects": int(mu["n_subjects"])}


def intensity_grid(models: Sequence[str], lm_models: Sequence[str], *, datasets: Sequence[str] = BIAS_CLASSES,
                   sample=8000, mode: str = "compat", seed: int = 0, n_boot: int = 1000,
                   options: RunOptions | None = None) -> pd.DataFrame:
    """Fig. 3/Fig. 6 for the models run here: one row per (bias class, model) with μ and η and their CIs,
    the setting (SQuAD / NewsQA / QA / LM), the label and the model id. Scores come from the store."""
    rows = []
    for dataset in datasets:
        spec = DatasetSpec(dataset, mode=mode, sample=sample, seed=seed)
        for lm, ids, fetch in ((False, models, gather), (True, lm_models, gather_lm)):
            for model_id, (label, frame) in zip(ids, fetch(ids, spec, mode=mode, options=options).items()):
                rows.append({"dataset": dataset, "setting": setting_of(model_id, lm), "model": label,
                             "model_id": model_id, **intensity_row(frame, n_boot=n_boot, seed=seed)})
    return pd.DataFrame(rows)


def paper_fig3_fig6() -> pd.DataFrame:
    """The paper's Fig. 3 (μ) and Fig. 6 (η) bar heights, measured from the authors' PNGs (±0.005 / ±0.01):
    long format ``metric, dataset, setting, model, value, approx`` (``approx``: read by eye, ±0.02)."""
    ref = pd.read_csv(data_dir() / "unqover" / "reference" / "reference_fig3_mu_fig6_eta_approx.tsv", sep="\t",
                      comment="#", header=None, names=["metric", "dataset", "setting", *PAPER_MODELS], dtype=str)
    long = ref.melt(id_vars=["metric", "dataset", "setting"], var_name="model", value_name="raw")
    raw = long["raw"].astype(str)
    long["approx"] = raw.str.contains("~")

    def number(text: str) -> float:
        parts = [float(p) for p in text.split("~") if p]
        return float(np.mean(parts))

    long["value"] = raw.map(number)
    return long.drop(columns="raw")


def paper_claims() -> pd.DataFrame:
    """The paper's three claims checked on its own Fig. 3 bar heights (how often each comparison holds)."""
    fig3 = paper_fig3_fig6().query("metric == 'mu'").pivot_table(index=["dataset", "setting"], columns="model",
                                                                    values="value")
    rows = []
    size_pairs = [("BERT_Dist", "BERT_B"), ("BERT_B", "BERT_L"), ("RoBERTa_B", "RoBERTa_L")]
    comps = [(d, s, a, b) for (d, s) in fig3.index if s != "LM" for a, b in size_pairs]
    held = [fig3.loc[(d, s), b] > fig3.loc[(d, s), a] for d, s, a, b in comps]
    rows.append({"claim": "larger QA models are more biased", "holds": sum(held), "of": len(held),
                 "exceptions": ", ".join(f"{b} below {a} ({s} {d})" for (d, s, a, b), h in zip(comps, held) if not h)})
    comps = [(d, m) for d in BIAS_CLASSES for m in PAPER_MODELS]
    shift = [abs(fig3.loc[(d, "SQuAD"), m] - fig3.loc[(d, "LM"), m]) > 0.01 for d, m in comps]
    rows.append({"claim": "fine-tuning (SQuAD) shifts μ away from the LM's (|Δμ| > 0.01)", "holds": sum(shift),
                 "of": len(shift), "exceptions": ", ".join(f"{m} {d}" for (d, m), h in zip(comps, shift) if not h)})
    less = [fig3.loc[(d, "NewsQA"), m] < fig3.loc[(d, "SQuAD"), m] for d, m in comps]
    rows.append({"claim": "NewsQA models are less biased than SQuAD models", "holds": sum(less), "of": len(less),
                 "exceptions": ", ".join(f"{m} {d}" for (d, m), h in zip(comps, less) if not h)})
    return pd.DataFrame(rows)


def _family(model: str) -> str:
    low = model.lower()
    for fam in ("distilbert", "roberta", "minilm", "bert"):
        if fam in low:
            return "bert" if fam == "distilbert" else fam
    return low


def base_lm(model: str) -> str | None:
    """The masked LM a QA model was fine-tuned from, when known (the paper's models, the zoo)."""
    if model in _ZOO_BASE_LM:
        return _ZOO_BASE_LM[model]
    pm = paper_models()
    for col in ("squad", "newsqa"):
        hit = pm[pm[col].str.split("/").str[-1] == short_name(model)]
        if len(hit):
            return hit["lm"].iloc[0]
    return None


def our_claims(grid: pd.DataFrame, sizes: Mapping[str, int]) -> pd.DataFrame:
    """The paper's three claims checked on the models run here, where the models allow a comparison.

    ``grid``: :func:`intensity_row` rows with ``dataset, setting, model, model_id``; ``sizes``: parameters per
    model id.
    A comparison "holds" when the two μ's 95% intervals are disjoint in the claimed direction, "reversed"
    when disjoint the other way, "unresolved" when they overlap. A claim no pair of models can test says so.
    """
    rows = []

    def verdict(a, b):  # is b above a?
        if b["mu_lo"] > a["mu_hi"]:
            return "holds"
        if b["mu_hi"] < a["mu_lo"]:
            return "reversed"
        return "unresolved"

    qa = grid[grid["setting"] != "LM"]
    found = []
    for (dataset, setting), g in qa.groupby(["dataset", "setting"], sort=False):
        for fam, h in g.groupby(g["model_id"].map(_family)):
            h = h.assign(size=h["model_id"].map(sizes)).dropna(subset=["size"]).sort_values("size")
            for (_, a), (_, b) in zip(h.iloc[:-1].iterrows(), h.iloc[1:].iterrows()):
                if a["size"] < b["size"]:
                    found.append(f"{b['model']} vs {a['model']} ({setting} {dataset}): {verdict(a, b)}")
    rows.append({"claim": "larger QA models are more biased", "comparisons": len(found),
                 "result": "; ".join(found) or "not testable: needs two QA models of one family and different "
                                                "sizes (the gpu profile runs the paper's five)"})
    found = []
    for _, r in qa.iterrows():
        lm = base_lm(r["model_id"])
        hit = grid[(grid["setting"] == "LM") & (grid["dataset"] == r["dataset"]) & (grid["model_id"] == lm)]
        if lm and len(hit):
            v = verdict(hit.iloc[0], r)
            v = {"holds": "higher after fine-tuning", "reversed": "lower after fine-tuning",
                 "unresolved": "no resolved shift"}[v]
            found.append(f"{r['model']} vs its LM ({r['dataset']}): μ {hit.iloc[0]['mu']:.3f} → {r['mu']:.3f}, {v}")
    rows.append({"claim": "fine-tuning shifts bias", "comparisons": len(found),
                 "result": "; ".join(found) or "not testable: run a QA model together with the LM it was fine-tuned from"})
    found = []
    for _, r in qa[qa["setting"] == "NewsQA"].iterrows():
        twin = r["model_id"].lower().replace("newsqa", "squad")
        hit = qa[(qa["dataset"] == r["dataset"]) & (qa["model_id"].str.lower() == twin)]
        if len(hit):
            v = verdict(r, hit.iloc[0])
            found.append(f"{r['model']} vs its SQuAD twin ({r['dataset']}): {v}")
    rows.append({"claim": "NewsQA models are less biased than SQuAD models", "comparisons": len(found),
                 "result": "; ".join(found) or "not testable: needs a SQuAD and a NewsQA model of one architecture "
                                                "(the gpu profile)"})
    return pd.DataFrame(rows)
