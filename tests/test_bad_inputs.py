"""The bad-input sweep: malformed inputs of the three probes, through the CLI in this process.

Every case must stop with exit status 2 and exactly one line on stderr, ``error: …``, that names the culprit and
says what to do, and must leave the output folder, the score store and the cache byte for byte as they were
(their pre-existing files included). Inputs are tiny models built once per module, tiny samples, and for the
word lists / names / Social IQa file a copy of ``data/`` (``STEREOPROBE_DATA``) with one file broken.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest

from stereoprobe.cli import main
from stereoprobe.paths import data_dir
from stereoprobe.zoo.lab import lab_model_path


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_bert_qa, tiny_bert_mlm, tiny_model, tiny_nli) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bad_input_models")
    nomask = root / "nomask"  # a masked LM whose tokenizer has no mask token
    shutil.copytree(tiny_bert_mlm, nomask)
    config = json.loads((nomask / "tokenizer_config.json").read_text())
    config.pop("mask_token")
    config["tokenizer_class"] = "PreTrainedTokenizerFast"  # BertTokenizer's default would bring [MASK] back
    (nomask / "tokenizer_config.json").write_text(json.dumps(config))
    return {"qa": str(tiny_bert_qa), "mlm": str(tiny_bert_mlm), "nomask": str(nomask),
            "mcq": str(tiny_model(root / "mcq", "bert", "mcq")),
            "nli": tiny_nli(root / "nli", {0: "entailment", 1: "neutral", 2: "contradiction"}),
            "nli2": tiny_nli(root / "nli2", {0: "entailment", 1: "not_entailment"}),
            "nli_odd": tiny_nli(root / "nli_odd", {0: "yes", 1: "maybe", 2: "no"}),
            "nli_generic": tiny_nli(root / "nli_generic", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})}


@dataclass
class World:
    """One case's folders ({out}, {store}, {cache}, {tmp}) and models, as placeholders of its strings."""

    tmp: Path
    paths: dict
    monkeypatch: pytest.MonkeyPatch

    def fmt(self, text: str) -> str:
        return text.format(**self.paths)

    def ok(self, *args: str) -> None:
        """Run a command that must succeed (a case's preparation)."""
        with pytest.raises(SystemExit) as exit_info:
            main([self.fmt(a) for a in args])
            raise SystemExit(0)
        assert exit_info.value.code == 0


# -- preparations ------------------------------------------------------------------------------------------------
def flipped(*args: str) -> Callable[[World], None]:
    """Score a complete run, then flip four bytes in the middle of its first shard."""
    def setup(world: World) -> None:
        world.ok(*args)
        (path,) = Path(world.paths["store"]).rglob("part-00000.parquet")
        data = bytearray(path.read_bytes())
        for k in range(len(data) // 2, len(data) // 2 + 4):
            data[k] ^= 0xFF
        path.write_bytes(bytes(data))
    return setup


def foreign_shard(world: World) -> None:
    """Two complete runs (gender samples 12 and 10); the first shard of the 10-example run copied into the other."""
    world.ok(*QA_SCORE, "-d", "gender", "--sample", "12")
    (first,) = Path(world.paths["store"]).rglob("part-00000.parquet")
    world.ok(*QA_SCORE, "-d", "gender", "--sample", "10")
    (second,) = [p for p in Path(world.paths["store"]).rglob("part-00000.parquet") if p != first]
    shutil.copyfile(second, first)


def data_copy(world: World) -> Path:
    """A copy of data/ (the 22 MB zoo linked), as STEREOPROBE_DATA."""
    data = world.tmp / "data"
    shipped = data_dir()
    shutil.copytree(shipped, data, ignore=lambda folder, names: ["zoo"] if Path(folder) == shipped else [])
    (data / "zoo").symlink_to(shipped / "zoo")
    world.monkeypatch.setenv("STEREOPROBE_DATA", str(data))
    return data


def broken(relative: str, edit: Callable[[str], str]) -> Callable[[World], None]:
    """A copy of data/ with ``relative`` edited."""
    def setup(world: World) -> None:
        path = data_copy(world) / relative
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return setup


def latin1(relative: str) -> Callable[[World], None]:
    """A copy of data/ with a line in Latin-1 (not UTF-8) appended to ``relative``, as a Windows editor saves it."""
    def setup(world: World) -> None:
        path = data_copy(world) / relative
        path.write_bytes(path.read_bytes() + "Zoë\n".encode("latin-1"))
    return setup


def mkdir(path: str) -> Callable[[World], None]:
    return lambda world: Path(world.fmt(path)).mkdir(parents=True)


def social_iqa_line4_without_bethany(text: str) -> str:
    lines = text.splitlines(keepends=True)
    record = json.loads(lines[3])
    record["context"] = record["context"].replace("Bethany", "Someone")
    lines[3] = json.dumps(record) + "\n"
    return "".join(lines)


# -- the table ---------------------------------------------------------------------------------------------------
QA_SCORE = ("unqover", "score", "-m", "{qa}", "--device", "cpu", "--store", "{store}")
QA_GENDER = (*QA_SCORE, "-d", "gender", "--sample", "10")
QA_REPORT = ("unqover", "report", "-m", "{qa}", "-d", "gender", "--sample", "10", "--device", "cpu",
             "--store", "{store}", "--n-boot", "10", "-o", "{out}")
CAUSAL_REPORT = ("unqover", "report", "-m", "lab:causal-biased", "-d", "gender", "--sample", "4", "--template",
                 "letters-unknown", "--device", "cpu", "--store", "{store}", "--n-boot", "10", "-o", "{out}")
NLI_SCORE = ("nli", "score", "-p", "religion", "--sample", "20", "--device", "cpu", "--store", "{store}")
NLI_REPORT = ("nli", "report", "-m", "{nli}", "-p", "religion", "--sample", "20", "--device", "cpu",
              "--store", "{store}", "--n-boot", "10", "-o", "{out}")
SODAPOP = ("sodapop", "report", "--mcq-model", "{mcq}", "--mlm", "{mlm}", "--names-per-group", "1", "--depth", "1",
           "--cap", "4", "--n-perm", "10", "--device", "cpu", "--store", "{store}", "-o", "{out}")
NAMES = "sodapop/names/"
RELIGION = "unqover/word_lists/nouns/subjects/religion"  # 11 subjects


#: typer's refusal of a number below an option's minimum (``min=``), as the CLI prints it
AT_LEAST = "Input should be greater than or equal to {}; see 'stereoprobe "
#: ... and of a number above its maximum (``max=``)
AT_MOST = "Input should be less than or equal to {}; see 'stereoprobe "


@dataclass
class Case:
    probe: str
    args: tuple
    culprit: str  # a substring of the message that names the bad input
    fix: str  # ... and one that says what to do
    setup: Optional[Callable[[World], None]] = None


CASES = {
    # UnQover
    "uq-unknown-dataset": Case("unqover", ("unqover", "count", "-d", "sports"), "'-d': 'sports'",
                               "is not one of 'gender', 'nationality', 'ethnicity', 'religion', 'all'"),
    "uq-unknown-mode": Case("unqover", ("unqover", "generate", "-d", "gender", "--mode", "exact", "-o", "{out}/g.jsonl"),
                            "'--mode': 'exact'", "is not one of 'compat', 'clean'"),
    "uq-unknown-variant": Case("unqover", ("unqover", "generate", "-d", "gender", "--variant", "lm-gpt", "-o",
                                           "{out}/g.jsonl"), "'--variant': 'lm-gpt'",
                              "is not one of 'qa', 'lm-bert', 'lm-roberta'"),
    "uq-sample-not-a-number": Case("unqover", ("unqover", "generate", "-d", "religion", "--sample", "abc", "-o",
                                               "{out}/r.jsonl"), "--sample 'abc'", "a count has no decimal point"),
    "uq-sample-negative": Case("unqover", ("unqover", "generate", "-d", "religion", "--sample=-3", "-o", "{out}/r.jsonl"),
                               "--sample '-3' is not positive", "a fraction has one (0.01; 1.0 keeps all)"),
    "uq-sample-fraction-above-1": Case("unqover", ("unqover", "generate", "-d", "religion", "--sample", "2.0", "-o",
                                                   "{out}/r.jsonl"), "--sample '2.0' is a fraction above 1",
                                       "a count has no decimal point (5000)"),
    "uq-sample-too-large": Case("unqover", ("unqover", "count", "-d", "religion", "--sample", "99999999"),
                                "sample=99999999 asks for", "use a smaller sample"),
    "uq-narrowed-sample-too-large": Case("unqover", ("unqover", "count", "-d", "gender", "--sample", "500",
                                                     "--subjects", "3", "--attributes", "12"),
                                         "the 3 subjects and 12 attributes drawn hold 432",
                                         "use a smaller sample or draw more subjects or attributes"),
    "uq-subjects-too-many": Case("unqover", ("unqover", "generate", "-d", "religion", "--subjects", "12", "-o",
                                             "{out}/r.jsonl"), "subjects=12 but the religion list has 11 subjects",
                                 "draw at most 11"),
    "uq-attributes-0": Case("unqover", ("unqover", "count", "-d", "religion", "--attributes", "0"), "'--attributes'",
                            AT_LEAST.format(1)),
    "uq-out-extension": Case("unqover", ("unqover", "generate", "-d", "religion", "-o", "{out}/r.csv"),
                             "{out}/r.csv", "use .jsonl or .parquet"),
    "uq-out-is-a-folder": Case("unqover", ("unqover", "generate", "-d", "religion", "--sample", "2", "-o",
                                           "{out}/r.jsonl"), "{out}/r.jsonl is a folder", "pass a file path",
                               mkdir("{out}/r.jsonl")),
    "uq-missing-model-folder": Case("unqover", (*QA_SCORE[:2], "-m", "{tmp}/missing", "-d", "religion", "--sample", "2",
                                                "--store", "{store}"), "{tmp}/missing", "check the path"),
    "uq-not-a-qa-model": Case("unqover", (*QA_SCORE[:2], "-m", "{mlm}", "-d", "religion", "--sample", "2", "--device",
                                          "cpu", "--store", "{store}"), "'{mlm}' is not an extractive-QA model",
                              "pass a checkpoint fine-tuned"),
    "uq-multi-token-subject": Case("unqover", (*QA_SCORE[:2], "-m", "{mlm}", "--variant", "lm-bert", "-d", "religion",
                                               "--sample", "2", "--device", "cpu", "--store", "{store}"),
                                   "Christian (9 tokens", "Use the subject list of its family"),
    "uq-engine-spark": Case("unqover", (*QA_GENDER, "--engine", "spark"), "'--engine': 'spark'",
                            "is not one of 'local', 'ray'"),
    "uq-workers-0": Case("unqover", (*QA_GENDER, "--workers", "0"), "'--workers'", AT_LEAST.format(1)),
    "uq-shard-passes-150": Case("unqover", (*QA_GENDER, "--shard-passes", "150"), "'--shard-passes': 150",
                                "is not a multiple of 100 (the authors' batch); pass e.g. 20000"),
    "uq-shard-passes-0": Case("unqover", (*QA_GENDER, "--shard-passes", "0"), "'--shard-passes'", AT_LEAST.format(100)),
    "uq-batch-tokens-0": Case("unqover", (*QA_GENDER, "--batch-tokens", "0"), "'--batch-tokens'", AT_LEAST.format(1)),
    "uq-seed-negative": Case("unqover", ("unqover", "count", "-d", "religion", "--sample", "5", "--seed=-1"),
                             "'--seed'", AT_LEAST.format(0)),
    "uq-n-boot-0": Case("unqover", (*QA_REPORT, "--n-boot", "0"), "'--n-boot'", AT_LEAST.format(1)),
    "uq-n-boot-negative": Case("unqover", (*QA_REPORT, "--n-boot=-5"), "'--n-boot'", AT_LEAST.format(1)),
    "uq-top-0": Case("unqover", (*QA_REPORT, "--top", "0"), "'--top'", AT_LEAST.format(1)),
    "uq-top-negative": Case("unqover", (*QA_REPORT, "--top=-2"), "'--top'", AT_LEAST.format(1)),
    "uq-model-twice": Case("unqover", (*QA_REPORT, "-m", "{qa}/"), "-m/--model {qa}/ is given twice",
                           "pass each model once"),
    "uq-workers-not-an-integer": Case("unqover", (*QA_GENDER, "--workers", "abc"), "'--workers'",
                                      "see 'stereoprobe unqover score --help'"),
    "uq-corrupted-shard": Case("unqover", QA_REPORT, "part-00000.parquet", "; delete ", flipped(*QA_GENDER)),
    "uq-shard-from-another-run": Case("unqover", (*QA_REPORT[:7], "12", *QA_REPORT[8:]), "holds dataset_fp=",
                                      "delete", foreign_shard),
    "uq-report-out-is-a-file": Case("unqover", (*QA_REPORT[:-1], "{out}/keep.csv"), "{out}/keep.csv is a file",
                                    "pass a folder path"),
    "uq-duplicate-subject": Case("unqover", ("unqover", "count", "-d", "religion"), "religion:12: subject 'Hindu'",
                                 "remove the duplicate", broken(RELIGION, lambda t: t.rstrip() + "\n[subj] Hindu\n")),
    "uq-malformed-subject-line": Case("unqover", ("unqover", "count", "-d", "religion"), "religion:12:",
                                      "expected '[subj] <name>'",
                                      broken(RELIGION, lambda t: t.rstrip() + "\n[subject] Zoroastrian\n")),
    "uq-word-list-not-utf8": Case("unqover", ("unqover", "count", "-d", "religion"),
                                  f"{{tmp}}/data/{RELIGION} is not UTF-8 text (byte 0xeb)", "save it as UTF-8",
                                  latin1(RELIGION)),
    # Bias-NLI
    "nli-unknown-probe": Case("nli", ("nli", "count", "-p", "race"), "'-p': 'race'",
                              "is not one of 'gender', 'nationality', 'religion', 'all'"),
    "nli-sample-too-large": Case("nli", ("nli", "count", "-p", "religion", "--sample", "99999999"),
                                 "sample=99999999 asks for", "use a smaller sample"),
    "nli-sample-not-a-number": Case("nli", ("nli", "score", "-m", "{nli}", "-p", "religion", "--sample", "abc"),
                                    "--sample 'abc'", "a count has no decimal point"),
    "nli-label-order-wrong-label": Case("nli", (*NLI_SCORE, "-m", "{nli_generic}", "--label-order",
                                                "entailment,neutral,contra"), "'entailment,neutral,contra'",
                                        "pass e.g. entailment,neutral,contradiction"),
    "nli-generic-labels-without-order": Case("nli", (*NLI_SCORE, "-m", "{nli_generic}"), "0: 'LABEL_0'",
                                             "--label-order entailment,neutral,contradiction"),
    "nli-unmappable-labels": Case("nli", (*NLI_SCORE, "-m", "{nli_odd}"), "1: 'maybe'", "use an NLI model"),
    "nli-two-labels": Case("nli", (*NLI_SCORE, "-m", "{nli2}"), "'{nli2}' has 2 labels", "an NLI model needs 3"),
    "nli-not-a-classifier": Case("nli", (*NLI_SCORE, "-m", "{qa}"), "'{qa}' is not a sequence-classification",
                                 "pass a checkpoint fine-tuned"),
    "nli-missing-model-folder": Case("nli", (*NLI_SCORE, "-m", "{tmp}/missing"), "{tmp}/missing", "check the path"),
    "nli-bad-precision": Case("nli", (*NLI_SCORE, "-m", "{nli}", "--precision", "fp64"), "'--precision': 'fp64'",
                              "is not one of 'auto', 'fp32', 'bf16', 'fp16'"),
    "nli-engine-spark": Case("nli", (*NLI_SCORE, "-m", "{nli}", "--engine", "spark"), "'--engine': 'spark'",
                             "is not one of 'local', 'ray'"),
    "nli-corrupted-shard": Case("nli", NLI_REPORT, "part-00000.parquet", "; delete ",
                                flipped(*NLI_SCORE, "-m", "{nli}")),
    "nli-n-boot-0": Case("nli", (*NLI_REPORT, "--n-boot", "0"), "'--n-boot'", AT_LEAST.format(1)),
    "nli-label-order-for-named-labels": Case("nli", (*NLI_REPORT, "--label-order", "entailment,neutral,contradiction"),
                                             "--label-order is only for models whose labels are LABEL_0..LABEL_2; "
                                             "{nli} names its labels (entailment, neutral, contradiction)",
                                             "drop --label-order"),
    "nli-model-twice": Case("nli", (*NLI_SCORE, "-m", "{nli}", "-m", "{nli}"), "-m/--model {nli} is given twice",
                            "pass each model once"),
    "nli-report-out-is-a-file": Case("nli", (*NLI_REPORT[:-1], "{out}/keep.csv"), "{out}/keep.csv is a file",
                                     "pass a folder path"),
    "nli-blank-word-list-line": Case("nli", ("nli", "count", "-p", "gender"), "occupations:2: blank line",
                                     "remove it", broken("nli/word_lists/nouns/people/occupations",
                                                         lambda t: t.replace("\n", "\n\n", 1))),
    "nli-word-list-not-utf8": Case("nli", ("nli", "count", "-p", "gender"), "{tmp}/data/nli/word_lists/nouns/people/"
                                   "occupations is not UTF-8 text", "save it as UTF-8",
                                   latin1("nli/word_lists/nouns/people/occupations")),
    # SODAPOP
    "sp-unknown-group": Case("sodapop", (*SODAPOP, "--pair", "EA_f:XX_m"), "'--pair': 'EA_f:XX_m'",
                             "pass e.g. AA_f:EA_f (groups: EA_f, EA_m, AA_f, AA_m, AS_f, AS_m, HS_f, HS_m)"),
    "sp-pair-without-colon": Case("sodapop", (*SODAPOP, "--pair", "EA_f"), "'--pair': 'EA_f'", "pass e.g. AA_f:EA_f"),
    "sp-pair-same-group": Case("sodapop", (*SODAPOP, "--pair", "EA_f:EA_f"), "'--pair': 'EA_f:EA_f'", "two different"),
    "sp-not-a-probe-context": Case("sodapop", (*SODAPOP, "--contexts", "3,1"), "--contexts 1 is not a SODAPOP probe",
                                   "choose among 0, 3, 9"),
    "sp-context-not-a-number": Case("sodapop", (*SODAPOP, "--contexts", "3,x"), "--contexts '3,x'", "pass e.g. 3,9"),
    "sp-depth-0": Case("sodapop", (*SODAPOP, "--depth", "0"), "'--depth'", AT_LEAST.format(1)),
    "sp-depth-6": Case("sodapop", (*SODAPOP, "--depth", "6"), "'--depth'", AT_MOST.format(5)),
    "sp-depth-not-a-number": Case("sodapop", (*SODAPOP, "--depth", "two"), "'--depth'",
                                  "see 'stereoprobe sodapop report --help'"),
    "sp-cap-1": Case("sodapop", (*SODAPOP, "--cap", "1"), "--cap '1' is not one number of at least 2",
                     "pass e.g. 600 or 'all'"),
    "sp-names-per-group-30": Case("sodapop", (*SODAPOP, "--names-per-group", "30"), "'--names-per-group'",
                                  AT_MOST.format(25)),
    "sp-min-count-negative": Case("sodapop", (*SODAPOP, "--min-count", "-1"), "'--min-count'", AT_LEAST.format(0)),
    "sp-n-perm-0": Case("sodapop", (*SODAPOP, "--n-perm", "0"), "'--n-perm'", AT_LEAST.format(1)),
    "sp-seed-negative": Case("sodapop", (*SODAPOP, "--seed=-10"), "'--seed'", AT_LEAST.format(0)),
    "sp-workers-0": Case("sodapop", (*SODAPOP, "--workers", "0"), "'--workers'", AT_LEAST.format(1)),
    "sp-mcq-model-not-multiple-choice": Case("sodapop", (*SODAPOP, "--mcq-model", "{mlm}"),
                                             "'{mlm}' is not a multiple-choice model", "pass a checkpoint fine-tuned"),
    "sp-writer-not-a-masked-lm": Case("sodapop", (*SODAPOP, "--mlm", "{qa}"), "'{qa}' is not a masked LM",
                                      "pass a checkpoint fine-tuned"),
    "sp-writer-without-mask-token": Case("sodapop", (*SODAPOP, "--mlm", "{nomask}"), "'{nomask}' has no mask token",
                                         "pass one (e.g. zoo:minilm-mlm) as the writer"),
    "sp-duplicate-name": Case("sodapop", SODAPOP, "european_american_female.txt:26: duplicate name 'Amanda'",
                              "remove the repeated line", broken(NAMES + "european_american_female.txt",
                                                                 lambda t: t + "Amanda\n")),
    "sp-name-in-two-groups": Case("sodapop", SODAPOP, "'Amanda' is listed both in european_american_female.txt and "
                                  "african_american_female.txt", "keep it in one group",
                                  broken(NAMES + "african_american_female.txt", lambda t: t + "Amanda\n")),
    "sp-context-without-bethany": Case("sodapop", SODAPOP, "social_iqa_dev_bethany.jsonl:4: the context does not "
                                       "contain the placeholder name 'Bethany'", "write the person as 'Bethany'",
                                       broken("sodapop/social_iqa_dev_bethany.jsonl",
                                              social_iqa_line4_without_bethany)),
    "sp-names-not-utf8": Case("sodapop", SODAPOP, "{tmp}/data/" + NAMES + "european_american_female.txt is not UTF-8",
                              "save it as UTF-8", latin1(NAMES + "european_american_female.txt")),
    "sp-contexts-not-utf8": Case("sodapop", SODAPOP, "{tmp}/data/sodapop/social_iqa_dev_bethany.jsonl is not UTF-8",
                                 "save it as UTF-8", latin1("sodapop/social_iqa_dev_bethany.jsonl")),
    # UnQover when the model may abstain or reason (issue 39)
    "uq-thinking-of-a-qa-model": Case("unqover", (*QA_REPORT, "--thinking", "on"), "thinking settings are for causal and "
                                      "served LMs", "leave them out"),
    "uq-think-budget-without-thinking": Case("unqover", (*CAUSAL_REPORT, "--think-budget", "64"),
                                             "think_budget=64 is the reasoning's budget, and thinking is not on",
                                             "pass thinking=True (--thinking on)"),
    "uq-thinking-without-a-switch": Case("unqover", (*CAUSAL_REPORT, "--thinking", "off"), "has no chat template, so "
                                         "thinking cannot be switched", "leave thinking out"),
    "uq-long-csv-not-csv": Case("unqover", (*QA_REPORT, "--long-csv", "{out}/long.txt"), "--long-csv {out}/long.txt is "
                                "not a .csv file", "pass a file path ending in .csv"),
}


def snapshot(*roots: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_table_covers_every_probe():
    per_probe = {p: sum(c.probe == p for c in CASES.values()) for p in ("unqover", "nli", "sodapop")}
    assert len(CASES) >= 18 and min(per_probe.values()) >= 5, per_probe


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name, models, tmp_path, monkeypatch, capsys, one_torch_thread):
    case = CASES[name]
    folders = {k: tmp_path / k for k in ("out", "store", "cache")}
    for key, folder in folders.items():  # pre-existing content that must survive untouched
        folder.mkdir()
        (folder / "keep.csv").write_text(f"{key},pre-existing\n")
    monkeypatch.setenv("STEREOPROBE_CACHE", str(folders["cache"]))
    world = World(tmp_path, {**models, **{k: str(v) for k, v in folders.items()}, "tmp": str(tmp_path)}, monkeypatch)
    if case.setup is not None:
        case.setup(world)
    for arg in case.args:  # a committed lab model is unpacked into the cache on first use (a read-through copy,
        if arg.startswith("lab:"):  # written whole), as an earlier run would have: not this run's output
            lab_model_path(arg[len("lab:"):])
    capsys.readouterr()
    before = snapshot(*folders.values())

    with pytest.raises(SystemExit) as exit_info:
        main([world.fmt(a) for a in case.args])
    err = capsys.readouterr().err

    assert exit_info.value.code == 2, err
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert world.fmt(case.culprit) in err, err
    assert world.fmt(case.fix) in err, err
    assert snapshot(*folders.values()) == before
