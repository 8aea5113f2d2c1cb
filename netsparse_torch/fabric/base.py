"""What a fabric is to the RIG units: one call that runs a whole RIG kernel.

A kernel is one gather of ``prop_bytes``-byte properties: every rank's node has had ``begin_kernel``
and ``submit``; the fabric moves read packets to the owners and response packets back until every
rank's node is done, and returns how many rounds (collective fabric) or polls (switch fabric) it
took. How the packets travel is the fabric's own business: the collective fabric runs exchange
rounds (reads phase, responses phase), the switch fabric an event loop (a ToR cache hit answers a
read before it reaches its owner, so there are no phases). Every rank of the fabric's group calls
``run_kernel`` together.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Fabric(Protocol):
    """How NetSparse packets travel between the ranks of one group."""

    name: str
    world_size: int

    def run_kernel(self, node, prop_bytes: int) -> int:
        """Drive ``node`` (a :class:`~hw_models.units.RigNode` after ``begin_kernel``/``submit``)
        until every rank is done; returns the rounds taken. A watchdog that gives up raises
        :class:`~netsparse_torch.errors.RigTimeoutError`."""
        ...
