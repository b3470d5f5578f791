"""Tables of the chapter "Measuring and mitigating biased inferences" (Dev et al. 2020), and the paper's
printed values beside which they are shown.

* :func:`count_table` — pairs per probe and list choice, beside the paper's formula counts (book appendix
  *Where the code and the paper differ*, Bias-NLI: templates and pair counts);
* :func:`probe_specs` — the three pair sets of a run (sampled the same way for every model);
* :func:`measures_table` — NN / FN / T:0.5 / T:0.7 with bootstrap CIs for several models or variants,
  with the relative change against a baseline (Tables 1, 3, 5, 8, 9, 15);
* :func:`top_templates` and :func:`paper_pairs_here` — the most entailed / contradicted single
  templates (Tables 2, 4, 6) and the paper's printed examples looked up in our scores;
* :func:`bias_directions` and :func:`table7` — the projected directions (he − she; the demonym and
  adherent subspaces) and the principal-value ratios / cosines of Table 7;
* :func:`reference` — the paper's printed numbers (``data/nli/reference/*.tsv``).

>>> reference("measures").query("table == 1")[["embedding", "NN"]].values.tolist()
[['GloVe', 0.387], ['ELMo', 0.417], ['BERT', 0.421]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...errors import StereoprobeError
from ...nli import measures, projection
from ...nli import wordlists as wl
# the report's own table: stereoprobe.nli.reporting (the probe's), read here as the chapter shows it
from ...nli.reporting import MEASURES, measures_table, neutrality_row  # noqa: F401
from ...nli.templates import PROBES, SOURCES, TemplateSpec, count, paper_formula_count
from ...paths import data_dir

REFERENCES = ("measures", "accuracy", "table7", "top_pairs")
#: Projection variants of the static model: what is removed (the paper's three bias subspaces).
BIASES = ("gender", "nationality", "religion")
#: The Train lists that define each subspace and its number of components (book appendix *Where the code and the paper differ*,
#: Bias-NLI: subspace recipe).
SUBSPACE_LISTS = {"nationality": ("demonyms_train", 1), "religion": ("adherents_train", 2)}
#: The full sets of Table 7 (Train + Test lists).
TABLE7_SETS = {"Demonyms": ("demonyms_train", "demonyms_test"), "Adherents": ("adherents_train", "adherents_test")}
TOP_KEYS = ("premise_word", "verb", "object", "hypothesis_word")


def reference(kind: str) -> pd.DataFrame:
    """The paper's printed numbers: ``measures`` (Tables 1, 3, 5, 8, 9, 11, 13–15), ``accuracy``
    (Tables 10, 16, 17), ``table7`` (Tables 7, 12) or ``top_pairs`` (Tables 2, 4, 6)."""
    if kind not in REFERENCES:
        raise StereoprobeError(f"Unknown reference table {kind!r}; choose one of {', '.join(REFERENCES)}.")
    return pd.read_csv(data_dir() / "nli" / "reference" / f"paper_{kind}.tsv", sep="\t", comment="#")


def count_table() -> pd.DataFrame:
    """Pairs of every probe and list choice, beside the paper's formula and printed counts."""
    rows = []
    for probe in PROBES:
        paper = paper_formula_count(probe)
        choices = [(s, False) for s in SOURCES] if probe == "gender" else [("paper", False), ("paper", True)]
        for source, dup in choices:
            c = count(TemplateSpec(probe, source=source, keep_duplicate=dup))
            rows.append({"probe": probe, "lists": source + (" + duplicate 'terrible'" if dup else ""),
                         "premise words": c.premise_fillers, "hypothesis words": c.hypothesis_fillers,
                         "templates": c.templates, "pairs": c.pairs, "paper formula": paper.formula,
                         "formula value": paper.value, "paper states": paper.paper_states})
    return pd.DataFrame(rows)


def probe_specs(sample=None, seed: int = 0, source: str = "repo", **options) -> dict[str, TemplateSpec]:
    """The gender, nationality and religion pair sets of one run (the same sample for every model)."""
    return {p: TemplateSpec(p, source=source if p == "gender" else "repo", sample=sample, seed=seed, **options)
            for p in PROBES}


def averaged(rows: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Rows averaged over repeats (e.g. the random directions): mean of every measure and diff, plus
    the spread (min–max) of NN; the paper averages its 8 random controls (whether it averaged the diffs per
    run is not stated: book appendix *Where the code and the paper differ*, Bias-NLI: random controls)."""
    value_cols = [c for c in rows.columns if c in MEASURES or c.startswith("diff_")]
    out = rows.groupby(list(by), sort=False)[value_cols].mean()
    out["NN_min"] = rows.groupby(list(by), sort=False)["NN"].min()
    out["NN_max"] = rows.groupby(list(by), sort=False)["NN"].max()
    out["repeats"] = rows.groupby(list(by), sort=False).size()
    return out.reset_index()


def top_templates(probs: pd.DataFrame, label: str = "entail", k: int = 5) -> pd.DataFrame:
    """The k single templates (premise word – verb – object – hypothesis word) with the highest mean
    ``label`` probability, as the paper's Tables 2, 4 and 6 print them."""
    return measures.top_pairs(probs, label, k=k, keys=TOP_KEYS)


def paper_pairs_here(probs: pd.DataFrame, probe: str) -> pd.DataFrame:
    """The paper's printed examples of ``probe`` (Tables 2/4/6) with our probabilities for the same
    template, where the scored sample contains it (``n`` = 0 otherwise)."""
    ref = reference("top_pairs").query("probe == @probe")
    keyed = probs.assign(**{c: probs[c].astype(str) for c in TOP_KEYS})
    ours = keyed.groupby(list(TOP_KEYS), observed=True)[list(measures.PROB_COLUMNS)].mean()
    ours["n"] = keyed.groupby(list(TOP_KEYS), observed=True).size()
    out = ref.join(ours, on=list(TOP_KEYS))
    out["n"] = out["n"].fillna(0).astype(int)
    return out.drop(columns=["table", "probe"])


# -- directions (Tables 7 and 12) --------------------------------------------------------------------------------
def _lower(name: str) -> list[str]:
    return [w.lower() for w in wl.load_paper_list(name)]


def bias_directions(embeddings, bias: str, method: str = "svd_uncentered", gender_method: str = "normalize_each"
                    ) -> np.ndarray:
    """The (k, d) directions removed for ``bias``: gender = he − she (k = 1); nationality = the top
    principal direction of the 8 DemonymsTrain vectors; religion = the top 2 of the 8 AdherentsTrain
    vectors (lower-cased words, unit rows; ``method`` as in :func:`projection.subspace`)."""
    if bias not in BIASES:
        raise StereoprobeError(f"Unknown bias {bias!r}; choose one of {', '.join(BIASES)}.")
    if bias == "gender":
        return projection.gender_direction(embeddings, method=gender_method)[None, :]
    name, k = SUBSPACE_LISTS[bias]
    return projection.subspace(projection.vectors_for(_lower(name), embeddings), k, method=method)


def table7(embeddings, method: str = "svd_uncentered") -> pd.DataFrame:
    """Principal-value ratios σ₂/σ₁, σ₃/σ₁, σ₄/σ₁ and the cosine column of Table 7.

    Gendered: the 9 differences of unit-normalized pairs, cosine with he − she. Demonyms (8 train + 32
    test) and Adherents (8 + 17): unit-normalized words, |cos| between the top direction of the full set
    and that of the Train list alone.
    """
    diffs = projection.pair_differences(projection.GENDERED_PAIRS, embeddings)
    top = projection.subspace(diffs, 1, method=method, normalize_rows=False)[0]
    rows = [("Gendered", len(diffs), projection.principal_value_ratios(diffs, method=method),
             projection.abs_cosine(top, projection.gender_direction(embeddings)))]
    for name, (train, test) in TABLE7_SETS.items():
        words = _lower(train) + _lower(test)
        vectors = projection.vectors_for(words, embeddings)
        ratios = projection.principal_value_ratios(vectors, method=method, normalize_rows=True)
        full = projection.subspace(vectors, 1, method=method)[0]
        part = projection.subspace(projection.vectors_for(_lower(train), embeddings), 1, method=method)[0]
        rows.append((name, len(words), ratios, projection.abs_cosine(full, part)))
    return pd.DataFrame([{"set": s, "vectors": n, "s2/s1": r[0], "s3/s1": r[1], "s4/s1": r[2], "cosine": c}
                         for s, n, r, c in rows])


def static_probabilities(model, spec: TemplateSpec, *, progress: bool = True, threads: int | None = 1) -> pd.DataFrame:
    """Per-pair probabilities of a :class:`~stereoprobe.nli.static.StaticNLI` on ``spec``, in the frame of
    :func:`stereoprobe.nli.scoring.load_probabilities` (not stored: the static model scores ~14,000 pairs/s).
    Stops, listing them, if template words have no vector (they would be read as random OOV vectors)."""
    from ...nli.scoring import pairs_frame
    from ...nli.templates import fillers, iter_pairs

    words = [w for side in fillers(spec) for w in side]
    absent = [w for w in sorted(set(words)) if model.oov_words([w])]
    if absent:
        raise StereoprobeError(f"{len(absent)} {spec.probe} word(s) have no vector in the model's embeddings: "
                               f"{', '.join(absent[:20])}; use embeddings that cover them.")
    out = model.predict([(p.premise, p.hypothesis) for p in iter_pairs(spec)], progress=progress, threads=threads)
    frame = pairs_frame(spec)
    for k, c in enumerate(measures.PROB_COLUMNS):
        frame[c] = out[:, k]
    return frame


def word_pair_pairs(probe: str, premise_word: str, hypothesis_word: str, **options) -> list:
    """Every template of one word pair (e.g. rude × Iraqi: 1,968 pairs), without enumerating the others."""
    from ...nli.templates import fillers, pairs_at, templates

    spec = TemplateSpec(probe, **options)
    prem, hyp = fillers(spec)
    for word, words, what in ((premise_word, prem, "premise"), (hypothesis_word, hyp, "hypothesis")):
        if word not in words:
            raise StereoprobeError(f"{word!r} is not a {what} word of the {probe} probe; some are: {', '.join(words[:8])}.")
    n_t = len(templates())
    start = (prem.index(premise_word) * len(hyp) + hyp.index(hypothesis_word)) * n_t
    return pairs_at(spec, range(start, start + n_t))
