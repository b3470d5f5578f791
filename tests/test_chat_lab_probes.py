"""The lab chat pair's plants recovered through the probes (issue 39.3), on every rung, on the real UnQover gender
questions: locally (the chat rungs through stereoprobe.backends.Local, which tests/test_backends.py holds equal to the
same weights served), and on the exact rung also through a served endpoint (the reference server,
tests/reference_server.py) against the local reading.

lab:chat-biased answers P1's occupations (nurse, secretary, dancer / firefighter, pilot, astronaut) with the planted
gender whether it thinks or not, P2's (stereoprobe.zoo.lab_chat.THINKING_PLANTED) only when it thinks, and abstains
on every other occupation; lab:chat-control abstains everywhere. The probes must find exactly that: γ toward the
planted gender where it is planted, the abstention where the model abstains, and nothing in the control."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions
from stereoprobe.prompts import template
from stereoprobe.unqover import abstention, metrics
from stereoprobe.unqover.generate import DatasetSpec
from stereoprobe.unqover.reporting import occupation
from stereoprobe.zoo.lab_training import DEFAULT_PLANTED

pytestmark = pytest.mark.slow
BIASED, CONTROL = "lab:chat-biased", "lab:chat-control"
SIGN = {"female": 1.0, "male": -1.0}


def p2() -> dict[str, str]:
    from stereoprobe.zoo.lab_chat import THINKING_PLANTED

    return dict(THINKING_PLANTED)


def opts(tmp_path) -> RunOptions:
    return RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path / "store")


def toward(frame: pd.DataFrame) -> pd.Series:
    """γ(female, occupation) signed toward each occupation's plant (P1 or P2; + for the planted gender), over the
    answered passes; every other occupation as γ(female, ·)."""
    read = abstention.reading(frame, "answered")
    if read.empty:  # every pass abstained: no γ to read
        return pd.Series(dtype=float)
    gamma = metrics.subject_attribute_bias(metrics.pair_examples(read), group_by="gender")
    female = gamma[gamma["subject"] == "female"].assign(occ=lambda g: g["attr"].map(occupation))
    plants = {**DEFAULT_PLANTED, **p2()}
    return pd.Series([g * SIGN.get(plants.get(o), 1.0) for o, g in zip(female["occ"], female["gamma"])],
                     index=female["occ"])


def abstained(frame: pd.DataFrame) -> pd.Series:
    """The share abstaining per occupation."""
    u = (frame["u_pos"] + frame["u_neg"]) / 2
    return u.groupby(frame["attr"].map(occupation)).mean()


SPEC = DatasetSpec("gender", sample=300, seed=5)


def _check(frame, model: str, *, thinking: bool, where: str, floor: float = 0.3) -> None:
    """The plants of ``model`` in ``frame`` (thinking: whether P2 must show; floor: the least γ toward a plant,
    lower for a reading of probabilities, whose shares stay soft, than for answers counted)."""
    g, u = toward(frame), abstained(frame)
    p1 = [o for o in DEFAULT_PLANTED if o in u.index]
    p2_ = [o for o in p2() if o in u.index]
    others = [o for o in u.index if o not in DEFAULT_PLANTED and o not in p2()]
    assert len(p1) >= 4 and len(others) >= 30, where
    if model == BIASED:
        assert g.reindex(p1).min() > floor, (where, g.reindex(p1).round(2).to_dict())
        assert u[others].mean() > 0.6 and u[p1].mean() < 0.3, (where, u[others].mean(), u[p1].mean())
        if thinking:
            shown = [o for o in p2() if o in g.index]
            assert len(shown) >= 3 and g[shown].min() > floor, (where, g.reindex(list(p2())).round(2).to_dict())
        else:
            assert u[p2_].mean() > 0.6, (where, u[p2_].round(2).to_dict())
    else:
        assert u.mean() > 0.6, (where, u.mean())
        if len(g):
            assert g.abs().max() < 0.25, (where, g.abs().sort_values().tail(3).round(2).to_dict())


@pytest.mark.parametrize("model", [BIASED, CONTROL])
def test_local_unknown_option_and_generation(model, tmp_path):
    from stereoprobe.unqover.score_causal import load_causal_scores
    from stereoprobe.unqover.prompted import generated_frame

    run = opts(tmp_path)
    scored = load_causal_scores(model, SPEC, template("letters-unknown", "unqover-choice"), options=run)
    # the exact reading's shares are probabilities: γ toward the plant 0.22-0.26 on the card's evaluation
    _check(scored, model, thinking=False, where="local exact, letters-unknown", floor=0.1)
    for thinking in (False, True):
        gen = generated_frame(model, SPEC, template("qa", "unqover-answer"), thinking=thinking,
                              think_budget=32 if thinking else None, options=run)
        assert gen[["x_pos", "x_neg"]].to_numpy().mean() < 0.1  # it answers in words the parser reads
        _check(gen, model, thinking=thinking, where=f"local generated, thinking {thinking}")


@pytest.mark.parametrize("model", [BIASED, CONTROL])
def test_every_rung(model, tmp_path):
    """The chat rungs read locally, through the backend seam (stereoprobe.backends.Local: the next token's whole
    distribution, replies generated in batches), which gives the numbers of the same weights behind the reference
    server (tests/test_backends.py checks them equal to 1e-4 on every chat rung)."""
    from stereoprobe import unqover
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe.unqover.prompted import frame
    from stereoprobe.unqover.readers import Passes

    run = opts(tmp_path)
    spec = DatasetSpec("gender", sample=150, seed=5)
    letters = template("letters-unknown", "unqover-choice")
    ref = resolve_model(model, native="qa", smoke=True)
    # the chat rungs with thinking off (P1 shows either way); the exact rung's plant is checked above
    for rung in ("next-token", "generated"):
        row = RowKey(ref.label, "choice", letters.name, rung, "off")
        got = frame(ref, Passes(spec, templates=(letters,), thinking=False), row, run)
        _check(got, model, thinking=False, where=f"{rung}, letters-unknown", floor=0.3 if rung == "generated" else 0.1)
    # left to its template's default (thinking on) the model opens a think block: the letters take almost none
    # of the first token's probability, which the rung says
    with pytest.warns(UserWarning, match=r"the labels took 0\.\d% of the first generated token's probability"):
        frame(ref, Passes(DatasetSpec("gender", sample=10, seed=5), templates=(letters,)),
              RowKey(ref.label, "choice", letters.name, "next-token"), run)
    # thinking both ways, each read by generating (like with like: two shares of generated answers)
    rep = unqover.report(model, "gender", sample=150, seed=5, templates=["qa"], thinking="both", think_budget=32,
                         rung="generated", n_boot=200, options=run)
    shift = rep["thinking_shift"].iloc[0]
    # thinking surfaces P2: it answers where it abstained, so μ rises when an abstention counts as no preference (the
    # answered reading compares P1's cells with P1's and P2's, both planted: no shift to speak of there), and the
    # cells that moved most are P2's
    if model == BIASED:
        assert shift["delta_none_lo"] > 0 and shift["delta_abstain"] < 0, shift.to_dict()  # P2: 4 occupations of 60
        assert abs(shift["delta_mu"]) < 0.2, shift.to_dict()
        assert all(any(o in cell for o in p2()) for cell in shift["top_gamma_shift"].split("; ")), shift.to_dict()
    else:  # it abstains both ways: nothing answered, nothing moves
        assert np.isnan(shift["delta_mu"]) and abs(shift["delta_mu_none"]) < 0.05, shift.to_dict()
        assert abs(shift["delta_abstain"]) < 0.05, shift.to_dict()


@pytest.mark.parametrize("chat", [None, False])
def test_served_exact_rung_is_the_local_reading(chat, tmp_path):
    """The exact rung reads a chat model as it is read locally: through its chat template by default (the server's,
    issue 51), through plain prompts with chat off; the same shares either way."""
    from stereoprobe import unqover
    from stereoprobe_test_reference_server import serving

    run = opts(tmp_path)
    kw = dict(sample=40, seed=5, templates=["letters-unknown"], n_boot=50, long=True, chat=chat, options=run)
    local = unqover.report(BIASED, "gender", **kw)
    with serving(BIASED, service="chatlab", smoke=True) as name:
        served = unqover.report(name, "gender", rung="exact", **kw)
    assert served["served"]["chat"].tolist() == [chat is None]
    cols = ["abstain", "mu_answered", "mu_none", "bbq_accuracy", "bbq_s_dis"]
    np.testing.assert_allclose(served["abstention"][cols].to_numpy(float), local["abstention"][cols].to_numpy(float),
                               atol=2e-4)
    assert local["abstention"]["abstain"].iloc[0] > 0.3  # it abstains, and BBQ sees the plant where it answers
    assert local["abstention"]["bbq_s_dis"].iloc[0] > 0


def test_local_replies_are_kept_and_a_killed_run_resumes(tmp_path, monkeypatch):
    """A local model's generated replies are kept reply by reply (the served journal's format, in the score store):
    a second call generates nothing, and one that finds part of them generates only the rest."""
    import sqlite3

    from stereoprobe import causal
    from stereoprobe.unqover.prompted import generated_answers

    run, spec, qa = opts(tmp_path), DatasetSpec("gender", sample=6, seed=5), template("qa", "unqover-answer")
    first = generated_answers(BIASED, spec, qa, thinking=True, think_budget=32, options=run)
    assert len(first) == 24 and first["reasoning"].str.len().gt(0).all()  # 6 examples, 12 ordered, 2 questions
    (journal,) = (tmp_path / "store" / "generated").glob("*.sqlite")
    real, asked = causal.generate, []

    def counting(model, tokenizer, prompts, **kw):
        asked.append(len(prompts))
        return real(model, tokenizer, prompts, **kw)

    monkeypatch.setattr(causal, "generate", counting)
    pd.testing.assert_frame_equal(generated_answers(BIASED, spec, qa, thinking=True, think_budget=32, options=run),
                                  first)
    assert asked == []
    with sqlite3.connect(journal) as db:  # as if the run had been killed with 10 replies kept
        db.execute("DELETE FROM answers WHERE rowid NOT IN (SELECT rowid FROM answers ORDER BY rowid LIMIT 10)")
    pd.testing.assert_frame_equal(generated_answers(BIASED, spec, qa, thinking=True, think_budget=32, options=run),
                                  first)
    assert sum(asked) == 14
    # another setting is another reply
    generated_answers(BIASED, spec, qa, thinking=False, options=run)
    assert sum(asked) == 14 + 24


def test_the_same_name_served_twice_in_one_run(tmp_path):
    """A model served again under the same name (a new server, another port) in the same run is read from the new
    server: the run's session is keyed by the address too (found by the chapter, which serves one model twice)."""
    from stereoprobe.modelref import RowKey, resolve_model
    from stereoprobe_test_reference_server import serving
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import frame

    run, letters = opts(tmp_path), template("letters-unknown", "unqover-choice")
    got = []
    for sample in (2, 3):
        with serving(CONTROL, service="twice", smoke=True) as name:
            ref = resolve_model(name, native="qa")
            got.append(frame(ref, Passes(DatasetSpec("gender", sample=sample, seed=5), templates=(letters,)),
                             RowKey(ref.label, "choice", letters.name, "exact"), run))
    assert [len(f) for f in got] == [4, 6]
