"""How NetSparse packets travel between ranks.

``collective`` (the embedded default) carries each rank's per-destination packet bytes with
``torch.distributed`` all_to_all; ``switch`` sends them through the gRPC switch service (fabric/switch.py),
run event-driven per kernel (``run_kernel``); fabric/lifecycle.py starts the switches and attaches ranks.
"""

from netsparse_torch.fabric.collective import CollectiveFabric


def _switch(world_size: int):
    """This rank's SwitchFabric (attached by lifecycle.attach_rank; imported lazily: grpc is heavy)."""
    from netsparse_torch.fabric.lifecycle import attached_fabric

    return attached_fabric(world_size)


FABRICS = {"collective": CollectiveFabric, "switch": _switch}

__all__ = ["FABRICS", "CollectiveFabric"]
