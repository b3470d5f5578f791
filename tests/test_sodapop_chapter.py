"""The SODAPOP chapter's tables (stereoprobe.book.views.sodapop) on synthetic success rates and stub runs, the
permutation-test rule shared with the CLI, and the chapter notebook staying thin."""

from __future__ import annotations

import re
from math import comb
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions
from stereoprobe.errors import MetricsError
from stereoprobe.book.views import sodapop as chapter
from stereoprobe.sodapop import analysis, contexts, names
from stereoprobe.sodapop.probe import GridConfig

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "discovering_biases.py"


def _groups(n: int = 3) -> dict[str, list[str]]:
    return {g: [f"{g}{i}" for i in range(n)] for g in names.GROUPS}


def _sr(groups, seed: int = 0, words=("kind", "quiet", "loud", "rude", "smart", "calm")) -> pd.DataFrame:
    """Success rates with a real difference on 'quiet' for AA_f and on 'kind' for EA_f."""
    rng = np.random.default_rng(seed)
    rows = [n for g in groups.values() for n in g]
    sr = pd.DataFrame(rng.uniform(0.2, 0.4, size=(len(rows), len(words))), index=rows, columns=list(words))
    sr.loc[groups["AA_f"], "quiet"] += 0.5
    sr.loc[groups["EA_f"], "kind"] += 0.5
    return sr


def _captured(monkeypatch) -> list:
    shown = []
    monkeypatch.setattr(chapter, "show", shown.append)
    return shown


# ------------------------------------------------------------------ the permutation rule (one home)

@pytest.mark.parametrize("n1, n2, n_perm", [(2, 2, 1), (2, 2, 6), (2, 2, 5), (8, 8, 12_870), (8, 8, 12_869),
                                            (2, 14, 1000), (25, 25, 1_000_000), (1, 1, 2)])
def test_permutation_method_is_exact_when_every_split_fits(n1, n2, n_perm):
    expected = "exact" if comb(n1 + n2, n1) <= n_perm else "sampled"  # the rule the chapter and the CLI used
    assert analysis.permutation_method(n1, n2, n_perm) == expected
    assert chapter.permutation_options(n1, n2, n_perm=n_perm) == {"n_perm": n_perm, "method": expected, "seed": 10}


def test_permutation_method_passes_explicit_methods_and_rejects_others():
    for method in analysis.METHODS:
        assert analysis.permutation_method(25, 25, 10, method) == method
    with pytest.raises(MetricsError, match="choose 'auto' or one of"):
        analysis.permutation_method(2, 2, 10, "bootstrap")
    with pytest.raises(MetricsError, match="positive integers"):
        analysis.permutation_method(0, 2, 10)


# ------------------------------------------------------------------ the data

def test_context_table_and_lengths():
    table = chapter.context_table()
    assert len(table) == 50 and list(table.columns) == ["index", "context", "correct answer", "L", "says she/her"]
    assert int(table["says she/her"].sum()) == len(contexts.SHE_CONTEXTS) == 17
    assert chapter.length_summary(table) == \
        "50 probe contexts; answer length L: 1: 22, 2: 7, 3: 7, 4: 5, 5: 1, 6: 6, 7: 1, 11: 1"
    example = chapter.substitution_example("Jamel")
    assert list(example.columns) == ["as shipped", "Jamel"]
    assert example.at["question", "Jamel"] == "How would you describe Jamel?"
    assert example.at["question", "as shipped"] == "How would you describe Bethany?"


def test_analysed_groups_and_summary():
    assert {len(v) for v in chapter.analysed_groups(None).values()} == {names.ANALYSIS_SIZE}
    assert {len(v) for v in chapter.analysed_groups(100).values()} == {names.ANALYSIS_SIZE}
    groups = chapter.analysed_groups(2)
    all_groups = names.load_groups()
    assert chapter.run_summary("smoke", all_groups, groups, "zoo:minilm-mlm", "zoo:minilm-mcq") == \
        "profile smoke: 220 seed names in 8 groups, 2 per group analysed; writer zoo:minilm-mlm, answerer zoo:minilm-mcq"
    html = chapter.name_groups_table(all_groups, groups).to_html()
    assert "African American male" in html and "<th" in html


def test_scale_table_is_the_formula():
    data = chapter.scale_table().data
    assert len(data) == 9
    row = data[(data["L"] == 6) & (data["depth"] == 3)].iloc[0]
    assert row["candidates"] == 219_660  # the chapter's prose: 219,660 candidates for context 3 at depth 3


# ------------------------------------------------------------------ words

def test_rd_for_uses_the_rule_and_survives_a_degenerate_grid(capsys):
    groups = _groups()
    sr = _sr(groups)
    t = chapter.rd_for(sr, groups, "AA_f", "EA_f", n_perm=1000)
    expected = analysis.rd_table(sr, groups["AA_f"], groups["EA_f"], n_perm=1000, method="exact", seed=10)
    pd.testing.assert_frame_equal(t, expected)
    flat = pd.DataFrame(0.5, index=sr.index, columns=sr.columns)
    empty = chapter.rd_for(flat, groups, "AA_f", "EA_f", n_perm=1000)
    assert empty.empty and tuple(empty.columns) == chapter.RD_COLUMNS
    assert capsys.readouterr().out.startswith("AA_f vs EA_f: No word has a relative difference")


def test_show_top_words_captions_and_the_papers_words(monkeypatch, capsys):
    shown = _captured(monkeypatch)
    groups = _groups()
    chapter.show_top_words(_sr(groups), groups, ("AA_f", "EA_f"), "single context", ["4"], n_perm=1000)
    chapter.show_top_words(_sr(groups), groups, ("AA_f", "EA_f"), "multi-context", ["3", "10"], n_perm=1000)
    assert shown[0].caption == ("Top 15 words by relative difference (RD) toward each group, with p and q — "
                                "single context: G1 = African-American female, G2 = European-American female "
                                "(paper Table 4)")
    assert shown[1].caption.endswith("multi-context: G1 = African-American female, G2 = European-American female "
                                     "(paper Tables 3, 10)")
    top = shown[0].data
    assert top[("G1", "word")].iloc[0] == "quiet" and top[("G2", "word")].iloc[0] == "kind"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("paper, Table 4 — AA female: vicious, brutal, stubborn, possessive, arrogant | "
                        "EA female: educated, caring, aroused, sweet, interesting")
    assert lines[1].startswith("paper, Tables 3/10 — AA female: innocent, cousin, dead, ally, violent, wary")


def test_rd_tables_flagged_and_associated_words():
    groups = _groups()
    srs = {"single": _sr(groups, 0), "multi": _sr(groups, 1)}
    pairs = [("AA_f", "EA_f"), ("EA_f", "EA_m")]
    rd_all = chapter.rd_tables(srs, groups, pairs, n_perm=1000)
    assert list(rd_all) == [("single", "AA_f", "EA_f"), ("multi", "AA_f", "EA_f"),
                            ("single", "EA_f", "EA_m"), ("multi", "EA_f", "EA_m")]
    flagged = chapter.flagged_table(rd_all)
    assert flagged["words tested"].tolist() == [6, 6, 6, 6]
    assert flagged.loc[0, "top G1 word"] == "quiet" and flagged.loc[0, "top G2 word"] == "kind"
    numbers = chapter.flagged_numbers(flagged)
    assert numbers["n_tests"] == "24" and numbers["n_expected"] == "1"
    assert int(numbers["n_p"]) == int((flagged["p < 0.05"]).sum())
    view = chapter.flagged_view(flagged)
    assert list(view.index) == ["AA_f vs EA_f", "EA_f vs EA_m"] and ("q < 0.05", "multi") in view.columns
    # 3 vs 3 names: the exact test's smallest two-sided p is 2/20, so nothing is associated at 0.05 ...
    assert chapter.associated_words(rd_all, names.GROUPS) == {g: set() for g in names.GROUPS}
    # ... with 6 names a side it is 2/924: 'quiet' for AA_f, 'kind' for EA_f
    big = _groups(6)
    rd_big = chapter.rd_tables({"single": _sr(big)}, big, pairs[:1], n_perm=1000)
    associated = chapter.associated_words(rd_big, names.GROUPS)
    assert "quiet" in associated["AA_f"] and "kind" in associated["EA_f"] and not associated["HS_m"]


def test_show_abc_maps_the_words_and_orders_the_groups(monkeypatch, capsys):
    chapter.show_abc({g: set() for g in names.GROUPS})
    assert "nothing to map" in capsys.readouterr().out
    shown = _captured(monkeypatch)
    associated = {g: set() for g in names.GROUPS} | {"AA_f": {"aggressive", "friendly"}, "EA_f": {"quiet", "lazy"}}
    chapter.show_abc(associated)
    assert capsys.readouterr().out.startswith("4 associated words, ")
    mapped, orderings = shown[0].data, shown[1]
    assert set(mapped["word"]) <= {"aggressive", "friendly", "quiet", "lazy"}
    assert len(orderings) > 0


# ------------------------------------------------------------------ runs (stubs with the ProbeRun interface)

def _outcomes(groups, boost: dict[str, str] | None = None, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Outcomes in which the distractor with word w is picked more often for the names of boost[w]'s group."""
    rng = np.random.default_rng(seed)
    rows = []
    for g, members in groups.items():
        for n in members:
            for word in ("quiet", "kind", "loud", "calm"):
                for noun in ("person", "friend", "neighbour", "student"):
                    p = 0.9 if boost and boost.get(word) == g else 0.3
                    rows.append((n, 3, f"a {word} {noun}", bool(rng.random() < p)))
    o = pd.DataFrame(rows, columns=["name", "context", "distractor", "wrong"])
    acc = o.groupby(["name", "context"], as_index=False)["wrong"].mean().rename(columns={"wrong": "accuracy"})
    acc["accuracy"] = 1 - acc["accuracy"]
    return o, acc


class StubRun:
    def __init__(self, groups, by_variant, grid=None, generation=None):
        self.groups, self._by = groups, by_variant
        self.variants = [v for v in by_variant if v is not None]
        self.grid = grid or GridConfig(names_per_group=2, contexts=[3], depth=1, cap=20, dedup=False)
        self.units = [object()] * sum(map(len, groups.values()))
        self.generation = generation or {"mlm_passes_compat": 100, "mlm_passes_run": 0}
        self.seconds = {"generation": 1.0, "scoring": 2.0}

    def outcomes(self, variant=None):
        return self._by[variant]

    def saving(self):
        return {"mcqs": 40, "encodings_whole": 120, "encodings_distinct": 60, "ratio": 2.0}

    def units_table(self):
        return pd.DataFrame({"context": [3] * len(self.units)})


def test_debias_tables_and_numbers():
    groups = _groups(2)
    base = _outcomes(groups, seed=0)
    run = StubRun(groups, {None: base, "inlp-race": _outcomes(groups, seed=1), "sentence_debias-race": base})
    sep = pd.DataFrame({"pair": [f"{a}-{b}" for a, b in analysis.TABLE9_PAIRS], "single context": 0.75})
    t9, changed = chapter.debias_tables(run, *base, sep, groups, min_count=0)
    assert list(t9.columns.get_level_values(0).unique()) == ["here (single context)", "paper (50 contexts)"]
    assert t9[("here (single context)", "BERT-like (zoo)")].eq(0.75).all() and len(t9) == 16
    assert changed["variant"].tolist() == ["none", "inlp-race", "sentence_debias-race"]
    moved = changed.set_index("variant")["distractors whose 'picked' flag changed"]
    assert moved["none"] == 0.0 and moved["sentence_debias-race"] == 0.0 and moved["inlp-race"] > 0
    assert chapter.debias_numbers(changed) == {"sd_moved": "0.0%", "inlp_moved": f"{moved['inlp-race']:.1%}"}
    assert chapter.show_table9(StubRun(groups, {None: base}), *base, sep, groups, min_count=0) is None


def test_lab_runs_find_the_planted_word(monkeypatch):
    groups = _groups(4)
    planted = StubRun(groups, {None: _outcomes(groups, boost={"quiet": "AA_m"})})
    control = StubRun(groups, {None: _outcomes(groups)})
    monkeypatch.setattr(chapter, "rescore", lambda run, lab, options=None: planted if lab == "biased" else control)
    tables, summary = chapter.lab_runs(control, ["biased", "control"], groups, min_count=0, n_perm=200)
    row = summary.set_index("model").loc["biased"]
    assert row["top AA_m word"] == "quiet" and row["rank of quiet"] == 1 and row["RD(quiet)"] > 0.5
    assert row["q(quiet)"] < 0.05 <= summary.set_index("model").at["control", "q(quiet)"]
    assert "quiet" not in chapter.lab_numbers(tables["biased"])["lab_also"].split(", ")
    assert "quiet" in chapter.lab_view(summary).to_html()
    fig = chapter.plot_lab(tables)
    assert len(fig.axes) == 2 and fig.axes[0].get_title() == "biased"


def test_accuracy_cost_and_grid_tables():
    groups = _groups(2)
    o, acc = _outcomes(groups)
    multi_acc = pd.concat([acc, acc.assign(context=9)], ignore_index=True)
    table = chapter.accuracy_table(acc, multi_acc, groups, order=list(names.GROUPS))
    assert list(table.columns) == ["answer", *names.GROUPS] and list(table.index) == [3, 9, "single (3)"]
    assert table.at["single (3)", "answer"] == "a very aggressive and talkative person"
    assert table.loc["single (3)", "EA_f"] == pytest.approx(acc[acc["name"].isin(groups["EA_f"])]["accuracy"].mean())
    run = StubRun(groups, {None: (o, acc)})
    costs = chapter.cost_table({"single context": run})
    assert costs.loc[0, "names"] == 16 and np.isnan(costs.loc[0, "MLM passes run"])  # 0 passes: from the cache
    assert "cached" in chapter.cost_view(costs).to_html()
    assert chapter.grid_words(run) == "16 names × 1 context(s), depth 1, cap 20"
    assert chapter.grid_numbers(run, run)["grid_multi"] == chapter.grid_words(run)


# ------------------------------------------------------------------ the notebook's merged calls

def test_name_sets_are_every_seed_name_and_the_analysed_ones():
    all_groups, groups = chapter.name_sets(3)
    assert all_groups == names.load_groups() and sum(map(len, all_groups.values())) == 220
    assert groups == chapter.analysed_groups(3) and groups["HS_m"] == all_groups["HS_m"][:3]


def test_show_contexts_prints_the_lengths_and_shows_the_table(monkeypatch, capsys):
    shown = _captured(monkeypatch)
    chapter.show_contexts()
    assert capsys.readouterr().out == \
        "50 probe contexts; answer length L: 1: 22, 2: 7, 3: 7, 4: 5, 5: 1, 6: 6, 7: 1, 11: 1\n"
    assert len(shown) == 1
    pd.testing.assert_frame_equal(shown[0].data, chapter.context_table())
    assert shown[0].hide_index_ == [True]


def _name_embeddings(all_groups) -> pd.DataFrame:
    """Embeddings in which dimension 0 is the gender and dimensions 1-4 the race of a name, plus noise."""
    rng = np.random.default_rng(0)
    rows = {}
    for g, members in all_groups.items():
        race, gender = g.split("_")
        for n in members:
            rows[n] = [1.0 if gender == "f" else -1.0, *(1.0 * (race == r) for r in names.RACES)]
    emb = pd.DataFrame.from_dict(rows, orient="index")
    return emb + rng.normal(scale=0.05, size=emb.shape)


def test_show_table1_embeds_fits_and_shows(monkeypatch):
    from stereoprobe.sodapop import embeddings

    all_groups = names.load_groups()
    fake = _name_embeddings(all_groups)
    calls = []
    monkeypatch.setattr(chapter, "name_embeddings", lambda enc, groups, **kw: calls.append((enc, kw)) or fake)
    shown = _captured(monkeypatch)
    emb, t1 = chapter.show_table1("enc", all_groups, n_contexts=3, seed=0, device="cpu")
    assert emb is fake and calls == [("enc", {"n_contexts": 3, "seed": 0, "device": "cpu"})]
    pd.testing.assert_frame_equal(t1, embeddings.table1(fake, all_groups, seed=0))
    assert t1.loc["gender", "test"] == 100.0 and t1.loc["race/ethnicity", "test"] == 100.0  # the planted signal
    assert chapter.table1_numbers(t1) == {"t1_gender": "100.0", "t1_race": "100.0"}
    assert len(shown) == 1 and shown[0].data.index.get_level_values("source")[0] == "here"


def _shown_figures(monkeypatch) -> list:
    import matplotlib.pyplot as plt

    def show():  # as the notebook's inline backend: take the open figure and close it
        figures.append(plt.gcf())
        plt.close("all")

    plt.close("all")  # figures other tests left open
    figures = []
    monkeypatch.setattr(plt, "show", show)
    return figures


def test_show_name_tsne_and_show_sr_tsne_draw_and_show(monkeypatch):
    figures = _shown_figures(monkeypatch)
    all_groups = names.load_groups()
    assert chapter.show_name_tsne(_name_embeddings(all_groups), all_groups, encoder="enc", n_contexts=3) is None
    assert figures[0].axes[0].get_title() == "t-SNE of name embeddings (enc, 3 contexts each)"
    groups = _groups()
    chapter.show_sr_tsne({"single context": _sr(groups), "multi-context": _sr(groups, 1)}, groups)
    assert [ax.get_title() for ax in figures[1].axes] == ["SR vectors, single context (6 words)",
                                                          "SR vectors, multi-context (6 words)"]


def test_run_debiased_probes_fits_only_with_debias(monkeypatch):
    fitted, ran = [], []
    monkeypatch.setattr(chapter, "fit_debias_variants", lambda mcq, **kw: fitted.append((mcq, kw)) or {"inlp-race": 1})
    monkeypatch.setattr(chapter, "run_probes", lambda mcq, mlm, **kw: ran.append((mcq, mlm, kw)) or ("single", "multi"))
    grid = dict(names_per_group=2, decoding="compat", single_depth=1, single_cap=20, multi_contexts=[9],
                multi_depth=1, multi_cap=10)
    options = RunOptions(device="cpu", smoke=True, progress=False)
    out = chapter.run_debiased_probes("mcq", "mlm", **grid, debias=False, inlp_iterations=3, debias_sentences=300,
                                      options=options)
    assert out == ("single", "multi", {}) and fitted == [] and \
        ran[0] == ("mcq", "mlm", grid | {"fits": {}, "options": options})
    out = chapter.run_debiased_probes("mcq", "mlm", **grid, debias=True, inlp_iterations=3, debias_sentences=300,
                                      seed=7, options=options)
    assert out == ("single", "multi", {"inlp-race": 1})
    assert fitted == [("mcq", {"n_iterations": 3, "max_sentences": 300, "seed": 7, "device": "cpu", "smoke": True})]
    assert ran[1][2]["fits"] == {"inlp-race": 1}


def test_runs_accuracy_and_success_rates_come_from_the_runs_outcomes(monkeypatch):
    from stereoprobe.sodapop.success import sr_matrix

    groups = _groups(2)
    single_o, single_acc = _outcomes(groups, seed=0)
    multi_o, multi_acc = _outcomes(groups, seed=1)
    single, multi = StubRun(groups, {None: (single_o, single_acc)}), StubRun(groups, {None: (multi_o, multi_acc)})
    view = chapter.runs_accuracy_view(single, multi, order=list(names.GROUPS))
    pd.testing.assert_frame_equal(view.data, chapter.accuracy_table(single_acc, multi_acc, groups, list(names.GROUPS)))
    assert view.data.at["single (3)", "AA_f"] == pytest.approx(single_acc["accuracy"].iloc[:2].mean())
    sr_single, sr_multi = chapter.success_rates(single, multi, 0, 3)
    pd.testing.assert_frame_equal(sr_single, sr_matrix(single_o, min_count=0))
    pd.testing.assert_frame_equal(sr_multi, sr_matrix(multi_o, min_count=3))
    assert sr_single.shape == sr_multi.shape == (16, 8)  # 8 words, each 4 times per name
    with pytest.raises(MetricsError, match="No word occurs more than min_count=4 times"):
        chapter.success_rates(single, multi, 0, 4)
    shown = _captured(monkeypatch)
    sr_single2, _ = chapter.show_success_rates(single, multi, 0, 3)
    pd.testing.assert_frame_equal(sr_single2, sr_single)
    vocabulary = shown[0].data
    assert vocabulary["vocabulary"].tolist() == [8, 8] and vocabulary["min_count"].tolist() == [0, 3]
    assert vocabulary.at["single context", "mean SR"] == pytest.approx(sr_single.to_numpy().mean())


def test_show_word_tests_returns_the_rd_tables_and_shows_the_flags(monkeypatch):
    shown = _captured(monkeypatch)
    groups = _groups()
    srs = {"single": _sr(groups, 0), "multi": _sr(groups, 1)}
    pairs = [("AA_f", "EA_f"), ("EA_f", "EA_m")]
    rd_all = chapter.show_word_tests(srs, groups, pairs, n_perm=1000)
    expected = chapter.rd_tables(srs, groups, pairs, n_perm=1000)
    assert list(rd_all) == list(expected)
    for key in expected:
        pd.testing.assert_frame_equal(rd_all[key], expected[key])
    pd.testing.assert_frame_equal(shown[0].data, chapter.flagged_view(chapter.flagged_table(expected)))
    assert shown[0].data.at["AA_f vs EA_f", ("words tested", "single")] == 6
    assert shown[0].caption.startswith("Words tested per group pair")


def test_show_debias_table9_uses_the_runs_own_separability(monkeypatch):
    from stereoprobe.sodapop.success import sr_matrix

    groups = _groups(2)
    base = _outcomes(groups, seed=0)
    run = StubRun(groups, {None: base, "inlp-race": _outcomes(groups, seed=1), "sentence_debias-race": base})
    shown = _captured(monkeypatch)
    changed = chapter.show_debias_table9(run, groups, min_count=0)
    sr = sr_matrix(base[0], min_count=0)
    t9, expected = chapter.debias_tables(run, *base, chapter.separability(sr, sr, groups), groups, min_count=0)
    pd.testing.assert_frame_equal(changed, expected)
    pd.testing.assert_frame_equal(shown[0].data, t9)
    assert shown[0].data[("here (single context)", "sentence_debias-race")].tolist() == \
        t9[("here (single context)", "BERT-like (zoo)")].tolist()  # SentenceDebias changed nothing here
    assert chapter.show_debias_table9(StubRun(groups, {None: base}), groups, min_count=0) is None


def test_show_lab_runs_and_show_lab(monkeypatch):
    groups = _groups(4)
    planted = StubRun(groups, {None: _outcomes(groups, boost={"quiet": "AA_m"})})
    control = StubRun(groups, {None: _outcomes(groups)})
    monkeypatch.setattr(chapter, "rescore", lambda run, lab, options=None: planted if lab == "biased" else control)
    shown = _captured(monkeypatch)
    tables = chapter.show_lab_runs(control, ["biased", "control"], groups, min_count=0, n_perm=200)
    expected, summary = chapter.lab_runs(control, ["biased", "control"], groups, min_count=0, n_perm=200)
    assert list(tables) == ["biased", "control"]
    pd.testing.assert_frame_equal(tables["biased"], expected["biased"])
    pd.testing.assert_frame_equal(shown[0].data, summary)
    assert shown[0].data.set_index("model").at["biased", "top AA_m word"] == "quiet"
    figures = _shown_figures(monkeypatch)
    assert chapter.show_lab(tables) is None
    assert [ax.get_title() for ax in figures[0].axes] == ["biased", "control"]


# ------------------------------------------------------------------ the notebook

def test_the_chapter_notebook_only_calls_the_package(logic_lines):
    lines = logic_lines(NOTEBOOK)
    assert len(lines) <= 40, f"{len(lines)} logic lines: move logic into stereoprobe.book.views.sodapop"
    assert not [line for line in lines if re.match(r"\s*(def|class|for|while|if) ", line)]


def test_show_debias_fits_formats_each_column(monkeypatch, capsys):
    def fit(method, kind, **diagnostics):
        return SimpleNamespace(method=method, kind=kind, diagnostics={"seconds_encode": 1.0, **diagnostics})

    fits = {"inlp-race": fit("inlp", "race", rank_removed=3, test_accuracy_before=0.866667,
                             test_accuracy_after=0.85, majority_test=0.5, seconds_fit=9.36),
            "sentence_debias-race": fit("sentence_debias", "race", explained_variance_ratio=0.3234, seconds_fit=2.0)}
    shown = _captured(monkeypatch)
    chapter.show_debias_fits(fits)
    html = shown[0].to_html()
    assert ">3<" in html and "0.867" in html and "10.4" in html and "0.323" in html  # rank, accuracy, seconds
    assert "0.866667" not in html and "nan" not in html and shown[0].caption.startswith("The debiased variants")
    chapter.show_debias_fits({})
    assert capsys.readouterr().out == "debias=False: no debiased variants.\n"
