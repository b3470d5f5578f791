"""The registry through which the zoo serves the core and the probes (stereoprobe.providers): entry points
registered by the installed package, one clear error when a provider is missing, other prefixes pass through."""

from __future__ import annotations

from importlib.metadata import entry_points
from types import SimpleNamespace

import pytest

from stereoprobe import models, providers
from stereoprobe.errors import CorpusError, ModelLoadError
from stereoprobe.nli import static

INSTALL = r"pip install 'stereoprobe\[zoo\]'"


def test_the_installed_package_registers_the_zoo_providers():
    assert {ep.name for ep in entry_points(group=providers.MODELS_GROUP)} >= {"zoo", "lab", "asset"}
    assert {ep.name for ep in entry_points(group=providers.CORPORA_GROUP)} >= {"nli", "wordnet"}
    assert "lab:qa-biased" in models.lab_names()
    assert providers.corpus("wordnet").__name__ == "stereoprobe.corpora.wordnet"


@pytest.fixture
def no_zoo(monkeypatch):
    """As if the zoo registered nothing (e.g. a source tree on sys.path without `pip install`)."""
    monkeypatch.setattr(providers, "_group", lambda group: {})


@pytest.mark.parametrize("name", ["zoo:minilm-qa", "lab:qa-biased", "asset:minilm"])
def test_a_project_name_without_its_provider_names_the_install_command(no_zoo, name):
    with pytest.raises(ModelLoadError, match=rf"{name}.*no provider of {name.split(':')[0]}: names.*{INSTALL}"):
        models.resolve(name)
    with pytest.raises(ModelLoadError, match=INSTALL):
        models.load(name, "base")


def test_the_projects_corpora_need_no_provider_and_a_missing_one_names_the_install_command(no_zoo):
    """The WordNet NLI corpus lives below the probes (stereoprobe.corpora) and is imported plainly: it works with no
    entry point at all. A corpus another package would register, missing, names the install command."""
    train, held = static.default_corpus(30, 3)
    assert len(train) == 30 and len(held) == 3
    with pytest.raises(CorpusError, match=rf"nli corpus.*{INSTALL}"):
        providers.corpus("nli")


def test_other_names_pass_through_and_other_packages_may_add_a_prefix(monkeypatch):
    mine = providers.ModelProvider(lambda name, smoke: f"/models/{name[5:]}{'-smoke' if smoke else ''}", lambda: [])
    monkeypatch.setattr(providers, "_group", lambda group: {"mine": SimpleNamespace(load=lambda: mine)})
    assert models.resolve("mine:x", smoke=True) == "/models/x-smoke"
    assert models.resolve("bert-base-uncased") == "bert-base-uncased"
    assert models.resolve("other:x") == "other:x"
