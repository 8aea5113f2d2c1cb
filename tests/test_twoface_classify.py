"""Two-Face preprocessing on a hand-made matrix (Fig. 4/Fig. 6 style), with every value worked out by
hand below, plus the coefficient profile and the bad-input errors."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from hw_models.twoface import ASYNC, LOCAL, SYNC, Coefficients, classify, find_stripes
from hw_models.twoface.classify import coalesce_distance, default_stripe_width
from hw_models.twoface.cost import DEFAULT_SOURCE, CostModel
from netsparse_torch.comm.twoface.layout import coalesced_rows
from netsparse_torch.errors import ConfigError

# 3 ranks own rows/columns 0-3, 4-7, 8-11. Rank 0's rows; W=2 cuts each megatile into 2 stripes.
ROWS = {0: [0, 4, 5, 8], 1: [1, 4, 9], 2: [2, 4, 5, 8], 3: [3, 7, 8]}
BOUNDS = np.array([0, 4, 8, 12])
# By hand: local stripes [0,1] (n=2) and [2,3] (n=2); remote stripes
#   A=[4,5]: nonzeros (0,4) (0,5) (1,4) (2,4) (2,5) -> n=5, l=2
#   B=[6,7]: (3,7)                                 -> n=1, l=1
#   C=[8,9]: (0,8) (1,9) (2,8) (3,8)               -> n=4, l=2
#   [10,11] is empty and is no stripe. S_T = 3.


def rank0_rows():
    r = [i for i, cols in ROWS.items() for _ in cols]
    c = [x for cols in ROWS.values() for x in cols]
    return sp.csr_matrix((np.ones(len(c), np.float32), (r, c)), shape=(4, 12))


def kinds_by_start(stripes):
    return {int(s): int(k) for s, k in zip(stripes.start, stripes.kind, strict=True)}


def test_stripes_found_by_hand():
    s = find_stripes(rank0_rows(), BOUNDS, 0, 2)
    assert s.start.tolist() == [0, 2, 4, 6, 8]
    assert s.nnz.tolist() == [2, 2, 5, 1, 4]
    assert s.rows.tolist() == [2, 2, 2, 1, 2]
    assert s.owner.tolist() == [0, 0, 1, 1, 2]
    assert s.count(LOCAL) == 2


def test_classification_by_hand():
    # beta_A=gamma_A=alpha_A=beta_S=alpha_S=1, kappa_A=0, K=1, W=2:
    # sync cost per stripe = 1*1*2 + 1 = 3, u = 1 + 0 + 3 = 4, z_i = l_i + n_i + 4:
    # z_A = 11, z_B = 6, z_C = 10; budget S_T * 3 = 9; sorted B(6) C(10) A(11), prefix sums 6, 16
    # -> r = 1: B async, A and C sync.
    c = Coefficients(beta_s=1, alpha_s=1, beta_a=1, alpha_a=1, gamma_a=1, kappa_a=0)
    s = classify(find_stripes(rank0_rows(), BOUNDS, 0, 2), 1, c, 2)
    assert kinds_by_start(s) == {0: LOCAL, 2: LOCAL, 4: SYNC, 6: ASYNC, 8: SYNC}
    # alpha_S = 10: sync cost = 12, u = 13; z_A = 20, z_B = 15, z_C = 19; budget 36; prefix 15, 34, 54
    # -> r = 2: B and C async, A sync.
    c = Coefficients(beta_s=1, alpha_s=10, beta_a=1, alpha_a=1, gamma_a=1, kappa_a=0)
    s = classify(find_stripes(rank0_rows(), BOUNDS, 0, 2), 1, c, 2)
    assert kinds_by_start(s) == {0: LOCAL, 2: LOCAL, 4: SYNC, 6: ASYNC, 8: ASYNC}


@pytest.mark.parametrize("overlap", ["max", "sum"])
def test_classification_by_overlap_by_hand(overlap):
    # K=1, W=2, kappa_A=0; a stripe costs s = beta_S*1*2 + alpha_S synchronously and
    # a_i = beta_A l_i + gamma_A n_i + alpha_A asynchronously.
    # (1) all 1 but alpha_S = 6.5: s = 8.5; a_A = 2+5+1 = 8, a_B = 1+1+1 = 3, a_C = 2+4+1 = 7.
    #   max: z = a + s: z_B = 11.5, z_C = 15.5, z_A = 16.5; budget 3 x 8.5 = 25.5; prefix 11.5, 27
    #        -> r = 1: B async, A and C sync (Comm_S = 17 >= Comm_A = 3).
    #   sum: every a_i < s -> all three async (sum 18 < 17 + 3 = 20).
    c = Coefficients(beta_s=1, alpha_s=6.5, beta_a=1, alpha_a=1, gamma_a=1, kappa_a=0)
    s = classify(find_stripes(rank0_rows(), BOUNDS, 0, 2), 1, c, 2, overlap=overlap)
    want = {"max": {4: SYNC, 6: ASYNC, 8: SYNC}, "sum": {4: ASYNC, 6: ASYNC, 8: ASYNC}}[overlap]
    assert kinds_by_start(s) == {0: LOCAL, 2: LOCAL, **want}
    # (2) all 1 but alpha_A = 2: s = 3; a_B = 1+1+2 = 4, a_C = 8, a_A = 9.
    #   max: z_B = 7, z_C = 11, z_A = 12; budget 9; prefix 7, 18 -> r = 1: B async (balance 6 vs 4,
    #        although B alone is dearer asynchronously).
    #   sum: no a_i < 3 -> all sync.
    c = Coefficients(beta_s=1, alpha_s=1, beta_a=1, alpha_a=2, gamma_a=1, kappa_a=0)
    s = classify(find_stripes(rank0_rows(), BOUNDS, 0, 2), 1, c, 2, overlap=overlap)
    want = {"max": {4: SYNC, 6: ASYNC, 8: SYNC}, "sum": {4: SYNC, 6: SYNC, 8: SYNC}}[overlap]
    assert kinds_by_start(s) == {0: LOCAL, 2: LOCAL, **want}


def test_classification_rejects_unknown_overlap():
    with pytest.raises(ConfigError, match="overlap must be one of max, sum"):
        classify(find_stripes(rank0_rows(), BOUNDS, 0, 2), 1, Coefficients(), 2, overlap="both")


def test_memory_guard_by_hand():
    # First case above: A (z=11) and C (z=10) sync, 2 rows x K=1 x 4 B = 8 B each, 16 B in all.
    # A limit of 8 B turns the cheaper one, C, async; a limit of 0 turns both.
    c = Coefficients(beta_s=1, alpha_s=1, beta_a=1, alpha_a=1, gamma_a=1, kappa_a=0)
    s = classify(find_stripes(rank0_rows(), BOUNDS, 0, 2), 1, c, 2, memory_limit_bytes=8)
    assert kinds_by_start(s) == {0: LOCAL, 2: LOCAL, 4: SYNC, 6: ASYNC, 8: ASYNC}
    s = classify(find_stripes(rank0_rows(), BOUNDS, 0, 2), 1, c, 2, memory_limit_bytes=0)
    assert s.count(SYNC) == 0 and s.count(ASYNC) == 3


def test_table3_defaults():
    c = Coefficients()
    assert (c.beta_s, c.alpha_s, c.beta_a, c.alpha_a, c.gamma_a, c.kappa_a) == (
        1.95e-10, 1.36e-6, 3.61e-9, 1.02e-5, 2.07e-8, 8.72e-9)


def test_coalescing_and_width_rules():
    assert coalesce_distance(32) == 4 and coalesce_distance(128) == 1 and coalesce_distance(1) == 128
    assert coalesced_rows(np.array([1, 3, 8, 9, 20]), 2).tolist() == [1, 2, 3, 8, 9, 20]
    assert default_stripe_width(81306, 4) == 128  # 81306/4/128 = 158.8, nearest power of two 128
    assert default_stripe_width(114599, 4) == 256  # 223.8 -> 256
    assert default_stripe_width(10, 4) == 1


@pytest.mark.parametrize("w", [0, -3, 2.5])
def test_bad_width(w):
    with pytest.raises(ConfigError, match="stripe width W"):
        find_stripes(rank0_rows(), BOUNDS, 0, w)


def test_profile_roundtrip_and_corrupt(tmp_path):
    path = Coefficients(beta_s=2e-10).save(tmp_path / "p.json", {"overlap": "sum"})
    assert Coefficients.load(path).beta_s == 2e-10
    model = CostModel.resolve(path)
    assert (model.coefficients.beta_s, model.overlap, model.source) == (2e-10, "sum", str(path))
    # No profile named: the documented defaults, never a file found somewhere on the machine.
    assert CostModel.resolve(None) == CostModel(Coefficients(), "max", DEFAULT_SOURCE)
    no_overlap = Coefficients().save(tmp_path / "old.json")
    with pytest.raises(ConfigError, match="no valid 'overlap'.*re-run netsparse-calibrate"):
        CostModel.resolve(no_overlap)
    for text in ["{not json", json.dumps({"coefficients": {"beta_s": 1}}),
                 json.dumps({"coefficients": {**Coefficients().to_dict(), "alpha_s": "x"}}),
                 json.dumps({"coefficients": {**Coefficients().to_dict(), "alpha_s": -1}})]:
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(ConfigError, match="corrupt Two-Face calibration file"):
            Coefficients.load(tmp_path / "bad.json")


def test_cluster_coefficients_by_hand():
    from hw_models.twoface.model import cluster_coefficients, model_two_face

    # 400 Gb/s = 50e9 B/s: beta_S = 4 B / 50e9 = 8e-11 s; alpha_S = 4 x 450 ns + 3 x 300 ns = 2.7e-6 s;
    # Table 3 ratios: beta_A = 8e-11 x 3.61e-9/1.95e-10, alpha_A = 2.7e-6 x 1.02e-5/1.36e-6 = 2.025e-5.
    c = cluster_coefficients(50e9, 450e-9, 300e-9)
    assert c.beta_s == pytest.approx(8e-11) and c.alpha_s == pytest.approx(2.7e-6)
    assert c.beta_a == pytest.approx(8e-11 * 3.61e-9 / 1.95e-10) and c.alpha_a == pytest.approx(2.025e-5)
    # The hand matrix as rank 0 of 3 (ranks 1 and 2 own empty rows): with the first hand coefficients,
    # A and C are sync (2 x (1*1*2 + 1) = 6) and B async (1*1*1 + 1*1 = 2) -> max = 6.
    adj = sp.vstack([rank0_rows(), sp.csr_matrix((8, 12), dtype=np.float32)]).tocsr()
    hand = Coefficients(beta_s=1, alpha_s=1, beta_a=1, alpha_a=1, gamma_a=1, kappa_a=0)
    out = model_two_face(adj, BOUNDS, 1, hand, width=2)
    assert out == {"comm_time_s": 6.0, "sync_stripes": 2, "async_stripes": 1, "local_stripes": 2,
                   "stripe_width": 2}


@pytest.mark.parametrize("seed", range(4))
def test_model_stripes_from_distinct_columns_equal_find_stripes(seed):
    """The model's stripes (from sorted distinct columns and counts, O(distinct)) are the runtime's."""
    import scipy.sparse as sp

    from hw_models.twoface.model import stripes_of_distinct

    rng = np.random.default_rng(seed)
    a = sp.random(120, 120, density=0.07, random_state=seed, format="csr")
    bounds = np.array([0, 17, 50, 51, 90, 120])
    for rank in range(5):
        rows = a[bounds[rank]:bounds[rank + 1]]
        cols, counts = np.unique(rows.indices, return_counts=True)
        for width in (1, 2, 3, int(rng.integers(4, 40))):
            want, got = find_stripes(rows, bounds, rank, width), stripes_of_distinct(cols, counts, bounds, rank, width)
            for field in ("owner", "start", "width", "nnz", "rows", "kind"):
                np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
