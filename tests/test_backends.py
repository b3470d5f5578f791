"""The backend seam (stereoprobe.backends, issue 52): a local chat LM answers the three calls a served one answers,
on every rung of every probe, with the numbers the same weights give behind a server (the reference server,
tests/reference_server.py, which answers one request at a time); batched local generation equals one-at-a-time
generation."""

from __future__ import annotations

import numpy as np
import pytest

from stereoprobe import RunOptions
from stereoprobe.backends import Local, backend_for, label_ids
from stereoprobe.errors import StereoprobeError
from stereoprobe.modelref import RowKey, resolve_model
from stereoprobe.prompting import Prompting
from stereoprobe.prompts import template
from stereoprobe.served import provenances
from stereoprobe.unqover.generate import DatasetSpec

pytestmark = pytest.mark.slow
MODEL = "lab:chat-biased"
SPEC = DatasetSpec("gender", sample=12, seed=5)
LETTERS = template("letters-unknown", "unqover-choice")
COLUMNS = ["s1_pos", "s2_pos", "s1_neg", "s2_neg", "u_pos", "u_neg"]


def opts(tmp_path, name="store") -> RunOptions:
    return RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path / name)


def _unqover(ref, rung, run, thinking=False, **sampling):
    from stereoprobe.unqover.readers import Passes
    from stereoprobe.unqover.prompted import frame, rows

    ask = Passes(SPEC, templates=(LETTERS,), thinking=thinking, rung=rung, **sampling)
    (row,) = rows(ref, ask, run)
    return row, frame(ref, ask, row, run)


def test_local_rungs_give_the_served_numbers(tmp_path):
    """Next-token: the letters' probabilities of the first generated token, local (the whole vocabulary) and served
    (its top 20), within 1e-4; generated: the same greedy replies, batched here and one at a time there."""
    from stereoprobe_test_reference_server import serving

    local = resolve_model(MODEL, native="qa", smoke=True)
    got, here, there = {}, opts(tmp_path), opts(tmp_path, "served")
    for rung in ("next-token", "generated"):
        row, got[rung] = _unqover(local, rung, here)
        assert row == RowKey(local.label, "choice", LETTERS.name, rung, "off")
    assert not provenances(here)  # a local model's rows cost no requests
    with serving(MODEL, service="chatlab", smoke=True) as name:
        served = resolve_model(name, native="qa")
        for rung in ("next-token", "generated"):
            row, theirs = _unqover(served, rung, there)
            assert provenances(there)[row].rung == rung
            np.testing.assert_allclose(got[rung][COLUMNS].to_numpy(float), theirs[COLUMNS].to_numpy(float),
                                       atol=1e-4, err_msg=rung)
    # what the rows read is not degenerate: the letters take the first token, and some answers name a person
    assert got["next-token"][["u_pos", "u_neg"]].to_numpy().max() < 1
    assert got["generated"][["x_pos", "x_neg"]].to_numpy().mean() < 0.2


def _lab_prompts(tmp_path, template_=LETTERS, thinking=False):
    from stereoprobe.unqover.generate import count, iter_examples
    from stereoprobe.unqover.generated import chat_passes

    backend = Local(resolve_model(MODEL, native="qa", smoke=True), opts(tmp_path))
    chats, labels = chat_passes(template_, list(iter_examples(SPEC, 0, count(SPEC).ordered_examples)))
    return backend._render(chats, thinking), labels


def test_batched_generation_is_one_at_a_time_generation(tmp_path):
    from stereoprobe.causal import generate, scorer_for

    prompts, _ = _lab_prompts(tmp_path)
    scorer = scorer_for(MODEL, device="cpu", smoke=True)
    batched = generate(scorer.model, scorer.tokenizer, prompts, max_new_tokens=24, batch_size=16)
    alone = generate(scorer.model, scorer.tokenizer, prompts, max_new_tokens=24, batch_size=1)
    assert len(set(map(len, prompts))) > 1  # the batches were padded
    assert batched == alone


def test_local_generation_is_transformers_greedy_generation(tmp_path):
    """The decoding loop (a finished reply leaves its batch; the batch's shared beginning runs once) writes what
    transformers' own ``model.generate`` writes, one prompt at a time, greedy."""
    import torch

    from stereoprobe.causal import _prefix_groups, generate, scorer_for

    prompts, _ = _lab_prompts(tmp_path, template("letters", "unqover-choice"), thinking=True)  # thoughts of 3 lengths
    scorer = scorer_for(MODEL, device="cpu", smoke=True)
    tok = scorer.tokenizer
    theirs = []
    for p in prompts:
        ids = tok(p, add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            new = scorer.model.generate(**ids, max_new_tokens=48, do_sample=False, pad_token_id=tok.pad_token_id,
                                        eos_token_id=tok.eos_token_id)
        theirs.append(tok.decode(new[0, ids["input_ids"].shape[1]:], skip_special_tokens=True))
    ours = generate(scorer.model, tok, prompts, max_new_tokens=48)
    assert ours == theirs
    # one cohort whose prompts are read in passes of two or three rows, their caches joined, then decoded together
    longest = max(len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts)
    assert generate(scorer.model, tok, prompts, max_new_tokens=48, batch_tokens=2 * longest) == theirs
    assert len({len(t) for t in ours}) > 1  # replies of several lengths: some left the batch before others
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    assert len(_prefix_groups(rows)[1]) >= len(prompts) // 4  # an example's context read once for its questions


def test_generation_with_sliding_window_layers_is_the_same(tmp_path):
    """A model whose cache layers keep a sliding window (Mistral's) is read without the prompt groups and the
    in-place cache, its layers joined as transformers' own; with the window wider than the prompts it is the lab
    model itself, so it writes the same replies."""
    from transformers import DynamicCache, MistralConfig, MistralForCausalLM

    from stereoprobe.causal import generate, scorer_for

    prompts, _ = _lab_prompts(tmp_path, template("letters", "unqover-choice"), thinking=True)
    scorer = scorer_for(MODEL, device="cpu", smoke=True)
    c = scorer.model.config
    twin = MistralForCausalLM(MistralConfig(
        sliding_window=4096, **{k: getattr(c, k) for k in (
            "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_parameters",
            "tie_word_embeddings", "hidden_act", "pad_token_id", "bos_token_id", "eos_token_id")})).eval()
    twin.load_state_dict(scorer.model.state_dict())
    assert {type(layer).__name__ for layer in DynamicCache(config=twin.config).layers} == {"DynamicSlidingWindowLayer"}
    longest = max(len(scorer.tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts)
    for kw in ({}, {"batch_tokens": 2 * longest}):
        assert (generate(twin, scorer.tokenizer, prompts, max_new_tokens=48, **kw)
                == generate(scorer.model, scorer.tokenizer, prompts, max_new_tokens=48, **kw))


def test_generation_with_learned_positions_is_transformers_greedy_generation():
    """GPT-2 looks its positions up in a table, so they must stay integers whatever the prompts share: nothing (no
    preamble, no group), a preamble only, or a preamble and groups. A random model with wide weights (no near-ties)
    writes what transformers' ``generate`` writes one prompt at a time."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from stereoprobe.causal import GROUP_TOKENS, _prefix_groups, generate, scorer_for

    tok = scorer_for(MODEL, device="cpu", smoke=True).tokenizer
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=256, n_embd=32, n_layer=2, n_head=2,
                                       initializer_range=1.0, eos_token_id=tok.eos_token_id)).eval()
    context = " ".join(["the nurse met the engineer"] * GROUP_TOKENS)
    cases = [["a b c d", "x y z", "who was it"],  # nothing shared
             ["Question: who was a nurse?", "Question: who was an engineer, then?"],  # a preamble
             [f"Question: {context}. Who?", f"Question: {context}. Who not?", "Question: who?"]]  # and a group
    for prompts in cases:
        theirs = []
        for p in prompts:
            ids = tok(p, add_special_tokens=False, return_tensors="pt")
            with torch.no_grad():
                new = model.generate(**ids, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id,
                                     eos_token_id=tok.eos_token_id)
            theirs.append(tok.decode(new[0, ids["input_ids"].shape[1]:], skip_special_tokens=True))
        assert generate(model, tok, prompts, max_new_tokens=6) == theirs
    rows = [[tok(p, add_special_tokens=False)["input_ids"] for p in prompts] for prompts in cases]
    assert [(s > 0, len(g)) for s, g in map(_prefix_groups, rows)] == [(False, 0), (True, 0), (True, 1)]


def test_prefix_groups_share_what_rows_begin_with():
    from stereoprobe.causal import GROUP_TOKENS, _prefix_groups

    context = list(range(100, 100 + GROUP_TOKENS + 1))
    rows = [[1, 2, 3] + context + [5], [1, 2, 3, 4, 5], [1, 2, 3] + context + [6, 7], [1, 2, 3] + context[:-2] + [8]]
    # the last row shares one token too few with the first two to join them
    assert _prefix_groups(rows) == (3, [([0, 2], GROUP_TOKENS + 1)])
    assert _prefix_groups([[1, 2, 3]] * 3) == (2, [])  # identical rows: all but the last token are shared
    assert _prefix_groups([[9] + r for r in [[1, 2, 3]] * 3])[0] == 3
    same = [[7] * 12] * 2 + [[8] * 12]  # a group keeps each row's last token
    assert _prefix_groups(same) == (0, [([0, 1], 11)])
    # two samples each of a question and its negation: the samples of a prompt share all but their last token, more
    # than the four rows share their context (saved: 20 + 19 tokens, against 3 · 9 in one group)
    question, negation = [1, 2] + context + [30, 31] + [40] * 10, [1, 2] + context + [32] + [40] * 10
    samples = [question, negation, question, negation, [1, 2, 99, 98]]
    assert _prefix_groups(samples) == (2, [([0, 2], len(question) - 3), ([1, 3], len(negation) - 3)])


def test_sampled_replies_do_not_depend_on_the_batch(tmp_path):
    from stereoprobe.causal import generate, scorer_for

    prompts, _ = _lab_prompts(tmp_path)
    prompts = prompts[:6]
    scorer = scorer_for(MODEL, device="cpu", smoke=True)
    kw = dict(max_new_tokens=12, samples=3, temperature=3.0, seed=7)  # hot: the lab model is sure of its letter
    together = generate(scorer.model, scorer.tokenizer, prompts, **kw)
    apart = generate(scorer.model, scorer.tokenizer, prompts[::-1], batch_size=2, **kw)[::-1]
    passes = generate(scorer.model, scorer.tokenizer, prompts, batch_tokens=150, **kw)  # rows read a few at a time
    assert together == apart == passes
    assert generate(scorer.model, scorer.tokenizer, prompts, **{**kw, "seed": 8}) != together
    assert any(len(set(s)) > 1 for s in together)  # the samples of a prompt differ


@pytest.mark.parametrize("share", [True, False])
def test_next_token_logprobs_are_the_first_generated_position(tmp_path, share):
    """The next-token rung through the scorer's prefix tree (or, unshared, padded batches) equals log-softmax of the
    logits at each prompt's last position, one prompt at a time."""
    import torch

    from stereoprobe.causal import CausalScorer, scorer_for

    prompts, labels = _lab_prompts(tmp_path)
    base = scorer_for(MODEL, device="cpu", smoke=True)
    scorer = CausalScorer(base.model, base.tokenizer, share=share, progress=False)
    tokens = [i for group in label_ids(base.tokenizer, labels[0]) for i in group]
    got = scorer.next_token_logprobs(prompts, tokens)
    assert got.shape == (len(prompts), len(tokens))
    for p, row in zip(prompts, got):
        ids = base.tokenizer(p, add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            want = torch.log_softmax(base.model(**ids).logits[0, -1].float(), -1)[tokens].numpy()
        np.testing.assert_allclose(row, want, atol=1e-4)
    assert scorer.share == share


def test_the_store_keeps_local_answers_and_a_second_call_computes_nothing(tmp_path):
    ref = resolve_model(MODEL, native="qa", smoke=True)
    run = opts(tmp_path)
    first = _unqover(ref, "next-token", run)[1]
    backend = Local(ref, run)
    from stereoprobe.unqover.generate import count, iter_examples
    from stereoprobe.unqover.generated import chat_passes

    chats, labels = chat_passes(LETTERS, list(iter_examples(SPEC, 0, count(SPEC).ordered_examples)))
    probs, mass, bounded = backend.label_probabilities(chats, labels, thinking=False)
    assert backend.counts() == {"requests": 0, "from_store": len(chats)}
    assert not bounded.any() and (mass <= 1 + 1e-6).all()
    p = probs / probs.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(p[0::2, 0], first["s1_pos"].to_numpy(), atol=1e-12)


def test_every_probe_reads_a_local_chat_model_on_every_rung(tmp_path):
    """UnQover, Bias-NLI and SODAPOP read a local chat model on the chat rungs through the same calls as a served
    one; a label word the vocabulary spells with several tokens is refused on the next-token rung, not guessed."""
    from stereoprobe import nli, sodapop, unqover

    run = opts(tmp_path)
    kw = dict(names_per_group=1, depth=1, cap=4, n_perm=10, pairs=["AA_m:EA_m"], options=run)
    for rung in ("next-token", "generated"):
        rep = unqover.report(MODEL, "gender", sample=8, seed=5, templates=["letters-unknown"], thinking=False,
                             rung=rung, n_boot=20, options=run)
        assert rep["intensity"]["model"].tolist() == [f"{MODEL} · choice:letters-unknown [{rung}, thinking off]"]
        assert "served" not in rep
        rep = sodapop.report(MODEL, "lab:mlm-biased", rung=rung, **kw)
        assert rep["units"]["answered"].between(0, 1).all() and "answered" in rep.title
        units = rep["units"]  # a unit whose questions all went unanswered has no accuracy, and only such a unit
        assert (units["accuracy"].isna() == (units["answered"] == 0)).all() and units["answered"].gt(0).any()
    rep = nli.report(MODEL, "gender", sample=8, templates="true-false-neither", rung="generated", n_boot=20,
                     options=run)
    assert rep["gender"]["model"].tolist() in ([f"{MODEL} · nli:true-false-neither [generated]"], [])
    with pytest.raises(StereoprobeError, match="No token .* is the label.*'True'"):
        nli.report(MODEL, "gender", sample=8, templates="true-false-neither", rung="next-token", n_boot=20,
                   options=run)


def test_a_model_without_a_chat_template_is_refused_on_the_chat_rungs(tmp_path):
    ref = resolve_model("lab:causal-biased", native="qa", smoke=True)
    assert backend_for(ref, opts(tmp_path)).stores_exact
    with pytest.raises(StereoprobeError, match="has no chat template.*exact rung"):
        _unqover(ref, "generated", opts(tmp_path), thinking=None)


def test_a_label_the_vocabulary_lacks_is_refused_in_one_line():
    from stereoprobe.models import load_tokenizer

    tok = load_tokenizer(MODEL, smoke=True)
    assert all(ids for ids in label_ids(tok, ["A", "B", "C"]))
    with pytest.raises(StereoprobeError, match="No token .* is the label.*'Xylophone'"):
        label_ids(tok, ["A", "Xylophone"])


# -- a new backend, from its own module alone ------------------------------------------------------------------
class AlwaysFirst:
    """A backend that answers from a table, not a model: the first label takes 0.7 of the first token (the others
    0.2, 0.1), every reply is "A", and a continuation's log-probability is minus its length."""

    stores_exact = False
    TABLE = (0.7, 0.2, 0.1)

    recorded: dict = {}  # what each row read (a real backend keeps it in the run's state)

    def __init__(self, ref, options):
        self.name, self.asked = ref.name, 0

    def why_not(self, rung):
        return None

    def choose(self, fits, forced):
        return forced or fits[0]

    def loglikelihood(self, build, chat, desc=""):
        reqs = build(None, False)
        self.asked += len(reqs)
        return reqs, np.array([-float(len(c)) for _, c in reqs]), False

    def label_probabilities(self, messages, labels, *, thinking=None, desc=""):
        self.asked += len(messages)
        row = np.array([self.TABLE[i] if i < 3 else 0.0 for i in range(len(labels))])
        return np.tile(row, (len(messages), 1)), np.full(len(messages), row.sum()), np.zeros(len(messages), bool)

    def generate(self, messages, *, samples=1, temperature=None, thinking=None, think_budget=None, desc=""):
        self.asked += len(messages)
        return [[("A", "")] * samples for _ in messages]

    def counts(self):
        return {"requests": self.asked}

    def record(self, key, desc, facts, before):
        self.recorded[key] = {**facts, "requests": self.asked - before["requests"]}


@pytest.fixture
def table_backend():
    from stereoprobe.backends import register_backend, unregister_backend
    from stereoprobe.modelref import ModelKind, register_kind, unregister_kind

    register_kind(ModelKind("table", claims=lambda name: name.startswith("table:"), fingerprint=lambda ref: "table",
                            tokenizer=lambda ref: None, describe="answers from a table"))
    register_backend("table", AlwaysFirst)
    yield
    unregister_kind("table")
    unregister_backend("table")


def test_a_new_backend_gets_full_reports_of_all_three_probes_on_every_rung(table_backend, tmp_path):
    """Registered with its kind and nothing else (no reader, no edit of a probe), a backend is read by each probe's
    prompted reader, and the reports measure what it answers: always the first letter is δ = |0.7 − 0.2| / 0.9 on
    the next-token rung and 1 on the generated rung, μ = 0 (the order cancels, Li et al. 2020, Eq. 5); two labels of
    one length tie on the exact rung (δ = 0); Bias-NLI's neutral word, second, takes 0.2."""
    from stereoprobe import nli, sodapop, unqover

    run = RunOptions(device="cpu", smoke=True, progress=False, store=tmp_path / "store")
    AlwaysFirst.recorded.clear()
    want = {"exact": 0.0, "next-token": 0.5 / 0.9, "generated": 1.0}
    for rung, delta in want.items():
        rep = unqover.report("table:a", "gender", sample=20, templates=["letters"], rung=rung, n_boot=20, options=run)
        errors = rep["reasoning_errors"].set_index("model")
        assert list(errors.index) == [f"table:a · choice:letters [{rung}]"]
        assert errors["delta"].iloc[0] == pytest.approx(delta, abs=1e-9), rung
        assert rep["intensity"]["mu"].iloc[0] == pytest.approx(0.0, abs=1e-9)
    nt = nli.report("table:a", "gender", sample=10, templates="true-false-neither", rung="next-token", n_boot=20,
                    options=run)["gender"]
    assert nt["model"].tolist() == ["table:a · nli:true-false-neither [next-token]"]
    assert nt["NN"].iloc[0] == pytest.approx(0.2) and nt["FN"].iloc[0] == 0
    sp = sodapop.report("table:a", "lab:mlm-biased", names_per_group=1, depth=1, cap=4, n_perm=10,
                        pairs=["AA_m:EA_m"], rung="generated", options=run)
    assert sp["units"]["answered"].eq(1).all() and sp["units"]["accuracy"].between(0, 1).all()
    # each row told its backend what it read: the rung and the passes it asked
    unqover_rows = {k.rung: v for k, v in AlwaysFirst.recorded.items() if isinstance(k, RowKey)}
    assert {r: v["rung"] for r, v in unqover_rows.items()} == {r: r for r in want}
    assert all(v["requests"] >= v["passes"] > 0 for v in unqover_rows.values())
    assert AlwaysFirst.recorded[(RowKey("table:a", "nli", "true-false-neither", "next-token"), "gender")]["passes"] == 10
    assert AlwaysFirst.recorded[("sodapop", "table:a")]["rung"] == "generated"


def test_local_samples_give_shares_and_are_kept(tmp_path):
    """--samples 3 at temperature 1 on a local model: three sampled replies per pass, S the share naming each
    subject (thirds), stored under the sampling settings (greedy replies are kept apart), the same on a second call."""
    ref = resolve_model(MODEL, native="qa", smoke=True)
    run = opts(tmp_path)
    first = _unqover(ref, "generated", run, samples=3, temperature=1.0)[1]
    shares = first[["s1_pos", "s2_pos", "u_pos", "x_pos"]].to_numpy()
    assert np.allclose(shares.sum(axis=1), 1) and np.allclose(shares * 3, np.round(shares * 3))
    backend = Local(ref, run)
    from stereoprobe.unqover.prompted import read_answers

    again = read_answers(backend, SPEC, LETTERS, Prompting(thinking=False, samples=3, temperature=1.0), label="again")
    assert backend.counts()["requests"] == 0 and len(again) == 3 * 2 * len(first)
    greedy = _unqover(ref, "generated", opts(tmp_path))[1]  # the same store: greedy is its own reading
    assert set(np.unique(greedy[["s1_pos", "s2_pos"]].to_numpy())) <= {0.0, 1.0}


def test_kinds_beyond_files_register_themselves_through_the_plugins_entry_point(monkeypatch):
    """The served kind and its backend come from the module that defines them, loaded through the entry point
    stereoprobe.plugins (the core names no such kind); a plug-in that does not import is refused in one line."""
    from importlib.metadata import EntryPoint

    from stereoprobe import plugins
    from stereoprobe.backends import has_backend
    from stereoprobe.modelref import kinds

    assert plugins.load()["served"] == "stereoprobe.served.backend"
    assert "served" in kinds() and has_backend("served") and has_backend("causal")
    monkeypatch.setattr(plugins, "_SCANNED", [])
    monkeypatch.setattr("importlib.metadata.entry_points",
                        lambda group: [EntryPoint("broken", "no_such_module_of_anyone", group)])
    with pytest.raises(StereoprobeError, match="plug-in 'broken' .* does not import .* reinstall"):
        plugins.load()
