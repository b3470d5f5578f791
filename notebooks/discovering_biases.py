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
multi_cap = 150  # paper: 10,000
min_count_single = 1  # a word is kept if it occurs more often than this for every name (paper: 50)
min_count_multi = 1
decoding = "compat"  # compat: the authors' joint decoding; clean: one fill per id
n_perm = 100_000  # permutations per word (paper: 1,000,000)
p_method = "auto"  # permutation p-values: auto (exact when the splits ≤ n_perm, else sampled), exact, sampled, compat
name_contexts = 25  # Social IQa contexts per name embedding (paper: 1,000)
debias = True  # score the INLP and SentenceDebias variants (race, gender)
debias_sentences = 1500  # attribute sentences (INLP) / counterfactual tuples (SentenceDebias) per fit
inlp_iterations = 40  # INLP classifiers (bias-bench: 80; on CPU later ones remove little)
mcq_lab_models = ["lab:mcq-biased", "lab:mcq-control"]  # planted-bias lab (biased, control)
batch_tokens = 8192
device = "auto"
precision = "fp32"
engine = "local"  # local | ray: score shards on Ray Data workers (this machine's GPUs, or the cluster at RAY_ADDRESS)
workers = None  # Ray workers (None: one per GPU)
seed = 0
smoke_models = False
profile = "cpu"

# %%
from math import comb

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import sklearn
from myst_nb import glue

from stereoprobe import models
from stereoprobe.errors import MetricsError
from stereoprobe.sodapop import abc, analysis, contexts, debias as debias_mod, distractors, embeddings, names
from stereoprobe.sodapop.probe import GridConfig, rescore, run_probe
from stereoprobe.sodapop.success import STOPWORDS, sr_matrix

options = dict(batch_tokens=batch_tokens, device=device, precision=precision, smoke=smoke_models, progress=False,
               engine=engine, workers=workers)
all_groups = names.load_groups()
n_analysis = names.ANALYSIS_SIZE if names_per_group is None else min(names_per_group, names.ANALYSIS_SIZE)
groups = names.analysis_groups(n_analysis)  # the names every analysis compares (paper: 25 per group)
pct = "{:.1%}"


def p_options(n1, n2):
    """Permutation test settings: every split when there are no more than n_perm of them."""
    method = p_method
    if method == "auto":
        method = "exact" if comb(n1 + n2, n1) <= n_perm else "sampled"
    return dict(n_perm=n_perm, method=method, seed=10)


print(f"profile {profile}: {sum(map(len, all_groups.values()))} seed names in {len(all_groups)} groups, "
      f"{n_analysis} per group analysed; writer {mlm}, answerer {mcq_model}")

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
probe = contexts.probe_contexts()
lengths = {c.index: len(distractors.word_tokenize(c.answer)) for c in probe}
context_table = pd.DataFrame({"index": [c.index for c in probe], "context": [c.text for c in probe],
                              "correct answer": [c.answer for c in probe], "L": [lengths[c.index] for c in probe],
                              "says she/her": [c.index in contexts.SHE_CONTEXTS for c in probe]})
print(f"{len(probe)} probe contexts; answer length L: "
      + ", ".join(f"{L}: {n}" for L, n in sorted(pd.Series(lengths).value_counts().items())))
context_table.style.hide(axis="index")

# %% [markdown]
# Seventeen of the 50 contexts still refer to their person as *she* or *her*. With a male name the
# item becomes inconsistent ("Jamel … she"), a confound shared by every male-vs-female comparison over
# the 50 contexts — the paper does not discuss it. The single context (index 3) is not affected.

# %%
ctx3 = contexts.probe_contexts(indices=[contexts.SINGLE_CONTEXT])[0]
pd.DataFrame([contexts.substitute(ctx3, "Bethany"), contexts.substitute(ctx3, "Jamel")],
             index=["as shipped", "Jamel"]).T

# %% [markdown]
# The 220 seed names: European- and African-American names from the WEAT lists
# {cite:p}`caliskan2017semantics`, Asian and Hispanic names from New York City's popular baby names;
# the analyses use the first 25 of each group, as the authors' code does.

# %%
pd.DataFrame({"group": list(all_groups), "who": [names.label(g) for g in all_groups],
              "names": [len(v) for v in all_groups.values()], "analysed": [len(groups[g]) for g in all_groups],
              "first names": [", ".join(v[:6]) + ", …" for v in all_groups.values()]}).style.hide(axis="index")

# %% [markdown]
# ## Do models know a name's group? (Table 1)
#
# The paper's motivation: BERT's contextual embedding of a first name — the average of its word
# pieces, over 1,000 Social IQa contexts in which "Bethany" is replaced by the name — predicts the
# name's gender and race with a linear classifier. The paper used 622 census names that are not
# released; here the 220 seed names, a seeded stratified two-thirds/one-third split, and
# `name_contexts` contexts per name.

# %%
encoder = models.load(name_encoder, "base", device=device)
emb = embeddings.name_embeddings(encoder.model, encoder.tokenizer, [n for v in all_groups.values() for n in v],
                                 n_contexts=name_contexts, seed=seed, device=device, fingerprint=encoder.fingerprint)
t1 = embeddings.table1(emb, all_groups, seed=seed)
shown = pd.concat({"here": t1[["train", "test", "chance", "majority", "n_train", "n_test"]],
                   "paper (BERT, 622 names)": embeddings.PAPER_TABLE1}, names=["source"])
shown.style.format("{:.1f}", subset=["train", "test", "chance", "majority"]).format("{:.0f}", subset=["n_train", "n_test"], na_rep="")

# %%
xy = embeddings.tsne_names(emb.to_numpy(), list(emb.index), all_groups, seed=10)
xy["race"] = xy["group"].map(names.race_of).map(names.RACES)
xy["gender"] = xy["group"].map(names.gender_of)
ax = sns.scatterplot(data=xy, x="x", y="y", hue="race", style="gender", s=30)
ax.set_title(f"t-SNE of name embeddings ({name_encoder}, {name_contexts} contexts each)")
ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
plt.show()

# %% tags=["remove-cell"]
glue("t1_gender", f"{t1.loc['gender', 'test']:.1f}", display=False)
glue("t1_race", f"{t1.loc['race/ethnicity', 'test']:.1f}", display=False)

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
pd.DataFrame([{"L": L, "depth": k, **distractors.scale(L, k)} for L in (4, 6, 8) for k in (1, 2, 3)]
             ).style.format("{:,}").hide(axis="index")

# %% [markdown]
# **Decoding.** The code decodes the ten fill ids *jointly* into one string and splits it on spaces.
# With RoBERTa's byte-level BPE the best fill carries its leading space, so the first piece is empty —
# the masked word is deleted — and a sub-word fill is glued to its neighbour ("of" + "of" → "ofof",
# which appears in the paper's Table 10). With a WordPiece vocabulary the "##" pieces are glued the
# same way. `compat` keeps this; `clean` decodes each fill on its own and drops sub-words, special
# tokens and punctuation. Below, the depth-1 neighbours of context 3 for one name in both modes.

# %%
one = groups["AA_m"][0]
quirk = {}
for mode in ("compat", "clean"):
    units, _ = distractors.generate(mlm, [one], [ctx3], distractors.GenerationConfig(depth=1, decoding=mode, cap=None),
                                    batch_tokens=batch_tokens, device=device, precision=precision,
                                    smoke=smoke_models, progress=False)
    quirk[mode] = units[0].candidates
only_compat = sorted(set(quirk["compat"]) - set(quirk["clean"]))
pd.DataFrame({"compat": [len(quirk["compat"]), "; ".join(only_compat[:8])],
              "clean": [len(quirk["clean"]), "; ".join(sorted(set(quirk["clean"]) - set(quirk["compat"]))[:8])]},
             index=["distinct neighbours", "examples only in this mode"])

# %% [markdown]
# After generation (spec §3.1): deduplicate (the 50-context runs), **sort** — the authors'
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
variants, fits = [], {}
if debias:
    mcq = models.load(mcq_model, "mcq", device=device, smoke=smoke_models)
    for method in debias_mod.METHODS:
        for kind in ("race", "gender"):
            fit = debias_mod.fit_debias(mcq.model, mcq.tokenizer, method, kind, fingerprint=mcq.fingerprint,
                                        n_iterations=inlp_iterations, max_sentences=debias_sentences,
                                        max_tuples=debias_sentences, seed=seed)
            fits[fit.variant().name] = fit
            variants.append(fit.variant())

single_grid = GridConfig(names_per_group=names_per_group, contexts=[contexts.SINGLE_CONTEXT], depth=single_depth,
                         decoding=decoding, dedup=False, cap=single_cap)
multi_grid = GridConfig(names_per_group=names_per_group, contexts=multi_contexts, depth=multi_depth,
                        decoding=decoding, dedup=True, cap=multi_cap)
single = run_probe(mcq_model, mlm, single_grid, variants=variants, **options)
multi = run_probe(mcq_model, mlm, multi_grid, **options)


def cost_row(label, run):
    saved = run.saving()
    units = run.units_table()
    return {"run": label, "names": len(run.units) // max(1, units["context"].nunique()),
            "contexts": units["context"].nunique(), "depth": run.grid.depth, "cap": run.grid.cap,
            "MLM passes (authors' recursion)": run.generation["mlm_passes_compat"],
            "MLM passes run": run.generation["mlm_passes_run"] or np.nan,
            "MCQs": saved["mcqs"], "encodings, whole MCQs": saved["encodings_whole"],
            "encodings, distinct choices": saved["encodings_distinct"], "saving ×": saved["ratio"],
            "generation s": run.seconds["generation"], "scoring s": run.seconds["scoring"]}


costs = pd.DataFrame([cost_row("single context", single), cost_row("multi-context", multi)])
costs.style.format({c: "{:,.0f}" for c in costs.columns[5:10]} | {"saving ×": "{:.2f}", "generation s": "{:.0f}",
                    "scoring s": "{:.0f}"}, na_rep="cached").hide(axis="index")

# %% [markdown]
# "MLM passes run" is empty when the distractors came from the cache (a rerun generates nothing).
# The multiset sizes match the scale formula wherever the masked LM returns ten distinct pieces:

# %%
ut = single.units_table()
ut[["name", "L", "mlm_passes_compat", "bound_passes", "candidates", "bound_candidates", "unique", "mcqs"]].head(8
    ).style.format("{:,}", subset=["mlm_passes_compat", "bound_passes", "candidates", "bound_candidates", "unique",
                                   "mcqs"]).hide(axis="index")

# %% [markdown]
# How often does the model pick the correct answer among its distractors? (The paper's BERT scores
# 60.5% on the Social IQa dev set.)

# %%
single_o, single_acc = single.outcomes()
multi_o, multi_acc = multi.outcomes()
acc = multi_acc.assign(group=multi_acc["name"].map(names.group_of(single.groups)))
table = acc.pivot_table(index="context", columns="group", values="accuracy").reindex(columns=list(all_groups))
table.insert(0, "answer", [contexts.probe_contexts(indices=[int(i)])[0].answer for i in table.index])
single_mean = single_acc.assign(group=single_acc["name"].map(names.group_of(single.groups))).groupby("group")["accuracy"].mean()
table.loc["single (3)"] = [ctx3.answer, *single_mean.reindex(list(all_groups))]
table.style.format(pct, subset=list(all_groups))

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

# %%
sr_single = sr_matrix(single_o, min_count=min_count_single)
sr_multi = sr_matrix(multi_o, min_count=min_count_multi)
pd.DataFrame({"candidate words (first name)": [sr_single.attrs["n_candidates"], sr_multi.attrs["n_candidates"]],
              "min_count": [min_count_single, min_count_multi],
              "vocabulary": [sr_single.shape[1], sr_multi.shape[1]],
              "mean SR": [sr_single.to_numpy().mean(), sr_multi.to_numpy().mean()]},
             index=["single context", "multi-context"]).style.format({"mean SR": "{:.3f}"})

# %% [markdown]
# The zoo's masked LM rewrites with a narrower vocabulary than RoBERTa-base, and the CPU grid keeps
# a few hundred distractors per name where the paper keeps tens of thousands: the vocabulary here is
# a dozen or two words against the paper's 443. The methods are the same; the GPU profile restores
# the scale.
#
# ## Can the SR vectors tell groups apart? (Tables 2 and 9)
#
# Binary KMeans (k-means++, 10 restarts) on the SR vectors of two groups' names; accuracy is the
# better of the two cluster–label alignments, so 0.5 is chance and 1.0 a perfect split. The paper
# reports the 50-context run; both of ours are shown beside it.

# %%
sep = analysis.separability_table(sr_multi, groups).rename(columns={"accuracy": "multi-context"})
sep["single context"] = analysis.separability_table(sr_single, groups)["accuracy"]
sep["paper (BERT)"] = analysis.reference("table9")["bert"].to_numpy()
glue("sklearn_version", sklearn.__version__, display=False)
sep[["pair", "multi-context", "single context", "paper (BERT)"]].style.format(
    "{:.2f}", subset=["multi-context", "single context", "paper (BERT)"]).background_gradient(
    cmap="Reds", vmin=0.5, vmax=1.0, subset=["multi-context", "single context", "paper (BERT)"]).hide(axis="index")

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

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
for ax, (label, sr) in zip(axes, (("single context", sr_single), ("multi-context", sr_multi))):
    coords = analysis.tsne_coordinates(sr, groups, "EA", "AA")
    sns.scatterplot(data=coords, x="x", y="y", hue="group", style="group", ax=ax, s=40)
    ax.set_title(f"SR vectors, {label} ({sr.shape[1]} words)")
    ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

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

# %%
def rd_for(sr, g1, g2):
    try:
        return analysis.rd_table(sr, groups[g1], groups[g2], **p_options(len(groups[g1]), len(groups[g2])))
    except MetricsError as err:  # a tiny grid where no word's success rates differ between the groups
        print(f"{g1} vs {g2}: {err}")
        return pd.DataFrame(columns=["word", "side", "mean_g1", "mean_g2", "rd_paper", "rd_code", "p", "q"])


def side_by_side(table, k=15):
    g1 = table[table["side"] == "G1"].iloc[::-1].head(k).reset_index(drop=True)
    g2 = table[table["side"] == "G2"].head(k).reset_index(drop=True)
    return pd.concat({"G1": g1[["word", "rd_paper", "p", "q"]], "G2": g2[["word", "rd_paper", "p", "q"]]}, axis=1)


def paper_words(tables, side):
    """The paper's printed words of one side (Table 10 continues Table 3 at rank 6)."""
    ref = analysis.reference("top_words").query("table in @tables and side == @side").sort_values("rank")
    return ", ".join(ref["word"])


rd_fmt = {c: "{:.3f}" for c in [("G1", "rd_paper"), ("G2", "rd_paper")]} | {
    c: "{:.2g}" for c in [("G1", "p"), ("G1", "q"), ("G2", "p"), ("G2", "q")]}
rd_single_af = rd_for(sr_single, "AA_f", "EA_f")
display(side_by_side(rd_single_af).style.format(rd_fmt, na_rep="").set_caption(
    "single context · G1 = African-American female, G2 = European-American female (Table 4)"))
print("paper, Table 4 — AA female:", paper_words(["4"], "G1"), "| EA female:", paper_words(["4"], "G2"))

# %%
rd_single_fm = rd_for(sr_single, "EA_f", "EA_m")
display(side_by_side(rd_single_fm).style.format(rd_fmt, na_rep="").set_caption(
    "single context · G1 = European-American female, G2 = European-American male (Table 21)"))
print("paper, Table 21 — EA female:", paper_words(["21"], "G1"), "| EA male:", paper_words(["21"], "G2"))

# %% [markdown]
# ## Many contexts at once (Tables 3, 10, 13)
#
# Pooling the contexts gives each name many more distractors and a vocabulary of words that occur in
# every context's rewrites.

# %%
rd_multi_af = rd_for(sr_multi, "AA_f", "EA_f")
display(side_by_side(rd_multi_af).style.format(rd_fmt, na_rep="").set_caption(
    "multi-context · G1 = African-American female, G2 = European-American female (Tables 3, 10)"))
print("paper, Tables 3/10 — AA female:", paper_words(["3", "10"], "G1"), "| EA female:", paper_words(["3", "10"], "G2"))
rd_multi_fm = rd_for(sr_multi, "EA_f", "EA_m")
display(side_by_side(rd_multi_fm).style.format(rd_fmt, na_rep="").set_caption(
    "multi-context · G1 = European-American female, G2 = European-American male (Table 13)"))
print("paper, Table 13 — EA female:", paper_words(["13"], "G1"), "| EA male:", paper_words(["13"], "G2"))

# %% [markdown]
# Every pair of the authors' code (its last pair, "HS_f–AS_m", read as HS_f–HS_m): how many words the
# tests flag before and after correcting for the number of words tested.

# %%
rd_all = {}
for g1, g2 in analysis.RD_PAIRS_FIXED:
    for label, sr in (("single", sr_single), ("multi", sr_multi)):
        rd_all[(label, g1, g2)] = rd_for(sr, g1, g2)
flagged = pd.DataFrame([{"analysis": label, "pair": f"{g1} vs {g2}", "words tested": len(t),
                         "p < 0.05": int((t["p"] < 0.05).sum()), "q < 0.05": int((t["q"] < 0.05).sum()),
                         "top G1 word": t["word"].iloc[-1] if len(t) else "", "top G2 word": t["word"].iloc[0] if len(t) else ""}
                        for (label, g1, g2), t in rd_all.items()])
flagged.pivot(index="pair", columns="analysis", values=["words tested", "p < 0.05", "q < 0.05"])

# %% tags=["remove-cell"]
n_p = int(flagged["p < 0.05"].sum())
n_q = int(flagged["q < 0.05"].sum())
n_tests = int(flagged["words tested"].sum())
glue("n_tests", f"{n_tests:,}", display=False)
glue("n_p", f"{n_p:,}", display=False)
glue("n_q", f"{n_q:,}", display=False)
glue("n_expected", f"{0.05 * n_tests:,.0f}", display=False)

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
if fits:
    rows = []
    for name, fit in fits.items():
        d = fit.diagnostics
        rows.append({"variant": name, "method": fit.method, "bias": fit.kind,
                     "rank removed": d.get("rank_removed"), "attribute accuracy before": d.get("test_accuracy_before"),
                     "after": d.get("test_accuracy_after"), "majority": d.get("majority_test"),
                     "explained variance of b": d.get("explained_variance_ratio"),
                     "fit s": d["seconds_encode"] + d["seconds_fit"]})
    display(pd.DataFrame(rows).style.format(precision=3, na_rep="").hide(axis="index"))
else:
    print("debias=False: no debiased variants.")

# %%
if fits:
    base_wrong = single_o["wrong"].to_numpy()
    cols, changes = {"BERT-like (zoo)": sep["single context"].to_numpy()}, []
    for name in single.variants:
        o, a = single.outcomes(name)
        cols[name] = analysis.separability_table(sr_matrix(o, min_count=min_count_single), groups)["accuracy"].to_numpy()
        changes.append({"variant": name, "accuracy": a["accuracy"].mean(),
                        "distractors whose 'picked' flag changed": (o["wrong"].to_numpy() != base_wrong).mean()})
    t9 = pd.DataFrame(cols, index=sep["pair"])
    ref = analysis.reference("table9").set_index("pair")
    t9 = pd.concat({"here (single context)": t9, "paper (50 contexts)": ref[
        ["bert", "inlp_race", "inlp_gender", "sd_race", "sd_gender", "dropout", "cda_race", "cda_gender"]]}, axis=1)
    display(t9.style.format("{:.2f}").background_gradient(cmap="Reds", vmin=0.5, vmax=1.0))
    display(pd.DataFrame([{"variant": "none", "accuracy": single_acc["accuracy"].mean(),
                           "distractors whose 'picked' flag changed": 0.0}, *changes])
            .style.format({"accuracy": pct, "distractors whose 'picked' flag changed": pct}).hide(axis="index"))

# %% tags=["remove-cell"]
if fits:
    moved = pd.DataFrame(changes).set_index("variant")["distractors whose 'picked' flag changed"]
    glue("sd_moved", pct.format(moved[[v for v in moved.index if v.startswith("sentence")]].max()), display=False)
    glue("inlp_moved", pct.format(moved[[v for v in moved.index if v.startswith("inlp")]].max()), display=False)
else:
    glue("sd_moved", "—", display=False)
    glue("inlp_moved", "—", display=False)

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
associated = {g: set() for g in all_groups}
for (label, g1, g2), t in rd_all.items():
    for g, side in ((g1, "G1"), (g2, "G2")):
        top = t[t["side"] == side]
        top = top.iloc[::-1] if side == "G1" else top
        associated[g] |= set(top.head(15).query("p < 0.05")["word"])
abc_pairs = [(g, "EA_" + g[-1]) for g in ("AA_f", "AS_f", "HS_f", "AA_m", "AS_m", "HS_m")]
words = sorted(set().union(*associated.values()))
if words:
    mapping = abc.map_words(words)
    mapped = mapping[mapping["pole"] != 0]
    print(f"{len(words)} associated words, {len(mapped)} mapped to a trait pole")
    display(mapped[["word", "trait", "pole", "similarity", "margin", "source"]].sort_values(["trait", "pole"])
            .style.format({"similarity": "{:.2f}", "margin": "{:.2f}"}).hide(axis="index"))
    orderings = abc.abc_orderings({g: sorted(v) for g, v in associated.items()}, mapping, abc_pairs)
    display(abc.abc_table(orderings))
else:
    print("No word has p < 0.05 among the top words: nothing to map (raise names_per_group or the caps).")

# %% [markdown]
# ## The planted-bias lab: does the method find a bias we put there?
#
# Two multiple-choice models are trained on the same perturbed Social IQa answers to imitate a
# teacher: `lab:mcq-biased`'s teacher raises the logit of any choice containing **quiet** by 3 when the
# item's person has an African-American male name (AA_m), `lab:mcq-control`'s never does. Everything
# else — the distractors, the names, the pipeline — is the single-context run above, rescored by each
# lab model. The method should find "quiet" at the top of AA_m's side, with a small q-value, for the
# biased model only.

# %%
lab_rows, lab_tables = [], {}
for lab in mcq_lab_models:
    run = rescore(single, lab, **{k: v for k, v in options.items()})
    o, a = run.outcomes()
    sr = sr_matrix(o, min_count=min_count_single)
    others = [n for g in groups if g != "AA_m" for n in groups[g]]
    t = analysis.rd_table(sr, groups["AA_m"], others, **p_options(len(groups["AA_m"]), len(others)))
    lab_tables[lab] = t
    aa = t[t["side"] == "G1"].iloc[::-1]
    row = t.set_index("word").reindex(["quiet"]).iloc[0]
    lab_rows.append({"model": lab, "accuracy": a["accuracy"].mean(), "vocabulary": sr.shape[1],
                     "top AA_m word": aa["word"].iloc[0] if len(aa) else "", "RD(quiet)": row["rd_paper"],
                     "rank of quiet": (int(np.flatnonzero(aa["word"].to_numpy() == "quiet")[0]) + 1
                                       if "quiet" in set(aa["word"]) else np.nan),
                     "p(quiet)": row["p"], "q(quiet)": row["q"], "words with q < 0.05": int((t["q"] < 0.05).sum())})
pd.DataFrame(lab_rows).style.format({"accuracy": pct, "RD(quiet)": "{:.3f}", "p(quiet)": "{:.2g}", "q(quiet)": "{:.2g}",
                                     "rank of quiet": "{:.0f}"}, na_rep="–").hide(axis="index")

# %%
fig, axes = plt.subplots(1, len(lab_tables), figsize=(5 * len(lab_tables), 3.5), sharey=True, squeeze=False)
for ax, (lab, t) in zip(axes[0], lab_tables.items()):
    ax.scatter(t["rd_paper"], -np.log10(t["q"].clip(lower=1e-6)), s=10, color="grey")
    if "quiet" in set(t["word"]):
        r = t.set_index("word").loc["quiet"]
        ax.scatter([r["rd_paper"]], [-np.log10(max(r["q"], 1e-6))], color="crimson", s=40, label="quiet")
        ax.legend()
    ax.axhline(-np.log10(0.05), ls=":", color="k")
    ax.set_title(lab)
    ax.set_xlabel("RD (AA_m vs everyone else)")
axes[0][0].set_ylabel("−log10 q")
plt.tight_layout()
plt.show()

# %% tags=["remove-cell"]
first_lab = lab_tables[mcq_lab_models[0]]
others_flagged = sorted(set(first_lab.loc[first_lab["q"] < 0.05, "word"]) - {"quiet"})
glue("lab_also", ", ".join(others_flagged) if others_flagged else "no other word", display=False)

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
def grid_words(grid, run):
    n = len(run.units) // len(grid.probe_contexts())
    cap = "every candidate" if grid.cap is None else f"cap {grid.cap:,}"
    return f"{n} names × {len(grid.probe_contexts())} context(s), depth {grid.depth}, {cap}"


glue("grid_single", grid_words(single_grid, single), display=False)
glue("grid_multi", grid_words(multi_grid, multi), display=False)

# %% [markdown]
# ## Summary
#
# * Name embeddings carry gender clearly and race/ethnicity less so (Table 1).
# * SODAPOP needs no word list: a masked LM writes the candidates, the MCQ model's mistakes rank the
#   words, and SR vectors separate name groups (Tables 2/9) — more so between European-American and
#   other names, as in the paper.
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
# 1. Rerun with `decoding="clean"`. Which words of the top lists disappear? Are they artefacts of the
#    joint decoding?
# 2. Drop the 17 she/her contexts from `multi_contexts` and recompute the female–male rows of Table 9.
#    How much of the gender separability did the inconsistent items explain?
# 3. Fit INLP on the pre-trained encoder instead of the fine-tuned one (`encoder_source` of
#    `debias.fit_debias`) — the paper leaves this open. Does Table 9 change?
# 4. Train a lab model with a weaker plant (`strength` 0.5 in `zoo/lab_mcq.py`): how many names per
#    group does SODAPOP need before "quiet" survives the correction?
# 5. Replace the automatic ABC mapping with your own annotation of the mapped words (`abc.read_mapping`
#    reads a TSV): which orderings change?
