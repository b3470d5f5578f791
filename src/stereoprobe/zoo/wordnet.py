"""Moved in 0.8.0 to :mod:`stereoprobe.corpora.wordnet` (below the probes, which read it). The old names still work, with a
:class:`DeprecationWarning` naming the new home, until a later release."""

from __future__ import annotations

from ..deprecation import moved

_MOVED = {
    "LEXNAMES": "stereoprobe.corpora.wordnet",
    "PACKAGE_SUBDIR": "stereoprobe.corpora.wordnet",
    "POS_FILES": "stereoprobe.corpora.wordnet",
    "SS_TYPE_POS": "stereoprobe.corpora.wordnet",
    "Synset": "stereoprobe.corpora.wordnet",
    "definition_sentence": "stereoprobe.corpora.wordnet",
    "indefinite_article": "stereoprobe.corpora.wordnet",
    "lookup": "stereoprobe.corpora.wordnet",
    "mlm_corpus": "stereoprobe.corpora.wordnet",
    "parse_data_line": "stereoprobe.corpora.wordnet",
    "read_index": "stereoprobe.corpora.wordnet",
    "read_synsets": "stereoprobe.corpora.wordnet",
    "tag_counts": "stereoprobe.corpora.wordnet",
    "wordnet_dir": "stereoprobe.corpora.wordnet",
    "wordnet_file": "stereoprobe.corpora.wordnet",
}

__getattr__ = moved(__name__, _MOVED, since="0.8.0")
