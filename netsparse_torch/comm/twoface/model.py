"""Two-Face modeled on the target cluster: the same stripe classification as the runtime, driven by
coefficients derived from the cluster's bandwidths and latencies.

Own assumptions (the Two-Face paper measures its coefficients, it does not derive them):
- synchronous transfer: ``beta_S`` = value bytes / link line rate, ``alpha_S`` = the leaf-spine
  worst path (4 links, 3 switches) one way;
- asynchronous transfer: the Two-Face Table 3 ratios ``beta_A/beta_S`` (18.5) and ``alpha_A/alpha_S``
  (7.5) applied to those, because one-sided gets of a few rows run far below line rate;
- ``gamma_A``, ``kappa_A``: Two-Face Table 3 (CPU one-sided SpMM).
Per node, synchronous and asynchronous transfers overlap (Two-Face §5.1), so the node's communication
time is ``max(Comm_S, Comm_A)``; the cluster's is the slowest node's.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from netsparse_torch.comm.twoface.classify import ASYNC, LOCAL, SYNC, Stripes, classify, default_stripe_width
from netsparse_torch.comm.twoface.cost import Coefficients


def cluster_coefficients(link_bytes_per_s: float, link_latency_s: float, switch_latency_s: float,
                         value_bytes: int = 4) -> Coefficients:
    t3 = Coefficients()
    beta_s = value_bytes / link_bytes_per_s
    alpha_s = 4 * link_latency_s + 3 * switch_latency_s
    return Coefficients(beta_s=beta_s, alpha_s=alpha_s, beta_a=beta_s * t3.beta_a / t3.beta_s,
                        alpha_a=alpha_s * t3.alpha_a / t3.alpha_s, gamma_a=t3.gamma_a, kappa_a=t3.kappa_a)


def rank_columns(adj: sp.csr_matrix, bounds: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per rank: its distinct column ids (ascending) and how many of its nonzeros each has. They do not
    depend on the stripe width, so a sweep over widths computes them once."""
    out = []
    for rank in range(len(bounds) - 1):
        lo, hi = adj.indptr[int(bounds[rank])], adj.indptr[int(bounds[rank + 1])]
        cols, counts = np.unique(adj.indices[lo:hi], return_counts=True)
        out.append((cols.astype(np.int64), counts))
    return out


def column_stripes(cols: np.ndarray, counts: np.ndarray, bounds: np.ndarray, rank: int, width: int) -> Stripes:
    """The stripes :func:`~netsparse_torch.comm.twoface.classify.find_stripes` finds, from the rank's
    distinct columns (:func:`rank_columns`) in O(distinct columns); ``of_nnz`` is left empty (the model
    never maps nonzeros)."""
    bounds = np.asarray(bounds, dtype=np.int64)
    owner = np.searchsorted(bounds, cols, side="right") - 1
    offset = np.concatenate([[0], np.cumsum(-(-np.diff(bounds) // width))])
    sid = offset[owner] + (cols - bounds[owner]) // width  # ascending, since cols are
    first = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]]) if sid.size else np.zeros(0, np.int64)
    present = sid[first]
    s_owner = owner[first]
    s_start = bounds[s_owner] + (present - offset[s_owner]) * width
    s_width = np.minimum(width, bounds[s_owner + 1] - s_start)
    nnz = np.add.reduceat(counts, first) if first.size else np.zeros(0, np.int64)
    rows = np.diff(np.r_[first, sid.size])
    kind = np.where(s_owner == rank, LOCAL, SYNC)
    return Stripes(s_owner, s_start, s_width, nnz.astype(np.int64), rows, kind, np.zeros(0, np.int64), rank)


def model_two_face(adj: sp.csr_matrix, bounds: np.ndarray, k: int, coeffs: Coefficients,
                   width: int | None = None, columns: list | None = None) -> dict:
    """``{comm_time_s, sync_stripes, async_stripes, local_stripes}`` of one SpMM ``adj x B`` (B is N x k)
    row-partitioned by ``bounds``; stripe counts are summed over nodes. ``columns`` =
    :func:`rank_columns` when the caller has them already."""
    p = len(bounds) - 1
    w = width or default_stripe_width(adj.shape[0], p)
    c = coeffs
    columns = columns if columns is not None else rank_columns(adj, bounds)
    worst, totals = 0.0, {"sync_stripes": 0, "async_stripes": 0, "local_stripes": 0}
    for rank in range(p):
        s = classify(column_stripes(*columns[rank], bounds, rank, w), k, c, w)
        sync, asy = s.kind == SYNC, s.kind == ASYNC
        comm_s = float((c.beta_s * k * s.width[sync] + c.alpha_s).sum())
        comm_a = c.beta_a * k * float(s.rows[asy].sum()) + c.alpha_a * int(asy.sum())
        worst = max(worst, comm_s, comm_a)
        for name, n in s.counts().items():
            totals[name] += n
    return {"comm_time_s": worst, **totals, "stripe_width": w}


def model_on_cluster(adj: sp.csr_matrix, bounds: np.ndarray, k: int, params) -> dict:
    """:func:`model_two_face` with :func:`cluster_coefficients` of ``params`` (a
    :class:`hw_models.params.HardwareParams`): the report's ``strategies.two_face`` block.

    W is a tuning knob, and the runtime's default rule (about 128 stripes per megatile) makes stripes
    of a few columns on 128 nodes, where the per-stripe latency terms dominate. The model therefore
    takes the power of two up to the widest megatile with the smallest modeled time (our choice)."""
    coeffs = cluster_coefficients(params.link.bytes_per_s, params.link.latency_ns * 1e-9,
                                  params.switch.latency_ns * 1e-9, params.headers.element_bytes)
    widest = int(np.diff(bounds).max())
    widths = [2**i for i in range(int(np.ceil(np.log2(max(widest, 1)))) + 1)]
    columns = rank_columns(adj, bounds)
    best = min((model_two_face(adj, bounds, k, coeffs, w, columns) for w in widths), key=lambda r: r["comm_time_s"])
    return {**best, "stripe_width_rule": "tuned: the power of two with the smallest modeled time",
            "coefficients": coeffs.to_dict()}
