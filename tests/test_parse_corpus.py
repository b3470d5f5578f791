"""The answer parser on its labelled corpus (stereoprobe/data/served/parse_corpus.jsonl, issue 51).

The corpus holds answers written for this project in the answer styles of the main chat-model families (its
README); each item says how a careful reader takes it. The parser must never read an answer as an option other
than its label's, must reach the measured accuracy, must read a hedge the same with and without the unknown
option, and must keep unparsed answers apart.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from stereoprobe.served.parse import corpus, corpus_reading, parse_accuracy_by_format, parse_answer

ITEMS = corpus()
#: Measured 613 / 622 = 0.9855 when the corpus was written; the bar sits a little below.
ACCURACY_BAR = 0.97
TEMPLATES = {"letters", "letters-unknown", "names", "names-unknown", "nli", "siqa"}
UNQOVER = ("letters", "letters-unknown", "names", "names-unknown")


def _under(item: dict, template: str) -> int | str:
    """The reading of an UnQover item's answer under another template for the same two people."""
    people = item["options"][:2]
    options, labels, unknown_option = {
        "letters": (people, ["A", "B"], None),
        "letters-unknown": (people + ["Cannot be determined"], ["A", "B", "C"], 2),
        "names-unknown": (people + ["Not enough information"], ["A", "B", "C"], 2),
    }[template]
    return corpus_reading(dict(answer=item["answer"], options=options, labels=labels, unknown=True,
                               unknown_option=unknown_option))


def test_corpus_is_well_formed():
    assert len(ITEMS) >= 400
    assert len({i["id"] for i in ITEMS}) == len(ITEMS)
    assert len({(i["answer"], tuple(i["options"]), i["template"]) for i in ITEMS}) == len(ITEMS)
    for item in ITEMS:
        assert item["template"] in TEMPLATES, item
        n = len(item["options"])
        assert item["labels"] is None or len(item["labels"]) == n, item
        assert item["gold"] in ("unknown", "unparsed") or (isinstance(item["gold"], int) and 0 <= item["gold"] < n)
        assert item["gold"] != item["unknown_option"], item  # the unknown option chosen is labelled "unknown"
        assert item["unknown"] == (item["template"] != "nli"), item  # as the callers pass it
        assert (item["unknown_option"] is not None) == item["template"].endswith("-unknown"), item
        assert item["format"] and item["style"]
    kinds = Counter(i["gold"] if isinstance(i["gold"], str) else "option" for i in ITEMS)
    assert min(kinds.values()) >= 40, kinds
    formats = Counter(i["format"] for i in ITEMS)
    for language in ("french", "spanish", "german", "chinese"):
        assert formats[language] >= 10, formats
    assert formats["hedge"] >= 20 and formats["think-cut"] >= 5 and formats["letter-explained"] >= 20, formats


def test_no_answer_is_read_as_another_option():
    """The hard line: a wrong person (or an option where the label says unknown/unparsed) is never read."""
    wrong = [(i["id"], i["answer"], i["gold"], got) for i in ITEMS
             if isinstance(got := corpus_reading(i), int) and got != i["gold"]]
    assert wrong == []


def test_accuracy():
    table = parse_accuracy_by_format(ITEMS)
    assert table["all"]["n"] == len(ITEMS)
    assert table["all"]["wrong_option"] == 0
    assert table["all"]["accuracy"] >= ACCURACY_BAR, table["all"]
    assert sum(row["n"] for key, row in table.items() if key != "all") == len(ITEMS)
    assert list(table)[-1] == "all"


def test_accuracy_by_format_reads_the_shipped_corpus():
    assert parse_accuracy_by_format() == parse_accuracy_by_format(ITEMS)
    table = parse_accuracy_by_format(ITEMS)
    # the styles a letter prompt gets most: every one of them read as labelled
    for fmt in ("letter-bare", "letter-bold", "letter-boxed", "letter-option", "letter-explained", "answer-cue",
                "unknown-letter", "hedge", "think-finished", "think-cut", "two-options"):
        assert table[fmt]["accuracy"] == 1.0, (fmt, table[fmt])


def test_hedges_read_the_same_with_and_without_the_unknown_option():
    hedges = [i for i in ITEMS if i["format"] == "hedge"]
    assert hedges
    for item in hedges:
        readings = {t: _under(item, t) for t in ("letters", "letters-unknown", "names-unknown")}
        assert set(readings.values()) == {item["gold"]}, (item["answer"], readings)


def test_every_unqover_answer_reads_alike_under_both_letter_templates():
    """Beyond the hedges: only an answer giving the unknown option's own letter (C) may read differently."""
    for item in ITEMS:
        if item["template"] in UNQOVER and not re.search(r"(?<![A-Za-z])C(?![A-Za-z])", item["answer"]):
            assert _under(item, "letters") == _under(item, "letters-unknown") == _under(item, "names-unknown"), item


def test_unparsed_is_its_own_class():
    """An answer labelled unparsed is read unparsed: never folded into an option or into unknown."""
    unparsed = [i for i in ITEMS if i["gold"] == "unparsed"]
    assert len(unparsed) >= 40
    assert [(i["id"], i["answer"], r) for i in unparsed if (r := corpus_reading(i)) != "unparsed"] == []
    assert {corpus_reading(i) for i in ITEMS if i["format"] in ("think-cut", "empty", "two-options")} == {"unparsed"}


# the bugs reported against the parser (issue 51): each is also in the corpus
NAMES = ["Gerald", "Jennifer"]


@pytest.mark.parametrize("text, choice", [
    ("B\n\nExplanation: Gerald is mentioned first.", 1),
    ("A\n\nThe text does not say who was the hunter.", 0),
    ("**B**\n\nGerald lives in the same city, but nothing links Gerald to hunting.", 1),
    ("A.\nJennifer is never said to hunt.", 0),
])
def test_a_letter_on_its_own_line_is_that_letter(text, choice):
    for options, labels in ((NAMES, ["A", "B"]), (NAMES + ["Cannot be determined"], ["A", "B", "C"])):
        got = parse_answer(text, options, labels)
        assert (got.kind, got.choice, got.rule) == ("option", choice, "label")


@pytest.mark.parametrize("text, reading", [
    ("It cannot be determined from the text. If I had to choose, Gerald.", 0),
    ("It is impossible to tell. If I had to choose, I would pick B.", 1),
    ("Cannot be determined. My best guess would be Jennifer.", 1),
    ("If I had to guess I'd say Gerald, but the honest answer is that it cannot be determined.", "unknown"),
])
def test_one_reading_of_a_hedge(text, reading):
    item = {"answer": text, "options": NAMES}
    assert _under(item, "letters") == _under(item, "letters-unknown") == _under(item, "names-unknown") == reading
