"""How a leaf-spine (source, destination) pair picks its spine (``topology.leafspine_spine_choice``,
docs/simulator.md): the route table's paths against a tiny Python reimplementation, and the bytes each
spine's links carry in the simulator's hop log against a hand count."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hw_models import definitions
from hw_models.params import HardwareParams
from hw_models.simulator import mechanisms_up_to, simulate
from hw_models.topology import build_topology
from netsparse_torch.errors import ConfigError

MASK = (1 << 64) - 1
P4 = {"cluster": {"nodes": 4, "rack_size": 2}}  # 2 racks x 2 nodes, 16 spines
FLIT = {"mode": "flit", "flit": {"flit_bytes": 16, "pool_cycles": 32, "stitching": True, "sequencing": True}}
READ_WIRE, RESP_WIRE = 80, 80 + 64  # one PR per packet (test_simulator.READ_SER), 16 fp32 of payload


def splitmix64(x: int) -> int:
    """The splitmix64 finaliser, written from its published constants with Python integers."""
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def own_spine(choice: str, src: int, dst: int, rack: int, spines: int) -> int:
    if choice == "pair_hash":
        return splitmix64((src << 32) | dst) % spines
    return (src % rack + dst % rack) % spines


def params(choice: str, extra: dict | None = None) -> HardwareParams:
    return HardwareParams.from_dict({**P4, "topology": {"leafspine_spine_choice": choice}, **(extra or {})})


def test_splitmix64_known_value():
    assert splitmix64(0) == 0xE220A8397B1DCDAF  # the first output of splitmix64 seeded with 0


@pytest.mark.parametrize("choice", ["pair", "pair_hash", "per_packet"])
def test_route_table_paths_by_reimplementation(choice):
    """Each pair's path p runs host, its ToR, spine (own + p) mod spines, the other ToR, host; one path
    per pair except per_packet (one per spine); intra-rack pairs never leave their ToR."""
    hw = HardwareParams.from_dict({"cluster": {"nodes": 24, "rack_size": 8},
                                   "topology": {"leafspine_spines": 5, "leafspine_spine_choice": choice}})
    topo = build_topology(hw)
    table = topo.route_table()
    n, tors, spines = 24, 3, 5
    assert table.shape[0] == (spines if choice == "per_packet" else 1)
    for p in range(table.shape[0]):
        for s in range(n):
            for d in range(n):
                links = [int(x) for x in table[p, s, d] if x >= 0]
                verts = [s] + [int(topo.link_dst[li]) for li in links]
                if s == d:
                    want = [s]
                elif s // 8 == d // 8:
                    want = [s, n + s // 8, d]
                else:
                    spine = (own_spine(choice, s, d, 8, spines) + p) % spines
                    want = [s, n + s // 8, n + tors + spine, n + d // 8, d]
                assert verts == want


def test_hash_spreads_pairs_unlike_the_sum():
    """Under pair, every pair whose rack positions sum alike shares a spine: all 16 pairs (i, 16 + 15 - i)
    of two racks take spine 15; the hash scatters them."""
    spines = {c: {own_spine(c, i, 31 - i, 16, 16) for i in range(16)} for c in ("pair", "pair_hash")}
    assert spines["pair"] == {15}
    topo = build_topology(HardwareParams.from_dict({"topology": {"leafspine_spine_choice": "pair_hash"}}))
    got = {topo.switch_path(i, 31 - i)[1] - 8 for i in range(16)}
    assert got == spines["pair_hash"] and len(got) > 8


def test_other_topologies_refuse_a_spine_choice():
    with pytest.raises(ConfigError, match="applies to leafspine"):
        build_topology(HardwareParams.from_dict({"cluster": {"topology": "hyperx"},
                                                 "topology": {"leafspine_spine_choice": "per_packet"}}))
    with pytest.raises(ConfigError, match="pair_hash"):
        HardwareParams.from_dict({"topology": {"leafspine_spine_choice": "ecmp"}})


def test_single_rack_has_one_path():
    topo = build_topology(HardwareParams.from_dict({"cluster": {"nodes": 8},
                                                    "topology": {"leafspine_spine_choice": "per_packet"}}))
    assert topo.route_table().shape[0] == 1


def two_pairs(m: int) -> sp.csr_matrix:
    """Node 0 reads m distinct properties of node 3, node 1 m of node 2 (node i owns rows and columns
    [i m, (i + 1) m)): pairs (0, 3) and (1, 2) both sum to rack position 1, so share spine 1 under pair."""
    rows = np.r_[np.zeros(m, int), np.full(m, m)]
    cols = np.r_[np.arange(3 * m, 4 * m), np.arange(2 * m, 3 * m)]
    return sp.csr_matrix((np.ones(2 * m), (rows, cols)), shape=(4 * m, 4 * m))


@pytest.mark.parametrize("network", ["packet", "flit"])
@pytest.mark.parametrize("choice", ["pair", "pair_hash", "per_packet"])
def test_spine_link_bytes_by_hand(choice, network):
    """One PR per packet, no switch stage: m reads (80 B) leave ToR 0 for each pair and m responses (144 B)
    leave ToR 1. Under pair all of them cross spine 1; per_packet sends pair packet i through spine
    (1 + i) mod 16, so with m = 32 each spine's up-links carry 2 packets of each pair; pair_hash puts each
    pair on its hashed spine."""
    m, n = 32, 4
    hw = params(choice)
    a = two_pairs(m)
    w = definitions.workload(a, n)
    assert list(w.row_bounds) == [0, m, 2 * m, 3 * m, 4 * m]
    r = simulate(a, w, hw, 16, "spmm", mechanisms_up_to("coalesce"),
                 link_layer=FLIT if network == "flit" else None, log_hops=True)
    assert r.counters["nodes"]["read_prs"][:2] == [m, m]
    log = r.hops
    hops = log[log[:, 0] == 1]
    got = np.bincount(hops[:, 2], weights=hops[:, 3], minlength=build_topology(hw).n_links)
    topo = build_topology(hw)
    up = {(tor, s): int(np.flatnonzero((topo.link_src == n + tor) & (topo.link_dst == n + 2 + s))[0])
          for tor in (0, 1) for s in range(16)}
    want = {key: 0 for key in up}
    pairs = [(0, 3, 0, READ_WIRE), (1, 2, 0, READ_WIRE), (3, 0, 1, RESP_WIRE), (2, 1, 1, RESP_WIRE)]
    for src, dst, tor, wire in pairs:
        for i in range(m):
            turn = i if choice == "per_packet" else 0
            want[tor, (own_spine(choice, src, dst, 2, 16) + turn) % 16] += wire
    assert {key: int(got[li]) for key, li in up.items()} == want
    if choice == "per_packet":
        assert set(want.values()) == {2 * 2 * READ_WIRE, 2 * 2 * RESP_WIRE}
    if choice == "pair":
        assert want[0, 1] == 2 * m * READ_WIRE and want[1, 1] == 2 * m * RESP_WIRE


@pytest.mark.parametrize("choice", ["pair_hash", "per_packet"])
def test_switch_stage_on_every_path(choice):
    """With the extended ToRs on, pipes send their packets down the pair's paths: on a random stream (8
    nodes in 2 racks) every read PR is answered once, and each node's critical path still sums exactly
    to its time."""
    rng = np.random.default_rng(5)
    n, nnz = 800, 4000
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    hw = HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 4},
                                   "topology": {"leafspine_spine_choice": choice}})
    r = simulate(a, definitions.workload(a, 8), hw, 16, "spmm")
    nodes = r.counters["nodes"]
    assert nodes["responses"] == nodes["read_prs"] and sum(nodes["read_prs"]) > 1000
    ps = np.rint(r.critical_path.node_s * 1e12).astype(np.int64)
    assert ps.sum(axis=1).tolist() == np.rint(r.node_time_s * 1e12).astype(np.int64).tolist()


@pytest.mark.parametrize("network", ["packet", "flit"])
@pytest.mark.parametrize("choice", ["pair", "pair_hash", "per_packet"])
def test_each_pairs_packets_take_its_spines_in_turn(choice, network):
    """A random stream with NIC concatenation and no switch stage (every packet routed from its source
    host): in the order the NICs send them, the inter-rack packets of each (src, dst) pair cross spine
    (own + i) mod spines under per_packet, where i counts the pair's packets, and the own spine always
    under pair and pair_hash."""
    rng = np.random.default_rng(7)
    n_rows, nnz, nodes, rack, spines = 1200, 6000, 8, 4, 3
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n_rows, nnz), rng.integers(0, n_rows, nnz))),
                      shape=(n_rows, n_rows))
    hw = HardwareParams.from_dict({"cluster": {"nodes": nodes, "rack_size": rack},
                                   "topology": {"leafspine_spines": spines, "leafspine_spine_choice": choice}})
    log = simulate(a, definitions.workload(a, nodes), hw, 16, "spmm", mechanisms_up_to("concat_nic"),
                   link_layer=FLIT if network == "flit" else None, log_hops=True).hops
    topo = build_topology(hw)
    tors = 2
    src_of = {int(s): int(v) for s, v in log[log[:, 0] == 0][:, 1:3]}
    dst_of = {int(s): int(v) for s, v in log[log[:, 0] == 2][:, 1:3]}
    hops = log[log[:, 0] == 1]
    up = hops[(topo.link_dst[hops[:, 2]] >= nodes + tors) & (topo.link_src[hops[:, 2]] < nodes + tors)]
    spine_of = {int(s): int(topo.link_dst[li]) - nodes - tors for s, li in up[:, 1:3]}
    turns: dict[tuple[int, int], int] = {}
    assert len(spine_of) > 200
    for serial in sorted(spine_of):  # serials count the packets in the order they were sent
        pair = (src_of[serial], dst_of[serial])
        i = turns.get(pair, 0)
        turns[pair] = i + 1
        turn = i if choice == "per_packet" else 0
        assert spine_of[serial] == (own_spine(choice, *pair, rack, spines) + turn) % spines
    assert max(turns.values()) > spines  # some pair went round its spines more than once
