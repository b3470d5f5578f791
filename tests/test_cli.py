"""The ``stereoprobe`` CLI: Table 1, generation, scoring, reports and its errors (exit 2, no half output)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from stereoprobe.cli import main


def run(capsys, *args):
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_count_prints_table1(capsys):
    code, out, _ = run(capsys, "unqover", "count")
    assert code == 0
    assert "1,372,000" in out and "5,488,000" in out and "1,154,232" in out and "73,500" in out and "38,500" in out
    assert "10,552,928" in out  # passes per model, all four datasets


def test_generate_jsonl_and_parquet(capsys, tmp_path):
    code, out, _ = run(capsys, "unqover", "generate", "-d", "religion", "--sample", "5", "-o", str(tmp_path / "r.jsonl"))
    assert code == 0 and "10 ordered examples" in out
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(records) == 10 and records[0]["key"].count("|") == 7
    assert set(records[0]) == {"key", "context", "q0", "q1"} and records[0]["q0"]["ans0"]["text"] in records[0]["context"]
    code, _, _ = run(capsys, "unqover", "generate", "-d", "gender", "--sample", "3", "--newsqa", "-o", str(tmp_path / "g.parquet"))
    frame = pd.read_parquet(tmp_path / "g.parquet")
    assert code == 0 and len(frame) == 6 and frame["context"].str.startswith("[aug] yes no  [text] (CNN) --  ").all()


@pytest.mark.parametrize("args,message", [
    (["unqover", "count", "-d", "sports"], "Unknown dataset 'sports'"),
    (["unqover", "generate", "-d", "gender", "--mode", "exact", "-o", "{tmp}/x.jsonl"], "Unknown mode 'exact'"),
    (["unqover", "generate", "-d", "gender", "--sample", "lots", "-o", "{tmp}/x.jsonl"], "--sample 'lots' is not a number"),
    (["unqover", "generate", "-d", "gender", "-o", "{tmp}/x.csv"], "unknown extension"),
    (["unqover", "score", "-m", "lab:unknown", "-d", "religion", "--sample", "2"], "Unknown lab model 'lab:unknown'"),
    (["unqover", "score", "-m", "{tmp}/missing", "-d", "religion", "--sample", "2"], "does not exist"),
    (["unqover", "score", "-m", "lab:qa-biased", "-d", "religion", "--sample", "2", "--device", "tpu"], "tpu"),
    (["book", "--profile", "huge"], "huge"),
])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, args, message):
    code, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert code == 2
    assert message in err and err.startswith("error: ") and err.count("\n") == 1
    assert not list(tmp_path.glob("*.jsonl")) and not list(tmp_path.glob("*.csv")) and not list(tmp_path.glob(".*tmp"))


def test_generation_failure_leaves_no_file(capsys, tmp_path, monkeypatch):
    from stereoprobe.errors import StereoprobeError
    from stereoprobe.unqover import generate

    real = generate.iter_examples

    def broken(spec):
        yield next(real(spec))
        raise StereoprobeError("Subject 'X' was not found in its paragraph; planted failure.")

    monkeypatch.setattr(generate, "iter_examples", broken)
    code, _, err = run(capsys, "unqover", "generate", "-d", "religion", "--sample", "3", "-o", str(tmp_path / "r.jsonl"))
    assert code == 2 and "planted failure" in err
    assert list(tmp_path.iterdir()) == []


def test_score_and_report_on_a_local_model(capsys, tmp_path, tiny_bert_qa):
    store = str(tmp_path / "scores")
    common = ["-m", str(tiny_bert_qa), "-d", "gender", "--sample", "40", "--device", "cpu", "--store", store]
    code, out, _ = run(capsys, "unqover", "score", *common)
    assert code == 0 and "160 passes stored" in out
    code, out, _ = run(capsys, "unqover", "report", *common, "--n-boot", "50", "-o", str(tmp_path / "rep"))
    assert code == 0 and "reasoning_errors" in out
    errors = pd.read_csv(tmp_path / "rep" / "gender_reasoning_errors.csv")
    assert list(errors.columns) == ["model", "delta", "epsilon", "avg_s", "keys"] and errors["keys"].iloc[0] == 40
    top = pd.read_csv(tmp_path / "rep" / "gender_top_gamma.csv")
    assert set(top["gender"]) == {"female", "male"} and len(top) == 6


def test_newsqa_models_get_the_header():
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.report import spec_for

    spec = DatasetSpec("gender", sample=10)
    assert spec_for("tli8hf/unqover-roberta-base-newsqa", spec).newsqa
    assert not spec_for("tli8hf/unqover-roberta-base-squad", spec).newsqa
    assert spec_for("tli8hf/unqover-roberta-base-newsqa", spec).sample == 10


def test_nli_count(capsys):
    code, out, _ = run(capsys, "nli", "count")
    assert code == 0
    assert "1,936,512" in out and "1,574,400" in out and "836,400" in out and "4,347,312" in out
    code, out, _ = run(capsys, "nli", "count", "-p", "religion", "--sample", "0.001")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 and lines[1].split() == ["religion", "25", "17", "1,968", "836"]


def test_nli_score_and_report(capsys, tmp_path, monkeypatch, tiny_nli, one_torch_thread):
    from stereoprobe.nli.score import load_probabilities
    from stereoprobe.nli.templates import TemplateSpec
    from stereoprobe.store import ScoreStore

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    named = tiny_nli(tmp_path / "named", {0: "contradiction", 1: "neutral", 2: "entailment"})
    generic = tiny_nli(tmp_path / "generic", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    store = tmp_path / "scores"
    common = ["-m", named, "-m", generic, "-p", "religion", "-p", "nationality", "--sample", "150", "--device", "cpu",
              "--store", str(store), "--label-order", "entailment,neutral,contradiction"]
    code, out, _ = run(capsys, "nli", "score", *common)
    assert code == 0 and out.count("150 pairs stored in") == 4
    stored = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    code, out, _ = run(capsys, "nli", "report", *common, "--n-boot", "50", "-o", str(tmp_path / "rep"))
    assert code == 0 and "== nli religion neutrality ==" in out and "== nli nationality neutrality ==" in out
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == stored  # read back, nothing rescored
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == ["nli_nationality_neutrality.csv",
                                                                     "nli_religion_neutrality.csv"]
    table = pd.read_csv(tmp_path / "rep" / "nli_religion_neutrality.csv")
    measures = ["NN", "FN", "T:0.5", "T:0.7"]
    assert list(table.columns) == ["model", "probe", "pairs"] + [f"{m}{s}" for m in measures for s in ("", "_lo", "_hi")]
    assert table["model"].tolist() == [named, generic] and (table["pairs"] == 150).all()
    probs = load_probabilities(named, TemplateSpec("religion", sample=150), device="cpu", store=ScoreStore(store))
    assert table["NN"].iloc[0] == pytest.approx(probs["neutral"].mean(), abs=1e-6)
    assert table["T:0.5"].iloc[0] == pytest.approx((probs["neutral"] > 0.5).mean())
    for m in measures:
        assert ((table[f"{m}_lo"] <= table[m]) & (table[m] <= table[f"{m}_hi"])).all()


def test_sodapop_report(capsys, tmp_path, monkeypatch, tiny_bert_mlm, tiny_model, one_torch_thread):
    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    mcq = tiny_model(tmp_path / "mcq", "bert", "mcq")
    common = ["--mcq-model", str(mcq), "--mlm", str(tiny_bert_mlm), "--names-per-group", "2", "--depth", "1",
              "--cap", "10", "--n-perm", "100", "--device", "cpu"]
    code, out, _ = run(capsys, "sodapop", "report", *common, "--pair", "AA_m:EA_m", "-o", str(tmp_path / "a"))
    assert code == 0 and "16 units (names × contexts), 80 MCQs" in out and "wrote 2 tables" in out
    units = pd.read_csv(tmp_path / "a" / "sodapop_units.csv")
    assert list(units.columns) == ["group", "name", "context", "L", "fill_calls", "mlm_passes_compat", "bound_passes",
                                   "candidates", "bound_candidates", "unique", "mcqs", "accuracy"]
    assert len(units) == 16 and units.groupby("group").size().eq(2).all() and (units["context"] == 3).all()
    assert (units["L"] == 6).all() and (units["mlm_passes_compat"] == 6).all() and (units["mcqs"] == 5).all()
    assert (units["candidates"] <= units["bound_candidates"]).all()
    assert units["accuracy"].mul(5).round(9).mod(1).eq(0).all()  # 5 MCQs per unit
    rd = pd.read_csv(tmp_path / "a" / "sodapop_rd_AA_m_EA_m.csv")
    assert list(rd.columns) == ["word", "side", "mean_g1", "mean_g2", "rd_paper", "rd_code", "p", "q"] and len(rd) > 0
    assert rd["rd_paper"].is_monotonic_increasing
    assert (rd["side"] == rd["rd_paper"].gt(0).map({True: "G1", False: "G2"})).all()
    m1, m2 = rd["mean_g1"].to_numpy(), rd["mean_g2"].to_numpy()
    assert rd["rd_paper"].to_numpy() == pytest.approx((m1 - m2) / ((m1 + m2) / 2))
    assert (rd["p"] * 6).round(9).mod(1).eq(0).all()  # exact test: C(4, 2) = 6 splits of two names per group
    # a rerun reads the cached distractors and stored logits: the same units; default pairs are Tables 4 and 21's
    code, _, _ = run(capsys, "sodapop", "report", *common, "-o", str(tmp_path / "b"))
    assert code == 0 and sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "sodapop_rd_AA_f_EA_f.csv", "sodapop_rd_EA_f_EA_m.csv", "sodapop_units.csv"]
    assert (tmp_path / "b" / "sodapop_units.csv").read_bytes() == (tmp_path / "a" / "sodapop_units.csv").read_bytes()


def test_usage_errors_are_one_line(capsys):
    code, _, err = run(capsys, "unqover", "score", "-d", "gender")
    assert code == 2 and err == "error: Missing option '--model' / '-m'; see 'stereoprobe unqover score --help'.\n"
    code, out, err = run(capsys, "nli")
    assert code == 2 and "Usage: stereoprobe nli" in out + err and "count" in out + err
