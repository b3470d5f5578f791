"""A model resolved once: the one object that travels below a probe's API boundary.

A probe's ``report`` or ``score`` turns each model name it is given into a :class:`ModelRef` with
:func:`resolve_models` and passes only that down: to its readers (one per *kind* of model: an extractive-QA model,
a masked LM, an NLI classifier, a multiple-choice model, a causal LM, …), to the score store's key, to the workers
that load it. The name is looked up once (a ``zoo:``/``lab:`` name through its provider, a hub id in the local
cache), its kind decided once (the probe's own head or a causal LM, from its config, or as asked), and what a run
needs of its files is read once, when first asked for: the fingerprint that keys the store, the tokenizer and
whether it has a chat template. The tables name it by its ``label``, unique among the report's models
(:func:`stereoprobe.naming.model_labels`).

**Kinds beyond the files.** :func:`register_kind` adds a kind of model that is not a file at all (a model behind a
server, say): it claims the names it owns and gives their fingerprint; with a backend
(:func:`stereoprobe.backends.register_backend`) every probe's prompted reader reads it, or each probe adds a reader
for it (``stereoprobe.unqover.readers``, ``stereoprobe.nli.readers``, ``stereoprobe.sodapop.readers``); nothing
else changes. Such a kind registers itself where it is defined (:mod:`stereoprobe.plugins`: the core names none).

>>> ref = resolve_model("lab:qa-biased", native="qa")            # doctest: +SKIP
>>> ref.kind, ref.location, ref.label                             # doctest: +SKIP
('qa', 'lab', 'lab:qa-biased')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from .errors import ModelLoadError, StereoprobeError

__all__ = ["ModelRef", "ModelKind", "RowKey", "register_kind", "resolve_model", "resolve_models"]



@dataclass(frozen=True, repr=False)
class ModelRef:
    """A model as the user named it and what it resolved to (module doc).

    * ``name`` — as given (a hub id, a folder, a ``.gguf`` file, ``zoo:``/``lab:``/``asset:`` name, or a name a
      registered kind claims);
    * ``kind`` — how the probe reads it: its own head (``qa``, ``lm``, ``lm-bert``, ``nli``, ``mcq``), ``causal``,
      or a registered kind;
    * ``location`` — where it lives: ``hub``, ``folder``, ``gguf``, ``zoo``, ``lab``, ``asset``, or a registered
      kind's own;
    * ``path`` — the resolved folder, file or hub id (what loading reads);
    * ``label`` — its name in the report's tables;
    * ``smoke`` — a ``zoo:``/``lab:`` name resolved to its smoke build.

    ``fingerprint``, ``tokenizer()`` and ``has_chat_template`` are read from its files on first use and kept.
    """

    name: str
    kind: str
    location: str
    path: str
    label: str = ""
    smoke: bool = False
    _facts: dict = field(default_factory=dict, repr=False, compare=False, hash=False)

    def __post_init__(self):
        if not self.label:
            object.__setattr__(self, "label", self.name)

    def __repr__(self) -> str:  # messages name a model as the user did: f"{model!r}" reads the same for a ref
        return repr(self.name)

    def __str__(self) -> str:
        return self.name

    def describe(self) -> str:
        """Everything it resolved to, for a reader (``ModelRef(name=…, kind=…, location=…, path=…, label=…)``)."""
        return (f"ModelRef(name={self.name!r}, kind={self.kind!r}, location={self.location!r}, path={self.path!r}, "
                f"label={self.label!r})")

    def __getstate__(self) -> dict:  # the facts read from the files stay behind (a worker reads its own)
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "_facts"}

    def __setstate__(self, state: dict) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_facts", {})

    def with_label(self, label: str) -> "ModelRef":
        """The same model named ``label`` in the tables (what it read from its files is kept)."""
        return dataclasses.replace(self, label=label, _facts=self._facts)

    def _fact(self, name: str):
        """A fact read once: from the registered kind (its ``fingerprint``/``tokenizer``) or from the files."""
        if name not in self._facts:
            own = getattr(_KINDS.get(self.kind), name, None)
            if own is not None:
                self._facts[name] = own(self)
            else:
                from . import models

                reader = models.model_fingerprint if name == "fingerprint" else models.load_tokenizer
                self._facts[name] = reader(self.path)
        return self._facts[name]

    @property
    def fingerprint(self) -> str:
        """The hash of its files that keys the score store (fetched first when they are not local; no weights
        load): :func:`stereoprobe.models.model_fingerprint`, or a registered kind's own."""
        return self._fact("fingerprint")

    def tokenizer(self):
        """Its tokenizer, loaded once from its files (None when it has no local files or none that load: loading
        the model then says what is wrong). Callers must not change it."""
        return self._fact("tokenizer")

    @property
    def has_chat_template(self) -> bool:
        """Whether its tokenizer carries a chat template."""
        return bool(getattr(self.tokenizer(), "chat_template", None))

    def chat(self, asked: bool | None) -> bool:
        """Whether prompts go through its chat template: ``asked`` (True needs one), or whether it has one."""
        from .causal import resolve_chat

        tok = self.tokenizer()
        if tok is None:
            return bool(asked)
        return resolve_chat(tok, asked, self.name)


class Readers(dict):
    """A probe's readers by kind of model (``kind → reader``): :meth:`register` adds one, :meth:`of` finds a ref's,
    refusing a kind the probe has none for in one sentence naming ``probe`` and its ``register`` function."""

    def __init__(self, probe: str, register: str, readers: dict, prompted=None):
        super().__init__(readers)
        self.probe, self.register_name, self.prompted_reader = probe, register, prompted

    def register(self, kind: str, reader) -> None:
        """Read models of ``kind`` (a :class:`ModelKind`'s name) with ``reader``."""
        self[kind] = reader

    def of(self, ref: "ModelRef"):
        """The reader of ``ref``'s kind; a kind with no reader of its own but a backend
        (:func:`stereoprobe.backends.register_backend`: causal LMs, served models, …) is read by the probe's prompted
        reader."""
        try:
            return self[ref.kind]
        except KeyError:
            from .backends import has_backend

            if self.prompted_reader is not None and has_backend(ref.kind):
                return self.prompted_reader
            raise StereoprobeError(f"{self.probe} has no reader for {ref.name!r}, a model of kind {ref.kind!r}; "
                                   f"register one ({self.register_name}).") from None

    def prompted(self, ref: "ModelRef") -> bool:
        """Whether ``ref`` is read through the report's prompt templates (its reader says ``prompted``: a causal or
        served model)."""
        return bool(getattr(self.of(ref), "prompted", False))


class RowKey(NamedTuple):
    """One row of a report: a model, and for a model read through prompts its scorer and template (UnQover's
    ``answer``/``choice``, Bias-NLI's ``nli``, SODAPOP's ``acc``/``acc_norm``), and for a served model the rung of
    the ladder that produced it (:mod:`stereoprobe.served.ladder`), and ``thinking`` (``on``/``off``) where the row
    was asked with a reasoning model's thinking switched (:class:`stereoprobe.unqover.readers.Passes`). The tables show :attr:`label`; code that needs
    the parts reads the fields, never the label.

    >>> RowKey("lab:causal-biased", "answer", "qa").label, RowKey("zoo:minilm-qa").label
    ('lab:causal-biased · answer:qa', 'zoo:minilm-qa')
    >>> RowKey("openai-api/vllm/llama", "choice", "letters", "next-token").label
    'openai-api/vllm/llama · choice:letters [next-token]'
    >>> RowKey("openai-api/vllm/qwen3", "answer", "qa", "generated", "on").label
    'openai-api/vllm/qwen3 · answer:qa [generated, thinking on]'
    """

    model: str
    scorer: str = ""
    template: str = ""
    rung: str = ""
    thinking: str = ""

    @property
    def label(self) -> str:
        if not self.scorer:
            return self.model
        label = f"{self.model} · {self.scorer}:{self.template}" if self.template else f"{self.model} · {self.scorer}"
        tags = [t for t in (self.rung, f"thinking {self.thinking}" if self.thinking else "") if t]
        return f"{label} [{', '.join(tags)}]" if tags else label


@dataclass(frozen=True)
class ModelKind:
    """A kind of model the core resolves beside files and hub ids (module doc): ``claims(name)`` says whether a
    name is one of its models; ``location`` is what :attr:`ModelRef.location` says of them; ``fingerprint(ref)`` and
    ``tokenizer(ref)`` replace reading files (None: read them as for any model); ``describe`` names the kind in
    messages; ``answers``, the kinds a probe may ask for (``--variant``) that its models also are (a served model
    is a causal LM read through prompts: ``("causal",)``)."""

    name: str
    claims: Callable[[str], bool]
    location: str = ""
    fingerprint: Callable[[ModelRef], str] | None = None
    tokenizer: Callable[[ModelRef], Any] | None = None
    describe: str = ""
    answers: tuple[str, ...] = ()


_KINDS: dict[str, ModelKind] = {}


def register_kind(kind: ModelKind) -> None:
    """Add (or replace) a kind of model; probes read its models through the readers registered for ``kind.name``."""
    if not isinstance(kind, ModelKind):
        raise StereoprobeError(f"register_kind takes a ModelKind, not {type(kind).__name__}.")
    _KINDS[kind.name] = kind


def unregister_kind(name: str) -> None:
    """Remove a registered kind (tests)."""
    _KINDS.pop(name, None)


def kinds() -> dict[str, ModelKind]:
    """The registered kinds by name."""
    return dict(_KINDS)


def _location(name: str, path: str) -> str:
    from .gguf_files import gguf_location

    prefix, colon, _ = name.partition(":")
    if colon and prefix in ("zoo", "lab", "asset"):
        return prefix
    try:
        if gguf_location(path, must_exist=False) is not None:
            return "gguf"
    except ModelLoadError:  # several GGUF files: loading says which to pass
        return "gguf"
    return "folder" if Path(path).expanduser().exists() else "hub"


def resolve_model(name: str, *, native: str, asked: str | None = None, option: str = "--variant",
                  smoke: bool = False, allowed: Sequence[str] | None = None) -> ModelRef:
    """``name`` resolved for a probe whose own head is ``native`` (``qa``, ``lm``, ``nli``, ``mcq``): a name a
    registered kind claims is of that kind; any other is looked up once (:func:`stereoprobe.models.resolve`) and is
    ``causal`` or ``native`` from its config (``asked`` None), or as asked, a model of the other kind refused in one
    sentence naming ``option`` (:func:`stereoprobe.models.choose_kind`). ``allowed``: the kinds the probe has
    readers for (a registered kind without one, or without a backend, is refused)."""
    from .models import choose_kind, resolve

    if not isinstance(name, str) or not name:
        raise StereoprobeError(f"A model is named by a non-empty string, not {name!r}; pass a hub id, a folder, a "
                               ".gguf file or a zoo:/lab: name.")
    from .plugins import load

    load()  # the kinds beyond files register themselves (stereoprobe.plugins)
    for kind in _KINDS.values():
        if kind.claims(name):
            if asked is not None and asked != kind.name and asked not in kind.answers:
                raise ModelLoadError(f"{name!r} is a {kind.describe or kind.name} model, not what {option} {asked} "
                                     f"asks for; leave {option} out.")
            if allowed is not None and kind.name not in allowed and not _has_backend(kind.name):
                raise ModelLoadError(f"{name!r} is a {kind.describe or kind.name} model, which this probe cannot "
                                     "read; pass a model of another kind.")
            return ModelRef(name, kind.name, kind.location or kind.name, name, smoke=smoke)
    path = resolve(name, smoke=smoke)
    kind = choose_kind(path, asked, native, option=option, smoke=smoke, shown=name)
    return ModelRef(name, kind, _location(name, path), path, smoke=smoke)


def _has_backend(kind: str) -> bool:
    """Whether a kind is read through prompts by a backend (any probe's prompted reader reads it)."""
    from .backends import has_backend

    return has_backend(kind)


def resolve_models(names: Sequence[str] | str, *, native: str, asked: str | None = None,
                   option: str = "--variant", smoke: bool = False, what: str = "model",
                   allowed: Sequence[str] | None = None) -> list[ModelRef]:
    """:func:`resolve_model` of each name, labelled for the report's tables (:func:`stereoprobe.naming.model_labels`:
    unique and short; a model given twice is refused before any work)."""
    from .naming import model_labels

    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise StereoprobeError(f"{what}s is empty; pass one or more model names (hub ids, folders, zoo: or lab: "
                               "names).")
    labels = model_labels(names, option=what)
    return [resolve_model(n, native=native, asked=asked, option=option, smoke=smoke, allowed=allowed)
            .with_label(label) for n, label in zip(names, labels)]


def name_of(model: "str | ModelRef") -> str:
    """The name the user gave (a ref's ``name``, a string as it is)."""
    return model.name if isinstance(model, ModelRef) else model


def progress_label(model: "str | ModelRef") -> str:
    """How a progress bar names a model: a folder by its last part, anything else as given."""
    name = name_of(model)
    return Path(name).name if Path(name).is_dir() else name


def as_ref(model: "str | ModelRef", *, native: str, asked: str | None = None, smoke: bool = False) -> ModelRef:
    """``model`` as a :class:`ModelRef`: a ref as it is, a name resolved (:func:`resolve_model`): the store-level
    scorers take either."""
    if isinstance(model, ModelRef):
        return model
    return resolve_model(model, native=native, asked=asked, smoke=smoke)
