"""Tables and figures of the chapter "Measuring and mitigating biased inferences" (Bias-NLI; Dev, Li,
Phillips, Srikumar, AAAI 2020), computed with :mod:`stereoprobe.book.tables.nli` and the scorers so that the
notebook only calls and shows.

The chapter's order:

* the pair sets — :func:`run_summary`, :func:`count_view`, :func:`first_pairs`;
* contextual models (Tables 1–6) — :func:`contextual_probabilities`, :func:`contextual_measures`,
  :func:`measures_beside_paper`, :func:`plot_measures` / :func:`show_measures`, :func:`show_top_templates`,
  :func:`least_neutral_pairs`, :func:`show_least_neutral`;
* the static model on GloVe (Tables 7–10) — :func:`table7_beside_paper`, :func:`training_corpus`,
  :func:`static_directions`, :func:`train_static_variants`, :func:`train_static_models`,
  :func:`static_probabilities`, :func:`static_runs`, :func:`static_table`, :func:`accuracy_table`,
  :func:`word_pair_means`;
* the planted-bias lab — :func:`lab_effect`;
* word-piece projection (Table 15) and the layers question (Tables 11–13) — :func:`ensure_zoo_models`,
  :func:`table15_probabilities`, :func:`table15_runs`, :func:`table15`, :func:`zoo_accuracy`,
  :func:`layer_diagnostics`, :func:`layers_table`;
* the numbers the prose quotes — the ``*_numbers`` functions, each a {glue key: text} mapping for
  :func:`stereoprobe.book.display.glue_all`.

Functions named ``*_view`` return a pandas Styler with a caption (shown as the cell's result), ``show_*`` display
their
tables themselves (:func:`stereoprobe.book.display.show`), ``plot_*`` draw on a new matplotlib figure and return
it, and ``show_measures`` draws :func:`plot_measures` and shows it (:func:`matplotlib.pyplot.show`). Styling
needs jinja2 (the ``book`` extra).

>>> static_kind(["orig", "-gen", "rand0", "rand11"])
['orig', '-gen', 'rand', 'rand']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from stereoprobe.book.display import MISSING, captioned, show, styled
from stereoprobe.book.tables import nli as tables
from stereoprobe.nli import measures
from stereoprobe.nli.scoring import load_probabilities
from stereoprobe.nli.templates import TemplateSpec, iter_pairs
from stereoprobe.options import RunOptions

__all__ = [
    "DIFF_COLUMNS", "FMT3", "PAPER_KIND", "accuracy_table", "contextual_measures", "contextual_numbers",
    "contextual_probabilities", "count_view", "describe_pairs", "diff_view", "ensure_zoo_models", "first_pairs",
    "lab_effect", "layer_diagnostics", "layers_table", "least_neutral_pairs", "measures_beside_paper",
    "nn_by_variant", "plot_measures", "random_spread", "run_summary", "show_least_neutral", "show_measures",
    "show_top_templates", "static_directions", "static_kind", "static_numbers", "static_probabilities",
    "static_runs", "static_table", "table15", "table15_numbers", "table15_probabilities", "table15_runs",
    "table7_beside_paper", "train_static_models", "train_static_variants", "training_corpus", "word_pair_means",
    "zoo_accuracy",
]

#: Three decimals, as every measure is printed.
FMT3 = "{:.3f}"
#: The relative change (%) of each measure against the unprojected model (:func:`tables.measures_table`).
DIFF_COLUMNS = tuple(f"diff_{m}" for m in tables.MEASURES)
#: The projection a probe's own static variant removes (the paper's Tables 8 and 9 rows).
PAPER_KIND = {"gender": "-gen", "nationality": "-nat", "religion": "-rel"}
#: The paper's table of each probe's measures (Tables 1, 3, 5) and of its most entailed / contradicted templates
#: (Tables 2, 4, 6).
_MEASURES_TABLE = {"gender": 1, "nationality": 3, "religion": 5}
_EXAMPLES_TABLE = {"gender": 2, "nationality": 4, "religion": 6}


def _fmt(*, diffs: bool = False, paper: bool = False) -> dict[str, str]:
    out = {m: FMT3 for m in tables.MEASURES}
    if paper:
        out |= {f"paper {m}": FMT3 for m in tables.MEASURES}
    if diffs:
        out |= {c: "{:+.1f}%" for c in DIFF_COLUMNS}
    return out


def _paper_columns() -> list[str]:
    return [f"paper {m}" for m in tables.MEASURES]


# -- the pair sets --------------------------------------------------------------------------------------------------
def run_summary(profile: str, models: Sequence[str], specs: Mapping[str, TemplateSpec]) -> str:
    """The chapter's first line: the profile, the models and the pairs of every probe."""
    return (f"profile {profile}: {len(models)} NLI model(s); "
            + ", ".join(f"{p} {len(list(iter_pairs(s))):,} pairs" for p, s in specs.items()))


def count_view():
    """:func:`tables.count_table` formatted."""
    counts = ("premise words", "hypothesis words", "templates", "pairs", "formula value")
    return captioned(styled(tables.count_table(), dict.fromkeys(counts, "{:,}")).hide(axis="index"),
                     "The pair sets of every probe and list choice: words, templates and pairs, beside the paper's "
                     "formula and the count it states")


def first_pairs(specs: Mapping[str, TemplateSpec]):
    """The first pair of every probe, as the sentences are written (a Styler)."""
    return captioned(styled(pd.DataFrame([p._asdict() for p in (next(iter_pairs(s)) for s in specs.values())])[
        ["pair_type", "premise", "hypothesis", "template_type"]]).hide(axis="index"),
        "The first pair of every probe, premise and hypothesis as they are written (gold label: neutral)")


# -- contextual models ----------------------------------------------------------------------------------------------
def contextual_probabilities(models: Sequence[str], specs: Mapping[str, TemplateSpec], *,
                             options: RunOptions | None = None) -> dict[tuple[str, str], pd.DataFrame]:
    """{(model, probe): per-pair probabilities} (:func:`load_probabilities` with the run ``options``)."""
    return {(m, p): load_probabilities(m, s, options=options) for m in models for p, s in specs.items()}


def contextual_measures(models: Sequence[str], specs: Mapping[str, TemplateSpec], *, n_boot: int = 1000,
                        seed: int = 0, options: RunOptions | None = None
                        ) -> tuple[dict[tuple[str, str], pd.DataFrame], pd.DataFrame]:
    """(:func:`contextual_probabilities`, their measures per model and probe with bootstrap intervals —
    :func:`tables.measures_table`); ``options`` go to :func:`load_probabilities`."""
    probs = contextual_probabilities(models, specs, options=options)
    return probs, tables.measures_table(probs, ("model", "probe"), n_boot=n_boot, seed=seed)


def measures_beside_paper(contextual: pd.DataFrame):
    """The measures of :func:`tables.measures_table` (model × probe) beside the paper's unprojected rows
    of Tables 1, 3 and 5 (a Styler)."""
    paper = tables.reference("measures").query("variant == 'orig' and table in [1, 3, 5]")
    shown = pd.concat([contextual.assign(source="here"),
                       paper.rename(columns={"embedding": "model"}).assign(source="paper")], ignore_index=True)
    shown = shown[["source", "model", "probe", "pairs", *tables.MEASURES]].sort_values(["probe", "source"],
                                                                                      kind="stable")
    return captioned(styled(shown, _fmt() | {"pairs": "{:,.0f}"}).hide(axis="index"),
                     "Tables 1, 3 and 5: the neutrality measures NN, FN, T:0.5 and T:0.7 of every model and probe "
                     "(1 = always neutral), beside the paper's unprojected rows")


def plot_measures(contextual: pd.DataFrame, probes: Sequence[str]):
    """The four measures with their bootstrap intervals, one panel per measure, one series per model."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tables.MEASURES), figsize=(12, 3), sharey=True)
    for ax, m in zip(axes, tables.MEASURES):
        for i, (model, rows) in enumerate(contextual.groupby("model", sort=False)):
            x = np.arange(len(rows)) + 0.8 * i / max(1, contextual["model"].nunique())
            ax.errorbar(x, rows[m], yerr=[rows[m] - rows[f"{m}_lo"], rows[f"{m}_hi"] - rows[m]], fmt="o", label=model)
        ax.set_xticks(np.arange(len(probes)), list(probes), rotation=30)
        ax.set_title(m)
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("measure (1 = always neutral)")
    axes[-1].legend(fontsize=8, loc="lower right")
    plt.tight_layout()
    return fig


def show_measures(contextual: pd.DataFrame, probes: Sequence[str]) -> None:
    """Draw :func:`plot_measures` and show it."""
    import matplotlib.pyplot as plt

    plot_measures(contextual, probes)
    plt.show()


def contextual_numbers(contextual: pd.DataFrame) -> dict[str, str]:
    """The first model's NN per probe for the prose: ``ctx_model``, ``ctx_gender_nn``, ``ctx_nat_nn``,
    ``ctx_rel_nn``."""
    model = contextual.iloc[0]["model"]
    nn_of = contextual[contextual["model"] == model].set_index("probe")["NN"]
    return {"ctx_model": model, "ctx_gender_nn": f"{nn_of['gender']:.3f}",
            "ctx_nat_nn": f"{nn_of['nationality']:.3f}", "ctx_rel_nn": f"{nn_of['religion']:.3f}"}


def show_top_templates(probs: Mapping[tuple[str, str], pd.DataFrame], probes: Sequence[str], models: Sequence[str],
                       k: int = 3) -> None:
    """Per probe: every model's k most entailed and most contradicted templates (Tables 2, 4, 6), then the
    paper's printed examples with the first model's probabilities for the same templates."""
    fmt = {c: FMT3 for c in measures.PROB_COLUMNS}
    most = {"entail": "entailed", "contradiction": "contradicted"}
    for probe in probes:
        table = f" (cf. paper Table {_EXAMPLES_TABLE[probe]})" if probe in _EXAMPLES_TABLE else ""
        for model in models:
            for label in ("entail", "contradiction"):
                t = tables.top_templates(probs[(model, probe)], label, k=k)
                show(styled(t, fmt).hide(axis="index").set_caption(
                    f"{model} · {probe}: the {k} most {most[label]} templates, mean probabilities{table}"))
        paper = f"Table {_EXAMPLES_TABLE[probe]}" if probe in _EXAMPLES_TABLE else probe
        show(styled(tables.paper_pairs_here(probs[(models[0], probe)], probe),
                    fmt | {"prob_lo": "{:.2f}", "prob_hi": "{:.2f}"}).hide(axis="index")
             .set_caption(f"The paper's examples ({paper}, {probe}; prob_lo–prob_hi: the probabilities it prints "
                          f"for GloVe) and {models[0]} on the same templates (n: times scored here)"))


def least_neutral_pairs(probs: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The k word pairs (premise word × hypothesis word) with the lowest mean neutral probability over
    their scored templates, with their mean probabilities and number of templates ``n``."""
    keys = list(measures.WORD_COLUMNS)
    grouped = probs.groupby(keys, observed=True)
    wp = grouped[list(measures.PROB_COLUMNS)].mean().assign(n=grouped.size()).reset_index()
    return wp.sort_values("neutral").head(k)


def show_least_neutral(probs: Mapping[tuple[str, str], pd.DataFrame], probes: Sequence[str], model: str,
                       k: int = 10) -> None:
    """:func:`least_neutral_pairs` of ``model`` for every probe."""
    for probe in probes:
        show(styled(least_neutral_pairs(probs[(model, probe)], k), dict.fromkeys(measures.PROB_COLUMNS, FMT3))
             .hide(axis="index").set_caption(f"{model} · {probe}: the {k} least neutral word pairs, mean "
                                             "probabilities over their n scored templates"))


# -- the static model on GloVe --------------------------------------------------------------------------------------
def table7_beside_paper(vectors):
    """Table 7 (principal-value ratios and cosines) with both subspace recipes, beside the paper (a Styler)."""
    from stereoprobe.nli import projection

    t7 = pd.concat([tables.table7(vectors, method).assign(method=method) for method in projection.SUBSPACE_METHODS])
    paper = tables.reference("table7").query("table == 7").set_index("set")
    t7 = t7.join(paper[["s2/s1", "s3/s1", "s4/s1", "cosine"]].add_prefix("paper "), on="set")
    return captioned(styled(t7, precision=2).hide(axis="index"),
                     "Table 7: the principal-value ratios s2/s1, s3/s1, s4/s1 and the cosine of each word set's "
                     "bias subspace, by both recipes (method), beside the paper")


def training_corpus(snli_train=None, snli_dev=None, *, smoke: bool = False) -> tuple[list, list]:
    """(train, held-out) of the static model: SNLI-format files when given, else the project's offline NLI
    corpus (3,000 + 300 pairs with ``smoke``)."""
    from stereoprobe.nli import static

    if snli_train:
        return static.read_snli(snli_train), static.read_snli(snli_dev)
    if smoke:
        return static.default_corpus(3000, 300)
    return static.default_corpus()


def static_directions(vectors, n_random: int) -> dict[str, np.ndarray | None]:
    """What each retrained variant removes: ``orig`` nothing, ``-gen``/``-nat``/``-rel`` the bias directions
    (:func:`tables.bias_directions`), ``rand<i>`` the first principal direction of 20 random words (the
    authors' GloVe control, seed 1)."""
    from stereoprobe.nli import projection

    directions = {"orig": None, **{f"-{b[:3]}": tables.bias_directions(vectors, b) for b in tables.BIASES}}
    randoms = projection.random_word_pc_directions(vectors.vectors, n=n_random, seed=1)
    return directions | {f"rand{i}": randoms[i][None, :] for i in range(n_random)}


def train_static_variants(vectors, train: Sequence, held: Sequence, directions: Mapping[str, np.ndarray | None], *,
                          smoke: bool = False) -> dict:
    """One static model per direction set, trained from scratch (cached on disk; one epoch with ``smoke``)."""
    from stereoprobe.nli import static

    settings = dict(epochs=1) if smoke else {}
    return {name: static.cached_train(train, held, vectors, directions=d, name=f"static{name}", threads=1,
                                      progress=False, **settings)
            for name, d in directions.items()}


def train_static_models(vectors, snli_train=None, snli_dev=None, n_random: int = 2, *, smoke: bool = False
                        ) -> tuple[list, dict]:
    """The static section's training: the corpus (:func:`training_corpus`), the directions of every variant
    (:func:`static_directions`, ``n_random`` random ones) and one model per variant
    (:func:`train_static_variants`). Returns (the training pairs, {variant: model})."""
    train, held = training_corpus(snli_train, snli_dev, smoke=smoke)
    directions = static_directions(vectors, n_random)  # orig, -gen, -nat, -rel, rand0, rand1, …
    return train, train_static_variants(vectors, train, held, directions, smoke=smoke)


def static_probabilities(models: Mapping[str, object], specs: Mapping[str, TemplateSpec]
                         ) -> dict[tuple[str, str], pd.DataFrame]:
    """{(variant, probe): per-pair probabilities} of every static model on every probe."""
    return {(name, p): tables.static_probabilities(m, s, progress=False) for name, m in models.items()
            for p, s in specs.items()}


def static_runs(models: Mapping[str, object], specs: Mapping[str, TemplateSpec], *, n_boot: int = 1000,
                seed: int = 0) -> pd.DataFrame:
    """The measures of every static variant on every probe (:func:`static_probabilities`,
    :func:`tables.measures_table`), with their relative change against ``orig`` (``diff_*``)."""
    return tables.measures_table(static_probabilities(models, specs), ("variant", "probe"),
                                 baseline={"variant": "orig"}, n_boot=n_boot, seed=seed)


def static_kind(variants) -> list[str]:
    """A variant's kind: its name without a trailing repeat number (``rand3`` → ``rand``)."""
    return pd.Series(list(variants), dtype=object).str.replace(r"\d+$", "", regex=True).tolist()


def static_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Each probe's own rows — the unprojected model, its own projection, the random control averaged over
    its directions (:func:`tables.averaged`) — beside the paper's GloVe rows (Tables 1, 3, 5, 8, 9),
    sorted by probe and kind. ``runs`` is :func:`tables.measures_table` of the static variants."""
    runs = runs.assign(kind=static_kind(runs["variant"]))
    table = tables.averaged(runs, ["kind", "probe"])
    paper = (tables.reference("measures").query("table in [1, 3, 5, 8, 9] and embedding == 'GloVe'")
             .assign(kind=lambda t: t["variant"].map({"orig": "orig", "rand": "rand"})
                     .fillna(t["probe"].map(PAPER_KIND)))
             .set_index(["kind", "probe"]))
    table = table.join(paper[list(tables.MEASURES)].add_prefix("paper "), on=["kind", "probe"])
    own = table["kind"].isin(["orig", "rand"]) | (table["kind"].str[1:] == table["probe"].str[:3])
    return captioned(table[own].sort_values(["probe", "kind"]),
                     "Tables 1, 3, 5, 8 and 9 (GloVe): each probe's measures for the static model (orig), its own "
                     "projection and the random control (mean over repeats), their change against orig, and the "
                     "paper's rows")


def diff_view(table: pd.DataFrame, columns: Sequence[str], *, paper: bool = True, na_rep: str | None = MISSING,
              caption: str | None = None):
    """A table of measures, their diffs (%) and, with ``paper``, the paper's values, ``columns`` first (a
    Styler; missing values shown as ``na_rep``), captioned with ``caption`` or the one ``table`` carries
    (:func:`static_table`, :func:`table15`)."""
    cols = [*columns, *tables.MEASURES, *DIFF_COLUMNS, *(_paper_columns() if paper else [])]
    styler = styled(table[cols], _fmt(diffs=True, paper=paper), na_rep=na_rep).hide(axis="index")
    text = caption or table.attrs.get("caption")
    return captioned(styler, text) if text else styler


def static_numbers(table: pd.DataFrame) -> dict[str, str]:
    """NN changes of :func:`static_table` for the prose: ``static_gen_diff``, ``static_nat_diff``,
    ``static_rel_diff`` (own projections) and ``static_rand_diff`` (random retrains, gender)."""
    rows = table.set_index(["kind", "probe"])
    keys = (("-gen", "gender", "gen"), ("-nat", "nationality", "nat"), ("-rel", "religion", "rel"),
            ("rand", "gender", "rand"))
    return {f"static_{key}_diff": f"{rows.at[(kind, probe), 'diff_NN']:+.1f}%" for kind, probe, key in keys}


def nn_by_variant(runs: pd.DataFrame):
    """NN of every variant on every probe (a Styler)."""
    return captioned(styled(runs.pivot_table(index="variant", columns="probe", values="NN", sort=False), FMT3),
                     "NN of every static variant (rows: orig, each projection, each random direction) on every "
                     "probe (columns)")


def accuracy_table(models: Mapping[str, object], train: Sequence):
    """Held-out accuracy and best epoch of every static variant, beside the paper's SNLI dev/test accuracy
    (Table 10; a Styler)."""
    acc = pd.DataFrame([{"variant": n, "held-out accuracy": m.metadata.get("heldout_accuracy"),
                         "best epoch": m.metadata.get("best_epoch"), "training pairs": len(train)}
                        for n, m in models.items()])
    paper = tables.reference("accuracy").query("table == 10").set_index("variant")[["dev", "test"]]
    return captioned(styled(acc.join(paper.add_prefix("paper "), on="variant"), {
        "held-out accuracy": "{:.3f}", "best epoch": "{:.0f}", "paper dev": "{:.2f}", "paper test": "{:.2f}"}).hide(
        axis="index"), "Table 10: held-out accuracy, best epoch and training pairs of every static variant, beside "
                       "the paper's SNLI dev and test accuracy (%)")


def word_pair_means(models: Mapping[str, object], pairs: Sequence, variants: Sequence[str] = ("orig", "-nat")):
    """Mean entail / neutral / contradiction probabilities of some static variants over every template of
    one word pair (:func:`tables.word_pair_pairs`; the paper's rude × Iraqi example; a Styler)."""
    sentences = [(p.premise, p.hypothesis) for p in pairs]
    means = {name: models[name].predict(sentences, progress=False, threads=1).mean(0) for name in variants}
    first = pairs[0]
    words = f"{getattr(first, 'premise_filler', '?')} × {getattr(first, 'hypothesis_filler', '?')}"
    return captioned(styled(pd.DataFrame(means, index=["entail", "neutral", "contradiction"]).T, FMT3),
                     f"{words}: each static variant's mean probabilities over the {len(pairs):,} templates")


def describe_pairs(pairs: Sequence, label: str) -> str:
    """'label: n templates, e.g. premise ⇒ hypothesis'."""
    return f"{label}: {len(pairs):,} templates, e.g. {pairs[0].premise!r} ⇒ {pairs[0].hypothesis!r}"


# -- the planted-bias lab -------------------------------------------------------------------------------------------
def lab_effect(vectors, *, n_boot: int = 1000, seed: int = 0, smoke: bool = False, sample: int = 30000):
    """The lab's four static models (biased, control, and both with the lab direction projected out and
    retrained) scored on ``sample`` gender pairs (30,000 hold 587 planted pairs):
    :func:`stereoprobe.nli.lab.planted_effect` (a Styler)."""
    from stereoprobe.nli import lab

    size = dict(n_train=3000, n_heldout=300, epochs=1, progress=False) if smoke else dict(progress=False)
    models = {"biased": lab.lab_model(vectors, **size), "control": lab.lab_model(vectors, variant="control", **size),
              "biased, d projected": lab.lab_model(vectors, project=True, **size),
              "control, d projected": lab.lab_model(vectors, variant="control", project=True, **size)}
    spec = tables.TemplateSpec("gender", sample=sample, seed=seed)
    effect = lab.planted_effect({k: tables.static_probabilities(m, spec, progress=False) for k, m in models.items()},
                                n_boot=n_boot, seed=seed)
    return captioned(styled(effect, {"pairs": "{:,}"}, precision=3).hide(axis="index"),
                     f"The planted-bias lab on {sample:,} gender pairs: each static lab model's measures on the "
                     "planted occupations' pairs and on the others, and its mean entailment (E) and contradiction "
                     "(C) by the hypothesis word's gender")


# -- word-piece projection (Table 15) and layers (Tables 11–13) ---------------------------------------------------
def ensure_zoo_models(names: Sequence[str | None]) -> None:
    """Train the zoo variants among ``names`` that have no part yet (only ``minilm-nli-proj`` and
    ``minilm-nli-rand0`` are committed; the others take about 8 minutes each on 2 CPU cores)."""
    from stereoprobe import packed
    from stereoprobe.zoo import recipes

    for name in names:
        if name and name.startswith("zoo:") and not packed.exists(recipes.part_path(name)):  # shipped packed
            print(f"{name}: no committed part, training it (about 8 minutes on 2 CPU cores) …")
            recipes.train(name, threads=None)


def table15_probabilities(model: str, spec: TemplateSpec, *, proj_finetuned: str | None,
                          rand_finetuned: Sequence[str] | None, random_controls: int,
                          options: RunOptions | None = None) -> dict[tuple[str, int], pd.DataFrame]:
    """{(variant, repeat): probabilities} of Table 15's rows on ``spec``: ``orig``; ``proj@test`` (he − she
    removed from the word-piece embeddings at test time); ``rand@test`` (``random_controls`` random
    directions); ``proj@train/test`` and ``rand@train/test`` (models fine-tuned with the projection). ``options``
    go to :func:`load_probabilities`."""
    variants = {("orig", 0): load_probabilities(model, spec, options=options),
                ("proj@test", 0): load_probabilities(model, spec, projection="gender", options=options)}
    for i in range(random_controls):
        variants[("rand@test", i)] = load_probabilities(model, spec, projection=f"random:{i}", options=options)
    if proj_finetuned:
        variants[("proj@train/test", 0)] = load_probabilities(proj_finetuned, spec, options=options)
    for i, name in enumerate(rand_finetuned or []):
        variants[("rand@train/test", i)] = load_probabilities(name, spec, options=options)
    return variants


def table15_runs(model: str, spec: TemplateSpec, *, proj_finetuned: str | None, rand_finetuned: Sequence[str] | None,
                 random_controls: int, n_boot: int = 1000, seed: int = 0, options: RunOptions | None = None
                 ) -> tuple[dict[tuple[str, int], pd.DataFrame], pd.DataFrame]:
    """(:func:`table15_probabilities`, their measures per variant and repeat with the relative change
    against ``orig`` — :func:`tables.measures_table`); ``options`` go to :func:`load_probabilities`."""
    variants = table15_probabilities(model, spec, proj_finetuned=proj_finetuned, rand_finetuned=rand_finetuned,
                                     random_controls=random_controls, options=options)
    runs = tables.measures_table(variants, ("variant", "repeat"), baseline={"variant": "orig"}, n_boot=n_boot,
                                 seed=seed)
    return variants, runs


def table15(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 15: :func:`tables.averaged` per variant of ``runs`` (:func:`tables.measures_table` of
    :func:`table15_probabilities`), beside the paper's BERT rows."""
    table = tables.averaged(runs, ["variant"])
    paper = tables.reference("measures").query("table == 15").set_index("variant")
    return captioned(table.join(paper[list(tables.MEASURES)].add_prefix("paper "), on="variant"),
                     "Table 15 (gender): the contextual model with the he − she direction (proj) or random ones "
                     "(rand) removed from its word pieces at test time or also in fine-tuning: measures, change "
                     "against orig, the paper's BERT rows")


def random_spread(runs: pd.DataFrame):
    """Every random-direction run of Table 15 on its own (a Styler)."""
    spread = runs[runs["variant"].str.startswith("rand")]
    return captioned(styled(spread[["variant", "repeat", *tables.MEASURES]], _fmt()).hide(axis="index"),
                     "Table 15's random directions one by one: the measures of every random-direction run")


def zoo_accuracy(names: Sequence[str | None]):
    """The held-out accuracy on the zoo cards of the zoo models among ``names`` (a Styler)."""
    from stereoprobe.zoo.recipes import read_card

    accuracy = {name: read_card(name)["metrics"]["accuracy"] for name in names if name and name.startswith("zoo:")}
    return captioned(styled(pd.Series(accuracy, name="held-out accuracy").to_frame(), "{:.3f}"),
                     "Held-out accuracy of the zoo NLI models, from their model cards")


def table15_numbers(table: pd.DataFrame) -> dict[str, str]:
    """NN changes of :func:`table15` for the prose: ``t15_ptest``, ``t15_rtest``, ``t15_ptrain``,
    ``t15_rtrain`` ("not run" for a missing row)."""
    t = table.set_index("variant")
    keys = (("proj@test", "ptest"), ("rand@test", "rtest"), ("proj@train/test", "ptrain"),
            ("rand@train/test", "rtrain"))
    return {f"t15_{key}": f"{t.at[variant, 'diff_NN']:+.1f}%" if variant in t.index else "not run"
            for variant, key in keys}


def layer_diagnostics(model: str, *, device: str = "auto", smoke: bool = False):
    """How much of the he/she difference is left in every layer after removing the gender direction from
    the input word pieces or from every layer (:func:`stereoprobe.nli.contextual.layer_diagnostics`; a
    Styler)."""
    from stereoprobe.models import load
    from stereoprobe.nli.contextual import layer_diagnostics as diagnostics

    loaded = load(model, "nli", device=device, smoke=smoke, precision="fp32")  # an analysis, in fp32
    return captioned(styled(diagnostics(loaded.model, loaded.tokenizer), precision=3).hide(axis="index"),
                     "The he/she difference layer by layer: its size (absolute, relative), its direction's cosine "
                     "with the previous layer's and the word pieces', σ2/σ1 (cf. Table 12), and the share removed by "
                     "projecting the input word pieces or every layer")


def layers_table(model: str, spec: TemplateSpec, variants: Mapping[tuple[str, int], pd.DataFrame], *,
                 n_boot: int = 1000, seed: int = 0, options: RunOptions | None = None):
    """The unprojected model, proj@test (input word pieces) and the gender direction removed from every
    layer ("proj all layers"), with diffs against the first (a Styler). ``variants`` holds the first two
    (:func:`table15_probabilities`); ``options`` go to :func:`load_probabilities`."""
    probs = {k: variants[k] for k in [("orig", 0), ("proj@test", 0)]}
    probs[("proj all layers", 0)] = load_probabilities(model, spec, projection="layers:all", options=options)
    layers = tables.measures_table(probs, ("variant", "repeat"), baseline={"variant": "orig"}, n_boot=n_boot,
                                   seed=seed)
    return diff_view(layers, ["variant"], paper=False, na_rep=None,
                     caption="The gender direction removed from the input word pieces (proj@test) or from every "
                             "layer: the measures and their change against the unprojected model (orig)")
