"""UnQover (Li et al., Findings of EMNLP 2020): underspecified questions that probe QA models and masked LMs.

From Python: :func:`report` (the tables of ``stereoprobe unqover report``) and :func:`score` (fill the score
store), both taking a :class:`~stereoprobe.options.RunOptions`; :func:`dataset_spec` names the examples a run
reads. The building blocks live in the submodules: ``generate`` (the examples), ``score_qa`` / ``score_lm`` (the
scorers), ``metrics`` (δ, ε, γ, η, μ) and ``tables`` (the chapters' tables).
"""

from .api import MODEL_VARIANTS, TABLES, dataset_spec, report, score
from .generate import DATASETS

__all__ = ["DATASETS", "MODEL_VARIANTS", "TABLES", "dataset_spec", "report", "score"]
