"""The labelled premise/hypothesis pair and the word tokens of the NLI corpora: :mod:`stereoprobe.corpora.examples`
(moved there in 0.8.0, below the probes; imported here as before)."""

from __future__ import annotations

from ..corpora.examples import NLIExample, tokens

__all__ = ["NLIExample", "tokens"]
