"""SODAPOP data, distractor generation and MCQ scoring (the authors' generate_distractors.py and utils.py)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from stereoprobe import RunOptions
from stereoprobe.errors import CorpusError, StereoprobeError
from stereoprobe.sodapop import contexts, distractors as D, names, score_mcq as S

# The 50 lines the authors' selection rule keeps (stereoprobe.sodapop.contexts), line 153 ("remorseful", L=1) included.
SPEC_INDICES = [0, 3, 9, 18, 30, 31, 36, 38, 51, 67, 69, 76, 79, 82, 85, 100, 102, 104, 105, 112, 122, 136, 137, 142,
                143, 153, 171, 193, 195, 197, 201, 206, 210, 211, 217, 235, 246, 250, 261, 267, 270, 277, 286, 288, 292,
                296, 313, 316, 318, 320]


def test_fifty_contexts_as_in_the_spec():
    ctx = contexts.probe_contexts()
    idx = [c.index for c in ctx]
    assert len(ctx) == 50 and idx == SPEC_INDICES
    lengths = Counter(len(D.word_tokenize(c.answer)) for c in ctx)
    assert lengths == {1: 22, 2: 7, 3: 7, 4: 5, 5: 1, 6: 6, 7: 1, 11: 1}
    assert sum(k * v for k, v in lengths.items()) == 136
    by = {c.index: c for c in ctx}
    assert by[3].answer == "a very aggressive and talkative person" and by[246].answer.startswith("like the better")
    assert all("Bethany" not in c.answer for c in ctx)
    assert sum(c.text.count("Bethany") == 2 for c in ctx) == 3
    she = {"she", "her", "herself", "She", "Her"}
    for i in contexts.SHE_CONTEXTS:
        words = set(D.word_tokenize(" ".join(by[i].record[f] for f in ("context", "answerA", "answerB", "answerC"))))
        assert words & she, i
    item = contexts.substitute(by[3], "Jamel")
    assert item["question"] == "How would you describe Jamel?" and "Bethany" not in "".join(item.values())


def test_bad_inputs_name_the_culprit(tmp_path):
    rec = contexts.read_records()[0]
    bad = dict(rec, context=rec["context"].replace("Bethany", "Sam"))
    path = tmp_path / "slice.jsonl"
    path.write_text(pd.Series([rec, bad]).map(json.dumps).str.cat(sep="\n"))
    with pytest.raises(CorpusError, match=r"slice.jsonl:2: the context does not contain the placeholder"):
        contexts.probe_contexts(path, indices=[0, 1])
    folder = tmp_path / "names"
    folder.mkdir()
    for g, stem in names.FILES.items():
        (folder / f"{stem}.txt").write_text("\n".join(f"{g}x{i}".replace("_", "") for i in range(3)) + "\n")
    (folder / "asian_male.txt").write_text("Ayaan\nAryan\nAyaan\n")
    with pytest.raises(CorpusError, match=r"asian_male.txt:3: duplicate name 'Ayaan' \(first on line 1\)"):
        names.load_groups(folder)
    (folder / "asian_male.txt").write_text("Ayaan\nEAfx0\n")
    with pytest.raises(CorpusError, match="listed both in european_american_female.txt and asian_male.txt"):
        names.load_groups(folder)
    with pytest.raises(StereoprobeError, match="depth must be"):
        D.GenerationConfig(depth=0)


class FakeMasker:
    """Exactly ``m`` distinct whole-word fills at every mask (optionally a deletion first)."""

    def __init__(self, m: int = 10, delete: bool = False):
        self.m, self.delete, self.passes = m, delete, 0

    def top_ids(self, texts, progress_desc=None):
        self.passes += len(texts)
        return np.tile(np.arange(self.m), (len(texts), 1))

    def fills(self, ids):
        words = [f"w{i}" for i in ids]
        return [""] + words[:-1] if self.delete else words

    def fills_many(self, top):
        return [self.fills(row) for row in top]


@pytest.mark.parametrize("L", [1, 2, 3])
def test_counts_follow_the_scale_formula(L):
    ctx = contexts.probe_contexts()[0]
    unit = D.Unit("Amy", ctx, "Amy felt bad. Amy is", " ".join(f"a{i}" for i in range(L)))
    masker = FakeMasker()
    D.generate_units([unit], masker, D.GenerationConfig())
    bound = D.scale(L)
    assert unit.compat_passes == bound["mlm_passes"] == L + 10 * L**2 + 100 * L**3
    assert sum(unit.candidates.values()) == bound["candidates"] == 10 * L + 100 * L**2 + 1000 * L**3
    assert masker.passes < unit.compat_passes or L == 1  # memoized: each distinct sentence filled once
    paper = D.Unit("Amy", ctx, unit.prefix, unit.answer)
    D.generate_units([paper], FakeMasker(), D.GenerationConfig(recursion="paper"))
    assert sum(paper.candidates.values()) == (10 * L) ** 3
    assert D.scale(6)["mcqs_uncapped"] == 109830
    assert sum(D.scale(len(D.word_tokenize(c.answer)))["mlm_passes"] for c in contexts.probe_contexts()) == 374376


def test_deletion_shifts_the_window_into_the_prompt():
    ctx = contexts.probe_contexts()[0]
    unit = D.Unit("Amy", ctx, "Amy felt bad. Amy is", "very kind")
    D.generate_units([unit], FakeMasker(m=3, delete=True), D.GenerationConfig(depth=1))
    assert unit.candidates == Counter({"is kind": 1, "w0 kind": 1, "w1 kind": 1, "is very": 1, "very w0": 1,
                                       "very w1": 1})


def test_select_and_pairing_are_deterministic():
    ctx = contexts.probe_contexts()[1]  # correct answer in slot B? read it
    unit = D.Unit("Amy", ctx, "p", ctx.answer, candidates=Counter({f"d{i}": 1 + i % 2 for i in range(9)}))
    cfg = D.GenerationConfig(cap=4)
    chosen = D.select(unit.candidates, cfg)
    pool = sorted(unit.candidates)
    random.Random(10).shuffle(pool)
    assert chosen == pool[:4]
    assert len(D.select(unit.candidates, D.GenerationConfig(cap=None))) == 8  # even
    assert len(D.select(unit.candidates, D.GenerationConfig(cap=None, dedup=False))) == 12  # multiset of 13 → 12
    mcqs = D.pair_mcqs(unit, cfg)
    slot = ctx.correct
    a, b = D.wrong_slots(slot)
    assert (mcqs[f"choice{slot}"] == ctx.answer).all() and (mcqs["label"] == "ABC".index(slot)).all()
    assert mcqs[f"choice{a}"].tolist() == chosen[0::2] and mcqs[f"choice{b}"].tolist() == chosen[1::2]
    assert D.n_mcqs(9) == 4 and D.n_mcqs(30000) == 5000 and D.n_mcqs(30000, cap=None) == 15000


def test_joint_decoding_quirk_and_clean_decoding(tmp_path, tiny_model):
    from stereoprobe.models import load

    loaded = load(str(tiny_model(tmp_path / "rob", "roberta", head="mlm")), "mlm", device="cpu")
    ids = loaded.tokenizer.convert_tokens_to_ids(["Ġthe", "Ġwith", "ian", ".", "Ġperson"])
    compat = D.FillMasker(loaded, top_m=5, decoding="compat")
    assert compat.fills(ids) == ["", "the", "withian.", "person"]  # deletion, glued sub-word, lost 5th fill
    clean = D.FillMasker(loaded, top_m=5, decoding="clean")
    assert clean.fills(ids) == ["the", "with", "person"]


def test_generation_runs_batched_and_resumes(tmp_path, monkeypatch, tiny_bert_mlm, one_torch_thread):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    ctx = [c for c in contexts.probe_contexts() if c.index in (0, 9)]
    cfg = D.GenerationConfig(depth=2, cap=40)
    units, meta = D.generate(str(tiny_bert_mlm), ["Amy", "Bob"], ctx, cfg,
                             options=RunOptions(device="cpu", progress=False))
    assert meta["generated"] == 4 and meta["mlm_passes_run"] <= meta["mlm_passes_compat"]
    assert meta["tokenize"] == D.tokenizer_id() and meta["tokenize"].startswith("treebank-nltk3.7-vendored-v1/")
    stored = pq.read_schema(D._unit_file(Path(meta["cache"]), "Amy", 0)).metadata[b"stereoprobe.sodapop"]
    assert json.loads(stored)["tokenize"] == meta["tokenize"]
    frame = D.units_frame(units, cfg)
    assert (frame["candidates"] <= frame["bound_candidates"]).all()
    assert (frame["mcqs"] == [D.n_mcqs(u, 40) for u in frame["unique"]]).all()
    again, meta2 = D.generate(str(tiny_bert_mlm), ["Amy", "Bob"], ctx, cfg,
                              options=RunOptions(device="cpu", progress=False))
    assert meta2["generated"] == 0 and [u.candidates for u in again] == [u.candidates for u in units]


def test_scoring_distinct_choices_equals_scoring_mcqs_whole(tmp_path, monkeypatch, tiny_model, one_torch_thread):
    from stereoprobe.models import load
    from stereoprobe.store import ScoreStore

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    mcq = tiny_model(tmp_path / "mcq", "bert", head="mcq")
    ctx = [c for c in contexts.probe_contexts() if c.index in (0, 3)]
    cfg = D.GenerationConfig(cap=12)
    units = [D.make_unit(n, c) for c in ctx for n in ("Amy", "Bob")]
    rng = random.Random(0)
    for u in units:
        u.candidates = Counter({" ".join(rng.sample(u.answer.split() + ["kind", "the", "cold"], 2)): 1 for _ in range(40)})
    store = ScoreStore(tmp_path / "store")
    logits = S.score_choices(str(mcq), units, cfg, options=RunOptions(store=store, device="cpu", progress=False))
    assert len(logits) == S.saving(units, cfg)["encodings_distinct"] < S.saving(units, cfg)["encodings_whole"]
    loaded = load(str(mcq), "mcq", device="cpu")
    for k, u in enumerate(units):
        mcqs = D.mcqs_of(u, cfg)
        item = contexts.substitute(u.context, u.name)
        whole = S.score_whole(loaded, mcqs, item["context"] + item["question"])
        rows = logits[logits["unit"] == k]
        lookup = dict(zip(rows["choice"], rows["logit"]))
        mine = np.array([[lookup[r[f"choice{c}"]] for c in "ABC"] for _, r in mcqs.iterrows()])
        np.testing.assert_allclose(mine, whole, atol=1e-5)
        assert (mine.argmax(1) == whole.argmax(1)).all()
    # the generic path (any multiple-choice model, one choice per question) gives the same logits
    scorer = S.ChoiceScorer(loaded)
    scorer.fast = None
    pairs = [(contexts.substitute(units[0].context, "Amy")["context"] + "How?", c) for c in logits["choice"][:8]]
    np.testing.assert_allclose(scorer.score(pairs), S.ChoiceScorer(loaded).score(pairs), atol=1e-5)
    # identity variant = the model; resumed scoring reads the store
    eye = S.Variant("same", "matrix", np.eye(loaded.model.config.hidden_size))
    both = S.score_choices(str(mcq), units, cfg, variants=[eye],
                           options=RunOptions(store=store, device="cpu", progress=False))
    np.testing.assert_allclose(both["logit_same"], both["logit"], atol=1e-5)
    out, summary = S.outcomes(units, cfg, logits)
    assert set(out.columns) == {"name", "context", "distractor", "wrong"}
    assert summary["mcqs"].sum() == S.saving(units, cfg)["mcqs"]
    with pytest.raises(StereoprobeError, match="not a multiple-choice model"):
        S.ChoiceScorer(load(str(tiny_model(tmp_path / "qa", "bert")), "qa", device="cpu"))


def test_outcomes_are_the_specs_sets():
    ctx = contexts.probe_contexts()[0]  # correct answer in slot ctx.correct
    unit = D.Unit("Amy", ctx, "p", ctx.answer, candidates=Counter({"x": 1, "y": 1, "z": 1, "v": 1}))
    cfg = D.GenerationConfig(cap=None)
    mcqs = D.mcqs_of(unit, cfg)
    label = int(mcqs["label"][0])
    # every distractor scores above the answer except "v": each MCQ fails unless both distractors are "v"-like
    values = {"x": 2.0, "y": 1.0, "z": 3.0, "v": -1.0, ctx.answer: 0.0}
    logits = pd.DataFrame({"unit": 0, "choice": list(values), "logit": np.float32(list(values.values()))})
    out, summary = S.outcomes([unit], cfg, logits)
    picked = set()
    for _, r in mcqs.iterrows():
        scores = [values[r[f"choice{c}"]] for c in "ABC"]
        if int(np.argmax(scores)) != label:
            picked.add(r[f"choice{'ABC'[int(np.argmax(scores))]}"])
    assert set(out.loc[out["wrong"], "distractor"]) == picked and set(out["distractor"]) == {"x", "y", "z", "v"}


def test_outcomes_read_letter_scores_per_question_and_keep_the_unanswered_apart():
    """A served model's letter rungs score each question's slots: the top slot is its answer, a tie or no finite
    score none — neither right nor wrong, and no distractor's success."""
    ctx = contexts.probe_contexts()[0]
    unit = D.Unit("Amy", ctx, "p", ctx.answer, candidates=Counter({"x": 1, "y": 1, "z": 1, "v": 1}))
    cfg = D.GenerationConfig(cap=None)
    mcqs = D.mcqs_of(unit, cfg)
    assert len(mcqs) == 2
    label = int(mcqs["label"][0])
    wrong = next(i for i in range(3) if i != label)
    scores = np.full((2, 3), 0.0)
    scores[0, wrong] = 1.0  # question 0 answers a distractor; question 1 ties everywhere (say, an unparsed answer)
    frame = pd.DataFrame({"unit": 0, "mcq": np.repeat([0, 1], 3), "slot": np.tile([0, 1, 2], 2),
                          "choice": mcqs[["choiceA", "choiceB", "choiceC"]].to_numpy().ravel(),
                          "logit": scores.ravel()})
    out, summary = S.outcomes([unit], cfg, frame)
    assert set(out.loc[out["wrong"], "distractor"]) == {mcqs.iloc[0][f"choice{'ABC'[wrong]}"]}
    assert summary[["mcqs", "accuracy", "answered"]].values.tolist() == [[2, 0.0, 0.5]]
    scores[1] = [-np.inf, -np.inf, -np.inf]
    scores[1, label] = -0.1  # question 1 now answered right
    out, summary = S.outcomes([unit], cfg, frame.assign(logit=scores.ravel()))
    assert summary[["accuracy", "answered"]].values.tolist() == [[0.5, 1.0]]
    with pytest.raises(S.MetricsError, match="have 5 rows for 2 MCQs"):
        S.outcomes([unit], cfg, frame.iloc[:5])
