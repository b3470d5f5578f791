"""Moved in 0.8.0 to :mod:`stereoprobe.corpora.nli_corpus` (below the probes, which read it). The old names still work, with a
:class:`DeprecationWarning` naming the new home, until a later release."""

from __future__ import annotations

from ..deprecation import moved

_MOVED = {
    "ACTIVITIES": "stereoprobe.corpora.nli_corpus",
    "ADJECTIVE_PAIRS": "stereoprobe.corpora.nli_corpus",
    "ADVERBIALS": "stereoprobe.corpora.nli_corpus",
    "HELDOUT_FRACTION": "stereoprobe.corpora.nli_corpus",
    "KINDS": "stereoprobe.corpora.nli_corpus",
    "LABELS": "stereoprobe.corpora.nli_corpus",
    "LOCATIONS": "stereoprobe.corpora.nli_corpus",
    "NLIExample": "stereoprobe.corpora.nli_corpus",
    "NOUN_CLASSES": "stereoprobe.corpora.nli_corpus",
    "OBJECT_VERBS": "stereoprobe.corpora.nli_corpus",
    "ONLY_PLACES": "stereoprobe.corpora.nli_corpus",
    "PICTURES": "stereoprobe.corpora.nli_corpus",
    "Pair": "stereoprobe.corpora.nli_corpus",
    "SUBJECTS": "stereoprobe.corpora.nli_corpus",
    "WATER_LOCATIONS": "stereoprobe.corpora.nli_corpus",
    "c_antonym": "stereoprobe.corpora.nli_corpus",
    "c_incompatible_action": "stereoprobe.corpora.nli_corpus",
    "c_negation": "stereoprobe.corpora.nli_corpus",
    "c_only_cohyponym": "stereoprobe.corpora.nli_corpus",
    "e_antonym_negation": "stereoprobe.corpora.nli_corpus",
    "e_drop_info": "stereoprobe.corpora.nli_corpus",
    "e_hypernym": "stereoprobe.corpora.nli_corpus",
    "e_negation_downward": "stereoprobe.corpora.nli_corpus",
    "e_only_hypernym": "stereoprobe.corpora.nli_corpus",
    "e_satellite": "stereoprobe.corpora.nli_corpus",
    "e_subject_general": "stereoprobe.corpora.nli_corpus",
    "e_verb_hypernym": "stereoprobe.corpora.nli_corpus",
    "generate": "stereoprobe.corpora.nli_corpus",
    "generate_splits": "stereoprobe.corpora.nli_corpus",
    "gerund": "stereoprobe.corpora.nli_corpus",
    "kind_schedule": "stereoprobe.corpora.nli_corpus",
    "n_add_info": "stereoprobe.corpora.nli_corpus",
    "n_compatible_action": "stereoprobe.corpora.nli_corpus",
    "n_head_to_satellite": "stereoprobe.corpora.nli_corpus",
    "n_hyponym": "stereoprobe.corpora.nli_corpus",
    "n_negated_contrary": "stereoprobe.corpora.nli_corpus",
    "n_negation_upward": "stereoprobe.corpora.nli_corpus",
    "n_only_hyponym": "stereoprobe.corpora.nli_corpus",
    "n_other_attribute": "stereoprobe.corpora.nli_corpus",
    "n_subject_specific": "stereoprobe.corpora.nli_corpus",
    "n_verb_hyponym": "stereoprobe.corpora.nli_corpus",
    "probe_hits": "stereoprobe.corpora.nli_corpus",
    "probe_words": "stereoprobe.corpora.nli_corpus",
    "split_items": "stereoprobe.corpora.nli_corpus",
    "surface_baseline": "stereoprobe.corpora.nli_corpus",
    "surface_features": "stereoprobe.corpora.nli_corpus",
    "tokens": "stereoprobe.corpora.nli_corpus",
}

__getattr__ = moved(__name__, _MOVED, since="0.8.0")
