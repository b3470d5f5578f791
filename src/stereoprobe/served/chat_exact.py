"""The chat template on the exact rung: a served chat model read exactly as the same weights are read locally.

A completions request does not apply the chat template, so the exact rung sends the text the template makes — the
same string :func:`stereoprobe.causal.chat_prompt` builds for a local chat model (the user's turn through the
template with its generation prompt, then the template's answer cue), tokenized by the server without adding special
tokens (``"add_special_tokens": false``, as its chat completions tokenize a rendered template). The text comes from:

* **the server** (``via="server"``, the default): vLLM's ``POST /tokenize`` with ``messages`` applies the model's
  chat template (``TokenizeChatRequest`` in vllm/entrypoints/serve/tokenize/protocol.py: ``add_generation_prompt``,
  ``chat_template_kwargs``; the same renderer as its chat completions) and ``POST /detokenize`` turns those ids back
  into text, special tokens kept (vLLM 0.32: ``<|im_start|>user\\n…<|im_end|>\\n<|im_start|>assistant\\n`` for
  SmolLM2). Both are at the server's root, not under ``/v1``. (vLLM's chat completions also take ``prompt_logprobs``,
  but give no text offsets and would need the answer as a continued assistant message, which templates trim; the
  rendered text keeps one scorer for plain and chat prompts.)
* **the model's own tokenizer** (``via="tokenizer"``, ``RunOptions(tokenizer=…)``, ``--tokenizer``: a hub id or a
  folder), applied here, for a server without ``/tokenize`` (llama.cpp's, SGLang's, hosted APIs).

Either is checked at first use, as the echo is (:mod:`stereoprobe.served.ladder`): the server's own chat completion
of the probe's question, one greedy token with its log-probability and its top alternatives, against the exact
rung's reading of that token (and the echo's alternatives at its position) after the rendered prompt. They must
agree within :data:`~stereoprobe.served.ladder.ECHO_TOLERANCE`; a template that
differs from the server's (another tokenizer named, a BOS added twice) gives another number and is refused in one
line, never used.
"""

from __future__ import annotations

import json
from typing import Callable

from ..errors import StereoprobeError
from .client import Unusable, ask_all
from .endpoint import EndpointError

__all__ = ["SOURCES", "ServerTemplate", "chat_requests", "check", "exact_reading", "uses_chat"]

#: Where the exact rung's chat text comes from (module doc).
SOURCES = ("server", "tokenizer")


class ServerTemplate:
    """A stand-in for a tokenizer whose ``apply_chat_template`` is the server's: first it records the messages it is
    asked for (:meth:`render` then asks the server for all of them at once), then it answers from what came back."""

    chat_template = "(the server's chat template)"
    name_or_path = "the server"

    def __init__(self) -> None:
        self.asked: dict[str, tuple[list, dict]] = {}
        self.texts: dict[str, str] | None = None

    @staticmethod
    def _key(messages, extra) -> str:
        return json.dumps([list(messages), extra], sort_keys=True)

    def apply_chat_template(self, messages, add_generation_prompt: bool = True, tokenize: bool = False, **extra):
        if tokenize or not add_generation_prompt:
            raise StereoprobeError("The server's chat template is applied as text with its generation prompt only.")
        key = self._key(messages, extra)
        if self.texts is None:
            self.asked.setdefault(key, (list(messages), extra))
            return "."  # a placeholder: the requests are built again once the texts are in
        return self.texts[key]

    def render(self, client, journal, **ask) -> None:
        """Ask the server for the text of every recorded chat (``/tokenize`` then ``/detokenize``)."""
        ep = client.endpoint
        keys = list(self.asked)
        bodies = []
        for key in keys:
            messages, extra = self.asked[key]
            body = {"model": ep.model, "messages": messages, "add_generation_prompt": True}
            if extra:
                body["chat_template_kwargs"] = extra
            bodies.append(("/tokenize", body))
        ids = ask_all(client, journal, bodies, **ask)
        bad = next((a for a in ids if not isinstance(a.get("tokens"), list) or not a["tokens"]), None)
        if bad is not None:
            raise EndpointError(f"{ep.name!r} answered /tokenize without token ids ({str(bad)[:80]!r}); name the "
                                "model's tokenizer instead (--tokenizer).")
        texts = ask_all(client, journal, [("/detokenize", {"model": ep.model, "tokens": a["tokens"]}) for a in ids],
                        **ask)
        if any(not isinstance(t.get("prompt"), str) for t in texts):
            raise EndpointError(f"{ep.name!r} answered /detokenize without a prompt text; name the model's tokenizer "
                                "instead (--tokenizer).")
        self.texts = {k: t["prompt"] for k, t in zip(keys, texts)}


def _templater(tokenizer: str | None):
    """The local tokenizer named (client-side), or None for the server's template."""
    if tokenizer is None:
        return None
    from ..models import load_tokenizer

    tok = load_tokenizer(tokenizer)
    if tok is None:
        raise StereoprobeError(f"--tokenizer {tokenizer!r} does not load (no local copy, or not a tokenizer); pass the "
                               "served model's hub id or a folder with its tokenizer files.")
    if not getattr(tok, "chat_template", None):
        raise StereoprobeError(f"--tokenizer {tokenizer!r} has no chat template; name the chat model's own tokenizer, "
                               "or leave chat out.")
    return tok


def chat_requests(client, journal, build: Callable, tokenizer: str | None = None, *, caps=None,
                  memo: dict | None = None, **ask) -> list[tuple[str, str]]:
    """``build(tokenizer)``'s (prompt, continuation) requests with the chat template applied by the server or by the
    tokenizer named (module doc), after :func:`check` has confirmed that source on this endpoint (``caps`` and
    ``memo`` as there)."""
    tok = _templater(tokenizer)
    check(client, journal, tokenizer, tok, caps=caps, memo=memo)
    if tok is not None:
        return build(tok)
    server = ServerTemplate()
    build(server)
    server.render(_aside(client), journal, progress=ask.get("progress", False), desc=ask.get("desc", ""))
    return build(server)


def exact_reading(session, build: Callable, chat: bool | None, desc: str):
    """The exact rung's reading of a served model's requests, the one home of the three probes' exact rows:
    ``(requests, log-probabilities, whether they read the chat template)``. ``build(tokenizer, chat)`` makes the
    probe's (prompt, continuation) requests as for a local causal LM (``tokenizer`` None for plain prompts);
    ``chat`` as :func:`uses_chat` reads it; the tokenizer named in the run's options renders the template
    client-side."""
    from .ladder import exact_logprobs

    tokenizer = getattr(session.options, "tokenizer", None)
    known = {"caps": session.caps, "memo": session.checked}
    use = uses_chat(session.client, session.journal, chat, tokenizer, **known)
    reqs = (chat_requests(session.client, session.journal, lambda tok: build(tok, True), tokenizer, **known,
                          **session.ask(f"{desc} · chat template")) if use else build(None, False))
    return reqs, exact_logprobs(session.client, session.journal, reqs, chat=use, via=session.caps.exact_via,
                                **session.ask(desc)), use


def _aside(client):
    """A client of the same endpoint whose requests are not the run's: rendering a template and the check are
    tokenizer calls and a probe, not model calls of the rows, so they count neither against ``--max-requests`` nor in
    the served table's requests (as the first-use probe's do not)."""
    from .client import Client

    return Client(client.endpoint, concurrency=client.concurrency)


def uses_chat(client, journal, chat: bool | None, tokenizer: str | None = None, *, caps=None,
              memo: dict | None = None) -> bool:
    """Whether an exact row reads the chat template: ``chat`` False never, True always (:func:`check` refuses in one
    line where it cannot be), None where the check passes — as a local model is read through its chat template
    when it has one — else through plain prompts: quietly where the server applies no template (a base model, or no
    ``/tokenize``), with one warning where its template does not check out."""
    if chat is False:
        return False
    memo = {} if memo is None else memo
    try:
        check(client, journal, tokenizer, caps=caps, memo=memo)
        return True
    except Unusable:
        raise
    except EndpointError as e:
        if chat or tokenizer is not None:
            raise
        if isinstance(e, NoTemplate):  # a base model, or a server that does not say: plain, as for a local base model
            return False
        key = (client.endpoint.fingerprint, "warned")
        if key not in memo:
            import warnings

            from ..errors import StereoprobeWarning

            memo[key] = str(e)
            warnings.warn(f"{e} Its exact rung reads plain prompts (pass chat=False to say so, or --tokenizer).",
                          StereoprobeWarning, stacklevel=2)
        return False


#: Alternatives compared by the check (the chat completion's ``top_logprobs`` against the echo's at the same
#: position): a confident model gives its greedy token a log-probability near 0 after almost any template, so its
#: alternatives, which a changed context moves, are compared too, down to :data:`ALTERNATIVE_FLOOR` nats.
CHECK_TOP = 5
ALTERNATIVE_FLOOR = -10.0


def _alternatives(answer: dict, at: int) -> dict[str, float]:
    """The echo's top alternatives at the token that starts at character ``at`` ({} where it gives none)."""
    from .ladder import first_choice

    lp = first_choice(answer).get("logprobs") or {}
    offsets, tops = lp.get("text_offset") or [], lp.get("top_logprobs") or []
    for offset, top in zip(offsets, tops):
        if offset >= at:
            return {str(k): float(v) for k, v in top.items()} if isinstance(top, dict) else {}
    return {}


class NoTemplate(EndpointError):
    """The server does not apply a chat template for the exact rung (no ``/tokenize``, or no template)."""


def check(client, journal, tokenizer: str | None = None, tok=None, *, caps=None, memo: dict | None = None) -> str:
    """The evidence that the chat text from the server (``tokenizer`` None) or from ``tokenizer`` reads as the
    server's own chat completions do (module doc); refused in one line where it does not or cannot. ``caps``: the
    endpoint's probed capabilities (None: probe it); ``memo``: where a run keeps the verdict per endpoint and source
    (its session's; None: check afresh)."""
    ep = client.endpoint
    key = (ep.fingerprint, tokenizer)
    memo = {} if memo is None else memo
    if key in memo:
        if isinstance(memo[key], EndpointError):
            raise memo[key]
        return memo[key]
    try:
        evidence = _check(_aside(client), journal, tokenizer, tok, caps)
    except Unusable:
        raise
    except StereoprobeError as e:
        memo[key] = e if isinstance(e, EndpointError) else EndpointError(str(e))
        raise memo[key] from None
    memo[key] = evidence
    journal.set_fact("chat_exact", {"source": "tokenizer" if tokenizer else "server", "tokenizer": tokenizer,
                                    "evidence": evidence})
    return evidence


def _check(client, journal, tokenizer: str | None, tok, caps=None) -> str:
    from ..causal import chat_prompt
    from .ladder import ECHO_TOLERANCE, PROBE_CHAT, first_choice, chat_body, continuation_logprob, exact_body, probe

    ep = client.endpoint
    if tokenizer is not None and tok is None:
        tok = _templater(tokenizer)
    caps = caps or probe(client, journal)
    source = f"the chat template of --tokenizer {tokenizer!r}" if tokenizer else "the server's chat template"
    if caps.exact is not None:
        raise EndpointError(f"{ep.name!r} has no exact rung for the chat template ({caps.exact}); read it on the "
                            f"{(caps.rungs() or ['generated'])[0]} rung, or leave chat out.")
    messages = [{"role": "user", "content": PROBE_CHAT}]
    try:
        (answer,) = ask_all(client, journal, [("chat/completions", chat_body(ep, messages, max_tokens=1,
                                                                             top_logprobs=CHECK_TOP))],
                            progress=False)
    except Unusable:
        raise
    except EndpointError as e:
        raise EndpointError(f"{ep.name!r}: the chat exact rung needs its chat completions with log-probabilities to "
                            f"check the template against ({str(e).rstrip('.')}); leave chat out.") from None
    content = (first_choice(answer).get("logprobs") or {}).get("content") or []
    if not content or not isinstance(content[0], dict) or "logprob" not in content[0]:
        raise EndpointError(f"{ep.name!r} gives no log-probabilities of chat completions, so {source} cannot be "
                            "checked on the exact rung; leave chat out or read it on the generated rung.")
    token, reported = str(content[0].get("token", "")), float(content[0]["logprob"])
    if tok is None:
        server = ServerTemplate()
        chat_prompt(server, PROBE_CHAT)
        try:
            server.render(client, journal, progress=False)
        except Unusable:
            raise
        except EndpointError as e:
            raise NoTemplate(f"{ep.name!r} does not apply a chat template for the exact rung ({str(e).rstrip('.')}"
                             "); name the model's tokenizer (--tokenizer), or leave chat out.") from None
        prompt = chat_prompt(server, PROBE_CHAT)
    else:
        prompt = chat_prompt(tok, PROBE_CHAT)
    body = exact_body(ep, prompt + token, caps.exact_via, chat=True)
    if caps.exact_via == "echo":
        body["logprobs"] = CHECK_TOP  # the alternatives at the token's position too
    try:
        (echoed,) = ask_all(client, journal, [("completions", body)], progress=False)
        value = continuation_logprob(echoed, prompt, prompt + token, caps.exact_via)
    except Unusable:
        raise
    except EndpointError as e:
        raise EndpointError(f"{ep.name!r}: {source} could not be checked on the exact rung ({str(e).rstrip('.')}); "
                            "leave chat out.") from None
    gap = abs(value - reported)
    theirs = _alternatives(echoed, len(prompt)) if caps.exact_via == "echo" else {}
    tops = {str(t.get("token")): float(t["logprob"]) for t in (content[0].get("top_logprobs") or [])
            if isinstance(t, dict) and isinstance(t.get("logprob"), (int, float))}
    common = [k for k, v in tops.items() if k in theirs and v >= ALTERNATIVE_FLOOR]
    gap = max([gap] + [abs(theirs[k] - tops[k]) for k in common])
    evidence = (f"{token!r} after the chat prompt: {reported:.4f} chat completion, {value:.4f} exact"
                + (f"; {len(common)} alternatives within {gap:.4f}" if common else ""))
    if gap > ECHO_TOLERANCE:
        raise EndpointError(f"{ep.name!r}: {source} reads otherwise than the server's chat completions ({evidence}): "
                            "another template or other special tokens; name the served model's own tokenizer, or "
                            "leave chat out.")
    return evidence
