"""The Bias-NLI chapter's tables (stereoprobe.book.views.nli) on synthetic probabilities and measures, and the
chapter notebook staying thin."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions
from stereoprobe.assets import Embeddings
from stereoprobe.book.views import nli as chapter
from stereoprobe.book.tables import nli as tables
from stereoprobe.nli import measures, projection
from stereoprobe.nli import wordlists as wl

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "biased_inferences.py"


def _runs(rows) -> pd.DataFrame:
    """A measures table: (variant, probe, NN, diff_NN); the other measures follow NN."""
    t = pd.DataFrame(rows, columns=["variant", "probe", "NN", "diff_NN"])
    for m in tables.MEASURES[1:]:
        t[m] = t["NN"]
        t[f"diff_{m}"] = t["diff_NN"]
    return t


STATIC_RUNS = _runs([
    ("orig", "gender", 0.40, 0.0), ("-gen", "gender", 0.50, 25.0), ("-nat", "gender", 0.41, 2.5),
    ("-rel", "gender", 0.39, -2.5), ("rand0", "gender", 0.38, -5.0), ("rand1", "gender", 0.42, 5.0),
    ("orig", "nationality", 0.60, 0.0), ("-gen", "nationality", 0.61, 1.0), ("-nat", "nationality", 0.66, 10.0),
    ("-rel", "nationality", 0.60, 0.0), ("rand0", "nationality", 0.60, 0.0), ("rand1", "nationality", 0.61, 2.0),
    ("orig", "religion", 0.70, 0.0), ("-gen", "religion", 0.70, 0.0), ("-nat", "religion", 0.71, 1.0),
    ("-rel", "religion", 0.77, 10.0), ("rand0", "religion", 0.69, -1.0), ("rand1", "religion", 0.71, 1.0),
])


def test_static_table_keeps_each_probes_own_rows_beside_the_paper():
    table = chapter.static_table(STATIC_RUNS)
    assert "kind" not in STATIC_RUNS  # the input is not modified
    rows = table.set_index(["probe", "kind"])
    assert sorted(rows.index) == sorted((p, k) for p, own in chapter.PAPER_KIND.items() for k in ("orig", own, "rand"))
    assert rows.at[("gender", "rand"), "NN"] == pytest.approx(0.40) and rows.at[("gender", "rand"), "repeats"] == 2
    assert rows.at[("gender", "-gen"), "diff_NN"] == 25.0
    paper = tables.reference("measures").set_index(["table", "embedding", "probe", "variant"])
    assert rows.at[("gender", "-gen"), "paper NN"] == paper.at[(8, "GloVe", "gender", "proj"), "NN"]
    assert rows.at[("nationality", "orig"), "paper NN"] == paper.at[(3, "GloVe", "nationality", "orig"), "NN"]
    assert list(table["probe"]) == sorted(table["probe"])  # sorted by probe, then kind
    assert chapter.static_numbers(table) == {"static_gen_diff": "+25.0%", "static_nat_diff": "+10.0%",
                                             "static_rel_diff": "+10.0%", "static_rand_diff": "+0.0%"}
    view = chapter.diff_view(table, ["probe", "kind", "repeats"])
    html = view.to_html()
    assert "+25.0%" in html and "paper NN" in html
    assert view.caption.startswith("Tables 1, 3, 5, 8 and 9 (GloVe)")  # the caption static_table gives
    assert chapter.diff_view(table, ["probe"], caption="mine").caption == "mine"
    assert chapter.nn_by_variant(STATIC_RUNS).data.shape == (6, 3)


def test_table15_and_its_numbers():
    runs = _runs([("orig", "gender", 0.5, 0.0), ("proj@test", "gender", 0.4, -20.0),
                  ("rand@test", "gender", 0.45, -10.0), ("rand@test", "gender", 0.55, 10.0)]).drop(columns="probe")
    runs["repeat"] = [0, 0, 0, 1]
    t15 = chapter.table15(runs).set_index("variant")
    assert t15.at["rand@test", "repeats"] == 2 and t15.at["rand@test", "diff_NN"] == pytest.approx(0.0)
    paper = tables.reference("measures").query("table == 15").set_index("variant")
    assert t15.at["proj@test", "paper NN"] == paper.at["proj@test", "NN"]
    assert chapter.diff_view(t15.reset_index(), ["variant", "repeats"]).caption.startswith("Table 15 (gender)")
    assert chapter.table15_numbers(t15.reset_index()) == {"t15_ptest": "-20.0%", "t15_rtest": "+0.0%",
                                                          "t15_ptrain": "not run", "t15_rtrain": "not run"}
    assert chapter.random_spread(runs).data["variant"].tolist() == ["rand@test", "rand@test"]


def _probs(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet([1, 1, 1], size=n)
    return pd.DataFrame({"premise_word": rng.choice(["rude", "kind"], n), "hypothesis_word": rng.choice(["A", "B"], n),
                         **dict(zip(measures.PROB_COLUMNS, p.T))})


def test_least_neutral_pairs_are_word_pair_means():
    probs = _probs()
    t = chapter.least_neutral_pairs(probs, k=3)
    assert len(t) == 3 and t["neutral"].is_monotonic_increasing
    first = t.iloc[0]
    cell = probs[(probs["premise_word"] == first["premise_word"]) & (probs["hypothesis_word"] == first["hypothesis_word"])]
    assert first["neutral"] == pytest.approx(cell["neutral"].mean()) and first["n"] == len(cell)


def test_contextual_numbers_and_summary():
    contextual = pd.DataFrame({"model": ["m1"] * 3 + ["m2"] * 3, "probe": ["gender", "nationality", "religion"] * 2,
                               "NN": [0.1234, 0.5, 0.6, 0.9, 0.9, 0.9]})
    assert chapter.contextual_numbers(contextual) == {"ctx_model": "m1", "ctx_gender_nn": "0.123",
                                                      "ctx_nat_nn": "0.500", "ctx_rel_nn": "0.600"}
    specs = tables.probe_specs(sample=10, seed=0)
    assert chapter.run_summary("smoke", ["m1"], specs) == \
        "profile smoke: 1 NLI model(s); gender 10 pairs, nationality 10 pairs, religion 10 pairs"
    first = chapter.first_pairs(specs).data
    assert len(first) == 3 and first["pair_type"].iloc[0] == "occupations -> gendered_words"
    assert "1,936,512" in chapter.count_view().to_html() and ">1,968<" in chapter.count_view().to_html()
    assert chapter.count_view().caption.startswith("The pair sets of every probe")


def test_measures_beside_paper_shows_the_papers_rows():
    contextual = pd.DataFrame({"model": ["m1"], "probe": ["gender"], "pairs": [100],
                               **{m: [0.5] for m in tables.MEASURES}})
    shown = chapter.measures_beside_paper(contextual).data
    assert shown["source"].tolist().count("here") == 1
    paper = shown[shown["source"] == "paper"]
    assert set(paper["model"]) == {"GloVe", "ELMo", "BERT"} and set(paper["probe"]) == set(chapter.PAPER_KIND)


def test_word_pair_means_and_description():
    class Model:
        def __init__(self, value):
            self.value = value

        def predict(self, pairs, progress=False, threads=1):
            return np.tile(self.value, (len(pairs), 1))

    pairs = tables.word_pair_pairs("nationality", "rude", "Iraqi")
    models = {"orig": Model([0.9, 0.05, 0.05]), "-nat": Model([0.5, 0.4, 0.1])}
    t = chapter.word_pair_means(models, pairs).data
    assert t.loc["-nat", "neutral"] == pytest.approx(0.4) and list(t.index) == ["orig", "-nat"]
    assert chapter.describe_pairs(pairs, "rude × Iraqi") == \
        f"rude × Iraqi: 1,968 templates, e.g. {pairs[0].premise!r} ⇒ {pairs[0].hypothesis!r}"


def test_accuracy_table_lists_every_variant_beside_table10():
    models = {n: SimpleNamespace(metadata={"heldout_accuracy": 0.8, "best_epoch": 2}) for n in ("orig", "-gen", "rand0")}
    view = chapter.accuracy_table(models, [None] * 3000)
    t = view.data.set_index("variant")
    assert t.at["orig", "training pairs"] == 3000 and t.at["-gen", "paper test"] == 87.20
    assert pd.api.types.is_integer_dtype(t["training pairs"])  # a number, shown thousands separated
    assert np.isnan(t.at["rand0", "paper dev"])
    html = view.to_html()
    assert ">3,000<" in html and ">—<" in html and "nan" not in html.lower()


def _small_vectors() -> Embeddings:
    """Random 12-d vectors of every word the bias directions need."""
    words = {"he", "she", *(a for p in projection.GENDERED_PAIRS for a in p)}
    for name in ("demonyms_train", "demonyms_test", "adherents_train", "adherents_test"):
        words |= {w.lower() for w in wl.load_paper_list(name)}
    words = sorted(words)
    return Embeddings(words, np.random.default_rng(0).normal(size=(len(words), 12)).astype(np.float32))


def test_static_directions_names_and_shapes():
    d = chapter.static_directions(_small_vectors(), 2)
    assert list(d) == ["orig", "-gen", "-nat", "-rel", "rand0", "rand1"] and d["orig"] is None
    assert d["-rel"].shape == (2, 12) and d["rand1"].shape == (1, 12)


def test_ensure_zoo_models_skips_what_is_not_a_missing_zoo_model(capsys):
    chapter.ensure_zoo_models([None, "my/hub-model", "zoo:minilm-nli"])  # the committed model is not retrained
    assert capsys.readouterr().out == ""


# ------------------------------------------------------------------ the notebook's merged calls

def _constant_probs(neutral: float, n: int = 10) -> pd.DataFrame:
    """n pairs with the same probabilities: neutral ``neutral``, the rest split between entail and contradiction."""
    other = (1 - neutral) / 2
    return pd.DataFrame({"premise_word": ["rude"] * n, "hypothesis_word": ["A"] * n, "entail": other,
                         "neutral": neutral, "contradiction": other})


def test_contextual_measures_are_the_measures_of_the_probabilities(monkeypatch):
    calls = []

    def load(model, spec, *, options=None):
        calls.append((model, spec.probe, options))
        return _constant_probs(0.8 if model == "m1" else 0.2)

    monkeypatch.setattr(chapter, "load_probabilities", load)
    specs = tables.probe_specs(sample=10, seed=0)
    probs, contextual = chapter.contextual_measures(["m1", "m2"], specs, n_boot=5, seed=0,
                                                    options=RunOptions(device="cpu"))
    assert list(probs) == [(m, p) for m in ("m1", "m2") for p in specs]
    assert calls[0] == ("m1", "gender", RunOptions(device="cpu")) and len(calls) == 6
    assert contextual.set_index(["model", "probe"]).at[("m2", "religion"), "NN"] == pytest.approx(0.2)
    assert contextual["NN"].tolist() == pytest.approx([0.8] * 3 + [0.2] * 3)
    assert contextual["FN"].tolist() == [1.0] * 3 + [0.0] * 3  # neutral is the top label at 0.8, not at 0.2
    assert chapter.contextual_numbers(contextual)["ctx_gender_nn"] == "0.800"


def test_show_measures_draws_and_shows(monkeypatch):
    import matplotlib.pyplot as plt

    plt.close("all")
    figures = []
    monkeypatch.setattr(plt, "show", lambda: figures.append(plt.gcf()))
    contextual = pd.DataFrame({"model": ["m1"] * 3, "probe": ["gender", "nationality", "religion"],
                               **{c: [0.5, 0.6, 0.7] for m in tables.MEASURES for c in (m, f"{m}_lo", f"{m}_hi")}})
    assert chapter.show_measures(contextual, ["gender", "nationality", "religion"]) is None
    assert [ax.get_title() for ax in figures[0].axes] == list(tables.MEASURES)


def test_train_static_models_trains_one_model_per_direction(monkeypatch):
    from stereoprobe.nli import static

    trained = []

    def cached_train(train, held, vectors, *, directions, name, **settings):
        trained.append((len(train), len(held), name, directions, settings))
        return SimpleNamespace(name=name)

    monkeypatch.setattr(static, "cached_train", cached_train)
    monkeypatch.setattr(chapter, "training_corpus", lambda t, d, smoke: (["pair"] * 30, ["pair"] * 3))
    vectors = _small_vectors()
    train, models = chapter.train_static_models(vectors, None, None, 2, smoke=True)
    assert train == ["pair"] * 30 and list(models) == ["orig", "-gen", "-nat", "-rel", "rand0", "rand1"]
    assert models["-rel"].name == "static-rel"
    assert [t[:3] for t in trained[:2]] == [(30, 3, "staticorig"), (30, 3, "static-gen")]
    assert trained[0][3] is None and trained[0][4] == {"threads": 1, "progress": False, "epochs": 1}
    np.testing.assert_allclose(trained[1][3], chapter.static_directions(vectors, 2)["-gen"])


def test_static_runs_measure_every_variant_against_orig(monkeypatch):
    neutral = {"orig": 0.5, "-gen": 0.6}
    monkeypatch.setattr(tables, "static_probabilities", lambda model, spec, progress: _constant_probs(neutral[model]))
    specs = tables.probe_specs(sample=10, seed=0)
    runs = chapter.static_runs({"orig": "orig", "-gen": "-gen"}, specs, n_boot=5, seed=0)
    assert list(zip(runs["variant"], runs["probe"]))[:4] == [("orig", "gender"), ("orig", "nationality"),
                                                             ("orig", "religion"), ("-gen", "gender")]
    rows = runs.set_index(["variant", "probe"])
    assert rows.at[("-gen", "gender"), "NN"] == pytest.approx(0.6)
    assert rows.at[("-gen", "gender"), "diff_NN"] == pytest.approx(20.0)
    assert rows.at[("orig", "religion"), "diff_NN"] == 0


def test_table15_runs_score_every_variant_and_repeat(monkeypatch):
    neutral = {("m", None): 0.5, ("m", "gender"): 0.4, ("m", "random:0"): 0.45, ("m-proj", None): 0.6,
               ("m-rand0", None): 0.5}
    monkeypatch.setattr(chapter, "load_probabilities", lambda model, spec, projection=None, options=None:
                        _constant_probs(neutral[(model, projection)]))
    spec = tables.probe_specs(sample=10, seed=0)["gender"]
    variants, runs = chapter.table15_runs("m", spec, proj_finetuned="m-proj", rand_finetuned=["m-rand0"],
                                          random_controls=1, n_boot=5, seed=0, options=RunOptions(device="cpu"))
    assert list(variants) == [("orig", 0), ("proj@test", 0), ("rand@test", 0), ("proj@train/test", 0),
                              ("rand@train/test", 0)]
    assert runs["diff_NN"].tolist() == pytest.approx([0.0, -20.0, -10.0, 20.0, 0.0])
    assert chapter.table15_numbers(chapter.table15(runs)) == {"t15_ptest": "-20.0%", "t15_rtest": "-10.0%",
                                                              "t15_ptrain": "+20.0%", "t15_rtrain": "+0.0%"}


def test_the_chapter_notebook_only_calls_the_package(logic_lines):
    lines = logic_lines(NOTEBOOK)
    assert len(lines) <= 40, f"{len(lines)} logic lines: move logic into stereoprobe.book.views.nli"
    assert not [line for line in lines if re.match(r"\s*(def|class|for|while|if) ", line)]
