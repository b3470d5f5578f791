"""Prompt templates: how a probe item becomes the text a causal or chat LM reads before the answer it scores.

None of the three papers prompted a causal LM; the templates are this project's choice, made deliberately and
shipped as data (``stereoprobe/data/prompts.yaml``, each with its ``source``, and the templates that let a model
abstain, ``prompts_unknown.yaml``), so that a reader sees them, a user
can pass their own file, and a report gives each template's numbers side by side (a template moves an LLM's
answers as much as a bias does: the book's appendix *Where the code and the paper differ*).

A :class:`PromptTemplate` has a ``task`` (``unqover-answer``, ``unqover-choice``, ``mcq``, ``nli``), a ``user``
body with the task's placeholders and an ``answer`` cue. :meth:`PromptTemplate.prompt` makes the text before the
scored continuation:

* **chat** (an instruct model; default where the tokenizer has a chat template): the body is the user's turn of the
  model's own chat template, ``answer`` starts the assistant's turn (:func:`stereoprobe.causal.chat_prompt`);
* **plain** (a base model): ``body + "\\n" + answer``.

:meth:`PromptTemplate.continuation` is what is scored after it: the word with one space in front where the prompt
ends in a non-space character (``"Answer:"`` + ``" Mary"``), else the word alone (a chat turn that ends in a
newline reads ``"Mary"``; :func:`~stereoprobe.causal.split_whitespace` then scores that newline with it).

>>> t = template("qa", "unqover-answer")
>>> t.prompt(None, chat=False, paragraph="Ruth sent a letter to Ralph.", question="Who was a scientist?")
'Ruth sent a letter to Ralph.\\nWho was a scientist?\\nAnswer:'
>>> c = template("letters", "unqover-choice")
>>> print(c.prompt(None, chat=False, paragraph="P.", question="Who?", options=["Ruth", "Ralph"]))
P.
Question: Who?
A. Ruth
B. Ralph
Answer:
>>> c.scored(["Ruth", "Ralph"]), c.continuation("Answer:", "A")
(['A', 'B'], ' A')
>>> [t.name for t in templates("unqover-answer")]
['qa', 'context-question', 'one-word']
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .errors import StereoprobeError
from .paths import data_dir

#: Each task's placeholders (all required) and what it scores.
TASKS: dict[str, tuple[str, ...]] = {
    "unqover-answer": ("paragraph", "question"),
    "unqover-choice": ("paragraph", "question", "options"),
    "mcq": ("context", "question"),
    "nli": ("premise", "hypothesis"),
}
#: The option fields of a choice template's ``option`` line.
OPTION_FIELDS = ("label", "option")
#: What a choice template scores: the option's label ("A") or its text (the subject).
CHOICE_SCORES = ("label", "option")
#: NLI label words, in the order of :data:`stereoprobe.nli.scoring.PROB_COLUMNS`.
NLI_LABELS = ("entailment", "neutral", "contradiction")
_FIELDS = ("name", "task", "user", "answer", "option", "separator", "labels", "score", "words", "system", "unknown",
           "source")


def _placeholders(text: str, where: str) -> set[str]:
    try:
        return {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as err:
        raise StereoprobeError(f"{where} is not a valid template text ({err}); write placeholders as {{name}} and "
                               "a literal brace as {{ or }}.") from None


@dataclass(frozen=True)
class PromptTemplate:
    """One prompt template (module doc). ``option``/``separator``/``labels``/``score``: a choice template's options;
    ``words``: an NLI template's label words (entailment, neutral, contradiction); ``system``: a system turn for chat
    models (None: the chat template's default); ``unknown``: a choice template's third option, an abstention
    ("Cannot be determined"), listed after the two subjects with the third label; ``source``: where it comes from
    (a file path for a user's own)."""

    name: str
    task: str
    user: str
    answer: str = ""
    option: str = "{label}. {option}"
    separator: str = "\n"
    labels: tuple[str, ...] = ("A", "B")
    score: str = "label"
    words: tuple[str, ...] = ()
    system: str | None = None
    unknown: str | None = None
    source: str = field(default="", compare=False)

    def __post_init__(self):
        where = f"Prompt template {self.name!r}" + (f" ({self.source})" if self.source else "")
        if self.task not in TASKS:
            raise StereoprobeError(f"{where} has task {self.task!r}; choose one of {', '.join(TASKS)}.")
        for key in ("name", "user", "answer", "option", "separator"):
            if not isinstance(getattr(self, key), str):
                raise StereoprobeError(f"{where}: {key} must be text, not {getattr(self, key)!r}; quote it in the file.")
        needed, got = set(TASKS[self.task]), _placeholders(self.user, f"{where}'s user text")
        if needed - got:
            raise StereoprobeError(f"{where} lacks the placeholder {{{sorted(needed - got)[0]}}} that the task "
                                   f"{self.task} needs; its user text must hold {', '.join('{%s}' % f for f in TASKS[self.task])}.")
        if got - needed:
            raise StereoprobeError(f"{where} has the placeholder {{{sorted(got - needed)[0]}}}, which the task "
                                   f"{self.task} does not fill; use {', '.join('{%s}' % f for f in TASKS[self.task])} "
                                   "(write a literal brace as {{ or }}).")
        if _placeholders(self.answer, f"{where}'s answer"):
            raise StereoprobeError(f"{where}'s answer {self.answer!r} has a placeholder; the answer cue is fixed text.")
        if self.task == "unqover-choice":
            extra = _placeholders(self.option, f"{where}'s option") - set(OPTION_FIELDS)
            if extra or "option" not in _placeholders(self.option, where):
                raise StereoprobeError(f"{where}'s option line {self.option!r} must hold {{option}} and may hold "
                                       "{label}, nothing else.")
            if self.score not in CHOICE_SCORES:
                raise StereoprobeError(f"{where} scores {self.score!r}; choose label or option.")
            n = self.n_options
            if len(self.labels) != n or len(set(self.labels)) != n or not all(isinstance(x, str) and x.strip()
                                                                             for x in self.labels):
                example = '["A", "B", "C"]' if self.unknown is not None else '["A", "B"]'
                raise StereoprobeError(f"{where} has labels {list(self.labels)!r}; give {n} different labels"
                                       f"{' (the two subjects and the unknown option)' if n == 3 else ''}, e.g. "
                                       f"{example}.")
        if self.unknown is not None:
            if self.task != "unqover-choice":
                raise StereoprobeError(f"{where} has an unknown option, which only an unqover-choice template lists; "
                                       "remove it or make the template a choice template.")
            if not isinstance(self.unknown, str) or not self.unknown.strip() or self.unknown != self.unknown.strip():
                raise StereoprobeError(f"{where}'s unknown option {self.unknown!r} must be text without leading or "
                                       "trailing spaces, e.g. \"Cannot be determined\".")
        if self.task == "nli":
            if len(self.words) != 3 or len(set(self.words)) != 3 or not all(isinstance(w, str) and w.strip()
                                                                            for w in self.words):
                raise StereoprobeError(f"{where} has label words {list(self.words)!r}; give three different words "
                                       "(quoted), for entailment, neutral and contradiction, e.g. [\"Yes\", \"Maybe\", "
                                       "\"No\"].")
        elif self.words:
            raise StereoprobeError(f"{where} has label words, which only the nli task uses; remove them.")
        if self.system is not None and not isinstance(self.system, str):
            raise StereoprobeError(f"{where}'s system text must be text, not {self.system!r}.")

    # -- text -------------------------------------------------------------------------------------------------------
    def body(self, **fields) -> str:
        """The user text with the item's fields filled (a choice template's ``options`` is the list of options)."""
        if self.task == "unqover-choice":
            options = fields.get("options")
            if not isinstance(options, (list, tuple)) or len(options) != 2:
                raise StereoprobeError(f"Prompt template {self.name!r} lists the two subjects as options; got "
                                       f"{options!r}.")
            options = self.options(options)
            fields = dict(fields, options=self.separator.join(
                self.option.format(label=label, option=o) for label, o in zip(self.labels, options)))
        return self.user.format(**fields)

    def prompt(self, tokenizer, *, chat: bool, thinking: bool | None = None, **fields) -> str:
        """The text before the scored continuation: the chat template's user turn and ``answer`` as the start of the
        assistant's (``chat``; ``thinking``: the template's thinking switch, :func:`stereoprobe.causal.chat_prompt`),
        or ``body + "\\n" + answer``."""
        body = self.body(**fields)
        if chat:
            from .causal import chat_prompt

            return chat_prompt(tokenizer, body, self.answer, system=self.system, thinking=thinking)
        return f"{body}\n{self.answer}" if self.answer else body + "\n"

    @staticmethod
    def continuation(prompt: str, word: str) -> str:
        """``word`` as scored after ``prompt``: one space in front unless the prompt ends in whitespace."""
        return word if not prompt or prompt[-1].isspace() else " " + word

    @property
    def n_options(self) -> int:
        """The options a choice template lists: the two subjects, and the unknown option where it has one."""
        return 2 + (self.unknown is not None)

    def options(self, subjects: Sequence[str]) -> list[str]:
        """The options listed for two subjects: the subjects in the paragraph's order, then the unknown option."""
        return list(subjects) + ([self.unknown] if self.unknown is not None else [])

    def scored(self, options: Sequence[str]) -> list[str]:
        """What a choice template scores for each option (the two subjects' and, where it has one, the unknown
        option's): its label or its text."""
        options = self.options(options) if len(options) == 2 else list(options)
        return list(self.labels) if self.score == "label" else options

    # -- identity ---------------------------------------------------------------------------------------------------
    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("source")
        if d["unknown"] is None:  # a template without an unknown option keeps the digest it had before there was one
            d.pop("unknown")
        d["labels"], d["words"] = list(d["labels"]), list(d["words"])
        return d

    @property
    def digest(self) -> str:
        """12 hex digits of the template's text and settings (not its source): the score store keeps each
        template's scores apart, and an edited template is scored afresh."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:12]


def _from_mapping(entry, source: str) -> PromptTemplate:
    if not isinstance(entry, dict):
        raise StereoprobeError(f"{source}: a template is a mapping of {', '.join(_FIELDS[:4])}, …; got {entry!r}.")
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise StereoprobeError(f"{source}: template {entry.get('name', '?')!r} has the unknown key {unknown[0]!r}; "
                               f"keys are {', '.join(_FIELDS)}.")
    for key in ("name", "task", "user"):
        if key not in entry:
            raise StereoprobeError(f"{source}: a template lacks {key!r}; every template has name, task and user.")
    values = dict(entry)
    for key in ("labels", "words"):
        if key in values:
            if not isinstance(values[key], (list, tuple)):
                raise StereoprobeError(f"{source}: {key} of template {entry['name']!r} must be a list, not "
                                       f"{values[key]!r}.")
            values[key] = tuple(values[key])
    values.setdefault("source", source)
    return PromptTemplate(**values)


def read_templates(path: str | Path) -> list[PromptTemplate]:
    """The templates of a YAML (or JSON) file: a ``templates:`` list or one template as a mapping."""
    import yaml

    p = Path(path).expanduser()
    if not p.is_file():
        raise StereoprobeError(f"Prompt template file {str(path)!r} does not exist; pass a shipped template's name or "
                               "the path of a YAML file.")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise StereoprobeError(f"{p} is not a readable YAML file ({str(err).splitlines()[0]}{where}); fix its "
                               "syntax (quote a text that holds a colon).") from None
    entries = data.get("templates") if isinstance(data, dict) and "templates" in data else [data]
    if not isinstance(entries, list) or not entries:
        raise StereoprobeError(f"{p} holds no template; write a `templates:` list or one template mapping.")
    out = [_from_mapping(e, str(p)) for e in entries]
    seen = set()
    for t in out:
        if (t.task, t.name) in seen:
            raise StereoprobeError(f"{p} names two {t.task} templates {t.name!r}; give each its own name.")
        seen.add((t.task, t.name))
    return out


#: The shipped template files, in order: the forced-choice templates, then those with an unknown option.
SHIPPED_FILES = ("prompts.yaml", "prompts_unknown.yaml")


@lru_cache(maxsize=1)
def _shipped() -> tuple[PromptTemplate, ...]:
    return tuple(t for name in SHIPPED_FILES for t in read_templates(data_dir() / name))


def templates(task: str, *, forced: bool = False) -> list[PromptTemplate]:
    """The shipped templates of ``task``, in file order; ``forced``: only those that ask a forced choice (no unknown
    option)."""
    if task not in TASKS:
        raise StereoprobeError(f"Unknown prompt task {task!r}; choose one of {', '.join(TASKS)}.")
    return [t for t in _shipped() if t.task == task and not (forced and t.unknown is not None)]


def template(name_or_file: str | Path | PromptTemplate, task: str) -> PromptTemplate:
    """One template of ``task``: a shipped one by name, or the one of that task in a YAML file."""
    return select([name_or_file], task)[0]


def select(names: Sequence[str | Path | PromptTemplate] | str | None, task: str) -> list[PromptTemplate]:
    """The templates a run uses: every shipped one of ``task`` (None), or those named (shipped names, files — every
    template of ``task`` in a file —, or :class:`PromptTemplate` objects), without repeats."""
    shipped = {t.name: t for t in templates(task)}
    if names is None:
        return list(shipped.values())
    if isinstance(names, (str, Path, PromptTemplate)):
        names = [names]
    out: list[PromptTemplate] = []
    for n in names:
        if isinstance(n, PromptTemplate):
            found = [n]
        elif str(n) in shipped:
            found = [shipped[str(n)]]
        elif str(n).endswith((".yaml", ".yml", ".json")) or Path(str(n)).expanduser().is_file():
            found = [t for t in read_templates(n) if t.task == task]
            if not found:
                raise StereoprobeError(f"{n} has no template of task {task}; add one with `task: {task}`.")
        else:
            raise StereoprobeError(f"Unknown {task} template {str(n)!r}; shipped ones: {', '.join(shipped)}; or pass "
                                   "the path of a YAML template file.")
        for t in found:
            if t.task != task:
                raise StereoprobeError(f"Template {t.name!r} is for {t.task}, not {task}; pass a {task} template.")
            if any(t.name == o.name and t != o for o in out):
                raise StereoprobeError(f"Two different {task} templates are named {t.name!r}; rename one.")
            if t not in out:
                out.append(t)
    if not out:
        raise StereoprobeError(f"No {task} template given; pass a name ({', '.join(shipped)}) or a file.")
    return out


__all__ = ["PromptTemplate", "read_templates", "template", "templates"]
