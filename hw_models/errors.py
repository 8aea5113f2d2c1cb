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


class RigTimeoutError(NetsparseError, TimeoutError):
    """A RIG command's watchdog (``rig.timeout_s``, paper §7.1) expired with responses missing.

    ``peers`` are the ranks whose responses are missing (read PRs sent minus responses received per
    owner; without the ranks' row bounds, the ranks the kernel's reads went to), ``switch`` the switch
    this rank is attached to (when a switch fabric carries the packets); the message names both."""

    def __init__(self, msg: str, peers: list[int] = (), switch: str | None = None):
        super().__init__(msg)
        self.peers, self.switch = list(peers), switch


class PeerLostError(NetsparseError):
    """A process of a distributed job died or stopped answering while the others waited on it; ``ranks``
    are the ranks lost, and the message names them and where the completed epochs are."""

    def __init__(self, msg: str, ranks: list[int] = ()):
        super().__init__(msg)
        self.ranks = list(ranks)


class PartitionedDatasetError(GraphInputError):
    """A partitioned dataset directory is inconsistent: a truncated or altered shard file, a checksum
    mismatch, or a manifest of another format version."""


class ReportInputError(NetsparseError):
    """A file or directory given to a report tool (``netsparse-compare``) holds no usable report."""


class NotBuiltError(NetsparseError, ImportError):
    """A build product is missing (the C++ extension ``hw_models._C`` or ``netsparse_torch._C``, or the gRPC
    stubs): the package was not installed with ``make install`` / ``pip install``."""

    @classmethod
    def extension(cls, name: str) -> "NotBuiltError":
        """The error for a C++ extension that is missing or does not load (``hw_models._C``,
        ``netsparse_torch._C``)."""
        return cls(f"the C++ extension {name} is not built: run `make install` "
                   "(or `python setup.py build_ext --inplace`)")
