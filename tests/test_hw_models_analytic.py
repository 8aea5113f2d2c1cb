"""hw_models.analytic: zero-load PR round trips worked out by hand."""

import pytest

from hw_models.analytic import filter_load_cycles, host_command_s, single_packet_bytes, single_pr
from hw_models.params import HardwareParams
from hw_models.topology import build_topology
from netsparse_torch.errors import ConfigError

NS = 1e-9


def test_inter_rack_round_trip_without_nic_or_switch_mechanisms():
    p = HardwareParams()
    topo = build_topology(p)
    r = single_pr(topo, p, 0, 16, 16, {"concat_nic": False, "switch": False})
    cycle = 1 / 2.2e9
    # Read: 50 + 12 + 18 = 80 B over 4 links (1.6 ns each + 450 ns) and 3 switches of 300 ns.
    assert r.read_network_s == pytest.approx(4 * (80 / 50e9 + 450 * NS) + 3 * 300 * NS)
    # Response: 80 + 64 = 144 B.
    assert r.response_network_s == pytest.approx(4 * (144 / 50e9 + 450 * NS) + 3 * 300 * NS)
    # Host side (§5.1): MMIO 200 ns + DMA request 200 ns + 4 B at 128 GB/s (0.03 ns) + DMA data 200 ns
    # = 600.03 ns = 1320.07 SNIC cycles -> the unit starts at cycle 1321.
    assert r.host_command_s == pytest.approx(1321 * cycle)
    # One cycle to read the idx + a cold Idx Filter load from DRAM: 100 ns = 220 cycles at 2.2 GHz.
    assert r.client_issue_s == pytest.approx(221 * cycle)
    assert r.server_s == pytest.approx(cycle + 400 * NS)
    assert r.client_write_s == pytest.approx(200 * NS) and r.completion_s == pytest.approx(200 * NS)
    assert r.total_s == pytest.approx((1321 + 221 + 1) * cycle + 2706.4 * NS + 2711.52 * NS + 800 * NS)
    assert single_pr(topo, p, 0, 16, 16, {"filter": False, "concat_nic": False, "switch": False}).client_issue_s \
        == pytest.approx(cycle)  # no filter: no load


def test_same_rack_with_every_mechanism():
    p = HardwareParams()
    topo = build_topology(p)
    r = single_pr(topo, p, 0, 1, 16)
    # One ToR (extended): 300 ns + 16 cache cycles + 125 concatenation cycles at 2 GHz = 370.5 ns.
    assert r.read_network_s == pytest.approx(2 * (80 / 50e9 + 450 * NS) + 300 * NS + 141 / 2e9)
    # A lone PR waits the NIC's 500 cycles at 2.2 GHz in each NIC queue (after 1 + 220 load cycles).
    assert r.client_issue_s == pytest.approx(721 / 2.2e9)
    assert r.server_s == pytest.approx(501 / 2.2e9 + 400 * NS)


def test_spines_are_not_extended_and_bad_input():
    p = HardwareParams()
    topo = build_topology(p)
    off = single_pr(topo, p, 0, 16, 1, {"switch": False}).read_network_s
    on = single_pr(topo, p, 0, 16, 1).read_network_s
    assert on - off == pytest.approx(2 * 141 / 2e9)  # two ToRs on the path; the spine is plain
    with pytest.raises(ConfigError, match="never leaves the NIC"):
        single_pr(topo, p.replace(snic={"concat_delay_cycles": "inf"}), 0, 16, 1)
    with pytest.raises(ConfigError, match="never leaves the switch"):
        single_pr(topo, p.replace(switch={"concat_delay_cycles": "inf"}), 0, 16, 1)
    with pytest.raises(ValueError, match="local"):
        single_pr(topo, p, 3, 3, 1)
    with pytest.raises(ConfigError, match="MTU"):
        single_packet_bytes(1, 1500, p)


def test_host_command_and_filter_load_by_hand():
    p = HardwareParams()
    # A 32768-idx command: 3 x 200 ns + 32768 x 4 B / 128 GB/s (1024 ns) = 1624 ns = 3572.8 cycles -> 3573.
    assert host_command_s(p, 32768) == pytest.approx(3573 / 2.2e9)
    assert filter_load_cycles(p) == 220  # 100 ns x 2.2 GHz
    assert filter_load_cycles(p.replace(snic_memory={"dram_latency_ns": 100.1})) == 221
