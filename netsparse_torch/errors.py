"""The project's errors, under the name users catch them by (``netsparse_torch.errors.ConfigError``).

Those that the hardware models and their C++ units raise too are defined in :mod:`hw_models.errors`,
the ground floor, and named here; those that only the training side raises (the RIG watchdog, a lost
peer, a partitioned dataset, a report tool's input) are defined here, where they are raised."""

from hw_models.errors import (
    ConfigError,
    DatasetNotFoundError,
    GraphInputError,
    NetsparseError,
    NotBuiltError,
    PacketError,
    UnitStateError,
)


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


__all__ = ["ConfigError", "DatasetNotFoundError", "GraphInputError", "NetsparseError", "NotBuiltError", "PacketError",
           "PartitionedDatasetError", "PeerLostError", "ReportInputError", "RigTimeoutError", "UnitStateError"]
