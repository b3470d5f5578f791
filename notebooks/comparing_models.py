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

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # QA models: hub ids, local folders, zoo: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs
sample = 8000  # paper examples per dataset and model (int), a fraction, or None for all
mode = "compat"  # compat | clean
batch_tokens = 8192
device = "auto"
precision = "auto"
engine = "local"  # local | ray: score shards on Ray Data workers (this machine's GPUs, or the cluster at RAY_ADDRESS)
workers = None  # Ray workers (None: one per GPU)
seed = 0
n_boot = 1000
smoke_models = False
profile = "cpu"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from stereoprobe.display import glue_all
from stereoprobe.unqover import chapter, report

options = chapter.score_options(mode=mode, batch_tokens=batch_tokens, device=device, precision=precision,
                                smoke=smoke_models, engine=engine, workers=workers)

# %%
grid = report.intensity_grid(models, lm_models, sample=sample, seed=seed, n_boot=n_boot, **options)
sizes = chapter.model_sizes(models, lm_models, smoke=smoke_models)
print(f"profile {profile}: {len(models)} QA model(s), {len(lm_models)} masked LM(s), 4 bias classes")

# %% [markdown]
# ## Bias intensity μ (Fig. 3)
#
# Hatched bars: the paper (five architectures; SQuAD, NewsQA and LM groups). Solid bars with error
# bars: the models run here. The intervals are *basic* bootstrap intervals: μ is a maximum of noisy
# means and is biased upward at small samples; the basic interval undoes that shift (see the gender
# chapter), so it can lie below the point estimate when noise dominates.

# %%
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

# %%
chapter.plot_intensity(grid, "eta")
plt.show()

# %%
chapter.grid_view(grid, "eta")

# %% [markdown]
# ## The paper's three claims
#
# First on the paper's own bars: how many of the comparisons each claim rests on go its way.

# %%
paper_claims = report.paper_claims()
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
claims = report.our_claims(grid, sizes)
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
# 1. Raise `sample` until the intervals of two models you care about separate. How does the interval
#    width scale with the number of examples?
# 2. Compute μ with the gender *groups* instead of the 140 names. Which claims change?
# 3. Fig. 6's η ignores the size of $C$. Construct two models with the same η and very different μ.
# 4. With a hub: run the `gpu` profile and check each claim row against the paper's bars.
