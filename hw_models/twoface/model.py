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

from hw_models.pattern import Pattern, as_pattern
from hw_models.twoface.classify import (
    ASYNC,
    LOCAL,
    SYNC,
    Stripes,
    check_width,
    classify,
    default_stripe_width,
)
from hw_models.twoface.cost import Coefficients


def cluster_coefficients(link_bytes_per_s: float, link_latency_s: float, switch_latency_s: float,
                         value_bytes: int = 4) -> Coefficients:
    t3 = Coefficients()
    beta_s = value_bytes / link_bytes_per_s
    alpha_s = 4 * link_latency_s + 3 * switch_latency_s
    return Coefficients(beta_s=beta_s, alpha_s=alpha_s, beta_a=beta_s * t3.beta_a / t3.beta_s,
                        alpha_a=alpha_s * t3.alpha_a / t3.alpha_s, gamma_a=t3.gamma_a, kappa_a=t3.kappa_a)


def model_two_face(adj: Pattern | sp.spmatrix, bounds: np.ndarray, k: int, coeffs: Coefficients,
                   width: int | None = None) -> dict:
    """``{comm_time_s, sync_stripes, async_stripes, local_stripes}`` of one SpMM ``adj x B`` (B is N x k)
    row-partitioned by ``bounds``; stripe counts are summed over nodes. A :class:`Pattern` is read in
    place."""
    adj = as_pattern(adj)
    w = width or default_stripe_width(adj.shape[0], len(bounds) - 1)
    return _sweep(adj, bounds, k, coeffs, [w])[0]


def model_on_cluster(adj: Pattern | sp.spmatrix, bounds: np.ndarray, k: int, params) -> dict:
    """:func:`model_two_face` with :func:`cluster_coefficients` of ``params`` (a
    :class:`hw_models.params.HardwareParams`): the report's ``strategies.two_face`` block.

    W is a tuning knob, and the runtime's default rule (about 128 stripes per megatile) makes stripes
    of a few columns on 128 nodes, where the per-stripe latency terms dominate. The model therefore
    takes the power of two up to the widest megatile with the smallest modeled time (our choice)."""
    coeffs = cluster_coefficients(params.link.bytes_per_s, params.link.latency_ns * 1e-9,
                                  params.switch.latency_ns * 1e-9, params.headers.element_bytes)
    adj = as_pattern(adj)
    widest = int(np.diff(bounds).max())
    widths = [2**i for i in range(int(np.ceil(np.log2(max(widest, 1)))) + 1)]
    best = min(_sweep(adj, bounds, k, coeffs, widths), key=lambda r: r["comm_time_s"])
    return {**best, "stripe_width_rule": "tuned: the power of two with the smallest modeled time",
            "coefficients": coeffs.to_dict()}


def _sweep(adj: Pattern, bounds: np.ndarray, k: int, coeffs: Coefficients, widths: list[int]) -> list[dict]:
    """The model at each stripe width. Rank by rank (one rank's columns in memory at a time): its
    distinct columns and their counts are found once, and each width only groups them into stripes."""
    c = coeffs
    bounds = np.asarray(bounds, dtype=np.int64)
    out = [{"comm_time_s": 0.0, "sync_stripes": 0, "async_stripes": 0, "local_stripes": 0, "stripe_width": w}
           for w in widths]
    for rank in range(len(bounds) - 1):
        cols, counts = np.unique(adj.indices[adj.indptr[bounds[rank]]:adj.indptr[bounds[rank + 1]]],
                                 return_counts=True)
        for w, acc in zip(widths, out, strict=True):
            s = classify(stripes_of_distinct(cols, counts, bounds, rank, w), k, c, w)
            sync, asy = s.kind == SYNC, s.kind == ASYNC
            comm_s = float((c.beta_s * k * s.width[sync] + c.alpha_s).sum())
            comm_a = c.beta_a * k * float(s.rows[asy].sum()) + c.alpha_a * int(asy.sum())
            acc["comm_time_s"] = max(acc["comm_time_s"], comm_s, comm_a)
            for name, n in s.counts().items():
                acc[name] += n
    return out


def stripes_of_distinct(cols: np.ndarray, counts: np.ndarray, bounds: np.ndarray, rank: int, width: int) -> Stripes:
    """The non-empty stripes of a rank from its sorted distinct columns and their nonzero counts: what
    :func:`~hw_models.twoface.classify.find_stripes` gives, without the per-nonzero map
    (``of_nnz`` is empty; the model does not need it). Sorted columns make the stripe ids
    non-decreasing, so stripes are runs: O(distinct columns), no array over the matrix width."""
    width = check_width(width)
    cols = cols.astype(np.int64)
    owner = np.searchsorted(bounds, cols, side="right") - 1
    index = (cols - bounds[owner]) // width  # stripe within the owner's megatile
    starts = np.flatnonzero(np.concatenate([[True], (owner[1:] != owner[:-1]) | (index[1:] != index[:-1])])) \
        if cols.size else np.zeros(0, np.int64)
    s_owner = owner[starts]
    s_start = bounds[s_owner] + index[starts] * width
    s_width = np.minimum(width, bounds[s_owner + 1] - s_start)
    nnz = np.add.reduceat(counts.astype(np.int64), starts) if cols.size else np.zeros(0, np.int64)
    rows = np.diff(np.append(starts, cols.size))
    kind = np.where(s_owner == rank, LOCAL, SYNC)
    return Stripes(s_owner, s_start, s_width, nnz, rows, kind, np.zeros(0, np.int64), rank)
