"""The gRPC switch service: real NetSparse packets through ToR/spine processes on loopback.

Nodes are driven by the C++ RigNode (client units, filter, server units); the switch data plane is the
C++ SwitchPipe. Expected halo rows come from the feature matrix itself (not from the service), and
counter identities are checked against PR counts the test computes from what it sent.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack, contextmanager

import numpy as np
import pytest

from hw_models import unit_args, units
from hw_models.unit_args import binding as native_units
from netsparse_torch.switch_service import ControlClient, SwitchClient, SwitchServer, configure_request

PROP = 32  # bytes per property (8 float32)
WIRE = unit_args.wire()  # NetSparse Table 5 packet sizes (MTU, upper-layer header)


@contextmanager
def fabric(racks: dict[int, list[int]], prop_bytes: int = PROP, token: str | None = None, **cfg):
    """Starts one ToR per rack (+ a spine when there are several) on free loopback ports; always stops them.

    Yields ({"spine": server, rack: tor_server, ...}, {node: tor address})."""
    n_nodes = sum(len(v) for v in racks.values())
    with ExitStack() as stack:
        servers: dict = {}
        spine_addr = ""
        if len(racks) > 1:
            spine = SwitchServer("spine", token=token, stall_timeout_s=10)
            stack.callback(spine.stop)
            spine.start()
            servers["spine"] = spine
            spine_addr = spine.address
            _control(spine, token).configure(configure_request(n_nodes, prop_bytes, racks, **cfg))
        for r in racks:
            tor = SwitchServer("tor", token=token, stall_timeout_s=10)
            stack.callback(tor.stop)
            tor.start()
            servers[r] = tor
            _control(tor, token).configure(configure_request(n_nodes, prop_bytes, racks, rack_id=r,
                                                             spine_address=spine_addr, **cfg))
        yield servers, {n: servers[r].address for r, nodes in racks.items() for n in nodes}


def _control(server: SwitchServer, token: str | None = None) -> ControlClient:
    return ControlClient(server.address, token=token)


def features(n_rows: int, prop_bytes: int = PROP, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n_rows, prop_bytes), dtype=np.uint8)


def drive(nodes: dict, clients: dict, deadline_s: float = 30.0) -> None:
    """Runs every node's RIG loop on its own thread until all nodes are done (or the deadline passes).

    A node sends its read packets, serves reads that reach it and absorbs responses; it keeps serving
    until every node is done, because a peer may still need its rows."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop(r: int) -> None:
        node, client = nodes[r], clients[r]

        def send(per_dest: dict) -> None:
            data = b"".join(per_dest.values())
            if data:
                client.send(data)

        try:
            send(node.pump_reads())
            while not stop.is_set():
                frame = client.poll(0.02)
                if frame is None:
                    send(node.pump_reads())
                    continue
                parts, _, _ = native_units.split_frame(frame, n_ports=2, by_type=True, **WIRE)
                if parts[units.READ]:
                    send(node.serve(parts[units.READ]))
                if parts[units.RESPONSE]:
                    node.absorb(parts[units.RESPONSE])
                send(node.pump_reads())
        except BaseException as e:  # surfaced by the main thread
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=loop, args=(r,), daemon=True) for r in nodes]
    for t in threads:
        t.start()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and not stop.is_set() and not all(n.done() for n in nodes.values()):
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join(timeout=5)
    if errors:
        raise errors[0]
    assert all(n.done() for n in nodes.values()), "RIG commands still pending at the deadline"


def rig_nodes(x: np.ndarray, bounds: list[int], wants: dict[int, np.ndarray]):
    """RigNodes for every rank, kernel started; returns (nodes, halos)."""
    nodes, halos = {}, {}
    for r in range(len(bounds) - 1):
        node = units.RigNode(r, bounds, **unit_args.rig_node())
        idxs = wants.get(r, np.zeros(0, dtype=np.int64))
        halos[r] = np.zeros((max(len(idxs), 1), x.shape[1]), dtype=np.uint8)
        node.begin_kernel(x.shape[1], halos[r], np.ascontiguousarray(x[bounds[r]:bounds[r + 1]]))
        node.submit(idxs, np.arange(len(idxs), dtype=np.int64))
        nodes[r] = node
    return nodes, halos


def attach(addrs: dict[int, str], nodes, token: str | None = None) -> dict:
    return {r: SwitchClient(addrs[r], r, token=token) for r in nodes}


def close_all(clients: dict) -> None:
    for c in clients.values():
        c.close()



def gather_through(addrs: dict[int, str], x: np.ndarray, bounds: list[int], wants: dict[int, np.ndarray]):
    """Every node gathers its wanted rows through the switches; each halo must hold exactly them."""
    nodes, halos = rig_nodes(x, bounds, wants)
    clients = attach(addrs, nodes)
    try:
        drive(nodes, clients)
    finally:
        close_all(clients)
    for r in nodes:
        np.testing.assert_array_equal(halos[r][: len(wants[r])], x[wants[r]])
    return nodes


def remote_wants(bounds: list[int], r: int, rng, k: int) -> np.ndarray:
    n = bounds[-1]
    cand = np.setdiff1d(np.arange(n), np.arange(bounds[r], bounds[r + 1]))
    return rng.choice(cand, size=min(k, len(cand)), replace=False).astype(np.int64)


@pytest.mark.parametrize("racks", [{0: [0, 1, 2]}, {0: [0, 1], 1: [2, 3]}])
def test_every_halo_row_arrives_through_the_switches(racks):
    n_nodes = sum(len(v) for v in racks.values())
    bounds = list(np.linspace(0, 40 * n_nodes, n_nodes + 1).astype(int))
    x = features(bounds[-1])
    rng = np.random.default_rng(1)
    wants = {r: remote_wants(bounds, r, rng, 50) for r in range(n_nodes)}
    with fabric(racks) as (servers, addrs):
        nodes = gather_through(addrs, x, bounds, wants)
        issued = sum(n.stats()["prs_issued"] for n in nodes.values())
        tors = [_control(s).counters() for k, s in servers.items() if k != "spine"]
        # every issued read enters exactly one ToR from a node port
        node_prs_in = sum(v["prs_in"] for c in tors for p, v in c["ports"].items() if p.startswith("node:"))
        assert sum(c["read_prs_in"] for c in tors) - sum(
            c["ports"].get("uplink", {}).get("prs_in", 0) for c in tors) >= 0
        assert node_prs_in >= issued
        if "spine" in servers:
            sp = _control(servers["spine"]).counters()
            assert sp["prs_in"] == sp["prs_out"] > 0  # the spine forwards everything it gets


def test_second_node_in_a_rack_hits_the_tor_cache():
    """Nodes 0 and 1 (rack 0) read row 25 owned by node 2 (rack 1): node 0 first, then node 1, whose
    read the ToR answers from its cache, so node 2 serves the row only once."""
    racks = {0: [0, 1], 1: [2, 3]}
    bounds = [0, 10, 20, 30, 40]
    x = features(40)
    with fabric(racks) as (servers, addrs):
        nodes, halos = rig_nodes(x, bounds, {0: np.array([25]), 1: np.array([25])})
        clients = attach(addrs, nodes)
        try:
            drive({0: nodes[0], 2: nodes[2]}, {0: clients[0], 2: clients[2]})  # node 0 fetches first
            drive({1: nodes[1], 2: nodes[2]}, {1: clients[1], 2: clients[2]})
        finally:
            close_all(clients)
        np.testing.assert_array_equal(halos[0][0], x[25])
        np.testing.assert_array_equal(halos[1][0], x[25])
        tor0 = _control(servers[0]).counters()
        tor1 = _control(servers[1]).counters()
        assert tor0["cache_hits"] == 1
        assert tor0["ports"]["node:1"]["prs_out"] == 1  # the response, made inside the rack
        assert tor0["ports"]["uplink"]["prs_out"] == 1  # only node 0's read left the rack
        assert nodes[2].stats().get("served_prs", 1) == 1
        assert tor1["ports"]["node:2"]["prs_out"] == 1  # node 2 saw one read


def test_counters_add_up():
    """PRs in = PRs out; read PRs out = read PRs in - cache hits; responses out = responses in + hits;
    per-port sums equal the switch totals; misses + hits = read PRs looked up."""
    racks = {0: [0, 1], 1: [2, 3]}
    bounds = [0, 30, 60, 90, 120]
    x = features(120)
    rng = np.random.default_rng(3)
    shared = remote_wants(bounds, 0, rng, 20)
    shared = shared[(shared >= 60)]  # rows of rack 1, wanted by both nodes of rack 0
    wants = {0: shared, 1: shared.copy(), 2: remote_wants(bounds, 2, rng, 40), 3: remote_wants(bounds, 3, rng, 40)}
    with fabric(racks) as (servers, addrs):
        nodes = gather_through(addrs, x, bounds, wants)
        for k in (0, 1):
            c = _control(servers[k]).counters()
            assert c["prs_in"] == c["prs_out"] == c["read_prs_in"] + c["response_prs_in"]
            assert c["read_prs_out"] == c["read_prs_in"] - c["cache_hits"]
            assert c["response_prs_out"] == c["response_prs_in"] + c["cache_hits"]
            assert c["cache_hits"] + c["cache_misses"] == c["read_prs_in"]
            assert c["prs_out"] == sum(p["prs_out"] for p in c["ports"].values())
            assert c["packets_in"] == sum(p["packets_in"] for p in c["ports"].values())
            assert c["errors"] == {}
        issued = {r: nodes[r].stats()["prs_issued"] for r in nodes}
        tor0 = _control(servers[0]).counters()
        assert tor0["ports"]["node:0"]["prs_in"] + tor0["ports"]["node:1"]["prs_in"] >= issued[0] + issued[1]


def test_control_plane_reset_invalidate_health():
    with fabric({0: [0, 1]}) as (servers, addrs):
        ctl = _control(servers[0])
        h = ctl.health()
        assert h.role == "tor" and h.configured and not h.uplink_connected
        x = features(20)
        nodes, halos = rig_nodes(x, [0, 10, 20], {0: np.array([15])})
        clients = attach(addrs, nodes)
        try:
            drive(nodes, clients)
            assert ctl.counters()["cache_inserts"] == 1
            assert sorted(ctl.health().attached) == ["node:0", "node:1"]
        finally:
            close_all(clients)
        ctl.reset()
        c = ctl.counters()
        assert c["prs_in"] == c["cache_inserts"] == c["cache_hits"] == 0
        ctl.invalidate(64)
        assert servers[0].core.cfg.prop_bytes == 64


def test_stop_logs_one_line_summary():
    server = SwitchServer("tor")
    try:
        server.start()
        _control(server).configure(configure_request(2, PROP, {0: [0, 1]}))
    finally:
        line = server.stop()
    assert "\n" not in line and line.startswith("switch tor stopped: packets in=0")


def test_load_8_clients_20k_prs_each_answered_exactly_once():
    """8 requesters x 20k read PRs (distinct ids) through one ToR to a 9th node that serves them with
    its C++ server units; a small cache makes some of them ToR hits. Every read gets exactly one
    response with the right row."""
    n_req, per = 8, 20_000
    owner = n_req
    n_rows = 4096
    x = features(n_rows, seed=5)
    bounds = [0] * (owner + 1) + [n_rows]  # node 8 owns every row
    racks = {0: list(range(owner + 1))}
    max_prs = units.max_prs_per_packet(WIRE["mtu"], WIRE["upper_bytes"], units.READ, PROP)
    rng = np.random.default_rng(7)
    with fabric(racks, size_bytes=64 * 1024, delay_cycles=units.INFINITE_DELAY) as (servers, addrs):
        server_node = units.RigNode(owner, bounds, **unit_args.rig_node())
        server_node.begin_kernel(PROP, np.zeros((1, PROP), np.uint8), x)
        server_client = SwitchClient(addrs[owner], owner)
        clients = {r: SwitchClient(addrs[r], r) for r in range(n_req)}
        got: dict[int, list[bytes]] = {r: [] for r in range(n_req)}
        idx_of = {r: rng.integers(0, n_rows, size=per) for r in range(n_req)}
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                frame = server_client.poll(0.02)
                if frame is not None:
                    out = b"".join(server_node.serve(frame).values())
                    if out:
                        server_client.send(out)

        def request(r: int) -> None:
            # Two halves, the second sent once the first is answered: its responses have filled the
            # ToR's cache by then, so the second half has hits however the threads are scheduled (sent
            # at once, every read could pass the ToR before the first response, as under load).
            idx, n = idx_of[r], 0
            for half in (range(0, per // 2), range(per // 2, per)):
                for s in range(half.start, half.stop, max_prs * 16):  # frames of 16 packets
                    frame = b"".join(
                        units.encode_packet(units.READ, owner, PROP, np.full(e - b, r), np.zeros(e - b, np.int64),
                                            idx[b:e], np.arange(b, e), **WIRE)
                        for b in range(s, min(s + max_prs * 16, half.stop), max_prs)
                        for e in [min(b + max_prs, half.stop)])
                    clients[r].send(frame)
                while n < half.stop:
                    data = clients[r].recv(timeout=20)
                    got[r].append(data)
                    n += native_units.scan_frame(data, n_dests=owner + 1, prop_bytes=PROP, **WIRE)[2]

        threads = [threading.Thread(target=serve, daemon=True)]
        threads += [threading.Thread(target=request, args=(r,), daemon=True) for r in range(n_req)]
        try:
            for t in threads:
                t.start()
            for t in threads[1:]:
                t.join(timeout=40)
            assert not any(t.is_alive() for t in threads[1:]), "a requester is still waiting for responses"
        finally:
            stop.set()
            threads[0].join(timeout=5)
            for c in [server_client, *clients.values()]:
                c.close()
        for r in range(n_req):
            ids, rows = [], []
            for pk in native_units.decode_stream(b"".join(got[r]), **WIRE):
                assert pk["type"] == units.RESPONSE and pk["dest"] == r
                ids.append(pk["id"])
                rows.append(pk["payload"])
            ids = np.concatenate(ids)
            assert np.array_equal(np.sort(ids), np.arange(per)), f"node {r}: reads not answered exactly once"
            np.testing.assert_array_equal(np.concatenate(rows)[np.argsort(ids)], x[idx_of[r]])
        c = _control(servers[0]).counters()
        assert c["read_prs_in"] == n_req * per
        assert c["cache_hits"] > 0 and c["cache_misses"] > 0
        assert c["response_prs_out"] == n_req * per
        assert c["errors"] == {}
