"""hw_models.baselines: SUOpt and SAOpt on hand-worked tiny cases, the calibration, and bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

from hw_models import baselines as B
from hw_models import definitions as D
from hw_models.params import HardwareParams, HeaderParams
from netsparse_torch.errors import ConfigError

RATE = 50e9  # 400 Gb/s in bytes/s (NetSparse Table 5)


def _hand_workload():
    # 2 nodes own rows {0,1} and {2,3}. Node 0 needs cols {2,3} from node 1; node 1 needs {0,1} from node 0.
    rows = [0, 0, 1, 1, 2, 3, 3, 3]
    cols = [2, 3, 2, 0, 0, 0, 1, 3]
    return D.workload(sp.coo_matrix((np.ones(8), (rows, cols)), shape=(4, 4)), 2)


def test_su_opt_hand_case():
    r = B.su_opt(_hand_workload(), 16)
    # Each node receives the 2 rows it does not own: 2 * 16 * 4 B = 128 B at 50 GB/s.
    assert r.rx_bytes.tolist() == [128.0, 128.0] and r.tx_bytes.tolist() == [128.0, 128.0]
    assert r.comm_time_s == pytest.approx(128 / RATE)
    # Unbalanced: 3 nodes over 5 rows own 2, 2, 1 -> the last node receives 4 rows and is the tail.
    w = D.workload(sp.eye(5, format="csr"), 3)
    r = B.su_opt(w, 1)
    assert r.tail_node == 2 and r.comm_time_s == pytest.approx(4 * 4 / RATE)
    assert r.tx_bytes.tolist() == [2 * 2 * 4.0, 2 * 2 * 4.0, 1 * 2 * 4.0]


def test_calibration_by_hand():
    # c(K) = cores * K * e / (2 * rate * goodput): c(16) = 64 * 64 B / (2 * 50e9 B/s * 0.10) = 409.6 ns,
    # c(128) = 64 * 512 B / (2 * 50e9 B/s * 0.40) = 819.2 ns -> b = 409.6 ns / 448 B, o = 409.6 ns - 64 b.
    o, b = B.calibrate_sa_overheads()
    assert b == pytest.approx(409.6e-9 / 448) and o == pytest.approx(409.6e-9 - 64 * 409.6e-9 / 448)
    assert B.sa_pr_cost_s(HardwareParams(), 16) == pytest.approx(409.6e-9)
    assert B.sa_pr_cost_s(HardwareParams(), 128) == pytest.approx(819.2e-9)
    p = HardwareParams().replace(software={"sa_target_goodput": 0.2, "sa_target_goodput_k128": 0.8})
    assert B.sa_pr_cost_s(p, 16) == pytest.approx(204.8e-9) and B.sa_pr_cost_s(p, 128) == pytest.approx(409.6e-9)
    knob = HardwareParams().replace(software={"sa_per_pr_overhead_ns": 100})
    assert B.sa_overheads(knob) == pytest.approx((100e-9, 0.0))  # a given per-PR cost: no per-byte part
    both = HardwareParams().replace(software={"sa_per_pr_overhead_ns": 100, "sa_per_byte_overhead_ns": 2})
    assert B.sa_pr_cost_s(both, 16) == pytest.approx(100e-9 + 64 * 2e-9)
    byte_only = HardwareParams().replace(software={"sa_per_byte_overhead_ns": 1})
    assert B.sa_pr_cost_s(byte_only, 16) == pytest.approx(409.6e-9)  # the K=16 point still holds


def test_sa_opt_hand_case():
    w = _hand_workload()  # 64 ranks per node: rows 0, 1 (node 0) and 2, 3 (node 1) are ranks 0 and 1
    # Per-rank filtering: node 0's rank 0 needs {2, 3}, rank 1 {2} -> 3 PRs to node 1 (per node: 2);
    # node 1's rank 0 needs {0}, rank 1 {0, 1} -> 3 PRs. Reads 62 + 3 * 18 = 116 B, responses
    # 62 + 3 * 82 = 308 B per direction.
    net_only = HardwareParams().replace(software={"sa_per_pr_overhead_ns": 0})
    r = B.sa_opt(w, 16, net_only)
    assert r.rx_bytes.tolist() == [424.0, 424.0] and r.tx_bytes.tolist() == [424.0, 424.0]
    assert r.comm_time_s == pytest.approx(424 / RATE)
    assert r.payload_per_wire == pytest.approx(128 / 424)  # useful: 2 distinct properties per node
    assert r.prs.tolist() == [3, 3] and r.to_dict()["prs"] == 6
    # Software: node 0's rank 0 issues 2 and serves 2 (column 0, asked by both ranks of node 1), its
    # rank 1 issues 1 and serves 1: the slowest rank has 4 PRs of 409.6 ns (node 1: 3 per rank).
    r = B.sa_opt(w, 16)
    assert r.node_time_s.tolist() == pytest.approx([4 * 409.6e-9, 3 * 409.6e-9])
    assert r.goodput == pytest.approx(128 / (RATE * 4 * 409.6e-9))


def test_one_core_is_per_node_filtering():
    """cores=1: one rank per node filters the node's repeats (the earlier per-node model, whose perfect
    spread over 64 cores gives the same time: the calibrated cost scales with the cores)."""
    a = sp.coo_matrix((np.ones(8), ([0, 0, 1, 1, 2, 3, 3, 3], [2, 3, 2, 0, 0, 0, 1, 3])), shape=(4, 4))
    w = D.workload(a, 2, cores=1)
    p = HardwareParams().replace(software={"cores": 1})
    r = B.sa_opt(w, 16, p)
    # Each node issues 2 and serves 2 PRs at c(16) = 1 * 64 B / (2 * 50e9 * 0.1) = 6.4 ns: 25.6 ns > 324 B / rate.
    assert r.rx_bytes.tolist() == [324.0, 324.0] and r.comm_time_s == pytest.approx(25.6e-9)
    assert r.goodput == pytest.approx(0.10)
    with pytest.raises(ConfigError, match="cores"):
        B.sa_opt(w, 16)  # a 1-core workload with the 64-core default


def test_slowest_rank_sets_the_software_time():
    """Intra-node imbalance (NetSparse §9.1): one busy rank makes the node as slow as that rank."""
    # 2 nodes of 16 rows, 4 ranks of 4 rows each. Row 0 (node 0, rank 0) needs columns 16..25 of node
    # 1; row 8 (node 0, rank 2) needs column 16 again: no cross-rank filtering, 11 PRs.
    rows, cols = [0] * 10 + [8], list(range(16, 26)) + [16]
    w = D.workload(sp.coo_matrix((np.ones(11), (rows, cols)), shape=(32, 32)), 2, cores=4)
    p = HardwareParams().replace(software={"cores": 4})  # c(16) = 4 * 64 B / (2 * 50e9 * 0.1) = 25.6 ns
    r = B.sa_opt(w, 16, p)
    assert w.rank_issued[0].tolist() == [10, 0, 1, 0] and r.prs.tolist() == [11, 0]
    # node 1's ranks own B rows 16-19, 20-23, 24-27, 28-31: they serve 5 (16 twice), 4, 2 and 0 PRs.
    assert w.rank_served[1].tolist() == [5, 4, 2, 0]
    assert r.node_time_s.tolist() == pytest.approx([10 * 25.6e-9, 5 * 25.6e-9])  # not 11 / 4 PRs per rank
    # Balanced nonzeros (rank i starts where node 0's running count reaches i * 11 / 4): row 0 alone on
    # rank 0, rows 1-15 on rank 3, ranks 1-2 empty. A row is never split, so the time stays; node 1
    # has no nonzeros and keeps equal row shares.
    w = D.workload(sp.coo_matrix((np.ones(11), (rows, cols)), shape=(32, 32)), 2, cores=4, rank_partition="nnz")
    with pytest.raises(ConfigError, match="split by 'nnz'"):
        B.sa_opt(w, 16, p)  # an nnz-split workload with the rows default
    r = B.sa_opt(w, 16, p.replace(software={"rank_partition": "nnz"}))
    assert w.rank_issued[0].tolist() == [10, 0, 0, 1] and w.rank_served[1].tolist() == [5, 4, 2, 0]
    assert r.node_time_s.tolist() == pytest.approx([10 * 25.6e-9, 5 * 25.6e-9])


def test_packets_respect_the_mtu():
    h = HeaderParams()
    # 17 responses of 64 B fit in one 1500 B packet (62 + 17 * 82 = 1456); the 18th opens a second.
    assert B.packed_bytes(np.array([17, 18, 0]), 64, h).tolist() == [62 + 17 * 82, 2 * 62 + 18 * 82, 0.0]
    assert 62 + 17 * 82 <= 1500 < 62 + 18 * 82
    # Reads carry no payload: (1500 - 62) // 18 = 79 per packet.
    assert B.packed_bytes(np.array([79, 80]), 0, h).tolist() == [62 + 79 * 18, 2 * 62 + 80 * 18]


def test_balanced_workload_hits_the_calibrated_goodput():
    # A dense matrix over 8 nodes, one rank each: every rank issues and serves 56 PRs, software-bound.
    w = D.workload(sp.csr_matrix(np.ones((64, 64))), 8, cores=1)
    p = HardwareParams().replace(software={"cores": 1})
    assert B.sa_opt(w, 16, p).goodput == pytest.approx(0.10)
    # K=128: 112 PRs * c(128) = 112 * 12.8 ns = 1433.6 ns > 657 ns on the wire: 40%, far from 100% (§8.1).
    assert B.sa_opt(w, 128, p).goodput == pytest.approx(0.40)
    # K=256 without software cost: network-bound. Per peer: 8 responses of 1042 B, one per packet
    # (8 * 62 + 8 * 1042 = 8832 B), and one read packet of 62 + 8 * 18 = 206 B; 7 peers -> 63266 B.
    big = B.sa_opt(w, 256, p.replace(software={"sa_per_pr_overhead_ns": 0}))
    assert big.rx_bytes[0] == 63266 and big.comm_time_s == pytest.approx(63266 / RATE)
    assert big.goodput == pytest.approx(56 * 1024 / 63266) == big.payload_per_wire


def test_sa_traffic_below_su_payload_is_only_useful():
    w = D.workload(sp.random(200, 200, density=0.02, random_state=3, format="csr"), 4)
    sa, su = B.sa_opt(w, 16), B.su_opt(w, 16)
    red = D.redundancy(w)
    assert sa.payload_bytes.sum() == red.useful_transfers * 64
    assert su.payload_bytes.sum() == red.useful_transfers * 64  # useful payload, not every row SU moves
    assert su.rx_bytes.sum() == red.su_transfers * 64
    assert su.goodput == pytest.approx(su.payload_bytes[su.tail_node] / su.rx_bytes[su.tail_node])  # line rate
    assert (sa.rx_bytes.sum() == sa.tx_bytes.sum()) and (su.rx_bytes.sum() == su.tx_bytes.sum())


def test_bad_input():
    with pytest.raises(ValueError, match="k must be"):
        B.su_opt(_hand_workload(), 0)
    with pytest.raises(ValueError, match="k must be"):
        B.sa_opt(_hand_workload(), -2)
