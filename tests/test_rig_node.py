"""RigNode (one node's RIG pipeline): a loopback cluster fills every halo slot with the owner's row,
and the counters obey the conservation laws of filtering and coalescing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw_models import unit_args, units

WIRE = unit_args.wire()


def _cluster(bounds, streams, x, nodes=None, **kw):
    """Run one kernel on all nodes with loopback exchange; returns nodes, halos. ``kw``: RigNode keywords
    that differ from NetSparse Table 5's."""
    xb = x.view(np.uint8)
    pb = xb.shape[1]
    nodes = nodes or [_node_of(p, bounds, **kw) for p in range(len(streams))]
    halos = []
    for p, (idxs, slots, n_slots) in enumerate(streams):
        halos.append(np.zeros((n_slots, pb), np.uint8))
        nodes[p].begin_kernel(pb, halos[p], xb[bounds[p] : bounds[p + 1]])
        nodes[p].submit(idxs, slots)
    rounds = 0
    while not all(n.done() for n in nodes):
        rounds += 1
        assert rounds < 10_000
        for p, node in enumerate(nodes):
            for dest, data in node.pump_reads(rounds).items():
                node.absorb(nodes[dest].serve(data)[p])
    return nodes, halos


def _node_of(p, bounds, **kw):
    return units.RigNode(p, bounds, **unit_args.rig_node(**kw))


def _streams(rng, bounds, nnz, per_nonzero_slots):
    n = bounds[-1]
    out = []
    for _ in range(len(bounds) - 1):
        idxs = rng.integers(0, n, nnz).astype(np.int64)
        if per_nonzero_slots:  # every nonzero its own slot: filtered/coalesced copies must land too
            slots = np.arange(nnz, dtype=np.int64)
            out.append((idxs, slots, nnz))
        else:  # one slot per distinct column, as in the training path's halo buffer
            cols, inv = np.unique(idxs, return_inverse=True)
            out.append((idxs, inv.astype(np.int64), len(cols)))
    return out


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 30), min_size=2, max_size=4), nnz=st.integers(0, 120),
       k=st.integers(1, 5), rig_units=st.integers(2, 6), batch=st.integers(1, 50), cap=st.integers(1, 8),
       filter_=st.booleans(), coalesce=st.booleans(), delay=st.sampled_from([0, 3, None]),
       per_nonzero=st.booleans(), seed=st.integers(0, 1000))
def test_loopback_fills_halo_and_conserves_counts(sizes, nnz, k, rig_units, batch, cap, filter_, coalesce, delay,
                                                  per_nonzero, seed):
    bounds = [0, *np.cumsum(sizes).tolist()]
    if bounds[-1] == 0:
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((bounds[-1], k)).astype(np.float32)
    streams = _streams(rng, bounds, nnz, per_nonzero)
    nodes, halos = _cluster(bounds, streams, x, rig_units=rig_units, batch_size=batch, pending_capacity=cap,
                            filter=filter_, coalesce=coalesce, delay_cycles=float("inf") if delay is None else delay)
    served = 0
    for p, (idxs, slots, _) in enumerate(streams):
        remote = (idxs < bounds[p]) | (idxs >= bounds[p + 1])
        assert np.array_equal(halos[p][slots[remote]], x.view(np.uint8)[idxs[remote]])
        s = nodes[p].stats()
        assert s["idxs"] == len(idxs) and s["local"] == int((~remote).sum())
        assert s["local"] + s["filtered"] + s["coalesced"] + s["prs_issued"] == s["idxs"]
        assert s["responses"] == s["prs_issued"] == s["read"]["prs"]
        if not filter_ and not coalesce:
            assert s["prs_issued"] == int(remote.sum())
        r = s["read"]
        assert r["header_bytes"] == r["packets"] * (50 + 14) + r["prs"] * 18 and r["payload_bytes"] == 0
        q = s["response"]
        assert q["payload_bytes"] == q["prs"] * 4 * k
        served += s["served_prs"]
    assert served == sum(n.stats()["prs_issued"] for n in nodes)


def test_one_unit_issues_each_remote_column_once():
    bounds = [0, 50, 100]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((100, 4)).astype(np.float32)
    streams = _streams(rng, bounds, 400, per_nonzero_slots=True)
    nodes, _ = _cluster(bounds, streams, x, rig_units=2, batch_size=1000, pending_capacity=256)
    for p, (idxs, _, _) in enumerate(streams):
        remote = idxs[(idxs < bounds[p]) | (idxs >= bounds[p + 1])]
        assert nodes[p].stats()["prs_issued"] == len(np.unique(remote))


def test_table5_node_and_packing():
    node = _node_of(0, [0, 10, 20])
    assert node.rig_client_units == 16  # 32 units (Table 5), half client
    x = np.zeros((20, 16), np.float32)
    idxs = np.arange(10, 20, dtype=np.int64)
    streams = [(np.zeros(0, np.int64), np.zeros(0, np.int64), 0), (idxs - 10, idxs - 10, 10)]
    nodes, _ = _cluster([0, 10, 20], streams, x, delay_cycles=float("inf"))
    s = nodes[1].stats()
    assert s["read"]["packets"] == 1 and s["read"]["prs"] == 10  # one MTU-bounded packet to node 0
    assert nodes[0].stats()["response"]["packets"] == 1


def test_second_kernel_after_reset_stats():
    bounds = [0, 30, 60, 90]
    rng = np.random.default_rng(5)
    x1 = rng.standard_normal((90, 16)).astype(np.float32)
    streams = _streams(rng, bounds, 200, per_nonzero_slots=False)
    nodes, _ = _cluster(bounds, streams, x1, rig_units=4, pending_capacity=4)
    first = [n.stats()["prs_issued"] for n in nodes]
    for n in nodes:
        n.reset_stats()
        assert n.stats()["idxs"] == 0 and n.stats()["packets"] == 0
    x2 = rng.standard_normal((90, 3)).astype(np.float64)  # another layer: 24 B properties
    nodes, halos = _cluster(bounds, streams, x2, nodes=nodes)
    for p, (idxs, slots, _) in enumerate(streams):
        remote = (idxs < bounds[p]) | (idxs >= bounds[p + 1])
        assert np.array_equal(halos[p][slots[remote]], x2.view(np.uint8)[idxs[remote]])
        assert nodes[p].stats()["idxs"] == len(idxs) and nodes[p].stats()["prs_issued"] == first[p]


def _node():
    node = _node_of(0, [0, 4, 8], rig_units=2)
    halo = np.zeros((4, 8), np.uint8)
    node.begin_kernel(8, halo, np.zeros((4, 8), np.uint8))
    return node, halo


def test_bad_input():
    node = _node_of(0, [0, 4, 8])
    with pytest.raises(ValueError, match="property size must be > 0"):
        node.begin_kernel(0, np.zeros(8, np.uint8), np.zeros(0, np.uint8))
    with pytest.raises(ValueError, match="local property array"):
        node.begin_kernel(8, np.zeros((4, 8), np.uint8), np.zeros((3, 8), np.uint8))
    with pytest.raises(ValueError, match="smaller than the headers"):
        _node_of(0, [0, 4, 8], mtu=120).begin_kernel(64, np.zeros((1, 64), np.uint8), np.zeros((4, 64), np.uint8))
    with pytest.raises(ValueError, match="node 5 out of range"):
        _node_of(5, [0, 4, 8])
    node, _ = _node()
    with pytest.raises(ValueError, match="idx 8 at position 1 out of range"):
        node.submit(np.array([5, 8]), np.array([0, 1]))
    with pytest.raises(ValueError, match="slot 4 at position 0 out of range"):
        node.submit(np.array([5]), np.array([4]))
    with pytest.raises(ValueError, match="truncated"):
        node.serve(b"\x00\x00\x00")
    read = units.encode_packet(0, 0, 8, [1], [0], [2], [0], **WIRE)
    with pytest.raises(ValueError, match="pass it to serve"):
        node.absorb(read)
    resp = units.encode_packet(1, 0, 8, [0], [0], [5], [3], payload=np.zeros(8, np.uint8), **WIRE)
    with pytest.raises(ValueError, match="pass it to absorb"):
        node.serve(resp)
    with pytest.raises(ValueError, match="matches no pending entry"):
        node.absorb(resp)
    with pytest.raises(ValueError, match="which owns rows"):
        node.serve(units.encode_packet(0, 0, 8, [1], [0], [6], [0], **WIRE))
