"""hw_models.compute: roofline by hand, CPU model, calibration through the real kernel, combination."""

import numpy as np
import pytest
import scipy.sparse as sp

from hw_models import compute as C
from netsparse_torch.errors import ConfigError


def _one(rows, nnz, distinct):
    return C.NodeWork(np.array([rows]), np.array([nnz]), np.array([distinct]))


def test_accelerator_peak_and_memory_bound_spmm_by_hand():
    acc = C.AcceleratorModel()
    assert acc.peak_flops == 128 * 1e9 * 32  # 128 PEs x 1 GHz x 32 flop/cycle
    w = _one(100, 1000, 50)
    # bytes = 1000 * (4 + 4) + 101 * 8 + 1000 * 16 * 4 + 100 * 16 * 4 = 79208; flops = 32000.
    assert acc.bytes(w, 16).tolist() == [79208]
    assert acc.flops(w, 16).tolist() == [32000]
    assert acc.time_s(w, 16)[0] == pytest.approx(79208 / 800e9)


def test_accelerator_compute_bound_with_reuse_by_hand():
    acc = C.AcceleratorModel(b_reuse=True)
    w = _one(10, 10**6, 10)
    # flops = 2 * 1e6 * 128 = 2.56e8 -> 62.5 us at 4.096 TFLOP/s; bytes = 8e6 + 88 + 5120 + 5120 -> ~10 us.
    assert acc.bytes(w, 128)[0] == 8_000_000 + 88 + 5120 + 5120
    assert acc.time_s(w, 128)[0] == pytest.approx(2.56e8 / 4.096e12)


def test_spmv_is_k1_and_sddmm_bytes():
    acc = C.AcceleratorModel()
    w = _one(100, 1000, 50)
    assert acc.time_s(w, 64, "spmv")[0] == acc.time_s(w, 1, "spmm")[0]
    # SDDMM: pattern 1000 * 4 + 101 * 8, X rows 100 * 16 * 4, Y rows 1000 * 16 * 4, output 1000 * 4.
    assert acc.bytes(w, 16, "sddmm")[0] == 4000 + 808 + 6400 + 64000 + 4000


def test_cpu_model_by_hand():
    m = C.CPUModel.from_gflops(2.0)
    assert m.nnz_k_per_s == 1e9 and m.gflops == pytest.approx(2.0)
    assert m.time_s(_one(1, 1000, 1), 16)[0] == pytest.approx(16e-6)
    assert C.CPUModel.from_seconds(0.5, 1000, 8).nnz_k_per_s == 16000


def test_node_work_matches_loops():
    a = sp.random(97, 80, density=0.1, random_state=2, format="csr")
    w = C.node_work(a, 5)
    blocks = np.array_split(np.arange(97), 5)
    assert w.rows.tolist() == [len(b) for b in blocks]
    assert w.nnz.tolist() == [a[b].nnz for b in blocks]
    assert w.distinct_cols.tolist() == [len(set(a[b].indices.tolist())) for b in blocks]


def test_combine():
    c, m = np.array([1.0, 4.0]), np.array([3.0, 2.0])
    assert C.combine(c, m, "none").tolist() == [4.0, 6.0]
    assert C.combine(c, m, "full").tolist() == [3.0, 4.0]
    assert C.end_to_end_s(c, m, "none") == 6.0 and C.end_to_end_s(c, m, "full") == 4.0
    assert C.end_to_end_s(c, 2.5, "full") == 4.0  # a scalar comm time broadcasts


def test_bad_input():
    w = _one(1, 1, 1)
    with pytest.raises(ConfigError, match="unknown overlap"):
        C.combine(np.ones(1), np.ones(1), "partial")
    with pytest.raises(ConfigError, match="unknown kernel"):
        C.AcceleratorModel().time_s(w, 16, "spgemm")
    with pytest.raises(ConfigError, match="k must be"):
        C.CPUModel(1.0).time_s(w, 0)
    with pytest.raises(ConfigError, match="pes"):
        C.AcceleratorModel(pes=0)
    with pytest.raises(ConfigError, match="CPU rate"):
        C.CPUModel(-1.0)
    with pytest.raises(ConfigError, match="measured time"):
        C.CPUModel.from_seconds(0.0, 10, 1)
