"""Continuation log-probabilities from any causal (decoder-only) LM: exact, prefix-shared, gathered.

A request is a (prompt, continuation) pair of strings; its score is log P(continuation | prompt), the sum of the
log-probabilities of the continuation's tokens, each given the prompt and the continuation's tokens before it. That
is the ``loglikelihood`` request of lm-evaluation-harness (EleutherAI), whose ``acc`` takes the argmax of the sum
over a question's choices and ``acc_norm`` the argmax of the sum divided by the choice's length in characters;
:class:`ContinuationScores` returns both ingredients.

**The token boundary** (:func:`continuation_tokens`), one rule for every tokenizer kind: ``prompt + continuation``
is encoded as ONE string, with the special tokens the tokenizer adds itself (its BOS), and the continuation's tokens
are those whose character span (``return_offsets_mapping``) ends after the prompt. Whitespace at the end of the
prompt is moved into the continuation first, as lm-evaluation-harness does (its ``target_delimiter``, one space,
sits in front of the answer), so byte-level BPE (GPT-2, Llama 3, Qwen: ``Ġword``), SentencePiece (Llama 2, Mistral,
Gemma: ``▁word``, byte fallback ``<0x..>``) and tokenizers that trim offsets all give the tokens the model would read
in running text. A token that starts inside the prompt and ends inside the continuation (a merge across the
boundary, e.g. ``"("`` + ``"A)"``) makes the split ambiguous: it is refused, naming the prompt's end, the
continuation and the token, never silently moved. A tokenizer without character offsets (a Python-backend one) uses
lm-evaluation-harness's ``_encode_pair`` instead (encode the prompt alone; its tokens must be a prefix of the whole
string's), which gives the same tokens wherever the offsets rule applies (``tests/test_causal.py`` checks both on
every family) and refuses the same merges.

**Prefix sharing** (:class:`CausalScorer`): the requests' token sequences are sorted and inserted into a prefix
tree, cut into rows of at most ``row_tokens`` tree nodes; each row is ONE sequence of its tree's nodes in depth-first
order, where a token attends to itself and its ancestors only (a 4-D mask) and sits at its depth in the tree (its
position in its own sequence). This is the tree attention of speculative decoding (SpecInfer, Miao et al., ASPLOS
2024) used for scoring: a prompt shared by two subjects, a paragraph shared by a question and its negation, a chat
template's system preamble shared by every request in the row, each runs once, and every token's hidden state equals
that of one forward pass over its own sequence (to float rounding; the tests hold it to 1e-4 in fp32 for every
family against ``model(...).logits``). In depth-first order the nodes a token may attend to are exactly the ``j <=
i`` whose subtree ``[j, end_j)`` holds ``i``, so the mask is two comparisons. Sliding-window layers (Mistral, Phi-3,
Gemma 2/3's local layers) get the window applied to depths, with one mask per layer kind where the model mixes them.
A packed row cannot be read by layers other than (sliding) attention (recurrent or linear-attention layers) nor by
attention kernels without arbitrary masks (flash attention): the scorer then runs one sequence per request (right
padding, the model's own masks), as it does with ``share=False``. A row is no longer than the model's positions,
nor than a window some layer applies by a token's place in its row rather than through the mask (GPT-Neo's local
layers, :func:`row_window`): within such a window no token is cut off its ancestors. On first use per model the
scorer also checks that packed and separate passes agree on a probe built from token ids (so any tokenizer can run
it) that fills one row as long as a row can be, with a request whose last tokens sit a whole row from their
ancestors, and falls back, with one warning per process, when they do not.

**Logits only at scored positions, in fp32, a chunk at a time** (:mod:`stereoprobe.readout`): the decoder body runs on
every token; a forward hook on the body keeps only the hidden states at the positions that predict a continuation
token (each once, however many continuations it predicts), and the model's own head code turns them into logits
(``final_logit_softcapping`` of Gemma 2, a ``logit_scale``, …, whatever the family applies) with its weights and input
in fp32, at most :data:`stereoprobe.readout.HEAD_BYTES` of logits at a time: ``[batch, length, vocabulary]`` is never
materialised, a half-precision run's logits are not rounded before the log-softmax, and the head's memory stays bounded
when nearly every node is scored (SODAPOP's answer options).

How much faster than lm-evaluation-harness's loop, with how much memory, and how close: ``benchmarks/causal.py``
(the figures are in the book's *Rerunning at scale*).

Helpers a prompt-building layer needs: :func:`has_chat_template`, :func:`chat_prompt`, :func:`context_window`,
:func:`check_fits` and :func:`check_spellable`.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from .engine import ModelJob
from .errors import StereoprobeError, StereoprobeWarning

__all__ = ["CausalScorer", "ContinuationScores", "chat_prompt", "continuation_tokens", "generate",
           "has_thinking_switch"]

#: Attention implementations that accept an arbitrary 4-D mask (the packed rows need one).
_MASKABLE = ("eager", "sdpa")
#: Tree nodes per packed row when none is given, by where the weights are. Attention over a row costs its length
#: squared, beside the layers' cost per node: on a CPU short rows win (``benchmarks/causal.py``, SmolLM2-135M on
#: 2 cores alone: rows of 256 nodes score 1.3x as many requests per second as rows of 1,024, 512 nearly as many,
#: 2,048 fewer); a GPU's attention is cheap beside the extra prefixes that short rows repeat.
DEFAULT_ROW_TOKENS = {"cpu": 256, "accelerator": 1024}
#: Layer kinds a packed row can express (transformers' ``config.layer_types``).
_ATTENTION_KINDS = ("full_attention", "sliding_attention")


class Request(NamedTuple):
    """One ``loglikelihood`` request: score ``continuation`` after ``prompt``."""

    prompt: str
    continuation: str


@dataclass(frozen=True)
class Encoded:
    """A request as the model reads it: ``ids`` (the prompt's tokens, the continuation's from ``start`` on; nothing
    after the continuation's last token), the prompt without its trailing whitespace and the continuation with that
    whitespace in front (what :func:`split_whitespace` made of them)."""

    ids: tuple[int, ...]
    start: int
    prompt: str
    continuation: str

    @property
    def continuation_ids(self) -> tuple[int, ...]:
        """The scored tokens."""
        return self.ids[self.start:]


@dataclass(frozen=True)
class ContinuationScores:
    """Scores of requests, in request order.

    ``logprob``: log P(continuation | prompt), natural log, summed over its tokens (lm-evaluation-harness's
    ``acc`` compares these). ``tokens``: how many tokens were scored. ``chars``: the continuation's length in
    characters as scored, the whitespace moved from the prompt included, as lm-evaluation-harness counts it for
    ``acc_norm`` (:attr:`per_char`). ``greedy``: every continuation token was the model's most likely next token
    (lm-evaluation-harness's ``is_greedy``). ``token_logprobs``/``token_ids``: per request, the values and ids of its
    tokens (with ``per_token=True``).
    """

    logprob: np.ndarray
    tokens: np.ndarray
    chars: np.ndarray
    greedy: np.ndarray
    token_logprobs: tuple[np.ndarray, ...] | None = None
    token_ids: tuple[tuple[int, ...], ...] | None = None

    def __len__(self) -> int:
        return len(self.logprob)

    @property
    def per_char(self) -> np.ndarray:
        """``logprob / chars``: the score lm-evaluation-harness's ``acc_norm`` compares."""
        return self.logprob / np.maximum(self.chars, 1)


# -- the token boundary -------------------------------------------------------------------------------------------
def split_whitespace(prompt: str, continuation: str) -> tuple[str, str]:
    """Move the prompt's trailing whitespace to the front of the continuation (lm-evaluation-harness's rule).

    >>> split_whitespace("Who was a nurse? Answer: ", "Mary")
    ('Who was a nurse? Answer:', ' Mary')
    >>> split_whitespace("Q: yes or no?", " yes")
    ('Q: yes or no?', ' yes')
    """
    _check_text(prompt, continuation)
    stripped = prompt.rstrip()
    return stripped, prompt[len(stripped):] + continuation


def _check_text(prompt: Any, continuation: Any) -> None:
    if not isinstance(prompt, str) or not isinstance(continuation, str):
        raise StereoprobeError(f"A request is a (prompt, continuation) pair of strings, not ({type(prompt).__name__}, "
                               f"{type(continuation).__name__}); pass e.g. ('Who was the nurse? Answer:', ' Mary').")
    if not continuation:
        raise StereoprobeError(f"The continuation {continuation!r} after the prompt {_short(prompt)!r} is empty, so "
                               "there is nothing to score; pass the answer text, e.g. ' Mary'.")


def _short(text: str, n: int = 40) -> str:
    return text if len(text) <= n else "…" + text[-n:]


def _name(tokenizer) -> str:
    return str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)


def has_offsets(tokenizer) -> bool:
    """Whether ``tokenizer`` gives character offsets (a fast, ``tokenizers``-backed one)."""
    return bool(getattr(tokenizer, "is_fast", False))


def continuation_tokens(tokenizer, prompt: str, continuation: str, *, offsets: bool | None = None) -> Encoded:
    """The tokens the model reads for ``prompt + continuation`` and where the continuation's begin (module doc).

    ``offsets``: split by character offsets (default where the tokenizer has them) or, with False, by
    lm-evaluation-harness's ``_encode_pair`` (the prompt encoded alone is a prefix of the whole). Raises
    :class:`StereoprobeError` for an empty continuation, a token across the boundary, a continuation the
    tokenizer spells with its unknown token, and an empty prompt with a tokenizer that adds no BOS (nothing would
    predict the first token).
    """
    return encode_requests(tokenizer, [(prompt, continuation)], offsets=offsets)[0]


def encode_requests(tokenizer, requests: Iterable[tuple[str, str]], *, offsets: bool | None = None) -> list[Encoded]:
    """:func:`continuation_tokens` of many requests (one batched call of the tokenizer)."""
    pairs = [split_whitespace(*_pair(r)) for r in requests]
    if not pairs:
        return []
    use_offsets = has_offsets(tokenizer) if offsets is None else bool(offsets)
    if use_offsets and not has_offsets(tokenizer):
        raise StereoprobeError(f"The tokenizer {_name(tokenizer)!r} gives no character offsets; pass offsets=None "
                               "(or False) to split by encoding the prompt alone.")
    texts = [p + c for p, c in pairs]
    if use_offsets:
        enc = tokenizer(texts, add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
        out = [_split_by_offsets(tokenizer, p, c, ids, offs, special) for (p, c), ids, offs, special in
               zip(pairs, enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"])]
    else:
        out = [_split_by_prefix(tokenizer, p, c) for p, c in pairs]
    unk = getattr(tokenizer, "unk_token_id", None)
    for e in out:
        if unk is not None and unk in e.continuation_ids:
            raise StereoprobeError(
                f"The tokenizer {_name(tokenizer)!r} spells the continuation {e.continuation!r} with its unknown token "
                f"{tokenizer.unk_token!r}, so its probability is that of any unknown text; use words its vocabulary "
                "covers (or a model whose tokenizer falls back to bytes).")
    return out


def _pair(request) -> tuple[str, str]:
    try:
        prompt, continuation = request
    except (TypeError, ValueError):
        raise StereoprobeError(f"A request is a (prompt, continuation) pair of strings, not {request!r}; pass e.g. "
                               "('Who was the nurse? Answer:', ' Mary').") from None
    return prompt, continuation


def _split_by_offsets(tokenizer, prompt: str, continuation: str, ids, offs, special) -> Encoded:
    n = len(prompt)
    # tokens the post-processor added (BOS, an appended EOS) have no characters: never continuation tokens
    scored = [i for i, ((s, e), sp) in enumerate(zip(offs, special)) if e > n and not (sp and s == e)]
    if not scored:
        raise StereoprobeError(f"The continuation {continuation!r} gives no tokens after the prompt {_short(prompt)!r} "
                               f"with the tokenizer {_name(tokenizer)!r}; pass text it encodes.")
    first, last = scored[0], scored[-1]
    if offs[first][0] < n:  # starts in the prompt, ends in the continuation
        _straddle(tokenizer, prompt, continuation, (prompt + continuation)[offs[first][0]:offs[first][1]])
    if scored != list(range(first, last + 1)):  # a character-less token inside the continuation
        raise StereoprobeError(f"The tokenizer {_name(tokenizer)!r} puts a token without characters inside the "
                               f"continuation {continuation!r}; pass text without special tokens.")
    return _finish(tokenizer, prompt, continuation, list(ids[:last + 1]), first, special)


def _straddle(tokenizer, prompt: str, continuation: str, piece: str | None = None):
    what = f"one token ({piece!r})" if piece else "one token"
    raise StereoprobeError(
        f"The tokenizer {_name(tokenizer)!r} merges the end of the prompt {_short(prompt)!r} with the continuation "
        f"{continuation!r} into {what}, so the continuation has no tokens of its own; end the prompt where a word "
        "ends (e.g. with a colon, the continuation starting with a space).")


def _split_by_prefix(tokenizer, prompt: str, continuation: str) -> Encoded:
    lead, whole = _encode_plain(tokenizer, prompt + continuation)
    _, head = _encode_plain(tokenizer, prompt) if prompt else ([], [])
    if whole[:len(head)] != head:
        _straddle(tokenizer, prompt, continuation)
    if len(whole) == len(head):
        raise StereoprobeError(f"The continuation {continuation!r} gives no tokens after the prompt {_short(prompt)!r} "
                               f"with the tokenizer {_name(tokenizer)!r}; pass text it encodes.")
    special = [1] * len(lead) + [0] * len(whole)
    return _finish(tokenizer, prompt, continuation, lead + whole, len(lead) + len(head), special)


def _encode_plain(tokenizer, text: str) -> tuple[list[int], list[int]]:
    """(the special tokens the tokenizer puts in front, the text's own tokens)."""
    full = list(tokenizer(text, add_special_tokens=True)["input_ids"])
    plain = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    for k in range(len(full) - len(plain) + 1):
        if full[k:k + len(plain)] == plain:
            return full[:k], plain
    return [], plain


def _finish(tokenizer, prompt, continuation, ids: list[int], start: int, special) -> Encoded:
    bos, bos_token = getattr(tokenizer, "bos_token_id", None), getattr(tokenizer, "bos_token", None)
    # a chat template that writes the BOS itself ("<|begin_of_text|>…") and a tokenizer that adds one: read it once
    if (bos is not None and len(ids) > 2 and start > 1 and ids[0] == ids[1] == bos and special[0] and bos_token
            and prompt.startswith(bos_token)):
        ids, start = ids[1:], start - 1
    if start == 0:
        raise StereoprobeError(
            f"The prompt before the continuation {continuation!r} is empty and the tokenizer {_name(tokenizer)!r} "
            "adds no BOS token, so nothing predicts the continuation's first token; pass a non-empty prompt.")
    return Encoded(tuple(int(i) for i in ids), start, prompt, continuation)


def check_spellable(tokenizer, word: str, *, prompt: str = "The answer is") -> None:
    """Raise :class:`StereoprobeError` naming ``word`` when the tokenizer spells it (after ``prompt`` and a space)
    with its unknown token, or merges it into the prompt.

    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import PreTrainedTokenizerFast
    >>> words = Tokenizer(models.WordLevel({"<unk>": 0, "The": 1, "answer": 2, "is": 3, "Mary": 4}, unk_token="<unk>"))
    >>> words.pre_tokenizer = pre_tokenizers.Whitespace()
    >>> tok = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>")
    >>> check_spellable(tok, "Mary")
    >>> check_spellable(tok, "Gerald")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stereoprobe.errors.StereoprobeError: The tokenizer '...' spells the continuation ' Gerald' with its unknown token '<unk>', so its probability is that of any unknown text; use words its vocabulary covers (or a model whose tokenizer falls back to bytes).
    """
    continuation_tokens(tokenizer, prompt, " " + word)


# -- chat templates and the context window ------------------------------------------------------------------------
def has_chat_template(tokenizer) -> bool:
    """Whether ``tokenizer`` carries a chat template (an instruct/chat model's)."""
    return bool(getattr(tokenizer, "chat_template", None))


#: The chat-template argument that switches a reasoning model's thinking on or off (Qwen3's, SmolLM3's, DeepSeek's
#: templates; vLLM passes it through ``chat_template_kwargs``).
THINKING_ARG = "enable_thinking"


def has_thinking_switch(tokenizer) -> bool:
    """Whether the tokenizer's chat template reads :data:`THINKING_ARG`."""
    template = getattr(tokenizer, "chat_template", None)
    texts = template.values() if isinstance(template, dict) else [template or ""]
    return any(THINKING_ARG in str(t) for t in texts)


def chat_prompt(tokenizer, user_text: str, assistant_prefix: str = "", *, system: str | None = None,
                thinking: bool | None = None) -> str:
    """The text a chat model reads before its answer: the user's turn (after ``system``'s, if given) through the
    chat template with ``add_generation_prompt=True``, then ``assistant_prefix`` (e.g. ``"Answer:"``) as the start of
    the assistant's turn. Score answers as continuations of it; the template's own special tokens are in the text,
    and a BOS it writes is read once (:func:`continuation_tokens`). Where the template ends the prompt with a newline
    and there is no prefix, that newline moves into the continuation (:func:`split_whitespace`) and is scored with
    it, the same token before every option, as in lm-evaluation-harness. ``thinking``: the template's
    :data:`THINKING_ARG` (None: its default; True or False only for a template that has the switch).
    """
    if not has_chat_template(tokenizer):
        raise StereoprobeError(f"The tokenizer {_name(tokenizer)!r} has no chat template; score plain prompts with it "
                               "(a base model), or load the chat model's own tokenizer.")
    if not isinstance(user_text, str) or not isinstance(assistant_prefix, str):
        raise StereoprobeError(f"chat_prompt takes the user's text and the assistant prefix as strings, not "
                               f"{type(user_text).__name__} and {type(assistant_prefix).__name__}.")
    extra = {}
    if thinking is not None:
        if not has_thinking_switch(tokenizer):
            raise StereoprobeError(f"The chat template of {_name(tokenizer)!r} has no {THINKING_ARG} switch, so "
                                   f"thinking={thinking} cannot be asked of it; leave thinking out for this model.")
        extra[THINKING_ARG] = bool(thinking)
    messages = ([{"role": "system", "content": system}] if system is not None else [])
    messages.append({"role": "user", "content": user_text})
    try:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **extra)
    except Exception as err:  # only the template's own refusals (jinja2's TemplateError) are reworded
        if not type(err).__module__.startswith("jinja2"):
            raise
        raise StereoprobeError(f"The chat template of {_name(tokenizer)!r} refuses these messages ("
                               f"{str(err).splitlines()[0] if str(err) else type(err).__name__}); "
                               f"{'leave out the system text' if system is not None else 'pass a user text'}.") from None
    return text + assistant_prefix


#: Config keys of the longest sequence a model was built for, looked for in this order (MPT's is ``max_seq_len``).
WINDOW_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx", "max_seq_len")
#: Config keys that cap a sequence below that: xLSTM's ``max_inference_chunksize`` (a longer sequence fails in its
#: inference mode).
CAP_KEYS = ("max_inference_chunksize",)


def context_limit(model) -> tuple[int, str] | None:
    """(the longest sequence ``model`` (or its config) reads, in tokens; the config key that says so), None when its
    config says nothing.

    >>> import transformers
    >>> context_limit(transformers.MptConfig(max_seq_len=64)), context_limit(transformers.GPT2Config())
    ((64, 'max_seq_len'), (1024, 'max_position_embeddings'))
    """
    config = getattr(model, "config", model)
    if hasattr(config, "get_text_config"):
        config = config.get_text_config()
    def given(keys):
        return [(v, k) for k in keys if isinstance(v := getattr(config, k, None), int) and not isinstance(v, bool)
                and v > 0]

    found = given(WINDOW_KEYS)[:1] + given(CAP_KEYS)
    return min(found) if found else None


def context_window(model) -> int | None:
    """The longest sequence ``model`` (or its config) reads, in tokens (:func:`context_limit`); None when its config
    says nothing."""
    limit = context_limit(model)
    return limit[0] if limit else None


def check_fits(model, tokenizer, prompt: str, continuation: str = "") -> int:
    """The number of tokens of ``prompt + continuation``; :class:`StereoprobeError` naming that length, the
    model's context window and the prompt when it does not fit."""
    n = len(tokenizer(prompt + continuation, add_special_tokens=True)["input_ids"])
    _check_length(n, context_limit(model), prompt)
    return n


def _check_length(n: int, limit: tuple[int, str] | None, prompt: str) -> None:
    if limit is not None and n > limit[0]:
        fix = ("shorten the prompt" if limit[1] not in CAP_KEYS
               else f"shorten the prompt or raise {limit[1]} in the model's config")
        raise StereoprobeError(f"The prompt {prompt[:40]!r}… is {n:,} tokens with its continuation, more than the "
                               f"model's context window of {limit[0]:,} tokens ({limit[1]} in its config); {fix}.")


def resolve_chat(tokenizer, chat: bool | None, model: str) -> bool:
    """Whether prompts go through the chat template: ``chat`` as asked (True needs one), else whether it has one."""
    has = has_chat_template(tokenizer)
    if chat is None:
        return has
    if chat and not has:
        raise StereoprobeError(f"--chat was asked for, but the tokenizer of {model!r} has no chat template; pass "
                               "--no-chat (a plain prompt), or the chat model's own tokenizer.")
    return bool(chat)


def prepare_run(model: str, chat: bool | None, options) -> tuple[Any, str, bool, str, str]:
    """What a probe's causal store run needs before any weight loads: (tokenizer, the model's fingerprint, the chat
    setting, the workers' device, the dtype name). The tokenizer and fingerprint come from the model's files, fetched
    first when they are not local (:func:`stereoprobe.models.fetch`); no weights load here, so a GPU a worker will
    use stays free."""
    from .engine import worker_device
    from .errors import ModelLoadError
    from .models import load_tokenizer, model_fingerprint

    dev = worker_device(options.device, options.engine)
    dtype = options.dtype()
    model_fp = model_fingerprint(model, smoke=options.smoke)
    tok = load_tokenizer(model, smoke=options.smoke)
    if tok is None:
        raise ModelLoadError(f"The tokenizer of {model!r} does not load from its files; save the tokenizer of the "
                             "model it was fine-tuned from into its folder (`tokenizer.save_pretrained(folder)`).")
    return tok, model_fp, resolve_chat(tok, chat, model), dev, dtype


# -- loading once per process ---------------------------------------------------------------------------------------
#: The causal LMs loaded last in this process, oldest first: a report scores one model through several prompt
#: templates, each a store run of its own, and a chapter goes back to its chat model after the lab models, so each is
#: loaded once. Models stay while their weights together take at most :data:`KEEP_BYTES`; the newest always stays.
_RECENT: dict = {}
#: The weight bytes the models :func:`scorer_for` keeps may take together (1 GiB: small models such as SmolLM2 and
#: the lab's stay together; a 7B model, over it alone, replaces whatever was there and stays as the newest).
KEEP_BYTES = 1 << 30


def _weight_bytes(loaded) -> int:
    return sum(p.numel() * p.element_size() for p in loaded.model.parameters())


def scorer_for(name: str, *, device: str = "auto", smoke: bool = False, batch_tokens: int | None = None,
               precision: str = "auto") -> "CausalScorer":
    """A :class:`CausalScorer` of the causal LM ``name`` (:func:`stereoprobe.models.load`, head ``causal``, its
    weights in ``precision``); the loaded model is kept for the next call with the same name, files, device,
    precision and smoke setting, beside the other recently loaded ones while they fit in :data:`KEEP_BYTES` (the
    oldest are dropped first)."""
    from . import models
    from .batching import resolve_precision

    dtype = resolve_precision(device, precision)
    key = (str(getattr(name, "name", name)), str(device), str(dtype), bool(smoke),  # a name or its ModelRef: one key
           models.fingerprint_path(models.resolve(name, smoke=smoke)))
    if key in _RECENT:
        _RECENT[key] = _RECENT.pop(key)  # the newest now
    else:
        _RECENT[key] = models.load(name, "causal", device=device, smoke=smoke, precision=precision)
        while len(_RECENT) > 1 and sum(map(_weight_bytes, _RECENT.values())) > KEEP_BYTES:
            del _RECENT[next(iter(_RECENT))]
    return CausalScorer(_RECENT[key], batch_tokens=batch_tokens, precision=precision)


def _left_padded(model, tokenizer, prompts: Sequence[str], batch_size: int | None, batch_tokens: int | None,
                 progress: bool, desc: str):
    """``prompts`` in batches, longest first: (the prompts' indices, input ids left-padded, attention mask); texts
    that already hold the chat template's tokens, so no special tokens are added. ``batch_size`` prompts per batch
    where given, else as many as ``batch_tokens`` padded prompt tokens hold (default: the library's, by device,
    :func:`stereoprobe.batching.batch_tokens_for`). The batching of :func:`generate` and
    :func:`first_token_logprobs`."""
    import torch

    from .batching import batch_tokens_for, progress as bar, token_budget_batches

    tok = tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    lengths = [len(x) for x in ids]
    if batch_size is not None:
        batches = list(token_budget_batches(lengths, max(lengths, default=1) * batch_size, max_batch=batch_size))
    else:
        batches = list(token_budget_batches(lengths, batch_tokens_for(model, batch_tokens)))
    device = next(model.parameters()).device
    for batch in bar(batches, total=len(batches), desc=desc, disable=not progress):
        batch = batch.tolist()
        width = max(lengths[i] for i in batch)
        input_ids = torch.tensor([[pad] * (width - lengths[i]) + ids[i] for i in batch], device=device)
        mask = torch.tensor([[0] * (width - lengths[i]) + [1] * lengths[i] for i in batch], device=device)
        yield batch, input_ids, mask


def generate(model, tokenizer, prompts: Sequence[str], *, max_new_tokens: int, batch_size: int | None = None,
             batch_tokens: int | None = None, progress: bool = False, desc: str = "generating", samples: int = 1,
             temperature: float = 0.0, seed: int = 0) -> list[list[str]] | list[str]:
    """Continuations of ``prompts`` (texts that already hold the chat template's tokens: no special tokens are
    added), up to ``max_new_tokens`` or the tokenizer's end-of-sequence token, decoded without special tokens; batched
    with left padding, longest prompts first (``batch_size`` prompts, else a cohort of as many as
    :data:`COHORT_PASSES` × ``batch_tokens`` padded prompt tokens hold, its prompts read in passes of ``batch_tokens``
    and its replies decoded together). Greedy with ``samples`` 1 and ``temperature`` 0 (a list of texts), else
    ``samples`` sampled continuations per prompt at ``temperature`` (default 1.0; no top-k or top-p) (a list of
    lists). The local counterpart of a server's chat completion (:class:`stereoprobe.backends.Local`).

    One decoding loop over a key-value cache, as ``model.generate`` runs it, except that finished replies leave the
    batch (their rows of the cache dropped once they are :data:`DROP_SHARE` of it): a batch costs about the tokens
    its replies hold, not its size times its longest reply. Tokens that prompts share are read once (the chat
    template's preamble; an example's context before its two questions: :func:`_prefill`), the rest of a cohort's
    prompts in passes the size a scoring pass has (on a CPU a small pass is fastest,
    :data:`stereoprobe.batching.DEFAULT_BATCH_TOKENS`), their caches joined into one with room for the replies
    (written in place, :func:`_roomy_layer`), and the cohort decoded in one loop: a decoding step costs about as much
    for a few rows as for many until the arithmetic dominates, so one cohort takes the steps of its longest reply
    once, not once per pass. Greedy replies equal one-prompt-at-a-time
    ones up to float noise at near-ties (a test). Each sampled reply draws from its own generator, seeded by ``seed``,
    the sample's number and the prompt's text, so a prompt's samples are the same whatever batch, order or company it
    is generated in."""
    import hashlib

    import torch

    tok = tokenizer
    sampled = samples > 1 or temperature > 0
    k = samples if sampled else 1
    temp = float(temperature or 1.0)
    out: list = [None] * len(prompts)
    passes = None
    if batch_size is None:
        from .batching import batch_tokens_for

        passes = max(1, batch_tokens_for(model, batch_tokens) // k)  # a prompt's k samples are k rows of its pass
    cohort = None if passes is None else passes * COHORT_PASSES
    for batch, input_ids, mask in _left_padded(model, tok, prompts, batch_size, cohort, progress, desc):
        if k > 1:
            input_ids, mask = input_ids.repeat_interleave(k, 0), mask.repeat_interleave(k, 0)
        gens = None
        if sampled:
            gens = []
            for i in batch:
                for j in range(k):
                    key = hashlib.sha256(f"{seed}\0{j}\0{prompts[i]}".encode()).digest()
                    gens.append(torch.Generator(device=input_ids.device).manual_seed(
                        int.from_bytes(key[:8], "little") & (2**63 - 1)))
        replies = _decode_batch(model, input_ids, mask, max_new_tokens, tok.eos_token_id, temp, gens,
                                None if passes is None else passes * k)
        texts = [tok.decode(row, skip_special_tokens=True) for row in replies]
        for j, i in enumerate(batch):
            out[i] = texts[j * k:(j + 1) * k] if sampled else texts[j]
    return out


def _decode_batch(model, input_ids, mask, max_new_tokens: int, eos: int | None, temperature: float,
                  generators: list | None, pass_tokens: int | None = None) -> list[list[int]]:
    """The new tokens of every row of one left-padded batch (eos included where it came): greedy where
    ``generators`` is None, else sampled at ``temperature`` (the Gumbel-max draw over the row's own generator: the
    same distribution as softmax sampling). The prompts are read by :func:`_prefill` (in passes of at most
    ``pass_tokens`` tokens; None: one pass) into a cache with room for the replies. A row that writes ``eos`` is
    done: nothing after it is kept, and the done rows leave the batch (their cache rows dropped, which copies the
    whole cache) once they are :data:`DROP_SHARE` of it."""
    import torch

    tokens: list[list[int]] = [[] for _ in range(input_ids.shape[0])]
    with torch.no_grad():
        cache, logits, mask, live = _prefill(model, input_ids, mask, pass_tokens, max_new_tokens)
        done = torch.zeros(len(live), dtype=torch.bool, device=logits.device)
        for step in range(max_new_tokens):
            if generators is None:
                chosen = logits.argmax(-1)
            else:  # a done row draws nothing from its generator
                noise = torch.stack([logits.new_full((logits.shape[1],), 0.5) if d else
                                     torch.rand(logits.shape[1], generator=generators[r], device=logits.device)
                                     for r, d in zip(live, done.tolist())])
                chosen = (logits / temperature - torch.log(-torch.log(noise.clamp_min(1e-20)))).argmax(-1)
            for r, t, d in zip(live, chosen.tolist(), done.tolist()):
                if not d:
                    tokens[r].append(t)
            if eos is not None:
                done |= chosen == eos
            if step == max_new_tokens - 1 or done.all():
                break
            if done.sum() >= DROP_SHARE * len(live):
                idx = (~done).nonzero().squeeze(1)
                cache.batch_select_indices(idx)
                live, mask, chosen, done = [live[i] for i in idx.tolist()], mask[idx], chosen[idx], done[idx]
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
            logits = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=mask.sum(-1, keepdim=True) - 1,
                           past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1].float()
    return tokens


#: The done rows of a decoding batch leave it (:func:`_decode_batch`) once they are this share of its rows: dropping
#: copies the whole cache, while a done row that stays costs one row of each step's arithmetic.
DROP_SHARE = 0.125


#: A generation cohort holds up to this many scoring passes' worth of padded prompt tokens (:func:`generate`): its
#: key-value cache then holds about as many tokens, plus the replies'. Measured on 2 CPU cores (benchmarks/
#: generation.py): 64 SmolLM2 chat prompts in one cohort instead of three passes took 40 decoding steps, not 101.
COHORT_PASSES = 8


def _prefill(model, input_ids, mask, pass_tokens: int | None, room: int = 0):
    """Read the prompts of a left-padded batch into a new key-value cache with room for ``room`` more tokens a row
    (:func:`_roomy_layer`): (the cache, the logits of every row's next token, the mask of the whole, the batch's row
    each row of these is). Tokens that rows share run once (:func:`_prefix_groups`): those every row begins with
    (a chat template's preamble), then those each group of rows begins with after them (an example's context, asked
    two questions), all groups' in one pass from copies of the preamble's cache; the rest of each prompt, longest
    first, in passes of as many rows as ``pass_tokens`` hold (None: one pass), each from its rows' groups' caches;
    the passes' caches then joined row by row. Not the scorer's prefix tree (:class:`CausalScorer`): decoding needs
    each prompt's cache as one row, and a packed row's 4-D mask makes every token attend over the whole row, where
    here a row holds its prompt and a few masked slots. A model with sliding-window layers is read with the preamble
    shared only, and its layers joined as transformers joins them."""
    import copy

    import torch
    from transformers import DynamicCache

    from .batching import token_budget_batches

    device, n = input_ids.device, input_ids.shape[0]
    rows = [input_ids[i, s:].tolist() for i, s in enumerate((mask.shape[1] - mask.sum(-1)).tolist())]
    base, roomy = DynamicCache(config=model.config), _roomy_layer()
    plain = all(type(layer) is roomy.__base__ for layer in base.layers)  # else (sliding windows) one level
    shared, groups = _prefix_groups(rows)
    groups = groups if plain else []
    if shared:
        model(input_ids=torch.tensor([rows[0][:shared]], device=device), past_key_values=base, use_cache=True,
              logits_to_keep=1)
    width = max((g for _, g in groups), default=0)
    own, group_of = [0] * n, [len(groups)] * n  # the last group: none (its tokens masked)
    for j, (members, g) in enumerate(groups):
        for r in members:
            own[r], group_of[r] = g, j
    seg_mask = torch.tensor([[0] * (width - g) + [1] * g for _, g in groups] + [[0] * width], device=device,
                            dtype=mask.dtype)  # an empty list would make it float, and the positions with it
    heads = _group_heads(model, base, rows, shared, groups, seg_mask, pass_tokens) if groups else None
    rest = [r[shared + own[i]:] for i, r in enumerate(rows)]
    lengths = [len(r) for r in rest]
    tail = max(lengths)
    order, caches, logits, masks = [], [], [], []
    for batch in token_budget_batches(lengths, pass_tokens or n * tail):
        batch = batch.tolist()
        w = max(lengths[i] for i in batch) if plain else tail  # joined below with the gap masked
        part = DynamicCache(config=model.config)
        if heads:
            at = torch.tensor([group_of[i] for i in batch], device=device)
            for i, (k, v) in enumerate(heads):
                part.update(k[at], v[at], i)
        elif shared:
            part = copy.deepcopy(base)
            part.batch_repeat_interleave(len(batch))
        ids = torch.tensor([[0] * (w - lengths[i]) + rest[i] for i in batch], device=device)
        m = torch.cat([seg_mask.new_ones(len(batch), shared), seg_mask[[group_of[i] for i in batch]],
                       seg_mask.new_tensor([[0] * (w - lengths[i]) + [1] * lengths[i] for i in batch])], 1)
        logits.append(model(input_ids=ids, attention_mask=m, position_ids=(m.cumsum(-1) - 1).clamp(min=0)[:, -w:],
                            past_key_values=part, use_cache=True, logits_to_keep=1).logits[:, -1].float())
        gap = tail - w  # masked slots that line this pass's rows up with the longest
        masks.append(torch.cat([m[:, :m.shape[1] - w], m.new_zeros(len(batch), gap), m[:, m.shape[1] - w:]], 1))
        caches.append((part, gap))
        order += batch
    cache = DynamicCache(config=model.config)
    for i in range(len(cache.layers)):
        keys = torch.cat([_gapped(c.layers[i].keys, gap, shared + width) for c, gap in caches])
        values = torch.cat([_gapped(c.layers[i].values, gap, shared + width) for c, gap in caches])
        if plain:
            cache.layers[i] = roomy(keys, values, room)
        else:
            cache.update(keys, values, i)
    return cache, torch.cat(logits), torch.cat(masks), order


def _group_heads(model, base, rows: list[list[int]], shared: int, groups: list, seg_mask,
                 pass_tokens: int | None) -> list:
    """Each group's own shared tokens (:func:`_prefix_groups`) read once, from copies of ``base`` (the cache of the
    ``shared`` tokens every row begins with), in passes of as many groups as ``pass_tokens`` hold, longest first,
    each as wide as its longest group, then lined up (masked slots) left-padded as ``seg_mask`` says: per layer,
    (keys, values) of each group, then of a row in no group (the shared tokens', then masked slots)."""
    import copy

    import torch

    from .batching import token_budget_batches

    device, width, lengths = seg_mask.device, seg_mask.shape[1], [g for _, g in groups]
    done, order = [], []
    for batch in token_budget_batches(lengths, pass_tokens or len(groups) * width):
        batch = batch.tolist()
        w = max(lengths[j] for j in batch)
        head = copy.deepcopy(base)
        if shared:
            head.batch_repeat_interleave(len(batch))
        ids = torch.tensor([[0] * (w - lengths[j]) + rows[groups[j][0][0]][shared:shared + lengths[j]]
                            for j in batch], device=device)
        mask = torch.cat([seg_mask.new_ones(len(batch), shared), seg_mask[batch, width - w:]], dim=1)
        model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0)[:, shared:],
              past_key_values=head, use_cache=True, logits_to_keep=1)
        done.append((head, width - w))
        order += batch
    back = torch.tensor(order, device=device).argsort()  # the groups' order again
    heads = []
    for i, layer in enumerate(base.layers):
        kv = []
        for x in ("keys", "values"):
            part = torch.cat([_gapped(getattr(head.layers[i], x), gap, shared) for head, gap in done])[back]
            none = part.new_zeros(1, part.shape[1], width, part.shape[-1])  # a row in no group: masked slots
            kv.append(torch.cat([part, torch.cat([getattr(layer, x), none], -2) if shared else none]))
        heads.append(tuple(kv))
    return heads


def _gapped(x, gap: int, at: int):
    """``x`` (keys or values: batch, heads, tokens, dimension) with ``gap`` masked (zero) slots inserted before
    token ``at``: rows of a narrower pass lined up with a wider one's."""
    import torch

    return x if not gap else torch.cat([x[:, :, :at], x.new_zeros(*x.shape[:2], gap, x.shape[-1]), x[:, :, at:]], -2)


#: Rows that begin with at least this many more of the same tokens than every row does share them (:func:`_prefill`,
#: :func:`_prefix_groups`); fewer are not worth the masked slots a group's tokens add to the other rows.
GROUP_TOKENS = 8


def _prefix_groups(rows: list[list[int]]) -> tuple[int, list[tuple[list[int], int]]]:
    """The tokens every one of ``rows`` (token ids) begins with, as a count, at most all but the shortest's last;
    and the groups of rows that begin with at least :data:`GROUP_TOKENS` more of the same tokens after them:
    (the rows, how many more), each row keeping at least its last token, chosen to save the most tokens. A group is
    a run of neighbours in the rows' sorted order (a row belongs to one group at most) and saves its size less one
    times its tokens, so the best runs are found by dynamic programming over the run's end: two questions about
    one context make a group of two; with several samples of each prompt, the samples of a prompt make a group (all
    but their last token) rather than both questions' samples one (their context only)."""
    import os

    shared = min(len(os.path.commonprefix(rows)), min(map(len, rows)) - 1)
    tails = [r[shared:] for r in rows]
    order = sorted(range(len(rows)), key=tails.__getitem__)
    same = [len(os.path.commonprefix([tails[a], tails[b]])) for a, b in zip(order, order[1:])]
    best, start = [0] * (len(rows) + 1), list(range(len(rows) + 1))  # over the first j rows: tokens saved; last run
    for j in range(1, len(rows) + 1):
        best[j], start[j], common, room = best[j - 1], j - 1, len(tails[order[j - 1]]), len(tails[order[j - 1]]) - 1
        for i in range(j - 2, -1, -1):  # the run order[i:j]
            common, room = min(common, same[i]), min(room, len(tails[order[i]]) - 1)
            if min(common, room) < GROUP_TOKENS:
                break
            if best[i] + (j - 1 - i) * min(common, room) > best[j]:
                best[j], start[j] = best[i] + (j - 1 - i) * min(common, room), i
    groups, j = [], len(rows)
    while j > 0:
        i = start[j]
        if j - i > 1:
            run = [order[k] for k in range(i, j)]
            groups.append((sorted(run), min([min(same[i:j - 1])] + [len(tails[r]) - 1 for r in run])))
        j = i
    return shared, sorted(groups)


@functools.cache
def _roomy_layer():
    """A transformers ``DynamicLayer`` whose keys and values are views of buffers with room for more tokens: a
    decoding step writes its token in place where ``DynamicLayer`` concatenates (a copy of the whole cache, each
    step, each layer: a third of a 64-row SmolLM2 step on 2 CPU cores). Built from a batch's keys and values
    (:func:`_prefill`); without room left it grows. Dropping rows copies the buffers."""
    from transformers.cache_utils import DynamicLayer

    class RoomyLayer(DynamicLayer):
        def __init__(self, keys, values, room: int):
            super().__init__()
            self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
            self._fill(keys, values, room)

        def _fill(self, keys, values, room: int) -> None:
            b, h, n, d = keys.shape
            self._k, self._v = keys.new_empty(b, h, n + room, d), values.new_empty(b, h, n + room, values.shape[-1])
            self._k[:, :, :n], self._v[:, :, :n] = keys, values
            self.keys, self.values = self._k[:, :, :n], self._v[:, :, :n]

        def update(self, key_states, value_states, *args, **kwargs):
            n, m = self.keys.shape[-2], key_states.shape[-2]
            if n + m > self._k.shape[-2]:
                self._fill(self.keys, self.values, max(m, n))
            self._k[:, :, n:n + m], self._v[:, :, n:n + m] = key_states, value_states
            self.keys, self.values = self._k[:, :, :n + m], self._v[:, :, :n + m]
            return self.keys, self.values

        def batch_repeat_interleave(self, repeats: int) -> None:
            self._k, self._v = self._k.repeat_interleave(repeats, 0), self._v.repeat_interleave(repeats, 0)
            self.keys, self.values = self._k[:, :, :self.keys.shape[-2]], self._v[:, :, :self.keys.shape[-2]]

        def batch_select_indices(self, indices) -> None:
            self._k, self._v = self._k[indices], self._v[indices]
            self.keys, self.values = self._k[:, :, :self.keys.shape[-2]], self._v[:, :, :self.keys.shape[-2]]

    return RoomyLayer


def first_token_logprobs(model, tokenizer, prompts: Sequence[str], *, batch_size: int | None = None,
                         batch_tokens: int | None = None, progress: bool = False, desc: str = "next token"):
    """log P of every vocabulary token as the first token generated after each of ``prompts`` (rendered chat
    templates, as for :func:`generate`): a [prompts, vocabulary] float32 array, from the unprocessed logits of the
    first generated position (no temperature, no penalty): one forward pass of each left-padded batch with the
    positions :func:`generate` gives it (counted from each prompt's first token) and the head at the last position
    only. The next-token rung of a model whose packed rows disagree (:meth:`CausalScorer.next_token_logprobs`)."""
    import numpy as np
    import torch

    tok = tokenizer
    out = None
    for batch, input_ids, mask in _left_padded(model, tok, prompts, batch_size, batch_tokens, progress, desc):
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=False,
                           logits_to_keep=1).logits[:, -1]
        logp = torch.log_softmax(logits.float(), dim=-1).cpu().numpy()
        if out is None:
            out = np.empty((len(prompts), logp.shape[1]), dtype=np.float32)
        out[batch] = logp
    return out if out is not None else np.empty((0, 0), dtype=np.float32)


@dataclass(kw_only=True)
class PromptJob(ModelJob):
    """A store run's shards scored by the causal LM ``model`` through one prompt ``template`` (read through the chat
    template or not, ``chat``): what the probes' causal jobs share (:mod:`stereoprobe.unqover.score_causal`,
    :mod:`stereoprobe.sodapop.score_causal`, :mod:`stereoprobe.nli.score_causal`); each adds what it reads and its
    :meth:`score_shard`. A worker, local or Ray, builds its scorer on first use (:func:`scorer_for`)."""

    template: Any
    chat: bool

    def scorer(self) -> "CausalScorer":
        if "scorer" not in self.state:
            scorer = scorer_for(self.model, device=self.device, smoke=self.smoke, batch_tokens=self.batch_tokens,
                                precision=self.precision)
            self.state["fingerprint"], self.state["scorer"] = scorer.fingerprint, scorer
        return self.state["scorer"]

    def model_fingerprint(self) -> str | None:
        return self.state.get("fingerprint")


# -- the scorer ---------------------------------------------------------------------------------------------------
#: The sharing probe's verdict per (model fingerprint, dtype, row length, device type): None (packed rows agree) or
#: why sharing is off.
_VERDICTS: dict[tuple, str | None] = {}
#: The same for a bare transformers model (no fingerprint), kept with the model object.
_BARE_VERDICTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@dataclass
class _Row:
    """One packed sequence: tree nodes in depth-first order and the tokens they predict."""

    tokens: list
    depth: list
    parent: list
    scored: list  # (request, predicting node, target id, k-th token of the request)

    def add(self, token: int, parent: int, depth: int) -> int:
        self.tokens.append(token)
        self.depth.append(depth)
        self.parent.append(parent)
        return len(self.tokens) - 1

    def ends(self) -> list[int]:
        """``end[j]``: one past the last node of ``j``'s subtree (depth-first order)."""
        end = list(range(1, len(self.tokens) + 1))
        for i in range(len(self.tokens) - 1, 0, -1):
            p = self.parent[i]
            if p >= 0 and end[i] > end[p]:
                end[p] = end[i]
        return end


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _plan(encoded: Sequence[Encoded], share: bool, row_tokens: int) -> list[_Row]:
    """Rows of prefix trees (``share``) or one row per request."""
    order = sorted(range(len(encoded)), key=lambda i: encoded[i].ids) if share else range(len(encoded))
    rows: list[_Row] = []
    row, prev, path = None, (), []
    for i in order:
        ids = encoded[i].ids
        common = _lcp(prev, ids) if (share and row is not None) else 0
        if row is None or not share or (len(row.tokens) + len(ids) - common > row_tokens and row.tokens):
            row, common = _Row([], [], [], []), 0
            rows.append(row)
        path = path[:common]
        for depth in range(common, len(ids)):
            path.append(row.add(ids[depth], path[-1] if path else -1, depth))
        start = encoded[i].start
        row.scored.extend((i, path[k - 1], ids[k], k - start) for k in range(start, len(ids)))
        prev = ids
    return rows


def run_dtype(weights, autocast):
    """The dtype a model with weights of dtype ``weights`` computes in under ``autocast`` (fp32: none): autocast's
    when it is half precision, else the weights'.

    >>> import torch
    >>> run_dtype(torch.bfloat16, torch.float32), run_dtype(torch.float32, torch.float16)
    (torch.bfloat16, torch.float16)
    """
    return autocast if autocast.itemsize < 4 else weights


def sharing_tolerance(dtype) -> float:
    """How far packed rows may be from separate passes, in nats per request, before prefix sharing is turned off:
    rounding noise of ``dtype`` (64 × its machine epsilon: 0.5 in bf16, 0.0625 in fp16) and at least 1e-3 (fp32). In
    half precision a token's hidden state at another offset of a row is rounded differently, and a deep model carries
    that on: SmolLM2-135M in bf16 on a CPU puts the probe's packed rows 0.16 nats from separate passes (fp32: 4e-6).
    An architecture that ignores the mask or the positions is off by whole nats.

    >>> import torch
    >>> sharing_tolerance(torch.float32), sharing_tolerance(torch.bfloat16), sharing_tolerance(torch.float16)
    (0.001, 0.5, 0.0625)
    """
    import torch

    return max(1e-3, 64 * torch.finfo(dtype).eps)


def row_window(config) -> int | None:
    """The longest packed row a model reads correctly, in nodes, where some layer applies a window by the position
    of a token in its row rather than through the mask (None: none does). GPT-Neo's local layers (``window_size``,
    ``attention_layers``) mask keys 256 or more ROW positions back through a buffer, not the 4-D mask, so a packed
    row longer than that would cut tokens off their ancestors; a row no longer than the window is exact (its tokens
    are fewer than the window apart, by row and so by depth).

    >>> import transformers
    >>> row_window(transformers.GPTNeoConfig()), row_window(transformers.LlamaConfig())
    (256, None)
    """
    if hasattr(config, "get_text_config"):
        config = config.get_text_config()
    if getattr(config, "model_type", None) == "gpt_neo" and "local" in (getattr(config, "attention_layers", None) or ()):
        return int(config.window_size)
    return None


def _layer_kinds(config) -> tuple[set, int | None]:
    """(the kinds of attention layers, the sliding window) of a decoder config."""
    if hasattr(config, "get_text_config"):
        config = config.get_text_config()
    window = getattr(config, "sliding_window", None)
    if getattr(config, "use_sliding_window", True) is False:
        window = None
    kinds = set(getattr(config, "layer_types", None) or ())
    if not kinds:
        kinds = {"sliding_attention" if window else "full_attention"}
    return kinds, window


class CausalScorer:
    """Scores (prompt, continuation) requests with a causal LM (module doc: boundary, sharing, gathering).

    ``model``: a :class:`stereoprobe.models.LoadedModel` (head ``causal``) or a transformers causal LM with its
    ``tokenizer``. ``batch_tokens``: padded tokens per forward pass (default: the library's, by device).
    ``precision``: as :func:`stereoprobe.batching.inference_context`. ``share``: pack requests into prefix trees
    (default) or run one sequence per request. ``row_tokens``: tree nodes per packed row (default: at most
    ``batch_tokens`` and :data:`DEFAULT_ROW_TOKENS` of the model's device, 256 on a CPU and 1,024 on a GPU).
    ``progress``: a progress bar over the batches.

    >>> scorer = CausalScorer(models.load("zoo:smollm2-135m-instruct", "causal"))  # doctest: +SKIP
    >>> prompt = chat_prompt(scorer.tokenizer, "Who was the nurse?", "Answer:")  # doctest: +SKIP
    >>> s = scorer.logprobs([(prompt, " Mary"), (prompt, " James")])       # doctest: +SKIP
    >>> s.logprob, s.per_char  # acc and acc_norm compare these               # doctest: +SKIP
    """

    def __init__(self, model, tokenizer=None, *, batch_tokens: int | None = None, precision: str = "auto",
                 share: bool = True, row_tokens: int | None = None, progress: bool = False):
        from .batching import batch_tokens_for, device_kind, positive_int, resolve_precision

        name = getattr(model, "name", None)
        #: the loaded model's fingerprint (a LoadedModel's), None for a bare transformers model
        self.fingerprint = getattr(model, "fingerprint", None)
        if hasattr(model, "tokenizer") and hasattr(model, "fingerprint"):  # a LoadedModel
            tokenizer = tokenizer if tokenizer is not None else model.tokenizer
            model = model.model
        if tokenizer is None:
            raise StereoprobeError("CausalScorer needs the model's tokenizer; pass a LoadedModel (models.load(name, "
                                   "'causal')) or the model and its tokenizer.")
        self.model, self.tokenizer = model, tokenizer
        self.name = name or str(getattr(getattr(model, "config", None), "name_or_path", "") or type(model).__name__)
        from .readout import Readout, body_of, model_dtype

        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        self._body = body_of(model)
        if head is None or self._body is None:
            raise StereoprobeError(f"{self.name!r} ({type(model).__name__}) is not a causal LM with an output head; "
                                   "load it with head 'causal' (AutoModelForCausalLM).")
        self.device = next(model.parameters()).device
        self.precision = precision
        #: the dtype the model computes in: its weights' where they are half precision, else autocast's
        self.dtype = run_dtype(model_dtype(model), resolve_precision(self.device, precision))
        self._readout = Readout(model, self._body, tf32=self.dtype.itemsize < 4)
        self.vocabulary = int(head.weight.shape[0]) if hasattr(head, "weight") else int(model.config.vocab_size)
        self.batch_tokens = positive_int("batch_tokens", batch_tokens_for(model, batch_tokens))
        self.row_tokens = positive_int("row_tokens", row_tokens if row_tokens is not None else min(
            self.batch_tokens, DEFAULT_ROW_TOKENS[device_kind(self.device)]))
        self.progress = bool(progress)
        self.limit = context_limit(model)
        # a packed row is no longer than the model's positions, nor than a window it applies by row position
        self.row_tokens = min([self.row_tokens] + [n for n in (context_window(model), row_window(model.config)) if n])
        self.pad_id = next((i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id) if i is not None), 0)
        self.kinds, self.window = _layer_kinds(model.config)
        impl = getattr(model.config, "_attn_implementation", None) or "eager"
        self.share = bool(share)
        self.why_not_shared = None if share else "share=False"
        if share and impl not in _MASKABLE:
            self._unshare(f"its attention implementation {impl!r} takes no arbitrary mask", warn=False)
        elif share and not self.kinds <= set(_ATTENTION_KINDS):
            self._unshare(f"its layers of kind {sorted(self.kinds - set(_ATTENTION_KINDS))} cannot read a packed "
                          "row", warn=False)
        self._additive = impl == "eager"
        self._checked = not self.share

    def _unshare(self, reason: str, warn: bool = True) -> None:
        self.share, self.why_not_shared = False, reason
        if warn:
            warnings.warn(f"{self.name!r}: prefix sharing is off ({reason}); each request runs as its own sequence.",
                          StereoprobeWarning, stacklevel=3)

    # -- public ----------------------------------------------------------------------------------------------------
    def encode(self, requests: Iterable[tuple[str, str]]) -> list[Encoded]:
        """The requests' tokens (:func:`encode_requests`), each checked against the context window."""
        encoded = encode_requests(self.tokenizer, requests)
        for e in encoded:
            _check_length(len(e.ids), self.limit, e.prompt)
        return encoded

    def logprobs(self, requests: Iterable[tuple[str, str]], *, per_token: bool = False) -> ContinuationScores:
        """Score ``requests`` ((prompt, continuation) pairs) in their order; see :class:`~stereoprobe.causal.ContinuationScores`."""
        return self.score_encoded(self.encode(requests), per_token=per_token)

    def score_encoded(self, encoded: Sequence[Encoded], *, per_token: bool = False) -> ContinuationScores:
        """:meth:`logprobs` of requests already encoded (:meth:`encode`)."""
        if not self._checked:
            self._check_sharing()
        values = self._run(encoded, self.share)
        return _collect(encoded, *values, per_token=per_token)

    def next_token_logprobs(self, prompts: Sequence[str], tokens: Sequence[int]) -> np.ndarray:
        """log P(token | prompt) of each of ``tokens`` (vocabulary ids) as the first token after each of ``prompts``
        (texts that already hold the chat template's tokens: none are added), a [prompts, tokens] array: the local
        next-token rung (:class:`stereoprobe.backends.Local`). With sharing on, every token is a one-token
        continuation of its prompt in the prefix tree, so a chat template's preamble and the context the passes of an
        example share run once and the head runs at each prompt's last position only; else one left-padded forward
        pass per batch of prompts (:func:`first_token_logprobs`). The two agree to float rounding (a test)."""
        if not self._checked:
            self._check_sharing()
        tokens = [int(t) for t in tokens]
        if not self.share:
            logp = first_token_logprobs(self.model, self.tokenizer, prompts, batch_tokens=self.batch_tokens)
            return logp[:, tokens].astype(np.float64) if len(prompts) else np.empty((0, len(tokens)))
        texts = [self.tokenizer.decode([t]) for t in tokens]
        encoded = []
        for prompt in prompts:
            ids = tuple(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
            _check_length(len(ids) + 1, self.limit, prompt)
            encoded.extend(Encoded(ids + (t,), len(ids), prompt, text) for t, text in zip(tokens, texts))
        return self.score_encoded(encoded).logprob.reshape(len(prompts), len(tokens))

    # -- internals -------------------------------------------------------------------------------------------------
    def _run(self, encoded: Sequence[Encoded], share: bool, *, show: bool | None = None):
        """(per scored token: request, k, log-probability, is-argmax) over all requests.

        The values stay on the model's device until every batch is queued, then come back in one copy: the host never
        waits for the GPU inside the loop."""
        import torch

        from .batching import inference_context, progress, token_budget_batches

        if not encoded:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, bool)
        rows = _plan(encoded, share, self.row_tokens)
        batches = list(token_budget_batches([len(r.tokens) for r in rows], self.batch_tokens))
        show = self.progress if show is None else show
        reqs, poss, values, bests = [], [], [], []
        with inference_context(self.device, self.precision):
            for batch in progress(batches, desc="causal LM", disable=not show):
                part = [rows[b] for b in batch]
                order, lp, best = self._forward(part, share)
                scored = [s for r in part for s in r.scored]
                reqs.append(np.fromiter((scored[k][0] for k in order), np.int64, len(order)))
                poss.append(np.fromiter((scored[k][3] for k in order), np.int64, len(order)))
                values.append(lp)
                bests.append(best)
        lps = torch.cat(values).double().cpu().numpy()
        top = torch.cat(bests).cpu().numpy()
        return np.concatenate(reqs), np.concatenate(poss), lps, top

    def _forward(self, rows: list[_Row], share: bool):
        """(the order of ``rows``' scored tokens in the results, their log-probabilities and is-argmax as tensors on
        the device): the body runs once, the head in fp32 on the predicting positions, a chunk at a time
        (:mod:`stereoprobe.readout`)."""
        import torch

        from .batching import padded_inputs, to_device
        from .readout import rows_per_chunk

        idx = np.arange(len(rows))
        x = padded_inputs([r.tokens for r in rows], idx, self.pad_id, self.device)
        width = x["input_ids"].shape[1]
        kwargs: dict[str, Any] = {"input_ids": x["input_ids"], "use_cache": False}
        if share:
            depth = padded_inputs([r.depth for r in rows], idx, 0, self.device)["input_ids"]
            kwargs["position_ids"] = depth
            kwargs["attention_mask"] = self._mask(rows, depth, width)
        else:  # one sequence per row, right-padded: the model's own masks and positions
            kwargs["attention_mask"] = x["attention_mask"]
        flat = np.array([b * width + s[1] for b, r in enumerate(rows) for s in r.scored], dtype=np.int64)
        targets = np.array([s[2] for r in rows for s in r.scored], dtype=np.int64)
        keep, inverse = np.unique(flat, return_inverse=True)  # each predicting position once
        order = np.argsort(inverse, kind="stable")  # scored tokens grouped by chunk of kept positions
        inverse, targets = inverse[order], targets[order]
        hidden = self._readout.body(kwargs, to_device(keep, self.device))
        step = rows_per_chunk(self.vocabulary)
        cuts = np.searchsorted(inverse, np.arange(0, len(keep) + step, step))
        inverse_t, targets_t = to_device(inverse, self.device), to_device(targets, self.device)
        lps, best = [], []
        for c, a in enumerate(range(0, len(keep), step)):
            lo, hi = int(cuts[c]), int(cuts[c + 1])
            logits = self._readout.head(kwargs, hidden, slice(a, a + step)).logits[0]
            if logits.shape[0] != min(step, len(keep) - a):
                raise StereoprobeError(f"{self.name!r} ({type(self.model).__name__}) does not compute its logits from "
                                       "its decoder's last hidden states; it cannot be scored here.")
            logits = logits.float()
            rows_t, tgt = inverse_t[lo:hi] - a, targets_t[lo:hi]
            lps.append(logits.log_softmax(-1)[rows_t, tgt])
            best.append(logits.argmax(-1)[rows_t] == tgt)
            del logits
        return order, torch.cat(lps), torch.cat(best)

    def _mask(self, rows: list[_Row], depth, width: int):
        """The packed rows' 4-D mask: node ``i`` sees node ``j`` iff ``j`` is ``i`` or its ancestor (``j <= i <
        end_j``), within the sliding window on depths where the model has one; padding sees itself."""
        import torch

        from .batching import padded_inputs

        idx = np.arange(len(rows))
        ends = [r.ends() for r in rows]
        end = padded_inputs(ends, idx, 0, self.device)["input_ids"]
        ar = torch.arange(width, device=self.device)
        end = torch.where(end > 0, end, ar + 1)  # padding: its own subtree
        i, j = ar.view(1, -1, 1), ar.view(1, 1, -1)
        full = (j <= i) & (i < end.unsqueeze(1))
        longest = max(max(r.depth) for r in rows) + 1
        if "sliding_attention" not in self.kinds or not self.window or longest <= self.window:
            return self._format(full.unsqueeze(1))  # every layer sees the same: one mask
        sliding = self._format((full & (depth.unsqueeze(2) - depth.unsqueeze(1) < self.window)).unsqueeze(1))
        if self.kinds == {"sliding_attention"}:
            return sliding
        return {"full_attention": self._format(full.unsqueeze(1)), "sliding_attention": sliding}

    def _format(self, allowed):
        """Boolean (sdpa) or additive float (eager) mask."""
        import torch

        if not self._additive:
            return allowed
        dtype = next(self.model.parameters()).dtype
        zero = torch.zeros((), dtype=dtype, device=allowed.device)
        return torch.where(allowed, zero, torch.finfo(dtype).min)

    def _probe(self) -> list[Encoded]:
        """Two requests that fill one packed row of :attr:`row_tokens` nodes, built from token ids (seeded, no
        special tokens), so that any tokenizer can run it: a long one, and a short one that shares its first 4 tokens
        and comes after it in depth-first order, so the short one's last tokens sit a whole row from their ancestors
        — as far as any packed row can put them. The short one scores its last 2 tokens; the long one is not
        scored (alone it would be the same sequence at the same places as in the row)."""
        n = max(self.row_tokens, 8)
        special = set(getattr(self.tokenizer, "all_special_ids", None) or ())
        pool = np.setdiff1d(np.arange(min(self.vocabulary, len(self.tokenizer))), sorted(special))
        ids = np.random.default_rng(0).choice(pool, size=n).tolist()
        short = min(4, max(n // 4, 1))  # the shared prefix, and the short request's own tokens
        ids[short] = int(pool[0])
        long = tuple(ids[:max(n - short, short + 2)])
        branch = tuple(ids[:short]) + (int(pool[-1]),) + tuple(ids[n - short + 1:n])
        # the long one is there for its place in the row, not scored: run alone it is the row's own first sequence
        return [Encoded(long, len(long), "", ""), Encoded(branch, len(branch) - 2, "", "")]

    def _check_sharing(self) -> None:
        """Once per model: packed rows must give what separate passes give on a probe that reaches every offset a
        row can use (:meth:`_probe`), else sharing is turned off (an architecture that ignores the custom mask or
        the positions, or windows by row position beyond what :func:`row_window` knows). The verdict is kept for the
        process (:data:`_VERDICTS`), so a command that scores one model through several templates probes it, and
        warns, once."""
        self._checked = True
        setting = (str(self.dtype), self.row_tokens, self.device.type)
        verdicts = _VERDICTS if self.fingerprint else _BARE_VERDICTS.setdefault(self.model, {})
        key = (self.fingerprint, *setting) if self.fingerprint else setting
        if key in verdicts:
            if verdicts[key] is not None:
                self.share, self.why_not_shared = False, verdicts[key]
            return
        try:
            self._compare_packed()
        finally:
            verdicts[key] = None if self.share else self.why_not_shared

    def _compare_packed(self) -> None:
        encoded = self._probe()
        try:
            packed = _collect(encoded, *self._run(encoded, True, show=False)).logprob[1:]
        except (TypeError, ValueError, RuntimeError, KeyError, IndexError, AttributeError) as err:
            self._unshare(f"a packed row fails in {type(self.model).__name__}: {str(err).splitlines()[0]}")
            return
        a, b = packed, _collect(encoded[1:], *self._run(encoded[1:], False, show=False)).logprob
        tol = sharing_tolerance(self.dtype)
        diff = float(np.max(np.abs(a - b)))
        if not diff <= tol:
            self._unshare(f"{type(self.model).__name__} gives a packed row log-probabilities {diff:.2g} away from "
                          "separate passes")


def _collect(encoded: Sequence[Encoded], req, pos, lps, top, *, per_token: bool = False) -> ContinuationScores:
    n = len(encoded)
    tokens = np.array([len(e.ids) - e.start for e in encoded], dtype=np.int64)
    logprob = np.zeros(n, np.float64)
    np.add.at(logprob, req, lps)
    greedy = np.ones(n, bool)
    np.logical_and.at(greedy, req, top)
    chars = np.array([len(e.continuation) for e in encoded], dtype=np.int64)
    if not per_token:
        return ContinuationScores(logprob, tokens, chars, greedy)
    order = np.lexsort((pos, req))
    cuts = np.cumsum(tokens)[:-1]
    per = tuple(np.split(lps[order], cuts))
    return ContinuationScores(logprob, tokens, chars, greedy, per, tuple(e.continuation_ids for e in encoded))
