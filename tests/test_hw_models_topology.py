"""hw_models.topology: path validity, minimality against BFS, hand-counted hops, balance, determinism."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from hw_models.params import HardwareParams
from hw_models.topology import build_topology
from netsparse_torch.errors import ConfigError

TOPOLOGIES = ("leafspine", "hyperx", "dragonfly")


def _topo(name, **cluster):
    return build_topology(HardwareParams().replace(cluster={"topology": name, **cluster}))


@pytest.fixture(scope="module", params=TOPOLOGIES)
def topo(request):
    return _topo(request.param)


def test_every_path_is_a_connected_walk_from_src_to_dst(topo):
    routes, lengths = topo.path_table()
    h = topo.n_hosts
    assert (lengths == topo.hop_matrix()).all() and (np.diag(lengths) == 0).all()
    for s in range(0, h, 7):
        for d in range(h):
            links = topo.path(s, d)
            if s == d:
                assert links == []
                continue
            assert topo.link_src[links[0]] == s and topo.link_dst[links[-1]] == d
            assert all(topo.link_dst[a] == topo.link_src[b] for a, b in zip(links, links[1:], strict=False))
            inner = topo.link_dst[links[:-1]]
            assert (inner >= h).all(), "hosts do not forward"
            assert len(set(links)) == len(links)


def test_paths_are_minimal(topo):
    """Independent check: BFS distances on the cable graph equal the routed hop counts."""
    v = topo.n_hosts + topo.n_switches
    g = sp.csr_matrix((np.ones(topo.n_links), (topo.link_src, topo.link_dst)), shape=(v, v))
    dist = shortest_path(g, unweighted=True, indices=np.arange(topo.n_hosts))[:, : topo.n_hosts]
    assert (dist == topo.hop_matrix()).all()


def test_hand_counted_hops():
    ls = _topo("leafspine")
    assert ls.n_switches == 8 + 16 and ls.n_links == 2 * (128 + 8 * 16)
    assert ls.hops(0, 15) == 2 and ls.hops(0, 16) == 4 and ls.hops(3, 3) == 0
    # spine = (0 % 16 + 127 % 16) % 16 = 15 -> switch 8 + 15; ToRs 0 and 7.
    assert ls.switch_path(0, 127) == [0, 23, 7]
    assert np.bincount(ls.hop_matrix().ravel()).tolist() == [128, 0, 128 * 15, 0, 128 * 112]

    hx = _topo("hyperx")
    # 4x4x2 grid, 4 hosts per switch; neighbours differ in one coordinate, 4 cables each (width 4).
    assert hx.n_switches == 32 and hx.n_links == 2 * (128 + 4 * 32 * 7 // 2)
    # From one switch: 7 switches at distance 1, 15 at 2, 9 at 3 -> host pairs x 4 hosts x 4 hosts.
    assert np.bincount(hx.hop_matrix().ravel()).tolist() == [128, 0, 384, 128 * 7 * 4, 128 * 15 * 4, 128 * 9 * 4]
    # host 127 sits on switch 31 = coords (3, 3, 1); dimension order visits (3,0,0)=24 then (3,3,0)=30.
    assert hx.switch_path(0, 127) == [0, 24, 30, 31]

    df = _topo("dragonfly")
    # 4 groups of 8 switches: 28 local cables per group, 8 global cables per group pair.
    assert df.n_switches == 32 and df.n_links == 2 * (128 + 4 * 28 + 6 * 8)
    assert np.bincount(df.hop_matrix().ravel()).tolist() == [128, 0, 384, 128 * (7 + 3) * 4, 128 * 21 * 4]
    # host 127 on switch 31 = (group 3, index 7): global first to (3, 0) = 24, then local to 31.
    assert df.switch_path(0, 127) == [0, 24, 31]
    # host 100 on switch 25 = (3, 1); from switch 0 = (0, 0): global to (3, 0) = 24, local to 25.
    assert df.switch_path(0, 100) == [0, 24, 25]
    assert df.switch_path(4, 100) == [1, 25]  # switches (0, 1) and (3, 1): one global hop
    assert df.switch_path(0, 20) == [0, 5]  # same group: one local hop


def test_leafspine_hash_balances_all_to_all():
    ls = _topo("leafspine")
    routes, _ = ls.path_table()
    load = np.bincount(routes[routes >= 0], minlength=ls.n_links)
    up = (ls.link_src >= 128) & (ls.link_src < 136) & (ls.link_dst >= 136)
    down = (ls.link_src >= 136)
    # All-to-all: each rack sends 16 * 112 inter-rack flows over its 16 uplinks.
    assert (load[up] == 112).all() and (load[down] == 112).all()


def test_hyperx_trunk_lanes_are_all_used():
    hx = _topo("hyperx")
    routes, _ = hx.path_table()
    load = np.bincount(routes[routes >= 0], minlength=hx.n_links)
    inter = (hx.link_src >= 128) & (hx.link_dst >= 128)
    assert (load[inter] > 0).all()


def test_switch_roles_and_capacities():
    ls = _topo("leafspine")
    assert ls.switch_is_tor.tolist() == [True] * 8 + [False] * 16
    assert (ls.link_bytes_per_s == 50e9).all() and np.allclose(ls.link_latency_s, 450e-9)
    assert _topo("hyperx").switch_is_tor.all() and _topo("dragonfly").switch_is_tor.all()
    assert ls.path_latency_s(0, 16, 300e-9) == pytest.approx(4 * 450e-9 + 3 * 300e-9)


def test_partial_and_single_rack():
    one = _topo("leafspine", nodes=8)
    assert one.n_switches == 1 and one.hop_matrix().max() == 2
    part = _topo("leafspine", nodes=40)  # racks of 16, 16, 8
    assert part.n_switches == 3 + 16 and part.hops(0, 39) == 4
    small = _topo("dragonfly", nodes=10)
    assert small.n_hosts == 10 and small.hops(0, 9) == 3


def test_determinism():
    for name in TOPOLOGIES:
        a, b = _topo(name), _topo(name)
        assert (a.path_table()[0] == b.path_table()[0]).all() and (a.link_src == b.link_src).all()


def test_bad_input():
    with pytest.raises(ConfigError, match="exceeds the hyperx capacity of 128"):
        _topo("hyperx", nodes=129)
    with pytest.raises(ConfigError, match="ports"):
        build_topology(HardwareParams().replace(cluster={"topology": "hyperx"}, switch={"ports": 16}))
    with pytest.raises(ValueError, match="host 200"):
        _topo("leafspine").path(0, 200)
