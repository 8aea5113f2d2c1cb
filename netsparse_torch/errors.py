"""The project's errors, under the name users catch them by (``netsparse_torch.errors.ConfigError``).

They are defined in :mod:`hw_models.errors`, the ground floor, because the hardware models and their
C++ units raise them too; this module only names them for the training side."""

from hw_models.errors import (
    ConfigError,
    DatasetNotFoundError,
    GraphInputError,
    NetsparseError,
    NotBuiltError,
    PacketError,
    PartitionedDatasetError,
    PeerLostError,
    ReportInputError,
    RigTimeoutError,
    UnitStateError,
)

__all__ = ["ConfigError", "DatasetNotFoundError", "GraphInputError", "NetsparseError", "NotBuiltError", "PacketError",
           "PartitionedDatasetError", "PeerLostError", "ReportInputError", "RigTimeoutError", "UnitStateError"]
