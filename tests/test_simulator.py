"""The C++ discrete-event simulator (docs/simulator.md): hand-worked timings, invariants, analytic
cross-check, determinism and bad input. Expected times are worked out here from Table 5 numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from hw_models import analysis, definitions
from hw_models.analytic import single_pr
from hw_models.params import HardwareParams
from hw_models.simulator import STAGES, check_mechanisms, mechanisms_up_to, simulate
from hw_models.topology import build_topology
from hw_models.unit_args import auto_batch_size
from netsparse_torch.errors import ConfigError

P4 = HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 2}})  # 2 racks x 2 nodes


def snic_ps(cycles: int) -> int:
    """A SNIC cycle count (2.2 GHz, Table 5) as the first picosecond at which it has elapsed."""
    return math.ceil(cycles * 1000 / 2.2)


def snic_cycle(ps: int) -> int:
    return math.floor(ps * 2.2 / 1000)


def mat(entries: list[tuple[int, int]], n: int) -> sp.csr_matrix:
    r, c = zip(*entries, strict=True)
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n, n))


def run(a, params=P4, k=16, mech=None):
    w = definitions.workload(a, params.cluster.nodes)
    return simulate(a, w, params, k, "spmm", mech)


LINK = 450_000  # ps, Table 5
SW = 300_000  # ps, Table 5
PCIE = 200_000  # ps, Table 5
READ_SER = 80 * 20  # 50 + 12 + 18 B at 400 Gb/s = 20 ps per byte
RESP_SER = (80 + 64) * 20  # plus 16 x 4 B of payload


def hop(t: int, ser: int) -> int:
    return t + ser + LINK


def tor(t: int, switch_on: bool) -> int:
    """An extended ToR: switch latency + 16-cycle lookup (2 GHz: 500 ps/cycle), then the lone PR
    waits out the 125-cycle switch concatenation delay from the cycle it entered."""
    if not switch_on:
        return t + SW
    cycle = (t + SW + 16 * 500) // 500
    return (cycle + 125) * 500


def nic(t: int) -> int:
    """A lone PR pushed at t leaves the NIC concatenator after 500 SNIC cycles (Table 5)."""
    return snic_ps(snic_cycle(t) + 500)


HOST_READY = 3 * PCIE + 32  # MMIO + DMA request + 4 B of idx at 128 GB/s (31.25 ps, rounded up) + DMA data
FIRST_CYCLE = 1321  # the first SNIC cycle at or after HOST_READY: cycle 1320 starts at 600,000 ps
DRAM = 220  # a cold Idx Filter load: 100 ns at 2.2 GHz


def lone_pr_ps(switch_on: bool) -> int:
    assert snic_ps(FIRST_CYCLE - 1) < HOST_READY <= snic_ps(FIRST_CYCLE)
    # the idx is read in cycle 1321 and decided after its filter load; then the round trip and the
    # command's completion notification
    return written_ps(FIRST_CYCLE + 1 + DRAM, switch_on) + PCIE


def written_ps(decided: int, switch_on: bool = True) -> int:
    """When the property of a lone read PR decided at SNIC cycle ``decided`` (node 0 or 1 -> an owner
    in the other rack, 2 racks x 2 nodes) is in host memory."""
    t = nic(snic_ps(decided))  # NIC concatenation
    t = hop(t, READ_SER)  # host 0 -> ToR 0
    t = hop(tor(t, switch_on), READ_SER)  # ToR 0 -> spine
    t = hop(t + SW, READ_SER)  # spine -> ToR 1
    t = hop(tor(t, switch_on), READ_SER)  # ToR 1 -> host 3
    t = nic(t + snic_ps(1) + 2 * PCIE)  # server read over PCIe, NIC concatenation
    t = hop(t, RESP_SER)
    t = hop(tor(t, switch_on), RESP_SER)
    t = hop(t + SW, RESP_SER)
    t = hop(tor(t, switch_on), RESP_SER)
    return t + PCIE  # PCIe write at the client


@pytest.mark.parametrize("switch_on", [True, False])
def test_lone_pr_time_and_counters_by_hand(switch_on):
    r = run(mat([(0, 3)], 4), mech={"switch": switch_on})
    done = np.rint(r.node_time_s * 1e12).astype(np.int64)
    assert done.tolist() == [lone_pr_ps(switch_on), 0, 0, 0]
    n = r.counters["nodes"]
    assert n["read_prs"] == [1, 0, 0, 0] and n["served"] == [0, 0, 0, 1] and n["responses"] == [1, 0, 0, 0]
    assert n["wire_tx"] == [80, 0, 0, 144] and n["wire_rx"] == [144, 0, 0, 80]
    assert n["payload_rx"] == [64, 0, 0, 0]
    s = r.counters["switches"]
    assert sum(s["read_lookups"]) == (2 if switch_on else 0)  # both ToRs look the read PR up
    assert sum(s["inserts"]) == (2 if switch_on else 0) and sum(s["read_hits"]) == 0
    assert r.active_nodes == ([0.0, 0.0, 0.0, 0.0, done[0] * 1e-12], [4, 3, 2, 1, 0])
    # tail node 0: one 64 B payload in one 144 B response on the wire, over its completion time
    assert r.tail["goodput"] == pytest.approx(64 / 144)
    assert r.tail["line_util"] == pytest.approx(144 / (50e9 * done[0] * 1e-12))
    assert r.tail["fc_rate"] == 0.0 and r.tail["prs_per_packet"] == 1.0


def column_reads(n_rows: int, rows: np.ndarray, cols: np.ndarray) -> sp.csr_matrix:
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_rows, n_rows))


@pytest.mark.parametrize("lsq", [64, 16])
def test_every_idx_costs_a_cycle_and_the_lsq_bounds_filter_loads(lsq):
    """NetSparse §5.3, by hand: the Logic Engine reads one idx per SNIC cycle, skipped ones too, and
    the LSQ holds `lsq` Idx Filter loads, each freed when its idx is decided. Node 0 (rows 0-19999 of
    80000, one RIG command) reads column 79999 (node 3) from each of its 20000 rows: one read PR, then
    19999 repeats (coalesced, then filtered once the response is in)."""
    a = column_reads(80_000, np.arange(20_000), np.full(20_000, 79_999))
    params = P4.replace(snic={"rig_batch_size": "inf", "lsq_entries": lsq})
    r = run(a, params=params)
    # Host side: 3 x 200 ns + 20000 idxs x 4 B at 128 GB/s (625 ns) = 1,225,000 ps = SNIC cycle 2695.
    first = 2695
    assert snic_ps(first) == 3 * PCIE + 625_000
    # idx 0 is read at `first`, its filter load misses to DRAM: decided at first + 1 + 220 = 2916.
    # idxs 1..lsq-1 are read one per cycle, hit L1 (4 cycles) and retire with it (in order).
    # idx lsq waits for idx 0's LSQ entry (freed at 2916); from there one idx per cycle, decided 5
    # cycles after it is read: the last, idx 19999, at 2916 + (19999 - lsq) + 5.
    last = first + 1 + DRAM + (19_999 - lsq) + 5
    assert written_ps(first + 1 + DRAM) < snic_ps(last)  # the response is in long before the scan ends
    assert round(r.node_time_s[0] * 1e12) == snic_ps(last) + PCIE  # then the completion notification
    n = r.counters["nodes"]
    assert (n["idxs"][0], n["read_prs"][0], n["filtered"][0] + n["coalesced"][0]) == (20_000, 1, 19_999)
    assert (n["mem_dram"][0], n["mem_l1"][0], n["commands"][0]) == (1, 19_999, 1)


def test_skipped_local_idxs_cost_a_cycle_each():
    """1000 local idxs before the remote one delay its PR by 1000 cycles (the Logic Engine reads
    every idx, NetSparse §5.3) and add 4000 B to the command's DMA."""
    a = column_reads(80_000, np.zeros(1001, np.int64), np.r_[np.arange(1000), 79_999])
    r = run(a, params=P4.replace(snic={"rig_batch_size": "inf"}))  # one command
    # 3 x 200 ns + 1001 x 4 B / 128 GB/s (31,281.25 ps, rounded up) = 631,282 ps -> SNIC cycle 1389.
    assert snic_ps(1388) < 3 * PCIE + 31_282 <= snic_ps(1389)
    assert round(r.node_time_s[0] * 1e12) == written_ps(1389 + 1000 + 1 + DRAM) + PCIE
    assert r.counters["nodes"]["local"][0] == 1000


def test_commands_go_to_the_free_unit_and_pay_the_host_round_trip():
    """NetSparse §5.1, by hand: batch 1, two client units, node 0's idxs [6 (node 3), 0 (local),
    4 (node 2)] are three commands. Unit 0 takes [6], unit 1 takes [0], finishes it at once, and the host
    hands it [4] (dynamic; round-robin would have queued it behind [6]'s round trip). Every command pays
    MMIO + DMA before its first idx and a completion notification after its last."""
    a = mat([(0, 6), (1, 0), (1, 4)], 8)
    r = run(a, params=P4.replace(snic={"rig_batch_size": 1, "rig_units": 4}))
    # Unit 1: its DMA queues behind unit 0's (32 ps each): ready at 600,064 ps, idx 0 read in cycle
    # 1321 and decided (local) at 1322 = 600,910 ps; the notification reaches the host at 800,910 ps.
    assert snic_ps(1322) == 600_910
    # Next command: MMIO + DMA request (400 ns) + 32 ps + DMA data (200 ns) = 1,400,942 ps -> cycle 3083.
    assert snic_ps(3082) < 600_910 + PCIE + 3 * PCIE + 32 <= snic_ps(3083)
    # Column 4 shares column 6's 64 B line of the filter bitmap, which unit 0's load brought into the
    # SNIC's LLC: 40 cycles. The last property is in at written_ps(3083 + 1 + 40), then the notification.
    assert round(r.node_time_s[0] * 1e12) == written_ps(3083 + 1 + 40) + PCIE
    n = r.counters["nodes"]
    assert (n["commands"][0], n["mem_dram"][0], n["mem_llc"][0], n["batch"][0]) == (3, 1, 1, 1)


@pytest.mark.parametrize(("owner_col", "waits"), [(4, [1, 0]), (6, [0, 1])])
def test_middle_pipes_take_one_pr_per_cycle(owner_col, waits):
    """NetSparse §6.2.1 (8 middle pipes), by hand: nodes 0 and 1 (rack 0) read one property of node 2 (column 4) or of
    node 3 (column 6) at the same moment. Ports of a ToR are its links in id order: hosts 0-1 (ToR 0)
    or 2-3 (ToR 1), then spines 0, 1, 2, ...; 4 ports per middle pipe. Routes use spine (src + dst) mod
    2 + ...: 0 -> 2 via spine 0 and 1 -> 2 via spine 1 (ToR 0 ports 2 and 3: both pipe 0, so the second
    read waits one cycle there); 0 -> 3 via spine 1 and 1 -> 3 via spine 2 (ports 3 and 4: pipes 0 and 1,
    no wait), and then both reads reach ToR 1 at once and egress to node 3's port: one waits there."""
    a = mat([(0, owner_col), (2, owner_col)], 8)
    r = run(a)
    assert r.counters["switches"]["pipe_wait_cycles"][:2] == waits
    assert sum(r.counters["switches"]["pipe_wait_cycles"]) == 1
    assert r.counters["switches"]["pipe_prs"][:2] == [4, 4]  # 2 reads + 2 responses through each ToR


def test_a_faster_middle_pipe_takes_both_reads_in_one_cycle():
    """The two reads of test_middle_pipes_take_one_pr_per_cycle (owner node 3) that meet in one middle
    pipe of ToR 1: with switch.middle_pipe_prs_per_cycle=2 the pipe takes both in the cycle they arrive,
    so nothing waits. The times do not move: there both reads enter one concatenation queue, whose
    125-cycle delay runs from the first one's entry, and leave in one packet either way."""
    a = mat([(0, 6), (2, 6)], 8)
    one, two = run(a), run(a, params=P4.replace(switch={"middle_pipe_prs_per_cycle": 2}))
    assert one.counters["switches"]["pipe_wait_cycles"][:2] == [0, 1]
    assert two.counters["switches"]["pipe_wait_cycles"][:2] == [0, 0]
    assert two.counters["switches"]["pipe_prs"] == one.counters["switches"]["pipe_prs"]
    assert two.node_time_s.tolist() == one.node_time_s.tolist()
    assert two.counters["switches"]["packets_out"] == one.counters["switches"]["packets_out"]


@pytest.mark.parametrize(("a_entries", "hits"), [([(0, 6), (2, 4), (3, 6)], [0, 1]),
                                                  ([(0, 4), (2, 6), (3, 4)], [1, 0])])
def test_each_middle_pipe_has_its_own_cache(a_entries, hits):
    """Node 0 reads a property; node 1 (same rack, 1-entry Pending PR Table) reads the same one after
    node 0's response came back through both ToRs. At ToR 0 the response entered the pipe of its
    ingress port (spine (owner + 0) mod 2...) and node 1's read goes to the pipe of its egress port
    (spine (owner + 1) ...): for owner 3 (column 6) spines 1 and 2, pipes 0 and 1, so it misses there
    and hits at ToR 1, where all of node 3's reads and responses use node 3's port; for owner 2
    (column 4) spines 0 and 1, both pipe 0: it hits at ToR 0. (One cache per ToR would hit at ToR 0 in
    both cases.)"""
    r = run(mat(a_entries, 8), params=P4.replace(snic={"pending_pr_table": 1, "rig_units": 2}))
    assert r.counters["switches"]["read_hits"][:2] == hits
    assert sum(r.counters["switches"]["read_hits"]) == 1


def test_coalesce_filter_and_cache_hit_by_hand():
    # 8 x 8, two rows per node. Node 0 reads column 6 (node 3) from both its rows.
    a = mat([(0, 6), (1, 6)], 8)
    one = P4.replace(snic={"rig_batch_size": "inf"})  # one command: one unit's Pending PR Table coalesces
    on = run(a, params=one)
    assert on.counters["nodes"]["coalesced"][0] == 1 and on.counters["nodes"]["read_prs"][0] == 1
    split = run(a)  # auto: one idx per command, two units, no coalescing across units (§5.3)
    assert split.counters["nodes"]["coalesced"][0] == 0 and split.counters["nodes"]["read_prs"][0] == 2
    off = run(a, params=one, mech={"coalesce": False})  # the filter bit is not set yet: a second PR goes out
    assert off.counters["nodes"]["read_prs"][0] == 2 and off.counters["nodes"]["filtered"][0] == 0
    assert off.counters["nodes"]["packets_tx"][0] == 1  # both PRs concatenated in one NIC packet
    # Node 1 (same rack) first reads column 4 (node 2) with a 1-entry Pending PR Table, so its read
    # of column 6 leaves after node 0's response has passed their ToR: a property-cache hit.
    b = mat([(0, 6), (2, 4), (3, 6)], 8)
    p1 = P4.replace(snic={"pending_pr_table": 1, "rig_units": 2})
    r = run(b, params=p1)
    n, s = r.counters["nodes"], r.counters["switches"]
    assert n["read_prs"][:2] == [1, 2]
    assert sum(s["read_hits"]) == 1 and n["served"] == [0, 0, 1, 1]
    assert r.tail["pcache_hit_rate"] == pytest.approx(1 / sum(s["read_lookups"]))


@pytest.mark.parametrize("mech", [{}, {"concat_nic": False}, {"switch": False},
                                  {"concat_nic": False, "switch": False}])
def test_analytic_cross_check(mech):
    params = HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 4}})
    topo = build_topology(params)
    for src, dst in [(0, 1), (0, 5), (6, 3)]:
        a = mat([(src, dst)], 8)
        r = run(a, params=params, mech=mech)
        want = single_pr(topo, params, src, dst, 16, {**check_mechanisms(None), **mech}).total_s
        # Cycle quantisation: a queue opened mid-cycle expires counting from that cycle's start, so
        # each concatenation stage may flush up to one cycle (<= 500 ps) earlier than the analytic sum.
        tors = 1 if src // 4 == dst // 4 else 2
        stages = 2 * (mech.get("concat_nic", True) + tors * mech.get("switch", True))
        assert abs(r.node_time_s[src] - want) <= stages * 500e-12 + 4e-12


def random_matrix(n=2000, nnz=3000, seed=0):
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, n, nnz), rng.integers(0, n, nnz)
    a = sp.csr_matrix((np.ones(nnz), (r, c)), shape=(n, n))
    a.sum_duplicates()
    return a


P8 = HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 4}})


@pytest.mark.parametrize("stage", STAGES)
def test_invariants(stage):
    a = random_matrix()
    w = definitions.workload(a, 8)
    r = simulate(a, w, P8, 16, "spmm", mechanisms_up_to(stage))
    n = {k: np.asarray(v) for k, v in r.counters["nodes"].items()}
    answered_exactly_once(r)  # and every response's payload arrives
    # every remote idx is a PR, filtered or coalesced; local idxs are the rest
    assert (n["idxs"] == w.sa_prs_per_node + n["local"]).all()
    prs_filtered_coalesced_within_bound(r, w)
    # bytes conserved: without the switch, packets are untouched
    if stage != "switch":
        assert n["wire_tx"].sum() == n["wire_rx"].sum() and n["packets_tx"].sum() == n["packets_rx"].sum()
    assert r.counters["max_packet_wire_bytes"] <= P8.headers.mtu_bytes
    # NetSparse <= SA (every remote nonzero alone in a read and a response packet) <= SU (no headers)
    sa = w.sa_prs_per_node.sum() * (80 + 80 + 64)
    su = (w.n_cols - w.owned_cols).sum() * 64
    assert r.counters["wire_bytes_total"] <= sa <= su
    assert (r.node_time_s > 0).all()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 300), density=st.floats(0.002, 0.05), seed=st.integers(0, 2**31),
       nodes=st.sampled_from([4, 8]), stage=st.sampled_from(STAGES))
def test_invariants_on_random_matrices(n, density, seed, nodes, stage):
    """The invariants that hold for every matrix. (SA <= SU, above, needs sparse-enough rows: on a
    dense-ish matrix each node needs most remote rows anyway, and SA's per-PR headers cost more.)"""
    a = random_matrix(n, max(1, int(density * n * n)), seed)
    params = HardwareParams.from_dict({"cluster": {"nodes": nodes, "rack_size": 2}})
    w = definitions.workload(a, nodes)
    r = simulate(a, w, params, 16, "spmm", mechanisms_up_to(stage))
    answered_exactly_once(r)
    prs_filtered_coalesced_within_bound(r, w)
    assert r.counters["max_packet_wire_bytes"] <= params.headers.mtu_bytes
    assert r.counters["wire_bytes_total"] <= w.sa_prs_per_node.sum() * (80 + 80 + 64)


def prs_filtered_coalesced_within_bound(r, w) -> None:
    """Every remote idx is a read PR, filtered or coalesced, and on every node with remote idxs
    fc_rate <= 1 - useful / sa_prs (a node can skip at most its repeats)."""
    n = {k: np.asarray(v) for k, v in r.counters["nodes"].items()}
    assert (n["read_prs"] + n["filtered"] + n["coalesced"] == w.sa_prs_per_node).all()
    remote = w.sa_prs_per_node > 0
    fc = (n["filtered"] + n["coalesced"])[remote] / w.sa_prs_per_node[remote]
    assert (fc <= 1 - w.useful_per_node[remote] / w.sa_prs_per_node[remote] + 1e-12).all()


def test_fewer_rig_units_or_a_smaller_batch_take_longer():
    """RIG units and the batch size bound the PRs in flight (Figs. 15, 16): with batches of a few
    idxs (each paying the host's round trip), or one unit working through many small commands, a node
    waits for round trips it otherwise overlaps (auto gives each of 16 units one command of ~47 idxs)."""
    a = random_matrix(n=2000, nnz=6000, seed=5)

    def time(**snic) -> float:
        return run(a, params=P8.replace(snic=snic)).node_time_s.max()

    assert time(rig_batch_size=4) > 2 * time()
    assert time(rig_units=2, rig_batch_size=16) > 2 * time(rig_batch_size=16)


def test_the_client_unit_count_is_the_runs_one_setting():
    """``snic.rig_client_units`` reaches the simulator's SimConfig and the training path's RigNode alike, and
    one client working through many small commands takes longer than four."""
    from hw_models import unit_args, units
    from hw_models.simulator import sim_config

    p = P8.replace(snic={"rig_units": 8, "rig_client_units": 2})
    mech = mechanisms_up_to(STAGES[-1])
    c = sim_config(p, 16, mech)
    assert (c.client_units, c.server_units) == (2, 6)
    assert units.RigNode(0, [0, 4, 8], **unit_args.rig_node(p)).rig_client_units == 2
    half = sim_config(P8.replace(snic={"rig_units": 8}), 16, mech)
    assert (half.client_units, half.server_units) == (4, 4)
    a = random_matrix(n=2000, nnz=6000, seed=5)

    def time(clients: int) -> float:
        snic = {"rig_units": 8, "rig_client_units": clients, "rig_batch_size": 16}
        return run(a, params=P8.replace(snic=snic)).node_time_s.max()

    assert time(1) > 2 * time(4)


@pytest.mark.parametrize("bad", [0, 8, 2.5, -1])
def test_a_client_unit_count_that_leaves_no_server_is_one_error(bad):
    with pytest.raises(ConfigError, match="snic.rig_client_units must be"):
        P8.replace(snic={"rig_units": 8, "rig_client_units": bad})


def test_infinite_cache_hits_at_least_as_often():
    a = random_matrix(n=3000, nnz=12000, seed=1)
    w = definitions.workload(a, 8)
    rates = {}
    for size in (8 * 8192, 32 * 2**20, "inf"):  # 8192 B per middle pipe: one set of 16 x 512 B lines
        p = P8.replace(property_cache={"size_bytes": size})
        rates[size] = simulate(a, w, p, 16, "spmm", None).tail["pcache_hit_rate"]
    assert rates["inf"] >= rates[32 * 2**20] >= rates[8 * 8192]
    assert rates["inf"] > 0


def test_unbounded_cache_equals_one_too_large_to_evict():
    """``inf`` (the unbounded cache, sized by what is inserted) times and counts exactly as a set-
    associative cache with a way for every property of the matrix in each middle pipe."""
    a = random_matrix(n=3000, nnz=12000, seed=1)
    w = definitions.workload(a, 8)
    pc, pipes = P8.property_cache, P8.switch.pipes
    line = -(-64 // pc.segment_bytes) * pc.segment_bytes  # K=16 fp32: one 64 B line a property
    whole = pipes * -(-3000 // pc.ways) * pc.ways * line
    runs = [simulate(a, w, P8.replace(property_cache={"size_bytes": size}), 16, "spmm", None)
            for size in ("inf", whole)]
    assert np.array_equal(runs[0].node_time_s, runs[1].node_time_s)
    drop = {"wall_clock_s"}
    assert {k: v for k, v in runs[0].counters.items() if k not in drop} == \
        {k: v for k, v in runs[1].counters.items() if k not in drop}
    assert runs[0].tail == runs[1].tail and runs[0].tail["pcache_hit_rate"] > 0


def test_deterministic():
    a = random_matrix(seed=2)
    x, y = run(a, params=P8), run(a, params=P8)
    assert np.array_equal(x.node_time_s, y.node_time_s)
    cx = {k: v for k, v in x.counters.items() if k != "wall_clock_s"}
    cy = {k: v for k, v in y.counters.items() if k != "wall_clock_s"}
    assert cx == cy and x.tail == y.tail and x.active_nodes == y.active_nodes


def test_concat_nic_packs_prs_and_infinite_delay_drains():
    a = random_matrix(seed=3)
    w = definitions.workload(a, 8)
    alone = simulate(a, w, P8, 16, "spmm", mechanisms_up_to("coalesce"))
    packed = simulate(a, w, P8, 16, "spmm", mechanisms_up_to("concat_nic"))
    assert alone.tail["prs_per_packet"] == 1.0 and packed.tail["prs_per_packet"] > 1.0
    inf = simulate(a, w, P8.replace(snic={"concat_delay_cycles": "inf"}, switch={"concat_delay_cycles": "inf"}),
                   16, "spmm", None)
    assert inf.counters["infinite_delay_drains"] >= 1
    assert sum(inf.counters["nodes"]["responses"]) == sum(inf.counters["nodes"]["read_prs"])


def test_report_fills_netsparse_and_ablation():
    a = random_matrix(seed=4)
    rep = analysis.analyze(a, P8, k=16, simulator=simulate)
    ns = rep["strategies"]["netsparse"]
    assert ns["comm_time_s"] > 0 and rep["speedup"]["netsparse_vs_su_opt"] is not None
    assert [s["stage"] for s in rep["ablation"]] == list(STAGES)
    assert rep["active_nodes"]["count"][0] == 8 and rep["active_nodes"]["count"][-1] == 0


def test_bad_input():
    a = mat([(0, 3)], 4)
    with pytest.raises(ConfigError):
        run(a, mech={"rig": False})
    with pytest.raises(ConfigError):
        run(a, mech={"bogus": True})
    with pytest.raises(ConfigError):
        HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 2, "topology": "torus"}})
    with pytest.raises(ConfigError):
        P4.replace(snic={"rig_units": 0})
    with pytest.raises(ConfigError):
        P4.replace(link={"bandwidth_gbps": -1})
    with pytest.raises(ConfigError, match="larger than the graph's 4 rows"):
        run(a, params=HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 2}}))  # nodes > rows
    from hw_models.native import sim as units
    with pytest.raises(AttributeError):  # the config is a C++ struct: no field but the declared ones
        units.SimConfig().nope = 1
    # a config nobody filled (all zero) is refused, as a ConfigError (typed C++ error), not run
    with pytest.raises(ConfigError, match="property bytes must be > 0"):
        units.simulate(np.array([0, 0]), np.zeros(0, np.int64), np.array([0, 1]), np.array([0, 1]),
                       units.SimConfig(), np.array([0, 1]), np.array([1, 0]), np.ones(2), np.zeros(2, np.int64),
                       np.zeros(1, np.int64), np.full((1, 1, 1), -1))


def test_paper_shape_luxembourg_osm():
    """Road graph (like europe_osm in Table 1): SA redundancy near 0, NetSparse far ahead of SUOpt."""
    import scipy.io

    a = sp.csr_matrix(scipy.io.mmread(DATA / "graphs" / "luxembourg_osm.mtx.gz"))
    rep = analysis.analyze(a, HardwareParams(), k=16, simulator=simulate, ablation=False)
    assert rep["redundancy"]["sa_redundant_per_useful"] < 0.1
    assert rep["speedup"]["netsparse_vs_su_opt"] > 5


def answered_exactly_once(r) -> None:
    """Every read PR is answered once (by its owner or a ToR cache hit) and every payload arrives."""
    n = {k: np.asarray(v) for k, v in r.counters["nodes"].items()}
    s = {k: np.asarray(v) for k, v in r.counters["switches"].items()}
    assert n["read_prs"].sum() == n["served"].sum() + s["read_hits"].sum() == n["responses"].sum()
    assert (n["read_prs"] == n["responses"]).all()
    assert n["payload_rx"].sum() == n["responses"].sum() * 64


def test_credits_return_one_link_latency_after_the_bytes_leave():
    """Table 5 SNIC Rx buffer with delayed credits, by hand. Node 0 reads columns 6
    and 7 (node 3) with K=256: each response is 50 + 12 + 18 + 1024 = 1104 B, one per packet, and they
    leave node 3 back to back. With a 1500 B Rx buffer at node 0 the second response waits at the ToR
    until the first is written to host memory (PCIe, 200 ns) and the credit is back at the ToR (one
    link latency, 450 ns); it then crosses the ToR -> host link (450 ns) that it would otherwise have
    overlapped with the first. So node 0 finishes PCIE + 2 LINK later; instant credits would give
    PCIE + LINK. (Switch mechanisms off: a ToR pipe would put packets on its 2 GHz cycle grid.)"""
    a = mat([(0, 6), (0, 7)], 8)
    roomy = run(a, k=256, mech={"switch": False})
    tiny = run(a, params=P4.replace(snic={"rx_buffer_bytes": 1500}), k=256, mech={"switch": False})
    late = round((tiny.node_time_s[0] - roomy.node_time_s[0]) * 1e12)
    assert late == PCIE + 2 * LINK
    assert tiny.counters["nodes"]["credit_waits"][0] == 1 and roomy.counters["nodes"]["credit_waits"][0] == 0
    assert tiny.counters["nodes"]["rx_peak"][0] == 1104  # one response at a time


@pytest.mark.parametrize(("limit", "counter"), [({"snic": {"tx_buffer_bytes": 1500}}, "tx_waits"),
                                              ({"snic": {"rx_buffer_bytes": 1500}}, "credit_waits"),
                                              ({"switch": {"buffer_bytes": 1500}}, "switch_credit_waits")])
def test_small_buffers_are_lossless(limit, counter):
    """Every buffer bound (SNIC Tx, SNIC Rx, the switch's shared buffer) makes someone wait for room
    (the counter that says who); nothing is dropped and every read PR is answered once. (Waiting can
    reorder work, so the kernel is not always slower: the Rx case above is worked out by hand.)"""
    a = random_matrix(n=3000, nnz=12000, seed=5)
    w = definitions.workload(a, 8)
    roomy = simulate(a, w, P8, 16, "spmm", None)
    tiny = simulate(a, w, P8.replace(**limit), 16, "spmm", None)
    for r in (roomy, tiny):
        answered_exactly_once(r)
        assert (np.asarray(r.counters["nodes"]["idxs"]) == w.sa_prs_per_node + r.counters["nodes"]["local"]).all()
    n, s = tiny.counters["nodes"], tiny.counters["switches"]
    waits = sum(s["credit_waits"]) if counter == "switch_credit_waits" else sum(n[counter])
    assert waits > 0
    for key in ("tx_waits", "rx_waits", "credit_waits"):
        assert sum(roomy.counters["nodes"][key]) == 0  # Table 5's 2 MB never fill here
    assert sum(roomy.counters["switches"]["credit_waits"]) == 0  # nor 96 MB


def test_buffer_bad_input():
    a = mat([(0, 3)], 4)
    with pytest.raises(ConfigError, match="rx_buffer_bytes"):
        run(a, params=P4.replace(snic={"rx_buffer_bytes": 1000}))
    with pytest.raises(ConfigError, match="buffer_bytes"):
        P4.replace(switch={"buffer_bytes": 0})


def test_infinite_cache_on_a_tiny_matrix():
    """``inf`` sizes the cache from the matrix; with 34 columns that is below one set of 512 B lines,
    which the cache unit refuses, so the capacity is at least one set."""
    import scipy.io
    from conftest import DATA

    a = sp.csr_matrix(scipy.io.mmread(DATA / "mtx_small" / "karate.mtx"))
    w = definitions.workload(a, 4)
    p = P4.replace(property_cache={"size_bytes": "inf"})
    assert simulate(a, w, p, 16, "spmm", None).tail["pcache_hit_rate"] >= 0


def test_auto_batch_size_by_hand():
    """batch_size=auto = min(32768, max(own, ceil(n_max / 2U))), U = 16 client units, s = ceil(n / U):
    own = s below 8192, else the power of two nearest 2 s (log scale: 2^14.5 = 23170.5 splits 16384/32768)."""
    assert auto_batch_size(3104, 3104) == 194  # delaunay-like: every node alike, one command per unit
    assert auto_batch_size(4879, 58434) == 1827  # a light node next to a heavy one: ceil(58434 / 32)
    assert auto_batch_size(58434, 58434) == 3653  # the heavy node itself: ceil(58434 / 16)
    assert auto_batch_size(16 * 8191, 16 * 8191) == 8191  # the last short stream: s itself
    assert auto_batch_size(16 * 8192, 16 * 8192) == 16384  # the first long one: 2 s = 16384 exactly
    assert auto_batch_size(16 * 11585, 16 * 11585) == 16384  # 2 s = 23170 < 23170.5
    assert auto_batch_size(16 * 11586, 16 * 11586) == 32768  # 2 s = 23172 > 23170.5
    assert auto_batch_size(248_920, 248_920) == 32768  # arabic@0.05-like: s = 15558, 2 s = 31116
    assert auto_batch_size(42_158, 42_158) == 2635  # europe@0.05-like: a short stream
    assert auto_batch_size(5_000_000, 5_000_000) == 32768  # paper scale: the §8 default caps it
    assert auto_batch_size(0, 0) == 1
    assert auto_batch_size(100, 100, P4.replace(snic={"rig_units": 4})) == 50  # 2 client units
    with pytest.raises(ValueError, match="max node idxs"):
        auto_batch_size(10, 5)


def test_auto_batch_size_in_the_simulator():
    """Node 0 (rows 0-199) has 100 nonzeros, node 1 (rows 200-399) has 20: node 0 gets batches of
    max(ceil(100/16), ceil(100/32)) = 7, so 15 commands; node 1 gets max(2, 4) = 4, so 5 commands;
    nodes without nonzeros run none."""
    rows = np.r_[np.zeros(100, np.int64), np.full(20, 200)]
    cols = np.r_[np.arange(100) * 7 + 100, np.arange(20) + 500]
    r = run(column_reads(800, rows, cols))
    n = r.counters["nodes"]
    assert n["batch"] == [7, 4, 4, 4] and n["commands"] == [15, 5, 0, 0]


def test_a_single_rig_unit_is_one_error():
    """A RIG node needs a client and a server unit; the simulator and units.RigNode then split any
    count the same way (half, rounded down, are clients)."""
    with pytest.raises(ConfigError, match="snic.rig_units must be at least 2"):
        P8.replace(snic={"rig_units": 1})
    from hw_models import unit_args, units
    from hw_models.simulator import sim_config

    for n in (2, 3, 7):
        p = P8.replace(snic={"rig_units": n})
        c = sim_config(p, 16, dict.fromkeys(("filter", "coalesce", "concat_nic", "switch"), True))
        node = units.RigNode(0, [0, 10, 20], **unit_args.rig_node(p))
        clients = node.rig_client_units
        assert (c.client_units, c.server_units) == (clients, n - clients) == (n // 2, n - n // 2)
