"""The Triton kernels against dense math and torch.sparse.mm: natively on CUDA tensors when a GPU is
present, else in the Triton interpreter on tiny CPU tensors (tests/devices.py picks; conftest sets
TRITON_INTERPRET before triton is imported)."""

import os
import sys

import devices
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("triton", reason="triton is not installed (pip install triton)")

from test_kernels import TOL, dense_sddmm, random_csr  # noqa: E402

from netsparse_torch import kernels as K  # noqa: E402
from netsparse_torch.kernels import triton_kernels as tk  # noqa: E402

if devices.TRITON_DEVICE == "cpu" and not tk.INTERPRETED:
    pytest.skip("triton_kernels was imported before TRITON_INTERPRET=1 could be set", allow_module_level=True)

pytestmark = [devices.requires_triton, pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks")]
DEV = torch.device(devices.TRITON_DEVICE or "cpu")


def on_dev(*ts):
    return [t.to(DEV) for t in ts]


def power_law_csr(rows: int, cols: int, hub: int, dtype=torch.float32, seed: int = 0):
    """Rows of 0-3 nonzeros and one row (``hub``) with every column: the shape that row-split kernels
    leave to one program. Returns (crow, col, val, dense) on the test device."""
    gen = torch.Generator().manual_seed(seed)
    dense = (torch.rand(rows, cols, generator=gen) < 1.5 / cols).to(dtype)
    dense *= dense.cumsum(1) <= 3
    dense[hub] = 1
    dense *= torch.rand(rows, cols, generator=gen, dtype=dtype) + 0.5
    s = dense.to_sparse_csr()
    return on_dev(s.crow_indices(), s.col_indices(), s.values(), dense)


# (rows, cols, K): single row, K = 1, K not a multiple of the 16-wide interpreter tile, empty matrix.
SHAPES = [(1, 9, 5), (9, 12, 1), (11, 17, 19), (0, 4, 3)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rows,cols,k", SHAPES)
def test_triton_spmm_matches_dense_and_torch_sparse(dtype, rows, cols, k):
    crow, col, val, dense = on_dev(*random_csr(rows, cols, density=0.3, dtype=dtype, seed=rows + k))
    B = torch.randn(cols, k, dtype=dtype, device=DEV)
    out = K.spmm(crow, col, val, B, backend="triton")
    ref = dense @ B
    torch.testing.assert_close(out, ref, **TOL)
    if rows:
        torch.testing.assert_close(torch.sparse.mm(torch.sparse_csr_tensor(crow, col, val, dense.shape), B), ref,
                                   **TOL)


@pytest.mark.parametrize("dtype,index", [(torch.float32, torch.int32), (torch.float64, torch.int64)])
def test_long_rows_are_split_into_chunks_and_summed_in_order(dtype, index):
    crow, col, val, dense = power_law_csr(24, 40, hub=5, dtype=dtype)
    # The hub's 40 nonzeros: 6 chunks, the last short. int64 indices stand in for nnz >= 2**31.
    plan = tk.make_plan(crow, col, long_row=3, chunk=7, index_dtype=index)
    assert plan.long_rows.tolist() == [5] and plan.long_chunks.tolist() == [0, 6] and plan.n_chunks == 6
    dest, start, length = (t.long().tolist() for t in (plan.seg_dest, plan.seg_start, plan.seg_len))
    chunks = sorted((-1 - d, s, n) for d, s, n in zip(dest, start, length, strict=True) if d < 0)
    assert chunks == [(i, int(crow[5]) + 7 * i, min(7, 40 - 7 * i)) for i in range(6)]
    rows = {d: (s, n) for d, s, n in zip(dest, start, length, strict=True) if d >= 0}
    deg = crow.diff()
    assert rows == {r: (int(crow[r]), int(deg[r])) for r in range(24) if r != 5}
    assert length == sorted(length, reverse=True), "the longest segments must run first"
    assert plan.crow.dtype == plan.col.dtype == plan.seg_start.dtype == plan.seg_dest.dtype == index
    for B in (torch.randn(40, 19, dtype=dtype, device=DEV), torch.randn(21, 40, dtype=dtype, device=DEV).t()):
        out = tk.spmm(crow, col, val, B, plan)
        torch.testing.assert_close(out, dense @ B, **TOL)
        assert torch.equal(out, tk.spmm(crow, col, val, B, plan)), "the chunk sums must not depend on timing"
    # Every row split (long_row=0): each row's chunks alone; chunk=1: one nonzero per program.
    for long_row, chunk in ((0, 2), (0, 1)):
        B = torch.randn(40, 5, dtype=dtype, device=DEV)
        torch.testing.assert_close(tk.spmm(crow, col, val, B, tk.make_plan(crow, col, long_row, chunk)), dense @ B,
                                   **TOL)


def test_default_plan_on_a_row_over_256_nonzeros_with_empty_and_single_nonzero_rows():
    """The default layout (chunks of tk.CHUNK) on a power-law shape: one row of 300 nonzeros, rows of
    one nonzero, empty rows, and rows between; exact against the dense product."""
    gen = torch.Generator().manual_seed(3)
    dense = torch.zeros(12, 300)
    dense[2] = torch.rand(300, generator=gen) + 0.5  # 300 nonzeros: more than 256, several chunks
    dense[5, 7] = dense[9, 299] = 1.5  # single nonzeros; rows 0, 3 and 11 stay empty
    for r, n in ((1, 65), (4, 64), (6, 20), (8, 130)):  # just over and at one chunk, a short row, two chunks
        dense[r, torch.randperm(300, generator=gen)[:n]] = torch.rand(n, generator=gen) + 0.5
    s = dense.to_sparse_csr()
    crow, col, val, dense = on_dev(s.crow_indices(), s.col_indices(), s.values(), dense)
    plan = tk.make_plan(crow, col)
    assert sorted(plan.long_rows.tolist()) == [1, 2, 8] and plan.n_chunks == 2 + 5 + 3
    assert plan.seg_len.tolist()[0] == tk.CHUNK and plan.seg_len.tolist()[-3:] == [0, 0, 0]
    B = torch.randn(300, 37, device=DEV)
    out = tk.spmm(crow, col, val, B, plan)
    torch.testing.assert_close(out, dense @ B, **TOL)
    assert not out[[0, 3, 11]].any()


def test_bucket_order_runs_rows_in_row_order_inside_a_length_bucket_with_the_same_bits():
    """order="buckets": segments by ceil(log2(length)), longest bucket first, row order inside one, the
    empty rows last; the product is the longest-first plan's to the bit (one program sums a segment)."""
    crow, col, val, dense = power_law_csr(40, 50, hub=7)
    longest = tk.make_plan(crow, col, long_row=3, chunk=4)
    plan = tk.make_plan(crow, col, long_row=3, chunk=4, order="buckets")
    length, dest = plan.seg_len.long(), plan.seg_dest.long()
    bucket = torch.where(length > 0, torch.ceil(torch.log2(length.clamp(min=1).double())).long(), -1)
    assert bucket.tolist() == sorted(bucket.tolist(), reverse=True)
    for b in set(bucket.tolist()):
        rows = dest[(bucket == b) & (dest >= 0)].tolist()
        chunks = (-1 - dest[(bucket == b) & (dest < 0)]).tolist()
        assert rows == sorted(rows) and chunks == sorted(chunks), b
    def segments(pl):
        return sorted(zip(pl.seg_dest.tolist(), pl.seg_start.tolist(), pl.seg_len.tolist(), strict=True))

    assert segments(plan) == segments(longest)  # the same segments, only their order differs
    B = torch.randn(50, 19, device=DEV)
    assert torch.equal(tk.spmm(crow, col, val, B, plan), tk.spmm(crow, col, val, B, longest))
    with pytest.raises(ValueError, match="order must be one of longest, buckets"):
        tk.make_plan(crow, col, order="random")


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), k=st.integers(1, 40), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**16), double=st.booleans(), long_row=st.integers(0, 6), chunk=st.integers(1, 5))
def test_triton_spmm_property_matches_dense(rows, cols, k, density, seed, double, long_row, chunk):
    dtype = torch.float64 if double else torch.float32
    crow, col, val, dense = on_dev(*random_csr(rows, cols, density=density, dtype=dtype, seed=seed))
    B = torch.randn(cols, k, dtype=dtype, generator=torch.Generator().manual_seed(seed)).to(DEV)
    torch.testing.assert_close(tk.spmm(crow, col, val, B, tk.make_plan(crow, col, long_row, chunk)), dense @ B,
                               **TOL)


def test_no_nonzeros_gives_zeros():
    crow, col = torch.zeros(6, dtype=torch.long, device=DEV), torch.zeros(0, dtype=torch.long, device=DEV)
    B, zeros = torch.randn(4, 3, device=DEV), torch.zeros(5, 3, device=DEV)
    assert torch.equal(K.spmm(crow, col, torch.zeros(0, device=DEV), B, backend="triton"), zeros)
    a = K.CSR(crow, col, torch.zeros(0, device=DEV), 4)
    assert torch.equal(K.spmm_heads(a, torch.zeros(0, 1, device=DEV), B, backend="triton"), zeros)


def test_triton_spmm_non_contiguous_b_and_transposed_product():
    crow, col, val, dense = on_dev(*random_csr(10, 14, seed=4))
    for B in (torch.randn(21, 14, device=DEV).t(), torch.randn(14, 30, device=DEV)[:, 3:23:2]):
        assert not B.is_contiguous()
        torch.testing.assert_close(tk.spmm(crow, col, val, B), dense @ B, **TOL)
    G = torch.randn(10, 18, device=DEV)[:, 1:18]
    torch.testing.assert_close(K._ops.spmm_t("triton", crow, col, val, G, 14), dense.t() @ G, **TOL)
    torch.testing.assert_close(K.CSR(crow, col, val, 14).t_matmul(G, "triton"), dense.t() @ G, **TOL)


@pytest.mark.parametrize("learned", [False, True])
def test_backward_runs_the_forward_kernel_on_the_cached_transpose(learned):
    crow, col, val, dense = power_law_csr(20, 16, hub=3)
    a = K.CSR(crow, col, val.clone().requires_grad_(learned), 16)
    B = torch.randn(16, 19, device=DEV, requires_grad=True)
    G = torch.randn(20, 19, device=DEV)
    grads = []
    for _ in range(2):
        B.grad = a.val.grad = None
        K.spmm(a, B, backend="triton").backward(G)
        grads.append(B.grad.clone())
    torch.testing.assert_close(grads[0], dense.t() @ G, **TOL)
    assert torch.equal(grads[0], grads[1]), "no atomics: the same bits every step"
    t = a.transposed()  # the backward built (and kept) the CSR of A^T
    torch.testing.assert_close(torch.sparse_csr_tensor(t.crow, t.col, t.val, (16, 20)).to_dense(), dense.t())
    if learned:
        torch.testing.assert_close(a.val.grad, dense_sddmm(dense != 0, G, B.detach()), **TOL)


def test_triton_sddmm_gather_scatter_add():
    crow, col, val, dense = on_dev(*random_csr(9, 11, seed=6))
    X, Y = torch.randn(9, 19, device=DEV), torch.randn(11, 19, device=DEV)
    torch.testing.assert_close(K.sddmm(crow, col, X, Y, val, backend="triton"), dense_sddmm(dense, X, Y), **TOL)
    torch.testing.assert_close(K.sddmm(crow, col, X, Y, backend="triton"),
                               dense_sddmm((dense != 0).float(), X, Y), **TOL)
    idx = torch.tensor([10, 0, 4, 4, 4], device=DEV)
    torch.testing.assert_close(K.gather(Y, idx, backend="triton"), Y[idx], rtol=0, atol=0)
    src = torch.randn(5, 19, device=DEV)
    ref = torch.zeros(12, 19, device=DEV).index_add(0, idx, src)
    torch.testing.assert_close(K.scatter_add(src, idx, 12, backend="triton"), ref, **TOL)


def test_triton_gradcheck():
    crow, col, val, _ = on_dev(*random_csr(4, 3, density=0.6, dtype=torch.float64, seed=1, hub=False))
    val = val.clone().requires_grad_()
    B = torch.randn(3, 2, dtype=torch.float64, device=DEV, requires_grad=True)
    X = torch.randn(4, 2, dtype=torch.float64, device=DEV, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, b: K.spmm(crow, col, v, b, backend="triton"), (val, B))
    a = K.CSR(crow, col, val.detach(), 3)  # the layers' form: constant values, cached transpose
    assert torch.autograd.gradcheck(lambda b: K.spmm(a, b, backend="triton"), (B,))
    assert torch.autograd.gradcheck(lambda x, y, v: K.sddmm(crow, col, x, y, v, backend="triton"), (X, B, val))
    idx = torch.tensor([2, 0, 2], device=DEV)
    assert torch.autograd.gradcheck(lambda b: K.gather(b, idx, backend="triton"), (B,))
    assert torch.autograd.gradcheck(lambda s: K.scatter_add(s, idx, 5, backend="triton"), (B,))


def test_bad_input_is_refused_before_any_launch():
    crow, col, val, _ = on_dev(*random_csr(5, 6, density=0.6))
    B = torch.randn(6, 4, device=DEV)
    bad_col = col.clone()
    bad_col[0] = 6
    with pytest.raises(ValueError, match="column index is outside"):
        K.spmm(crow, bad_col, val, B, backend="triton")
    with pytest.raises(ValueError, match="crow must rise"):
        K.spmm(crow.flip(0), col, val, B, backend="triton")
    with pytest.raises(ValueError, match="outside"):
        K.gather(B, torch.tensor([0, 6], device=DEV), backend="triton")
    with pytest.raises(ValueError, match="outside"):
        K.scatter_add(B, torch.tensor([0, 1, 2, 9, 1, 1], device=DEV), 6, backend="triton")


@devices.requires_cuda
def test_auto_chooses_per_direction_and_width_on_cuda():
    crow, col, val, dense = power_law_csr(300, 200, hub=7)
    a = K.CSR(crow, col, val, 200)
    for k in (16, 33):
        B = torch.randn(200, k, device=DEV, requires_grad=True)
        G = torch.randn(300, k, device=DEV)
        K.spmm(a, B).backward(G)
        torch.testing.assert_close(B.grad, dense.t() @ G, **TOL)
        torch.testing.assert_close(K.spmm(a, B.detach()), dense @ B.detach(), **TOL)
    choices = a.kernel_choices()
    assert set(choices) == {f"{d}/K={k}/float32" for d in ("forward", "backward") for k in (16, 33)}
    assert set(choices.values()) <= {"triton", "torch"}
    assert set(a.kernel_timings()) == set(choices)
    assert K.resolve_backend("auto", torch.device("cuda")) == "triton"


# Compiles every kernel ahead of time for sm_80 (A100) and sm_90 (H100, H200) GPUs (Triton ships
# ptxas), so the compiled-mode rules the interpreter does not enforce are checked without a GPU.
AOT_SCRIPT = r"""
import itertools

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from netsparse_torch.kernels import triton_kernels as tk

CONSTS = {"BLOCK_ROWS": 2, "BLOCK_K": 64, "BLOCK_NNZ": 16, "BLOCK_R": 16, "HAS_VAL": True, "HAS_PERM": True,
          "HAS_MULT": True, "BLOCK_H": 4, "BLOCK_C": 16}
INDEX = ("crow_ptr", "col_ptr", "idx_ptr", "seg_start_ptr", "seg_len_ptr", "seg_dest_ptr", "long_rows_ptr",
         "long_chunks_ptr", "perm_ptr")
KERNELS = (tk._spmm_segments_kernel, tk._spmm_fixup_kernel, tk._sddmm_kernel,
           tk._gather_kernel, tk._scatter_add_kernel, tk._edge_softmax_kernel, tk._edge_softmax_bwd_kernel,
           tk._spmm_heads_kernel, tk._sddmm_heads_kernel)
# sm_90 too for the SpMM, whose tiles and pipelining are what Hopper compiles differently.
JOBS = [(80, kern) for kern in KERNELS] + [(90, kern) for kern in KERNELS[:2]]
# Each value type and each index type once (fp32 with int32, fp64 with int64): every combination
# compiles natively in make gpu-check, and here each compile costs ~0.7 s of the suite.
for (arch, kern), (dt, ix) in itertools.product(JOBS, (("fp32", "i32"), ("fp64", "i64"))):
    fn = kern.fn if hasattr(kern, "configs") else kern  # an autotuner wraps the JITFunction
    sig, consts = {}, {}
    for name in fn.arg_names:
        if name in CONSTS:
            sig[name], consts[name] = "constexpr", CONSTS[name]
        elif name.endswith("_ptr"):
            sig[name] = ("*" + ix) if name in INDEX else "*" + dt
        else:
            sig[name] = "fp32" if name == "slope" else "i32"
    triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=GPUTarget("cuda", arch, 32))
    print(fn.__name__, arch, dt, ix, "compiled")

# What the runtime specialises (16-aligned pointers and strides, a unit K stride): the SpMM's B rows
# are read as 128-bit vectors on sm_90.
fn = tk._spmm_segments_kernel.fn
consts = {"BLOCK_ROWS": 8, "BLOCK_NNZ": 4, "BLOCK_K": 64, "stride_bk": 1}
sig = {n: "constexpr" if n in consts else ("*i32" if n in INDEX or n == "col_ptr" else "*fp32")
       if n.endswith("_ptr") else "i32" for n in fn.arg_names}
aligned = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(fn.arg_names)
           if n.endswith("_ptr") or n in ("stride_bn", "stride_on", "K")}
ptx = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=aligned),
                     target=GPUTarget("cuda", 90, 32)).asm["ptx"]
print("B loads vectorised:", "ld.global.v4" in ptx)
"""


def test_triton_kernels_compile_for_cuda(tmp_path):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    res = subprocess.run([sys.executable, "-c", AOT_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.count("compiled") == 2 * (9 + 2)  # (dtype, index) pairs x (sm_80 kernels + sm_90 SpMM)
    assert "B loads vectorised: True" in res.stdout
