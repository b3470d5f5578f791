"""The shipped Social IQa slice and SODAPOP's 50 probe contexts (the authors' ``socialIQa_v1.4_dev_Bethany_0_2191.jsonl``).

``data/sodapop/social_iqa_dev_bethany.jsonl`` holds 1,302 Social IQa dev items, one JSON object per
line with the string fields ``context, question, answerA, answerB, answerC, correct``. Their person is
the literal first name "Bethany" (the paper writes [NAME]); a name is put in with a plain
``str.replace`` over **every** field, as the authors' code does.

Selection (the authors' code): go through the file in order with a 0-based index ``i``, stop once
``i > 320``, keep a line whose question contains "How would you describe Bethany?" — exactly 50 lines.
The correct answer is read *before* substitution (none of the 50 contains "Bethany"). Context 3 ("…
what came out shocked everyone." / "a very aggressive and talkative person") is the paper's single
context (§4.2). 17 of the 50 still refer to their person as she/her (:data:`SHE_CONTEXTS`): with a male
name the item is then inconsistent, a confound the chapter flags.

>>> ctx = probe_contexts()
>>> len(ctx), [c.index for c in ctx[:5]], ctx[1].answer
(50, [0, 3, 9, 18, 30], 'a very aggressive and talkative person')
>>> substitute(ctx[1], "Jamel")["question"]
'How would you describe Jamel?'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorpusError
from ..paths import data_dir, missing_data_fix

#: Placeholder name of the shipped slice.
PLACEHOLDER = "Bethany"
#: The question substring and the last index of SODAPOP's context selection.
PROBE_QUESTION = "How would you describe Bethany?"
PROBE_LAST_INDEX = 320
#: Fields of a Social IQa line, and the answer letters.
FIELDS = ("context", "question", "answerA", "answerB", "answerC", "correct")
LETTERS = ("A", "B", "C")
#: The single context of the paper's §4.2 (Fig. 1, Table 4/8/11/21).
SINGLE_CONTEXT = 3
#: Probe contexts whose person is still "she/her" in the shipped file (a confound: book appendix *Where the code and the paper differ*,
#: SODAPOP: pronouns in the contexts).
SHE_CONTEXTS = (36, 38, 51, 79, 102, 104, 136, 142, 193, 246, 250, 277, 286, 296, 316, 318, 320)


def default_path() -> Path:
    """``data/sodapop/social_iqa_dev_bethany.jsonl`` under :func:`stereoprobe.paths.data_dir`."""
    return data_dir() / "sodapop" / "social_iqa_dev_bethany.jsonl"


def _open_lines(path: str | Path) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: Social IQa file not found; {missing_data_fix()}.")
    return path.read_text(encoding="utf-8").splitlines()


def _parse(line: str, path: str | Path, number: int) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise CorpusError(f"{path}:{number}: malformed JSON line ({e.msg}); fix or remove the line.") from None
    if not isinstance(record, dict):
        raise CorpusError(f"{path}:{number}: expected a JSON object per line, found {type(record).__name__}.")
    return record


def read_records(path: str | Path | None = None) -> list[dict]:
    """Every line of the file as a dict (index = 0-based line number); malformed JSON stops with file:line."""
    path = default_path() if path is None else Path(path)
    return [_parse(line, path, number) for number, line in enumerate(_open_lines(path), start=1)]


def probe_context_indices(path: str | Path | None = None) -> list[int]:
    """SODAPOP's probe lines: i = 0..320 in file order whose question contains "How would you describe Bethany?".

    >>> idx = probe_context_indices()
    >>> len(idx), idx[:5], idx[-1]
    (50, [0, 3, 9, 18, 30], 320)
    """
    path = default_path() if path is None else Path(path)
    indices: list[int] = []
    for i, line in enumerate(_open_lines(path)):
        if i > PROBE_LAST_INDEX:
            break
        question = _parse(line, path, i + 1).get("question")
        if isinstance(question, str) and PROBE_QUESTION in question:
            indices.append(i)
    return indices


@dataclass(frozen=True)
class Context:
    """One probe item as shipped (with the placeholder), and its correct answer read before substitution."""

    index: int  # 0-based line number in the file
    record: dict  # the six fields, unsubstituted

    @property
    def answer(self) -> str:
        return self.record["answer" + self.record["correct"].strip()]

    @property
    def correct(self) -> str:
        return self.record["correct"].strip()

    @property
    def text(self) -> str:
        return self.record["context"]


def _check(record: dict, index: int, path: Path) -> Context:
    where = f"{path}:{index + 1}"
    for f in FIELDS:
        if not isinstance(record.get(f), str):
            raise CorpusError(f"{where}: field {f!r} is missing or not a string; every line needs {', '.join(FIELDS)}.")
    if record["correct"].strip() not in LETTERS:
        raise CorpusError(f"{where}: 'correct' is {record['correct']!r}; it must be A, B or C.")
    if PLACEHOLDER not in record["context"]:
        raise CorpusError(f"{where}: the context does not contain the placeholder name {PLACEHOLDER!r}, so no "
                          f"name can be substituted; write the person as {PLACEHOLDER!r} or drop the line.")
    return Context(index, {f: record[f] for f in FIELDS})


def probe_contexts(path: str | Path | None = None, indices: list[int] | None = None) -> list[Context]:
    """The probe contexts (default: the 50 of the selection rule; or the given line indices, in that order)."""
    path = default_path() if path is None else Path(path)
    records = read_records(path)
    chosen = probe_context_indices(path) if indices is None else list(indices)
    bad = [i for i in chosen if not (isinstance(i, int) and 0 <= i < len(records))]
    if bad:
        raise CorpusError(f"{path}: context indices {bad} are not line numbers of the file (0–{len(records) - 1}).")
    if len(set(chosen)) != len(chosen):
        raise CorpusError(f"context indices repeat: {chosen}; list each context once.")
    return [_check(records[i], i, path) for i in chosen]


def substitute(context: Context, name: str) -> dict:
    """The item with ``str.replace("Bethany", name)`` applied to every field."""
    if not name or any(c.isspace() for c in name):
        raise CorpusError(f"{name!r} is not a single first name.")
    return {f: v.replace(PLACEHOLDER, name) for f, v in context.record.items()}
