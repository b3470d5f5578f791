"""NLTK 3.7's word tokenizer rules, vendored: SODAPOP's compat windows must not depend on the installed nltk.

The authors of SODAPOP (An, Li, Zhao, Rudinger, EACL 2023) ran ``nltk.word_tokenize`` of **nltk 3.7**
(their repository's ``env.yml``; ``generate_distractors.py`` tokenizes answers and re-tokenizes every
filled string with it). ``word_tokenize`` splits sentences with Punkt and runs ``NLTKWordTokenizer`` —
NLTK's improved Treebank tokenizer, not ``TreebankWordTokenizer`` — on each sentence. Its regular
expressions changed after 3.8.1:

* 3.9: whitespace runs are collapsed before the clitic rules, so "John's\\tgood" now splits "'s";
* 3.10: an apostrophe before a word is split off unless a whole clitic follows (3.7 keeps "'sfo", 3.10
  gives "'" "sfo"), and figure/en/em dashes (U+2012–U+2015) become tokens.

:func:`tokenize` is ``NLTKWordTokenizer().tokenize`` of nltk 3.7 (one sentence; the regular expressions
and their order are verbatim; ``convert_parentheses``, ``return_str`` and ``span_tokenize`` are left out).
``tests/sodapop_treebank_nltk37.jsonl`` holds nltk 3.7's own output, which ``tests/test_sodapop_treebank.py``
checks this module against.

Derived from NLTK 3.7, ``nltk/tokenize/destructive.py`` (``MacIntyreContractions``, ``NLTKWordTokenizer``):
Copyright (C) 2001-2022 NLTK Project; authors Liling Tan, Tom Aarsen; https://www.nltk.org. Licensed under
the Apache License, Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0), as is stereoprobe.
Modified by the stereoprobe authors: reduced to the ``tokenize`` path as one function.

>>> tokenize("They'll sfo 'sfo can't gonna... (ok) Bethany's.")
['They', "'ll", 'sfo', "'sfo", 'ca', "n't", 'gon', 'na', '...', '(', 'ok', ')', 'Bethany', "'s", '.']
"""

from __future__ import annotations

import re

__all__ = ["RULES_ID", "tokenize", "tokenize_every_rule"]

#: The identity of these rules; change the suffix whenever a rule changes (it is part of SODAPOP's cache keys).
RULES_ID = "treebank-nltk3.7-vendored-v1"

_STARTING_QUOTES = [
    (re.compile("([«“‘„]|[`]+)", re.U), r" \1 "),
    (re.compile(r"^\""), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b", re.U), r"\1 \2"),
]
_PUNCTUATION = [
    (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*)\s*$", re.U), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}", re.U), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),  # the final period
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]", re.U), r" \g<0> "),
]
_PARENS_BRACKETS = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
_DOUBLE_DASHES = (re.compile(r"--"), r" -- ")
_ENDING_QUOTES = [
    (re.compile("([»”’])", re.U), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
# Robert MacIntyre's contractions (CONTRACTIONS2 and CONTRACTIONS3; CONTRACTIONS4 is unused in nltk too).
_CONTRACTIONS = [re.compile(p) for p in (
    r"(?i)\b(can)(?#X)(not)\b", r"(?i)\b(d)(?#X)('ye)\b", r"(?i)\b(gim)(?#X)(me)\b", r"(?i)\b(gon)(?#X)(na)\b",
    r"(?i)\b(got)(?#X)(ta)\b", r"(?i)\b(lem)(?#X)(me)\b", r"(?i)\b(more)(?#X)('n)\b", r"(?i)\b(wan)(?#X)(na)(?=\s)",
    r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b")]


# What each rule needs in the text to match at all: any one of these strings (the contractions: in lower case, where
# the text is ASCII; outside it, case-insensitive matching pairs other letters). A rule whose strings are all absent
# from the text as it stands (earlier rules may have written them) cannot match, so it is skipped: the same tokens,
# in a fraction of the time (benchmarks/sodapop_fills.py; tests/test_sodapop_treebank.py compares the two).
_STARTING_NEEDS = [tuple("«“‘„`"), ('"',), ("``",), ('"', "''"), ("'",)]
_PUNCTUATION_NEEDS = [(".",), (":", ","), (":", ","), ("..",), tuple(";@#$%&"), (".",), ("?", "!"), ("' ",), ("*",)]
_ENDING_NEEDS = [tuple("»”’"), ("''",), ('"',), ("'",), ("'", "n't", "N'T")]
_CONTRACTION_NEEDS = ["cannot", "d'ye", "gimme", "gonna", "gotta", "lemme", "more'n", "wanna", "'tis", "'twas"]
def _with_firsts(rules, needs) -> list:
    """(regexp, substitution, needed strings, their first characters) per rule: a rule none of whose first characters
    is in the text is skipped after one set operation."""
    return [(regexp, substitution, need, frozenset(n[0] for n in need)) for (regexp, substitution), need in
            zip(rules, needs)]


_RULES = _with_firsts(_STARTING_QUOTES + _PUNCTUATION + [_PARENS_BRACKETS, _DOUBLE_DASHES],
                      _STARTING_NEEDS + _PUNCTUATION_NEEDS + [tuple("[]{}()<>"), ("--",)])
_ENDING = _with_firsts(_ENDING_QUOTES, _ENDING_NEEDS)


def tokenize(text: str) -> list[str]:
    """The tokens of one sentence, as nltk 3.7's ``NLTKWordTokenizer().tokenize(text)``."""
    present = set(text)
    for regexp, substitution, needs, firsts in _RULES:
        if not firsts.isdisjoint(present) and any(n in text for n in needs):
            text = regexp.sub(substitution, text)
            present = set(text)
    text = f" {text} "
    present.add(" ")
    for regexp, substitution, needs, firsts in _ENDING:
        if not firsts.isdisjoint(present) and any(n in text for n in needs):
            text = regexp.sub(substitution, text)
            present = set(text)
    lower = text.lower() if text.isascii() else None  # outside ASCII, case-insensitive matching has its own pairs
    for regexp, needs in zip(_CONTRACTIONS, _CONTRACTION_NEEDS):
        if lower is None or needs in lower:
            text = regexp.sub(r" \1 \2 ", text)
            lower = text.lower() if lower is not None else None
    return text.split()


def tokenize_every_rule(text: str) -> list[str]:
    """:func:`tokenize` without the skipping: every rule applied, as nltk does (the tests compare the two)."""
    for regexp, substitution in _STARTING_QUOTES + _PUNCTUATION + [_PARENS_BRACKETS, _DOUBLE_DASHES]:
        text = regexp.sub(substitution, text)
    text = f" {text} "
    for regexp, substitution in _ENDING_QUOTES:
        text = regexp.sub(substitution, text)
    for regexp in _CONTRACTIONS:
        text = regexp.sub(r" \1 \2 ", text)
    return text.split()
