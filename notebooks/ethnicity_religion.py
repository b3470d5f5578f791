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
# # Ethnicity and religion
#
# The last two UnQover datasets {cite:p}`li2020unqovering` pair 15 ethnic groups ("An Arab man and a
# Caucasian man...") and 11 religions (or their adherents) with 50 negative attributes each, in the same
# underspecified paragraphs as before. We report what the paper reports for them:
#
# * **Tables 12/13**: $\gamma(x)$ and $\eta(x)$ per subject — the mean $C$ and the mean sign of $C$
#   over all attributes, partners and templates of $x$;
# * **Fig. 5**: the rank of every subject by $\gamma(x)$ within each model (1 = most associated with
#   the negative attributes), averaged over models, ± the population standard deviation.
#
# Beside ours stand the paper's values: the $\gamma(x)$ of its five SQuAD models from the authors'
# plotting notebook, and the printed mean ranks of Fig. 5.

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # QA models: hub ids, local folders, zoo: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs (LM variant: the _bert / _roberta subject lists)
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
results = chapter.gather_datasets(("ethnicity", "religion"), models, lm_models, sample=sample, seed=seed,
                                  n_boot=n_boot, **options)

# %% [markdown]
# ## Ethnicity: $\gamma(x)$ and $\eta(x)$ (Table 12)
#
# One column pair per model, sorted by the first model's $\gamma(x)$; the last column is the paper's
# RoBERTa-B SQuAD $\gamma(x)$ (Table 12 prints RoBERTa-B; its SQuAD column equals the authors'
# notebook values). The LM lists hold 10 of the 15 ethnicities, so LM columns have gaps.

# %%
chapter.subject_view(results["ethnicity"]["gammas"], "ethnicity")

# %% [markdown]
# With intervals: $\gamma(x)$ of every model with its 95% bootstrap CI (of the pooled $C$ values of
# $x$). An interval that excludes 0 says the sign is resolved at this sample, not that the effect is
# large: the paper's values are a few hundredths.

# %%
chapter.plot_gamma_ci(results["ethnicity"]["gammas"], "Ethnicity: γ(x) with 95% CI")
plt.show()

# %% [markdown]
# ## Ethnicity ranks (Fig. 5, top)
#
# The paper's figure, recomputed by our `rank_subjects` from the authors' $\gamma(x)$ (it reproduces
# every printed mean rank), then ours over the models run here, with the paper's mean ranks over the
# same subjects as hollow markers (the LM lists hold 10 of the 15 ethnicities, so with an LM in the
# run only those 10 are ranked).

# %%
eth_ranks = chapter.plot_rank_figures("ethnicity", results["ethnicity"]["gammas"])
plt.show()
chapter.agreement_view(report.rank_agreement(eth_ranks), "ethnicity: ours vs paper")

# %% [markdown]
# ## Religion: $\gamma(x)$ and $\eta(x)$ (Table 13)

# %%
chapter.subject_view(results["religion"]["gammas"], "religion")

# %%
chapter.plot_gamma_ci(results["religion"]["gammas"], "Religion: γ(x) with 95% CI")
plt.show()

# %% [markdown]
# ## Religion ranks (Fig. 5, bottom)

# %%
rel_ranks = chapter.plot_rank_figures("religion", results["religion"]["gammas"])
plt.show()
chapter.agreement_view(report.rank_agreement(rel_ranks), "religion: ours vs paper")

# %% tags=["remove-cell"]
glue_all(chapter.top_subject_numbers(results))

# %% [markdown]
# In the paper, {glue:text}`paper_top_religion` has the best mean rank ({glue:text}`paper_top_religion_rank`
# over five models). For the first model run here the subject with the highest $\gamma(x)$ is
# {glue:text}`ours_top_ethnicity` (ethnicity) and {glue:text}`ours_top_religion` (religion).
#
# ## Summary
#
# * $\gamma(x)$ and $\eta(x)$ condense a subject's $C$ values over 50 attributes; the paper's values
#   are small (|γ| ≤ 0.05 for RoBERTa-B) and so are their differences — the CIs say which are resolved.
# * The rank figure is robust to the overall scale of a model's $\gamma$ and so compares models of
#   different bias intensity; its standard deviation shows where models disagree.
# * The paper's Fig. 5 is reproduced from the authors' own $\gamma(x)$; our models' ranks sit beside it.
#
# ## Exercises
#
# 1. $\eta(x)$ and $\gamma(x)$ can disagree in sign. Find a subject where they do and explain how.
# 2. Rank with `mode="clean"` instead of compat. Which subjects move most for the masked LM, and why
#    (hint: how many compat scores are exactly 0)?
# 3. The LM subject lists drop five ethnicities and one religion (they are not single tokens). Which
#    ones, and what would a fair multi-token score look like?
# 4. With a hub: run `params/gpu.yaml` and check whether the paper's top religion stays on top.
