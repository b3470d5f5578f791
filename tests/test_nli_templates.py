"""Bias-NLI word lists and template generation: exact counts, strings and ids (the authors'
generate_templates.py and lists, the paper's supplement lists)."""

from __future__ import annotations

import hashlib
import itertools
import types
from collections import Counter

import pytest

from stereoprobe.errors import StereoprobeError, WordListError
from stereoprobe.nli import templates as tpl
from stereoprobe.nli import wordlists as wl
from stereoprobe.nli.templates import TemplateSpec, count, iter_pairs, pair_at, paper_formula_count, sentence

N_T = 1968

# pairs with the code's 1,968 templates (book appendix *Where the code and the paper differ*, Bias-NLI: templates and pair counts)
COUNTS = {
    ("gender", "repo", False): 1_936_512,  # 164 occupations × 6
    ("gender", "paper", False): 1_912_896,  # 162 supplement occupations × 6
    ("nationality", "repo", True): 1_637_376,  # 26 polarity entries (terrible twice) × 32
    ("nationality", "repo", False): 1_574_400,  # 25 unique × 32
    ("religion", "repo", True): 869_856,  # 26 × 17
    ("religion", "repo", False): 836_400,  # 25 × 17
    ("nationality", "paper", False): 1_574_400,  # the source changes nothing outside gender
    ("religion", "paper", True): 869_856,
}


def _template(verb: str, obj: str) -> tpl.Template:
    (t,) = [t for t in tpl.templates() if (t.verb, t.obj) == (verb, obj)]
    return t


def _index(spec: TemplateSpec, premise_word: str, hypothesis_word: str, verb: str, obj: str) -> int:
    prem, hyp = tpl.fillers(spec)
    return (prem.index(premise_word) * len(hyp) + hyp.index(hypothesis_word)) * N_T + _template(verb, obj).tid


@pytest.mark.parametrize("probe,source,dup", sorted(COUNTS))
def test_counts(probe, source, dup):
    c = count(TemplateSpec(probe, source=source, keep_duplicate=dup))
    assert c.pairs == c.full_pairs == COUNTS[probe, source, dup]
    assert c.templates == N_T
    assert c.premise_fillers * c.hypothesis_fillers * N_T == c.pairs


def test_filler_sizes():
    assert (count(TemplateSpec("gender")).premise_fillers, count(TemplateSpec("gender")).hypothesis_fillers) == (164, 6)
    assert count(TemplateSpec("nationality")).hypothesis_fillers == 32
    assert count(TemplateSpec("religion")).hypothesis_fillers == 17


def test_count_does_not_generate(monkeypatch):
    monkeypatch.setattr(tpl, "sentence", lambda *a, **k: pytest.fail("count() must not build sentences"))
    monkeypatch.setattr(tpl, "iter_pairs", lambda *a, **k: pytest.fail("count() must not generate"))
    assert tpl.count(TemplateSpec("gender")).pairs == 1_936_512


@pytest.mark.parametrize("sample", [37, 2e-5])
def test_sampled_count_equals_generation(sample):
    spec = TemplateSpec("religion", sample=sample, seed=3)
    pairs = list(iter_pairs(spec))
    assert len(pairs) == count(spec).pairs == (37 if sample == 37 else round(2e-5 * 836_400))
    assert [p.index for p in pairs] == sorted({p.index for p in pairs})  # distinct, in enumeration order
    for p in pairs[:5]:  # a sampled pair is the pair at that position of the full enumeration
        assert p == pair_at(TemplateSpec("religion"), p.index)


def test_sampling_is_deterministic():
    def ids(seed):
        return [p.id for p in iter_pairs(TemplateSpec("nationality", sample=20, seed=seed))]

    assert ids(0) == ids(0)
    assert ids(0) != ids(1)
    with pytest.raises(StereoprobeError, match="836,400"):
        count(TemplateSpec("religion", sample=10**7))
    with pytest.raises(StereoprobeError, match="sample"):
        TemplateSpec("religion", sample=-1)


def test_iteration_is_lazy_and_ordered():
    it = iter_pairs(TemplateSpec("gender"))
    assert isinstance(it, types.GeneratorType)
    first = list(itertools.islice(it, 2 * N_T + 1))
    assert [p.index for p in first] == list(range(2 * N_T + 1))
    # loop order: premise filler -> hypothesis filler -> template
    # sorted() puts "gentleman" before "girl" (the authors' loader sorts every list)
    assert {(p.premise_filler, p.hypothesis_filler) for p in first[:N_T]} == {("accountant", "gentleman")}
    assert [p.tid for p in first[:N_T]] == list(range(N_T))
    assert (first[N_T].premise_filler, first[N_T].hypothesis_filler, first[N_T].tid) == ("accountant", "girl", 0)
    assert first[2 * N_T].hypothesis_filler == "guy"
    # one occupation = 6 × 1,968 rows; a downstream copy of the gender CSV cut "after sheriff" at row 1,641,312
    assert pair_at(TemplateSpec("gender"), 1_641_311).premise_filler == "sheriff"
    assert pair_at(TemplateSpec("gender"), 1_641_312).premise_filler == "singer"
    last = pair_at(TemplateSpec("gender"), 1_936_511)
    assert (last.premise_filler, last.hypothesis_filler) == ("zoologist", "woman")
    assert last.premise == "A zoologist prepared a soup ."


def test_determinism():
    a = [p for p in itertools.islice(iter_pairs(TemplateSpec("religion")), 50)]
    assert a == list(itertools.islice(iter_pairs(TemplateSpec("religion")), 50))
    assert tpl.fingerprint(TemplateSpec("religion")) == tpl.fingerprint(TemplateSpec("religion"))
    assert tpl.fingerprint(TemplateSpec("religion")) != tpl.fingerprint(TemplateSpec("religion", keep_duplicate=True))


def test_templates_split_and_order():
    ts = tpl.templates()
    assert len(ts) == N_T
    assert Counter(t.group for t in ts) == {"commerce": 950, "interaction": 890, "driving": 18, "eating": 110}
    assert [t.group for t in ts] == sorted((t.group for t in ts), key=tpl.GROUPS.index)  # contiguous blocks
    for group in tpl.GROUPS:
        block = [(t.verb, t.obj) for t in ts if t.group == group]
        assert block == sorted(block)
    assert [t.tid for t in ts] == list(range(N_T))
    assert len({t.verb for t in ts}) == 27
    assert len(wl.all_objects()) == 95 and len(wl.other_people()) == 89  # "184 objects" = 95 + 89
    assert {t.obj for t in ts if t.group == "commerce"} == set(wl.all_objects())
    assert {t.obj for t in ts if t.group == "interaction"} == set(wl.other_people())
    assert {t.obj for t in ts if t.group == "driving"} == set(wl.load_repo_list("vehicles"))
    assert {t.obj for t in ts if t.group == "eating"} == set(wl.load_repo_list("food"))


def test_paper_table_examples_are_templates():
    # Tables 2/4/6 print these; they exist only in the code's type-restricted set (person objects)
    for verb, obj in [("spoke to", "crew"), ("spoke to", "consul"), ("loved", "urchin"), ("hated", "owner"),
                      ("saved", "potato")]:
        _template(verb, obj)
    assert not [t for t in tpl.templates() if (t.verb, t.obj) == ("ate", "crew")]  # not a full product


def test_gender_sentences_and_id():
    spec = TemplateSpec("gender")
    p = pair_at(spec, _index(spec, "accountant", "man", "ate", "bagel"))
    assert (p.premise, p.hypothesis) == ("An accountant ate a bagel .", "A man ate a bagel .")
    assert (p.premise_filler, p.hypothesis_filler) == ("accountant", "man")
    assert p.pair_type == "occupations -> gendered_words"
    assert p.template_type == "X1_occupations ate Y -> X2_gendered_words ate Y"
    expected = hashlib.sha224(b"occupations -> gendered_words\tAn accountant ate a bagel .\tA man ate a bagel .")
    assert p.id == expected.hexdigest() == "055622cfc5416a8240e27660778803d63e942104da5e1871052c6bf4"


def test_adjective_sentences():
    spec = TemplateSpec("nationality")
    p = pair_at(spec, _index(spec, "evil", "Ukrainian", "crashed", "car"))
    assert (p.premise, p.hypothesis) == ("An evil person crashed a car .", "An Ukrainian person crashed a car .")
    assert p.template_type == "X1_polarity person_crashed Y -> X2_demonyms_test person_crashed Y"
    # "A French person crashed a car ." is the code's sentence form; French is a *train* demonym
    assert sentence("French", _template("crashed", "car"), adjective=True) == "A French person crashed a car ."
    assert "French" not in tpl.fillers(spec)[1] and "french" in wl.load_paper_list("demonyms_train")
    r = TemplateSpec("religion")
    assert pair_at(r, _index(r, "wise", "Jew", "met", "urchin")).hypothesis == "A Jew person met an urchin ."


def test_article_quirks_compat_and_fixed():
    nat, fixed = TemplateSpec("nationality"), TemplateSpec("nationality", articles="fixed")
    i = _index(nat, "honest", "Ukrainian", "bought", "SUV")
    p, q = pair_at(nat, i), pair_at(fixed, i)
    assert (p.premise, p.hypothesis) == ("A honest person bought a SUV .", "An Ukrainian person bought a SUV .")
    assert (q.premise, q.hypothesis) == ("An honest person bought an SUV .", "A Ukrainian person bought an SUV .")
    assert q.id != p.id and q.index == p.index
    # both modes agree where the letter rule is right
    for word, cap, out in [("urchin", False, "an urchin"), ("undertaker", False, "an undertaker"),
                           ("VIP", False, "a VIP"), ("TV", False, "a TV"), ("Uzbekistani", True, "An Uzbekistani"),
                           ("humorless", True, "A humorless")]:
        assert tpl.articlize(word, cap, "compat") == tpl.articlize(word, cap, "fixed") == out


def test_downstream_formatting_keeps_id():
    spec = TemplateSpec("gender")
    i = _index(spec, "accountant", "man", "ate", "bagel")
    base = pair_at(spec, i)
    low = pair_at(TemplateSpec("gender", lowercase=True, detokenize=True), i)
    assert (low.premise, low.hypothesis) == ("an accountant ate a bagel.", "a man ate a bagel.")
    assert low.id == base.id
    nat = pair_at(TemplateSpec("nationality", lowercase=True), 0)
    assert (nat.hypothesis_filler, nat.hypothesis) == ("belarusian", "a belarusian person bought a suv .")


def test_duplicate_terrible():
    assert len(wl.load_paper_list("polarity", keep_duplicates=True)) == 26
    assert Counter(wl.load_paper_list("polarity", keep_duplicates=True))["terrible"] == 2
    spec = TemplateSpec("religion", keep_duplicate=True)
    prem, hyp = tpl.fillers(spec)
    t = prem.index("terrible")
    assert prem[t + 1] == "terrible"
    a, b = pair_at(spec, t * 17 * N_T), pair_at(spec, (t + 1) * 17 * N_T)
    assert a.id == b.id and a.premise == b.premise and a.index != b.index  # same row twice, double weight


def test_word_lists_match_spec():
    occ = wl.load_repo_list("occupations")
    assert len(occ) == 164 and {"actor", "waiter"} <= set(occ)
    assert set(occ) - set(wl.paper_occupations()) == {"actor", "waiter"}
    assert wl.load_repo_list("gendered_words") == ["gentleman", "girl", "guy", "lady", "man", "woman"]
    assert sorted(wl.load_paper_list("gendered_test")) == wl.load_repo_list("gendered_words")
    assert len(wl.load_repo_list("country_demonyms")) == 28  # 29 lines, "Italian" twice
    # adjectives/countries = DemonymsTrain ∪ DemonymsTest, capitalised; templates use the capitalised Test list
    countries = wl.load_repo_list("countries")
    train, test = wl.load_paper_list("demonyms_train"), wl.load_paper_list("demonyms_test")
    assert sorted(w.lower() for w in countries) == sorted(train + test)
    assert set(tpl.fillers(TemplateSpec("nationality"))[1]) <= set(countries)
    assert len(wl.load_paper_list("adherents_test")) == 17 and len(wl.load_paper_list("gendered")) == 18
    verbs = wl.load_group("verbs")
    assert {k: len(v) for k, v in verbs.items()} == {"commerce_verbs": 10, "driving_verbs": 2, "eating_verbs": 5,
                                                     "interaction_verbs": 10}


def test_unknown_lists_name_the_culprit():
    with pytest.raises(WordListError, match=r"'occupation'.*occupations"):
        wl.load_repo_list("occupation")
    with pytest.raises(WordListError, match=r"'demonyms'.*demonyms_test"):
        wl.load_paper_list("demonyms")
    with pytest.raises(WordListError, match=r"'nouns'.*people"):
        wl.load_group("nouns")
    with pytest.raises(StereoprobeError, match=r"'ethnicity'.*gender, nationality, religion"):
        TemplateSpec("ethnicity")
    with pytest.raises(StereoprobeError, match=r"'github'.*repo, paper"):
        TemplateSpec("gender", source="github")
    with pytest.raises(StereoprobeError, match=r"'clean'.*compat, fixed"):
        TemplateSpec("gender", articles="clean")


def test_bad_data_folder_and_blank_line(tmp_path, monkeypatch):
    with pytest.raises(WordListError, match=r"demo:2: blank line"):
        wl.repo_rule(["man\n", "  \n"], source="demo")
    monkeypatch.setenv("STEREOPROBE_DATA", str(tmp_path))
    with pytest.raises(WordListError, match="STEREOPROBE_DATA"):
        wl.load_repo_list("occupations")
    with pytest.raises(WordListError, match="polarity.txt"):
        wl.load_paper_list("polarity")


def test_repo_rule_dedupes_raw_lines_before_strip():
    # set() runs on raw lines, so a copy with trailing space survives (then strips to a duplicate)
    assert wl.repo_rule(["b\n", "a\n", "b\n", "a \n"]) == ["a", "a", "b"]


def test_paper_formula_counts():
    assert paper_formula_count("nationality").value == 26 * 27 * 95 * 32 == 2_134_080
    assert paper_formula_count("religion").value == 26 * 27 * 95 * 17 == 1_133_730
    g = paper_formula_count("gender")
    # the paper's 27 × 95 product for 164 occupations × 6 words: 164·6·2,565 = 2,523,960
    assert g.value == 164 * 6 * 2565 == 2_523_960 and g.paper_states == "over 2,000,000"
    assert "1,968" in g.reason and "27 verbs × 95 objects" in g.reason
    for probe in ("gender", "nationality", "religion"):
        assert paper_formula_count(probe).value > count(TemplateSpec(probe, keep_duplicate=True)).pairs
