"""Bias-NLI word lists: the authors' repository lists and the paper-supplement lists.

Two sources live under ``data/nli/``:

* ``word_lists/`` — the authors' repository lists (``adjectives/``, ``nouns/people/``,
  ``nouns/objects/``, ``verbs/``), addressed by file name as in their ``Lists`` dict
  (``occupations``, ``gendered_words``, ``food``, ``commerce_verbs`` …);
* ``paper_supplement/`` — the lists printed in the paper's supplement (``polarity``,
  ``demonyms_train``/``_test``, ``adherents_train``/``_test``, ``countries``, ``gendered``,
  ``gendered_test``), which the repository lacks but nationality/religion need.

Both are read with the repository loader's rule (``Lists.load_list`` in ``stereotypes/lists.py``):
deduplicate the *raw* lines with ``set`` (before stripping), sort, then strip. So the supplement's Polarity
list (26 entries, "terrible" twice) loads as 25 words unless ``keep_duplicates=True``.

>>> repo_rule(["terrible\\n", "awful\\n", "terrible\\n"])
['awful', 'terrible']
>>> repo_rule(["terrible\\n", "awful\\n", "terrible\\n"], keep_duplicates=True)
['awful', 'terrible', 'terrible']
>>> len(load_repo_list("occupations")), len(paper_occupations()), len(load_paper_list("polarity"))
(164, 162, 25)
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..errors import WordListError
from ..paths import data_dir

#: The folders of the authors' repository lists, keyed by their ``Lists`` attribute.
REPO_GROUPS = {"adjectives": "adjectives", "people": "nouns/people", "objects": "nouns/objects", "verbs": "verbs"}
#: The supplement lists shipped as ``paper_supplement/<name>.txt``.
PAPER_LISTS = (
    "adherents_test", "adherents_train", "countries", "demonyms_test", "demonyms_train", "gendered",
    "gendered_test", "polarity",
)
#: The supplement's Occupations list is the repository's without these two (162 vs 164; book appendix *Where the code and the paper differ*,
#: Bias-NLI: occupations).
NOT_IN_PAPER_OCCUPATIONS = ("actor", "waiter")


def _root() -> Path:
    return data_dir() / "nli"


def repo_rule(lines: Iterable[str], keep_duplicates: bool = False, source: str = "<lines>") -> list[str]:
    """The authors' ``load_list`` rule: ``set`` over raw lines, ``sorted``, then ``strip``.

    ``keep_duplicates`` skips the ``set`` (only for the supplement's duplicated "terrible"). A blank
    line would become an empty filler word, so it stops with ``source:line`` instead.
    """
    lines = list(lines)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise WordListError(f"{source}:{number}: blank line in a word list; remove it (it would be an empty word).")
    return [line.strip() for line in sorted(lines if keep_duplicates else set(lines))]


def _read(path: Path, keep_duplicates: bool = False) -> list[str]:
    if not path.is_file():
        raise WordListError(f"{path}: Bias-NLI word-list file not found; check the data folder (STEREOPROBE_DATA).")
    with path.open(encoding="utf-8") as f:  # readlines keeps the newline, like the authors' loader
        return repo_rule(f.readlines(), keep_duplicates, str(path))


def repo_names() -> dict[str, str]:
    """Every repository list: file name -> path relative to ``word_lists/`` (e.g. ``nouns/people/occupations``)."""
    names: dict[str, str] = {}
    for folder in REPO_GROUPS.values():
        base = _root() / "word_lists" / folder
        for path in sorted(base.iterdir()) if base.is_dir() else []:
            if path.is_file():
                names[path.name] = f"{folder}/{path.name}"
    return names


def load_repo_list(name: str) -> list[str]:
    """A repository list by file name (``occupations``, ``food``, ``interaction_verbs`` …)."""
    names = repo_names()
    if not names:
        raise WordListError(
            f"No Bias-NLI word lists found under {_root() / 'word_lists'}; check the data folder (STEREOPROBE_DATA)."
        )
    if name not in names:
        raise WordListError(
            f"Unknown Bias-NLI repository word list {name!r}; valid names: {', '.join(sorted(names))}."
        )
    return _read(_root() / "word_lists" / names[name])


def load_paper_list(name: str, keep_duplicates: bool = False) -> list[str]:
    """A supplement list by name (``polarity``, ``demonyms_test`` …); lowercase, as the paper prints them."""
    if name not in PAPER_LISTS:
        raise WordListError(f"Unknown Bias-NLI supplement word list {name!r}; valid names: {', '.join(PAPER_LISTS)}.")
    return _read(_root() / "paper_supplement" / f"{name}.txt", keep_duplicates)


def load_group(group: str) -> dict[str, list[str]]:
    """All lists of one repository folder, keyed by file name, like the authors' ``lists.people`` etc."""
    if group not in REPO_GROUPS:
        raise WordListError(f"Unknown Bias-NLI list group {group!r}; valid groups: {', '.join(REPO_GROUPS)}.")
    prefix = REPO_GROUPS[group] + "/"
    return {name: load_repo_list(name) for name, rel in repo_names().items() if rel.startswith(prefix)}


def all_objects() -> list[str]:
    """The union of the 6 object lists (95). The code's ``list(set(...))`` order is hash-dependent; sorted here."""
    return sorted({o for words in load_group("objects").values() for o in words})


def other_people() -> list[str]:
    """Person objects of the interaction templates: ``sorted(set(person_hyponyms ∪ rulers))`` (89)."""
    return sorted(set(load_repo_list("person_hyponyms")) | set(load_repo_list("rulers")))


def paper_occupations() -> list[str]:
    """The supplement's 162 occupations: the repository's 164 without "actor" and "waiter"."""
    return [w for w in load_repo_list("occupations") if w not in NOT_IN_PAPER_OCCUPATIONS]
