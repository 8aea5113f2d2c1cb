"""Driving one node's RIG units through a fabric: the round loop shared by ``strategy=netsparse``
and the backend's ``rig()`` operation.

Per round every rank pumps read packets out of its client units, the fabric delivers them, the
owners' server units answer with response packets, the fabric delivers those, and the client units
write the properties into the halo buffer. Rounds repeat until every rank's commands are answered:
a unit stalls when its Pending PR Table is full, so a large halo takes several rounds.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from netsparse_torch.errors import RigTimeoutError
from netsparse_torch.units import DEFAULT_MTU, DEFAULT_UPPER_BYTES, RigNode

# A property must fit one response PR (no fragmentation in the protocol): wider rows are gathered
# as several kernels over column chunks.
RESPONSE_OVERHEAD = DEFAULT_UPPER_BYTES + 14 + 18


def max_columns(element_size: int, mtu: int = DEFAULT_MTU) -> int:
    return (mtu - RESPONSE_OVERHEAD) // element_size


def _all_done(flag: bool, group=None) -> bool:
    t = torch.tensor([1 if flag else 0], dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.MIN, group=group)
    return bool(t.item())


def _as_bytes(per_dest: dict[int, bytes], world_size: int) -> list[bytes]:
    return [per_dest.get(d, b"") for d in range(world_size)]


def run_kernel(node: RigNode, fabric, local: torch.Tensor, idxs: np.ndarray, slots: np.ndarray,
               halo: torch.Tensor) -> int:
    """Gather ``halo[slots[i]] = row idxs[i]`` for every remote idx; returns the number of rounds.

    ``local`` is this rank's rows (C-contiguous), ``halo`` a C-contiguous buffer of the same dtype
    and width; both are viewed as raw bytes, so the copy is bit-exact."""
    ws = fabric.world_size
    node.begin_kernel(local.size(1) * local.element_size(), halo.view(torch.uint8).numpy(),
                      local.view(torch.uint8).numpy())
    node.submit(idxs, slots)
    if hasattr(fabric, "run_kernel"):  # event-driven fabrics (switch): a ToR cache hit breaks the rounds
        try:
            return fabric.run_kernel(node, local.size(1) * local.element_size())
        except RigTimeoutError:
            halo.zero_()  # the watchdog discards the partial halo: no half-gathered rows reach the SpMM
            raise
    rounds = 0
    while True:
        reads = fabric.exchange(_as_bytes(node.pump_reads(), ws))
        responses = fabric.exchange(_as_bytes(node.serve(b"".join(r.tobytes() for r in reads)), ws))
        node.absorb(b"".join(r.tobytes() for r in responses))
        rounds += 1
        if _all_done(node.done(), fabric.group):
            return rounds


def gather_columns(node: RigNode, fabric, x: torch.Tensor, idxs: np.ndarray, slots: np.ndarray,
                   n_slots: int, out: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
    """Gather every column chunk of ``x`` (one kernel per chunk that fits a response PR)."""
    out = x.new_empty(n_slots, x.size(1)) if out is None else out
    step = max_columns(x.element_size())
    rounds = 0
    for c0 in range(0, x.size(1), step):
        c1 = min(c0 + step, x.size(1))
        whole = c0 == 0 and c1 == x.size(1)
        local = x.contiguous() if whole else x[:, c0:c1].contiguous()
        halo = out if whole and out.is_contiguous() else x.new_empty(n_slots, c1 - c0)
        rounds += run_kernel(node, fabric, local, idxs, slots, halo)
        if halo is not out:
            out[:, c0:c1] = halo
    return out, rounds


def rig(x_local: torch.Tensor, idxs: torch.Tensor, row_bounds, *, group=None, **options) -> torch.futures.Future:
    """Remote indexed gather over a row-partitioned matrix: ``out[i] = X[idxs[i]]``.

    ``X`` is split in contiguous row blocks, rank ``p`` of ``group`` holding rows
    ``[row_bounds[p], row_bounds[p+1])`` as ``x_local``. Every rank of the group calls it together.
    Remote rows travel as NetSparse packets through the RIG units (``options``: RigNode's keywords,
    e.g. ``filter``, ``coalesce``, ``pending_capacity``, ``delay_cycles``). gloo collectives block, so
    the returned future is already complete; its value is ``out`` and ``out.rig_stats`` holds the
    node's counters.
    """
    from netsparse_torch.fabric import CollectiveFabric
    from netsparse_torch.units import RigNode

    rank, ws = dist.get_rank(group), dist.get_world_size(group)
    bounds = [int(b) for b in row_bounds]
    if len(bounds) != ws + 1 or bounds[rank + 1] - bounds[rank] != x_local.size(0):
        raise ValueError(f"rig: row_bounds must have {ws + 1} entries and give this rank {x_local.size(0)} rows")
    ids = idxs.to(torch.long).numpy()
    if ids.size and (ids.min() < 0 or ids.max() >= bounds[-1]):
        raise ValueError(f"rig: an idx is outside [0, {bounds[-1]})")
    r0, r1 = bounds[rank], bounds[rank + 1]
    remote = (ids < r0) | (ids >= r1)
    uniq, inverse = np.unique(ids[remote], return_inverse=True)
    slots = np.full(ids.size, -1, dtype=np.int64)
    slots[remote] = inverse
    node = RigNode(rank, bounds, **options)
    x = x_local.detach().contiguous()
    halo, _ = gather_columns(node, CollectiveFabric(ws, group), x, ids, slots, uniq.size)
    out = x.new_empty(ids.size, x.size(1))
    mask = torch.from_numpy(remote)
    out[~mask] = x[torch.from_numpy(ids[~remote] - r0)]
    out[mask] = halo[torch.from_numpy(inverse)]
    out.rig_stats = node.stats()
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(out)
    return fut
