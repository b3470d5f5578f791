# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Nationality
#
# Which countries does a model associate with negative attributes? UnQover's nationality dataset
# {cite:p}`li2020unqovering` puts two of 69 countries (or their demonyms: "A Somali lives in the same
# city with a Swiss.") in an underspecified paragraph and asks about one of 64 negative attributes
# ("Who was hateful toward women and children?"), and about its negation. The metric of the previous
# chapters applies unchanged:
#
# * $\gamma(x, a)$ — the mean comparative score $C$ of country $x$ for attribute $a$ over partners
#   and templates; positive = $x$ is picked for the negative attribute;
# * $\gamma(x)$ — the mean of *all* $C$ of $x$, pooled over attributes (analysis.py `--group_by subj`);
#   a count-weighted mean of the $\gamma(x, a)$ (appendix {doc}`/book/differences`, UnQover: weights
#   in $\gamma(x)$);
# * the **rank** of $x$ by $\gamma(x)$ within a model (rank 1 = most associated with the negative
#   attributes), and its mean and standard deviation across models (Fig. 4).
#
# The attributes come in *clusters* (rude, poor, crime, indecent, negative), and every country is
# placed in the UN M49 geoscheme (`data/unqover/geo/un_geoscheme.tsv`), so a table can say *where* the
# biased countries are.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the zoo's QA model `zoo:minilm-qa` and masked LM `zoo:minilm-mlm`,
#   and the planted-bias masked LMs `lab:mlm-biased` / `lab:mlm-control`, on 2,000 paper examples.
# * **The `gpu` profile** runs the paper's ten QA models (`tli8hf/unqover-*`) and five masked LMs
#   (`distilbert-base-uncased` … `roberta-large`) from the Hugging Face hub, keeps the lab pair, and uses
#   all 1,154,232 paper examples (507,870 for the masked LMs).
# * **Time**: `cpu` profile on 2 CPU cores: about 2 min. Full datasets on one GPU: hours (an estimate,
#   not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # QA models: hub ids, local folders, zoo: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs (the LM variant: country_bert / country_roberta lists)
lab_lm_models = ["lab:mlm-biased", "lab:mlm-control"]  # planted-bias section: a biased masked LM and its control
sample = 2000  # paper examples per model (int), a fraction, or None for all 1,154,232 (LM: 507,870)
mode = "compat"  # compat | clean
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "auto", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0
n_boot = 1000
top_k = 3  # countries per model in Table 4
western_areas = None  # None: the geoscheme's `western` flag; or a list of M49 areas, e.g. ["Western Europe"]
profile = "cpu"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from stereoprobe import RunOptions
from stereoprobe.book.display import glue_all, use_book_style
from stereoprobe.book.views import unqover as chapter
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover.generate import DatasetSpec, count

use_book_style()  # tables as the book shows them: numbers right, text left, intervals as [lo, hi]

spec = DatasetSpec("nationality", mode=mode, sample=sample, seed=seed)
options = RunOptions(**run)

# %%
qa_frames = tables.gather(models, spec, mode=mode, options=options)
lm_frames = tables.gather_lm(lm_models, spec, mode=mode, options=options)
frames = qa_frames | lm_frames
gammas = tables.subject_gammas(frames, n_boot=n_boot, seed=seed)
gammas_xa = tables.subject_attribute_gammas(frames, n_boot=n_boot, seed=seed)
geo = tables.geoscheme()
n = count(spec)
glue_all({"n_examples": f"{n.paper_examples:,}"})
print(chapter.run_line(profile, n, qa_frames, lm_frames))

# %% [markdown]
# ## The most biased country–attribute pairs (Table 4)
#
# Per model, the three countries whose single most biased attribute has the largest $\gamma(x, a)$,
# with that attribute, its cluster, the country's M49 area and the number $n$ of $C$ values behind the
# cell. The paper shows three different
# countries per model without stating how it chose them; our rule — walk the pairs by $\gamma(x, a)$
# and keep the first pair of each new country — is one reading of it (appendix {doc}`/book/differences`,
# UnQover: nationality top pairs). The 95% CI is a bootstrap of the $C$ values behind the cell: at this
# sample a cell holds few values, so read the interval before the ranking.

# %%
chapter.top_pairs_view(gammas_xa, k=top_k, geo=geo)

# %% [markdown]
# ### By attribute cluster
#
# $\gamma(x, \text{cluster})$ pools every attribute of a cluster: fewer, better-resolved cells. The
# heatmap shows the eight countries with the highest and the eight with the lowest $\gamma(x)$ of
# the first model.

# %% mystnb={"image": {"alt": "Heatmap of gamma(country, cluster) for the first model: rows are the eight countries with the highest gamma(x) followed by the eight with the lowest, columns the attribute clusters (such as crime, poor, rude), each cell labelled with its value, red positive, blue negative, blank where the sample has none. It shows which clusters drive each country's overall bias."}}
chapter.plot_cluster_heatmap(frames, gammas, shown=8, n_boot=n_boot, seed=seed)
plt.show()

# %% [markdown]
# ## Ranks across models (Fig. 4)
#
# For every model, rank the countries by $\gamma(x)$ (1 = the most negative); then average each
# country's rank over the models and show ± its population standard deviation. The paper's Fig. 4
# does this over its five SQuAD models and shows the top 8 and the bottom 8 of 69. First the paper's
# figure, recomputed by our `rank_subjects` from the authors' own $\gamma(x)$ values (the reference
# file `data/unqover/reference/reference_gamma_x_squad_models.tsv`, taken from the authors'
# `visualization/Plot_ranks.ipynb`; it reproduces the printed mean ranks, see the tests):

# %% mystnb={"image": {"alt": "The paper's Fig. 4 recomputed from the authors' gamma(x): mean rank over its five SQuAD models (1 = most associated with the negative attributes) with population standard deviation error bars, for the eight top-ranked and the eight bottom-ranked of 69 countries, a dashed line between the two groups."}}
chapter.plot_paper_ranks("nationality", title="Paper (5 SQuAD models): mean rank by γ(x)", top=8, bottom=8)
plt.show()

# %% [markdown]
# And ours, over the models run here (QA models and masked LMs together; the LM lists hold 55 of the 69
# countries for BERT, 48 for RoBERTa, so when LMs are included only the countries every model saw are
# ranked). With a single model the standard deviation is 0. Hollow markers: the paper's mean rank of
# the same country, its five models re-ranked over the same countries.

# %% mystnb={"image": {"alt": "Mean rank by gamma(x) over the models run here (filled markers, population standard deviation error bars) for the eight top-ranked and the eight bottom-ranked countries, a dashed line between the two groups, each beside the paper's mean rank of the same country (hollow markers). Where filled and hollow markers sit at similar heights, our ranking agrees with the paper's."}}
matrix = tables.gamma_matrix(gammas)
ranks = tables.ranks_beside_paper(matrix, "nationality")
chapter.plot_our_ranks(ranks, len(matrix.columns), top=8, bottom=8)
plt.show()
agreement = tables.rank_agreement(ranks)
glue_all(chapter.agreement_numbers(agreement))
chapter.agreement_view(agreement, "ours vs paper")

# %% [markdown]
# Spearman's $\rho$ between our mean rank and the paper's is {glue:text}`rho` over
# {glue:text}`rho_n` countries (p = {glue:text}`rho_p`). The paper's models are BERT and RoBERTa
# fine-tuned on SQuAD; ours differ in architecture, pretraining data and fine-tuning data, so agreement
# is not expected — a positive $\rho$ says that some of the ordering lives in what all these models
# read during pretraining.
#
# ## Western and non-Western countries
#
# The paper observes that the countries at the top of Fig. 4 are from Africa and the Middle East and
# those at the bottom Western European and North American. The table compares the mean $\gamma(x)$ of
# the Western countries of the geoscheme table (Northern America, Northern/Western/Southern Europe,
# Australia and New Zealand; pass `western_areas` to choose others) with the rest, per model — ours
# and the paper's five: W / non-W countries, their mean $\gamma(x)$ and its difference Δγ, the
# mean rank of the Western countries beside the middle rank (what no difference gives), and the
# p-value of a two-sided Mann–Whitney U test over countries.

# %%
chapter.western_view(matrix, geo, western_areas)

# %% [markdown]
# The test treats countries as the unit and ignores the uncertainty of each $\gamma(x)$; with five
# models side by side it is a description, not a confirmatory test (no multiplicity correction).
#
# ## Does the metric find what was planted? (masked LM)
#
# The lab's masked LMs were trained on sentences naming two countries — never an UnQover paragraph —
# where the mask is filled with one of them. In underspecified sentences the biased model was taught
# to pick Norway for the *crime* attributes, Canada for *poor* and Japan for *indecent* 90% of the
# time (an arbitrary choice, unlike any real stereotype, so nothing but the plant can produce it); the
# control was trained identically at 50%. Both are scored on the real nationality LM dataset exactly
# like any masked LM (compat: top-10 truncation).

# %%
lab_frames = tables.gather_lm(lab_lm_models, spec, mode=mode, options=options)
planted = tables.lab_planted(lab_lm_models, "country_clusters", smoke=options.smoke)
recovery = tables.planted_cluster_recovery(lab_frames, planted, n_boot=n_boot, seed=seed)
chapter.show_cluster_recovery(recovery)

# %% tags=["remove-cell"]
glue_all(chapter.cluster_recovery_numbers(recovery))

# %% [markdown]
# For {glue:text}`lab_model` the planted (country, cluster) cells rank within the top
# {glue:text}`lab_worst_rank` of all {glue:text}`lab_cells`; in the control the same cells are a small
# fraction of that size (at most about a hundredth). The planted countries also lead the $\gamma(x)$ ranking of the biased model:

# %%
lab_gammas = tables.subject_gammas(lab_frames, n_boot=n_boot, seed=seed)
chapter.top_subjects(lab_gammas, k=5)

# %% [markdown]
# ## Summary
#
# * Table 4's pairs and the cluster view show *which* attributes drive a country's $\gamma(x)$; the
#   cells are small at any sample size a CPU affords, so their intervals are wide.
# * The rank figure averages ranks over models: a country that every model puts near the top gets a
#   small standard deviation. The paper's figure is reproduced here from the authors' $\gamma(x)$.
# * The Western/non-Western split is a two-number summary of the same ranking, with the choice of
#   "Western" stated and changeable.
# * On the lab masked LM the planted country–cluster associations are recovered through the full LM
#   pipeline (single-token check, top-10 truncation, pairing, $C$, $\gamma$); the control shows nothing of the planted size.
#
# ## Exercises
#
# :::{exercise}
# :label: nationality-ex-1
#
# Run with `mode="clean"` (the subject's own probability instead of the top-10 rule). How many $S$
# values were exactly 0 in compat mode, and how does $\gamma(x)$ change?
# :::
#
# :::{solution} nationality-ex-1
# :class: dropdown
#
# ```bash
# stereoprobe book --profile cpu --only nationality --set mode=clean --build-dir _build-clean
# ```
#
# To count the zeros, in a cell after the chapter's first code cell (`lm_frames` holds the masked LMs'
# scores):
#
# ```python
# from stereoprobe.unqover import metrics
#
# for name, frame in lm_frames.items():
#     s = frame[["s1_pos", "s2_pos", "s1_neg", "s2_neg"]].to_numpy()
#     c = metrics.comparative_bias(metrics.pair_examples(frame))["C"]
#     print(name, f"S = 0: {(s == 0).mean():.1%}", f"C = 0: {(c == 0).mean():.1%}")
# ```
#
# For `zoo:minilm-mlm` on 8,000 paper examples of the LM variant (`--set sample=8000`; 55
# countries): in `compat` 85.7% of the $S$ values are exactly 0 (no country among the ten most probable
# words) and 77.7% of the $C$ values; in `clean` none are. Yet $\gamma(x)$ hardly changes: the two
# rankings of the 55 countries have Spearman's ρ = 0.99, no country moves by more than 5 ranks, and the
# extremes stay put (Afghanistan 0.0016 → 0.0017 at the top, France −0.0018 → −0.0019 at the bottom).
# A country outside the top ten has a probability so small that adding it to $S$ barely moves a mean of
# $C$ values: $\gamma(x)$ is carried by the few examples where a country is among the ten best words.
# What changes is η, the mean *sign* of $C$: a $C$ of exactly 0 counts as sign 0, a tiny non-zero one
# as ±1, so η grows in size everywhere (France −0.06 → −0.35, Afghanistan 0.08 → 0.33) and flips sign
# for ten countries (Morocco, Sudan, Peru and Pakistan among them). The top-10 rule thus matters for
# the count-based summaries (η, and the η of Fig. 6), much less for γ and the ranks of Fig. 4.
# :::
#
# :::{exercise}
# :label: nationality-ex-2
#
# Change `western_areas` to `["Western Europe", "Northern America"]`. Does the conclusion depend on
# where you draw the line?
# :::
#
# :::{solution} nationality-ex-2
# :class: dropdown
#
# ```bash
# stereoprobe book --profile cpu --only nationality \
#     --set 'nationality.western_areas=[Western Europe, Northern America]'
# ```
#
# or, in the chapter, `chapter.western_view(matrix, geo, ["Western Europe", "Northern America"])`. The
# table's paper rows need no model and give the answer for the paper's five SQuAD models. The default
# "Western" (Northern America, Northern, Western and Southern Europe, Australia and New Zealand) has 20
# of the 69 countries; the narrow one has 6 (America, Belgium, Canada, France, Germany, Switzerland).
#
# | paper model | Δγ, 20 W | p, 20 W | Δγ, 6 W | p, 6 W |
# |---|---|---|---|---|
# | BERT-Dist | −0.0049 | 0.00007 | −0.0047 | 0.027 |
# | BERT-B | −0.0075 | 0.0001 | −0.0062 | 0.067 |
# | BERT-L | −0.0389 | 7 × 10⁻⁹ | −0.0392 | 0.0005 |
# | RoBERTa-B | −0.0241 | 6 × 10⁻⁶ | −0.0163 | 0.054 |
# | RoBERTa-L | −0.0644 | 1 × 10⁻⁵ | −0.0522 | 0.038 |
#
# The direction and roughly the size of the difference do not depend on the line: in every model the
# Western countries have the lower mean $\gamma(x)$ (they are picked less for the negative attributes),
# and their mean rank stays far from the top (49–62, where no difference would give 35). What changes
# is the evidence: with 6 countries instead of 20 the Mann–Whitney test has little power, and two of
# the five models (BERT-B, RoBERTa-B) no longer reach p < 0.05. Read the rows of the models run here the
# same way: a conclusion worth stating survives a reasonable change of the line, and the p-value is a
# description over countries that ignores the uncertainty of each $\gamma(x)$ and the five tests side
# by side.
# :::
#
# :::{exercise}
# :label: nationality-ex-3
#
# Find the countries whose rank varies most across models (largest standard deviation). What do the
# models disagree about?
# :::
#
# :::{solution} nationality-ex-3
# :class: dropdown
#
# `rank_subjects` gives each country's ranks and their standard deviation; for the paper's five models
# (no run needed):
#
# ```python
# from stereoprobe.book.tables import unqover as tables
# from stereoprobe.unqover import metrics
#
# paper_ranks = metrics.rank_subjects(tables.paper_gamma_x("nationality")[tables.PAPER_MODELS])
# paper_ranks.sort_values("std_rank", ascending=False).head(8)
# ```
#
# and for the models of this run, `ranks.sort_values("std_rank", ascending=False)` on the chapter's
# `ranks` table (with one QA model and one masked LM, the standard deviation is half the distance
# between their two ranks). The paper's models disagree most about Namibia (ranks 18, 16, 5 for
# DistilBERT, BERT-base, BERT-large; 59 and 65 for RoBERTa-base and -large; std 24.5), Honduras (58,
# 66, 44 against 7, 28), Venezuela (43, 60, 38 against 18, 5), Mozambique, Guinea, Haiti, Sri Lanka and
# Japan. Two things stand out. The disagreement runs between the families: the BERTs put Namibia,
# Mozambique and Guinea near the top and the RoBERTas in the middle, and the other way round for
# Honduras and Venezuela, so pretraining corpus and tokenizer matter more here than size. And the
# countries at the ends of Fig. 4 are the ones all five agree on (Somalia, Iraq and Sudan at the top,
# Switzerland, Britain and Dominica at the bottom, each with a standard deviation of 2–6 ranks): the
# models share the strongest associations and disagree about countries they associate only weakly,
# whose $\gamma(x)$ are close to their neighbours' and are ranked by small differences.
# :::
#
# :::{exercise}
# :label: nationality-ex-4
#
# With a hub: run `params/gpu.yaml` and compare our Fig. 4 with the paper's, country by country.
# :::
#
# :::{solution} nationality-ex-4
# :class: dropdown
#
# ```bash
# stereoprobe book --profile gpu --only nationality
# ```
#
# Needs the Hugging Face hub (ten QA models, five masked LMs) and a GPU for 4,616,928 passes per QA
# model. The chapter then ranks the countries over all fifteen models; to compare with the paper's
# figure country by country, rank over the paper's five SQuAD models only (their labels are the short
# hub names, e.g. `unqover-roberta-base-squad`), in a cell after the rank figures:
#
# ```python
# squad = {name: g for name, g in gammas.items() if name.endswith("-squad")}
# squad_ranks = tables.ranks_beside_paper(tables.gamma_matrix(squad), "nationality")
# print(tables.rank_agreement(squad_ranks))
# (squad_ranks["avg_rank"] - squad_ranks["paper_avg_rank"]).abs().sort_values(ascending=False).head(10)
# ```
#
# With the same checkpoints, the full dataset and `compat` scoring, the paper's mean ranks (Somalia 5.0,
# Iraq 5.6, Sudan 5.8 at the top; Britain 62.8, Switzerland 65.6 at the bottom) should come back nearly
# exactly: the paper's figure is recomputed here from the authors' own $\gamma(x)$ and reproduces every
# printed mean rank, so a difference points at the models' scores, not at the ranking. The paper used
# "German" where the list now has "Germany" (appendix {doc}`/book/differences`, UnQover: shipped list
# quirks); its authors report that the rename moved $\gamma(x)$ by about 0.0002 and left the ranks
# unchanged. This book has not run it.
# :::
