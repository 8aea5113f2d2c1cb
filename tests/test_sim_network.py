"""One harness for both network implementations behind the simulator's network interface
(csrc/sim/network_api.h): the packet network and the NetCrafter flit links (docs/simulator.md).

The same small workloads run through each implementation, and what must hold for both is checked on
the network's hop log (``simulate(..., log_hops=True).hops``: one row per packet sent by the system side,
per link it crossed and per delivery):

- every packet the system side sent is delivered exactly once, along contiguous links, with the same
  wire bytes on every hop (bytes are conserved);
- no packet crosses a link faster than its wire bytes at the link's rate plus the link's latency (and
  the switch latency when it ends at a switch);
- a link that waits for credit never starts a packet that leaves its next buffer's credit negative;
- the reports equal those of the simulator before the network interface (tests/golden/sim_network.json,
  written by main's build at 51d8e07 with ``python tests/test_sim_network.py``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from graphs import random_pattern  # noqa: E402

from hw_models import definitions  # noqa: E402
from hw_models.params import HardwareParams  # noqa: E402
from hw_models.simulator import mechanisms_up_to, simulate  # noqa: E402
from hw_models.topology import build_topology  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden" / "sim_network.json"
P8 = {"cluster": {"nodes": 8, "rack_size": 4}}
FLIT = {"mode": "flit", "flit": {"flit_bytes": 16, "pool_cycles": 32, "stitching": True, "sequencing": True}}
NETWORKS = {"packet": None, "flit": FLIT}
# name: (params, mechanisms (None = all)); every one crosses the inter-rack (flit) links
WORKLOADS = {
    "all-on": (P8, None),
    "no-switch": (P8, "concat_nic"),
    "one-pr-per-packet": (P8, "coalesce"),
    "tiny-rx": ({**P8, "snic": {"rx_buffer_bytes": 1500}}, None),
    "tiny-switch-buffer": ({**P8, "switch": {"buffer_bytes": 1500}}, "concat_nic"),
}
SENT, HOP, DELIVERED = 0, 1, 2  # row kinds of the hop log (csrc/sim/hop_log.h)


def _run(workload: str, network: str, log_hops: bool = False):
    params, stage = WORKLOADS[workload]
    hw = HardwareParams.from_dict(params)
    a = random_pattern(11)
    mech = None if stage is None else mechanisms_up_to(stage)
    return hw, simulate(a, definitions.workload(a, hw.cluster.nodes), hw, 16, "spmm", mech,
                        link_layer=NETWORKS[network], log_hops=log_hops)


def report(workload: str, network: str) -> dict:
    """One simulation as plain JSON values, without wall-clock fields."""
    _, r = _run(workload, network)
    out = {"node_time_s": [float(x) for x in r.node_time_s], "tail": r.tail,
           "counters": {k: v for k, v in r.counters.items() if k != "wall_clock_s"}}
    return json.loads(json.dumps(out))


def hop_log(workload: str, network: str):
    """A run with the network's hop log on: (params, run, log rows)."""
    hw, r = _run(workload, network, log_hops=True)
    return hw, r, r.hops


CASES = [(w, n) for w in WORKLOADS for n in NETWORKS]


@pytest.mark.parametrize(("workload", "network"), CASES)
def test_report_equals_the_simulator_before_the_interface(workload, network):
    want = json.loads(GOLDEN.read_text())[f"{workload}/{network}"]
    assert report(workload, network) == want


@pytest.mark.parametrize(("workload", "network"), CASES)
def test_every_packet_delivered_once_along_its_links(workload, network):
    hw, r, log = hop_log(workload, network)
    topo = build_topology(hw)
    sent, hops, got = (log[log[:, 0] == k] for k in (SENT, HOP, DELIVERED))
    assert len(sent) > 50 and len(hops) > len(sent)
    # each serial sent once and delivered once
    assert np.array_equal(np.sort(sent[:, 1]), np.arange(len(sent)))
    assert np.array_equal(np.sort(got[:, 1]), np.arange(len(sent)))
    where = dict(zip(sent[:, 1].tolist(), sent[:, 2].tolist(), strict=True))
    wire = dict(zip(sent[:, 1].tolist(), sent[:, 3].tolist(), strict=True))
    for serial, link, nbytes in hops[:, 1:4].tolist():  # in arrival order: each hop goes on from the last
        assert topo.link_src[link] == where[serial], "a packet jumped between vertices"
        assert nbytes == wire[serial], "a packet's wire bytes changed on the way"
        where[serial] = int(topo.link_dst[link])
    for serial, vertex in got[:, 1:3].tolist():
        assert where[serial] == vertex, "a packet delivered where it never arrived"
    # bytes conserved: what the system side sent is what it got back
    assert sent[:, 3].sum() == got[:, 3].sum()
    nodes = r.counters["nodes"]
    assert sum(nodes["wire_rx"]) == got[got[:, 2] < hw.cluster.nodes, 3].sum()
    assert sum(nodes["packets_tx"]) + sum(r.counters["switches"]["packets_out"]) == len(sent)


@pytest.mark.parametrize(("workload", "network"), CASES)
def test_no_packet_beats_its_links_serialisation(workload, network):
    hw, _, log = hop_log(workload, network)
    topo = build_topology(hw)
    hops = log[log[:, 0] == HOP]
    link, wire, queued, start, arrive = (hops[:, c] for c in (2, 3, 4, 5, 6))
    latency = np.rint(topo.link_latency_s[link] * 1e12).astype(np.int64)
    latency += np.where(topo.link_dst[link] >= hw.cluster.nodes, round(hw.switch.latency_ns * 1000), 0)
    wire_ps = np.floor(wire * 1e12 / np.asarray(topo.link_bytes_per_s)[link]).astype(np.int64)
    assert np.all(queued <= start)
    assert np.all(arrive - queued >= wire_ps + latency)
    assert np.all(arrive - start >= wire_ps + latency)


@pytest.mark.parametrize(("workload", "network"), CASES)
def test_credits_never_negative(workload, network):
    hw, r, log = hop_log(workload, network)
    hops = log[log[:, 0] == HOP]
    checked = hops[hops[:, 7] != np.iinfo(np.int64).min]
    assert len(checked) > 0
    assert checked[:, 7].min() >= 0
    assert max(r.counters["nodes"]["rx_peak"]) <= hw.snic.rx_buffer_bytes
    if workload == "tiny-rx":  # the small Rx buffers made links wait for credit
        assert sum(r.counters["nodes"]["credit_waits"]) > 0


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps({f"{w}/{n}": report(w, n) for w, n in CASES}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
