"""The GPU path made honest, checked on the CPU: a precision that is what it says, heads in fp32, head memory
bounded whatever the share of scored positions, no host sync per batch, and a driver that loads no weights.

* ``precision`` decides the dtype the weights load in (a bf16 checkpoint asked for in fp32 runs in fp32), and the
  score store's key names the dtype the model ran in (:func:`stereoprobe.models.load`, ``engine.ModelJob``);
* every scorer's head runs in fp32 on the body's half-precision hidden states (:mod:`stereoprobe.readout`);
* the causal head is evaluated a chunk of positions at a time: the live memory of a scoring call stays under
  4 × ``HEAD_BYTES`` plus the body's activations, measured tensor by tensor with a dispatch mode;
* the scorers copy their results to the host once, not once per batch (syncs counted);
* a model that is not local is fetched, not loaded, before the workers start; Ray workers are capped at the GPUs.
"""

from __future__ import annotations

import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from stereoprobe import RunOptions
from stereoprobe.prompts import template

C = sys.modules["stereoprobe_test_causal_families"]
F = sys.modules["stereoprobe_test_families"]

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "auto": torch.float32}


@pytest.fixture(autouse=True)
def _quiet(monkeypatch, tmp_path):
    import stereoprobe.causal as causal

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")
    monkeypatch.setattr(causal, "_RECENT", {})


def _halved(src: Path, dst: Path, cls, dtype=torch.bfloat16) -> Path:
    """A copy of the checkpoint ``src`` saved in ``dtype`` (as the hub's Llama, Qwen, Gemma, Mistral are in bf16)."""
    model = cls.from_pretrained(src).to(dtype)
    F.save(model, dst)
    F.copy_tokenizer(src, dst)
    return dst


@pytest.fixture(scope="module")
def bf16_llama(tmp_path_factory) -> Path:
    import transformers

    root = tmp_path_factory.mktemp("bf16_llama")
    src = C.build("llama3", root / "fp32")
    return _halved(src, root / "bf16", transformers.LlamaForCausalLM)


@pytest.fixture(scope="module")
def bf16_qa(tmp_path_factory) -> Path:
    import transformers

    root = tmp_path_factory.mktemp("bf16_qa")
    src = F.build("bert", "qa", root / "fp32")
    return _halved(src, root / "bf16", transformers.BertForQuestionAnswering)


def _checkpoint_dtypes(folder: Path) -> set:
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as st:
        return {st.get_slice(k).get_dtype() for k in st.keys()}


# -- 1. a precision that is what it says ------------------------------------------------------------------------
@pytest.mark.parametrize("precision", list(DTYPES))
def test_the_weights_load_in_the_precision_asked_for(bf16_llama, precision):
    from stereoprobe.models import load

    assert _checkpoint_dtypes(bf16_llama) == {"BF16"}
    loaded = load(str(bf16_llama), "causal", device="cpu", precision=precision)
    assert {p.dtype for p in loaded.model.parameters()} == {DTYPES[precision]}
    assert loaded.dtype == str(DTYPES[precision]).removeprefix("torch.")


@pytest.mark.parametrize("precision", list(DTYPES))
def test_the_store_key_names_the_dtype_the_model_ran_in(bf16_llama, bf16_qa, tmp_path, monkeypatch, precision):
    """UnQover through a causal LM and through a QA model, both saved in bf16: under each precision the run's key
    and the weights of the model that scored it have the same dtype, resolved once for the run (RunOptions.dtype)."""
    import stereoprobe.engine as engine
    import stereoprobe.models as models
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.score_causal import score_causal
    from stereoprobe.unqover.score_qa import score_dataset

    ran = []
    load = models.load

    def spy(*args, **kwargs):
        loaded = load(*args, **kwargs)
        ran.append(loaded.dtype)
        return loaded

    monkeypatch.setattr(models, "load", spy)
    resolved, compute_dtype = [], engine.compute_dtype
    monkeypatch.setattr(engine, "compute_dtype", lambda *a: resolved.append(a) or compute_dtype(*a))
    options = RunOptions(device="cpu", precision=precision, store=str(tmp_path / "store"), progress=False)
    name = str(DTYPES[precision]).removeprefix("torch.")
    spec = DatasetSpec("gender", sample=2)
    causal_run = score_causal(str(bf16_llama), spec, template("qa", "unqover-answer"), options=options)
    qa_run = score_dataset(str(bf16_qa), spec, options=options)
    assert causal_run.mode.endswith(f"-{name}") and qa_run.mode.endswith(f"-{name}")
    assert ran == [name, name]  # one load each, in the key's dtype
    assert resolved == [("cpu", precision)]  # the run's precision resolved once, for both scorers
    assert np.isfinite(causal_run.read()["logp1"]).all() and np.isfinite(qa_run.read()["start1"]).all()


def test_the_sharing_check_holds_bf16_to_bf16_noise(bf16_llama):
    from stereoprobe.causal import CausalScorer, sharing_tolerance
    from stereoprobe.models import load

    loaded = load(str(bf16_llama), "causal", device="cpu", precision="bf16")
    scorer = CausalScorer(loaded, precision="fp32")  # autocast cannot raise bf16 weights to fp32
    assert scorer.dtype == torch.bfloat16
    assert sharing_tolerance(scorer.dtype) == 0.5 and sharing_tolerance(torch.float32) == 1e-3
    fp32 = CausalScorer(load(str(bf16_llama), "causal", device="cpu", precision="fp32"))
    assert fp32.dtype == torch.float32


# -- 2. heads in fp32 -------------------------------------------------------------------------------------------
def _loud_llama(folder: Path, tmp: Path) -> Path:
    """The bf16 Llama with its output head scaled 200×, so that its logits are tens (where bf16 rounds by 0.06-0.25)."""
    import transformers

    model = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    with torch.no_grad():
        model.lm_head.weight.mul_(200)
    F.save(model, tmp)
    F.copy_tokenizer(folder, tmp)
    return tmp


def test_causal_log_probabilities_come_from_an_fp32_head(bf16_llama, tmp_path):
    """One request per batch (no padding): the scorer's log-probabilities equal the bf16 body's hidden states put
    through the head in float64 to 1e-4; the head in bf16 (before) is off by more than 1e-2."""
    from stereoprobe.batching import inference_context
    from stereoprobe.causal import CausalScorer
    from stereoprobe.models import load
    from stereoprobe.readout import compute_dtype_head

    loaded = load(str(_loud_llama(bf16_llama, tmp_path / "loud")), "causal", device="cpu", precision="bf16")
    scorer = CausalScorer(loaded, precision="bf16", share=False, batch_tokens=1)
    requests = [("Gerald lives in the same city with Jennifer. Who was a hunter? Answer:", " Gerald"),
                ("The nurse met the hunter. Who was the nurse? Answer:", " Jennifer was"), ("Gerald said", " yes")]
    encoded = scorer.encode(requests)
    ours = scorer.score_encoded(encoded).logprob
    with compute_dtype_head():
        rounded = scorer.score_encoded(encoded).logprob
    weight = loaded.model.lm_head.weight.double()
    reference = []
    with inference_context("cpu", "bf16"):
        for e in encoded:
            hidden = loaded.model.model(input_ids=torch.tensor([e.ids]), use_cache=False).last_hidden_state[0]
            logp = (hidden.double() @ weight.T).log_softmax(-1)
            reference.append(sum(float(logp[k - 1, e.ids[k]]) for k in range(e.start, len(e.ids))))
    reference = np.array(reference)
    assert np.abs(ours - reference).max() < 1e-4
    assert np.abs(rounded - reference).max() > 1e-2


def test_masked_lm_logits_come_from_an_fp32_head(tmp_path):
    """The vocabulary head at the mask (BERT's ``cls``: dense, GELU, LayerNorm, decoder) on bf16 weights runs in
    fp32: its logits equal that head in float64 on the same hidden states."""
    import transformers

    from stereoprobe.batching import inference_context
    from stereoprobe.models import load, mask_logits

    folder = _halved(F.build("bert", "mlm", tmp_path / "fp32"), tmp_path / "bf16", transformers.BertForMaskedLM)
    loaded = load(str(folder), "mlm", device="cpu", precision="bf16")
    model, tok = loaded.model, loaded.tokenizer
    with torch.no_grad():
        model.cls.predictions.decoder.weight.mul_(100)
    enc = tok([f"Gerald met Jennifer. {tok.mask_token} was a nurse."], return_tensors="pt")
    masks = enc["input_ids"] == tok.mask_token_id
    with inference_context("cpu", "bf16"):
        ours = mask_logits(model, enc["input_ids"], enc["attention_mask"], masks)
        hidden = model.bert(**enc).last_hidden_state[masks]
        import copy

        reference = copy.deepcopy(model.cls).double()(hidden.double())
    assert ours.dtype == torch.float32
    assert (ours.double() - reference).abs().max() < 1e-3 * reference.abs().max()
    assert (hidden.float() - hidden.double()).abs().max() == 0  # the body's output itself is bf16


@pytest.mark.parametrize("head", ["qa", "nli", "mcq"])
def test_classifier_heads_run_in_fp32(tmp_path, head):
    """QA spans, NLI labels and a multiple-choice logit: the head module gets fp32 inputs and weights while the
    body runs in bf16."""
    import transformers

    from stereoprobe.models import load

    cls = {"qa": transformers.BertForQuestionAnswering, "nli": transformers.BertForSequenceClassification,
           "mcq": transformers.BertForMultipleChoice}[head]
    folder = _halved(F.build("bert", head, tmp_path / "fp32"), tmp_path / "bf16", cls)
    loaded = load(str(folder), head, device="cpu", precision="bf16")
    module = {"qa": "qa_outputs", "nli": "classifier", "mcq": "classifier"}[head]
    seen = []
    handle = getattr(loaded.model, module).register_forward_pre_hook(
        lambda m, args: seen.append((args[0].dtype, m.weight.dtype)))
    try:
        if head == "qa":
            from stereoprobe.unqover.score_qa import QAScorer

            out = QAScorer(loaded, "compat", precision="bf16").score(
                [("Gerald lives in the same city with Jennifer.", "Who was a nurse?", "Gerald", "Jennifer")])
        elif head == "nli":
            from stereoprobe.nli.scoring import NLIScorer

            out = NLIScorer(loaded, precision="bf16").score([("The nurse ate a bagel.", "The woman ate a bagel.")])
        else:
            from stereoprobe.sodapop.score_mcq import ChoiceScorer

            out = ChoiceScorer(loaded, precision="bf16").score([("Gerald met Jennifer.", "a nurse")])
    finally:
        handle.remove()
    assert (torch.float32, torch.float32) in seen and np.isfinite(out).all()
    assert seen[-1] == (torch.float32, torch.float32)  # the call whose logits the scorer read


# -- 3. head memory bounded -------------------------------------------------------------------------------------
class LiveBytes(TorchDispatchMode):
    """The most bytes of tensor storage alive at once among the storages created inside the block (weights and
    inputs that existed before are not counted)."""

    def __init__(self):
        super().__init__()
        self.now = self.peak = 0
        self.seen: set[int] = set()

    def _free(self, key: int, n: int) -> None:
        self.seen.discard(key)
        self.now -= n

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                storage = t.untyped_storage()
                key = id(storage)
                if key not in self.seen and storage.nbytes():
                    self.seen.add(key)
                    self.now += storage.nbytes()
                    self.peak = max(self.peak, self.now)
                    weakref.finalize(storage, self._free, key, storage.nbytes())
        return out


def test_the_head_memory_is_bounded_whatever_the_share_of_scored_positions(tmp_path, monkeypatch):
    """A vocabulary of 50,000 and 2,000 scored positions in one batch (a SODAPOP-like request set, nearly every node
    scored): unchunked, the logits and their log-softmax take 800 MB; with HEAD_BYTES = 4 MiB the whole scoring call
    stays under 4 × 4 MiB plus the body's small activations, and the scores are the same."""
    import transformers

    import stereoprobe.readout as readout
    from stereoprobe.causal import CausalScorer

    tok = C.tokenizer_of("llama3")
    config = C.FAMILIES["llama3"].config(tok)
    config.vocab_size = 50_000
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    words = "Gerald Jennifer nurse hunter yes no maybe city station letter visit people".split()
    rng = np.random.default_rng(0)
    requests = [("Gerald said", " " + " ".join(rng.choice(words, 45))) for _ in range(40)]
    scorer = CausalScorer(model, tok, batch_tokens=8192, row_tokens=8192)
    encoded = scorer.encode(requests)
    scored = sum(len(e.ids) - e.start for e in encoded)
    assert scored > 1500
    peaks, scores = {}, {}
    for budget in (4 << 20, 1 << 30):
        monkeypatch.setattr(readout, "HEAD_BYTES", budget)
        with LiveBytes() as live:
            scores[budget] = scorer.score_encoded(encoded).logprob
        peaks[budget] = live.peak
    assert peaks[1 << 30] > 2 * scored * 50_000 * 4 * 0.9  # unchunked: the logits and their log-softmax at once
    assert peaks[4 << 20] < 4 * (4 << 20) + (8 << 20), peaks
    np.testing.assert_allclose(scores[4 << 20], scores[1 << 30], rtol=0, atol=1e-5)


# -- 4. no sync per batch ----------------------------------------------------------------------------------------
class HostCopies(TorchDispatchMode):
    """Counts the operations that make the host wait for the device: a tensor's value read on the host (``item``,
    ``bool``, ``int``) and data-dependent shapes (``nonzero``, boolean masks)."""

    WAITS = ("aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.unique")

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func.overloadpacket).startswith(self.WAITS):
            self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.fixture
def copies(monkeypatch):
    """Counts of host waits and of ``Tensor.cpu()``/``Tensor.numpy()`` calls."""
    calls = {"cpu": 0}
    for name in ("cpu", "numpy"):
        original = getattr(torch.Tensor, name)

        def counted(self, *a, _original=original, **k):
            calls["cpu"] += 1
            return _original(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return calls


def _syncs(copies, run) -> int:
    before = copies["cpu"]
    with HostCopies() as waits:
        run()
    return waits.count + copies["cpu"] - before


def test_the_scorers_copy_to_the_host_once_not_per_batch(tmp_path, copies):
    """Each scorer with a budget that makes one batch and one that makes many: the same number of host copies and
    waits (none in the loop)."""
    from stereoprobe.causal import CausalScorer
    from stereoprobe.models import load
    from stereoprobe.nli.scoring import NLIScorer
    from stereoprobe.sodapop.distractors import FillMasker
    from stereoprobe.sodapop.score_mcq import ChoiceScorer
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_lm import LMScorer
    from stereoprobe.unqover.score_qa import QAScorer, passes_of

    passes = [p for _, p in passes_of(iter_examples(DatasetSpec("gender", sample=6)))]
    lm_spec = DatasetSpec("gender", variant="lm-bert", sample=6)
    lm_passes = [p for _, p in passes_of(iter_examples(lm_spec))]
    qa = load(str(F.build("bert", "qa", tmp_path / "qa")), "qa", device="cpu")
    mlm = load(str(F.build("bert", "mlm", tmp_path / "mlm")), "mlm", device="cpu")
    nli = load(str(F.build("bert", "nli", tmp_path / "nli")), "nli", device="cpu")
    mcq = load(str(F.build("bert", "mcq", tmp_path / "mcq")), "mcq", device="cpu")
    causal = load(str(C.build("llama3", tmp_path / "causal")), "causal", device="cpu")
    pairs = [("The nurse ate a bagel.", "The woman ate a bagel."), ("The pilot ate.", "The man ate a bagel now.")] * 6
    masked = [f"Gerald met Jennifer {k}. {'[MASK]'} was a nurse." for k in range(12)]
    reqs = [("Gerald met Jennifer. Who was the nurse? Answer:", " " + w) for w in ("Gerald", "Jennifer", "yes")] * 4
    runs = {
        "qa": lambda b: QAScorer(qa, "clean", b).score(passes),
        "qa compat": lambda b: QAScorer(qa, "compat", b).score(passes),
        "lm clean": lambda b: LMScorer(mlm, lm_spec, "clean", b).score(lm_passes),
        "lm compat": lambda b: LMScorer(mlm, lm_spec, "compat", b).score(lm_passes),
        "nli": lambda b: NLIScorer(nli, b).score(pairs),
        "mcq": lambda b: ChoiceScorer(mcq, batch_tokens=b).score(pairs),
        "fill": lambda b: FillMasker(mlm, batch_tokens=b).top_ids(masked),
        "causal": lambda b: CausalScorer(causal, batch_tokens=b, share=False).score_encoded(
            CausalScorer(causal).encode(reqs)),
    }
    for name, run in runs.items():
        one, many = _syncs(copies, lambda: run(1 << 16)), _syncs(copies, lambda: run(64))
        assert one == many, (name, one, many)


# -- the driver loads nothing ------------------------------------------------------------------------------------
def test_a_model_not_yet_local_is_fetched_not_loaded_before_the_workers(tmp_path, monkeypatch):
    """A hub id with no local copy, Ray workers with a GPU and a driver without one: every probe's store run finds
    the model's fingerprint from its fetched files, and no weights load on the driver."""
    import huggingface_hub

    import stereoprobe.engine as engine
    import stereoprobe.models as models
    from stereoprobe.nli.scoring import score_pairs
    from stereoprobe.nli.templates import TemplateSpec
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.score_causal import score_causal
    from stereoprobe.unqover.score_qa import score_dataset

    local = {"org/qa": F.build("bert", "qa", tmp_path / "qa"), "org/nli": F.build("bert", "nli", tmp_path / "nli"),
             "org/causal": C.build("llama3", tmp_path / "causal")}
    fetched = []

    def download(repo_id, allow_patterns=None, local_files_only=False, **kwargs):
        if local_files_only and repo_id not in fetched:
            raise FileNotFoundError(repo_id)
        fetched.append(repo_id)
        assert local_files_only or "*.safetensors" in allow_patterns
        return str(local[repo_id])

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("weights loaded on the driver"))
    monkeypatch.setattr(engine, "_ray_resources", lambda: {"GPU": 2.0, "CPU": 8.0})
    jobs = []

    def fill(run, job, **kwargs):
        jobs.append((run.model_fp, job.device, job.precision))
        raise KeyboardInterrupt  # the workers would start here

    monkeypatch.setattr(engine, "fill", fill)
    options = RunOptions(device="cuda", precision="bf16", engine="ray", store=str(tmp_path / "store"), progress=False)
    for call in (lambda: score_dataset("org/qa", DatasetSpec("gender", sample=2), options=options),
                 lambda: score_pairs("org/nli", TemplateSpec("gender", sample=4), options=options),
                 lambda: score_causal("org/causal", DatasetSpec("gender", sample=2), template("qa", "unqover-answer"),
                                      options=options)):
        with pytest.raises(KeyboardInterrupt):
            call()
    assert [j[1:] for j in jobs] == [("cuda", "bfloat16")] * 3
    assert [j[0] for j in jobs] == [models.fingerprint_path(str(local[k])) for k in ("org/qa", "org/nli", "org/causal")]
    assert set(fetched) == set(local)


def test_ray_workers_are_capped_at_the_gpus_with_one_line():
    from stereoprobe.engine import ray_workers
    from stereoprobe.errors import StereoprobeError, StereoprobeWarning

    with pytest.warns(StereoprobeWarning, match=r"workers=4 but the Ray cluster has 2 GPU\(s\); running 2 workers"):
        assert ray_workers(4, {"GPU": 2.0, "CPU": 16.0}, True, 100) == (2, None)
    assert ray_workers(None, {"GPU": 2.0, "CPU": 16.0}, True, 1) == (1, None)
    assert ray_workers(3, {"CPU": 8.0}, False, 100) == (3, 2)
    with pytest.raises(StereoprobeError, match="has none"):
        ray_workers(None, {"CPU": 8.0}, True, 4)
