"""stats=links: each link's utilisation, bytes, packets and egress queue in time bins (csrc/sim/link_stats.h,
hw_models/link_stats.py), checked against a Python reference computed from the network's hop log (when each
packet joined a link's queue, when it started on the wire, its wire bytes), on a hand-worked single read and
on a congested run, with fixed and automatic bins."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from cli import run_cli
from conftest import DATA, ROOT
from graphs import random_pattern

from hw_models import definitions
from hw_models.errors import ConfigError
from hw_models.params import HardwareParams
from hw_models.simulator import simulate
from hw_models.topology import build_topology
from netsparse_torch.errors import ConfigError as CliConfigError

KARATE = DATA / "mtx_small" / "karate.mtx"
HOP = 1  # hop log row kind (csrc/sim/types.h HopRow)
P8_TINY_RX = {"cluster": {"nodes": 8, "rack_size": 4}, "snic": {"rx_buffer_bytes": 1500}}


def _run(a, params: dict, bin_ps):
    hw = HardwareParams.from_dict(params)
    return hw, simulate(a, definitions.workload(a, hw.cluster.nodes), hw, 16, log_hops=True,
                        link_stats_bin_ps=bin_ps)


def _overlap(t0: int, t1: int, b: int, width: int) -> int:
    return max(0, min(t1, (b + 1) * width) - max(t0, b * width))


def reference(hops: np.ndarray, bytes_per_s: np.ndarray, bins: int, width: int) -> dict[str, np.ndarray]:
    """The statistics from the hop log: a packet is on link ``where`` over ``[start, start + wire / rate)``
    (rounded up to whole ps) and waits in its queue over ``[queued, start)``."""
    links = len(bytes_per_s)
    out = {k: np.zeros((bins, links), np.int64) for k in ("busy_ps", "bytes", "packets", "queue_ps", "queue_max")}
    changes: dict[int, dict[int, int]] = {}
    for _, _, link, wire, queued, start, _, _ in hops[hops[:, 0] == HOP]:
        end = start + math.ceil(float(wire) * 1e12 / float(bytes_per_s[link]) - 1e-6)
        out["packets"][start // width, link] += 1
        out["bytes"][start // width, link] += wire
        for b in range(start // width, (end - 1) // width + 1):
            out["busy_ps"][b, link] += _overlap(start, end, b, width)
        steps = changes.setdefault(int(link), {})
        steps[int(queued)] = steps.get(int(queued), 0) + 1
        steps[int(start)] = steps.get(int(start), 0) - 1
    for link, steps in changes.items():
        times, length = sorted(steps), 0
        for t, t_next in zip(times, times[1:], strict=False):  # the length after every change at t holds until t_next
            length += steps[t]
            for b in range(t // width, (t_next - 1) // width + 1):
                if length and _overlap(t, t_next, b, width):
                    out["queue_ps"][b, link] += length * _overlap(t, t_next, b, width)
                    out["queue_max"][b, link] = max(out["queue_max"][b, link], length)
    return out


def _check(hw, run) -> None:
    s = run.link_stats
    ref = reference(run.hops, build_topology(hw).link_bytes_per_s, s.bins, s.bin_ps)
    for name, want in ref.items():
        np.testing.assert_array_equal(getattr(s, name), want, err_msg=name)


def test_one_read_on_two_nodes_by_hand():
    """Node 0 reads one property of node 1: the read and its response each cross two links, once, and
    nothing ever waits; each link is busy exactly its packet's wire bytes at 400 Gb/s."""
    a = sp.csr_matrix(([1.0], ([0], [1])), shape=(2, 2))
    hw, run = _run(a, {"cluster": {"nodes": 2, "rack_size": 2}}, 1000)
    s = run.link_stats
    assert s.names == ("node 0 > tor 0", "tor 0 > node 0", "node 1 > tor 0", "tor 0 > node 1")
    assert s.packets.sum(axis=0).tolist() == [1, 1, 1, 1]
    assert not s.queue_ps.any() and not s.queue_max.any()
    wire = s.bytes.sum(axis=0)
    assert wire[0] == wire[3] and wire[1] == wire[2]  # the read, then the response (K=16 fp32 more)
    assert wire[1] - wire[0] == 64
    np.testing.assert_array_equal(s.busy_ps.sum(axis=0), np.ceil(wire * 8 / 400e9 * 1e12 - 1e-6))
    _check(hw, run)


@pytest.mark.parametrize("bin_ps", [2000, 37_000, "auto"])
def test_congested_run_matches_the_hop_log(bin_ps):
    hw, run = _run(random_pattern(3), P8_TINY_RX, bin_ps)
    s = run.link_stats
    assert s.queue_max.max() > 1  # the case is worth checking: queues build up
    if bin_ps == "auto":  # doubled from 1 ns until the run fits 256 bins
        assert 128 < s.bins <= 256 and s.bin_ps >= 1000 and (s.bin_ps // 1000) & (s.bin_ps // 1000 - 1) == 0
    else:
        assert s.bin_ps == bin_ps
    _check(hw, run)
    util = s.utilisation()
    assert 0 < util.max() <= 1
    assert s.bytes.sum() == run.hops[run.hops[:, 0] == HOP, 3].sum()


def test_link_stats_do_not_change_the_run():
    a = random_pattern(3)
    hw = HardwareParams.from_dict(P8_TINY_RX)
    w = definitions.workload(a, 8)
    plain, observed = simulate(a, w, hw, 16), simulate(a, w, hw, 16, link_stats_bin_ps="auto")
    assert plain.link_stats is None
    drop = ("wall_clock_s",)
    assert {k: v for k, v in plain.counters.items() if k not in drop} == \
        {k: v for k, v in observed.counters.items() if k not in drop}
    np.testing.assert_array_equal(plain.node_time_s, observed.node_time_s)


@pytest.mark.parametrize("bin_ps", [0, -5, 1.5, True])
def test_bad_bin_width_is_one_line(bin_ps):
    a = random_pattern(3)
    hw = HardwareParams.from_dict(P8_TINY_RX)
    with pytest.raises(ConfigError, match="bin width > 0 ps"):
        simulate(a, definitions.workload(a, 8), hw, 16, link_stats_bin_ps=bin_ps)


def test_too_fine_bins_for_the_run_are_refused():
    a = random_pattern(3)
    hw = HardwareParams.from_dict(P8_TINY_RX)
    with pytest.raises(ConfigError, match="give a wider bin"):
        simulate(a, definitions.workload(a, 8), hw, 16, link_stats_bin_ps=1)


def test_flit_layer_is_refused():
    a = random_pattern(3)
    hw = HardwareParams.from_dict(P8_TINY_RX)
    flit = {"mode": "flit", "flit": {"flit_bytes": 16}}
    with pytest.raises(ConfigError, match="packet links"):
        simulate(a, definitions.workload(a, 8), hw, 16, link_layer=flit, link_stats_bin_ps="auto")


# -- netsparse-simulate stats=links -------------------------------------------------------------------------

def _cfg(*overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="simulate", overrides=[f"matrix={KARATE}", "nodes=4", "rack_size=2", *overrides])


def test_cli_writes_links_csv_and_plot(tmp_path):
    from netsparse_torch.run import simulation

    report = simulation.run(_cfg("stats=links", "stats_bin_ns=50", "ablation=true"), tmp_path)
    with open(tmp_path / "links.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    block = report["link_stats"]
    assert block["csv"] == "links.csv" and block["bin_s"] == 50e-9 and block["modeled"] is True
    links = build_topology(HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 2}})).n_links
    assert len(rows) == block["bins"] * links and block["links"] == links
    assert rows[links]["t0_us"] == rows[0]["t1_us"] == "0.05"
    # every packet a node sends crosses its own link to its ToR once
    assert sum(int(r["packets"]) for r in rows if r["src"].startswith("node ")) == _karate_packets_sent()
    assert all(0 <= float(r["utilisation"]) <= 1 for r in rows)
    assert block["busiest"][0]["utilisation"] >= block["busiest"][-1]["utilisation"] > 0
    assert (tmp_path / "links.png").stat().st_size > 0


def _karate_packets_sent() -> int:
    a = sp.csr_matrix(scipy.io.mmread(KARATE))
    hw = HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 2}})
    return int(sum(simulate(a, definitions.workload(a, 4), hw, 16).counters["nodes"]["packets_tx"]))


@pytest.mark.parametrize("args, message", [
    (["stats=links", "link_layer=flit"], "stats=links covers packet links"),
    (["stats=link"], "stats='link' is not a statistic"),
    (["stats_bin_ns=10"], "stats_bin_ns=10 applies to stats=links"),
    (["stats=links", "stats_bin_ns=0"], "stats_bin_ns must be a bin width"),
])
def test_cli_refusals(tmp_path, args, message):
    from netsparse_torch.run import simulation

    with pytest.raises(CliConfigError, match=message):
        simulation.run(_cfg(*args), tmp_path)
    assert not list(tmp_path.iterdir())


def test_cli_flit_refusal_is_one_line_exit_2(tmp_path):
    proc = run_cli("netsparse_torch.cli.simulate", f"matrix={KARATE}", "nodes=4", "rack_size=2", "stats=links",
                   "link_layer=flit", f"hydra.run.dir={tmp_path}", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("netsparse-simulate: error: stats=links covers packet links")
