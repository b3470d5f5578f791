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
# # Measuring and mitigating biased inferences
#
# An NLI model reads a premise and a hypothesis and says whether the first *entails*, *contradicts*
# or is *neutral* toward the second. Dev et al. {cite:p}`dev2020measuring` probe it with pairs that
# differ in one word and should always be neutral:
#
# > premise "An accountant ate a bagel ." — hypothesis "A woman ate a bagel ."
#
# Nothing about an accountant says whether that person is a woman. A model that answers *entailment*
# or *contradiction* with confidence has filled the gap with a stereotype. Three probes fill the same
# 1,968 verb–object templates with different subjects:
#
# * **gender** — 164 occupations ⇒ 6 gendered words (man, gentleman, guy, woman, lady, girl);
# * **nationality** — 25 polarity adjectives ("A rude person …") ⇒ 32 demonyms ("An Iraqi person …");
# * **religion** — the same adjectives ⇒ 17 adherents ("A Muslim person …").
#
# Four measures say how neutral a model is over M pairs with probabilities $(e_i, n_i, c_i)$, each
# ideally 1: **Net Neutral** NN $=\frac1M\sum n_i$; **Fraction Neutral** FN, the share of pairs whose
# top label is neutral; and **T:τ**, the share with $n_i > τ$ for τ = 0.5 and 0.7.
#
# The paper then *mitigates*: it removes a bias direction (he − she; a demonym or adherent subspace)
# from every word vector of a static-embedding NLI model and retrains it, and it does the same for the
# word-piece embeddings of BERT, at test time only or during fine-tuning too. This chapter does all
# of it on models built here: the zoo's MiniLM NLI model (contextual) and the paper's
# decomposable-attention model over frozen GloVe vectors (static), trained on the project's offline
# NLI corpus. Neither is the paper's model, so absolute numbers differ; the questions are the
# paper's.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): the zoo's NLI model `zoo:minilm-nli` on 2,000 pairs per probe; the
#   static decomposable-attention models on GloVe 6B 50d, which the chapter trains itself (unprojected,
#   −gen, −nat, −rel and two random directions); the fine-tuned projection variants
#   `zoo:minilm-nli-proj` and `zoo:minilm-nli-rand0`.
# * **The `gpu` profile** adds `roberta-large-mnli` and `cross-encoder/nli-deberta-v3-base` from the
#   Hugging Face hub, all eight random fine-tunings `zoo:minilm-nli-rand0` … `rand7` (the seven that do not
#   ship are trained first, about 8 minutes each on 2 CPU cores), eight retrained random controls, and
#   every pair of the three probes.
# * **Time**: `cpu` profile on 2 CPU cores: about 2.5 min. Full datasets on one GPU: hours (an estimate,
#   not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
nli_models = ["zoo:minilm-nli"]  # NLI classifiers: hub ids, local folders, zoo: names
embeddings = "glove-6b-50d"  # static vectors: 'glove-6b-50d' (packaged) or a GloVe/word2vec text file
snli_train = None  # None: the project's offline NLI corpus; or an SNLI-format file (.jsonl / .txt) to train on
snli_dev = None  # the held-out file that goes with snli_train (SNLI dev)
sample = 2000  # pairs per probe (int), a fraction, or None for all (1,936,512 / 1,574,400 / 836,400)
random_controls = 4  # random directions for the test-time controls (paper and the gpu profiles: 8)
random_retrains = 2  # random directions for the retrained static controls (paper: 8); each is one more training
contextual_model = "zoo:minilm-nli"  # the model of the contextual projection section (Table 15)
proj_finetuned = "zoo:minilm-nli-proj"  # the same model fine-tuned with the projection (None: skip)
rand_finetuned = ["zoo:minilm-nli-rand0"]  # ... fine-tuned with random projections (paper: 8; zoo: rand0-rand7)
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "auto", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0
n_boot = 1000
profile = "cpu"

# %% tags=["hide-input"]
from stereoprobe.assets import load_embeddings
from stereoprobe import RunOptions
from stereoprobe.book.display import glue_all, show_method, use_book_style
from stereoprobe.book.views import nli as chapter
from stereoprobe.book.tables import nli as tables

use_book_style()  # tables as the book shows them: numbers right, text left, intervals as [lo, hi]

specs = tables.probe_specs(sample=sample, seed=seed)
options = RunOptions(**run, progress=False)

# %%
print(chapter.run_summary(profile, nli_models, specs))

# %% [markdown]
# ## The pair sets
#
# The authors' code, not the paper's formula, defines the pairs: each verb class takes only its own
# object type (commerce × objects, interaction × people, driving × vehicles, eating × food), giving
# 1,968 templates instead of 27 × 95 = 2,565. Every example the paper prints ("spoke to crew", "loved
# urchin") exists only in the code's set, so the code's counts are the right ones. The paper's
# formula also counts the polarity list's duplicate "terrible".

# %%
chapter.count_view()

# %% [markdown]
# Sentences follow the code: a capitalised indefinite article and " ." at the end. Its article rule
# looks only at the first letter, so it writes "a SUV", "A honest person" and "An Ukrainian person";
# `articles="fixed"` corrects them, and static models lowercase everything anyway.

# %%
chapter.first_pairs(specs)

# %% [markdown]
# ## How neutral is a contextual NLI model? (Tables 1, 3, 5)
#
# The measures, as the package computes them (`stereoprobe.nli.measures`) from each pair's entailment,
# neutral and contradiction probabilities e, n, c:

# %% tags=["hide-input"]
show_method("stereoprobe.nli.measures.net_neutral", "stereoprobe.nli.measures.fraction_neutral",
            "stereoprobe.nli.measures.threshold_neutral", "stereoprobe.nli.measures._indicators")

# %% [markdown]
# Each model scores the same sample of every probe. The intervals are percentile bootstrap 95%
# intervals over sentence pairs. The paper's rows (GloVe, ELMo, BERT trained on SNLI) are shown for
# scale; our models are trained on other data, so only the *pattern* can be compared: gender far from
# neutral, nationality and religion much closer.

# %%
probs, contextual = chapter.contextual_measures(nli_models, specs, n_boot=n_boot, seed=seed, options=options)
chapter.measures_beside_paper(contextual)

# %% mystnb={"image": {"alt": "Four panels, one per neutrality measure (NN, FN, T:0.5, T:0.7), each plotting every NLI model's score with its 95% bootstrap interval for the gender, nationality and religion probes on a 0-to-1 scale (1 = always neutral). Look for gender far below nationality and religion, the ordering of the paper's models."}}
chapter.show_measures(contextual, list(specs))

# %% tags=["remove-cell"]
glue_all(chapter.contextual_numbers(contextual))

# %% [markdown]
# For {glue:text}`ctx_model`, NN is {glue:text}`ctx_gender_nn` on gender against
# {glue:text}`ctx_nat_nn` (nationality) and {glue:text}`ctx_rel_nn` (religion): the same ordering as
# the paper's models.
#
# ## The most entailed and contradicted templates (Tables 2, 4, 6)
#
# Single templates — premise word, verb, object, hypothesis word — with the highest mean entailment
# and contradiction probability. The paper's examples come from its GloVe model; below them, the
# same templates as scored here (empty where the sample does not contain them).

# %%
chapter.show_top_templates(probs, list(specs), nli_models)

# %% [markdown]
# ## Which words? Breakdowns
#
# The measures can be taken over any slice of the pairs: one occupation, one gendered word, or one
# polarity word × one demonym, as in the paper's "rude × Iraqi" example (`measures.breakdown`). Below,
# the ten word pairs of each probe with the lowest mean neutral probability over their sampled
# templates. The rude × Iraqi cell, over all its 1,968 templates, comes back in the static section.

# %%
chapter.show_least_neutral(probs, list(specs), nli_models[0])

# %%
rude_iraqi_pairs = tables.word_pair_pairs("nationality", "rude", "Iraqi")
print(chapter.describe_pairs(rude_iraqi_pairs, "rude × Iraqi"))

# %% [markdown]
# ## Static embeddings: the paper's model on GloVe
#
# The paper's first model reads frozen GloVe vectors {cite:p}`pennington2014glove`: a BiLSTM encoder,
# decomposable attention {cite:p}`parikh2016decomposable` between premise and hypothesis, compare and
# aggregate MLPs (`stereoprobe.nli.static`). Here it
# reads GloVe 6B 50d (the paper: 840B 300d) and is trained on the project's offline NLI corpus (the
# paper: SNLI) for a few epochs with the best held-out epoch kept (the paper: 100 epochs). Pass
# `snli_train`/`snli_dev` to train on SNLI, and `embeddings` for other vectors.
#
# ### Are the bias directions stable? (Table 7)
#
# Before removing a direction, the paper checks that it is one: the principal values of the nine
# gendered pair differences, of the 40 demonyms and of the 25 adherents. A dominant first value
# (small ratios) means one direction captures the set; the cosine says whether the direction learnt
# from the small Train list agrees with the one of the whole set. The authors' script is not released,
# so both recipes — uncentred SVD of unit rows, and centred PCA — are shown beside the paper.

# %%
vectors = load_embeddings(embeddings)
chapter.table7_beside_paper(vectors)

# %% [markdown]
# ### Training one model per projection (Tables 8–10)
#
# Each variant removes its directions from *every* word vector (and the `<s>` and unknown-word
# vectors) and is trained from scratch: **−gen** the he − she direction; **−nat** the first principal
# direction of the 8 DemonymsTrain words; **−rel** the top two of the 8 AdherentsTrain words; **rand**
# the first principal direction of 20 random GloVe words (the authors' random control for GloVe),
# one training per direction. The probes use only the *Test* lists, so no word that defines a
# direction is probed.

# %%
train_set, static_models = chapter.train_static_models(vectors, snli_train, snli_dev, random_retrains,
                                                       smoke=options.smoke)  # orig, -gen, -nat, -rel, rand0, rand1, …

# %%
runs = chapter.static_runs(static_models, specs, n_boot=n_boot, seed=seed)
chapter.diff_view(chapter.static_table(runs), ["probe", "kind", "repeats"])

# %% tags=["remove-cell"]
glue_all(chapter.static_numbers(chapter.static_table(runs)))

# %% [markdown]
# Measured here: the own projection changes NN by {glue:text}`static_gen_diff` (gender),
# {glue:text}`static_nat_diff` (nationality) and {glue:text}`static_rel_diff` (religion); the random
# retrains change gender NN by {glue:text}`static_rand_diff` on average. Where a projection does not
# raise neutrality on this model, the paper's claim does not transfer to it: the corpus, the vectors
# (50-d, uncased) and the training length all differ, and retraining alone moves the measures by about
# as much as the random rows show.
#
# Each probe's rows: the unprojected model, its own projection (−gen for gender, −nat for nationality,
# −rel for religion) and the random control averaged over its directions; "diff" is the relative
# change against the unprojected model. The paper's GloVe model gained 12–25% NN from its projection
# and moved little under random directions. Every variant on every probe:

# %%
chapter.nn_by_variant(runs)

# %% [markdown]
# **Accuracy before and after (Table 10).** A debiasing step is only useful if the model still does
# its job: the held-out accuracy of every variant, beside the paper's SNLI dev/test accuracy.

# %%
chapter.accuracy_table(static_models, train_set)

# %% [markdown]
# **Rude × Iraqi.** The paper's example: over all 1,968 templates of "A rude person …" ⇒ "An Iraqi
# person …", its GloVe model's mean entailment fell from 99.3% to 62.9% after the demonym projection.

# %%
chapter.word_pair_means(static_models, rude_iraqi_pairs, ["orig", "-nat"])

# %% [markdown]
# ## Does the measure find what was planted? (lab)
#
# The paper's explanation of biased inferences is a chain: occupation vectors carry a gender
# component, the NLI model has learnt to use gender, so "A surveyor …" ⇒ "A woman …" stops being
# neutral. The lab (`stereoprobe.nli.lab`) builds that chain with a known answer:
#
# * the static model is trained on the offline corpus plus pairs that teach gender ("A queen is
#   sitting on a bench ." ⇒ "A woman …" entailment, ⇒ "A man …" contradiction, "A tourist …" ⇒
#   "A woman …" neutral);
# * **biased**: three occupations (surveyor, geologist, pharmacist; an arbitrary choice) get a strong
#   component along the lab's gender direction d (the mean female − male training subject); the
#   **control** reads plain GloVe. No planted word occurs in training, so both share one training;
# * **projected**: d is removed from every vector and the model retrained; the planted rows then equal
#   the control's.
#
# A sound measure drops for the planted occupations only, in the planted direction (entailing the
# female words, contradicting the male ones), and comes back after the projection.

# %%
chapter.lab_effect(vectors, n_boot=n_boot, seed=seed, smoke=options.smoke)  # 30,000 gender pairs: 587 planted

# %% [markdown]
# The "other" rows of the biased model and its control are identical: same weights, same vectors.
# Note also what the *control* says about real GloVe: over all the other occupations, the lab model
# entails the male words far more often than the female ones — the gender component of real
# occupation vectors, read by a model that has learnt to use gender.

# %% [markdown]
# ## Contextual embeddings: projecting BERT's word pieces (Table 15)
#
# For BERT the paper takes the he − she direction from the *pretrained* word-piece embedding matrix
# (the rows of the first piece of "he" and "she", each normalized, then their normalized difference)
# and removes it from every word-piece embedding — [CLS] and [SEP] included — before position and
# type embeddings are added. Two ways to use it:
#
# * **proj@test**: the model is fine-tuned as usual; the projection is switched on only at test time;
# * **proj@train/test**: the projection is on during fine-tuning too, so the model learns without the
#   direction.
#
# Each has a control that removes random unit directions instead (rand@test: random directions on the
# same model, 4 in the `cpu` profile, 8 in the paper and the `gpu` profiles; rand train/test: one
# fine-tuning per direction). Here the model is the zoo's MiniLM NLI model; `zoo:minilm-nli-proj` and
# `zoo:minilm-nli-rand<i>` are the same recipe (same corpus, seed, steps) with the projection applied
# during fine-tuning. `proj` and `rand0` are committed; the cpu profile uses one random fine-tuning,
# the gpu profile all eight (the missing ones are trained once, about 8 minutes each on 2 CPU cores,
# or `stereoprobe zoo build minilm-nli-rand1 …` beforehand).

# %%
chapter.ensure_zoo_models([proj_finetuned, *(rand_finetuned or [])])  # only proj and rand0 are committed
variants, table15_runs = chapter.table15_runs(contextual_model, specs["gender"], proj_finetuned=proj_finetuned,
                                              rand_finetuned=rand_finetuned, random_controls=random_controls,
                                              n_boot=n_boot, seed=seed, options=options)
chapter.diff_view(chapter.table15(table15_runs), ["variant", "repeats"])

# %% [markdown]
# `repeats` is the number of random directions (or fine-tunings) averaged; the table's diffs are
# averaged per run. The spread of the random rows shows how much a *random* projection moves the
# measures, which is the yardstick for the he − she row:

# %%
chapter.random_spread(table15_runs)

# %%
chapter.zoo_accuracy([contextual_model, proj_finetuned, *(rand_finetuned or [])])

# %% tags=["remove-cell"]
glue_all(chapter.table15_numbers(chapter.table15(table15_runs)))

# %% [markdown]
# Here NN changed by {glue:text}`t15_ptest` with proj@test, {glue:text}`t15_rtest` with the random
# test-time directions, {glue:text}`t15_ptrain` with proj@train/test and {glue:text}`t15_rtrain` with
# the random fine-tuning(s). A random *fine-tuning* moves the measures by the spread of fine-tuning
# itself: with one or two such controls a change of that size cannot be attributed to the direction.
#
# The paper's BERT found that projecting at test time alone does not help (it *lowers* the measures,
# as random directions do), while fine-tuning with the projection raises all four. Its SNLI accuracy
# did not suffer (90.30 → 90.70 dev). Compare the held-out accuracy of the zoo variants above.
#
# ### The static layer or all layers? (ELMo, Tables 11–13)
#
# For ELMo the paper projected either the context-independent first layer (a character CNN) or
# every layer, each with its own direction; AllenNLP's ELMo cannot run here. The same question on
# the zoo encoder: remove the gender direction from the input word pieces only, or from the hidden
# state of every layer, with each layer's direction estimated as the normalized difference between
# the mean contextual embedding of "he" and of "she" (in matched template sentences).

# %%
chapter.layer_diagnostics(contextual_model, device=options.device, smoke=options.smoke)

# %%
chapter.layers_table(contextual_model, specs["gender"], variants, n_boot=n_boot, seed=seed, options=options)

# %% [markdown]
# ## Summary
#
# * The pair sets are the authors' code's: 1,936,512 gender, 1,574,400 nationality and 836,400
#   religion pairs (the paper's formula counts differ because it multiplies every verb by every object).
# * A contextual NLI model trained here is, like the paper's models, far from neutral on gender and
#   closer to neutral on nationality and religion; the least neutral templates and word pairs show
#   where.
# * Table 7 on GloVe 6B 50d: the uncentred recipe gives demonym ratios close to the paper's; the
#   directions learnt from 8 Train words agree with those of the full sets.
# * Retraining the static model without a bias direction and comparing against random directions is
#   the paper's test of the mitigation; the tables above give the measured changes with the held-out
#   accuracy next to them, so a gain in neutrality can be weighed against a loss in accuracy.
# * For word-piece projection, test-time projection and projection during fine-tuning are compared
#   with random-direction controls of the same kind; on the zoo encoder the input projection already
#   removes almost all of the he/she difference from every layer (the diagnostics table).
#
# ## Exercises
#
# :::{exercise}
# :label: nli-ex-1
#
# Set `sample=None` to score every pair (4,347,312 per model; at the 381 pairs per second measured for
# the zoo model on 2 CPU cores that is about three hours, so this is a job for a GPU). Which numbers
# move beyond their intervals?
# :::
#
# :::{solution} nli-ex-1
# :class: dropdown
#
# ```bash
# stereoprobe book --profile cpu --only biased_inferences --set biased_inferences.sample=null --set device=cuda
# # or every chapter at full size with the offline models: make book PROFILE=gpu-zoo
# ```
#
# The 2,000 pairs of each probe are drawn uniformly without replacement from its full set (1,936,512,
# 1,574,400 and 836,400 pairs; `stereoprobe.nli.templates`), and the intervals are percentile
# bootstraps over those sampled pairs. So NN, FN and T:τ of the full set should fall inside the
# sample's 95% intervals for nearly every model, probe and measure: about one interval in twenty misses
# by construction, and a run that finds many more misses has found a bug, not a result. What does move
# are the statistics that are maxima over small cells rather than means: the most entailed and
# contradicted templates and the least neutral word pairs (a gender word pair holds about 2,000 / 984 ≈
# 2 sampled templates, against all 1,968 in the full set, so its mean and its place in the top ten
# change), and the static and Table 15 diffs, which are ratios of two such estimates and whose random
# rows are averages over a few directions. The rude × Iraqi cell does not move: it is always computed
# over all 1,968 of its templates.
# :::
#
# :::{exercise}
# :label: nli-ex-2
#
# Compare `aggregate="word_pair"` (the authors' `evaluation.py`) with the per-pair measures. Which
# measure changes most, and why does NN (almost) not change?
# :::
#
# :::{solution} nli-ex-2
# :class: dropdown
#
# In a cell after the contextual section (`probs` maps (model, probe) to the per-pair probabilities):
#
# ```python
# import pandas as pd
# from stereoprobe.nli import measures
#
# for (model, probe), p in probs.items():
#     per_pair = measures.neutrality(p, n_boot=n_boot, seed=seed)["value"]
#     per_word_pair = measures.neutrality(p, aggregate="word_pair", n_boot=n_boot, seed=seed)["value"]
#     print(model, probe, pd.DataFrame({"pair": per_pair, "word_pair": per_word_pair}).round(3), sep="\n")
# ```
#
# For `zoo:minilm-nli` with 5,000 pairs per probe (`--set biased_inferences.sample=5000`; 980, 797 and
# 425 word pairs):
#
# | probe | NN pair / word pair | FN | T:0.5 | T:0.7 |
# |---|---|---|---|---|
# | gender | 0.236 / 0.232 | 0.203 / 0.172 | 0.200 / 0.172 | 0.172 / 0.144 |
# | nationality | 0.866 / 0.865 | 0.947 / 0.961 | 0.944 / 0.960 | 0.912 / 0.897 |
# | religion | 0.828 / 0.829 | 0.904 / 0.932 | 0.900 / 0.927 | 0.860 / 0.845 |
#
# FN and T:0.5 change most (by up to 0.03), and in a direction that depends on the probe: they fall on
# gender, where most pairs are not neutral, and rise on nationality and religion, where most are. T:0.7
# falls on all three. NN moves by at most 0.004.
#
# Why: NN is a mean. At the word-pair level it is the mean over word pairs of each word pair's mean
# neutral probability, $\frac{1}{W}\sum_w \frac{1}{m_w}\sum_{i \in w} n_i$, which equals the mean over
# sentence pairs $\frac{1}{M}\sum_i n_i$ whenever every word pair has the same number of templates
# $m_w$. In the full sets every word pair has all 1,968 templates, so NN does not change at all; the
# sample gives the word pairs different counts (1 to 24 templates), hence the small difference. FN and T:τ
# are not means of the probabilities but shares of units past a threshold (neutral the top label,
# $n > \tau$), and a threshold does not commute with averaging: averaging a word pair's templates pulls
# its probabilities toward their mean, so a word pair whose templates lie half far above and half far
# below τ counts as one unit on one side instead of half its templates on each. A word pair then goes
# the way of its majority: where most templates are neutral (nationality, religion) the few
# non-neutral ones are averaged away and FN rises; where most are not (gender) the few neutral ones are,
# and FN falls. A strict threshold such as 0.7 also needs the *average* to clear it, which a few low
# templates prevent, so T:0.7 falls everywhere.
# :::
#
# :::{exercise}
# :label: nli-ex-3
#
# Run the gpu profile with `roberta-large-mnli`: project the he − she direction of its own embedding
# rows ("Ġhe", "Ġshe") at test time. Is the paper's conclusion about proj@test the same?
# :::
#
# :::{solution} nli-ex-3
# :class: dropdown
#
# Needs the Hugging Face hub (the model has 355 M parameters; a GPU makes the full gender probe
# practical). Make it the model of the Table 15 section and leave out the zoo's fine-tuned variants,
# which belong to `zoo:minilm-nli`:
#
# ```bash
# stereoprobe book --profile gpu --only biased_inferences \
#     --set biased_inferences.contextual_model=roberta-large-mnli \
#     --set biased_inferences.proj_finetuned=null --set biased_inferences.rand_finetuned=null
# ```
#
# The test-time projection takes the he − she direction from the model's own word-piece embedding
# rows (`stereoprobe.nli.contextual.word_piece` picks the in-sentence pieces "Ġhe" and "Ġshe" for
# byte-level BPE), each row normalised, then their normalised difference, and removes it from every
# word-piece embedding, special tokens included; the `rand@test` rows remove random unit
# directions the same way. The paper's conclusion for BERT is that projecting at test time alone does
# not help: it *lowers* the measures, as random directions do, while fine-tuning with the projection
# raises all four. Compare the `proj@test` row's diffs with the spread of the `rand@test` rows (the
# random-spread table): the conclusion holds for RoBERTa-large-MNLI if the he − she projection lowers or
# barely moves NN, FN and T:τ, within or below the random rows' range. There is no `proj@train/test`
# row here (that needs a fine-tuning of RoBERTa-large on MNLI with the projection). This book has not
# run it.
# :::
#
# :::{exercise}
# :label: nli-ex-4
#
# Train the static model on SNLI (`snli_train`, `snli_dev`) with 300-d vectors (`embeddings` = a GloVe
# text file). How close do Tables 8–10 come to the paper?
# :::
#
# :::{solution} nli-ex-4
# :class: dropdown
#
# Needs two downloads: SNLI 1.0 (its `.jsonl` or `.txt` files) and a 300-d GloVe text file (the paper
# used 840B 300d). Then, for example:
#
# ```bash
# stereoprobe book --profile cpu --only biased_inferences \
#     --set biased_inferences.snli_train=/data/snli_1.0/snli_1.0_train.jsonl \
#     --set biased_inferences.snli_dev=/data/snli_1.0/snli_1.0_dev.jsonl \
#     --set biased_inferences.embeddings=/data/glove.840B.300d.txt
# ```
#
# Training on SNLI's 550,000 pairs with 300-d vectors takes far longer than on the offline corpus, and
# every variant is one training (the unprojected model, −gen, −nat, −rel and each random retrain), so a
# GPU or `--set biased_inferences.random_retrains=1` helps. What to compare: Table 7's principal values
# and cosines with 300-d vectors; Table 8's relative changes — the paper's GloVe model gained 12–25% NN
# from its own projection and moved little under random directions; the rude × Iraqi cell, where the
# paper's mean entailment fell from 99.3% to 62.9% after the demonym projection; and Table 10's
# accuracies beside the paper's SNLI dev/test accuracy. Two differences remain by design: the model
# here trains a few epochs with early stopping where the authors trained 100, and it masks padding in
# attention (appendix {doc}`/book/differences`, Bias-NLI: training the GloVe model), so expect the
# pattern (own projection above the random rows), not the printed decimals. This book has not run it.
# :::
#
# :::{exercise}
# :label: nli-ex-5
#
# Build all eight random fine-tunings (`stereoprobe zoo build minilm-nli-rand1 …`) and set
# `rand_finetuned` to them: how wide is the spread of the random train/test row?
# :::
#
# :::{solution} nli-ex-5
# :class: dropdown
#
# `rand0` ships with the package; the other seven are trained from the `minilm-nli` recipe with random
# direction $i$ projected out, about 8 minutes each on 2 CPU cores (roughly an hour in all), into the
# cache:
#
# ```bash
# stereoprobe zoo build minilm-nli-rand1 minilm-nli-rand2 minilm-nli-rand3 minilm-nli-rand4 \
#     minilm-nli-rand5 minilm-nli-rand6 minilm-nli-rand7
# stereoprobe book --profile cpu --only biased_inferences \
#     --set 'biased_inferences.rand_finetuned=[zoo:minilm-nli-rand0, zoo:minilm-nli-rand1,
#            zoo:minilm-nli-rand2, zoo:minilm-nli-rand3, zoo:minilm-nli-rand4, zoo:minilm-nli-rand5,
#            zoo:minilm-nli-rand6, zoo:minilm-nli-rand7]'
# ```
#
# (The chapter also trains any missing variant itself before scoring, so the first command only does
# the training ahead of time; the `gpu` profile already lists all eight.) The random-spread table then
# has eight `rand@train/test` rows, one per fine-tuning: their range (and standard deviation) of NN, FN
# and T:τ is the variation that fine-tuning with *some* direction removed produces, and `repeats` in
# Table 15 becomes 8. The `proj@train/test` row can be credited to the he − she direction only if its
# change lies outside that range; with one random fine-tuning (the `cpu` profile) the range is not
# estimated at all, which is why the chapter warns that a change of the size of a random fine-tuning
# cannot be attributed to the direction. Each variant's held-out accuracy (the zoo accuracy table)
# shows whether removing a random direction costs accuracy. The book's `cpu` build scores only `rand0`;
# the spread of all eight has not been measured here.
# :::
