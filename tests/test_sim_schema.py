"""One parameter schema: the C++ SimConfig is built from HardwareParams in one
place, and the counter table of docs/simulator.md is the C++ counter list."""

from __future__ import annotations

from pathlib import Path

import pytest
import scipy.sparse as sp

from hw_models import definitions
from hw_models.native import sim as units
from hw_models.params import HardwareParams
from hw_models.simulator import (
    COUNTER_TABLE_BEGIN,
    COUNTER_TABLE_END,
    counter_table,
    mechanisms_up_to,
    sim_config,
    simulate,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "simulator.md"


def test_sim_config_is_table5_by_hand():
    """NetSparse Table 5 numbers reach every C++ field (values written out here, not read back)."""
    c = sim_config(HardwareParams(), 16, mechanisms_up_to("switch"))
    assert (c.filter, c.coalesce, c.concat_nic, c.switch_on) == (True, True, True, True)
    assert c.prop_bytes == 64  # K=16 fp32
    assert (c.client_units, c.server_units) == (16, 16)  # 32 RIG units, half clients
    assert (c.pending_entries, c.lsq_entries, c.batch) == (256, 64, -1)  # batch auto
    assert (c.snic_ghz, c.switch_ghz) == (2.2, 2.0)
    assert (c.nic_delay_cycles, c.switch_delay_cycles, c.cache_latency_cycles) == (500, 125, 16)
    assert c.cache_bytes == 32 * 2**20 // 8  # 32 MB over 8 middle pipes
    assert (c.cache_ways, c.cache_segment, c.cache_max_line) == (16, 16, 512)
    assert (c.switch_pipes, c.switch_ports) == (8, 32)
    assert (c.pcie_ps, c.switch_ps) == (200_000, 300_000)
    assert (c.mtu, c.upper_bytes, c.concat_bytes, c.pr_bytes) == (1500, 50, 12, 18)
    assert (c.switch_buffer_bytes, c.rx_buffer_bytes, c.tx_buffer_bytes) == (96 << 20, 2 << 20, 2 << 20)
    assert c.flit_layer is False


def test_sim_config_starts_empty():
    """The C++ struct holds no defaults: a fresh one is all zero, so a field sim_config forgot would be
    refused by the simulator's checks instead of silently taking a second default."""
    c = units.SimConfig()
    assert (c.prop_bytes, c.client_units, c.mtu, c.snic_ghz, c.cache_bytes, c.filter) == (0, 0, 0, 0.0, 0, False)


def test_sim_config_toggles_and_infinite_delays():
    p = HardwareParams.from_dict({"snic": {"concat_delay_cycles": "inf", "rig_batch_size": "inf"},
                                  "switch": {"netsparse_in_tor": False}, "property_cache": {"size_bytes": "inf"}})
    c = sim_config(p, 4, mechanisms_up_to("coalesce"))
    assert (c.concat_nic, c.switch_on, c.nic_delay_cycles, c.batch, c.prop_bytes) == (False, False, -1, 0, 16)
    assert c.cache_bytes == -1  # the unbounded cache


def test_counter_table_in_the_doc_is_generated():
    text = DOC.read_text()
    start, end = text.index(COUNTER_TABLE_BEGIN), text.index(COUNTER_TABLE_END) + len(COUNTER_TABLE_END)
    assert text[start:end] == counter_table(), "regenerate: python -m hw_models.simulator docs/simulator.md"


@pytest.mark.parametrize("scope", ["nodes", "switches", "events_by_kind"])
def test_report_names_are_the_declared_counters(scope):
    """The report's counters are exactly the declared ones (one list, no second spelling)."""
    a = sp.csr_matrix(([1.0, 1.0], ([0, 3], [3, 0])), shape=(4, 4))
    p = HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 2}})
    r = simulate(a, definitions.workload(a, 4), p, 16)
    declared = [name for name, _ in units.SIM_COUNTERS[scope]]
    got = list(r.counters[scope])
    if scope == "events_by_kind":  # the report keeps the kinds that occurred
        assert set(got) <= set(declared) and "issue" in got
    else:
        assert got == declared


def test_breakdown_and_pipe_names_are_the_declared_ones():
    """The critical path's resources and the pipe counters are the C++ lists, in their order, and the
    summary has plain words for every resource."""
    from hw_models.breakdown import WORDS

    a = sp.csr_matrix(([1.0, 1.0], ([0, 3], [3, 0])), shape=(4, 4))
    p = HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 2}})
    r = simulate(a, definitions.workload(a, 4), p, 16)
    assert list(r.critical_path.bounds) == [name for name, _ in units.SIM_BOUNDS] == list(WORDS)
    assert list(r.switch_pipes) == [name for name, _ in units.SIM_PIPE_COUNTERS]
    assert r.critical_path.node_s.shape == (4, len(units.SIM_BOUNDS))
