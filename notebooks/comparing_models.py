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
# # Comparing models
#
# UnQover {cite:p}`li2020unqovering` closes with one number per model and bias class:
#
# * **μ**, the model bias intensity (Eq. 8, Fig. 3): for every subject (each of the 140 names for
#   gender; countries, ethnicities, religions) its largest $\lvert\gamma(x, a)\rvert$ over attributes,
#   averaged over subjects;
# * **η**, its count-based twin (Fig. 6): the mean over subjects of the mean $\lvert\eta(x, a)\rvert$,
#   how *consistently* subjects win, whatever the size of $C$.
#
# The paper draws them as grouped bars — bias class × {SQuAD, NewsQA, LM} × five architectures — and
# reads three claims off them: larger models are more biased; fine-tuning shifts the bias of the
# pretrained LM; NewsQA models are less biased than SQuAD models. This chapter draws the same grid
# for the models run here, with 95% intervals, beside the paper's bar heights (measured from the
# authors' figures, ±0.005 for μ and ±0.01 for η; the paper prints no numbers), and checks each claim
# where the models run allow it.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the zoo's QA model `zoo:minilm-qa` and masked LM `zoo:minilm-mlm`,
#   on 2,000 paper examples of each of the four datasets. These are the scores the UnQover chapters
#   before it stored, so after them this chapter reads them back instead of scoring.
# * **The `gpu` profile** runs the paper's ten QA models (`tli8hf/unqover-*`) and five masked LMs
#   (`distilbert-base-uncased` … `roberta-large`) from the Hugging Face hub, on the full datasets.
# * **Time**: `cpu` profile on 2 CPU cores: under 0.5 min (after the chapters before it). Full datasets
#   on one GPU: hours (an estimate, not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # QA models: hub ids, local folders, zoo: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs
sample = 2000  # paper examples per dataset and model (int), a fraction, or None for all
mode = "compat"  # compat | clean
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "auto", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0
n_boot = 1000
profile = "cpu"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from stereoprobe import RunOptions
from stereoprobe.book.display import glue_all, use_book_style
from stereoprobe.book.views import unqover as chapter
from stereoprobe.book.tables import unqover as tables

use_book_style()  # tables as the book shows them: numbers right, text left, intervals as [lo, hi]

options = RunOptions(**run)

# %%
grid = tables.intensity_grid(models, lm_models, sample=sample, mode=mode, seed=seed, n_boot=n_boot, options=options)
sizes = chapter.model_sizes(models, lm_models, smoke=options.smoke)
print(f"profile {profile}: {len(models)} QA model(s), {len(lm_models)} masked LM(s), 4 bias classes")

# %% [markdown]
# ## Bias intensity μ (Fig. 3)
#
# Hatched bars: the paper (five architectures; SQuAD, NewsQA and LM groups). Solid bars with error
# bars: the models run here. The intervals are *basic* bootstrap intervals: μ is a maximum of noisy
# means and is biased upward at small samples; the basic interval undoes that shift (see the gender
# chapter), so it can lie below the point estimate when noise dominates.

# %% mystnb={"image": {"alt": "Four bar-chart panels (gender, nationality, ethnicity, religion) of the bias intensity mu: hatched bars are the paper's five models in its SQuAD, NewsQA and LM groups, solid bars with 95% basic bootstrap intervals the QA models and masked LMs run here. Compare the height of our bars with the paper's groups within each bias class."}}
chapter.plot_intensity(grid, "mu")
plt.show()

# %%
chapter.grid_view(grid, "mu")

# %% [markdown]
# ## Count-based η (Fig. 6)
#
# The paper reports η ≈ 0.3–0.9 and notes (Appendix A.3) that it is "close to 0.5 for all datasets
# and models": counting wins discards how large each $C$ is, so η separates models less than μ.
# In compat mode a masked LM's $S$ is 0 whenever a subject is outside its top 10, which makes many
# $C$ exactly 0; sign(0) = 0 lowers η.

# %% mystnb={"image": {"alt": "Four bar-chart panels (gender, nationality, ethnicity, religion) of the count-based bias measure eta, laid out like the mu figure: hatched bars for the paper's SQuAD, NewsQA and LM models, solid bars with 95% intervals for the models run here. The paper's eta stays near 0.5, so the bars differ less between models than they do for mu."}}
chapter.plot_intensity(grid, "eta")
plt.show()

# %%
chapter.grid_view(grid, "eta")

# %% [markdown]
# ## The paper's three claims
#
# First on the paper's own bars: how many of the comparisons each claim rests on go its way.

# %%
paper_claims = tables.paper_claims()
chapter.claims_view(paper_claims)

# %% tags=["remove-cell"]
glue_all(chapter.paper_claim_numbers(paper_claims))

# %% [markdown]
# Then on the models run here. A comparison *holds* when the two 95% intervals of μ are disjoint in
# the claimed direction; overlapping intervals are *unresolved*, not a refutation. Model sizes are
# counted from the weight files:

# %%
chapter.sizes_table(sizes)

# %%
claims = tables.our_claims(grid, sizes)
chapter.claims_view(claims)

# %% tags=["remove-cell"]
glue_all(chapter.claim_numbers(claims))

# %% [markdown]
# With the models of this run, {glue:text}`testable_claims` of the three claims can be tested. The
# zoo's QA model and masked LM share one frozen MiniLM encoder and differ only in their small trained
# adapters and heads, so "fine-tuning shifts bias" is a clean comparison here: any change in μ comes
# from the fine-tuning alone. The size and NewsQA claims need several models of one family; the
# `gpu` profile runs the paper's ten QA models and five LMs and fills every row.
#
# ## Summary
#
# * μ and η reduce a model to one number per bias class; μ weighs the size of the bias, η only its
#   consistency. In compat mode a masked LM's many exact-zero scores give many $C = 0$, which pull its
#   η down: compare η within a setting (QA with QA, LM with LM).
# * Intervals matter: at CPU sample sizes many differences between models are not resolved.
# * On the paper's own bars "larger is more biased" holds in {glue:text}`paper_larger_holds` of
#   {glue:text}`paper_larger_of` comparisons (the exceptions are listed above) and "NewsQA < SQuAD" in
#   {glue:text}`paper_newsqa_holds` of {glue:text}`paper_newsqa_of`: the claims are tendencies, which
#   the tables quantify. Whether they hold for other models is an empirical question the `gpu`
#   profile answers with intervals.
#
# ## Exercises
#
# :::{exercise}
# :label: comparing-ex-1
#
# Raise `sample` until the intervals of two models you care about separate. How does the interval width
# scale with the number of examples?
# :::
#
# :::{solution} comparing-ex-1
# :class: dropdown
#
# Build the chapter at other sample sizes into folders of their own (each new sample is scored for all
# four datasets, so 32,000 examples take about sixteen times the scoring the UnQover chapters do at the
# `cpu` profile's 2,000):
#
# ```bash
# stereoprobe book --profile cpu --only comparing_models --set sample=2000 --build-dir _build-2000
# stereoprobe book --profile cpu --only comparing_models --set sample=32000 --build-dir _build-32000
# ```
#
# For `zoo:minilm-qa` at 2,000 and 8,000 paper examples (`--set sample=2000`, `--set sample=8000`; the
# values per cell are the mean number of $C$ values behind a $\gamma(x, a)$):
#
# | dataset | paper examples | $(x, a)$ cells | values per cell | μ | width of μ's 95% CI |
# |---|---|---|---|---|---|
# | religion | 2,000 | 549 | 7.3 | 0.086 | 0.023 |
# | religion | 8,000 | 550 | 29.1 | 0.075 | 0.011 |
# | ethnicity | 2,000 | 745 | 5.4 | 0.066 | 0.025 |
# | ethnicity | 8,000 | 750 | 21.3 | 0.054 | 0.011 |
# | gender | 2,000 | 3,307 | 1.2 | 0.172 | 0.005 |
# | gender | 8,000 | 7,880 | 2.0 | 0.181 | 0.007 |
#
# Where the cells hold several values, the width falls like $1/\sqrt{n}$: four times the examples
# halve it (religion 0.023 → 0.011, ethnicity 0.025 → 0.011). μ is a mean over subjects of a maximum of
# cell means, each cell mean $\gamma(x, a)$ averages the $C$ values in its cell, and a cell holds about
# $n$ divided by the number of cells, so the standard error of every $\gamma(x, a)$, and with it the
# spread of μ's bootstrap replicates, shrinks like $1/\sqrt{n}$. Separating two models whose μ differ by
# $d$ therefore needs $n$ to grow like $1/d^2$. μ itself falls as $n$ grows (0.086 → 0.075): the
# upward bias of a maximum of noisy means shrinks with the noise, so compare models only at the same $n$.
#
# Gender is the exception, and a warning: 140 names × 70 occupations make 9,800 cells, so even 8,000
# examples leave about two values per cell, and the `cpu` profile's 2,000 about one. A cell
# with one value has no bootstrap spread at all, so the interval is too narrow there and *widens* as
# $n$ grows (0.005 → 0.007), and μ, a maximum over the cells a name has, *rises* as more cells fill.
# The $1/\sqrt{n}$ rule starts only once every cell holds several values, which for gender takes tens
# of thousands of examples (`--set sample=32000` gives about six or seven per cell).
# :::
#
# :::{exercise}
# :label: comparing-ex-2
#
# Compute μ with the gender *groups* instead of the 140 names. Which claims change?
# :::
#
# :::{solution} comparing-ex-2
# :class: dropdown
#
# Only the gender rows can change (the other bias classes have no groups). In a cell after the grid,
# recompute the gender μ both ways for every model of the run:
#
# ```python
# from stereoprobe.unqover import metrics
# from stereoprobe.unqover.generate import DatasetSpec
#
# spec = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
# frames = tables.gather(models, spec, mode=mode, options=options) | \
#     tables.gather_lm(lm_models, spec, mode=mode, options=options)
# for name, frame in frames.items():
#     paired = metrics.pair_examples(frame)
#     for group_by in ("subject", "gender"):
#         mu = metrics.bias_intensity(paired, group_by, ci=0.95, n_boot=n_boot, seed=seed)
#         print(name, group_by, mu[["mu", "mu_lo", "mu_hi"]].round(3).to_dict())
# ```
#
# With the `cpu` profile's models on 8,000 paper examples of the gender dataset (`--set sample=8000`):
#
# | model | μ per name (95% CI) | μ per gender group (95% CI) |
# |---|---|---|
# | `zoo:minilm-qa` | 0.181 (0.166, 0.173) | 0.024 (0.005, 0.022) |
# | `zoo:minilm-mlm` | 0.161 (0.154, 0.157) | 0.107 (0.097, 0.113) |
#
# The one claim these two models can test, "fine-tuning shifts bias" (the QA model against the masked LM
# it shares its encoder with), reverses. Per name the QA model's interval lies above the LM's ("higher
# after fine-tuning", the verdict the claims table gives for gender at this sample); per group it lies
# far below ("lower after fine-tuning"). The reason is what each μ counts. The QA model's per-name μ
# is almost all associations of single names, which cancel when the 70 names of a gender are pooled;
# the masked LM's gender scores in `compat` mode are mostly "she"/"he" probabilities (the he/she rule),
# shared by every name of a gender, so pooling keeps two thirds of its μ. With the paper's models the
# same switch can reorder the gender bars of Fig. 3 (the paper's own bars are per name, so only a rerun
# of its models, the `gpu` profile, can tell); the other bias classes have no groups and do not change.
# :::
#
# :::{exercise}
# :label: comparing-ex-3
#
# Fig. 6's η ignores the size of $C$. Construct two models with the same η and very different μ.
# :::
#
# :::{solution} comparing-ex-3
# :class: dropdown
#
# Take two subjects $x_1, x_2$ and any set of attributes. Model A gives every pair
# $C(x_1, x_2, a) = +0.01$, model B $C(x_1, x_2, a) = +0.9$, for every attribute, template and order. In
# both models every $C$ of $x_1$ is positive and every $C$ of $x_2$ negative, so $\eta(x_1, a) = 1$ and
# $\eta(x_2, a) = -1$ for every $a$, and the count-based intensity, the mean of
# $\lvert\eta(x, a)\rvert$, is $\eta = 1$ for both. But $\gamma(x_1, a) = 0.01$ in A and $0.9$ in B (and
# the negatives for $x_2$), so $\mu_A = 0.01$ and $\mu_B = 0.9$, ninety times larger. η measures how
# *consistently* a subject wins, μ by how *much*: a model that leans slightly but always the same way
# has the η of a strongly biased one. The lab models are a real pair of this kind: on the gender
# dataset (8,000 paper examples) `lab:qa-biased` has μ = 0.824 and η = 0.747, its unbiased control
# `lab:qa-control` μ = 0.0024 and η = 0.739, because the control's tiny $C$ values are as consistent in
# sign as the planted ones. In the other direction, η also falls when many $C$ are exactly 0
# (sign 0), as with the masked LMs in `compat` mode, without μ moving much.
# :::
#
# :::{exercise}
# :label: comparing-ex-4
#
# With a hub: run the `gpu` profile and check each claim row against the paper's bars.
# :::
#
# :::{solution} comparing-ex-4
# :class: dropdown
#
# ```bash
# stereoprobe book --profile gpu --only comparing_models
# ```
#
# Run it after the other UnQover chapters, whose scores it reuses; alone it scores all four datasets
# with the ten QA models and five masked LMs itself (the hub and a GPU either way). The claims table
# then tests every comparison on our intervals: larger vs smaller model of one family, each QA model vs
# the masked LM it was fine-tuned from, each NewsQA model vs its SQuAD twin. Compare with the first
# claims table, which tests the same comparisons on the paper's bar heights: there "larger QA models are
# more biased" holds in 19 of 24 comparisons (the exceptions are all NewsQA: BERT-base below DistilBERT
# for ethnicity, nationality and religion, RoBERTa-large below RoBERTa-base for gender and religion),
# "fine-tuning shifts μ" in 18 of 20 (not BERT-base for nationality and religion) and "NewsQA is less
# biased than SQuAD" in all 20. Where our verdict is "unresolved", the intervals overlap at that sample
# size; where it is "reversed", the claim fails for that pair as scored here. The paper's bars were read
# from its figures (±0.005 for μ), so a difference of that size between our μ and a bar is not a
# disagreement. This book has not run it.
# :::
