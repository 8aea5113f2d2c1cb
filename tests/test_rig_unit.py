"""RIG client unit (paper §5.1-5.3): identical PRs, stalls and counters to the Python reference, and
every waiting slot receives its property."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_models.rig_ref import RigClientRef

from hw_models import unit_args, units

BOUNDS = [0, 10, 25, 40]  # node 1 owns rows 10..24
PB = 8


def _prop(idx):
    return bytes((idx * 13 + j) % 256 for j in range(PB))


@settings(max_examples=80, deadline=None)
@given(cmds=st.lists(st.lists(st.integers(0, 39), min_size=1, max_size=40), min_size=1, max_size=4),
       cap=st.integers(1, 6), filter_=st.booleans(), coalesce=st.booleans(), data=st.data())
def test_matches_reference(cmds, cap, filter_, coalesce, data):
    n_slots = sum(len(c) for c in cmds)
    u = units.RigClientUnit(node=1, row_bounds=BOUNDS, pending_capacity=cap, filter=filter_, coalesce=coalesce)
    ref = RigClientRef(1, BOUNDS, cap, filter_, coalesce)
    u.begin_kernel(PB, n_slots)
    ref.begin_kernel(PB, n_slots)
    pairs, base = [], 0
    for c in cmds:
        slots = list(range(base, base + len(c)))
        base += len(c)
        u.enqueue(np.array(c), np.array(slots))
        ref.enqueue(c, slots)
        pairs += zip(c, slots, strict=True)
    for _ in range(1000):
        got = u.issue()
        want = ref.issue()
        assert list(zip(got["dest"].tolist(), got["idx"].tolist(), got["id"].tolist(), strict=True)) == want
        assert (u.stalled, u.pending) == (ref.stalled, ref.pending)
        if not ref.entries:
            break
        # Answer a hypothesis-chosen non-empty subset of the pending PRs, in a chosen order.
        pending = sorted(ref.entries)
        order = data.draw(st.permutations(pending))
        k = data.draw(st.integers(1, len(order)))
        for e in order[:k]:
            idx = ref.entries[e][0]
            u.respond(idx, e, _prop(idx))
            ref.respond(idx, e, _prop(idx))
    assert u.finished and u.counters == ref.c
    assert bytes(u.halo) == bytes(ref.halo)
    # Independent of both models: every remote idx's slot holds its property.
    halo = u.halo
    for idx, slot in pairs:
        if not 10 <= idx < 25:
            assert halo[slot].tobytes() == _prop(idx)
    c = u.counters
    assert c["idxs"] == len(pairs) == c["local"] + c["filtered"] + c["coalesced"] + c["prs"]


def test_filtering_and_coalescing_counts():
    u = units.RigClientUnit(node=0, row_bounds=[0, 2, 10], pending_capacity=4)
    u.begin_kernel(PB, 6)
    u.enqueue(np.array([1, 5, 5, 6]), np.array([0, 1, 2, 3]))  # 1 is local; second 5 coalesces
    prs = u.issue()
    assert prs["idx"].tolist() == [5, 6] and prs["dest"].tolist() == [1, 1] and prs["id"].tolist() == [0, 1]
    for i, e in zip(prs["idx"].tolist(), prs["id"].tolist(), strict=True):
        u.respond(i, e, _prop(i))
    u.enqueue(np.array([5, 7]), np.array([4, 5]))  # 5 is filtered now: copied from slot 1
    assert u.issue()["idx"].tolist() == [7]
    assert u.halo[4].tobytes() == _prop(5) and u.halo[2].tobytes() == _prop(5)
    c = u.counters
    assert (c["local"], c["coalesced"], c["filtered"], c["prs"]) == (1, 1, 1, 3)


def test_stall_when_pending_table_full():
    u = units.RigClientUnit(node=0, row_bounds=[0, 1, 100], pending_capacity=2)
    u.begin_kernel(PB, 4)
    u.enqueue(np.array([10, 11, 12, 13]), np.arange(4))
    assert u.issue()["idx"].tolist() == [10, 11] and u.stalled
    u.respond(11, 1, _prop(11))
    assert u.issue()["idx"].tolist() == [12] and u.stalled  # resumes with the freed entry


def test_bad_input():
    u = units.RigClientUnit(node=0, row_bounds=[0, 2, 10], **unit_args.rig_client_unit())
    with pytest.raises(ValueError, match="property size must be > 0"):
        u.begin_kernel(0, 4)
    u.begin_kernel(PB, 4)
    with pytest.raises(ValueError, match="idx 10 out of range"):
        u.enqueue(np.array([10]), np.array([0]))
    with pytest.raises(ValueError, match="slot 4 out of range"):
        u.enqueue(np.array([5]), np.array([4]))
    with pytest.raises(ValueError, match="matches no pending entry"):
        u.respond(5, 0, _prop(5))
    with pytest.raises(ValueError, match="capacity"):
        units.RigClientUnit(node=0, row_bounds=[0, 2], pending_capacity=0)
