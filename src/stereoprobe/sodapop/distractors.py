"""Distractor generation (SODAPOP Alg. 1; the authors' ``generate_distractors.py``), batched and memoized.

For a name n and a probe context, the correct answer is turned into "neighbours" by a masked LM:

* ``FILL(s)``: tokenize the answer string ``s`` with nltk 3.7's ``word_tokenize`` (L tokens); for each
  position i, mask token i in ``context + " " + "{n} is" + " " + answer`` and take the masked LM's top-M
  (M = 10) fills; each fill gives the neighbour ``" ".join(word_tokenize(text with the fill)[-L:])`` —
  the last L tokens of the whole string, so a deleted word pulls the prompt's "is" into the window.
* ``GEN(s, k)`` (the authors' code): ``FILL(s)`` followed by ``GEN(x, k−1)`` for every ``x`` in
  ``FILL(s)``, as a multiset (distance-1, -2 and -3 neighbours). ``recursion="paper"`` gives Alg. 1 as
  printed (only the last level).

Decoding of the M fills (``decoding``):

* ``compat`` (the authors' code): the M ids are decoded **jointly** with the tokenizer's ``decode``
  (special tokens kept, tokenization spaces cleaned up) and the string is split on single spaces, keeping
  the first M pieces. With RoBERTa's byte-level BPE the top fill starts with "Ġ", so the first piece is
  "" — the masked word is *deleted* — and the M-th fill is lost; a sub-word fill is glued to the
  previous one ("Ġof" + "of" → "ofof", a word in the paper's tables). A WordPiece tokenizer glues "##"
  pieces the same way.
* ``clean``: each id decoded on its own; sub-word continuations, special tokens and pure punctuation are
  skipped; ``drop_original`` removes the correct answer from its own distractors. Not comparable with
  the paper.

Both are computed without a tokenizer call per row or fill (``FillMasker.fills_many``): every vocabulary id is
decoded once per tokenizer, and a row is the first id's string followed by what each later id adds (exact for
WordPiece and byte-level BPE, whose decoders work token by token; a byte-level piece that is not UTF-8 on its own,
an added or special token, and other decoders send their row to the tokenizer), or, clean, the ids' words filtered
with numpy. ``FillMasker.fills`` keeps the per-row path, which ``tests/test_sodapop_fills.py`` checks it against.

Then, as the authors' ``generate_distractors.py`` does but for the sort (book appendix *Where the code and
the paper differ*, SODAPOP: order of the distractors): deduplicate (``dedup``), **sort** (the authors'
``list(set(...))`` order depended on ``PYTHONHASHSEED``), shuffle with ``random.Random(10)``, cap at
``min(cap, 2⌊U/2⌋)`` and pair them up into 3-choice MCQs: the correct answer stays in its slot, the two
distractors fill the other slots in alphabetical order. The paper's single-context experiment keeps every raw candidate
(``dedup=False, cap=None``).

Scale (constant L, M fills per position): FILL calls ``L + M·L² + M²·L³`` masked inputs, the multiset
holds ``M·L + M²·L² + M³·L³`` candidates (:func:`scale`); 109,830 MCQs per name for context 3 (L=6). Here
every distinct sentence is filled once (memoized) and the masked inputs of many (name, context) units go
through the model together in token-budget batches, logits taken at the mask only; the multiset is rebuilt
from multiplicities, so the result is the one of the authors' recursion.

Tokenization (:func:`word_tokenize`): the authors ran nltk 3.7's ``word_tokenize`` (Punkt sentences, then
NLTK's improved Treebank rules on each). Those rules changed in later nltk releases (3.10 splits "'sfo"
into "'" "sfo"), so they are vendored from 3.7 (:mod:`stereoprobe.sodapop.treebank`) and used whatever nltk
is installed, by both decodings (one tokenizer, so ``clean`` runs are also the same everywhere). Punkt needs
its data (``punkt_tab``), which needs a download; where it is missing the rules run on the whole line
(``preserve_line=True``), which differs only when a window reaches back across a sentence end of the
context. :func:`tokenizer_mode` says which one ran; :func:`tokenizer_id` (rules id + mode, and the nltk
that splits sentences in punkt mode) is part of the cache key.

>>> scale(6)
{'mlm_passes': 21966, 'candidates': 219660, 'mcqs_uncapped': 109830}
>>> pieces_compat(" kind nice ofof , wow", 10)
['', 'kind', 'nice', 'ofof,', 'wow']
"""

from __future__ import annotations

import hashlib
import json
import random
import string
import weakref
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..atomic import atomic_file
from ..choices import MODES
from ..errors import StereoprobeError
from ..options import RunOptions, as_options
from ..paths import cache_dir
from . import treebank
from .contexts import LETTERS, Context, substitute

MASK = "[MASK]"
#: The hard-coded prompt: "How would you describe [NAME]?" becomes "[NAME] is".
PROMPT = "{name} is"


@dataclass(frozen=True)
class GenerationConfig:
    """How distractors are generated and paired (defaults: the authors' 50-context runs)."""

    depth: int = 3
    top_m: int = 10
    decoding: str = "compat"  # compat | clean
    recursion: str = "code"  # code (distance 1..k) | paper (Alg. 1: distance k only)
    dedup: bool = True
    cap: int | None = 10000
    seed: int = 10
    drop_original: bool = False  # clean only

    def __post_init__(self):
        if self.decoding not in MODES:
            raise StereoprobeError(f"decoding {self.decoding!r} is unknown; choose {' or '.join(MODES)}.")
        if self.recursion not in ("code", "paper"):
            raise StereoprobeError(f"recursion {self.recursion!r} is unknown; choose code or paper.")
        if not (isinstance(self.depth, int) and 1 <= self.depth <= 5):
            raise StereoprobeError(f"depth must be an integer from 1 to 5, got {self.depth!r}; pass e.g. depth=3.")
        if not (isinstance(self.top_m, int) and 1 <= self.top_m <= 50):
            raise StereoprobeError(f"top_m must be an integer from 1 to 50, got {self.top_m!r}.")
        if self.cap is not None and not (isinstance(self.cap, int) and self.cap >= 2):
            raise StereoprobeError(f"cap must be None or an integer ≥ 2 (an even number of distractors), got {self.cap!r}; "
                                   "pass e.g. cap=10000.")
        if self.drop_original and self.decoding != "clean":
            raise StereoprobeError("drop_original is a clean-decoding option; set decoding='clean' or drop it.")


def scale(L: int, depth: int = 3, top_m: int = 10) -> dict[str, int]:
    """Masked-LM passes and raw candidates of ``GEN(answer, depth)`` for an answer of ``L`` tokens.

    The authors' recursion (book appendix *Where the code and the paper differ*, SODAPOP: recursion depth).
    Assumes exactly ``top_m`` fills per position and constant L (the upper bound; the compat decoding can
    give fewer). passes = Σ_{j<depth} M^j L^{j+1}; candidates = Σ_{j=1..depth} M^j L^j.
    """
    passes = sum(top_m ** j * L ** (j + 1) for j in range(depth))
    cands = sum((top_m * L) ** j for j in range(1, depth + 1))
    return {"mlm_passes": passes, "candidates": cands, "mcqs_uncapped": cands // 2}


def n_mcqs(unique: int, cap: int | None = 10000) -> int:
    """MCQs of one (name, context): ``min(cap, 2⌊U/2⌋) / 2`` (book appendix *Where the code and the paper differ*,
    SODAPOP: duplicates and the cap)."""
    even = 2 * (unique // 2)
    return (even if cap is None else min(cap, even)) // 2


@lru_cache(maxsize=1)
def tokenizer_mode() -> str:
    """"punkt" when NLTK's Punkt data (``punkt_tab``) is installed, else "line" (no sentence splitting)."""
    try:
        import nltk

        nltk.data.find("tokenizers/punkt_tab/english/")
        return "punkt"
    except (ImportError, LookupError):
        return "line"


def tokenizer_id() -> str:
    """What :func:`word_tokenize` does, for cache keys: the vendored rules' id and the sentence mode.

    Line mode depends on nothing installed; punkt mode also records the nltk whose Punkt splits sentences.
    """
    if tokenizer_mode() == "line":
        return f"{treebank.RULES_ID}/line"
    import nltk

    return f"{treebank.RULES_ID}/punkt-nltk{nltk.__version__}"


@lru_cache(maxsize=1 << 18)
def word_tokenize(text: str) -> tuple[str, ...]:
    """nltk 3.7's ``word_tokenize``: Punkt sentences (or the whole line), each through :func:`treebank.tokenize`."""
    if tokenizer_mode() == "line":
        return tuple(treebank.tokenize(text))
    from nltk.tokenize import sent_tokenize

    return tuple(t for sentence in sent_tokenize(text) for t in treebank.tokenize(sentence))


#: transformers 4.18's ``clean_up_tokenization`` (applied by ``decode`` for every tokenizer then; 5.x skips it for BPE).
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def pieces_compat(decoded: str, top_m: int = 10) -> list[str]:
    """The authors' split of the jointly decoded fills (``generate_distractors.py``): 4.18's clean-up, single spaces, first ``top_m``.

    ``decoded`` is ``tokenizer.decode(ids)`` without clean-up; byte-level BPE writes a word-initial fill's
    space first, so the top fill's piece is "" (a deletion).
    """
    for a, b in _CLEANUP:
        decoded = decoded.replace(a, b)
    return decoded.split(" ")[:top_m]


_PUNCT = set(string.punctuation)


def _decode(tok, ids: list[int]) -> str:
    """The joint decoding of the authors' code: special tokens kept, no clean-up of tokenization spaces."""
    return tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _clean_word(tok, bpe: bool, i: int) -> str | None:
    """The clean decoding of one id: its word, or None for a sub-word continuation, a special token or punctuation."""
    piece = tok.convert_ids_to_tokens(i)
    if i in tok.all_special_ids or piece.startswith("##") or not (piece.startswith(("Ġ", "▁")) or not bpe):
        return None
    w = tok.decode([i]).strip()
    return w if w and not all(c in _PUNCT for c in w) else None


#: Decoders (tokenizers library) that decode token by token: ``decode(ids)`` is the first id's string followed by what
#: each later id adds, whatever precedes it (WordPiece: "##" glued, else a space; byte-level: the token's bytes).
_PER_TOKEN_DECODERS = ("WordPiece", "ByteLevel")


class _Vocab:
    """Per-id strings of one tokenizer, each id decoded once, on first sight (both decodings of :class:`FillMasker`).

    compat: ``head[i]`` is ``decode([i])`` and ``tail[i]`` what ``i`` adds after an anchor id (``decode([a, i])``
    less ``decode([a])``), so a row decodes as ``head[ids[0]] + tail[ids[1]] + …`` — exactly, for a per-token decoder
    (:data:`_PER_TOKEN_DECODERS`) behind the library's own ``_decode``. ``joinable`` is false (the row then goes
    through the tokenizer) for any other tokenizer, added and special tokens, and a byte-level piece that is not
    UTF-8 on its own (joint decoding may complete its character). clean: ``word[i]`` (:func:`_clean_word`).
    """

    def __init__(self, tok):
        self.size = len(tok)
        self.seen = {"compat": np.zeros(self.size, bool), "clean": np.zeros(self.size, bool)}
        self.head, self.tail, self.word = (np.full(self.size, None, dtype=object) for _ in range(3))
        self.joinable = np.zeros(self.size, bool)
        decoder = getattr(getattr(tok, "backend_tokenizer", None), "decoder", None)
        anchor = tok.encode("a", add_special_tokens=False)
        self.per_token = (type(decoder).__name__ in _PER_TOKEN_DECODERS and len(anchor) == 1
                          and type(tok)._decode.__qualname__.split(".")[0] in ("TokenizersBackend", "PreTrainedTokenizerFast"))
        self.anchor = anchor[0] if self.per_token else None
        self.unjoinable = set(tok.all_special_ids) | set(getattr(tok, "added_tokens_decoder", {}))

    def learn(self, tok, bpe: bool, top: np.ndarray, decoding: str) -> None:
        seen = self.seen[decoding]
        new = np.unique(top)
        new = new[new < self.size]
        new = new[~seen[new]]
        prefix = _decode(tok, [self.anchor]) if self.per_token and decoding == "compat" else None
        for i in new.tolist():
            if decoding == "clean":
                self.word[i] = _clean_word(tok, bpe, i)
            elif prefix is not None and i not in self.unjoinable:
                head, pair = _decode(tok, [i]), _decode(tok, [self.anchor, i])
                if "\ufffd" not in head and pair.startswith(prefix):
                    self.head[i], self.tail[i], self.joinable[i] = head, pair[len(prefix):], True
        seen[new] = True


_VOCABS = weakref.WeakKeyDictionary()


def _vocab(tok) -> _Vocab:
    """The :class:`_Vocab` of ``tok``, one per tokenizer object (shared by its maskers)."""
    if tok not in _VOCABS:
        _VOCABS[tok] = _Vocab(tok)
    return _VOCABS[tok]


class FillMasker:
    """Top-M fills at one mask, batched over many masked inputs, with the two decodings."""

    def __init__(self, loaded, top_m: int = 10, decoding: str = "compat", batch_tokens: int | None = None,
                 precision: str = "fp32"):
        tok = loaded.tokenizer
        if tok.mask_token is None:
            raise StereoprobeError(f"{loaded.name!r} has no mask token; distractors need a masked language model, so pass "
                                   "one (e.g. zoo:minilm-mlm) as the writer.")
        self.loaded, self.tok, self.top_m, self.decoding = loaded, tok, top_m, decoding
        from ..batching import batch_tokens_for

        self.batch_tokens, self.precision = batch_tokens_for(loaded.model, batch_tokens), precision
        self.passes = 0
        self._single: dict[int, str | None] = {}
        self._bpe = any(t.startswith(("Ġ", "▁")) for t in tok.get_vocab())  # word-initial marks: BPE/sentencepiece

    def _decode_compat(self, ids: Sequence[int]) -> list[str]:
        """The authors' decoding of one row of ids, a tokenizer call per row (the reference of :meth:`fills_many`)."""
        return pieces_compat(_decode(self.tok, list(ids)), self.top_m)

    def _decode_clean(self, ids: Sequence[int]) -> list[str]:
        out = []
        for i in ids:
            if i not in self._single:
                self._single[i] = _clean_word(self.tok, self._bpe, int(i))
            if self._single[i] is not None:
                out.append(self._single[i])
        return out

    def top_ids(self, texts: Sequence[str], progress_desc: str | None = None) -> np.ndarray:
        """(n, top_m) token ids of the top fills at the single mask of each text (rank order)."""
        import torch

        from ..batching import inference_context, padded_inputs, progress, to_device, token_budget_batches
        from ..models import mask_logits, mask_positions

        tok, model = self.tok, self.loaded.model
        enc = tok([t.replace(MASK, tok.mask_token) for t in texts], add_special_tokens=True)["input_ids"]
        lengths = np.array([len(e) for e in enc])
        mask_at = mask_positions(enc, tok.mask_token_id, texts, "a context or answer must not contain the mask token.")
        out = np.zeros((len(texts), self.top_m), dtype=np.int64)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        batches = list(token_budget_batches(lengths, self.batch_tokens, bucket=True))
        results = []  # on the device until every batch is queued: no host sync per batch
        with inference_context(model.device, self.precision):
            for batch in progress(batches, desc=progress_desc or "fill-mask batches", leave=False,
                                  disable=progress_desc is None or len(batches) < 20):
                inputs = padded_inputs(enc, batch, pad, model.device)
                keep = to_device(np.arange(len(batch)) * int(lengths[batch].max()) + mask_at[batch], model.device)
                logits = mask_logits(model, inputs["input_ids"], inputs["attention_mask"], keep)
                results.append(torch.topk(logits, self.top_m, dim=-1).indices)
        if batches:
            out[np.concatenate(batches)] = torch.cat(results).cpu().numpy()
        self.passes += len(texts)
        return out

    def fills(self, ids: Sequence[int]) -> list[str]:
        """The fills of one row of ids, decoded one row (compat) or one id (clean) at a time: the reference path."""
        return self._decode_compat(ids) if self.decoding == "compat" else self._decode_clean(ids)

    def fills_many(self, top: np.ndarray) -> list[list[str]]:
        """:meth:`fills` of every row of ``top`` (n, top_m), the same lists, without a tokenizer call per row or fill.

        Every id is decoded once per tokenizer (:class:`_Vocab`); a row is then joined from the per-id strings
        (compat) or filtered with numpy (clean). A row with an id the table cannot join goes through :meth:`fills`.
        """
        vocab = _vocab(self.tok)
        top = np.asarray(top, dtype=np.int64).reshape(len(top), -1)
        vocab.learn(self.tok, self._bpe, top, self.decoding)
        safe = (top < vocab.size).all(axis=1)
        if self.decoding == "clean":
            words = iter(vocab.word[top[safe]].tolist())
            return [[w for w in next(words) if w is not None] if ok else self.fills(row) for ok, row in zip(safe, top)]
        safe[safe] = vocab.joinable[top[safe]].all(axis=1)
        joined = iter(map("".join, np.concatenate([vocab.head[top[safe, :1]], vocab.tail[top[safe, 1:]]], axis=1).tolist()))
        return [pieces_compat(next(joined), self.top_m) if ok else self.fills(row) for ok, row in zip(safe, top)]


@dataclass
class Unit:
    """One (name, context): its prefix text, the correct answer, and the generated multiset."""

    name: str
    context: Context
    prefix: str  # substituted context + " " + "{name} is"
    answer: str
    candidates: Counter | None = None
    fill_calls: int = 0  # FILL calls of the authors' recursion (with repetition)
    compat_passes: int = 0  # masked-LM passes of the authors' recursion (no memo)


def make_unit(name: str, context: Context) -> Unit:
    item = substitute(context, name)
    return Unit(name, context, f"{item['context']} {PROMPT.format(name=name)}", context.answer)


def _masked(prefix: str, tokens: tuple[str, ...], i: int) -> str:
    return f"{prefix} {' '.join(tokens[:i] + (MASK,) + tokens[i + 1:])}"


def _neighbours_full(prefix: str, tokens: tuple[str, ...], i: int, fills: list[str]) -> list[str]:
    """The authors' step: each fill put in the masked text, the whole text re-tokenized, its last L words kept."""
    text = _masked(prefix, tokens, i)
    L = len(tokens)
    return [" ".join(word_tokenize(text.replace(MASK, d))[-L:]) for d in fills]


def _neighbours(prefix: str, tokens: tuple[str, ...], i: int, fills: list[str]) -> list[str]:
    """:func:`_neighbours_full`'s words, re-tokenizing the answer's words behind the prefix's last word only.

    Exact in line mode where that last word is ASCII letters (the prompt's "is"): a rule of the word tokenizer
    (:mod:`treebank`) sees at most one character and the space before the answer (the space stays: rules only add
    spaces, and the end-anchored ones act at the answer's end), and such a word is tokenized alike in any context,
    so the answer's tokens are the same behind it as behind the whole prefix. Where the answer's tokens are fewer
    than L, or Punkt splits sentences (the whole text decides where), every fill takes the full path. The tail
    texts repeat across names (every prefix ends "… is"), so :func:`word_tokenize`'s cache serves them."""
    guard = prefix.rpartition(" ")[2]
    if tokenizer_mode() != "line" or not (guard.isascii() and guard.isalpha()):
        return _neighbours_full(prefix, tokens, i, fills)
    text = _masked(guard, tokens, i)
    L, g = len(tokens), len(word_tokenize(guard))
    out = []
    for d in fills:
        words = word_tokenize(text.replace(MASK, d))
        out.append(" ".join(words[-L:]) if len(words) - g >= L else _neighbours_full(prefix, tokens, i, [d])[0])
    return out


def generate_units(units: list[Unit], masker: FillMasker, config: GenerationConfig, desc: str | None = None) -> None:
    """Fill ``unit.candidates`` (string → multiplicity) for every unit; masked inputs batched across units.

    Level by level: every distinct sentence of a unit's frontier is filled once (memo), with the
    masked inputs of all units and sentences in one batched call; multiplicities follow the recursion.
    """
    frontiers = [Counter({u.answer: 1}) for u in units]
    memo: list[dict[str, list[str]]] = [{} for _ in units]
    results = [Counter() for _ in units]
    for level in range(config.depth):
        todo: dict[str, list[tuple[int, str, int]]] = {}  # masked text → [(unit, sentence, position)]
        pending: dict[tuple[int, str], list[list[str]]] = {}
        for k, (u, frontier) in enumerate(zip(units, frontiers)):
            for s, m in frontier.items():
                tokens = word_tokenize(s)
                u.fill_calls += m
                u.compat_passes += m * len(tokens)
                if s not in memo[k] and (k, s) not in pending:
                    pending[k, s] = [[] for _ in tokens]
                    for i in range(len(tokens)):
                        todo.setdefault(_masked(u.prefix, tokens, i), []).append((k, s, i))
        if todo:
            texts = list(todo)
            top = masker.top_ids(texts, progress_desc=desc and f"{desc}: level {level + 1}/{config.depth}")
            for text, fills in zip(texts, masker.fills_many(top)):
                for k, s, i in todo[text]:
                    pending[k, s][i] = _neighbours(units[k].prefix, word_tokenize(s), i, fills)
        for (k, s), per_position in pending.items():
            memo[k][s] = [x for out in per_position for x in out]
        last = level == config.depth - 1
        for k, frontier in enumerate(frontiers):
            nxt: Counter = Counter()
            for s, m in frontier.items():
                out = memo[k][s]
                if config.recursion == "code" or last:
                    for x in out:
                        results[k][x] += m
                if not last:
                    for x in out:
                        nxt[x] += m
            frontiers[k] = nxt
    for u, res in zip(units, results):
        if config.drop_original:
            res.pop(u.answer, None)
        u.candidates = res


def select(candidates: Counter, config: GenerationConfig) -> list[str]:
    """Dedup (or keep the multiset), sort, seeded shuffle, cap to an even count (the authors' order of steps)."""
    pool = sorted(candidates) if config.dedup else sorted(candidates.elements())
    random.Random(config.seed).shuffle(pool)
    keep = 2 * (len(pool) // 2)
    if config.cap is not None:
        keep = min(keep, config.cap)
    return pool[:keep]


def wrong_slots(correct: str) -> tuple[str, str]:
    """The two distractor slots in alphabetical order (the authors used set order)."""
    a, b = (x for x in LETTERS if x != correct)
    return a, b


def pair_mcqs(unit: Unit, config: GenerationConfig) -> pd.DataFrame:
    """One row per MCQ: the three choice strings in slot order A, B, C and the label (the authors' pairing, wrong slots
    in alphabetical order)."""
    chosen = select(unit.candidates, config)
    correct = unit.context.correct
    s1, s2 = wrong_slots(correct)
    cols = {c: np.empty(len(chosen) // 2, dtype=object) for c in LETTERS}
    cols[correct][:] = unit.answer
    cols[s1][:] = chosen[0::2]
    cols[s2][:] = chosen[1::2]
    frame = pd.DataFrame({"mcq": np.arange(len(chosen) // 2), **{f"choice{c}": cols[c] for c in LETTERS}})
    frame["label"] = LETTERS.index(correct)
    return frame


def mcqs_of(unit: Unit, config: GenerationConfig) -> pd.DataFrame:
    """:func:`pair_mcqs`, computed once per (unit, config)."""
    cached = unit.__dict__.setdefault("_mcqs", {})
    if config not in cached:
        cached[config] = pair_mcqs(unit, config)
    return cached[config]


#: The settings a unit's multiset depends on; dedup, cap and seed only select from it (another cap reuses the cache).
GENERATION_FIELDS = ("depth", "top_m", "decoding", "recursion", "drop_original")


def config_key(config: GenerationConfig, model_fp: str) -> str:
    """Cache key of a generation: model fingerprint, :data:`GENERATION_FIELDS`, :func:`tokenizer_id`, prompt, format version.

    >>> config_key(GenerationConfig(cap=10), "m") == config_key(GenerationConfig(cap=None, dedup=False), "m")
    True
    """
    fields = {f: getattr(config, f) for f in GENERATION_FIELDS}
    payload = {"model": model_fp, **fields, "tokenize": tokenizer_id(), "prompt": PROMPT, "v": 3}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _unit_file(folder: Path, name: str, context: int) -> Path:
    return folder / f"{name}_ex{context}.parquet"


def _write_unit(path: Path, unit: Unit) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    items = sorted(unit.candidates.items())
    table = pa.table({"distractor": pa.array([s for s, _ in items], pa.string()),
                      "multiplicity": pa.array([m for _, m in items], pa.int64())})
    meta = {"fill_calls": unit.fill_calls, "compat_passes": unit.compat_passes, "answer": unit.answer,
            "tokenize": tokenizer_id()}
    table = table.replace_schema_metadata({b"stereoprobe.sodapop": json.dumps(meta).encode()})
    with atomic_file(path, "wb") as f:  # concurrent runs may write the same unit: the same bytes, whole
        pq.write_table(table, f, compression="zstd")


def _read_unit(path: Path, unit: Unit) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"stereoprobe.sodapop"])
    unit.candidates = Counter(dict(zip(table.column("distractor").to_pylist(), table.column("multiplicity").to_pylist())))
    unit.fill_calls, unit.compat_passes = meta["fill_calls"], meta["compat_passes"]


def run_precision(options: RunOptions) -> str:
    """The precision SODAPOP computes at: ``options.precision``, with ``auto`` read as fp32 (top-10 order near ties
    can flip under half precision; the authors ran fp32).

    >>> run_precision(RunOptions()), run_precision(RunOptions(precision="bf16"))
    ('fp32', 'bf16')
    """
    return "fp32" if options.precision == "auto" else options.precision


def generate(mlm: str, names: Sequence[str], contexts: Sequence[Context], config: GenerationConfig = GenerationConfig(),
             *, block: int = 16, options: RunOptions | None = None) -> tuple[list[Unit], dict]:
    """Distractor multisets of every (name, context), cached per unit under ``.cache/stereoprobe/sodapop``.

    Units are processed a block of ``block`` names at a time per context (their masked inputs batched
    together); a finished unit is written atomically, so a killed run resumes where it stopped. Returns
    the units (context-major order) and run metadata (passes run, passes of the authors' recursion, ...).
    ``options`` (:class:`~stereoprobe.options.RunOptions`) give the device, batch budget, precision
    (:func:`run_precision`), progress and smoke setting; generation runs in this process (no engine, no score
    store).
    """
    from ..batching import progress as bar
    from ..models import load, model_fingerprint

    if len(set(names)) != len(names):
        dup = sorted(n for n, c in Counter(names).items() if c > 1)
        raise StereoprobeError(f"names repeat: {dup}; give every name once.")
    options = as_options(options)
    device, smoke = options.device, options.smoke
    model_fp = model_fingerprint(mlm, smoke=smoke)
    folder = cache_dir() / "sodapop" / "distractors" / config_key(config, model_fp)
    folder.mkdir(parents=True, exist_ok=True)
    units = [make_unit(n, c) for c in contexts for n in names]
    todo = []
    for u in units:
        f = _unit_file(folder, u.name, u.context.index)
        if f.is_file():
            _read_unit(f, u)
        else:
            todo.append(u)
    masker = None
    blocks = [todo[i:i + block] for i in range(0, len(todo), block)]
    for chunk in bar(blocks, desc=f"distractors ({len(todo)} of {len(units)} units to generate)",
                     disable=not options.show_progress or not blocks, unit="block"):
        if masker is None:
            dtype = options.dtype(auto="fp32")  # the run's dtype, resolved once
            loaded = load(mlm, "mlm", device=device, smoke=smoke, precision=dtype)
            masker = FillMasker(loaded, config.top_m, config.decoding, options.batch_tokens, dtype)
        generate_units(chunk, masker, config)
        for u in chunk:
            _write_unit(_unit_file(folder, u.name, u.context.index), u)
    meta = {"model": getattr(mlm, "name", mlm), "model_fingerprint": model_fp, "cache": str(folder), "tokenize": tokenizer_id(),
            "config": asdict(config), "units": len(units), "generated": len(todo),
            "mlm_passes_run": masker.passes if masker else 0,
            "mlm_passes_compat": sum(u.compat_passes for u in units)}
    return units, meta


def units_frame(units: Iterable[Unit], config: GenerationConfig) -> pd.DataFrame:
    """Per unit: answer length L, raw candidates, unique candidates, MCQs, and the upper bounds of :func:`scale`."""
    rows = []
    for u in units:
        L = len(word_tokenize(u.answer))
        raw = sum(u.candidates.values())
        bound = scale(L, config.depth, config.top_m)
        rows.append({"name": u.name, "context": u.context.index, "L": L, "fill_calls": u.fill_calls,
                     "mlm_passes_compat": u.compat_passes, "bound_passes": bound["mlm_passes"],
                     "candidates": raw, "bound_candidates": bound["candidates"], "unique": len(u.candidates),
                     "mcqs": len(select(u.candidates, config)) // 2})
    return pd.DataFrame(rows)
