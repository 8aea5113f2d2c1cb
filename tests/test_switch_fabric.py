"""fabric=switch: RIG kernels run event-driven through real ToR/spine switch processes (threads stand
in for ranks; ``all_done`` is a barrier-based MIN reduction instead of torch.distributed)."""

from __future__ import annotations

import threading

import numpy as np
from test_switch_service import PROP, _control, fabric, features, remote_wants, rig_nodes

from netsparse_torch.fabric.switched import SwitchFabric


class BarrierMin:
    """all_reduce(MIN) of a done flag across ``n`` threads."""

    def __init__(self, n: int):
        self.flags = [True] * n
        self.barrier = threading.Barrier(n, timeout=30)
        self.result = True

    def for_rank(self, r: int):
        def all_done(flag: bool) -> bool:
            self.flags[r] = flag
            if self.barrier.wait() == 0:
                self.result = all(self.flags)
            self.barrier.wait()
            return self.result

        return all_done


def test_switch_fabric_fills_every_halo_slot_and_hits_the_cache():
    racks = {0: [0, 1], 1: [2, 3]}
    bounds = [0, 40, 80, 120, 160]
    x = features(160)
    rng = np.random.default_rng(11)
    shared = np.arange(120, 140, dtype=np.int64)  # rows of node 3 wanted by both nodes of rack 0
    # node 1 also wants rows of node 0 (same rack: the read never leaves the ToR)
    wants = {0: shared, 1: np.concatenate([shared, np.arange(0, 10)]), 2: remote_wants(bounds, 2, rng, 60),
             3: remote_wants(bounds, 3, rng, 60)}
    with fabric(racks) as (servers, addrs):
        nodes, halos = rig_nodes(x, bounds, wants)
        red = BarrierMin(4)
        halves = {r: np.zeros((max(len(wants[r]), 1), PROP // 2), np.uint8) for r in nodes}
        controls = {0: [servers[0].address, servers["spine"].address], 2: [servers[1].address]}
        fabrics = {r: SwitchFabric(4, r, addrs[r], all_done=red.for_rank(r), timeout_s=20,
                                   controls=controls.get(r, [])) for r in nodes}
        errors: list = []

        def run(r):
            try:
                fabrics[r].run_kernel(nodes[r], PROP)
                # a second kernel with another property size (half of each row) after an invalidate
                half = np.ascontiguousarray(x[bounds[r]:bounds[r + 1], : PROP // 2])
                nodes[r].begin_kernel(PROP // 2, halves[r], half)
                nodes[r].submit(wants[r], np.arange(len(wants[r]), dtype=np.int64))
                fabrics[r].run_kernel(nodes[r], PROP // 2)
            except BaseException as e:  # surfaced below
                errors.append(e)
                red.barrier.abort()

        threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in nodes]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
        finally:
            for f in fabrics.values():
                f.close()
        assert not errors, errors
        for r in nodes:
            np.testing.assert_array_equal(halos[r][: len(wants[r])], x[wants[r]])
            np.testing.assert_array_equal(halves[r][: len(wants[r])], x[wants[r], : PROP // 2])
        tor0 = _control(servers[0]).counters()
        assert tor0["cache_hits"] + tor0["cache_misses"] == tor0["read_prs_in"]
        assert tor0["prs_in"] == tor0["prs_out"]


def test_local_switches_one_tor_per_rack_and_a_report():
    from netsparse_torch.run.switch_launcher import LocalSwitches

    with LocalSwitches(5, 2, PROP) as sw:
        assert [sw.address(r) == sw.address(0) for r in range(5)] == [True, True, False, False, False]
        assert sw.controls(0) == [sw.address(0), sw.servers["spine"].address]
        assert sw.controls(1) == [] and sw.controls(2) == [sw.address(2)] and sw.controls(4) == [sw.address(4)]
        report = sw.report()
        assert sorted((e["name"], e["role"]) for e in report) == [
            ("spine", "spine"), ("tor0", "tor"), ("tor1", "tor"), ("tor2", "tor")]
        assert all({"cache_hits", "cache_misses", "prs_in", "prs_out", "packets_in", "packets_out"}
                   <= set(e["counters"]) for e in report)
        servers = list(sw.servers.values())
    assert all(s.summary is not None for s in servers)  # stopped on exit
