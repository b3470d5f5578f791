"""A served model's API key appears in no executed notebook and no page of the book.

The issue's rule for ``openai-api/<service>/<model>`` models: the key (``<SERVICE>_API_KEY``) never appears in a model
string, the score store, a fingerprint, a log line, a traceback, an executed notebook or the HTML.
tests/test_served_probes.py::test_the_key_appears_in_no_output checks the command line's output, the store and the
CSV files; this test checks the book's side. A minimal book (built as tests/test_book.py's ``_fake_book`` builds
one) has one chapter that does what a reader's chapter does with a served model, behind the reference server of
tests/served_reference.py that wants a sentinel key: it runs the three probes through it (the model named by the
profile, as a reader's profile names it), shows their tables (the ``served`` table among them) and the report
objects, the endpoint's capabilities, and the error of a refused key with its Python traceback (and IPython's
verbose one, which shows every frame's variables). The chapter is
executed by papermill (``run_notebooks``: a kernel that inherits this process's environment, so the key reaches
it the way a reader's does) and built into HTML by Jupyter Book (``build_book``); then every file of the build
(executed notebooks, staged sources, HTML, Sphinx's log) and of the score store is read as bytes and searched for
the sentinel. What the chapter shows is checked too, so an empty page cannot pass: the served table's model and
rung in the HTML, the refused key's message naming ``REF_API_KEY``, and the server's log of the sentinel received.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stereoprobe.paths import checkout_root

ReferenceServer = sys.modules["stereoprobe_test_served_reference"].ReferenceServer  # tests/conftest.py loads it

ROOT = checkout_root()
NAME = "openai-api/ref/ref-model"
SENTINEL = "sk-SENTINEL-book-5d81e2"

#: The chapter, py:percent. Its parameters come from the profile (the served model, the store, how it runs); it
#: never writes the key: the wrong key of its last cell is made from the environment's.
CHAPTER = '''\
# %% [markdown]
# # A served model

# %% tags=["parameters"]
chat_models = ["lab:causal-biased"]  # the model to probe
store = ""  # the score store
run = {"device": "auto", "smoke": False}
profile = ""

# %%
import os
import sys
import traceback

from IPython.core.ultratb import FormattedTB

from stereoprobe import RunOptions, nli, served, sodapop, unqover
from stereoprobe.book.display import show, use_book_style

use_book_style()
model = chat_models[0]
options = RunOptions(store=store, **run)
# the kernel inherited the server's variables from the process that started it
print("address:", os.environ["REF_BASE_URL"], "| key set:", bool(os.environ.get("REF_API_KEY")))

# %%
caps = served.capabilities(model)
print("rungs:", ", ".join(caps.rungs()), "| models:", ", ".join(caps.models))
caps

# %%
gender = unqover.report(model, "gender", sample=4, templates=["qa", "letters"], n_boot=20, options=options)
for key in gender:
    print(gender.headings.get(key, key))
    show(gender[key])
gender

# %%
inferences = nli.report(model, "gender", sample=6, templates="yes-maybe-no", n_boot=20, options=options)
for key in inferences:
    show(inferences[key])
inferences

# %%
discovered = sodapop.report(model, "lab:mlm-biased", names_per_group=1, depth=1, cap=4, n_perm=10,
                            pairs=["AA_m:EA_m"], options=options)
for key in discovered:
    show(discovered[key])
print(discovered)

# %%
right = os.environ["REF_API_KEY"]
os.environ["REF_API_KEY"] = right + "-wrong"
try:  # a new run (its own state): the endpoint probed again, with the wrong key
    unqover.report(model, "gender", sample=4, templates="qa", n_boot=20, options=options.replace())
except served.EndpointError as error:
    print(repr(error))
    print(traceback.format_exc())
    # what IPython shows under %xmode Verbose: every frame's arguments and variables, with their values
    print(FormattedTB(mode="Verbose", theme_name="nocolor", include_vars=True).text(*sys.exc_info()))
else:
    raise AssertionError("the wrong key was not refused")
finally:
    os.environ["REF_API_KEY"] = right
    del right
'''


def _book(root: Path, store: Path) -> None:
    """A minimal book: the real config, bibliography, local extension and stylesheet, an intro and the chapter;
    the profile ``served`` names the served model and the store."""
    for folder in ("notebooks", "params", "book/_ext", "book/_static"):
        (root / folder).mkdir(parents=True)
    for name in ("_config.yml", "book/references.bib", "book/_ext/apidata.py", "book/_static/stereoprobe.css"):
        (root / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    (root / "book" / "intro.md").write_text("# Intro\n\nHello.\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/served\n")
    (root / "notebooks" / "served.py").write_text(CHAPTER)
    (root / "params" / "served.yaml").write_text(json.dumps(
        {"chat_models": [NAME], "store": str(store), "device": "cpu", "smoke_models": True}))


@pytest.mark.slow
def test_the_key_appears_in_no_executed_notebook_and_no_page(lab_lm, monkeypatch, tmp_path):
    from stereoprobe.book import build_book, run_notebooks

    root, store, build = tmp_path / "repo", tmp_path / "store", tmp_path / "build"
    _book(root, store)
    with ReferenceServer(*lab_lm, model_name="ref-model", api_key=SENTINEL) as server:
        address = server.base_url
        monkeypatch.setenv("REF_BASE_URL", address)
        monkeypatch.setenv("REF_API_KEY", SENTINEL)
        [executed] = run_notebooks("served", out_dir=build / "executed", root=root, timeout=600, progress=False)
        html = build_book("served", build_dir=build, root=root, execute=False, progress=False)

    # the work happened: the kernel had the key and the server took it; every probe ran on the exact rung
    received = [r[2].get("authorization") for r in server.requests]
    assert f"Bearer {SENTINEL}" in received and f"Bearer {SENTINEL}-wrong" in received
    nb = json.loads(executed.read_text(encoding="utf-8"))
    shown = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                      for c in nb["cells"] for o in c.get("outputs", []))
    assert f"address: {address} | key set: True" in shown
    assert "rungs: exact, next-token, generated | models: ref-model" in shown
    for row in ("answer:qa", "choice:letters", "nli:yes-maybe-no", "acc"):  # UnQover's two, Bias-NLI's, SODAPOP's
        assert f"ref-model · {row} [exact]" in shown, f"no {row} row read on the exact rung"
    for title in ("<Report 'UnQover gender", "<Report 'Bias-NLI", "<Report 'model ref-model through"):
        assert title in shown
    assert "refused the request (HTTP 401): the key in REF_API_KEY was refused" in shown
    assert "Traceback (most recent call last)" in shown and "stereoprobe.served.client.Unusable: " in shown
    assert "in Client.send(self=<stereoprobe.served.client.Client object>" in shown  # IPython's, with arguments
    page = (html / "notebooks" / "served.html").read_text(encoding="utf-8")
    for text in ("ref-model", "exact", "fp_reference", "REF_API_KEY", "Traceback (most recent call last)",
                 "&lt;Report"):
        assert text in page, f"the page lacks {text!r}"

    # and the key is in no file of the build or the store
    files = [p for folder in (build, store) for p in folder.rglob("*") if p.is_file()]
    assert {".ipynb", ".html", ".sqlite"} <= {p.suffix for p in files}
    leaks = [str(p.relative_to(tmp_path)) for p in files if SENTINEL.encode() in p.read_bytes()]
    assert not leaks, f"the API key is in {leaks}"
