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
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the zoo's QA model `zoo:minilm-qa` and masked LM `zoo:minilm-mlm`,
#   on 2,000 paper examples of each dataset.
# * **The `gpu` profile** runs the paper's ten QA models (`tli8hf/unqover-*`) and five masked LMs
#   (`distilbert-base-uncased` … `roberta-large`) from the Hugging Face hub, on the full datasets.
# * **Time**: `cpu` profile on 2 CPU cores: about 4 min. Full datasets on one GPU: hours (an estimate,
#   not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # QA models: hub ids, local folders, zoo: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs (LM variant: the _bert / _roberta subject lists)
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
results = chapter.gather_datasets(("ethnicity", "religion"), models, lm_models, sample=sample, mode=mode, seed=seed,
                                  n_boot=n_boot, options=options)

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

# %% mystnb={"image": {"alt": "Grouped bar chart of gamma(x) for each ethnicity (x axis, sorted by the first model's gamma), one bar per model with its 95% bootstrap confidence interval as an error bar. An interval that does not cross 0 marks a subject whose sign of bias is resolved at this sample."}}
chapter.plot_gamma_ci(results["ethnicity"]["gammas"], "Ethnicity: γ(x) with 95% CI")
plt.show()

# %% [markdown]
# ## Ethnicity ranks (Fig. 5, top)
#
# The paper's figure, recomputed by our `rank_subjects` from the authors' $\gamma(x)$ (it reproduces
# every printed mean rank), then ours over the models run here, with the paper's mean ranks over the
# same subjects as hollow markers (the LM lists hold 10 of the 15 ethnicities, so with an LM in the
# run only those 10 are ranked).

# %% mystnb={"image": {"alt": "Two panels of the mean rank of each ethnicity by gamma(x) (1 = most associated with the negative attributes) with population standard deviation error bars: on top the paper's five SQuAD models, below the models run here (filled markers) beside the paper's mean ranks over the same subjects (hollow markers). Where filled and hollow markers sit at similar heights, our ranking agrees with the paper's Fig. 5."}}
eth_ranks = chapter.plot_rank_figures("ethnicity", results["ethnicity"]["gammas"])
plt.show()
chapter.agreement_view(tables.rank_agreement(eth_ranks), "ethnicity: ours vs paper")

# %% [markdown]
# ## Religion: $\gamma(x)$ and $\eta(x)$ (Table 13)

# %%
chapter.subject_view(results["religion"]["gammas"], "religion")

# %% mystnb={"image": {"alt": "Grouped bar chart of gamma(x) for each religion (x axis, sorted by the first model's gamma), one bar per model with its 95% bootstrap confidence interval as an error bar. An interval that does not cross 0 marks a religion whose sign of bias is resolved at this sample."}}
chapter.plot_gamma_ci(results["religion"]["gammas"], "Religion: γ(x) with 95% CI")
plt.show()

# %% [markdown]
# ## Religion ranks (Fig. 5, bottom)

# %% mystnb={"image": {"alt": "Two panels of the mean rank of each religion by gamma(x) (1 = most associated with the negative attributes) with population standard deviation error bars: on top the paper's five SQuAD models, below the models run here (filled markers) beside the paper's mean ranks over the same religions (hollow markers). Where filled and hollow markers sit at similar heights, our ranking agrees with the paper's Fig. 5."}}
rel_ranks = chapter.plot_rank_figures("religion", results["religion"]["gammas"])
plt.show()
chapter.agreement_view(tables.rank_agreement(rel_ranks), "religion: ours vs paper")

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
# :::{exercise}
# :label: ethnicity-ex-1
#
# $\eta(x)$ and $\gamma(x)$ can disagree in sign. Find a subject where they do and explain how.
# :::
#
# :::{solution} ethnicity-ex-1
# :class: dropdown
#
# In a cell after Table 13:
#
# ```python
# import numpy as np
#
# for dataset in ("ethnicity", "religion"):
#     for name, g in results[dataset]["gammas"].items():
#         flipped = g[np.sign(g["gamma"]) != np.sign(g["eta"])]
#         print(dataset, name, flipped[["subject", "gamma", "eta", "n"]].round(4).to_dict("records"))
# ```
#
# On 8,000 paper examples per dataset (`--set sample=8000`), `zoo:minilm-qa` has three such
# ethnicities: *White* ($\gamma = +0.0024$, $\eta = -0.016$), *Latino* (+0.0010, −0.036) and
# *Hispanic* (+0.0007, −0.008), and one religion,
# *Buddhist* (−0.0033, +0.071); `zoo:minilm-mlm` has four ethnicities (*African*, *Arab*, *Latino*,
# *Caucasian*, each with a slightly negative γ and a positive η) and two religions (*Catholic* and
# *Mormon*, the other way round). Take *White* for the QA model: of its 1,100 $C$ values, 541 are
# positive with mean +0.0259 and 559 negative with mean −0.0203. It loses a little more often than it
# wins, $\eta = (541 - 559)/1100 = -0.016$, but wins by more than it loses,
# $\gamma = (541 \cdot 0.0259 - 559 \cdot 0.0203)/1100 \approx +0.0024$.
#
# How: $\gamma(x)$ is the mean of the $C$ values of $x$ and $\eta(x)$ the mean of their signs. Many
# small wins and a few large losses give $\eta > 0$ and $\gamma < 0$: with 60% of the values at $+0.01$
# and 40% at $-0.05$, $\eta = 0.6 - 0.4 = 0.2$ and $\gamma = 0.006 - 0.020 = -0.014$. Exact zeros (a
# masked LM in `compat` mode scores a subject outside its top 10 as 0, so many $C$ are 0) count in $n$
# but add nothing to either mean, which pulls both toward 0 and makes a sign flip between them easier.
# :::
#
# :::{exercise}
# :label: ethnicity-ex-2
#
# Rank with `mode="clean"` instead of compat. Which subjects move most for the masked LM, and why
# (hint: how many compat scores are exactly 0)?
# :::
#
# :::{solution} ethnicity-ex-2
# :class: dropdown
#
# ```bash
# stereoprobe book --profile cpu --only ethnicity_religion --set mode=clean --build-dir _build-clean
# ```
#
# For `zoo:minilm-mlm` on 8,000 paper examples per dataset (`--set sample=8000`, in both modes),
# almost nothing moves. In `compat` 49% of its $S$ values are exactly 0 for ethnicity and 62% for
# religion (19% and 31% of the $C$ values), none in `clean`. Yet the ethnicity ranking is the same in both modes, subject for subject (Black first with
# $\gamma$ = 0.0128 → 0.0127, Jewish last with −0.0065 → −0.0066), and the religion ranking changes in
# one place: Protestant and Muslim, tied at 0.0023–0.0024, swap the first two ranks (Spearman's ρ = 0.99).
# The hint explains why: a score of exactly 0 in `compat` means the subject was not among the LM's ten
# most probable words, and then its own probability, which `clean` uses, is tiny as well, so it adds
# almost nothing to the $C$ values; $\gamma(x)$ rests on the examples where a subject is among the ten
# best words, and those are scored alike in both modes. Subjects move when their $\gamma(x)$ were
# nearly tied, as the two at the top of the religion ranking. What does change is η: zeros (sign 0)
# become small signed differences, so η grows (Protestant 0.15 → 0.25, Atheist 0.17 → 0.27) and can
# flip sign (Hindu +0.016 → −0.045). Read the masked LMs' η in `compat` with this in mind.
# :::
#
# :::{exercise}
# :label: ethnicity-ex-3
#
# The LM subject lists drop five ethnicities (and the RoBERTa list one religion) because they are not
# single tokens. Which ones, and what would a fair multi-token score look like?
# :::
#
# :::{solution} ethnicity-ex-3
# :class: dropdown
#
# The lists are `data/unqover/word_lists/nouns/subjects/ethnicity_bert` and `ethnicity_roberta` (10 of
# the 15 ethnicities) and `religion_bert` / `religion_roberta`. Both LM lists leave out
# *African-American*, *Alaskan*, *Native American*, *South-American* and *Middle-Eastern*; the BERT
# religion list keeps all 11 religions and the RoBERTa list leaves out *Atheist*. With the zoo's
# WordPiece tokenizer (the bert-base-uncased vocabulary) the five ethnicities split into
# `african - american`, `alaska ##n`, `native american`, `south - american` and `middle - eastern`,
# while `atheist` is one piece:
#
# ```python
# from stereoprobe.models import load_tokenizer
#
# tok = load_tokenizer("zoo:minilm-mlm")
# {w: tok.tokenize(w.lower()) for w in ["African-American", "Alaskan", "Native American", "Atheist"]}
# ```
#
# A masked LM predicts one token per mask, so the probe can only compare subjects of one token. A fair
# multi-token score must not favour short names: the probability of a $k$-piece subject is a product of
# $k$ factors below 1, so it is smaller for that reason alone. Two sound options: put $k$ masks in the
# slot and score the subject by the chain rule, filling the pieces one at a time
# ($P = \prod_i p(w_i \mid \text{context}, w_{<i})$), then compare the length-normalised log
# probability $\frac1k \log P$; or compare each subject's probability in the question's context with
# its probability in a neutral context of the same form (a ratio of two probabilities of the same
# $k$-piece string, so the length cancels). Either way every subject must be scored in the same units;
# UnQover's $C$ then applies unchanged, since it only compares the two subjects' scores across orders
# and polarities.
# :::
#
# :::{exercise}
# :label: ethnicity-ex-4
#
# With a hub: run `params/gpu.yaml` and check whether the paper's top religion stays on top.
# :::
#
# :::{solution} ethnicity-ex-4
# :class: dropdown
#
# ```bash
# stereoprobe book --profile gpu --only ethnicity_religion
# ```
#
# Needs the Hugging Face hub (ten QA models, five masked LMs) and a GPU. The paper's top religion is
# *Muslim*, with the best mean rank over its five SQuAD models: 1.8 ± 0.40 (ranks 2, 2, 2, 2, 1), just
# ahead of *Atheist* (2.2 ± 2.40, ranked first by four models and seventh by RoBERTa-large). With the
# `gpu` profile the chapter ranks over all fifteen models, so read "stays on top" on the same five SQuAD
# models first (a cell after the religion ranks):
#
# ```python
# squad = {n: g for n, g in results["religion"]["gammas"].items() if n.endswith("-squad")}
# tables.ranks_beside_paper(tables.gamma_matrix(squad), "religion").head(3)
# ```
#
# and then over all fifteen, where the NewsQA models and the masked LMs can reorder the top. The
# RoBERTa LM list has no *Atheist*, so with those LMs in the run only ten religions are ranked. This
# book has not run it.
# :::
