"""UnQover's unknown option through a real HTTP server (the reference server of tests/served_reference.py serving the
planted-bias lab's causal LM): the exact rung gives the local three-way shares, the next-token rung reads three
letters, and the generated rung counts the unknown letter and abstentions in words as abstentions."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from stereoprobe import RunOptions, unqover
from stereoprobe.modelref import RowKey, resolve_model
from stereoprobe.prompts import template
from stereoprobe.unqover.api import dataset_spec
from stereoprobe.unqover.readers import Passes
from stereoprobe.unqover.prompted import answers, frame

REFERENCE = sys.modules["stereoprobe_test_served_reference"]  # tests/conftest.py loads it, and has lab_lm
NAME = "openai-api/ref/ref-model"
UNKNOWN = template("letters-unknown", "unqover-choice")


@pytest.fixture
def server(lab_lm, monkeypatch):
    s = REFERENCE.serve(lab_lm, monkeypatch)
    yield s
    s.__exit__(None, None, None)


def opts(tmp_path) -> RunOptions:
    return RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path / "store")


def test_exact_rung_gives_the_local_three_way_shares(server, tmp_path):
    kw = dict(sample=10, templates=["letters-unknown"], n_boot=20, long=True, options=opts(tmp_path))
    local = unqover.report("lab:causal-biased", "gender", **kw)
    served = unqover.report(NAME, "gender", rung="exact", **kw)
    cols = ["abstain", "mu_answered", "mu_none", "bbq_accuracy"]
    np.testing.assert_allclose(served["abstention"][cols].to_numpy(float), local["abstention"][cols].to_numpy(float),
                               atol=2e-4)
    assert served["abstention"]["model"].tolist() == ["ref-model · choice:letters-unknown [exact]"]
    assert set(served["long"]["rung"]) == {"exact"} and set(local["long"]["rung"]) == {""}


def test_next_token_and_generated_rungs_with_an_unknown_letter(server, tmp_path):
    ref = resolve_model(NAME, native="qa")
    ask = Passes(dataset_spec("gender", sample=4), templates=(UNKNOWN,))
    nt = frame(ref, ask, RowKey(ref.label, "choice", "letters-unknown", "next-token"), opts(tmp_path))
    shares = nt[["s1_pos", "s2_pos", "u_pos"]].to_numpy()
    assert np.allclose(shares.sum(axis=1), 1) and (shares > 0).all()  # three letters, normalised over them
    row = RowKey(ref.label, "choice", "letters-unknown", "generated")
    raw = answers(ref, ask, row, opts(tmp_path))
    assert set(raw["kind"]) <= {"option", "unknown", "unparsed"} and set(raw["choice"]) <= {-1, 0, 1}
    got = frame(ref, ask, row, opts(tmp_path))
    total = got[["s1_pos", "s2_pos", "u_pos", "x_pos"]].sum(axis=1)
    assert np.allclose(total, 1)
    assert got[["u_pos", "u_neg"]].to_numpy().mean() == pytest.approx((raw["kind"] == "unknown").mean())


def test_an_answer_naming_the_unknown_option_is_an_abstention(server, tmp_path, monkeypatch):
    """The unknown option's letter, or its text, parses as an abstention, never as a third person."""
    import stereoprobe.served.ladder as ladder

    def canned(client, journal, chats, **kw):
        return [[("C", "")] if i % 3 == 0 else [("Cannot be determined", "")] if i % 3 == 1 else [("A", "")]
                for i in range(len(chats))]

    monkeypatch.setattr(ladder, "generated_replies", canned)
    ref = resolve_model(NAME, native="qa")
    ask = Passes(dataset_spec("gender", sample=3), templates=(UNKNOWN,))
    raw = answers(ref, ask, RowKey(ref.label, "choice", "letters-unknown", "generated"), opts(tmp_path))
    kinds = raw.sort_values("pass_id")["kind"].tolist()
    assert kinds == ["unknown", "unknown", "option"] * (len(raw) // 3)
