"""The Triton kernels against torch.sparse.mm and dense math: on CUDA when present, else in the Triton
interpreter (TRITON_INTERPRET=1, set here before the kernels module is imported) on tiny inputs."""

import os
import sys

import pytest
import torch

CUDA = torch.cuda.is_available()
if not CUDA and "netsparse_torch.kernels.triton_kernels" not in sys.modules:
    os.environ["TRITON_INTERPRET"] = "1"  # read by @triton.jit when the kernels module is imported

triton = pytest.importorskip("triton", reason="triton is not installed (pip install triton)")

from test_kernels import TOL, dense_sddmm, random_csr  # noqa: E402

from netsparse_torch import kernels as K  # noqa: E402
from netsparse_torch.kernels import triton_kernels as tk  # noqa: E402

if not CUDA and not tk.INTERPRETED:
    pytest.skip("triton_kernels was imported before TRITON_INTERPRET=1 could be set", allow_module_level=True)

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks")]
DEV = torch.device("cuda" if CUDA else "cpu")


def on_dev(*ts):
    return [t.to(DEV) for t in ts]


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


def test_triton_spmm_non_contiguous_b_and_transposed_product():
    crow, col, val, dense = on_dev(*random_csr(10, 14, seed=4))
    for B in (torch.randn(21, 14, device=DEV).t(), torch.randn(14, 30, device=DEV)[:, 3:23:2]):
        assert not B.is_contiguous()
        torch.testing.assert_close(tk.spmm(crow, col, val, B), dense @ B, **TOL)
    G = torch.randn(10, 18, device=DEV)[:, 1:18]
    torch.testing.assert_close(tk.spmm_t(crow, col, val, G, 14), dense.t() @ G, **TOL)


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
    assert torch.autograd.gradcheck(lambda x, y, v: K.sddmm(crow, col, x, y, v, backend="triton"), (X, B, val))
    idx = torch.tensor([2, 0, 2], device=DEV)
    assert torch.autograd.gradcheck(lambda b: K.gather(b, idx, backend="triton"), (B,))
    assert torch.autograd.gradcheck(lambda s: K.scatter_add(s, idx, 5, backend="triton"), (B,))


def test_auto_backend_picks_triton_only_on_cuda():
    assert K.resolve_backend("auto", torch.device("cpu")) == "cpp"
    if CUDA:
        assert K.resolve_backend("auto", torch.device("cuda")) == "triton"


# Compiles every kernel ahead of time for an sm_80 GPU (Triton ships ptxas), so the compiled-mode
# rules the interpreter does not enforce are checked on a machine without a GPU.
AOT_SCRIPT = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from netsparse_torch.kernels import triton_kernels as tk

CONSTS = {"BLOCK_ROWS": 2, "BLOCK_K": 64, "BLOCK_NNZ": 16, "BLOCK_R": 16, "HAS_VAL": True}
for dt in ("fp32", "fp64"):
    for kern in (tk._spmm_kernel, tk._spmm_t_kernel, tk._sddmm_kernel, tk._gather_kernel, tk._scatter_add_kernel):
        fn = kern.fn
        sig, consts = {}, {}
        for name in fn.arg_names:
            if name in CONSTS:
                sig[name], consts[name] = "constexpr", CONSTS[name]
            elif name.endswith("_ptr"):
                sig[name] = "*i64" if name in ("crow_ptr", "col_ptr", "idx_ptr") else "*" + dt
            else:
                sig[name] = "i32"
        triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=GPUTarget("cuda", 80, 32))
        print(fn.__name__, dt, "compiled")
"""


def test_triton_kernels_compile_for_cuda(tmp_path):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    res = subprocess.run([sys.executable, "-c", AOT_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.count("compiled") == 10
