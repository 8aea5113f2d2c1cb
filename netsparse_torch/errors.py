"""One exception family for bad input: each names the problem and what to do about it."""


class NetsparseError(Exception):
    """Base class of every user-facing error; the CLIs print it in one line and exit non-zero."""


class GraphInputError(NetsparseError):
    """The graph or its features cannot be used as given."""


class DatasetNotFoundError(NetsparseError):
    """A dataset file or directory is missing."""


class ConfigError(NetsparseError):
    """A configuration value is out of range or inconsistent."""
