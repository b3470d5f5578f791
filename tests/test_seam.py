"""One seam between what a probe asks and how a model answers (stereoprobe.modelref, each probe's readers).

* a model is resolved once per report: its name is looked up once, whatever the number of rows, templates, store
  runs and workers below the API;
* a fourth kind of model is a few lines: a :class:`~stereoprobe.modelref.ModelKind` and one reader per probe give
  full reports from all three probes, with nothing else changed — and the readers' answers are what the reports
  measure (a model that always names the first subject has δ = 1 and μ = 0; one that always says neutral has NN = 1);
* report rows are keyed by data (:class:`~stereoprobe.modelref.RowKey`), and a ref pickles without what it read.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions, nli, sodapop, unqover
from stereoprobe.modelref import ModelKind, ModelRef, RowKey, register_kind, resolve_model, unregister_kind


@pytest.fixture
def options(tmp_path, monkeypatch) -> RunOptions:
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    return RunOptions(device="cpu", smoke=True, progress=False, store=str(tmp_path / "store"))


def test_a_model_is_resolved_once_per_report(options, monkeypatch):
    """Two models, one of them causal with two templates (two store runs, a sharing check, a scorer per run): each
    name goes through stereoprobe.models.resolve once, at the API boundary."""
    import stereoprobe.models as models

    seen: list[str] = []
    real = models.resolve

    def counting(name, *args, **kwargs):
        if isinstance(name, str):
            seen.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(models, "resolve", counting)
    rep = unqover.report(["lab:causal-biased", "lab:qa-biased"], "gender", sample=6, n_boot=10,
                         templates=["qa", "letters"], options=options)
    assert list(rep["intensity"]["model"]) == ["lab:causal-biased · answer:qa", "lab:causal-biased · choice:letters",
                                               "lab:qa-biased"]
    assert seen.count("lab:causal-biased") == 1 and seen.count("lab:qa-biased") == 1, seen


def test_a_ref_says_what_it_resolved_to_and_pickles_without_its_facts(options):
    ref = resolve_model("lab:qa-biased", native="qa", smoke=True).with_label("biased")
    assert (ref.name, ref.kind, ref.location, ref.label) == ("lab:qa-biased", "qa", "lab", "biased")
    assert repr(ref) == "'lab:qa-biased'" and "kind='qa'" in ref.describe()
    assert len(ref.fingerprint) == 16 and ref.tokenizer() is ref.tokenizer()  # read once, kept
    copy = pickle.loads(pickle.dumps(ref))
    assert copy == ref and copy._facts == {}
    causal = resolve_model("lab:causal-biased", native="qa", smoke=True)
    assert causal.kind == "causal" and causal.location == "lab"


def test_row_keys_are_data():
    key = RowKey("m", "answer", "qa")
    assert key.label == "m · answer:qa" and (key.model, key.scorer, key.template) == ("m", "answer", "qa")
    assert RowKey("m").label == "m" and RowKey("m", "acc").label == "m · acc"


# -- a fourth kind ----------------------------------------------------------------------------------------------
class FirstSubject:
    """UnQover: a model that always gives the subject named first in the paragraph S = 0.9, whatever the question."""

    def rows(self, ref, ask, options):
        return [RowKey(ref.label)]

    def frame(self, ref, ask, row, options):
        from stereoprobe.unqover.generate import example_keys

        frame = example_keys(ask.spec)
        frame["s1_pos"] = frame["s1_neg"] = 0.9
        frame["s2_pos"] = frame["s2_neg"] = 0.1
        return frame

    def score(self, ref, ask, row, options):
        return self.frame(ref, ask, row, options)


class AlwaysNeutral:
    """Bias-NLI: neutral for every pair."""

    def rows(self, ref, ask, options):
        return [RowKey(ref.label)]

    def frame(self, ref, ask, row, spec, options):
        from stereoprobe.nli.scoring import pairs_frame

        return pairs_frame(spec).assign(entail=0.0, neutral=1.0, contradiction=0.0)

    def score(self, ref, ask, row, spec, options):
        return self.frame(ref, ask, row, spec, options)


class LongestChoice:
    """SODAPOP: the longest answer wins."""

    def check(self, ref, ask, options):
        pass

    def describe(self, ref, ask):
        return " (the longest answer)"

    def readings(self, ref, ask, options):
        from stereoprobe.sodapop.readers import Reading

        return [Reading(RowKey(ref.label), "", None)]

    def logits(self, ref, units, config, ask, options):
        from stereoprobe.sodapop.score_mcq import unit_choices, mcqs_of

        rows = [(k, u.name, u.context.index, c) for k, u in enumerate(units) for c in unit_choices(u, mcqs_of(u, config))]
        frame = pd.DataFrame(rows, columns=["unit", "name", "context", "choice"])
        frame["logit"] = frame["choice"].str.len().astype(np.float32)
        return frame


@pytest.fixture
def fourth_kind(monkeypatch):
    """The kind ``fake`` (names ``fake:…``) and its three readers, registered for one test."""
    from stereoprobe.nli import readers as nli_readers
    from stereoprobe.sodapop import readers as sodapop_readers
    from stereoprobe.unqover import readers as unqover_readers

    register_kind(ModelKind("fake", claims=lambda name: name.startswith("fake:"), fingerprint=lambda ref: "fake",
                            tokenizer=lambda ref: None, describe="stand-in"))
    monkeypatch.setitem(unqover_readers.READERS, "fake", FirstSubject())
    monkeypatch.setitem(nli_readers.READERS, "fake", AlwaysNeutral())
    monkeypatch.setitem(sodapop_readers.READERS, "fake", LongestChoice())
    yield
    unregister_kind("fake")


def test_a_fourth_kind_gets_full_reports_from_all_three_probes(fourth_kind, options):
    ref = resolve_model("fake:first", native="qa")
    assert isinstance(ref, ModelRef) and (ref.kind, ref.location, ref.fingerprint) == ("fake", "fake", "fake")

    rep = unqover.report(["fake:first", "lab:qa-control"], "gender", sample=40, n_boot=20, options=options)
    assert list(rep) == ["reasoning_errors", "intensity", "top_gamma"]
    errors, mu = rep["reasoning_errors"].set_index("model"), rep["intensity"].set_index("model")
    assert errors.loc["fake:first", "delta"] == pytest.approx(0.8)  # |0.9 − 0.1|: all position, no subject
    assert mu.loc["fake:first", "mu"] == pytest.approx(0.0, abs=1e-12)  # which γ cancels (Li et al. 2020, Eq. 5)
    assert "lab:qa-control" in mu.index

    neutral = nli.report(["fake:neutral"], "gender", sample=50, n_boot=20, options=options)["gender"]
    assert neutral.loc[0, "model"] == "fake:neutral" and neutral.loc[0, "NN"] == 1 and neutral.loc[0, "FN"] == 1

    sp = sodapop.report("fake:longest", "zoo:minilm-mlm", names_per_group=1, depth=1, cap=10, n_perm=50,
                        pairs=["AA_m:EA_m"], options=options)
    assert list(sp) == ["units", "rd_AA_m_EA_m"] and set(sp["units"]["model"]) == {"fake:longest"}
    assert sp.title.startswith("model fake:longest (the longest answer) (distractors by zoo:minilm-mlm)")
    assert sp["units"]["accuracy"].between(0, 1).all()


def test_a_kind_without_a_reader_is_refused_before_any_work(options):
    register_kind(ModelKind("orphan", claims=lambda name: name.startswith("orphan:")))
    try:
        with pytest.raises(Exception, match="orphan:x.*cannot read"):
            unqover.report(["orphan:x"], "gender", sample=4, options=options)
    finally:
        unregister_kind("orphan")
