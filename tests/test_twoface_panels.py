"""Two-Face row panels: the layout groups nonzeros by (panel of 32 rows, stripe, row), and the C++
panel SpMM equals the dense product."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from netsparse_torch import _C
from netsparse_torch.comm.twoface.layout import Panels, Part


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(0, 100), cols=st.integers(1, 70), k=st.integers(1, 40), width=st.integers(1, 80),
       density=st.floats(0, 0.5), seed=st.integers(0, 2**31 - 1), double=st.booleans())
def test_panel_spmm_is_the_dense_product(rows, cols, k, width, density, seed, double):
    a = sp.random(rows, cols, density=density, random_state=seed, format="csr", dtype=np.float32)
    dtype = torch.float64 if double else torch.float32
    B = torch.randn(cols, k, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    got = Panels.of(a, width).matmul(B)
    torch.testing.assert_close(got, torch.from_numpy(a.toarray()).to(dtype) @ B, rtol=1e-5, atol=1e-5)


def test_nonzeros_are_grouped_by_panel_then_stripe_then_row():
    a = sp.random(70, 50, density=0.3, random_state=1, format="csr")
    p = Panels.of(a, width=8)
    row, col = p.row.numpy(), p.col.numpy()
    key = list(zip(row // 32, col // 8, row, col, strict=True))
    assert key == sorted(key) and len(key) == a.nnz
    assert p.panel_ptr.tolist() == [0, *np.cumsum(np.bincount(row // 32, minlength=3)).tolist()]


def test_part_uses_panels_forward_and_csr_transpose_backward():
    a = sp.random(40, 30, density=0.2, random_state=2, format="csr")
    part = Part.of(a, panel_width=4)
    B = torch.randn(30, 5)
    torch.testing.assert_close(part.matmul(B), torch.from_numpy(a.toarray()).float() @ B)
    assert Part.of(a).panels is None


def test_bad_input_gets_one_clear_error():
    p = Panels.of(sp.random(40, 30, density=0.2, random_state=3, format="csr"), 4)
    B = torch.randn(30, 5)
    with pytest.raises(ValueError, match="column outside"):
        _C.spmm_panels(p.panel_ptr, p.row, p.col, p.val, B[:10], 40, 32)
    with pytest.raises(ValueError, match="panel_ptr needs"):
        _C.spmm_panels(p.panel_ptr, p.row, p.col, p.val, B, 80, 32)
    with pytest.raises(ValueError, match="row outside its panel"):
        _C.spmm_panels(p.panel_ptr, p.row.flip(0).contiguous(), p.col, p.val, B, 40, 32)
    with pytest.raises(ValueError, match="float32 or both float64"):
        _C.spmm_panels(p.panel_ptr, p.row, p.col, p.val, B.double(), 40, 32)
