"""Many requests in flight to one endpoint, surviving the network, every answer kept as it arrives.

:class:`Client` sends JSON requests to an OpenAI-compatible server with ``httpx`` (asyncio, at most ``concurrency``
in flight), retries what a busy or flaky server answers (429, 500, 502, 503, 504, time-outs, dropped connections)
with exponential backoff and jitter, honouring ``Retry-After``, and turns everything else into one sentence naming
the culprit and the fix (:class:`~stereoprobe.served.endpoint.EndpointError`; the API key's variable, never its
value). :func:`ask_all` sends what the :class:`~stereoprobe.served.journal.Journal` does not hold yet, writes each
answer to it the moment it arrives (a run killed mid-way resumes without asking again), counts requests and tokens,
and stops cleanly at a budget (:class:`BudgetExhausted`: what was answered is kept; the same call goes on).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .endpoint import Endpoint, EndpointError, redact

#: HTTP statuses retried with backoff.
RETRIED = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Requests in flight at once (a server's own queue takes the rest; vLLM batches what it holds).
CONCURRENCY = 16
#: Tries of one request before it fails (the first and the retries).
TRIES = 8
#: Longest wait between two tries, and longest ``Retry-After`` honoured, in seconds.
MAX_WAIT = 60.0


class BudgetExhausted(EndpointError):
    """The run reached its request budget (``max_requests``): the answers so far are stored; rerun to go on."""


class Unusable(EndpointError):
    """The endpoint cannot be used at all as named (unreachable, the key refused, the model not served, answers not
    JSON): raised through the first-use probe, which otherwise notes what a rung lacks and goes on."""


@dataclass
class Usage:
    """What one run asked of a server: requests sent (retries included), answers taken from the journal instead,
    and the tokens the server reported processing."""

    requests: int = 0
    retries: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    models: set = field(default_factory=set)
    fingerprints: set = field(default_factory=set)

    def add(self, answer: dict) -> None:
        usage = answer.get("usage") or {}
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        if answer.get("model"):
            self.models.add(str(answer["model"]))
        if answer.get("system_fingerprint"):
            self.fingerprints.add(str(answer["system_fingerprint"]))

    def line(self) -> str:
        """One line for the log: ``1,204 requests (3 retried, 96 from the store), 310,552 prompt + 1,204 …``."""
        return (f"{self.requests:,} requests ({self.retries:,} retried, {self.cached:,} answers from the store), "
                f"{self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens")


def _retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (a number or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _message(response) -> str:
    """The error message a server put in its JSON body (``{"error": {"message": …}}``, ``{"detail": …}``), else
    the start of its text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return str(error.get("message") or error.get("detail") or error)[:300]
    return str(error)[:300]


class Client:
    """Requests to one :class:`~stereoprobe.served.endpoint.Endpoint` (module doc)."""

    def __init__(self, endpoint: Endpoint, *, concurrency: int = CONCURRENCY, tries: int = TRIES,
                 timeout: float = 300.0, usage: Usage | None = None, sleep: Callable | None = None):
        self.endpoint, self.concurrency, self.tries, self.timeout = endpoint, concurrency, tries, timeout
        self.usage = usage if usage is not None else Usage()
        self._sleep = sleep or asyncio.sleep
        #: The models the server lists (the first-use probe reads them), named in a model-not-found error.
        self.served_models: tuple = ()

    def _headers(self) -> dict:
        key = self.endpoint.key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _fail(self, why: str, kind: type = EndpointError) -> EndpointError:
        return kind(redact(why, self.endpoint))

    async def get(self, http, path: str, tries: int | None = None) -> dict:
        return await self.send(http, path, None, tries=tries)

    async def send(self, http, path: str, body: dict | None, *, tries: int | None = None) -> dict:
        """One request (GET when ``body`` is None), retried as the module doc says (``tries`` times at most, default
        :data:`TRIES`); the JSON answer."""
        import httpx2 as httpx

        ep = self.endpoint
        tries = tries or self.tries
        for attempt in range(tries):
            wait = min(MAX_WAIT, 0.5 * 2 ** attempt) * (0.5 + random.random() / 2)
            try:
                self.usage.requests += 1
                if body is None:
                    response = await http.get(ep.url(path), headers=self._headers())
                else:
                    response = await http.post(ep.url(path), json=body, headers=self._headers())
            except (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as e:
                why = f"{type(e).__name__}"
            except httpx.ConnectError:
                raise self._fail(f"Cannot reach {ep.name!r} at {ep.base_url} ({ep.url_variable}); start the server "
                                 f"or set {ep.url_variable} to its base URL.", Unusable) from None
            else:
                status = response.status_code
                if status < 400:
                    try:
                        answer = response.json()
                    except ValueError:
                        raise self._fail(f"{ep.name!r} answered {path} with malformed JSON "
                                         f"({response.text[:80]!r}); check that {ep.url_variable} points at an "
                                         "OpenAI-compatible API (it ends in /v1).", Unusable) from None
                    if not isinstance(answer, dict):
                        raise self._fail(f"{ep.name!r} answered {path} with {type(answer).__name__}, not a JSON "
                                         f"object; check that {ep.url_variable} points at an OpenAI-compatible API.")
                    if body is not None:
                        self.usage.add(answer)
                    return answer
                if status not in RETRIED:
                    raise self._refused(status, _message(response), path, body)
                why = f"HTTP {status}"
                asked = _retry_after(response.headers.get("retry-after"))
                if asked is not None:
                    wait = min(MAX_WAIT, asked)
            if attempt + 1 < tries:
                self.usage.retries += 1
                await self._sleep(wait)
        raise self._fail(f"{ep.name!r} kept failing ({why}) after {tries} tries of {path}; the server is "
                         "overloaded or down: lower concurrency, or rerun later (answers so far are stored).")

    def _refused(self, status: int, message: str, path: str, body: dict | None) -> EndpointError:
        ep = self.endpoint
        lowered = message.lower()
        if status in (401, 403):
            where = (f"set {ep.key_variable} to a valid key" if not ep.key()
                     else f"the key in {ep.key_variable} was refused; set it to a valid one")
            return self._fail(f"{ep.name!r} refused the request (HTTP {status}): {where}.", Unusable)
        if status == 404 and ("model" in lowered or "does not exist" in lowered):
            listed = self.served_models
            shown = ", ".join(listed[:10]) + (", …" if len(listed) > 10 else "")
            return self._fail(f"{ep.name!r}: the server at {ep.base_url} does not serve {ep.model!r}"
                              + (f"; it serves {shown}: name one of these after openai-api/{ep.service}/." if listed
                                 else " (HTTP 404); name a model it serves."), Unusable)
        if "context" in lowered and ("length" in lowered or "window" in lowered or "exceed" in lowered):
            return self._fail(f"{ep.name!r}: a prompt is longer than the server's context ({message}); serve the "
                              "model with a longer context (vLLM --max-model-len, llama.cpp --n_ctx).")
        if body is not None and "chat_template_kwargs" in body and ("chat_template_kwargs" in message
                                                                     or "enable_thinking" in message):
            return self._fail(f"{ep.name!r} refused thinking (HTTP {status}: {message}): it takes no "
                              "chat_template_kwargs, so thinking cannot be switched there; leave thinking out "
                              "(--thinking/--no-thinking) for this model.", Unusable)
        return self._fail(f"{ep.name!r} refused {path} (HTTP {status}: {message}); check the server's "
                          "documentation for that request.")

    def http(self):
        import httpx2 as httpx

        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        return httpx.AsyncClient(timeout=self.timeout, limits=limits, trust_env=False)


def run_sync(make_coroutine: Callable[[], Any]) -> Any:
    """Run a coroutine to its end from synchronous code, also where an event loop already runs (a Jupyter kernel):
    then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    out: dict = {}

    def target():
        try:
            out["value"] = asyncio.run(make_coroutine())
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def request_key(path: str, body: dict) -> str:
    """What identifies a request in the journal: its path and canonical JSON body (the key is never in it)."""
    import hashlib

    return hashlib.sha256((path + "\n" + json.dumps(body, sort_keys=True)).encode()).hexdigest()


def prompt_text(body: dict) -> str:
    """What a request asks, as text: a completion's prompt, or a chat's messages one after the other."""
    if "prompt" in body:
        return str(body["prompt"])
    return "\x1e".join(f"{m.get('role')}\x1f{m.get('content')}" for m in body.get("messages", []))


def ask_all(client: Client, journal, requests: Sequence[tuple[str, dict]], *, max_requests: int | None = None,
            progress: bool = True, desc: str = "", order: bool = True, budget: int | None = None) -> list[dict]:
    """The answers to ``requests`` (``(path, body)`` pairs), in their order: from ``journal`` where it holds them,
    the others sent ``client.concurrency`` at a time and each written to the journal as it arrives. ``order``: send
    them sorted by their text (:func:`prompt_text`), so that prompts sharing a prefix go together and a server's
    prefix cache (vLLM's automatic prefix caching, llama.cpp's prompt cache) computes the shared part once; else in
    the order given. ``max_requests``: send at most that many (:class:`BudgetExhausted` once they are answered, naming
    the run's ``budget`` when this call has only the rest of it)."""
    from tqdm.auto import tqdm

    keys = [request_key(path, body) for path, body in requests]
    held = journal.get_many(keys)
    client.usage.cached += sum(k in held for k in dict.fromkeys(keys))
    unique = list(dict.fromkeys(keys))
    first = {k: i for i, k in reversed(list(enumerate(keys)))}
    todo = [j for j, k in enumerate(unique) if k not in held]
    if order:  # prompts that share a prefix go together: a server's prefix cache reuses what the last one computed
        todo.sort(key=lambda j: prompt_text(requests[first[unique[j]]][1]))
    budget_hit = max_requests is not None and len(todo) > max_requests
    if budget_hit:
        todo = todo[:max_requests]

    async def main():
        sem = asyncio.Semaphore(client.concurrency)
        bar = tqdm(total=len(todo), desc=desc or client.endpoint.name, unit="req", disable=not progress or not todo)
        async with client.http() as http:
            async def one(j: int):
                key = unique[j]
                path, body = requests[first[key]]
                async with sem:
                    answer = await client.send(http, path, body)
                journal.put(key, path, body, answer)
                held[key] = answer
                bar.update()

            tasks = [asyncio.create_task(one(j)) for j in todo]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
            finally:
                bar.close()

    if todo:
        run_sync(main)
    if budget_hit:
        missing = sum(k not in held for k in unique)
        raise BudgetExhausted(f"{client.endpoint.name!r}: stopped at the budget of {budget or max_requests:,} requests "
                              f"(--max-requests) with {missing:,} still to ask; the answers are stored, so the same "
                              "command goes on from here.")
    return [held[k] for k in keys]
