"""The fixed sets of values that options take, defined once and cheap to import (the CLI lists them in ``--help``).

>>> MODES, ENGINES
(('compat', 'clean'), ('local', 'ray'))
"""

#: ``compat`` reproduces the authors' code bit for bit; ``clean`` follows the paper (or good practice) where they differ.
MODES = ("compat", "clean")
#: The kind of a causal (decoder-only) LM, read through prompt templates by every probe (a file's config says it).
CAUSAL = "causal"

#: Model precision: ``auto`` is bf16 on a GPU that supports it and fp32 on a CPU.
PRECISIONS = ("auto", "fp32", "bf16", "fp16")

#: Device names (any case): auto (a GPU if torch sees one, else the CPU), cpu, cuda, cuda:N (GPU N), mps (Apple).
DEVICE_PATTERN = r"auto|(cpu|cuda|mps)(:\d+)?"


def is_device(value: object) -> bool:
    """Whether ``value`` names a device as :func:`stereoprobe.batching.resolve_device` takes it.

    >>> [is_device(v) for v in ("auto", "CUDA:1", "mps", "gpu", 0)]
    [True, True, True, False, False]
    """
    import re

    return isinstance(value, str) and re.fullmatch(DEVICE_PATTERN, value.strip().lower()) is not None


#: Where shards are scored: this process, or Ray Data workers (several GPUs or machines).
ENGINES = ("local", "ray")
