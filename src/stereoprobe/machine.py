"""The machine a model was trained on, so a card can say when its weights are reproducible bit for bit.

Training is deterministic on one machine: the lab recipes and the static Bias-NLI models fix the seed and
train on one thread, so the same code, CPU and library versions give the same bytes. They do **not** give the
same bytes on another CPU: floating-point sums in the kernels that torch dispatches to (its own vectorised
ATen kernels, chosen by the CPU's instruction set, and MKL's BLAS, which takes other code paths on other
processors) are ordered differently, the rounding differs in the last bits, and training amplifies that into
visibly different weights. What does carry over is the planted effect, within a tolerance the tests measure
(``tests/test_lab_committed.py``).

Every committed model card therefore records :func:`fingerprint` of the machine that trained it, and a test
asserts bit-for-bit equality only where :func:`same_machine` says this machine matches the card's.

>>> fp = fingerprint()
>>> sorted(MATCH_KEYS) == sorted(k for k in MATCH_KEYS if k in fp)
True
>>> same_machine(fp), same_machine({**fp, "aten_capability": "NEON"}), same_machine(None)
(True, False, False)
>>> [d.split(" vs ")[0] for d in differences({**fp, "torch": "0.1"})]
['torch: 0.1 (card)']

Elsewhere a rebuild is held to its card's evaluation by :func:`evaluation_differences`:

>>> card = {"planted_margin": 0.78, "n": 400, "planted_gamma_min": 0.75, "other_abs_gamma_max": 0.23}
>>> evaluation_differences(card, {**card, "planted_margin": 0.77})
[]
>>> evaluation_differences(card, {**card, "planted_margin": 0.5, "n": 399})
['planted_margin: 0.78 (card) vs 0.5 (tolerance 0.13)', 'n: 400 (card) vs 399']
>>> evaluation_differences(card, {**card, "other_abs_gamma_max": 0.76})[-1]
'the plant no longer ranks first: planted_gamma_min 0.75 vs other_abs_gamma_max 0.76 (card: 0.75 vs 0.23)'
"""

from __future__ import annotations

import hashlib
import platform
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

#: The entries that must be equal for two machines to train the same bytes: the CPU (architecture, model,
#: instruction-set flags), the kernels torch picks for it, and the numeric libraries' versions.
MATCH_KEYS = ("arch", "cpu", "cpu_flags_sha256", "aten_capability", "torch", "mkl", "numpy", "transformers")

#: What a card written before fingerprints were recorded says instead of a fingerprint.
NOT_RECORDED = {"recorded": False,
                "note": "trained before stereoprobe 0.6.0 recorded the training machine; the checksums on this card "
                        "fix its weights, and a rebuild gives the same bytes only on the CPU and library versions "
                        "that trained it, elsewhere the same planted effect and quality within a tolerance"}


def _cpuinfo() -> dict[str, str]:
    """The first processor's entries of ``/proc/cpuinfo`` (Linux; x86 and ARM name them differently)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    info: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if info:
                break
            continue
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    return info


def _cpu(info: Mapping[str, str]) -> str:
    """A CPU's name and generation: x86 model name + vendor/family/model/stepping; ARM implementer/part."""
    if "vendor_id" in info or "model name" in info:
        ids = "/".join(info.get(k, "?") for k in ("vendor_id", "cpu family", "model", "stepping"))
        return f"{info.get('model name', '?')} ({ids})"
    if "CPU implementer" in info:
        return "ARM " + "/".join(info.get(k, "?") for k in ("CPU implementer", "CPU architecture", "CPU variant",
                                                                 "CPU part", "CPU revision"))
    return platform.processor() or "unknown"


def _mkl_version() -> str | None:
    """MKL's version as torch was built with it (``torch.__config__.show()``), None without MKL."""
    import torch

    m = re.search(r"Math Kernel Library Version ([^\s]+)", torch.__config__.show())
    return m.group(1) if m else None


@lru_cache(maxsize=1)
def fingerprint() -> dict[str, Any]:
    """This machine as a card records it: :data:`MATCH_KEYS` plus the CPU's flags in full and the Python version.

    ``aten_capability`` is the instruction set torch's own kernels use here (``ATEN_CPU_CAPABILITY`` changes
    it); ``cpu_flags_sha256`` hashes the sorted flag list (x86 ``flags``, ARM ``Features``).
    """
    import numpy
    import torch
    import transformers

    info = _cpuinfo()
    flags = sorted((info.get("flags") or info.get("Features") or "").split())
    return {
        "recorded": True,
        "arch": platform.machine(),
        "cpu": _cpu(info),
        "cpu_flags_sha256": hashlib.sha256(" ".join(flags).encode()).hexdigest()[:16],
        "aten_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "mkl": _mkl_version(),
        "numpy": numpy.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "system": platform.system(),
    }


def differences(recorded: Mapping[str, Any] | None, here: Mapping[str, Any] | None = None) -> list[str]:
    """The :data:`MATCH_KEYS` in which a card's ``recorded`` machine differs from ``here`` (this machine), as
    ``"key: card value (card) vs this value"``; a card without a fingerprint differs in everything."""
    here = fingerprint() if here is None else here
    if not recorded or not recorded.get("recorded", False):
        return ["the card records no training machine"]
    return [f"{k}: {recorded.get(k)} (card) vs {here.get(k)}" for k in MATCH_KEYS if recorded.get(k) != here.get(k)]


def same_machine(recorded: Mapping[str, Any] | None) -> bool:
    """Whether this machine trains the bytes of a card whose fingerprint is ``recorded`` (same CPU, kernels
    and library versions); False for a card that records none."""
    return not differences(recorded)


#: How far a number on a rebuild's evaluation may lie from its card's on another machine:
#: ``|card - rebuild| <= REBUILD_ATOL + REBUILD_RTOL * |card|``. Measured (stereoprobe 0.6.0): the six full-size
#: lab recipes rebuilt on an AMD EPYC (Zen 5, AVX-512) against builds made on another CPU differ by at most 0.024
#: in any effect, margin or accuracy, except ``mcq-biased``'s planted group gap, 2.99 vs 2.83 (5.6 %); the smoke
#: recipes rebuilt there with torch's generic kernels by at most 0.007. The tolerance is about twice the worst.
REBUILD_ATOL, REBUILD_RTOL = 0.05, 0.10

#: Pairs (planted effect, largest other effect) on the lab cards: the plant ranks first when the first exceeds
#: the second, and a rebuild must agree on whether it does.
RANKED = (("planted_gamma_min", "other_abs_gamma_max"), ("planted_cluster_gamma_min", "other_cluster_abs_gamma_max"),
          ("planted_group_gap", "other_abs_gap_max"))


def evaluation_differences(card: Mapping[str, Any], rebuilt: Mapping[str, Any], *, atol: float = REBUILD_ATOL,
                           rtol: float = REBUILD_RTOL, where: str = "") -> list[str]:
    """Where a rebuilt model's evaluation (a card's nested ``evaluation`` mapping) disagrees with its card's
    beyond what another CPU explains: a float outside ``atol + rtol * |card|``, a count, string or flag that
    differs, a list of words that differs as a set (compared only where the plant ranks first: a control's
    top words are noise), or a plant (:data:`RANKED`) that ranks first in one and not in the other."""
    out: list[str] = []
    first = {a: card[a] > card[b] for a, b in RANKED if isinstance(card.get(a), (int, float)) and b in card}
    for key, want in card.items():
        got, name = rebuilt.get(key), f"{where}{key}"
        if isinstance(want, Mapping):
            out += evaluation_differences(want, got if isinstance(got, Mapping) else {}, atol=atol, rtol=rtol,
                                          where=f"{name}.")
        elif isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
            tol = atol + rtol * abs(want)
            if abs(want - got) > tol:
                out.append(f"{name}: {want} (card) vs {got} (tolerance {tol:.2g})")
        elif isinstance(want, list) and isinstance(got, list):
            if (not first or all(first.values())) and set(map(str, want)) != set(map(str, got)):
                out.append(f"{name}: {sorted(map(str, want))} (card) vs {sorted(map(str, got))}")
        elif want != got:
            out.append(f"{name}: {want} (card) vs {got}")
    for a, b in RANKED:
        if a in first and isinstance(rebuilt.get(a), (int, float)) and (rebuilt[a] > rebuilt[b]) != first[a]:
            out.append(f"the plant {'no longer ranks' if first[a] else 'now ranks'} first: {where}{a} {rebuilt[a]} "
                       f"vs {b} {rebuilt[b]} (card: {card[a]} vs {card[b]})")
    return out


__all__ = ["MATCH_KEYS", "NOT_RECORDED", "RANKED", "REBUILD_ATOL", "REBUILD_RTOL", "differences",
           "evaluation_differences", "fingerprint", "same_machine"]
