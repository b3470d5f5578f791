"""Tables and figures of the UnQover chapters, each a function a test can call.

The notebooks call these; they hold no algorithm themselves. Paper values come from
``data/unqover/reference/`` and are always shown beside ours.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..paths import data_dir
from . import metrics
from .generate import DatasetSpec
from .score_qa import load_scores

PAPER_MODELS = ["BERT_Dist", "BERT_B", "BERT_L", "RoBERTa_B", "RoBERTa_L"]


# -- inputs ------------------------------------------------------------------------------------------------------
def short_name(model: str) -> str:
    """A readable label: ``lab:qa-biased`` stays, hub ids lose their owner, folders keep their last part."""
    if model.startswith(("lab:", "zoo:")):
        return model
    return model.rstrip("/").split("/")[-1]


def spec_for(model: str, spec: DatasetSpec) -> DatasetSpec:
    """The dataset a model reads: NewsQA-trained QA models (name contains ``newsqa``) get the NewsQA header."""
    if spec.variant == "qa" and "newsqa" in model.lower() and not spec.newsqa:
        return dataclasses.replace(spec, newsqa=True)
    return spec


def gather(models: Sequence[str], spec: DatasetSpec, **options) -> dict[str, pd.DataFrame]:
    """Per-example scores (:func:`~stereoprobe.unqover.score_qa.load_scores`) for each model, by label.

    NewsQA models read the dataset with the NewsQA header (:func:`spec_for`); the sample is the same.
    """
    return {short_name(m): load_scores(m, spec_for(m, spec), **options) for m in models}


def lm_spec_for(model: str, spec: DatasetSpec) -> DatasetSpec:
    """The LM variant a masked LM reads (spec §1.2): RoBERTa models (name contains ``roberta``) the
    ``_roberta`` lists and ``<mask>``, every other (BERT-family) model the ``_bert`` lists and ``[MASK]``."""
    variant = "lm-roberta" if "roberta" in model.lower() else "lm-bert"
    return dataclasses.replace(spec, variant=variant, newsqa=False, mask=None)


def gather_lm(models: Sequence[str], spec: DatasetSpec, **options) -> dict[str, pd.DataFrame]:
    """Per-example scores of masked LMs on the LM variant of ``spec`` (:func:`lm_spec_for`), by label."""
    return {short_name(m): load_scores(m, lm_spec_for(m, spec), **options) for m in models}


def lab_card(model: str, smoke: bool = False) -> dict | None:
    """The model card of a ``lab:`` model (its recipe says what was planted), else None."""
    if not model.startswith("lab:"):
        return None
    from ..models import resolve

    card = Path(resolve(model, smoke=smoke)) / "model_card.json"
    return json.loads(card.read_text()) if card.is_file() else None


def _read_reference(name: str) -> pd.DataFrame:
    return pd.read_csv(data_dir() / "unqover" / "reference" / name, sep="\t", comment="#")


def paper_table5() -> pd.DataFrame:
    """UnQover Table 5 as printed: δ, ε, avg S for the 15 models (rows: metric × training)."""
    return _read_reference("paper_table5.tsv")


def paper_table2() -> pd.DataFrame:
    """UnQover Table 2 (SQuAD models, top occupations per gender) as quoted in the spec."""
    return _read_reference("paper_table2.tsv")


def paper_models() -> pd.DataFrame:
    """The paper's 15 models and their hub ids."""
    return _read_reference("paper_models.tsv")


# -- Table 5 -----------------------------------------------------------------------------------------------------
def reasoning_errors(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """δ, ε and avg S per model (UnQover Table 5), with the number of paired keys behind them."""
    rows = []
    for name, frame in frames.items():
        e = metrics.reasoning_errors(metrics.pair_examples(frame))
        rows.append({"model": name, "delta": e["positional_error"], "epsilon": e["attribute_error"],
                     "avg_s": e["average_score"], "keys": int(e["n_keys"])})
    return pd.DataFrame(rows)


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
def gender_gamma(frame: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """γ(gender, a) and η(gender, a) for every occupation, with bootstrap 95% CIs (gender grouping)."""
    paired = metrics.pair_examples(frame)
    return metrics.subject_attribute_bias(paired, group_by="gender", ci=0.95, n_boot=n_boot, seed=seed)


def occupation(attr: str) -> str:
    """``was an accountant`` → ``accountant``."""
    for prefix in ("was an ", "was a "):
        if attr.startswith(prefix):
            return attr[len(prefix):]
    return attr


def top_occupations(gammas: Mapping[str, pd.DataFrame], k: int = 3) -> pd.DataFrame:
    """UnQover Table 2: the top-k occupations per gender and model, by γ, with CI and η."""
    rows = []
    for name, table in gammas.items():
        for gender in ("female", "male"):
            part = table[table["subject"] == gender].sort_values("gamma", ascending=False).head(k)
            for rank, r in enumerate(part.itertuples(index=False), start=1):
                rows.append({"model": name, "gender": gender, "rank": rank, "occupation": occupation(r.attr),
                             "gamma": r.gamma, "ci_low": r.gamma_lo, "ci_high": r.gamma_hi, "eta": r.eta})
    return pd.DataFrame(rows)


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


def intensity(frames: Mapping[str, pd.DataFrame], *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Model bias intensity μ (per name for gender; Eq. 8) with a bootstrap CI, and count-based η."""
    rows = []
    for name, frame in frames.items():
        paired = metrics.pair_examples(frame)
        mu = metrics.bias_intensity(paired, ci=0.95, n_boot=n_boot, seed=seed)
        rows.append({"model": name, "mu": mu["mu"], "ci_low": mu["mu_lo"], "ci_high": mu["mu_hi"],
                     "eta": metrics.count_bias_intensity(paired)})
    return pd.DataFrame(rows)


def side_by_side(mu: pd.DataFrame, top: pd.DataFrame, errors: pd.DataFrame) -> pd.DataFrame:
    """One row per model: μ with its CI, δ, the top occupation per gender with γ (the models chapter)."""
    rows = []
    errs = errors.set_index("model")
    for model in mu.index:
        row = {"model": model, "mu": mu.loc[model, "mu"], "mu 95% CI": f"[{mu.loc[model, 'ci_low']:.3f}, "
               f"{mu.loc[model, 'ci_high']:.3f}]", "delta": errs.loc[model, "delta"]}
        for gender in ("female", "male"):
            best = top[(top.model == model) & (top.gender == gender)].sort_values("rank")
            row[f"top {gender} occupations (γ)"] = ", ".join(f"{r.occupation} ({r.gamma:+.2f})" for r in best.itertuples())
        rows.append(row)
    return pd.DataFrame(rows)


def model_report(models: Sequence[str], spec: DatasetSpec, *, mode: str = "compat", n_boot: int = 1000, top: int = 3,
                 seed: int = 0, **options) -> dict[str, pd.DataFrame]:
    """The CLI's report: reasoning errors, intensity, and top γ (per gender, or per subject γ(x))."""
    frames = gather(models, spec, mode=mode, **options)
    tables = {"reasoning_errors": reasoning_errors(frames), "intensity": intensity(frames, n_boot=n_boot, seed=seed)}
    if spec.dataset == "gender":
        gammas = {n: gender_gamma(f, n_boot=n_boot, seed=seed) for n, f in frames.items()}
        tables["top_gamma"] = top_occupations(gammas, k=top)
    else:
        rows = []
        for name, frame in frames.items():
            sb = metrics.subject_bias(metrics.pair_examples(frame)).sort_values("gamma", ascending=False)
            sb.insert(0, "model", name)
            rows.append(pd.concat([sb.head(top), sb.tail(top)]))
        tables["top_gamma"] = pd.concat(rows, ignore_index=True)
    return tables
