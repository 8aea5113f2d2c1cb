"""hw_models.definitions against an independent, loop-based computation and hand-worked cases."""

import math

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_models import definitions_ref

from hw_models import definitions as D
from hw_models.bounds import row_bounds
from hw_models.params import HeaderParams
from netsparse_torch.errors import ConfigError, GraphInputError


def _reference(a, nodes, partition):
    """Straightforward per-node loops over a dense pattern: a different code path from the module."""
    a = sp.coo_matrix(a)
    n_rows, n_cols = a.shape
    pattern = np.zeros(a.shape, dtype=bool)
    pattern[a.row, a.col] = True  # duplicates merge, explicit zeros stay
    if partition == "rows":
        row_blocks = np.array_split(np.arange(n_rows), nodes)
    else:
        b = row_bounds(n_rows, nodes, "nnz", sp.csr_matrix(pattern).indptr)
        row_blocks = [np.arange(b[p], b[p + 1]) for p in range(nodes)]
    col_blocks = row_blocks if n_rows == n_cols else np.array_split(np.arange(n_cols), nodes)
    owner = {int(c): p for p, blk in enumerate(col_blocks) for c in blk}
    useful = sa = su = 0
    windows = []
    for p, rows in enumerate(row_blocks):
        stream = []  # remote PRs in CSR order: rows ascending, columns ascending
        for r in rows:
            for c in range(n_cols):
                if pattern[r, c] and owner[c] != p:
                    stream.append(c)
        sa += len(stream)
        useful += len(set(stream))
        su += n_cols - len(col_blocks[p])
        for w in range(len(stream) // 64):
            windows.append(len({owner[c] for c in stream[64 * w: 64 * w + 64]}))
    locality = sum(windows) / len(windows) if windows else math.nan
    return useful, sa, su, locality


def _random_matrix(seed, n=150, m=None, density=0.06):
    rng = np.random.default_rng(seed)
    m = m or n
    a = sp.random(n, m, density=density, format="coo", random_state=rng)
    # Duplicates and an explicit zero must count once as a pattern entry.
    rows = np.concatenate([a.row, a.row[:5]])
    cols = np.concatenate([a.col, a.col[:5]])
    data = np.concatenate([a.data, np.zeros(5)])
    return sp.coo_matrix((data, (rows, cols)), shape=(n, m))


def _check(a, nodes, partition):
    w = D.workload(a, nodes, partition)
    red = D.redundancy(w)
    useful, sa, su, locality = _reference(a, nodes, partition)
    assert (red.useful_transfers, red.sa_prs, red.su_transfers) == (useful, sa, su)
    assert red.su_redundant_per_useful == pytest.approx((su - useful) / useful)
    assert red.sa_redundant_per_useful == pytest.approx((sa - useful) / useful)
    got = D.dest_locality(w)
    assert (math.isnan(got) and math.isnan(locality)) or got == pytest.approx(locality)
    assert w.pair_prs.trace() == 0 and w.pair_useful.trace() == 0
    _check_against_whole_matrix(a, w, nodes, partition)


def _check_against_whole_matrix(a, w, nodes, partition, cores=(1, 3, 64)):
    """The streaming pass equals the old whole-matrix definitions and the brute-force rank filter."""
    prs, useful = definitions_ref.pair_counts(a, nodes, partition)
    np.testing.assert_array_equal(w.pair_prs, prs)
    np.testing.assert_array_equal(w.pair_useful, useful)
    ref = definitions_ref.dest_locality(a, nodes, partition)
    got = D.dest_locality(w)
    assert (math.isnan(got) and math.isnan(ref)) or got == pytest.approx(ref, rel=1e-12)
    for c in cores:
        for split in ("rows", "nnz"):
            _check_ranks(a, nodes, partition, c, split)


def _check_ranks(a, nodes, partition, cores, rank_partition):
    """SAOpt's per-rank counts of the streaming pass equal the brute-force rank filter."""
    w = D.workload(a, nodes, partition, cores=cores, rank_partition=rank_partition)
    issued, served, pair = definitions_ref.rank_counts(a, nodes, cores, partition, rank_partition)
    np.testing.assert_array_equal(w.rank_issued, issued)
    np.testing.assert_array_equal(w.rank_served, served)
    np.testing.assert_array_equal(w.rank_pair_useful, pair)
    assert w.rank_partition == rank_partition


@pytest.mark.parametrize("partition", ["rows", "nnz"])
@pytest.mark.parametrize(("seed", "nodes"), [(0, 2), (1, 3), (2, 7), (3, 16)])
def test_random_matrices_match_reference(seed, nodes, partition):
    _check(_random_matrix(seed, n=150 + 13 * seed, density=0.08), nodes, partition)


def test_rectangular_matches_reference():
    _check(_random_matrix(5, n=90, m=140, density=0.3), 4, "rows")


@pytest.mark.parametrize("name", ["karate.mtx", "west0067.mtx"])
@pytest.mark.parametrize("nodes", [2, 4, 8])
def test_real_matrices_match_reference(name, nodes):
    a = scipy.io.mmread(DATA / "mtx_small" / name)
    for partition in ("rows", "nnz"):
        _check(a, nodes, partition)


def test_hand_worked_case():
    # 2 nodes own rows {0,1} and {2,3}. Node 0 needs cols 2,3 (col 2 twice); node 1 needs cols 0 (twice), 1.
    rows = [0, 0, 1, 1, 2, 3, 3, 3]
    cols = [2, 3, 2, 0, 0, 0, 1, 3]
    a = sp.coo_matrix((np.ones(8), (rows, cols)), shape=(4, 4))
    w = D.workload(a, 2)
    red = D.redundancy(w)
    assert red.to_dict() == {"useful_transfers": 4, "sa_prs": 6, "su_transfers": 4,
                             "su_redundant_per_useful": 0.0, "sa_redundant_per_useful": 0.5}
    assert w.pair_prs.tolist() == [[0, 3], [3, 0]] and w.pair_useful.tolist() == [[0, 2], [2, 0]]
    assert math.isnan(D.dest_locality(w))  # no node has a full window of 64
    # remote PRs in CSR order: node 0 [2, 3, 2], node 1 [0, 0, 1]; windows of 2: [2,3] and [0,0]
    assert D.dest_locality(D.workload(a, 2, window=2)) == pytest.approx((1 + 1) / 2)
    assert w.node_nnz.tolist() == [4, 4] and w.node_distinct_cols.tolist() == [3, 3]
    # SAOpt, 2 ranks per node (one row each): rank 0 of node 0 (row 0) needs {2, 3}, rank 1 (row 1)
    # {2}; node 1: row 2 {0}, row 3 {0, 1}. Column 2 is served by node 1's rank 0, 3 by its rank 1.
    w2 = D.workload(a, 2, cores=2)
    assert w2.rank_issued.tolist() == [[2, 1], [1, 2]]
    assert w2.rank_served.tolist() == [[2, 1], [2, 1]]
    assert w2.rank_pair_useful.tolist() == [[0, 3], [3, 0]]


def test_rank_partition_hand_worked_case():
    """Two nodes of 4 rows, 2 ranks each. Node 0: row 0 {4,5,6,7}, row 1 {6}, row 2 {7}, row 3 {4} (7
    nonzeros); node 1: row 4 {0,1,2}, row 5 {0}, rows 6-7 empty (4 nonzeros). ``rows``: ranks own rows
    {0,1} {2,3} and {4,5} {6,7}. ``nnz``: rank 1 starts where the running count reaches half the node's:
    node 0 at row 1 (4 >= 3.5), node 1 at row 5 (3 >= 2), so ranks own {0} {1,2,3} and {4} {5,6,7}, and
    the rows of B with the same ids."""
    rows = [0, 0, 0, 0, 1, 2, 3, 4, 4, 4, 5]
    cols = [4, 5, 6, 7, 6, 7, 4, 0, 1, 2, 0]
    a = sp.coo_matrix((np.ones(11), (rows, cols)), shape=(8, 8))
    w = D.workload(a, 2, cores=2)  # rows: node 0's ranks need {4,5,6,7} and {7,4}; node 1's {0,1,2} and {}
    assert w.rank_issued.tolist() == [[4, 2], [3, 0]]
    assert w.rank_served.tolist() == [[2, 1], [3, 3]]  # B rows {0,1} {2,3} | {4,5} {6,7}
    assert w.rank_pair_useful.tolist() == [[0, 6], [3, 0]]
    w = D.workload(a, 2, cores=2, rank_partition="nnz")  # {4,5,6,7} and {6,7,4}; {0,1,2} and {0}
    assert w.rank_issued.tolist() == [[4, 3], [3, 1]]
    assert w.rank_served.tolist() == [[2, 2], [2, 5]]  # B rows {0} {1,2,3} | {4} {5,6,7}
    assert w.rank_pair_useful.tolist() == [[0, 7], [4, 0]]
    with pytest.raises(ConfigError, match="rank_partition"):
        D.workload(a, 2, cores=2, rank_partition="balanced")


@st.composite
def _skewed(draw):
    """Patterns with heavy rows (rows drawn from a few ids), square or not, and empty nodes."""
    n = draw(st.integers(2, 40))
    m = draw(st.sampled_from([n, draw(st.integers(2, 40))]))
    heavy = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))
    nnz = draw(st.integers(0, 300))
    rows = draw(st.lists(st.one_of(st.sampled_from(heavy), st.integers(0, n - 1)), min_size=nnz, max_size=nnz))
    cols = draw(st.lists(st.integers(0, m - 1), min_size=nnz, max_size=nnz))
    nodes = draw(st.integers(1, min(n, m)))
    partition = draw(st.sampled_from(["rows", "nnz"])) if n == m else "rows"
    return sp.coo_matrix((np.ones(nnz), (rows, cols)), shape=(n, m)), nodes, partition, draw(st.integers(1, 9))


@settings(max_examples=80, deadline=None)
@given(_skewed(), st.sampled_from(["rows", "nnz"]))
def test_rank_partition_matches_reference_on_skewed_patterns(case, rank_partition):
    a, nodes, partition, cores = case
    _check_ranks(a, nodes, partition, cores, rank_partition)


def test_locality_window_hand_case():
    # Only row 0 (node 0) has nonzeros: columns 33..131, owned by nodes 1, 2 and 3 (blocks of 33 rows).
    n = 132
    a = sp.csr_matrix((np.ones(n - 33), (np.zeros(n - 33, int), np.arange(33, n))), shape=(n, n))
    w = D.workload(a, 4)
    # 99 remote PRs -> one full window: cols 33..96 -> dests {1, 2} (col 66 starts node 2).
    assert D.dest_locality(w) == 2.0


def test_table3_header_fraction_exact():
    """NetSparse Table 3: header share of SA traffic, one read + one response packet per PR."""
    expected = {1: 97.6, 2: 95.2, 4: 90.9, 8: 83.3, 16: 71.4, 32: 55.6, 64: 38.5, 128: 23.8, 256: 13.5}
    got = {k: round(100 * D.header_fraction_sa(k), 1) for k in expected}
    assert got == expected
    assert D.header_fraction_sa(16, HeaderParams(upper_bytes=0, concat_bytes=0, pr_bytes=0)) == 0.0


def test_zero_useful_and_one_node():
    w = D.workload(sp.eye(10, format="csr"), 2)  # only local nonzeros
    red = D.redundancy(w)
    assert red.useful_transfers == 0 and red.su_redundant_per_useful == math.inf
    assert red.sa_redundant_per_useful == 0.0
    red1 = D.redundancy(D.workload(sp.random(10, 10, density=0.5, random_state=0), 1))
    assert (red1.useful_transfers, red1.sa_prs, red1.su_transfers, red1.su_redundant_per_useful) == (0, 0, 0, 0.0)


def test_bad_input():
    with pytest.raises(GraphInputError, match="scipy sparse"):
        D.workload(np.eye(3), 2)
    with pytest.raises(GraphInputError, match="non-empty"):
        D.workload(sp.csr_matrix((0, 0)), 1)
    with pytest.raises(ConfigError, match="larger than the graph"):
        D.workload(sp.eye(3, format="csr"), 4)
    with pytest.raises(ConfigError, match="unknown partition"):
        D.workload(sp.eye(3, format="csr"), 2, "cols")
    with pytest.raises(ValueError, match="k must be"):
        D.header_fraction_sa(0)
    with pytest.raises(ConfigError, match="cores must be"):
        D.workload(sp.eye(3, format="csr"), 1, cores=0)


@st.composite
def _matrices(draw):
    n = draw(st.integers(2, 90))
    nnz = draw(st.integers(0, 400))
    rows = draw(st.lists(st.integers(0, n - 1), min_size=nnz, max_size=nnz))
    cols = draw(st.lists(st.integers(0, n - 1), min_size=nnz, max_size=nnz))
    nodes = draw(st.integers(1, n))
    partition = draw(st.sampled_from(["rows", "nnz"]))
    return sp.coo_matrix((np.ones(nnz), (rows, cols)), shape=(n, n)), nodes, partition


@settings(max_examples=60, deadline=None)
@given(_matrices())
def test_invariants_and_reference_on_random_patterns(case):
    a, nodes, partition = case
    w = D.workload(a, nodes, partition)
    red = D.redundancy(w)
    # useful <= SA PRs, useful <= SU transfers; per pair, distinct needs <= PRs.
    assert red.useful_transfers <= red.sa_prs and red.useful_transfers <= red.su_transfers
    assert (w.pair_useful <= w.pair_prs).all()
    loc = D.dest_locality(D.workload(a, nodes, partition, window=4))
    assert math.isnan(loc) or 1 <= loc <= min(4, nodes - 1)
    useful, sa, su, _ = _reference(a, nodes, partition)
    assert (red.useful_transfers, red.sa_prs, red.su_transfers) == (useful, sa, su)
    assert (w.rank_issued.sum(axis=1) >= w.useful_per_node).all()  # a rank cannot filter another's repeats
    assert w.rank_issued.sum() == w.rank_served.sum() == w.rank_pair_useful.sum()


SHARED = sorted((DATA / "graphs").glob("*.mtx.gz"))


@pytest.mark.parametrize("path", SHARED, ids=[p.name.split(".")[0] for p in SHARED])
def test_streaming_equals_whole_matrix_on_shared_graphs(path):
    """Every shared graph, 128 and 7 nodes, both partitions: the streaming pass equals the old
    whole-matrix definitions (pairs and Table 4 locality)."""
    from hw_models.mtx import read_mtx

    a = read_mtx(path)
    for nodes, partition in ((128, "rows"), (7, "nnz")):
        w = D.workload(a, nodes, partition)
        prs, useful = definitions_ref.pair_counts(a, nodes, partition)
        np.testing.assert_array_equal(w.pair_prs, prs)
        np.testing.assert_array_equal(w.pair_useful, useful)
        assert D.dest_locality(w) == pytest.approx(definitions_ref.dest_locality(a, nodes, partition), rel=1e-12)
        assert w.rank_issued.sum() >= useful.sum() and w.rank_issued.sum() <= prs.sum()


def test_cores_one_is_per_node_filtering():
    a = _random_matrix(11, n=300, density=0.05)
    w = D.workload(a, 5, cores=1)
    np.testing.assert_array_equal(w.rank_pair_useful, w.pair_useful)
    np.testing.assert_array_equal(w.rank_issued[:, 0], w.useful_per_node)
    np.testing.assert_array_equal(w.rank_served[:, 0], w.pair_useful.sum(axis=0))


def test_pattern_is_read_in_place():
    """The workload pass and the whole analysis read a Pattern in place: what Python allocates while
    they run (numpy included, tracemalloc) stays far below one copy of the pattern."""
    import tracemalloc

    from hw_models import analogs, analysis
    from hw_models.params import HardwareParams

    p = analogs.generate("arabic", 0.01)  # 6.3M nonzeros: 25 MB of int32 ids
    size = p.indices.nbytes + p.indptr.nbytes
    before = p.indices[:1000].copy()
    tracemalloc.start()
    try:
        w = D.workload(p, 128)
        _, peak_workload = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        analysis.analyze(p, HardwareParams(), k=16, simulator=None, ablation=False)
        _, peak_analyze = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert w.nnz == p.nnz and p.indices.dtype == np.int32 and (p.indices[:1000] == before).all()
    assert peak_workload < 1 << 20, peak_workload  # the [nodes, nodes] and [nodes, cores] counts: 0.5 MiB
    assert peak_analyze < 0.25 * size, peak_analyze  # one node's temporaries at a time
