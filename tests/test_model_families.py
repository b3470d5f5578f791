"""The model-family matrix: every probe on tiny random models of each family, through the CLI in this process.

Families (tests/families.py): BERT, DistilBERT, RoBERTa, ALBERT, DeBERTa-v2, DeBERTa-v3, XLM-RoBERTa, ModernBERT and
BART, each with the heads transformers 5.x has for it and a tokenizer of its real kind (WordPiece, byte-level BPE,
SentencePiece Unigram). For each family:

* UnQover QA: the report runs and is finite; the subject spans and their article/suffix candidates decode (through
  the tokenizer's offsets) to the subject, "a", "man", "."; a planted start/end logit boost on one subject's tokens
  makes that subject win every example it is in.
* UnQover masked LM (the family's LM variant): the report runs; a planted vocabulary bias on one subject's token
  makes it win (compat and clean). BART's AutoModelForMaskedLM class is the seq2seq BartForConditionalGeneration:
  refused as a masked LM (UnQover LM and SODAPOP writer).
* Bias-NLI: the report runs; the same classifier saved with permuted labels (and with LABEL_k + --label-order)
  gives identical per-label probabilities; LABEL_k without --label-order is refused naming the option.
* SODAPOP: the family's masked LM writes the distractors, its multiple-choice model answers (BART: transformers
  has no BartForMultipleChoice).
* Refusals, each one whole-sentence ``error: …`` line with exit status 2 and no traceback: a missing head, missing
  tokenizer files, an all-unknown tokenizer, pickle-only weights without --allow-pickle (an opt-in that must not
  outlive its command), truncated or empty safetensors.

Models are built once per session (seconds in all); samples are a few examples.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stereoprobe import RunOptions
from stereoprobe.choices import MODES


F = sys.modules["stereoprobe_test_families"]  # loaded by tests/conftest.py
FAMILIES = list(F.FAMILIES)
QA_FAMILIES = [f for f in FAMILIES if F.FAMILIES[f].head_class("qa") is not None]
# encoder masked LMs; BART's AutoModelForMaskedLM class is the seq2seq BartForConditionalGeneration, which the
# probes refuse as a masked LM (test_an_encoder_decoder_is_no_masked_lm)
MLM_FAMILIES = [f for f in FAMILIES
                if F.FAMILIES[f].head_class("mlm") is not None and not F.FAMILIES[f].encoder_decoder]
SEQ2SEQ_FAMILIES = [f for f in FAMILIES if F.FAMILIES[f].encoder_decoder]
NLI_FAMILIES = [f for f in FAMILIES if F.FAMILIES[f].head_class("nli") is not None]
DATASETS = ("gender", "nationality", "ethnicity", "religion")
LABEL_ORDER = "entailment,neutral,contradiction"


def _with_head(head: str):
    """The families as parameters; those whose head class transformers lacks are skipped, saying so."""
    return [f if F.FAMILIES[f].head_class(head) is not None else pytest.param(
        f, marks=pytest.mark.skip(reason=f"transformers has no {F.FAMILIES[f].arch}{F._HEAD_SUFFIX[head]}"))
        for f in FAMILIES]


# -- fixtures -----------------------------------------------------------------------------------------------------
class Zoo:
    """Models of the matrix, built on first use and kept for the session."""

    def __init__(self, root: Path):
        self.root = root
        self._built: dict[tuple, Path] = {}
        self._loaded: dict[tuple, object] = {}

    def _make(self, key: tuple, build) -> Path:
        if key not in self._built:
            folder = self.root / "-".join(str(k) for k in key).replace(":", "_").replace(",", "_")
            self._built[key] = Path(build(folder))
        return self._built[key]

    def model(self, family: str, head: str) -> Path:
        return self._make((family, head), lambda d: F.build(family, head, d))

    def nli(self, family: str, layout: str) -> Path:
        """The family's NLI classifier with one label layout: ``enc`` (entailment, neutral, contradiction), ``cne``
        (the same function with the rows and labels reversed) or ``generic`` (LABEL_0..2 in the enc order)."""
        base = self.model(family, "nli")
        if layout == "enc":
            return base
        if layout == "cne":
            return self._make((family, "nli", layout), lambda d: F.relabelled_copy(
                base, d, family, {0: "contradiction", 1: "neutral", 2: "entailment"}, perm=[2, 1, 0]))
        return self._make((family, "nli", layout), lambda d: F.relabelled_copy(
            base, d, family, {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}))

    def planted_mlm(self, family: str, word: str) -> Path:
        """The family's masked LM with +40 on the vocabulary bias of ``word``'s token (as after a space)."""
        import torch

        def build(folder):
            src = self.model(family, "mlm")
            tok = F.tokenizer_of(family)
            model = F.load_model(src, "mlm", family)
            with torch.no_grad():
                F.vocabulary_bias(model)[F.context_token_id(tok, word)] += 40.0
            folder.mkdir(parents=True)
            F.save(model, folder)
            F.copy_tokenizer(src, folder)
            # the planting itself, checked on the saved files: the word is the model's top fill of a mask
            reloaded = F.load_model(folder, "mlm", family)
            enc = tok(f"A man met a woman. The {tok.mask_token} man was a doctor.", return_tensors="pt")
            with torch.no_grad():
                logits = reloaded(**enc).logits[enc["input_ids"] == tok.mask_token_id]
            assert logits.argmax(-1).tolist() == [F.context_token_id(tok, word)]
            return folder

        return self._make((family, "mlm", "planted", word), build)

    def broken(self, family: str, head: str, how: str) -> Path:
        src = self.model(family, head)
        key = (family, head, how)
        if how == "no-tokenizer":
            return self._make(key, lambda d: F.copy_without(src, d, F.TOKENIZER_FILES))
        if how == "pickle":
            return self._make(key, lambda d: F.pickle_only_copy(src, d, family, head))
        if how in ("truncated", "empty"):
            return self._make(key, lambda d: F.damaged_safetensors_copy(src, d, how))
        if how.startswith("unk-"):
            return self._make(key, lambda d: F.with_tokenizer(src, d, F.specials_only_tokenizer(how[4:])))
        raise ValueError(how)

    def loaded(self, family: str, head: str):
        """``stereoprobe.models.load`` of the family's model (cached; a refusal is raised again each time)."""
        from stereoprobe.models import load

        key = (family, head)
        if key not in self._loaded:
            self._loaded[key] = load(str(self.model(family, head)), head, device="cpu")
        return self._loaded[key]


@pytest.fixture(scope="session")
def zoo(tmp_path_factory) -> Zoo:
    return Zoo(tmp_path_factory.mktemp("families"))


@pytest.fixture(autouse=True)
def _quiet_and_single_threaded(monkeypatch, tmp_path):
    """One torch thread (tiny models: more only add synchronisation), a fresh stereoprobe cache per test."""
    import torch

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STEREOPROBE_PROGRESS", "0")
    monkeypatch.setenv("STEREOPROBE_ALLOW_PICKLE", "0")  # the opt-in is per command, and restored after each test
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def cli(capsys, *args) -> tuple[int, str, str]:
    """Run ``stereoprobe ARGS`` in this process: (exit status, stdout, stderr). An exception escaping the CLI is a
    failure: the command line would print a traceback."""
    from stereoprobe.cli import _run, app

    capsys.readouterr()
    try:
        code = _run(app, [str(a) for a in args], "stereoprobe")
    except Exception as err:  # noqa: BLE001 - reported as the failure it is
        captured = capsys.readouterr()
        pytest.fail(f"traceback instead of one error line: {type(err).__name__}: {str(err)[:300]} "
                    f"(stderr: {captured.err[-300:]!r})", pytrace=False)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_refused(result, *needles: str, any_of: tuple[str, ...] = ()) -> str:
    """Exit status 2 and exactly one line ``error: …`` on stderr, a whole sentence (ending in "."), containing every
    needle (and one of ``any_of``)."""
    code, out, err = result
    assert code == 2, f"exit status {code}, not 2 (stdout {out[-300:]!r}, stderr {err[-300:]!r})"
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, f"not one error line: {err!r}"
    assert err.rstrip().endswith("."), f"the error line is cut short: {err!r}"
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"
    if any_of:
        assert any(n in err for n in any_of), f"none of {any_of} in {err!r}"
    return err


def assert_ok(result) -> str:
    code, out, err = result
    assert code == 0, f"exit status {code}: {err.strip()[-400:]}"
    return out


def finite(frame: pd.DataFrame, columns) -> bool:
    return bool(np.isfinite(frame[list(columns)].to_numpy(dtype=float)).all())


# -- the builders themselves --------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_built_tokenizer_reloads_as_the_same_fast_tokenizer(zoo, family):
    """The folder's tokenizer (AutoTokenizer) is fast, has the family's special tokens and tokenizes like the one it
    was built from; the UnQover LM subjects are single tokens after a space."""
    from transformers import AutoTokenizer

    from stereoprobe.unqover.generate import DatasetSpec, subjects_of

    built = F.tokenizer_of(family)
    tok = AutoTokenizer.from_pretrained(zoo.model(family, "qa" if family in QA_FAMILIES else "nli"))
    assert tok.is_fast and tok.mask_token and tok.pad_token and tok.cls_token and tok.sep_token
    text = ("A South American man got off the flight to visit a Christian woman.", "Who was an accountant?")
    a, b = built(*text, return_offsets_mapping=True), tok(*text, return_offsets_mapping=True)
    assert a["input_ids"] == b["input_ids"] and a["offset_mapping"] == b["offset_mapping"]
    assert tok.unk_token_id not in b["input_ids"]
    variant = F.FAMILIES[family].lm_variant
    for dataset in DATASETS:
        for subjects in subjects_of(DatasetSpec(dataset, variant=variant)):
            for s in subjects:
                for text in filter(None, (s.name, s.demonym)):
                    F.context_token_id(tok, text)  # one token (raises otherwise)


# -- UnQover, extractive QA ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", QA_FAMILIES)
def test_unqover_qa_report_runs(capsys, tmp_path, zoo, family):
    qa = zoo.model(family, "qa")
    out = assert_ok(cli(capsys, "unqover", "report", "-m", qa, "-d", "gender", "--sample", "10", "--device", "cpu",
                        "--store", tmp_path / "scores", "--n-boot", "20", "-o", tmp_path / "rep"))
    assert "reasoning_errors" in out
    errors = pd.read_csv(tmp_path / "rep" / "gender_reasoning_errors.csv")
    assert errors["keys"].iloc[0] == 10 and finite(errors, ["delta", "epsilon", "avg_s"])
    assert (errors["avg_s"] > 0).all()


_ARTICLES = {"a", "an", "the", "some", "few", "several"}
_GROUP_WORDS = _ARTICLES | {"group", "team", "couple", "of"}
_SUFFIXES = set("man woman boy girl child kid person folk people couple men women boys girls children kids persons "
                "folks city country cities countries .".split())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("family", QA_FAMILIES)
def test_unqover_qa_spans_decode_to_the_subject(zoo, family, dataset, mode):
    """QAScorer.encode's start/end positions, read back through the tokenizer's offsets: the first and last token
    of each subject spell it; an article candidate spells "a"/"the"… and is there when the subject follows "a "
    (clean: always; compat: after a space, as the authors' "Ġa"); a suffix candidate spells "man"/"."… and is
    there when one follows."""
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_qa import QAScorer, passes_of

    loaded = zoo.loaded(family, "qa")
    tok = loaded.tokenizer
    passes = [p for _, p in passes_of(iter_examples(DatasetSpec(dataset, sample=4, seed=3, mode=mode)))]
    enc = QAScorer(loaded, mode).encode(passes)
    checked_article = checked_suffix = 0
    for i, (context, _, ans1, ans2) in enumerate(passes):
        ctx = tok(context, add_special_tokens=False, return_offsets_mapping=True)
        c_ids, offsets = ctx["input_ids"], ctx["offset_mapping"]
        seq = list(enc.ids[i])
        found = [j for j in range(len(seq) - len(c_ids) + 1) if seq[j:j + len(c_ids)] == c_ids]
        assert found, f"the paragraph's own tokens are not in the encoded pass {tok.convert_ids_to_tokens(seq)}"
        k = found[-1]

        def text(pos: int) -> str:
            assert k <= pos < k + len(c_ids), f"position {pos} is outside the paragraph [{k}, {k + len(c_ids)})"
            s, e = offsets[pos - k]
            return context[s:e].strip()

        for slot, ans in ((0, ans1), (1, ans2)):
            first, last = int(enc.starts[i, slot, 0]), int(enc.ends[i, slot, 0])
            text(first), text(last)
            raw = context[offsets[first - k][0]:offsets[last - k][1]]
            assert raw.strip() == ans, f"{tok.convert_ids_to_tokens(seq[first:last + 1])} spell {raw!r}, not {ans!r}"
            s_char = offsets[first - k][0] + len(raw) - len(raw.lstrip())
            e_char = s_char + len(ans)
            before = re.search(r"(\w+)( ?)$", context[:s_char])
            after = re.match(r" ?(\w+|\.)", context[e_char:])
            articles = {int(p) for p in enc.starts[i, slot, 1:]} - {first}
            for p in articles:
                assert text(p).lower() in _GROUP_WORDS, f"start candidate {text(p)!r} of {ans!r} is no article"
            if before and before[1].lower() in _ARTICLES and (mode == "clean" or (before[2] and before[1].islower())):
                assert articles, f"no article candidate for {ans!r} after {before[0]!r} in {context!r}"
                checked_article += 1
            end2 = int(enc.ends[i, slot, 1])
            if end2 != last:
                assert text(end2).lower() in _SUFFIXES, f"end candidate {text(end2)!r} of {ans!r} is no suffix"
            if after and after[1].lower() in _SUFFIXES:
                assert end2 != last and text(end2).lower() == after[1].lower(), \
                    f"no suffix candidate {after[1]!r} for {ans!r} in {context!r}"
                checked_suffix += 1
    assert checked_suffix > 0  # every dataset ends a subject with "man" or "."
    assert checked_article > 0 or dataset in ("gender", "nationality")


class _PlantedQA:
    """A global forward hook: +``boost`` on the start logits where the input id is ``start_id`` and on the end
    logits where it is ``end_id``, in every *ForQuestionAnswering model's output."""

    def __init__(self, start_id: int, end_id: int, boost: float = 30.0):
        self.start_id, self.end_id, self.boost, self.calls = start_id, end_id, boost, 0

    def __call__(self, module, args, kwargs, output):
        if not type(module).__name__.endswith("ForQuestionAnswering"):
            return None
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.calls += 1
        output["start_logits"] = output.start_logits + self.boost * (ids == self.start_id).to(output.start_logits.dtype)
        output["end_logits"] = output.end_logits + self.boost * (ids == self.end_id).to(output.end_logits.dtype)
        return output

    def __enter__(self):
        import torch

        self.handle = torch.nn.modules.module.register_module_forward_hook(self, with_kwargs=True)
        return self

    def __exit__(self, *exc):
        self.handle.remove()


def _winner_check(scores: pd.DataFrame, planted: str) -> int:
    """Every example holding ``planted`` scores it above the other subject, for both questions; returns how many."""
    n = 0
    for slot, other in ((1, 2), (2, 1)):
        rows = scores[scores[f"subj{slot}"] == planted]
        for q in ("pos", "neg"):
            assert (rows[f"s{slot}_{q}"] > rows[f"s{other}_{q}"]).all(), rows.head()
            assert (rows[f"s{slot}_{q}"] > 0.9).all(), f"planted subject scores {rows[f's{slot}_{q}'].min():.3g}"
        n += len(rows)
    return n


@pytest.mark.parametrize("family", QA_FAMILIES)
def test_unqover_qa_planted_subject_wins(capsys, tmp_path, zoo, family):
    """start and end logits boosted on one subject's first/last token (a hook on the model's output): scored through
    the CLI, that subject's S beats the other subject's in every example it is in."""
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_qa import load_scores

    spec = DatasetSpec("religion", sample=6, seed=0)
    planted = next(iter_examples(spec)).ans2  # after "a ": the same tokens in every template
    ids = F.context_tokens(F.tokenizer_of(family), planted, before="a ")
    qa, store = zoo.model(family, "qa"), tmp_path / "scores"
    with _PlantedQA(ids[0], ids[-1]) as hook:
        assert_ok(cli(capsys, "unqover", "score", "-m", qa, "-d", "religion", "--sample", "6", "--device", "cpu",
                      "--store", store))
    assert hook.calls > 0
    scores = load_scores(str(qa), spec, options=RunOptions(store=ScoreStore(store), device="cpu", progress=False))
    assert _winner_check(scores, planted) > 0


# -- UnQover, masked LMs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", MLM_FAMILIES)
def test_unqover_lm_report_runs(capsys, tmp_path, zoo, family):
    """--variant lm: the tokenizer picks the subject lists and the mask token; a random LM is flagged."""
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.reporting import lm_spec_for

    mlm = zoo.model(family, "mlm")
    spec = lm_spec_for(str(mlm), DatasetSpec("gender"))
    assert spec.variant == F.FAMILIES[family].lm_variant
    code, _, err = cli(capsys, "unqover", "report", "-m", mlm, "-d", "gender", "--variant", "lm", "--sample", "10",
                       "--device", "cpu", "--store", tmp_path / "scores", "--n-boot", "20", "-o", tmp_path / "rep")
    assert code == 0, err
    assert err.startswith(f"warning: {Path(mlm).name}: ") and "its UnQover tables say nothing" in err, err
    errors = pd.read_csv(tmp_path / "rep" / "gender_reasoning_errors.csv")
    assert errors["keys"].iloc[0] == 10 and finite(errors, ["delta", "epsilon", "avg_s"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("family", MLM_FAMILIES)
def test_unqover_lm_planted_subject_wins(capsys, tmp_path, zoo, family, mode):
    """+40 on the vocabulary bias of one subject's token (saved in the checkpoint): that subject wins."""
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover.generate import DatasetSpec, iter_examples
    from stereoprobe.unqover.score_qa import load_scores

    variant = F.FAMILIES[family].lm_variant
    spec = DatasetSpec("religion", variant=variant, sample=6, seed=0, mode=mode)
    planted = next(iter_examples(spec)).ans1
    mlm, store = zoo.planted_mlm(family, planted), tmp_path / "scores"
    assert_ok(cli(capsys, "unqover", "score", "-m", mlm, "-d", "religion", "--variant", variant, "--mode", mode,
                  "--sample", "6", "--device", "cpu", "--store", store))
    scores = load_scores(str(mlm), spec, mode=mode,
                         options=RunOptions(store=ScoreStore(store), device="cpu", progress=False))
    assert _winner_check(scores, planted) > 0


@pytest.mark.parametrize("use", ["lm", "writer"])
@pytest.mark.parametrize("family", SEQ2SEQ_FAMILIES)
def test_an_encoder_decoder_is_no_masked_lm(capsys, tmp_path, zoo, family, use):
    """BART's AutoModelForMaskedLM class is BartForConditionalGeneration, a seq2seq model whose decoder rewrites the
    whole text: refused as UnQover's masked LM and as SODAPOP's writer, in one line naming what it is."""
    folder = zoo.model(family, "mlm")
    assert_refused(cli(capsys, *_probe_args(use, folder, zoo, family, tmp_path)), str(folder), "encoder-decoder")


# -- Bias-NLI -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", NLI_FAMILIES)
def test_nli_label_layouts_give_the_same_probabilities(capsys, tmp_path, zoo, family):
    """One classifier saved three ways (entailment/neutral/contradiction; reversed rows with reversed labels; LABEL_k
    with --label-order): identical per-label probabilities, and the report runs on them."""
    from stereoprobe.nli.scoring import load_probabilities
    from stereoprobe.nli.templates import TemplateSpec
    from stereoprobe.store import ScoreStore

    models = [zoo.nli(family, layout) for layout in ("enc", "cne", "generic")]
    store = tmp_path / "scores"
    common = [a for m in models for a in ("-m", m)] + ["-p", "religion", "--sample", "30", "--device", "cpu",
                                                       "--store", store, "--label-order", LABEL_ORDER]
    assert_ok(cli(capsys, "nli", "score", *common))
    order = tuple(LABEL_ORDER.split(","))
    spec = TemplateSpec("religion", sample=30)
    probs = [load_probabilities(str(m), spec, label_order=order if layout == "generic" else None,
                                options=RunOptions(store=ScoreStore(store), device="cpu", progress=False))
             for m, layout in zip(models, ("enc", "cne", "generic"))]
    columns = ["entail", "neutral", "contradiction"]
    first = probs[0][columns].to_numpy()
    assert np.isfinite(first).all() and np.allclose(first.sum(1), 1, atol=1e-5)
    assert first.std(0).max() > 0  # not a constant: the pairs differ
    for other in probs[1:]:
        np.testing.assert_allclose(other[columns].to_numpy(), first, atol=1e-6)
    assert_ok(cli(capsys, "nli", "report", *common, "--n-boot", "20", "-o", tmp_path / "rep"))
    table = pd.read_csv(tmp_path / "rep" / "nli_religion_neutrality.csv")
    assert len(table) == 3 and finite(table, ["NN", "FN", "T:0.5", "T:0.7"])
    assert np.ptp(table["NN"].to_numpy()) < 1e-6  # the same function three times


@pytest.mark.parametrize("family", NLI_FAMILIES)
def test_nli_generic_labels_need_the_label_order(capsys, tmp_path, zoo, family):
    assert_refused(cli(capsys, "nli", "score", "-m", zoo.nli(family, "generic"), "-p", "religion", "--sample", "5",
                       "--device", "cpu", "--store", tmp_path / "scores"), "--label-order", "LABEL_0")
    assert not (tmp_path / "scores").exists() or not any(p.is_file() for p in (tmp_path / "scores").rglob("*"))


# -- SODAPOP ------------------------------------------------------------------------------------------------------
SODAPOP_TINY = ["--names-per-group", "2", "--depth", "1", "--cap", "10", "--n-perm", "100", "--pair", "AA_m:EA_m",
                "--device", "cpu"]


@pytest.mark.parametrize("family", _with_head("mcq"))
def test_sodapop_report_runs(capsys, tmp_path, zoo, family):
    """The family's masked LM writes the distractors, its multiple-choice model answers them."""
    out = assert_ok(cli(capsys, "sodapop", "report", "--mcq-model", zoo.model(family, "mcq"), "--mlm",
                        zoo.model(family, "mlm"), *SODAPOP_TINY, "--store", tmp_path / "scores",
                        "-o", tmp_path / "rep"))
    assert "16 units (names × contexts)" in out
    units = pd.read_csv(tmp_path / "rep" / "sodapop_units.csv")
    assert len(units) == 16 and (units["mcqs"] > 0).all()
    assert units["accuracy"].between(0, 1).all()
    assert (tmp_path / "rep" / "sodapop_rd_AA_m_EA_m.csv").exists()


# -- refusals -----------------------------------------------------------------------------------------------------
_NEEDS = {"qa": ("QA", "question", "Question"), "nli": ("NLI", "classification", "Classification"),
          "mcq": ("multiple-choice", "MultipleChoice", "multiple choice"), "mlm": ("masked", "MaskedLM")}


def _probe_args(head: str, folder, zoo: Zoo, family: str, tmp_path: Path) -> list:
    """A command that loads ``folder`` with ``head``; for a SODAPOP writer the MCQ model is the family's own (or
    BERT's where transformers has no multiple-choice class for the family)."""
    store = ["--device", "cpu", "--store", tmp_path / "scores"]
    if head == "qa":
        return ["unqover", "score", "-m", folder, "-d", "religion", "--sample", "2", *store]
    if head == "lm":
        return ["unqover", "score", "-m", folder, "-d", "religion", "--sample", "2", "--variant",
                F.FAMILIES[family].lm_variant, *store]
    if head == "nli":
        return ["nli", "score", "-m", folder, "-p", "religion", "--sample", "5", *store]
    if head == "mcq":
        return ["sodapop", "report", "--mcq-model", folder, "--mlm", zoo.model(family, "mlm"), *SODAPOP_TINY, *store]
    if head == "writer":
        mcq_family = family if F.FAMILIES[family].head_class("mcq") is not None else "bert"
        return ["sodapop", "report", "--mcq-model", zoo.model(mcq_family, "mcq"), "--mlm", folder, *SODAPOP_TINY,
                *store]
    raise ValueError(head)


_WRONG_HEADS = [("base", "qa"), ("base", "nli"), ("base", "mcq"), ("base", "writer"), ("base", "lm"),
                ("mlm", "qa"), ("mlm", "nli"), ("mlm", "mcq")]
# BART's bare model holds every weight of BartForConditionalGeneration (its LM head is the tied embeddings): a valid
# masked LM, so not a wrong head for the writer or the LM variant.
_WRONG_HEAD_CASES = [(f, s, u) for f in FAMILIES for s, u in _WRONG_HEADS
                     if not (f == "bart" and s == "base" and u in ("writer", "lm"))]


@pytest.mark.parametrize("family,saved,used", _WRONG_HEAD_CASES,
                         ids=[f"{f}-{s}-as-{u}" for f, s, u in _WRONG_HEAD_CASES])
def test_missing_head_is_refused(capsys, tmp_path, zoo, family, saved, used):
    """A bare encoder (AutoModel) or a masked-LM checkpoint where a probe needs another head: refused before any
    scoring, naming the folder and the head it needs."""
    folder = zoo.model(family, saved)
    needs = _NEEDS["mlm" if used in ("writer", "lm") else used]
    assert_refused(cli(capsys, *_probe_args(used, folder, zoo, family, tmp_path)), str(folder), any_of=needs)


@pytest.mark.parametrize("family", QA_FAMILIES)
def test_missing_tokenizer_files_are_refused(capsys, tmp_path, zoo, family):
    folder = zoo.broken(family, "qa", "no-tokenizer")
    err = assert_refused(cli(capsys, *_probe_args("qa", folder, zoo, family, tmp_path)), str(folder))
    assert "tokenizer" in err.lower()


@pytest.mark.parametrize("head", ["qa", "nli"])
@pytest.mark.parametrize("kind,family", [("wordpiece", "bert"), ("bpe", "roberta"), ("unigram", "albert")])
def test_an_all_unknown_tokenizer_is_refused(capsys, tmp_path, zoo, kind, family, head):
    """A tokenizer whose vocabulary is only its special tokens (every word [UNK]/<unk>, or nothing at all for
    byte-level BPE without its bytes) cannot read the probe: refused, naming the tokenizer."""
    folder = zoo.broken(family, head, f"unk-{kind}")
    err = assert_refused(cli(capsys, *_probe_args(head, folder, zoo, family, tmp_path)), str(folder))
    assert "tokenizer" in err.lower()


@pytest.mark.parametrize("family", QA_FAMILIES)
def test_pickle_only_weights_need_allow_pickle(capsys, tmp_path, zoo, family):
    """Only pytorch_model.bin (a pickle, which can run code when loaded): refused naming --allow-pickle; loaded with
    it, giving the same scores as the safetensors copy."""
    from stereoprobe.store import ScoreStore
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.score_qa import load_scores

    folder = zoo.broken(family, "qa", "pickle")
    assert not list(folder.glob("*.safetensors")) and (folder / "pytorch_model.bin").exists()
    args = _probe_args("qa", folder, zoo, family, tmp_path)
    assert_refused(cli(capsys, *args), "--allow-pickle", "pytorch_model.bin")
    assert_ok(cli(capsys, *args, "--allow-pickle"))
    spec = DatasetSpec("religion", sample=2)
    store = ScoreStore(tmp_path / "scores")
    assert_ok(cli(capsys, *_probe_args("qa", zoo.model(family, "qa"), zoo, family, tmp_path)))
    with_pickle = load_scores(str(folder), spec, options=RunOptions(store=store, device="cpu", progress=False))
    safe = load_scores(str(zoo.model(family, "qa")), spec,
                       options=RunOptions(store=store, device="cpu", progress=False))
    cols = ["s1_pos", "s2_pos", "s1_neg", "s2_neg"]
    np.testing.assert_allclose(with_pickle[cols].to_numpy(), safe[cols].to_numpy(), atol=1e-6)


def test_allow_pickle_does_not_outlive_its_command(capsys, tmp_path, zoo):
    """The opt-in is for the command that was given it: the next command run in the same process (stereoprobe.cli.main
    from a notebook or a test; a fresh store, so the model is loaded again) refuses the pickle again."""
    folder = zoo.broken("bert", "qa", "pickle")
    assert_ok(cli(capsys, *_probe_args("qa", folder, zoo, "bert", tmp_path / "first"), "--allow-pickle"))
    assert_refused(cli(capsys, *_probe_args("qa", folder, zoo, "bert", tmp_path / "again")), "--allow-pickle")


@pytest.mark.parametrize("command", ["nli", "sodapop"])
def test_allow_pickle_is_offered_by_every_probe(capsys, tmp_path, zoo, command):
    """The opt-in exists beyond UnQover: NLI scoring and SODAPOP's two models (BERT's pickle-only copies)."""
    if command == "nli":
        folder = zoo.broken("bert", "nli", "pickle")
        args = _probe_args("nli", folder, zoo, "bert", tmp_path)
    else:
        folder = zoo.broken("bert", "mcq", "pickle")
        args = _probe_args("mcq", folder, zoo, "bert", tmp_path)
    assert_refused(cli(capsys, *args), "--allow-pickle")
    assert_ok(cli(capsys, *args, "--allow-pickle"))


@pytest.mark.parametrize("how", ["truncated", "empty"])
@pytest.mark.parametrize("family", QA_FAMILIES)
def test_damaged_safetensors_are_refused(capsys, tmp_path, zoo, family, how):
    folder = zoo.broken(family, "qa", how)
    assert_refused(cli(capsys, *_probe_args("qa", folder, zoo, family, tmp_path)), "model.safetensors")
