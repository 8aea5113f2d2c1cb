"""hw_models.analytic: zero-load PR round trips worked out by hand."""

import pytest

from hw_models.analytic import single_packet_bytes, single_pr
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
    assert r.client_issue_s == pytest.approx(cycle)
    assert r.server_s == pytest.approx(cycle + 400 * NS)
    assert r.client_write_s == pytest.approx(200 * NS)
    assert r.total_s == pytest.approx(2 * cycle + 2706.4 * NS + 2711.52 * NS + 600 * NS)


def test_same_rack_with_every_mechanism():
    p = HardwareParams()
    topo = build_topology(p)
    r = single_pr(topo, p, 0, 1, 16)
    # One ToR (extended): 300 ns + 16 cache cycles + 125 concatenation cycles at 2 GHz = 370.5 ns.
    assert r.read_network_s == pytest.approx(2 * (80 / 50e9 + 450 * NS) + 300 * NS + 141 / 2e9)
    # A lone PR waits the NIC's 500 cycles at 2.2 GHz in each NIC queue.
    assert r.client_issue_s == pytest.approx(501 / 2.2e9)
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
