"""Tables and figures of the chapter "Discovering biases without a word list" (SODAPOP; An, Li, Zhao,
Rudinger, EACL 2023), computed from the package's runs so that the notebook only calls and shows.

The chapter's order:

* set-up — :func:`name_sets`, :func:`run_summary`;
* the data — :func:`context_table`, :func:`show_contexts`, :func:`substitution_example`, :func:`name_groups_table`;
* names in embeddings (Table 1) — :func:`name_embeddings`, :func:`show_table1`, :func:`table1_view`,
  :func:`plot_name_tsne` / :func:`show_name_tsne`;
* distractors and their cost (Algorithm 1) — :func:`scale_table`, :func:`decoding_quirk`,
  :func:`fit_debias_variants`, :func:`run_probes`, :func:`run_debiased_probes`, :func:`cost_table`,
  :func:`units_view`;
* accuracy and success rates — :func:`accuracy_table`, :func:`runs_accuracy_view`, :func:`success_rates`,
  :func:`vocabulary_table`, :func:`show_success_rates`;
* separability (Tables 2 and 9) — :func:`separability`, :func:`separability_view`,
  :func:`plot_sr_tsne` / :func:`show_sr_tsne`;
* words (Tables 3, 4, 10–21) — :func:`rd_for`, :func:`side_by_side`, :func:`show_top_words`,
  :func:`rd_tables`, :func:`flagged_table`, :func:`show_word_tests`;
* debiased models (Table 9) — :func:`debias_fit_table`, :func:`debias_tables`, :func:`show_debias_table9`;
* the ABC model of stereotypes (Table 5) — :func:`associated_words`, :func:`show_abc`;
* the planted-bias lab — :func:`lab_runs`, :func:`lab_view`, :func:`show_lab_runs`, :func:`plot_lab` /
  :func:`show_lab`;
* the numbers the prose quotes — the ``*_numbers`` functions, each a {glue key: text} mapping for
  :func:`stereoprobe.book.display.glue_all`.

Functions named ``*_view`` return a pandas Styler with a caption (shown as the cell's result), ``show_*`` display
their tables themselves (with :func:`stereoprobe.book.display.show`), ``plot_*`` draw on a new matplotlib
figure and return it; the ``show_*`` function of a figure draws it with its ``plot_*`` and shows it
(:func:`matplotlib.pyplot.show`). A few ``show_*`` functions also return what they computed, for the
chapter's later cells. Styling needs jinja2 (the ``book`` extra).

>>> perm = permutation_options(8, 8, n_perm=100_000)
>>> perm["method"], perm["seed"]
('exact', 10)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from stereoprobe.book.display import captioned, show, styled
from stereoprobe.options import RunOptions, as_options
from stereoprobe.sodapop import abc_model as abc
from stereoprobe.sodapop import analysis, contexts, distractors, names
from stereoprobe.sodapop.probe import GridConfig, ProbeRun, rescore, run_probe
from stereoprobe.sodapop.success import sr_matrix

__all__ = [
    "ABC_PAIRS", "PCT", "PERMUTATION_SEED", "RD_COLUMNS", "TABLE9_MODELS", "TOP_K", "accuracy_table",
    "accuracy_view", "analysed_groups", "associated_words", "context_table", "cost_table", "cost_view",
    "debias_fit_table", "debias_numbers", "debias_tables", "decoding_quirk", "fit_debias_variants",
    "flagged_numbers", "flagged_table", "flagged_view", "grid_numbers", "grid_words", "lab_numbers", "lab_runs",
    "lab_view", "length_summary", "name_embeddings", "name_groups_table", "name_sets", "paper_words",
    "permutation_options", "plot_lab", "plot_name_tsne", "plot_sr_tsne", "rd_for", "rd_tables", "run_debiased_probes",
    "run_probes", "run_summary", "runs_accuracy_view", "scale_table", "separability", "separability_view", "show_abc",
    "show_contexts", "show_debias_fits", "show_debias_table9", "show_lab", "show_lab_runs", "show_name_tsne",
    "show_sr_tsne", "show_success_rates", "show_table1", "show_table9", "show_top_words", "show_word_tests",
    "side_by_side", "substitution_example", "success_rates", "table1_numbers", "table1_view", "units_view",
    "versions", "vocabulary_table",
]

#: Percentages as the chapter prints them.
PCT = "{:.1%}"
#: The columns of :func:`analysis.rd_table` (also those of an empty table).
RD_COLUMNS = analysis.RD_COLUMNS
#: Words listed per side of a pair (the paper's top-15 lists, Tables 3, 10–21).
TOP_K = 15
#: The group pairs of the ABC comparison (Table 5): every other group against the European Americans
#: of the same gender.
ABC_PAIRS = tuple((g, "EA_" + g[-1]) for g in ("AA_f", "AS_f", "HS_f", "AA_m", "AS_m", "HS_m"))
#: The permutation seed of the authors' ``p_test.py``.
PERMUTATION_SEED = analysis.PERMUTATION_SEED
#: Table 9's model columns, in the paper's order.
TABLE9_MODELS = ("bert", "inlp_race", "inlp_gender", "sd_race", "sd_gender", "dropout", "cda_race", "cda_gender")


# -- set-up ---------------------------------------------------------------------------------------------------------
def analysed_groups(names_per_group: int | None) -> dict[str, list[str]]:
    """The names every analysis compares: the first ``names_per_group`` of each group, at most the 25 of
    the authors' analyses (``None``: 25).

    >>> {g: len(v) for g, v in analysed_groups(2).items()}["AA_m"]
    2
    """
    n = names.ANALYSIS_SIZE if names_per_group is None else min(names_per_group, names.ANALYSIS_SIZE)
    return names.analysis_groups(n)


def name_sets(names_per_group: int | None) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The chapter's two name sets: every seed name by group (the 220 of the eight lists,
    :func:`names.load_groups`) and the names every analysis compares (:func:`analysed_groups`).

    >>> all_groups, groups = name_sets(2)
    >>> sum(map(len, all_groups.values())), groups["EA_f"] == all_groups["EA_f"][:2]
    (220, True)
    """
    return names.load_groups(), analysed_groups(names_per_group)


def run_summary(profile: str, all_groups: Mapping[str, Sequence[str]], groups: Mapping[str, Sequence[str]],
                mlm: str, mcq_model: str) -> str:
    """The chapter's first line: the profile, the names and the two models."""
    n_analysis = len(next(iter(groups.values()))) if groups else 0
    return (f"profile {profile}: {sum(map(len, all_groups.values()))} seed names in {len(all_groups)} groups, "
            f"{n_analysis} per group analysed; writer {mlm}, answerer {mcq_model}")


permutation_options = analysis.permutation_options


def versions() -> dict[str, str]:
    """The library versions the prose quotes (scikit-learn moves KMeans results between releases)."""
    import sklearn

    return {"sklearn_version": sklearn.__version__}


# -- the data -------------------------------------------------------------------------------------------------------
def context_table() -> pd.DataFrame:
    """The 50 probe contexts: index, context, correct answer, its length L in word tokens (nltk 3.7 rules)
    and whether the context refers to its person as she/her."""
    probe = contexts.probe_contexts()
    lengths = {c.index: len(distractors.word_tokenize(c.answer)) for c in probe}
    return pd.DataFrame({"index": [c.index for c in probe], "context": [c.text for c in probe],
                         "correct answer": [c.answer for c in probe], "L": [lengths[c.index] for c in probe],
                         "says she/her": [c.index in contexts.SHE_CONTEXTS for c in probe]})


def length_summary(table: pd.DataFrame | None = None) -> str:
    """'50 probe contexts; answer length L: 1: 22, 2: 7, …' for :func:`context_table` (by default the 50)."""
    table = context_table() if table is None else table
    return (f"{len(table)} probe contexts; answer length L: "
            + ", ".join(f"{L}: {n}" for L, n in sorted(pd.Series(table["L"].to_numpy()).value_counts().items())))


def show_contexts() -> None:
    """Print :func:`length_summary` and show :func:`context_table` (without its index)."""
    table = context_table()
    print(length_summary(table))
    show(captioned(styled(table).hide(axis="index"),
                   f"The {len(table)} probe contexts: the context, its correct answer, the answer's length L in word "
                   "tokens, and whether the context refers to its person as she/her"))


def substitution_example(name: str = "Jamel", index: int = contexts.SINGLE_CONTEXT) -> pd.DataFrame:
    """One item as shipped ("Bethany") and with ``name`` put in, field by field."""
    ctx = contexts.probe_contexts(indices=[index])[0]
    return captioned(pd.DataFrame([contexts.substitute(ctx, contexts.PLACEHOLDER), contexts.substitute(ctx, name)],
                                  index=["as shipped", name]).T,
                     f"One probe item (context {index}) as shipped, with the name {contexts.PLACEHOLDER}, and with "
                     f"{name} put in, field by field")


def name_groups_table(all_groups: Mapping[str, Sequence[str]], groups: Mapping[str, Sequence[str]]):
    """The eight name groups: who, how many names, how many analysed, the first six (a Styler)."""
    return styled(pd.DataFrame({"group": list(all_groups), "who": [names.label(g) for g in all_groups],
                                "names": [len(v) for v in all_groups.values()],
                                "analysed": [len(groups[g]) for g in all_groups],
                                "first names": [", ".join(v[:6]) + ", …" for v in all_groups.values()]}
                               )).hide(axis="index").set_caption(
        "The eight name groups: who they are, the names in each list, the names analysed here, and the first six")


# -- Table 1: names in embeddings -----------------------------------------------------------------------------------
def name_embeddings(encoder: str, all_groups: Mapping[str, Sequence[str]], *, n_contexts: int, seed: int = 0,
                    device: str = "auto") -> pd.DataFrame:
    """Contextual embeddings of every seed name (``encoder`` loaded as a base model; cached on disk)."""
    from stereoprobe import models
    from stereoprobe.sodapop.embeddings import name_embeddings as embed

    loaded = models.load(encoder, "base", device=device, precision="fp32")  # embeddings, in fp32
    return embed(loaded.model, loaded.tokenizer, [n for v in all_groups.values() for n in v], n_contexts=n_contexts,
                 seed=seed, device=device, fingerprint=loaded.fingerprint)


def show_table1(encoder: str, all_groups: Mapping[str, Sequence[str]], *, n_contexts: int, seed: int = 0,
                device: str = "auto") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Embed every seed name (:func:`name_embeddings`), fit Table 1 on them
    (:func:`stereoprobe.sodapop.embeddings.table1`, split seeded by ``seed``), show it beside the paper
    (:func:`table1_view`) and return (the embeddings, Table 1)."""
    from stereoprobe.sodapop.embeddings import table1

    emb = name_embeddings(encoder, all_groups, n_contexts=n_contexts, seed=seed, device=device)
    t1 = table1(emb, all_groups, seed=seed)
    show(table1_view(t1))
    return emb, t1


def table1_view(t1: pd.DataFrame):
    """:func:`stereoprobe.sodapop.embeddings.table1` beside the paper's Table 1 (a Styler)."""
    from stereoprobe.sodapop.embeddings import PAPER_TABLE1

    shown = pd.concat({"here": t1[["train", "test", "chance", "majority", "n_train", "n_test"]],
                       "paper (BERT, 622 names)": PAPER_TABLE1}, names=["source"])
    return styled(shown, dict.fromkeys(["train", "test", "chance", "majority"], "{:.1f}")
                  | dict.fromkeys(["n_train", "n_test"], "{:.0f}")).set_caption(
        "Table 1: accuracy (%) of a logistic-regression probe predicting a name's gender or race/ethnicity from "
        "its embedding, here and in the paper")


def table1_numbers(t1: pd.DataFrame) -> dict[str, str]:
    """Held-out accuracies for the prose: ``t1_gender``, ``t1_race``."""
    return {"t1_gender": f"{t1.loc['gender', 'test']:.1f}", "t1_race": f"{t1.loc['race/ethnicity', 'test']:.1f}"}


def plot_name_tsne(emb: pd.DataFrame, all_groups: Mapping[str, Sequence[str]], *, encoder: str, n_contexts: int,
                   seed: int = 10):
    """t-SNE of the name embeddings (of ``encoder`` over ``n_contexts`` contexts, named in the title), coloured
    by race/ethnicity, marked by gender."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from stereoprobe.sodapop.embeddings import tsne_names

    xy = tsne_names(emb.to_numpy(), list(emb.index), all_groups, seed=seed)
    xy["race"] = xy["group"].map(names.race_of).map(names.RACES)
    xy["gender"] = xy["group"].map(names.gender_of)
    ax = sns.scatterplot(data=xy, x="x", y="y", hue="race", style="gender", s=30)
    ax.set_title(f"t-SNE of name embeddings ({encoder}, {n_contexts} contexts each)")
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    return plt.gcf()


def _show_figure() -> None:
    import matplotlib.pyplot as plt

    plt.show()


def show_name_tsne(emb: pd.DataFrame, all_groups: Mapping[str, Sequence[str]], *, encoder: str, n_contexts: int,
                   seed: int = 10) -> None:
    """Draw :func:`plot_name_tsne` and show it."""
    plot_name_tsne(emb, all_groups, encoder=encoder, n_contexts=n_contexts, seed=seed)
    _show_figure()


# -- distractors and scoring ----------------------------------------------------------------------------------------
def scale_table(lengths: Iterable[int] = (4, 6, 8), depths: Iterable[int] = (1, 2, 3)):
    """Masked inputs and candidates of the authors' recursion per answer length L and depth k (a Styler)."""
    depths = list(depths)
    return styled(pd.DataFrame([{"L": L, "depth": k, **distractors.scale(L, k)} for L in lengths for k in depths]),
                  "{:,}").hide(axis="index").set_caption(
        "The authors' distractor recursion (Algorithm 1) per answer length L and depth k: masked-LM passes, "
        "candidates, and the MCQs they make before any cap")


def decoding_quirk(mlm: str, name: str, *, index: int = contexts.SINGLE_CONTEXT, examples: int = 8,
                   options: RunOptions | None = None) -> pd.DataFrame:
    """The depth-1 neighbours of one name and context under ``compat`` (the authors' joint decoding) and
    ``clean`` decoding: how many, and a few that only one mode writes.

    ``options`` are the run options of :func:`run_probes`; generation runs here, in this process, and uses
    ``batch_tokens``, ``device``, ``precision`` and ``smoke`` (``engine`` and ``workers`` only spread the
    scoring; no progress bar)."""
    generation = as_options(options).replace(progress=False)
    ctx = contexts.probe_contexts(indices=[index])[0]
    found = {}
    for mode in ("compat", "clean"):
        config = distractors.GenerationConfig(depth=1, decoding=mode, cap=None)
        units, _ = distractors.generate(mlm, [name], [ctx], config, options=generation)
        found[mode] = units[0].candidates
    only_compat = sorted(set(found["compat"]) - set(found["clean"]))
    only_clean = sorted(set(found["clean"]) - set(found["compat"]))
    table = pd.DataFrame({"compat": [len(found["compat"]), "; ".join(only_compat[:examples])],
                          "clean": [len(found["clean"]), "; ".join(only_clean[:examples])]},
                         index=["distinct neighbours", "examples only in this mode"])
    return captioned(table, f"The depth-1 neighbours of {name} in context {index}: how many each decoding writes "
                            "(compat: the authors' joint decoding; clean: one fill per id), and some only it writes")


def fit_debias_variants(mcq_model: str, *, n_iterations: int, max_sentences: int, seed: int = 0,
                        device: str = "auto", smoke: bool = False) -> dict:
    """INLP and SentenceDebias, each for race and gender, fitted on the multiple-choice model's encoder:
    {variant name: :class:`~stereoprobe.sodapop.debias.DebiasFit`} (cached on disk)."""
    from stereoprobe import models
    from stereoprobe.sodapop import debias

    mcq = models.load(mcq_model, "mcq", device=device, smoke=smoke, precision="fp32")  # SODAPOP runs fp32
    fits = {}
    for method in debias.METHODS:
        for kind in ("race", "gender"):
            fit = debias.fit_debias(mcq.model, mcq.tokenizer, method, kind, fingerprint=mcq.fingerprint,
                                    n_iterations=n_iterations, max_sentences=max_sentences, max_tuples=max_sentences,
                                    seed=seed)
            fits[fit.variant().name] = fit
    return fits


def run_probes(mcq_model: str, mlm: str, *, names_per_group: int | None, decoding: str, single_depth: int,
               single_cap: int | None, multi_contexts: Sequence[int] | None, multi_depth: int, multi_cap: int | None,
               fits: Mapping | None = None, options: RunOptions | None = None) -> tuple[ProbeRun, ProbeRun]:
    """The chapter's two runs: the single context (every raw candidate, no dedup; scored with the debiased
    variants of ``fits`` too) and the multi-context one (deduplicated). ``options`` go to
    :func:`~stereoprobe.sodapop.probe.run_probe`."""
    single_grid = GridConfig(names_per_group=names_per_group, contexts=[contexts.SINGLE_CONTEXT], depth=single_depth,
                             decoding=decoding, dedup=False, cap=single_cap)
    multi_grid = GridConfig(names_per_group=names_per_group, contexts=multi_contexts, depth=multi_depth,
                            decoding=decoding, dedup=True, cap=multi_cap)
    variants = [fit.variant() for fit in (fits or {}).values()]
    single = run_probe(mcq_model, mlm, single_grid, variants=variants, options=options)
    multi = run_probe(mcq_model, mlm, multi_grid, options=options)
    return single, multi


def run_debiased_probes(mcq_model: str, mlm: str, *, names_per_group: int | None, decoding: str, single_depth: int,
                        single_cap: int | None, multi_contexts: Sequence[int] | None, multi_depth: int,
                        multi_cap: int | None, debias: bool, inlp_iterations: int, debias_sentences: int, seed: int = 0,
                        options: RunOptions | None = None) -> tuple[ProbeRun, ProbeRun, dict]:
    """With ``debias``, fit the INLP and SentenceDebias variants (:func:`fit_debias_variants`, on
    ``options``' device and smoke setting); then run both probes, the single context scored with the
    variants too (:func:`run_probes`). Returns (single, multi, {variant: fit}; empty without ``debias``)."""
    options = as_options(options)
    fits = {}
    if debias:
        fits = fit_debias_variants(mcq_model, n_iterations=inlp_iterations, max_sentences=debias_sentences,
                                   seed=seed, device=options.device, smoke=options.smoke)
    single, multi = run_probes(mcq_model, mlm, names_per_group=names_per_group, decoding=decoding,
                               single_depth=single_depth, single_cap=single_cap, multi_contexts=multi_contexts,
                               multi_depth=multi_depth, multi_cap=multi_cap, fits=fits, options=options)
    return single, multi, fits


def _cost_row(label: str, run: ProbeRun) -> dict:
    saved = run.saving()
    units = run.units_table()
    return {"run": label, "names": len(run.units) // max(1, units["context"].nunique()),
            "contexts": units["context"].nunique(), "depth": run.grid.depth, "cap": run.grid.cap,
            "MLM passes (authors' recursion)": run.generation["mlm_passes_compat"],
            "MLM passes run": run.generation["mlm_passes_run"] or np.nan,
            "MCQs": saved["mcqs"], "encodings, whole MCQs": saved["encodings_whole"],
            "encodings, distinct choices": saved["encodings_distinct"], "saving ×": saved["ratio"],
            "generation s": run.seconds["generation"], "scoring s": run.seconds["scoring"]}


def cost_table(runs: Mapping[str, ProbeRun]) -> pd.DataFrame:
    """What each run cost: names, contexts, MLM passes (the authors' recursion and those run; NaN when the
    distractors came from the cache), MCQs, encodings of whole MCQs vs distinct choices, seconds."""
    return pd.DataFrame([_cost_row(label, run) for label, run in runs.items()])


def cost_view(costs: pd.DataFrame):
    """:func:`cost_table` formatted ("cached" where no MLM pass ran)."""
    return styled(costs, {c: "{:,.0f}" for c in costs.columns[5:10]} | {
        "saving ×": "{:.2f}", "generation s": "{:.0f}", "scoring s": "{:.0f}"}, na_rep="cached").hide(
        axis="index").set_caption(
        "What each run cost: masked-LM passes (the authors' recursion, and those run here; cached: none ran), "
        "MCQs, encodings of whole MCQs vs of distinct choices, and seconds")


def units_view(run: ProbeRun, rows: int = 8):
    """The first units of a run: multiset sizes beside the scale formula's bounds (a Styler)."""
    counts = ["mlm_passes_compat", "bound_passes", "candidates", "bound_candidates", "unique", "mcqs"]
    return styled(run.units_table()[["name", "L", *counts]].head(rows), dict.fromkeys(counts, "{:,}")).hide(
        axis="index").set_caption(f"The run's first {rows} units (a name in a context): the multiset sizes beside "
                                  "the scale formula's bounds")


# -- accuracy and success rates -------------------------------------------------------------------------------------
def accuracy_table(single_acc: pd.DataFrame, multi_acc: pd.DataFrame, groups: Mapping[str, Sequence[str]],
                   order: Sequence[str]) -> pd.DataFrame:
    """Mean accuracy per context (rows, with the correct answer) and group (columns, in ``order``), plus a
    last row "single (3)" for the single-context run. ``*_acc`` are the per-unit accuracies of
    :meth:`ProbeRun.outcomes`; ``groups`` maps groups to the runs' names."""
    group_of = names.group_of(dict(groups))
    acc = multi_acc.assign(group=multi_acc["name"].map(group_of))
    table = acc.pivot_table(index="context", columns="group", values="accuracy").reindex(columns=list(order))
    table.insert(0, "answer", [contexts.probe_contexts(indices=[int(i)])[0].answer for i in table.index])
    single_mean = single_acc.assign(group=single_acc["name"].map(group_of)).groupby("group")["accuracy"].mean()
    single_answer = contexts.probe_contexts(indices=[contexts.SINGLE_CONTEXT])[0].answer
    table.loc[f"single ({contexts.SINGLE_CONTEXT})"] = [single_answer, *single_mean.reindex(list(order))]
    return table


def accuracy_view(table: pd.DataFrame):
    """:func:`accuracy_table` in percent."""
    return styled(table, {c: PCT for c in table.columns if c != "answer"}).set_caption(
        "Accuracy of the multiple-choice model per probe context (rows, with the correct answer) and name group "
        "(columns); the last row is the single-context run")


def runs_accuracy_view(single: ProbeRun, multi: ProbeRun, order: Sequence[str]):
    """:func:`accuracy_table` of the model's outcomes in both runs (the groups of ``single``), in percent."""
    _, single_acc = single.outcomes()
    _, multi_acc = multi.outcomes()
    return accuracy_view(accuracy_table(single_acc, multi_acc, single.groups, order=order))


def success_rates(single: ProbeRun, multi: ProbeRun, min_count_single: int, min_count_multi: int
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The SR matrices (:func:`~stereoprobe.sodapop.success.sr_matrix`) of the model's outcomes in both runs,
    each with its own ``min_count``."""
    return (sr_matrix(single.outcomes()[0], min_count=min_count_single),
            sr_matrix(multi.outcomes()[0], min_count=min_count_multi))


def show_success_rates(single: ProbeRun, multi: ProbeRun, min_count_single: int, min_count_multi: int
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`success_rates`, with their :func:`vocabulary_table` shown; returns (single-context SR,
    multi-context SR)."""
    sr_single, sr_multi = success_rates(single, multi, min_count_single, min_count_multi)
    show(vocabulary_table(sr_single, sr_multi, min_count_single, min_count_multi))
    return sr_single, sr_multi


def vocabulary_table(sr_single: pd.DataFrame, sr_multi: pd.DataFrame, min_count_single: int, min_count_multi: int):
    """Per analysis (single context, multi-context): candidate words (of the first name), min_count,
    vocabulary size and mean SR (a Styler)."""
    analyses = {"single context": (sr_single, min_count_single), "multi-context": (sr_multi, min_count_multi)}
    table = pd.DataFrame({"candidate words (first name)": [sr.attrs["n_candidates"] for sr, _ in analyses.values()],
                          "min_count": [m for _, m in analyses.values()],
                          "vocabulary": [sr.shape[1] for sr, _ in analyses.values()],
                          "mean SR": [sr.to_numpy().mean() for sr, _ in analyses.values()]}, index=list(analyses))
    return styled(table, {"mean SR": "{:.3f}"}).set_caption(
        "The success-rate vocabularies per analysis: candidate words of the first name, min_count, the words "
        "kept (vocabulary) and their mean success rate SR")


# -- Tables 2 and 9: separability -----------------------------------------------------------------------------------
def separability(sr_single: pd.DataFrame, sr_multi: pd.DataFrame, groups: Mapping[str, Sequence[str]]
                 ) -> pd.DataFrame:
    """KMeans accuracy of every Table 9 pair on both runs' SR vectors, beside the paper's BERT column.
    Columns: pair, g1, g2, multi-context, single context, paper (BERT)."""
    sep = analysis.separability_table(sr_multi, groups).rename(columns={"accuracy": "multi-context"})
    sep["single context"] = analysis.separability_table(sr_single, groups)["accuracy"]
    sep["paper (BERT)"] = analysis.reference("table9")["bert"].to_numpy()
    return sep


def separability_view(sep: pd.DataFrame):
    """:func:`separability` as a heat table (0.5 = chance, 1 = a perfect split)."""
    cols = ["multi-context", "single context", "paper (BERT)"]
    return styled(sep[["pair", *cols]], dict.fromkeys(cols, "{:.2f}")).background_gradient(
        cmap="Reds", vmin=0.5, vmax=1.0, subset=cols).hide(axis="index").set_caption(
        "Separability (Tables 2 and 9): KMeans accuracy of splitting each group pair by the names' success-rate "
        "vectors (0.5 = chance, 1 = a perfect split), both runs here and the paper's BERT")


def plot_sr_tsne(srs: Mapping[str, pd.DataFrame], groups: Mapping[str, Sequence[str]],
                 races: tuple[str, str] = ("EA", "AA")):
    """t-SNE of the SR vectors of two races' names, one panel per analysis (the paper's Fig. 4–5)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, len(srs), figsize=(5.5 * len(srs), 4.5), squeeze=False)
    for ax, (label, sr) in zip(axes[0], srs.items()):
        coords = analysis.tsne_coordinates(sr, groups, *races)
        sns.scatterplot(data=coords, x="x", y="y", hue="group", style="group", ax=ax, s=40)
        ax.set_title(f"SR vectors, {label} ({sr.shape[1]} words)")
        ax.legend(fontsize=8)
    plt.tight_layout()
    return fig


def show_sr_tsne(srs: Mapping[str, pd.DataFrame], groups: Mapping[str, Sequence[str]],
                 races: tuple[str, str] = ("EA", "AA")) -> None:
    """Draw :func:`plot_sr_tsne` and show it."""
    plot_sr_tsne(srs, groups, races)
    _show_figure()


# -- words: relative difference and permutation tests ---------------------------------------------------------------
def rd_for(sr: pd.DataFrame, groups: Mapping[str, Sequence[str]], g1: str, g2: str, *, n_perm: int,
           p_method: str = "auto") -> pd.DataFrame:
    """:func:`analysis.rd_between` of groups g1 vs g2 (the authors' permutation seed). On a grid so small that no
    word's success rates differ between the groups, prints why and returns an empty table with the same columns."""
    table, why = analysis.rd_between(sr, groups, g1, g2, n_perm=n_perm, p_method=p_method)
    if why:
        print(why)
    return table


def side_by_side(table: pd.DataFrame, k: int = TOP_K) -> pd.DataFrame:
    """The k words with the largest RD toward each side of an RD table, G1's and G2's lists side by side.

    >>> t = pd.DataFrame({"word": ["a", "b", "c"], "side": ["G2", "G1", "G1"], "rd_paper": [-1.0, 0.5, 1.0],
    ...                   "p": [0.1, 0.2, 0.3], "q": [0.3, 0.3, 0.3]})
    >>> side_by_side(t, k=2)[("G1", "word")].tolist(), side_by_side(t, k=2)[("G2", "word")].tolist()
    (['c', 'b'], ['a', nan])
    """
    g1 = table[table["side"] == "G1"].iloc[::-1].head(k).reset_index(drop=True)
    g2 = table[table["side"] == "G2"].head(k).reset_index(drop=True)
    return pd.concat({"G1": g1[["word", "rd_paper", "p", "q"]], "G2": g2[["word", "rd_paper", "p", "q"]]}, axis=1)


def paper_words(tables: Sequence[str], side: str) -> str:
    """The paper's printed words of one side of ``tables``, by rank (Table 10 continues Table 3 at rank 6).

    >>> paper_words(["3", "10"], "G1").split(", ")[:2]
    ['innocent', 'cousin']
    """
    ref = analysis.reference("top_words")
    ref = ref[ref["table"].isin(list(tables)) & (ref["side"] == side)].sort_values("rank")
    return ", ".join(ref["word"])


def _who(group: str) -> str:
    race, gender = group.split("_")
    return f"{names.RACES[race].replace(' ', '-')} {names.GENDERS[gender]}"


def _short(group: str) -> str:
    race, gender = group.split("_")
    return f"{race} {names.GENDERS[gender]}"


def show_top_words(sr: pd.DataFrame, groups: Mapping[str, Sequence[str]], pair: tuple[str, str], setting: str,
                   paper_tables: Sequence[str], *, n_perm: int, p_method: str = "auto", k: int = TOP_K) -> None:
    """Show the top-k words of each side of ``pair`` (:func:`rd_for`, :func:`side_by_side`), captioned with
    ``setting`` and the paper's tables, then print the words those tables list."""
    g1, g2 = pair
    table = rd_for(sr, groups, g1, g2, n_perm=n_perm, p_method=p_method)
    label = "Table" if len(paper_tables) == 1 else "Tables"
    fmt = {c: "{:.3f}" for c in [("G1", "rd_paper"), ("G2", "rd_paper")]} | {
        c: "{:.2g}" for c in [("G1", "p"), ("G1", "q"), ("G2", "p"), ("G2", "q")]}
    show(styled(side_by_side(table, k), fmt).set_caption(
        f"Top {k} words by relative difference (RD) toward each group, with p and q — {setting}: "
        f"G1 = {_who(g1)}, G2 = {_who(g2)} (paper {label} {', '.join(paper_tables)})"))
    print(f"paper, {label} {'/'.join(paper_tables)} — {_short(g1)}:", paper_words(paper_tables, "G1"),
          f"| {_short(g2)}:", paper_words(paper_tables, "G2"))


def rd_tables(srs: Mapping[str, pd.DataFrame], groups: Mapping[str, Sequence[str]],
              pairs: Sequence[tuple[str, str]] = analysis.RD_PAIRS_FIXED, *, n_perm: int, p_method: str = "auto"
              ) -> dict[tuple[str, str, str], pd.DataFrame]:
    """:func:`rd_for` of every pair (the authors' pairs by default) on every SR matrix of ``srs``:
    {(analysis, g1, g2): table}."""
    return {(label, g1, g2): rd_for(sr, groups, g1, g2, n_perm=n_perm, p_method=p_method)
            for g1, g2 in pairs for label, sr in srs.items()}


def flagged_table(rd_all: Mapping[tuple[str, str, str], pd.DataFrame]) -> pd.DataFrame:
    """Per analysis and pair of :func:`rd_tables`: words tested, p < 0.05, q < 0.05 and the top word of
    each side."""
    return pd.DataFrame([{"analysis": label, "pair": f"{g1} vs {g2}", "words tested": len(t),
                          "p < 0.05": int((t["p"] < 0.05).sum()), "q < 0.05": int((t["q"] < 0.05).sum()),
                          "top G1 word": t["word"].iloc[-1] if len(t) else "",
                          "top G2 word": t["word"].iloc[0] if len(t) else ""}
                         for (label, g1, g2), t in rd_all.items()])


def show_word_tests(srs: Mapping[str, pd.DataFrame], groups: Mapping[str, Sequence[str]],
                    pairs: Sequence[tuple[str, str]] = analysis.RD_PAIRS_FIXED, *, n_perm: int, p_method: str = "auto"
                    ) -> dict[tuple[str, str, str], pd.DataFrame]:
    """:func:`rd_tables` of every pair on every SR matrix, with the words they flag shown
    (:func:`flagged_table`, :func:`flagged_view`); returns the RD tables."""
    rd_all = rd_tables(srs, groups, pairs, n_perm=n_perm, p_method=p_method)
    show(captioned(styled(flagged_view(flagged_table(rd_all))),
                   "Words tested per group pair (rows) and analysis, and how many have a permutation p < 0.05 and "
                   "a Benjamini–Hochberg q < 0.05"))
    return rd_all


def flagged_view(flagged: pd.DataFrame) -> pd.DataFrame:
    """:func:`flagged_table` with the analyses side by side, one row per pair."""
    return flagged.pivot(index="pair", columns="analysis", values=["words tested", "p < 0.05", "q < 0.05"])


def flagged_numbers(flagged: pd.DataFrame) -> dict[str, str]:
    """Totals for the prose: ``n_tests``, ``n_p``, ``n_q`` and ``n_expected`` (5% of the tests)."""
    n_tests = int(flagged["words tested"].sum())
    return {"n_tests": f"{n_tests:,}", "n_p": f"{int(flagged['p < 0.05'].sum()):,}",
            "n_q": f"{int(flagged['q < 0.05'].sum()):,}", "n_expected": f"{0.05 * n_tests:,.0f}"}


# -- Table 9: debiased models ---------------------------------------------------------------------------------------
def debias_fit_table(fits: Mapping) -> pd.DataFrame:
    """One row per fitted variant: method, bias, rank removed, attribute accuracy before/after, majority
    baseline, explained variance (SentenceDebias) and fitting seconds."""
    rows = []
    for name, fit in fits.items():
        d = fit.diagnostics
        rows.append({"variant": name, "method": fit.method, "bias": fit.kind,
                     "rank removed": d.get("rank_removed"),
                     "attribute accuracy before": d.get("test_accuracy_before"),
                     "after": d.get("test_accuracy_after"), "majority": d.get("majority_test"),
                     "explained variance of b": d.get("explained_variance_ratio"),
                     "fit s": d["seconds_encode"] + d["seconds_fit"]})
    return pd.DataFrame(rows)


def show_debias_fits(fits: Mapping) -> None:
    """Show :func:`debias_fit_table`, or say that no variant was fitted."""
    if fits:
        show(captioned(styled(debias_fit_table(fits), {"rank removed": "{:.0f}", "fit s": "{:.1f}"}, precision=3)
                       .hide(axis="index"),
                       "The debiased variants as fitted: rank removed, attribute accuracy before and after (beside "
                       "the majority class), variance explained by the bias subspace (SentenceDebias), seconds"))
    else:
        print("debias=False: no debiased variants.")


def debias_tables(run: ProbeRun, outcomes: pd.DataFrame, accuracy: pd.DataFrame, sep: pd.DataFrame,
                  groups: Mapping[str, Sequence[str]], *, min_count: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 9 here and in the paper, and what each debiased variant of ``run`` changed.

    ``outcomes``/``accuracy`` are ``run.outcomes()`` of the model itself, ``sep`` is :func:`separability`.
    Returns (the separability of the model and of every variant on the single context, beside the paper's
    50-context columns; per variant, its mean accuracy and the share of distractors whose "picked" flag
    changed — first row "none", the model itself)."""
    base_wrong = outcomes["wrong"].to_numpy()
    cols, changes = {"BERT-like (zoo)": sep["single context"].to_numpy()}, []
    for name in run.variants:
        o, a = run.outcomes(name)
        cols[name] = analysis.separability_table(sr_matrix(o, min_count=min_count), groups)["accuracy"].to_numpy()
        changes.append({"variant": name, "accuracy": a["accuracy"].mean(),
                        "distractors whose 'picked' flag changed": (o["wrong"].to_numpy() != base_wrong).mean()})
    t9 = pd.DataFrame(cols, index=sep["pair"])
    ref = analysis.reference("table9").set_index("pair")
    t9 = pd.concat({"here (single context)": t9, "paper (50 contexts)": ref[list(TABLE9_MODELS)]}, axis=1)
    changed = pd.DataFrame([{"variant": "none", "accuracy": accuracy["accuracy"].mean(),
                             "distractors whose 'picked' flag changed": 0.0}, *changes])
    return t9, changed


def show_table9(run: ProbeRun, outcomes: pd.DataFrame, accuracy: pd.DataFrame, sep: pd.DataFrame,
                groups: Mapping[str, Sequence[str]], *, min_count: int) -> pd.DataFrame | None:
    """Show the two tables of :func:`debias_tables` and return the second (None, showing nothing, when the
    run has no debiased variant)."""
    if not run.variants:
        return None
    t9, changed = debias_tables(run, outcomes, accuracy, sep, groups, min_count=min_count)
    show(captioned(styled(t9, "{:.2f}").background_gradient(cmap="Reds", vmin=0.5, vmax=1.0),
                   "Table 9: separability of each group pair for the model and its debiased variants, here on the "
                   "single context, beside the paper's 50 contexts (0.5 = chance)"))
    show(captioned(styled(changed, {"accuracy": PCT, "distractors whose 'picked' flag changed": PCT})
                   .hide(axis="index"),
                   "What each debiased variant changed: mean accuracy, and the share of distractors whose 'picked' "
                   "flag changed (none: the model itself)"))
    return changed


def show_debias_table9(run: ProbeRun, groups: Mapping[str, Sequence[str]], *, min_count: int
                       ) -> pd.DataFrame | None:
    """:func:`show_table9` of ``run`` (the single-context run), from its own outcomes: the model's success
    rates (``min_count``) and their KMeans separability, the same numbers as the "single context" column of
    :func:`separability`. Returns the table of changed outcomes (None without debiased variants)."""
    outcomes, accuracy = run.outcomes()
    sep = analysis.separability_table(sr_matrix(outcomes, min_count=min_count), groups)
    sep = sep.rename(columns={"accuracy": "single context"})
    return show_table9(run, outcomes, accuracy, sep, groups, min_count=min_count)


def debias_numbers(changed: pd.DataFrame | None) -> dict[str, str]:
    """The largest share of changed outcomes for the prose: ``sd_moved`` (SentenceDebias), ``inlp_moved``.

    >>> debias_numbers(None)
    {'sd_moved': '—', 'inlp_moved': '—'}
    """
    if changed is None:
        return {"sd_moved": "—", "inlp_moved": "—"}
    moved = changed.set_index("variant")["distractors whose 'picked' flag changed"]
    return {"sd_moved": PCT.format(moved[[v for v in moved.index if v.startswith("sentence")]].max()),
            "inlp_moved": PCT.format(moved[[v for v in moved.index if v.startswith("inlp")]].max())}


# -- Table 5: the ABC model -----------------------------------------------------------------------------------------
def associated_words(rd_all: Mapping[tuple[str, str, str], pd.DataFrame], group_keys: Iterable[str], k: int = TOP_K,
                     alpha: float = 0.05) -> dict[str, set[str]]:
    """Per group, the words of its top-k lists (either side, any pair and analysis of ``rd_all``) with
    p < alpha: the words the paper maps to the ABC traits."""
    associated = {g: set() for g in group_keys}
    for (_, g1, g2), t in rd_all.items():
        for g, side in ((g1, "G1"), (g2, "G2")):
            top = t[t["side"] == side]
            top = top.iloc[::-1] if side == "G1" else top
            top = top.head(k)
            associated[g] |= set(top[top["p"] < alpha]["word"])
    return associated


def show_abc(associated: Mapping[str, set[str]], pairs: Sequence[tuple[str, str]] = ABC_PAIRS) -> None:
    """Map the associated words to ABC trait poles (:func:`abc.map_words`), show the mapped words and the
    group orderings per trait (:func:`abc.abc_table`)."""
    words = sorted(set().union(*associated.values()))
    if not words:
        print("No word has p < 0.05 among the top words: nothing to map (raise names_per_group or the caps).")
        return
    mapping = abc.map_words(words)
    mapped = mapping[mapping["pole"] != 0]
    print(f"{len(words)} associated words, {len(mapped)} mapped to a trait pole")
    show(captioned(styled(mapped[["word", "trait", "pole", "similarity", "margin", "source"]]
                          .sort_values(["trait", "pole"]), {"similarity": "{:.2f}", "margin": "{:.2f}"})
                   .hide(axis="index"),
                   "The associated words mapped to an ABC trait pole (+1 high, −1 low), with their similarity and "
                   "margin to the pole word and where the mapping comes from"))
    orderings = abc.abc_orderings({g: sorted(v) for g, v in associated.items()}, mapping, pairs)
    show(captioned(abc.abc_table(orderings),
                   "Table 5 (ours): per ABC trait (rows) and group pair (columns), the groups ordered by the trait "
                   "score of their associated words (A ≺ B: A scores lower; ‡: a strong difference)"))


# -- the planted-bias lab -------------------------------------------------------------------------------------------
def lab_runs(run: ProbeRun, lab_models: Sequence[str], groups: Mapping[str, Sequence[str]], *, min_count: int,
             n_perm: int, p_method: str = "auto", planted_group: str = "AA_m", planted_word: str = "quiet",
             options: RunOptions | None = None) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Rescore ``run``'s distractors with each lab model and test ``planted_group`` against every other
    analysed name. Returns ({model: RD table}, one summary row per model: accuracy, vocabulary, the top
    word of the planted group, RD / rank / p / q of the planted word, words with q < 0.05). ``options`` go
    to :func:`~stereoprobe.sodapop.probe.rescore`."""
    tables, rows = {}, []
    target = list(groups[planted_group])
    others = [n for g in groups if g != planted_group for n in groups[g]]
    for lab in lab_models:
        o, a = rescore(run, lab, options=options).outcomes()
        sr = sr_matrix(o, min_count=min_count)
        t = analysis.rd_table(sr, target, others,
                              **permutation_options(len(target), len(others), n_perm=n_perm, p_method=p_method))
        tables[lab] = t
        top = t[t["side"] == "G1"].iloc[::-1]
        row = t.set_index("word").reindex([planted_word]).iloc[0]
        rows.append({"model": lab, "accuracy": a["accuracy"].mean(), "vocabulary": sr.shape[1],
                     f"top {planted_group} word": top["word"].iloc[0] if len(top) else "",
                     f"RD({planted_word})": row["rd_paper"],
                     f"rank of {planted_word}": (int(np.flatnonzero(top["word"].to_numpy() == planted_word)[0]) + 1
                                                 if planted_word in set(top["word"]) else np.nan),
                     f"p({planted_word})": row["p"], f"q({planted_word})": row["q"],
                     "words with q < 0.05": int((t["q"] < 0.05).sum())})
    return tables, pd.DataFrame(rows)


def show_lab_runs(run: ProbeRun, lab_models: Sequence[str], groups: Mapping[str, Sequence[str]], *,
                  min_count: int, n_perm: int, p_method: str = "auto",
                  options: RunOptions | None = None) -> dict[str, pd.DataFrame]:
    """:func:`lab_runs` with its summary shown (:func:`lab_view`); returns {lab model: RD table}."""
    tables, summary = lab_runs(run, lab_models, groups, min_count=min_count, n_perm=n_perm, p_method=p_method,
                               options=options)
    show(lab_view(summary))
    return tables


def lab_view(summary: pd.DataFrame, planted_word: str = "quiet"):
    """:func:`lab_runs`' summary formatted ("—" where the planted word has no RD)."""
    w = planted_word
    return styled(summary, {"accuracy": PCT, f"RD({w})": "{:.3f}", f"p({w})": "{:.2g}", f"q({w})": "{:.2g}",
                            f"rank of {w}": "{:.0f}"}).hide(axis="index").set_caption(
        f"The planted-bias lab: each lab model's accuracy and vocabulary, and the planted word '{w}': its relative "
        "difference, rank, p and q for the planted group")


def plot_lab(tables: Mapping[str, pd.DataFrame], planted_word: str = "quiet", planted_group: str = "AA_m"):
    """Volcano plots of :func:`lab_runs`' tables: RD against −log10 q, the planted word in red, q = 0.05
    dotted."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tables), figsize=(5 * len(tables), 3.5), sharey=True, squeeze=False)
    for ax, (lab, t) in zip(axes[0], tables.items()):
        ax.scatter(t["rd_paper"], -np.log10(t["q"].clip(lower=1e-6)), s=10, color="grey")
        if planted_word in set(t["word"]):
            r = t.set_index("word").loc[planted_word]
            ax.scatter([r["rd_paper"]], [-np.log10(max(r["q"], 1e-6))], color="crimson", s=40, label=planted_word)
            ax.legend()
        ax.axhline(-np.log10(0.05), ls=":", color="k")
        ax.set_title(lab)
        ax.set_xlabel(f"RD ({planted_group} vs everyone else)")
    axes[0][0].set_ylabel("−log10 q")
    plt.tight_layout()
    return fig


def show_lab(tables: Mapping[str, pd.DataFrame], planted_word: str = "quiet", planted_group: str = "AA_m") -> None:
    """Draw :func:`plot_lab` and show it."""
    plot_lab(tables, planted_word, planted_group)
    _show_figure()


def lab_numbers(table: pd.DataFrame, planted_word: str = "quiet") -> dict[str, str]:
    """The other words with q < 0.05 in one lab table, for the prose: ``lab_also``.

    >>> lab_numbers(pd.DataFrame({"word": ["quiet", "very", "kind"], "q": [0.01, 0.02, 0.5]}))
    {'lab_also': 'very'}
    """
    flagged = sorted(set(table.loc[table["q"] < 0.05, "word"]) - {planted_word})
    return {"lab_also": ", ".join(flagged) if flagged else "no other word"}


# -- rerunning at scale ---------------------------------------------------------------------------------------------
def grid_words(run: ProbeRun) -> str:
    """'n names × c context(s), depth k, cap m' for a run's grid."""
    grid = run.grid
    n = len(run.units) // len(grid.probe_contexts())
    cap = "every candidate" if grid.cap is None else f"cap {grid.cap:,}"
    return f"{n} names × {len(grid.probe_contexts())} context(s), depth {grid.depth}, {cap}"


def grid_numbers(single: ProbeRun, multi: ProbeRun) -> dict[str, str]:
    """:func:`grid_words` of both runs for the prose: ``grid_single``, ``grid_multi``."""
    return {"grid_single": grid_words(single), "grid_multi": grid_words(multi)}
