"""A ladder of scorers for a served model, from exact log-probabilities down to parsed generated answers.

What an OpenAI-compatible endpoint really gives is found at first use, by a small probe with a known answer
(:func:`probe`), not assumed from the server's name; each report row says which rung produced it, and the user can
force one (a report's ``rung=…``, ``--rung``; :func:`stereoprobe.backends.choose`); a forced rung the endpoint lacks
is refused, never emulated.

* **exact** — log-probabilities of the prompt's tokens (legacy completions with ``echo`` and ``logprobs``): the same
  continuation scores as a local causal LM, through the same prompt templates (a completion request does not apply
  the chat template: a chat model's prompts are rendered first, by the server's ``/tokenize`` or the model's own
  tokenizer, and checked, :mod:`stereoprobe.served.chat_exact`). The continuation's tokens are cut by ``text_offset``
  at the character where the continuation starts, as the local scorer cuts them
  (:func:`stereoprobe.causal.continuation_tokens`, lm-evaluation-harness's whitespace rule). The probe checks the
  echo against generation: it asks the server for one greedy token after a prompt, then echoes prompt + that token
  and compares the two log-probabilities of the same token. A server that echoes log-probabilities shifted by one
  position (llama-cpp-python 0.3.36), for generated tokens only (llama.cpp's ``llama-server``,
  ggml-org/llama.cpp#27174), zeros, or none, fails the check and the rung is refused with one warning line —
  never a silent wrong score (lm-evaluation-harness's ``local-completions`` and ``gguf`` backends sum whatever
  comes back). Where the echo fails the check, the rung tries vLLM's ``prompt_logprobs`` extra parameter of
  completions (vllm/entrypoints/openai/completion/protocol.py, ``CompletionRequest.prompt_logprobs`` and
  ``CompletionResponseChoice.prompt_logprobs``; vllm/logprobs.py): asked with ``"prompt_logprobs": 0``, each
  choice carries a list with None for the first prompt token, then per prompt token one ``{token id: {"logprob",
  "rank", "decoded_token"}}`` holding that token alone. It gives no text offsets, so the tokens are placed on the
  prompt's characters by their ``decoded_token`` strings, which must spell the prompt after the first token (the
  first token is the rest, or nothing where the tokenizer added one leading space, as byte-level BPE's
  ``add_prefix_space`` and SentencePiece's dummy prefix do); a request whose pieces do not (byte pieces of a
  character) is refused, never guessed. The same probe compares it with generation, and
  :attr:`Capabilities.exact_via` says which source the rung reads. SGLang's OpenAI endpoints have no such field
  (python/sglang/srt/entrypoints/openai/protocol.py): they give prompt log-probabilities through echo only.
* **next-token** — a choice template's labels read from the first generated token's ``top_logprobs`` (chat
  completions, greedy, one token): P(label) is the summed probability of the returned tokens that are the label
  up to surrounding space (``"A"``, ``" A"``); the mass on the labels is reported; a label outside the returned
  top-k is bounded above by the smallest probability returned and flagged.
* **generated** — an answer generated (greedy, temperature 0, a seed) and parsed into an option, unknown (an
  abstention) or unparsed (:mod:`stereoprobe.served.parse`); the raw text is kept in the store beside it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from ..errors import StereoprobeWarning
from .client import Client, Unusable, ask_all
from .endpoint import Endpoint, EndpointError

from .. import prompting
#: The rungs, best first (:data:`stereoprobe.prompting.RUNGS`).
RUNGS = prompting.RUNGS
#: The probe's version: a changed probe is rerun even where an old result is stored.
PROBE_VERSION = 2
#: How far the echoed (or ``prompt_logprobs``) and the generated log-probability of the same token may differ
#: (nats). Measured: 0 on the reference server of the tests (same computation); llama.cpp's kernels differ between a
#: prompt batch and a one-token decode by far less; a shifted echo is off by nats (−11.6 against −0.046 for
#: " Berlin").
ECHO_TOLERANCE = 0.05
#: Where the exact rung reads prompt log-probabilities, in the order the probe tries them (module doc).
EXACT_SOURCES = ("echo", "prompt_logprobs")
#: Top alternatives asked of the next-token rung (the OpenAI API's maximum; servers with a lower cap get theirs).
TOP_LOGPROBS = 20
#: Seed sent with every request (servers that take one sample reproducibly).
SEED = 0
#: The probe's prompts: plain text whose next token any model predicts with some confidence.
PROBE_PROMPTS = ("The capital of France is", "One, two, three, four, five,")
#: The probe's chat question for the chat rungs.
PROBE_CHAT = "Which letter comes first in the alphabet?\nA. the letter A\nB. the letter B\nAnswer with the letter only."


@dataclass(frozen=True)
class Capabilities:
    """What an endpoint gives (:func:`probe`): per rung None (it does) or why not; ``top_k`` of the next-token
    rung; ``models`` the server lists; ``evidence`` what the exact rung's check compared; ``exact_via`` the source
    of the exact rung (one of :data:`EXACT_SOURCES`)."""

    exact: str | None
    next_token: str | None
    generated: str | None
    top_k: int = 0
    models: tuple = ()
    evidence: str = ""
    exact_via: str = "echo"

    def why_not(self, rung: str) -> str | None:
        return {"exact": self.exact, "next-token": self.next_token, "generated": self.generated}[rung]

    def rungs(self) -> list[str]:
        return [r for r in RUNGS if self.why_not(r) is None]


def completion_body(endpoint: Endpoint, prompt: str, *, max_tokens: int = 1, echo: bool = False,
                    logprobs: int | None = 1, prompt_logprobs: int | None = None, chat: bool = False) -> dict:
    """A completions request; ``chat``: ``prompt`` is a rendered chat template, tokenized without adding special
    tokens (``add_special_tokens``, vLLM's field; the template writes its own)."""
    body = {"model": endpoint.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "seed": SEED}
    if chat:
        body["add_special_tokens"] = False
    if echo:
        body["echo"] = True
    if logprobs is not None:
        body["logprobs"] = logprobs
    if prompt_logprobs is not None:
        body["prompt_logprobs"] = prompt_logprobs
    return body


def exact_body(endpoint: Endpoint, text: str, via: str, chat: bool = False) -> dict:
    """The completion request that gives the log-probabilities of ``text``'s tokens from source ``via`` (``chat``:
    ``text`` is a rendered chat template, :func:`completion_body`)."""
    if via == "echo":
        return completion_body(endpoint, text, echo=True, logprobs=1, chat=chat)
    return completion_body(endpoint, text, logprobs=None, prompt_logprobs=0, chat=chat)


#: Tokens a reply may take after its reasoning (a thinking budget adds the budget to it).
ANSWER_TOKENS = 64


def chat_body(endpoint: Endpoint, messages: list[dict], *, max_tokens: int, top_logprobs: int | None = None,
              temperature: float = 0.0, n: int = 1, thinking: bool | None = None) -> dict:
    """A chat-completions request; ``thinking`` (not None) switches a reasoning model's thinking through the chat
    template's ``enable_thinking``, sent as ``chat_template_kwargs`` (vLLM's, SGLang's and llama.cpp's server's
    field)."""
    body = {"model": endpoint.model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature,
            "seed": SEED}
    if thinking is not None:
        from ..causal import THINKING_ARG

        body["chat_template_kwargs"] = {THINKING_ARG: bool(thinking)}
    if n > 1:
        body["n"] = n
    if top_logprobs is not None:
        body.update(logprobs=True, top_logprobs=top_logprobs)
    return body


def first_choice(answer: dict) -> dict:
    """The first of an answer's ``choices`` (refused in one line where it has none)."""
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EndpointError(f"A server answered without choices ({str(answer)[:120]!r}); check that it speaks the "
                            "OpenAI protocol.")
    return choices[0]


def _token_table(answer: dict) -> tuple[list[str], list, list[int]] | None:
    """(tokens, token_logprobs, text_offset) of a completion's logprobs, or None when it has none."""
    lp = first_choice(answer).get("logprobs")
    if not isinstance(lp, dict) or not lp.get("tokens") or lp.get("token_logprobs") is None:
        return None
    tokens, values = list(lp["tokens"]), list(lp["token_logprobs"])
    offsets = list(lp.get("text_offset") or [])
    if len(offsets) != len(tokens):
        return None
    return tokens, values, offsets


def _prompt_table(answer: dict, text: str) -> tuple[tuple[list[str], list, list[int]] | None, str]:
    """(tokens, token_logprobs, text_offset) of ``text``'s tokens from vLLM's ``prompt_logprobs`` (module doc), or
    None and why not. The offsets come from the ``decoded_token`` strings, which must spell ``text`` after the first
    token (whose text and value are not given: it is the rest of ``text``), or ``" " + text`` where the tokenizer
    added a leading space (the first piece then starts at 0, the others one character earlier). A token decoded to
    nothing is refused: vLLM decodes a piece of a character to "" (``LogprobsProcessor._verify_tokens`` in
    vllm/v1/engine/logprobs.py), and its value would fall nowhere."""
    positions = first_choice(answer).get("prompt_logprobs")
    if not isinstance(positions, list) or not positions or positions[0] is not None:
        return None, "none came back"
    pieces, values = [], []
    for position in positions[1:]:
        entry = next(iter(position.values())) if isinstance(position, dict) and len(position) == 1 else None
        if not isinstance(entry, dict) or not isinstance(entry.get("decoded_token"), str):
            return None, "a position holds other than the prompt's own token with its decoded text"
        if not entry["decoded_token"]:
            return None, "a token decoded to nothing: a piece of a character"
        pieces.append(entry["decoded_token"])
        values.append(entry.get("logprob"))
    spelled = "".join(pieces)
    if text.endswith(spelled):
        at = len(text) - len(spelled)
    elif spelled == " " + text:
        at = -1
    else:
        return None, (f"their decoded tokens spell {spelled[-60:]!r}, not {text[-60:]!r}: pieces of characters, or a "
                      "changed text")
    offsets = []
    for piece in pieces:
        offsets.append(max(at, 0))
        at += len(piece)
    first = text[:offsets[0]] if offsets else text
    return ([first, *pieces], [None, *values], [0, *offsets]), ""


def continuation_logprob(answer: dict, prompt: str, full: str, via: str = "echo") -> float:
    """log P of the characters ``full[len(prompt):]`` from the answer to :func:`exact_body` for ``full`` (``via``
    one of :data:`EXACT_SOURCES`): the sum over the tokens that start at or after ``len(prompt)`` and before
    ``len(full)`` (generated tokens come after). A token across the boundary is refused as the local scorer refuses
    it."""
    if via == "echo":
        table = _token_table(answer)
        if table is None:
            raise EndpointError("An echoed completion came back without token log-probabilities; the exact rung needs "
                                "them (pass rung next-token or generated).")
    else:
        table, why = _prompt_table(answer, full)
        if table is None:
            raise EndpointError(f"The server's prompt_logprobs for {full[-40:]!r} are unusable ({why}); the exact "
                                "rung does not guess where its tokens fall (pass rung next-token or generated).")
    tokens, values, offsets = table
    n, end = len(prompt), len(full)
    total, seen = 0.0, False
    for i, (tok, value, start) in enumerate(zip(tokens, values, offsets)):
        stop = offsets[i + 1] if i + 1 < len(offsets) else start + len(tok)
        if start >= end:
            break
        if stop <= n or start == stop:
            continue
        if start < n:
            raise EndpointError(f"The server's tokenizer merges the end of the prompt {prompt[-30:]!r} with the "
                                f"continuation {full[n:]!r} into one token; end the prompt where a word ends.")
        if value is None:
            raise EndpointError("A completion has no log-probability for a continuation token; the exact rung "
                                "cannot use this server (pass rung next-token or generated).")
        total += float(value)
        seen = True
    if not seen:
        raise EndpointError(f"The completion holds no token of the continuation {full[n:]!r}; the server returns "
                            "log-probabilities for generated tokens only (pass rung next-token or generated).")
    return total


def _flaw(answer: dict, prompt: str, full: str, via: str) -> str:
    """What makes the answer to :func:`exact_body` for ``full`` (``prompt`` + a generated token) unusable to the
    probe, or ""."""
    if via == "prompt_logprobs":
        why = _prompt_table(answer, full)[1]
        return why and f"it gives no usable prompt_logprobs ({why})"
    table = _token_table(answer)
    if table is None:
        return "its echoed completions carry no log-probabilities"
    prompt_values = [v for v, o in zip(table[1], table[2]) if o < len(prompt)]
    if not prompt_values:
        return "it returns log-probabilities for generated tokens only, not for the prompt's"
    if all(v in (None, 0, 0.0) for v in prompt_values):
        return "it returns 0 for every prompt token"
    return ""


def _check_source(client: Client, journal, via: str) -> tuple[str | None, str]:
    """Why source ``via`` of the exact rung is not to be trusted (None: it is), and the evidence: on the first of
    :data:`PROBE_PROMPTS` with a clean token boundary, the log-probability it gives the token the server generates
    greedily after the prompt, against the one the server reports generating it."""
    ep = client.endpoint
    for prompt in PROBE_PROMPTS:
        try:
            (gen,) = ask_all(client, journal, [("completions", completion_body(ep, prompt, logprobs=1))],
                             progress=False)
        except Unusable:
            raise
        except EndpointError as e:
            return f"its completions endpoint refused a request ({e})", ""
        table = _token_table(gen)
        text = first_choice(gen).get("text")
        if table is None or not isinstance(text, str) or not text:
            return "it gives no log-probabilities of completions", ""
        generated, reported = text, table[1][-1]
        if not generated.strip() or reported is None:
            continue
        full = prompt + generated
        try:
            (answer,) = ask_all(client, journal, [("completions", exact_body(ep, full, via))], progress=False)
        except Unusable:
            raise
        except EndpointError as e:
            return f"it refuses {'echo with logprobs' if via == 'echo' else 'prompt_logprobs'} ({e})", ""
        flaw = _flaw(answer, prompt, full, via)
        if flaw:
            return flaw, ""
        try:
            value = continuation_logprob(answer, prompt, full, via)
        except EndpointError:
            continue  # the generated piece merged with the prompt: try the next prompt
        read = "echoed" if via == "echo" else "as prompt_logprobs"
        evidence = f"{generated!r} after {prompt!r}: {reported:.4f} generated, {value:.4f} {read}"
        if abs(value - float(reported)) > ECHO_TOLERANCE:
            what = "echoed prompt log-probabilities" if via == "echo" else "prompt_logprobs"
            return f"its {what} disagree with its own generation ({evidence}): shifted or wrong", evidence
        return None, evidence
    return "the probe found no clean token boundary to compare on", ""


def _check_exact(client: Client, journal) -> tuple[str | None, str, str]:
    """Why the exact rung is not to be trusted (None: it is), the evidence, and the source it reads: the first of
    :data:`EXACT_SOURCES` that passes :func:`_check_source`; where none does, every source's reason."""
    whys, evidence = [], []
    for via in EXACT_SOURCES:
        why, seen = _check_source(client, journal, via)
        evidence += [seen] if seen else []
        if why is None:
            return None, "; ".join(evidence), via
        whys.append(why)
    return ", and ".join(dict.fromkeys(whys)), "; ".join(evidence), EXACT_SOURCES[0]


def _check_chat(client: Client, journal) -> tuple[str | None, str | None, int]:
    ep = client.endpoint
    messages = [{"role": "user", "content": PROBE_CHAT}]
    top_k, why_next = 0, None
    for k in (TOP_LOGPROBS, 5):
        try:
            (answer,) = ask_all(client, journal, [("chat/completions", chat_body(ep, messages, max_tokens=1,
                                                                                   top_logprobs=k))], progress=False)
        except Unusable:
            raise
        except EndpointError as e:
            why_next = f"its chat completions refuse top_logprobs ({e})"
            continue
        content = (first_choice(answer).get("logprobs") or {}).get("content") or []
        tops = content[0].get("top_logprobs") if content and isinstance(content[0], dict) else None
        if tops:
            top_k, why_next = len(tops), None
        else:
            why_next = "its chat completions give no top_logprobs"
        break
    try:
        (answer,) = ask_all(client, journal, [("chat/completions", chat_body(ep, messages, max_tokens=8))],
                            progress=False)
        text = (first_choice(answer).get("message") or {}).get("content")
        why_gen = None if isinstance(text, str) else "its chat completions carry no message text"
    except Unusable:
        raise
    except EndpointError as e:
        why_gen = f"its chat completions refused a request ({e})"
    return why_next, why_gen, top_k


def probe(client: Client, journal) -> Capabilities:
    """What ``client``'s endpoint gives (module doc), the result kept in the journal beside the answers; a run asks
    it once per endpoint (:func:`stereoprobe.served.capabilities`). The model must be one the server lists (where
    it lists any)."""
    ep = client.endpoint

    async def list_models():
        async with client.http() as http:
            return await client.get(http, "models", tries=2)

    from .client import run_sync

    try:  # what it lists names the models in a model-not-found error (a server may also load others on demand)
        listed = run_sync(list_models)
        served = tuple(str(m.get("id")) for m in listed.get("data", []) if isinstance(m, dict))
    except Unusable:
        raise
    except EndpointError:
        served = ()
    client.served_models = served
    why_exact, evidence, via = _check_exact(client, journal)
    why_next, why_gen, top_k = _check_chat(client, journal)
    caps = Capabilities(why_exact, why_next, why_gen, top_k, served, evidence, via)
    journal.set_fact("probe", {"version": PROBE_VERSION, **asdict(caps)})
    if why_exact is not None and why_next is None or why_exact is not None and why_gen is None:
        warnings.warn(f"{ep.name}: no exact log-probabilities, because {why_exact}; it is read on the "
                      f"{caps.rungs()[0]} rung.", StereoprobeWarning, stacklevel=2)
    if not caps.rungs():
        raise EndpointError(f"{ep.name!r} gives none of the rungs: exact ({why_exact}), next-token ({why_next}), "
                            f"generated ({why_gen}); check the server.")
    return caps


# -- the rungs ---------------------------------------------------------------------------------------------------
def exact_logprobs(client: Client, journal, pairs: Sequence[tuple[str, str]], *, chat: bool = False,
                   via: str | None = None, **ask) -> np.ndarray:
    """log P of each continuation after its prompt (the exact rung), the prompt's trailing whitespace moved to the
    continuation as the local scorer moves it; read from the source the probe chose (:attr:`Capabilities.exact_via`:
    echo, or vLLM's prompt_logprobs). ``chat``: the prompts are rendered chat templates
    (:mod:`stereoprobe.served.chat_exact`); ``via``: that source, where the run's probe has found it already (None:
    probe the endpoint now)."""
    from ..causal import split_whitespace

    via = via or probe(client, journal).exact_via
    split = [split_whitespace(p, c) for p, c in pairs]
    requests = [("completions", exact_body(client.endpoint, p + c, via, chat)) for p, c in split]
    answers = ask_all(client, journal, requests, **ask)
    return np.array([continuation_logprob(a, p, p + c, via) for a, (p, c) in zip(answers, split)], dtype=np.float64)


def label_probabilities(client: Client, journal, messages: Sequence[list[dict]], labels: Sequence[str], top_k: int,
                        *, thinking: bool | None = None, **ask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The labels' probabilities as the first generated token (the next-token rung): (P [n, labels], the mass on
    the labels [n], whether some label was outside the returned top-k and got its bound [n]). ``thinking``: only
    False (or None), since a first token read after thinking would be the reasoning's."""
    if thinking:
        raise EndpointError("The next-token rung reads the first token of the answer, which with thinking on is the "
                            "reasoning's; ask thinking of the generated rung (rung generated).")
    requests = [("chat/completions", chat_body(client.endpoint, list(m), max_tokens=1, top_logprobs=top_k,
                                               thinking=thinking)) for m in messages]
    answers = ask_all(client, journal, requests, **ask)
    probs = np.zeros((len(answers), len(labels)))
    bounded = np.zeros(len(answers), dtype=bool)
    for i, answer in enumerate(answers):
        content = (first_choice(answer).get("logprobs") or {}).get("content") or []
        tops = content[0].get("top_logprobs") if content else None
        if not tops:
            raise EndpointError(f"{client.endpoint.name!r} answered a next-token request without top_logprobs; pass "
                                "rung generated.")
        floor = min(math.exp(t["logprob"]) for t in tops)
        for j, label in enumerate(labels):
            found = [math.exp(t["logprob"]) for t in tops if str(t.get("token", "")).strip() == label]
            if found:
                probs[i, j] = sum(found)
            else:
                probs[i, j], bounded[i] = floor, True
    return probs, probs.sum(axis=1), bounded


#: The fields of a chat answer's message where servers put the reasoning they parsed out of the content (vLLM before
#: 0.10 and llama.cpp's server: ``reasoning_content``; vLLM since: ``reasoning``).
REASONING_FIELDS = ("reasoning_content", "reasoning")


def generated_replies(client: Client, journal, messages: Sequence[list[dict]], *, max_tokens: int = ANSWER_TOKENS,
                      samples: int = 1, temperature: float | None = None, thinking: bool | None = None,
                      think_budget: int | None = None, **ask) -> list[list[tuple[str, str]]]:
    """The generated answers (the generated rung) as (content, reasoning) per sample: greedy when ``samples`` is 1,
    else ``samples`` at ``temperature`` (default 1.0) in one request each (``n``). ``thinking``: the reasoning
    model's switch (:func:`chat_body`); ``think_budget``: tokens the reasoning may take, the reply capped at
    ``think_budget + max_tokens`` (a reply cut inside its reasoning has no answer: the parse calls it unparsed). ``reasoning`` is
    the server's reasoning field (:data:`REASONING_FIELDS`), empty where it has none (a think block left in the
    content is removed by the parse)."""
    temp = (0.0 if samples == 1 else 1.0) if temperature is None else float(temperature)
    cap = max_tokens + (int(think_budget) if think_budget else 0)
    requests = [("chat/completions", chat_body(client.endpoint, list(m), max_tokens=cap, temperature=temp,
                                               n=samples, thinking=thinking)) for m in messages]
    answers = ask_all(client, journal, requests, **ask)
    out = []
    for answer in answers:
        replies = []
        for c in answer.get("choices") or []:
            message = c.get("message") or {}
            reasoning = next((str(message[f]) for f in REASONING_FIELDS if message.get(f)), "")
            replies.append((str(message.get("content") or ""), reasoning))
        if len(replies) < samples:
            raise EndpointError(f"{client.endpoint.name!r} returned {len(replies)} answers where {samples} were asked "
                                "(n); pass samples=1.")
        out.append(replies[:samples])
    return out


def generated_answers(client: Client, journal, messages: Sequence[list[dict]], *, max_tokens: int = ANSWER_TOKENS,
                      samples: int = 1, temperature: float | None = None, **ask) -> list[list[str]]:
    """The generated answers' content (the generated rung; :func:`generated_replies` without the reasoning)."""
    return [[content for content, _ in replies] for replies in
            generated_replies(client, journal, messages, max_tokens=max_tokens, samples=samples,
                              temperature=temperature, **ask)]
