"""Two-Face preprocessing (Two-Face §4.1-4.2, §5.1): megatiles, sparse stripes and their classes.

Rank ``i`` owns rows ``bounds[i]:bounds[i+1]`` of ``A``; its megatile ``(i, j)`` is those rows times
the columns owned by rank ``j``. Each megatile is cut into stripes of ``W`` columns (the last one of
a megatile may be narrower). Stripes of the diagonal megatile are *local-input*; every other non-empty
stripe is *synchronous* (the owner sends the whole dense stripe of ``B``) or *asynchronous* (the
reader fetches only the rows it needs and runs a one-sided SpMM on them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from hw_models.errors import ConfigError
from hw_models.twoface.cost import Coefficients, check_overlap

LOCAL, SYNC, ASYNC = 0, 1, 2
KIND_NAMES = {LOCAL: "local", SYNC: "sync", ASYNC: "async"}


def default_stripe_width(num_nodes: int, world_size: int) -> int:
    """Own assumption: the power of two closest to ``(N/p)/128`` (about 128 stripes per megatile),
    clamped to [1, 4096], so W scales with the matrix as Two-Face §6.2 asks."""
    target = max(1.0, num_nodes / max(1, world_size) / 128)
    return int(min(4096, 2 ** round(np.log2(target))))


def check_width(w: int) -> int:
    if not isinstance(w, int | np.integer) or isinstance(w, bool) or w < 1:
        raise ConfigError(f"Two-Face stripe width W must be an integer >= 1, got {w!r}")
    return int(w)


def coalesce_distance(k: int) -> int:
    """Rows at most this far apart are fetched as one range: (127/K)+1 (Two-Face §5.2)."""
    return 127 // k + 1


@dataclass
class Stripes:
    """The non-empty stripes of one rank's rows: per stripe its owner rank, first column, width,
    nonzeros ``n_i``, distinct columns ``l_i`` and class; ``of_nnz`` maps each nonzero to its stripe."""

    owner: np.ndarray
    start: np.ndarray
    width: np.ndarray
    nnz: np.ndarray
    rows: np.ndarray
    kind: np.ndarray
    of_nnz: np.ndarray
    rank: int

    def count(self, kind: int) -> int:
        return int((self.kind == kind).sum())

    def counts(self) -> dict[str, int]:
        return {f"{name}_stripes": self.count(k) for k, name in KIND_NAMES.items()}


def find_stripes(rows: sp.csr_matrix, bounds: np.ndarray, rank: int, width: int) -> Stripes:
    """Cut this rank's rows (global column ids) into megatiles and stripes of ``width`` columns."""
    width = check_width(width)
    bounds = np.asarray(bounds, dtype=np.int64)
    cols = rows.indices.astype(np.int64)
    owner = np.searchsorted(bounds, cols, side="right") - 1
    per_owner = -(-np.diff(bounds) // width)  # stripes per megatile, ceil
    offset = np.concatenate([[0], np.cumsum(per_owner)])
    sid = offset[owner] + (cols - bounds[owner]) // width
    n_all = np.bincount(sid, minlength=int(offset[-1]))
    l_all = np.bincount(_unique_col_stripes(cols, sid), minlength=int(offset[-1]))
    present = np.flatnonzero(n_all)
    s_owner = np.searchsorted(offset, present, side="right") - 1
    s_start = bounds[s_owner] + (present - offset[s_owner]) * width
    s_width = np.minimum(width, bounds[s_owner + 1] - s_start)
    kind = np.where(s_owner == rank, LOCAL, SYNC)
    remap = np.full(int(offset[-1]), -1, dtype=np.int64)
    remap[present] = np.arange(present.size)
    return Stripes(s_owner, s_start, s_width, n_all[present], l_all[present], kind, remap[sid], rank)


def _unique_col_stripes(cols: np.ndarray, sid: np.ndarray) -> np.ndarray:
    _, first = np.unique(cols, return_index=True)
    return sid[first]


def classify(stripes: Stripes, k: int, coeffs: Coefficients, w: int,
             memory_limit_bytes: float | None = None, value_bytes: int = 4, overlap: str = "max") -> Stripes:
    """Set ``stripes.kind`` for the remote stripes (Two-Face §5.1) and return the stripes.

    A remote stripe costs ``s = beta_S K W + alpha_S`` synchronously and
    ``a_i = K(beta_A l_i + gamma_A n_i) + alpha_A + kappa_A`` asynchronously. The node's time is
    ``max(Comm_S, Comm_A)`` where the channels overlap, ``Comm_S + Comm_A`` where they do not:

    - ``overlap="max"`` (the paper's rule): ``z_i = a_i + s``; sorted by ``z_i`` ascending, the largest
      ``r`` with ``S_T s >= sum_{i<r} z_i`` stripes become asynchronous, the rest synchronous (``S_T`` =
      number of non-empty remote stripes). That is ``Comm_S`` of the stripes left synchronous
      ``>= Comm_A`` of those moved: the two channels balanced.
    - ``overlap="sum"``: the sum is minimised stripe by stripe: asynchronous exactly when ``a_i < s``.

    Memory guard: while the dense stripes received synchronously exceed ``memory_limit_bytes``, the
    synchronous stripe with the smallest ``z_i`` becomes asynchronous.
    """
    c = coeffs
    check_overlap(overlap)
    remote = np.flatnonzero(stripes.owner != stripes.rank)
    sync_cost = c.beta_s * k * w + c.alpha_s
    async_cost = k * (c.beta_a * stripes.rows[remote] + c.gamma_a * stripes.nnz[remote]) + c.alpha_a + c.kappa_a
    z = async_cost + sync_cost
    order = np.argsort(z, kind="stable")
    kind = stripes.kind.copy()
    kind[remote] = SYNC
    if overlap == "max":
        budget = remote.size * sync_cost
        r = int(np.searchsorted(np.cumsum(z[order]), budget * (1 + 1e-12), side="right"))
        kind[remote[order[:r]]] = ASYNC
    else:
        kind[remote[async_cost < sync_cost]] = ASYNC
    if memory_limit_bytes is not None:
        still_sync = order[kind[remote[order]] == SYNC]  # ascending z
        sync_bytes = stripes.width[remote[still_sync]] * k * value_bytes
        over = np.cumsum(sync_bytes[::-1])[::-1] > memory_limit_bytes  # suffix sums: bytes if kept sync
        kind[remote[still_sync][over]] = ASYNC
    stripes.kind = kind
    return stripes
