"""SODAPOP with a model behind a server or an API as the multiple-choice model, on the exact rung.

On the exact rung (:mod:`stereoprobe.served.ladder`) a served model gives each distinct (name, context, choice) the
log-probability of the choice after the ``mcq`` template's plain prompt, as a local causal LM does
(:mod:`stereoprobe.sodapop.score_causal`): ``acc`` (summed) and ``acc_norm`` (per character, the whitespace moved
from the prompt counted as lm-evaluation-harness counts it), and the analysis follows unchanged.

The letter rungs (next-token, generated) need one request per multiple-choice question with its three options
lettered, and give one answer per question rather than one score per choice; SODAPOP's analysis reads per-choice
scores, so they are refused here with one sentence until that analysis reads per-question answers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import StereoprobeError
from ..modelref import ModelRef
from ..options import RunOptions, as_options
from .distractors import GenerationConfig, Unit, mcqs_of
from .score_causal import unit_requests
from .score_mcq import unit_choices

__all__ = ["check", "score_served_choices"]


def check(ref: ModelRef, rung: str | None) -> None:
    """Refuse, before any distractor is written, an endpoint or a forced rung SODAPOP cannot read."""
    from ..served import capabilities
    from ..served.ladder import choose

    chosen = choose(capabilities(ref), ("exact",), rung, ref.name) if rung in (None, "exact") else rung
    if chosen != "exact":
        raise StereoprobeError(f"SODAPOP reads {ref.name!r} on the exact rung only (per-choice log-probabilities); "
                               f"the {chosen} rung gives one answer per question, which its analysis does not read "
                               "yet; serve the model with prompt log-probabilities (vLLM, llama.cpp) or leave rung out.")


def score_served_choices(ref: ModelRef, units: Sequence[Unit], config: GenerationConfig, template, *,
                         options: RunOptions | None = None) -> pd.DataFrame:
    """Log-likelihood of every distinct (name, context, choice) under the served model ``ref`` through ``template``
    (task ``mcq``, a plain prompt), asking the server what its journal lacks: the frame of
    :func:`stereoprobe.sodapop.score_causal.score_causal_choices` (``logit``, ``logit_norm``), ``attrs["served"]``
    as UnQover's."""
    from ..causal import split_whitespace
    from ..served import session
    from ..served.ladder import exact_logprobs

    run = as_options(options)
    s = session(ref, run)
    before = s.counts()
    reqs = [r for u in units for r in unit_requests(u, config, template, None, False)]
    lp = exact_logprobs(s.client, s.journal, reqs, **s.ask(f"{ref.label} · mcq:{template.name}"))
    chars = np.array([len(split_whitespace(p, c)[1]) for p, c in reqs], dtype=np.float64)
    frame = pd.DataFrame([(k, u.name, u.context.index, c) for k, u in enumerate(units)
                          for c in unit_choices(u, mcqs_of(u, config))], columns=["unit", "name", "context", "choice"])
    frame["logit"], frame["logit_norm"] = lp, lp / np.maximum(chars, 1)
    frame.attrs["served"] = s.finish(f"{ref.label} · mcq:{template.name}", {"rung": "exact", "passes": len(reqs)},
                                     before)
    return frame

