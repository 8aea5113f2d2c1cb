"""BlueField-3 offload of Krylov vector operations: the offload cost model and leader-based onloading.

A fraction ``p`` of the vector work moves from the host to the SmartNIC's ARM cores, which are ``k``
times slower than the host for that work, and the offloaded part also pays a data-transfer share
``c`` (a fraction of the original host time). Host and NIC run concurrently, so the normalised time
is ``max(1 - p, k*p + c)`` and

    improvement(p) = 1 - max(1 - p, k*p + c)

The two terms cross at the optimum ``p* = (1 - c) / (1 + k)``, where the improvement equals ``p*``.

Table 2 of the paper lists the maximum improvement for three slowdowns k (4.33, 3.28, 3.21) and
transfer shares c = 15, 30, 60 %; ``max_improvement(k, c)`` reproduces every cell within one point
with ``c`` used directly as a fraction of host time (no extra scaling; see docs/seeds.md).
"""

from __future__ import annotations

import numpy as np

TABLE2_SLOWDOWNS: tuple[float, ...] = (4.33, 3.28, 3.21)
"""Slowdowns k of the NIC ARM cores vs the host, the rows of the BF3 paper's Table 2."""

TABLE2_TRANSFER_SHARES: tuple[float, ...] = (0.15, 0.30, 0.60)
"""Transfer shares c, the columns of the BF3 paper's Table 2 (as fractions)."""


def _check(k: float, c: float) -> None:
    if not k > 0:
        raise ValueError(f"slowdown k must be > 0, got {k}")
    if not 0 <= c < 1:
        raise ValueError(f"transfer share c must be in [0, 1), got {c}")


def improvement(p: float, k: float, c: float) -> float:
    """Improvement ``1 - max(1 - p, k*p + c)`` when a share ``p`` of the work is offloaded."""
    _check(k, c)
    if not 0 <= p <= 1:
        raise ValueError(f"offload share p must be in [0, 1], got {p}")
    return 1.0 - max(1.0 - p, k * p + c)


def optimal_offload_share(k: float, c: float) -> float:
    """The optimum ``p* = (1 - c) / (1 + k)``, where host and NIC finish together."""
    _check(k, c)
    return (1.0 - c) / (1.0 + k)


def max_improvement(k: float, c: float) -> float:
    """The improvement at ``p*`` (a fraction; equals ``p*``)."""
    return improvement(optimal_offload_share(k, c), k, c)


def leader_offload_share(onload_share: float, clients_per_leader: int) -> float:
    """Leader-based onloading: a leader offloads its own share plus the share each client onloads to it.

    offload share = onload share x (clients per leader + 1); 15% with 3 clients per leader -> 60%.
    """
    if not 0 <= onload_share <= 1:
        raise ValueError(f"onload share must be in [0, 1], got {onload_share}")
    if clients_per_leader < 0:
        raise ValueError(f"clients per leader must be >= 0, got {clients_per_leader}")
    share = onload_share * (clients_per_leader + 1)
    if share > 1:
        raise ValueError(f"offload share {share:.3g} exceeds 1: {clients_per_leader} clients x {onload_share} "
                         "onload share overload the leader")
    return share


def table2() -> list[tuple[float, float, float]]:
    """Rows ``(k, c, max improvement in percent)`` of Table 2 in reading order."""
    return [(k, c, 100.0 * max_improvement(k, c)) for k in TABLE2_SLOWDOWNS for c in TABLE2_TRANSFER_SHARES]


def snic_sw(w, k: int, params=None, slowdown: float = TABLE2_SLOWDOWNS[0],
            transfer_share: float = TABLE2_TRANSFER_SHARES[0]):
    """The ``snic_sw`` simulator baseline: sparsity-aware gathers whose PR generation runs in software
    on the SmartNIC's ARM cores (the BF3 offload applied to SAOpt's runtime).

    Same as SAOpt (:func:`hw_models.baselines.sa_opt`: same-destination concatenation, per-PR
    software cost, no network latency) except that

    * there is no filtering hardware: every remote nonzero is a PR (``w.pair_prs``, not
      ``pair_useful``), so repeated properties cross the network again;
    * the whole PR software (issue and serve) is offloaded (``p = 1`` in the model above): it runs
      ``slowdown`` times slower than on the host and pays the host-NIC ``transfer_share``, so a node
      spends ``(slowdown + transfer_share) * c(K) * (issued + served) / cores`` (``c(K)``: SAOpt's
      per-PR cost, :func:`hw_models.baselines.sa_pr_cost_s`), spread evenly over the NIC's cores (no
      ranks: the NIC runtime is not Conveyors); the host cores are free for compute meanwhile, which a
      communication time does not show.

    Defaults: the first row/column of BF3 Table 2 (k = 4.33, c = 15 %). Returns a
    :class:`hw_models.baselines.BaselineResult`.
    """
    from hw_models.baselines import BaselineResult, packed_bytes, property_bytes, sa_pr_cost_s
    from hw_models.params import HardwareParams

    _check(slowdown, transfer_share)
    params = params or HardwareParams()
    h, rate = params.headers, params.link.bytes_per_s
    payload = property_bytes(k, h)
    prs = w.pair_prs  # prs[p, q]: unfiltered PRs p sends to owner q
    reads, responses = packed_bytes(prs, 0, h), packed_bytes(prs, payload, h)
    rx = responses.sum(axis=1) + reads.sum(axis=0)
    tx = reads.sum(axis=1) + responses.sum(axis=0)
    issued, served = prs.sum(axis=1), prs.sum(axis=0)
    software = ((slowdown + transfer_share) * sa_pr_cost_s(params, k) * (issued + served)
                / params.software.cores)
    time = np.maximum(np.maximum(rx, tx) / rate, software)
    return BaselineResult(time, rx, tx, (w.pair_useful.sum(axis=1) * payload).astype(np.float64), rate, prs=issued)
