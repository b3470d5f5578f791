"""The fixed sets of values that options take, defined once and cheap to import (the CLI lists them in ``--help``).

>>> MODES, ENGINES
(('compat', 'clean'), ('local', 'ray'))
"""

#: ``compat`` reproduces the authors' code bit for bit; ``clean`` follows the paper (or good practice) where they differ.
MODES = ("compat", "clean")

#: Model precision: ``auto`` is bf16 on a GPU that supports it and fp32 on a CPU.
PRECISIONS = ("auto", "fp32", "bf16", "fp16")

#: Where shards are scored: this process, or Ray Data workers (several GPUs or machines).
ENGINES = ("local", "ray")
