"""BlueField-3 offload model: hand-computed values of each formula and the paper's Table 2."""

import pytest

from hw_models.seeds import bf3


def test_improvement_by_hand():
    # k = 4, c = 0.2: p = 0.1 -> max(0.9, 0.6) = 0.9; p = 0.2 -> max(0.8, 1.0) = 1.0.
    assert bf3.improvement(0.1, 4, 0.2) == pytest.approx(0.1)
    assert bf3.improvement(0.2, 4, 0.2) == pytest.approx(0.0)
    assert bf3.improvement(0.0, 4, 0.2) == pytest.approx(0.0)


def test_optimum_by_hand():
    assert bf3.optimal_offload_share(4, 0.2) == pytest.approx(0.16)  # (1 - 0.2) / (1 + 4)
    assert bf3.max_improvement(4, 0.2) == pytest.approx(0.16)


def test_optimum_is_the_maximum():
    k, c = 3.28, 0.3
    best = bf3.max_improvement(k, c)
    for i in range(1001):
        assert bf3.improvement(i / 1000, k, c) <= best + 1e-12


def test_leader_based_onloading():
    assert bf3.leader_offload_share(0.15, 3) == pytest.approx(0.60)  # 15% x (3 + 1)
    assert bf3.leader_offload_share(0.2, 0) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="exceeds 1"):
        bf3.leader_offload_share(0.3, 4)


# BF3 paper Table 2: max improvement (%) for k (rows) x c = 15, 30, 60 % (columns).
TABLE2 = {4.33: (16, 13, 7.5), 3.28: (19, 16.3, 9.3), 3.21: (20, 17, 9.5)}


def test_table2_within_one_point():
    rows = bf3.table2()
    assert len(rows) == 9
    for k, c, ours in rows:
        paper = TABLE2[k][(0.15, 0.30, 0.60).index(c)]
        assert abs(ours - paper) <= 1.0, (k, c, ours, paper)


@pytest.mark.parametrize("args", [(0.1, 0, 0.2), (0.1, 4, 1.0), (0.1, 4, -0.1), (1.5, 4, 0.2)])
def test_bad_input(args):
    with pytest.raises(ValueError):
        bf3.improvement(*args)
