"""The ``stereoprobe`` command line.

    stereoprobe unqover count                       # Table 1 of UnQover, without generating anything
    stereoprobe unqover generate -d gender -o gender.jsonl --sample 1000
    stereoprobe unqover score -m lab:qa-biased -d gender --sample 2000
    stereoprobe unqover report -m lab:qa-biased -d gender --sample 2000 -o reports/
    stereoprobe nli count                           # Bias-NLI pairs per probe, without generating anything
    stereoprobe nli score -m zoo:minilm-nli -p gender --sample 5000
    stereoprobe nli report -m zoo:minilm-nli -p gender -p religion --sample 5000 -o reports/
    stereoprobe sodapop report --mcq-model zoo:minilm-mcq --mlm zoo:minilm-mlm --pair AA_f:EA_f -o reports/
    stereoprobe zoo list                            # the zoo models, their cards' quality numbers
    stereoprobe zoo build minilm-qa                 # rerun a recipe from scratch (writes data/zoo/)
    stereoprobe book --profile cpu

Every bad input stops with one sentence naming the culprit and the fix, and exit status 2.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

import typer

from .errors import StereoprobeError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Stereotyping-bias probes: UnQover, SODAPOP, Bias-NLI.")
unqover_app = typer.Typer(no_args_is_help=True, help="UnQover: underspecified questions for QA models (Li et al. 2020).")
app.add_typer(unqover_app, name="unqover")
nli_app = typer.Typer(no_args_is_help=True, help="Bias-NLI: how neutral NLI models are on template pairs (Dev et al. 2020).")
app.add_typer(nli_app, name="nli")
sodapop_app = typer.Typer(no_args_is_help=True, help="SODAPOP: distractors that fool multiple-choice models (An et al. 2023).")
app.add_typer(sodapop_app, name="sodapop")
zoo_app = typer.Typer(no_args_is_help=True, help="The offline model zoo: MiniLM fine-tuned by the project's recipes.")
app.add_typer(zoo_app, name="zoo")


def _sample(value: Optional[str]) -> float | int | None:
    if value is None or value.lower() in ("none", "all", "full"):
        return None
    try:
        number = float(value)
    except ValueError:
        raise StereoprobeError(f"--sample {value!r} is not a number; give a fraction like 0.01, a count like 5000, or 'all'.")
    if not number > 0:
        raise StereoprobeError(f"--sample {value!r} is not positive; give a fraction like 0.01, a count like 5000, or 'all'.")
    return int(number) if number > 1 and number.is_integer() else number


def _spec(dataset: str, sample: Optional[str], seed: int, mode: str, newsqa: bool, variant: str = "qa"):
    from .unqover.generate import DatasetSpec

    return DatasetSpec(dataset, variant=variant, newsqa=newsqa, mode=mode, sample=_sample(sample), seed=seed)


def _atomic_path(target: Path):
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


def _check_out_dir(out: Optional[Path]) -> None:
    """Fail before any work when the output folder cannot be one."""
    if out is not None and out.exists() and not out.is_dir():
        raise StereoprobeError(f"--out {out} is a file, not a folder; pass a folder path (it is created if missing).")


def _write_tables(out: Path, tables: dict) -> None:
    """Write tables that are all computed already, as ``out/<name>.csv``, each one atomically."""
    for name, table in tables.items():
        target = out / f"{name}.csv"
        tmp = _atomic_path(target)
        try:
            table.to_csv(tmp, index=False)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)


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
    if out.is_dir():
        raise StereoprobeError(f"--out {out} is a folder; pass a file path ending in .jsonl or .parquet.")
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


def _score_options(batch_tokens, device, precision, store, engine="local", workers=None, **extra):
    from .engine import check_engine
    from .store import ScoreStore

    check_engine(engine, workers)
    return dict(batch_tokens=batch_tokens, device=device, precision=precision,
                store=ScoreStore(store) if store else None, engine=engine, workers=workers, **extra)


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
        run = score_dataset(name, spec_for(name, spec), mode=mode, **_score_options(
            batch_tokens, device, precision, store, engine, workers, shard_passes=shard_passes))
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

    _check_out_dir(out)
    spec = _spec(dataset, sample, seed, mode, newsqa, variant)
    opts = _score_options(batch_tokens, device, precision, store, engine, workers, shard_passes=shard_passes)
    tables = report.model_report(model, spec, mode=mode, n_boot=n_boot, top=top, seed=seed, **opts)
    for name, table in tables.items():
        typer.echo(f"\n== {name} ==")
        typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if out is not None:
        _write_tables(out, {f"{dataset}_{name}": table for name, table in tables.items()})
        typer.echo(f"\nwrote {len(tables)} tables to {out}")


# -- Bias-NLI ------------------------------------------------------------------------------------------------------
ProbeOpt = typer.Option(..., "--probe", "-p", help="gender, nationality, religion or 'all' (repeat -p for several).")
LabelOrderOpt = typer.Option(None, "--label-order", help="The classes of LABEL_0,LABEL_1,LABEL_2 for models with "
                             "generic label names, e.g. entailment,neutral,contradiction.")


def _nli_specs(probes: List[str], sample: Optional[str], seed: int) -> dict:
    """probe -> TemplateSpec of the requested probes: the chapter's pair sets (repository lists, seeded sample)."""
    from .nli.templates import PROBES, TemplateSpec

    names = list(PROBES) if "all" in probes else list(dict.fromkeys(probes))
    return {p: TemplateSpec(p, sample=_sample(sample), seed=seed) for p in names}


def _label_order(value: Optional[str]) -> Optional[tuple]:
    from .errors import MetricsError
    from .nli.measures import label_indices

    if value is None:
        return None
    order = tuple(v.strip() for v in value.split(","))
    try:
        label_indices([f"LABEL_{i}" for i in range(3)], order)  # the names, checked before any model is loaded
    except MetricsError:
        raise StereoprobeError(f"--label-order {value!r} must name entailment, neutral and contradiction once each "
                               "(the classes of LABEL_0, LABEL_1, LABEL_2); pass e.g. entailment,neutral,contradiction.")
    return order


@nli_app.command("count")
def nli_count_cmd(
    probe: List[str] = typer.Option(["all"], "--probe", "-p", help="gender, nationality, religion or 'all'."),
    sample: Optional[str] = typer.Option(None, "--sample", help="Pairs to keep: a fraction (0.01), a count or 'all'."),
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


@nli_app.command("score")
def nli_score_cmd(
    model: List[str] = ModelOpt,
    probe: List[str] = ProbeOpt,
    sample: Optional[str] = typer.Option(None, "--sample", help="Pairs per probe: a fraction (0.01), a count or 'all'."),
    seed: int = SeedOpt,
    batch_tokens: int = BatchOpt,
    device: str = DeviceOpt,
    precision: str = PrecisionOpt,
    store: Optional[Path] = StoreOpt,
    engine: str = EngineOpt,
    workers: Optional[int] = WorkersOpt,
    label_order: Optional[str] = LabelOrderOpt,
):
    """Score the pairs of each probe with one or more NLI classifiers into the score store."""
    from .nli.score import score_pairs

    specs = _nli_specs(probe, sample, seed)
    order = _label_order(label_order)
    opts = _score_options(batch_tokens, device, precision, store, engine, workers)
    for name in model:
        for probe_name, spec in specs.items():
            run = score_pairs(name, spec, label_order=order, **opts)
            typer.echo(f"{name} · {probe_name}: {run.n_rows():,} pairs stored in {run.path}")


@nli_app.command("report")
def nli_report_cmd(
    model: List[str] = ModelOpt,
    probe: List[str] = ProbeOpt,
    sample: Optional[str] = typer.Option(None, "--sample", help="Pairs per probe: a fraction (0.01), a count or 'all'."),
    seed: int = SeedOpt,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Folder for nli_<probe>_neutrality.csv (atomic)."),
    n_boot: int = typer.Option(1000, "--n-boot", help="Bootstrap resamples for the CIs."),
    batch_tokens: int = BatchOpt,
    device: str = DeviceOpt,
    precision: str = PrecisionOpt,
    store: Optional[Path] = StoreOpt,
    engine: str = EngineOpt,
    workers: Optional[int] = WorkersOpt,
    label_order: Optional[str] = LabelOrderOpt,
):
    """Net neutral NN, fraction neutral FN, T:0.5 and T:0.7 with bootstrap CIs, per model and probe."""
    from .nli import report
    from .nli.score import load_probabilities

    _check_out_dir(out)
    specs = _nli_specs(probe, sample, seed)
    order = _label_order(label_order)
    opts = _score_options(batch_tokens, device, precision, store, engine, workers)
    tables = {}
    for probe_name, spec in specs.items():
        probs = {(m, probe_name): load_probabilities(m, spec, label_order=order, **opts) for m in model}
        tables[probe_name] = report.measures_table(probs, ("model", "probe"), n_boot=n_boot, seed=seed)
    for probe_name, table in tables.items():
        typer.echo(f"\n== nli {probe_name} neutrality ==")
        typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if out is not None:
        _write_tables(out, {f"nli_{name}_neutrality": table for name, table in tables.items()})
        typer.echo(f"\nwrote {len(tables)} tables to {out}")


# -- SODAPOP -------------------------------------------------------------------------------------------------------
#: The chapter's headline comparisons (Tables 4 and 21), used when no --pair is given.
SODAPOP_PAIRS = ("AA_f:EA_f", "EA_f:EA_m")


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


def _sodapop_pairs(pairs: Optional[List[str]]) -> List[tuple]:
    from .sodapop.names import GROUPS

    out = []
    for pair in pairs or SODAPOP_PAIRS:
        parts = pair.split(":")
        if len(parts) != 2 or not all(p in GROUPS for p in parts) or parts[0] == parts[1]:
            raise StereoprobeError(f"--pair {pair!r} is not two different groups G1:G2; pass e.g. AA_f:EA_f "
                                   f"(groups: {', '.join(GROUPS)}).")
        out.append(tuple(parts))
    return out


@sodapop_app.command("report")
def sodapop_report_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for sodapop_units.csv and sodapop_rd_<G1>_<G2>.csv."),
    mcq_model: str = typer.Option("zoo:minilm-mcq", "--mcq-model", help="The multiple-choice model under test."),
    mlm: str = typer.Option("zoo:minilm-mlm", "--mlm", help="The masked LM that writes the distractors."),
    names_per_group: int = typer.Option(8, "--names-per-group", help="First names of each of the 8 groups (1-25)."),
    contexts: str = typer.Option("3", "--contexts", help="Probe contexts (line indices, e.g. 3,9) or 'all' (50)."),
    depth: int = typer.Option(2, "--depth", help="Recursion depth k of the distractor generation (paper: 3)."),
    cap: str = typer.Option("600", "--cap", help="Distractors kept per (name, context), or 'all'."),
    dedup: Optional[bool] = typer.Option(None, "--dedup/--no-dedup", help="Deduplicate distractors (default: "
                                         "only with several contexts, as the chapter)."),
    pair: Optional[List[str]] = typer.Option(None, "--pair", help="Groups G1:G2 to compare (repeat; default: "
                                             "AA_f:EA_f and EA_f:EA_m)."),
    min_count: int = typer.Option(1, "--min-count", help="A word enters the vocabulary if it occurs more often "
                                  "than this for every name (paper: 50)."),
    n_perm: int = typer.Option(100_000, "--n-perm", help="Permutations per word (exact test when the splits are fewer)."),
    seed: int = typer.Option(10, "--seed", help="Seed of the distractor shuffle and the permutations (authors: 10)."),
    batch_tokens: int = BatchOpt,
    device: str = DeviceOpt,
    precision: str = typer.Option("fp32", "--precision", help="fp32 (default: top-10 fills are tie-sensitive), "
                                  "bf16, fp16 or auto."),
    store: Optional[Path] = StoreOpt,
    engine: str = EngineOpt,
    workers: Optional[int] = WorkersOpt,
):
    """Distractors for names × contexts, the per-unit accuracy, and the relative difference of words between groups."""
    from math import comb

    import pandas as pd

    from .batching import resolve_precision
    from .engine import worker_device
    from .models import load
    from .sodapop import analysis, names
    from .sodapop.probe import GridConfig, run_probe
    from .sodapop.success import sr_matrix

    # every input is checked before anything is generated, scored or written
    _check_out_dir(out)
    pairs = _sodapop_pairs(pair)
    chosen = _sodapop_contexts(contexts)
    caps = _int_list("--cap", cap)
    if caps is not None and len(caps) != 1:
        raise StereoprobeError(f"--cap {cap!r} is not one number; pass e.g. 600 or 'all'.")
    if dedup is None:  # the chapter: every raw candidate for one context, unique ones over several
        dedup = chosen is None or len(chosen) > 1
    grid = GridConfig(names_per_group=names_per_group, contexts=chosen, depth=depth,
                      cap=None if caps is None else caps[0], dedup=dedup, seed=seed)
    grid.generation()
    groups = grid.groups()
    grid.probe_contexts()
    if min_count < 0:
        raise StereoprobeError(f"--min-count {min_count} is negative; pass 0 or more (paper: 50).")
    if n_perm < 1:
        raise StereoprobeError(f"--n-perm {n_perm} is not a positive number of permutations; pass e.g. 100000.")
    opts = _score_options(batch_tokens, device, precision, store, engine, workers)
    resolve_precision(worker_device(device, engine), precision)
    load(mcq_model, "mcq", device="cpu")  # a wrong head stops here, before the distractors are generated

    run = run_probe(mcq_model, mlm, grid, **opts)
    outcomes, accuracy = run.outcomes()
    units = run.units_table().merge(accuracy[["name", "context", "accuracy"]], on=["name", "context"])
    units.insert(0, "group", units["name"].map(names.group_of(groups)))
    sr = sr_matrix(outcomes, min_count=min_count)
    rd = {}
    for g1, g2 in pairs:  # as the chapter: exact permutation test when there are at most n_perm splits
        n1, n2 = len(groups[g1]), len(groups[g2])
        method = "exact" if comb(n1 + n2, n1) <= n_perm else "sampled"
        if analysis.relative_difference(sr, groups[g1], groups[g2]).empty:  # no word differs: an empty table
            rd[g1, g2] = pd.DataFrame(columns=["word", "side", "mean_g1", "mean_g2", "rd_paper", "rd_code", "p", "q"])
        else:
            rd[g1, g2] = analysis.rd_table(sr, groups[g1], groups[g2], n_perm=n_perm, method=method, seed=seed)

    typer.echo(f"{len(units)} units (names × contexts), {int(units['mcqs'].sum()):,} MCQs, mean accuracy "
               f"{units['accuracy'].mean():.3f}; vocabulary {sr.shape[1]} words (min count {min_count})")
    for (g1, g2), table in rd.items():
        flagged = int((table["q"] < 0.05).sum()) if len(table) else 0
        typer.echo(f"\n== {g1} vs {g2}: {len(table)} words with a relative difference, {flagged} with q < 0.05 ==")
        if len(table):
            typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    tables = {"sodapop_units": units, **{f"sodapop_rd_{g1}_{g2}": table for (g1, g2), table in rd.items()}}
    _write_tables(out, tables)
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


def _one_line(message: str) -> str:
    return re.sub(r"\s*\n\s*", " ", message.strip())


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one line and exit with status 2."""
    try:
        app(args=argv, prog_name="stereoprobe", standalone_mode=False)
    except StereoprobeError as err:
        typer.echo(f"error: {_one_line(str(err))}", err=True)
        sys.exit(2)
    except typer.Abort:
        sys.exit(1)
    except typer.TyperException as err:  # usage errors of typer's click: one line too, with their exit code
        ctx = getattr(err, "ctx", None)
        if type(err).__name__ == "NoArgsIsHelpError":  # a group called without a command: its help
            err.show()
        else:
            hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
            typer.echo(f"error: {_one_line(err.format_message()).rstrip('.')}{hint}.", err=True)
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
