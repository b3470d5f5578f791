"""Moved in 0.8.0 to :mod:`stereoprobe.book.display` (the book layer: only the chapters use it). The old names still
work, with a :class:`DeprecationWarning` naming the new home, until a later release."""

from __future__ import annotations

from .deprecation import moved

_MOVED = {
    "Format": "stereoprobe.book.display",
    "INTERVAL_LABEL": "stereoprobe.book.display",
    "MISSING": "stereoprobe.book.display",
    "captioned": "stereoprobe.book.display",
    "float_format": "stereoprobe.book.display",
    "glue_all": "stereoprobe.book.display",
    "intervals": "stereoprobe.book.display",
    "method_source": "stereoprobe.book.display",
    "show": "stereoprobe.book.display",
    "show_method": "stereoprobe.book.display",
    "styled": "stereoprobe.book.display",
    "table_html": "stereoprobe.book.display",
    "use_book_style": "stereoprobe.book.display",
}

__getattr__ = moved(__name__, _MOVED, since="0.8.0")
