"""Concatenator (paper §6.1.2, §7.2): identical packets to the Python reference, and the invariants."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_models.concat_ref import ConcatRef
from ref_models.wire_ref import decode_stream

from hw_models import unit_args, units

LEN = 8


def _concat(n_dests, len_=0, **hw):
    """A concatenator with NetSparse Table 5's parameters (NIC delay 500 cycles) apart from ``hw``."""
    return units.Concatenator(n_dests=n_dests, len=len_, **unit_args.concatenator(**hw))


def _stream(draw_ops, n_dests, seed):
    """PR columns from hypothesis ops [(type, dest, dt)] with unique ids and payloads."""
    n = len(draw_ops)
    type_ = np.array([o[0] for o in draw_ops], np.int64)
    dest = np.array([o[1] % n_dests for o in draw_ops], np.int64)
    time = np.cumsum([o[2] for o in draw_ops]).astype(np.int64)
    src, tid, idx, id_ = (np.arange(n, dtype=np.int64) + k for k in (100, 0, 1000, 7))
    payload = np.random.default_rng(seed).integers(0, 256, (n, LEN), dtype=np.uint8)
    return type_, dest, src, tid % 65536, idx, id_, time, payload


def _run_both(ops, n_dests, mtu, delay, virtual, pool, seed):
    cols = _stream(ops, n_dests, seed)
    c = _concat(n_dests, LEN, mtu=mtu, delay_cycles=units.INFINITE_DELAY if delay is None else delay,
                virtual_queues=virtual, phys_queue_bytes=64, phys_queues=pool)  # the reference's None = never
    ref = ConcatRef(n_dests, mtu=mtu, delay=delay, virtual=virtual, phys_bytes=64, phys_queues=pool, len_=LEN)
    c.push_many(*cols[:7], payload=cols[7])
    for i in range(len(ops)):
        t, d, s, tid, idx, id_, now = (int(a[i]) for a in cols[:7])
        ref.push(t, d, (s, tid, idx, id_, cols[7][i].tobytes()), now)
    end = int(cols[6][-1]) + 1 if len(ops) else 0
    c.flush_all(end)
    ref.flush_all(end)
    return cols, c, ref


ops_st = st.lists(st.tuples(st.sampled_from([0, 1]), st.integers(0, 3), st.integers(0, 7)), max_size=120)


@settings(max_examples=80, deadline=None)
@given(ops=ops_st, n_dests=st.integers(1, 4), mtu=st.sampled_from([50 + 14 + 18 * 3, 50 + 14 + 26 * 4, 300, 1500]),
       delay=st.sampled_from([0, 1, 3, 10, None]), virtual=st.booleans(), pool=st.integers(1, 6),
       seed=st.integers(0, 1000))
def test_matches_reference(ops, n_dests, mtu, delay, virtual, pool, seed):
    cols, c, ref = _run_both(ops, n_dests, mtu, delay, virtual, pool, seed)
    log = c.take_log()
    got = list(zip(*(log[k].tolist() for k in ("dest", "type", "n_prs", "time", "reason")), strict=True))
    assert got == [p[:5] for p in ref.packets]
    streams = c.take_streams()
    for (t, d), data in streams.items():
        assert data == b"".join(p[5] for p in ref.packets if p[:2] == (d, t))
    assert sum(len(v) for v in streams.values()) == sum(len(p[5]) for p in ref.packets)
    # Invariants: no packet beyond MTU - upper header, every PR leaves in exactly one packet.
    sent = Counter()
    for data in streams.values():
        for p in units.decode_stream(data, **unit_args.wire(mtu=mtu)):
            assert 14 + p["n_prs"] * (18 + (LEN if p["type"] else 0)) <= mtu - 50
            for i in range(p["n_prs"]):
                sent[(p["type"], p["dest"], int(p["src"][i]), int(p["idx"][i]))] += 1
    want = Counter((int(t), int(d), int(s), int(i)) for t, d, s, i in zip(cols[0], cols[1], cols[2], cols[4],
                                                                            strict=True))
    assert sent == want and c.empty


def _decoded(c):
    return [p for data in c.take_streams().values() for p in decode_stream(data)]


def test_delay_zero_one_pr_per_packet():
    cols, c, _ = _run_both([(i % 2, i % 3, 1) for i in range(50)], 3, 1500, 0, False, 1, 0)
    packets = _decoded(c)
    assert len(packets) == 50 and all(len(p[3]) == 1 for p in packets)


def test_infinite_delay_gives_full_packets():
    n_read = (1500 - 50 - 14) // 18  # 79 read PRs per packet
    cols, c, _ = _run_both([(0, 1, 1000)] * (3 * n_read + 5), 2, 1500, None, False, 1, 0)
    sizes = [len(p[3]) for p in _decoded(c)]
    assert sizes == [n_read, n_read, n_read, 5]  # the remainder leaves on flush_all


def test_expiration_after_delay():
    c = _concat(2, 4, delay_cycles=500)  # the NIC's delay (Table 5, §6.1.2)
    z = np.zeros(1, np.int64)
    c.push_many(z, z, z, z, z, z, np.array([10]))
    c.push_many(z, z, z, z, z + 1, z, np.array([509]))  # still before 10 + 500
    assert c.take_log()["n_prs"].size == 0
    c.advance(510)
    log = c.take_log()
    assert log["n_prs"].tolist() == [2] and log["reason"].tolist() == [1] and log["time"].tolist() == [510]


def test_virtual_pool_flushes_oldest_queue():
    # 2 physical queues of 64 B: each read PR (18 B) queue fits 3 PRs per physical queue.
    c = _concat(3, delay_cycles=units.INFINITE_DELAY, virtual_queues=True, phys_queue_bytes=64, phys_queues=2)
    z = np.zeros(3, np.int64)
    c.push_many(z, np.array([0, 1, 2]), z, z, np.arange(3), z, np.arange(3))
    log = c.take_log()
    assert log["dest"].tolist() == [0] and log["reason"].tolist() == [3]
    assert c.pool_in_use == 2


def test_bad_input():
    with pytest.raises(ValueError, match="smaller than the headers"):
        _concat(2, mtu=60)
    with pytest.raises(ValueError, match="smaller than the headers"):
        _concat(2, 100, mtu=150)  # a response PR does not fit
    c = _concat(2)
    z = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="destination 5 out of range"):
        c.push_many(z, z + 5, z, z, z, z, z)
    c.push_many(z, z, z, z, z, z, z + 10)
    with pytest.raises(ValueError, match="time went backwards"):
        c.push_many(z, z, z, z, z, z, z)
