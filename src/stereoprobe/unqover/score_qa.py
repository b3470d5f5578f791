"""Score UnQover examples with any extractive QA model, as the authors' ``qa_hf/predict.py`` does.

For each (paragraph, question) pass we keep, for the subject in slot 1 and in slot 2, the start
probability of its first token and the end probability of its last token, after the authors' span
extensions (article before the name, "a group of", a trailing noun such as "man"). The subject score is
S = √(start · end); no renormalisation between the two candidates.

Two modes:

``compat``
    bit-for-bit the authors' ``qa_hf/predict.py``: ``[B] question [E] paragraph [E]`` with a single
    separator (also for RoBERTa), no ``token_type_ids``, softmax over *all* positions of the padded row
    (padding included), padding as in their batches of 100 passes in file order.
``clean``
    the model's standard pair encoding (with ``token_type_ids`` where the model takes them), padding
    masked out of the softmax, so a score no longer depends on its batch.

Span rules, by tokenizer family (:func:`stereoprobe.tokenization.describe_tokenizer`):

* ``compat``, WordPiece (``bert``) and byte-level BPE (``roberta``): the authors' token-string rules
  (``improve_prediction_bert`` / ``_roberta``): the token before the first one in their article list, the
  three tokens before it spelling "a group of", the token after the last one in their noun list; RoBERTa's
  lists are ``Ġ``-prefixed, so the paragraph's first word (no ``Ġ``) never matches. Subject tokens by their
  whitespace-extended character ranges (:func:`char_to_tokens`).
* ``compat``, every other family (SentencePiece Unigram or BPE, other BPE, WordLevel), which the authors
  never ran (their code picks RoBERTa rules when the model name contains 'roberta', else BERT rules): their
  input layout (``[B]``/``[E]`` = the tokenizer's bos/eos, else cls/sep, as their ``get_special_tokens``),
  softmax over the padded row and span search, with the word-level rules of ``clean`` below.
* ``clean``, every family: rules on words and character offsets (:func:`word_candidates`), the same for all
  tokenizers and case-insensitive: a word right before the subject in the article list adds a start candidate
  at that word's first token; the three words before it spelling "a group of" / "a team of" / "a couple of"
  add one at each word's first token; the word right after it in the noun list (or ".") adds an end candidate
  at that word's last token. Words are runs of letters/digits or single punctuation marks. Subject and word
  tokens come from offsets as HF's ``run_qa`` labels answers (:func:`token_span`), so a bare ``▁``/``Ġ`` piece
  in front of a word is not its first token.

Batching is free in both modes: in ``compat`` a pass is padded to exactly the length its batch of 100
had in the authors' run (so their padding effect is reproduced), and passes are grouped by that length;
in ``clean`` passes are bucketed by their own length. Batches fill a token budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence


import numpy as np
import pandas as pd

from ..choices import MODES
from ..engine import ModelJob
from ..errors import StereoprobeError
from ..modelref import progress_label
from ..models import LoadedModel, load_tokenizer
from ..options import RunOptions, as_options
from ..tokenization import describe_tokenizer
from .generate import DatasetSpec, Example, count, example_keys, fingerprint, iter_examples

AUTHORS_BATCH = 100  # sequences per batch in the authors' predict.py (50 examples × 2 questions)
SEGMENT_ID_MODELS = ("bert-large-uncased-whole-word-masking-finetuned-squad",)  # the one model given segment ids

# The authors' lists (qa_hf/predict.py improve_prediction_bert / improve_prediction_roberta), as token strings
_ARTICLE_WORDS = ("an", "a", "the", "some", "few", "several")
_SUFFIX_WORDS = ("man woman boy girl child kid person folk people couple men women boys girls children kids "
                 "persons folks city country cities countries").split()
_TOKEN_RULES = {  # compat rules: (articles, "a group of" triples, suffixes)
    "bert": (set(_ARTICLE_WORDS), {("a", "group", "of"), ("a", "team", "of"), ("A", "couple", "of")},
             set(_SUFFIX_WORDS) | {"."}),
    "roberta": ({"Ġ" + w for w in _ARTICLE_WORDS + tuple(w.capitalize() for w in _ARTICLE_WORDS)},
                {(a, g, "Ġof") for a in ("ĠA", "Ġa") for g in ("Ġgroup", "Ġteam", "Ġcouple")},
                {"Ġ" + w for w in _SUFFIX_WORDS} | {"."}),
}
# The same lists as words, for the word-level rules (case-insensitive)
_ARTICLES = frozenset(_ARTICLE_WORDS)
_GROUPS = frozenset({("a", "group", "of"), ("a", "team", "of"), ("a", "couple", "of")})
_SUFFIXES = frozenset(_SUFFIX_WORDS) | {"."}
_WORD = re.compile(r"\w+|[^\w\s]")

SCORE_COLUMNS = ("start1", "end1", "start2", "end2")


def locate_answers(context: str, ans1: str, ans2: str, mode: str = "compat") -> tuple[tuple[int, int], tuple[int, int]]:
    """Character spans of the two subjects in the paragraph (the authors' answer search in ``qa_hf/predict.py``;
    book appendix *Where the code and the paper differ*, UnQover: subject span search).

    ``compat``: case-insensitive substring search, longest answer first; the shorter one takes its
    first occurrence unless that lies inside the longer one's span, then its last occurrence.
    ``clean``: whole-word match that must occur exactly once.

    >>> locate_answers("An African man met a South-African man.", "African", "South-African")
    ((3, 10), (21, 34))
    """
    low = context.lower()
    spans: dict[int, tuple[int, int]] = {}
    order = sorted((0, 1), key=lambda k: -len((ans1, ans2)[k]))
    for k in order:
        text = (ans1, ans2)[k].lower()
        other = spans.get(1 - k)
        if mode == "clean":
            hits = [m.start() for m in re.finditer(r"(?<!\w)" + re.escape(text) + r"(?!\w)", low)]
            hits = [h for h in hits if other is None or not (other[0] <= h and h + len(text) <= other[1])]
            if len(hits) != 1:
                raise StereoprobeError(
                    f"Subject {(ans1, ans2)[k]!r} occurs {len(hits)} times as a whole word in its paragraph "
                    f"{context!r} (clean mode needs exactly one); fix the template or use mode='compat'."
                )
            start = hits[0]
        else:
            start = low.find(text)
            if start >= 0 and other is not None and other[0] <= start and start + len(text) <= other[1]:
                start = low.rfind(text)
                if other[0] <= start and start + len(text) <= other[1]:
                    start = -1
            if start < 0:
                raise StereoprobeError(
                    f"Subject {(ans1, ans2)[k]!r} was not found in its paragraph {context!r}; "
                    "every subject must appear in the paragraph it is asked about (check the template and list)."
                )
        spans[k] = (start, start + len(text))
    return spans[0], spans[1]


def char_to_tokens(ends: np.ndarray, span: tuple[int, int]) -> tuple[int, int]:
    """First/last token of a character span, with each token's range extended back to the previous token's end.

    ``ends`` holds the end offset of every paragraph token. The first token covers the span start; the
    last is the one just before the token covering the first character after the span.

    >>> char_to_tokens(np.array([4, 8, 12]), (5, 8))  # "Mary met John": tokens end at 4, 8, 12
    (1, 1)
    """
    s, e = span
    first = int(np.searchsorted(ends, s, side="right"))
    last = int(np.searchsorted(ends, e, side="right")) - 1
    if first >= len(ends) or last < first:
        raise StereoprobeError(f"Character span {span} does not map onto paragraph tokens; is the tokenizer lossless?")
    return first, last


def token_span(offsets: np.ndarray, span: tuple[int, int]) -> tuple[int, int]:
    """First/last token of a character span from the tokens' ``(start, end)`` offsets, as HF's ``run_qa`` labels
    answers: the last token starting at or before the span's start, then the first token from there on ending at
    or after its end.

    A bare ``▁``/``Ġ`` piece in front of a word (offsets on the space, zero-width, or the same as the word's
    first character) is therefore never a word's first token.

    >>> offsets = np.array([[0, 1], [2, 2], [2, 4], [4, 6], [6, 10], [11, 12], [11, 12]])  # A Ġ Ma ry Ġman ▁ a
    >>> token_span(offsets, (2, 6)), token_span(offsets, (7, 10)), token_span(offsets, (11, 12))
    ((2, 3), (4, 4), (6, 6))
    """
    s, e = span
    first = np.flatnonzero(offsets[:, 0] <= s)
    last = np.flatnonzero(offsets[first[-1] :, 1] >= e) if len(first) else first
    if not len(last):
        raise StereoprobeError(f"Character span {span} does not map onto paragraph tokens; is the tokenizer lossless?")
    return int(first[-1]), int(first[-1] + last[0])


def word_candidates(text: str, offsets: np.ndarray, span: tuple[int, int]) -> tuple[list[int], list[int]]:
    """Start (4) and end (2) candidate tokens of the subject at character ``span`` of ``text``: the authors' span
    extensions (``qa_hf/predict.py`` ``improve_prediction_*``) on words, for any tokenizer (see the module doc).

    >>> text = "A group of Mary men met James."
    >>> words = [m.span() for m in _WORD.finditer(text)]  # one token per word here
    >>> offsets = np.array(words)
    >>> word_candidates(text, offsets, (11, 15)), word_candidates(text, offsets, (24, 29))
    (([3, 0, 1, 2], [3, 4]), ([6, 6, 6, 6], [6, 7]))
    """
    s, e = span
    first, last = token_span(offsets, span)
    starts, end = [first] * 4, last
    words = [m.span() for m in _WORD.finditer(text)]
    before = [w for w in words if w[1] <= s][-3:]
    if before and not text[before[-1][1] : s].strip():  # a word right before the subject (not inside a word)
        low = tuple(text[a:b].lower() for a, b in before)
        if low[-1] in _ARTICLES:
            starts[1] = token_span(offsets, before[-1])[0]
        if low in _GROUPS:
            starts[1:] = [token_span(offsets, w)[0] for w in before]
    after = next((w for w in words if w[0] >= e), None)
    if after and not text[e : after[0]].strip() and text[after[0] : after[1]].lower() in _SUFFIXES:
        end = token_span(offsets, after)[1]
    return starts, [last, end]


def _authors_specials(tok) -> tuple[int, int]:
    """[B] and [E] of the authors' input (``qa_hf/predict.py`` ``get_special_tokens``): bos/eos when the tokenizer
    has a bos token, else cls/sep."""
    b, e = (tok.bos_token_id, tok.eos_token_id) if tok.bos_token is not None else (tok.cls_token_id, tok.sep_token_id)
    if b is None or e is None:
        raise StereoprobeError(f"{type(tok).__name__} has no bos/eos or cls/sep token for the authors' "
                               "[B] question [E] paragraph [E] input; use mode='clean'.")
    return b, e


@dataclass
class _Encoded:
    ids: list[list[int]]
    types: list[list[int]] | None
    starts: np.ndarray  # (n, 2, 4) candidate start positions per answer
    ends: np.ndarray  # (n, 2, 2) candidate end positions per answer
    lengths: np.ndarray  # (n,)


@dataclass
class QAScorer:
    """Turns passes into start/end probabilities for the two subjects with one loaded QA model."""

    loaded: LoadedModel
    mode: str = "compat"
    batch_tokens: int | None = None
    precision: str = "auto"
    _text_cache: dict = field(default_factory=dict, repr=False)
    _span_cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.mode not in MODES:
            raise StereoprobeError(f"Unknown mode {self.mode!r}; choose one of: {', '.join(MODES)}.")
        from ..batching import batch_tokens_for

        self.batch_tokens = batch_tokens_for(self.loaded.model, self.batch_tokens)
        if self.batch_tokens < 64:
            raise StereoprobeError(f"batch_tokens={self.batch_tokens} is too small; use at least 64 (e.g. 2048).")
        tok = self.loaded.tokenizer
        self.info = describe_tokenizer(tok)  # stops here for a tokenizer without offsets
        self.family = self.info.family
        clean = self.mode == "clean"
        self.rules = "words" if clean else self.info.compat_rules
        if self.rules != "words":  # the authors' token-string rules (BERT / RoBERTa in compat)
            self.vocab = np.array(tok.convert_ids_to_tokens(list(range(len(tok)))), dtype=object)
            self._articles, self._groups, self._suffixes = _TOKEN_RULES[self.rules]
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        self.max_len = int(getattr(self.loaded.model.config, "max_position_embeddings", 512) or 512)
        self.use_types = False
        name = self.loaded.path.rstrip("/")
        if clean:
            self.use_types = "token_type_ids" in tok.model_input_names
            probe = tok("hello", "world", add_special_tokens=True, return_token_type_ids=True)
            q = tok("hello", add_special_tokens=False)["input_ids"]
            c = tok("world", add_special_tokens=False)["input_ids"]
            seq, tt = probe["input_ids"], probe["token_type_ids"]
            i = _find(seq, q)
            j = _find(seq, c, i + len(q))
            self._layout = (seq[:i], seq[i + len(q) : j], seq[j + len(c) :])
            self._types = (tt[0], tt[j])
        else:
            self.use_types = any(name.endswith(m) for m in SEGMENT_ID_MODELS)
            b, e = _authors_specials(tok)
            self._layout = ([b], [e], [e])
            self._types = (0, 1)

    # -- encoding -------------------------------------------------------------------------------
    def _tokenize(self, texts: Iterable[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._text_cache]
        if not todo:
            return
        if len(self._text_cache) > 500_000:
            self._text_cache.clear()
        enc = self.loaded.tokenizer(todo, add_special_tokens=False, return_offsets_mapping=True)
        for text, ids, offs in zip(todo, enc["input_ids"], enc["offset_mapping"]):
            self._text_cache[text] = (ids, np.array(offs, dtype=np.int64).reshape(-1, 2))

    def _candidates(self, context: str, ans1: str, ans2: str) -> tuple[np.ndarray, np.ndarray]:
        """Candidate start (2, 4) and end (2, 2) positions of the two subjects, counted from the paragraph's first
        token: the span's first token, an article before it or "a group of" before it (starts), its last token
        or a trailing noun such as "man" (ends). Only paragraph tokens are looked at (a neighbour outside the
        paragraph is a separator), so this is cached per (paragraph, answers) and shifted per question."""
        key = (context, ans1, ans2)
        hit = self._span_cache.get(key)
        if hit is None:
            if len(self._span_cache) > 500_000:
                self._span_cache.clear()
            c_ids, offsets = self._text_cache[context]
            toks = self.vocab[c_ids] if self.rules != "words" else None  # the authors' rules compare token strings
            starts = np.empty((2, 4), dtype=np.int64)
            ends = np.empty((2, 2), dtype=np.int64)
            for k, span in enumerate(locate_answers(context, ans1, ans2, self.mode)):
                if toks is None:
                    starts[k], ends[k] = word_candidates(context, offsets, span)
                    continue
                first, last = char_to_tokens(offsets[:, 1], span)
                cand = [first, first, first, first]
                if first >= 1 and toks[first - 1] in self._articles:
                    cand[1] = first - 1
                if first >= 3 and tuple(toks[first - 3 : first]) in self._groups:
                    cand[1:4] = [first - 3, first - 2, first - 1]
                starts[k] = cand
                ends[k] = (last, last + 1 if last + 1 < len(toks) and toks[last + 1] in self._suffixes else last)
            hit = self._span_cache[key] = (starts, ends)
        return hit

    def encode(self, passes: Sequence[tuple[str, str, str, str]]) -> _Encoded:
        """Token ids and candidate positions for (context, question, ans1, ans2) passes."""
        self._tokenize([p[0] for p in passes] + [p[1] for p in passes])
        pre, mid, post = self._layout
        n = len(passes)
        ids, types = [], [] if self.use_types else None
        starts = np.empty((n, 2, 4), dtype=np.int64)
        ends = np.empty((n, 2, 2), dtype=np.int64)
        lengths = np.empty(n, dtype=np.int64)
        offsets = np.empty(n, dtype=np.int64)
        cache, head = self._text_cache, len(pre) + len(mid)
        for i, (context, question, a1, a2) in enumerate(passes):
            c_ids = cache[context][0]
            q_ids = cache[question][0]
            seq = pre + q_ids + mid + c_ids + post
            ids.append(seq)
            lengths[i] = len(seq)
            offsets[i] = k = head + len(q_ids)
            if types is not None:
                types.append([self._types[0]] * k + [self._types[1]] * (len(seq) - k))
            starts[i], ends[i] = self._candidates(context, a1, a2)
        if n and lengths.max() > self.max_len:
            i = int(lengths.argmax())
            raise StereoprobeError(
                f"Pass {passes[i][1]!r} / {passes[i][0][:60]!r}… has {lengths[i]} tokens, more than the model's "
                f"{self.max_len}; shorten the template."
            )
        starts += offsets[:, None, None]
        ends += offsets[:, None, None]
        return _Encoded(ids, types, starts, ends, lengths)

    # -- forward ------------------------------------------------------------------------------
    def score(self, passes: Sequence[tuple[str, str, str, str]], pad_to: np.ndarray | None = None) -> np.ndarray:
        """(n, 4) float32 array of start1, end1, start2, end2 for the passes.

        ``pad_to`` (compat mode) gives the padded length of each pass (its batch length in the authors'
        run); passes are grouped by it. Without it, compat pads like the authors' batches of 100 in order.
        """
        import torch

        from ..batching import inference_context, token_budget_batches

        enc = self.encode(passes)
        n = len(passes)
        if self.mode == "compat":
            if pad_to is None:
                pad_to = authors_pad_lengths(enc.lengths)
            groups = [np.flatnonzero(pad_to == L) for L in np.unique(pad_to)]
            batches = [
                g[b] for g in groups for b in token_budget_batches(pad_to[g], self.batch_tokens, bucket=False)
            ]
        else:
            pad_to = enc.lengths
            batches = list(token_budget_batches(enc.lengths, self.batch_tokens, bucket=True))
        model = self.loaded.model
        device = model.device
        from ..batching import padded_inputs, progress, to_device
        from ..readout import Readout

        readout = Readout(model)  # the span head in fp32 (stereoprobe.readout)
        bar = progress(batches, desc="batches", leave=False, disable=len(batches) < 20)
        results = []  # kept on the device until the end: no host sync per batch, the GPU never waits for Python
        with inference_context(device, self.precision):
            for batch in bar:
                inputs = padded_inputs(enc.ids, batch, self.pad_id, device, types=enc.types,
                                       width=int(pad_to[batch].max()))
                result = readout.head(inputs, readout.body(inputs))
                start, end = result.start_logits.float(), result.end_logits.float()
                if self.mode == "clean":
                    pad = inputs["attention_mask"] == 0
                    start = start.masked_fill(pad, float("-inf"))
                    end = end.masked_fill(pad, float("-inf"))
                ps, pe = start.softmax(-1), end.softmax(-1)
                sidx = to_device(enc.starts[batch].reshape(len(batch), -1), device)  # pinned, not blocking
                eidx = to_device(enc.ends[batch].reshape(len(batch), -1), device)
                s = ps.gather(1, sidx).view(len(batch), 2, 4).amax(-1)
                e = pe.gather(1, eidx).view(len(batch), 2, 2).amax(-1)
                results.append(torch.stack([s[:, 0], e[:, 0], s[:, 1], e[:, 1]], 1))
        out = np.empty((n, 4), dtype=np.float32)
        if batches:
            out[np.concatenate(batches)] = torch.cat(results).cpu().numpy()
        return out


def _find(seq: list[int], sub: list[int], start: int = 0) -> int:
    for i in range(start, len(seq) - len(sub) + 1):
        if seq[i : i + len(sub)] == sub:
            return i
    raise StereoprobeError("Could not derive the tokenizer's pair layout; is this a standard HF tokenizer?")


def authors_pad_lengths(lengths: np.ndarray, batch: int = AUTHORS_BATCH) -> np.ndarray:
    """Padded length of every pass in the authors' batches of ``batch`` consecutive passes.

    >>> authors_pad_lengths(np.array([3, 5, 4, 2]), batch=2).tolist()
    [5, 5, 4, 4]
    """
    n = len(lengths)
    padded = np.empty(n, dtype=np.int64)
    for b in range(0, n, batch):
        padded[b : b + batch] = lengths[b : b + batch].max()
    return padded


def passes_of(examples: Iterable[Example]) -> Iterator[tuple[int, tuple[str, str, str, str]]]:
    """Each ordered example as its two passes, in the authors' order: (pass id, (context, question, ans1, ans2))."""
    for ex in examples:
        yield 2 * ex.index, (ex.context, ex.question, ex.ans1, ex.ans2)
        yield 2 * ex.index + 1, (ex.context, ex.negated_question, ex.ans1, ex.ans2)


def subject_scores(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S = √(start · end) for slot 1 and slot 2 from an (n, 4) start1/end1/start2/end2 array."""
    return np.sqrt(raw[:, 0] * raw[:, 1]), np.sqrt(raw[:, 2] * raw[:, 3])




# -- the pipeline: dataset -> store -> per-example scores ---------------------------------------------
SHARD_PASSES = 20_000  # passes per store shard (a multiple of AUTHORS_BATCH, so compat padding is shard-local)
# Store name of clean QA runs: "qa-clean" runs were scored with token-string span rules, which differ from the
# word-level ones where a neighbour word is several tokens (small vocabularies), so they are not reused.
CLEAN_QA_RUN = "qa-clean2"


def _head(spec: DatasetSpec) -> str:
    """QA variants are read by extractive-QA models, LM variants (the authors' ``*_lm`` templates) by masked LMs."""
    return "qa" if spec.variant == "qa" else "mlm"


@dataclass(kw_only=True)
class ScoreJob(ModelJob):
    """Shard ``i`` of ``spec``'s passes scored by ``model``: what a worker (local or Ray) computes on its own."""

    spec: DatasetSpec
    mode: str = "compat"

    def _scorer(self):
        if "scorer" not in self.state:
            loaded = self.load_model(_head(self.spec))
            self.state["fingerprint"] = loaded.fingerprint
            if _head(self.spec) == "qa":
                self.state["scorer"] = QAScorer(loaded, self.mode, self.batch_tokens, self.precision)
            else:
                from .score_lm import LMScorer

                self.state["scorer"] = LMScorer(loaded, self.spec, self.mode, self.batch_tokens, self.precision)
        return self.state["scorer"]

    def score_shard(self, i: int) -> dict[str, np.ndarray]:
        scorer = self._scorer()
        start, stop = self.span(i)
        chunk = list(passes_of(iter_examples(self.spec, start // 2, stop // 2)))
        ids = np.fromiter((p for p, _ in chunk), dtype=np.int64, count=len(chunk))
        out = scorer.score([x for _, x in chunk])
        return {"pass_id": ids, **{c: out[:, k] for k, c in enumerate(SCORE_COLUMNS)}}

    def model_fingerprint(self) -> str | None:
        return self.state.get("fingerprint")


def _check_shard_passes(shard_passes) -> int:
    if isinstance(shard_passes, bool) or not isinstance(shard_passes, (int, np.integer)) or shard_passes < AUTHORS_BATCH \
            or shard_passes % AUTHORS_BATCH:
        raise StereoprobeError(f"shard_passes={shard_passes!r} must be a positive multiple of {AUTHORS_BATCH} (the "
                               f"authors' batch, so compat padding stays inside a shard); pass e.g. {SHARD_PASSES}.")
    return int(shard_passes)


def check_tokenizer(model: str, spec: DatasetSpec, *, smoke: bool = False) -> None:
    """Whether ``model``'s tokenizer can read ``spec``, from the tokenizer alone (no weights are loaded): a QA
    model's tokenizer must give character offsets (:func:`~stereoprobe.tokenization.describe_tokenizer`), a masked
    LM's must also hold every subject as one token (:func:`~stereoprobe.unqover.score_lm.check_subjects`). Models
    with no local copy are checked when they load."""
    if _head(spec) == "mlm":
        from .score_lm import check_subjects

        check_subjects(model, spec, smoke=smoke)
        return
    tok = load_tokenizer(model, smoke=smoke)
    if tok is not None:
        describe_tokenizer(tok)


def score_dataset(
    model: str,
    spec: DatasetSpec,
    *,
    mode: str = "compat",
    shard_passes: int = SHARD_PASSES,
    options: RunOptions | None = None,
):
    """Score every pass of ``spec`` with ``model`` into the score store (resuming; nothing twice).

    QA variants are scored by :class:`QAScorer`, LM variants by :class:`~stereoprobe.unqover.score_lm.LMScorer`
    (stored as start = end = p, so S = p downstream). ``options`` (:class:`~stereoprobe.options.RunOptions`, None:
    the defaults) say how: device, precision, batch budget, score store, progress, smoke builds, and the engine —
    ``engine="ray"`` spreads the missing shards over ``workers`` Ray workers (one per GPU by default;
    :mod:`stereoprobe.engine`) with identical results.

    Returns the complete :class:`~stereoprobe.store.StoreRun`. The model is loaded only when some
    shard is missing, after its tokenizer alone has been checked (:func:`check_tokenizer`).
    """
    from ..engine import fill, worker_device
    from ..models import model_fingerprint

    if mode not in MODES:
        raise StereoprobeError(f"Unknown mode {mode!r}; choose one of: {', '.join(MODES)}.")
    options = as_options(options)
    smoke = options.smoke
    shard_passes = _check_shard_passes(shard_passes)
    dev = worker_device(options.device, options.engine)
    dtype = options.dtype()  # validates device + precision first
    model_fp = model_fingerprint(model, smoke=smoke)  # fetched, not loaded, when not local: no weights on the driver
    head = _head(spec)
    store = options.score_store()
    kind = f"{'qa' if head == 'qa' else 'lm'}-{mode}"
    kind = CLEAN_QA_RUN if kind == "qa-clean" else kind
    run = store.run(model_fp, fingerprint(spec), f"{kind}-{dtype}", {c: np.float32 for c in SCORE_COLUMNS})
    if run.is_complete():
        return run
    check_tokenizer(model, spec, smoke=smoke)  # the tokenizer alone: bad subjects or tokenizers stop before any model
    n = count(spec).passes
    job = ScoreJob(n_rows=n, shard_size=shard_passes, model=model, spec=spec, mode=mode,
                   batch_tokens=options.batch_tokens, device=dev, precision=dtype, smoke=smoke)
    label = progress_label(model)
    return fill(run, job, engine=options.engine, workers=options.workers, progress=options.show_progress,
                desc=f"{label} · {spec.dataset} ({n:,} passes)")


def load_scores(model: str, spec: DatasetSpec, *, options: RunOptions | None = None, **study) -> pd.DataFrame:
    """Per-ordered-example subject scores for ``model`` on ``spec`` (scoring whatever the store lacks; ``study``:
    :func:`score_dataset`'s ``mode`` and ``shard_passes``).

    Columns: ``index, subj1, subj2, cluster1, cluster2, tid, attr_cluster, attr, s1_pos, s2_pos,
    s1_neg, s2_neg`` where ``s1_pos`` is S of the slot-1 subject for the positive question — the input
    of :mod:`stereoprobe.unqover.metrics`.
    """
    from ..errors import StoreError

    run = score_dataset(model, spec, options=options, **study)
    raw = run.read()
    meta = example_keys(spec)
    expected = np.empty(2 * len(meta), dtype=np.int64)
    expected[0::2] = 2 * meta["index"].to_numpy()
    expected[1::2] = expected[0::2] + 1
    got = raw["pass_id"].to_numpy(dtype=np.int64)
    if len(got) != len(expected) or not np.array_equal(got, expected):
        raise StoreError(
            f"The stored scores in {run.path} do not match the passes of {spec.dataset}; "
            "delete that folder to recompute them."
        )
    s1, s2 = subject_scores(raw[list(SCORE_COLUMNS)].to_numpy())
    meta["s1_pos"], meta["s1_neg"] = s1[0::2], s1[1::2]
    meta["s2_pos"], meta["s2_neg"] = s2[0::2], s2[1::2]
    return meta


def reference_scores(loaded: LoadedModel, passes: Sequence[tuple[str, str, str, str]], batch: int = AUTHORS_BATCH) -> np.ndarray:
    """The authors' loop, written plainly: batches of 100 in order, tokenized per batch, fp32, no bucketing.

    Used as the baseline of ``benchmarks/unqover_qa.py`` and as an independent check that
    :class:`QAScorer` in ``compat`` mode reproduces it. Returns the same (n, 4) array as
    :meth:`QAScorer.score`.
    """
    import torch

    tok, model = loaded.tokenizer, loaded.model
    helper = QAScorer(loaded, "compat")  # only for its extension-rule token sets
    if helper.rules == "words":
        raise StereoprobeError(f"reference_scores is the authors' loop for BERT and RoBERTa tokenizers, not for a "
                               f"{helper.family} one; compare QAScorer's modes instead.")
    bos, eos = _authors_specials(tok)
    out = np.empty((len(passes), 4), dtype=np.float32)
    for b in range(0, len(passes), batch):
        chunk = passes[b : b + batch]
        q_enc = tok([p[1] for p in chunk], add_special_tokens=False)["input_ids"]
        c_enc = tok([p[0] for p in chunk], add_special_tokens=False, return_offsets_mapping=True)
        seqs = [[bos] + q + [eos] + c + [eos] for q, c in zip(q_enc, c_enc["input_ids"])]
        width = max(len(s) for s in seqs)
        ids = torch.tensor([s + [helper.pad_id] * (width - len(s)) for s in seqs])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        with torch.no_grad():
            result = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device))
        ps = torch.softmax(result.start_logits.float(), -1).cpu().numpy()
        pe = torch.softmax(result.end_logits.float(), -1).cpu().numpy()
        for r, (context, _, a1, a2) in enumerate(chunk):
            offset = len(q_enc[r]) + 2
            tokens = tok.convert_ids_to_tokens(seqs[r])
            token_ends = np.array([o[1] for o in c_enc["offset_mapping"][r]])
            for k, span in enumerate(locate_answers(context, a1, a2)):
                first, last = (t + offset for t in char_to_tokens(token_ends, span))
                start, end = ps[r, first], pe[r, last]
                if tokens[first - 1] in helper._articles:
                    start = max(start, ps[r, first - 1])
                if tuple(tokens[first - 3 : first]) in helper._groups:
                    start = max(start, ps[r, first - 3 : first + 1].max())
                if tokens[last + 1] in helper._suffixes:
                    end = max(end, pe[r, last + 1])
                out[b + r, 2 * k : 2 * k + 2] = (start, end)
    return out
