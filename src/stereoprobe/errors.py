"""One exception type for every bad input: its message names the culprit and the fix."""


class StereoprobeError(Exception):
    """A user-facing error. The CLI prints its message (one sentence) and exits with status 2."""


class StereoprobeWarning(UserWarning):
    """A risky choice the user made on purpose (e.g. loading pickle weights); the CLI prints ``warning: …``."""


class WordListError(StereoprobeError):
    """A malformed word-list line; the message starts with ``file:line``."""


class ModelLoadError(StereoprobeError):
    """A model id or folder that cannot be loaded as the requested head type."""


class StoreError(StereoprobeError):
    """A score shard that is corrupted or does not match what it claims to hold."""


class MetricsError(StereoprobeError):
    """Scores that cannot be turned into metrics (e.g. a missing swapped partner)."""


class CorpusError(StereoprobeError):
    """A training-corpus source (e.g. the WordNet database files) that is missing or unreadable."""


class ProjectionError(StereoprobeError):
    """Directions or word vectors that cannot define a bias subspace (missing words, rank deficiency, …)."""
