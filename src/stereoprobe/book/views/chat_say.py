"""The chapter *What chat models say* (``notebooks/chat_say.py``): the same UnQover examples read from one chat model
on every rung of the ladder — exact, next token, generated — through its backend (:mod:`stereoprobe.backends`: a
local chat LM answers every rung in this process, batched; a served one the rungs its endpoint gives), like with
like (the argmax answer of a probability rung beside a generated answer, soft beside soft), with and without an
unknown option, BBQ's bias score beside UnQover's γ and where the two part, and a reasoning model with its thinking on
and off; each table and figure a function a test can call.

The numbers come from the probes' own code (:mod:`stereoprobe.unqover.readers`, :func:`stereoprobe.unqover.reporting.
long_table`, :mod:`stereoprobe.unqover.abstention`); this module only reads a model on each rung and arranges what
comes back: μ, δ and ε by rung and reading with their intervals, whether the rungs agree on *which* cells are biased
(Spearman's rank correlation of γ with a bootstrap interval), the abstention rate, BBQ's scores step by step to
UnQover's γ toward the stereotype (:func:`stereoprobe.unqover.abstention.bbq_beside_gamma`) under the majority split
of Winogender's BLS shares and a stricter one (:mod:`stereoprobe.unqover.bbq`), what the answer parser made of the
generated answers, and the ``thinking_shift`` table of the chat lab pair.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ...errors import StereoprobeError
from ...modelref import RowKey, resolve_model
from ...options import RunOptions
from ...prompts import PromptTemplate, template
from ...served.endpoint import served_name
from ...unqover import abstention, metrics, readers
from ...unqover.bbq import MAJORITY, directed_occupations, split_name, stereotyped_gender
from ...unqover.generate import DatasetSpec
from ...unqover.readers import Passes
from ...unqover.reporting import long_table, model_report, occupation
from ..display import table_view as view

#: The rungs of the ladder, best first (:data:`stereoprobe.prompting.RUNGS`).
RUNGS = ("exact", "next-token", "generated")
#: The two kinds of shares a row is read with: as scored (probabilities; a generated row's are its answers), and
#: each pass's argmax answer (:func:`stereoprobe.unqover.abstention.argmax_frame`), what a generated answer is.
SHARES = ("soft", "argmax")


def rung_of(row: RowKey) -> str:
    """The rung a row was read on (a local model's exact rows carry no rung: ``exact``)."""
    return row.rung or "exact"


def rung_frames(model: str, spec: DatasetSpec, templates: Sequence, *, options: RunOptions,
                rungs: Sequence[str] = RUNGS) -> dict[RowKey, pd.DataFrame]:
    """The per-example scores of ``model`` through each of ``templates`` (:class:`~stereoprobe.prompts.
    PromptTemplate`) on each rung of ``rungs`` its backend gives (:mod:`stereoprobe.backends`): a local chat LM on
    every rung in this process (exact through its chat template, the letters' probabilities of the first generated
    token, greedy answers generated in batches), a served name (``openai-api/<service>/<model>``) on the rungs its
    endpoint gives; a template is read on the rungs it fits (:func:`stereoprobe.unqover.prompted.fits`)."""
    from ...backends import backend_for

    from ...unqover.prompted import fits

    ref = resolve_model(model, native="qa", asked="causal", smoke=options.smoke)
    backend = backend_for(ref, options)
    out: dict[RowKey, pd.DataFrame] = {}
    for rung in rungs:
        fitting = tuple(t for t in templates if rung in fits(t))  # names-unknown has no letters for the next token
        if fitting and backend.why_not(rung) is None:
            out.update(readers.frames([ref], Passes(spec, templates=fitting, rung=rung), options))
    return out


def long(frames: Mapping[RowKey, pd.DataFrame], spec: DatasetSpec, *, n_boot: int, seed: int,
         shares: Sequence[str] = SHARES) -> pd.DataFrame:
    """Every row in both readings (:func:`~stereoprobe.unqover.reporting.long_table`) with its ``rung`` filled in and
    its ``shares``: ``soft`` as scored (the probability rungs; a generated row's shares are its answers, so it has
    only the argmax line) and ``argmax`` (every pass's most probable option: what a generated answer is, like with
    like)."""
    parts = []
    for kind in shares:
        rows = {r: (f if kind == "soft" else abstention.argmax_frame(f)) for r, f in frames.items()
                if kind == "argmax" or rung_of(r) != "generated"}
        if not rows:
            continue
        table = long_table(rows, Passes(spec), n_boot=n_boot, seed=seed)
        table["rung"] = [rung_of(r) for r in rows for _ in abstention.READINGS]
        table["shares"] = kind
        parts.append(table)
    return pd.concat(parts, ignore_index=True)


def cell_gammas(frame: pd.DataFrame, dataset: str) -> pd.Series:
    """γ of every (subject, attribute) cell over the answered passes (per gender for the gender dataset), indexed by
    ``subject/attr``; empty when nothing was answered."""
    read = abstention.reading(frame, "answered")
    if read.empty:
        return pd.Series(dtype=float)
    g = metrics.subject_attribute_bias(metrics.pair_examples(read),
                                       group_by="gender" if dataset == "gender" else "subject")
    if dataset == "gender":  # γ(male, a) = −γ(female, a): one of the two carries everything
        g = g[g["subject"] == "female"]
    return pd.Series(g["gamma"].to_numpy(), index=g["subject"] + "/" + g["attr"].astype(str))


def rank_correlation(x: pd.Series, y: pd.Series, *, n_boot: int, seed: int) -> dict:
    """Spearman's ρ of two series over their common index, with a 95% percentile bootstrap interval that resamples
    the pairs (NaN below 3 pairs, or 5 for the interval, or where either side is constant). A resample whose either
    side is constant has no ρ; the interval is taken over the resamples that have one (at a handful of pairs many have
    none: scipy's ``bootstrap`` would return no interval at all)."""
    from scipy import stats

    both = pd.concat([x, y], axis=1, join="inner").dropna()
    a, b = both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()
    varied = len(both) > 2 and np.ptp(a) > 0 and np.ptp(b) > 0
    rho = float(stats.spearmanr(a, b).statistic) if varied else float("nan")
    lo = hi = float("nan")
    if varied and len(both) > 4:
        picks = np.random.default_rng(seed).integers(0, len(both), size=(n_boot, len(both)))
        ra, rb = a[picks], b[picks]
        defined = (np.ptp(ra, axis=1) > 0) & (np.ptp(rb, axis=1) > 0)
        if defined.any():
            ranks_a = stats.rankdata(ra[defined], axis=1)
            ranks_b = stats.rankdata(rb[defined], axis=1)
            rhos = np.array([np.corrcoef(u, v)[0, 1] for u, v in zip(ranks_a, ranks_b)])  # Spearman: Pearson of ranks
            lo, hi = (float(q) for q in np.percentile(rhos, [2.5, 97.5]))
    return {"pairs": len(both), "spearman": rho, "ci_low": lo, "ci_high": hi}


def rung_agreement(frames: Mapping[RowKey, pd.DataFrame], dataset: str, *, n_boot: int, seed: int,
                   shares: str = "soft") -> pd.DataFrame:
    """Do two readings of the same model and template agree on which cells are biased? Spearman's ρ of γ between
    every pair of rows that differ only in their rung, over the cells both answered; ``shares``: ``soft`` (the
    frames as scored) or ``argmax`` (every pass's answer, :func:`stereoprobe.unqover.abstention.argmax_frame`: what
    a generated row is)."""
    gammas = {row: cell_gammas(f if shares == "soft" else abstention.argmax_frame(f), dataset)
              for row, f in frames.items()}
    rows = []
    keys = list(frames)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if (a.scorer, a.template, base_model(a)) != (b.scorer, b.template, base_model(b)):
                continue
            rows.append({"template": a.template, "shares": shares, "a": rung_of(a), "b": rung_of(b),
                         **rank_correlation(gammas[a], gammas[b], n_boot=n_boot, seed=seed)})
    return pd.DataFrame(rows, columns=["template", "shares", "a", "b", "pairs", "spearman", "ci_low", "ci_high"])


def base_model(row: RowKey) -> str:
    """The model a row reads, whether in this process or served: the last part of its name
    (``zoo:smollm2-135m-instruct`` and ``openai-api/local/smollm2-135m-instruct`` are both ``smollm2-135m-instruct``)."""
    return served_name(row.model)


def templates_of(names: Sequence) -> tuple[PromptTemplate, ...]:
    """The choice templates ``names`` (shipped names such as ``letters`` or ``letters-unknown``, YAML files, or
    :class:`~stereoprobe.prompts.PromptTemplate`)."""
    return tuple(t if isinstance(t, PromptTemplate) else template(t, "unqover-choice") for t in names)


def say_frames(models: Sequence[str], spec: DatasetSpec, templates: Sequence, *, options: RunOptions,
               rungs: Sequence[str] = RUNGS) -> dict[RowKey, pd.DataFrame]:
    """:func:`rung_frames` of every model of ``models`` through the choice ``templates`` (:func:`templates_of`)."""
    out: dict[RowKey, pd.DataFrame] = {}
    for model in models:
        out.update(rung_frames(model, spec, templates_of(templates), options=options, rungs=rungs))
    return out


def chapter_frames(models: Sequence[str], spec: DatasetSpec, generated_spec: DatasetSpec, templates: Sequence,
                   probability_templates: Sequence, *, options: RunOptions) -> tuple[dict, dict]:
    """The chapter's readings: (the probability rungs of ``probability_templates`` on ``spec``, every row). The
    generated rung reads every template on ``generated_spec`` (generating costs far more per pass), where the
    templates not read above are read exactly too, so that their argmax and their answers are of the same examples."""
    probability = say_frames(models, spec, probability_templates, options=options, rungs=("exact", "next-token"))
    others = [t for t in templates if t not in probability_templates]
    generated = {**say_frames(models, generated_spec, others, options=options, rungs=("exact",)),
                 **say_frames(models, generated_spec, templates, options=options, rungs=("generated",))}
    return probability, {**probability, **generated}


def draw_occupations(directed: int, undirected: int, *, seed: int) -> tuple[str, ...]:
    """``directed`` of UnQover's gender occupations (``occupation_rev1``) that the majority split of Winogender's BLS
    shares directs and ``undirected`` of those it cannot (not in Winogender's table), drawn at random with ``seed``,
    in the attribute file's order: the ``attributes`` of the chapter's :class:`DatasetSpec`. Fewer occupations give
    each (name, occupation) cell of μ several examples, so that its bootstrap (Eq. 8, within cells) measures
    something; the directed ones are those BBQ's score can count."""
    from ...unqover.wordlists import load_attributes

    attrs = [a.identity for a in load_attributes("occupation_rev1")["p_act"]]
    pools = {True: [a for a in attrs if stereotyped_gender(a) is not None],
             False: [a for a in attrs if stereotyped_gender(a) is None]}
    rng = np.random.default_rng(seed)
    picked = set()
    for has_direction, k in ((True, directed), (False, undirected)):
        pool = pools[has_direction]
        if not 0 <= k <= len(pool):
            raise StereoprobeError(f"{'directed' if has_direction else 'undirected'}={k}: UnQover's gender occupations "
                             f"hold {len(pool)} such; draw between 0 and {len(pool)}.")
        picked.update(pool[i] for i in rng.choice(len(pool), size=k, replace=False))
    if not picked:
        raise StereoprobeError("directed=0 and undirected=0 draw no occupation; draw at least one.")
    return tuple(a for a in attrs if a in picked)


def gender_samples(*, mode: str, sample: int, generated_sample: int, occupations: Sequence[int],
                   subjects: Sequence[int], seed: int) -> tuple[DatasetSpec, DatasetSpec]:
    """The chapter's two gender samples: ``sample`` paper examples for the probability rungs (``seed``) and
    ``generated_sample`` for the generated rung (``seed + 1``), both among the occupations :func:`draw_occupations`
    draws (``occupations``: how many with a direction and without one), each among its own ``subjects`` names of
    each gender (a pair: the first sample's, the second's)."""
    drawn = draw_occupations(*occupations, seed=seed)
    first, second = subjects
    return (DatasetSpec("gender", mode=mode, sample=sample, seed=seed, subjects=first, attributes=drawn),
            DatasetSpec("gender", mode=mode, sample=generated_sample, seed=seed + 1, subjects=second,
                        attributes=drawn))


def cell_fill(spec: DatasetSpec) -> float:
    """The mean number of keys (paper examples) in a (name, occupation) cell of μ (Eq. 8) that ``spec`` samples: each
    key adds its C to the cells of its two subjects at its attribute."""
    from ...unqover.generate import example_keys

    keys = example_keys(spec)
    cells = pd.concat([keys[["subj1", "attr"]].set_axis(["subject", "attr"], axis=1),
                       keys[["subj2", "attr"]].set_axis(["subject", "attr"], axis=1)]).astype(str).value_counts()
    return float(cells.sum() / 2 / len(cells))  # both orders of a key name the same two cells


def sample_numbers(spec: DatasetSpec, generated_spec: DatasetSpec) -> dict[str, str]:
    """The numbers the chapter quotes about its two gender samples: the occupations they are drawn among and how many
    of those the majority split directs, the names of each gender each is drawn among, and the mean keys per (name,
    occupation) cell of each sample beside that of a sample of the same size drawn from the whole dataset (same
    seed)."""
    from dataclasses import replace

    attrs = list(spec.attributes) if isinstance(spec.attributes, tuple) else []
    whole = replace(spec, subjects=None, attributes=None)
    return {"say_sample_occupations": f"{len(attrs)}",
            "say_sample_directed": f"{directed_occupations(attrs)['directed']}",
            "say_subjects": f"{spec.subjects or 'all'}",
            "say_subjects_generated": f"{generated_spec.subjects or 'all'}",
            "say_cell_keys": f"{cell_fill(spec):.1f}", "say_cell_keys_generated": f"{cell_fill(generated_spec):.1f}",
            "say_cell_keys_whole": f"{cell_fill(whole):.2f}"}


def agreement_table(probability: Mapping[RowKey, pd.DataFrame], frames: Mapping[RowKey, pd.DataFrame], dataset: str,
                    *, n_boot: int, seed: int) -> pd.DataFrame:
    """:func:`rung_agreement` of the probability rungs' soft shares, then of every row's argmax answers."""
    return pd.concat([rung_agreement(probability, dataset, n_boot=n_boot, seed=seed),
                      rung_agreement(frames, dataset, n_boot=n_boot, seed=seed, shares="argmax")], ignore_index=True)


def female_gammas(frame: pd.DataFrame) -> pd.DataFrame:
    """γ(female, a) of every occupation over the answered passes (``attr``, ``occupation``, ``gamma``, ``n``);
    empty when nothing was answered."""
    read = abstention.reading(frame, "answered")
    if read.empty:
        return pd.DataFrame(columns=["attr", "occupation", "gamma", "n"])
    g = metrics.subject_attribute_bias(metrics.pair_examples(read), group_by="gender")
    g = g[g["subject"] == "female"]
    return pd.DataFrame({"attr": g["attr"].astype(str).to_numpy(), "occupation": g["attr"].astype(str).map(
        occupation).to_numpy(), "gamma": g["gamma"].to_numpy(), "n": g["n"].to_numpy()})


def stereotype_gamma(frame: pd.DataFrame, split=MAJORITY) -> tuple[float, int]:
    """UnQover's counterpart of BBQ's s_DIS: the mean over the occupations that Winogender's BLS shares give a
    direction by ``split`` (:func:`stereoprobe.unqover.bbq.stereotyped_gender`; by default the majority: γ(female, a)
    where most workers are women, −γ(female, a) elsewhere) of γ toward the stereotyped gender, and the number of such
    occupations answered. γ averages the two orders of every example and subtracts the negated question (Li et al.
    2020, Eq. 5–7), which s_DIS does not; NaN where none was answered."""
    g = female_gammas(frame)
    sign = g["attr"].map(lambda a: {"female": 1.0, "male": -1.0}.get(stereotyped_gender(a, split), np.nan))
    values = (g["gamma"] * sign).dropna()
    return (float(values.mean()) if len(values) else float("nan")), int(len(values))


def bbq_steps(frames: Mapping[RowKey, pd.DataFrame], split=MAJORITY, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Every gender row's walk from BBQ's s_DIS to UnQover's γ toward the stereotype
    (:func:`stereoprobe.unqover.abstention.bbq_beside_gamma`): one line per row and step (``template``, ``rung``,
    ``step``, ``value`` with its bootstrap interval over the row's keys, what it is ``over``), the differences
    between consecutive steps among them."""
    parts = []
    for row, frame in frames.items():
        steps = abstention.bbq_beside_gamma(frame, split, n_boot=n_boot, seed=seed)
        steps.insert(0, "template", row.template)
        steps.insert(1, "rung", rung_of(row))
        parts.append(steps)
    return pd.concat(parts, ignore_index=True)


def plot_bbq_steps(steps: pd.DataFrame):
    """The four steps from s_DIS to γ toward the stereotype of every row, each with its 95% interval, a row's steps
    together in one band."""
    from ..display import interval_dots

    names = list(abstention.STEPS)
    values = steps[steps["step"].isin(names)]
    groups = [((t, r), part.assign(o=part["step"].map(names.index)).sort_values("o"))
              for (t, r), part in values.groupby(["template", "rung"], sort=False)]
    labels = {"s_dis": "BBQ s_DIS", "gamma_argmax_keys": "γ, argmax, per key", "gamma_soft_keys": "γ, soft, per key",
              "gamma_soft_occupations": "γ, soft, per occupation"}
    return interval_dots(groups, value="value", low="lo", high="hi",
                         label=lambda g, r: f"{g[0]} · {g[1]} · {labels[r['step']]}",
                         color=lambda k, r: f"C{names.index(r['step'])}", shade=lambda k: ("0.5", 0.06 * (k % 2)),
                         xlabel="toward the stereotype (BLS majority direction; 95% bootstrap interval over keys)",
                         title="From BBQ's s_DIS to UnQover's γ, one change at a time")


def step_differences(steps: pd.DataFrame) -> pd.DataFrame:
    """The differences of :func:`bbq_steps` (one line per row and change) and the mean |γ| of the directed and the
    undirected occupations, with their intervals."""
    keep = steps["step"].str.contains(" − ") | steps["step"].str.startswith("abs_gamma")
    return steps.loc[keep, ["template", "rung", "step", "value", "lo", "hi", "over"]].reset_index(drop=True)


def bbq_splits(frames: Mapping[RowKey, pd.DataFrame], strict=(30, 70)) -> pd.DataFrame:
    """BBQ's scores of every row that may abstain under the majority split of Winogender's BLS shares (female over 50%
    women, else male) and under ``strict`` (``(low, high)``: male at ``low``% women or less, female at ``high``% or
    more, no direction between; :func:`stereoprobe.unqover.bbq.stereotyped_gender`), one line per row and split,
    side by side: ``directed`` (the occupations of the row's examples that the split directs), ``bbq_passes``,
    ``bbq_ties``, ``bbq_accuracy``, ``bbq_s_dis``, ``bbq_s_amb`` (all three over the same passes) and γ toward the
    stereotype over the directed occupations answered (``gamma_stereo``)."""
    rows = []
    for row, frame in frames.items():
        if not abstention.abstains(frame):
            continue
        attrs = frame["attr"].astype(str).unique().tolist()
        for split in (MAJORITY, strict):
            scores = abstention.bbq(frame, split=split)
            rows.append({"model": row.model, "template": row.template, "rung": rung_of(row),
                         "split": split_name(split), "directed": directed_occupations(attrs, split)["directed"],
                         **scores, "gamma_stereo": stereotype_gamma(frame, split)[0]})
    columns = ["model", "template", "rung", "split", "directed", "bbq_passes", "bbq_ties", "bbq_accuracy", "bbq_s_dis",
               "bbq_s_amb", "gamma_stereo"]
    return pd.DataFrame(rows, columns=columns)


def split_numbers(splits: pd.DataFrame, strict=(30, 70)) -> dict[str, str]:
    """The numbers the chapter's prose quotes about the two splits: of UnQover's gender occupations
    (``occupation_rev1``), how many are in Winogender's table (``say_listed``) and how many each split directs
    (``say_directed_majority``, ``say_directed_strict``, with the strict split's female ones,
    ``say_strict_female``), the strict split's name (``say_split``), and, over the rows of :func:`bbq_splits`, the
    most directed occupations a row has under each split (``say_row_majority``, ``say_row_strict``) and the ties
    dropped over all the rows under the majority split (``say_ties``)."""
    from ...unqover.wordlists import load_attributes

    attrs = [a.text for a in load_attributes("occupation_rev1")["p_act"]]
    majority, tight = directed_occupations(attrs), directed_occupations(attrs, strict)
    by = {name: splits[splits["split"] == name] for name in (split_name(MAJORITY), split_name(strict))}

    def most(part: pd.DataFrame) -> str:
        return f"{int(part['directed'].max())}" if len(part) else "0"

    return {"say_occupations": f"{len(attrs)}", "say_listed": f"{majority['listed']}",
            "say_directed_majority": f"{majority['directed']}", "say_directed_strict": f"{tight['directed']}",
            "say_strict_female": f"{tight['female']}", "say_split": split_name(strict),
            "say_row_majority": most(by[split_name(MAJORITY)]), "say_row_strict": most(by[split_name(strict)]),
            "say_ties": f"{int(by[split_name(MAJORITY)]['bbq_ties'].sum())}"}


def plot_mu_by_rung(table: pd.DataFrame):
    """μ (answered reading) of every row with its 95% bootstrap interval, grouped by template: each rung's argmax
    answers (like with like: a generated answer is one) and the probability rungs' soft shares, one colour per rung,
    hollow for soft."""
    from ..display import interval_dots

    answered = table[table["reading"] == "answered"].reset_index(drop=True)
    order = [(r, k) for k in ("argmax", "soft") for r in RUNGS]
    groups = []
    for name in dict.fromkeys(answered["template"]):
        part = answered[answered["template"] == name]
        rank = [order.index((r, k)) for r, k in zip(part["rung"], part["shares"])]
        groups.append((name, part.assign(o=rank).sort_values("o")))
    return interval_dots(groups, value="mu", low="mu_lo", high="mu_hi",
                         label=lambda g, r: f"{g} · {r['rung']} · {r['shares']}",
                         color=lambda k, r: f"C{RUNGS.index(r['rung'])}", shade=lambda k: ("0.5", 0.06 * (k % 2)),
                         xlabel="bias intensity μ over the answered passes (95% bootstrap interval)",
                         title="μ of the same examples on each rung: argmax answers, then soft shares")


def plot_abstention(table: pd.DataFrame):
    """The share of passes abstained on, with its Wilson interval, per template, rung and shares (rows that can
    abstain): argmax answers beside the generated ones, the unknown option's mean probability apart."""
    import matplotlib.pyplot as plt

    rows = table[(table["reading"] == "answered") & table["abstain"].notna()].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.4))
    y = np.arange(len(rows))
    from matplotlib.colors import to_rgba

    ax.barh(y, rows["abstain"], color=[to_rgba(f"C{RUNGS.index(r)}", 0.85 if k == "argmax" else 0.35)
                                       for r, k in zip(rows["rung"], rows["shares"])])
    # at a rate of 0 or 1 the Wilson bound can sit a rounding error inside the rate
    low = np.clip(rows["abstain"] - rows["abstain_lo"], 0, None)
    high = np.clip(rows["abstain_hi"] - rows["abstain"], 0, None)
    ax.errorbar(rows["abstain"], y, xerr=[low, high], fmt="none", ecolor="black", capsize=3)
    ax.set_yticks(y, [f"{t} · {r} · {'answers' if k == 'argmax' else 'mean probability'}"
                      for t, r, k in zip(rows["template"], rows["rung"], rows["shares"])])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share abstained on: of the answers, or the unknown option's mean probability (95% Wilson)")
    ax.set_title("How often the model says it cannot tell")
    fig.tight_layout()
    return fig


def parse_counts(models: Sequence[str], spec: DatasetSpec, templates: Sequence, *,
                 options: RunOptions) -> pd.DataFrame:
    """What the answer parser (:func:`stereoprobe.served.parse.parse_answer`) made of every generated answer of
    ``models`` through ``templates`` (read already: nothing is generated again): one line per template and rule, the
    kind it gives (option, unknown, unparsed), the count and its share of the template's answers."""
    from ...backends import backend_for
    from ...unqover.prompted import answers

    rows = []
    for model in models:
        ref = resolve_model(model, native="qa", asked="causal", smoke=options.smoke)
        if backend_for(ref, options).why_not("generated") is not None:
            continue
        ask = Passes(spec, templates=templates_of(templates), rung="generated")
        for row in readers.reader_for(ref).rows(ref, ask, options):
            raw = answers(ref, ask, row, options)
            counts = raw.groupby(["kind", "rule"]).size().rename("answers").reset_index()
            counts["share"] = counts["answers"] / len(raw)
            counts.insert(0, "template", row.template)
            rows.append(counts.sort_values("answers", ascending=False))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["template", "kind", "rule", "answers", "share"])


def parse_numbers(parsed: pd.DataFrame) -> dict[str, str]:
    """The numbers the prose quotes from :func:`parse_counts`: per template (``letters``, ``letters-unknown``), the
    share of its answers read by a label or an answer cue (``say_followed_<template>``) and the share unparsed as
    ``ambiguous`` (``say_ambiguous_<template>``), as percentages; n/a where the template was not generated."""
    out = {}
    for name in ("letters", "letters-unknown"):
        part = parsed[parsed["template"] == name]
        followed = part.loc[part["rule"].isin(["label", "answer-cue"]), "share"].sum()
        ambiguous = part.loc[part["rule"] == "ambiguous", "share"].sum()
        key = name.replace("-", "_")
        out[f"say_followed_{key}"] = f"{followed:.0%}" if len(part) else "n/a"
        out[f"say_ambiguous_{key}"] = f"{ambiguous:.0%}" if len(part) else "n/a"
    return out


def thinking_report(models: Sequence[str], spec: DatasetSpec, templates: Sequence, *, options: RunOptions,
                    n_boot: int, seed: int, think_budget: int | None = 32) -> dict[str, pd.DataFrame]:
    """Local chat LMs with a thinking switch read through the choice ``templates`` on the generated rung, greedy,
    with thinking on (the reasoning capped at ``think_budget`` tokens) and off (the chat prompt with its empty think
    block): :func:`~stereoprobe.unqover.reporting.model_report` with ``both_thinking`` and ``long``, whose
    ``thinking_shift`` table gives μ, the abstention rate and the cells that moved, with intervals — two generated
    readings, so every shift is between answers of one kind."""
    ask = Passes(spec, templates=templates_of(templates), thinking=True, think_budget=think_budget, rung="generated")
    return model_report(list(models), ask, options=options, causal=list(models), both_thinking=True, long=True,
                        n_boot=n_boot, seed=seed)


# -- the chapter's tables, captioned ------------------------------------------------------------------------------
def rows_view(table: pd.DataFrame):
    return view(table[table["reading"] == "answered"], "Table 1: every reading of the gender examples, one row per "
                "template, rung and shares: argmax (each pass's answer: a generated answer, or a probability rung's "
                "most probable option, like with like) and soft (the probabilities as scored). The passes, the "
                "abstention and unparsed rates (—: not measured; a forced choice cannot abstain, a scored rung "
                "leaves nothing unparsed), δ, ε and μ with its 95% bootstrap interval over the answered passes.",
                ["template", "rung", "shares", "passes", "keys", "dropped", "abstain", "unparsed", "delta", "epsilon",
                 "mu", "mu_lo", "mu_hi"])


def agreement_view(table: pd.DataFrame, dataset: str, number: int):
    cells = "occupations, γ(female, a)" if dataset == "gender" else "subject–attribute pairs"
    return view(table, f"Table {number}: do two rungs agree on which cells are biased? Spearman's ρ of γ between two "
                f"rungs of one template ({dataset}; cells: {cells}; shares: soft, the probabilities as scored, or "
                "argmax, each pass's answer), over the cells both answered, with a 95% percentile bootstrap interval "
                "over cells (— below 3 cells, or 5 for the interval, or where one side is constant).")


def parse_view(table: pd.DataFrame):
    return view(table, "Table 4: what the answer parser made of the generated answers, per template: each rule that "
                "read an answer (stereoprobe.served.parse), the kind it gives (a person's option, unknown, or "
                "unparsed), how many answers and their share of the template's.")


def differences_view(table: pd.DataFrame):
    return view(table, "Table 5: what each change from BBQ's s_DIS to UnQover's γ toward the stereotype moves, per "
                "row (the majority direction): a pass naming nobody dropped alone (s_DIS) or with its key (γ, "
                "argmax, per key); single answers or the scored probabilities (soft); each key alike or each "
                "occupation alike; each with a 95% bootstrap interval over the row's keys (an interval that "
                "excludes 0 is a measured difference). Below them, the mean |γ(female, a)| of the occupations with a "
                "direction and of those without one, which s_DIS cannot see; over: the keys or occupations.")


def splits_view(table: pd.DataFrame):
    strict = next((s for s in table["split"] if s != split_name(MAJORITY)), "the strict split")
    return view(table, f"Table 5b: BBQ's scores of every row that may abstain under two directions from the same BLS "
                f"shares, side by side: majority (over 50% women: female, else male) and {strict} (male at the "
                "first bound or below, female at the second or above, no direction between). directed: the "
                "occupations of the row's examples the split directs; the passes, ties, accuracy, s_DIS and s_AMB "
                "over those occupations' passes, and γ toward the stereotype over those answered.")


def thinking_rows_view(report: Mapping[str, pd.DataFrame]):
    rows = report["long"]
    return view(rows[rows["reading"] == "answered"], "Table 6: the chat lab pair with thinking on and off, both "
                "generated, letters-unknown: abstention and unparsed rates, μ over the answered passes and BBQ's "
                "scores.", ["model", "template", "rung", "thinking", "passes", "abstain", "abstain_lo", "abstain_hi",
                            "unparsed", "mu", "mu_lo", "mu_hi", "bbq_accuracy", "bbq_s_dis"])


def thinking_view(report: Mapping[str, pd.DataFrame]):
    return view(report["thinking_shift"], "Table 7: what thinking changes (on − off), per model: μ over the answered "
                "passes and counting an abstention as no preference, each shift with the basic interval of two "
                "independent bootstraps; the shift in the abstention rate with Newcombe's interval; the three cells "
                "whose γ moved most (no-preference reading).",
                ["model", "template", "mu_on", "mu_off", "delta_mu", "delta_lo", "delta_hi", "mu_none_on",
                 "mu_none_off", "delta_mu_none", "delta_none_lo", "delta_none_hi", "delta_abstain",
                 "delta_abstain_lo", "delta_abstain_hi", "top_gamma_shift"])


def _span(counts: pd.Series) -> str:
    low, high = int(counts.min()), int(counts.max())
    return f"{low}" if low == high else f"{low} to {high}"


def say_numbers(table: pd.DataFrame, agreement: pd.DataFrame, steps: pd.DataFrame) -> dict[str, str]:
    """The numbers the chapter's prose quotes: the passes of the like-with-like rows (``say_passes``), the
    abstention rates of the generated ``letters`` and ``letters-unknown`` answers and the unparsed rate of the latter
    and of ``names-unknown``, the most and fewest cells a ρ of the gender agreement table is over (rows with a ρ),
    the widest interval, the first soft ρ and the first ρ with the generated rung (with its interval and cells), from
    the walk from s_DIS to γ the most directed keys of a row and how many of the three changes' intervals exclude 0
    (of how many), and of the rows with a μ over their answered passes (``say_mu_rows``) those whose interval is a
    point (``say_mu_points``) and those whose interval lies wholly below μ (``say_mu_below``)."""
    answered = table[(table["reading"] == "answered") & (table["shares"] == "argmax")].set_index(["template",
                                                                                                   "rung"])

    def rate(template: str, column: str = "abstain") -> str:
        key = (template, "generated")
        if key not in answered.index or column not in answered.columns:
            return "n/a"
        value = float(np.atleast_1d(answered.loc[key, column])[0])
        return f"{value:.2f}" if np.isfinite(value) else "n/a"

    widths = (agreement["ci_high"] - agreement["ci_low"]).dropna()
    rated = agreement[agreement["spearman"].notna()] if "spearman" in agreement else agreement.iloc[:0]

    def rho(rows: pd.DataFrame) -> str:
        if not len(rows):
            return "n/a"
        r = rows.iloc[0]
        return f"{r['spearman']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}] over {int(r['pairs'])} occupations"

    changes = steps[steps["step"].str.contains(" − ")]
    measured = int(((changes["lo"] > 0) | (changes["hi"] < 0)).sum())
    mus = table[(table["reading"] == "answered") & table["mu"].notna()]
    width = mus["mu_hi"] - mus["mu_lo"]
    return {"say_mu_rows": f"{len(mus)}", "say_mu_points": f"{int((width <= 1e-12).sum())}",
            "say_mu_below": f"{int((mus['mu_hi'] < mus['mu']).sum())}",
            "say_passes": f"{int(answered['passes'].max()) if len(answered) else 0}",
            "say_abstain_forced": rate("letters"), "say_abstain_unknown": rate("letters-unknown"),
            "say_unparsed_unknown": rate("letters-unknown", "unparsed"),
            "say_unparsed_names": rate("names-unknown", "unparsed"),
            "say_cells_span": _span(rated["pairs"]) if len(rated) else "0",
            "say_rho_probability": rho(rated[rated["shares"] == "soft"]) if "shares" in rated else "n/a",
            "say_rho_generated": rho(rated[(rated["b"] == "generated")]) if "b" in rated else "n/a",
            "say_rho_width": f"{widths.max():.2f}" if len(widths) else "n/a",
            "say_directed_keys": f"{int(steps.loc[steps['step'] == 's_dis', 'over'].max())}",
            "say_changes_measured": f"{measured}", "say_changes": f"{len(changes)}"}


__all__ = ["RUNGS", "SHARES", "rung_of", "rung_frames", "long", "cell_gammas", "rank_correlation", "rung_agreement",
           "base_model", "templates_of", "say_frames", "chapter_frames", "draw_occupations", "gender_samples", "cell_fill",
           "sample_numbers", "agreement_table", "female_gammas", "stereotype_gamma", "bbq_steps",
           "plot_bbq_steps", "step_differences", "bbq_splits", "split_numbers", "plot_mu_by_rung", "plot_abstention",
           "parse_counts", "parse_numbers", "thinking_report", "rows_view", "agreement_view", "parse_view", "differences_view", "splits_view",
           "thinking_rows_view", "thinking_view", "say_numbers"]
