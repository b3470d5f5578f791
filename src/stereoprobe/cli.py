"""The ``stereoprobe`` command line.

    stereoprobe unqover count                       # Table 1 of UnQover, without generating anything
    stereoprobe unqover generate -d gender -o gender.jsonl --sample 1000
    stereoprobe unqover score -m lab:qa-biased -d gender --sample 2000
    stereoprobe unqover report -m lab:qa-biased -d gender --sample 2000 -o reports/
    stereoprobe zoo list                            # the zoo models, their cards' quality numbers
    stereoprobe zoo build minilm-qa                 # rerun a recipe from scratch (writes data/zoo/)
    stereoprobe book --profile cpu

Every bad input stops with one sentence naming the culprit and the fix, and exit status 2.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

import typer

from .errors import StereoprobeError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Stereotyping-bias probes: UnQover, SODAPOP, Bias-NLI.")
unqover_app = typer.Typer(no_args_is_help=True, help="UnQover: underspecified questions for QA models (Li et al. 2020).")
app.add_typer(unqover_app, name="unqover")
zoo_app = typer.Typer(no_args_is_help=True, help="The offline model zoo: MiniLM fine-tuned by the project's recipes.")
app.add_typer(zoo_app, name="zoo")


def _sample(value: Optional[str]) -> float | int | None:
    if value is None or value.lower() in ("none", "all", "full"):
        return None
    try:
        number = float(value)
    except ValueError:
        raise StereoprobeError(f"--sample {value!r} is not a number; give a fraction like 0.01, a count like 5000, or 'all'.")
    return int(number) if number > 1 and number.is_integer() else number


def _spec(dataset: str, sample: Optional[str], seed: int, mode: str, newsqa: bool, variant: str = "qa"):
    from .unqover.generate import DatasetSpec

    return DatasetSpec(dataset, variant=variant, newsqa=newsqa, mode=mode, sample=_sample(sample), seed=seed)


def _atomic_path(target: Path):
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


DatasetOpt = typer.Option("gender", "--dataset", "-d", help="gender, nationality, ethnicity or religion.")
SampleOpt = typer.Option(None, "--sample", help="Paper examples to keep: a fraction (0.01), a count (5000) or 'all'.")
SeedOpt = typer.Option(0, "--seed", help="Seed of the sampling.")
ModeOpt = typer.Option("compat", "--mode", help="compat (the authors' code, bit for bit) or clean.")
NewsqaOpt = typer.Option(False, "--newsqa", help="Prepend the NewsQA header (automatic for models whose name contains 'newsqa').")


@unqover_app.command("count")
def count_cmd(
    dataset: str = typer.Option("all", "--dataset", "-d", help="A dataset name or 'all'."),
    variant: str = typer.Option("qa", "--variant", help="qa, lm-bert or lm-roberta."),
    sample: Optional[str] = SampleOpt,
    seed: int = SeedOpt,
):
    """Print Table 1: paper examples, ordered examples and forward passes (nothing is generated)."""
    from .unqover.generate import DATASETS, count

    names = list(DATASETS) if dataset == "all" else [dataset]
    rows = [(name, count(_spec(name, sample, seed, "compat", False, variant))) for name in names]
    typer.echo(f"{'dataset':<12} {'#Ex (paper)':>13} {'ordered':>13} {'passes':>13}")
    for name, c in rows:
        typer.echo(f"{name:<12} {c.paper_examples:>13,} {c.ordered_examples:>13,} {c.passes:>13,}")
    if len(rows) > 1:
        total = [sum(c[k] for _, c in rows) for k in range(3)]
        typer.echo(f"{'total':<12} {total[0]:>13,} {total[1]:>13,} {total[2]:>13,}")


@unqover_app.command("generate")
def generate_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .jsonl (the authors' key/value layout) or .parquet."),
    dataset: str = DatasetOpt,
    sample: Optional[str] = SampleOpt,
    seed: int = SeedOpt,
    mode: str = ModeOpt,
    newsqa: bool = NewsqaOpt,
    variant: str = typer.Option("qa", "--variant", help="qa, lm-bert or lm-roberta."),
):
    """Write the examples of a dataset (streamed; the file appears only when complete)."""
    from .batching import progress
    from .unqover.generate import count, iter_examples

    if out.suffix not in (".jsonl", ".parquet"):
        raise StereoprobeError(f"--out {out} has an unknown extension; use .jsonl or .parquet.")
    spec = _spec(dataset, sample, seed, mode, newsqa, variant)
    total = count(spec).ordered_examples
    examples = progress(iter_examples(spec), total=total, desc=f"generating {dataset}")
    tmp = _atomic_path(out)
    try:
        if out.suffix == ".jsonl":
            with open(tmp, "w", encoding="utf-8") as f:
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
                writer = writer or pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table)
            if writer is None:
                pq.write_table(pa.Table.from_pylist([], schema=pa.schema([(f, pa.string()) for f in Example._fields])), tmp)
            else:
                writer.close()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    typer.echo(f"wrote {total:,} ordered examples ({2 * total:,} passes) to {out}")


def _score_options(batch_tokens, device, precision, store, engine="local", workers=None, shard_passes=20_000):
    from .engine import check_engine
    from .store import ScoreStore

    check_engine(engine, workers)
    return dict(batch_tokens=batch_tokens, device=device, precision=precision,
                store=ScoreStore(store) if store else None, engine=engine, workers=workers,
                shard_passes=shard_passes)


ModelOpt = typer.Option(..., "--model", "-m", help="Hub id, local folder, zoo: or lab: name (zoo:minilm-qa, lab:qa-biased …).")
BatchOpt = typer.Option(8192, "--batch-tokens", help="Token budget per batch (padded tokens).")
DeviceOpt = typer.Option("auto", "--device", help="auto, cpu or cuda.")
PrecisionOpt = typer.Option("auto", "--precision", help="auto (bf16 on GPU, fp32 on CPU), fp32, bf16 or fp16.")
StoreOpt = typer.Option(None, "--store", help="Score-store folder (default: .cache/stereoprobe/scores).")
EngineOpt = typer.Option("local", "--engine", help="local (this process) or ray (Ray Data workers: the GPUs of this "
                         "machine, or of the cluster at RAY_ADDRESS); identical results.")
WorkersOpt = typer.Option(None, "--workers", help="Ray workers (default: one per GPU of the cluster).")
ShardOpt = typer.Option(20_000, "--shard-passes", help="Passes per score-store shard (a multiple of 100): the unit "
                        "of resumption and of work handed to a Ray worker.")
VariantOpt = typer.Option("qa", "--variant", help="qa (extractive-QA models), lm-bert or lm-roberta (masked LMs, "
                          "e.g. zoo:minilm-mlm with lm-bert).")


@unqover_app.command("score")
def score_cmd(
    model: List[str] = ModelOpt,
    dataset: str = DatasetOpt,
    sample: Optional[str] = SampleOpt,
    seed: int = SeedOpt,
    mode: str = ModeOpt,
    newsqa: bool = NewsqaOpt,
    batch_tokens: int = BatchOpt,
    device: str = DeviceOpt,
    precision: str = PrecisionOpt,
    store: Optional[Path] = StoreOpt,
    variant: str = VariantOpt,
    engine: str = EngineOpt,
    workers: Optional[int] = WorkersOpt,
    shard_passes: int = ShardOpt,
):
    """Score a dataset with one or more QA models (or masked LMs, --variant lm-bert) into the score store."""
    from .unqover.report import spec_for
    from .unqover.score_qa import score_dataset

    spec = _spec(dataset, sample, seed, mode, newsqa, variant)
    for name in model:
        run = score_dataset(name, spec_for(name, spec), mode=mode,
                            **_score_options(batch_tokens, device, precision, store, engine, workers, shard_passes))
        typer.echo(f"{name}: {run.n_rows():,} passes stored in {run.path}")


@unqover_app.command("report")
def report_cmd(
    model: List[str] = ModelOpt,
    dataset: str = DatasetOpt,
    sample: Optional[str] = SampleOpt,
    seed: int = SeedOpt,
    mode: str = ModeOpt,
    newsqa: bool = NewsqaOpt,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Folder for CSV tables (written atomically)."),
    n_boot: int = typer.Option(1000, "--n-boot", help="Bootstrap resamples for the CIs."),
    top: int = typer.Option(3, "--top", help="Rows per group in the top-γ table."),
    batch_tokens: int = BatchOpt,
    device: str = DeviceOpt,
    precision: str = PrecisionOpt,
    store: Optional[Path] = StoreOpt,
    variant: str = VariantOpt,
    engine: str = EngineOpt,
    workers: Optional[int] = WorkersOpt,
    shard_passes: int = ShardOpt,
):
    """Reasoning errors (δ, ε, avg S), bias intensity μ and the top γ(x, a) per subject group."""
    from .unqover import report

    spec = _spec(dataset, sample, seed, mode, newsqa, variant)
    opts = _score_options(batch_tokens, device, precision, store, engine, workers, shard_passes)
    tables = report.model_report(model, spec, mode=mode, n_boot=n_boot, top=top, seed=seed, **opts)
    for name, table in tables.items():
        typer.echo(f"\n== {name} ==")
        typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for name, table in tables.items():
            target = out / f"{dataset}_{name}.csv"
            tmp = _atomic_path(target)
            table.to_csv(tmp, index=False)
            os.replace(tmp, target)
        typer.echo(f"\nwrote {len(tables)} tables to {out}")


@zoo_app.command("list")
def zoo_list_cmd():
    """The zoo models with their held-out quality numbers and whether each part checks out."""
    from .zoo.recipes import ZOO, ZooError, check_part

    for name, r in ZOO.items():
        try:
            _, card = check_part(name)
            m = card["metrics"]
            quality = ", ".join(f"{k} {v:.3f}" for k, v in m.items() if isinstance(v, float))
            status = f"ok ({card['part']['bytes'] / 1e6:.1f} MB; {quality})"
        except ZooError as err:
            status = f"NOT AVAILABLE: {err}"
        typer.echo(f"zoo:{name:<12} {r.head:<4} {r.summary}: {status}")


@zoo_app.command("build")
def zoo_build_cmd(
    names: Optional[List[str]] = typer.Argument(None, help="recipes to run (default: all), e.g. minilm-qa"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="folder for the parts and cards (default: data/zoo)"),
    smoke: bool = typer.Option(False, help="tiny sizes: checks the recipe end to end in seconds"),
):
    """Train zoo models from scratch with their seeded recipes (the whole zoo: about 30 min on 2 idle cores)."""
    from .zoo.recipes import build, recipe

    for name in names or []:
        recipe(name)  # unknown names fail before anything trains
    for card in build(names, out, smoke=smoke):
        quality = ", ".join(f"{k} {v:.3f}" for k, v in card["metrics"].items() if isinstance(v, float))
        typer.echo(f"{card['name']}: {quality}; trained in {card['training']['wall_s']['train']:.0f} s")


@app.command("book", context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                                         "help_option_names": []})
def book_cmd(ctx: typer.Context):
    """Execute every chapter notebook with a profile and build _build/html (options: `stereoprobe book --help`).

    The same command as ``python -m stereoprobe.book``: --profile, --set KEY=VALUE, --only, --no-execute, …
    """
    from .book import main as book_main

    code = book_main(ctx.args)
    if code:
        sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one line and exit with status 2."""
    try:
        app(args=argv, standalone_mode=False)
    except StereoprobeError as err:
        typer.echo(f"error: {err}", err=True)
        sys.exit(2)
    except typer.Abort:
        sys.exit(1)
    except Exception as err:  # click usage errors carry their own exit code
        import click

        if isinstance(err, click.exceptions.ClickException):
            err.show()
            sys.exit(err.exit_code)
        raise


if __name__ == "__main__":
    main()
