"""NetSparse hardware units (C++, one implementation each), re-exported from ``hw_models._C.units``.

Units (paper sections in brackets):

- wire protocol [Fig. 6]: :func:`encode_packet`, :func:`decode_packet`, :func:`decode_stream`
  (the deconcatenator), :func:`max_prs_per_packet`; header 14 B + 18 B per PR (+ ``len`` payload
  bytes per response PR), little-endian. Bad packets raise a ``PacketError`` subclass (see below).
- header model [Table 5, Fig. 6]: :class:`HeaderSizes` (the modeled Table 5 sizes, 50/12/18 B, from
  ``hw_models.unit_args.header_sizes``; ``wire(upper)`` = upper/14/18 B), :func:`packet_bytes`,
  :func:`stream_bytes`, :func:`sa_header_share` (Table 3).
- :class:`Concatenator` [§6.1.2, §7.2]: queues per (type, destination), expiration FIFO, optional
  virtualised queues; time is a caller-supplied cycle counter.
- :class:`PropertyCache` [§6.2.2]: set-associative LRU switch cache; ``size_bytes=UNBOUNDED_CACHE`` (-1) is
  the unbounded cache (never evicts, memory follows what is inserted).
- :class:`SwitchPipe` [§6.2.1]: the switch middle pipe (cache + concatenation).
- :class:`RigClientUnit` [§5.1-5.3]: one RIG client unit with filtering and coalescing.
- :class:`RigNode`: one node's pipeline (client units, Idx Filter, concatenators, server units) with
  the round API ``begin_kernel / submit / pump_reads / serve / absorb / done / stats / reset_stats``.

No hardware number is a default here: every size, count and delay is a required keyword, and
:mod:`hw_models.unit_args` gives them all from ``HardwareParams`` (NetSparse Table 5 by default).

RigNode round loop (what ``strategy=netsparse`` runs per kernel on every rank)::

    node = RigNode(rank, row_bounds, **unit_args.rig_node())   # row_bounds: n_ranks + 1 ints
    node.begin_kernel(prop_bytes, halo_u8, local_u8)     # halo: (n_slots, prop_bytes) writable, C-contiguous;
                                                         # local: owned rows (rows, prop_bytes); filter invalidated
    node.submit(idxs, slots)                             # int64 global column ids + halo slot each
    while not all_ranks_done:                            # (e.g. an all_reduce of node.done())
        reads = node.pump_reads()                        # {dest: bytes}; exchange with all_to_all
        responses = node.serve(b"".join(reads_from_peers))   # {requester: bytes}; exchange back
        node.absorb(b"".join(responses_from_peers))      # fills halo slots

Semantics: slots of locally owned idxs are ignored (may be -1); a filtered idx is copied inside the
halo buffer from the slot where its property first landed; coalesced idxs get the same payload when
the response arrives. Counters accumulate until ``reset_stats()``. A property must fit one response
PR: ``prop_bytes <= MTU - upper - 14 - 18`` (1418 B with Table 5's sizes), else ``begin_kernel`` raises.
Errors are typed, each a ``ValueError`` too, so callers catch them by class, never by message:
``_C.units.ConfigInvalid`` (a :class:`~hw_models.errors.ConfigError`: a parameter or argument out
of range), ``_C.units.OutOfOrder`` (a :class:`~hw_models.errors.UnitStateError`: a unit called out
of order) and the :class:`~hw_models.errors.PacketError` subclasses (``MalformedPacket``,
``NPrsMismatch``, ``OversizePacket``, ``UnknownDestination``, ``BadSource``, ``WrongPropertySize``,
``Misrouted``), whose ``kind`` is the switch service's error-counter key.
"""

from __future__ import annotations

from hw_models.unit_args import binding as _units

READ: int = _units.READ
RESPONSE: int = _units.RESPONSE
CONCAT_HEADER_BYTES: int = _units.CONCAT_HEADER_BYTES
PR_HEADER_BYTES: int = _units.PR_HEADER_BYTES
INFINITE_DELAY: int = _units.INFINITE_DELAY  # a concatenation delay that never expires (hw_models.unit_args.cxx_delay)
UNBOUNDED_CACHE: int = _units.UNBOUNDED_CACHE  # a cache that never evicts (hw_models.unit_args.cxx_cache_bytes)

encode_packet = _units.encode_packet
decode_packet = _units.decode_packet
decode_stream = _units.decode_stream
max_prs_per_packet = _units.max_prs_per_packet
HeaderSizes = _units.HeaderSizes
packet_bytes = _units.packet_bytes
stream_bytes = _units.stream_bytes
sa_header_share = _units.sa_header_share
Concatenator = _units.Concatenator
PropertyCache = _units.PropertyCache
SwitchPipe = _units.SwitchPipe
RigClientUnit = _units.RigClientUnit
RigNode = _units.RigNode
InternalError = _units.InternalError  # a broken invariant (hw_models.errors.InternalError): a bug, not bad input
# the switch service's frame functions and the NetCrafter link (hw_models.seeds.netcrafter)
scan_frame = _units.scan_frame
split_frame = _units.split_frame
prs_by_owner = _units.prs_by_owner
switch_pipe_unit_counters = _units.switch_pipe_unit_counters
flits_for = _units.flits_for
FlitLinkConfig = _units.FlitLinkConfig
flit_link_run = _units.flit_link_run


def goodput(header_bytes: int, payload_bytes: int) -> float:
    """Goodput = payload / (payload + header) of a byte count (0.0 for an empty stream)."""
    total = header_bytes + payload_bytes
    return payload_bytes / total if total else 0.0


__all__ = [
    "READ", "RESPONSE", "CONCAT_HEADER_BYTES", "PR_HEADER_BYTES", "INFINITE_DELAY", "UNBOUNDED_CACHE",
    "encode_packet", "decode_packet", "decode_stream", "max_prs_per_packet", "HeaderSizes", "packet_bytes",
    "stream_bytes", "sa_header_share", "Concatenator", "PropertyCache", "SwitchPipe", "RigClientUnit", "RigNode",
    "InternalError",
    "scan_frame", "split_frame", "prs_by_owner", "switch_pipe_unit_counters", "flits_for", "FlitLinkConfig",
    "flit_link_run", "goodput",
]
