"""hw_models.baselines: SUOpt and SAOpt on hand-worked tiny cases, the calibration, and bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

from hw_models import baselines as B
from hw_models import definitions as D
from hw_models.params import HardwareParams, HeaderParams

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
    # o = cores * K * e / (2 * rate * goodput) = 64 * 64 B / (2 * 50e9 B/s * 0.10) = 409.6 ns
    assert B.calibrate_sa_per_pr_overhead() == pytest.approx(409.6e-9)
    p = HardwareParams().replace(software={"sa_target_goodput": 0.2})
    assert B.calibrate_sa_per_pr_overhead(p) == pytest.approx(204.8e-9)
    knob = HardwareParams().replace(software={"sa_per_pr_overhead_ns": 100})
    assert B.sa_per_pr_overhead_s(knob) == pytest.approx(100e-9)


def test_sa_opt_hand_case():
    w = _hand_workload()
    # One read packet per direction: 50 + 12 + 2 * 18 = 98 B; one response packet: 62 + 2 * (18 + 64) = 226 B.
    net_only = HardwareParams().replace(software={"sa_per_pr_overhead_ns": 0})
    r = B.sa_opt(w, 16, net_only)
    assert r.rx_bytes.tolist() == [324.0, 324.0] and r.tx_bytes.tolist() == [324.0, 324.0]
    assert r.comm_time_s == pytest.approx(324 / RATE)
    assert r.payload_per_wire == pytest.approx(128 / 324)
    # Calibrated overhead: each node issues 2 and serves 2 PRs -> 409.6 ns * 4 / 64 = 25.6 ns > 6.48 ns.
    r = B.sa_opt(w, 16)
    assert r.comm_time_s == pytest.approx(25.6e-9)
    assert r.goodput == pytest.approx(128 / (RATE * 25.6e-9)) and r.goodput == pytest.approx(0.10)


def test_packets_respect_the_mtu():
    h = HeaderParams()
    # 17 responses of 64 B fit in one 1500 B packet (62 + 17 * 82 = 1456); the 18th opens a second.
    assert B.packed_bytes(np.array([17, 18, 0]), 64, h).tolist() == [62 + 17 * 82, 2 * 62 + 18 * 82, 0.0]
    assert 62 + 17 * 82 <= 1500 < 62 + 18 * 82
    # Reads carry no payload: (1500 - 62) // 18 = 79 per packet.
    assert B.packed_bytes(np.array([79, 80]), 0, h).tolist() == [62 + 79 * 18, 2 * 62 + 80 * 18]


def test_balanced_workload_hits_the_calibrated_goodput():
    # A dense matrix over 8 nodes: every node issues and serves the same count, software-bound at K=16.
    w = D.workload(sp.csr_matrix(np.ones((64, 64))), 8)
    r = B.sa_opt(w, 16)
    assert r.goodput == pytest.approx(0.10)
    # K=128: still software-bound (56 + 56 PRs * 409.6 ns / 64 = 716.8 ns): 56 * 512 B / (50e9 * 716.8 ns).
    assert B.sa_opt(w, 128).goodput == pytest.approx(0.8)
    # K=256: network-bound. Per peer: 8 responses of 1042 B, one per packet (8 * 62 + 8 * 1042 = 8832 B),
    # and one read packet of 62 + 8 * 18 = 206 B; 7 peers -> 63266 B received vs 56 * 1024 B payload.
    big = B.sa_opt(w, 256)
    assert big.rx_bytes[0] == 63266 and big.comm_time_s == pytest.approx(63266 / RATE)
    assert big.goodput == pytest.approx(56 * 1024 / 63266) == big.payload_per_wire


def test_sa_traffic_below_su_payload_is_only_useful():
    w = D.workload(sp.random(200, 200, density=0.02, random_state=3, format="csr"), 4)
    sa, su = B.sa_opt(w, 16), B.su_opt(w, 16)
    red = D.redundancy(w)
    assert sa.payload_bytes.sum() == red.useful_transfers * 64
    assert su.payload_bytes.sum() == red.su_transfers * 64
    assert (sa.rx_bytes.sum() == sa.tx_bytes.sum()) and (su.rx_bytes.sum() == su.tx_bytes.sum())


def test_bad_input():
    with pytest.raises(ValueError, match="k must be"):
        B.su_opt(_hand_workload(), 0)
    with pytest.raises(ValueError, match="k must be"):
        B.sa_opt(_hand_workload(), -2)
