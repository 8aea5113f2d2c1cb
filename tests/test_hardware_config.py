"""One hardware configuration per run (hw_models/hardware.py): a hardware number set once through the
config reaches the RIG node, the switches, the modeled block and the simulator, and nothing else
moves; two sources that disagree are one error before torch loads; a switch configured for another
MTU refuses a rank when it attaches."""

from __future__ import annotations

import functools
import subprocess
import sys
import time

import pytest
from cli import ROOT

from hw_models.hardware import simulate_hardware, train_hardware
from hw_models.params import HardwareParams
from hw_models.simulator import check_mechanisms, sim_config

TRAIN = ["fabric=switch", "cluster=leafspine128", "world_size=2"]

# (train override, simulate override, the consumers' settings it must change and their new value)
CASES = {
    "mtu": ("strategy.options.mtu=9000", "+hw.headers.mtu_bytes=9000",
            {"rig.mtu": 9000, "switch.mtu": 9000, "sim.mtu": 9000}),
    "mtu via hw": ("+hw.headers.mtu_bytes=4000", "+hw.headers.mtu_bytes=4000",
                   {"rig.mtu": 4000, "switch.mtu": 4000, "sim.mtu": 4000}),
    "batch size": ("strategy.options.batch_size=64", "batch_size=64", {"rig.batch_size": 64, "sim.batch": 64}),
    "batch size inf": ("strategy.options.batch_size=.inf", "batch_size=.inf",
                       {"rig.batch_size": "WHOLE_STREAM", "sim.batch": "WHOLE_STREAM"}),
    "RIG units": ("strategy.options.rig_units=8", "rig_units=8",
                  {"rig.rig_units": 8, "rig.rig_client_units": 4, "sim.rig_units": 8, "sim.client_units": 4}),
    "RIG client units": ("strategy.options.rig_client_units=4", "+hw.snic.rig_client_units=4",
                         {"rig.rig_client_units": 4, "sim.client_units": 4}),
    "cache size": ("fabric.size_bytes=1048576", "cache_size_bytes=1048576",
                   {"switch.size_bytes": 1048576, "sim.cache_bytes_per_pipe": 1048576 // 8}),
    "cache size inf": ("fabric.size_bytes=.inf", "cache_size_bytes=.inf",
                       {"switch.size_bytes": -1, "sim.cache_bytes_per_pipe": -1}),
    "NIC delay": ("strategy.options.delay_cycles=50", "nic_delay_cycles=50",
                  {"rig.delay_cycles": 50, "sim.nic_delay_cycles": 50}),
    "switch delay": ("fabric.delay_cycles=7", "switch_delay_cycles=7",
                     {"switch.delay_cycles": 7, "sim.switch_delay_cycles": 7}),
    "switch delay inf": ("fabric.delay_cycles=.inf", "switch_delay_cycles=.inf",
                         {"switch.delay_cycles": -1, "sim.switch_delay_cycles": -1}),
}


def compose(name: str, *overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from netsparse_torch.config_check import config_dir

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return hydra_compose(name, overrides=list(overrides))


def rig_settings(cfg, hardware) -> dict:
    """The RigNode a training rank builds (the run layer's strategy options, netsparse's rig_node)."""
    from netsparse_torch.comm.netsparse import RIG_OPTIONS, rig_node
    from netsparse_torch.run.training import strategy_options

    options = strategy_options(cfg, hardware)
    node = rig_node(0, [0, 4, 8], options["hardware"], **{k: v for k, v in options.items() if k in RIG_OPTIONS})
    return {f"rig.{k}": v for k, v in node.hardware.items()}


def switch_settings(cfg, hardware) -> dict:
    """The configuration the ToR the launcher starts holds."""
    from netsparse_torch.run.switch_launcher import SwitchService

    service = SwitchService(cfg, hardware)
    try:
        tor = service.local.servers["tor0"].core.cfg
        return {"switch.mtu": tor.mtu, "switch.upper_bytes": tor.upper_bytes, "switch.delay_cycles": tor.delay_cycles,
                **{f"switch.{k}": v for k, v in tor.cache.items()}}
    finally:
        service.stop()


class _Captured(Exception):
    pass


def modeled_hardware(cfg, hardware, monkeypatch) -> HardwareParams:
    """The hardware the modeled block hands hw_models.analysis.modeled_training (which runs the simulator)."""
    from types import SimpleNamespace

    import scipy.sparse as sp

    from hw_models import analysis
    from netsparse_torch.modeled import modeled_block

    def capture(adj, params, *args, **kwargs):
        raise _Captured(params)

    monkeypatch.setattr(analysis, "modeled_training", capture)
    graph = SimpleNamespace(num_nodes=200, num_features=4, num_classes=2, adj=sp.eye(200, format="csr"))
    with pytest.raises(_Captured) as got:
        modeled_block(cfg, graph, hardware)
    return got.value.args[0]


def sim_settings(params: HardwareParams) -> dict:
    """The C++ SimConfig of a simulation on ``params``."""
    c = sim_config(params, 16, check_mechanisms(None))
    return {"sim.mtu": c.mtu, "sim.upper_bytes": c.upper_bytes, "sim.batch": c.batch,
            "sim.rig_units": c.client_units + c.server_units, "sim.client_units": c.client_units,
            "sim.pending": c.pending_entries,
            "sim.cache_bytes_per_pipe": c.cache_bytes, "sim.nic_delay_cycles": c.nic_delay_cycles,
            "sim.switch_delay_cycles": c.switch_delay_cycles}


def train_settings(monkeypatch, *overrides: str) -> dict:
    cfg = compose("train", *TRAIN, *overrides)
    hardware = train_hardware(cfg)
    modeled = modeled_hardware(cfg, hardware, monkeypatch)
    assert modeled is hardware  # the modeled block models the run's hardware, not a copy of its own
    return {**rig_settings(cfg, hardware), **switch_settings(cfg, hardware), **sim_settings(modeled)}


def _expected(want: dict) -> dict:
    from hw_models.unit_args import binding as units

    return {k: units.WHOLE_STREAM_BATCH if v == "WHOLE_STREAM" else v for k, v in want.items()}


@pytest.fixture(scope="module")
def defaults() -> dict:
    monkeypatch = pytest.MonkeyPatch()
    try:
        return train_settings(monkeypatch)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hardware_number_set_once_reaches_every_consumer_of_a_training_run(case, defaults, monkeypatch):
    override, _, want = CASES[case]
    want = _expected(want)
    got = train_settings(monkeypatch, override)
    assert {k: got[k] for k in want} == want
    assert all(defaults[k] != v for k, v in want.items())  # not Table 5's: the test can fail
    assert {k: v for k, v in got.items() if k not in want} == {k: v for k, v in defaults.items() if k not in want}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hardware_number_set_once_reaches_the_simulator_and_the_rig_node_of_a_simulation(case):
    from hw_models import unit_args

    _, override, want = CASES[case]
    want = {k: v for k, v in _expected(want).items() if k.startswith("sim.")}
    default = sim_settings(simulate_hardware(compose("simulate")))
    params = simulate_hardware(compose("simulate", override))
    got = sim_settings(params)
    assert {k: got[k] for k in want} == want
    assert {k: v for k, v in got.items() if k not in want} == {k: v for k, v in default.items() if k not in want}
    # the report's `hardware` is this object, and the training path's units read the same fields
    assert unit_args.rig_node(params)["mtu"] == got["sim.mtu"]


def test_the_report_carries_the_hardware_once():
    import scipy.sparse as sp

    from hw_models.analysis import analyze

    params = simulate_hardware(compose("simulate", "nodes=4", "rack_size=2", "+hw.headers.mtu_bytes=9000"))
    report = analyze(sp.random(40, 40, density=0.1, format="csr", random_state=0), params, k=4)
    assert report["hardware"] == params.to_dict() and report["hardware"]["headers"]["mtu_bytes"] == 9000


@pytest.mark.parametrize("overrides,message", [
    (["strategy.options.mtu=9000", "+hw.headers.mtu_bytes=1500"],
     "hw.headers.mtu_bytes=1500 and strategy.options.mtu=9000 disagree on the hardware field headers.mtu_bytes"),
    (["fabric.size_bytes=1024", "+cluster.hw.property_cache.size_bytes=2048"],
     "cluster.hw.property_cache.size_bytes=2048 and fabric.size_bytes=1024 disagree"),
    (["strategy.options.batch_size=0"], "SNICParams.rig_batch_size must be > 0, got 0"),
    (["strategy.options.batch_size=many"], "snic.rig_batch_size must be 'auto', a positive whole number or inf"),
    (["strategy.options.mtu=60"], "headers.mtu_bytes=60 is smaller than one packet's headers"),
])
def test_config_errors_are_one_line_before_torch(overrides, message):
    """netsparse-train's torch-free check (config_check.check_values) refuses them."""
    code = ("import sys, time\n"
            "from hydra import compose, initialize_config_dir\n"
            "from netsparse_torch.config_check import check_values, config_dir\n"
            "from netsparse_torch.errors import ConfigError\n"
            "with initialize_config_dir(config_dir=config_dir(), version_base='1.3'):\n"
            f"    cfg = compose('train', overrides={[*TRAIN, *overrides]!r})\n"
            "t = time.perf_counter()\n"
            "try:\n    check_values(cfg)\nexcept ConfigError as e:\n    print(e)\n"
            "assert 'torch' not in sys.modules\nprint(time.perf_counter() - t)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    line, seconds = out.stdout.strip().splitlines()
    assert message in line
    assert float(seconds) < 1.0  # the check itself, with its imports (hw_models, not torch)


def test_two_shortcuts_that_agree_are_one_value():
    cfg = compose("train", *TRAIN, "strategy.options.mtu=9000", "+hw.headers.mtu_bytes=9000")
    assert train_hardware(cfg).headers.mtu_bytes == 9000


def test_an_external_switch_with_another_mtu_refuses_the_rank_at_connect():
    from omegaconf import OmegaConf

    from netsparse_torch.run.switch_launcher import attach_rank
    from netsparse_torch.switch_service import ControlClient, SwitchServer, configure_request
    from netsparse_torch.switch_service.client import SwitchError

    with SwitchServer("tor") as tor:  # started and configured by someone else, for Table 5's MTU
        ControlClient(tor.address).configure(configure_request(2, 4, {0: [0, 1]}, mtu=1500))
        cfg = OmegaConf.create({"fabric": {"name": "switch", "switches": {"spine": None, "tors": [tor.address]},
                                           "token_env": None}, "cluster": {"rack_size": 2}, "rig": {"timeout_s": 5}})
        jumbo = HardwareParams().replace(headers={"mtu_bytes": 9000}, cluster={"rack_size": 2})
        t0 = time.perf_counter()
        with pytest.raises(SwitchError, match="node:0 builds packets for an MTU of 9000 B, this tor is configured "
                                              r"for 1500 B: configure the switches with the run's MTU"):
            attach_rank(0, 2, cfg, hardware=jumbo)
        assert time.perf_counter() - t0 < 5  # at connect, not at the watchdog's expiry
        assert tor.core.counters().errors["mtu_mismatch"] == 1
        attach_rank(1, 2, cfg).close()  # the run's hardware built from cfg: Table 5's MTU, which attaches


def test_a_spine_refuses_a_tor_configured_for_another_mtu():
    from netsparse_torch.switch_service import ControlClient, SwitchServer, configure_request
    from netsparse_torch.switch_service.client import SwitchError

    racks = {0: [0], 1: [1]}
    with SwitchServer("spine") as spine, SwitchServer("tor") as tor:
        ControlClient(spine.address).configure(configure_request(2, 4, racks, mtu=1500))
        with pytest.raises(SwitchError, match="refused the uplink: .*MTU of 9000 B, this spine is configured for 1500"):
            ControlClient(tor.address).configure(configure_request(2, 4, racks, rack_id=0, spine_address=spine.address,
                                                                   mtu=9000))


def test_jumbo_frames_through_the_switches_train_like_sa(tmp_path):
    """The issue's command: the ranks' 9000-byte packets used to meet switches that expected 1500."""
    from cli import train_here

    common = ["dataset=cora", "world_size=2", "epochs=2"]
    sw, _ = train_here(tmp_path / "switch", *common, "fabric=switch", "strategy.options.mtu=9000")
    sa, _ = train_here(tmp_path / "sa", *common, "strategy=sa")
    assert sw["hardware"]["headers"]["mtu_bytes"] == 9000 and sa["hardware"]["headers"]["mtu_bytes"] == 1500
    assert [e["loss"] for e in sw["epochs"]][0] == sa["epochs"][0]["loss"]  # same weights, bit-exact forward
    for a, b in zip(sw["epochs"], sa["epochs"], strict=True):
        assert abs(a["loss"] - b["loss"]) < 1e-5
    rig = sw["netsparse"]
    assert rig["wire_bytes"] / rig["packets"] > 1500  # packets larger than Table 5's MTU went through the ToR


#: The simulator-only assumption knobs carried by SimConfig (docs/simulator.md): field, a value to set,
#: the SimConfig attribute, its default and its set value, and a value the field refuses.
SIM_KNOBS = [("snic.rig_local_idxs", "host_filtered", "host_filters_local", False, True, "filtered"),
             ("snic.rig_auto_split", "remote_idxs", "auto_splits_remote", False, True, "remote"),
             ("snic.rig_unit_roles", "dynamic", "dynamic_units", False, True, "both"),
             ("snic.rig_command_overlap", "overlap", "overlap_commands", False, True, "yes"),
             ("switch.middle_pipe_prs_per_cycle", 3, "pipe_prs_per_cycle", 1, 3, 2048)]


@pytest.mark.parametrize(("field", "value", "attr", "default", "set_to", "bad"), SIM_KNOBS,
                         ids=[k[0] for k in SIM_KNOBS])
def test_simulator_knobs_reach_the_simulator(field, value, attr, default, set_to, bad):
    """``+hw`` sets each knob, SimConfig carries it, the default is the model as it was, a bad value is
    one error that names the field."""
    from netsparse_torch.errors import ConfigError

    assert getattr(sim_config(simulate_hardware(compose("simulate")), 16, check_mechanisms(None)), attr) == default
    params = simulate_hardware(compose("simulate", f"+hw.{field}={value}"))
    assert getattr(sim_config(params, 16, check_mechanisms(None)), attr) == set_to
    section, name = field.split(".")
    with pytest.raises(ConfigError, match=field) as e:
        HardwareParams.from_dict({section: {name: bad}})
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("bad", [0, 1.5, -2, 2048])
def test_a_middle_pipe_rate_is_a_whole_number_from_1_to_1024(bad):
    from netsparse_torch.errors import ConfigError

    with pytest.raises(ConfigError, match="middle_pipe_prs_per_cycle"):
        HardwareParams.from_dict({"switch": {"middle_pipe_prs_per_cycle": bad}})


def test_report_knobs_are_validated_with_one_line_errors():
    """software.rank_partition and link.line_util_direction: a typo is one error naming the values."""
    from netsparse_torch.errors import ConfigError

    params = simulate_hardware(compose("simulate", "+hw.software.rank_partition=nnz",
                                       "+hw.link.line_util_direction=both"))
    assert (params.software.rank_partition, params.link.line_util_direction) == ("nnz", "both")
    assert (HardwareParams().software.rank_partition, HardwareParams().link.line_util_direction) == ("rows", "rx")
    with pytest.raises(ConfigError, match="software.rank_partition must be one of"):
        HardwareParams.from_dict({"software": {"rank_partition": "balanced_nnz"}})
    with pytest.raises(ConfigError, match="link.line_util_direction must be one of"):
        HardwareParams.from_dict({"link": {"line_util_direction": "tx"}})


# -- every field, followed from the config to what reads it ------------------------------------------------
# Each field of HardwareParams: a value other than Table 5's, the consumers of a run that read it, and the
# other fields it needs to be read at all (a HyperX shape needs topology=hyperx). Consumers: "rig" (the
# RIG node a training rank builds), "switch" (what the launcher configures the switches with), "sim" (the
# simulator's C++ SimConfig), "topology" (the network the simulator and the analytic models route on),
# "modeled" (the modeled report: analytic baselines and simulated NetSparse), "concatenator" (the NIC
# concatenator's own unit, whose virtualised queues no run uses yet).
HYPERX, DRAGONFLY = {("cluster", "topology"): "hyperx"}, {("cluster", "topology"): "dragonfly"}
HYPERX_64 = {**HYPERX, ("switch", "ports"): 64}  # a larger HyperX needs switches with more ports
FIELDS: dict[tuple[str, str], tuple] = {
    ("cluster", "nodes"): (64, {"topology", "modeled"}),
    ("cluster", "rack_size"): (8, {"topology"}),
    ("cluster", "topology"): ("hyperx", {"topology"}),
    ("topology", "leafspine_spines"): (8, {"topology"}),
    ("topology", "leafspine_spine_choice"): ("per_packet", {"topology"}),
    ("topology", "hyperx_shape"): ([8, 4, 2], {"topology"}, HYPERX_64),
    ("topology", "hyperx_hosts_per_switch"): (8, {"topology"}, HYPERX_64),
    ("topology", "hyperx_width"): (2, {"topology"}, HYPERX),
    ("topology", "dragonfly_groups"): (8, {"topology"}, DRAGONFLY),
    ("topology", "dragonfly_switches_per_group"): (16, {"topology"}, DRAGONFLY),
    ("topology", "dragonfly_hosts_per_switch"): (8, {"topology"}, DRAGONFLY),
    ("link", "bandwidth_gbps"): (100.0, {"topology", "modeled"}),
    ("link", "latency_ns"): (900.0, {"topology"}),
    ("link", "line_util_direction"): ("both", {"modeled"}),
    ("switch", "latency_ns"): (600.0, {"sim"}),
    ("switch", "ports"): (64, {"sim"}),
    ("switch", "pipes"): (4, {"sim"}),
    ("switch", "clock_ghz"): (1.0, {"sim"}),
    ("switch", "concat_delay_cycles"): (7, {"switch", "sim"}),
    ("switch", "netsparse_in_tor"): (False, {"sim"}),
    ("switch", "netsparse_in_spine"): (True, {"modeled"}),
    ("switch", "middle_pipe_prs_per_cycle"): (2, {"sim"}),
    ("switch", "buffer_bytes"): (2**26, {"sim"}),
    ("property_cache", "size_bytes"): (2**20, {"switch", "sim"}),
    ("property_cache", "ways"): (8, {"switch", "sim"}),
    ("property_cache", "latency_cycles"): (32, {"sim"}),
    ("property_cache", "segment_bytes"): (32, {"switch", "sim"}),
    ("property_cache", "max_line_bytes"): (1024, {"switch", "sim"}),
    ("snic", "clock_ghz"): (1.1, {"sim"}),
    ("snic", "rig_units"): (8, {"rig", "sim"}),
    ("snic", "rig_client_units"): (4, {"rig", "sim"}),
    ("snic", "pending_pr_table"): (64, {"rig", "sim"}),
    ("snic", "lsq_entries"): (32, {"sim"}),
    ("snic", "rig_batch_size"): (64, {"rig", "sim"}),
    ("snic", "rig_auto_split"): ("remote_idxs", {"sim"}),
    ("snic", "concat_delay_cycles"): (50, {"rig", "sim"}),
    ("snic", "concat_phys_queue_bytes"): (512, {"concatenator"}),
    ("snic", "concat_phys_queues"): (32, {"concatenator"}),
    ("snic", "rig_cycles_per_pr"): (2, {"rig"}),
    ("snic", "rig_local_idxs"): ("host_filtered", {"sim"}),
    ("snic", "rig_command_overlap"): ("overlap", {"sim"}),
    ("snic", "rig_unit_roles"): ("dynamic", {"sim"}),
    ("snic", "idx_bytes"): (8, {"sim"}),
    ("snic", "rx_buffer_bytes"): (2**20, {"sim"}),
    ("snic", "tx_buffer_bytes"): (2**20, {"sim"}),
    ("snic_memory", "line_bytes"): (128, {"sim"}),
    ("snic_memory", "l1_bytes"): (65536, {"sim"}),
    ("snic_memory", "l1_ways"): (8, {"sim"}),
    ("snic_memory", "l1_cycles"): (5, {"sim"}),
    ("snic_memory", "l2_bytes"): (262144, {"sim"}),
    ("snic_memory", "l2_ways"): (16, {"sim"}),
    ("snic_memory", "l2_cycles"): (14, {"sim"}),
    ("snic_memory", "llc_bytes"): (2**25, {"sim"}),
    ("snic_memory", "llc_ways"): (8, {"sim"}),
    ("snic_memory", "llc_cycles"): (50, {"sim"}),
    ("snic_memory", "dram_latency_ns"): (120.0, {"sim"}),
    ("pcie", "latency_ns"): (400.0, {"sim"}),
    ("pcie", "bandwidth_gbytes_per_s"): (64.0, {"sim"}),
    ("headers", "upper_bytes"): (40, {"rig", "switch", "sim"}),
    ("headers", "concat_bytes"): (16, {"sim"}),
    ("headers", "pr_bytes"): (20, {"sim"}),
    ("headers", "mtu_bytes"): (9000, {"rig", "switch", "sim"}),
    ("headers", "element_bytes"): (8, {"sim"}),
    ("software", "cores"): (32, {"modeled"}),
    ("software", "rank_partition"): ("nnz", {"modeled"}),
    ("software", "sa_target_goodput"): (0.2, {"modeled"}),
    ("software", "sa_target_goodput_k128"): (0.5, {"modeled"}),
    ("software", "sa_per_pr_overhead_ns"): (100.0, {"modeled"}),
    ("software", "sa_per_byte_overhead_ns"): (1.0, {"modeled"}),
}
# Fields no consumer of a run reads beyond their check: the value Table 5 documents.
DOCUMENTED_ONLY = {
    ("property_cache", "policy"): "only 'lru' is modeled (any other value is refused)",
    ("pcie", "generation"): "the PCIe generation behind latency_ns and bandwidth_gbytes_per_s, which are read",
}


def _all_fields() -> set[tuple[str, str]]:
    import dataclasses

    p = HardwareParams()
    return {(s.name, f.name) for s in dataclasses.fields(p) for f in dataclasses.fields(getattr(p, s.name))}


def test_the_field_table_names_every_hardware_field():
    assert set(FIELDS) | set(DOCUMENTED_ONLY) == _all_fields()
    assert not set(FIELDS) & set(DOCUMENTED_ONLY)
    table5 = HardwareParams().to_dict()
    assert [f for f, (value, *_) in FIELDS.items() if value == table5[f[0]][f[1]]] == []  # each a change


def _consumers(cfg, hardware, names: set[str]) -> dict:
    import dataclasses
    import json

    import numpy as np

    from hw_models import unit_args
    from hw_models.topology import build_topology

    out = {}
    if "rig" in names:
        out["rig"] = rig_settings(cfg, hardware)
    if "switch" in names:  # what SwitchService configures every switch with (a real ToR: the CASES above)
        out["switch"] = unit_args.switch_options(hardware)
    if "concatenator" in names:
        out["concatenator"] = unit_args.concatenator(hardware)
    if "sim" in names:
        c = sim_config(hardware, 16, check_mechanisms(None))
        out["sim"] = {a: getattr(c, a) for a in dir(c) if not a.startswith("_") and a != "flit"}
    if "topology" in names:
        t = build_topology(hardware)
        out["topology"] = {f.name: np.asarray(getattr(t, f.name)).tolist() for f in dataclasses.fields(t)}
    if "modeled" in names:
        out["modeled"] = _modeled(json.dumps(hardware.to_dict(), sort_keys=True, default=str))
    return out


@functools.lru_cache(maxsize=4)
def _modeled(hardware_json: str) -> str:
    """The modeled report (simulated and analytic) of a small skewed matrix (8 rows read everywhere, so a
    node's sent and received bytes differ) on the hardware, less its ``hardware`` block."""
    import json

    import numpy as np
    import scipy.sparse as sp

    from hw_models.analysis import analyze, default_simulator

    n, rng = 512, np.random.default_rng(0)
    heavy = sp.csr_matrix((np.ones(8 * n), (np.repeat(np.arange(8), n), rng.integers(0, n, 8 * n))), shape=(n, n))
    a = (sp.random(n, n, density=0.02, format="csr", random_state=0) + heavy).tocsr()
    params = HardwareParams.from_dict(json.loads(hardware_json))
    report = analyze(a, params, k=4, ablation=False, extras=(), simulator=default_simulator())
    report.pop("hardware")
    return json.dumps(report, sort_keys=True, default=str)


def _config_key(cfg, field: tuple[str, str]) -> str:
    """Where the training config sets ``field``: the shortcut that already gives it (``cluster.nodes`` of
    cluster=leafspine128: ``hw`` would disagree with it), else ``hw.<section>.<field>``."""
    from omegaconf import OmegaConf

    from hw_models.hardware import TRAIN_SHORTCUTS

    given = [k for k, f in TRAIN_SHORTCUTS.items() if f == field and OmegaConf.select(cfg, k) is not None]
    return given[0] if given else "hw." + ".".join(field)


@pytest.mark.parametrize("field", sorted(FIELDS), ids=".".join)
def test_every_hardware_field_reaches_what_reads_it(field, monkeypatch):
    """``+hw.<section>.<field>=`` on the training config changes each consumer that reads the field (and
    the modeled block models the run's own object)."""
    from omegaconf import OmegaConf

    value, names, *needs = FIELDS[field]
    cfg = compose("train", *TRAIN)
    for where, v in (needs[0] if needs else {}).items():
        OmegaConf.update(cfg, _config_key(cfg, where), v, force_add=True)
    before = train_hardware(cfg)
    OmegaConf.update(cfg, _config_key(cfg, field), value, force_add=True)
    after = train_hardware(cfg)
    got = getattr(getattr(after, field[0]), field[1])
    assert (list(got) if isinstance(got, tuple) else got) == value
    if "modeled" in names:
        assert modeled_hardware(cfg, after, monkeypatch) is after
    old, new = _consumers(cfg, before, names), _consumers(cfg, after, names)
    assert [n for n in sorted(names) if old[n] == new[n]] == []


def test_documented_only_fields_are_checked():
    from hw_models.errors import ConfigError

    with pytest.raises(ConfigError, match="only 'lru' is modeled"):
        HardwareParams().replace(property_cache={"policy": "fifo"})
    with pytest.raises(ConfigError):
        HardwareParams().replace(pcie={"generation": 0})


def test_a_training_run_builds_its_hardware_once(tmp_path, monkeypatch):
    """One HardwareParams per run: built by the values' check and handed on (to the job, the ranks, the
    switches and the modeled block), never rebuilt from the config on the way."""
    from cli import train_here

    import hw_models.hardware as hardware_module
    import netsparse_torch.run.job as job

    built = []

    def counted(cfg):
        built.append(cfg)
        return real(cfg)

    real = hardware_module.train_hardware
    monkeypatch.setattr(hardware_module, "train_hardware", counted)
    monkeypatch.setattr(job, "train_hardware", counted, raising=False)
    train_here(tmp_path, "dataset=synthetic", "dataset.num_nodes=120", "epochs=1", "hidden=4", "world_size=1",
               "strategy=netsparse", f"hydra.run.dir={tmp_path}")
    assert len(built) == 1


def test_netsparse_switch_config_is_read_as_hardware_params(tmp_path):
    """``netsparse-switch --config``: the fabric keys and ``hw`` sections, the switch's numbers from that
    HardwareParams (Table 5 where not given), as a run's switches get theirs."""
    from hw_models.unit_args import binding as units
    from netsparse_torch.cli.switch import read_config
    from netsparse_torch.switch_service.control import config_from_request, configure_request

    path = tmp_path / "tor.yaml"
    path.write_text("n_nodes: 2\nprop_bytes: 8\nracks: {0: [0, 1]}\n"
                    "hw:\n  headers: {mtu_bytes: 9000}\n  property_cache: {size_bytes: .inf}\n")
    kw = read_config(str(path))
    assert kw["hardware"] == HardwareParams().replace(headers={"mtu_bytes": 9000}, property_cache={"size_bytes": "inf"})
    tor = config_from_request(configure_request(**kw), "tor")
    assert (tor.mtu, tor.cache["size_bytes"]) == (9000, units.UNBOUNDED_CACHE)
    assert tor.delay_cycles == HardwareParams().switch.concat_delay_cycles
