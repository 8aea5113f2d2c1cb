"""Wire protocol (paper Fig. 6): round trips against a struct reference, and every malformed case."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_models.wire_ref import encode as ref_encode

from hw_models import unit_args, units

WIRE = unit_args.wire()  # NetSparse Table 5: MTU 1500 B, upper-layer header 50 B


def _arrays(prs):
    return [np.array([p[i] for p in prs], dtype=np.int64) for i in range(4)]


pr_st = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1), st.integers(0, 2**63 - 1),
                  st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(type_=st.sampled_from([0, 1]), dest=st.integers(0, 2**32 - 1), len_=st.integers(1, 40),
       prs=st.lists(pr_st, min_size=0, max_size=12), seed=st.integers(0, 2**31))
def test_round_trip_matches_struct_reference(type_, dest, len_, prs, seed):
    payload = np.random.default_rng(seed).integers(0, 256, (len(prs), len_), dtype=np.uint8)
    data = units.encode_packet(type_, dest, len_, *_arrays(prs), payload=payload if type_ == 1 else None, **WIRE)
    want = ref_encode(type_, dest, len_, [(*p, payload[i].tobytes()) for i, p in enumerate(prs)])
    assert data == want
    d = units.decode_packet(data, **WIRE)
    assert (d["type"], d["dest"], d["len"], d["n_prs"]) == (type_, dest, len_, len(prs))
    assert [tuple(int(d[k][i]) for k in ("src", "src_tid", "idx", "id")) for i in range(len(prs))] == prs
    if type_ == 1:
        assert np.array_equal(d["payload"], payload)


def test_sizes_are_fig6():
    assert (units.CONCAT_HEADER_BYTES, units.PR_HEADER_BYTES) == (14, 18)
    read = units.encode_packet(0, 1, 64, [0, 0], [0, 0], [1, 2], [0, 1], **WIRE)
    resp = units.encode_packet(1, 1, 64, [0], [0], [1], [0], payload=np.zeros(64, np.uint8), **WIRE)
    assert len(read) == 14 + 2 * 18 and len(resp) == 14 + 18 + 64
    assert read[:14] == bytes([0, 0, 1, 0, 0, 0, 64, 0, 0, 0, 2, 0, 0, 0])  # little-endian fields


def _resp(n, len_=64, mtu=WIRE["mtu"]):
    z = np.zeros(n, np.int64)
    return units.encode_packet(1, 2, len_, z, z, np.arange(n), z, payload=np.ones((n, len_), np.uint8),
                               **unit_args.wire(mtu=mtu))


def test_truncated_header():
    with pytest.raises(ValueError, match="truncated concatenation header"):
        units.decode_packet(_resp(1)[:10], **WIRE)


def test_truncated_pr():
    data = units.encode_packet(0, 2, 64, [0] * 3, [0] * 3, [1, 2, 3], [0] * 3, **WIRE)
    with pytest.raises(ValueError, match="truncated"):
        units.decode_packet(data[:-5], **WIRE)


def test_n_prs_disagrees_with_length():
    data = bytearray(units.encode_packet(0, 2, 64, [0] * 2, [0] * 2, [1, 2], [0] * 2, **WIRE))
    data[10] = 3  # header says 3 PRs, the body holds 2
    with pytest.raises(ValueError, match="n_prs=3 disagrees"):
        units.decode_packet(bytes(data), **WIRE)


def test_wrong_payload_length():
    data = bytearray(_resp(2, 60))
    data[6] = 64  # len says 64 B per property, each PR carries 60
    with pytest.raises(ValueError, match="wrong payload length"):
        units.decode_packet(bytes(data), **WIRE)


def test_unknown_type():
    data = bytearray(_resp(1))
    data[0] = 7
    with pytest.raises(ValueError, match="unknown type 7"):
        units.decode_packet(bytes(data), **WIRE)


def test_larger_than_mtu():
    big = _resp(20, 64, mtu=9000)  # 14 + 20 * 82 = 1654 B > 1450
    with pytest.raises(ValueError, match="larger than the MTU"):
        units.decode_packet(big, **WIRE)
    assert units.decode_packet(big, **unit_args.wire(mtu=9000))["n_prs"] == 20


def test_encoder_never_exceeds_mtu():
    n = units.max_prs_per_packet(1500, 50, 1, 64)
    assert n == (1500 - 50 - 14) // (18 + 64) == 17
    assert len(_resp(n)) <= 1450
    z = np.zeros(n + 1, np.int64)
    with pytest.raises(ValueError, match="do not fit one packet"):
        units.encode_packet(1, 0, 64, z, z, z, z, payload=np.zeros((n + 1, 64), np.uint8), **WIRE)


def test_mtu_smaller_than_headers():
    with pytest.raises(ValueError, match="smaller than the headers"):
        units.max_prs_per_packet(100, 50, 1, 64)


def test_decode_stream_splits_back_to_back_packets():
    a, b = _resp(2), units.encode_packet(0, 5, 64, [1], [2], [3], [4], **WIRE)
    out = units.decode_stream(a + b, **WIRE)
    assert [p["n_prs"] for p in out] == [2, 1] and out[1]["dest"] == 5
    with pytest.raises(ValueError, match="truncated"):
        units.decode_stream(a + b[:-1], **WIRE)
