"""The seed papers' simulator baselines: ``snic_sw`` (BF3 offload) and ``switch_aggregate`` (SmartFuse
push with ToR sums), against hand-worked cases and brute-force loops."""

import numpy as np
import pytest
import scipy.sparse as sp

from hw_models.baselines import sa_opt
from hw_models.definitions import workload
from hw_models.params import HardwareParams
from hw_models.seeds.bf3 import snic_sw
from hw_models.seeds.smartfuse import push_traffic, switch_aggregate


def matrix(n, entries):
    r, c = zip(*entries, strict=True)
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n, n))


# 4 nodes with one row each, racks {0, 1} and {2, 3}.
HAND = matrix(4, [(0, 1), (0, 2), (0, 3), (1, 2), (3, 0), (3, 1)])


def test_push_traffic_by_hand():
    t = push_traffic(HAND, workload(HAND, 4), rack_size=2)
    sent = np.zeros((4, 4), int)
    for q, p in [(1, 0), (2, 0), (3, 0), (2, 1), (0, 3), (1, 3)]:  # owner of B row -> owner of output row
        sent[q, p] = 1
    np.testing.assert_array_equal(t.sent, sent)
    # Rack 1's ToR sums the partials of nodes 2 and 3 for row 0; rack 0's those of nodes 0 and 1 for row 3.
    np.testing.assert_array_equal(t.aggregated, [[1, 0, 0, 1], [1, 1, 0, 0]])
    assert (t.spine_rows, t.spine_rows_aggregated) == (5, 3)


def brute_force(a, bounds, rack_size):
    owner = np.searchsorted(bounds, np.arange(a.shape[0]), side="right") - 1
    coo = a.tocoo()
    partials, sums = set(), set()
    for r, c in zip(coo.row, coo.col, strict=True):
        if owner[r] != owner[c]:
            partials.add((owner[c], r))
            sums.add((owner[c] // rack_size, r))
    return partials, sums, owner


@pytest.mark.parametrize("seed", range(4))
def test_push_traffic_matches_loops(seed):
    a = sp.random(60, 60, density=0.08, random_state=seed, format="csr")
    w = workload(a, 6)
    partials, sums, owner = brute_force(a, w.row_bounds, 2)
    t = push_traffic(a, w, rack_size=2)
    assert t.sent.sum() == len(partials) and t.aggregated.sum() == len(sums)
    for p in range(6):
        assert t.aggregated[:, p].sum() == sum(1 for _, r in sums if owner[r] == p)
    assert t.spine_rows == sum(1 for q, r in partials if q // 2 != owner[r] // 2)
    assert t.spine_rows_aggregated == sum(1 for rack, r in sums if rack != owner[r] // 2)
    assert t.aggregated.sum() <= t.sent.sum()
    np.testing.assert_array_equal(push_traffic(a, w, rack_size=1).aggregated, t.sent)  # nothing to sum


def test_switch_aggregate_times_by_hand():
    params = HardwareParams().replace(cluster={"nodes": 4, "rack_size": 2})
    # K = 16: 64 B payload, 18 B PR header, 62 B packet header, 50 GB/s.
    res = switch_aggregate(HAND, workload(HAND, 4), 16, params)
    # Node 0 receives one row from each rack (2 packets): 2 * (62 + 82) B; it sends one row (to node 3).
    assert res.rx_bytes[0] == pytest.approx(288) and res.tx_bytes[0] == pytest.approx(144)
    assert res.node_time_s[0] == pytest.approx(288 / 50e9)
    # Node 1 sends to nodes 0 and 3 (two packets) and receives one row from rack 1.
    assert res.tx_bytes[1] == pytest.approx(288) and res.rx_bytes[1] == pytest.approx(144)


def test_snic_sw_by_hand():
    # Nodes 0 and 1 own rows 0-1 and 2-3; both rows of node 0 read column 2. SAOpt with one rank per
    # node filters the repeat (1 PR); with 64 ranks rows 0 and 1 are different ranks (2 PRs, one per
    # rank); the SmartNIC software has no filter (2 PRs).
    a = matrix(4, [(0, 2), (1, 2), (2, 3), (3, 2)])
    w = workload(a, 2)
    params = HardwareParams()
    o = 409.6e-9  # the calibrated SAOpt per-PR cost at K=16 with the Table 5 defaults
    sa, snic = sa_opt(w, 16, params), snic_sw(w, 16, params)
    one = sa_opt(workload(a, 2, cores=1), 16, params.replace(software={"cores": 1}))
    assert one.rx_bytes[0] == pytest.approx(62 + 82) and sa.rx_bytes[0] == pytest.approx(62 + 2 * 82)
    assert snic.rx_bytes[0] == pytest.approx(62 + 2 * 82)
    assert snic.node_time_s[0] == pytest.approx((4.33 + 0.15) * o * 2 / 64)  # software-bound
    assert snic.node_time_s[1] == pytest.approx((4.33 + 0.15) * o * 2 / 64)  # serves the 2 PRs
    assert sa.node_time_s[0] == pytest.approx(o * 1)  # each rank issues one PR
    faster = snic_sw(w, 16, params, slowdown=1.0, transfer_share=0.0)
    assert faster.node_time_s[0] == pytest.approx(o * 2 / 64)


def test_snic_sw_bad_parameters():
    w = workload(HAND, 4)
    with pytest.raises(ValueError, match="slowdown"):
        snic_sw(w, 16, slowdown=0)
    with pytest.raises(ValueError, match="transfer share"):
        snic_sw(w, 16, transfer_share=1.5)


def test_pull_spine_rows_match_loops():
    from hw_models.seeds.aggregate_vs_cache import pull_spine_rows

    a = sp.random(60, 60, density=0.08, random_state=7, format="csr")
    w = workload(a, 6)
    owner = np.searchsorted(w.row_bounds, np.arange(60), side="right") - 1
    coo = a.tocoo()
    cross = [(owner[r], c) for r, c in zip(coo.row, coo.col, strict=True) if owner[r] // 2 != owner[c] // 2]
    assert pull_spine_rows(a, w, 2) == (len(set(cross)), len({(p // 2, c) for p, c in cross}))


def test_push_and_pull_cross_the_spine_alike_on_a_symmetric_pattern():
    """Pull needs (node of r, c) and push sends (node of c, r): the same pairs when A = A^T."""
    from hw_models.seeds.aggregate_vs_cache import compare

    a = sp.random(80, 80, density=0.05, random_state=3, format="csr")
    sym = compare((a + a.T).tocsr(), 8, 2)
    assert sym["pull"] == sym["push"] and sym["pull_cache_inf"] == sym["push_switch_aggregate"]
    directed = compare(a, 8, 2)
    assert directed["pull"] != directed["push"]
