"""Sphinx extension of the book's Python API page (book/api.md): a public constant's own documentation.

A constant re-exported by a package (``stereoprobe.unqover.DATASETS``, defined in ``stereoprobe.unqover.generate``)
has no ``#:`` comment in the package's ``__init__``, and autodoc then shows the docstring of its type (``dict()
-> new empty dictionary ...``). This shows the ``#:`` comment written where the constant is defined instead.
"""

from __future__ import annotations

import sys
from typing import Any

from sphinx.pycode import ModuleAnalyzer


def defining_comment(name: str, obj: Any) -> list[str] | None:
    """The ``#:`` comment of ``obj`` in the module of ``name``'s package that binds it, or None."""
    package, attr = name.rsplit(".", 1)
    for modname, module in sorted(sys.modules.items()):
        if (modname == package or modname.startswith(package + ".")) and getattr(module, attr, None) is obj:
            try:
                docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
            except Exception:  # a module without source: look further
                continue
            if ("", attr) in docs:
                return list(docs["", attr])
    return None


def _own_doc(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what != "data" or getattr(obj, "__doc__", None) != getattr(type(obj), "__doc__", None):
        return
    comment = defining_comment(name, obj)
    if comment is None:
        raise RuntimeError(f"{name} has no '#:' comment where it is defined; write one above its assignment")
    lines[:] = comment


def setup(app: Any) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", _own_doc)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
