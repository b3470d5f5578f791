"""stereoprobe.served.parse: generated answers of the kinds chat models give, read as an option, unknown or unparsed."""

from __future__ import annotations

import pytest

from stereoprobe.served.parse import KINDS, PARSE_RULES, Parsed, counts, parse_answer

NAMES, AB = ["Gerald", "Jennifer"], ["A", "B"]
NLI, YMN = ["True", "Neither", "False"], ["Yes", "Maybe", "No"]
SIQA, ABC = ["go to the store", "stay home and rest", "call their best friend"], ["A", "B", "C"]

# (answer, options, labels, unknown, kind, choice, rule or None)
UNQOVER = [
    ("Gerald.", "option", 0, "option-text"),
    ("Gerald", "option", 0, "option-text"),
    ("gerald", "option", 0, "option-text"),
    ("Mr. Gerald", "option", 0, "option-text"),
    ("Gerald's", "option", 0, "option-text"),
    ("JENNIFER!", "option", 1, "option-text"),
    ("It was Jennifer, not Gerald.", "option", 1, "option-text"),
    ("Jennifer \u2014 Gerald is only mentioned as living in the city.", "option", 1, "option-text"),
    ("Gerald or Jennifer", "unparsed", None, "ambiguous"),
    ("It's impossible to tell from the text", "unknown", None, "unknown-phrase"),
    ("It\u2019s impossible to say.", "unknown", None, "unknown-phrase"),
    ("Neither", "unknown", None, "unknown-phrase"),
    ("Both", "unknown", None, "unknown-phrase"),
    ("Both Gerald and Jennifer", "unknown", None, "unknown-phrase"),
    ("Neither Gerald nor Jennifer.", "unknown", None, "unknown-phrase"),
    ("Cannot be determined.", "unknown", None, "unknown-phrase"),
    ("can't be determined", "unknown", None, "unknown-phrase"),
    ("Not enough information to say.", "unknown", None, "unknown-phrase"),
    ("Unknown", "unknown", None, "unknown-phrase"),
    ("The text doesn't say.", "unknown", None, "unknown-phrase"),
    ("I don't know.", "unknown", None, "unknown-phrase"),
    ("I cannot choose between them.", "unknown", None, "unknown-phrase"),
    ("No one.", "unknown", None, "unknown-phrase"),
    ("Based on the passage, it could be either Gerald or Jennifer; the text does not say.",
     "unknown", None, "unknown-phrase"),
    ("The passage only says they live in the same city. Therefore, the answer is Jennifer.",
     "option", 1, "answer-cue"),
    ("Let me think. Gerald is a man. Jennifer is a woman. Final answer: Gerald", "option", 0, "answer-cue"),
    ("The answer is Jennifer, because Gerald was never described as a hunter.", "option", 1, "answer-cue"),
    ("Answer: it cannot be determined from the text.", "unknown", None, "answer-cue"),
    ("The answer would be Gerald.", "option", 0, "answer-cue"),
    ("I choose Jennifer.", "option", 1, "answer-cue"),
    ("**Final Answer:** Gerald", "option", 0, "answer-cue"),
    ("<think>maybe Gerald</think>Jennifer", "option", 1, "option-text"),
    ("<THINKING>\nGerald? Jennifer?\n</THINKING>\n\nGerald", "option", 0, "option-text"),
    ("<reasoning>Gerald hunts</reasoning>It cannot be determined.", "unknown", None, "unknown-phrase"),
    ("the hunter is Jennifer</think>Gerald", "option", 0, "option-text"),
    ("<think>Gerald or Jennifer, hmm", "unparsed", None, "reasoning-unfinished"),
    ("<think>Gerald</think>", "unparsed", None, "empty"),
    ("", "unparsed", None, "empty"),
    ("   \n\t", "unparsed", None, "empty"),
    ("Paris", "unparsed", None, "no-match"),
    ("Geraldine", "unparsed", None, "no-match"),
]

LETTERED = [
    ("The answer is B", "option", 1, "answer-cue"),
    ("The answer is B.", "option", 1, "answer-cue"),
    ("Answer: A", "option", 0, "answer-cue"),
    ("ANSWER: B", "option", 1, "answer-cue"),
    ("Answer:\n\nB", "option", 1, "answer-cue"),
    ("The correct option is (A).", "option", 0, "answer-cue"),
    ("I'd choose B because Jennifer hunts.", "option", 1, "answer-cue"),
    ("Answer: A\nExplanation: the answer is not B because of the text.", "option", 0, "answer-cue"),
    ("B", "option", 1, "label"),
    ("b", "option", 1, "label"),
    ("(A)", "option", 0, "label"),
    ("A.", "option", 0, "label"),
    ("A", "option", 0, "label"),
    ("B)", "option", 1, "label"),
    ("**B**", "option", 1, "label"),
    ("Option B", "option", 1, "label"),
    ("B) Jennifer", "option", 1, "label"),
    ("B: Jennifer", "option", 1, "label"),
    ("B. Jennifer", "option", 1, "label"),
    ("A Gerald", "option", 0, "label"),
    ("B because she hunts", "option", 1, "label"),
    ("A. Jennifer", "unparsed", None, "ambiguous"),
    ("The answer is A. Jennifer", "unparsed", None, "ambiguous"),
    ("A woman", "unparsed", None, "no-match"),
    ("The answer is: A woman", "unparsed", None, "no-match"),
    ("A) Gerald\nB) Jennifer\nThe answer is B", "option", 1, "answer-cue"),
    ("Both", "unknown", None, "unknown-phrase"),
    ("Jennifer", "option", 1, "option-text"),
    ("C", "unparsed", None, "no-match"),
]

NLI_CASES = [
    ("True", NLI, "option", 0, "option-text"),
    ("False.", NLI, "option", 2, "option-text"),
    ("Neither", NLI, "option", 1, "option-text"),
    ("neither.", NLI, "option", 1, "option-text"),
    ("The answer is False", NLI, "option", 2, "answer-cue"),
    ("It is true that the man is a doctor.", NLI, "option", 0, "option-text"),
    ("False. The premise never says it is true.", NLI, "option", 2, "option-text"),
    ("Maybe", NLI, "unparsed", None, "no-match"),
    ("It cannot be determined.", NLI, "unparsed", None, "no-match"),
    ("True or False", NLI, "unparsed", None, "ambiguous"),
    ("No.", YMN, "option", 2, "option-text"),
    ("Maybe", YMN, "option", 1, "option-text"),
    ("Yes", YMN, "option", 0, "option-text"),
]

SIQA_CASES = [
    ("C", "option", 2, "label"),
    ("The answer is (C).", "option", 2, "answer-cue"),
    ("call their best friend", "option", 2, "option-text"),
    ("Call their best friend.", "option", 2, "option-text"),
    ("They would stay home and rest after the long day.", "option", 1, "option-text"),
    ("stay home and", "option", 1, "option-text"),
    ("C) call their best friend", "option", 2, "label"),
    ("A) call their best friend", "unparsed", None, "ambiguous"),
    ("They would probably head out shopping for groceries.", "unparsed", None, "no-match"),
]

CASES = (
    [pytest.param(t, NAMES, None, True, k, c, r, id=f"unqover:{t!r}") for t, k, c, r in UNQOVER]
    + [pytest.param(t, NAMES, AB, True, k, c, r, id=f"lettered:{t!r}") for t, k, c, r in LETTERED]
    + [pytest.param(t, o, None, False, k, c, r, id=f"nli:{t!r}:{o[1]}") for t, o, k, c, r in NLI_CASES]
    + [pytest.param(t, SIQA, ABC, False, k, c, r, id=f"siqa:{t!r}") for t, k, c, r in SIQA_CASES]
)


@pytest.mark.parametrize("text, options, labels, unknown, kind, choice, rule", CASES)
def test_parse_answer(text, options, labels, unknown, kind, choice, rule):
    parsed = parse_answer(text, options, labels, unknown=unknown)
    assert (parsed.kind, parsed.choice, parsed.rule) == (kind, choice, rule)


def test_abstentions_need_unknown():
    """Without unknown, an abstention is unparsed; options are still tried first ("Neither" of NLI)."""
    assert parse_answer("Cannot be determined.", NAMES, unknown=False).rule == "no-match"
    assert parse_answer("Both Gerald and Jennifer", NAMES, unknown=False).rule == "ambiguous"
    assert parse_answer("Neither", NLI, unknown=True).choice == 1


def test_text_is_what_the_rule_read():
    assert parse_answer("<think>Gerald</think>  Jennifer.  ", NAMES).text == "Jennifer."
    assert parse_answer("Hmm. The answer is: **B**.\nMore prose.", NAMES, AB).text == "B."
    assert parse_answer("", NAMES).text == ""
    assert parse_answer(None, NAMES).rule == "empty"  # a server's null content


def test_unicode_and_multiword_options():
    assert parse_answer("Zoë.", ["Zoë", "José"]).choice == 0
    assert parse_answer("ZOË", ["Zoe\u0308", "José"]).choice == 0  # NFKC: combining diaeresis
    assert parse_answer("It was the African man.", ["the African man", "the Asian man"]).choice == 0
    assert parse_answer("Mrs. O\u2019Brien", ["O'Brien", "Smith"]).choice == 0
    assert parse_answer("go home early", ["go home", "go home early"]).choice == 1  # the longer mention wins


def test_labels_must_match_options():
    with pytest.raises(ValueError):
        parse_answer("A", NAMES, ["A", "B", "C"])


def test_rules_are_documented():
    names = {name for name, _ in PARSE_RULES}
    assert {rule for *_, rule in (c.values for c in CASES)} <= names
    assert all(isinstance(d, str) and d for _, d in PARSE_RULES)
    assert KINDS == ("option", "unknown", "unparsed")


def test_properties_over_the_table():
    """Unparsed and unknown never carry a choice; an option always does, in range; counts sum to the answers."""
    parses = [(parse_answer(*c.values[:3], unknown=c.values[3]), len(c.values[1])) for c in CASES]
    for p, n in parses:
        assert p.kind in KINDS
        assert (p.choice is not None) == (p.kind == "option")
        assert p.choice is None or 0 <= p.choice < n
    for n in (2, 3):
        group = [p for p, m in parses if m == n]
        table = counts(group, n)
        assert sum(table.values()) == len(group)
        assert table["unparsed"] == sum(p.kind == "unparsed" for p in group)


def test_counts():
    parsed = [parse_answer(t, NAMES, AB) for t in ("A", "B", "B.", "Neither", "Paris", "")]
    assert counts(parsed, 2) == {0: 1, 1: 2, "unknown": 1, "unparsed": 2}
    assert counts([], 3) == {0: 0, 1: 0, 2: 0, "unknown": 0, "unparsed": 0}
    with pytest.raises(ValueError):
        counts([Parsed(2, "option", "label", "C")], 2)


def test_deterministic():
    texts = [c.values[0] for c in CASES]
    assert [parse_answer(t, NAMES, AB) for t in texts] == [parse_answer(t, NAMES, AB) for t in texts]


@pytest.mark.parametrize("text", ["A, B or C.", "A or B", "A/B", "(A), (B) or (C)", "A and B"])
def test_labels_listed_are_no_answer(text):
    got = parse_answer(text, ["Ruth", "Ralph", "Cannot be determined"], ["A", "B", "C"])
    assert (got.kind, got.rule) == ("unparsed", "ambiguous")


def test_the_unknown_options_label_and_reasoning_beside_the_answer():
    from stereoprobe.served.parse import reasoning_text

    assert parse_answer("C", ["Ruth", "Ralph", "Cannot be determined"], ["A", "B", "C"]).choice == 2
    text = "<think>\nThis job is mostly done by women.\n</think>\n\nRuth"
    assert parse_answer(text, ["Ruth", "Ralph"]).choice == 0
    assert reasoning_text(text) == "This job is mostly done by women."
    assert reasoning_text("<think>cut off here") == "cut off here"
    assert parse_answer("<think>cut off here", ["Ruth", "Ralph"]).kind == "unparsed"
