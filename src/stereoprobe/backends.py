"""Backends: where a prompted probe's questions are answered, local weights or a server, behind one seam.

A probe that reads a causal or chat LM through prompt templates asks three things, one per rung of the ladder
(:data:`RUNGS`; lm-evaluation-harness's ``loglikelihood`` and ``generate_until`` split the same way):

* :meth:`Backend.loglikelihood` — the **exact** rung: log P of continuations after prompts, through the model's chat
  template where it has one and chat is not switched off;
* :meth:`Backend.label_probabilities` — the **next-token** rung: the labels' probabilities as the first token of the
  reply to chat messages, the mass they take, and whether a label's value is only a bound;
* :meth:`Backend.generate` — the **generated** rung: replies to chat messages, (content, reasoning) per sample.

A backend says which rungs it gives (:meth:`Backend.why_not`) and picks a template's rung in one place
(:meth:`Backend.choose`). Two implementations:

* :class:`Local` — a causal or chat LM whose weights load here: the exact rung is the store-backed scorer of each
  probe (sharded, resumable, Ray-capable: :attr:`Backend.stores_exact`); the next-token rung reads the first
  generated position's whole distribution (every vocabulary token that is the label up to surrounding space, so no
  bound) through the causal scorer's prefix tree (:meth:`stereoprobe.causal.CausalScorer.next_token_logprobs`);
  generation is batched with left padding, a finished reply leaving its batch (:func:`stereoprobe.causal.generate`),
  greedy by default. Both
  keep every answer the moment its batch ends (``<store>/generated/<model>.sqlite``), as a server's are kept.
* :class:`stereoprobe.served.ServedBackend` — an OpenAI-compatible endpoint: the probed ladder, the journal, the
  budget of requests; registered by :mod:`stereoprobe.served` for its kind of model.

:func:`backend_for` gives a model's backend by its kind; the module that defines a backend registers it
(:func:`register_backend`, :mod:`stereoprobe.plugins`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable, Protocol, Sequence

import numpy as np

from .errors import StereoprobeError
from .choices import CAUSAL

__all__ = ["Backend", "Local", "backend_for", "register_backend"]

from .prompting import RUNGS


class Backend(Protocol):
    """What a prompted reader asks of a model (module doc)."""

    name: str
    #: Whether the exact rung is the probe's own store-backed scorer (local weights) rather than :meth:`loglikelihood`.
    stores_exact: bool

    def why_not(self, rung: str) -> str | None:
        """Why the backend does not give ``rung`` (None: it does)."""

    def choose(self, fits: Sequence[str], forced: str | None) -> str:
        """The rung a template that ``fits`` these rungs is read on: ``forced`` (refused where not given), else the
        best given."""

    def loglikelihood(self, build: Callable, chat: bool | None, desc: str):
        """(requests, log P of each continuation, whether they read the chat template); ``build(tokenizer, chat)``
        makes the (prompt, continuation) requests."""

    def label_probabilities(self, messages: Sequence[list[dict]], labels: Sequence[str], *,
                            thinking: bool | None = None, desc: str = ""):
        """(P [n, labels], the mass on the labels [n], whether a label's value is a bound [n])."""

    def generate(self, messages: Sequence[list[dict]], *, samples: int = 1, temperature: float | None = None,
                 thinking: bool | None = None, think_budget: int | None = None,
                 desc: str = "") -> list[list[tuple[str, str]]]:
        """Per message list, (content, reasoning) of each of ``samples`` replies: greedy for one sample, else at
        ``temperature`` (None: 1.0); what a probe asks (:meth:`stereoprobe.prompting.Prompting.generation`)."""

    def counts(self) -> dict:
        """What the backend has been asked so far in this run (``requests``, ``from_store``, …)."""

    def record(self, key, desc: str, facts: dict, before: dict) -> None:
        """Keep what the report row ``key`` read — ``facts`` (rung, passes, label mass, …) and what it cost since
        ``before`` (a :meth:`counts`) — in the run's provenance (a served model's rows: the report's served table,
        :func:`stereoprobe.served.record`); a backend with nothing to report keeps nothing."""


def choose(backend, fits: Sequence[str], forced: str | None, error: type = StereoprobeError) -> str:
    """The rung a template is read on, for every backend: ``forced`` (refused, as ``error``, when the backend lacks
    it), else the best rung the backend gives among those the template ``fits``."""
    given = [r for r in RUNGS if backend.why_not(r) is None]
    if forced is not None:
        if forced not in RUNGS:
            raise error(f"rung={forced!r} is not a rung; choose one of {', '.join(RUNGS)}.")
        why = backend.why_not(forced)
        if why is not None:
            raise error(f"{backend.name!r} does not give the {forced} rung: {why}; pass another rung "
                        f"({', '.join(given) or 'none available'}) or leave rung out.")
        return forced
    for rung in RUNGS:
        if rung in fits and rung in given:
            return rung
    raise error(f"{backend.name!r} gives no rung these templates can be read on ({', '.join(fits)}); it gives "
                f"{', '.join(given)}.")


# -- local weights -------------------------------------------------------------------------------------------------
#: Tokens a reply may take after its reasoning (a thinking budget adds the budget to it): the served ladder's.
def _answer_tokens() -> int:
    from .served.ladder import ANSWER_TOKENS

    return ANSWER_TOKENS


_LABEL_IDS: dict = {}


def label_ids(tokenizer, labels: Sequence[str]) -> list[list[int]]:
    """Per label, the vocabulary ids whose decoded text is the label up to surrounding space (``"A"``, ``" A"``): the
    tokens whose probabilities the next-token rung sums, as a server's ``top_logprobs`` are read
    (:func:`stereoprobe.served.ladder.label_probabilities`), over the whole vocabulary."""
    key = (getattr(tokenizer, "name_or_path", ""), len(tokenizer), tuple(labels))
    if key not in _LABEL_IDS:
        wanted = {label: [] for label in labels}
        for i in range(len(tokenizer)):
            text = tokenizer.decode([i]).strip()
            if text in wanted:
                wanted[text].append(i)
        missing = [label for label, ids in wanted.items() if not ids]
        if missing:
            raise StereoprobeError(f"No token of the tokenizer of {tokenizer.name_or_path!r} is the label(s) "
                                   f"{', '.join(map(repr, missing))}; the next-token rung reads a label as one token: "
                                   "use labels its vocabulary has as tokens (A, B, C), or read the generated rung.")
        _LABEL_IDS[key] = [wanted[label] for label in labels]
    return _LABEL_IDS[key]


class Local:
    """A causal or chat LM whose weights load here (module doc); ``options`` the run's
    :class:`~stereoprobe.options.RunOptions` (device, precision, batch, store)."""

    stores_exact = True

    def __init__(self, ref, options):
        from .options import as_options

        self.ref, self.options = ref, as_options(options)
        self.name = getattr(ref, "name", str(ref))
        self.asked = self.from_store = 0
        self._tok = None

    @property
    def tokenizer(self):
        if self._tok is None:
            from .models import load_tokenizer

            self._tok = load_tokenizer(self.ref, smoke=self.options.smoke)
            if self._tok is None:
                raise StereoprobeError(f"The tokenizer of {self.name!r} does not load from its files; save the "
                                       "tokenizer of the model it was fine-tuned from into its folder.")
        return self._tok

    def why_not(self, rung: str) -> str | None:
        """None for every rung: the chat rungs need a chat template, which is checked when they are read (a
        model without one is refused there in one line), so choosing a rung loads nothing."""
        return None

    def choose(self, fits: Sequence[str], forced: str | None) -> str:
        return choose(self, fits, forced)

    def _scorer(self):
        from .causal import scorer_for

        run = self.options
        return scorer_for(self.ref, device=run.device, smoke=run.smoke, precision=run.dtype(),
                          batch_tokens=run.batch_tokens)

    def loglikelihood(self, build: Callable, chat: bool | None, desc: str = ""):
        """Scored here, not stored (a probe's exact rows go through its store-backed scorer instead)."""
        from .causal import resolve_chat

        use = resolve_chat(self.tokenizer, chat, self.name)
        reqs = build(self.tokenizer if use else None, use)
        return reqs, np.asarray(self._scorer().logprobs(reqs).logprob, dtype=np.float64), use

    def _render(self, messages, thinking: bool | None) -> list[str]:
        from .causal import has_chat_template, has_thinking_switch

        tok = self.tokenizer
        if not has_chat_template(tok):
            raise StereoprobeError(f"{self.name!r} has no chat template, so it cannot be asked a chat question (the "
                                   "next-token and generated rungs); read it on the exact rung (leave rung and "
                                   "thinking out).")
        if thinking is not None and not has_thinking_switch(tok):
            raise StereoprobeError(f"The chat template of {self.name!r} has no enable_thinking switch, so thinking="
                                   f"{thinking} cannot be asked of it; leave thinking out for this model.")
        extra = {} if thinking is None else {"enable_thinking": bool(thinking)}
        return [tok.apply_chat_template(list(m), add_generation_prompt=True, tokenize=False, **extra)
                for m in messages]

    def _journal(self):
        from .models import model_fingerprint
        from .served.journal import Journal

        fp = model_fingerprint(self.ref, smoke=self.options.smoke)
        root = self.options.score_store().root
        return fp, Journal(root / "generated" / f"{hashlib.sha256(fp.encode()).hexdigest()[:24]}.sqlite")

    def _answered(self, prompts: list[str], settings: dict, what: str, compute: Callable, desc: str) -> list[dict]:
        """Each prompt's answer under ``settings``: from the journal where kept, else ``compute(prompts)`` (a list of
        answers) in steps of 64, each step kept the moment it ends (a killed run loses at most one step)."""
        from .batching import progress

        fp, journal = self._journal()
        try:
            keys = [hashlib.sha256(json.dumps([p, settings], sort_keys=True).encode()).hexdigest() for p in prompts]
            have = journal.get_many(keys)
            todo = [i for i, k in enumerate(keys) if k not in have]
            self.from_store += len(prompts) - len(todo)
            chunk = 64
            steps = progress(range(0, len(todo), chunk), total=-(-len(todo) // chunk),
                             disable=not (todo and self.options.show_progress),
                             desc=f"{desc} ({len(todo):,} {what}, {chunk} a step)")
            for lo in steps:
                part = todo[lo:lo + chunk]
                for i, answer in zip(part, compute([prompts[i] for i in part])):
                    answer = {**answer, "model": fp}
                    journal.put(keys[i], f"local-{what}", {"prompt": prompts[i], **settings}, answer)
                    have[keys[i]] = answer
                self.asked += len(part)
            return [have[k] for k in keys]
        finally:
            journal.close()

    def _settings(self, **extra) -> dict:
        return {**extra, "dtype": self.options.dtype(), "device": str(self.options.device)}

    def label_probabilities(self, messages, labels, *, thinking: bool | None = None, desc: str = ""):
        if thinking:
            raise StereoprobeError("The next-token rung reads the first token of the answer, which with thinking on "
                                   "is the reasoning's; ask thinking of the generated rung (rung generated).")
        ids = label_ids(self.tokenizer, labels)

        flat = [i for group in ids for i in group]
        cuts = np.cumsum([len(group) for group in ids])[:-1]

        def compute(prompts):
            logp = self._scorer().next_token_logprobs(prompts, flat)
            return [{"probs": [float(np.exp(part).sum()) for part in np.split(row, cuts)]} for row in logp]

        answers = self._answered(self._render(messages, thinking), self._settings(next_token=list(labels)),
                                 "next-token readings", compute, desc or self.name)
        probs = np.array([a["probs"] for a in answers], dtype=np.float64).reshape(len(answers), len(labels))
        return probs, probs.sum(axis=1), np.zeros(len(answers), dtype=bool)

    def generate(self, messages, *, samples: int = 1, temperature: float | None = None, thinking: bool | None = None,
                 think_budget: int | None = None, desc: str = "") -> list[list[tuple[str, str]]]:
        """Replies generated here: greedy (one sample), or ``samples`` at ``temperature`` (default 1.0); the
        reasoning stays in the text (the parse finds a think block)."""
        from .causal import generate

        temperature = (0.0 if samples == 1 else 1.0) if temperature is None else float(temperature)
        max_new = _answer_tokens() + (int(think_budget) if think_budget else 0)
        settings = self._settings(max_new_tokens=max_new)
        if samples > 1 or temperature > 0:  # greedy keeps the keys of 0.9's generated reading
            settings.update(samples=samples, temperature=temperature)

        def compute(prompts):
            scorer = self._scorer()
            texts = generate(scorer.model, scorer.tokenizer, prompts, max_new_tokens=max_new, samples=samples,
                             temperature=temperature, batch_tokens=scorer.batch_tokens)
            return [{"text": t} if isinstance(t, str) else {"texts": list(t)} for t in texts]

        answers = self._answered(self._render(messages, thinking), settings, "replies", compute, desc or self.name)
        return [[(t, "") for t in a["texts"]] if "texts" in a else [(a["text"], "")] for a in answers]

    def counts(self) -> dict:
        return {"requests": self.asked, "from_store": self.from_store}

    def record(self, key, desc: str, facts: dict, before: dict) -> None:
        """Nothing: a local model's rows cost no requests (its generated answers are kept in the store's journal)."""


# -- which backend reads a model -----------------------------------------------------------------------------------
_BACKENDS: dict[str, Callable] = {}


def register_backend(kind: str, factory: Callable) -> None:
    """Read models of ``kind`` (a :class:`~stereoprobe.modelref.ModelKind`'s name) through ``factory(ref, options)``,
    a :class:`Backend`; the module that defines a backend registers it (:mod:`stereoprobe.plugins`)."""
    _BACKENDS[kind] = factory


def unregister_backend(kind: str) -> None:
    """Remove a registered backend (tests)."""
    _BACKENDS.pop(kind, None)


def has_backend(kind: str) -> bool:
    """Whether models of ``kind`` have a backend (and so are read through prompts)."""
    from .plugins import load

    load()
    return kind in _BACKENDS


def backend_for(ref, options) -> Backend:
    """The backend that answers ``ref`` (a :class:`~stereoprobe.modelref.ModelRef`) in the run of ``options``."""
    kind = getattr(ref, "kind", CAUSAL)  # a bare name (the store-level functions' models): a local causal LM
    if not has_backend(kind):
        raise StereoprobeError(f"{getattr(ref, 'name', ref)!r} is a {kind} model, which is not read through prompts; "
                               f"prompted models are {', '.join(sorted(_BACKENDS))} (register_backend adds a kind).")
    return _BACKENDS[kind](ref, options)


register_backend(CAUSAL, Local)  # a causal or chat LM whose weights load here
