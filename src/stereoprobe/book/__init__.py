"""Run the chapter notebooks with papermill, then build the HTML book with Jupyter Book.

The chapters come from ``_toc.yml`` (the single source of truth): every toc entry that is a
jupytext notebook (``notebooks/<stem>.py``, py:percent, with a cell tagged ``parameters``) is
read in memory with jupytext, parameterized from a profile (``params/<name>.yaml``) and
executed with papermill on a kernel that is *this* interpreter (``sys.executable``), so
nothing has to be installed at user level. Executed copies are written atomically to
``_build/executed/<stem>.ipynb``, with the chapter's *execution key* (:func:`execution_key`: its code
cells, its parameters, the package's files and version, the library versions, the local models it
names); a later build reuses an executed copy whose key is unchanged and only puts the current prose
(markdown cells) into it, so a prose edit never re-executes a chapter. :func:`build_book` then stages the
book sources into
``_build/src`` and runs ``jupyter-book build -W -n --keep-going`` from the same environment;
the HTML ends up in ``_build/html``. Sphinx never executes a notebook
(``execute_notebooks: "off"`` in ``_config.yml``).

Profiles: the top-level keys of ``params/<name>.yaml`` are parameters shared by all
notebooks; an optional ``notebooks:`` mapping ``{stem: {parameter: value}}`` overrides them
per notebook. Each notebook receives only the parameters its ``parameters`` cell declares,
plus ``profile`` (the profile name) when it declares it.

The sources of the book are in a clone of the repository, not in the installed package: every function
takes ``root``, the clone's root folder, by default the one :func:`stereoprobe.paths.checkout_root` finds.

The book layer lives in this package: :mod:`~stereoprobe.book.params` (the parameters, profiles, chapters and
what each notebook receives), :mod:`~stereoprobe.book.execute` (papermill and the execution cache),
:mod:`~stereoprobe.book.stage` (staging and the Jupyter Book build), :mod:`~stereoprobe.book.publish` (``make
publish``) and :mod:`stereoprobe.book.views` (each chapter's front end: the tables and figures its notebook
shows, computed by the probes).

Command line (``stereoprobe book``, the same command and options; ``--help`` lists them)::

    python -m stereoprobe.book --profile cpu                  # what `make book` runs
    python -m stereoprobe.book --profile gpu --set models='[my/qa-model]'
    python -m stereoprobe.book --profile smoke --only reasoning_errors --execute-only
"""

from stereoprobe.book.execute import execution_key, record_timing, reuse_execution, run_notebooks
from stereoprobe.book.params import (BookBuildError, Chapter, NotebookExecutionError, available_profiles, book_root,
                                     chapters, load_profile, notebook_parameters, overrides_from_assignments,
                                     resolve_parameters)
from stereoprobe.book.stage import build_book, figures_without_alt

__all__ = [
    "BookBuildError",
    "Chapter",
    "NotebookExecutionError",
    "available_profiles",
    "book_root",
    "build_book",
    "chapters",
    "execution_key",
    "figures_without_alt",
    "load_profile",
    "notebook_parameters",
    "overrides_from_assignments",
    "record_timing",
    "resolve_parameters",
    "reuse_execution",
    "run_notebooks",
]
