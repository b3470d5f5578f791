"""The Python API: one frozen RunOptions, the probes' report functions, and the command line as a thin layer over them.

The doctests of stereoprobe.unqover.api, stereoprobe.nli.api and stereoprobe.sodapop.api run the three reports on
the lab and zoo models; here: the run options' checks, the reports' equality with the CLI's CSV files, and the
package's public names.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pandas as pd
import pytest

import stereoprobe
from stereoprobe import RunOptions
from stereoprobe.errors import StereoprobeError
from stereoprobe.reports import Report


def test_run_options_are_frozen_and_checked_once():
    run = RunOptions(device="cpu", batch_tokens=512, threads=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.device = "cuda"
    assert run.replace(precision="fp32") == RunOptions(device="cpu", batch_tokens=512, threads=1, precision="fp32")
    for bad, culprit in [(dict(device="gpu"), "device='gpu'"), (dict(precision="fp8"), "precision='fp8'"),
                         (dict(batch_tokens=0), "batch_tokens=0"), (dict(threads=True), "threads=True"),
                         (dict(engine="spark"), "engine='spark'"), (dict(workers=2), "workers=2"),
                         (dict(store=3), "store=3")]:
        with pytest.raises(StereoprobeError, match=culprit.replace("(", r"\(")) as e:
            RunOptions(**bad)
        assert str(e.value).count(". ") <= 1 and "\n" not in str(e.value)  # one sentence naming the culprit


def test_threads_apply_inside_the_block_only():
    import torch

    before = torch.get_num_threads()
    with RunOptions(threads=1).applied():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with RunOptions().applied():  # None: torch's own choice, untouched
        assert torch.get_num_threads() == before


def _store_level_scorers():
    from stereoprobe.nli.scoring import load_probabilities, score_pairs
    from stereoprobe.sodapop.distractors import generate
    from stereoprobe.sodapop.probe import rescore, run_probe
    from stereoprobe.sodapop.score_mcq import score_choices
    from stereoprobe.unqover.score_qa import load_scores, score_dataset
    from stereoprobe.book.tables.unqover import intensity_grid
    from stereoprobe.unqover.reporting import gather, gather_lm, model_report

    return [score_dataset, load_scores, gather, gather_lm, model_report, intensity_grid, score_pairs,
            load_probabilities, generate, score_choices, run_probe, rescore]


def test_store_level_scorers_take_one_run_options_object():
    import inspect

    run_fields = {f.name for f in dataclasses.fields(RunOptions)}
    for scorer in _store_level_scorers():
        params = inspect.signature(scorer).parameters
        assert params["options"].kind is inspect.Parameter.KEYWORD_ONLY and params["options"].default is None, scorer
        assert not run_fields & set(params), f"{scorer.__name__} still takes run keywords"


def test_a_scorer_refuses_anything_but_run_options_before_any_work(tmp_path):
    from stereoprobe.nli.scoring import score_pairs
    from stereoprobe.nli.templates import TemplateSpec
    from stereoprobe.sodapop.distractors import GenerationConfig, generate
    from stereoprobe.sodapop.probe import GridConfig, run_probe
    from stereoprobe.sodapop.score_mcq import score_choices
    from stereoprobe.unqover.generate import DatasetSpec
    from stereoprobe.unqover.score_qa import score_dataset

    calls = [lambda o: score_dataset("no/such-model", DatasetSpec("religion", sample=2), options=o),
             lambda o: score_pairs("no/such-model", TemplateSpec("religion", sample=2), options=o),
             lambda o: generate("no/such-model", ["Amy"], [], options=o),
             lambda o: score_choices("no/such-model", [], GenerationConfig(), options=o),
             lambda o: run_probe("no/such-model", "no/such-model", GridConfig(names_per_group=1, contexts=[3]),
                                 options=o)]
    for call in calls:
        with pytest.raises(StereoprobeError, match=r"^options=\{'device': 'cpu'\} is not a RunOptions; pass "
                                                   r"stereoprobe\.RunOptions\(device=\.\.\., \.\.\.\)\.$"):
            call({"device": "cpu"})


def test_the_score_store_is_the_folder_given_or_the_cache_one(tmp_path, monkeypatch):
    from stereoprobe.store import ScoreStore

    monkeypatch.setenv("STEREOPROBE_CACHE", str(tmp_path / "cache"))
    assert RunOptions(store=tmp_path / "s").score_store().root == tmp_path / "s"
    assert RunOptions().score_store().root == tmp_path / "cache" / "scores"
    store = ScoreStore(tmp_path / "t")
    assert RunOptions(store=store).score_store() is store


def test_a_report_writes_its_tables_whole(tmp_path):
    rep = Report("t", {"a": pd.DataFrame({"x": [1.5]}), "b": pd.DataFrame({"y": ["z"]})}, stems={"a": "first_a"})
    paths = rep.write_csv(tmp_path / "out")
    assert [p.name for p in paths] == rep.files() == ["first_a.csv", "b.csv"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["b.csv", "first_a.csv"]  # no temporary left
    assert pd.read_csv(paths[0])["x"].tolist() == [1.5] and dict(rep) == rep.tables


@pytest.mark.parametrize("probe,names", [("unqover", {"report", "score", "dataset_spec"}),
                                         ("nli", {"report", "score", "probe_specs"}), ("sodapop", {"report"})])
def test_each_probe_exports_its_entry_points(probe, names):
    """Also after every submodule was imported: a submodule named like an entry point (``nli/score.py`` beside
    ``nli.score``) would replace the function on the package the moment anything imports it."""
    import importlib
    import pkgutil

    module = getattr(stereoprobe, probe)
    for sub in pkgutil.iter_modules(module.__path__):
        importlib.import_module(f"{module.__name__}.{sub.name}")
        assert sub.name not in names, f"{module.__name__}.{sub.name} is a module and an entry point"
    assert names <= set(module.__all__) and all(callable(getattr(module, n)) for n in names)


def test_import_stereoprobe_stays_light():
    code = "import sys, stereoprobe; print(sorted(m for m in ('torch', 'pandas', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_report_is_what_the_cli_writes(cli, tmp_path):
    """``stereoprobe unqover report -o`` and ``nli report -o`` write exactly the API's tables."""
    from stereoprobe import nli, unqover

    run = RunOptions(device="cpu", progress=False, store=tmp_path / "store")  # the committed builds, as the CLI
    rep = unqover.report(["lab:qa-biased", "lab:qa-control"], "gender", sample=24, n_boot=50, options=run)
    rep.write_csv(tmp_path / "api")
    code, out, err = cli("unqover", "report", "-m", "lab:qa-biased", "-m", "lab:qa-control", "-d", "gender",
                         "--sample", "24", "--n-boot", "50", "--device", "cpu", "--store", str(tmp_path / "store"),
                         "-o", str(tmp_path / "cli"))
    assert code == 0, err
    for name in rep.files():
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    nrep = nli.report(["zoo:minilm-nli"], "gender", sample=40, n_boot=20, options=run)
    nrep.write_csv(tmp_path / "api_nli")
    code, _, err = cli("nli", "report", "-m", "zoo:minilm-nli", "-p", "gender", "--sample", "40", "--n-boot", "20",
                       "--device", "cpu", "--store", str(tmp_path / "store"), "-o", str(tmp_path / "cli_nli"))
    assert code == 0, err
    assert (tmp_path / "api_nli" / "nli_gender_neutrality.csv").read_bytes() == \
        (tmp_path / "cli_nli" / "nli_gender_neutrality.csv").read_bytes()
    assert sorted(p.name for p in (tmp_path / "cli").iterdir()) == sorted(rep.files()) and "reasoning_errors" in out


# -- the public surface -----------------------------------------------------------------------------------------
#: The modules whose ``__all__`` is the public surface (book/api.md, README "From Python", CONTRIBUTING.md).
PUBLIC_MODULES = ("stereoprobe", "stereoprobe.unqover", "stereoprobe.nli", "stereoprobe.sodapop", "stereoprobe.modelref",
                  "stereoprobe.models", "stereoprobe.prompts", "stereoprobe.prompting", "stereoprobe.backends",
                  "stereoprobe.causal", "stereoprobe.served")


def public_surface() -> set[str]:
    """Every public name, qualified (submodules and the version apart)."""
    import importlib
    import types

    out = set()
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            if attr != "__version__" and not isinstance(getattr(module, attr), types.ModuleType):
                out.add(f"{name}.{attr}")
    return out


def test_the_api_page_lists_exactly_the_public_surface():
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "book" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\.\. auto(?:function|class|data):: (\S+)$", page, flags=re.M))
    assert documented == public_surface(), (sorted(documented - public_surface()),
                                              sorted(public_surface() - documented))


def test_every_public_name_resolves_and_says_what_it_is():
    import importlib

    for qualified in sorted(public_surface()):
        module, _, name = qualified.rpartition(".")
        value = getattr(importlib.import_module(module), name)
        if callable(value) and not isinstance(value, type(str)):
            assert (value.__doc__ or "").strip(), f"{qualified} has no docstring"
        elif not callable(value):  # a constant: the API page shows the #: comment where it is defined
            assert apidata().defining_comment(qualified, value), f"{qualified} has no #: comment where it is defined"


def apidata():
    """The book's Sphinx extension that documents a re-exported constant (book/_ext/apidata.py)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "book" / "_ext" / "apidata.py"
    spec = importlib.util.spec_from_file_location("apidata", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_api_page_builds_with_warnings_as_errors(tmp_path):
    """The API page alone, as the book builds it (-W -n): every docstring it shows parses, a constant shows its own
    comment and not its type's docstring (dict() -> new empty dictionary ...). Seconds, where the whole book's
    build waits for the chapters."""
    import shutil
    from pathlib import Path

    from stereoprobe.book.stage import _jupyter_book_command

    root = Path(__file__).resolve().parents[1]
    shutil.copy(root / "_config.yml", tmp_path)
    shutil.copytree(root / "book", tmp_path / "book", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "_static").mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/api\n", encoding="utf-8")
    done = subprocess.run([*_jupyter_book_command(), "build", str(tmp_path), "-W", "-n", "--keep-going"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    page = (tmp_path / "_build" / "html" / "book" / "api.html").read_text(encoding="utf-8")
    assert "new empty dictionary" not in page and "Built-in immutable sequence" not in page
    assert "The UnQover datasets" in page and "The eight demographic groups" in page


def test_the_old_homes_of_0_8_are_gone():
    """0.8.0 moved the chapters' tables, display and plots into the book layer, the corpora below the probes, renamed
    sodapop.abc, and kept the old names for one release with a DeprecationWarning; 0.9.0 removes them."""
    import importlib

    for module in ("stereoprobe.unqover.tables", "stereoprobe.nli.tables", "stereoprobe.display", "stereoprobe.plots",
                   "stereoprobe.zoo.wordnet", "stereoprobe.zoo.nli_corpus"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(module)
    from stereoprobe import sodapop
    from stereoprobe.nli import scoring
    from stereoprobe.unqover import score_causal

    for module, name in ((sodapop, "abc"), (scoring, "DEFAULT_MODEL"), (score_causal, "template_spread")):
        assert not hasattr(module, name), name
