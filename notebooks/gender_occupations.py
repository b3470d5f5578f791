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
# # Gender and occupations
#
# Which occupations does a QA model give to women, and which to men, when nothing in the paragraph
# says? UnQover {cite:p}`li2020unqovering` asks 70 occupation questions about pairs of the 70
# most common US first names of each gender, in four paragraph templates, and aggregates the
# comparative score $C$ of the previous chapter:
#
# * $\gamma(x, a)$ — the mean of $C(x, x_2, a, \tau)$ over partners $x_2$ and templates $\tau$
#   (subject–attribute bias, in $[-1, 1]$);
# * $\eta(x, a)$ — the mean of $\operatorname{sign} C$: how consistently $x$ wins (count-based);
# * **gender grouping** — every $C$ of a (female, male) pair counts for the female name's gender, its
#   negative for the male's, so $\gamma(\text{male}, a) = -\gamma(\text{female}, a)$ exactly;
# * $\mu$ — model bias intensity: the mean over *names* of $\max_a \lvert\gamma(x, a)\rvert$ (Eq. 8).
#
# Confidence intervals are percentile bootstraps (95%) of the mean of the $C$ values behind each
# $\gamma$; they show which occupations are distinguishable from no bias at this sample size.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the zoo's QA model `zoo:minilm-qa` and the planted-bias pair
#   `lab:qa-biased` / `lab:qa-control`, on 2,000 paper examples of the gender dataset.
# * **The `gpu` profile** runs the paper's ten QA models from the Hugging Face hub (`tli8hf/unqover-*`,
#   five architectures fine-tuned on SQuAD and on NewsQA) in place of the zoo model, keeps the lab pair,
#   and uses all 1,372,000 paper examples.
# * **Time**: `cpu` profile on 2 CPU cores: under 1 min. Full datasets on one GPU: hours (an estimate,
#   not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # hub ids, local folders, zoo: or lab: names
lab_models = ["lab:qa-biased", "lab:qa-control"]  # the planted-bias section: a biased model and its control
sample = 2000  # paper examples of the gender dataset (int), a fraction, or None for all 1,372,000
mode = "compat"  # compat | clean
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "auto", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0
n_boot = 1000  # bootstrap resamples for the CIs
profile = "cpu"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from stereoprobe.book import plots
from stereoprobe import RunOptions
from stereoprobe.book.display import glue_all, use_book_style
from stereoprobe.book.views import unqover as chapter
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover.generate import DatasetSpec, count

use_book_style()  # tables as the book shows them: numbers right, text left, intervals as [lo, hi]

spec = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
n = count(spec)
glue_all({"n_examples": f"{n.paper_examples:,}"})
options = RunOptions(**run)

# %%
frames = tables.gather(models, spec, mode=mode, options=options)
gammas = chapter.gender_gammas(frames, n_boot=n_boot, seed=seed)
lab_frames = tables.gather(lab_models, spec, mode=mode, options=options)
lab_gammas = chapter.gender_gammas(lab_frames, n_boot=n_boot, seed=seed)
print(f"profile {profile}: {n.paper_examples:,} paper examples per model; {len(frames)} models + {len(lab_frames)} lab models")

# %% [markdown]
# ## Top occupations per gender (Table 2)
#
# The three occupations with the largest $\gamma$ toward each gender, per model, with the bootstrap
# 95% CI of $\gamma$ and the count-based $\eta$. A female top-3 can be *negative* (the paper's
# DistilBERT row): "top" only ranks, it does not say the model prefers women for that job.

# %%
chapter.table2_view(gammas, k=3)

# %% [markdown]
# ### The paper's values
#
# Table 2 of the paper (SQuAD models), as quoted in our reference file. BERT-large gives
# *secretary* to women with $\gamma = 0.41$ and $\eta = 1.00$: every one of its 19,600 comparisons
# went the same way.

# %%
chapter.paper_table2_view()

# %% [markdown]
# ## Does the metric find what was planted?
#
# The lab models are the book's answer to *"how would we know the metric works?"* The biased lab model
# was trained so that, in underspecified paragraphs, certain occupations are answered with a name of
# one gender 90% of the time; the control was trained identically with 50%. Neither ever saw the
# UnQover templates. A sound metric puts the planted occupations at the top with the planted sign,
# and finds nothing of that size in the control.

# %%
planted = tables.lab_planted(lab_models, "occupations", smoke=options.smoke)
recovery = chapter.planted_occupations(lab_gammas, planted)
chapter.show_planted_occupations(recovery, planted)

# %% tags=["remove-cell"]
glue_all(chapter.planted_occupation_numbers(recovery, planted))

# %% [markdown]
# For {glue:text}`planted_model`, every one of the {glue:text}`planted_n` planted occupations ranks
# within the top {glue:text}`planted_worst_rank` of its planted gender. Compare the control's rows: the
# same occupations, trained with the same data at a 50% rate, sit near zero and rank anywhere.
#
# Read the control's intervals with care. A trained model is deterministic, so with enough examples
# even its tiny idiosyncrasies (here about a thousandth or less) get intervals that exclude zero. "Excludes
# zero" is not "biased": the question is whether the effect is *large*. The tests therefore use an
# equivalence margin — every control interval lies within ±2.5% of the planted effect — instead of
# asking for intervals that straddle zero.

# %% [markdown]
# ## Occupations shared across models (Table 3)
#
# Occupations that are in the top 10 of *every* model run here, per gender. With the paper's models
# this table lists the stereotypes all architectures agree on; with the one zoo model of the `cpu`
# profile it is simply that model's top 10.

# %%
chapter.shared_occupations_view(gammas, k=10)

# %% [markdown]
# ## A γ heatmap
#
# $\gamma(\text{female}, a)$ for the 20 occupations with the largest $\lvert\gamma\rvert$ in any model
# (red: given to the female name, blue: to the male name; $\gamma(\text{male}, a)$ is the negative).

# %% mystnb={"image": {"alt": "Heatmap of gamma(female, occupation) for the 20 occupations (rows) with the largest absolute gamma in any model, one column per model, each cell labelled with its value: red means the occupation goes to the female name, blue to the male name. The darkest cells are the strongest gender-occupation stereotypes."}}
matrix = tables.female_gamma_matrix(gammas, top=20)
plots.diverging_heatmap(matrix, title="γ(female, occupation)", cbar_label="γ(female, a)")
plt.show()

# %% [markdown]
# ## Bias intensity μ
#
# $\mu$ summarises a model in one number: for every *name*, its most biased occupation, averaged over
# names (computing it on the two gender groups instead gives a smaller number — a pitfall of the
# authors' aggregation scripts). The paper's Fig. 3 has $\mu$ = 0.082–0.423 for its SQuAD models. The
# lab models are listed as reference points: a bias planted at a 90% rate, and none.

# %%
mu = tables.intensity(frames | lab_frames, n_boot=n_boot, seed=seed)
chapter.intensity_view(mu)

# %% [markdown]
# $\mu$ is a maximum over 70 noisy means, so it is biased upward at small samples: even the control
# has $\mu > 0$. The interval is a *basic* bootstrap interval, which undoes that upward shift; when
# noise dominates (the control) it can therefore lie below the point estimate — a sign that the
# plug-in $\mu$ mostly measures noise there. Compare models at the same sample size, and read the CI.
#
# ## Summary
#
# * $\gamma(x, a)$ averages the position- and negation-cancelling comparative score $C$; with gender
#   grouping, $\gamma(\text{male}, a) = -\gamma(\text{female}, a)$.
# * On the biased lab model the planted occupations come out on top with the planted sign; in the
#   control every γ, planted occupations included, is hundreds of times smaller.
# * A confidence interval that excludes zero says an effect is resolved, not that it matters: judge
#   size against a margin.
# * $\mu$ (per name) and $\eta$ summarise a model; both have a small-sample floor above zero.
#
# ## Exercises
#
# :::{exercise}
# :label: gender-ex-1
#
# Lower `sample` until the planted occupations are no longer separated from the rest by their CIs. How
# many paper examples does the metric need at a 90% planted rate?
# :::
#
# :::{solution} gender-ex-1
# :class: dropdown
#
# The lab models are tiny, so a sweep over sample sizes takes seconds per step:
#
# ```python
# from stereoprobe import RunOptions
# from stereoprobe.book.views import unqover as chapter
# from stereoprobe.book.tables import unqover as tables
# from stereoprobe.unqover.generate import DatasetSpec
#
# planted = tables.lab_planted(["lab:qa-biased"], "occupations")
# for sample in (2000, 1000, 500, 250, 125, 60):
#     frames = tables.gather(["lab:qa-biased"], DatasetSpec("gender", sample=sample, seed=0),
#                            options=RunOptions(device="cpu", progress=False))
#     gammas = chapter.gender_gammas(frames)
#     recovery = chapter.planted_occupations(gammas, planted)
#     table = gammas["lab:qa-biased"]
#     others = table[~table["attr"].map(tables.occupation).isin(planted)]
#     print(sample, len(recovery), recovery["ci_low"].min(), others["gamma_hi"].max())
# ```
#
# It prints how many planted occupations the sample contains, the lowest lower CI bound among them and
# the highest upper bound of any other occupation (either gender):
#
# | paper examples | planted occupations in the sample | lowest planted lower bound | highest other upper bound |
# |---|---|---|---|
# | 2,000 | 6 of 6 | 0.820 | 0.018 |
# | 1,000 | 6 | 0.820 | 0.032 |
# | 500 | 6 | 0.820 | 0.055 |
# | 250 | 6 | 0.820 | 0.037 |
# | 125 | 4 (one with a single $C$ value, so no interval) | 0.820 | 0.039 |
# | 60 | 4 (one with a single value) | 0.819 | 0.016 |
#
# The intervals never stop separating. The lab model's $C$ for a planted occupation is the same for
# every pair of names and every template (γ = 0.82, intervals a few thousandths wide), so two $C$ values
# already give a tight interval far above everything else, and the planted occupations rank in the top
# 3 of their gender at every size. What runs out is *coverage*: $n$ paper examples spread over 70
# occupations, about $n/70$ each, and below about 250 examples some planted occupations are missing from
# the sample or have a single value. So for this model the answer is about 250 paper examples, set by
# the number of occupations, not by the rate. A real model's $C$ vary over names and templates (the zoo
# model's γ intervals at 8,000 examples are about ±0.013 wide), and the examples each occupation needs
# then grow like $(1.96\,\sigma / \text{margin})^2$ for a spread σ of its $C$ values and the margin by
# which it must clear the others.
# :::
#
# :::{exercise}
# :label: gender-ex-2
#
# Compute $\mu$ on the two gender groups instead of on the 140 names and compare (appendix
# {doc}`/book/differences`, UnQover: $\mu$ for gender).
# :::
#
# :::{solution} gender-ex-2
# :class: dropdown
#
# `metrics.bias_intensity` takes the grouping; in a cell after the μ table:
#
# ```python
# from stereoprobe.unqover import metrics
#
# for name, frame in (frames | lab_frames).items():
#     paired = metrics.pair_examples(frame)
#     per_name, per_group = metrics.bias_intensity(paired), metrics.bias_intensity(paired, "gender")
#     print(name, round(per_name, 3), round(per_group, 3))
# ```
#
# On 8,000 paper examples (`--set sample=8000`, four times the `cpu` profile's sample):
#
# | model | μ over the 140 names | μ over the 2 gender groups |
# |---|---|---|
# | `zoo:minilm-qa` | 0.181 | 0.024 |
# | `lab:qa-biased` | 0.824 | 0.822 |
# | `lab:qa-control` | 0.0024 | 0.0004 |
#
# The group value is always the smaller one: pooling the names of a gender averages their $C$ values
# before the maximum is taken, so what one name does and the others do not cancels out, and only what
# the names of a gender share survives. For the lab model the two agree, because the plant is shared by
# every name. For the zoo model they differ sevenfold: almost all of its per-name μ is associations of
# single names (and noise, which a maximum per name picks up), not of gender. The appendix gives the
# paper's case: BERT-large (SQuAD) has about 0.41 on the groups against its Fig. 3 bar of 0.423 per
# name, so most of its intensity is gender-aligned. Which of the two numbers a table reports therefore
# changes what it means, and Fig. 3 is the per-name one.
# :::
#
# :::{exercise}
# :label: gender-ex-3
#
# Why can the female top-3 be negative? Construct scores for which it is.
# :::
#
# :::{solution} gender-ex-3
# :class: dropdown
#
# With gender grouping every $C$ of a (female, male) pair counts for the female name's gender and its
# negative for the male's, so $\gamma(\text{male}, a) = -\gamma(\text{female}, a)$, and the female top-3
# are simply the three occupations with the largest $\gamma(\text{female}, a)$, whatever their sign. A
# model that prefers male names for *every* occupation has $\gamma(\text{female}, a) < 0$ for all $a$,
# and its "top" female occupations are the three where that preference is weakest.
#
# Scores: for every occupation $a$ and both orders let the male name get $S = 0.5 + s_a$ and the
# female name $0.5 - s_a$ on the question, and both $0.5$ on the negated question ("Who can never
# be …"). Then $B(x_f) = -s_a$, $B(x_m) = s_a$ and $C(x_f, x_m) = \tfrac12(-s_a - s_a) = -s_a$, so
# $\gamma(\text{female}, a) = -s_a$. With $s_a = 0.05$ for *nurse*, $0.06$ for *dancer*, $0.07$ for
# *secretary* and $0.10$ for every other occupation, the female top-3 is *nurse* ($-0.05$), *dancer*
# ($-0.06$), *secretary* ($-0.07$), all negative, and the male top-3 are occupations at $+0.10$. The
# paper's DistilBERT row looks like this, and so does the zoo's masked LM on 8,000 paper examples of
# the gender dataset's LM variant (`stereoprobe unqover report -m zoo:minilm-mlm --variant lm -d gender
# --sample 8000`, `compat` with the he/she rule): its female top-3 are *attendant* ($-0.025$), *cook*
# ($-0.029$) and *singer* ($-0.029$), while *journalist*, *firefighter* and *assistant professor* go to
# the male names at about $+0.10$. A general preference for one gender's names shifts every $\gamma$, and the ranking
# shows only where it is weaker; $\eta$ and the CIs tell such a shift from an association.
# :::
#
# :::{exercise}
# :label: gender-ex-4
#
# With a hub: run the paper's ten QA models (`params/gpu.yaml`) and recompute Table 3. Which
# occupations do all models share?
# :::
#
# :::{solution} gender-ex-4
# :class: dropdown
#
# ```bash
# stereoprobe book --profile gpu --only gender_occupations
# ```
#
# Needs the Hugging Face hub for the ten `tli8hf/unqover-*` checkpoints and, for 5,488,000 passes per
# model, a GPU. The "Occupations shared across models" table then lists, per gender, the occupations in
# the top 10 by $\gamma$ of every one of the ten models; compare it with the paper's Table 3. Two things
# to check when reading it: the NewsQA models read the paragraphs with the NewsQA header (set
# automatically from their names), and an intersection over ten models is small and sensitive to
# occupations ranked just below 10 in one model, so look at the γ heatmap for the near misses. The top-3
# rows of Table 2 are the other point of comparison: the paper gives, for example, BERT-large
# *secretary* to women with $\gamma = 0.41$ and $\eta = 1.00$. This book has not run it.
# :::
