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

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # hub ids, local folders, zoo: or lab: names
lab_models = ["lab:qa-biased", "lab:qa-control"]  # the planted-bias section: a biased model and its control
sample = 8000  # paper examples of the gender dataset (int), a fraction, or None for all 1,372,000
mode = "compat"  # compat | clean
batch_tokens = 8192
device = "auto"
precision = "auto"
engine = "local"  # local | ray: score shards on Ray Data workers (this machine's GPUs, or the cluster at RAY_ADDRESS)
workers = None  # Ray workers (None: one per GPU)
seed = 0
n_boot = 1000  # bootstrap resamples for the CIs
smoke_models = False
profile = "cpu"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from stereoprobe import plots
from stereoprobe.display import glue_all
from stereoprobe.unqover import chapter, report
from stereoprobe.unqover.generate import DatasetSpec, count

spec = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
n = count(spec)
glue_all({"n_examples": f"{n.paper_examples:,}"})
options = chapter.score_options(mode=mode, batch_tokens=batch_tokens, device=device, precision=precision,
                                smoke=smoke_models, engine=engine, workers=workers)

# %%
frames = report.gather(models, spec, **options)
gammas = chapter.gender_gammas(frames, n_boot=n_boot, seed=seed)
lab_frames = report.gather(lab_models, spec, **options)
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
planted = report.lab_planted(lab_models, "occupations", smoke=smoke_models)
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
# even its tiny idiosyncrasies (here a few thousandths) get intervals that exclude zero. "Excludes
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
report.shared_occupations(gammas, k=10).style.hide(axis="index")

# %% [markdown]
# ## A γ heatmap
#
# $\gamma(\text{female}, a)$ for the 20 occupations with the largest $\lvert\gamma\rvert$ in any model
# (red: given to the female name, blue: to the male name; $\gamma(\text{male}, a)$ is the negative).

# %%
matrix = report.female_gamma_matrix(gammas, top=20)
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
mu = report.intensity(frames | lab_frames, n_boot=n_boot, seed=seed)
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
# 1. Lower `sample` until the planted occupations are no longer separated from the rest by their
#    CIs. How many paper examples does the metric need at a 90% planted rate?
# 2. Compute $\mu$ on the two gender groups instead of on the 140 names and compare
#    (appendix {doc}`/book/differences`, UnQover: $\mu$ for gender).
# 3. Why can the female top-3 be negative? Construct scores for which it is.
# 4. With a hub: run the paper's ten QA models (`params/gpu.yaml`) and recompute Table 3. Which
#    occupations do all models share?
