"""Models behind a server or an API, as one more kind of model: ``openai-api/<service>/<model>``.

A served model is named as Inspect names one (:mod:`stereoprobe.served.endpoint`: the server's address and key come
from ``<SERVICE>_BASE_URL`` and ``<SERVICE>_API_KEY``) and works wherever a model name does: ``-m`` on the command
line, ``models=[...]`` in the Python API, a profile's model lists. Each probe reads it through its prompted reader
(``stereoprobe.unqover.prompted``, ``stereoprobe.nli.prompted``, ``stereoprobe.sodapop.prompted``), asking its
backend (:class:`stereoprobe.served.backend.ServedBackend`, registered with its kind of model by that module) on
a ladder of scorers (:mod:`stereoprobe.served.ladder`): exact prompt log-probabilities where the server gives them
and a first-use probe confirms them, the labels' probabilities as the first generated token, or answers generated
and parsed (:mod:`stereoprobe.served.parse`); each report row says which. Requests go many at a time, retried as a
busy server needs, every answer stored as it arrives (:mod:`stereoprobe.served.client`,
:mod:`stereoprobe.served.journal`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from . import endpoint as _endpoint  # its parse(): the package's own name `parse` is the module parse.py
from .endpoint import PREFIX, Endpoint, EndpointError

from .ladder import RUNGS, Capabilities
from .parse import Parsed, parse_answer

__all__ = ["PREFIX", "RUNGS", "Endpoint", "EndpointError", "Capabilities", "Provenance", "capabilities",
           "parse_answer", "Parsed", "provenances", "served_table"]


@dataclass
class Session:
    """One served model in one run (held by the run's :class:`~stereoprobe.options.RunState`): its endpoint, a client
    with the run's settings, its journal in the run's score store, what its first-use probe found, the checks of its
    chat template, and the run's budget of requests, shared by every row it reads."""

    endpoint: Endpoint
    client: object
    journal: object
    caps: object
    max_requests: int | None
    progress: bool
    options: object = None  # the run's RunOptions (its tokenizer)
    checked: dict = field(default_factory=dict)  # the chat template's checks (stereoprobe.served.chat_exact.check)

    def ask(self, desc: str = "") -> dict:
        """The keyword arguments of :func:`stereoprobe.served.client.ask_all` for the next row of this run."""
        return {"max_requests": self.remaining(), "budget": self.max_requests, "progress": self.progress, "desc": desc}

    def asked(self) -> int:
        """Requests this run has had answered (retries aside)."""
        return self.client.usage.requests - self.client.usage.retries

    def remaining(self) -> int | None:
        """Requests the budget still allows this run (None: no budget)."""
        if self.max_requests is None:
            return None
        return max(0, self.max_requests - self.asked())

    def counts(self) -> dict:
        """The run's counts so far: requests sent (retries included), retries, answers from the store, tokens."""
        u = self.client.usage
        return {"requests": u.requests, "retries": u.retries, "from_store": u.cached,
                "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens}

    def finish(self, desc: str, facts: dict, before: dict) -> "Provenance":
        """The :class:`Provenance` of one report row: its ``facts`` (rung, passes, label mass, …), what it asked
        (the counts since ``before``, a :meth:`counts`), the model ids and system fingerprints the server reported;
        the run kept in the journal."""
        now = self.counts()
        models, fingerprints = self.journal.served_as()
        self.journal.record_run(desc, self.client.usage)
        return Provenance(**facts, **{k: now[k] - before[k] for k in now}, served_as=", ".join(models),
                          system_fingerprint=", ".join(fingerprints))


def capabilities(ref, options=None):
    """What ``ref``'s endpoint gives (:func:`stereoprobe.served.ladder.probe`): probed once per run of ``options``
    and endpoint (the verdict kept in the run's state), or afresh at each call without ``options``."""
    name = getattr(ref, "name", ref)  # a ModelRef or a name
    endpoint = _endpoint.parse(name)
    if options is None:
        return _probe(endpoint)
    return options.state.get(("served-probe", endpoint.fingerprint), lambda: _probe(endpoint))


def _probe(endpoint):
    from .client import Client
    from .journal import Journal
    from .ladder import probe

    journal = Journal(":memory:")
    try:
        return probe(Client(endpoint), journal)
    finally:
        journal.close()


def session(ref, options) -> Session:
    """The :class:`Session` of ``ref`` in the run of ``options`` (the same object for the whole run, kept in its
    :class:`~stereoprobe.options.RunState` under the model's name, the endpoint's address and the score store: the
    run's counts and budget shared by every row it reads)."""
    store = options.score_store()
    endpoint = _endpoint.parse(ref.name)
    # the address is part of it: the same name served again (another port, another server) is another session
    key = ("served-session", ref.name, endpoint.fingerprint, str(store.root))
    return options.state.get(key, lambda: _open(ref, endpoint, store, options))


def _open(ref, endpoint, store, options) -> Session:
    from .client import Client
    from .journal import Journal

    caps = capabilities(ref, options)
    journal = Journal.of(store, endpoint)
    journal.set_fact("probe", {"exact": caps.exact, "next_token": caps.next_token, "generated": caps.generated,
                               "top_k": caps.top_k, "evidence": caps.evidence})
    client = Client(endpoint, **({"concurrency": options.concurrency} if options.concurrency else {}))
    return Session(endpoint, client, journal, caps, options.max_requests, options.show_progress, options)


#: The columns of a report's ``served`` table.
SERVED_COLUMNS = ("model", "rung", "chat", "passes", "label_mass", "bounded", "unknown", "unparsed", "requests", "retries",
                  "from_store", "prompt_tokens", "completion_tokens", "served_as", "system_fingerprint")


@dataclass(frozen=True)
class Provenance:
    """What one report row read from a served model: the ``rung`` that produced it, whether an exact row read the
    chat template (``chat``; None on the chat rungs), how many items it asked (``passes``), the mass on the labels
    and the share of labels only bounded (next-token), the shares of abstentions and unparsed answers (generated),
    what it cost (requests sent, retries among them, answers taken from the store, prompt and completion tokens the
    server reported), and the model ids and system fingerprints the server reported (a hosted model can change under
    one name). None: not measured on this rung. Kept in the run's state (:func:`record`), one per row."""

    rung: str
    passes: int
    requests: int
    retries: int
    from_store: int
    prompt_tokens: int
    completion_tokens: int
    served_as: str
    system_fingerprint: str
    chat: bool | None = None
    label_mass: float | None = None
    bounded: float | None = None
    unknown: float | None = None
    unparsed: float | None = None


def record(options, key, provenance: Provenance) -> None:
    """Keep ``provenance`` as what the report row ``key`` read in the run of ``options`` (a later reading of the
    same row in the same run replaces it)."""
    provenances(options)[key] = provenance


def provenances(options) -> dict:
    """Every row's :class:`Provenance` read so far in the run of ``options``, by the key its probe gives the row (a
    :class:`~stereoprobe.modelref.RowKey`; Bias-NLI: (row, probe))."""
    return options.state.get(("provenance",), dict)


def served_table(readings: dict):
    """A report's ``served`` table: one line per row read from a served model (``readings``: the report's key of the
    row → its :class:`Provenance`, or None for a row that is not served), the fields of :class:`Provenance` after the
    row's ``model`` label. None when no row is served."""
    import pandas as pd

    def label(key):  # a RowKey, a label, or a tuple led by one (Bias-NLI keys its frames by (row, probe))
        return key.label if hasattr(key, "label") else label(key[0]) if isinstance(key, tuple) else key

    rows = [{"model": label(key), **{k: v for k, v in asdict(p).items() if v is not None}}
            for key, p in readings.items() if p is not None]
    if not rows:
        return None
    table = pd.DataFrame(rows)
    for column in SERVED_COLUMNS:
        if column not in table:
            table[column] = "" if column in ("served_as", "system_fingerprint") else float("nan")
    return table[list(SERVED_COLUMNS)]
