"""The "Models used" chapter's tables and quoted numbers (stereoprobe.book.views.zoo) on the committed model cards
and on small score tables whose μ is known."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from stereoprobe.book.tables import unqover as tables
from stereoprobe.book.views import zoo as chapter
from stereoprobe.zoo import recipes

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "models_used.py"
COLS = ["subj1", "subj2", "cluster1", "cluster2", "tid", "attr_cluster", "attr", "s1_pos", "s2_pos", "s1_neg",
        "s2_neg"]


def _frame(keys) -> pd.DataFrame:
    """Ordered examples of one (female, male) pair whose comparative bias C(Jennifer, Gerald, a) is exactly ``c``
    per (tid, attribute, c) key: S = 0.5 ± c for Jennifer, 0.5 for Gerald, in both orders."""
    rows = []
    for tid, attr, c in keys:
        rows.append(("Jennifer", "Gerald", "female", "male", tid, "None", attr, 0.5 + c, 0.5, 0.5 - c, 0.5))
        rows.append(("Gerald", "Jennifer", "male", "female", tid, "None", attr, 0.5, 0.5 + c, 0.5, 0.5 - c))
    return pd.DataFrame(rows, columns=COLS)


@pytest.fixture(scope="module")
def cards():
    return recipes.cards(recipes.parts_dir())  # the committed cards


@pytest.fixture(scope="module")
def side():
    planted = _frame([(t, a, c) for t in range(2)
                      for a, c in (("was a nurse", 0.2), ("was a hunter", -0.1), ("was a clerk", 0.05))])
    flat = _frame([(0, "was a nurse", 0.0)])
    return chapter.side_by_side_table({"lab:qa-biased": planted, "other": flat}, n_boot=20, seed=0)


def test_card_numbers_quote_every_float_metric_then_size_and_build_time(cards):
    numbers = chapter.card_numbers(cards)
    assert list(numbers)[-2:] == ["zoo_mb", "zoo_minutes"]
    expected = {f"{name[4:].replace('-', '_')}_{metric}": f"{value:.1%}" for name, card in cards.items()
                for metric, value in card["metrics"].items() if isinstance(value, float)}
    assert {k: v for k, v in numbers.items() if k not in ("zoo_mb", "zoo_minutes")} == expected
    assert numbers["minilm_mcq_chance"] == "33.3%"  # three choices
    assert "minilm_mlm_sentences" not in numbers and "minilm_nli_accuracy_by_label" not in numbers  # int, dict
    assert float(numbers["zoo_mb"]) == pytest.approx(sum(c["part"]["bytes"] for c in cards.values()) / 1e6, abs=0.05)
    assert int(numbers["zoo_minutes"]) == round(sum(c["training"]["wall_s"]["total"] for c in cards.values()) / 60)


def test_every_number_the_prose_quotes_is_glued(cards, side):
    quoted = set(re.findall(r"\{glue:text\}`(\w+)`", NOTEBOOK.read_text(encoding="utf-8")))
    assert quoted and quoted <= set(chapter.card_numbers(cards)) | set(chapter.mu_numbers(side))


def test_zoo_view_has_one_column_per_model(cards):
    table = chapter.zoo_view(cards).data
    assert list(table.columns) == list(cards) == ["zoo:minilm-mlm", "zoo:minilm-qa", "zoo:minilm-nli",
                                                  "zoo:minilm-mcq"]
    assert {"task", "training data", "part (MB)", "train examples", "held-out accuracy"} <= set(table.index)
    assert table.loc["held-out accuracy", "zoo:minilm-mcq"] == cards["zoo:minilm-mcq"]["metrics"]["accuracy"]
    assert table.loc["train examples", "zoo:minilm-qa"] == cards["zoo:minilm-qa"]["data"]["n_train"]
    assert pd.isna(table.loc["held-out top1", "zoo:minilm-mcq"])  # not a metric of its head
    html = chapter.zoo_view(cards).to_html()
    assert f">{cards['zoo:minilm-mcq']['metrics']['accuracy']:.3f}<" in html and ">nan<" not in html.lower()


def test_zoo_table_holds_numbers(cards):
    table = recipes.zoo_table(cards)
    numbers = ["train examples", "held-out examples", "steps", "batch size", "trained params (M)",
               "train time (min)", "part (MB)"]
    assert all(pd.api.types.is_numeric_dtype(table[c]) for c in numbers)
    assert all(pd.api.types.is_float_dtype(table[c]) for c in table.columns if c.startswith("held-out ")
               and c != "held-out examples")


def test_fills_and_paper_models_views(cards):
    fills = chapter.fills_view(cards)
    assert list(fills.data.columns) == ["probe", "top-5 fills"] and len(fills.data) == len(
        cards["zoo:minilm-mlm"]["probes"])
    assert all(len(f.split(", ")) == 5 for f in fills.data["top-5 fills"])
    papers = chapter.paper_models_view().data
    assert papers.shape == (6, 3)
    assert set(papers["this book's default"]) >= {"zoo:minilm-qa", "zoo:minilm-mlm", "zoo:minilm-nli",
                                                  "zoo:minilm-mcq"}
    assert "<th" in chapter.paper_models_view().to_html()


def test_side_by_side_table_measures_the_planted_bias(side):
    assert side["model"].tolist() == ["lab:qa-biased", "other"]
    assert side["mu"].tolist() == pytest.approx([0.2, 0.0])  # max |γ(name, a)| = |C| of the nurse, per name
    assert side["delta"].tolist() == pytest.approx([0.0, 0.0])  # the same S in both orders
    row = side.iloc[0]
    assert row["top female occupations (γ)"] == "nurse (+0.20), clerk (+0.05), hunter (-0.10)"
    assert row["top male occupations (γ)"] == "hunter (+0.10), clerk (-0.05), nurse (-0.20)"
    assert list(side.columns[:5]) == ["model", "mu", "ci_low", "ci_high", "delta"]
    assert side[["mu", "ci_low", "ci_high"]].dtypes.eq(float).all()
    assert (side["ci_low"] <= side["mu"]).all() and (side["mu"] <= side["ci_high"]).all()
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.2, 0.2))
    html = chapter.side_by_side_view(side).to_html()
    assert ">0.200<" in html and ">[0.200,<" in html and ">0.200]<" in html and "lab:qa-biased" in html


def test_side_by_side_table_is_the_report_pipeline():
    frames = {"m": _frame([(0, "was a nurse", 0.15), (1, "was a clerk", -0.05)])}
    gammas = {n: tables.gender_gamma(f, n_boot=20, seed=1) for n, f in frames.items()}
    mu = tables.intensity(frames, n_boot=20, seed=1).set_index("model")
    expected = tables.side_by_side(mu, tables.top_occupations(gammas, k=3), tables.reasoning_errors(frames))
    pd.testing.assert_frame_equal(chapter.side_by_side_table(frames, n_boot=20, seed=1), expected)


def test_mu_numbers_quote_the_run_models_and_a_dash_for_the_others(side):
    assert chapter.mu_numbers(side) == {"zoo_mu": "—", "lab_mu": "0.200"}
    both = side.assign(model=["lab:qa-biased", "zoo:minilm-qa"])
    assert chapter.mu_numbers(both) == {"zoo_mu": "0.000", "lab_mu": "0.200"}
