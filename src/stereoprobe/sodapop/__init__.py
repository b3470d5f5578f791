"""SODAPOP (An et al., EACL 2023): open-ended discovery of social biases in multiple-choice models.

From Python: :func:`report` (the tables of ``stereoprobe sodapop report``), taking a
:class:`~stereoprobe.options.RunOptions`. The building blocks live in the submodules: ``names`` and ``contexts``
(the probe), ``distractors`` (written by a masked LM), ``score_mcq`` (the multiple-choice scorer), ``probe`` (one
run end to end), ``success`` and ``analysis`` (success rates, relative differences, permutation tests), ``debias``.
"""

from .api import DEFAULT_PAIRS, check_contexts, parse_pair, report
from .names import GROUPS

__all__ = ["DEFAULT_PAIRS", "GROUPS", "check_contexts", "parse_pair", "report"]
