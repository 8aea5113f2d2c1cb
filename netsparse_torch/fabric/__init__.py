"""How NetSparse packets travel between ranks.

``collective`` (the embedded default) carries each rank's per-destination packet bytes with
``torch.distributed`` all_to_all; ``switch`` (a later issue) sends them through the gRPC switch service.
"""

from netsparse_torch.fabric.collective import CollectiveFabric

FABRICS = {"collective": CollectiveFabric}

__all__ = ["FABRICS", "CollectiveFabric"]
