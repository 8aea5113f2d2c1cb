"""hw_models.params: Table 5 defaults, validation, inf handling and the dict/OmegaConf constructor."""

import ast
import dataclasses
import math
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from hw_models import params as P
from netsparse_torch.errors import ConfigError


def test_defaults_are_netsparse_table5():
    p = P.HardwareParams()
    assert (p.cluster.nodes, p.cluster.rack_size, p.cluster.topology, p.cluster.racks) == (128, 16, "leafspine", 8)
    assert (p.link.bandwidth_gbps, p.link.latency_ns) == (400.0, 450.0)
    assert p.link.bytes_per_s == 50e9
    s = p.switch
    assert (s.latency_ns, s.ports, s.pipes, s.clock_ghz, s.concat_delay_cycles) == (300.0, 32, 8, 2.0, 125)
    assert s.netsparse_in_tor and not s.netsparse_in_spine
    c = p.property_cache
    assert (c.size_bytes, c.ways, c.latency_cycles, c.policy) == (32 * 1024 * 1024, 16, 16, "lru")
    n = p.snic
    assert (n.clock_ghz, n.rig_units, n.pending_pr_table, n.lsq_entries) == (2.2, 32, 256, 64)
    assert (n.rig_batch_size, n.concat_delay_cycles) == ("auto", 500)  # auto, not the paper's fixed 32768 (§9.3)
    assert (n.rx_buffer_bytes, n.tx_buffer_bytes, s.buffer_bytes) == (2 * 2**20, 2 * 2**20, 96 * 2**20)
    assert (p.snic_memory.l1_bytes, p.snic_memory.l2_bytes) == (32 * 2**10, 128 * 2**10)  # §8.2
    assert (p.pcie.generation, p.pcie.latency_ns) == (6, 200.0)
    h = p.headers
    assert (h.upper_bytes, h.concat_bytes, h.pr_bytes, h.mtu_bytes) == (50, 12, 18, 1500)
    t = p.topology
    assert t.hyperx_shape == (4, 4, 2) and t.hyperx_hosts_per_switch == 4 and t.hyperx_width == 4
    assert t.dragonfly_groups * t.dragonfly_switches_per_group == 32 and t.dragonfly_hosts_per_switch == 4


def test_rig_batch_size_accepts_auto_numbers_and_inf():
    assert P.HardwareParams().replace(snic={"rig_batch_size": 4096}).snic.rig_batch_size == 4096
    assert P.HardwareParams().replace(snic={"rig_batch_size": ".inf"}).snic.rig_batch_size == math.inf
    for bad in ("big", 0, -8, 10.5):
        with pytest.raises(ConfigError, match="rig_batch_size"):
            P.HardwareParams().replace(snic={"rig_batch_size": bad})


def test_prs_per_packet_by_hand():
    h = P.HeaderParams()
    # (1500 - 50 - 12) // (18 + 64) = 1438 // 82 = 17 responses of K=16 fp32; reads carry no payload.
    assert h.prs_per_packet(64) == 17
    assert h.prs_per_packet(0) == 1438 // 18
    assert h.prs_per_packet(4000) == 1  # larger than an MTU: charged as one PR per packet


def _numeric_fields():
    for section, kind in P._SECTIONS.items():
        for f in dataclasses.fields(kind):
            if "zero_ok" in f.metadata:
                yield section, f.name, f.metadata


@pytest.mark.parametrize(("section", "name", "meta"), list(_numeric_fields()))
def test_bad_numbers_raise_config_error_naming_the_field(section, name, meta):
    with pytest.raises(ConfigError, match=name):
        P.HardwareParams.from_dict({section: {name: -1}})
    if meta["zero_ok"]:
        P.HardwareParams.from_dict({section: {name: 0}})
    else:
        with pytest.raises(ConfigError, match=name):
            P.HardwareParams.from_dict({section: {name: 0}})
    if meta["inf_ok"]:
        assert getattr(getattr(P.HardwareParams.from_dict({section: {name: "inf"}}), section), name) == math.inf
    else:
        with pytest.raises(ConfigError, match=name):
            P.HardwareParams.from_dict({section: {name: math.inf}})
    with pytest.raises(ConfigError, match=name):
        P.HardwareParams.from_dict({section: {name: float("nan")}})


def test_inf_where_it_makes_sense():
    p = P.HardwareParams.from_dict(
        {"property_cache": {"size_bytes": ".inf"}, "snic": {"concat_delay_cycles": "inf"},
         "switch": {"concat_delay_cycles": math.inf}}
    )
    assert p.property_cache.size_bytes == math.inf
    assert p.snic.concat_delay_cycles == math.inf and p.switch.concat_delay_cycles == math.inf


def test_other_bad_input():
    with pytest.raises(ConfigError, match="unknown topology 'torus'"):
        P.ClusterParams(topology="torus")
    with pytest.raises(ConfigError, match="unknown hardware section"):
        P.HardwareParams.from_dict({"nic": {}})
    with pytest.raises(ConfigError, match="rig_unit"):
        P.HardwareParams.from_dict({"snic": {"rig_unit": 4}})
    with pytest.raises(ConfigError, match="whole number"):
        P.HardwareParams.from_dict({"snic": {"rig_units": 2.5}})
    with pytest.raises(ConfigError, match="must be a number"):
        P.HardwareParams.from_dict({"link": {"bandwidth_gbps": "fast"}})
    for flag in ("netsparse_in_tor", "netsparse_in_spine"):  # bool() would read "maybe" and "false" as on
        for value in ("maybe", "false", 1):
            with pytest.raises(ConfigError, match=rf"SwitchParams.{flag} must be true or false, got {value!r}"):
                P.HardwareParams.from_dict({"switch": {flag: value}})
    with pytest.raises(ConfigError, match="mtu_bytes"):
        P.HeaderParams(mtu_bytes=79)
    with pytest.raises(ConfigError, match="hyperx_shape"):
        P.TopologyParams(hyperx_shape=(4, 0))
    with pytest.raises(ConfigError, match="sa_target_goodput"):
        P.SoftwareParams(sa_target_goodput=1.5)
    with pytest.raises(ConfigError, match="sa_per_pr_overhead_ns"):
        P.SoftwareParams(sa_per_pr_overhead_ns=-3.0)
    with pytest.raises(ConfigError, match="sa_per_byte_overhead_ns"):
        P.SoftwareParams(sa_per_byte_overhead_ns=-1.0)
    for k128 in (0.05, 0.81):  # below the K=16 target (negative per-byte cost) or above 8x it (negative per-PR)
        with pytest.raises(ConfigError, match="sa_target_goodput_k128 must lie between"):
            P.SoftwareParams(sa_target_goodput=0.1, sa_target_goodput_k128=k128)
    with pytest.raises(ConfigError, match="policy"):
        P.PropertyCacheParams(policy="fifo")


def test_from_omegaconf_and_replace_and_roundtrip():
    cfg = OmegaConf.create({"cluster": {"nodes": 16, "rack_size": 4}, "topology": {"hyperx_shape": [2, 2]}})
    p = P.HardwareParams.from_dict(cfg)
    assert p.cluster.nodes == 16 and p.cluster.racks == 4 and p.topology.hyperx_shape == (2, 2)
    q = p.replace(snic={"rig_units": 8})
    assert q.snic.rig_units == 8 and q.cluster == p.cluster and p.snic.rig_units == 32
    assert P.HardwareParams.from_dict(q.to_dict()) == q
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.cluster.nodes = 3  # type: ignore[misc]


def test_every_field_names_its_source():
    """Each dataclass field's docstring cites NetSparse (table/section/figure) or says it is an assumption."""
    tree = ast.parse(Path(P.__file__).read_text())
    checked = 0
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Params")):
        body = cls.body
        for i, node in enumerate(body):
            if isinstance(node, ast.AnnAssign):
                doc = body[i + 1] if i + 1 < len(body) else None
                text = doc.value.value if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) else ""
                if cls.name == "HardwareParams":
                    continue  # sections, documented in their own classes
                assert "NetSparse" in text or "assumption" in text, f"{cls.name}.{node.target.id} lacks a source"
                checked += 1
    assert checked >= 35
