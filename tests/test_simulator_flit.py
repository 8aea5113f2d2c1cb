"""``netsparse-simulate link_layer=flit``: NetCrafter flits on the inter-rack links (docs/seeds.md).

The tiny case is worked by hand: 2 racks x 1 node on the leaf-spine (host 0 - ToR 0 - spine - ToR 1 -
host 1, so every remote packet crosses two switch-switch links), K=1 (4 B properties), NIC
concatenation and the switch mechanism off, so every packet carries one PR (Table 5 sizes):
a read packet is 50 + 12 + 18 = 80 B (5 flits of 16 B, no tail), a response 80 + 4 = 84 B (6 flits,
a 4 B tail and 12 B of room in its last flit).

A = rows 0..3, node 0 owns rows/cols 0-1, node 1 owns 2-3; row 0 reads columns 2 and 3, row 2 reads
column 0. Towards node 1 (links ToR0->spine, spine->ToR1): 2 reads + 1 response = 5 + 5 + 6 = 16
flits. Towards node 0 (ToR1->spine, spine->ToR0): 1 read + 2 responses = 5 + 6 + 6 = 17 flits
without stitching. With stitching (and a pooling window long enough that the two responses meet),
the second response's 4 B tail + 4 B ID+Size rides in the first one's last flit (12 B of room), so
it needs 5 flits: 16 flits on each of those two links.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import DATA, ROOT
from hydra import compose, initialize_config_dir

from hw_models import analysis, definitions
from hw_models.hardware import simulate_hardware
from hw_models.params import HardwareParams
from hw_models.simulator import simulate
from netsparse_torch.errors import ConfigError
from netsparse_torch.run import simulation as cli

ONE_PR = {"concat_nic": False, "switch": False}
LONG_POOL = 100_000  # flit cycles (32 us at 400 Gb/s): the two responses to node 0 meet in the pool


def _tiny():
    a = sp.csr_matrix((np.ones(3), ([0, 0, 2], [2, 3, 0])), shape=(4, 4))
    # one RIG command per node (not auto, which gives node 0's two idxs a unit each): the by-hand
    # timings below follow one unit's PRs
    p = HardwareParams.from_dict({"cluster": {"nodes": 2, "rack_size": 1}, "snic": {"rig_batch_size": 32768}})
    return a, p, definitions.workload(a, 2, "rows")


def _flit(**flit):
    return {"mode": "flit", "flit": flit}


def test_tiny_case_flits_by_hand():
    a, p, w = _tiny()
    ll = simulate(a, w, p, 1, "spmm", ONE_PR, link_layer=_flit(pool_cycles=LONG_POOL)).counters["link_layer"]
    needed = 2 * (80 + 80 + 84) + 2 * (80 + 84 + 84)  # 984
    assert ll["packets"] == 12 and ll["needed_bytes"] == needed
    assert ll["flits"] == 2 * 16 + 2 * 16
    assert ll["pieces"] == 2 and ll["stitched_packets"] == 2 and ll["stitched_flits"] == 2
    assert ll["overhead_bytes"] == 2 * 4
    assert ll["wire_bytes"] == 64 * 16 and ll["padding_bytes"] == 64 * 16 - needed - 8
    assert ll["stitched_fraction"] == pytest.approx(2 / 12)
    assert ll["packet_wire_bytes"] == needed  # packet mode sends exactly the needed bytes


def test_stitching_off_is_sum_of_padded_packets():
    a, p, w = _tiny()
    ll = simulate(a, w, p, 1, "spmm", ONE_PR, link_layer=_flit(stitching=False)).counters["link_layer"]
    per_packet = [80, 80, 84] * 2 + [80, 84, 84] * 2
    assert ll["flits"] == sum(-(-b // 16) for b in per_packet) == 66
    assert ll["padding_bytes"] == 66 * 16 - sum(per_packet) and ll["pieces"] == 0
    assert ll["stitched_fraction"] == 0


def test_eight_byte_flits():
    a, p, w = _tiny()
    ll = simulate(a, w, p, 1, "spmm", ONE_PR, link_layer=_flit(flit_bytes=8, stitching=False)).counters["link_layer"]
    # 6 read packets (80 B = 10 flits) and 6 responses (84 B = 11 flits) cross a switch-switch link
    assert ll["flits"] == 6 * 10 + 6 * 11


def _small_powerlaw():
    rng = np.random.default_rng(3)
    n = 400
    a = sp.random(n, n, density=0.03, random_state=rng, format="csr")
    p = HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 2}})
    return a, p, definitions.workload(a, 8, "rows")


def test_padding_bounded_and_deterministic_on_a_larger_case():
    a, p, w = _small_powerlaw()
    r1 = simulate(a, w, p, 16, "spmm", None, link_layer=_flit())
    r2 = simulate(a, w, p, 16, "spmm", None, link_layer=_flit())
    ll = r1.counters["link_layer"]
    assert ll["packets"] > 100
    assert json.dumps(ll) == json.dumps(r2.counters["link_layer"])
    assert np.array_equal(r1.node_time_s, r2.node_time_s)
    # every packet pads less than one flit; stitching only removes flits
    assert ll["needed_bytes"] == ll["packet_wire_bytes"]
    assert 0 <= ll["padding_bytes"] < 16 * ll["packets"]
    assert ll["flits"] <= ll["unstitched_flits"]
    # flits change when packets move, never what moves: every read answered once
    n = r1.counters["nodes"]
    assert sum(n["responses"]) == sum(n["read_prs"]) == sum(n["served"]) + sum(r1.counters["switches"]["read_hits"])


def test_packet_mode_adds_nothing():
    a, p, w = _small_powerlaw()
    plain = simulate(a, w, p, 16, "spmm", None)
    packet = simulate(a, w, p, 16, "spmm", None, link_layer={"mode": "packet", "flit": {"flit_bytes": 8}})
    assert "link_layer" not in plain.counters and "link_layer" not in packet.counters
    for r in (plain, packet):
        r.counters.pop("wall_clock_s")
    assert json.dumps(plain.counters, sort_keys=True) == json.dumps(packet.counters, sort_keys=True)
    assert np.array_equal(plain.node_time_s, packet.node_time_s)


def _cfg(*overrides):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="simulate", overrides=list(overrides))


KARATE = DATA / "mtx_small" / "karate.mtx"


def test_cli_packet_report_equals_the_plain_simulator(tmp_path):
    common = (f"matrix={KARATE}", "nodes=4", "rack_size=2", "plots=false", "ablation=false")
    r = cli.run(_cfg(*common, "link_layer=packet"), tmp_path / "p")
    a = cli.read_mtx(KARATE)
    params = simulate_hardware(_cfg(*common))
    ref = analysis.analyze(a, params, k=16, simulator=simulate, ablation=False, extras=[])
    ref["matrix"]["name"] = r["matrix"]["name"]
    r, ref = analysis.without_wall_clock(r), analysis.without_wall_clock(ref)
    assert r.pop("kind") == "simulate" and r.pop("config")["link_layer"] == "packet"  # the CLI's own keys
    assert "link_layer" not in r["strategies"]["netsparse"]
    assert json.dumps(r, sort_keys=True) == json.dumps(ref, sort_keys=True)


def test_cli_flit_reports_link_layer(tmp_path, capsys):
    r = cli.run(_cfg(f"matrix={KARATE}", "nodes=4", "rack_size=2", "plots=false", "ablation=false",
                     "link_layer=flit", "flit.flit_bytes=8", "strategies=[two_face,snic_sw,switch_aggregate]"),
                tmp_path)
    ll = r["strategies"]["netsparse"]["link_layer"]
    assert ll["mode"] == "flit" and ll["config"]["flit_bytes"] == 8 and ll["flits"] > 0
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["strategies"]["netsparse"]["link_layer"] == ll
    out = capsys.readouterr().out
    assert "inter-rack flits (8 B)" in out and "NetSparse comm time (flits on inter-rack links)" in out
    # the extras asked for sit next to SUOpt, SAOpt and NetSparse, in the report and in the summary
    assert set(r["strategies"]) == {"su_opt", "sa_opt", "two_face", "snic_sw", "switch_aggregate", "netsparse"}
    assert all(v["comm_time_s"] > 0 for v in r["strategies"].values())
    for line in ("SUOpt comm time", "SAOpt comm time", "Two-Face comm time", "(snic_sw) comm time",
                 "(switch_aggregate) comm time"):
        assert line in out, line


@pytest.mark.parametrize(("link_layer", "match"), [
    ({"mode": "cells"}, "link_layer"),
    (_flit(flit_bytes=0), "flit_bytes"),
    (_flit(pool_cycles=-1), "pool_cycles"),
    (_flit(window=3), "window"),
])
def test_bad_link_layer_settings(link_layer, match):
    a, p, w = _tiny()
    with pytest.raises(ConfigError, match=match):
        simulate(a, w, p, 1, "spmm", ONE_PR, link_layer=link_layer)


# --- Timing feeds back (the flit unit sits in the event loop) ---------------------------------------
# Flit time at 400 Gb/s: 16 B / 50 B/ns = 320 ps. A remote PR crosses two switch-switch links on its
# way out (read, 80 B: 5 flits = 1600 ps, exactly its packet time) and two on its way back (response,
# 84 B: 6 flits = 1920 ps vs 1680 ps as a packet, +240 ps per link). A packet enters a flit link at the
# next flit boundary (< 320 ps later), on each of its 4 flit-link hops.
FLIT_PS = 320


def _node_times(link_layer=None):
    a, p, w = _tiny()
    return simulate(a, w, p, 1, "spmm", ONE_PR, link_layer=link_layer).node_time_s * 1e12


def test_flits_slow_the_responses_down_by_hand():
    delta = _node_times(_flit(stitching=False, pool_cycles=0)) - _node_times()
    # node 1: one read out, one response back, no contention
    assert 2 * 240 <= delta[1] < 2 * 240 + 4 * FLIT_PS


def test_pooling_waits_the_window_on_each_flit_link():
    # No response finds a partner for its pooled tail flit (room 4 B after the stitched piece, or no
    # second response at all), so each waits W on each of the two switch-switch links of its path.
    w_cycles = 10_000
    delta = _node_times(_flit(pool_cycles=w_cycles)) - _node_times()
    wait = 2 * w_cycles * FLIT_PS
    assert np.all(delta >= wait) and np.all(delta < wait + 4 * FLIT_PS + 2 * 240)
    # selective pooling: responses (class 1) are exempt, so nothing waits
    exempt = _node_times(_flit(pool_cycles=w_cycles, no_pool_class=1)) - _node_times()
    assert np.all(exempt < 4 * FLIT_PS + 2 * 240)


def test_cli_binds_the_link_layer_for_every_simulator_use():
    # the main run, the ablation and strong scaling all take the simulator from with_link_layer
    assert cli.with_link_layer(simulate, _cfg("link_layer=packet")) is simulate
    bound = cli.with_link_layer(simulate, _cfg("link_layer=flit", "flit.pool_cycles=7"))
    assert bound.keywords["link_layer"]["flit"]["pool_cycles"] == 7
    with pytest.raises(ConfigError, match="link_layer"):
        cli.with_link_layer(simulate, _cfg("link_layer=cell"))
