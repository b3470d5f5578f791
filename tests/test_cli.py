"""The ``stereoprobe`` CLI: Table 1, generation, scoring, reports and its errors (exit 2, no half output)."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import pandas as pd
import pytest


def test_count_prints_table1(cli):
    code, out, _ = cli("unqover", "count")
    assert code == 0
    assert "1,372,000" in out and "5,488,000" in out and "1,154,232" in out and "73,500" in out and "38,500" in out
    assert "10,552,928" in out  # passes per model, all four datasets


def test_generate_jsonl_and_parquet(cli, tmp_path):
    code, out, _ = cli("unqover", "generate", "-d", "religion", "--sample", "5", "-o", str(tmp_path / "r.jsonl"))
    assert code == 0 and "10 ordered examples" in out
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(records) == 10 and records[0]["key"].count("|") == 7
    assert set(records[0]) == {"key", "context", "q0", "q1"} and records[0]["q0"]["ans0"]["text"] in records[0]["context"]
    code, _, _ = cli("unqover", "generate", "-d", "gender", "--sample", "3", "--newsqa", "-o", str(tmp_path / "g.parquet"))
    frame = pd.read_parquet(tmp_path / "g.parquet")
    assert code == 0 and len(frame) == 6 and frame["context"].str.startswith("[aug] yes no  [text] (CNN) --  ").all()


@pytest.mark.parametrize("args,message", [
    (["unqover", "count", "-d", "sports"], "'-d': 'sports' is not one of 'gender', 'nationality'"),
    (["unqover", "generate", "-d", "gender", "--mode", "exact", "-o", "{tmp}/x.jsonl"],
     "'--mode': 'exact' is not one of 'compat', 'clean'"),
    (["unqover", "generate", "-d", "gender", "--sample", "lots", "-o", "{tmp}/x.jsonl"], "--sample 'lots' is not a number"),
    (["unqover", "generate", "-d", "gender", "-o", "{tmp}/x.csv"], "unknown extension"),
    (["unqover", "score", "-m", "lab:unknown", "-d", "religion", "--sample", "2"], "Unknown lab model 'lab:unknown'"),
    (["unqover", "score", "-m", "{tmp}/missing", "-d", "religion", "--sample", "2"], "does not exist"),
    (["unqover", "score", "-m", "lab:qa-biased", "-d", "religion", "--sample", "2", "--device", "tpu"], "tpu"),
    (["book", "--profile", "huge"], "huge"),
])
def test_bad_input_exits_2_with_one_line(cli, tmp_path, args, message):
    code, out, err = cli(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert code == 2
    assert message in err and err.startswith("error: ") and err.count("\n") == 1
    assert not list(tmp_path.glob("*.jsonl")) and not list(tmp_path.glob("*.csv")) and not list(tmp_path.glob(".*tmp"))


def test_generation_failure_leaves_no_file(cli, tmp_path, monkeypatch):
    from stereoprobe.errors import StereoprobeError
    from stereoprobe.unqover import generate

    real = generate.iter_examples

    def broken(spec):
        yield next(real(spec))
        raise StereoprobeError("Subject 'X' was not found in its paragraph; planted failure.")

    monkeypatch.setattr(generate, "iter_examples", broken)
    code, _, err = cli("unqover", "generate", "-d", "religion", "--sample", "3", "-o", str(tmp_path / "r.jsonl"))
    assert code == 2 and "planted failure" in err
    assert list(tmp_path.iterdir()) == []


def test_score_and_report_on_a_local_model(cli, tmp_path, tiny_bert_qa):
    store = str(tmp_path / "scores")
    common = ["-m", str(tiny_bert_qa), "-d", "gender", "--sample", "40", "--device", "cpu", "--store", store]
    code, out, _ = cli("unqover", "score", *common)
    assert code == 0 and "160 passes stored" in out
    code, out, _ = cli("unqover", "report", *common, "--n-boot", "50", "-o", str(tmp_path / "rep"))
    assert code == 0 and "reasoning_errors" in out
    errors = pd.read_csv(tmp_path / "rep" / "gender_reasoning_errors.csv")
    assert list(errors.columns) == ["model", "delta", "epsilon", "avg_s", "keys"] and errors["keys"].iloc[0] == 40
    top = pd.read_csv(tmp_path / "rep" / "gender_top_gamma.csv")
    assert set(top["gender"]) == {"female", "male"} and len(top) == 6


def test_newsqa_models_get_the_header():
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.reporting import spec_for

    spec = DatasetSpec("gender", sample=10)
    assert spec_for("tli8hf/unqover-roberta-base-newsqa", spec).newsqa
    assert not spec_for("tli8hf/unqover-roberta-base-squad", spec).newsqa
    assert spec_for("tli8hf/unqover-roberta-base-newsqa", spec).sample == 10


def test_nli_count(cli):
    code, out, _ = cli("nli", "count")
    assert code == 0
    assert "1,936,512" in out and "1,574,400" in out and "836,400" in out and "4,347,312" in out
    code, out, _ = cli("nli", "count", "-p", "religion", "--sample", "0.001")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 and lines[1].split() == ["religion", "25", "17", "1,968", "836"]


def test_nli_score_and_report(cli, tmp_path, monkeypatch, tiny_nli, one_torch_thread):
    from stereoprobe import RunOptions
    from stereoprobe.nli.scoring import load_probabilities
    from stereoprobe.nli.templates import TemplateSpec

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    named = tiny_nli(tmp_path / "named", {0: "contradiction", 1: "neutral", 2: "entailment"})
    generic = tiny_nli(tmp_path / "generic", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    store = tmp_path / "scores"
    common = ["-m", named, "-m", generic, "-p", "religion", "-p", "nationality", "--sample", "150", "--device", "cpu",
              "--store", str(store), "--label-order", "entailment,neutral,contradiction"]
    code, out, _ = cli("nli", "score", *common)
    assert code == 0 and out.count("150 pairs stored in") == 4
    stored = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    code, out, _ = cli("nli", "report", *common, "--n-boot", "50", "-o", str(tmp_path / "rep"))
    assert code == 0 and "== nli religion neutrality ==" in out and "== nli nationality neutrality ==" in out
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == stored  # read back, nothing rescored
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == ["nli_nationality_neutrality.csv",
                                                                     "nli_religion_neutrality.csv"]
    table = pd.read_csv(tmp_path / "rep" / "nli_religion_neutrality.csv")
    measures = ["NN", "FN", "T:0.5", "T:0.7"]
    assert list(table.columns) == ["model", "probe", "pairs"] + [f"{m}{s}" for m in measures for s in ("", "_lo", "_hi")]
    assert table["model"].tolist() == ["named", "generic"] and (table["pairs"] == 150).all()
    probs = load_probabilities(named, TemplateSpec("religion", sample=150),
                               options=RunOptions(device="cpu", store=store))
    assert table["NN"].iloc[0] == pytest.approx(probs["neutral"].mean(), abs=1e-6)
    assert table["T:0.5"].iloc[0] == pytest.approx((probs["neutral"] > 0.5).mean())
    for m in measures:
        assert ((table[f"{m}_lo"] <= table[m]) & (table[m] <= table[f"{m}_hi"])).all()


def test_sodapop_report(cli, tmp_path, monkeypatch, tiny_bert_mlm, tiny_model, one_torch_thread):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    mcq = tiny_model(tmp_path / "mcq", "bert", "mcq")
    common = ["--mcq-model", str(mcq), "--mlm", str(tiny_bert_mlm), "--names-per-group", "2", "--depth", "1",
              "--cap", "10", "--n-perm", "100", "--device", "cpu"]
    code, out, _ = cli("sodapop", "report", *common, "--pair", "AA_m:EA_m", "-o", str(tmp_path / "a"))
    assert code == 0 and "16 units (names × contexts), 80 MCQs" in out and "wrote 2 tables" in out
    assert f"model mcq (distractors by {tiny_bert_mlm.name}): 16 units" in out
    units = pd.read_csv(tmp_path / "a" / "sodapop_units.csv")
    assert (units.pop("model") == "mcq").all()
    assert list(units.columns) == ["group", "name", "context", "L", "fill_calls", "mlm_passes_compat", "bound_passes",
                                   "candidates", "bound_candidates", "unique", "mcqs", "accuracy"]
    assert len(units) == 16 and units.groupby("group").size().eq(2).all() and (units["context"] == 3).all()
    assert (units["L"] == 6).all() and (units["mlm_passes_compat"] == 6).all() and (units["mcqs"] == 5).all()
    assert (units["candidates"] <= units["bound_candidates"]).all()
    assert units["accuracy"].mul(5).round(9).mod(1).eq(0).all()  # 5 MCQs per unit
    rd = pd.read_csv(tmp_path / "a" / "sodapop_rd_AA_m_EA_m.csv")
    assert list(rd.columns) == ["model", "word", "side", "mean_g1", "mean_g2", "rd_paper", "rd_code", "p", "q"] and len(rd) > 0
    assert rd["rd_paper"].is_monotonic_increasing
    assert (rd["side"] == rd["rd_paper"].gt(0).map({True: "G1", False: "G2"})).all()
    m1, m2 = rd["mean_g1"].to_numpy(), rd["mean_g2"].to_numpy()
    assert rd["rd_paper"].to_numpy() == pytest.approx((m1 - m2) / ((m1 + m2) / 2))
    assert (rd["p"] * 6).round(9).mod(1).eq(0).all()  # exact test: C(4, 2) = 6 splits of two names per group
    # a rerun reads the cached distractors and stored logits: the same units; default pairs are Tables 4 and 21's
    code, _, _ = cli("sodapop", "report", *common, "-o", str(tmp_path / "b"))
    assert code == 0 and sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "sodapop_rd_AA_f_EA_f.csv", "sodapop_rd_EA_f_EA_m.csv", "sodapop_units.csv"]
    assert (tmp_path / "b" / "sodapop_units.csv").read_bytes() == (tmp_path / "a" / "sodapop_units.csv").read_bytes()
    # without -o, as every report: the tables are printed and nothing is written
    code, out, _ = cli("sodapop", "report", *common)
    assert code == 0 and "== units (names × contexts) ==" in out and "== AA_f vs EA_f: " in out and "wrote" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "cache", "mcq"]


def test_usage_errors_are_one_line(cli):
    code, _, err = cli("unqover", "score", "-d", "gender")
    assert code == 2 and err == "error: Missing option '--model' / '-m'; see 'stereoprobe unqover score --help'.\n"
    code, out, err = cli("nli")
    assert code == 2 and "Usage: stereoprobe nli" in out + err and "count" in out + err


# -- a command line that explains itself: fixed sets of values, --version, completion, book, -o --------------------
@pytest.fixture
def wide(monkeypatch):
    """Help on one line per option: rich wraps long choice lists at the terminal's width (80 under pytest)."""
    monkeypatch.setenv("COLUMNS", "250")


def _choices(values) -> str:
    return "<" + "|".join(values) + ">"


@pytest.mark.parametrize("command", [
    ["unqover", "count"], ["unqover", "generate"], ["unqover", "score"], ["unqover", "report"],
    ["nli", "count"], ["nli", "score"], ["nli", "report"], ["sodapop", "report"],
])
def test_help_lists_the_values_of_every_fixed_set(cli, wide, command):
    from stereoprobe.batching import PRECISIONS
    from stereoprobe.engine import ENGINES
    from stereoprobe.nli.templates import PROBES
    from stereoprobe.sodapop.names import GROUPS
    from stereoprobe.unqover.generate import DATASETS, MODES, VARIANTS

    code, out, _ = cli(*command, "--help")
    assert code == 0 and f"Usage: stereoprobe {' '.join(command)} [OPTIONS]" in out
    expected = {
        "unqover count": [_choices([*DATASETS, "all"]), _choices(VARIANTS)],
        "unqover generate": [_choices(DATASETS), _choices(MODES), _choices(VARIANTS)],
        "nli count": [f"<list[{'|'.join([*PROBES, 'all'])}]>"],
        "sodapop report": [", ".join(GROUPS), _choices(PRECISIONS), _choices(ENGINES), "cuda:N"],
    }
    expected["unqover score"] = expected["unqover report"] = [
        _choices(DATASETS), _choices(MODES), _choices([*VARIANTS, "lm", "causal"]), _choices(PRECISIONS), _choices(ENGINES),
        "cuda:N"]
    expected["nli score"] = expected["nli report"] = [*expected["nli count"], _choices(PRECISIONS), _choices(ENGINES)]
    for text in expected[" ".join(command)]:
        assert text in out, text


@pytest.mark.parametrize("args,option,valid", [
    (["unqover", "count", "--variant", "gpt"], "'--variant'", "'qa', 'lm-bert', 'lm-roberta'"),
    (["unqover", "generate", "-o", "{tmp}/x.jsonl", "-d", "sports"], "'--dataset' / '-d'",
     "'gender', 'nationality', 'ethnicity', 'religion'"),
    (["unqover", "score", "-m", "lab:qa-biased", "--precision", "fp64"], "'--precision'",
     "'auto', 'fp32', 'bf16', 'fp16'"),
    (["unqover", "report", "-m", "lab:qa-biased", "--engine", "spark"], "'--engine'", "'local', 'ray'"),
    (["nli", "score", "-m", "x", "-p", "gender", "-p", "race"], "'--probe' / '-p'",
     "'gender', 'nationality', 'religion', 'all'"),
    (["nli", "report", "-m", "x", "-p", "gender", "--device", "tpu"], "'--device'",
     "auto, cpu, cuda, cuda:N (GPU N) or mps"),
    (["sodapop", "report", "--pair", "AA_f:XX_f"], "'--pair'", "EA_f, EA_m, AA_f, AA_m, AS_f, AS_m, HS_f, HS_m"),
])
def test_a_value_outside_the_set_is_one_line_naming_the_option_and_the_values(cli, tmp_path, args, option, valid):
    code, out, err = cli(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert code == 2 and out == ""
    assert err.startswith(f"error: Invalid value for {option}: ") and valid in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("device", ["cpu", "CPU", "cuda", "cuda:1", "mps", "auto"])
def test_device_takes_what_the_library_takes(device):
    from stereoprobe.cli import _device

    assert _device(device) == device  # checked later, when a model is loaded: e.g. no GPU here for cuda:1


def test_version(cli):
    from stereoprobe import __version__

    code, out, err = cli("--version")
    assert code == 0 and out == f"stereoprobe {__version__}\n" and err == ""


def test_shell_completion_is_offered(cli, wide):
    code, out, _ = cli("--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out


def test_book_help_shows_its_options(cli, capsys, wide):
    from stereoprobe.cli import book_main

    options = ["--profile", "--only", "--set", "--build-dir", "--timeout", "--execute-only", "--no-execute",
               "--keep-going", "--list", "--quiet", "-q", "--root"]
    code, out, _ = cli("book", "--help")
    assert code == 0 and "Usage: stereoprobe book [OPTIONS]" in out and all(o in out for o in options)
    assert book_main(["--help"]) == 0  # python -m stereoprobe.book: the same command
    out = capsys.readouterr().out
    assert "Usage: python -m stereoprobe.book [OPTIONS]" in out and all(o in out for o in options)


def test_book_list_in_the_clone(cli, monkeypatch):
    from stereoprobe.book import available_profiles, chapters
    from stereoprobe.paths import checkout_root

    monkeypatch.chdir(checkout_root())
    code, out, _ = cli("book", "--list")
    assert code == 0
    assert out.splitlines() == [f"profiles: {', '.join(available_profiles())}"] + [
        f"{c.kind:8s} {c.file}" for c in chapters()]
    assert "smoke" in out and "notebook notebooks/reasoning_errors" in out


def test_book_outside_a_clone_says_where_the_sources_are(cli, monkeypatch, tmp_path):
    from stereoprobe import paths

    clone = paths.checkout_root()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "checkout_root", lambda: None)  # as installed from a wheel, run outside a clone
    for args in (["book"], ["book", "--list"], ["book", "--root", str(tmp_path), "--list"]):
        code, out, err = cli(*args)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith("error: The book's sources (_toc.yml, notebooks/, book/, params/) are in a clone of the "
                              "stereoprobe repository and ")
        assert "clone the repository with git and run the command from the clone's root, or pass --root DIR" in err
    assert "and the current folder is not in one" in cli("book")[2]
    assert list(tmp_path.iterdir()) == []
    code, out, _ = cli("book", "--root", str(clone), "--list")
    assert code == 0 and out.startswith("profiles: ")


def test_book_failure_exits_1(cli, monkeypatch):
    from stereoprobe import book

    def failing(*args, **kwargs):
        raise book.NotebookExecutionError("Notebook notebooks/x.py failed in cell 3 with ValueError: planted",
                                          "Traceback …\nValueError: planted")

    monkeypatch.setattr(book, "run_notebooks", failing)
    code, out, err = cli("book", "--profile", "smoke", "--execute-only")
    assert code == 1 and out == ""
    assert err == ("Traceback …\nValueError: planted\n"  # the traceback's tail, then the one-line error
                   "error: Notebook notebooks/x.py failed in cell 3 with ValueError: planted\n")
    code, _, err = cli("book", "--execute-only", "--no-execute")
    assert code == 2 and err == "error: --execute-only and --no-execute exclude each other; pass one of them.\n"


@pytest.mark.parametrize("command", [
    ["unqover", "report", "-m", "never-loaded", "-d", "religion", "--sample", "2"],
    ["nli", "report", "-m", "never-loaded", "-p", "religion", "--sample", "2"],
    ["sodapop", "report", "--mcq-model", "never-loaded", "--mlm", "never-loaded"],
])
@pytest.mark.parametrize("out,message", [
    ("{tmp}/table.csv", "--out {tmp}/table.csv is a file, not a folder; pass a folder path (it is created if "
                        "missing)."),
    ("{tmp}/table.csv/reports", "--out {tmp}/table.csv/reports cannot hold the tables (Not a directory); pass a folder "
                                "you can write to (it is created if missing)."),
])
def test_report_out_is_checked_before_any_work(cli, monkeypatch, tmp_path, command, out, message):
    """The same -o in the three reports: a file, or a folder that cannot be made (for root too), stops at once."""
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "table.csv").write_text("pre-existing\n")
    code, stdout, err = cli(*command, "--store", str(tmp_path / "scores"), "--device", "cpu",
                            "-o", out.format(tmp=tmp_path))
    assert code == 2 and stdout == ""
    assert err == f"error: {message.format(tmp=tmp_path)}\n"  # not the unknown model: nothing was loaded or scored
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]
    assert (tmp_path / "table.csv").read_text() == "pre-existing\n"


def test_report_out_is_the_same_option_everywhere():
    from stereoprobe import cli

    reports = (cli.report_cmd, cli.nli_report_cmd, cli.sodapop_report_cmd)
    assert all(inspect.signature(f).parameters["out"].default is cli.OutOpt for f in reports)


# -- command-line edges: Ctrl-C, model names, --sample, early checks, file modes -------------------------------------
@pytest.mark.parametrize("interrupt", ["KeyboardInterrupt", "typer.Abort", "click.Abort"])
def test_ctrl_c_exits_130_with_one_line(cli, tmp_path, monkeypatch, interrupt):
    import click
    import typer

    from stereoprobe.unqover import score_qa

    error = {"KeyboardInterrupt": KeyboardInterrupt, "typer.Abort": typer.Abort, "click.Abort": click.Abort}[interrupt]

    def interrupted(*args, **kwargs):
        raise error()

    monkeypatch.setattr(score_qa, "score_dataset", interrupted)
    code, out, err = cli("unqover", "score", "-m", "lab:qa-biased", "-d", "religion", "--sample", "2",
                         "--store", str(tmp_path / "scores"))
    assert code == 130 and out == "" and err == "error: interrupted; rerun to resume\n"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_keeps_the_stored_shards_and_a_rerun_resumes(cli, tmp_path, monkeypatch, tiny_bert_qa):
    from stereoprobe import engine

    store = tmp_path / "scores"
    args = ["unqover", "score", "-m", str(tiny_bert_qa), "-d", "gender", "--sample", "100", "--shard-passes", "100",
            "--device", "cpu", "--store", str(store)]
    real, calls = engine._write, []

    def write_then_interrupt(run_, job, i, columns):
        calls.append(i)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(run_, job, i, columns)

    monkeypatch.setattr(engine, "_write", write_then_interrupt)
    code, _, err = cli(*args)
    assert code == 130 and err == "error: interrupted; rerun to resume\n"
    assert [p.name for p in store.rglob("*") if p.is_file()] == ["part-00000.parquet"]  # no temp file, no manifest
    monkeypatch.setattr(engine, "_write", real)
    calls.clear()
    code, out, _ = cli(*args)
    assert code == 0 and "400 passes stored" in out
    assert sorted(p.name for p in store.rglob("*") if p.is_file()) == ["_manifest.json"] + [
        f"part-0000{i}.parquet" for i in range(4)]


def test_model_labels_are_unique_short_and_refuse_duplicates():
    from stereoprobe.errors import StereoprobeError
    from stereoprobe.naming import model_labels, short_name

    assert model_labels(["runs/a/model", "runs/b/model", "lab:qa-biased", "zoo:minilm-qa", "owner/qa-squad"]) == [
        "a/model", "b/model", "lab:qa-biased", "zoo:minilm-qa", "qa-squad"]
    assert model_labels(["x/a/model", "a/model", "/abs/m/"]) == ["x/a/model", "a/model", "m"]
    assert short_name("tli8hf/unqover-roberta-base-newsqa") == "unqover-roberta-base-newsqa"
    with pytest.raises(StereoprobeError, match=r"^model \./runs/a/ is given twice \(as runs/a\); pass each model"):
        model_labels(["runs/a", "./runs/a/"])


def test_the_reports_name_models_alike_and_keep_both_of_a_shared_last_part(cli, tmp_path, monkeypatch, tiny_bert_qa,
                                                                           tiny_nli, one_torch_thread):
    """runs/a/model and runs/b/model: two rows a/model and b/model in the UnQover and Bias-NLI tables (SODAPOP's
    model column comes from the same helper, test_sodapop_report)."""
    import shutil

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    qa = [str(shutil.copytree(tiny_bert_qa, tmp_path / "qa" / k / "model")) for k in "ab"]
    nli = [tiny_nli(tmp_path / "nli" / k / "model", {0: "entailment", 1: "neutral", 2: "contradiction"}) for k in "ab"]
    store = ["--store", str(tmp_path / "scores"), "--device", "cpu", "--n-boot", "10"]
    code, out, _ = cli("unqover", "report", "-m", qa[0], "-m", qa[1], "-d", "religion", "--sample", "3",
                       *store, "-o", str(tmp_path / "rep"))
    assert code == 0
    for name in ("reasoning_errors", "intensity"):
        assert pd.read_csv(tmp_path / "rep" / f"religion_{name}.csv")["model"].tolist() == ["a/model", "b/model"]
    assert pd.read_csv(tmp_path / "rep" / "religion_top_gamma.csv")["model"].unique().tolist() == ["a/model", "b/model"]
    code, out, _ = cli("nli", "report", "-m", nli[0], "-m", nli[1], "-p", "religion", "--sample", "20", *store,
                       "-o", str(tmp_path / "rep"))
    assert code == 0
    assert pd.read_csv(tmp_path / "rep" / "nli_religion_neutrality.csv")["model"].tolist() == ["a/model", "b/model"]


@pytest.mark.parametrize("value,sample", [("1", 1), ("2", 2), ("5000", 5000), ("0.5", 0.5), ("1e-2", 0.01),
                                          ("1.0", None), ("1.", None), ("all", None), (None, None)])
def test_sample_digits_are_a_count_a_decimal_point_a_fraction(value, sample):
    from stereoprobe.cli import _sample

    assert _sample(value) == sample and type(_sample(value)) is type(sample)


def test_sample_1_is_one_example_and_1_0_all(cli):
    code, out, _ = cli("unqover", "count", "-d", "religion", "--sample", "1")
    assert code == 0 and out.splitlines()[1].split() == ["religion", "1", "2", "4"]
    code, out, _ = cli("unqover", "count", "-d", "religion", "--sample", "1.0")
    assert code == 0 and out.splitlines()[1].split() == ["religion", "38,500", "77,000", "154,000"]
    code, out, _ = cli("nli", "count", "-p", "religion", "--sample", "1")
    assert code == 0 and out.splitlines()[1].split()[-1] == "1"


@pytest.mark.parametrize("value", ["2.0", "5000.0", "0", "-1", "0.0"])
def test_sample_refusals_state_the_rule(cli, value):
    code, out, err = cli("nli", "count", "-p", "religion", f"--sample={value}")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: --sample '{value}' is ") and err.endswith(
        "a count has no decimal point (5000), a fraction has one (0.01; 1.0 keeps all), or 'all'.\n")


REPORTS = {
    "unqover": (["unqover", "report", "-m", "never-loaded", "-d", "religion", "--sample", "2"],
                "religion_reasoning_errors.csv"),
    "nli": (["nli", "report", "-m", "never-loaded", "-p", "religion", "--sample", "2"], "nli_religion_neutrality.csv"),
    "sodapop": (["sodapop", "report", "--mcq-model", "never-loaded", "--mlm", "never-loaded"], "sodapop_units.csv"),
}


@pytest.mark.parametrize("probe", list(REPORTS))
def test_report_refuses_a_read_only_table_before_any_work(cli, monkeypatch, tmp_path, probe):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    command, table = REPORTS[probe]
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / table).write_text("kept\n")
    (tmp_path / "rep" / table).chmod(0o444)
    code, out, err = cli(*command, "--store", str(tmp_path / "scores"), "-o", str(tmp_path / "rep"))
    assert code == 2 and out == ""
    assert err == (f"error: --out {tmp_path}/rep/{table} exists and is read-only; make it writable (chmod u+w), "
                   "remove it or pass another path.\n")
    assert {p.name for p in tmp_path.rglob("*")} == {"rep", table} and (tmp_path / "rep" / table).read_text() == "kept\n"


@pytest.fixture
def read_only(monkeypatch):
    """``read_only(folder)``: the folder refuses writes as for a user without permission (the tests run as root)."""
    real = os.access
    folders = []
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: not (Path(path) in folders and mode & os.W_OK)
                        and real(path, mode, **kw))
    return folders.append


@pytest.mark.parametrize("probe", list(REPORTS))
def test_report_refuses_a_read_only_folder_before_any_work(cli, monkeypatch, tmp_path, read_only, probe):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "rep").mkdir()
    read_only(tmp_path / "rep")
    code, out, err = cli(*REPORTS[probe][0], "--store", str(tmp_path / "scores"), "-o", str(tmp_path / "rep"))
    assert code == 2 and out == ""
    assert err == (f"error: --out {tmp_path}/rep cannot hold the tables (Permission denied); pass a folder you can "
                   "write to (it is created if missing).\n")
    assert [p.name for p in tmp_path.rglob("*")] == ["rep"]


def test_generate_refuses_a_read_only_target_or_folder_before_generating(cli, monkeypatch, tmp_path, read_only):
    from stereoprobe.unqover import generate

    monkeypatch.setattr(generate, "iter_examples", lambda spec: pytest.fail("generated before the checks"))
    target = tmp_path / "r.jsonl"
    target.write_text("kept\n")
    target.chmod(0o444)
    code, out, err = cli("unqover", "generate", "-d", "religion", "--sample", "2", "-o", str(target))
    assert code == 2 and out == "" and err == (f"error: --out {target} exists and is read-only; make it writable "
                                               "(chmod u+w), remove it or pass another path.\n")
    read_only(tmp_path / "ro")
    (tmp_path / "ro").mkdir()
    code, out, err = cli("unqover", "generate", "-d", "religion", "-o", str(tmp_path / "ro" / "r.jsonl"))
    assert code == 2 and out == "" and err == (f"error: --out {tmp_path}/ro/r.jsonl: its folder cannot be written "
                                               "(Permission denied); pass a path in a folder you can write to (it is "
                                               "created if missing).\n")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["r.jsonl", "ro"] and target.read_text() == "kept\n"


def test_zoo_build_checks_its_out_before_training(cli, monkeypatch, tmp_path):
    from stereoprobe.zoo import recipes

    monkeypatch.setattr(recipes, "build", lambda *a, **k: pytest.fail("trained before the checks"))
    (tmp_path / "file").write_text("kept\n")
    code, out, err = cli("zoo", "build", "minilm-qa", "--smoke", "-o", str(tmp_path / "file" / "parts"))
    assert code == 2 and out == "" and err == (f"error: --out {tmp_path}/file/parts cannot hold the parts and cards "
                                               "(Not a directory); pass a folder you can write to (it is created if "
                                               "missing).\n")


def test_written_files_get_the_umask_mode(cli, tmp_path, monkeypatch, tiny_bert_qa):
    """Tables, generated examples and the score store's shards and manifest: 0o666 & ~umask, as open() makes."""
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    before = os.umask(0o027)
    try:
        for name in ("r.jsonl", "r.parquet"):
            assert cli("unqover", "generate", "-d", "religion", "--sample", "2", "-o", str(tmp_path / name))[0] == 0
        code, _, _ = cli("unqover", "report", "-m", str(tiny_bert_qa), "-d", "religion", "--sample", "3",
                         "--device", "cpu", "--n-boot", "10", "--store", str(tmp_path / "scores"),
                         "-o", str(tmp_path / "rep"))
    finally:
        os.umask(before)
    assert code == 0
    written = [tmp_path / "r.jsonl", tmp_path / "r.parquet", *(tmp_path / "rep").iterdir(),
               *(p for p in (tmp_path / "scores").rglob("*") if p.is_file())]
    assert len(written) == 2 + 3 + 2 and {p.name for p in written} >= {"_manifest.json", "part-00000.parquet"}
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in written} == {p.name: "0o640" for p in written}
