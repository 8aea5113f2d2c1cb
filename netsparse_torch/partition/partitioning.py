"""A partition of a graph's nodes into contiguous blocks of a (possibly new) numbering.

``rows`` and ``nnz`` keep the original numbering and cut it into blocks (:mod:`hw_models.bounds`); ``metis``
renumbers the nodes so that each METIS part is one block (:mod:`.metis`). Either way part ``p`` owns
the rows ``[bounds[p], bounds[p+1])`` of the new numbering and ``order[new] = original`` id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from hw_models.bounds import ROW_MODES, row_bounds
from netsparse_torch.errors import ConfigError

PARTITIONERS = (*ROW_MODES, "metis")


@dataclass(frozen=True, eq=False)
class Partitioning:
    """``mode``, ``bounds`` (parts + 1 ints, new numbering), ``order`` (new id -> original id, ``None``
    for the identity) and the partitioner's ``settings`` (recorded in a partitioned dataset's manifest)."""

    mode: str
    bounds: np.ndarray
    order: np.ndarray | None = None
    settings: dict = field(default_factory=dict)

    @property
    def parts(self) -> int:
        return len(self.bounds) - 1

    @property
    def num_nodes(self) -> int:
        return int(self.bounds[-1])

    def block(self, part: int) -> tuple[int, int]:
        return int(self.bounds[part]), int(self.bounds[part + 1])

    def node_ids(self, part: int) -> np.ndarray:
        """Original ids of part ``part``'s rows, in row order."""
        r0, r1 = self.block(part)
        return np.arange(r0, r1, dtype=np.int64) if self.order is None else self.order[r0:r1]

    def new_ids(self) -> np.ndarray | None:
        """``new_ids[original] = new`` id (``None`` for the identity)."""
        if self.order is None:
            return None
        inverse = np.empty_like(self.order)
        inverse[self.order] = np.arange(self.order.size, dtype=np.int64)
        return inverse


def partition_graph(adj: sp.csr_matrix, parts: int, mode: str = "rows", seed: int = 0,
                    weights: str = "nnz") -> Partitioning:
    """Partition the square adjacency ``adj`` into ``parts`` parts (``seed`` and ``weights`` are
    METIS's; see :mod:`netsparse_torch.partition.metis`)."""
    if mode not in PARTITIONERS:
        raise ConfigError(f"unknown partition {mode!r}; choose one of {', '.join(PARTITIONERS)}")
    n = adj.shape[0]
    if mode in ROW_MODES:
        return Partitioning(mode, row_bounds(n, parts, mode, adj.indptr))
    from netsparse_torch.partition.metis import contiguous_order, metis_parts

    membership = metis_parts(adj, parts, seed=seed, weights=weights)
    order, bounds = contiguous_order(membership, parts)
    settings = {"seed": int(seed), "weights": weights}
    return Partitioning(mode, bounds, None if parts == 1 else order, settings)  # one part: nothing to renumber


def partition_settings(cfg) -> dict:
    """METIS's settings from ``cfg.metis`` (seed, weights); ignored by rows and nnz."""
    metis = cfg.get("metis") or {}
    return {"seed": int(metis.get("seed", 0)), "weights": str(metis.get("weights", "nnz"))}
