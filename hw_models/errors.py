"""One exception family for bad input: each names the problem and what to do about it."""


class NetsparseError(Exception):
    """Base class of every user-facing error; the CLIs print it in one line and exit non-zero."""


class GraphInputError(NetsparseError):
    """The graph or its features cannot be used as given."""


class DatasetNotFoundError(NetsparseError):
    """A dataset file or directory is missing."""


class ConfigError(NetsparseError):
    """A configuration value is out of range or inconsistent."""


class PacketError(NetsparseError, ValueError):
    """A packet or frame that breaks the NetSparse wire protocol (paper Fig. 6). The C++ units raise
    subclasses (``hw_models._C.units.MalformedPacket``, ``NPrsMismatch``, ``OversizePacket``,
    ``UnknownDestination``, ``BadSource``, ``WrongPropertySize``, ``Misrouted``); ``kind`` names what is
    wrong (the switch service counts rejected frames by it)."""

    kind = "malformed"


class UnitStateError(NetsparseError, ValueError):
    """A hardware unit called out of order (a kernel not begun, PRs still pending, time going
    backwards): a bug in its caller. The C++ units raise ``hw_models._C.units.OutOfOrder``."""


class InternalError(RuntimeError):
    """A broken invariant inside the C++ units, the simulator or the graph generators
    (``hw_models._C.units.InternalError``): a bug, not bad input, so it is no :class:`NetsparseError` and
    keeps its traceback; its message names the invariant."""


class NotBuiltError(NetsparseError, ImportError):
    """A build product is missing (the C++ extension ``hw_models._C`` or ``netsparse_torch._C``, or the gRPC
    stubs): the package was not installed with ``make install`` / ``pip install``."""

    @classmethod
    def extension(cls, name: str) -> "NotBuiltError":
        """The error for a C++ extension that is missing or does not load (``hw_models._C``,
        ``netsparse_torch._C``)."""
        return cls(f"the C++ extension {name} is not built: run `make install` "
                   "(or `python setup.py build_ext --inplace`)")
