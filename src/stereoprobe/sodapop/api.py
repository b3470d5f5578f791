"""SODAPOP from Python: :func:`report`, what ``stereoprobe sodapop report`` runs.

For names of the eight groups (race × gender; An et al. 2023, §3.1) in Social IQa probe contexts, a masked LM
writes distractors, a multiple-choice model answers the questions with them (both through caches: the
distractors per unit, every logit in the score store), and the report compares groups word by word: the
success rate of each distractor word per name, the relative difference between two groups, and a permutation
test with multiple-testing control (§3.3). Two kinds of table:

* ``units`` — one row per (name, context): group, answer length, the cost of generation, candidates, MCQs and
  the model's accuracy;
* ``rd_<G1>_<G2>`` — one row per word that differs between the groups: mean success rates, the relative
  difference (the paper's and the code's), p and q.

>>> import tempfile
>>> from stereoprobe import RunOptions, sodapop
>>> run = RunOptions(device="cpu", progress=False, store=tempfile.mkdtemp())
>>> rep = sodapop.report("zoo:minilm-mcq", "zoo:minilm-mlm", names_per_group=2, depth=1, cap=10, n_perm=100,
...                      pairs=["AA_m:EA_m"], options=run)
>>> list(rep), len(rep["units"]), int(rep["units"]["mcqs"].sum())  # 2 names × 8 groups × context 3
(['units', 'rd_AA_m_EA_m'], 16, 80)
>>> rep.files()
['sodapop_units.csv', 'sodapop_rd_AA_m_EA_m.csv']
"""

from __future__ import annotations

from typing import Sequence

from ..errors import StereoprobeError
from ..naming import model_labels
from ..options import RunOptions, as_options
from ..reports import Report
from .names import GROUPS

#: The comparisons of the book's SODAPOP chapter (the paper's Tables 4 and 21), the default ``pairs``.
DEFAULT_PAIRS = ("AA_f:EA_f", "EA_f:EA_m")


def parse_pair(value: str | Sequence[str]) -> tuple[str, str]:
    """``"AA_f:EA_f"`` (or a pair of group names) as two different SODAPOP groups.

    >>> parse_pair("AA_f:EA_f"), parse_pair(("EA_f", "EA_m"))
    (('AA_f', 'EA_f'), ('EA_f', 'EA_m'))
    """
    groups = value.split(":") if isinstance(value, str) else list(value)
    if len(groups) != 2 or not set(groups) <= set(GROUPS) or groups[0] == groups[1]:
        raise StereoprobeError(f"{value!r} is not two different groups G1:G2; pass e.g. AA_f:EA_f "
                               f"(groups: {', '.join(GROUPS)}).")
    return groups[0], groups[1]


def check_contexts(contexts: Sequence[int] | int | None, option: str = "contexts") -> list[int] | None:
    """The probe contexts asked for (line indices of the Social IQa slice; None: all 50), each checked."""
    from .contexts import probe_context_indices

    if contexts is None:
        return None
    chosen = [contexts] if isinstance(contexts, int) else list(contexts)
    valid = probe_context_indices()
    bad = [i for i in chosen if i not in valid]
    if bad or not chosen:
        raise StereoprobeError(f"{option} {bad[0] if bad else '[]'} is not a SODAPOP probe context (a line asking "
                               f"'How would you describe Bethany?'); choose among {', '.join(map(str, valid[:8]))}, … "
                               "or all of them (None).")
    return chosen


def report(mcq_model: str | None = None, mlm: str | None = None, *, names_per_group: int = 8,
           contexts: Sequence[int] | int | None = (3,), depth: int = 2, cap: int | None = 600,
           dedup: bool | None = None, pairs: Sequence[str | Sequence[str]] = DEFAULT_PAIRS, min_count: int = 1,
           n_perm: int = 100_000, seed: int = 10, variant: str | None = None, template=None,
           chat: bool | None = None, rung: str | None = None, samples: int = 1, temperature: float | None = None,
           options: RunOptions | None = None) -> Report:
    """Distractors for names × contexts, the per-unit accuracy, and the relative difference of words between groups.

    ``mcq_model``: the multiple-choice model under test; ``mlm``: the masked LM that writes the distractors (hub ids,
    folders, ``zoo:`` or ``lab:`` names; None: the zoo's MiniLM multiple-choice model and masked LM,
    :func:`stereoprobe.providers.default_model`). ``names_per_group`` (1–25) first names of each group, ``contexts`` (probe
    line indices, None for all 50), ``depth`` (recursion depth k, 1–5; the paper's 3), ``cap`` (distractors kept per
    unit, at least 2, None for all), ``dedup`` (None: only with several contexts), ``pairs`` (groups to compare),
    ``min_count`` (a word enters the vocabulary if it occurs more often for every name; the paper's 50), ``n_perm``
    (permutations per word; exact when the splits are fewer), ``seed`` (distractor shuffle and permutations; the
    authors' 10). ``variant``: None (the model's config decides), ``mcq`` (a multiple-choice encoder) or ``causal``
    (a causal or chat LM: each choice's log-likelihood after a prompt, :mod:`stereoprobe.sodapop.score_causal`; the
    tables then come twice, for ``acc`` and for ``acc_norm``: ``accuracy_norm`` in ``units``, ``rd_<G1>_<G2>_norm``).
    Causal LMs only: ``template`` (an ``mcq`` template's name or file; default ``siqa``) and ``chat`` (the chat
    template, a plain prompt, or None: whichever the tokenizer has). A served model (``openai-api/<service>/<model>``,
    :mod:`stereoprobe.served`) reads the same template on the rung ``rung`` (None: the best its endpoint gives): on
    the exact rung ``acc`` and ``acc_norm`` as a local causal LM, on ``next-token`` and ``generated`` the letter it
    answers each question with, one ``letter`` row whose ``units`` add ``answered``, the share of questions given
    one answer (:mod:`stereoprobe.sodapop.prompted`); on the generated rung ``samples`` answers per question at
    ``temperature`` (None: 0 for one sample, 1.0 for several), a slot's score the share of the answers naming it.
    ``options``: how it runs (:class:`~stereoprobe.options.RunOptions`; ``precision="auto"`` is fp32
    here, the top-10 fills being tie-sensitive: :func:`~stereoprobe.sodapop.distractors.run_precision`). The tables
    are those of ``stereoprobe sodapop report``; ``extra`` holds the :class:`~stereoprobe.sodapop.probe.ProbeRun`
    (``run``) and the success-rate matrix (``sr``).
    """
    from ..modelref import resolve_model
    from . import analysis, names
    from .distractors import run_precision
    from .probe import GridConfig, run_probe
    from .readers import READERS, Choices, reader_for
    from .success import sr_matrix

    from ..providers import default_model

    mcq_model = mcq_model if mcq_model is not None else default_model("sodapop-mcq", "mcq_model")
    mlm = mlm if mlm is not None else default_model("sodapop-mlm", "mlm")
    # every input is checked before anything is generated, scored or written
    for what, value, low, high in (("names_per_group", names_per_group, 1, 25), ("depth", depth, 1, 5),
                                   ("min_count", min_count, 0, None), ("n_perm", n_perm, 1, None),
                                   ("seed", seed, 0, None)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high and value > high):
            raise StereoprobeError(f"{what}={value!r} must be an integer from {low}{f' to {high}' if high else ' up'}.")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 2):
        raise StereoprobeError(f"cap={cap!r} is not one number of at least 2 (distractors come in pairs); pass e.g. "
                               "600, or None for all.")
    models = list(dict.fromkeys((mcq_model, mlm)))  # one folder as both: refused when it is loaded
    label = dict(zip(models, model_labels(models)))
    compared = [parse_pair(p) for p in (pairs or DEFAULT_PAIRS)]
    chosen = check_contexts(contexts)
    if dedup is None:  # the chapter: every raw candidate for one context, unique ones over several
        dedup = chosen is None or len(chosen) > 1
    grid = GridConfig(names_per_group=names_per_group, contexts=chosen, depth=depth, cap=cap, dedup=dedup, seed=seed)
    grid.generation()
    groups = grid.groups()
    grid.probe_contexts()
    run = as_options(options)
    run.dtype(auto=run_precision(run))  # checked (and resolved once) before any work
    if variant not in (None, "mcq", "causal"):
        raise StereoprobeError(f"Unknown variant {variant!r}; choose mcq (a multiple-choice encoder) or causal (a "
                               "causal LM), or leave it out.")
    # each model resolved once: the model under test (its kind decides its reader) and the distractors' writer
    ref = resolve_model(mcq_model, native="mcq", asked=variant, smoke=run.smoke,
                        allowed=list(READERS)).with_label(label[mcq_model])
    writer = resolve_model(mlm, native="mlm", smoke=run.smoke).with_label(label[mlm])  # its head: when it loads
    ask = Choices(template=template, chat=chat, rung=rung, samples=samples, temperature=temperature)
    reader = reader_for(ref)
    reader.check(ref, ask, run)  # the template and chat setting, or the head, before any distractor

    with run.applied():
        probe = run_probe(ref, writer, grid, options=run, template=ask.template, chat=chat, rung=rung,
                          samples=samples, temperature=temperature)
    # every reading of the model is a row: an encoder's logits, or a causal LM's acc (summed log-likelihood) and
    # acc_norm (per character)
    readings = reader.readings(ref, ask, run)
    tables, notes, headings, srs = {}, [], {"units": "units (names × contexts)"}, {}
    for reading in readings:
        suffix, column, name = reading.suffix, reading.column, reading.row.label
        outcomes, accuracy = probe.outcomes(column)
        if not suffix:
            kept = ["name", "context", "accuracy"] + (["answered"] if "answered" in accuracy else [])
            units = probe.units_table().merge(accuracy[kept], on=["name", "context"])
            units.insert(0, "group", units["name"].map(names.group_of(groups)))
            units.insert(0, "model", ref.label)
            tables["units"] = units
        else:
            units["accuracy" + suffix] = units[["name", "context"]].merge(accuracy, on=["name", "context"])[
                "accuracy"].to_numpy()
        sr = srs["sr" + suffix] = sr_matrix(outcomes, min_count=min_count)
        for g1, g2 in compared:  # as the chapter: exact permutation test when there are at most n_perm splits
            table, why = analysis.rd_between(sr, groups, g1, g2, n_perm=n_perm, seed=seed)
            if why and why not in notes:
                notes.append(why)
            table = table.copy()
            table.insert(0, "model", name)
            key = f"rd_{g1}_{g2}{suffix}"
            tables[key] = table
            flagged = int((table["q"] < 0.05).sum()) if len(table) else 0
            headings[key] = (f"{g1} vs {g2}{f' ({reading.row.scorer})' if reading.row.scorer else ''}: "
                             f"{len(table)} words with a relative difference, {flagged} with q < 0.05")
    from ..served import provenances, served_table
    from .prompted import provenance_key

    served = provenances(run).get(provenance_key(ref))
    if served:  # a served model: the rung, what it cost, the model id and fingerprint the server reported
        tables["served"] = served_table({readings[0].row: served})
        headings["served"] = "served model"
    sr = srs["sr"]
    others = "".join(f" ({r.row.scorer} {units['accuracy' + r.suffix].mean():.3f})" for r in readings if r.suffix)
    if "answered" in units:  # a letter rung: the accuracy is over the questions given one answer
        others += f" over the {(units['answered'] * units['mcqs']).sum() / units['mcqs'].sum():.1%} answered"
    title = (f"model {ref.label}{reader.describe(ref, ask)} (distractors by {label[mlm]}): {len(units)} units (names "
             f"× contexts), {int(units['mcqs'].sum()):,} MCQs, mean accuracy {units['accuracy'].mean():.3f}{others}; "
             f"vocabulary {sr.shape[1]} words (min count {min_count})")
    return Report(title, tables, stems={k: f"sodapop_{k}" for k in tables}, headings=headings, notes=notes,
                  extra={"run": probe, **srs, "groups": groups})


__all__ = ["DEFAULT_PAIRS", "check_contexts", "parse_pair", "report"]
