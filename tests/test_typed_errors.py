"""C++ errors reach Python as typed exceptions (py::register_exception), never as messages to match:
each wire-protocol error is a subclass of netsparse_torch.errors.PacketError with its counter key,
each bad parameter a ConfigError; both stay ValueErrors for callers that catch those."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from hw_models import unit_args
from hw_models.seeds import netcrafter as nc
from hw_models.unit_args import binding as units
from netsparse_torch import errors

PROP = 16
WIRE = unit_args.wire()  # NetSparse Table 5 packet sizes (MTU, upper-layer header)


def header(type_: int, dest: int, len_: int, n_prs: int) -> bytes:
    return struct.pack("<HIII", type_, dest, len_, n_prs)  # Fig. 6 concatenation header, 14 B


def pr(src: int, idx: int) -> bytes:
    return struct.pack("<IHQI", src, 0, idx, 0)  # Fig. 6 PR header, 18 B


def read(src: int, dest: int, n: int = 1, len_: int = PROP) -> bytes:
    return header(0, dest, len_, n) + pr(src, 7) * n


@pytest.mark.parametrize(("frame", "cls", "kind"), [
    (b"\x00\x01\x02", "MalformedPacket", "malformed"),                     # truncated header
    (header(7, 1, PROP, 1) + pr(0, 1), "MalformedPacket", "malformed"),     # unknown type
    (header(0, 1, PROP, 3), "MalformedPacket", "malformed"),                # a header and no PR at all
    (header(0, 1, PROP, 3) + pr(0, 1) * 2, "NPrsMismatch", "n_prs_mismatch"),  # announces 3, holds 2
    (read(0, 1, n=100), "OversizePacket", "oversize"),                     # 1814 B > 1450 B
    (read(0, 7), "UnknownDestination", "unknown_destination"),             # node 7 of 3
    (read(2, 1), "BadSource", "bad_source"),                               # node 0 forging node 2
    (read(0, 1, len_=2 * PROP), "WrongPropertySize", "wrong_property_size"),
])
def test_frame_errors_are_typed(frame, cls, kind):
    with pytest.raises(getattr(units, cls)) as info:
        units.scan_frame(frame, n_dests=3, prop_bytes=PROP, expected_src=0, **WIRE)
    e = info.value
    assert isinstance(e, errors.PacketError) and isinstance(e, errors.NetsparseError) and isinstance(e, ValueError)
    assert e.kind == kind and type(e).kind == kind


def test_bad_parameters_are_config_errors():
    with pytest.raises(units.ConfigInvalid) as info:  # an MTU below one PR's headers
        units.max_prs_per_packet(60, 50, 0, PROP)
    assert isinstance(info.value, errors.ConfigError) and isinstance(info.value, ValueError)
    assert "MTU 60 is smaller than the headers" in str(info.value)


# ---- every unit: a sample of bad inputs, each checked by its class (never its message) -------------

def _concat(**hw):
    return units.Concatenator(n_dests=2, len=0, **unit_args.concatenator(**hw))


def _pipe(**hw):
    return units.SwitchPipe(n_dests=3, prop_bytes=PROP, **unit_args.switch_pipe(**hw))


def _node(**kw):
    return units.RigNode(0, [0, 4, 8], **unit_args.rig_node(**kw))


def _node_in_kernel():
    node = _node(rig_units=2)
    node.begin_kernel(8, np.zeros((4, 8), np.uint8), np.zeros((4, 8), np.uint8))
    return node


def _client(**kw):
    return units.RigClientUnit(node=0, row_bounds=[0, 2, 10], **unit_args.rig_client_unit(**kw))


def _push(c, dest, now):
    z = np.zeros(1, np.int64)
    c.push_many(z, z + dest, z, z, z, z, z + now)


def _backwards():
    c = _concat()
    _push(c, 0, 10)
    _push(c, 0, 0)


def _packet(type_, dest, idx, len_=8, src=0):
    payload = np.zeros(len_, np.uint8) if type_ else None
    return units.encode_packet(type_, dest, len_, [src], [0], [idx], [0], payload=payload, **WIRE)


def _forged_hit():
    p = _pipe()
    p.process(_packet(1, 0, 42, len_=PROP), 0)  # fills the cache with idx 42
    p.process(_packet(0, 1, 42, len_=PROP, src=7), 1)  # a hit answers source 7 of 3 nodes


def _unsorted_flits():
    nc.run_link(nc.PacketStream.of([nc.READ_REQ, nc.READ_REQ], arrival=[5, 1]))


CONFIG, STATE = errors.ConfigError, errors.UnitStateError
BAD = {  # unit: [(bad call, C++ class in _C.units, netsparse_torch.errors class)]
    "protocol": [(lambda: units.max_prs_per_packet(60, 50, 0, PROP), "ConfigInvalid", CONFIG)],
    "header model": [(lambda: units.HeaderSizes(upper=-1, concat=12, pr=18), "ConfigInvalid", CONFIG),
                     (lambda: units.sa_header_share(units.HeaderSizes(**unit_args.header_sizes()), 0, 4),
                      "ConfigInvalid", CONFIG)],
    "concatenator": [(lambda: _concat(mtu=60), "ConfigInvalid", CONFIG),
                     (lambda: _push(_concat(), 5, 0), "UnknownDestination", errors.PacketError),
                     (_backwards, "OutOfOrder", STATE)],
    "property cache": [(lambda: units.PropertyCache(prop_bytes=4, **unit_args.property_cache(size_bytes=1000)),
                        "ConfigInvalid", CONFIG),
                       (lambda: units.PropertyCache(prop_bytes=0, **unit_args.property_cache()), "ConfigInvalid",
                        CONFIG),
                       (lambda: units.PropertyCache(prop_bytes=4, **unit_args.property_cache(
                           size_bytes=units.UNBOUNDED_CACHE, max_line_bytes=500)), "ConfigInvalid", CONFIG)],
    "switch pipe": [(lambda: _pipe().process(_packet(0, 1, 3, len_=2 * PROP), 0), "WrongPropertySize",
                     errors.PacketError),
                    (lambda: _pipe().process(_packet(0, 5, 3, len_=PROP), 0), "UnknownDestination",
                     errors.PacketError),
                    (_forged_hit, "BadSource", errors.PacketError),
                    (lambda: _pipe().begin_kernel(0), "ConfigInvalid", CONFIG)],
    "RIG client unit": [(lambda: _client(pending_capacity=0), "ConfigInvalid", CONFIG),
                        (lambda: _client().enqueue(np.array([5]), np.array([0])), "OutOfOrder", STATE),
                        (lambda: units.auto_batch_size(10, 5, 16), "ConfigInvalid", CONFIG)],
    "RIG node": [(lambda: units.RigNode(5, [0, 4, 8], **unit_args.rig_node()), "ConfigInvalid", CONFIG),
                 (lambda: units.RigNode(0, [0, 4, 8], **{**unit_args.rig_node(), "rig_units": 1}), "ConfigInvalid",
                  CONFIG),
                 (lambda: _node().submit(np.array([5]), np.array([0])), "OutOfOrder", STATE),
                 (lambda: _node_in_kernel().submit(np.array([9]), np.array([0])), "ConfigInvalid", CONFIG),
                 (lambda: _node_in_kernel().absorb(_packet(0, 0, 5)), "Misrouted", errors.PacketError),
                 (lambda: _node_in_kernel().serve(_packet(1, 0, 5)), "Misrouted", errors.PacketError),
                 (lambda: _node_in_kernel().absorb(_packet(1, 0, 5)), "Misrouted", errors.PacketError),
                 (lambda: _node_in_kernel().serve(_packet(0, 0, 6)), "Misrouted", errors.PacketError),
                 (lambda: _node_in_kernel().serve(_packet(0, 1, 2)), "Misrouted", errors.PacketError),
                 (lambda: _node_in_kernel().serve(_packet(0, 0, 2, len_=16)), "WrongPropertySize",
                  errors.PacketError)],
    "flit link": [(lambda: nc.LinkConfig(flit_bytes=0).to_cpp(), "ConfigInvalid", CONFIG),
                  (lambda: units.flits_for(-1, 16), "ConfigInvalid", CONFIG),
                  (_unsorted_flits, "ConfigInvalid", CONFIG)],
}
CASES = [(unit, i, *case) for unit, cases in BAD.items() for i, case in enumerate(cases)]


@pytest.mark.parametrize(("unit", "i", "call", "cls", "family"), CASES, ids=[f"{u}-{i}" for u, i, *_ in CASES])
def test_each_unit_raises_its_typed_error(unit, i, call, cls, family):
    with pytest.raises(ValueError) as info:
        call()
    e = info.value
    assert type(e) is getattr(units, cls), f"{unit}: {type(e).__name__} instead of {cls}"
    assert isinstance(e, family) and isinstance(e, errors.NetsparseError)
    if family is errors.PacketError:
        assert e.kind == getattr(units, cls).kind
    assert "\n" not in str(e)  # one line


def test_csrc_throws_only_the_typed_hierarchy():
    """No plain standard exception outside csrc/units/errors.h, the one hierarchy (a new one would reach
    Python untyped): the units, the simulator, the graph generators and the kernels alike."""
    src = Path(__file__).resolve().parents[1] / "csrc"
    plain = ("std::invalid_argument", "std::out_of_range", "std::logic_error", "std::runtime_error")
    found = [f"{p.relative_to(src)}:{n}" for p in sorted([*src.rglob("*.cpp"), *src.rglob("*.h")])
             if p.name != "errors.h" for n, line in enumerate(p.read_text().splitlines(), 1)
             if any(name in line for name in plain) or "throw std::" in line]
    assert found == []


def _graph_calls():
    from hw_models.native import graph

    none, empty = np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64)
    return [
        lambda: graph.node_stats(empty, np.zeros(0, dtype=np.int32), 0, none, none, 1, 1, "rows"),  # n_cols 0
        lambda: graph.node_stats(np.array([0, 1]), np.array([5], dtype=np.int32), 2, np.array([0, 1]),
                                 np.array([0, 2]), 1, 1, "rows"),  # a column id past n_cols
        lambda: graph.generate_analog("nope", 100, 0, {}),  # an unknown family
    ]


@pytest.mark.parametrize("i", range(3))
def test_the_graph_generators_raise_config_errors(i):
    from hw_models.unit_args import binding

    with pytest.raises(errors.ConfigError) as info:
        _graph_calls()[i]()
    assert type(info.value) is binding.ConfigInvalid and isinstance(info.value, ValueError)


def test_the_kernels_raise_config_errors():
    import torch

    from netsparse_torch.native import _C

    crow, col = torch.tensor([0, 1]), torch.tensor([0])
    with pytest.raises(errors.ConfigError) as info:
        _C.spmm(crow, col, torch.ones(1), torch.ones(1, 2), isa="nope")
    assert isinstance(info.value, ValueError) and "unknown isa" in str(info.value)


def test_a_broken_invariant_is_an_internal_error_not_bad_input():
    from hw_models.errors import InternalError

    assert units.InternalError.__mro__[1] is InternalError  # hw_models._C.units.InternalError
    assert issubclass(InternalError, RuntimeError) and not issubclass(InternalError, errors.NetsparseError)
