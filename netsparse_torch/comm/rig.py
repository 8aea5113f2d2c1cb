"""Running a node's RIG units over a fabric: the halo gather of ``strategy=netsparse`` and the public
:func:`rig` operation (``netsparse_torch.rig``).

A gather is one RIG kernel per column chunk that fits a response PR; each kernel loads the node
(``begin_kernel``, ``submit``) and hands it to the fabric (:class:`~netsparse_torch.fabric.base.Fabric`),
which moves the packets until every rank is done. The units read and write host memory: :func:`rig`
stages features that live on a GPU through host buffers.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from hw_models import unit_args
from hw_models.units import CONCAT_HEADER_BYTES, PR_HEADER_BYTES, RigNode
from netsparse_torch.errors import RigTimeoutError
from netsparse_torch.fabric import CollectiveFabric, Fabric


def max_columns(element_size: int, mtu: int, upper_bytes: int) -> int:
    """Columns of ``element_size`` bytes that fit one response PR of a packet of ``mtu`` bytes: a property
    must fit one (no fragmentation in the protocol), so wider rows are gathered as several kernels over
    column chunks."""
    return (mtu - upper_bytes - CONCAT_HEADER_BYTES - PR_HEADER_BYTES) // element_size


def run_kernel(node: RigNode, fabric: Fabric, local: torch.Tensor, idxs: np.ndarray, slots: np.ndarray,
               halo: torch.Tensor) -> int:
    """Gather ``halo[slots[i]] = row idxs[i]`` for every remote idx; returns the number of rounds.

    ``local`` is this rank's rows (C-contiguous), ``halo`` a C-contiguous buffer of the same dtype
    and width; both are viewed as raw bytes, so the copy is bit-exact."""
    node.begin_kernel(local.size(1) * local.element_size(), halo.view(torch.uint8).numpy(),
                      local.view(torch.uint8).numpy())
    node.submit(idxs, slots)
    try:
        return fabric.run_kernel(node, local.size(1) * local.element_size())
    except RigTimeoutError:
        halo.zero_()  # the watchdog discards the partial halo: no half-gathered rows reach the SpMM
        raise


def gather_columns(node: RigNode, fabric: Fabric, x: torch.Tensor, idxs: np.ndarray, slots: np.ndarray,
                   n_slots: int, out: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
    """Gather every column chunk of ``x`` (one kernel per chunk that fits a response PR)."""
    out = x.new_empty(n_slots, x.size(1)) if out is None else out
    step = max_columns(x.element_size(), node.mtu, node.upper_bytes)
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


def rig(x_local: torch.Tensor, idxs: torch.Tensor, row_bounds, *, group=None, fabric: Fabric | None = None,
        hardware=None, **options) -> torch.futures.Future:
    """Remote indexed gather over a row-partitioned matrix: ``out[i] = X[idxs[i]]``.

    ``X`` is split in contiguous row blocks, rank ``p`` of ``group`` (None: WORLD) holding rows
    ``[row_bounds[p], row_bounds[p+1])`` as ``x_local``. Every rank of the group calls it together.
    Remote rows travel as NetSparse packets through the RIG units, built from ``hardware`` (a
    :class:`~hw_models.params.HardwareParams`; None: NetSparse Table 5, :func:`hw_models.unit_args.rig_node`)
    with single settings replaced by ``options`` (RigNode's keywords, e.g. ``filter``, ``coalesce``,
    ``pending_capacity``, ``delay_cycles``) over ``fabric`` (default:
    a :class:`~netsparse_torch.fabric.CollectiveFabric` on ``group``). The returned future is
    already complete; its value is ``out`` (on ``x_local``'s device) and ``out.rig_stats`` holds the
node's counters.
    """
    rank, ws = dist.get_rank(group), dist.get_world_size(group)
    bounds = [int(b) for b in row_bounds]
    if len(bounds) != ws + 1 or bounds[rank + 1] - bounds[rank] != x_local.size(0):
        raise ValueError(f"rig: row_bounds must have {ws + 1} entries and give this rank {x_local.size(0)} rows")
    ids = idxs.to("cpu", torch.long).numpy()
    if ids.size and (ids.min() < 0 or ids.max() >= bounds[-1]):
        raise ValueError(f"rig: an idx is outside [0, {bounds[-1]})")
    r0, r1 = bounds[rank], bounds[rank + 1]
    remote = (ids < r0) | (ids >= r1)
    uniq, inverse = np.unique(ids[remote], return_inverse=True)
    slots = np.full(ids.size, -1, dtype=np.int64)
    slots[remote] = inverse
    node = RigNode(rank, bounds, **unit_args.rig_node(hardware, **options))
    x = x_local.detach().to("cpu").contiguous()  # the RIG units read host memory (NetSparse §5)
    halo, _ = gather_columns(node, fabric or CollectiveFabric(group), x, ids, slots, uniq.size)
    out = x.new_empty(ids.size, x.size(1))
    mask = torch.from_numpy(remote)
    out[~mask] = x[torch.from_numpy(ids[~remote] - r0)]
    out[mask] = halo[torch.from_numpy(inverse)]
    out = out.to(x_local.device)
    out.rig_stats = node.stats()
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(out)
    return fut
