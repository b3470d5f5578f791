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

# %% tags=["parameters"]
models = ["zoo:minilm-qa"]  # hub ids, local folders, zoo: or lab: names
lm_models = ["zoo:minilm-mlm"]  # masked LMs for the LM rows (BERT family: lm-bert lists; names with "roberta": lm-roberta)
sample = 8000  # paper examples of the gender dataset (int), a fraction, or None for all 1,372,000
mode = "compat"  # compat: the authors' code bit for bit; clean: padding masked, standard pair encoding
batch_tokens = 8192  # token budget per batch
device = "auto"  # auto | cpu | cuda
precision = "auto"  # auto | fp32 | bf16 | fp16
engine = "local"  # local | ray: score shards on Ray Data workers (this machine's GPUs, or the cluster at RAY_ADDRESS)
workers = None  # Ray workers (None: one per GPU)
seed = 0  # sampling and bootstrap seed
n_boot = 1000  # bootstrap resamples (not used in this chapter's point estimates)
smoke_models = False  # tests: tiny lab models (when `models` names any)
profile = "cpu"

# %% tags=["hide-input"]
from stereoprobe.display import glue_all
from stereoprobe.unqover import chapter, metrics, report
from stereoprobe.unqover.generate import DatasetSpec, count

spec = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
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
display(fig2[["subj1", "subj2", "s1_pos", "s2_pos", "s1_neg", "s2_neg"]])
display(bias)

# %% [markdown]
# Here $C$(Gerald, Jennifer) = {glue:text}`fig2_C:.4f`: Gerald is the (slightly) preferred hunter once
# position and negation are cancelled. The paper's text prints $C = 0.31$, which drops the ½ of its
# own Eq. 6; the authors' code keeps it, and so do we. The example's reasoning errors are
# $\delta$ = {glue:text}`fig2_delta:.4f` and $\epsilon$ = {glue:text}`fig2_eps:.4f`: a model that
# reads the question would not move a score by 0.26 when the names swap.

# %% [markdown]
# ## Scoring the gender–occupation dataset
#
# Each model scores {glue:text}`n_examples` paper examples ({glue:text}`n_passes` forward passes;
# the full dataset has 1,372,000 and 5,488,000). Both orders and both polarities of every sampled
# example are kept together, so every metric below is computed on complete quadruples. Scores are
# stored once per (model, dataset, mode): rerunning this notebook reads them back.

# %%
frames = report.gather(models, spec, mode=mode, batch_tokens=batch_tokens, device=device, precision=precision,
                       smoke=smoke_models, engine=engine, workers=workers)
errors = report.reasoning_errors(frames)
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
lm_frames = report.gather_lm(lm_models, spec, mode=mode, batch_tokens=batch_tokens, device=device,
                             precision=precision, smoke=smoke_models, engine=engine, workers=workers)
lm_errors = report.reasoning_errors(lm_frames)
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
# (Exercise 5).

# %%
report.table5_beside_paper(errors, lm_errors).style.format("{:.3f}")

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
# 1. Rerun with `mode="clean"` (padding masked, standard pair encoding). Which of $\delta$, $\epsilon$
#    and avg S move, and by how much? Why can padding change a compat score at all?
# 2. Compute $\delta$ separately for the four templates (`tid`). Is the positional error a property of
#    the model or of particular sentences?
# 3. Show from the definitions that $C(x_1, x_2) = 0$ whenever $S$ depends neither on the slot nor on
#    the polarity, however large $\delta$ or $\epsilon$ are.
# 4. With a hub, set `models` to the paper's SQuAD models (`params/gpu.yaml`) and compare with the
#    paper's Table 5. Which numbers reproduce to two decimals?
# 5. Rerun the LM rows with `mode="clean"` (the name's own probability, no he/she rule, no top-10
#    cut-off). How much of the compat avg S was the pronoun's?
