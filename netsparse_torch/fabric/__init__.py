"""How NetSparse packets travel between ranks (a :class:`Fabric` runs one whole RIG kernel).

``collective`` (:class:`CollectiveFabric`, the embedded default) carries each rank's per-destination
packet bytes with ``torch.distributed`` all_to_all rounds; ``switch`` (fabric/switched.py, imported on
its own: grpc is heavy) sends them through the gRPC switch service, event-driven. The run layer
(netsparse_torch/run/switch_launcher.py) starts and configures the switches, attaches each rank to its
ToR and hands the rank's SwitchFabric to the netsparse strategy.
"""

from netsparse_torch.fabric.base import Fabric
from netsparse_torch.fabric.collective import CollectiveFabric

__all__ = ["CollectiveFabric", "Fabric"]
