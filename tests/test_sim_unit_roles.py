"""Dynamic RIG unit roles (snic.rig_unit_roles, docs/simulator.md "Dynamic RIG unit roles"): a client unit
that holds no RIG command also serves read packets. Hand-worked on 4 nodes (2 racks x 2), one client and
one server unit per node, LSQs of one entry (one PCIe read in flight per unit), the switch stage off
(plain forwarding): node 2 sends node 3 a read packet of 4 or 5 PRs whose reads hold node 3's server
unit for 4 or 5 x 400 ns; node 0's read packet (other rack) arrives 1.5 us later. Static, the server
takes it once its last read started and reads it when its LSQ entry frees; dynamic, node 3's client
unit, idle, takes it at once because its first read starts sooner. Times from Table 5 with the helpers
of test_simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from test_simulator import DRAM, FIRST_CYCLE, P4, PCIE, RESP_SER, SW, hop, mat, nic, run, snic_cycle, snic_ps

from hw_models.params import HardwareParams

C = snic_ps(1)  # a server unit's read starts one SNIC cycle after it takes the packet (455 ps)
READ = 2 * PCIE  # one property read over PCIe; with one LSQ entry, a unit's reads are this far apart
OWNER_ROWS = range(30, 40)  # n = 40: node p owns rows and columns 10p .. 10p + 9


def params(roles: str, batch: int | str = "inf") -> HardwareParams:
    return P4.replace(snic={"rig_units": 2, "lsq_entries": 1, "rig_batch_size": batch, "rig_unit_roles": roles})


def case(node0_reads: int, node3_local: int, node2_reads: int) -> list[tuple[int, int]]:
    """Node 2 reads columns 31.. (one per row), node 0 columns 36.. (one per row), node 3 has local idxs."""
    local = [(OWNER_ROWS[i % 10], 30 + i // 10) for i in range(node3_local)]
    return [(20 + i, 31 + i) for i in range(node2_reads)] + [(i, 36 + i) for i in range(node0_reads)] + local


def sim(roles, node0_reads=1, node3_local=1, batch="inf", node2_reads=5):
    a = mat(case(node0_reads, node3_local, node2_reads), 40)
    return run(a, params=params(roles, batch), mech={"switch": False})


def packet_ser(prs: int) -> int:
    return (50 + 12 + 18 * prs) * 20  # Table 5 headers at 400 Gb/s


def arrivals(node0_reads: int, node2_reads: int = 5) -> tuple[int, int]:
    """When node 2's and node 0's read packets reach host 3. Each requester decides its first idx after
    a DRAM filter load (cycle 1542) and the rest one L1 load (5 cycles) apart behind the one LSQ entry,
    all within the NIC's 500-cycle delay: one packet each, flushed at cycle 2042."""
    flush = nic(snic_ps(FIRST_CYCLE + 1 + DRAM))
    t2 = hop(hop(flush, packet_ser(node2_reads)) + SW, packet_ser(node2_reads))  # host 2 -> ToR 1 -> host 3
    t0 = flush
    for _ in range(3):  # host 0 -> ToR 0 -> spine -> ToR 1
        t0 = hop(t0, packet_ser(node0_reads)) + SW
    return t2, hop(t0, packet_ser(node0_reads))


def node0_done(pushed: int) -> int:
    """Node 0's time when its (last) response enters node 3's NIC at ``pushed``: the 500-cycle NIC
    delay, four hops back, the PCIe write, the completion notification."""
    t = nic(pushed)
    for _ in range(3):
        t = hop(t, RESP_SER) + SW
    return hop(t, RESP_SER) + 2 * PCIE


@pytest.mark.parametrize("k", [5, 4])
def test_idle_client_serves_when_it_starts_sooner_than_the_server(k):
    """k = 5: node 0's packet arrives before the server's last read of node 2's packet started, so,
    static, it waits in the Rx buffer (rx_waits). k = 4: the server's last read started, so, static,
    the server takes it at once, but its one LSQ entry is held until that read returns."""
    t2, t0 = arrivals(1, k)
    last_read = t2 + C + (k - 1) * READ  # the server's reads of node 2's packet, one LSQ entry: 400 ns apart
    assert t2 < t0 < last_read + READ - C  # node 0's first read could not start on the server before then
    assert (t0 >= last_read) == (k == 4)  # k = 4: the server is free (its last read started) at t0
    static, dynamic = sim("static", node2_reads=k), sim("dynamic", node2_reads=k)
    ps = {m: np.rint(r.node_time_s * 1e12).astype(np.int64).tolist() for m, r in (("s", static), ("d", dynamic))}
    # static: node 0's read starts on the server when its LSQ entry frees
    static_push = last_read + READ + READ
    assert ps["s"][0] == node0_done(static_push)
    # dynamic: node 3's client unit (done with its one local idx at cycle 1322) takes it on arrival
    assert ps["d"][0] == node0_done(t0 + C + READ)
    node3 = snic_ps(FIRST_CYCLE + 1) + PCIE  # one local idx, then the completion notification
    assert ps["s"][3] == ps["d"][3] == node3 and ps["s"][1] == ps["d"][1] == 0
    assert ps["s"][2] == ps["d"][2]  # node 2's reads go to the server unit either way
    ns, nd = static.counters["nodes"], dynamic.counters["nodes"]
    assert ns["served"] == nd["served"] == [0, 0, 0, k + 1]
    assert (ns["rx_waits"][3], nd["rx_waits"][3]) == (1 if k == 5 else 0, 0)
    # node 0's path: the owner's share is the read's wait and its PCIe read, from arrival to push
    rs = {m: round(r.critical_path.of(0)["remote_server"] * 1e12) for m, r in (("s", static), ("d", dynamic))}
    assert (rs["s"], rs["d"]) == (static_push - t0, C + READ)


def up(ps: int) -> int:
    """The first SNIC cycle starting at or after ``ps``."""
    c = snic_cycle(ps)
    return c if snic_ps(c) >= ps else c + 1


def host_loop(lengths: list[int], served: tuple[int, int] | None = None) -> tuple[int, int, int]:
    """A tiny model of one client unit's host loop over local-only commands (docs/simulator.md, host
    side): a command of n idxs is scanned from its first cycle c, one idx per cycle, and completes at
    c + n; the notification, MMIO and DMA request (3 x PCIe), n x 4 B of DMA and its data (PCIe) bring
    the next one. ``served`` = (taken, last read): the unit took a read packet at ``taken`` while idle
    (after a completion, before the next command's idxs arrived); that command starts no earlier than
    the cycle after the last read started. Returns (node time, the wait in ps, the command that waited)."""
    ready, done, waited, which = 3 * PCIE + math.ceil(4 * lengths[0] * 1e12 / 128e9), 0, 0, -1
    for j, n in enumerate(lengths):
        c = up(ready)
        if served and done <= served[0] < ready and snic_cycle(served[1]) + 1 > c:
            waited, which = snic_ps(snic_cycle(served[1]) + 1) - snic_ps(c), j
            c = snic_cycle(served[1]) + 1
        done = snic_ps(c + n)
        if j + 1 < len(lengths):
            ready = done + 3 * PCIE + math.ceil(4 * lengths[j + 1] * 1e12 / 128e9) + PCIE
    return done + PCIE, waited, which


def test_a_command_waits_for_the_read_its_unit_serves():
    """Node 0 sends 4 reads (one 4-PR packet, arriving while the server is busy); node 3 runs local
    commands of 8 idxs (batch 8) back to back. Node 3's client unit, between two commands when the packet
    arrives, serves it: its 4 reads start 400 ns apart, and the next command, whose idxs arrive before the
    last of them started, begins the cycle after it; the wait is charged to remote_server on node 3's path."""
    t2, t0 = arrivals(4)
    assert t2 + C + 4 * READ > t0
    last_read = t0 + C + 3 * READ
    lengths = [8] * 9
    static_time, _, _ = host_loop(lengths)
    want_time, waited, which = host_loop(lengths, (t0, last_read))
    assert waited > 0 and 0 < which  # the case does what it says: a later command waits
    static, dynamic = sim("static", 4, 72, 8), sim("dynamic", 4, 72, 8)
    assert round(static.node_time_s[3] * 1e12) == static_time
    assert round(dynamic.node_time_s[3] * 1e12) == want_time == static_time + waited
    got = {b: round(s * 1e12) for b, s in dynamic.critical_path.of(3).items() if s}
    assert got["remote_server"] == waited
    assert sum(got.values()) == want_time
    assert "remote_server" not in {b for b, s in static.critical_path.of(3).items() if s}
    assert dynamic.counters["nodes"]["rx_waits"][3] == 0 and static.counters["nodes"]["rx_waits"][3] == 1


@pytest.mark.parametrize(("snic", "fewer_waits"), [
    ({"rig_units": 4, "rig_batch_size": 64, "lsq_entries": 2}, True),
    ({"rig_client_units": 24, "tx_buffer_bytes": 3000, "lsq_entries": 2}, False),
    ({"rig_batch_size": 16, "rig_command_overlap": "overlap", "lsq_entries": 2}, False)])
def test_dynamic_roles_answer_every_read_and_the_breakdown_sums(snic, fewer_waits):
    """A random graph, 8 nodes, LSQs of 2 (servers slow enough that read packets wait): with dynamic roles
    every read PR is still answered once (served + cache hits = read PRs = responses), no more packets
    wait for a unit (fewer with 2 servers and batches of 64, whose clients idle between commands), and
    each node's critical path sums exactly to its time (remote_server holding the commands' waits).
    The second case caught a client unit taken for a packet after its command had arrived."""
    rng = np.random.default_rng(7)
    n, nnz = 3000, 20000
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    out = {}
    for roles in ("static", "dynamic"):
        p = HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 4}})
        r = out[roles] = run(a, params=p.replace(snic={**snic, "rig_unit_roles": roles}))
        nodes, hits = r.counters["nodes"], sum(r.counters["switches"]["read_hits"])
        assert sum(nodes["served"]) + hits == sum(nodes["read_prs"]) == sum(nodes["responses"])
        ps = np.rint(r.critical_path.node_s * 1e12).astype(np.int64)
        assert (ps >= 0).all() and ps.sum(axis=1).tolist() == np.rint(r.node_time_s * 1e12).astype(np.int64).tolist()
    waits = {m: sum(r.counters["nodes"]["rx_waits"]) for m, r in out.items()}
    assert waits["dynamic"] < waits["static"] if fewer_waits else waits["dynamic"] <= waits["static"]


def test_dynamic_roles_change_nothing_without_an_idle_client_or_a_waiting_packet():
    """One read and one owner: the server is free whenever a packet arrives, so both modes are equal."""
    a = mat([(0, 36), (20, 31)], 40)
    s, d = (run(a, params=params(m), mech={"switch": False}) for m in ("static", "dynamic"))
    assert s.node_time_s.tolist() == d.node_time_s.tolist() and s.counters["nodes"] == d.counters["nodes"]


def test_training_ignores_rig_unit_roles():
    """A simulator-only knob: strategy=netsparse training builds the same RigNode (static split) with it."""
    from test_hardware_config import TRAIN, compose, rig_settings

    from hw_models.hardware import train_hardware

    def settings(*overrides):
        cfg = compose("train", *TRAIN, "strategy=netsparse", *overrides)
        return rig_settings(cfg, train_hardware(cfg))

    assert settings("+hw.snic.rig_unit_roles=dynamic") == settings()
