"""Typed parsers for the UnQover word lists (the authors' ``word_lists/``: slots, subjects, activities, fillers).

Every file is read line by line: surrounding whitespace is stripped, empty lines and lines whose first
character is ``#`` are skipped. A malformed data line stops with ``file:line`` and what was expected.

>>> t = parse_templates(["[subj1] met [subj2].\\tWho [p_act]?\\tWho [p_act:neg]?"], source="demo")
>>> t[0].tid, t[0].slots
(0, ('p_act',))
>>> s = parse_subjects(["[subj]  female | Mary"], source="demo")
>>> s[0]
Subject(name='Mary', demonym=None, cluster='female')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import WordListError
from ..paths import data_dir

#: Attribute slot heads, in the order the templates may use them.
ATTRIBUTE_SLOTS = ("p_act", "p_act-single", "l_act", "l_act-single")
_SLOT_RE = re.compile(r"\[(p_act|p_act-single|l_act|l_act-single)(?::neg)?\]")
_SUBJ_RE = re.compile(r"\[subj([12])(:dem)?\]")


@dataclass(frozen=True)
class Template:
    """One template line: paragraph with two subject slots, a positive and a negated question."""

    tid: int
    paragraph: str
    question: str
    negated_question: str
    slots: tuple[str, ...]  # attribute slots used by the questions, e.g. ("p_act-single",)
    demonym1: bool  # slot 1 uses the demonym form ``[subj1:dem]``
    demonym2: bool
    source: str  # "file:line"

    @property
    def line(self) -> str:
        """The raw template line (three TAB-joined fields), as the generator starts from it."""
        return "\t".join((self.paragraph, self.question, self.negated_question))


@dataclass(frozen=True)
class Subject:
    """A protected-group mention; ``name`` (the plain form) is its identity."""

    name: str
    demonym: str | None
    cluster: str  # "female"/"male" for gender lists, the string "None" otherwise


@dataclass(frozen=True)
class Attribute:
    """One attribute row with its negation (paired by position within the head)."""

    slot: str  # "p_act", "p_act-single", "l_act" or "l_act-single"
    row: int
    text: str
    negated: str
    cluster: str  # e.g. "rude", "crime"; the string "None" for occupations
    identity: str  # the plural head's text of the same row: singular/plural pool as one attribute


def _data_lines(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            yield number, line


def _read(path: str | Path) -> tuple[list[str], str]:
    path = Path(path)
    if not path.is_file():
        raise WordListError(f"{path}: word-list file not found; check the list name or data folder.")
    return path.read_text(encoding="utf-8").splitlines(), str(path)


def parse_templates(lines: Iterable[str], source: str) -> list[Template]:
    """Parse template lines: exactly three TAB-separated fields (paragraph, question, negated question)."""
    templates: list[Template] = []
    for number, line in _data_lines(lines):
        where = f"{source}:{number}"
        fields = [f.strip() for f in line.split("\t") if f.strip()]
        if len(fields) != 3:
            raise WordListError(
                f"{where}: expected 3 TAB-separated fields (paragraph, question, negated question), "
                f"found {len(fields)} in {line!r}."
            )
        paragraph, question, negated = fields
        demonym = {}
        for k in ("1", "2"):
            forms = [m for m in _SUBJ_RE.finditer(paragraph) if m.group(1) == k]
            if len(forms) != 1:
                raise WordListError(
                    f"{where}: expected exactly one [subj{k}] or [subj{k}:dem] slot in the paragraph, "
                    f"found {len(forms)} in {paragraph!r}."
                )
            demonym[k] = forms[0].group(2) is not None
        slots = sorted({m.group(1) for m in _SLOT_RE.finditer(question + "\t" + negated)}, key=ATTRIBUTE_SLOTS.index)
        if not slots:
            raise WordListError(
                f"{where}: expected an attribute slot such as [p_act] in the questions, found none in {line!r}."
            )
        templates.append(
            Template(len(templates), paragraph, question, negated, tuple(slots), demonym["1"], demonym["2"], where)
        )
    return templates


def parse_subjects(lines: Iterable[str], source: str) -> list[Subject]:
    """Parse ``<head> [cluster |] term`` lines; ``[subj]`` and ``[subj:dem]`` rows align by position."""
    heads: dict[str, list[tuple[str, str, str]]] = {}
    for number, line in _data_lines(lines):
        where = f"{source}:{number}"
        parts = line.split(None, 1)
        if len(parts) != 2 or parts[0] not in ("[subj]", "[subj:dem]"):
            raise WordListError(
                f"{where}: expected '[subj] <name>' or '[subj:dem] <demonym>' (optionally 'cluster | name'), "
                f"found {line!r}."
            )
        head, term = parts
        cluster = "None"
        if "|" in term:
            cluster, term = (x.strip() for x in term.split("|", 1))
            if not cluster or not term:
                raise WordListError(f"{where}: expected 'cluster | name' with both parts non-empty, found {line!r}.")
        heads.setdefault(head, []).append((term.strip(), cluster, where))
    plain = heads.get("[subj]", [])
    dem = heads.get("[subj:dem]")
    if not plain:
        raise WordListError(f"{source}: expected at least one '[subj] <name>' line, found none.")
    if dem is not None and len(dem) != len(plain):
        raise WordListError(
            f"{source}: expected as many [subj:dem] lines as [subj] lines (they align by position), "
            f"found {len(dem)} demonyms for {len(plain)} subjects."
        )
    subjects = [
        Subject(name, dem[i][0] if dem is not None else None, cluster) for i, (name, cluster, _) in enumerate(plain)
    ]
    seen: dict[str, str] = {}
    for (name, _, where) in plain:
        if name.lower() in seen:
            raise WordListError(f"{where}: subject {name!r} already listed at {seen[name.lower()]}; remove the duplicate.")
        seen[name.lower()] = where
    return subjects


def parse_attributes(lines: Iterable[str], source: str) -> dict[str, list[Attribute]]:
    """Parse ``<head> [cluster|] text`` lines into attributes per slot, pairing ``:neg`` rows by position."""
    rows: dict[str, list[tuple[str, str, str]]] = {}
    for number, line in _data_lines(lines):
        where = f"{source}:{number}"
        parts = line.split(None, 1)
        head = parts[0]
        m = re.fullmatch(r"\[(p_act|p_act-single|l_act|l_act-single)(:neg)?\]", head)
        if m is None or len(parts) != 2:
            raise WordListError(
                f"{where}: expected '[p_act] <cluster> | <attribute text>' (heads p_act, p_act-single, l_act, "
                f"l_act-single, each optionally ':neg'), found {line!r}."
            )
        rest = parts[1]
        cluster = "None"
        if "|" in rest:
            cluster, rest = (x.strip() for x in rest.split("|", 1))
        text = " ".join(rest.split())
        if not text or not cluster:
            raise WordListError(f"{where}: expected a non-empty attribute text (and cluster before '|'), found {line!r}.")
        rows.setdefault(head.strip("[]"), []).append((text, cluster, where))
    if not rows:
        raise WordListError(f"{source}: expected attribute lines such as '[p_act] was a nurse', found none.")
    result: dict[str, list[Attribute]] = {}
    for slot in [h for h in rows if not h.endswith(":neg")]:
        pos, neg = rows[slot], rows.get(slot + ":neg", [])
        if len(pos) != len(neg):
            raise WordListError(
                f"{source}: expected as many [{slot}:neg] rows as [{slot}] rows (negations pair by position), "
                f"found {len(neg)} and {len(pos)}."
            )
        result[slot] = [
            Attribute(slot, k, text, neg[k][0], cluster, text) for k, (text, cluster, _) in enumerate(pos)
        ]
    orphans = [h for h in rows if h.endswith(":neg") and h[: -len(":neg")] not in rows]
    if orphans:
        raise WordListError(f"{source}: [{orphans[0]}] rows have no positive [{orphans[0][:-4]}] rows to pair with.")
    # singular heads take the identity (and so pool with) the plural head's row of the same index
    for slot in list(result):
        if slot.endswith("-single") and slot[: -len("-single")] in result:
            plural = result[slot[: -len("-single")]]
            if len(plural) != len(result[slot]):
                raise WordListError(
                    f"{source}: expected [{slot}] to have as many rows as [{slot[:-7]}] (row k of each is one "
                    f"attribute), found {len(result[slot])} and {len(plural)}."
                )
            result[slot] = [
                Attribute(a.slot, a.row, a.text, a.negated, a.cluster, plural[a.row].text) for a in result[slot]
            ]
    return result


def parse_filler(lines: Iterable[str], source: str) -> str:
    """The one-line NewsQA header, kept byte-exact (inner double spaces matter for RoBERTa BPE)."""
    data = [line for _, line in _data_lines(lines)]
    if len(data) != 1:
        raise WordListError(f"{source}: expected exactly one header line, found {len(data)}.")
    return data[0]


def _root() -> Path:
    return data_dir() / "unqover" / "word_lists"


def load_templates(name: str) -> list[Template]:
    """Templates of ``word_lists/slots/<name>`` (e.g. ``gender_noact``)."""
    lines, src = _read(_root() / "slots" / name)
    return parse_templates(lines, src)


def load_subjects(name: str) -> list[Subject]:
    """Subjects of ``word_lists/nouns/subjects/<name>`` (e.g. ``female``, ``country``)."""
    lines, src = _read(_root() / "nouns" / "subjects" / name)
    return parse_subjects(lines, src)


def load_attributes(name: str) -> dict[str, list[Attribute]]:
    """Attributes of ``word_lists/activities/<name>`` (e.g. ``occupation_rev1``) per slot."""
    lines, src = _read(_root() / "activities" / name)
    return parse_attributes(lines, src)


def load_filler(name: str = "newsqa") -> str:
    """The NewsQA header of ``word_lists/fillers/<name>``."""
    lines, src = _read(_root() / "fillers" / name)
    return parse_filler(lines, src)


def list_path(kind: str, name: str) -> Path:
    """Path of a word list (``kind`` in slots, subjects, activities, fillers); used for fingerprints."""
    sub = {"slots": "slots", "subjects": "nouns/subjects", "activities": "activities", "fillers": "fillers"}[kind]
    return _root() / sub / name
