"""Bias-NLI (Dev et al., AAAI 2020): template pairs that should be neutral, neutrality measures, projection debiasing.

From Python: :func:`report` (the tables of ``stereoprobe nli report``) and :func:`score` (fill the score store),
both taking a :class:`~stereoprobe.options.RunOptions`. The building blocks live in the submodules: ``templates``
(the pairs), ``scoring`` (the classifier scorer; not ``score``, the
name of the function), ``measures`` (NN, FN, T:τ), ``projection``, ``static`` and
``contextual`` (debiasing), ``tables`` (the chapter's tables).
"""

from .api import label_orders, probe_specs, report, score
from .templates import PROBES

__all__ = ["PROBES", "label_orders", "probe_specs", "report", "score"]
