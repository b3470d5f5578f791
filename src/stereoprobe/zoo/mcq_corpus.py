"""Multiple-choice training data for ``zoo:minilm-mcq`` from the shipped Social IQa slice.

Source. ``data/sodapop/social_iqa_dev_bethany.jsonl``: 1,302 Social IQa dev items (Sap et al. 2019) whose
person is the name slot "Bethany" (the name SODAPOP substitutes), one JSON object per line with ``context, question, answerA,
answerB, answerC, correct`` (``correct`` is "A", "B" or "C").

Probe contexts are held back. SODAPOP probes 50 of these contexts; :func:`probe_context_indices` applies the
authors' selection rule (as :mod:`stereoprobe.sodapop.contexts` does): go through the file in order with
a 0-based index ``i``, stop once ``i > 320``, keep a line whose question contains "How would you describe
Bethany?". The 50 lines, and any other line with the same context text, never enter either split.

Splits. The remaining items (1,252 for the shipped file) are split by a seeded shuffle into train and
held-out (``n_heldout`` items, 250 by default); lines sharing a context go to the same split, so no
context is in both. "Bethany" is replaced in every field by a name from
:func:`stereoprobe.zoo.namepool.neutral_names` with a plain ``str.replace`` (as SODAPOP does); genders are
exactly balanced over all substitutions of a split (a seeded shuffle of equally many "female" and "male"
slots), the name is uniform within the gender, and train and held-out draw from disjoint parts of the
pool (75/25). Train items can be replicated ``names_per_item`` times with distinct names.

Validation. A line that is not valid JSON (or not a JSON object) stops with ``file:line``. A line that
lacks a field or has a ``correct`` other than A/B/C cannot become an item and is skipped; a line without
"Bethany" is kept unchanged (nothing to substitute).

Limits. Social IQa dev is small; 1,252 items fine-tune a multiple-choice head but do not reach the
accuracy of the full Social IQa training set (33k items) the SODAPOP paper's model used.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorpusError
from . import namepool

from ..sodapop.contexts import (FIELDS, LETTERS, PLACEHOLDER, PROBE_LAST_INDEX, PROBE_QUESTION,  # noqa: F401
                                default_path, probe_context_indices, read_records)


@dataclass(frozen=True)
class MCQItem:
    """One 3-way multiple-choice item; ``choices[label]`` is the correct answer."""

    context: str
    question: str
    choices: tuple[str, str, str]
    label: int  # 0, 1 or 2
    source_index: int  # 0-based line index in the source file
    name: str = ""  # the name put in place of "Bethany" ("" when the line has none or no substitution)


def _is_item(record: dict) -> bool:
    return all(isinstance(record.get(f), str) for f in FIELDS) and record["correct"].strip() in LETTERS


def substitute(record: dict, index: int, name: str) -> MCQItem:
    """The record with ``str.replace("Bethany", name)`` applied to every field, as an :class:`MCQItem`."""
    r = {f: record[f].replace(PLACEHOLDER, name) for f in FIELDS}
    has = any(PLACEHOLDER in record[f] for f in FIELDS)
    return MCQItem(r["context"], r["question"], (r["answerA"], r["answerB"], r["answerC"]),
                   LETTERS.index(r["correct"].strip()), index, name if has else "")


def _genders(rng: random.Random, count: int) -> list[str]:
    """``count`` genders, exactly balanced (an odd count's extra one by coin), in seeded random order."""
    genders = ["female"] * (count // 2) + ["male"] * (count // 2)
    if count % 2:
        genders.append(rng.choice(("female", "male")))
    rng.shuffle(genders)
    return genders


def _pool_split(seed: int) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    pool = namepool.neutral_names(500)
    rng = random.Random(f"stereoprobe-mcq-names-{seed}")
    train, heldout = {}, {}
    for g in ("female", "male"):
        names = list(pool[g])
        rng.shuffle(names)
        k = len(names) // 4
        heldout[g] = tuple(sorted(names[:k]))
        train[g] = tuple(sorted(names[k:]))
    return train, heldout


def _fill(records: list[tuple[int, dict]], copies: int, pool: dict[str, tuple[str, ...]],
          rng: random.Random) -> list[MCQItem]:
    genders = iter(_genders(rng, len(records) * copies))
    items: list[MCQItem] = []
    for index, record in records:
        used: set[str] = set()
        for _ in range(copies):
            gender = next(genders)
            name = rng.choice(pool[gender])
            while name in used:
                name = rng.choice(pool[gender])
            used.add(name)
            items.append(substitute(record, index, name))
    return items


def load_splits(seed: int = 0, n_heldout: int = 250, names_per_item: int = 1,
                path: str | Path | None = None) -> tuple[list[MCQItem], list[MCQItem]]:
    """(train, held-out) items: every non-probe line, split by context, names substituted (module doc).

    Train holds ``names_per_item`` copies of each of its lines (distinct names), held-out one copy each.
    Both lists are in source order (copies of a line are adjacent); shuffle before training.
    """
    if names_per_item < 1:
        raise CorpusError(f"names_per_item must be at least 1, got {names_per_item}.")
    if names_per_item > 100:
        raise CorpusError(f"names_per_item must be at most 100 (distinct names per line), got {names_per_item}.")
    records = read_records(path)
    probe = set(probe_context_indices(path))
    probe_contexts = {records[i].get("context") for i in probe}
    usable = [(i, r) for i, r in enumerate(records)
              if i not in probe and _is_item(r) and r["context"] not in probe_contexts]
    if not 0 <= n_heldout <= len(usable):
        raise CorpusError(f"n_heldout must be between 0 and {len(usable)} (usable lines), got {n_heldout}.")
    groups: dict[str, list[tuple[int, dict]]] = {}
    for i, r in usable:
        groups.setdefault(r["context"], []).append((i, r))
    order = list(groups)
    rng = random.Random(f"stereoprobe-mcq-{seed}")
    rng.shuffle(order)
    heldout: list[tuple[int, dict]] = []
    train: list[tuple[int, dict]] = []
    for context in order:
        group = groups[context]
        (heldout if len(heldout) + len(group) <= n_heldout else train).extend(group)
    if len(heldout) != n_heldout:  # only if multi-line groups cannot fill it exactly
        raise CorpusError(f"Cannot hold out exactly {n_heldout} lines without splitting a context; try another size.")
    heldout.sort(key=lambda x: x[0])
    train.sort(key=lambda x: x[0])
    train_pool, heldout_pool = _pool_split(seed)
    # separate name streams: held-out names do not depend on names_per_item
    return (_fill(train, names_per_item, train_pool, random.Random(f"stereoprobe-mcq-train-{seed}")),
            _fill(heldout, 1, heldout_pool, random.Random(f"stereoprobe-mcq-heldout-{seed}")))


def label_counts(items: list[MCQItem]) -> dict[str, int]:
    """How many items have each correct letter (A/B/C)."""
    counts = {letter: 0 for letter in LETTERS}
    for it in items:
        counts[LETTERS[it.label]] += 1
    return counts
