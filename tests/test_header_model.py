"""Header model: Table 5 / Fig. 6 sizes and the paper's Table 3 header share, exactly."""

import numpy as np
import pytest

from hw_models import unit_args, units

# Paper Table 3: header share of SA traffic (one read + one response packet per PR), K 4-byte elements.
TABLE3 = {1: 97.6, 2: 95.2, 4: 90.9, 8: 83.3, 16: 71.4, 32: 55.6, 64: 38.5, 128: 23.8, 256: 13.5}


def _table5():
    """The modeled sizes of HardwareParams.headers (NetSparse Table 5)."""
    return units.HeaderSizes(**unit_args.header_sizes())


@pytest.mark.parametrize("k", sorted(TABLE3))
def test_table3_header_share(k):
    share = units.sa_header_share(_table5(), k, 4)
    assert round(100 * share, 1) == TABLE3[k]


def test_size_sets():
    t5, wire = _table5(), units.HeaderSizes.wire(upper=50)
    assert (t5.upper, t5.concat, t5.pr) == (50, 12, 18)
    assert (wire.upper, wire.concat, wire.pr) == (50, 14, 18)
    assert units.HeaderSizes.wire(upper=0).upper == 0
    assert (wire.concat, wire.pr) == (units.CONCAT_HEADER_BYTES, units.PR_HEADER_BYTES)


def test_packet_and_stream_bytes():
    h = units.HeaderSizes(upper=50, concat=12, pr=18)
    assert units.packet_bytes(h, 3, False, 64) == (50 + 12 + 3 * 18, 0)
    assert units.packet_bytes(h, 3, True, 64) == (50 + 12 + 3 * 18, 3 * 64)
    hdr, pay = units.stream_bytes(h, np.array([1, 10, 4]), np.array([0, 1, 1], np.uint8), 8)
    assert hdr == 3 * 62 + 15 * 18 and pay == 14 * 8


def test_bad_sizes():
    with pytest.raises(ValueError, match=">= 0"):
        units.HeaderSizes(upper=-1, concat=12, pr=18)
    with pytest.raises(ValueError, match="K and element bytes"):
        units.sa_header_share(_table5(), 0, 4)
