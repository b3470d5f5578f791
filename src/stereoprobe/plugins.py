"""Kinds of models and their backends beyond the core, registered by the modules that define them.

The core — :mod:`stereoprobe.modelref`, :mod:`stereoprobe.backends` and the probes — names no kind of model beyond
what files say (a QA model, a masked LM, a classifier, a multiple-choice model, a causal LM). A module that adds a
kind registers it as it is imported (:func:`stereoprobe.modelref.register_kind` and
:func:`stereoprobe.backends.register_backend`) and is declared in the entry-point group :data:`GROUP` of its
package's ``pyproject.toml`` — stereoprobe's own served models as ``served = "stereoprobe.served.backend"`` under
``[project.entry-points."stereoprobe.plugins"]``, as the zoo's names are declared under ``stereoprobe.providers``.
Before the first model name is resolved, :func:`load` imports every module so declared, once per process.
"""

from __future__ import annotations

#: The entry-point group through which a package (stereoprobe itself included) adds kinds of models and backends.
GROUP = "stereoprobe.plugins"

_LOADED: dict[str, str] = {}
_SCANNED: list[bool] = []


def load() -> dict[str, str]:
    """Import every module of :data:`GROUP`'s entry points once; name → module of those loaded. One that does not
    import is refused in one line naming it and the fix."""
    if _SCANNED:
        return dict(_LOADED)
    _SCANNED.append(True)
    from importlib.metadata import entry_points

    for point in entry_points(group=GROUP):
        try:
            point.load()
        except ImportError as err:
            from .errors import StereoprobeError

            _SCANNED.clear()
            raise StereoprobeError(f"The stereoprobe plug-in {point.name!r} ({point.value}) does not import ({err}); "
                                   "reinstall the package that declares it, or uninstall it.") from err
        _LOADED[point.name] = point.value
    return dict(_LOADED)


__all__ = ["GROUP", "load"]
