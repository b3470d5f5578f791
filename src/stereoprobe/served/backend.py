"""Models behind an OpenAI-compatible endpoint as a kind of model (:data:`KIND`, names ``openai-api/<service>/<model>``)
and its backend (:class:`ServedBackend`, a :class:`stereoprobe.backends.Backend`): the three calls of the rungs
answered through the run's session (:func:`stereoprobe.served.session`), its probed ladder, journal and budget of
requests. Both register themselves when this module is imported, which stereoprobe's entry point
``stereoprobe.plugins: served`` does before the first model name is resolved (:mod:`stereoprobe.plugins`)."""

from __future__ import annotations

from typing import Callable, Sequence

from ..backends import choose, register_backend
from ..modelref import ModelKind, register_kind
from . import endpoint as _endpoint


class ServedBackend:
    """An OpenAI-compatible endpoint, through the run's :class:`stereoprobe.served.Session` (its probed ladder,
    journal and budget; held by the run's :class:`~stereoprobe.options.RunState`), opened at the first request
    (choosing a rung asks only the probe's verdict, kept in the same state)."""

    stores_exact = False

    def __init__(self, ref, options):
        self.ref, self.options = ref, options
        self.name = ref.name
        self._session = None

    @property
    def session(self):
        if self._session is None:
            from . import session

            self._session = session(self.ref, self.options)
        return self._session

    def why_not(self, rung: str) -> str | None:
        from . import capabilities

        return capabilities(self.ref, self.options).why_not(rung)

    def choose(self, fits: Sequence[str], forced: str | None) -> str:
        from .endpoint import EndpointError

        return choose(self, fits, forced, EndpointError)

    def loglikelihood(self, build: Callable, chat: bool | None, desc: str = ""):
        from .chat_exact import exact_reading

        return exact_reading(self.session, build, chat, desc)

    def label_probabilities(self, messages, labels, *, thinking: bool | None = None, desc: str = ""):
        from .ladder import label_probabilities

        s = self.session
        return label_probabilities(s.client, s.journal, messages, labels, s.caps.top_k, thinking=thinking,
                                   **s.ask(desc))

    def generate(self, messages, *, samples: int = 1, temperature: float | None = None, thinking: bool | None = None,
                 think_budget: int | None = None, desc: str = "") -> list[list[tuple[str, str]]]:
        from .ladder import generated_replies

        s = self.session
        return generated_replies(s.client, s.journal, messages, samples=samples, temperature=temperature,
                                 thinking=thinking, think_budget=think_budget, **s.ask(desc))

    def counts(self) -> dict:
        return self.session.counts()

    def record(self, key, desc: str, facts: dict, before: dict) -> None:
        from . import record

        record(self.options, key, self.session.finish(desc, facts, before))


def _fingerprint(ref) -> str:
    return _endpoint.parse(ref.name, warn=False).fingerprint


#: The kind of a model behind a server or an API, named ``openai-api/<service>/<model>``: read through prompts by
#: every probe (:class:`ServedBackend`), and asked for as a causal LM (``--variant causal``).
KIND = ModelKind("served", _endpoint.claims, location="served", fingerprint=_fingerprint, tokenizer=lambda ref: None,
                 describe="served", answers=("causal",))
register_kind(KIND)
register_backend(KIND.name, ServedBackend)
