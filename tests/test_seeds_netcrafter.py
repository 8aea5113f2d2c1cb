"""NetCrafter link layer (C++ unit via hw_models.seeds.netcrafter): worked examples, Table 1, mechanisms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_models.flit_ref import stitch

from hw_models.paper_tables import NETCRAFTER_TABLE1
from hw_models.seeds import netcrafter as nc
from hw_models.unit_args import binding as units

NO_POOL = nc.LinkConfig(pool_cycles=0)


def flits(types, config=NO_POOL, **kw):
    return nc.run_link(nc.PacketStream.of(types, **kw), config)


# NetCrafter Table 1 with 16 B flits as typed from the paper (occupied, needed, padding, flits): the copy
# that netsparse-reproduce checks too.
TABLE1 = NETCRAFTER_TABLE1


def test_table1_16B_flits():
    rows = nc.table1(16)
    assert [r["type"] for r in rows] == list(TABLE1)
    for r in rows:
        assert (r["occupied"], r["needed"], r["padding"], r["flits"]) == TABLE1[r["type"]]


def test_each_table1_packet_alone_uses_its_table1_flits_on_the_link():
    for t in nc.TABLE1_TYPES:
        r = flits([t])
        assert (r.flits, r.wire_bytes, r.padding_bytes) == (TABLE1[t.name][3], TABLE1[t.name][0], TABLE1[t.name][2])


def test_8B_flits_option():
    assert nc.flits_for(68, 8) == 9 and nc.flits_for(76, 8) == 10 and nc.flits_for(4, 8) == 1
    assert flits([nc.READ_RSP], nc.LinkConfig(flit_bytes=8, pool_cycles=0)).flits == 9


@pytest.mark.parametrize("overhead,expected", [(0, 9), (4, 9), (8, 9), (9, 10), (12, 10)])
def test_two_read_rsp_use_9_flits_when_piece_overhead_at_most_8(overhead, expected):
    r = flits([nc.READ_RSP, nc.READ_RSP], nc.LinkConfig(piece_overhead=overhead, pool_cycles=0))
    assert r.flits == expected
    assert r.unstitched_flits == 10


def test_two_read_rsp_accounting():
    r = flits([nc.READ_RSP, nc.READ_RSP], nc.LinkConfig(piece_overhead=4, pool_cycles=0))
    # 136 B needed + one 4 B piece header in 9 flits = 144 B: 4 B padding.
    assert (r.wire_bytes, r.needed_bytes, r.overhead_bytes, r.padding_bytes) == (144, 136, 4, 4)
    assert (r.pieces, r.stitched_packets, r.stitched_flits) == (1, 1, 1)
    assert r.stitched_fraction == 0.5


def test_read_req_and_write_rsp_fit_one_flit():
    r = flits([nc.READ_REQ, nc.WRITE_RSP])
    assert (r.flits, r.padding_bytes, r.overhead_bytes) == (1, 0, 0)
    assert list(r.done) == [1, 1]


def test_stitching_only_joins_same_destination():
    assert flits([nc.READ_REQ, nc.WRITE_RSP], dest=[0, 1]).flits == 2


def test_stitching_off():
    assert flits([nc.READ_REQ, nc.WRITE_RSP], nc.LinkConfig(stitching=False)).flits == 2


def test_trimmed_read_rsp_is_20B_in_2_flits():
    trim = nc.LinkConfig(pool_cycles=0, trimming=True, trim_granularity=16)
    r = flits([nc.READ_RSP], trim, useful=[16])
    assert (r.needed_bytes, r.flits, r.trimmed_bytes) == (20, 2, 48)
    assert flits([nc.READ_RSP], NO_POOL, useful=[16]).flits == 5  # trimming off
    assert flits([nc.WRITE_REQ], trim, useful=[16]).flits == 5  # requests are not trimmable


def test_trim_granularity_rounds_the_sector_up():
    r = flits([nc.READ_RSP], nc.LinkConfig(pool_cycles=0, trimming=True, trim_granularity=32), useful=[20])
    assert r.needed_bytes == 4 + 32


def test_pooling_waits_for_a_late_candidate():
    # Rsp 1: 4 full flits in cycles 0-3, its tail flit is formed at cycle 4; Rsp 2 arrives at cycle 10.
    two = dict(arrival=[0, 10])
    assert flits([nc.READ_RSP] * 2, nc.LinkConfig(pool_cycles=0), **two).flits == 10
    assert flits([nc.READ_RSP] * 2, nc.LinkConfig(pool_cycles=5), **two).flits == 10  # deadline 9 < 10
    r = flits([nc.READ_RSP] * 2, nc.LinkConfig(pool_cycles=32), **two)
    assert r.flits == 9
    # Rsp 2's full flits go at cycles 10-13; the pooled flit leaves at its deadline, cycle 36.
    assert list(r.done) == [37, 37]


def test_pooled_flit_leaves_at_deadline_when_no_candidate():
    r = flits([nc.READ_REQ], nc.LinkConfig(pool_cycles=32))
    assert (r.flits, int(r.done[0])) == (1, 33)


def test_selective_pooling_exempts_the_latency_sensitive_class():
    pt = [nc.PAGE_TABLE_REQ]
    assert int(flits(pt, nc.LinkConfig(pool_cycles=32), classes=[1]).done[0]) == 33
    assert int(flits(pt, nc.LinkConfig(pool_cycles=32, no_pool_class=1), classes=[1]).done[0]) == 1


def test_exempt_packet_joining_a_pooled_flit_flushes_it():
    # A Read Req (class 0) is pooled at cycle 0; a Write Rsp (class 1, exempt) joins it at cycle 5.
    cfg = nc.LinkConfig(pool_cycles=32, no_pool_class=1)
    r = flits([nc.READ_REQ, nc.WRITE_RSP], cfg, arrival=[0, 5], classes=[0, 1])
    assert r.flits == 1 and list(r.done) == [6, 6]


def test_sequencing_serves_the_priority_class_first():
    types = [nc.WRITE_REQ, nc.READ_REQ]  # different destinations: no stitching between them
    kw = dict(dest=[0, 1], classes=[1, 0])
    fifo = flits(types, NO_POOL, **kw)
    prio = flits(types, nc.LinkConfig(pool_cycles=0, sequencing=True), **kw)
    assert list(fifo.done) == [5, 6]
    assert list(prio.done) == [6, 1]


@pytest.mark.parametrize("kwargs", [dict(flit_bytes=0), dict(piece_overhead=16), dict(piece_overhead=-1),
                                    dict(pool_cycles=-1), dict(trim_granularity=0), dict(stitch_window=-1)])
def test_bad_config(kwargs):
    with pytest.raises(ValueError):
        nc.LinkConfig(**kwargs).to_cpp()


def test_bad_streams():
    s = nc.PacketStream.of([nc.READ_REQ, nc.READ_REQ], arrival=[5, 1])
    with pytest.raises(ValueError, match="sorted"):
        nc.run_link(s)
    s = nc.PacketStream.of([nc.READ_REQ, nc.WRITE_RSP])
    s.dest = s.dest[:1]
    with pytest.raises(ValueError, match="dest"):
        nc.run_link(s)
    s = nc.PacketStream.of([nc.PacketType("empty", 0, 0)])
    with pytest.raises(ValueError, match="at least one byte"):
        nc.run_link(s)


sizes = st.lists(st.tuples(st.integers(1, 100), st.integers(0, 2)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(sizes, st.sampled_from([8, 16]), st.integers(0, 7), st.integers(0, 6))
def test_untimed_stitching_matches_reference(pk, flit, overhead, window):
    n = len(pk)
    size, dest = [p[0] for p in pk], [p[1] for p in pk]
    cfg = nc.LinkConfig(flit_bytes=flit, piece_overhead=overhead, pool_cycles=0, stitch_window=window).to_cpp()
    z = np.zeros(n, dtype=np.int64)
    out = units.flit_link_run(cfg, z, np.array(dest), np.array(size), z, z - 1, z)
    ref = stitch(size, dest, flit, overhead, window)
    assert {k: out[k] for k in ref} == ref


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5), st.integers(0, 2), st.integers(0, 1)),
                min_size=1, max_size=60),
       st.integers(0, 40), st.booleans(), st.booleans())
def test_timed_link_invariants(pk, pool, seq, trim):
    """Every packet leaves once, after it arrived; bytes are conserved; stitching never adds flits."""
    types = [nc.TABLE1_TYPES[p[1]] for p in pk]
    arrival = list(np.cumsum([p[0] for p in pk]))
    s = nc.PacketStream.of(types, arrival=arrival, dest=[p[2] for p in pk], classes=[p[3] for p in pk],
                           useful=[16] * len(pk))
    r = nc.run_link(s, nc.LinkConfig(pool_cycles=pool, sequencing=seq, trimming=trim, no_pool_class=1))
    assert r.wire_bytes == r.flits * 16 == r.needed_bytes + r.overhead_bytes + r.padding_bytes
    assert r.padding_bytes >= 0
    assert r.flits <= r.unstitched_flits
    assert r.flits >= -(-r.needed_bytes // 16)
    assert np.all(r.done > s.arrival)
    assert r.last_cycle >= r.flits and r.last_cycle >= int(r.done.max())
    off = nc.run_link(s, nc.LinkConfig(stitching=False, sequencing=seq, trimming=trim))
    assert off.flits == off.unstitched_flits == r.unstitched_flits


def test_pool_sweep_rows():
    rows = nc.pool_sweep([0, 32], n=2000)
    assert [r["W"] for r in rows] == [0, 32]
    assert rows[1]["flits"] <= rows[0]["flits"]  # a longer window can only find more candidates here
    assert all(0 <= r["stitched_fraction"] <= 1 for r in rows)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5), st.integers(0, 2), st.integers(0, 1)),
                min_size=1, max_size=60),
       st.integers(0, 40), st.booleans(), st.booleans(), st.sampled_from([-1, 0, 1]))
def test_incremental_state_equals_the_batch_run(pk, pool, seq, trim, exempt):
    """FlitLinkState fed one packet at a time, ticked at next_event() as the simulator does, gives the
    batch run's counters and per-packet cycles, and reports each packet once, at a tick on its own
    cycle (next_event() never lets the event loop step past a departure)."""
    types = [nc.TABLE1_TYPES[p[1]] for p in pk]
    arrival = list(np.cumsum([p[0] for p in pk]))
    s = nc.PacketStream.of(types, arrival=arrival, dest=[p[2] for p in pk], classes=[p[3] for p in pk],
                           useful=[16] * len(pk))
    cfg = nc.LinkConfig(pool_cycles=pool, sequencing=seq, trimming=trim, no_pool_class=exempt).to_cpp()
    cols = (s.arrival, s.dest, s.header, s.payload, s.useful, s.cls)
    batch = units.flit_link_run(cfg, *cols)
    inc = units.flit_link_stream(cfg, *cols)
    assert inc["late"] == 0 and inc["repeats"] == 0
    assert np.array_equal(inc["done"], batch["done"])
    keys = set(batch) - {"done", "last_cycle"}
    assert {k: inc[k] for k in keys} == {k: batch[k] for k in keys}
