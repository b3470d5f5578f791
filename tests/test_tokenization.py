"""Tokenizer families (stereoprobe.tokenization) and the UnQover span / subject rules on each of them: WordPiece
(cased, uncased), byte-level BPE (with and without a prefix space), SentencePiece Unigram (DeBERTa-v3-, ALBERT- and
XLM-R-style ``▁`` Metaspace) and SentencePiece BPE, all trained or built locally on the UnQover texts."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import stereoprobe.models
from stereoprobe import RunOptions
from stereoprobe.choices import MODES
from stereoprobe.errors import ModelLoadError, StereoprobeError
from stereoprobe.models import LoadedModel
from stereoprobe.tokenization import describe_tokenizer, word_tokens
from stereoprobe.unqover import score_qa
from stereoprobe.unqover.generate import DatasetSpec, iter_examples
from stereoprobe.unqover.score_lm import LMScorer, check_subjects, lm_spec, lm_variant
from stereoprobe.unqover.score_qa import QAScorer, passes_of, reference_scores

DATASETS = ("ethnicity", "nationality", "gender", "religion")


def _passes(mode: str, n: int = 12) -> list[tuple[str, str, str, str]]:
    out = []
    for d in DATASETS:  # both orders of n sampled paper examples per dataset, both questions
        out += [p for _, p in passes_of(iter_examples(DatasetSpec(d, mode=mode, sample=n, seed=3)))]
    return out


def _texts() -> list[str]:
    texts = [t for m in MODES for c, q, _, _ in _passes(m, 60) for t in (c, q)]
    return texts + ["Several people met some folks. The few persons and their kids left the cities."] + \
        ["Mary met James."] * 200


_SPECIAL = {"bert": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
            "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]}


def _wordpiece(folder: Path, lowercase: bool):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    wp = BertWordPieceTokenizer(lowercase=lowercase)
    wp.train_from_iterator(_texts(), vocab_size=300, special_tokens=_SPECIAL["bert"])
    wp.save_model(str(folder))
    return BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=lowercase)


def _byte_level(folder: Path, prefix_space: bool):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_texts(), vocab_size=400, min_frequency=1, special_tokens=_SPECIAL["roberta"])
    bpe.save_model(str(folder))
    return RobertaTokenizerFast(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"),
                                add_prefix_space=prefix_space)


def _unigram(folder: Path, style: str):
    """A SentencePiece Unigram model trained on the texts, in the tokenizer class of DeBERTa-v3 (cased), ALBERT
    (lower-cased, whitespace-split: a bare "▁" shares its word's first offset) or XLM-R (<s> </s> <mask>)."""
    import json

    from tokenizers import SentencePieceUnigramTokenizer
    from transformers import AlbertTokenizerFast, DebertaV2TokenizerFast, XLMRobertaTokenizerFast

    texts = [t.lower() for t in _texts()] if style == "albert" else _texts()
    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(texts, vocab_size=250, special_tokens=["<pad>", "<unk>"], unk_token="<unk>")
    vocab = [tuple(v) for v in json.loads(sp.to_str())["model"]["vocab"]]
    cls, specials = {"deberta": (DebertaV2TokenizerFast, ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"]),
                     "albert": (AlbertTokenizerFast, ["[CLS]", "[SEP]", "[MASK]"]),
                     "xlmr": (XLMRobertaTokenizerFast, ["<s>", "</s>", "<mask>"])}[style]
    return cls(vocab=vocab + [(s, 0.0) for s in specials])


def _sp_bpe(folder: Path, legacy: bool = False):
    """SentencePiece BPE (``▁`` Metaspace, as tokenizers' SentencePieceBPETokenizer): its <mask> has no lstrip, so a
    bare "▁" stays in front of it. ``legacy``: as older Llama tokenizer.json files, no pre-tokenizer and a
    normalizer that prepends "▁" and writes "▁" for every space."""
    from tokenizers import SentencePieceBPETokenizer, decoders, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    sp = SentencePieceBPETokenizer()
    sp.train_from_iterator(_texts(), vocab_size=300, min_frequency=1, special_tokens=["<s>", "</s>", "<unk>", "<pad>",
                                                                                      "<mask>"])
    if legacy:
        sp.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        sp.pre_tokenizer = None
        sp.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Strip(" ", 1, 0)])
    ids = {t: sp.token_to_id(t) for t in ("<s>", "</s>")}
    sp.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                      special_tokens=list(ids.items()))
    return PreTrainedTokenizerFast(tokenizer_object=sp._tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", mask_token="<mask>", cls_token="<s>", sep_token="</s>")


#: name -> (builder, expected (family, model, marker, prefix_space, lowercase))
FAMILIES = {
    "wordpiece-uncased": (lambda f: _wordpiece(f, True), ("bert", "WordPiece", None, True, True)),
    "wordpiece-cased": (lambda f: _wordpiece(f, False), ("bert", "WordPiece", None, True, False)),
    "byte-level": (lambda f: _byte_level(f, False), ("roberta", "BPE", "Ġ", False, False)),
    "byte-level-prefix-space": (lambda f: _byte_level(f, True), ("roberta", "BPE", "Ġ", True, False)),
    "unigram-deberta": (lambda f: _unigram(f, "deberta"), ("sentencepiece", "Unigram", "▁", True, False)),
    "unigram-albert": (lambda f: _unigram(f, "albert"), ("sentencepiece", "Unigram", "▁", True, True)),
    "unigram-xlmr": (lambda f: _unigram(f, "xlmr"), ("sentencepiece", "Unigram", "▁", True, False)),
    "sentencepiece-bpe": (_sp_bpe, ("sentencepiece", "BPE", "▁", True, False)),
    "sentencepiece-bpe-legacy": (lambda f: _sp_bpe(f, legacy=True), ("sentencepiece", "BPE", "▁", True, False)),
}


@pytest.fixture(scope="module")
def family_folder(tmp_path_factory):
    """``family_folder(name, head=None)``: a saved tokenizer of that family, with a tiny random BERT-body model
    (``qa`` or ``mlm`` head) over its vocabulary when ``head`` is given (the span rules see only the tokenizer)."""
    built = {}

    def make(name: str, head: str | None = None) -> Path:
        if (name, head) not in built:
            import torch
            from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertForQuestionAnswering

            folder = tmp_path_factory.mktemp(f"{name}-{head}")
            tok = FAMILIES[name][0](folder)
            tok.save_pretrained(folder)
            if head:
                torch.manual_seed(0)
                config = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=32, max_position_embeddings=256, pad_token_id=tok.pad_token_id)
                {"qa": BertForQuestionAnswering, "mlm": BertForMaskedLM}[head](config).save_pretrained(folder)
            assert AutoTokenizer.from_pretrained(folder).is_fast
            built[name, head] = folder
        return built[name, head]

    return make


def _tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def _loaded(tok) -> LoadedModel:
    """Enough of a loaded model for encoding: the span rules never run the network."""
    return LoadedModel("tiny", "tiny", SimpleNamespace(config=SimpleNamespace(max_position_embeddings=512)), tok, "0")


# -- describing a tokenizer ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FAMILIES)
def test_describe_tokenizer(name, family_folder):
    info = describe_tokenizer(_tokenizer(family_folder(name)))
    assert (info.family, info.model, info.word_initial_marker, info.prefix_space, info.lowercase) == FAMILIES[name][1]
    assert info.compat_rules == (info.family if info.family in ("bert", "roberta") else "words")


def test_a_tokenizer_without_offsets_is_refused():
    with pytest.raises(ModelLoadError, match="not a fast tokenizer"):
        describe_tokenizer(SimpleNamespace(is_fast=False))  # score_dataset's early stop: tests/test_score_qa.py


# -- QA span rules on every family ----------------------------------------------------------------------------------
_ART = r"(?:an|a|the|some|few|several)"
_SUF = r"(?:man|woman|boy|girl|child|kid|person|folk|people|couple|men|women|boys|girls|children|kids|persons|folks|" \
       r"city|country|cities|countries|\.)"


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def _spells(dec, ids, word: str, rest: str) -> bool:
    """The tokens ``ids`` decode to ``word``, or to ``word`` and what follows it in the text ``rest`` when their
    last token goes on past it (SentencePiece may merge a word with a following "." into one piece)."""
    full, word = _squash(dec(ids)), _squash(word)
    return full.startswith(word) and _squash(rest).startswith(full) and len(_squash(dec(ids[:-1]))) < len(word)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", FAMILIES)
def test_chosen_tokens_spell_the_subject_and_its_neighbour_words(name, mode, family_folder):
    """Decoded, the first..last tokens spell the subject; with the word-level rules (clean, and compat beyond
    BERT/RoBERTa) the extra start decodes to the article / "a group of" right before it, the extra end to the noun
    or "." right after it, exactly where the text has one."""
    tok = _tokenizer(family_folder(name))
    scorer = QAScorer(_loaded(tok), mode)
    passes = _passes(mode)
    enc = scorer.encode(passes)
    dec = lambda ids: tok.decode(ids, skip_special_tokens=False)  # noqa: E731
    seen = {"article": 0, "group": 0, "suffix": 0}
    for i, (context, _, a1, a2) in enumerate(passes):
        ids = enc.ids[i]
        for k, (subject, (s, e)) in enumerate(zip((a1, a2), score_qa.locate_answers(context, a1, a2, mode))):
            first, last = enc.starts[i, k, 0], enc.ends[i, k, 0]
            assert _spells(dec, ids[first : last + 1], subject, context[s:])
            if scorer.rules != "words":
                continue  # the authors' token-string rules: tests/test_score_qa.py
            group = re.search(r"(?:^|\s)(a\s+(?:group|team|couple)\s+of)\s*$", context[:s], re.I)
            article = re.search(rf"(?:^|\s)({_ART})\s*$", context[:s], re.I)
            suffix = re.match(rf"\s*({_SUF})(?!\w)", context[e:], re.I)
            start = enc.starts[i, k, 1]
            if group:
                seen["group"] += 1
                assert _squash(dec(ids[start:first])) == _squash(group[1])
                assert [_squash(dec(ids[j:first])) for j in enc.starts[i, k, 1:]] == \
                       [_squash(group[1]), _squash(group[1])[1:], "of"]
            elif article:
                seen["article"] += 1
                assert _squash(dec(ids[start:first])) == article[1].lower()
            else:
                assert start == first
            end = enc.ends[i, k, 1]
            if suffix:
                seen["suffix"] += 1
                if end == last:  # one piece holds the subject's end and the word after it ("s." in "James.")
                    assert _spells(dec, ids[first : last + 1], context[s:e] + suffix[0], context[s:])
                else:
                    assert _spells(dec, ids[last + 1 : end + 1], suffix[0], context[e:])
            else:
                assert end == last
    if scorer.rules == "words":
        assert min(seen.values()) > 0, seen  # every rule was exercised


@pytest.mark.parametrize("name", ["unigram-deberta", "unigram-albert", "sentencepiece-bpe", "wordpiece-cased"])
def test_compat_beyond_bert_and_roberta_uses_the_authors_layout(name, family_folder):
    tok = _tokenizer(family_folder(name))
    scorer = QAScorer(_loaded(tok), "compat")
    b, e = (tok.bos_token_id, tok.eos_token_id) if tok.bos_token is not None else (tok.cls_token_id, tok.sep_token_id)
    enc = scorer.encode(_passes("compat", 2))
    for ids in enc.ids:  # [B] question [E] paragraph [E], one separator
        assert ids[0] == b and ids[-1] == e and ids.count(e) == 2
    assert enc.types is None
    assert scorer.rules == ("bert" if name.startswith("wordpiece") else "words")
    if scorer.rules == "words":
        with pytest.raises(StereoprobeError, match="authors' loop for BERT and RoBERTa"):
            reference_scores(_loaded(tok), _passes("compat", 1))


@pytest.mark.parametrize("name", ["unigram-deberta", "unigram-xlmr", "sentencepiece-bpe"])
def test_scores_on_sentencepiece_models(name, family_folder, one_torch_thread):
    from stereoprobe.models import load

    loaded = load(str(family_folder(name, "qa")), "qa", device="cpu")
    for mode in MODES:
        passes = _passes(mode, 4)
        out = QAScorer(loaded, mode, batch_tokens=2000).score(passes)
        assert out.shape == (len(passes), 4) and np.all((out > 0) & (out <= 1))


def test_clean_uses_the_pair_encoding(family_folder):
    tok = _tokenizer(family_folder("unigram-xlmr"))
    enc = QAScorer(_loaded(tok), "clean").encode(_passes("clean", 1)[:1])
    toks = tok.convert_ids_to_tokens(enc.ids[0])
    assert toks[0] == "<s>" and toks.count("</s>") == 3  # <s> q </s></s> c </s>


# -- masked-LM subjects --------------------------------------------------------------------------------------------
def _hand_unigram(words: list[str], lowercase: bool = False):
    """A Unigram tokenizer (DeBERTa-v3's class) whose only whole-word pieces are ``▁`` + each of ``words``."""
    from transformers import DebertaV2TokenizerFast

    chars = sorted(set("".join(words)) | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-.'"))
    vocab = [("[PAD]", 0.0), ("[UNK]", 0.0), ("[CLS]", 0.0), ("[SEP]", 0.0), ("▁", -3.0)]
    vocab += [("▁" + w, -1.0) for w in dict.fromkeys(words)] + [(c, -5.0) for c in chars]
    return DebertaV2TokenizerFast(vocab=vocab + [("[MASK]", 0.0)], do_lower_case=lowercase)


@pytest.mark.parametrize("name", ["byte-level", "unigram-deberta", "sentencepiece-bpe", "wordpiece-cased"])
def test_word_tokens_are_the_mid_sentence_form(name, family_folder):
    tok = _tokenizer(family_folder(name))
    marker = describe_tokenizer(tok).word_initial_marker or ""
    for word in ("Mary", "African", "Hindu", "Mariem"):
        pieces = tok.convert_ids_to_tokens(word_tokens(tok, word))
        in_text = tok.convert_ids_to_tokens(tok("met " + word, add_special_tokens=False)["input_ids"])
        assert pieces == in_text[-len(pieces):]
        assert pieces[0].startswith(marker) and _squash("".join(pieces).replace("##", "").replace(marker, "")) == \
            word.lower()
    tok = _hand_unigram(["Mary"])
    assert tok.convert_ids_to_tokens(word_tokens(tok, "Mary")) == ["▁Mary"]
    assert tok.convert_ids_to_tokens(word_tokens(tok, "Zoe")) == ["▁", "Z", "o", "e"]  # a bare ▁ piece: not one token


def test_lm_variant_follows_the_tokenizer(family_folder, tiny_bert_mlm):
    from stereoprobe.unqover.generate import subjects_of

    spec = DatasetSpec("religion", variant="lm-bert", sample=5)
    assert lm_variant(_tokenizer(tiny_bert_mlm), spec) == "lm-bert"  # WordPiece: the authors' pairing,
    assert lm_variant(_tokenizer(family_folder("byte-level")), spec) == "lm-roberta"  # whatever the offenders
    names = {v: [s.name for group in subjects_of(DatasetSpec("religion", variant=v)) for s in group]
             for v in ("lm-bert", "lm-roberta")}
    assert set(names["lm-roberta"]) < set(names["lm-bert"])  # lm-roberta drops Atheist
    assert lm_variant(_hand_unigram(names["lm-bert"]), spec) == "lm-bert"
    tok = _hand_unigram(names["lm-roberta"])
    assert lm_spec(DatasetSpec("religion", newsqa=True, sample=5), tok).variant == "lm-roberta"
    with pytest.raises(StereoprobeError) as info:
        lm_variant(_hand_unigram(names["lm-roberta"][1:]), spec)
    message = str(info.value)
    assert "lm-bert: 2 offender(s): Christian (" in message and "Atheist (" in message
    assert "lm-roberta: 1 offender(s): Christian (" in message


def test_multi_token_subjects_are_listed_before_any_model_loads(family_folder, tmp_path, monkeypatch):
    from stereoprobe.store import ScoreStore

    spec = DatasetSpec("gender", variant="lm-bert", sample=3)  # 100 names: many are several pieces here
    tokenizer_only = family_folder("unigram-deberta")  # no weights in this folder at all
    assert not list(tokenizer_only.glob("*.safetensors"))
    with pytest.raises(StereoprobeError) as info:
        check_subjects(str(tokenizer_only), spec)
    message = str(info.value)
    assert "for this sentencepiece tokenizer" in message and "Use the subject list of its family" in message
    assert re.search(r"\w+ \(\d+ tokens: ▁", message)
    monkeypatch.setattr(stereoprobe.models, "load", lambda *a, **k: pytest.fail("the model must not load"))
    with pytest.raises(StereoprobeError, match="not a single token"):
        score_qa.score_dataset(str(family_folder("unigram-deberta", "mlm")), spec,
                               options=RunOptions(device="cpu", progress=False, store=ScoreStore(tmp_path)))


class _RecordingLM:
    """A masked LM whose logits are one fixed vector everywhere; it keeps the inputs it was given."""

    def __init__(self, logits):
        import torch

        self.logits, self.device, self.inputs = torch.as_tensor(logits, dtype=torch.float32), "cpu", []

    def __call__(self, input_ids, attention_mask):
        self.inputs += input_ids.tolist()
        return SimpleNamespace(logits=self.logits.expand(*input_ids.shape, -1).clone())


def test_clean_lm_reads_the_space_prefixed_piece_and_drops_a_bare_marker(family_folder, monkeypatch):
    from stereoprobe.unqover import score_lm

    tok = _tokenizer(family_folder("sentencepiece-bpe"))  # its <mask> leaves a bare "▁" in front
    spec = DatasetSpec("gender", variant="lm-roberta", sample=2)
    ids = {name: word_tokens(tok, name) for name in ("Mary", "James")}
    assert tok.convert_ids_to_tokens(ids["Mary"] + ids["James"]) == ["▁Mary", "▁James"]
    ids = {name: i for name, (i,) in ids.items()}
    monkeypatch.setattr(score_lm, "check_single_tokens", lambda spec, tok: ids)  # the list's other names: not here
    logits = np.zeros(len(tok), dtype=np.float32)
    logits[ids["Mary"]], logits[ids["James"]] = 3.0, 1.0
    p = np.exp(logits) / np.exp(logits).sum()
    passage = ("Mary got off the flight to visit James.", "<mask> was a nurse.", "Mary", "James")
    marker = tok.convert_tokens_to_ids("▁")
    for mode in ("clean", "compat"):
        lm = _RecordingLM(logits)
        scorer = LMScorer(LoadedModel("fixed", "fixed", lm, tok, "0"), spec, mode)
        out = scorer.score([passage])
        row = lm.inputs[0]
        before_mask = row[row.index(tok.mask_token_id) - 1]
        assert (before_mask == marker) == (mode == "compat")
        if mode == "clean":
            np.testing.assert_allclose(out[0], [p[ids["Mary"]]] * 2 + [p[ids["James"]]] * 2, rtol=1e-5)
