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
# # Discovering biases without a word list
#
# UnQover and Bias-NLI ask about attributes someone chose in advance: occupations, polarity
# adjectives. SODAPOP {cite:p}`an2023sodapop` turns the question around: let a masked language model
# write thousands of *wrong* answers to a social-commonsense question, and see which words fool a
# multiple-choice model more often when the question is about one group of people than another.
#
# > Amanda opened their mouth to speak and what came out shocked everyone. How would you describe
# > Amanda? — (A) a very aggressive and talkative person … (B) a very **quiet** and talkative person
# > (C) **is** very aggressive and talkative person
#
# The pipeline, for every seed name and every probe context of Social IQa {cite:p}`sap2019socialiqa`:
#
# 1. put the name in place of "Bethany" in the item;
# 2. let the masked LM rewrite the correct answer, one masked word at a time, to depth k: the
#    **distractors**;
# 3. pair them into 3-choice questions with the correct answer and score them with the
#    multiple-choice model;
# 4. per name, the **success rate** SR(w, n) of a word w is the share of its occurrences in
#    distractors the model picked; the SR vectors of names are then compared across groups.
#
# The paper's models (RoBERTa-base to write, a BERT-base fine-tuned on Social IQa to answer) are not
# reachable here; the zoo's masked LM and multiple-choice model (both all-MiniLM-L6-v2 fine-tuned
# offline) take their places, and the planted-bias lab shows what the method finds when the truth is
# known.
#
# :::{admonition} What this chapter needs
# :class: note
#
# * **Models by default** (offline): `zoo:minilm-mlm` writes the distractors, `zoo:minilm-mcq` answers
#   them, `asset:minilm` (the pre-trained all-MiniLM-L6-v2) embeds the names, and the planted-bias pair
#   `lab:mcq-biased` / `lab:mcq-control` rescores them; 8 names per group, context 3 at depth 2 (600
#   distractors per name) and four contexts at depth 2 (100 per name and context).
# * **The `gpu` profile** writes with `roberta-base` and embeds names with `bert-base-uncased` (both from
#   the Hugging Face hub) at the paper's scale: all 220 names, the 50 contexts at depth 3 (cap 10,000)
#   and context 3 with every candidate. The multiple-choice model stays `zoo:minilm-mcq`: the paper's
#   Social IQa BERT is not on the hub (pass its folder as `mcq_model`).
# * **Time**: `cpu` profile on 2 CPU cores: about 9 min. Full datasets on one GPU: hours (an estimate,
#   not measured). The timings of every chapter are in {doc}`/book/scale`.
# :::

# %% tags=["parameters"]
mcq_model = "zoo:minilm-mcq"  # the multiple-choice model under test (AutoModelForMultipleChoice)
mlm = "zoo:minilm-mlm"  # the masked LM that writes the distractors (paper: roberta-base)
name_encoder = "asset:minilm"  # encoder of the name embeddings (paper: bert-base-uncased)
names_per_group = 8  # names per group (first n of each list); None: all 220 (analyses use 25 per group)
single_context = 3  # the paper's single context (section 4.2)
single_depth = 2  # recursion depth k (paper: 3)
single_cap = 600  # distractors per (name, context) after the shuffle; None: all (paper, 109,830 MCQs per name)
multi_contexts = [9, 85, 137, 195]  # probe contexts (line indices); None: the 50 of the paper
multi_depth = 2  # paper: 3
multi_cap = 100  # paper: 10,000
min_count_single = 1  # a word is kept if it occurs more often than this for every name (paper: 50)
min_count_multi = 1
min_count_lab = 0  # the lab's vocabulary: every word that every name's distractors hold at least once
decoding = "compat"  # compat: the authors' joint decoding; clean: one fill per id
n_perm = 100_000  # permutations per word (paper: 1,000,000)
p_method = "auto"  # permutation p-values: auto (exact when the splits ≤ n_perm, else sampled), exact, sampled, compat
name_contexts = 25  # Social IQa contexts per name embedding (paper: 1,000)
debias = True  # score the INLP and SentenceDebias variants (race, gender)
debias_sentences = 1000  # attribute sentences (INLP) / counterfactual tuples (SentenceDebias) per fit
inlp_iterations = 30  # INLP classifiers (bias-bench: 80; on CPU later ones remove little)
mcq_lab_models = ["lab:mcq-biased", "lab:mcq-control"]  # planted-bias lab (biased, control)
# how it runs (stereoprobe.RunOptions), apart from what it studies; a profile sets it with its device, precision,
# batch_tokens (None: 2048 on a CPU, 65536 on a GPU), engine (local | ray), workers and smoke_models
run = {"device": "auto", "precision": "fp32", "batch_tokens": None, "engine": "local", "workers": None, "smoke": False}
seed = 0
profile = "cpu"

# %% tags=["hide-input"]
from stereoprobe import RunOptions
from stereoprobe.book.display import glue_all, show_method, use_book_style
from stereoprobe.book.views import sodapop as chapter

use_book_style()  # tables as the book shows them: numbers right, text left, intervals as [lo, hi]

options = RunOptions(**run, progress=False)
perm = dict(n_perm=n_perm, p_method=p_method)  # analysis.permutation_method: exact or sampled test

# %%
all_groups, groups = chapter.name_sets(names_per_group)  # the 220 seed names; those analysed (paper: 25 per group)
print(chapter.run_summary(profile, all_groups, groups, mlm, mcq_model))

# %% [markdown]
# ## The data: 50 contexts, 8 name groups
#
# The shipped slice holds the 1,302 Social IQa dev items whose person is "Bethany". The authors' code
# walks the file in order and keeps every line up to index 320 whose question is "How would you
# describe Bethany?": exactly **50 contexts**. A name goes in with a plain string replacement over
# every field (context, question, the three answers), as in the code. The correct answer is what the
# masked LM rewrites; its length L in word tokens decides how many distractors there are.
#
# Word tokens are those of nltk 3.7's `word_tokenize`, the version the authors ran
# {cite:p}`an2023sodapop`; every distractor window is cut with it too. Later nltk releases changed its
# rules around apostrophes: 3.10 splits "'well" into "'" and "well" (one answer of the slice, "tell
# their father 'well done'") and a glued fill such as "'sfo" into "'" and "sfo". So the 3.7 rules ship
# with stereoprobe (`stereoprobe.sodapop.treebank`), compat distractors are the same whatever nltk is
# installed, and the distractor cache is keyed by this tokenizer (`distractors.tokenizer_id()`).

# %%
chapter.show_contexts()

# %% [markdown]
# Seventeen of the 50 contexts still refer to their person as *she* or *her*. With a male name the
# item becomes inconsistent ("Jamel … she"), a confound shared by every male-vs-female comparison over
# the 50 contexts — the paper does not discuss it. The single context (index 3) is not affected.

# %%
chapter.substitution_example("Jamel")

# %% [markdown]
# The 220 seed names: European- and African-American names from the WEAT lists
# {cite:p}`caliskan2017semantics`, Asian and Hispanic names from New York City's popular baby names;
# the analyses use the first 25 of each group, as the authors' code does.

# %%
chapter.name_groups_table(all_groups, groups)

# %% [markdown]
# ## Do models know a name's group? (Table 1)
#
# The paper's motivation: BERT's contextual embedding of a first name — the average of its word
# pieces, over 1,000 Social IQa contexts in which "Bethany" is replaced by the name — predicts the
# name's gender and race with a linear classifier. The paper used 622 census names that are not
# released; here the 220 seed names, a seeded stratified two-thirds/one-third split, and
# `name_contexts` contexts per name.

# %%
emb, t1 = chapter.show_table1(name_encoder, all_groups, n_contexts=name_contexts, seed=seed, device=options.device)

# %% mystnb={"image": {"alt": "Scatter plot of a two-dimensional t-SNE map of the first-name embeddings, one point per name, coloured by race/ethnicity (European American, African American, Asian, Hispanic) and marked by gender (dot female, cross male). Regions held by one colour or one marker show that the encoder's embeddings carry the name's group."}}
chapter.show_name_tsne(emb, all_groups, encoder=name_encoder, n_contexts=name_contexts)

# %% tags=["remove-cell"]
glue_all(chapter.table1_numbers(t1))

# %% [markdown]
# Held-out accuracy is {glue:text}`t1_gender`% for gender (chance 50) and {glue:text}`t1_race`% for
# the four race/ethnicity groups (chance 25). Gender is written all over a first name's embedding;
# race/ethnicity much less so in a small encoder, and 220 names make a noisy test set (one held-out
# name is 1.4 points).
#
# ## Writing distractors (Algorithm 1)
#
# For one name and context, `FILL(s)` masks each of the L word tokens of the answer s in
# "context + *name* is + s" and keeps the masked LM's top-10 fills; each fill gives a new answer (the
# last L tokens, so a deleted word pulls "is" in). The authors' code recurses on every result to depth
# k and keeps the whole multiset (distance 1, 2 and 3 neighbours; the paper's Algorithm 1 keeps only
# distance k). For L tokens and M fills that is L + M·L² + M²·L³ masked inputs and M·L + M²L² + M³L³
# candidates — 219,660 for context 3 (L = 6) at depth 3, 109,830 MCQs per name. Here every distinct
# sentence is filled once (many recursion branches meet again) and the masked inputs of 16 names go
# through the model together.

# %%
chapter.scale_table()

# %% [markdown]
# **Decoding.** The code decodes the ten fill ids *jointly* into one string and splits it on spaces.
# With RoBERTa's byte-level BPE the best fill carries its leading space, so the first piece is empty —
# the masked word is deleted — and a sub-word fill is glued to its neighbour ("of" + "of" → "ofof",
# which appears in the paper's Table 10). With a WordPiece vocabulary the "##" pieces are glued the
# same way. `compat` keeps this; `clean` decodes each fill on its own and drops sub-words, special
# tokens and punctuation. Below, the depth-1 neighbours of context 3 for one name in both modes.

# %%
chapter.decoding_quirk(mlm, groups["AA_m"][0], options=options)

# %% [markdown]
# After generation: deduplicate (the 50-context runs), **sort** — the authors'
# `list(set(…))` order depended on Python's hash seed, so their subsets cannot be reproduced; sorting
# makes ours reproducible — shuffle with `random.Random(10)`, cap, and pair the distractors into
# 3-choice MCQs with the correct answer in its original slot.
#
# ## Scoring every choice once
#
# A multiple-choice model encodes each (context + question, choice) pair separately and compares the
# three logits, so a choice's logit does not depend on its companions. The package scores every
# distinct (name, context, choice) once, stores it in the score store, and derives every MCQ's
# prediction from the stored logits: identical predictions (a test compares them with whole-MCQ
# scoring), fewer encodings. The debiased variants of the next sections only change the encoder's
# output before the classifier, so all of them come from the same encoder pass.

# %%
single, multi, fits = chapter.run_debiased_probes(
    mcq_model, mlm, names_per_group=names_per_group, decoding=decoding, single_depth=single_depth,
    single_cap=single_cap, multi_contexts=multi_contexts, multi_depth=multi_depth, multi_cap=multi_cap, debias=debias,
    inlp_iterations=inlp_iterations, debias_sentences=debias_sentences, seed=seed, options=options)
chapter.cost_view(chapter.cost_table({"single context": single, "multi-context": multi}))

# %% [markdown]
# "MLM passes run" is empty when the distractors came from the cache (a rerun generates nothing).
# The multiset sizes match the scale formula wherever the masked LM returns ten distinct pieces:

# %%
chapter.units_view(single)

# %% [markdown]
# How often does the model pick the correct answer among its distractors? (The paper's BERT scores
# 60.5% on the Social IQa dev set.)

# %%
chapter.runs_accuracy_view(single, multi, order=list(all_groups))

# %% [markdown]
# Some contexts are easy (the model keeps the right answer against its neighbours), some hopeless:
# there the distractors win almost always and the success rates of all names crowd near 1, leaving
# little room for differences between groups.
#
# ## Success rates and the vocabulary
#
# For each name n and word w, SR(w, n) is the share of the distinct distractors of n containing w
# that the model picked in at least one MCQ it got wrong. Words are the whitespace tokens of the
# distractors, lower-cased, without the 179 NLTK stop words (`success.STOPWORDS`) and punctuation; a
# word enters the vocabulary only if it occurs more than `min_count` times for **every** name (the
# paper: 50, which gave it 443 words over 50 contexts). Each name is then a vector of SR values over
# the vocabulary.
#
# The success rate, as the package computes it (`stereoprobe.sodapop.success`, after the authors'
# `process_person_to_vocab`): a ratio of counts pooled over contexts, not a mean of per-context ratios.

# %% tags=["hide-input"]
show_method("stereoprobe.sodapop.success.success_rates")

# %%
sr_single, sr_multi = chapter.show_success_rates(single, multi, min_count_single, min_count_multi)

# %% [markdown]
# The zoo's masked LM rewrites with a narrower vocabulary than RoBERTa-base, and the CPU grid keeps
# a few hundred distractors per name where the paper keeps tens of thousands: the vocabulary here is
# about a dozen words against the paper's 443. The methods are the same; the GPU profile restores
# the scale.
#
# ## Can the SR vectors tell groups apart? (Tables 2 and 9)
#
# Binary KMeans (k-means++, 10 restarts) on the SR vectors of two groups' names; accuracy is the
# better of the two cluster–label alignments, so 0.5 is chance and 1.0 a perfect split. The paper
# reports the 50-context run; both of ours are shown beside it.

# %%
glue_all(chapter.versions())
chapter.separability_view(chapter.separability(sr_single, sr_multi, groups))

# %% [markdown]
# With few names per group KMeans accuracy is coarse (one name moves it by 1/(2n)) and high by
# chance alone; compare rows, not the third decimal.
#
# These accuracies can also move with the scikit-learn version. The authors' environment did not pin
# scikit-learn (its Python 3.7 stops at 1.0.2), so the separability here spells out the 1.0 defaults that
# the authors' code ran with {cite:p}`an2023sodapop`: k-means++, 10 restarts, Elkan's algorithm,
# `random_state=0`. Left to the defaults it would not be the same computation: since scikit-learn 1.4
# `n_init` defaults to `"auto"` (one k-means++ run) and since 1.1 the algorithm to Lloyd's. Even with
# the settings fixed, scikit-learn does not promise the same clusters from the same data and seed across
# releases (its release notes have listed KMeans among the "changed models", e.g. in 0.23), and the
# random draws of the k-means++ seeding decide which split wins, so a borderline pair can move by a name
# or two. This book was built with scikit-learn {glue:text}`sklearn_version`, the version
# `constraints.txt` pins.
#
# The t-SNE maps of the paper (Fig. 4–5) show the same vectors for European- vs African-American names:

# %% mystnb={"image": {"alt": "Two scatter plots, for the single-context and the multi-context analysis, of a t-SNE map of the success-rate vectors of European- and African-American names, one point per name, coloured and marked by group (EA_f, AA_f, EA_m, AA_m). Points of one group lying apart from the others mean the model answers differently by the name's group (the paper's Figs. 4-5)."}}
chapter.show_sr_tsne({"single context": sr_single, "multi-context": sr_multi}, groups)

# %% [markdown]
# ## Which words? Relative difference and permutation tests (Tables 3, 4, 10–21)
#
# For a word w and two groups, with m₁ and m₂ the groups' mean SR(w, ·), the paper's relative
# difference is RD = (m₁ − m₂) / ((m₁ + m₂)/2). The authors' code divides the *sum* of the
# differences by the same mean, which is |G| × RD for equal groups; the printed tables look like that
# scale (25×), so both are shown (`rd_paper`, `rd_code`). The p-value is a two-sided permutation test
# on m₁ − m₂ (names shuffled between the groups). The paper tests only the 30 words it prints per
# pair; here every vocabulary word is tested and **q** is the Benjamini–Hochberg adjusted p-value
# over them, the one to read when scanning hundreds of words.

# %% tags=["hide-input"]
show_method("stereoprobe.sodapop.analysis._rd")

# %%
chapter.show_top_words(sr_single, groups, ("AA_f", "EA_f"), "single context", ["4"], **perm)

# %%
chapter.show_top_words(sr_single, groups, ("EA_f", "EA_m"), "single context", ["21"], **perm)

# %% [markdown]
# ## Many contexts at once (Tables 3, 10, 13)
#
# Pooling four contexts gives each name the distractors of four different answers (up to 100 per
# context here, against 600 from context 3 alone); a word enters the vocabulary if every name holds it
# often enough across them, so most of its words come from one context's answer.

# %%
chapter.show_top_words(sr_multi, groups, ("AA_f", "EA_f"), "multi-context", ["3", "10"], **perm)
chapter.show_top_words(sr_multi, groups, ("EA_f", "EA_m"), "multi-context", ["13"], **perm)

# %% [markdown]
# Every pair of the authors' code (its last pair, "HS_f–AS_m", read as HS_f–HS_m): how many words the
# tests flag before and after correcting for the number of words tested.

# %%
rd_all = chapter.show_word_tests({"single": sr_single, "multi": sr_multi}, groups, **perm)  # the authors' 16 pairs

# %% tags=["remove-cell"]
glue_all(chapter.flagged_numbers(chapter.flagged_table(rd_all)))

# %% [markdown]
# Over {glue:text}`n_tests` word tests, {glue:text}`n_p` have p < 0.05 — about
# {glue:text}`n_expected` would by chance alone — and {glue:text}`n_q` survive the false-discovery-rate
# correction. The paper's printed p-values are uncorrected and its words were chosen by RD first; read
# its top-word lists as hypotheses to test, which is what this section's q-values do.
#
# ## Debiased models (Table 9)
#
# The paper compares BERT with five debiased versions built with bias-bench {cite:p}`meade2022empirical`.
# Two kinds are post hoc and are reproduced here on the multiple-choice model's own encoder output
# (a hook on the encoder: every token's last hidden state is projected before the pooler):
#
# * **INLP** {cite:p}`ravfogel2020null`: linear classifiers (LinearSVC, no intercept) are trained,
#   one after another, to predict the bias attribute (gender: male/female/neutral; race:
#   attribute/neutral) from mean-pooled states of sentences containing attribute words; each one's
#   direction is projected out, and P is the product.
# * **SentenceDebias** {cite:p}`liang2020towards`: the first principal component of the differences
#   within counterfactual sentence pairs (gender) or triples (race) is removed.
#
# bias-bench trains them on Wikipedia sentences; offline, the sentences are WordNet 3.1 glosses and
# examples that contain the bias-bench attribute words (`debias.corpus_sentences`).

# %%
chapter.show_debias_fits(fits)

# %%
changed = chapter.show_debias_table9(single, groups, min_count=min_count_single)

# %% tags=["remove-cell"]
glue_all(chapter.debias_numbers(changed))

# %% [markdown]
# SentenceDebias removes one direction and changes at most {glue:text}`sd_moved` of the distractors'
# outcomes, as in the paper, whose SentenceDebias columns equal BERT's. INLP removes many directions
# (see "rank removed": on this 384-dimensional encoder a far larger share than on BERT's 768) and
# moves up to {glue:text}`inlp_moved`; separability rows move by up to a few names either way (with
# 8 names per group one name is 0.06), and no variant makes every pair inseparable.
#
# **Dropout and CDA** need continued pre-training and cannot be done post hoc. bias-bench's recipe
# (`experiments/run_mlm.py`): 2,000 steps of masked-LM training of `bert-base-uncased` on a Wikipedia
# sample (batch 32 × 16 accumulation, 512 tokens), with `hidden_dropout_prob=0.20` and
# `attention_probs_dropout_prob=0.15` for Dropout {cite:p}`webster2020measuring`, or with two-sided
# counterfactual augmentation from `bias_attribute_words.json` (gender pairs swapped, race triples
# replaced at random) for CDA; then fine-tune on Social IQa with the paper's hyper-parameters and pass
# the folder as `mcq_model`. No debiased Social IQa checkpoint is public; Webster et al.'s Zari models
# on the hub are BERT-large and gender-only, not the paper's.
#
# ## Do the words match human stereotypes? (Table 5)
#
# The paper maps the words significantly associated with each group (p < 0.05 among the top words of
# 12 single contexts) to the 16 traits of the ABC model of stereotypes {cite:p}`koch2016abc` — Agency,
# Beliefs, Communion — and orders groups on each trait by C(A, t) − C(A, ¬t), the number of its words
# at the trait's high pole minus its low pole (‡: a difference of 5 or more). Three annotators did the
# mapping; here it is automatic (`abc.map_words`: nearest pole centroid of WordNet anchor words in
# GloVe, cosine ≥ 0.6 and ≥ 0.1 nearer than the opposite pole), transparent and reproducible but
# crude — read the words behind every ordering before trusting it (the module's docstring lists its
# known failures). Words come from the top-15 lists (p < 0.05) of the single- and multi-context
# analyses above.

# %%
chapter.show_abc(chapter.associated_words(rd_all, all_groups))

# %% [markdown]
# ## The planted-bias lab: does the method find a bias we put there?
#
# Two multiple-choice models are trained on the same perturbed Social IQa answers to imitate a
# teacher: `lab:mcq-biased`'s teacher raises the logit of any choice containing **quiet** by 3 when the
# item's person has an African-American male name (AA_m), `lab:mcq-control`'s never does. Everything
# else — the distractors, the names, the pipeline — is the single-context run above, rescored by each
# lab model. The method should find "quiet" at the top of AA_m's side, with a small q-value, for the
# biased model only.
#
# The planted word has to be in the vocabulary to be found. The masked LM writes "quiet" into the
# answer less often for some names than for others, and after the cap of 600 distractors one name can
# be left with a single one; `min_count_single` = 1 then removes the word from every name's vector. So
# the lab keeps every word that every name's distractors hold at least once (`min_count_lab` = 0).
# With the chapter's `min_count` the table below would show "quiet" nowhere: a miss of the vocabulary
# filter, not of the test.

# %%
lab_tables = chapter.show_lab_runs(single, mcq_lab_models, groups, min_count=min_count_lab, **perm, options=options)

# %% mystnb={"image": {"alt": "Volcano plots, one panel per lab model (lab:mcq-biased, then lab:mcq-control): each grey dot is a word, placed by its relative difference RD for AA_m names against everyone else (x axis) and by -log10 of its q-value (y axis); a dotted line marks q = 0.05 and the planted word quiet is drawn in red where it occurs. The method works if quiet rises above the dotted line for the biased model only."}}
chapter.show_lab(lab_tables)

# %% tags=["remove-cell"]
glue_all(chapter.lab_numbers(lab_tables[mcq_lab_models[0]]))

# %% [markdown]
# The dotted line is q = 0.05. In the biased model "quiet" is AA_m's top word, far to the right. The
# other words above the line ({glue:text}`lab_also`) move for a reason too: SR counts a picked
# distractor for every word in it, so words that share distractors with "quiet" ("a very quiet and
# talkative person") gain a little with it, and words of the distractors that "quiet" now beats in
# the same MCQs lose (the left side). An RD list names words, but a model rewards whole distractors:
# one planted word moves its neighbours. In the control nothing crosses the line. (Under the smoke profile the lab
# models are untrained stand-ins and the grid is tiny: nothing is expected there.)
#
# ## Rerunning at scale
#
# The CPU profile is a scaled-down grid: {glue:text}`grid_single` and {glue:text}`grid_multi`. The GPU
# profile (`params/gpu.yaml`) states the paper's: all 220 names, the 50 contexts at depth 3 with a cap
# of 10,000 distractors (5,000 MCQs per name and context), the single context at depth 3 with every
# raw candidate (109,830 MCQs per name, 24 million in all), `roberta-base` writing, min_count 50,
# 10⁶ permutations, 1,000 contexts per name embedding. Distractors are cached per (name, context)
# and logits in the score store, so a killed run resumes; a second model reuses the distractors:
#
# ```bash
# make book PROFILE=gpu
# stereoprobe book --profile gpu --only discovering_biases --set mcq_model=/path/to/bert-socialiqa
# ```
#
# The paper's answerer is a `bert-base-uncased` fine-tuned on Social IQa (lr 1e-5, 3 epochs, dev
# accuracy 60.51%); its checkpoint is on the authors' Google Drive, not the hub. Any
# `AutoModelForMultipleChoice` folder works; the zoo's `zoo:minilm-mcq` is the offline stand-in.

# %% tags=["remove-cell"]
glue_all(chapter.grid_numbers(single, multi))

# %% [markdown]
# ## Summary
#
# * Name embeddings carry gender clearly and race/ethnicity less so (Table 1).
# * SODAPOP needs no word list: a masked LM writes the candidates, the MCQ model's mistakes rank the
#   words, and SR vectors separate some name-group pairs better than chance (Tables 2/9); at 8 names per
#   group and about a dozen words the CPU grid does not reproduce the paper's pattern (European-American
#   against other names the most separable): the GPU profile is the test.
# * The authors' joint decoding deletes and glues words ("ofof"); their subset order depended on a hash
#   seed. Sorting before the seeded shuffle makes every run here reproducible; `clean` decoding is the
#   alternative.
# * Scoring each distinct choice once gives the same predictions with fewer encodings, and scores all
#   debiased variants in one pass.
# * Post-hoc INLP and SentenceDebias barely change what the SR vectors reveal.
# * Top-word lists are hypotheses: with hundreds of words tested, correct for multiplicity (q) — the
#   planted lab shows that a real word-level bias survives the correction and the control produces none.
#
# ## Exercises
#
# :::{exercise}
# :label: sodapop-ex-1
#
# Rerun with `decoding="clean"`. Which words of the top lists disappear? Are they artefacts of the
# joint decoding?
# :::
#
# :::{solution} sodapop-ex-1
# :class: dropdown
#
# Build the chapter a second time into its own folder, so that both books stay side by side (the
# distractors of each decoding are cached separately, so the compat run is not redone):
#
# ```bash
# stereoprobe book --profile cpu --only discovering_biases --build-dir _build-clean \
#     --set discovering_biases.decoding=clean
# ```
#
# Then read the top-word tables (and the per-pair counts of the word tests) of `_build-clean/html`
# beside those of `_build/html`. The chapter's *Decoding* cell already shows the mechanism on the
# depth-1 neighbours of context 3: every neighbour that exists only under `compat` comes from decoding
# the ten fill ids as one string and splitting it on spaces. With the zoo's WordPiece writer a `##`
# piece is glued to the fill before it, special tokens are kept and punctuation is glued to its
# neighbour (`pieces_compat(" kind nice ofof , wow", 10)` gives `['', 'kind', 'nice', 'ofof,', 'wow']`);
# with RoBERTa the first piece is empty, which deletes the masked word and pulls "is" into the answer
# window, and sub-words are glued ("of" + "of" → "ofof", a word of the paper's Table 10). A word that is
# not an English word, or that only ever occurs inside such a glued or shifted distractor, disappears
# under `clean` (which decodes each id alone and drops sub-words, special tokens and punctuation): those
# are artefacts. A word that is in the top lists under both decodings is a real rewrite of the answer,
# and its association with a group does not depend on the decoding. Real words can still move: the two
# decodings give different distractor sets, so the vocabulary filter (a word must occur more than
# `min_count` times for every name), the pairing into MCQs and every success rate change with them.
# :::
#
# :::{exercise}
# :label: sodapop-ex-2
#
# Drop the 17 she/her contexts from `multi_contexts` and recompute the female–male rows of Table 9.
# How much of the gender separability did the inconsistent items explain?
# :::
#
# :::{solution} sodapop-ex-2
# :class: dropdown
#
# The 17 contexts are `stereoprobe.sodapop.contexts.SHE_CONTEXTS`: 36, 38, 51, 79, 102, 104, 136, 142,
# 193, 246, 250, 277, 286, 296, 316, 318 and 320. The `cpu` profile's four multi-context contexts (9,
# 85, 137, 195) contain none of them, so the comparison is between the paper's 50 contexts and the 33
# that remain:
#
# ```python
# from stereoprobe.sodapop import contexts
# print([c.index for c in contexts.probe_contexts() if c.index not in contexts.SHE_CONTEXTS])
# # [0, 3, 9, 18, 30, 31, 67, 69, 76, 82, 85, 100, 105, 112, 122, 137, 143, 153, 171, 195, 197, 201,
# #  206, 210, 211, 217, 235, 261, 267, 270, 288, 292, 313]
# ```
#
# ```bash
# stereoprobe book --profile cpu --only discovering_biases --build-dir _build-50 \
#     --set discovering_biases.multi_contexts=null
# stereoprobe book --profile cpu --only discovering_biases --build-dir _build-33 \
#     --set 'discovering_biases.multi_contexts=[0, 3, 9, 18, 30, 31, 67, 69, 76, 82, 85, 100, 105, 112,
#            122, 137, 143, 153, 171, 195, 197, 201, 206, 210, 211, 217, 235, 261, 267, 270, 288, 292, 313]'
# ```
#
# Read the "multi-context" column of the separability table in both books. The female–male rows are
# the four pairs of one group and two genders (EA_f–EA_m, AA_f–AA_m, AS_f–AS_m, HS_f–HS_m); the rows
# that compare two groups of one gender are the control, because a "Jamel … she" item is inconsistent
# for every male name alike and so can only push names apart by gender. If the female–male accuracies
# fall toward 0.5 without the 17 items while the same-gender rows stay, the inconsistent items explained
# that part of the gender separability; if they stay, the separability comes from the consistent items.
# Two cautions: 33 contexts give every name fewer distractors than 50, which by itself makes KMeans
# noisier (compare against a run on 33 contexts drawn at random from the 50 to see that effect alone),
# and with 8 names per group one name moves an accuracy by 1/16. Fifty contexts at the `cpu` grid's
# depth and cap are about twelve times the chapter's four-context run; this book has not measured the
# result.
# :::
#
# :::{exercise}
# :label: sodapop-ex-3
#
# Fit INLP on the pre-trained encoder instead of the fine-tuned one (`encoder_source` of
# `debias.fit_debias`) — the paper leaves this open. Does Table 9 change?
# :::
#
# :::{solution} sodapop-ex-3
# :class: dropdown
#
# `fit_debias` learns the projection from the states of `encoder_source` and the hook applies it to the
# multiple-choice model's own encoder, so the pre-trained all-MiniLM-L6-v2 (`asset:minilm`) can be
# passed as the source. In a cell after the chapter's "Debiased models" section (it uses the chapter's
# `single`, `fits`, `groups` and `options`):
#
# ```python
# from stereoprobe import models
# from stereoprobe.sodapop import debias, probe
#
# mcq = models.load(mcq_model, "mcq", device=options.device)
# pre = models.load("asset:minilm", "base", device=options.device)      # the pre-trained encoder
# fit = debias.fit_debias(mcq.model, mcq.tokenizer, "inlp", "gender", fingerprint=pre.fingerprint,
#                         encoder_source=(pre.model, pre.tokenizer), n_iterations=inlp_iterations,
#                         max_sentences=debias_sentences)
# variants = [f.variant() for f in fits.values()] + [fit.variant("inlp-gender-pretrained")]
# rerun = probe.run_probe(mcq_model, mlm, single.grid, variants=variants, options=options)
# chapter.show_debias_table9(rerun, groups, min_count=min_count_single)
# ```
#
# Only the new variant is scored (the distractors and the other logits come from the cache and the
# score store). Read its column of the separability table beside `inlp-gender`, its row of the outcome
# table ("distractors whose 'picked' flag changed") and `fit.diagnostics` ("rank removed", attribute
# accuracy before and after, which now describe the pre-trained encoder's states). The two projections
# differ because fine-tuning moved the representation: LoRA adapters on every attention and
# feed-forward matrix change where gender is written in the last hidden states, so directions fitted on
# the pre-trained encoder remove only part of what a classifier finds in the fine-tuned one. Whether
# that changes the female–male rows of Table 9 is what the run shows; the book has not measured it, and
# with 8 names per group a row moves in steps of 1/16.
# :::
#
# :::{exercise}
# :label: sodapop-ex-4
#
# Train a lab model with a weaker plant (`strength` 0.5 in `zoo/lab_mcq.py`): how many names per group
# does SODAPOP need before "quiet" survives the correction?
# :::
#
# :::{solution} sodapop-ex-4
# :class: dropdown
#
# Register the weaker recipe under a new name instead of editing the shipped one (whose committed build
# would then no longer match its recipe). A `lab:` model without a committed build is trained into the
# cache on first use, about 4 minutes on one thread (the card of `lab:mcq-biased` says 253 s):
#
# ```python
# import dataclasses
# from stereoprobe import RunOptions
# from stereoprobe.book.views import sodapop as chapter
# from stereoprobe.sodapop.probe import GridConfig, run_probe
# from stereoprobe.zoo import lab
#
# lab.LAB_RECIPES["mcq-weak"] = dataclasses.replace(lab.LAB_RECIPES["mcq-biased"], strength=0.5,
#                                                   description="mcq-biased with the plant at strength 0.5")
# options = RunOptions(device="cpu", progress=False)
# for n in (8, 12, 16, 20, 25):
#     _, groups = chapter.name_sets(n)
#     grid = GridConfig(names_per_group=n, contexts=[3], depth=2, dedup=False, cap=600)
#     single = run_probe("zoo:minilm-mcq", "zoo:minilm-mlm", grid, options=options)
#     tables, summary = chapter.lab_runs(single, ["lab:mcq-weak", "lab:mcq-control"], groups, min_count=0,
#                                        n_perm=100_000, options=options)
#     print(n, summary[["model", "rank of quiet", "p(quiet)", "q(quiet)"]].to_string(index=False))
# ```
#
# "Survives the correction" means q(quiet) < 0.05 for `lab:mcq-weak` (and nothing for the control).
# What to expect: the teacher adds `strength` to the logit of a choice containing "quiet" for AA_m
# names, which multiplies its odds against the other two choices by $e^{3} \approx 20$ in `mcq-biased`
# and by $e^{0.5} \approx 1.65$ here, so far fewer "quiet" distractors flip from losing to winning and
# the difference in success rate between AA_m names and the others shrinks. The permutation test
# compares the $n$ AA_m names with the $7n$ others, so its power grows with $n$; the Benjamini–Hochberg
# correction then asks for a p-value below $0.05 \cdot k/m$ for the word ranked $k$ among $m$ tested
# words. Raising the cap helps too (more "quiet" distractors per name): the zoo's masked LM puts the
# word into about 140 of the roughly 1,700 distinct distractors per name of context 3 at depth 2 (the
# `lab_mcq` module's docstring), and a cap of 600 keeps only part of them. The smallest $n$ at which
# q(quiet) drops below 0.05 is the answer; this book has not measured it. Delete
# `<cache>/lab/mcq-weak-*` to remove the model.
# :::
#
# :::{exercise}
# :label: sodapop-ex-5
#
# Replace the automatic ABC mapping with your own annotation of the mapped words (`abc.read_mapping`
# reads a TSV): which orderings change?
# :::
#
# :::{solution} sodapop-ex-5
# :class: dropdown
#
# Start from the automatic mapping of exactly the words the chapter maps, write it as a TSV in the
# shipped file's columns, annotate it, read it back and compute Table 5 with it (in a cell after the
# ABC section, which defines `rd_all` and `all_groups`):
#
# ```python
# from stereoprobe.sodapop import abc_model as abc
#
# associated = chapter.associated_words(rd_all, all_groups)
# words = sorted(set().union(*associated.values()))
# auto = abc.map_words(words)
# auto["mapped"] = (auto["pole"] != 0).astype(int)
# auto[list(abc.COLUMNS)].to_csv("my_abc.tsv", sep="\t", index=False)
# # edit my_abc.tsv: for every word set trait (a name of abc.TRAITS, e.g. "poor–wealthy"), dimension
# # and pole (+1 high pole, -1 low pole), or pole 0 (and an empty trait) for a word you would not map
# mine = abc.read_mapping("my_abc.tsv")
# ours = abc.abc_orderings(associated, mine, chapter.ABC_PAIRS)
# auto_orderings = abc.abc_orderings(associated, None, chapter.ABC_PAIRS)
# both = ours.merge(auto_orderings, on=["pair", "trait"], suffixes=("", " (auto)"))
# print(both[both["ordering"] != both["ordering (auto)"]][["pair", "trait", "ordering", "ordering (auto)"]])
# abc.abc_table(ours)
# ```
#
# A row with a non-zero `pole` counts, whatever its `mapped` column says, so give every word you reject
# pole 0. The orderings that change are those whose trait scores rest on the words you re-annotated;
# the module's docstring lists where GloVe similarity misleads ("innocent" and "ugly" land on
# *threatening*, "stubborn" on *powerless*, "worried" on *confident*, "kind" is as near *threatening* as
# *benevolent*), so start with those. With few associated words per group a single word is often the
# whole score of a trait, so an ordering that flips with one annotation is weak evidence either way; the
# paper's ‡ (a difference of 5 or more) is the one to trust, and it needs many mapped words.
# :::
