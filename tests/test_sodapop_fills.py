"""SODAPOP's vectorised fill decoding (``FillMasker.fills_many``) against the per-row tokenizer path (``fills``).

Real tokenizers, offline: MiniLM's (bert-base-uncased's WordPiece vocabulary, the zoo masker's), and the byte-level
BPE (RoBERTa's layout, ModernBERT's) and SentencePiece (ALBERT's, which the tables leave to the tokenizer) families
of tests/families.py. Rows: every id of the vocabulary first and later in a row, windows of the probe contexts' own
ids, random rows, and the subtle cases (sub-word and quote pieces, specials, bytes of one character split over ids).
"""

from __future__ import annotations

import hashlib
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from stereoprobe.sodapop import contexts, distractors as D

FAMILIES = ("minilm", "roberta", "modernbert", "albert")


def tokenizer(family: str):
    if family == "minilm":
        from transformers import AutoTokenizer

        from stereoprobe.assets import asset_folder

        return AutoTokenizer.from_pretrained(asset_folder("minilm"))
    return sys.modules["stereoprobe_test_families"].tokenizer_of(family)  # tests/families.py, loaded by conftest.py


def byte_ids(tok, text: str) -> list[int]:
    """The ids of the single-byte tokens of ``text``'s UTF-8 bytes (GPT-2's byte-to-character map), where the
    vocabulary has them all (byte-level BPE); else the tokenizer's ids of ``text``."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = [b for b in range(256) if b not in keep]
    chars = {**{b: chr(b) for b in keep}, **{b: chr(256 + k) for k, b in enumerate(extra)}}
    ids = tok.convert_tokens_to_ids([chars[b] for b in text.encode()])
    return ids if tok.unk_token_id not in ids else ids_of(tok, text)


_TOKENIZERS: dict[str, object] = {}


def masker(family: str, decoding: str, cls=D.FillMasker, top_m: int = 10):
    if family not in _TOKENIZERS:
        _TOKENIZERS[family] = tokenizer(family)
    return cls(SimpleNamespace(tokenizer=_TOKENIZERS[family], name=family, model=None), top_m, decoding)


def ids_of(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def rows(tok, top_m: int = 10) -> np.ndarray:
    """Every id first and at every later position, the probe contexts' ids in windows, random rows, subtle rows."""
    n = len(tok)
    every = np.arange(-(-n // top_m) * top_m) % n
    out = [every.reshape(-1, top_m), np.roll(every, 1).reshape(-1, top_m)[:, ::-1]]
    text = " ".join(c.text + " " + c.answer for c in contexts.probe_contexts())
    words = np.array(ids_of(tok, text) + ids_of(tok, "They'll sfo 'sfo can't, isn't it? ok... (yes) Bethany's. ’ “hi”"))
    out.append(np.lib.stride_tricks.sliding_window_view(words, top_m)[::3])
    rng = np.random.default_rng(0)
    out.append(rng.integers(0, n, size=(2000, top_m)))
    specials = np.array(sorted(set(tok.all_special_ids)))
    mixed = rng.choice(words, size=(300, top_m))
    mixed[np.arange(300), rng.integers(0, top_m, 300)] = rng.choice(specials, 300)
    out.append(mixed)
    for ids in [byte_ids(tok, c) for c in ("’", "“", "é", "ü", "—", "…", "’s")]:  # several byte-level ids each
        row = (ids_of(tok, " a") + ids + ids_of(tok, " the person") * top_m)[:top_m]
        out.append(np.array([row, row[::-1]]))
    return np.concatenate(out).astype(np.int64)


@pytest.mark.parametrize("decoding", ["compat", "clean"])
@pytest.mark.parametrize("family", FAMILIES)
def test_fills_many_equals_the_per_row_path(family, decoding):
    ref, new = masker(family, decoding), masker(family, decoding)
    top = rows(new.tok)
    want = [ref.fills(row) for row in top]
    assert new.fills_many(top) == want
    assert new.fills_many(top[::-1]) == want[::-1]  # tables warm
    three = masker(family, decoding, top_m=3)
    assert masker(family, decoding, top_m=3).fills_many(top[:, :3]) == [three.fills(r) for r in top[:, :3]]
    table = D._vocab(new.tok)
    if decoding == "compat":
        assert table.per_token == (family != "albert")  # SentencePiece (Metaspace) rows go through the tokenizer
        if family != "albert":
            assert table.joinable.sum() > 0.5 * len(new.tok)


def test_subtle_rows_are_still_there():
    """The cases the tables must keep: a deletion and a lost M-th fill (byte-level), glued "##" pieces, and bytes
    of one character split over ids (joined only by the tokenizer: such ids are never joinable)."""
    rob = masker("roberta", "compat", top_m=5)
    tok = rob.tok
    ids = tok.convert_tokens_to_ids(["Ġthe", "Ġwith", "ian", ".", "Ġperson"])
    assert rob.fills_many(np.array([ids])) == [["", "the", "withian.", "person"]]
    split = byte_ids(tok, "’")
    assert len(split) == 3 and not D._vocab(tok).joinable[split].any()
    assert "’" in "".join(rob.fills_many(np.array([(split + ids)[:5]]))[0])
    bert = masker("minilm", "compat", top_m=4)
    ids = bert.tok.convert_tokens_to_ids(["kind", "##ness", "[SEP]", "'"])
    assert bert.fills_many(np.array([ids])) == [bert.fills(ids)] == [["kindness", "[SEP]", "'"]]


class Pseudo(D.FillMasker):
    """A masker without a model: the top ids of a text are a fixed pseudo-random pick of plausible ids."""

    pool: np.ndarray

    def top_ids(self, texts, progress_desc=None):
        self.passes += len(texts)
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in texts]
        return np.stack([np.random.default_rng(s).choice(self.pool, self.top_m, replace=False) for s in seeds])


class PseudoPerRow(Pseudo):
    def fills_many(self, top):
        return [self.fills(row) for row in top]


@pytest.mark.parametrize("decoding", ["compat", "clean"])
@pytest.mark.parametrize("family", ["minilm", "roberta"])
def test_generation_gives_the_same_multisets_and_mcqs(family, decoding):
    probe = [c for c in contexts.probe_contexts() if len(D.word_tokenize(c.answer)) <= 3][:8]
    config = D.GenerationConfig(depth=2, decoding=decoding, cap=40)
    got = {}
    for cls in (Pseudo, PseudoPerRow):
        m = masker(family, decoding, cls)
        text = " ".join(c.text + " " + c.answer for c in probe)
        specials = sorted(set(m.tok.all_special_ids) - {m.tok.mask_token_id})
        m.pool = np.array(sorted(set(ids_of(m.tok, text + " ' . , ? ! n't 's ’")))[:400] + specials)
        units = [D.make_unit(n, c) for c in probe for n in ("Amy", "Jamel")]
        D.generate_units(units, m, config)
        got[cls] = units
    for new, ref in zip(got[Pseudo], got[PseudoPerRow]):
        assert new.candidates == ref.candidates and sum(new.candidates.values()) > 0
        assert D.pair_mcqs(new, config).equals(D.pair_mcqs(ref, config))


#: fills that exercise every rule of the word tokenizer near the answer's edges (quotes, clitics, periods, dashes,
#: contractions, brackets, the empty deletion) beside plain words
EDGE_FILLS = ["", ".", "...", "'s", "n't", "'", '"', "''", "``", "can", "not", "cannot", "gonna", "'tis", ":", ",", "(",
              ")", "--", "?", "!", "Mr.", "U.S.", "ok.", "a.", "’", "«", "$", "&", "is", "'t", "wanna", "'ll", "d'ye",
              ",,", "x:", "1,000", "[MASK]s", "her", "Bethany's", "it.", "'em"]


@pytest.mark.parametrize("mode", ["line", "punkt"])
def test_the_answers_tail_gives_the_full_texts_words(mode, monkeypatch):
    """The answer re-tokenized behind the prompt's last word ("is") gives the words of the whole text re-tokenized
    (the authors' step), for every probe context, three names, every position and fills at every rule's edge; in
    punkt mode (sentences decide) every fill takes the full path."""
    monkeypatch.setattr(D, "tokenizer_mode", lambda: mode)
    if mode == "punkt":
        calls = []
        monkeypatch.setattr(D, "_neighbours_full", lambda *a: calls.append(a) or ["full"] * len(a[3]))
        unit = D.make_unit("Bethany", contexts.probe_contexts()[0])
        assert D._neighbours(unit.prefix, D.word_tokenize(unit.answer), 0, ["a", "b"]) == ["full", "full"]
        assert len(calls) == 1
        return
    checked = 0
    for context in contexts.probe_contexts():
        for name in ("Bethany", "DeShawn", "Nguyen"):
            unit = D.make_unit(name, context)
            assert unit.prefix.endswith(" is")
            tokens = D.word_tokenize(unit.answer)
            for i in range(len(tokens)):
                assert D._neighbours(unit.prefix, tokens, i, EDGE_FILLS) == \
                    D._neighbours_full(unit.prefix, tokens, i, EDGE_FILLS), (name, context.index, i)
                checked += len(EDGE_FILLS)
    assert checked > 10_000
