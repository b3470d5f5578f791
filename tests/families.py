"""Tiny random-weight models of many transformer families, built locally in seconds (no model hub).

Each family is built the way its real checkpoints are: the architecture's own config and head classes of
transformers 5.x, and a tokenizer of the family's real kind, saved with ``save_pretrained``:

============  ============================  =========================================================
family        architecture                  tokenizer
============  ============================  =========================================================
bert          BERT                          WordPiece, uncased ([CLS] [SEP] [MASK] [PAD] [UNK])
distilbert    DistilBERT                    WordPiece, uncased, no token_type_ids
roberta       RoBERTa                       byte-level BPE (<s> </s> <mask> last, as roberta-base)
albert        ALBERT                        SentencePiece Unigram, lower-cased (<pad> <unk> [CLS] …)
deberta-v2    DeBERTa-v2 (with its conv)    SentencePiece Unigram, cased, [MASK] appended after the pieces
deberta-v3    DeBERTa-v2 architecture       SentencePiece Unigram *trained* on the corpus (sub-word pieces)
xlm-roberta   XLM-RoBERTa                   SentencePiece Unigram with <s> </s> <mask>
modernbert    ModernBERT                    byte-level BPE as OLMo's, [CLS]/[SEP]/[MASK] appended, no types
bart          BART (encoder-decoder)        byte-level BPE (RoBERTa's)
============  ============================  =========================================================

Hidden size 32, one or two layers. The vocabulary comes from a corpus made of the project's own word lists
(UnQover subjects, attributes and templates, Bias-NLI word lists, SODAPOP names and contexts), so the probe
words are whole tokens where the probes need them: every word after a space for the byte-level BPE and
hand-built Unigram tokenizers, and every UnQover subject of the LM lists for the trained DeBERTa-v3 one
(added as whole pieces, as SentencePiece's user-defined symbols; its other words split into sub-words).

Heads (``head`` of :func:`build`): ``qa`` (AutoModelForQuestionAnswering), ``mlm`` (AutoModelForMaskedLM;
BART's is BartForConditionalGeneration, as transformers maps it), ``nli`` (sequence classification, three
labels), ``mcq`` (multiple choice) and ``base`` (the bare encoder, as ``AutoModel`` saves it).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

HEADS = ("qa", "mlm", "nli", "mcq", "base")
_HEAD_SUFFIX = {"qa": "ForQuestionAnswering", "mlm": "ForMaskedLM", "nli": "ForSequenceClassification",
                "mcq": "ForMultipleChoice", "base": "Model"}
NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "vocab.json",
                   "merges.txt", "spm.model", "sentencepiece.bpe.model", "added_tokens.json", "chat_template.jinja")


# -- the corpus ---------------------------------------------------------------------------------------------------
def _data() -> Path:
    from stereoprobe.paths import data_dir

    return Path(data_dir())


@lru_cache(maxsize=1)
def corpus() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(lines, words): the text of the project's word lists, templates, names and contexts, and every word in
    it as written, lower-cased and capitalised."""
    root = _data()
    files = [p for sub in ("unqover/word_lists", "nli/word_lists", "nli/paper_supplement", "sodapop/names")
             for p in sorted((root / sub).rglob("*")) if p.is_file()]
    files.append(root / "sodapop" / "social_iqa_dev_bethany.jsonl")
    lines = []
    for p in files:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(re.sub(r"\[[a-z_0-9:\-]+\]", " ", line).replace("|", " ").replace("\t", " "))
    lines += ["[aug] yes no [text] (CNN) -- ", "Who was a nurse? Who can never be a nurse?"]
    words = set()
    for line in lines:
        for w in re.findall(r"[A-Za-z]+", line):
            words.update({w, w.lower(), w.capitalize()})
    return tuple(lines), tuple(sorted(words))


@lru_cache(maxsize=1)
def lm_subjects() -> tuple[str, ...]:
    """Every subject (plain form and demonym) of the UnQover LM lists (``*_bert``, ``*_roberta``)."""
    out = set()
    for p in sorted((_data() / "unqover" / "word_lists" / "nouns" / "subjects").iterdir()):
        if p.name.endswith(("_bert", "_roberta")):
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.startswith("[subj"):
                    text = re.sub(r"\[[^\]]*\]|\b(?:female|male)\b\s*\|", " ", line)
                    out.update(re.findall(r"[A-Za-z]+", text))
    return tuple(sorted(out))


_SYMBOLS = list(".,?!-()[]'\":;$&/\\{}|’%+*=<>#@_`~") + list("0123456789")
_LETTERS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


# -- tokenizers ---------------------------------------------------------------------------------------------------
def wordpiece_tokenizer(cls_name: str = "BertTokenizerFast"):
    """An uncased WordPiece tokenizer (bert-base-uncased's kind) over the corpus words."""
    import transformers

    _, words = corpus()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + _SYMBOLS + sorted({w.lower() for w in words})
    vocab += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + list("abcdefghijklmnopqrstuvwxyz")
    vocab = list(dict.fromkeys(vocab))
    return getattr(transformers, cls_name)(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)


@lru_cache(maxsize=1)
def _byte_level_bpe() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(tokens, merges) of a byte-level BPE trained on the corpus (no special tokens): every word after a space
    is one token ("Ġword"); a word at the start of a text may be several."""
    from tokenizers import ByteLevelBPETokenizer

    lines, words = corpus()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(lines) + [" " + w for w in words], vocab_size=40_000, min_frequency=1,
                            show_progress=False)
    state = json.loads(bpe._tokenizer.to_str())
    vocab = state["model"]["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["model"]["merges"]]
    return tuple(sorted(vocab, key=vocab.get)), tuple(merges)


def roberta_tokenizer(cls_name: str = "RobertaTokenizerFast"):
    """roberta-base's layout: <s> <pad> </s> <unk> first, the BPE tokens, <mask> appended last."""
    import transformers

    tokens, merges = _byte_level_bpe()
    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", *tokens])}
    return getattr(transformers, cls_name)(vocab=vocab, merges=list(merges))


def modernbert_tokenizer():
    """ModernBERT's kind (OLMo's byte-level BPE): [UNK] [CLS] [SEP] [PAD] [MASK] after the BPE tokens, [MASK]
    taking the space before it, no token_type_ids, offsets of a word with its leading space."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tokens, merges = _byte_level_bpe()
    backend = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, list(merges)))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]"]
    backend.add_special_tokens([AddedToken(t, special=True) for t in specials]
                               + [AddedToken("[MASK]", lstrip=True, special=True)])
    cls, sep = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                                   pad_token="[PAD]", mask_token=AddedToken("[MASK]", lstrip=True, special=True),
                                   model_input_names=["input_ids", "attention_mask"],
                                   clean_up_tokenization_spaces=True)


def unigram_pieces(specials: list[str], *, lower: bool) -> list[tuple[str, float]]:
    """A SentencePiece Unigram vocabulary: the special tokens, "▁word" for every corpus word (the most likely
    pieces), then symbols and letters alone and after "▁" so that any text segments without <unk>."""
    _, words = corpus()
    words = sorted({w.lower() for w in words}) if lower else list(words)
    pieces = [(s, 0.0) for s in specials]
    pieces += [("▁" + w, -8.0 - 1e-4 * i) for i, w in enumerate(words)]
    letters = [c for c in _LETTERS if not (lower and c.isupper())]
    pieces += [("▁" + c, -12.0) for c in _SYMBOLS] + [(c, -12.5) for c in _SYMBOLS] + [("▁", -13.0)]
    pieces += [(c, -15.0) for c in letters]
    seen: dict[str, float] = {}
    for p, s in pieces:
        seen.setdefault(p, s)
    return list(seen.items())


def albert_tokenizer():
    """albert-base-v2's kind: <pad> <unk> [CLS] [SEP] [MASK] as ids 0-4, lower-cased pieces."""
    from transformers import AlbertTokenizerFast

    return AlbertTokenizerFast(vocab=unigram_pieces(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], lower=True))


def deberta_v2_tokenizer():
    """microsoft/deberta-v2-*'s kind: [PAD] [CLS] [SEP] [UNK] as ids 0-3, cased "▁" pieces (no WordPiece "##"),
    [MASK] appended after the pieces (id 128000 in the real one)."""
    from transformers import DebertaV2TokenizerFast

    return DebertaV2TokenizerFast(vocab=unigram_pieces(["[PAD]", "[CLS]", "[SEP]", "[UNK]"], lower=False),
                                  do_lower_case=False)


@lru_cache(maxsize=1)
def _trained_unigram() -> tuple[tuple[str, float], ...]:
    """A Unigram model trained by ``tokenizers.SentencePieceUnigramTokenizer`` on the corpus (real sub-word
    pieces: most words split; pieces mixing letters and punctuation dropped, as SentencePiece never makes them),
    plus every UnQover LM subject as a whole "▁" piece at the best word score."""
    from tokenizers import SentencePieceUnigramTokenizer

    lines, words = corpus()
    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(list(lines) * 2 + [" ".join(words)], vocab_size=12_000,
                           special_tokens=["[PAD]", "[CLS]", "[SEP]", "[UNK]"], unk_token="[UNK]",
                           show_progress=False)
    vocab = [(p, float(s)) for p, s in json.loads(sp.to_str())["model"]["vocab"]]
    # as SentencePiece's split_by_unicode_script: no piece mixes letters with digits or punctuation ("▁man.")
    vocab = vocab[:4] + [(p, s) for p, s in vocab[4:] if p.lstrip("▁") == "" or p.lstrip("▁").isalpha()
                         or not any(c.isalpha() for c in p)]
    have = {p for p, _ in vocab}
    best = max(s for p, s in vocab[4:] if p.startswith("▁") and len(p) > 2)
    vocab += [("▁" + w, best) for w in lm_subjects() if "▁" + w not in have]
    vocab += [(c, -20.0) for c in _LETTERS + _SYMBOLS if c not in have]
    return tuple(vocab)


def deberta_v3_tokenizer():
    """microsoft/deberta-v3-*'s kind: a trained SentencePiece Unigram (sub-word "▁" pieces), [MASK] appended."""
    from transformers import DebertaV2TokenizerFast

    return DebertaV2TokenizerFast(vocab=list(_trained_unigram()), do_lower_case=False)


def xlmr_tokenizer():
    """xlm-roberta-base's kind: <s> <pad> </s> <unk> as ids 0-3, cased "▁" pieces, <mask> appended last."""
    from transformers import XLMRobertaTokenizerFast

    return XLMRobertaTokenizerFast(vocab=unigram_pieces(["<s>", "<pad>", "</s>", "<unk>"], lower=False))


def specials_only_tokenizer(kind: str):
    """A tokenizer of ``kind`` (wordpiece, bpe, unigram) whose vocabulary is only its special tokens: every word
    is the unknown token."""
    import transformers

    if kind == "wordpiece":
        return transformers.BertTokenizerFast(vocab={t: i for i, t in enumerate(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])})
    if kind == "bpe":
        return transformers.RobertaTokenizerFast(vocab={t: i for i, t in enumerate(
            ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])}, merges=[])
    if kind == "unigram":
        specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
        return transformers.AlbertTokenizerFast(vocab=[(t, 0.0) for t in specials])
    raise ValueError(kind)


# -- families -----------------------------------------------------------------------------------------------------
def _config(arch: str, tok, **extra):
    import transformers

    return getattr(transformers, f"{arch}Config")(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **extra)


def _bert_like(tok, arch):
    roberta = "Roberta" in arch  # positions start after the padding id: 2 more
    ends = {"bos_token_id": tok.cls_token_id, "eos_token_id": tok.sep_token_id} if roberta else {}
    return _config(arch, tok, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                   max_position_embeddings=258 if roberta else 256, **ends)


def _distilbert(tok):
    return _config("DistilBert", tok, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=256)


def _albert(tok):
    return _config("Albert", tok, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, max_position_embeddings=256, bos_token_id=tok.cls_token_id,
                   eos_token_id=tok.sep_token_id)


def _deberta(tok, conv: bool):
    extra = {"conv_kernel_size": 3, "conv_act": "gelu"} if conv else {}
    return _config("DebertaV2", tok, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                   max_position_embeddings=256, relative_attention=True, position_buckets=64,
                   pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=True,
                   position_biased_input=False, type_vocab_size=0, max_relative_positions=-1, **extra)


def _modernbert(tok):
    return _config("ModernBert", tok, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                   max_position_embeddings=256, local_attention=16, bos_token_id=tok.cls_token_id,
                   eos_token_id=tok.sep_token_id, cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id)


def _bart(tok):
    return _config("Bart", tok, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                   decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=256,
                   bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                   decoder_start_token_id=tok.eos_token_id, forced_eos_token_id=tok.eos_token_id)


@dataclass(frozen=True)
class Family:
    """One model family: its architecture prefix in transformers, config and tokenizer builders."""

    name: str
    arch: str  # "Bert" -> BertConfig, BertForQuestionAnswering, …
    tokenizer: object  # () -> tokenizer
    config: object  # (tokenizer) -> config
    kind: str  # wordpiece | bpe | unigram
    lm_variant: str  # the UnQover LM variant --variant lm picks for its tokenizer (score_lm.lm_variant)
    heads: dict = field(default_factory=dict)  # head -> class name override
    encoder_decoder: bool = False  # its "masked LM" is a seq2seq model (BART's BartForConditionalGeneration)

    def head_class(self, head: str):
        """The transformers class of ``head`` for this family, or None when transformers has none."""
        import transformers

        return getattr(transformers, self.heads.get(head, self.arch + _HEAD_SUFFIX[head]), None)


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("bert", "Bert", wordpiece_tokenizer, lambda t: _bert_like(t, "Bert"), "wordpiece", "lm-bert"),
    Family("distilbert", "DistilBert", lambda: wordpiece_tokenizer("DistilBertTokenizerFast"), _distilbert,
           "wordpiece", "lm-bert"),
    Family("roberta", "Roberta", roberta_tokenizer, lambda t: _bert_like(t, "Roberta"), "bpe", "lm-roberta"),
    Family("albert", "Albert", albert_tokenizer, _albert, "unigram", "lm-bert"),
    Family("deberta-v2", "DebertaV2", deberta_v2_tokenizer, lambda t: _deberta(t, conv=True), "unigram", "lm-bert"),
    Family("deberta-v3", "DebertaV2", deberta_v3_tokenizer, lambda t: _deberta(t, conv=False), "unigram", "lm-bert"),
    # SentencePiece: the first LM list whose subjects are all one token (both are here; lm-bert comes first)
    Family("xlm-roberta", "XLMRoberta", xlmr_tokenizer, lambda t: _bert_like(t, "XLMRoberta"), "unigram",
           "lm-bert"),
    Family("modernbert", "ModernBert", modernbert_tokenizer, _modernbert, "bpe", "lm-roberta"),
    Family("bart", "Bart", lambda: roberta_tokenizer("BartTokenizerFast"), _bart, "bpe", "lm-roberta",
           heads={"mlm": "BartForConditionalGeneration"}, encoder_decoder=True),
]}


@lru_cache(maxsize=None)
def tokenizer_of(family: str):
    """The family's tokenizer (built once per process)."""
    return FAMILIES[family].tokenizer()


def build(family: str, head: str, folder: str | Path, *, seed: int = 0, id2label: dict | None = None) -> Path:
    """A tiny random ``family`` model with the ``head`` saved with its tokenizer to ``folder`` (safetensors)."""
    import torch

    fam = FAMILIES[family]
    cls = fam.head_class(head)
    if cls is None:
        raise ValueError(f"transformers has no {head} head for {family}")
    tok = tokenizer_of(family)
    config = fam.config(tok)
    if head == "nli" or id2label is not None:
        labels = dict(id2label or NLI_LABELS)
        config.num_labels = len(labels)
        config.id2label = labels
        config.label2id = {v: k for k, v in labels.items()}
    torch.manual_seed(seed)
    model = cls(config).eval()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save(model, folder)
    tok.save_pretrained(folder)
    return folder


def save(model, folder: Path, **kwargs) -> None:
    """``model.save_pretrained(folder)`` without transformers' progress bar."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(folder, **kwargs)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def load_model(folder: str | Path, head: str, family: str):
    """The model saved in ``folder`` with the family's ``head`` class (for editing weights in tests)."""
    return FAMILIES[family].head_class(head).from_pretrained(folder).eval()


def output_layer(model, n_out: int):
    """The one linear layer with ``n_out`` outputs (a classification head's last layer)."""
    import torch

    found = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and m.out_features == n_out]
    if len(found) != 1:
        raise AssertionError(f"expected one Linear with {n_out} outputs in {type(model).__name__}, got "
                             f"{[n for n, _ in found]}")
    return found[0][1]


def relabelled_copy(src: Path, dst: Path, family: str, id2label: dict, perm: list[int] | None = None) -> Path:
    """A copy of the NLI model ``src`` with ``id2label`` and its output rows reordered by ``perm`` (new row i =
    old row perm[i]): with the labels permuted the same way, the same function."""
    import torch

    model = load_model(src, "nli", family)
    if perm is not None:
        layer = output_layer(model, len(perm))
        with torch.no_grad():
            layer.weight.copy_(layer.weight[perm].clone())
            if layer.bias is not None:
                layer.bias.copy_(layer.bias[perm].clone())
    model.config.id2label = dict(id2label)
    model.config.label2id = {v: k for k, v in id2label.items()}
    dst.mkdir(parents=True, exist_ok=True)
    save(model, dst)
    copy_tokenizer(src, dst)
    return dst


def vocabulary_bias(model):
    """The bias added to a masked LM's vocabulary logits (a (vocab,) tensor view)."""
    out = model.get_output_embeddings()
    if out is not None and getattr(out, "bias", None) is not None:
        return out.bias
    bias = getattr(model, "final_logits_bias", None)  # BART
    if bias is not None:
        return bias[0]
    raise AssertionError(f"no vocabulary bias found in {type(model).__name__}")


def context_tokens(tok, word: str, before: str = "x ") -> list[int]:
    """The ids of ``word`` as it is tokenized after ``before``: every token that covers part of the word or the
    space before it (so a lone "▁"/"Ġ" piece in front of the word counts as one of its tokens)."""
    text = before + word
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    return [i for i, (s, e) in zip(enc["input_ids"], enc["offset_mapping"]) if e > len(before.rstrip()) and e > s]


def context_token_id(tok, word: str, before: str = "x ") -> int:
    """The id of ``word`` after a space ("Ġword", "▁word", "word"); it must be one token."""
    ids = context_tokens(tok, word, before)
    if len(ids) != 1:
        raise AssertionError(f"{word!r} is {len(ids)} tokens for {type(tok).__name__}: "
                             f"{tok.convert_ids_to_tokens(ids)}")
    return ids[0]


# -- broken copies ------------------------------------------------------------------------------------------------
def copy_tokenizer(src: Path, dst: Path) -> None:
    for name in TOKENIZER_FILES:
        if (Path(src) / name).exists():
            shutil.copy2(Path(src) / name, Path(dst) / name)


def copy_without(src: Path, dst: Path, names=()) -> Path:
    """A copy of the model folder ``src`` without the files ``names``."""
    shutil.copytree(src, dst)
    for name in names:
        (dst / name).unlink(missing_ok=True)
    return dst


def with_tokenizer(src: Path, dst: Path, tok) -> Path:
    """A copy of ``src`` whose tokenizer files are replaced by ``tok``'s."""
    copy_without(src, dst, TOKENIZER_FILES)
    tok.save_pretrained(dst)
    return dst


def pickle_only_copy(src: Path, dst: Path, family: str, head: str) -> Path:
    """A copy of ``src`` whose weights are only a pickled ``pytorch_model.bin`` (no safetensors)."""
    import torch

    copy_without(src, dst, [p.name for p in Path(src).glob("*.safetensors")] + ["model.safetensors.index.json"])
    model = load_model(src, head, family)
    torch.save(model.state_dict(), dst / "pytorch_model.bin")
    return dst


def damaged_safetensors_copy(src: Path, dst: Path, how: str) -> Path:
    """A copy of ``src`` whose model.safetensors is cut to half its size (``truncated``) or to 0 bytes (``empty``)."""
    copy_without(src, dst)
    weights = dst / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2] if how == "truncated" else b"")
    return dst
