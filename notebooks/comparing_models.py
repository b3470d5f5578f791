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

# %%
import matplotlib.pyplot as plt
import pandas as pd
from myst_nb import glue

from stereoprobe import plots
from stereoprobe.models import parameter_count
from stereoprobe.unqover import report

grid = report.intensity_grid(models, lm_models, sample=sample, mode=mode, seed=seed, n_boot=n_boot,
                             batch_tokens=batch_tokens, device=device, precision=precision, smoke=smoke_models,
                             engine=engine, workers=workers)
sizes = {m: parameter_count(m, smoke=smoke_models) for m in dict.fromkeys(models + lm_models)}
print(f"profile {profile}: {len(models)} QA model(s), {len(lm_models)} masked LM(s), 4 bias classes")

# %% [markdown]
# ## Bias intensity μ (Fig. 3)
#
# Hatched bars: the paper (five architectures; SQuAD, NewsQA and LM groups). Solid bars with error
# bars: the models run here. The intervals are *basic* bootstrap intervals: μ is a maximum of noisy
# means and is biased upward at small samples; the basic interval undoes that shift (see the gender
# chapter), so it can lie below the point estimate when noise dominates.

# %%
paper = report.paper_fig3_fig6()
plots.intensity_panels(grid, paper[paper["metric"] == "mu"], metric="mu", datasets=report.BIAS_CLASSES,
                       ylabel="μ")
plt.show()

# %%
(grid[["dataset", "setting", "model", "mu", "mu_lo", "mu_hi", "subjects"]].style
 .format({"mu": "{:.3f}", "mu_lo": "{:.3f}", "mu_hi": "{:.3f}"}).hide(axis="index"))

# %% [markdown]
# ## Count-based η (Fig. 6)
#
# The paper reports η ≈ 0.3–0.9 and notes (Appendix A.3) that it is "close to 0.5 for all datasets
# and models": counting wins discards how large each $C$ is, so η separates models less than μ.
# In compat mode a masked LM's $S$ is 0 whenever a subject is outside its top 10, which makes many
# $C$ exactly 0; sign(0) = 0 lowers η.

# %%
plots.intensity_panels(grid, paper[paper["metric"] == "eta"], metric="eta", datasets=report.BIAS_CLASSES,
                       ylabel="η")
plt.show()

# %%
(grid[["dataset", "setting", "model", "eta", "eta_lo", "eta_hi"]].style
 .format({"eta": "{:.3f}", "eta_lo": "{:.3f}", "eta_hi": "{:.3f}"}).hide(axis="index"))

# %% [markdown]
# ## The paper's three claims
#
# First on the paper's own bars: how many of the comparisons each claim rests on go its way.

# %%
paper_claims = report.paper_claims()
paper_claims.style.hide(axis="index")

# %% tags=["remove-cell"]
held = paper_claims.set_index("claim")
for key, claim in (("larger", "larger QA models are more biased"),
                   ("newsqa", "NewsQA models are less biased than SQuAD models")):
    glue(f"paper_{key}_holds", int(held.loc[claim, "holds"]), display=False)
    glue(f"paper_{key}_of", int(held.loc[claim, "of"]), display=False)

# %% [markdown]
# Then on the models run here. A comparison *holds* when the two 95% intervals of μ are disjoint in
# the claimed direction; overlapping intervals are *unresolved*, not a refutation. Model sizes are
# counted from the weight files:

# %%
pd.Series(sizes, name="parameters").map("{:,}".format).to_frame()

# %%
claims = report.our_claims(grid, sizes)
claims.style.hide(axis="index")

# %% tags=["remove-cell"]
testable = int((claims["comparisons"] > 0).sum())
glue("testable_claims", testable, display=False)

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
