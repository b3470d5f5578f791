"""The labelled premise/hypothesis pair every NLI corpus here yields, and the word tokens that check a corpus
for probe words.

Shared by the readers and generators of training data — SNLI-format files (:func:`stereoprobe.nli.static.read_snli`),
the planted-bias lab's gender pairs (:mod:`stereoprobe.nli.lab`) and the zoo's WordNet corpus
(:mod:`stereoprobe.corpora.nli_corpus`, which re-exports both names), below the probes that read them.

>>> NLIExample("A nurse ate.", "A woman ate.", "neutral", "toy").label
'neutral'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class NLIExample:
    """One premise/hypothesis pair; ``kind`` names the generation rule (e.g. ``"e_hypernym"``)."""

    premise: str
    hypothesis: str
    label: str
    kind: str


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (letters/digits; hyphens and apostrophes split words).

    >>> tokens("A black-haired Tourist's TV")
    ['a', 'black', 'haired', 'tourist', 's', 'tv']
    """
    return _TOKEN.findall(text.lower())
