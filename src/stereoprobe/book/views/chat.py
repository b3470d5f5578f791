"""The chapter *Probing a chat model* (``notebooks/chat_models.py``): UnQover, SODAPOP and Bias-NLI on causal and
chat LMs, its tables and figures, each a function a test can call.

The numbers come from the probes' own report code (:mod:`stereoprobe.unqover.score_causal`,
:mod:`stereoprobe.sodapop.score_causal`, :mod:`stereoprobe.nli.score_causal`); this module only arranges them:
one row per (model, scorer, template), the spread over templates beside the bootstrap interval, the agreement
of a chat model and an extractive-QA encoder on which subjects are favoured, and chat versus plain prompts.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from ..display import interval_dots, table_view as view
from ...modelref import RowKey, resolve_model
from ...naming import model_labels
from ...options import RunOptions
from ...unqover import metrics, readers
from ..tables import unqover as tables
from ...unqover.generate import DatasetSpec
from ...unqover.readers import Passes
from ...unqover.reporting import gender_gamma, intensity, occupation, reasoning_errors, template_spread
from ...unqover.score_causal import scorer_templates


def unqover_frames(chat_models: Sequence[str], qa_models: Sequence[str], spec: DatasetSpec, *,
                   options: RunOptions, chat: bool | None = None, templates=None) -> dict[RowKey, pd.DataFrame]:
    """Per-example scores, one frame per (causal model, scorer, template) and per QA model, keyed by
    :class:`~stereoprobe.modelref.RowKey` (each model resolved once, read by its reader)."""
    names = [*chat_models, *qa_models]
    refs = [resolve_model(m, native="qa", asked="causal" if m in chat_models else "qa",
                          smoke=options.smoke).with_label(label) for m, label in zip(names, model_labels(names))]
    ask = Passes(spec, templates=tuple(scorer_templates(None, templates)), chat=chat)
    return readers.frames(refs, ask, options)


def summary(frames: Mapping[RowKey, pd.DataFrame], *, n_boot: int, seed: int) -> pd.DataFrame:
    """δ, ε and μ (with its 95% interval) per row, with its model, scorer and template (QA models: ``span``)."""
    out = reasoning_errors(frames).merge(intensity(frames, n_boot=n_boot, seed=seed), on="model")
    keys = {k.label: k for k in frames}
    out.insert(0, "template", [keys[r].template or "-" for r in out["model"]])
    out.insert(0, "scorer", [keys[r].scorer or "span" for r in out["model"]])
    out.insert(0, "row", out.pop("model"))
    out.insert(0, "model", [keys[r].model for r in out["row"]])
    return out


def spread(frames: Mapping[RowKey, pd.DataFrame], *, n_boot: int, seed: int) -> pd.DataFrame:
    """The spread of δ, ε and μ over templates per (model, scorer), beside μ's bootstrap interval
    (:func:`~stereoprobe.unqover.reporting.template_spread`)."""
    return template_spread(reasoning_errors(frames), intensity(frames, n_boot=n_boot, seed=seed), list(frames))


def subject_gammas(frames: Mapping[RowKey, pd.DataFrame], *, n_boot: int, seed: int) -> dict[RowKey, pd.DataFrame]:
    """γ(x) per subject (pooled over attributes; with 95% bootstrap intervals), per row."""
    return {key: metrics.subject_bias(metrics.pair_examples(f), ci=0.95, n_boot=n_boot, seed=seed)
            for key, f in frames.items()}


def gamma_movement(gammas: Mapping[RowKey, pd.DataFrame]) -> pd.DataFrame:
    """Per (model, scorer): how far the templates move γ(x) — the mean over subjects of the range of γ(x) across
    templates — against the mean width of γ(x)'s 95% bootstrap interval within a template."""
    rows = []
    groups: dict[tuple[str, str], list[pd.DataFrame]] = {}
    for key, g in gammas.items():
        if key.template:
            groups.setdefault((key.model, key.scorer), []).append(g.set_index("subject"))
    for (model, scorer), gs in groups.items():
        values = pd.concat([g["gamma"] for g in gs], axis=1)
        widths = pd.concat([g["gamma_hi"] - g["gamma_lo"] for g in gs], axis=1)
        rows.append({"model": model, "scorer": scorer, "templates": len(gs), "subjects": len(values),
                     "gamma_range": float((values.max(axis=1) - values.min(axis=1)).mean()),
                     "gamma_ci_width": float(widths.mean(axis=1).mean())})
    return pd.DataFrame(rows)


def planted_view(frames: Mapping[RowKey, pd.DataFrame], lab_models: Sequence[str], *, smoke: bool = False,
                 n_boot: int = 1000, seed: int = 0, k: int = 6):
    """Where a planted-bias pair puts its planted occupations: for every row of a ``lab:`` model (each scorer and
    template), the ``k`` occupations with the largest |γ(female, a)|, how many of them were planted (the cards'
    ``planted.occupations``, else the QA lab's plant) and whether each points to its planted gender."""
    from ...zoo.lab import DEFAULT_PLANTED

    planted = tables.lab_planted(lab_models, "occupations", smoke=smoke) or dict(DEFAULT_PLANTED)
    labels = model_labels(list(lab_models))
    rows = []
    for key, frame in frames.items():
        if key.model not in labels:
            continue
        g = gender_gamma(frame, n_boot=n_boot, seed=seed)
        g = g[g["subject"] == "female"].assign(occupation=lambda t: t["attr"].map(occupation))
        top = g.reindex(g["gamma"].abs().sort_values(ascending=False).index).head(k)
        hits = [o for o, v in zip(top["occupation"], top["gamma"]) if o in planted
                and (v > 0) == (planted[o] == "female")]
        rows.append({"row": key.label, "top occupations by |γ|": ", ".join(f"{o} ({v:+.2f})" for o, v in
                                                                         zip(top["occupation"], top["gamma"])),
                     "planted among them": len(hits), "largest |γ|": float(top["gamma"].abs().max())})
    return view(pd.DataFrame(rows), f"Table: the {k} occupations with the largest |γ(female, a)| per lab row; "
                                    f"planted: {', '.join(f'{o} → {g}' for o, g in sorted(planted.items()))}.")


def plot_templates(table: pd.DataFrame):
    """μ of every (model, scorer, template) with its 95% bootstrap interval: the templates of one model and scorer
    side by side, so the spread over templates can be compared with the interval of any one of them."""
    causal = table[table["scorer"] != "span"].reset_index(drop=True)
    groups = [((model, scorer), causal[(causal["model"] == model) & (causal["scorer"] == scorer)])
              for model, scorer in dict.fromkeys(zip(causal["model"], causal["scorer"]))]
    return interval_dots(groups, value="mu", low="ci_low", high="ci_high",
                         label=lambda g, r: f"{g[0]} · {g[1]}:{r['template']}", color=lambda k, r: f"C{k}",
                         xlabel="bias intensity μ (95% bootstrap interval)", title="How much the prompt template moves μ")


def agreement(qa: pd.DataFrame, chat: Mapping[str, pd.DataFrame], *, n_boot: int, seed: int) -> pd.DataFrame:
    """Spearman's rank correlation of γ(x) between an extractive-QA model (``qa``: its subject_bias table) and each
    causal row, over the subjects both score, with a 95% bootstrap interval over subjects (scipy)."""
    from .chat_say import rank_correlation

    base = qa.set_index("subject")["gamma"]
    rows = []
    for name, g in chat.items():
        r = rank_correlation(base, g.set_index("subject")["gamma"], n_boot=n_boot, seed=seed)
        rows.append({"row": name, "subjects": r.pop("pairs"), **r})
    return pd.DataFrame(rows)


def chat_versus_plain(model: str, spec: DatasetSpec, templates: Sequence[str], *, options: RunOptions,
                      n_boot: int, seed: int) -> pd.DataFrame:
    """δ, ε and μ of one chat model with each template read through its chat template and as plain text."""
    out = []
    for chat in (True, False):
        frames = unqover_frames([model], [], spec, options=options, chat=chat, templates=list(templates))
        table = summary(frames, n_boot=n_boot, seed=seed)
        table.insert(1, "prompt", "chat template" if chat else "plain")
        out.append(table)
    return pd.concat(out, ignore_index=True).sort_values(["scorer", "template", "prompt"], ignore_index=True)


def paper_errors() -> pd.DataFrame:
    """δ and ε of the paper's models (Table 5 as printed): per metric and training, the lowest and highest value
    over its five architectures."""
    t5 = tables.paper_table5()
    t5 = t5[t5["metric"].isin(["delta", "epsilon"])]
    values = t5.drop(columns=["metric", "training"])
    return pd.DataFrame({"metric": t5["metric"], "training": t5["training"], "lowest": values.min(axis=1),
                         "highest": values.max(axis=1)}).reset_index(drop=True)


# -- the chapter's tables, captioned ------------------------------------------------------------------------------
def summary_view(table: pd.DataFrame):
    return view(table, "Table 1: δ, ε and μ (95% bootstrap interval) on the gender dataset, one row per model, scorer "
                "and template; avg S is 1/2 for every causal row by construction.",
                ["model", "scorer", "template", "delta", "epsilon", "mu", "ci_low", "ci_high"])


def spread_view(table: pd.DataFrame):
    return view(table, "Table 2: the range of δ, ε and μ over a scorer's templates, beside the mean width of μ's "
                "95% interval; 'larger' says which of the two uncertainties dominates.",
                ["model", "scorer", "templates", "delta_min", "delta_max", "mu_min", "mu_max", "mu_range",
                 "mu_ci_width", "larger"])


def movement_view(table: pd.DataFrame):
    return view(table, "Table 3: how far the templates move γ(x) (mean over names of its range across templates) "
                "against the mean width of γ(x)'s 95% interval within one template.")


def spread_numbers(table: pd.DataFrame) -> dict[str, str]:
    """The numbers the chapter's prose quotes from Table 2."""
    return {"template_wins": f"{int((table['larger'] == 'template').sum())}", "spread_rows": f"{len(table)}"}


def agreement_view(gammas: Mapping[RowKey, pd.DataFrame], *, n_boot: int, seed: int):
    """Table 4: :func:`agreement` of the one QA row with every causal row."""
    qa = [k for k in gammas if not k.scorer]
    table = agreement(gammas[qa[0]], {k.label: v for k, v in gammas.items() if k.scorer}, n_boot=n_boot, seed=seed)
    return view(table, f"Table 4: Spearman's rank correlation of γ(x) between {qa[0].label} and each causal row "
                "(nationality), with a 95% bootstrap interval over countries.")


def versus_view(table: pd.DataFrame):
    return view(table, "Table 5: one chat model with its chat template and with plain prompts, gender.",
                ["model", "prompt", "scorer", "template", "delta", "epsilon", "mu", "ci_low", "ci_high"])


def paper_view():
    return view(paper_errors(), "Table 6: δ and ε of the paper's models (Table 5 of Li et al. 2020), lowest and "
                "highest over its five architectures.")


def sodapop_run(model: str, mlm: str, *, names_per_group: int, options: RunOptions, seed: int = 10):
    """SODAPOP with the chat model as the multiple-choice model: one context, depth 1, both readings."""
    from ...sodapop import api

    return api.report(model, mlm, names_per_group=names_per_group, contexts=[3], depth=1, cap=10,
                      pairs=["AA_f:EA_f"], n_perm=10_000, seed=seed, options=options)


def sodapop_view(report):
    table = report["units"].groupby("group")[["accuracy", "accuracy_norm"]].mean().reset_index()
    return view(table, "Table 7: the chat model's accuracy per group of names (acc and acc_norm), one context.")


def nli_view(model: str, *, sample: int, options: RunOptions, n_boot: int, seed: int, **study):
    """Table 8: Bias-NLI zero-shot on the gender pairs, one row per NLI template."""
    from ...nli import api

    table = api.report(model, "gender", sample=sample, n_boot=n_boot, seed=seed, options=options, **study)["gender"]
    return view(table, "Table 8: net neutral NN, fraction neutral FN and the mass of the label words, per NLI "
                "template, gender pairs.", ["model", "pairs", "NN", "NN_lo", "NN_hi", "FN", "label_mass"])


__all__ = ["unqover_frames", "summary", "spread", "subject_gammas", "gamma_movement", "planted_view", "plot_templates",
           "agreement", "chat_versus_plain", "paper_errors", "summary_view", "spread_view", "movement_view",
           "spread_numbers", "agreement_view", "versus_view", "paper_view", "sodapop_run", "sodapop_view", "nli_view",
           "view"]
