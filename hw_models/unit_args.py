"""The one door from :class:`~hw_models.params.HardwareParams` to the C++ units and the simulator.

No hardware number is a default in C++: every size, count and delay a unit of the binding
(:mod:`hw_models.unit_binding`, which no other module of ``hw_models`` imports) takes is a required
keyword. This module is the one place that turns :class:`HardwareParams` (which names each value's
source: NetSparse Table 5, a section, or our assumption) into those keywords and into the integers of
the simulator's ``SimConfig`` (:func:`hw_models.simulator.sim_config` takes its encodings from here).
Each unit function returns the keyword dict of the binding it is named after::

    units.RigNode(rank, row_bounds, **unit_args.rig_node())
    units.SwitchPipe(n_dests=4, prop_bytes=64, **unit_args.switch_pipe(size_bytes=4096))

``params`` (default: Table 5) is the run's hardware (:mod:`hw_models.hardware`); ``overrides`` replace
single keywords (a test's small cache), and a name the binding does not take raises
:class:`~hw_models.errors.ConfigError`. ``rig_node``'s hardware keywords (``mtu``, ``batch_size``,
...) are fields of ``params``: an override of one is validated and encoded as the field.

One encoding each. In ``HardwareParams`` and the config: ``"auto"`` (:data:`AUTO`, the RIG batch size)
and ``inf`` (a batch of the whole stream, a delay that never expires, an unbounded cache). The units,
the simulator and the switch service's wire take integers: :func:`cxx_batch`, :func:`cxx_delay` and
:func:`cxx_cache_bytes` are the only converters, into ``csrc/units/rig_unit.h`` (``kAutoBatch``,
``kWholeStreamBatch``), ``csrc/units/concatenator.h`` (``kInfiniteDelay``) and
``csrc/units/property_cache.h`` (``kUnboundedCache``, :data:`UNBOUNDED_CACHE`). ``null`` never means
infinite: in the config and in a unit's options it means "not given" (the ``hw`` value).

The split of a node's RIG units into clients and servers is decided here (:func:`rig_split`) and
passed to both the RIG node and the simulator, which only check it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from hw_models.errors import ConfigError
from hw_models.params import HardwareParams
from hw_models.unit_binding import units as binding

AUTO = "auto"
"""The one encoding of ``auto`` in ``HardwareParams`` (the RIG batch size: ``units::auto_batch_size`` per node)."""

UNBOUNDED_CACHE: int = int(binding.UNBOUNDED_CACHE)
"""The unbounded property cache (``size_bytes=inf``) as the units, the simulator and the switch
service's ``ConfigureRequest`` take it: ``kUnboundedCache`` (-1)."""

RIG_SWITCHES = ("filter", "coalesce")
"""Mechanism switches of the RIG units (on unless a caller turns them off): not hardware numbers, so
the bindings keep them as defaults."""

RIG_NODE_FIELDS: dict[str, tuple[str, str]] = {
    "rig_units": ("snic", "rig_units"),
    "rig_client_units": ("snic", "rig_client_units"),
    "batch_size": ("snic", "rig_batch_size"),
    "pending_capacity": ("snic", "pending_pr_table"),
    "delay_cycles": ("snic", "concat_delay_cycles"),
    "mtu": ("headers", "mtu_bytes"),
    "upper_bytes": ("headers", "upper_bytes"),
}
"""``units.RigNode`` keywords that are hardware fields (the netsparse strategy's options of the same
name, ``strategy.options.<name>``): keyword -> (section, field) of ``HardwareParams``."""


def cxx_batch(batch: float | str) -> int:
    """A RIG batch size of ``HardwareParams`` (``"auto"``, ``inf`` or a whole number) as the C++ units
    and the simulator take it."""
    if batch == AUTO:
        return int(binding.AUTO_BATCH)
    if math.isinf(batch):
        return int(binding.WHOLE_STREAM_BATCH)
    return int(batch)


def cxx_delay(cycles: float) -> int:
    """A concatenation delay of ``HardwareParams`` (cycles or ``inf``) as the C++ units, the simulator
    and the switch service take it (``INFINITE_DELAY``: queues flush only when full)."""
    return int(binding.INFINITE_DELAY) if math.isinf(cycles) else int(cycles)


def cxx_cache_bytes(size: float, pipes: int = 1) -> int:
    """A property cache's ``size_bytes`` (bytes or ``inf``) split over ``pipes`` caches, as the units,
    the simulator and the switch service take it (:data:`UNBOUNDED_CACHE` for ``inf``: never evicts,
    memory follows what is inserted)."""
    return UNBOUNDED_CACHE if math.isinf(size) else int(size) // pipes


def rig_split(params: HardwareParams | None = None) -> tuple[int, int]:
    """``(client units, server units)`` of a node: ``snic.rig_client_units`` clients, or half the RIG
    units (rounded down) when it is ``null``; the rest serve. ``HardwareParams`` refuses fewer than two
    RIG units (``rig_units=1`` has no split with a client and a server), and so does ``units.RigNode``."""
    snic = (params or HardwareParams()).snic
    clients = snic.rig_units // 2 if snic.rig_client_units is None else snic.rig_client_units
    return clients, snic.rig_units - clients


def auto_batch_size(node_nnz: int, max_node_nnz: int, params: HardwareParams | None = None) -> int:
    """The RIG batch size ``batch_size=auto`` gives a node with ``node_nnz`` nonzeros when the largest
    node has ``max_node_nnz``, with ``U`` client units: ``min(32768, max(own, ceil(n_max / 2U)))``, where
    ``own`` is ``s = ceil(n / U)`` below 8192 and the power of two nearest ``2 s`` above (the C++ rule
    the simulator and ``strategy=netsparse`` share; reasons in docs/simulator.md)."""
    return int(binding.auto_batch_size(int(node_nnz), int(max_node_nnz), rig_split(params)[0]))


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


def property_cache(params: HardwareParams | None = None, **overrides: Any) -> dict[str, int]:
    """``units.PropertyCache``: one cache holding the switch's whole capacity (Table 5, §6.2.2), as the
    switch service's one pipe per ToR does. (The simulator splits it over the middle pipes.)
    ``size_bytes=inf`` is :data:`UNBOUNDED_CACHE`."""
    pc = (params or HardwareParams()).property_cache
    base = {"size_bytes": cxx_cache_bytes(pc.size_bytes), "ways": pc.ways, "segment_bytes": pc.segment_bytes,
            "max_line_bytes": pc.max_line_bytes}
    return _merge("PropertyCache", base, overrides, ("keep_data",))


def switch_pipe(params: HardwareParams | None = None, **overrides: Any) -> dict[str, Any]:
    """``units.SwitchPipe``: the property cache of :func:`property_cache`, the packet sizes and the
    switch's concatenation delay (Table 5, §6.1.2)."""
    p = params or HardwareParams()
    base = {**property_cache(p), **wire(p), "delay_cycles": cxx_delay(p.switch.concat_delay_cycles)}
    return _merge("SwitchPipe", base, overrides)


SWITCH_OPTIONS = ("delay_cycles", "size_bytes", "ways", "segment_bytes", "max_line_bytes", "mtu", "upper_bytes")
"""The hardware numbers of a switch service's ``ConfigureRequest`` (its ``SwitchPipe``'s keywords)."""


def switch_options(params: HardwareParams | None = None, **overrides: Any) -> dict[str, int]:
    """The switch service's ``configure_request`` keywords (:data:`SWITCH_OPTIONS`) from ``params``:
    the property cache (§6.2.2), the switch concatenation delay (§6.1.2) and the packet sizes (Table 5),
    so the switches expect the packets the RIG nodes of the same run build."""
    pipe = switch_pipe(params)
    return _merge("ConfigureRequest", {k: pipe[k] for k in SWITCH_OPTIONS}, overrides)


def rig_node(params: HardwareParams | None = None, **overrides: Any) -> dict[str, Any]:
    """``units.RigNode``: the SNIC's RIG units and their split (:func:`rig_split`), Pending PR Tables,
    RIG batch size and concatenation delay (Table 5), the packet sizes and the round clock
    (``snic.rig_cycles_per_pr``). An override of a hardware keyword (:data:`RIG_NODE_FIELDS`, e.g.
    ``delay_cycles=math.inf``) replaces that field of ``params``, validated as the field."""
    p = params or HardwareParams()
    fields = {name: overrides.pop(name) for name in list(overrides) if name in RIG_NODE_FIELDS}
    if fields:
        sections: dict[str, dict[str, Any]] = {}
        for name, value in fields.items():
            section, field = RIG_NODE_FIELDS[name]
            sections.setdefault(section, {})[field] = value
        p = p.replace(**sections)
    snic = p.snic
    clients, _ = rig_split(p)
    base = {"rig_units": snic.rig_units, "rig_client_units": clients, "batch_size": cxx_batch(snic.rig_batch_size),
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
