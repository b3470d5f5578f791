"""SODAPOP's Table 1 (contextual name embeddings, linear probes) and Table 5 (ABC-model orderings, automatic
trait mapping): subword averaging against a hand computation, planted probes, hand-computed orderings."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from stereoprobe.errors import MetricsError, StereoprobeError
from stereoprobe.sodapop import abc_model as abc
from stereoprobe.sodapop.embeddings import (locate_name, name_embeddings, probe_accuracy, sample_contexts, table1,
                                            tsne_names)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONTEXTS = sample_contexts(4, seed=None) + ["Bethany met Bethany's cousin at the lake."]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random BertModel (hidden 32) whose WordPiece vocabulary spells unknown names letter by letter."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_names")
    words = sorted(set(re.findall(r"[a-z]+", " ".join(CONTEXTS).lower())) | {"amanda"})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,?!-'") + words
    vocab += list("abcdefghijklmnopqrstuvwxyz") + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    tok = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    return BertModel(config).eval(), tok


def _manual(model, tok, name, layer=-1):
    """Mean over contexts of the mean state of the name's pieces, found as token subsequences, one text at a time."""
    import torch

    pieces = tok.tokenize(name)
    vectors = []
    for context in CONTEXTS:
        enc = tok(context.replace("Bethany", name), return_tensors="pt")
        tokens = tok.convert_ids_to_tokens(enc["input_ids"][0])
        starts = [i for i in range(len(tokens)) if tokens[i:i + len(pieces)] == pieces]
        positions = [i + k for i in starts for k in range(len(pieces))]
        with torch.no_grad():
            hidden = model(**enc, output_hidden_states=True).hidden_states[layer][0]
        vectors.append(hidden[positions].mean(0).numpy())
    return np.mean(vectors, axis=0)


def test_name_embeddings_average_word_pieces_over_contexts(tiny):
    model, tok = tiny
    names = ["Amanda", "Jamel", "Bobbie-Sue"]
    assert tok.tokenize("Amanda") == ["amanda"] and len(tok.tokenize("Jamel")) == 5
    assert "-" in tok.tokenize("Bobbie-Sue")  # a hyphenated name: the hyphen is one of its pieces
    emb = name_embeddings(model, tok, names, contexts=CONTEXTS, max_tokens=40, device="cpu")  # several batches
    assert emb.shape == (3, 32) and list(emb.index) == names
    for name in names:
        np.testing.assert_allclose(emb.loc[name].to_numpy(), _manual(model, tok, name), atol=1e-5)
    first_layer = name_embeddings(model, tok, ["Jamel"], contexts=CONTEXTS, layer=0, device="cpu")
    np.testing.assert_allclose(first_layer.loc["Jamel"].to_numpy(), _manual(model, tok, "Jamel", layer=0), atol=1e-5)


def test_every_occurrence_or_the_first(tiny):
    _, tok = tiny
    ids, every = locate_name(tok, CONTEXTS[-1], "Jamel")
    _, first = locate_name(tok, CONTEXTS[-1], "Jamel", occurrences="first")
    assert len(every) == 10 and first == every[:5]
    assert tok.convert_ids_to_tokens([ids[i] for i in first]) == tok.tokenize("Jamel")


def test_roberta_encoders_work_too(tiny_roberta_qa):
    from transformers import AutoModel, AutoTokenizer

    model, tok = AutoModel.from_pretrained(tiny_roberta_qa), AutoTokenizer.from_pretrained(tiny_roberta_qa)
    context = "Bethany got off the flight to visit Bethany."
    ids, positions = locate_name(tok, context, "Mary")
    assert "".join(tok.convert_ids_to_tokens([ids[i] for i in positions])).count("Mary") == 2
    emb = name_embeddings(model, tok, ["Mary", "Gerald"], contexts=[context], device="cpu")
    assert emb.shape == (2, 32) and np.isfinite(emb.to_numpy()).all()


def test_bad_names_contexts_and_layers_stop_with_one_message(tiny):
    model, tok = tiny
    with pytest.raises(StereoprobeError, match="only unknown tokens"):
        name_embeddings(model, tok, ["李"], contexts=CONTEXTS, device="cpu")
    with pytest.raises(StereoprobeError, match="single first names"):
        name_embeddings(model, tok, ["Mary Ann"], contexts=CONTEXTS, device="cpu")
    with pytest.raises(StereoprobeError, match="does not contain 'Bethany'"):
        name_embeddings(model, tok, ["Amanda"], contexts=["No one is named here."], device="cpu")
    with pytest.raises(StereoprobeError, match="layer=5"):
        name_embeddings(model, tok, ["Amanda"], contexts=CONTEXTS, layer=5, device="cpu")


def test_cached_embeddings_are_reused(tiny, tmp_path, monkeypatch):
    model, tok = tiny
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path))
    first = name_embeddings(model, tok, ["Amanda", "Jamel"], contexts=CONTEXTS, device="cpu", fingerprint="tiny")
    assert len(list((tmp_path / "sodapop_names").glob("*.npz"))) == 1

    def fail(*args, **kwargs):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(model, "forward", fail)
    again = name_embeddings(model, tok, ["Amanda", "Jamel"], contexts=CONTEXTS, device="cpu", fingerprint="tiny")
    pd.testing.assert_frame_equal(first, again)


def test_sample_contexts_first_or_seeded():
    first = sample_contexts(5, seed=None)
    seeded = sample_contexts(5, seed=0)
    assert len(set(first)) == 5 and seeded == sample_contexts(5, seed=0) and seeded != first
    with pytest.raises(StereoprobeError, match="between 1 and 1298"):
        sample_contexts(5000)


def test_probe_is_perfect_on_planted_classes_and_near_chance_on_noise():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 60)
    planted = probe_accuracy(np.eye(3)[y] * 5 + rng.normal(size=(180, 3)) * 0.1, y)
    assert planted["test_acc"] == 1.0 and planted["train_acc"] == 1.0
    assert planted["chance"] == pytest.approx(1 / 3) and (planted["n_train"], planted["n_test"]) == (120, 60)
    noise = probe_accuracy(rng.normal(size=(400, 5)), rng.integers(0, 2, 400), seed=1)
    assert abs(noise["test_acc"] - 0.5) < 0.12 and noise["chance"] == 0.5 and 0.4 < noise["majority"] < 0.6
    with pytest.raises(MetricsError, match="at least 2 classes"):
        probe_accuracy(np.zeros((4, 2)), [0, 0, 0, 1])


def test_table1_rows_and_tsne():
    rng = np.random.default_rng(1)
    groups = {g: [f"{g}{i}" for i in range(12)] for g in ("EA_f", "EA_m", "AA_f", "AA_m")}
    names = [n for v in groups.values() for n in v]
    female = np.array([g.endswith("_f") for g in groups for _ in range(12)], dtype=float)
    emb = pd.DataFrame(np.c_[female * 4, rng.normal(size=(48, 3))], index=names)
    t = table1(emb, groups)
    assert list(t.index) == ["gender", "race/ethnicity"]
    assert t.loc["gender", "test"] == 100.0 and t.loc["gender", "chance"] == 50.0
    assert t.loc["race/ethnicity", "chance"] == 50.0  # two races here
    xy = tsne_names(emb.to_numpy(), names, groups)
    assert list(xy.columns) == ["name", "group", "x", "y"] and xy["group"].tolist()[:2] == ["EA_f", "EA_f"]
    with pytest.raises(MetricsError, match="no embedding"):
        table1(emb.iloc[1:], groups)


# ------------------------------------------------------------------------------------------- Table 5 (ABC)


def _mapping(rows):
    return pd.DataFrame(rows, columns=["word", "trait", "pole"])


def test_abc_orderings_match_a_hand_computation():
    mapping = _mapping([("rich", "poor–wealthy", 1), ("lavish", "poor–wealthy", 1), ("broke", "poor–wealthy", -1),
                        ("needy", "poor–wealthy", -1), ("kind", "threatening–benevolent", 1),
                        ("cruel", "threatening–benevolent", -1), ("vicious", "threatening–benevolent", -1),
                        ("brutal", "threatening–benevolent", -1), ("nasty", "threatening–benevolent", -1),
                        ("violent", "threatening–benevolent", -1), ("house", None, 0)])
    associated = {"AA_f": ["cruel", "vicious", "brutal", "nasty", "violent", "Violent", "broke", "house"],
                  "EA_f": ["kind", "rich", "lavish", "needy", "house", "unmapped"]}
    scores = abc.trait_scores(associated, mapping)
    assert scores.loc["AA_f", "threatening–benevolent"] == -5  # "Violent" repeats "violent": counted once
    assert (scores.loc["AA_f", "poor–wealthy"], scores.loc["EA_f", "poor–wealthy"]) == (-1, 1)
    out = abc.abc_orderings(associated, mapping, [("AA_f", "EA_f"), ("EA_f", "AA_f")])
    assert len(out) == 2 * len(abc.TRAITS)
    row = out.set_index(["pair", "trait"])
    benevolent = row.loc[("AA_f vs EA_f", "threatening–benevolent")]
    assert (benevolent["score_A"], benevolent["score_B"], benevolent["difference"]) == (-5, 1, -6)
    assert benevolent["ordering"] == "AA_f ≺ EA_f" and benevolent["strong"]
    wealth = row.loc[("AA_f vs EA_f", "poor–wealthy")]
    assert wealth["ordering"] == "AA_f ≺ EA_f" and not wealth["strong"]
    assert row.loc[("EA_f vs AA_f", "poor–wealthy"), "ordering"] == "AA_f ≺ EA_f"
    assert row.loc[("AA_f vs EA_f", "cold–warm"), "ordering"] == "AA_f = EA_f"
    wide = abc.abc_table(out)
    assert list(wide.columns) == ["AA_f vs EA_f", "EA_f vs AA_f"] and len(wide) == 16
    assert wide.loc[("Communion", "threatening–benevolent"), "AA_f vs EA_f"] == "AA_f ≺ EA_f ‡"
    assert wide.index[0] == ("Agency", "powerless–powerful")
    with pytest.raises(MetricsError, match="no associated words"):
        abc.abc_orderings(associated, mapping, [("AA_f", "HS_f")])


def test_map_words_lands_on_the_right_pole():
    got = abc.map_words(["Wealthy", "homeless", "vicious", "caring", "generous", "cold", "zzzqqq"]).set_index("word")
    expected = {"Wealthy": ("poor–wealthy", 1), "homeless": ("poor–wealthy", -1),
                "vicious": ("threatening–benevolent", -1), "caring": ("threatening–benevolent", 1),
                "generous": ("egoistic–altruistic", 1)}
    for word, (trait, pole) in expected.items():
        assert (got.loc[word, "trait"], got.loc[word, "pole"]) == (trait, pole), word
    # antonyms are close in GloVe: "cold" is nearest its own pole, but not by the margin (nor similar enough)
    assert got.loc["cold", "nearest"] == "cold" and got.loc["cold", "pole"] == 0
    assert got.loc["cold", "margin"] < abc.MARGIN
    assert got.loc["zzzqqq", "source"] == "oov" and got.loc["zzzqqq", "pole"] == 0
    relaxed = abc.map_words(["cold"], similarity=0.55, margin=0.04)
    assert (relaxed.loc[0, "trait"], relaxed.loc[0, "pole"]) == ("cold–warm", -1)
    live = abc.map_words(["homeless", "cold"], use_file=False)
    assert set(live["source"]) == {"auto"}
    pd.testing.assert_frame_equal(live.drop(columns="source"), got.loc[["homeless", "cold"]].reset_index()
                                  .drop(columns="source"), check_dtype=False)


def test_shipped_mapping_file_is_what_the_method_builds(tmp_path):
    shipped = abc.read_mapping()
    assert tuple(shipped.columns) == abc.COLUMNS and not shipped["word"].duplicated().any()
    assert set(shipped["pole"]) <= {-1, 0, 1} and set(shipped["mapped"]) == {0, 1}
    assert {w.lower() for w in abc.PAPER_WORDS} <= set(shipped["word"])
    ok = (shipped["similarity"] >= abc.SIMILARITY) & (shipped["margin"] >= abc.MARGIN)
    assert (shipped["mapped"] == ok.astype(int)).all()
    assert abc.mapping_path().stat().st_size < 1 << 20
    assert abc.mapping_path().read_text().startswith("# ABC-model trait poles")
    rebuilt = tmp_path / "abc_traits.tsv"
    abc.build_mapping_file(rebuilt)
    assert rebuilt.read_bytes() == abc.mapping_path().read_bytes()
    anchors = abc.anchor_table()
    assert anchors.groupby("pole_word")["kept"].sum().min() >= 3 and len(anchors["pole_word"].unique()) == 32
