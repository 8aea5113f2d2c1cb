"""No hardware number is a default in C++: every unit binding requires its hardware arguments, and
hw_models.unit_args, the one place that gives them, takes each from HardwareParams."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from hw_models import unit_args, units
from hw_models.params import HardwareParams
from hw_models.seeds.netcrafter import LinkConfig
from hw_models.unit_args import binding as cu
from netsparse_torch.errors import ConfigError

CSRC = Path(__file__).resolve().parents[1] / "csrc"
WIRE = unit_args.wire()
READ = units.encode_packet(units.READ, 1, 8, [0], [0], [5], [0], **WIRE)

# binding -> (a call with everything but the hardware arguments, the hardware arguments)
BINDINGS = {
    "RigNode": (lambda **hw: units.RigNode(0, [0, 4, 8], **hw), unit_args.rig_node()),
    "RigClientUnit": (lambda **hw: units.RigClientUnit(node=0, row_bounds=[0, 4, 8], **hw),
                      unit_args.rig_client_unit()),
    "Concatenator": (lambda **hw: units.Concatenator(n_dests=2, **hw), unit_args.concatenator()),
    "PropertyCache": (lambda **hw: units.PropertyCache(prop_bytes=8, **hw), unit_args.property_cache()),
    "SwitchPipe": (lambda **hw: units.SwitchPipe(n_dests=2, prop_bytes=8, **hw), unit_args.switch_pipe()),
    "HeaderSizes": (lambda **hw: units.HeaderSizes(**hw), unit_args.header_sizes()),
    "HeaderSizes.wire": (lambda **hw: units.HeaderSizes.wire(**hw), {"upper": 50}),
    "sa_header_share": (lambda **hw: units.sa_header_share(units.HeaderSizes(**unit_args.header_sizes()), 16,
                                                           **hw), {"elem_bytes": 4}),
    "FlitLinkConfig": (lambda **hw: cu.FlitLinkConfig(**hw), asdict(LinkConfig())),
    "encode_packet": (lambda **hw: units.encode_packet(units.READ, 1, 8, [0], [0], [5], [0], **hw), WIRE),
    "decode_packet": (lambda **hw: units.decode_packet(READ, **hw), WIRE),
    "decode_stream": (lambda **hw: units.decode_stream(READ, **hw), WIRE),
    "scan_frame": (lambda **hw: cu.scan_frame(READ, n_dests=2, prop_bytes=8, **hw), WIRE),
    "split_frame": (lambda **hw: cu.split_frame(READ, n_ports=2, by_type=True, **hw), WIRE),
    "prs_by_owner": (lambda **hw: cu.prs_by_owner(READ, np.array([0, 4, 8]), **hw), WIRE),
}


@pytest.mark.parametrize("name", sorted(BINDINGS))
def test_every_hardware_argument_is_required(name):
    call, hw = BINDINGS[name]
    call(**hw)  # complete: accepted
    for missing in hw:
        with pytest.raises(TypeError):
            call(**{k: v for k, v in hw.items() if k != missing})


def test_no_default_of_a_hardware_argument_in_the_bindings():
    names = {k for _, hw in BINDINGS.values() for k in hw}
    defaults = re.compile(r'py::arg\("(' + "|".join(sorted(names)) + r')"\)\s*=')
    found = [f"{p.name}: {m.group(0)}" for p in sorted((CSRC / "bind").glob("*.cpp"))
             for m in defaults.finditer(p.read_text())]
    assert not found
    assert not hasattr(cu, "DEFAULT_MTU") and not hasattr(cu, "DEFAULT_UPPER_BYTES")
    assert not [p.name for p in CSRC.rglob("*.h") if "kDefault" in p.read_text()]


@pytest.mark.parametrize("struct,header", [("ConcatConfig", "units/concatenator.h"),
                                           ("CacheConfig", "units/property_cache.h"),
                                           ("HeaderSizes", "units/header_model.h"),
                                           ("FlitLinkConfig", "units/flit_link.h"),
                                           ("RigNodeConfig", "units/rig_node.h")])
def test_config_structs_hold_no_value(struct, header):
    text = (CSRC / header).read_text()
    body = re.sub(r"//.*", "", re.search(r"struct " + struct + r" \{(.*?)\n\};", text, re.S).group(1))
    assert not re.search(r"=\s*[-\w]", body), f"{struct} has a default member initializer"


def test_values_come_from_hardware_params():
    p = HardwareParams().replace(snic={"rig_units": 8, "pending_pr_table": 4, "concat_delay_cycles": "inf",
                                       "rig_batch_size": 64, "concat_phys_queues": 3},
                                 headers={"mtu_bytes": 9000, "upper_bytes": 40, "concat_bytes": 10},
                                 property_cache={"size_bytes": 2**20, "ways": 4}, switch={"concat_delay_cycles": 7})
    node = unit_args.rig_node(p)
    assert (node["rig_units"], node["pending_capacity"], node["batch_size"], node["delay_cycles"]) == (8, 4, 64, -1)
    assert (node["mtu"], node["upper_bytes"], node["cycles_per_pr"]) == (9000, 40, p.snic.rig_cycles_per_pr)
    assert unit_args.concatenator(p)["phys_queues"] == 3
    assert unit_args.header_sizes(p) == {"upper": 40, "concat": 10, "pr": p.headers.pr_bytes}
    pipe = unit_args.switch_pipe(p)
    assert (pipe["size_bytes"], pipe["ways"], pipe["delay_cycles"]) == (2**20, 4, 7)
    assert unit_args.rig_node()["mtu"] == HardwareParams().headers.mtu_bytes


def test_an_infinite_cache_is_the_unbounded_unit():
    inf = HardwareParams().replace(property_cache={"size_bytes": "inf"})
    assert unit_args.property_cache(inf)["size_bytes"] == units.UNBOUNDED_CACHE == -1
    assert units.PropertyCache(prop_bytes=8, **unit_args.property_cache(inf)).unbounded


def test_overrides_and_what_a_unit_cannot_take():
    assert unit_args.rig_node(rig_units=4, filter=False)["rig_units"] == 4
    with pytest.raises(ConfigError, match=r"unknown RigNode argument\(s\) \['mtus'\]"):
        unit_args.rig_node(mtus=9000)
    with pytest.raises(ConfigError, match="headers.mtu_bytes=60 is smaller than one packet's headers"):
        unit_args.rig_node(mtu=60)  # a hardware keyword is validated as the field it replaces


def test_one_encoding_of_auto_and_inf_for_the_units_and_the_simulator():
    """``"auto"`` and ``inf`` of HardwareParams reach RigNode and the simulator's SimConfig as the one C++
    encoding (csrc/units/rig_unit.h), whatever way they were given."""
    from hw_models.simulator import check_mechanisms, sim_config

    for batch, want in (("auto", cu.AUTO_BATCH), ("inf", cu.WHOLE_STREAM_BATCH), (".inf", cu.WHOLE_STREAM_BATCH),
                        (4096, 4096)):
        p = HardwareParams().replace(snic={"rig_batch_size": batch, "concat_delay_cycles": "inf"})
        node = units.RigNode(0, [0, 4, 8], **unit_args.rig_node(p))
        assert node.hardware["batch_size"] == sim_config(p, 4, check_mechanisms(None)).batch == want
        assert unit_args.rig_node(batch_size=batch)["batch_size"] == want
        assert node.hardware["delay_cycles"] == sim_config(p, 4, check_mechanisms(None)).nic_delay_cycles \
            == unit_args.concatenator(p)["delay_cycles"] == cu.INFINITE_DELAY
    assert {cu.AUTO_BATCH, cu.WHOLE_STREAM_BATCH} == {-1, 0} and cu.INFINITE_DELAY == -1  # never a size (> 0)
    with pytest.raises(ValueError, match=r"concatenation delay_cycles must be >= 0 or -1 \(infinite\), got -2"):
        units.RigNode(0, [0, 4, 8], **{**unit_args.rig_node(), "delay_cycles": -2})
    with pytest.raises(ConfigError, match="SNICParams.concat_delay_cycles must be a number, got None"):
        unit_args.rig_node(delay_cycles=None)  # null is "not given" in the configs, never infinite
    with pytest.raises(ValueError, match="RIG batch size must be > 0, -1 .auto. or 0 .inf, one command., got -2"):
        units.RigNode(0, [0, 4, 8], **{**unit_args.rig_node(), "batch_size": -2})


def test_a_whole_stream_batch_gathers_like_a_batch_larger_than_the_stream():
    """RigNode with batch inf (one command) = a fixed batch of at least the stream's length."""
    import random

    rng = random.Random(7)
    for _ in range(20):
        idxs = np.array([rng.randrange(8) for _ in range(rng.randrange(1, 40))], np.int64)
        stats = []
        for batch in ("inf", 64):
            node = units.RigNode(0, [0, 4, 8], **unit_args.rig_node(batch_size=batch, rig_units=4))
            halo = np.zeros((8, 4), np.uint8)
            node.begin_kernel(4, halo, np.zeros((4, 4), np.uint8))
            node.submit(idxs, np.where(idxs >= 4, idxs - 4, -1))
            node.pump_reads()
            stats.append(node.stats())
        assert stats[0] == stats[1]


def test_hydra_shortcuts_hold_no_hardware_value():
    """The training and simulator configs' hardware shortcuts (``strategy.options.mtu``, ``batch_size``,
    ...) are null: the value is HardwareParams' (or the ``hw`` group's), never a drifting copy."""
    from omegaconf import OmegaConf

    from hw_models.hardware import SIMULATE_SHORTCUTS, TRAIN_SHORTCUTS

    configs = Path(__file__).resolve().parents[1] / "configs"
    files = {"strategy.": configs / "strategy" / "netsparse.yaml", "fabric.": configs / "fabric" / "switch.yaml"}
    for key in TRAIN_SHORTCUTS:
        group = key.split(".")[0] + "."
        if group in files:
            assert OmegaConf.select(OmegaConf.load(files[group]), key[len(group):], default=None) is None, key
    simulate = OmegaConf.load(configs / "simulate.yaml")
    for key in SIMULATE_SHORTCUTS:
        assert key in simulate and simulate[key] is None, key


@pytest.mark.parametrize("rig_units, clients, want", [(2, None, 1), (3, None, 1), (3, 2, 2), (32, None, 16),
                                                      (8, 2, 2)])
def test_one_split_of_the_rig_units_that_the_node_and_the_simulator_take(rig_units, clients, want):
    from hw_models.simulator import check_mechanisms, sim_config

    p = HardwareParams().replace(snic={"rig_units": rig_units, "rig_client_units": clients})
    assert unit_args.rig_split(p) == (want, rig_units - want)
    node = units.RigNode(0, [0, 4, 8], **unit_args.rig_node(p))
    c = sim_config(p, 16, check_mechanisms(None))
    assert node.rig_client_units == c.client_units == want and c.server_units == rig_units - want


def test_one_rig_unit_is_refused_on_both_sides():
    with pytest.raises(ConfigError, match="snic.rig_units must be at least 2"):
        HardwareParams().replace(snic={"rig_units": 1})
    for rig_units, clients in [(1, 1), (1, 0), (4, -1), (4, 4)]:  # no -1 = "half" any more: the split is given
        with pytest.raises(ConfigError, match="rig_units must be at least 2|rig_client_units must be in"):
            units.RigNode(0, [0, 4, 8], **{**unit_args.rig_node(), "rig_units": rig_units,
                                           "rig_client_units": clients})


def test_one_unbounded_cache_for_the_units_the_simulator_and_the_switch_service():
    from hw_models.simulator import check_mechanisms, sim_config
    from netsparse_torch.switch_service.control import config_from_request, configure_request

    p = HardwareParams().replace(property_cache={"size_bytes": "inf"})
    assert unit_args.property_cache(p)["size_bytes"] == units.UNBOUNDED_CACHE == -1
    assert sim_config(p, 16, check_mechanisms(None)).cache_bytes == units.UNBOUNDED_CACHE
    request = configure_request(2, 8, {0: [0, 1]}, hardware=p)
    assert request.cache.size_bytes == units.UNBOUNDED_CACHE  # on the wire
    tor = config_from_request(request, "tor")
    pipe = units.SwitchPipe(n_dests=2, prop_bytes=8, mtu=tor.mtu, upper_bytes=tor.upper_bytes,
                            delay_cycles=tor.delay_cycles, **tor.cache)  # as the service builds its pipe
    assert pipe.counters["inserted"] == 0  # built: the binding takes the sentinel the wire carries


def test_a_switch_is_configured_with_the_runs_numbers_and_fills_none_itself():
    from netsparse_torch.switch_service._proto import pb
    from netsparse_torch.switch_service.control import ConfigInvalid, config_from_request, configure_request

    p = HardwareParams().replace(headers={"mtu_bytes": 9000}, switch={"concat_delay_cycles": 0},
                                 property_cache={"ways": 4})
    tor = config_from_request(configure_request(2, 8, {0: [0, 1]}, hardware=p), "tor")
    want = unit_args.switch_options(p)
    assert (tor.mtu, tor.upper_bytes, tor.delay_cycles) == (9000, want["upper_bytes"], 0)
    assert tor.cache == {k: want[k] for k in ("size_bytes", "ways", "segment_bytes", "max_line_bytes")}
    bare = pb.ConfigureRequest(n_nodes=2, prop_bytes=8, racks=[pb.Rack(rack_id=0, nodes=[0, 1])])
    with pytest.raises(ConfigInvalid, match="cache.size_bytes, cache.ways, .* not given"):
        config_from_request(bare, "tor")
