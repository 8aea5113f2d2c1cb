"""C++ errors reach Python as typed exceptions (py::register_exception), never as messages to match:
each wire-protocol error is a subclass of netsparse_torch.errors.PacketError with its counter key,
each bad parameter a ConfigError; both stay ValueErrors for callers that catch those."""

from __future__ import annotations

import struct

import pytest
from netsparse_torch._C import units

from hw_models import units_config
from netsparse_torch import errors

PROP = 16
WIRE = units_config.wire()  # NetSparse Table 5 packet sizes (MTU, upper-layer header)


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
