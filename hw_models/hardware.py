"""The run's one hardware configuration: a :class:`~hw_models.params.HardwareParams` built once from
the ``hw`` config group and the shortcuts, and what every consumer derives from it.

``netsparse-train`` (:func:`train_hardware`) and ``netsparse-simulate`` (:func:`simulate_hardware`)
build it once; the RIG node (:func:`hw_models.unit_args.rig_node`), the switch service
(:func:`switch_options`), the modeled block and the simulator's C++ ``SimConfig``
(:func:`hw_models.simulator.sim_config`) read their numbers from it, and the report carries it once
as ``hardware``. ``HardwareParams`` validates every field (``hw_models.params``).

The shortcuts (``strategy.options.mtu``, ``batch_size``, ``cache_bytes``, ...) are command-line names
of single fields. ``null`` (their default) leaves the field to ``hw``; a value sets it; a shortcut and
``hw`` (or two shortcuts) that give one field two different values are one :class:`ConfigError`.

One encoding each: in the config and in ``HardwareParams``, ``"auto"`` (:data:`AUTO`, the RIG batch
size) and ``inf`` (YAML ``.inf``; the strings ``inf``/``.inf`` are read as it). The C++ units and the
simulator take integers: :func:`cxx_batch` and :func:`cxx_delay` are the only converters, into the
encoding of ``csrc/units/rig_unit.h`` (``kAutoBatch``, ``kWholeStreamBatch``) and
``csrc/units/concatenator.h`` (``kInfiniteDelay``). ``null`` never means infinite: in the config and
in a unit's options it means "not given" (the ``hw`` value).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from hw_models.errors import ConfigError
from hw_models.native import units as _units
from hw_models.params import _SECTIONS, HardwareParams, _parse_inf, _to_container

AUTO = "auto"
"""The one encoding of ``auto`` (the RIG batch size: ``units::auto_batch_size`` per node)."""

TRAIN_SHORTCUTS: dict[str, tuple[str, str]] = {
    "cluster.nodes": ("cluster", "nodes"),
    "cluster.rack_size": ("cluster", "rack_size"),
    "cluster.topology": ("cluster", "topology"),
    "strategy.options.n_units": ("snic", "rig_units"),
    "strategy.options.batch_size": ("snic", "rig_batch_size"),
    "strategy.options.pending_capacity": ("snic", "pending_pr_table"),
    "strategy.options.delay_cycles": ("snic", "concat_delay_cycles"),
    "strategy.options.mtu": ("headers", "mtu_bytes"),
    "strategy.options.upper_bytes": ("headers", "upper_bytes"),
    "fabric.delay_cycles": ("switch", "concat_delay_cycles"),
    "fabric.capacity_bytes": ("property_cache", "size_bytes"),
    "fabric.ways": ("property_cache", "ways"),
    "fabric.segment_bytes": ("property_cache", "segment_bytes"),
    "fabric.max_line_bytes": ("property_cache", "max_line_bytes"),
}
"""``netsparse-train``'s shortcuts: config key -> (section, field) of ``HardwareParams``."""

SIMULATE_SHORTCUTS: dict[str, tuple[str, str]] = {
    "nodes": ("cluster", "nodes"),
    "rack_size": ("cluster", "rack_size"),
    "topology": ("cluster", "topology"),
    "batch_size": ("snic", "rig_batch_size"),
    "rig_units": ("snic", "rig_units"),
    "nic_delay_cycles": ("snic", "concat_delay_cycles"),
    "switch_delay_cycles": ("switch", "concat_delay_cycles"),
    "cache_bytes": ("property_cache", "size_bytes"),
    "sa_per_pr_overhead_ns": ("software", "sa_per_pr_overhead_ns"),
}
"""``netsparse-simulate``'s shortcuts: config key -> (section, field) of ``HardwareParams``."""

RIG_NODE_FIELDS: dict[str, tuple[str, str]] = {
    key.rpartition(".")[2]: field for key, field in TRAIN_SHORTCUTS.items() if key.startswith("strategy.options.")}
"""``units.RigNode`` keywords that are hardware fields (the netsparse strategy's options of the same name)."""


def train_hardware(cfg) -> HardwareParams:
    """The hardware of a ``netsparse-train`` run: ``hw``, then ``cluster.hw`` (the modeled cluster's
    fields, a shortcut of the same form) and :data:`TRAIN_SHORTCUTS`."""
    cluster = cfg.get("cluster") or {}
    return resolve(_mapping(cfg.get("hw"), "hw"),
                   [("cluster.hw", _mapping(cluster.get("hw"), "cluster.hw"))],
                   _shortcut_values(cfg, TRAIN_SHORTCUTS))


def simulate_hardware(cfg) -> HardwareParams:
    """The hardware of a ``netsparse-simulate`` run: ``hw``, the hardware file ``hw_file`` (``hw=<path>.yaml``
    on the command line) and :data:`SIMULATE_SHORTCUTS`. A rack size given for a topology without racks
    (HyperX, Dragonfly: their hosts per switch are ``hw.topology`` fields) is refused."""
    files = [("hw_file", read_hardware_file(cfg.hw_file))] if cfg.get("hw_file") else []
    shortcuts = _shortcut_values(cfg, SIMULATE_SHORTCUTS)
    params = resolve(_mapping(cfg.get("hw"), "hw"), files, shortcuts)
    topology = params.cluster.topology
    if topology in NO_RACKS:
        given = [f"{key}={value}" for key, where, value in shortcuts
                 if where == ("cluster", "rack_size") and value is not None]
        given += [f"{name}.cluster.rack_size" for name, m in [("hw", _mapping(cfg.get("hw"), "hw")), *files]
                  if "rack_size" in (m.get("cluster") or {})]
        if given:
            raise ConfigError(f"{given[0]} does not apply to topology={topology}, which has no racks: its hosts per "
                              f"switch are hw.topology.{NO_RACKS[topology]} "
                              f"({getattr(params.topology, NO_RACKS[topology])}); drop the rack size")
    return params


NO_RACKS = {"hyperx": "hyperx_hosts_per_switch", "dragonfly": "dragonfly_hosts_per_switch"}
"""Topologies without racks (NetSparse Fig. 22) and the field that sets their hosts per switch."""


def read_hardware_file(path) -> dict[str, Any]:
    """The hardware sections of a YAML file (``{section: {field: value}}``, as ``configs/hw/`` holds them,
    like ASTRA-sim's network file); a missing or malformed file is one :class:`ConfigError`."""
    import yaml

    try:
        with open(str(path)) as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise ConfigError(f"hardware file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"hardware file {path} is not YAML: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"hardware file {path} must hold sections of fields ({', '.join(_SECTIONS)}), "
                          f"got {type(data).__name__}")
    return _mapping(data, f"hardware file {path}")


def resolve(hw: Mapping[str, Any], mappings: Iterable[tuple[str, Mapping[str, Any]]],
            shortcuts: Iterable[tuple[str, tuple[str, str], Any]]) -> HardwareParams:
    """``HardwareParams`` from ``hw`` ({section: {field: value}}), other mappings of that form and
    ``(key, (section, field), value)`` shortcuts (``None`` = not given). Every field is given once or
    by sources that agree; the error names the two that do not."""
    fields: dict[tuple[str, str], tuple[str, Any]] = {}

    def give(key: str, where: tuple[str, str], value: Any) -> None:
        value = _parse_inf(value)
        if where in fields and fields[where][1] != value:
            other, was = fields[where]
            raise ConfigError(f"{other}={_show(was)} and {key}={_show(value)} disagree on the hardware field "
                              f"{'.'.join(where)}: set it in one place")
        fields[where] = (key, value)

    for name, mapping in [("hw", hw), *mappings]:
        for section, values in mapping.items():
            if not isinstance(values, Mapping):
                raise ConfigError(f"{name}.{section} must be a mapping of fields, got {values!r}")
            for field, value in values.items():
                give(f"{name}.{section}.{field}", (str(section), str(field)), value)
    for key, where, value in shortcuts:
        if value is not None:
            give(key, where, value)
    nested: dict[str, dict[str, Any]] = {}
    for (section, field), (_, value) in fields.items():
        nested.setdefault(section, {})[field] = value
    return HardwareParams.from_dict(nested)


def switch_options(params: HardwareParams) -> dict[str, Any]:
    """The switch service's ``configure_request`` keywords from ``params``: the property cache
    (§6.2.2), the switch concatenation delay (§6.1.2) and the packet sizes (Table 5), so the switches
    expect the packets the RIG nodes of the same run build."""
    from hw_models import unit_args

    pipe = unit_args.switch_pipe(params)
    return {"delay_cycles": pipe["delay_cycles"], "capacity_bytes": pipe["capacity_bytes"], "ways": pipe["ways"],
            "segment_bytes": pipe["segment_bytes"], "max_line_bytes": pipe["max_line_bytes"], "mtu": pipe["mtu"],
            "upper_bytes": pipe["upper_bytes"]}


def cxx_batch(batch: float | str) -> int:
    """A RIG batch size of ``HardwareParams`` (``"auto"``, ``inf`` or a whole number) as the C++ units
    and the simulator take it."""
    if batch == AUTO:
        return int(_units.AUTO_BATCH)
    if math.isinf(batch):
        return int(_units.WHOLE_STREAM_BATCH)
    return int(batch)


def cxx_delay(cycles: float) -> int:
    """A concatenation delay of ``HardwareParams`` (cycles or ``inf``) as the C++ units and the
    simulator take it (``INFINITE_DELAY``: queues flush only when full)."""
    return int(_units.INFINITE_DELAY) if math.isinf(cycles) else int(cycles)


def _shortcut_values(cfg, table: Mapping[str, tuple[str, str]]) -> list[tuple[str, tuple[str, str], Any]]:
    from omegaconf import OmegaConf

    return [(key, where, OmegaConf.select(cfg, key, default=None)) for key, where in table.items()]


def _mapping(node, name: str) -> dict[str, Any]:
    value = _to_container(node)
    unknown = sorted(set(value) - set(_SECTIONS))
    if unknown:
        raise ConfigError(f"unknown {name} section(s) {unknown}; known: {', '.join(_SECTIONS)}")
    return value


def _show(value: Any) -> str:
    return ".inf" if isinstance(value, float) and math.isinf(value) else str(value)
