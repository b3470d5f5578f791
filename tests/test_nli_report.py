"""Bias-NLI chapter tables: counts beside the paper, measures with relative changes, Table 7 recipes,
the paper's printed values, single-template tables and whole word-pair slices."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stereoprobe.assets import Embeddings
from stereoprobe.errors import StereoprobeError
from stereoprobe.book.tables import nli as tables
from stereoprobe.nli import measures, projection
from stereoprobe.nli import wordlists as wl
from stereoprobe.nli.templates import TemplateSpec


def test_count_table_matches_the_spec_counts_and_the_paper_formula():
    t = tables.count_table().set_index(["probe", "lists"])
    assert t.loc[("gender", "repo"), "pairs"] == 1_936_512
    assert t.loc[("gender", "paper"), "pairs"] == 162 * 6 * 1968
    assert t.loc[("nationality", "paper"), "pairs"] == 1_574_400
    assert t.loc[("nationality", "paper + duplicate 'terrible'"), "pairs"] == 1_637_376
    assert t.loc[("religion", "paper"), "pairs"] == 836_400
    assert t.loc[("religion", "paper + duplicate 'terrible'"), "pairs"] == 869_856
    assert t.loc[("nationality", "paper"), "formula value"] == 2_134_080
    assert t.loc[("religion", "paper"), "formula value"] == 1_133_730
    assert set(t["templates"]) == {1968}


def test_reference_tables_hold_the_papers_numbers():
    m = tables.reference("measures").set_index(["table", "embedding", "probe", "variant"])
    assert m.loc[(8, "GloVe", "gender", "proj"), "NN"] == 0.480
    assert m.loc[(15, "BERT", "gender", "proj@train/test"), "T:0.7"] == 0.354
    # Table 9 and 15 diffs recompute from the printed values; Table 8's random row does not
    # (book appendix *Where the code and the paper differ*, Bias-NLI: printed percentages)
    orig = m.loc[(3, "GloVe", "nationality", "orig"), "NN"]
    assert round(measures.percent_diff(m.loc[(9, "GloVe", "nationality", "proj"), "NN"], orig), 1) == 13.3
    acc = tables.reference("accuracy").set_index(["table", "variant"])
    assert acc.loc[(10, "-gen"), "test"] == 87.20
    assert len(tables.reference("top_pairs")) == 18
    with pytest.raises(StereoprobeError, match="choose one of"):
        tables.reference("table99")


def _probs(rows):
    return pd.DataFrame(rows, columns=["premise_word", "hypothesis_word", *measures.PROB_COLUMNS])


def test_measures_table_relative_change_against_the_baseline_row():
    base = _probs([("a", "x", 0.5, 0.4, 0.1), ("b", "y", 0.2, 0.6, 0.2)])  # NN 0.5
    proj = _probs([("a", "x", 0.1, 0.8, 0.1), ("b", "y", 0.2, 0.7, 0.1)])  # NN 0.75
    t = tables.measures_table({("orig", "gender"): base, ("proj", "gender"): proj}, ("variant", "probe"),
                              baseline={"variant": "orig"}, n_boot=50)
    t = t.set_index("variant")
    assert t.at["orig", "NN"] == pytest.approx(0.5) and t.at["proj", "NN"] == pytest.approx(0.75)
    assert t.at["proj", "diff_NN"] == pytest.approx(50.0)
    assert t.at["orig", "diff_NN"] == pytest.approx(0.0)
    assert t.at["proj", "FN"] == 1.0 and t.at["orig", "FN"] == 0.5
    assert (t["NN_lo"] <= t["NN"]).all() and (t["NN"] <= t["NN_hi"]).all()
    with pytest.raises(StereoprobeError, match="baseline"):
        tables.measures_table({("proj", "gender"): proj}, ("variant", "probe"), baseline={"variant": "orig"})


def test_averaged_repeats_give_mean_and_spread():
    rows = pd.DataFrame({"kind": ["rand", "rand", "orig"], "NN": [0.2, 0.4, 0.5], "FN": [0.1, 0.3, 0.5],
                         "diff_NN": [-60.0, -20.0, 0.0]})
    out = tables.averaged(rows, ["kind"]).set_index("kind")
    assert out.at["rand", "NN"] == pytest.approx(0.3) and out.at["rand", "diff_NN"] == pytest.approx(-40.0)
    assert (out.at["rand", "NN_min"], out.at["rand", "NN_max"], out.at["rand", "repeats"]) == (0.2, 0.4, 2)


def _toy_embeddings(dim: int = 12, seed: int = 0) -> Embeddings:
    words = {"he", "she", *(a for p in projection.GENDERED_PAIRS for a in p)}
    for name in ("demonyms_train", "demonyms_test", "adherents_train", "adherents_test"):
        words |= {w.lower() for w in wl.load_paper_list(name)}
    words = sorted(words)
    return Embeddings(words, np.random.default_rng(seed).normal(size=(len(words), dim)).astype(np.float32))


def test_bias_directions_have_the_papers_shapes_and_are_unit():
    emb = _toy_embeddings()
    shapes = {b: tables.bias_directions(emb, b).shape for b in tables.BIASES}
    assert shapes == {"gender": (1, 12), "nationality": (1, 12), "religion": (2, 12)}
    rel = tables.bias_directions(emb, "religion")
    assert np.allclose(rel @ rel.T, np.eye(2), atol=1e-8)
    assert np.allclose(tables.bias_directions(emb, "gender")[0], projection.gender_direction(emb))
    with pytest.raises(StereoprobeError, match="Unknown bias"):
        tables.bias_directions(emb, "age")


def test_table7_ratios_are_ordered_and_cosines_bounded():
    t = tables.table7(_toy_embeddings()).set_index("set")
    assert list(t.index) == ["Gendered", "Demonyms", "Adherents"]
    assert t["vectors"].tolist() == [9, 40, 25]
    r = t[["s2/s1", "s3/s1", "s4/s1"]].to_numpy()
    assert (r > 0).all() and (r <= 1).all() and (np.diff(r, axis=1) <= 1e-12).all()
    assert ((t["cosine"] >= 0) & (t["cosine"] <= 1 + 1e-9)).all()


def test_table7_missing_word_is_listed():
    emb = _toy_embeddings()
    keep = [w for w in emb.words if w not in ("iraqi", "man")]
    small = Embeddings(keep, emb.matrix(keep))
    with pytest.raises(StereoprobeError, match="man"):
        tables.table7(small)


def test_word_pair_pairs_are_all_templates_of_that_cell():
    pairs = tables.word_pair_pairs("nationality", "rude", "Iraqi")
    assert len(pairs) == 1968
    assert {(p.premise_filler, p.hypothesis_filler) for p in pairs} == {("rude", "Iraqi")}
    assert pairs[0].premise.startswith("A rude person") and pairs[0].hypothesis.startswith("An Iraqi person")
    assert [p.tid for p in pairs] == list(range(1968))
    with pytest.raises(StereoprobeError, match="not a hypothesis word"):
        tables.word_pair_pairs("nationality", "rude", "Martian")


def test_top_templates_and_paper_pairs_use_the_template_columns():
    from stereoprobe.nli.scoring import pairs_frame

    frame = pairs_frame(TemplateSpec("gender", sample=300, seed=1))
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=len(frame))
    for k, c in enumerate(measures.PROB_COLUMNS):
        frame[c] = p[:, k]
    top = tables.top_templates(frame, "entail", k=3)
    assert list(top.columns[:4]) == list(tables.TOP_KEYS)
    assert top["entail"].tolist() == sorted(frame["entail"], reverse=True)[:3]
    here = tables.paper_pairs_here(frame, "gender")
    assert len(here) == 6 and set(here["label"]) == {"entail", "contradiction"}
    assert (here["n"] >= 0).all()
