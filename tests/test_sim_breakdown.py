"""The simulator's critical-path breakdown and per-pipe switch counters (docs/simulator.md, "Where a
node's time goes"): hand-worked cases (a lone read PR, a full Pending PR Table, a hot owner's link),
sums to every node's time on random and shared graphs, and the report, summary and plot that carry it.
Expected numbers are worked out here from Table 5, with the helpers of test_simulator."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from conftest import DATA
from test_simulator import (
    DRAM,
    FIRST_CYCLE,
    HOST_READY,
    LINK,
    P4,
    PCIE,
    READ_SER,
    RESP_SER,
    SW,
    mat,
    nic,
    run,
    snic_cycle,
    snic_ps,
)

from hw_models import analysis, breakdown, definitions
from hw_models.params import HardwareParams
from hw_models.simulator import mechanisms_up_to

SCAN = ("scan_local", "scan_filtered", "scan_coalesced", "scan_issued", "filter_lsq", "filter_l1", "filter_l2",
        "filter_llc", "filter_dram", "pending_full", "tx_link")


def ps_of(r, node: int) -> dict[str, int]:
    return {b: round(s * 1e12) for b, s in r.critical_path.of(node).items()}


def spread(cycles: dict[str, int], span: int) -> dict[str, int]:
    """The documented split of a scan's ps over its SNIC cycles: each share rounded down, the remainder
    to the largest."""
    total = sum(cycles.values())
    out = {b: c * span // total for b, c in cycles.items()}
    big = max(cycles, key=cycles.__getitem__)
    out[big] += span - sum(out.values())
    return out


def add(into: dict[str, int], more: dict[str, int]) -> None:
    for b, v in more.items():
        into[b] = into.get(b, 0) + v


def tor_pieces(t: int, switch_on: bool, arrivals: list | None = None) -> tuple[int, dict[str, int]]:
    """An extended ToR reached at t (its switch latency still to come): switch latency, the middle pipe's
    one cycle and 16-cycle lookup (from the cycle it arrived in), then 125 cycles in its concatenator."""
    if not switch_on:
        return t + SW, {"switch_latency": SW}
    arrived = t + SW
    if arrivals is not None:
        arrivals.append(arrived)
    done = ((arrived + 16 * 500) // 500) * 500
    return done + 125 * 500, {"switch_latency": SW, "switch_middle": done - arrived, "switch_concat": 125 * 500}


def journey(issued: int, switch_on: bool, arrivals: list | None = None) -> tuple[int, dict[str, int]]:
    """A lone read PR from node 0 to node 3 (the other rack) and its response, piece by piece (the same
    walk as test_simulator.written_ps); ``arrivals`` gets the times it reaches a middle pipe."""
    j: dict[str, int] = {}
    t = nic(issued)
    add(j, {"nic_concat": t - issued})
    for ser, owner_side in ((READ_SER, False), (RESP_SER, True)):
        add(j, {"tx_link": ser + LINK})                       # host -> its ToR
        t, p = tor_pieces(t + ser + LINK, switch_on, arrivals)
        add(j, p)
        add(j, {"switch_links": 2 * (ser + LINK), "switch_latency": SW})  # ToR -> spine -> ToR
        t, p = tor_pieces(t + 2 * (ser + LINK) + SW, switch_on, arrivals)
        add(j, p)
        add(j, {"rx_link": ser + LINK})                        # ToR -> host
        t += ser + LINK
        if not owner_side:  # the owner's server unit: one cycle, a PCIe read, then its NIC
            served = t + snic_ps(1) + 2 * PCIE
            add(j, {"remote_server": served - t})
            t = nic(served)
            add(j, {"nic_concat": t - served})
    add(j, {"rx": PCIE})
    return t + PCIE, j


def assert_lone_pr_path(r, switch_on: bool = True) -> None:
    """Node 0's path is one read PR's, issued at the first scan cycle after a cold DRAM filter load: the
    host round trip, the scan and the load, the PR's journey there and back, the completion notification."""
    decided = FIRST_CYCLE + 1 + DRAM
    written, want = journey(snic_ps(decided), switch_on)
    add(want, {"host": snic_ps(FIRST_CYCLE) + PCIE})
    add(want, spread({"scan_issued": 1, "filter_dram": DRAM}, snic_ps(decided) - snic_ps(FIRST_CYCLE)))
    got = ps_of(r, 0)
    assert {b: v for b, v in got.items() if v} == want
    assert sum(got.values()) == round(r.node_time_s[0] * 1e12) == written + PCIE


@pytest.mark.parametrize("switch_on", [True, False])
def test_lone_pr_breakdown_by_hand(switch_on):
    """Node 0 reads one property of node 3: the host round trip to the first scan cycle, one scan cycle
    and a cold DRAM filter load, the read PR's journey there and back, and the completion notification."""
    r = run(mat([(0, 3)], 4), mech={"switch": switch_on})
    assert_lone_pr_path(r, switch_on)
    assert all(not any(ps_of(r, p).values()) for p in (1, 2, 3))  # nothing to gather, no time


def crossing_pairs(shared_spine: bool) -> list[tuple[int, dict[str, int]]]:
    """Nodes 0 and 1 each read one property of the other rack (nodes 3 and 2), in lockstep, with no
    switch stage. When both pairs share a spine, the second read waits for the first on ToR 0's uplink
    to it, and the second response on ToR 1's uplink for whatever is left of the first's; the waits are
    switch_links time. Returns (written, breakdown) of both nodes, the first through first."""
    decided = FIRST_CYCLE + 1 + DRAM
    free: dict[str, int] = {}  # a shared ToR -> spine link: when it is free again
    out = []
    for _ in range(2):
        j: dict[str, int] = {"host": snic_ps(FIRST_CYCLE) + PCIE}
        add(j, spread({"scan_issued": 1, "filter_dram": DRAM}, snic_ps(decided) - snic_ps(FIRST_CYCLE)))
        t = nic(snic_ps(decided))
        add(j, {"nic_concat": t - snic_ps(decided)})
        for ser, uplink, owner_side in ((READ_SER, "tor0", False), (RESP_SER, "tor1", True)):
            ready = t + ser + LINK + SW  # at its ToR, out of the switch latency
            start = max(ready, free.get(uplink, 0)) if shared_spine else ready
            free[uplink] = start + ser
            add(j, {"tx_link": ser + LINK, "switch_latency": 3 * SW, "rx_link": ser + LINK,
                    "switch_links": start - ready + 2 * (ser + LINK)})
            t = start + 2 * (ser + LINK) + 2 * SW + ser + LINK
            if not owner_side:
                served = t + snic_ps(1) + 2 * PCIE
                add(j, {"remote_server": served - t})
                t = nic(served)
                add(j, {"nic_concat": t - served})
        add(j, {"rx": PCIE})
        out.append((t + PCIE, j))
    return out


@pytest.mark.parametrize("choice", ["pair", "pair_hash", "per_packet"])
def test_crossing_pairs_on_one_spine_by_hand(choice):
    """topology.leafspine_spine_choice: pairs (0, 3) and (1, 2) share spine 1 under pair ((0 + 1) mod 16
    = (1 + 0) mod 16), and so under per_packet too, whose first packet of a pair takes the pair's own
    spine; pair_hash puts them and their responses on four spines (13, 2, 11, 9, checked against a
    Python splitmix64 in test_sim_spine_choice). Sharing costs the second node its read's READ_SER and
    what is left of the first response's serialisation when its own reaches ToR 1, in switch_links."""
    p = P4.replace(topology={"leafspine_spine_choice": choice})
    r = run(mat([(0, 3), (1, 2)], 4), params=p, mech={"switch": False})
    want = crossing_pairs(choice != "pair_hash")
    if choice == "pair_hash":
        assert want[0] == want[1] == journey_no_switch()
    else:
        assert want[1][1]["switch_links"] - want[0][1]["switch_links"] > READ_SER  # the read's wait, then more
    got = sorted(({b: v for b, v in ps_of(r, n).items() if v} for n in (0, 1)), key=lambda g: sum(g.values()))
    assert got == [w for _, w in want]
    assert sorted(round(x * 1e12) for x in r.node_time_s[:2]) == [w + PCIE for w, _ in want]


def journey_no_switch() -> tuple[int, dict[str, int]]:
    """The lone PR's walk of test_lone_pr_breakdown_by_hand without the switch stage."""
    decided = FIRST_CYCLE + 1 + DRAM
    written, j = journey(snic_ps(decided), False)
    add(j, {"host": snic_ps(FIRST_CYCLE) + PCIE})
    add(j, spread({"scan_issued": 1, "filter_dram": DRAM}, snic_ps(decided) - snic_ps(FIRST_CYCLE)))
    return written, j


def one_command(local_idxs: str) -> HardwareParams:
    """One command per node (batch 1 would put each idx on its own unit, in parallel)."""
    return P4.replace(snic={"rig_local_idxs": local_idxs, "rig_batch_size": "inf"})


@pytest.mark.parametrize("local_idxs", ["scan", "host_filtered"])
def test_local_idxs_scan_or_host_filtered_by_hand(local_idxs):
    """Node 0 (columns 0-1 of 8) reads idxs 0, 1 (its own) and 6 (node 3's). Scanned, each local idx
    takes one SNIC cycle before idx 6 is read; filtered by the host (snic.rig_local_idxs), the command
    carries idx 6 alone and the node's time is the lone read PR's: two cycles shorter, no scan_local.
    The DMA's 8 fewer bytes do not move the first scan cycle (600,094 ps and 600,032 ps both fall in
    cycle 1320, so the scan starts in 1321 either way)."""
    r = run(mat([(0, 0), (0, 1), (0, 6)], 8), params=one_command(local_idxs))
    assert snic_cycle(3 * PCIE + 94) == snic_cycle(HOST_READY) == FIRST_CYCLE - 1  # 12 B vs 4 B of idx DMA
    local = 2 if local_idxs == "scan" else 0
    decided = FIRST_CYCLE + local + 1 + DRAM
    written, want = journey(snic_ps(decided), True)
    add(want, {"host": snic_ps(FIRST_CYCLE) + PCIE})
    add(want, spread({"scan_local": local, "scan_issued": 1, "filter_dram": DRAM} if local else
                     {"scan_issued": 1, "filter_dram": DRAM}, snic_ps(decided) - snic_ps(FIRST_CYCLE)))
    got = ps_of(r, 0)
    assert {b: v for b, v in got.items() if v} == want
    assert sum(got.values()) == round(r.node_time_s[0] * 1e12) == written + PCIE
    assert r.counters["nodes"]["local"][0] == local and r.counters["nodes"]["idxs"][0] == local + 1


def test_host_filtered_local_idxs_save_exactly_their_scan_cycles():
    """The two runs above differ by the two local idxs' scan cycles: the read PR issues 2 cycles (909 ps)
    earlier, and the owner's server unit and NIC, which work on SNIC cycle boundaries, pass that on as
    between 2 and 3 cycles (1,000 ps by the walk of journey())."""
    a = mat([(0, 0), (0, 1), (0, 6)], 8)
    t = {v: round(run(a, params=one_command(v)).node_time_s[0] * 1e12)
         for v in ("scan", "host_filtered")}
    d = FIRST_CYCLE + 1 + DRAM
    drop = journey(snic_ps(d + 2), True)[0] - journey(snic_ps(d), True)[0]
    assert t["scan"] - t["host_filtered"] == drop
    assert snic_ps(2) <= drop <= snic_ps(3)


def test_full_pending_pr_table_by_hand():
    """One Pending PR Table entry: node 0's second idx (7, node 3) waits for the first's (6) response.
    Its wait is charged to the table, then its own PR's journey is the rest of the node's time."""
    a = mat([(0, 6), (0, 7)], 8)
    params = P4.replace(snic={"pending_pr_table": 1, "rig_batch_size": "inf"})  # one command
    r = run(a, params=params)
    first = snic_cycle(3 * PCIE + 63) + 1  # two 4 B idxs at 128 GB/s: 62.5 ps, rounded up
    assert snic_ps(first - 1) < 3 * PCIE + 63 <= snic_ps(first)
    decided0 = first + 1 + DRAM  # idx 6: cold DRAM load
    written0, _ = journey(snic_ps(decided0), True)
    resumed = snic_cycle(written0 - 1) + 1  # idx 7 (an L1 hit long done) is decided when the entry frees
    written1, want = journey(snic_ps(resumed), True)
    add(want, {"host": snic_ps(first) + PCIE})
    add(want, spread({"scan_issued": 1, "filter_dram": DRAM, "pending_full": resumed - decided0},
                     snic_ps(resumed) - snic_ps(first)))
    got = ps_of(r, 0)
    assert {b: v for b, v in got.items() if v} == want
    assert sum(got.values()) == round(r.node_time_s[0] * 1e12) == written1 + PCIE
    assert r.counters["nodes"]["stalls"][0] == 1
    assert max(got, key=got.__getitem__) == "pending_full"


def test_a_hot_owners_uplink_bounds_its_readers():
    """Three nodes of one rack read 400 distinct properties each from node 1: 1,200 responses (98 B each
    in full packets) share node 1's 400 Gb/s uplink, 8.6 us of serialisation alone, while each reader's
    own scan takes under 1 us. The last reader is bound by that Tx link: at least the other readers'
    responses' serialisation queued ahead of its last one."""
    n = 1600
    rows = np.r_[np.full(400, 0), np.full(400, 800), np.full(400, 1200)]
    cols = np.r_[np.arange(400, 800), np.arange(400, 800), np.arange(400, 800)]
    a = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    p = HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 4}})
    r = run(a, params=p)
    tail = int(np.argmax(r.node_time_s))
    got = r.critical_path.of(tail)
    assert max(got, key=got.__getitem__) == "tx_link"
    per_resp = 18 + 64  # PR header + 16 fp32
    assert got["tx_link"] > 800 * per_resp / 50e9  # two other readers' responses go first
    assert sum(got.values()) == pytest.approx(r.node_time_s[tail], rel=0, abs=1e-15)


def _sums_exactly(r) -> None:
    ps = np.rint(r.critical_path.node_s * 1e12).astype(np.int64)
    assert (ps >= 0).all()
    assert ps.sum(axis=1).tolist() == np.rint(r.node_time_s * 1e12).astype(np.int64).tolist()


@pytest.mark.parametrize("stage", ["rig", "filter", "coalesce", "concat_nic", "switch"])
def test_breakdown_sums_to_every_node_time(stage):
    rng = np.random.default_rng(3)
    n, nnz = 3000, 20000
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    p = HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 4},
                                  "snic": {"pending_pr_table": 16, "tx_buffer_bytes": 3000}})
    _sums_exactly(run(a, params=p, mech=mechanisms_up_to(stage)))


def test_host_filtered_commands_carry_exactly_the_remote_idxs():
    """On a random stream, host_filtered leaves each node's remote idxs (counted here with numpy from the
    partition) and no local one; the breakdown still sums to every node's time."""
    rng = np.random.default_rng(5)
    n, nnz = 3000, 20000
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    p = HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 4},
                                  "snic": {"rig_local_idxs": "host_filtered", "rig_batch_size": 64}})
    r = run(a, params=p)
    w = definitions.workload(a, 8)
    remote = [int(np.sum((c < w.col_bounds[q]) | (c >= w.col_bounds[q + 1])))
              for q in range(8) for c in [a.indices[a.indptr[w.row_bounds[q]]:a.indptr[w.row_bounds[q + 1]]]]]
    nodes = r.counters["nodes"]
    assert nodes["idxs"] == remote and nodes["local"] == [0] * 8
    assert nodes["commands"] == [-(-m // 64) for m in remote]  # batches of 64 remote idxs
    _sums_exactly(r)


@pytest.fixture(scope="module")
def ego_twitter():
    return sp.csr_matrix(scipy.io.mmread(DATA / "graphs" / "ego-twitter.mtx.gz"))


def test_breakdown_sums_on_a_shared_graph(ego_twitter):
    p = HardwareParams.from_dict({"cluster": {"nodes": 32, "rack_size": 8}})
    r = run(ego_twitter, params=p)
    _sums_exactly(r)
    # the plotted series: at every time bin the stacked resources are the nodes active then (on average
    # over the bin), worked out here from the step series of node finishes
    cp = breakdown.active_by_bound(r.critical_path, bins=50)
    end, t = float(r.node_time_s.max()), np.asarray(cp["t_s"])
    width = end / 50
    active = [sum(min(max(f - (c - width / 2), 0.0), width) for f in r.node_time_s) / width for c in t]
    assert np.sum(list(cp["nodes"].values()), axis=0) == pytest.approx(active, rel=1e-9, abs=1e-9)


def test_pipe_counters_by_hand():
    """The lone PR of test_lone_pr_breakdown_by_hand: at each ToR its read (egress port: the spine
    uplink) and its response (ingress port: the same uplink) pass the same middle pipe, one PR per packet
    and no queue; the cache misses the read and keeps the response; each waits 125 cycles to be sent."""
    r = run(mat([(0, 3)], 4))
    arrivals: list = []
    journey(snic_ps(FIRST_CYCLE + 1 + DRAM), True, arrivals)  # read at ToR 0, ToR 1; response at ToR 1, ToR 0
    pipes = r.switch_pipes
    assert len(pipes["prs"]) == 2 * 8  # two ToRs of 8 middle pipes (the spine is a plain switch)
    used = [i for i, n in enumerate(pipes["prs"]) if n]
    assert [pipes["switch_id"][i] for i in used] == [0, 1]
    for key, want in (("prs", 2), ("packets", 2), ("wait_cycles", 0), ("pr_wait_cycles", 0), ("max_backlog", 1),
                      ("max_wait_cycles", 0), ("peak_window_prs", 1), ("read_prs", 1), ("misses", 1), ("hits", 0),
                      ("inserts", 1), ("concat_prs", 2), ("concat_wait_ps", 2 * 125 * 500)):
        assert [pipes[key][i] for i in used] == [want, want], key
    cycle = [t // 500 for t in arrivals]  # 2 GHz switch clock
    tor0, tor1 = used
    assert (pipes["first_cycle"][tor0], pipes["last_in_cycle"][tor0]) == (cycle[0], cycle[3])
    assert (pipes["first_cycle"][tor1], pipes["last_in_cycle"][tor1]) == (cycle[1], cycle[2])
    assert pipes["last_cycle"][tor0] == cycle[3] + 16  # done after the 16-cycle lookup
    block = breakdown.switch_pipes(pipes, 2.0)
    row = block["pipes"][tor0]
    assert row["prs_per_cycle_mean"] == pytest.approx(2 / (cycle[3] - cycle[0] + 1))
    assert row["occupancy"] == pytest.approx(2 / (cycle[3] + 16 - cycle[0] + 1))
    assert row["mean_queue_prs"] == 0 and row["concat_wait_mean_ns"] == pytest.approx(62.5)
    assert block["summary"]["cache_hit_rate"] == 0 and block["summary"]["pipes_used"] == 2


def test_pipe_queue_by_hand():
    """Node 0 reads three properties of node 3 (one command): the three read PRs leave the NIC in one
    packet, and their responses in one packet. At a middle pipe a packet's PRs queue behind each other
    (one per cycle): waits 0, 1, 2 cycles, three PRs deep, the packet itself never waits."""
    r = run(mat([(0, 12), (0, 13), (0, 14)], 16), params=P4.replace(snic={"rig_batch_size": "inf"}))
    pipes = r.switch_pipes
    used = [i for i, n in enumerate(pipes["prs"]) if n]
    assert [pipes["packets"][i] for i in used] == [2, 2]  # per ToR: the read packet, the response packet
    for key, want in (("prs", 6), ("pr_wait_cycles", 2 * (0 + 1 + 2)), ("max_backlog", 3), ("wait_cycles", 0),
                      ("peak_window_prs", 3), ("concat_prs", 6)):
        assert [pipes[key][i] for i in used] == [want, want], key


@pytest.mark.parametrize("rate", [1, 2, 3])
def test_pipe_rate_by_hand(rate):
    """test_pipe_queue_by_hand's three-PR packets through middle pipes that take ``rate`` PRs per switch
    cycle (switch.middle_pipe_prs_per_cycle): the i-th PR of a packet is taken in cycle i // rate, so
    the waits are 0+1+2 (rate 1), 0+0+1 (rate 2) or none (rate 3), the queue is still three PRs deep at
    the arrival, and the pipe is done with the response packet ceil(3 / rate) - 1 + 16 cycles after it came."""
    r = run(mat([(0, 12), (0, 13), (0, 14)], 16),
            params=P4.replace(snic={"rig_batch_size": "inf"}, switch={"middle_pipe_prs_per_cycle": rate}))
    pipes = r.switch_pipes
    used = [i for i, n in enumerate(pipes["prs"]) if n]
    waits = sum(i // rate for i in range(3))
    for key, want in (("prs", 6), ("pr_wait_cycles", 2 * waits), ("max_backlog", 3), ("wait_cycles", 0)):
        assert [pipes[key][i] for i in used] == [want, want], key
    assert [pipes["last_cycle"][i] - pipes["last_in_cycle"][i] for i in used] == [-(-3 // rate) - 1 + 16] * 2
    row = breakdown.switch_pipes(pipes, 2.0, rate)["pipes"][used[0]]
    span = pipes["last_cycle"][used[0]] - pipes["first_cycle"][used[0]] + 1
    assert row["occupancy"] == pytest.approx(6 / (rate * span))
    _sums_exactly(r)


def up_cycle(ps: int) -> int:
    """The first SNIC cycle starting at or after ``ps``."""
    c = snic_cycle(ps)
    return c if snic_ps(c) >= ps else c + 1


@pytest.mark.parametrize("overlap", ["wait_last_response", "overlap"])
def test_command_overlap_by_hand(overlap):
    """One client unit, batch 1: node 0's idxs 6 and 7 (both node 3's, one filter line) are two commands.
    wait_last_response: the host hands the second command after the first one's response is written and
    its completion notification arrived. overlap (snic.rig_command_overlap): the unit asks for it as
    soon as idx 6 is decided and scans idx 7 while 6's PR is pending. Either way idx 7's filter load
    hits the unit's L1 (4 cycles), its PR's journey is a lone PR's, and the node's path is: the host to
    the first scan cycle, the first scan, the host round trip, the second scan, the journey, the
    completion notification."""
    params = P4.replace(snic={"rig_batch_size": 1, "rig_units": 2, "rig_command_overlap": overlap})
    r = run(mat([(0, 6), (0, 7)], 8), params=params)
    d0 = FIRST_CYCLE + 1 + DRAM
    written0, first_journey = journey(snic_ps(d0), True)
    asked = snic_ps(d0) if overlap == "overlap" else written0
    c2 = up_cycle(asked + PCIE + 3 * PCIE + 32)  # notification, MMIO + DMA request, 4 B of idx, DMA data
    d1 = c2 + 1 + 4
    written, want = journey(snic_ps(d1), True)
    add(want, {"host": snic_ps(FIRST_CYCLE) + (snic_ps(c2) - asked) + PCIE})
    add(want, spread({"scan_issued": 1, "filter_dram": DRAM}, snic_ps(d0) - snic_ps(FIRST_CYCLE)))
    add(want, spread({"scan_issued": 1, "filter_l1": 4}, snic_ps(d1) - snic_ps(c2)))
    if overlap == "wait_last_response":  # the first command's path ends with its response's journey
        add(want, first_journey)
    got = ps_of(r, 0)
    assert {b: v for b, v in got.items() if v} == want
    assert sum(got.values()) == round(r.node_time_s[0] * 1e12) == written + PCIE
    n = r.counters["nodes"]
    assert (n["commands"][0], n["read_prs"][0], n["responses"][0], n["mem_l1"][0]) == (2, 2, 2, 1)


def test_overlap_saves_the_wait_for_the_last_responses():
    """The two runs above: overlapping, the second command starts one lone PR's round trip from its
    decision to its write earlier, and so does the node's end."""
    a = mat([(0, 6), (0, 7)], 8)
    t = {v: round(run(a, params=P4.replace(snic={"rig_batch_size": 1, "rig_units": 2,
                                                 "rig_command_overlap": v})).node_time_s[0] * 1e12)
         for v in ("wait_last_response", "overlap")}
    d0 = FIRST_CYCLE + 1 + DRAM
    saved = journey(snic_ps(d0), True)[0] - snic_ps(d0)
    assert t["wait_last_response"] - t["overlap"] == pytest.approx(saved, abs=2 * snic_ps(1))
    assert t["overlap"] < t["wait_last_response"]


def test_an_older_commands_response_can_end_the_path():
    """overlap: node 3 reads idx 0 (node 0, the other rack) then idx 4 (node 2, its own rack), two
    commands of one unit (a command is a slice of the node's sorted column ids). The second command's PR
    comes back first, so the first's response, issued before the second command began, is the node's
    last: the second command's stretch of the path is that response's journey (a lone PR's, the routes
    being symmetric), its pieces in proportion (each rounded down, the remainder to the largest)."""
    params = P4.replace(snic={"rig_batch_size": 1, "rig_units": 2, "rig_command_overlap": "overlap"})
    r = run(mat([(6, 0), (6, 4)], 8), params=params)
    d0 = FIRST_CYCLE + 1 + DRAM
    written0, first_journey = journey(snic_ps(d0), True)
    c2 = up_cycle(snic_ps(d0) + 4 * PCIE + 32)
    want = {"host": snic_ps(FIRST_CYCLE) + (snic_ps(c2) - snic_ps(d0)) + PCIE}
    add(want, spread({"scan_issued": 1, "filter_dram": DRAM}, snic_ps(d0) - snic_ps(FIRST_CYCLE)))
    add(want, spread(first_journey, written0 - snic_ps(c2)))
    got = ps_of(r, 3)
    assert {b: v for b, v in got.items() if v} == want
    assert sum(got.values()) == round(r.node_time_s[3] * 1e12) == written0 + PCIE


@pytest.mark.parametrize("stage", ["rig", "coalesce", "switch"])
def test_overlapping_commands_keep_the_breakdown_exact(stage):
    """Random stream, small batches and Pending PR Tables, commands overlapping: every response still
    comes (the counters match the default mode's), and every node's path sums to its time."""
    rng = np.random.default_rng(11)
    n, nnz = 3000, 20000
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    hw = {"cluster": {"nodes": 8, "rack_size": 4},
          "snic": {"pending_pr_table": 16, "rig_batch_size": 64, "tx_buffer_bytes": 3000}}
    base = run(a, params=HardwareParams.from_dict(hw), mech=mechanisms_up_to(stage))
    hw["snic"]["rig_command_overlap"] = "overlap"
    r = run(a, params=HardwareParams.from_dict(hw), mech=mechanisms_up_to(stage))
    _sums_exactly(r)
    nodes = r.counters["nodes"]
    assert nodes["responses"] == nodes["read_prs"]
    for key in ("idxs", "local", "commands"):
        assert nodes[key] == base.counters["nodes"][key], key
    assert np.all(r.node_time_s <= base.node_time_s * 1.2)


def test_report_carries_the_tail_breakdown(ego_twitter):
    p = HardwareParams.from_dict({"cluster": {"nodes": 16, "rack_size": 4}})
    report = analysis.analyze(ego_twitter, p, k=16, simulator=analysis.default_simulator(), ablation=False,
                              extras=())
    ns = report["strategies"]["netsparse"]
    b = ns["tail"]["breakdown_s"]
    assert set(b) == set(breakdown.WORDS)
    assert sum(b.values()) == pytest.approx(ns["comm_time_s"], rel=1e-12)
    assert ns["tail"]["bound"] == max(b, key=b.__getitem__)
    assert ns["per_node"]["bound"][ns["tail_node"]] == ns["tail"]["bound"]
    assert [sum(col[i] for col in ns["per_node"]["breakdown_s"].values()) for i in range(16)] == \
        pytest.approx(ns["per_node"]["time_s"], rel=1e-12)
    words = breakdown.in_words(b, ns["tail_node"])
    assert words.startswith(f"tail node {ns['tail_node']} is bound by ")
    sw = ns["switch_pipes"]["summary"]
    assert sw["pipes"] == 4 * 8 and sw["cache_hits"] + sw["cache_misses"] == \
        sum(r["hits"] + r["misses"] for r in ns["switch_pipes"]["pipes"])


def test_what_a_full_pending_pr_table_waited_for():
    """The stall of test_full_pending_pr_table_by_hand ended with the first PR's response: its wait is
    split like that PR's journey (worked out by hand), in proportion."""
    a = mat([(0, 6), (0, 7)], 8)
    r = run(a, params=P4.replace(snic={"pending_pr_table": 1, "rig_batch_size": "inf"}))
    first = snic_cycle(3 * PCIE + 63) + 1
    issued = snic_ps(first + 1 + DRAM)
    written, j = journey(issued, True)
    by = r.critical_path.pending_full_by(0)
    pf = r.critical_path.of(0)["pending_full"]
    assert sum(by.values()) == pytest.approx(pf)
    assert by == pytest.approx({b: pf * v / (written - issued) for b, v in j.items()})
