"""Halo discovery and the send lists, with the request ids exchanged once at plan time."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist

from hw_models.bounds import owner_of
from hw_models.pattern import sorted_unique
from netsparse_torch.kernels import CSR


@dataclass
class Plan:
    """What one rank reads from and sends to every peer.

    ``halo_ids`` are the sorted unique remote column ids this rank's rows touch; being sorted and the
    partition contiguous, they are grouped by owner, ``recv_counts[p]`` of them from rank ``p``. Halo
    slot ``s`` holds row ``halo_ids[s]``. ``send_idx`` lists, grouped by destination rank, the local
    row indices each peer asked for (``send_counts[p]`` of them for rank ``p``).
    """

    rank: int
    world_size: int
    bounds: np.ndarray
    halo_ids: np.ndarray
    recv_counts: list[int]
    send_idx: torch.Tensor
    send_counts: list[int]
    rig_idxs: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @property
    def device(self) -> torch.device:
        """Where the send list lives: the device of the features it indexes."""
        return self.send_idx.device

    def to(self, device: torch.device | str) -> Plan:
        """The same plan with its index tensor on ``device`` (the id arrays stay host-side numpy: the
        plan's bookkeeping and the RIG units read them there)."""
        return replace(self, send_idx=self.send_idx.to(device))

    @property
    def row_start(self) -> int:
        return int(self.bounds[self.rank])

    @property
    def n_local(self) -> int:
        return int(self.bounds[self.rank + 1] - self.bounds[self.rank])

    @property
    def n_halo(self) -> int:
        return int(self.halo_ids.size)

    @property
    def num_nodes(self) -> int:
        return int(self.bounds[-1])

    def block_sizes(self) -> list[int]:
        return np.diff(self.bounds).astype(int).tolist()

    def rig_slots(self) -> np.ndarray:
        """Halo slot of each idx of ``rig_idxs`` (-1 for locally owned idxs)."""
        slots = self.combined_columns(self.rig_idxs) - self.n_local
        slots[slots < 0] = -1
        return slots

    def combined_columns(self, cols: np.ndarray) -> np.ndarray:
        """Map global column ids to ``[0, n_local)`` for own rows, ``n_local + slot`` for halo rows."""
        cols = np.asarray(cols, dtype=np.int64)
        local = (cols >= self.row_start) & (cols < self.row_start + self.n_local)
        out = np.empty_like(cols)
        out[local] = cols[local] - self.row_start
        out[~local] = self.n_local + np.searchsorted(self.halo_ids, cols[~local])
        return out

    def localize(self, rows: sp.csr_matrix, space: str = "combined") -> CSR:
        """This rank's rows as a :class:`CSR` whose columns index the gathered matrix of ``space``
        (``combined`` = [own rows; halo], ``global`` = all N rows)."""
        crow = torch.from_numpy(rows.indptr.astype(np.int64))
        val = torch.from_numpy(rows.data.astype(np.float32))
        if space == "global":
            return CSR(crow, torch.from_numpy(rows.indices.astype(np.int64)), val, self.num_nodes)
        col = torch.from_numpy(self.combined_columns(rows.indices))
        return CSR(crow, col, val, self.n_local + self.n_halo)


def request_rows(want: np.ndarray, bounds: np.ndarray, world_size: int,
                 group=None) -> tuple[list[int], torch.Tensor, list[int]]:
    """Tell each owner which of its rows this rank wants: ``want`` (global ids, int64, grouped by owner
    in rank order) goes out with one all_to_all of counts and one of ids. Every rank of ``group``
    calls it together. Returns ``recv_counts`` (rows this rank gets from each owner), ``requested``
    (the global ids the peers asked this rank for, in peer order) and ``send_counts``."""
    recv_counts = np.bincount(owner_of(want, bounds), minlength=world_size).astype(int).tolist()
    counts_out = torch.empty(world_size, dtype=torch.long)
    dist.all_to_all_single(counts_out, torch.tensor(recv_counts, dtype=torch.long), group=group)
    send_counts = counts_out.tolist()
    requested = torch.empty(sum(send_counts), dtype=torch.long)
    dist.all_to_all_single(requested, torch.from_numpy(np.ascontiguousarray(want, dtype=np.int64)),
                           send_counts, recv_counts, group=group)
    return recv_counts, requested, send_counts


def build_plan(rows: sp.csr_matrix, bounds: np.ndarray, rank: int, world_size: int, group=None) -> Plan:
    """Build the plan from this rank's rows (global column ids). With ``world_size > 1`` every rank of
    ``group`` (None: WORLD; ``rank`` and ``world_size`` are this rank's in it) must call it together:
    the request ids are exchanged by :func:`request_rows`."""
    r0, r1 = int(bounds[rank]), int(bounds[rank + 1])
    cols = sorted_unique(rows.indices)
    halo = cols[(cols < r0) | (cols >= r1)].astype(np.int64)
    rig_idxs = rows.indices.astype(np.int64)
    if world_size == 1:
        recv_counts = np.bincount(owner_of(halo, bounds), minlength=1).astype(int).tolist()
        return Plan(rank, 1, bounds, halo, recv_counts, torch.empty(0, dtype=torch.long), [0], rig_idxs)
    recv_counts, requested, send_counts = request_rows(halo, bounds, world_size, group)
    return Plan(rank, world_size, bounds, halo, recv_counts, requested - r0, send_counts, rig_idxs)
