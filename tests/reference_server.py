"""The tests' reference OpenAI-compatible model server: a Hugging Face causal LM behind the OpenAI protocol, in this
process — a fixture of the endpoint backend (:class:`stereoprobe.backends.Endpoint`), not part of the package.

:class:`ReferenceServer` answers ``GET /v1/models``, ``POST /v1/completions`` and ``POST /v1/chat/completions`` the
way vLLM, llama.cpp's server and the hosted APIs do, with the exact log-probabilities of the ``model`` it is given
(torch, any device, one forward pass at a time): the prompt's (``echo``, or vLLM's ``prompt_logprobs``), the top
alternatives of generated tokens, chat templates with their ``chat_template_kwargs`` (``enable_thinking``), a
reasoning field split from the answer as a reasoning parser does, ``/tokenize`` and ``/detokenize`` as vLLM has them.
It is what a correct server answers, so the tests read a served model on every rung of the ladder
(:mod:`stereoprobe.served.ladder`) against it and compare with the same weights read locally. Keyword switches make
it misbehave the way real servers do (shifted or missing echo log-probabilities, no chat log-probabilities, API keys,
rate limits, server errors, truncated JSON, slow answers, short contexts). Real servers (vLLM, llama.cpp,
``transformers serve``) are tested in ``make test-served``.

Only the standard library speaks HTTP (``http.server.ThreadingHTTPServer`` in a daemon thread on 127.0.0.1, a free
port); tests/conftest.py loads this file as ``stereoprobe_test_reference_server``; usage::

    with serving("lab:causal-biased", service="chatlab", smoke=True) as name:   # CHATLAB_BASE_URL set while it runs
        report = unqover.report(name, "gender", sample=20)

or, with a model and tokenizer in hand, ``with ReferenceServer(model, tokenizer) as server: …`` (``server.base_url``).
It serves one request at a time: a stand-in for a server, not a fast one. Until 0.9 it lived in the package
(``stereoprobe.served.reference``), where the chapter *What chat models say* served SmolLM2 with it to compare rungs;
a local chat model now answers every rung itself (:class:`stereoprobe.backends.Local`).
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import torch

#: the values of the ``echo`` switch of :class:`ReferenceServer`
ECHO_MODES = ("exact", "shifted", "generated-only", "zeros", "refuse")


class _Refusal(Exception):
    """An HTTP error answer: ``status``, the JSON ``body`` and extra ``headers``."""

    def __init__(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        """Keep the answer; the message is the body's error message, for tracebacks."""
        super().__init__(body.get("error", {}).get("message", str(status)))
        self.status, self.body, self.headers = status, body, headers or {}


def _split_reasoning(text: str) -> tuple[str, str | None]:
    """(content, reasoning) of a generated text as a reasoning parser splits it: the first ``<think>…</think>``
    block's inside is the reasoning and the text after it the content; an unclosed block is all reasoning."""
    start = text.find("<think>")
    if start < 0:
        return text, None
    end = text.find("</think>", start)
    if end < 0:
        return "", text[start + len("<think>"):].strip()
    return text[end + len("</think>"):].lstrip(), text[start + len("<think>"):end].strip()


def _invalid(message: str, status: int = 400, code: str | None = None, param: str | None = None) -> _Refusal:
    """An OpenAI-style ``invalid_request_error`` answer."""
    return _Refusal(status, {"error": {"message": message, "type": "invalid_request_error", "param": param,
                                       "code": code}})


@dataclass
class _Token:
    """One token of an answer: its id, its text, its start in the answer's text, its log-probability (None for a
    text's first token) and the distribution its top alternatives come from (None: no alternatives)."""

    id: int
    text: str
    offset: int
    logprob: float | None
    dist: torch.Tensor | None = field(default=None, repr=False)


@dataclass
class _Sample:
    """One generated continuation: its tokens (no end-of-sequence token), its text, why it stopped, and how many
    tokens the model produced (the end-of-sequence token included)."""

    tokens: list[_Token]
    text: str
    finish_reason: str
    produced: int


class ReferenceServer:
    """An OpenAI-compatible HTTP server around ``model`` (a ``transformers`` causal LM) and its ``tokenizer`` (a fast
    tokenizer: the completions' ``text_offset`` come from its offset mapping).

    Start and stop it with ``with ReferenceServer(...) as server:`` (or :meth:`start` / :meth:`stop`); it serves
    ``base_url`` = ``http://127.0.0.1:<port>/v1``:

    * ``GET /v1/models``: one model, ``model_name``.
    * ``POST /v1/completions``: ``model``, ``prompt`` (one string; a list is refused with 400), ``max_tokens``
      (default ``default_max_tokens``; 0: no generation), ``echo``, ``logprobs`` (an int, the number of top
      alternatives, or null), ``temperature`` (0: greedy; above 0: sampled from softmax(logits / temperature) with
      a ``torch.Generator`` seeded by ``seed`` when given), ``seed``, ``n``, ``ignore_eos`` (vLLM's).
      The prompt is ``tokenizer(prompt)["input_ids"]`` (its BOS included when the tokenizer adds one;
      ``"add_special_tokens": false``, vLLM's field, leaves it out, as for a rendered chat template). With
      ``logprobs``, the first prompt token has a null logprob and null top_logprobs, prompt token i > 0 has
      log P(token_i | tokens < i) and the ``logprobs`` most likely tokens of that distribution as
      {text: logprob} (distinct texts: where two ids decode to the same text the higher one counts, and the list
      goes on down the ranking). Token texts are ``tokenizer.decode([id])``, "" for a prompt token without
      characters (a BOS); ``text_offset`` is the token's start in the answer's text (0 for a token without
      characters; generated tokens: the running length of the token texts). Generated tokens report the model's
      own (temperature 1) log-probabilities of the distribution they were drawn from.
    * ``POST /v1/chat/completions``: ``model``, ``messages``, ``max_tokens`` / ``max_completion_tokens``,
      ``temperature``, ``seed``, ``n``, ``logprobs`` (bool), ``top_logprobs`` (0 to ``max_top_logprobs``; exactly
      that many alternatives, highest first; asking for them without ``logprobs`` is a 400, as on vLLM and OpenAI).
      The messages are rendered with ``tokenizer.apply_chat_template(messages, tokenize=False,
      add_generation_prompt=True)`` and tokenized without special tokens (the template writes them) when the
      tokenizer has a ``chat_template``; else as plain text, each message's content joined by "\\n\\n" and a
      final "\\n", tokenized with the tokenizer's special tokens (its BOS). ``chat_template_kwargs`` (a JSON
      object, vLLM's field) is passed to ``apply_chat_template`` as keyword arguments (``enable_thinking``).

    * ``POST /tokenize`` and ``POST /detokenize`` (vLLM's, at the root, not under ``/v1``; only with ``tokenize``):
      ``messages`` (and ``chat_template_kwargs``) rendered as for chat completions (400 where the tokenizer has no
      chat template, as on vLLM) → ``{"count", "max_model_len",
      "tokens"}``; or ``prompt`` (``add_special_tokens``, default true) → its ids; ``tokens`` → ``{"prompt": the
      ids decoded, special tokens kept}``.

    Generation stops after ``max_tokens`` tokens (finish_reason "length") or at an end-of-sequence token (the
    tokenizer's eos token, and those of the model's generation config; finish_reason "stop"), which is not part of
    the text nor of the log-probabilities but counts in ``usage.completion_tokens``. ``stream`` is refused with 400;
    ``stop``, ``top_p`` and the other sampling parameters are ignored.

    Switches (keywords; the defaults behave correctly; each is an attribute read at every request, so a test may
    change it while the server runs):

    * ``echo``: how ``/completions`` answers ``echo`` with ``logprobs``. ``"exact"``: as above. ``"shifted"``:
      llama-cpp-python 0.3.36's server: prompt token i gets its log-probability under the distribution that
      follows it (position i's logits, which predict token i + 1) and that distribution's top list; the first
      prompt token is not null. ``"generated-only"``: llama.cpp's C++ server: the text has the prompt, but
      ``tokens``, ``token_logprobs``, ``top_logprobs`` and ``text_offset`` cover the generated tokens only (their
      offsets still count the prompt's characters). ``"zeros"``: every prompt token's logprob is 0.0 (the first
      one too; the top lists are exact's). ``"refuse"``: a request with ``echo`` true gets 400 "echo is not
      supported".
    * ``prompt_logprobs`` (False): True answers ``/completions``' ``prompt_logprobs`` (an int from 0 to
      ``max_top_logprobs``, else 400) as vLLM does (vllm/entrypoints/openai/completion/protocol.py,
      ``CompletionResponseChoice.prompt_logprobs``; the lists built as in vllm/logprobs.py): every choice carries
      ``"prompt_logprobs"``, null where the request did not ask, else a list with null for the first prompt token,
      then per prompt token i a JSON object keyed by token id (a string): first, token i itself with {"logprob":
      log P(token_i | tokens < i), "rank": how many tokens are at least as likely, "decoded_token":
      ``tokenizer.decode([id])``}, then the ``prompt_logprobs`` most likely tokens with ranks 1, 2, … (token i among
      them keeps its place first and takes that rank). False ignores the parameter (no such key), as servers
      without it do (SGLang, llama.cpp). Independent of ``echo``: ``echo="refuse"`` or ``"shifted"`` with it is a
      vLLM-like server whose echo is unusable but whose ``prompt_logprobs`` are right.
    * ``chat_logprobs`` (True): False answers chat completions with ``"logprobs": null`` whatever was asked.
    * ``logprobs_error`` (False): True refuses every request asking for log-probabilities (completions
      ``logprobs`` not null, chat ``logprobs`` true) with 400 "logprobs are not supported" (``transformers serve``).
    * ``max_top_logprobs`` (20): more top alternatives than this is a 400.
    * ``api_key`` (None): every request must carry ``Authorization: Bearer <api_key>``, else 401
      ``invalid_api_key`` (the key received is never echoed).
    * ``fail_first`` (0), ``fail_status`` (429), ``retry_after`` (None): the first ``fail_first`` POST requests
      (that passed the key check) get ``fail_status``, with a ``Retry-After`` header when ``retry_after`` is given;
      bodies: 429 a ``rate_limit_exceeded`` error, other statuses ``{"error": {"message": "server error"}}``.
    * ``delay`` (0.0): seconds every POST waits before its answer (outside the model lock: concurrent requests
      wait together).
    * ``malformed`` (False): POST requests are answered 200 with the truncated JSON ``{"choices": [``.
    * ``context`` (None): a prompt (after chat rendering) of more tokens than this is a 400
      ``context_length_exceeded``.
    * ``system_fingerprint`` ("fp_reference"), ``default_max_tokens`` (16).
    * ``tokenize`` (True): False answers ``/tokenize`` and ``/detokenize`` with 404, as servers without them do
      (llama-cpp-python's, SGLang's OpenAI routes, hosted APIs).
    * ``reasoning_field`` (None): a field name (vLLM's ``reasoning_content`` or ``reasoning``) moves a chat answer's
      ``<think>…</think>`` block out of ``content`` into that field of the message, as a server started with a
      reasoning parser does (an unclosed block: all of the text is reasoning, the content empty).
    * ``template_kwargs`` (True): False refuses ``chat_template_kwargs`` with 400 "Unrecognized request argument
      supplied: chat_template_kwargs", as OpenAI's API does.

    A request naming another model than ``model_name`` gets 404 ``model_not_found``; a missing model 400.

    Records (thread-safe): ``requests``, a copy, taken under the lock, of the list of (path, parsed JSON body or
    None, headers with lower-case names) of every request received whole (a request whose client went away before
    its body arrived is counted in ``cut_requests``, not recorded or answered; an answer its client did not stay
    for, in ``answers_lost``); counters ``post_count`` (POST requests), ``failures_sent`` (answers of
    ``fail_first``), ``prompt_tokens`` and ``completion_tokens`` (summed over the answered requests: each prompt
    once, every choice's generated tokens), ``in_flight`` and ``max_in_flight`` (POST requests being answered at
    once, and the most there were); ``errors``, the tracebacks of requests the server failed on (answered 500).
    """

    def __init__(self, model: Any, tokenizer: Any, *, model_name: str = "ref-model", echo: str = "exact",
                 prompt_logprobs: bool = False, chat_logprobs: bool = True, logprobs_error: bool = False,
                 max_top_logprobs: int = 20,
                 api_key: str | None = None, fail_first: int = 0, fail_status: int = 429,
                 retry_after: int | float | str | None = None, delay: float = 0.0, malformed: bool = False,
                 context: int | None = None, system_fingerprint: str = "fp_reference",
                 default_max_tokens: int = 16, reasoning_field: str | None = None,
                 template_kwargs: bool = True, tokenize: bool = True) -> None:
        """Keep the model and the switches (documented on the class); nothing is served before :meth:`start`."""
        if echo not in ECHO_MODES:
            raise ValueError(f"echo must be one of {ECHO_MODES}, not {echo!r}")
        self.model, self.tokenizer, self.model_name = model, tokenizer, model_name
        self.echo, self.chat_logprobs, self.logprobs_error = echo, chat_logprobs, logprobs_error
        self.prompt_logprobs = prompt_logprobs
        self.max_top_logprobs, self.api_key = max_top_logprobs, api_key
        self.fail_first, self.fail_status, self.retry_after = fail_first, fail_status, retry_after
        self.delay, self.malformed, self.context = delay, malformed, context
        self.system_fingerprint, self.default_max_tokens = system_fingerprint, default_max_tokens
        self.reasoning_field, self.template_kwargs = reasoning_field, template_kwargs
        self.tokenize = tokenize

        self._requests: list[tuple[str, Any, dict[str, str]]] = []
        self.errors: list[str] = []
        self.post_count = self.failures_sent = self.prompt_tokens = self.completion_tokens = 0
        self.cut_requests = self.answers_lost = 0
        self.in_flight = self.max_in_flight = 0
        self._state = threading.Lock()  # the records and counters
        self._model_lock = threading.Lock()  # one forward pass (one request's work) at a time
        self._byte_level_decoder: bool | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> list[tuple[str, Any, dict[str, str]]]:
        """The requests received whole so far (a copy: the handler threads append while a test reads)."""
        with self._state:
            return list(self._requests)

    def lost(self, what: str) -> None:
        """Count a request cut before its body arrived (``"cut_requests"``) or an answer its client did not stay
        for (``"answers_lost"``): a client killed mid-request, which the server survives."""
        with self._state:
            setattr(self, what, getattr(self, what) + 1)

    # ----------------------------------------------------------------------------------------------- lifecycle

    @property
    def port(self) -> int:
        """The port the server listens on (after :meth:`start`)."""
        if self._httpd is None:
            raise RuntimeError("the reference server is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, the base URL an OpenAI client takes."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ReferenceServer:
        """Listen on 127.0.0.1 (a free port) and serve from a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("the reference server is already started")
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.reference = self  # type: ignore[attr-defined]  # read by _Handler
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"reference-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the socket and join the serving thread."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> ReferenceServer:
        """Start the server."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop the server."""
        self.stop()

    # ------------------------------------------------------------------------------------------------ requests

    def handle(self, method: str, path: str, headers: dict[str, str],
               raw: bytes) -> tuple[int, bytes, dict[str, str]]:
        """Answer one HTTP request: (status, body bytes, extra headers). Called by the handler threads."""
        path = path.split("?", 1)[0]
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                bad_json = True
        with self._state:
            self._requests.append((path, body, dict(headers)))
        try:
            self._check_key(headers)
            if method == "GET":
                if path.rstrip("/") == "/v1/models":
                    return self._json(200, {"object": "list", "data": [
                        {"id": self.model_name, "object": "model", "created": 0, "owned_by": "reference"}]})
                if path.rstrip("/") in ("/v1/completions", "/v1/chat/completions"):
                    raise _invalid(f"Method GET is not allowed on {path}", status=405)
                raise _invalid(f"Not found: {path}", status=404)
            return self._post(path, body, bad_json)
        except _Refusal as refusal:
            return self._json(refusal.status, refusal.body, refusal.headers)
        except Exception:  # noqa: BLE001 - any failure of the server is answered 500 and kept for the test to see
            with self._state:
                self.errors.append(traceback.format_exc())
            return self._json(500, {"error": {"message": "server error", "type": "server_error"}})

    def _post(self, path: str, body: Any, bad_json: bool) -> tuple[int, bytes, dict[str, str]]:
        """A POST request past the key check: the counters, ``delay``, ``fail_first``, ``malformed``, the route."""
        with self._state:
            self.post_count += 1
            failing = self.failures_sent < self.fail_first
            if failing:
                self.failures_sent += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            if failing:
                raise self._failure()
            if self.malformed:
                return 200, b'{"choices": [', {"Content-Type": "application/json"}
            route = {"/v1/completions": self._completions, "/v1/chat/completions": self._chat,
                     **({"/tokenize": self._tokenize, "/detokenize": self._detokenize} if self.tokenize else {})
                     }.get(path.rstrip("/"))
            if route is None:
                raise _invalid(f"Not found: {path}", status=404)
            if bad_json or not isinstance(body, dict):
                raise _invalid("The request body is not a JSON object.")
            return self._json(200, route(body))
        finally:
            with self._state:
                self.in_flight -= 1

    def _check_key(self, headers: dict[str, str]) -> None:
        """401 unless the request carries ``Authorization: Bearer <api_key>`` (when ``api_key`` is set)."""
        if self.api_key is None:
            return
        if headers.get("authorization", "") != f"Bearer {self.api_key}":
            raise _Refusal(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                           "param": None, "code": "invalid_api_key"}})

    def _failure(self) -> _Refusal:
        """The answer of a request ``fail_first`` fails: ``fail_status``, ``Retry-After`` when configured."""
        headers = {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}
        if self.fail_status == 429:
            body = {"error": {"message": "Rate limit reached for requests", "type": "requests",
                              "param": None, "code": "rate_limit_exceeded"}}
        else:
            body = {"error": {"message": "server error"}}
        return _Refusal(self.fail_status, body, headers)

    @staticmethod
    def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        """A JSON answer."""
        return status, json.dumps(body).encode("utf-8"), {"Content-Type": "application/json", **(headers or {})}

    # ------------------------------------------------------------------------------------------- validation

    def _check_model(self, body: dict) -> None:
        if "model" not in body:
            raise _invalid("you must provide a model parameter", param="model")
        if body["model"] != self.model_name:
            raise _invalid(f"The model `{body['model']}` does not exist.", status=404, code="model_not_found",
                           param="model")

    def _common(self, body: dict) -> tuple[int, float, int | None, int, bool]:
        """The checks and parameters both endpoints share: model, stream, max_tokens, temperature, seed, n."""
        self._check_model(body)
        if body.get("stream"):
            raise _invalid("stream is not supported by the reference server", param="stream")
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            max_tokens = body.get("max_completion_tokens")
        if max_tokens is None:
            max_tokens = self.default_max_tokens
        temperature = body.get("temperature")
        temperature = 1.0 if temperature is None else temperature
        seed, n = body.get("seed"), body.get("n", 1)
        n = 1 if n is None else n
        if not _is_int(max_tokens) or max_tokens < 0:
            raise _invalid("max_tokens must be an integer >= 0", param="max_tokens")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
            raise _invalid("temperature must be a number from 0 to 2", param="temperature")
        if seed is not None and not _is_int(seed):
            raise _invalid("seed must be an integer", param="seed")
        if not _is_int(n) or not 1 <= n <= 128:
            raise _invalid("n must be an integer from 1 to 128", param="n")
        return max_tokens, float(temperature), seed, n, bool(body.get("ignore_eos", False))

    def _top_count(self, value: Any, param: str) -> int:
        """A number of top alternatives: an int from 0 to ``max_top_logprobs``."""
        if not _is_int(value) or value < 0:
            raise _invalid(f"{param} must be a non-negative integer", param=param)
        if value > self.max_top_logprobs:
            raise _invalid(f"{param} must be at most {self.max_top_logprobs}, got {value}", param=param)
        return value

    def _check_context(self, n_prompt: int, param: str) -> None:
        """400 ``context_length_exceeded`` for a prompt longer than ``context``."""
        if self.context is not None and n_prompt > self.context:
            raise _invalid(f"This model's maximum context length is {self.context} tokens. However, you requested "
                           f"{n_prompt} tokens in the prompt. Please reduce the length of the prompt.",
                           code="context_length_exceeded", param=param)

    # ------------------------------------------------------------------------------------------- completions

    def _completions(self, body: dict) -> dict:
        """``POST /v1/completions``."""
        max_tokens, temperature, seed, n, ignore_eos = self._common(body)
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise _invalid("prompt must be a string (lists of prompts are not supported)", param="prompt")
        echo = bool(body.get("echo", False))
        logprobs = body.get("logprobs")
        if logprobs is not None:
            if self.logprobs_error:
                raise _invalid("logprobs are not supported", param="logprobs")
            logprobs = self._top_count(logprobs, "logprobs")
        if echo and self.echo == "refuse":
            raise _invalid("echo is not supported", param="echo")
        prompt_k = body.get("prompt_logprobs") if self.prompt_logprobs else None
        if prompt_k is not None:
            prompt_k = self._top_count(prompt_k, "prompt_logprobs")

        special = body.get("add_special_tokens", True)
        if not isinstance(special, bool):
            raise _invalid("add_special_tokens must be a boolean", param="add_special_tokens")
        encoding = self.tokenizer(prompt, return_offsets_mapping=True, add_special_tokens=special)
        ids = list(encoding["input_ids"])
        if not ids:
            raise _invalid("the prompt is empty (no tokens)", param="prompt")
        self._check_context(len(ids), "prompt")

        with self._model_lock:
            prompt_logp, samples = self._run(ids, n, max_tokens, temperature, seed, ignore_eos)

        positions = None if prompt_k is None else self._prompt_positions(ids, prompt_logp, prompt_k)
        choices = []
        for index, sample in enumerate(samples):
            text = prompt + sample.text if echo else sample.text
            lp = None
            if logprobs is not None:
                shift = len(prompt) if echo else 0
                generated = [_Token(t.id, t.text, t.offset + shift, t.logprob, t.dist) for t in sample.tokens]
                shown = generated
                if echo and self.echo != "generated-only":
                    shown = self._echoed(ids, encoding["offset_mapping"], prompt_logp) + generated
                lp = {"tokens": [t.text for t in shown], "token_logprobs": [t.logprob for t in shown],
                      "top_logprobs": [None if t.dist is None else self._top_dict(t.dist, logprobs) for t in shown],
                      "text_offset": [t.offset for t in shown]}
            choices.append({"index": index, "text": text, "finish_reason": sample.finish_reason, "logprobs": lp})
            if self.prompt_logprobs:
                choices[-1]["prompt_logprobs"] = positions
        return self._answer("cmpl", "text_completion", choices, len(ids), samples)

    def _prompt_positions(self, ids: list[int], logp: torch.Tensor, k: int) -> list[dict | None]:
        """vLLM's ``prompt_logprobs`` of the prompt ``ids`` (``logp``: its log-softmax rows) with ``k`` alternatives
        (the ``prompt_logprobs`` switch)."""
        positions: list[dict | None] = [None]
        for i in range(1, len(ids)):
            dist = logp[i - 1]
            own = float(dist[ids[i]])
            entries = {str(ids[i]): {"logprob": own, "rank": int((dist >= own).sum()),
                                     "decoded_token": self.tokenizer.decode([ids[i]])}}
            values, indices = torch.topk(dist, k)
            for rank, (value, index) in enumerate(zip(values.tolist(), indices.tolist()), start=1):
                entries[str(index)] = {"logprob": value, "rank": rank, "decoded_token": self.tokenizer.decode([index])}
            positions.append(entries)
        return positions

    def _echoed(self, ids: list[int], offsets: list[tuple[int, int]], logp: torch.Tensor) -> list[_Token]:
        """The prompt's tokens as ``echo`` reports them (``logp``: the prompt's log-softmax rows, one a position)."""
        tokens = []
        for i, (token_id, (start, end)) in enumerate(zip(ids, offsets)):
            text = self.tokenizer.decode([token_id]) if end > start else ""
            offset = start if end > start else 0
            if self.echo == "shifted":  # the distribution after token i, as llama-cpp-python reports it
                dist = logp[i]
                tokens.append(_Token(token_id, text, offset, float(dist[token_id]), dist))
            elif i == 0:
                tokens.append(_Token(token_id, text, offset, 0.0 if self.echo == "zeros" else None, None))
            else:
                dist = logp[i - 1]
                value = 0.0 if self.echo == "zeros" else float(dist[token_id])
                tokens.append(_Token(token_id, text, offset, value, dist))
        return tokens

    def _top_dict(self, dist: torch.Tensor, k: int) -> dict[str, float]:
        """The ``k`` most likely distinct token texts of ``dist`` as {text: logprob} (a text's best id counts)."""
        top: dict[str, float] = {}
        if k == 0:
            return top
        size = min(dist.numel(), k + 16)
        while True:
            values, indices = torch.topk(dist, size)
            for value, index in zip(values.tolist(), indices.tolist()):
                text = self.tokenizer.decode([index])
                if text not in top:
                    top[text] = value
                    if len(top) == k:
                        return top
            if size == dist.numel():
                return top
            top, size = {}, dist.numel()

    # -------------------------------------------------------------------------------------------------- chat

    def _tokenize(self, body: dict) -> dict:
        """``POST /tokenize`` (vLLM's): a chat's ``messages`` as its chat completions render them, or a ``prompt``."""
        self._check_model(body)
        if "messages" in body:
            kwargs = body.get("chat_template_kwargs")
            if kwargs is not None and not isinstance(kwargs, dict):
                raise _invalid("chat_template_kwargs must be an object", param="chat_template_kwargs")
            if not getattr(self.tokenizer, "chat_template", None):  # vLLM's refusal (transformers has no default)
                raise _invalid("As of transformers v4.44, default chat template is no longer allowed, so you must "
                               "provide a chat template if the tokenizer does not define one.")
            ids = self.render_chat(_messages(body["messages"]), kwargs)[1]
        elif isinstance(body.get("prompt"), str):
            ids = list(self.tokenizer(body["prompt"], add_special_tokens=bool(body.get("add_special_tokens", True)))
                       ["input_ids"])
        else:
            raise _invalid("messages or prompt is required", param="messages")
        return {"count": len(ids), "max_model_len": self.context or 0, "tokens": ids, "token_strs": None}

    def _detokenize(self, body: dict) -> dict:
        """``POST /detokenize`` (vLLM's): the ids' text, special tokens kept."""
        self._check_model(body)
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(_is_int(t) and 0 <= t < len(self.tokenizer) for t in tokens):
            raise _invalid("tokens must be a list of token ids", param="tokens")
        return {"prompt": self.tokenizer.decode(tokens, skip_special_tokens=False)}

    def render_chat(self, messages: list[dict], kwargs: dict | None = None) -> tuple[str, list[int]]:
        """The prompt text of ``messages`` and its token ids (the rules are in the class docstring)."""
        template = getattr(self.tokenizer, "chat_template", None)
        if template:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                      **(kwargs or {}))
            return text, list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        text = "\n\n".join(message["content"] for message in messages) + "\n"
        return text, list(self.tokenizer(text)["input_ids"])

    def _chat(self, body: dict) -> dict:
        """``POST /v1/chat/completions``."""
        max_tokens, temperature, seed, n, ignore_eos = self._common(body)
        messages = _messages(body.get("messages"))
        want = bool(body.get("logprobs", False))
        top = body.get("top_logprobs")
        if want and self.logprobs_error:
            raise _invalid("logprobs are not supported", param="logprobs")
        top = 0 if top is None else self._top_count(top, "top_logprobs")
        if top and not want:
            raise _invalid("logprobs must be true when top_logprobs is set", param="top_logprobs")
        kwargs = body.get("chat_template_kwargs")
        if kwargs is not None:
            if not self.template_kwargs:
                raise _invalid("Unrecognized request argument supplied: chat_template_kwargs",
                               param="chat_template_kwargs")
            if not isinstance(kwargs, dict):
                raise _invalid("chat_template_kwargs must be an object", param="chat_template_kwargs")
        _, ids = self.render_chat(messages, kwargs)
        if not ids:
            raise _invalid("the rendered messages are empty (no tokens)", param="messages")
        self._check_context(len(ids), "messages")

        with self._model_lock:
            _, samples = self._run(ids, n, max_tokens, temperature, seed, ignore_eos)

        choices = []
        for index, sample in enumerate(samples):
            lp = None
            if want and self.chat_logprobs:
                lp = {"content": [{"token": t.text, "logprob": t.logprob, "bytes": self.token_bytes(t.id),
                                   "top_logprobs": self._top_list(t.dist, top)} for t in sample.tokens],
                      "refusal": None}
            message = {"role": "assistant", "content": sample.text}
            if self.reasoning_field:
                message.update(zip(("content", self.reasoning_field), _split_reasoning(sample.text)))
            choices.append({"index": index, "message": message, "finish_reason": sample.finish_reason,
                            "logprobs": lp})
        return self._answer("chatcmpl", "chat.completion", choices, len(ids), samples)

    def _top_list(self, dist: torch.Tensor | None, k: int) -> list[dict]:
        """The ``k`` most likely tokens of ``dist``, highest first, as chat ``top_logprobs`` entries."""
        if dist is None or k == 0:
            return []
        values, indices = torch.topk(dist, min(k, dist.numel()))
        entries = []
        for value, index in zip(values.tolist(), indices.tolist()):
            entries.append({"token": self.tokenizer.decode([index]), "logprob": value,
                            "bytes": self.token_bytes(index)})
        return entries

    def token_bytes(self, token_id: int) -> list[int]:
        """The bytes of a token, as chat ``bytes`` report them: a byte-level BPE token's own bytes (a piece of a
        character included), a byte-fallback token ``<0xNN>``'s byte, else the UTF-8 of its decoded text."""
        piece = self.tokenizer.convert_ids_to_tokens(token_id)
        if isinstance(piece, str) and self._byte_level() and all(c in _BYTE_OF_CHAR for c in piece):
            return [_BYTE_OF_CHAR[c] for c in piece]
        if isinstance(piece, str) and len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            try:
                return [int(piece[3:5], 16)]
            except ValueError:
                pass
        return list(self.tokenizer.decode([token_id]).encode("utf-8"))

    def _byte_level(self) -> bool:
        """Whether the tokenizer decodes with a byte-level decoder (GPT-2's byte-to-character table)."""
        if self._byte_level_decoder is None:
            backend = getattr(self.tokenizer, "backend_tokenizer", None)
            decoder = json.loads(backend.to_str()).get("decoder") if backend is not None else None
            self._byte_level_decoder = '"ByteLevel"' in json.dumps(decoder)
        return self._byte_level_decoder

    # -------------------------------------------------------------------------------------------- the model

    def _answer(self, prefix: str, kind: str, choices: list[dict], n_prompt: int, samples: list[_Sample]) -> dict:
        """The answer's envelope and usage; counts the tokens in the server's counters."""
        produced = sum(sample.produced for sample in samples)
        with self._state:
            self.prompt_tokens += n_prompt
            self.completion_tokens += produced
        return {"id": f"{prefix}-{uuid.uuid4().hex}", "object": kind, "created": int(time.time()),
                "model": self.model_name, "system_fingerprint": self.system_fingerprint, "choices": choices,
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": produced,
                          "total_tokens": n_prompt + produced}}

    def _device(self) -> torch.device:
        """Where the model's weights are."""
        return next(self.model.parameters()).device

    def _forward(self, ids: list[int], past: Any = None) -> tuple[torch.Tensor, Any]:
        """The log-softmax (float32) of every position's logits for ``ids`` after ``past``, and the new cache."""
        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([ids], device=self._device()), past_key_values=past,
                             use_cache=True)
        return torch.log_softmax(out.logits[0].float(), dim=-1).cpu(), out.past_key_values

    def _stop_ids(self) -> set[int]:
        """The end-of-sequence ids: the tokenizer's and those of the model's generation config."""
        ids = set()
        if getattr(self.tokenizer, "eos_token_id", None) is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        config_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if isinstance(config_eos, int):
            ids.add(config_eos)
        elif isinstance(config_eos, (list, tuple)):
            ids.update(int(i) for i in config_eos)
        return ids

    def _run(self, ids: list[int], n: int, max_tokens: int, temperature: float, seed: int | None,
             ignore_eos: bool) -> tuple[torch.Tensor, list[_Sample]]:
        """The prompt's log-softmax rows and ``n`` continuations of it (call with the model lock held)."""
        generator = torch.Generator()
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)
        prompt_logp, past = self._forward(ids)
        samples = []
        for i in range(n):
            if i:  # every sample extends the prompt's cache, which a forward pass changes in place
                _, past = self._forward(ids)
            samples.append(self._generate(prompt_logp[-1], past, max_tokens, temperature, generator, ignore_eos))
        return prompt_logp, samples

    def _generate(self, dist: torch.Tensor, past: Any, max_tokens: int, temperature: float,
                  generator: torch.Generator, ignore_eos: bool) -> _Sample:
        """Up to ``max_tokens`` tokens after a prompt whose next-token distribution is ``dist``."""
        stop = set() if ignore_eos else self._stop_ids()
        tokens: list[_Token] = []
        offset, produced, finish = 0, 0, "length"
        while produced < max_tokens:
            if temperature == 0:
                token_id = int(torch.argmax(dist))
            else:
                probs = torch.softmax(dist / temperature, dim=-1)
                token_id = int(torch.multinomial(probs, 1, generator=generator))
            produced += 1
            if token_id in stop:
                finish = "stop"
                break
            text = self.tokenizer.decode([token_id])
            tokens.append(_Token(token_id, text, offset, float(dist[token_id]), dist))
            offset += len(text)
            if produced < max_tokens:
                logp, past = self._forward([token_id], past)
                dist = logp[-1]
        text = self.tokenizer.decode([t.id for t in tokens]) if tokens else ""
        return _Sample(tokens, text, finish, produced)


class _Handler(BaseHTTPRequestHandler):
    """The HTTP side: reads a request, lets ``server.reference`` (a :class:`ReferenceServer`) answer it."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the clients' connection pools expect

    def _serve(self, method: str) -> None:
        """Read the body (Content-Length), answer, write the answer with its Content-Length."""
        reference = self.server.reference  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        try:
            raw = self.rfile.read(length) if length else b""
        except ConnectionError:
            raw = b""
        if len(raw) < length:  # the client went away mid-request (killed): nothing to answer, nothing recorded
            reference.lost("cut_requests")
            self.close_connection = True
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, payload, extra = reference.handle(method, self.path, headers, raw)
        try:
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except ConnectionError:  # BrokenPipeError, ConnectionResetError: the client did not stay for its answer
            reference.lost("answers_lost")
            self.close_connection = True

    def do_GET(self) -> None:
        """A GET request."""
        self._serve("GET")

    def do_POST(self) -> None:
        """A POST request."""
        self._serve("POST")

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


def _byte_table() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet, character to byte: printable bytes are themselves, the others U+0100 on."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1),
                 *range(ord("\xae"), ord("\xff") + 1)]
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[chr(byte)] = byte
        else:
            table[chr(256 + extra)] = byte
            extra += 1
    return table


#: the byte each character of a byte-level BPE token stands for
_BYTE_OF_CHAR = _byte_table()


def _is_int(value: Any) -> bool:
    """An int that is no bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _messages(messages: Any) -> list[dict]:
    """The chat ``messages`` as [{role, content}] with string contents (text parts joined), or a 400."""
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages must be a non-empty list", param="messages")
    plain = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _invalid("every message must be an object with a role", param="messages")
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            raise _invalid("every message must have a string content", param="messages")
        plain.append({"role": message["role"], "content": content})
    return plain


@contextmanager
def serving(model: str, *, service: str = "local", device: str = "cpu", smoke: bool = False,
            precision: str = "auto", **behaviour: Any) -> Iterator[str]:
    """Serve the causal LM ``model`` (any name :func:`stereoprobe.models.load` reads with head ``causal``: a hub id,
    a folder, a ``.gguf`` file, ``zoo:`` or ``lab:``) on 127.0.0.1 while the block runs, with
    ``<SERVICE>_BASE_URL`` set to it; yields the served model's name, ``openai-api/<service>/<the name's last part>``
    (``zoo:smollm2-135m-instruct`` is ``openai-api/local/smollm2-135m-instruct``).
    ``behaviour``: the switches of :class:`ReferenceServer`. The variable is restored and the server stopped after
    the block. The model is the one :func:`stereoprobe.causal.scorer_for` keeps: a model this process has just
    scored locally is served without loading it again."""
    import os

    from stereoprobe.causal import scorer_for
    from stereoprobe.served.endpoint import PREFIX, served_name

    loaded = scorer_for(model, device=device, smoke=smoke, precision=precision)
    served = served_name(model)
    variable = f"{service.upper().replace('-', '_')}_BASE_URL"
    before = os.environ.get(variable)
    server = ReferenceServer(loaded.model, loaded.tokenizer, model_name=served, **behaviour)
    with server:
        os.environ[variable] = server.base_url
        try:
            yield f"{PREFIX}{service}/{served}"
        finally:
            if before is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = before


__all__ = ["ECHO_MODES", "ReferenceServer", "serving"]
