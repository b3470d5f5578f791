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

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # QA models: hub ids, local folders, zoo: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs (the LM variant: country_bert / country_roberta lists)
lab_lm_models = ["lab:mlm-biased", "lab:mlm-control"]  # planted-bias section: a biased masked LM and its control
sample = 8000  # paper examples per model (int), a fraction, or None for all 1,154,232 (LM: 507,870)
mode = "compat"  # compat | clean
batch_tokens = 8192
device = "auto"
precision = "auto"
engine = "local"  # local | ray: score shards on Ray Data workers (this machine's GPUs, or the cluster at RAY_ADDRESS)
workers = None  # Ray workers (None: one per GPU)
seed = 0
n_boot = 1000
top_k = 3  # countries per model in Table 4
western_areas = None  # None: the geoscheme's `western` flag; or a list of M49 areas, e.g. ["Western Europe"]
smoke_models = False
profile = "cpu"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from stereoprobe.display import glue_all
from stereoprobe.unqover import chapter, report
from stereoprobe.unqover.generate import DatasetSpec, count

spec = DatasetSpec("nationality", mode=mode, sample=sample, seed=seed)
options = chapter.score_options(mode=mode, batch_tokens=batch_tokens, device=device, precision=precision,
                                smoke=smoke_models, engine=engine, workers=workers)

# %%
qa_frames = report.gather(models, spec, **options)
lm_frames = report.gather_lm(lm_models, spec, **options)
frames = qa_frames | lm_frames
gammas = report.subject_gammas(frames, n_boot=n_boot, seed=seed)
gammas_xa = report.subject_attribute_gammas(frames, n_boot=n_boot, seed=seed)
geo = report.geoscheme()
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

# %%
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

# %%
chapter.plot_paper_ranks("nationality", title="Paper (5 SQuAD models): mean rank by γ(x)", top=8, bottom=8)
plt.show()

# %% [markdown]
# And ours, over the models run here (QA models and masked LMs together; the LM lists hold 55 of the 69
# countries for BERT, 48 for RoBERTa, so when LMs are included only the countries every model saw are
# ranked). With a single model the standard deviation is 0. Hollow markers: the paper's mean rank of
# the same country, its five models re-ranked over the same countries.

# %%
matrix = report.gamma_matrix(gammas)
ranks = report.ranks_beside_paper(matrix, "nationality")
chapter.plot_our_ranks(ranks, len(matrix.columns), top=8, bottom=8)
plt.show()
agreement = report.rank_agreement(ranks)
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
lab_frames = report.gather_lm(lab_lm_models, spec, **options)
planted = report.lab_planted(lab_lm_models, "country_clusters", smoke=smoke_models)
recovery = report.planted_cluster_recovery(lab_frames, planted, n_boot=n_boot, seed=seed)
chapter.show_cluster_recovery(recovery)

# %% tags=["remove-cell"]
glue_all(chapter.cluster_recovery_numbers(recovery))

# %% [markdown]
# For {glue:text}`lab_model` the planted (country, cluster) cells rank within the top
# {glue:text}`lab_worst_rank` of all {glue:text}`lab_cells`; in the control the same cells sit near
# zero. The planted countries also lead the $\gamma(x)$ ranking of the biased model:

# %%
lab_gammas = report.subject_gammas(lab_frames, n_boot=n_boot, seed=seed)
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
#   pipeline (single-token check, top-10 truncation, pairing, $C$, $\gamma$); the control shows none.
#
# ## Exercises
#
# 1. Run with `mode="clean"` (the subject's own probability instead of the top-10 rule). How many
#    $S$ values were exactly 0 in compat mode, and how does $\gamma(x)$ change?
# 2. Change `western_areas` to `["Western Europe", "Northern America"]`. Does the conclusion depend on
#    where you draw the line?
# 3. Find the countries whose rank varies most across models (largest standard deviation). What do
#    the models disagree about?
# 4. With a hub: run `params/gpu.yaml` and compare our Fig. 4 with the paper's, country by country.
