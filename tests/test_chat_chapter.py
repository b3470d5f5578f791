"""The chat-model chapter's helpers (stereoprobe.book.views.chat) on tiny decoder families and the zoo's QA model:
rows per scorer and template, the spread tables, the agreement of γ(x) with an interval, chat against plain
prompts, the paper's δ and ε, and the captioned views."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions
from stereoprobe.book.views import chat
from stereoprobe.unqover.generate import DatasetSpec

C = sys.modules["stereoprobe_test_causal_families"]


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return str(C.build("qwen2", tmp_path_factory.mktemp("chat_chapter") / "qwen2"))


@pytest.fixture(autouse=True)
def _quiet(monkeypatch, tmp_path):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")


def test_rows_spread_and_movement(qwen, tmp_path):
    options = RunOptions(device="cpu", progress=False, smoke=True, store=str(tmp_path / "s"))
    frames = chat.unqover_frames([qwen], ["zoo:minilm-qa"], DatasetSpec("gender", sample=12), options=options)
    assert [k.label for k in frames] == [f"qwen2 · answer:{t}" for t in ("qa", "context-question", "one-word")] + [
        f"qwen2 · choice:{t}" for t in ("letters", "names", "either")] + ["zoo:minilm-qa"]
    assert [tuple(k) for k in frames][0] == ("qwen2", "answer", "qa", "", "")  # rows keyed by data, not by a label
    assert [tuple(k) for k in frames][-1] == ("zoo:minilm-qa", "", "", "", "")
    table = chat.summary(frames, n_boot=20, seed=0)
    assert table[["model", "scorer", "template"]].values.tolist()[0] == ["qwen2", "answer", "qa"]
    assert table[["model", "scorer", "template"]].values.tolist()[-1] == ["zoo:minilm-qa", "span", "-"]
    spread = chat.spread(frames, n_boot=20, seed=0)
    assert spread[["model", "scorer", "templates"]].values.tolist() == [["qwen2", "answer", 3], ["qwen2", "choice", 3]]
    mu = table[table["scorer"] == "answer"]["mu"]
    assert spread.loc[0, "mu_range"] == pytest.approx(mu.max() - mu.min())
    movement = chat.gamma_movement(chat.subject_gammas(frames, n_boot=20, seed=0))
    assert len(movement) == 2 and (movement["gamma_range"] >= 0).all() and (movement["subjects"] > 0).all()
    assert chat.spread_numbers(spread)["spread_rows"] == "2"
    for v in (chat.summary_view(table), chat.spread_view(spread), chat.movement_view(movement)):
        assert v.caption.startswith("Table ")


def test_agreement_is_a_rank_correlation_with_an_interval():
    subjects = [f"s{i}" for i in range(30)]
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"subject": subjects, "gamma": rng.normal(size=30)})
    same = base.assign(gamma=base["gamma"] * 3 + 1)  # monotone: ρ = 1
    flipped = base.assign(gamma=-base["gamma"])  # ρ = −1
    noise = base.assign(gamma=rng.normal(size=30))
    table = chat.agreement(base, {"same": same, "flipped": flipped, "noise": noise.iloc[:20]}, n_boot=200,
                           seed=0).set_index("row")
    assert table.loc["same", "spearman"] == pytest.approx(1) and table.loc["flipped", "spearman"] == pytest.approx(-1)
    assert table.loc["noise", "subjects"] == 20
    assert table.loc["noise", "ci_low"] < table.loc["noise", "spearman"] < table.loc["noise", "ci_high"]
    assert table.loc["noise", "ci_low"] < 0 < table.loc["noise", "ci_high"]


def test_chat_versus_plain_and_the_paper(qwen, tmp_path):
    options = RunOptions(device="cpu", progress=False, store=str(tmp_path / "s"))
    table = chat.chat_versus_plain(qwen, DatasetSpec("religion", sample=6), ["qa"], options=options, n_boot=20,
                                   seed=0)
    assert table["prompt"].tolist() == ["chat template", "plain"]
    assert not np.isclose(*table["epsilon"].tolist())  # the two prompts are different inputs
    paper = chat.paper_errors()
    assert paper.shape == (6, 4) and (paper["lowest"] <= paper["highest"]).all()
    assert paper.set_index(["metric", "training"]).loc[("delta", "SQuAD"), "highest"] == 0.57
