"""The run's one hardware configuration: a :class:`~hw_models.params.HardwareParams` built once from
the ``hw`` config group and the shortcuts, and what every consumer derives from it.

``netsparse-train`` (:func:`train_hardware`) and ``netsparse-simulate`` (:func:`simulate_hardware`)
build it once; the RIG node, the switch service and the simulator read their numbers from it through
one door (:mod:`hw_models.unit_args`), the modeled block reads it, and the report carries it once as
``hardware``. ``HardwareParams`` validates every field (``hw_models.params``).

The shortcuts (``strategy.options.mtu``, ``batch_size``, ``cache_bytes``, ...) are command-line names
of single fields. ``null`` (their default) leaves the field to ``hw``; a value sets it; a shortcut and
``hw`` (or two shortcuts) that give one field two different values are one :class:`ConfigError`.

In the config and in ``HardwareParams``, ``"auto"`` is the RIG batch size's automatic choice and
``inf`` (YAML ``.inf``; the strings ``inf``/``.inf`` are read as it) the infinite value; ``null`` never
means infinite: it means "not given" (the ``hw`` value). Their integer encodings for C++ are
:mod:`hw_models.unit_args`' alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from hw_models.errors import ConfigError
from hw_models.params import _SECTIONS, HardwareParams, _parse_inf, _to_container
from hw_models.unit_args import RIG_NODE_FIELDS

TRAIN_SHORTCUTS: dict[str, tuple[str, str]] = {
    "cluster.nodes": ("cluster", "nodes"),
    "cluster.rack_size": ("cluster", "rack_size"),
    "cluster.topology": ("cluster", "topology"),
    **{f"strategy.options.{name}": field for name, field in RIG_NODE_FIELDS.items()},
    "fabric.delay_cycles": ("switch", "concat_delay_cycles"),
    "fabric.size_bytes": ("property_cache", "size_bytes"),
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
    "cache_size_bytes": ("property_cache", "size_bytes"),
    "sa_per_pr_overhead_ns": ("software", "sa_per_pr_overhead_ns"),
}
"""``netsparse-simulate``'s shortcuts: config key -> (section, field) of ``HardwareParams``."""


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
    return _mapping(read_yaml_mapping(path, "hardware file", f"sections of fields ({', '.join(_SECTIONS)})"),
                    f"hardware file {path}")


def read_yaml_mapping(path, what: str, holds: str) -> dict[str, Any]:
    """The mapping a YAML file holds (``{}`` when empty); a missing file, bad YAML or another kind of
    value is one :class:`ConfigError` that names ``what`` and what it ``holds``."""
    import yaml

    try:
        with open(str(path)) as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path} is not YAML: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{what} {path} must hold {holds}, got {type(data).__name__}")
    return dict(data)


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
