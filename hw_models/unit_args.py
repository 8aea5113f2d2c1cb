"""The hardware arguments of the C++ units, from :class:`~hw_models.params.HardwareParams`.

No hardware number is a default in C++: every size, count and delay a unit of
``hw_models._C.units`` takes is a required keyword of its binding. This module is the one place
that turns :class:`HardwareParams` (which names each value's source: NetSparse Table 5, a section, or
our assumption) into those keywords; each function returns the keyword dict of the binding it is
named after::

    units.RigNode(rank, row_bounds, **unit_args.rig_node())
    units.SwitchPipe(n_dests=4, prop_bytes=64, **unit_args.switch_pipe(capacity_bytes=4096))

``params`` (default: Table 5) is the run's hardware (:mod:`hw_models.hardware`); ``overrides`` replace
single keywords (a test's small cache), and a name the binding does not take raises
:class:`~hw_models.errors.ConfigError`. ``rig_node``'s hardware keywords (``mtu``,
``batch_size``, ...) are fields of ``params``: an override of one is validated and encoded as the field.
The simulator's ``SimConfig`` is built by
:func:`hw_models.simulator.sim_config`, NetCrafter's ``FlitLinkConfig`` by
:class:`hw_models.seeds.netcrafter.LinkConfig`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from hw_models.errors import ConfigError
from hw_models.hardware import RIG_NODE_FIELDS, cxx_batch, cxx_delay
from hw_models.params import HardwareParams

RIG_SWITCHES = ("filter", "coalesce")
"""Mechanism switches of the RIG units (on unless a caller turns them off): not hardware numbers, so
the bindings keep them as defaults."""


def wire(params: HardwareParams | None = None, **overrides: Any) -> dict[str, int]:
    """``mtu`` and ``upper_bytes`` of the packet functions (``encode_packet``, ``decode_packet``,
    ``decode_stream``, ``scan_frame``, ``split_frame``, ``prs_by_owner``): NetSparse Table 5."""
    hd = (params or HardwareParams()).headers
    return _merge("wire", {"mtu": hd.mtu_bytes, "upper_bytes": hd.upper_bytes}, overrides)


def concatenator(params: HardwareParams | None = None, **overrides: Any) -> dict[str, Any]:
    """``units.Concatenator``: the NIC's concatenation delay (Table 5) and the pool of its optional
    virtualised queues (§7.2; ``virtual_queues`` stays off unless given)."""
    p = params or HardwareParams()
    base = {**wire(p), "delay_cycles": cxx_delay(p.snic.concat_delay_cycles),
            "phys_queue_bytes": p.snic.concat_phys_queue_bytes, "phys_queues": p.snic.concat_phys_queues}
    return _merge("Concatenator", base, overrides, ("virtual_queues",))


def property_cache(params: HardwareParams | None = None, **overrides: Any) -> dict[str, int | None]:
    """``units.PropertyCache``: one cache holding the switch's whole capacity (Table 5, §6.2.2), as the
    switch service's one pipe per ToR does. (The simulator splits it over the middle pipes.)
    ``size_bytes=inf`` -> ``capacity_bytes=None``, the unbounded cache."""
    pc = (params or HardwareParams()).property_cache
    capacity = None if math.isinf(pc.size_bytes) else int(pc.size_bytes)
    base = {"capacity_bytes": capacity, "ways": pc.ways, "segment_bytes": pc.segment_bytes,
            "max_line_bytes": pc.max_line_bytes}
    return _merge("PropertyCache", base, overrides, ("keep_data",))


def switch_pipe(params: HardwareParams | None = None, **overrides: Any) -> dict[str, Any]:
    """``units.SwitchPipe``: the property cache of :func:`property_cache`, the packet sizes and the
    switch's concatenation delay (Table 5, §6.1.2)."""
    p = params or HardwareParams()
    base = {**property_cache(p), **wire(p), "delay_cycles": cxx_delay(p.switch.concat_delay_cycles)}
    return _merge("SwitchPipe", base, overrides)


def rig_node(params: HardwareParams | None = None, **overrides: Any) -> dict[str, Any]:
    """``units.RigNode``: the SNIC's RIG units, Pending PR Tables, RIG batch size and concatenation
    delay (Table 5), the packet sizes and the round clock (``snic.rig_cycles_per_pr``). The clients are
    ``snic.rig_client_units`` of the units, or half (``n_client_units=-1``), as in the simulator. An
    override of a hardware keyword (:data:`~hw_models.hardware.RIG_NODE_FIELDS`, e.g.
    ``delay_cycles=math.inf``) replaces that field of ``params``."""
    p = params or HardwareParams()
    fields = {name: overrides.pop(name) for name in list(overrides) if name in RIG_NODE_FIELDS}
    if fields:
        sections: dict[str, dict[str, Any]] = {}
        for name, value in fields.items():
            section, field = RIG_NODE_FIELDS[name]
            sections.setdefault(section, {})[field] = value
        p = p.replace(**sections)
    snic = p.snic
    clients = -1 if snic.rig_client_units is None else snic.rig_client_units
    base = {"n_units": snic.rig_units, "n_client_units": clients, "batch_size": cxx_batch(snic.rig_batch_size),
            "pending_capacity": snic.pending_pr_table, **wire(p), "delay_cycles": cxx_delay(snic.concat_delay_cycles),
            "cycles_per_pr": snic.rig_cycles_per_pr}
    return _merge("RigNode", base, overrides, RIG_SWITCHES)


def rig_client_unit(params: HardwareParams | None = None, **overrides: Any) -> dict[str, Any]:
    """``units.RigClientUnit``: its Pending PR Table (Table 5)."""
    base = {"pending_capacity": (params or HardwareParams()).snic.pending_pr_table}
    return _merge("RigClientUnit", base, overrides, RIG_SWITCHES)


def header_sizes(params: HardwareParams | None = None, **overrides: Any) -> dict[str, int]:
    """``units.HeaderSizes``: the modeled header sizes of NetSparse Table 5 (upper layers,
    concatenation header, PR header). ``HeaderSizes.wire(upper)`` gives the encoded Fig. 6 sizes."""
    hd = (params or HardwareParams()).headers
    return _merge("HeaderSizes", {"upper": hd.upper_bytes, "concat": hd.concat_bytes, "pr": hd.pr_bytes}, overrides)


def _merge(unit: str, base: Mapping[str, Any], overrides: Mapping[str, Any],
           switches: Iterable[str] = ()) -> dict[str, Any]:
    known = [*base, *switches]
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ConfigError(f"unknown {unit} argument(s) {unknown}; known: {', '.join(known)}")
    return {**base, **overrides}
