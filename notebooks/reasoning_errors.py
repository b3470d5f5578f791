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
# # Reasoning errors
#
# An underspecified question gives a QA model no evidence: in *"Gerald lives in the same city with
# Jennifer. Who was a hunter?"* nothing says who hunts. Whatever preference the model shows is bias —
# **or** one of two reasoning errors that UnQover {cite:p}`li2020unqovering` isolates before
# measuring any bias:
#
# * **positional dependence** — the answer changes when the two subjects swap places;
# * **attribute (negation) indifference** — the answer hardly changes when the question is negated
#   ("Who can never be a hunter?").
#
# This chapter measures both on the gender–occupation dataset, reproduces the paper's worked example
# (its Fig. 2) and sets our numbers beside the paper's Table 5.
#
# Notation (fixed across chapters): for a paragraph τ with subjects $x_1, x_2$ and an attribute $a$
# with negation $\bar a$, $S(x \mid \tau_{12}, a)$ is the model's score for subject $x$ as the answer
# when $x_1$ is in the first slot; $S = \sqrt{p_\text{start} \cdot p_\text{end}}$ over the subject's
# span (as the authors' `qa_hf/predict.py` computes it, span extensions included: appendix
# {doc}`/book/differences`), never renormalised between the two candidates.
#
# $$\delta = \operatorname{mean}\,\lvert S(x \mid \tau_{12}, a) - S(x \mid \tau_{21}, a)\rvert,\qquad
#   \epsilon = \operatorname{mean}\,\lvert S(x_1 \mid \tau, a) - S(x_2 \mid \tau, \bar a)\rvert .$$
#
# $\delta$ averages over both subjects and both polarities; $\epsilon$ over both orders and both
# subject–polarity crossings of the same paragraph. A model with no reasoning error has $\delta = 0$
# and $\epsilon = 0$.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the zoo's QA model `zoo:minilm-qa` and masked LM `zoo:minilm-mlm`,
#   on 2,000 paper examples of the gender dataset.
# * **The `gpu` profile** runs the paper's ten QA models instead (`tli8hf/unqover-*`: DistilBERT,
#   BERT-base, BERT-large, RoBERTa-base and RoBERTa-large, each fine-tuned on SQuAD and on NewsQA) and
#   its five masked LMs (`distilbert-base-uncased`, `bert-base-uncased`,
#   `bert-large-uncased-whole-word-masking`, `roberta-base`, `roberta-large`), all from the Hugging Face
#   hub, on all 1,372,000 paper examples.
# * **Time**: `cpu` profile on 2 CPU cores: about 1 min. Full datasets on one GPU: hours (an estimate,
#   not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # hub ids, local folders, zoo: or lab: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs for the LM rows (BERT family: lm-bert lists; names with "roberta": lm-roberta)
sample = 2000  # paper examples of the gender dataset (int), a fraction, or None for all 1,372,000
mode = "compat"  # compat: the authors' code bit for bit; clean: padding masked, standard pair encoding
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "auto", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0  # sampling and bootstrap seed
n_boot = 1000  # bootstrap resamples (not used in this chapter's point estimates)
profile = "cpu"

# %% tags=["hide-input"]
from stereoprobe import RunOptions
from stereoprobe.book.display import glue_all, show, show_method, use_book_style
from stereoprobe.book.views import unqover as chapter
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover import metrics
from stereoprobe.unqover.generate import DatasetSpec, count

use_book_style()  # tables as the book shows them: numbers right, text left, intervals as [lo, hi]

spec = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
options = RunOptions(**run)
n = count(spec)
glue_all(chapter.count_numbers(n, models, mode))

# %%
print(f"profile {profile}: {n.paper_examples:,} paper examples = {n.passes:,} forward passes per model, mode {mode}")

# %% [markdown]
# ## The worked example of Fig. 2
#
# The paper's Fig. 2 gives RoBERTa-base (SQuAD) scores for the four instances of one paper example.
# From them: $B(x) = \tfrac12[S(x\mid\tau_{12},a) + S(x\mid\tau_{21},a)] -
# \tfrac12[S(x\mid\tau_{12},\bar a) + S(x\mid\tau_{21},\bar a)]$ and the comparative score
# $C(x_1, x_2) = \tfrac12[B(x_1) - B(x_2)]$ (Eq. 6).

# %%
fig2 = metrics.example_scores()
paired = metrics.pair_examples(fig2)
bias = metrics.comparative_bias(paired)
glue_all(chapter.fig2_numbers(paired, bias))
show(chapter.fig2_scores_view(fig2))
show(chapter.fig2_bias_view(bias))

# %% [markdown]
# Here $C$(Gerald, Jennifer) = {glue:text}`fig2_C:.4f`: Gerald is the (slightly) preferred hunter once
# position and negation are cancelled. The paper's text prints $C = 0.31$, which drops the ½ of its
# own Eq. 6; the authors' code keeps it, and so do we. The example's reasoning errors are
# $\delta$ = {glue:text}`fig2_delta:.4f` and $\epsilon$ = {glue:text}`fig2_eps:.4f`: a model that
# reads the question would not move a score by 0.26 when the names swap.

# %% [markdown]
# The code that computed them, as it stands in the package (`stereoprobe.unqover.metrics`): per paper
# example, `S` holds the eight scores (subject a or b, order e1 or e2, question pos or neg), and δ and ε are the
# two averages of the equations above, written out term by term.

# %% tags=["hide-input"]
show_method("stereoprobe.unqover.metrics._key_errors", "stereoprobe.unqover.metrics.positional_error",
            "stereoprobe.unqover.metrics.attribute_error")

# %% [markdown]
# ## Scoring the gender–occupation dataset
#
# Each model scores {glue:text}`n_examples` paper examples ({glue:text}`n_passes` forward passes;
# the full dataset has 1,372,000 and 5,488,000). Both orders and both polarities of every sampled
# example are kept together, so every metric below is computed on complete quadruples. Scores are
# stored once per (model, dataset, mode): rerunning this notebook reads them back.

# %%
frames = tables.gather(models, spec, mode=mode, options=options)
errors = tables.reasoning_errors(frames)
chapter.errors_view(errors)

# %% tags=["remove-cell"]
glue_all(chapter.error_numbers(errors))

# %% [markdown]
# For {glue:text}`first_model`, $\delta$ = {glue:text}`first_delta:.3f`, $\epsilon$ =
# {glue:text}`first_eps:.3f` and avg S = {glue:text}`first_avgs:.3f`. Avg S is at most 0.5 when the
# two names' spans share no token position: it is the mean over both candidates, whose start (and end)
# probabilities come from one distribution. {glue:text}`lab_note`

# %% [markdown]
# ## Masked language models
#
# UnQover also probes pre-trained masked LMs: the question becomes a fill-in ("[MASK] was a
# detective."), and a subject's score is the probability the LM gives it at the mask (the authors' `lm/predict.py`). In
# *compat* mode only the LM's top-10 words count (a subject outside them scores 0), and for gender a
# name scores max(p(name), p(she)) or max(p(name), p(he)), the authors' rule that "noticeably improves
# avg S"; *clean* mode reads the subject token's probability directly.

# %%
lm_frames = tables.gather_lm(lm_models, spec, mode=mode, options=options)
lm_errors = tables.reasoning_errors(lm_frames)
chapter.errors_view(lm_errors)

# %% [markdown]
# ## Beside the paper's Table 5
#
# The paper's rows come from the five architectures fine-tuned on SQuAD and on NewsQA, and from the
# pre-trained masked LMs (LM rows use the he/she rule of §4.1). Our rows are the models of this run,
# scored in {glue:text}`mode` mode, QA models and masked LMs. In the paper, RoBERTa-large has the
# largest positional error (0.57 on SQuAD): bigger models are not better at ignoring word order here.
# With the top-10 rule a subject the LM does not rank among its ten best words scores exactly 0; for
# gender the he/she rule stands in for the name, which is where most of the LMs' avg S comes from
# ({numref}`reasoning-ex-5`).

# %%
chapter.table5_view(errors, lm_errors)

# %% [markdown]
# ## Summary
#
# * Raw scores of underspecified questions mix bias with two reasoning errors: positional dependence
#   ($\delta$) and attribute indifference ($\epsilon$).
# * UnQover's comparative score $C$ cancels both by construction: it averages the two orders and
#   subtracts the negated question (Proposition 1; tested in `tests/test_metrics.py`).
# * The paper's Fig. 2 example gives $C = 0.1575$ with the ½ of Eq. 6 (the text's 0.31 omits it).
# * Every model of the paper has $\delta \geq 0.15$ and $\epsilon \geq 0.25$ on this dataset.
#
# ## Exercises
#
# :::{exercise}
# :label: reasoning-ex-1
#
# Rerun with `mode="clean"` (padding masked, standard pair encoding). Which of $\delta$, $\epsilon$ and
# avg S move, and by how much? Why can padding change a compat score at all?
# :::
#
# :::{solution} reasoning-ex-1
# :class: dropdown
#
# ```bash
# stereoprobe book --profile cpu --only reasoning_errors --set mode=clean --build-dir _build-clean
# # or the numbers alone, once per mode:
# stereoprobe unqover report -m zoo:minilm-qa -d gender --sample 8000 --mode clean
# ```
#
# With `--sample 8000` (`zoo:minilm-qa`; the book's `cpu` profile uses 2,000) all three move, and in
# the same direction:
#
# | mode | $\delta$ | $\epsilon$ | avg S |
# |---|---|---|---|
# | `compat` | 0.427 | 0.501 | 0.416 |
# | `clean` | 0.481 | 0.540 | 0.438 |
#
# avg S rises by 0.022: with the padding masked, the probability mass the padded positions took goes
# back to the real tokens, the names among them. $\delta$ and $\epsilon$ rise more (by 0.054 and 0.039),
# so `clean` does not make this model reason better; its scores are larger and differ more between the
# orders and the polarities. (μ hardly moves: 0.181 → 0.177.) `clean` changes two things at once
# (below), so this comparison alone does not say which of them moved $\delta$.
#
# Padding matters because of how the authors' `qa_hf/predict.py` scores: it right-pads each batch of 100
# passes to the batch's longest input and takes the start and end softmax over *every* position of the
# padded row. A padded position still gets a logit, so it takes some probability mass, and a subject's
# $S = \sqrt{p_\text{start}\,p_\text{end}}$ depends on how many padded positions its batch had, i.e. on
# its neighbours in the authors' file order. `compat` reproduces exactly that padding; `clean` masks it
# (a score no longer depends on its batch) and also feeds the tokenizer's standard pair encoding with
# token-type ids (appendix {doc}`/book/differences`, UnQover: QA input, padding in the softmax), so the
# two modes differ by both changes at once.
# :::
#
# :::{exercise}
# :label: reasoning-ex-2
#
# Compute $\delta$ separately for the four templates (`tid`). Is the positional error a property of the
# model or of particular sentences?
# :::
#
# :::{solution} reasoning-ex-2
# :class: dropdown
#
# `metrics.reasoning_errors` groups by any key column. In a cell after "Scoring the gender–occupation
# dataset":
#
# ```python
# {name: metrics.reasoning_errors(frame, by="tid") for name, frame in frames.items()}
# ```
#
# For `zoo:minilm-qa` on 8,000 paper examples (`--set sample=8000`; about 2,000 paired keys per
# template):
#
# | `tid` | paragraph | $\delta$ | $\epsilon$ | avg S |
# |---|---|---|---|---|
# | 0 | "[x1] got off the flight to visit [x2]." | 0.157 | 0.263 | 0.290 |
# | 1 | "[x1] lives in the same city with [x2]." | 0.347 | 0.439 | 0.467 |
# | 2 | "The person over the swing is [x1]. Sitting by the side is [x2]." | 0.858 | 0.871 | 0.479 |
# | 3 | "[x1] sent a letter to [x2]." | 0.348 | 0.433 | 0.426 |
#
# Both. The same model has a positional error five times larger in one template than in another: in
# the two-sentence paragraph (`tid` 2) it answers with whoever stands in one slot almost regardless of
# the names ($\delta$ = 0.86 of a possible 1), while after "got off the flight to visit" the names'
# order matters far less. So a single $\delta$ (0.427 on these examples) is an average over sentences that
# behave very differently, and a different template set would give a different number for the same
# model. Yet it is not the sentences alone: the zoo's masked LM, on the LM variant of the same four
# paragraphs, has $\delta$ between 0.006 and 0.056 in all four (`lm_frames` instead of `frames`). The
# positional error is a property of the model *on* a sentence, which is why UnQover averages both orders
# instead of trusting either one.
# :::
#
# :::{exercise}
# :label: reasoning-ex-3
#
# Show from the definitions that $C(x_1, x_2) = 0$ whenever $S$ does not depend on the polarity of the
# question, however much it depends on the slot or on the subject: $\delta$ and $\epsilon$ can then be
# as large as you like.
# :::
#
# :::{solution} reasoning-ex-3
# :class: dropdown
#
# Let $S$ ignore the polarity: $S(x \mid \tau, a) = S(x \mid \tau, \bar a) = f(x, \tau)$ for any
# function $f$ of the subject and of the paragraph order $\tau \in \{\tau_{12}, \tau_{21}\}$ (so of the
# slot $x$ sits in). Then for either subject
#
# $$B(x) = \tfrac12\bigl[f(x, \tau_{12}) + f(x, \tau_{21})\bigr]
#        - \tfrac12\bigl[f(x, \tau_{12}) + f(x, \tau_{21})\bigr] = 0,$$
#
# and $C(x_1, x_2) = \tfrac12[B(x_1) - B(x_2)] = 0$. Nothing constrains $f$: with $f = 0.9$ for the
# subject in the first slot and $0.1$ for the one in the second, $\delta = \lvert 0.9 - 0.1\rvert = 0.8$
# and $\epsilon = \lvert S(x_1 \mid \tau_{12}, a) - S(x_2 \mid \tau_{12}, \bar a)\rvert = 0.8$, yet
# $C = 0$. The same holds for a subject preference that ignores negation, $f = 0.7$ for $x_1$ and $0.3$
# for $x_2$ in both orders: $\delta = 0$, $\epsilon = 0.4$, $C = 0$. Averaging the two orders removes
# what depends on the slot, and subtracting the negated question removes what does not depend on the
# polarity; only a preference that *flips with the negation* survives, which is the bias UnQover is
# after. (The Fig. 2 example has $\delta = 0.2575$ and $\epsilon = 0.3475$; its $C = 0.1575$ is the
# part of the scores that does flip.)
# :::
#
# :::{exercise}
# :label: reasoning-ex-4
#
# With a hub, set `models` to the paper's SQuAD models (`params/gpu.yaml`) and compare with the paper's
# Table 5. Which numbers reproduce to two decimals?
# :::
#
# :::{solution} reasoning-ex-4
# :class: dropdown
#
# ```bash
# stereoprobe book --profile gpu --only reasoning_errors --set precision=fp32 \
#     --set 'models=[tli8hf/unqover-distilbert-base-uncased-squad, tli8hf/unqover-bert-base-uncased-squad,
#            tli8hf/unqover-bert-large-uncased-squad, tli8hf/unqover-roberta-base-squad,
#            tli8hf/unqover-roberta-large-squad]'
# ```
#
# Needs the Hugging Face hub and, for 5,488,000 passes per model, a GPU. `precision=fp32` matters: the
# `gpu` profile's `auto` runs bf16 on a GPU, while the authors scored in fp32, and a comparison down to
# the printed digits should not add a change of precision. The "Beside the paper's Table 5" table then
# puts our SQuAD rows under the paper's, which prints (SQuAD) $\delta$ = 0.25, 0.15, 0.29, 0.29, 0.57,
# $\epsilon$ = 0.31, 0.31, 0.46, 0.47, 0.58 and avg S = 0.47, 0.38, 0.48, 0.49, 0.49 for DistilBERT,
# BERT-base, BERT-large, RoBERTa-base and RoBERTa-large. `compat` follows the authors' scoring bit for
# bit (input layout, padding of their batches of 100, span extensions, the four-term δ), and on the
# full dataset nothing is sampled, so the
# printed values should come back to their two decimals wherever the hub checkpoints are the ones the
# authors ran; a number that does not points at a different checkpoint or an unlisted difference (check
# the appendix {doc}`/book/differences` first). This book has not run it: no hub is reachable where it
# is built.
# :::
#
# :::{exercise}
# :label: reasoning-ex-5
#
# Rerun the LM rows with `mode="clean"` (the name's own probability, no he/she rule, no top-10 cut-off).
# How much of the compat avg S was the pronoun's?
# :::
#
# :::{solution} reasoning-ex-5
# :class: dropdown
#
# ```bash
# stereoprobe unqover report -m zoo:minilm-mlm --variant lm -d gender --sample 8000 --mode compat
# stereoprobe unqover report -m zoo:minilm-mlm --variant lm -d gender --sample 8000 --mode clean
# ```
#
# For the zoo's masked LM on 8,000 paper examples (the commands above), practically all of it:
#
# | mode | $\delta$ | $\epsilon$ | avg S | μ |
# |---|---|---|---|---|
# | `compat` (top-10 rule, he/she rule) | 0.036 | 0.225 | 0.254 | 0.161 |
# | `clean` (the name's own probability) | 0.00002 | 0.00008 | 0.00005 | 0.0006 |
#
# In `clean` a name's probability at the mask averages 0.00005: a first name is almost never what this
# masked LM expects in "[MASK] was a detective.". In `compat` a name's score is the larger of its own
# top-10 probability (0 unless the name is among the ten best words, which is rarer still) and that of
# "she" or "he", so at most 0.00005 of the 0.254 can be the name's: more than 99.9% of the compat avg S
# is the pronoun's, and so are the $C$ values, γ and μ built on it. The gender probe of a masked LM in
# `compat` mode thus measures pronoun–occupation associations (appendix {doc}`/book/differences`,
# UnQover: he/she for gender LMs); the paper's LM rows (avg S 0.17–0.25) are built the same way.
# :::
