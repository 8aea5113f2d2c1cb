"""Property cache (paper §6.2.2): identical hits and counters to an OrderedDict LRU reference; the
unbounded cache to a dict reference and to a set-associative cache too large to evict."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_models.cache_ref import CacheRef, UnboundedCacheRef

from hw_models import unit_args, units


def _cache(prop_bytes, **hw):
    """A property cache with NetSparse Table 5's parameters apart from ``hw``."""
    return units.PropertyCache(prop_bytes=prop_bytes, **unit_args.property_cache(**hw))


def _prop(idx, n):
    return bytes((idx * 7 + j) % 251 for j in range(n))


@settings(max_examples=60, deadline=None)
@given(prop=st.sampled_from([4, 16, 20, 64, 512, 600, 1100]), ways=st.sampled_from([1, 2, 4]),
       sets_lines=st.integers(1, 6), ops=st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=200))
def test_matches_lru_reference(prop, ways, sets_lines, ops):
    capacity = ways * 512 * sets_lines
    c = _cache(size_bytes=capacity, ways=ways, prop_bytes=prop)
    ref = CacheRef(prop, capacity=capacity, ways=ways)
    assert (c.line_bytes, c.n_chunks, c.n_sets) == (ref.line, ref.chunks, ref.n_sets)
    for is_insert, idx in ops:
        if is_insert:
            assert c.insert(idx, _prop(idx, prop)) == ref.insert(idx, _prop(idx, prop))
        else:
            got = c.lookup(idx)
            assert got == ref.lookup(idx)
            assert got is None or got == _prop(idx, prop)
    assert c.counters == {"hits": ref.hits, "misses": ref.misses, "inserts": ref.inserts, "evictions": ref.evictions}


@settings(max_examples=40, deadline=None)
@given(kernels=st.lists(st.tuples(st.sampled_from([4, 16, 64, 600]), st.lists(
    st.tuples(st.booleans(), st.integers(0, 40)), max_size=120)), min_size=2, max_size=4))
def test_kernels_of_other_sizes_match_the_reference_each(kernels):
    """One cache over several kernels of different property sizes (so other line sizes and set counts), with
    data: each kernel matches a fresh LRU reference, and a hit returns the bytes inserted in that kernel."""
    c = _cache(size_bytes=2 * 512 * 3, ways=2, prop_bytes=512)  # 3 sets of 512 B lines, then the kernels
    for prop, ops in kernels:
        c.invalidate(prop)
        ref = CacheRef(prop, capacity=2 * 512 * 3, ways=2)
        for is_insert, idx in ops:
            data = _prop(idx + prop, prop)  # other bytes in every kernel: a stale line would show
            if is_insert:
                assert c.insert(idx, data) == ref.insert(idx, data)
            else:
                got = c.lookup(idx)
                assert got == ref.lookup(idx)
        assert c.counters == {"hits": ref.hits, "misses": ref.misses, "inserts": ref.inserts,
                              "evictions": ref.evictions}


def test_table5_geometry():
    c = _cache(prop_bytes=64)  # 32 MB, 16 ways, 16 B segments (Table 5, §6.2.2)
    assert c.line_bytes == 64 and c.n_sets == (32 << 20) // 64 // 16
    assert _cache(prop_bytes=20).line_bytes == 32  # rounded up to whole 16 B segments
    big = _cache(prop_bytes=1100)  # tiled into ceil(1100 / 512) = 3 chunks of 512 B lines
    assert (big.n_chunks, big.line_bytes) == (3, 512)


def test_lru_eviction_order():
    c = _cache(size_bytes=2 * 512, ways=2, max_line_bytes=512, prop_bytes=512)  # 1 set, 2 ways
    for i in (1, 2):
        c.insert(i, _prop(i, 512))
    assert c.lookup(1) is not None  # 2 is now least recently used
    c.insert(3, _prop(3, 512))
    assert c.lookup(2) is None and c.lookup(1) == _prop(1, 512) and c.lookup(3) == _prop(3, 512)
    assert c.counters == {"hits": 3, "misses": 1, "inserts": 3, "evictions": 1}


def test_invalidate_clears_everything():
    c = _cache(prop_bytes=64)
    c.insert(5, _prop(5, 64))
    c.invalidate(64)
    assert c.lookup(5) is None


def test_stream_helpers_match_single_calls():
    idx = np.random.default_rng(1).integers(0, 300, 2000)
    props = np.random.default_rng(2).integers(0, 256, (300, 32), dtype=np.uint8)
    c = _cache(size_bytes=16 * 512, prop_bytes=32)
    hits = c.lookup_or_insert_many(idx, props)
    ref = CacheRef(32, capacity=16 * 512)
    want = []
    for i in idx.tolist():
        h = ref.lookup(i) is not None
        if not h:
            ref.insert(i, props[i].tobytes())
        want.append(h)
    assert hits.tolist() == want


def test_bad_input():
    with pytest.raises(ValueError, match="property size must be > 0"):
        _cache(prop_bytes=0)
    with pytest.raises(ValueError, match="smaller than one set"):
        _cache(size_bytes=1000, prop_bytes=4)
    c = _cache(prop_bytes=8)
    with pytest.raises(ValueError, match="expected 8"):
        c.insert(1, b"abc")


PROPS = [4, 16, 20, 64, 512, 600, 1100]


@settings(max_examples=60, deadline=None)
@given(prop=st.sampled_from(PROPS), keep=st.booleans(), kernels=st.lists(
    st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=150), min_size=1, max_size=3))
def test_unbounded_matches_reference_and_a_cache_too_large_to_evict(prop, keep, kernels):
    c = _cache(size_bytes=units.UNBOUNDED_CACHE, prop_bytes=prop, keep_data=keep)
    # 41 idxs of up to 3 chunks, at most 16 keys a set (key mod n_sets): no set ever evicts
    big = _cache(size_bytes=-(-41 * 3 // 16) * 16 * 512, prop_bytes=prop)
    assert c.unbounded and c.n_sets == 0 and not big.unbounded
    for ops in kernels:
        c.invalidate(prop)
        big.invalidate(prop)
        ref = UnboundedCacheRef(prop)
        for is_insert, idx in ops:
            if is_insert:
                data = _prop(idx, prop)
                assert c.insert(idx, data) == ref.insert(idx, data) == big.insert(idx, data)
            else:
                got, want = c.lookup(idx), ref.lookup(idx)
                assert (got is None) == (want is None) == (big.lookup(idx) is None)
                assert got is None or got == (want if keep else bytes(prop))
        counts = {"hits": ref.hits, "misses": ref.misses, "inserts": ref.inserts, "evictions": 0}
        assert c.counters == big.counters == counts
        assert c.held == len(ref.held)


def test_unbounded_memory_follows_what_is_inserted():
    """Keys spread over 2^40 columns: the cache holds 5000 keys in at most 4 slots each of 8 B (12 B with
    a data slot), and property bytes (at most twice the 64 B a property) only when it keeps data."""
    idx = np.random.default_rng(3).choice(1 << 40, 5000, replace=False)
    for keep in (False, True):
        c = _cache(size_bytes=units.UNBOUNDED_CACHE, prop_bytes=64, keep_data=keep)
        for i in idx.tolist():
            c.insert(i, _prop(i, 64))
        assert c.held == 5000 and c.bytes <= 12 * 4 * 5000 + (2 * 64 * 5000 if keep else 0)
        assert c.bytes >= (64 * 5000 if keep else 8 * 5000)
        assert all(c.lookup(i) is not None for i in idx[:100].tolist())
    assert _cache(size_bytes=units.UNBOUNDED_CACHE, prop_bytes=64).bytes == 0


def test_bounded_memory_is_the_lines_of_its_kernel():
    """An 8 B tag per line of the kernel's line size (32 MB of 64 B lines: 524,288), and only when the
    cache keeps data a 4 B data slot per line and the capacity's bytes."""
    lines = (32 << 20) // 64
    assert _cache(prop_bytes=64, keep_data=False).bytes == lines * 8
    assert _cache(prop_bytes=64).bytes == lines * 12 + (32 << 20)


def test_unbounded_takes_any_idx_and_bad_input():
    c = _cache(size_bytes=units.UNBOUNDED_CACHE, prop_bytes=8)
    top = 2**63 - 1
    assert c.insert(top, _prop(1, 8)) and c.lookup(top) == _prop(1, 8) and c.lookup(0) is None
    with pytest.raises(ValueError, match="max line"):
        _cache(size_bytes=units.UNBOUNDED_CACHE, max_line_bytes=500, prop_bytes=8)
    for bad in (0, -2):  # UNBOUNDED_CACHE (-1) is the one encoding of an unbounded cache
        with pytest.raises(ValueError, match=r"size_bytes must be > 0 or -1 \(unbounded\)"):
            _cache(size_bytes=bad, prop_bytes=8)
    with pytest.raises(TypeError):  # None is no encoding of it
        _cache(size_bytes=None, prop_bytes=8)
