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
