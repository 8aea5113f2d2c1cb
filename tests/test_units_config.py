"""No hardware number is a default in C++: every unit binding requires its hardware arguments, and
hw_models.units_config, the one place that gives them, takes each from HardwareParams."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from netsparse_torch._C import units as cu

from hw_models import units_config
from hw_models.params import HardwareParams
from hw_models.seeds.netcrafter import LinkConfig
from netsparse_torch import units
from netsparse_torch.errors import ConfigError

CSRC = Path(__file__).resolve().parents[1] / "csrc"
WIRE = units_config.wire()
READ = units.encode_packet(units.READ, 1, 8, [0], [0], [5], [0], **WIRE)

# binding -> (a call with everything but the hardware arguments, the hardware arguments)
BINDINGS = {
    "RigNode": (lambda **hw: units.RigNode(0, [0, 4, 8], **hw), units_config.rig_node()),
    "RigClientUnit": (lambda **hw: units.RigClientUnit(node=0, row_bounds=[0, 4, 8], **hw),
                      units_config.rig_client_unit()),
    "Concatenator": (lambda **hw: units.Concatenator(n_dests=2, **hw), units_config.concatenator()),
    "PropertyCache": (lambda **hw: units.PropertyCache(prop_bytes=8, **hw), units_config.property_cache()),
    "SwitchPipe": (lambda **hw: units.SwitchPipe(n_dests=2, prop_bytes=8, **hw), units_config.switch_pipe()),
    "HeaderSizes": (lambda **hw: units.HeaderSizes(**hw), units_config.header_sizes()),
    "HeaderSizes.wire": (lambda **hw: units.HeaderSizes.wire(**hw), {"upper": 50}),
    "sa_header_share": (lambda **hw: units.sa_header_share(units.HeaderSizes(**units_config.header_sizes()), 16,
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
    node = units_config.rig_node(p)
    assert (node["n_units"], node["pending_capacity"], node["batch_size"], node["delay_cycles"]) == (8, 4, 64, None)
    assert (node["mtu"], node["upper_bytes"], node["cycles_per_pr"]) == (9000, 40, p.snic.rig_cycles_per_pr)
    assert units_config.concatenator(p)["phys_queues"] == 3
    assert units_config.header_sizes(p) == {"upper": 40, "concat": 10, "pr": p.headers.pr_bytes}
    pipe = units_config.switch_pipe(p)
    assert (pipe["capacity_bytes"], pipe["ways"], pipe["delay_cycles"]) == (2**20, 4, 7)
    assert units_config.rig_node()["mtu"] == HardwareParams().headers.mtu_bytes


def test_an_infinite_cache_is_the_unbounded_unit():
    inf = HardwareParams().replace(property_cache={"size_bytes": "inf"})
    assert units_config.property_cache(inf)["capacity_bytes"] is None
    assert units.PropertyCache(prop_bytes=8, **units_config.property_cache(inf)).unbounded


def test_overrides_and_what_a_unit_cannot_take():
    assert units_config.rig_node(n_units=4, filter=False)["n_units"] == 4
    with pytest.raises(ConfigError, match=r"unknown RigNode argument\(s\) \['mtus'\]"):
        units_config.rig_node(mtus=9000)
    with pytest.raises(ConfigError, match="rig_batch_size=inf"):
        units_config.rig_node(HardwareParams().replace(snic={"rig_batch_size": "inf"}))


def test_hydra_configs_show_the_hardware_params_values():
    """The training configs spell the units' hardware values out, so that a user sees and overrides
    them (``strategy.options.n_units=16``); they must be HardwareParams', not a drifting copy."""
    from omegaconf import OmegaConf

    configs = Path(__file__).resolve().parents[1] / "configs"
    options = OmegaConf.load(configs / "strategy" / "netsparse.yaml").options
    node = units_config.rig_node()
    for key in ("n_units", "batch_size", "pending_capacity", "mtu", "delay_cycles"):
        assert options[key] == node[key], key
    switch = OmegaConf.load(configs / "fabric" / "switch.yaml")
    pipe = units_config.switch_pipe()
    for key in ("delay_cycles", "capacity_bytes", "ways", "segment_bytes", "max_line_bytes"):
        assert switch[key] == pipe[key], key
