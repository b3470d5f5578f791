"""What kind of tokenizer a model has, read from its ``tokenizer.json`` (no torch, no model weights).

The UnQover span rules (Li et al., 2020; the authors' ``qa_hf/predict.py``) were written for two token
spellings: WordPiece (BERT: ``a``, ``man``) and byte-level BPE (RoBERTa: ``ĠA``, ``Ġman``, the paragraph's
first word without ``Ġ``). :func:`describe_tokenizer` says which family a fast tokenizer belongs to, how
it marks the start of a word, and so which rules ``compat`` applies; :func:`word_tokens` finds the tokens
a word takes in mid-sentence (after a space) for any family, from character offsets.

>>> info = TokenizerInfo("sentencepiece", "Unigram", "▁", prefix_space=True, lowercase=False)
>>> info.compat_rules
'words'
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .errors import ModelLoadError, StereoprobeError

FAMILIES = ("bert", "roberta", "sentencepiece", "bpe", "wordlevel")


@dataclass(frozen=True)
class TokenizerInfo:
    """A tokenizer's family as the UnQover span rules see it.

    ``family``: ``bert`` (WordPiece), ``roberta`` (byte-level BPE), ``sentencepiece`` (``▁`` Metaspace, Unigram or
    BPE: ALBERT, DeBERTa-v3, XLM-R, T5, Llama), ``bpe`` (other BPE, e.g. ``</w>`` suffixes), ``wordlevel``.
    ``model``: the backend model type (WordPiece, BPE, Unigram, WordLevel). ``word_initial_marker``: what starts
    a word's first token (``Ġ``, ``▁``; None when spaces leave no mark). ``prefix_space``: a text's first word is
    tokenized as if a space preceded it (false for RoBERTa, hence the authors' first-token asymmetry; true where
    spaces leave no mark). ``lowercase``: the normalizer lower-cases (uncased models).
    """

    family: str
    model: str
    word_initial_marker: str | None
    prefix_space: bool
    lowercase: bool

    @property
    def compat_rules(self) -> str:
        """Span-extension rules of ``compat``: the authors' token-string rules (``bert`` / ``roberta``) for the two
        families they ran, the word-level rules of ``clean`` (``words``) for the rest, which they never ran."""
        return self.family if self.family in ("bert", "roberta") else "words"


def _nodes(node):
    """Every component (dict with a ``type``) of a serialized normalizer / pre-tokenizer / decoder, nested ones too."""
    if isinstance(node, dict):
        if "type" in node:
            yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def describe_tokenizer(tokenizer) -> TokenizerInfo:
    """The :class:`TokenizerInfo` of a fast (``tokenizers``-backed) tokenizer, read from its backend JSON.

    Raises :class:`~stereoprobe.errors.ModelLoadError` for a tokenizer without character offsets (not fast).

    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import PreTrainedTokenizerFast
    >>> words = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    >>> words.pre_tokenizer = pre_tokenizers.Whitespace()
    >>> describe_tokenizer(PreTrainedTokenizerFast(tokenizer_object=words))
    TokenizerInfo(family='wordlevel', model='WordLevel', word_initial_marker=None, prefix_space=True, lowercase=False)
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", True):
        raise ModelLoadError(f"{type(tokenizer).__name__} is not a fast tokenizer: UnQover needs character offsets; "
                             "pass a model folder with a tokenizer.json.")
    state = json.loads(backend.to_str())
    kind = (state.get("model") or {}).get("type")
    pre, norm, dec = (list(_nodes(state.get(k))) for k in ("pre_tokenizer", "normalizer", "decoder"))
    byte_level = [n for n in pre + dec if n["type"] == "ByteLevel"]
    metaspace = [n for n in pre + dec if n["type"] == "Metaspace"]
    # SentencePiece BPE without a pre-tokenizer (Llama): the normalizer writes "▁" for spaces, maybe prepends one
    spm_norm = [n for n in norm if n["type"] in ("Replace", "Prepend") and "▁" in (n.get("content") or n.get("prepend", ""))]
    lowercase = any(n["type"] == "Lowercase" or (n["type"] == "BertNormalizer" and n.get("lowercase")) for n in norm)
    if kind == "WordPiece":
        return TokenizerInfo("bert", kind, None, True, lowercase)
    if kind == "BPE" and byte_level:
        return TokenizerInfo("roberta", kind, "Ġ", bool(byte_level[0].get("add_prefix_space")), lowercase)
    if kind in ("BPE", "Unigram") and (metaspace or spm_norm):
        if metaspace:
            m = metaspace[0]
            prefix = m.get("prepend_scheme", "always" if m.get("add_prefix_space", True) else "never") != "never"
        else:
            prefix = any(n["type"] == "Prepend" for n in spm_norm)
        return TokenizerInfo("sentencepiece", kind, "▁", prefix, lowercase)
    if kind == "Unigram":
        return TokenizerInfo("sentencepiece", kind, None, True, lowercase)
    if kind == "BPE":
        return TokenizerInfo("bpe", kind, None, True, lowercase)
    if kind == "WordLevel":
        return TokenizerInfo("wordlevel", kind, None, True, lowercase)
    raise ModelLoadError(f"Tokenizer model {kind!r} is not supported by the UnQover span rules (WordPiece, BPE, "
                         "Unigram or WordLevel).")


def word_tokens(tokenizer, word: str) -> list[int]:
    """Token ids of ``word`` as it is tokenized in mid-sentence, after a space (``Ġmary``, ``▁Mary``, ``mary``).

    Tokenizes ``"a " + word`` and keeps the tokens that cover anything after the ``a``, found from the offsets,
    so a bare ``Ġ`` / ``▁`` piece in front of the word counts as one of its tokens (the word is then not a
    single token: a mask stands for the whole space-prefixed piece; McGill-NLP/bias-bench issue #5 is the
    bug of taking the form without the space).

    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import PreTrainedTokenizerFast
    >>> vocab = {c: i for i, c in enumerate(["a", "r", "y", "M", "Ġ", "ar", "ary", "ĠM", "ĠMary"])}
    >>> bpe = Tokenizer(models.BPE(vocab, [("a", "r"), ("ar", "y"), ("Ġ", "M"), ("ĠM", "ary")]))
    >>> bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    >>> tok = PreTrainedTokenizerFast(tokenizer_object=bpe)
    >>> tok.convert_ids_to_tokens(word_tokens(tok, "Mary")), tok.convert_ids_to_tokens(tok("Mary")["input_ids"])
    (['ĠMary'], ['M', 'ary'])
    """
    enc = tokenizer("a " + word, add_special_tokens=False, return_offsets_mapping=True)
    picked = [(i, s) for i, (s, e) in zip(enc["input_ids"], enc["offset_mapping"]) if e > 1]
    if picked and picked[0][1] < 1:
        raise StereoprobeError(f"The tokenizer merges {word!r} with the word before it ('a {word}' has a token across "
                               "the space); its mid-sentence tokens cannot be told apart.")
    return [i for i, _ in picked]
