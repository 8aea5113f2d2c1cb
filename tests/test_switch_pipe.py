"""Switch middle pipe (paper §6.2.1): identical output packets and counters to a reference built from
the Python cache and concatenator references."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_models.cache_ref import CacheRef, UnboundedCacheRef
from ref_models.concat_ref import ConcatRef
from ref_models.wire_ref import decode_stream, encode

from hw_models import unit_args, units

LEN, N = 16, 4
CACHE = {"size_bytes": 2 * 512 * 2, "ways": 2}  # 64 sets of 2 ways at 16 B lines: evictions happen
UNBOUNDED = {"size_bytes": units.UNBOUNDED_CACHE, "ways": 2}  # sized by what is inserted (size_bytes=inf)


def _pipe(n_dests, prop_bytes, **hw):
    """A switch pipe with NetSparse Table 5's parameters apart from ``hw``."""
    return units.SwitchPipe(n_dests=n_dests, prop_bytes=prop_bytes, **unit_args.switch_pipe(**hw))


def _prop(idx):
    return bytes((idx * 5 + j) % 256 for j in range(LEN))


def _packet(type_, dest, prs):
    return encode(type_, dest, LEN, [(s, t, i, e, _prop(i) if type_ else b"") for s, t, i, e in prs])


def _reference(packets, delay, hw):
    cache = UnboundedCacheRef(LEN) if hw is UNBOUNDED else CacheRef(LEN, capacity=hw["size_bytes"], ways=hw["ways"])
    con = ConcatRef(N, delay=delay, len_=LEN)
    hits = 0
    for now, data in packets:
        for type_, dest, _, prs in decode_stream(data):
            for src, tid, idx, id_, payload in prs:
                if type_ == 0:
                    hit = cache.lookup(idx)
                    hits += hit is not None
                    if hit is not None:
                        con.push(1, src, (src, tid, idx, id_, hit), now)
                    else:
                        con.push(0, dest, (src, tid, idx, id_, b""), now)
                else:
                    cache.insert(idx, payload)
                    con.push(1, dest, (src, tid, idx, id_, payload), now)
    return con, cache, hits


# idx 2^64-1: the unbounded cache's empty-slot marker, which a u64 PR field can carry
pr_st = st.tuples(st.integers(0, N - 1), st.integers(0, 3), st.integers(0, 150) | st.just(2**64 - 1),
                  st.integers(0, 255))
pkt_st = st.tuples(st.integers(0, 20), st.sampled_from([0, 1]), st.integers(0, N - 1),
                   st.lists(pr_st, min_size=1, max_size=8))


@settings(max_examples=60, deadline=None)
@given(pkts=st.lists(pkt_st, max_size=40), delay=st.sampled_from([0, 5, 125, None]),
       hw=st.sampled_from([CACHE, UNBOUNDED]))
def test_matches_reference(pkts, delay, hw):
    sw = _pipe(n_dests=N, prop_bytes=LEN, delay_cycles=units.INFINITE_DELAY if delay is None else delay, **hw)
    now, timed = 0, []
    for dt, type_, dest, prs in pkts:
        now += dt
        timed.append((now, _packet(type_, dest, prs)))
    for t, data in timed:
        sw.process(data, t)
    sw.flush_all(now + 1)
    con, cache, hits = _reference(timed, delay, hw)
    con.flush_all(now + 1)
    streams = sw.take_streams()
    for (t, d), data in streams.items():
        assert data == b"".join(p[5] for p in con.packets if p[:2] == (d, t))
    assert sum(map(len, streams.values())) == sum(len(p[5]) for p in con.packets)
    c = sw.counters
    assert c["hits"] == hits == cache.hits and c["misses"] == cache.misses and c["inserted"] == cache.inserts


def test_hit_answers_source_and_miss_goes_on():
    sw = _pipe(n_dests=3, prop_bytes=LEN, delay_cycles=units.INFINITE_DELAY)
    sw.process(_packet(1, 0, [(0, 1, 42, 9)]), 0)  # a response to node 0 passes and fills the cache
    sw.process(_packet(0, 2, [(1, 3, 42, 7), (1, 3, 43, 8)]), 1)  # node 1 reads 42 (cached) and 43 from node 2
    sw.flush_all(2)
    out = {k: decode_stream(v) for k, v in sw.take_streams().items()}
    assert out[(1, 0)][0][3] == [(0, 1, 42, 9, _prop(42))]
    assert out[(1, 1)][0][3] == [(1, 3, 42, 7, _prop(42))]  # answered by the switch
    assert out[(0, 2)][0][3] == [(1, 3, 43, 8, b"")]  # forwarded unchanged
    assert sw.counters["hits"] == 1 and sw.counters["misses"] == 1


def test_bad_input():
    sw = _pipe(n_dests=2, prop_bytes=LEN)
    with pytest.raises(ValueError, match="differs from the kernel's property size"):
        sw.process(encode(0, 1, 32, [(0, 0, 1, 0, b"")]), 0)
    with pytest.raises(ValueError, match="destination 5 out of range"):
        sw.process(_packet(0, 5, [(0, 0, 1, 0)]), 0)
    with pytest.raises(ValueError, match="truncated"):
        sw.process(_packet(0, 1, [(0, 0, 1, 0)])[:-3], 0)
    with pytest.raises(ValueError, match="property size must be > 0"):
        sw.begin_kernel(0)
    with pytest.raises(ValueError, match="smaller than the headers"):
        _pipe(n_dests=2, prop_bytes=LEN, mtu=70)
    one_set = _pipe(n_dests=2, prop_bytes=512, size_bytes=2 * 512, ways=2)  # one set: a tag is the whole key
    one_set.process(encode(0, 1, 512, [(0, 0, 2**64 - 2, 0, b"")]), 0)  # the largest key it can hold
    with pytest.raises(ValueError, match="empty-way marker in a cache of one set; give the cache more sets"):
        one_set.process(encode(0, 1, 512, [(0, 0, 2**64 - 1, 0, b"")]), 0)
