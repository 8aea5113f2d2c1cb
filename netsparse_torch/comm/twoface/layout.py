"""The runtime layout of one classified adjacency: the three local matrices and the transfer lists.

Built once per (adjacency, K) with two id exchanges. Receiver side: ``sync_rows``/``async_rows`` are
the global rows of ``B`` arriving by each path, sorted (hence grouped by owner); the SpMM parts index
them. Owner side: ``*_send_idx`` are the local rows to send, grouped by destination.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist

from hw_models.twoface.classify import ASYNC, LOCAL, SYNC, Stripes, coalesce_distance
from netsparse_torch.kernels import CSR
from netsparse_torch.plan.plan import request_rows


@dataclass
class Part:
    """One class of nonzeros as a CSR over its own column space, with its transpose for the backward.
    Synchronous/local parts are read row by row (row panels); the asynchronous part's transpose is its
    column-major form."""

    a: CSR
    a_t: CSR

    @classmethod
    def of(cls, m: sp.csr_matrix, device: torch.device) -> Part:
        return cls(CSR.from_scipy(m, device), CSR.from_scipy(m.T, device))


@dataclass
class Transfer:
    """One all_to_all: ``recv_counts[p]`` rows arrive from ``p``; ``send_idx`` (local rows, grouped by
    destination, ``send_counts[p]`` for ``p``) leave."""

    recv_counts: list[int]
    send_idx: torch.Tensor
    send_counts: list[int]
    group: object = None  # the process group of the exchange (None: WORLD)
    active: bool = True  # False when no rank moves a row this way: the exchange is skipped altogether

    @property
    def n_recv(self) -> int:
        return sum(self.recv_counts)


@dataclass
class Layout:
    local: Part
    sync: Part
    async_: Part
    sync_xfer: Transfer
    async_xfer: Transfer
    stripes: Stripes
    destinations: dict[int, list[int]]  # own stripe start -> ranks that receive it synchronously
    sync_rows: np.ndarray  # global ids of the rows arriving synchronously (whole stripes), sorted
    async_rows: np.ndarray  # global ids of the rows fetched asynchronously, sorted


def coalesced_rows(cols: np.ndarray, distance: int) -> np.ndarray:
    """Sorted unique ``cols`` plus every row lying between two of them at most ``distance`` apart."""
    cols = np.unique(cols)
    if cols.size < 2:
        return cols
    gaps = np.diff(cols)
    fill = np.flatnonzero((gaps > 1) & (gaps <= distance))
    extra = [np.arange(cols[i] + 1, cols[i + 1]) for i in fill]
    return np.unique(np.concatenate([cols, *extra])) if extra else cols


def build_layout(rows: sp.csr_matrix, stripes: Stripes, bounds: np.ndarray, rank: int, world_size: int,
                 k: int, width: int, group=None, device: torch.device | str = "cpu") -> Layout:
    """Split ``rows`` (global column ids) by stripe class and agree the transfers with the owners.
    Every rank of ``group`` (None: WORLD) calls it together (two rounds of id exchange). The parts and
    the send lists are put on ``device``, the device of the features they will serve."""
    bounds = np.asarray(bounds, dtype=np.int64)
    r0, r1 = int(bounds[rank]), int(bounds[rank + 1])
    nz_kind = stripes.kind[stripes.of_nnz]
    sync_ids = np.flatnonzero(stripes.kind == SYNC)
    sync_rows = (np.concatenate([np.arange(stripes.start[s], stripes.start[s] + stripes.width[s]) for s in sync_ids])
                 if sync_ids.size else np.empty(0)).astype(np.int64)
    async_rows = _async_rows(rows.indices[nz_kind == ASYNC].astype(np.int64), bounds, coalesce_distance(k))
    local = _select(rows, nz_kind == LOCAL)
    sync = _select(rows, nz_kind == SYNC)
    async_ = _select(rows, nz_kind == ASYNC)
    sync_xfer, requested = _agree(sync_rows, bounds, world_size, r0, group, device)
    async_xfer, _ = _agree(async_rows, bounds, world_size, r0, group, device)
    # A class no rank uses (e.g. no synchronous stripe anywhere, as overlap=sum often decides) would
    # still cost every call a collective's latency: all ranks agree to skip it.
    moved = torch.tensor([sync_xfer.n_recv, async_xfer.n_recv], dtype=torch.long)
    dist.all_reduce(moved, op=dist.ReduceOp.MAX, group=group)
    sync_xfer.active, async_xfer.active = bool(moved[0]), bool(moved[1])
    destinations: dict[int, list[int]] = {}
    for p, ids in enumerate(requested):
        for start in np.unique(r0 + (ids // width) * width).tolist():
            destinations.setdefault(int(start), []).append(p)
    return Layout(Part.of(_with_cols(local, local.indices - r0, r1 - r0), device),
                  Part.of(_with_cols(sync, np.searchsorted(sync_rows, sync.indices), sync_rows.size), device),
                  Part.of(_with_cols(async_, np.searchsorted(async_rows, async_.indices), async_rows.size), device),
                  sync_xfer, async_xfer, stripes, destinations, sync_rows, async_rows)


def _async_rows(cols: np.ndarray, bounds: np.ndarray, distance: int) -> np.ndarray:
    """Needed rows of the asynchronous stripes, coalesced within each owner's block."""
    cols = np.unique(cols)
    owner = np.searchsorted(bounds, cols, side="right") - 1
    pieces = [coalesced_rows(cols[owner == p], distance) for p in np.unique(owner)]
    return np.concatenate(pieces).astype(np.int64) if pieces else np.empty(0, np.int64)


def _select(rows: sp.csr_matrix, mask: np.ndarray) -> sp.csr_matrix:
    """The nonzeros of ``rows`` where ``mask`` holds, same shape and global column ids."""
    row_of = np.repeat(np.arange(rows.shape[0]), np.diff(rows.indptr))[mask]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=rows.shape[0]))])
    return sp.csr_matrix((rows.data[mask], rows.indices[mask], indptr), shape=rows.shape)


def _with_cols(m: sp.csr_matrix, cols: np.ndarray, n_cols: int) -> sp.csr_matrix:
    return sp.csr_matrix((m.data, np.asarray(cols, dtype=np.int64), m.indptr), shape=(m.shape[0], n_cols))


def _agree(want: np.ndarray, bounds: np.ndarray, world_size: int, r0: int,
           group, device: torch.device | str = "cpu") -> tuple[Transfer, list[np.ndarray]]:
    """Tell each owner which of its rows this rank receives; returns the transfer and, per peer, the
    local row ids that peer asked for."""
    recv_counts, requested, send_counts = request_rows(want, bounds, world_size, group)
    send_idx = requested - r0
    per_peer = list(torch.split(send_idx, send_counts))
    return Transfer(recv_counts, send_idx.to(device), send_counts, group), [t.numpy() for t in per_peer]
