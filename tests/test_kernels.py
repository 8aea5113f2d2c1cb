"""The C++ kernels (every ISA build this CPU runs) and the dispatch against torch.sparse.mm and dense math, on
every device here (tests/devices.py), and the CPU twin of backend="auto"'s kernel choice on CUDA."""

from functools import partial

import devices
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from netsparse_torch import kernels as K
from netsparse_torch.kernels import _autograd, _choice
from netsparse_torch.native import _C

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks")]

ISAS = [isa for isa in ("generic", "avx2", "avx512") if ("generic", "avx2", "avx512").index(isa)
        <= ("generic", "avx2", "avx512").index(_C.cpu_isa())]
TOL = {"atol": 1e-5, "rtol": 1e-5}
# Every (backend, device) that runs here except Triton (tests/test_kernels_triton.py covers it), plus
# "auto" on CUDA: the per-CSR choice between Triton and cuSPARSE.
PAIRS = [(b, d) for b, d in devices.backend_device_pairs() if b != "triton"] + [("auto", "cuda")] * devices.CUDA


def on(device, *ts):
    return [t.to(device) for t in ts]


def random_csr(n_rows: int, n_cols: int, density: float = 0.3, dtype=torch.float32, seed: int = 0,
               hub: bool = True):
    """Random CSR with an empty row every 4th row and (``hub``) one dense row of 40+ nonzeros,
    longer than the kernels' unrolling and prefetch distance. Returns (crow, col, val, dense)."""
    gen = torch.Generator().manual_seed(seed)
    dense = torch.rand(n_rows, n_cols, generator=gen) < density
    dense[::4] = False
    if hub and n_rows > 1:
        dense[1] = torch.rand(n_cols, generator=gen) < 0.9
    dense = dense.to(dtype) * (torch.rand(n_rows, n_cols, generator=gen, dtype=dtype) * 2 - 1)
    s = dense.to_sparse_csr()
    return s.crow_indices().contiguous(), s.col_indices().contiguous(), s.values().contiguous(), dense


# (rows, cols, K): K = 1, K below one vector, K not a multiple of any tile, K = one full tile + rest.
SHAPES = [(1, 9, 5), (13, 50, 1), (13, 50, 3), (29, 61, 37), (17, 64, 133), (0, 5, 4), (6, 0, 3)]


def references(crow, col, val, dense, B):
    ref = dense @ B
    if dense.numel():
        sparse = torch.sparse.mm(torch.sparse_csr_tensor(crow, col, val, dense.shape), B)
        torch.testing.assert_close(sparse, ref, **TOL)
    return ref


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rows,cols,k", SHAPES)
def test_cpp_spmm_matches_dense_and_torch_sparse(isa, dtype, rows, cols, k):
    crow, col, val, dense = random_csr(rows, cols, dtype=dtype, seed=rows * 100 + k)
    B = torch.randn(cols, k, dtype=dtype)
    out = _C.spmm(crow, col, val, B, isa)
    assert out.shape == (rows, k) and out.dtype == dtype
    torch.testing.assert_close(out, references(crow, col, val, dense, B), **TOL)


@pytest.mark.parametrize("isa", ISAS)
def test_cpp_spmm_reads_non_contiguous_b(isa):
    crow, col, val, dense = random_csr(23, 40, seed=3)
    wide = torch.randn(40, 150)
    # row-strided, column-strided, transposed, one-column slices (K = 1 keeps the parent's row stride)
    for B in (wide[:, 7:77], wide[:, ::3], torch.randn(70, 40).t(), wide[:, 5:6], wide[:, 9:10:2]):
        assert not B.is_contiguous()
        torch.testing.assert_close(_C.spmm(crow, col, val, B, isa), dense @ B, **TOL)


def test_empty_rows_are_zero_even_in_uninitialised_memory():
    # The output is allocated without a zero fill: an empty row must still come out exactly 0.
    crow, col, val, dense = random_csr(40, 30, seed=5)
    for _ in range(3):
        out = _C.spmm(crow, col, val, torch.randn(30, 70))
        assert torch.all(out[::4] == 0)


def test_cpp_spmm_thread_count_does_not_change_bits():
    crow, col, val, _ = random_csr(300, 200, density=0.05, seed=7)
    B = torch.randn(200, 48)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _C.spmm(crow, col, val, B)
        torch.set_num_threads(2)
        two = _C.spmm(crow, col, val, B)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)


def test_isa_cap_from_environment(monkeypatch):
    monkeypatch.setenv("NETSPARSE_CPU_ISA", "generic")
    assert K.cpu_isa() == "generic"
    monkeypatch.setenv("NETSPARSE_CPU_ISA", "bogus")
    with pytest.raises(ValueError, match="unknown isa"):
        K.cpu_isa()


@pytest.mark.parametrize("backend,device", PAIRS + [("auto", "cpu")])
@pytest.mark.parametrize("rows,cols,k", [(1, 9, 5), (13, 50, 1), (29, 61, 37)])
def test_dispatch_spmm_both_forms(backend, device, rows, cols, k):
    crow, col, val, dense = random_csr(rows, cols, seed=k)
    B = torch.randn(cols, k)
    ref = references(crow, col, val, dense, B).to(device)
    crow, col, val, B = on(device, crow, col, val, B)
    torch.testing.assert_close(K.spmm(crow, col, val, B, backend=backend), ref, **TOL)
    torch.testing.assert_close(K.spmm(K.CSR(crow, col, val, cols), B, backend=backend), ref, **TOL)


@pytest.mark.parametrize("backend,device", PAIRS)
def test_gradcheck_spmm(backend, device):
    crow, col, val, _ = on(device, *random_csr(6, 5, density=0.5, dtype=torch.float64, seed=1))
    val = val.clone().requires_grad_()
    B = torch.randn(5, 3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, b: K.spmm(crow, col, v, b, backend=backend), (val, B))
    a = K.CSR(crow, col, val.detach(), 5)  # the layers' form: constant values, cached transpose
    assert torch.autograd.gradcheck(lambda b: K.spmm(a, b, backend=backend), (B,))


@pytest.mark.parametrize("device", devices.DEVICES)
def test_cached_transpose_backward_is_a_transpose_times_g(device):
    crow, col, val, dense = on(device, *random_csr(30, 20, seed=9))
    a = K.CSR(crow, col, val, 20)
    B = torch.randn(20, 8, device=device, requires_grad=True)
    G = torch.randn(30, 8, device=device)
    K.spmm(a, B, backend="cpp" if device == "cpu" else "auto").backward(G)
    torch.testing.assert_close(B.grad, dense.t() @ G, **TOL)
    for t_crow, t_col, t_val in (a.transpose_parts(), (a.transposed().crow, a.transposed().col, a.transposed().val)):
        torch.testing.assert_close(torch.sparse_csr_tensor(t_crow, t_col, t_val, (20, 30)).to_dense(), dense.t())


@pytest.mark.parametrize("device", devices.DEVICES)
@pytest.mark.parametrize("at", [0, 1, 7, 20])
def test_split_columns_are_the_two_column_blocks(device, at):
    crow, col, val, dense = on(device, *random_csr(30, 20, seed=at))
    first, second = K.CSR(crow, col, val, 20).split_columns(at)
    assert (first.n_cols, second.n_cols) == (at, 20 - at)
    for part, block in ((first, dense[:, :at]), (second, dense[:, at:])):
        got = torch.sparse_csr_tensor(part.crow, part.col, part.val, (30, part.n_cols)).to_dense()
        torch.testing.assert_close(got, block, rtol=0, atol=0)


@pytest.mark.parametrize("backend,device", PAIRS)
def test_t_matmul_is_the_transposed_product(backend, device):
    crow, col, val, dense = on(device, *random_csr(30, 20, seed=4))
    G = torch.randn(30, 8, device=device)
    torch.testing.assert_close(K.CSR(crow, col, val, 20).t_matmul(G, backend), dense.t() @ G, **TOL)

def dense_sddmm(dense, X, Y):
    return (X @ Y.t())[dense != 0] * dense[dense != 0]


@pytest.mark.parametrize("backend,device", PAIRS)
@pytest.mark.parametrize("k", [1, 7, 40])
def test_sddmm_matches_dense(backend, device, k):
    crow, col, val, dense = on(device, *random_csr(19, 23, seed=k))
    X, Y = torch.randn(19, k, device=device), torch.randn(23, k, device=device)
    torch.testing.assert_close(K.sddmm(crow, col, X, Y, val, backend=backend), dense_sddmm(dense, X, Y), **TOL)
    ones = (dense != 0).to(X.dtype)
    torch.testing.assert_close(K.sddmm(crow, col, X, Y[:, :], backend=backend), dense_sddmm(ones, X, Y), **TOL)
    Xt = torch.randn(k, 19, device=device).t()  # non-contiguous X
    torch.testing.assert_close(K.sddmm(crow, col, Xt, Y, val, backend=backend), dense_sddmm(dense, Xt, Y), **TOL)


@pytest.mark.parametrize("backend,device", PAIRS)
def test_gradcheck_sddmm_gather_scatter(backend, device):
    crow, col, val, _ = on(device, *random_csr(5, 4, density=0.6, dtype=torch.float64, seed=2))
    val = val.clone().requires_grad_()
    X = torch.randn(5, 3, dtype=torch.float64, device=device, requires_grad=True)
    Y = torch.randn(4, 3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, y, v: K.sddmm(crow, col, x, y, v, backend=backend), (X, Y, val))
    idx = torch.tensor([3, 0, 3, 1, 3], device=device)
    assert torch.autograd.gradcheck(lambda b: K.gather(b, idx, backend=backend), (Y,))
    assert torch.autograd.gradcheck(lambda s: K.scatter_add(s, idx, 6, backend=backend), (X,))


@pytest.mark.parametrize("backend,device", PAIRS)
def test_gather_scatter_add_match_index_ops(backend, device):
    B = torch.randn(50, 33, device=device)
    idx = torch.tensor([49, 0, 7, 7, 7, 12, 0], device=device)
    torch.testing.assert_close(K.gather(B, idx, backend=backend), B[idx], rtol=0, atol=0)
    torch.testing.assert_close(K.gather(B[:, 1:20], idx, backend=backend), B[idx, 1:20], rtol=0, atol=0)
    torch.testing.assert_close(K.gather(B[:, 4:5], idx, backend=backend), B[idx, 4:5], rtol=0, atol=0)
    src = torch.randn(7, 33, device=device)
    expected = torch.zeros(60, 33, device=device)
    for i, r in enumerate(idx.tolist()):
        expected[r] += src[i]
    torch.testing.assert_close(K.scatter_add(src, idx, 60, backend=backend), expected, **TOL)
    assert K.gather(B, torch.tensor([], dtype=torch.long, device=device), backend=backend).shape == (0, 33)


def test_bad_input_gets_one_clear_error():
    crow, col, val, _ = random_csr(5, 6, density=0.6)
    B = torch.randn(6, 4)
    bad_col = col.clone()
    bad_col[0] = 6
    with pytest.raises(ValueError, match="column index is outside"):
        _C.spmm(crow, bad_col, val, B)
    with pytest.raises(ValueError, match="column index is outside"):
        K.spmm(crow, bad_col, val, B, backend="torch")
    with pytest.raises(ValueError, match="crow"):
        _C.spmm(crow.flip(0), col, val, B)
    with pytest.raises(ValueError, match=r"B must be \(6, K\)"):
        K.spmm(K.CSR(crow, col, val, 6), torch.randn(5, 4))
    with pytest.raises(ValueError, match="unknown kernel backend"):
        K.spmm(crow, col, val, B, backend="cuda")
    with pytest.raises(ValueError, match="unknown isa"):
        _C.spmm(crow, col, val, B, "sse9")
    with pytest.raises(ValueError, match="dtype"):
        _C.spmm(crow, col, val.double(), B)
    with pytest.raises(ValueError, match="outside"):
        K.gather(B, torch.tensor([0, 6]), backend="cpp")
    with pytest.raises(ValueError, match="outside"):
        _C.scatter_add_rows(B, torch.tensor([0, 1, 2, 9, 1, 1]), 6)
    with pytest.raises(ValueError, match="one row per CSR row"):
        K.sddmm(crow, col, torch.randn(4, 4), B)


def test_backend_errors_name_the_problem(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    crow, col, val, _ = random_csr(4, 4)
    if K._ops.triton_installed():
        with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
            K.spmm(crow, col, val, torch.randn(4, 2), backend="triton")
    with pytest.raises(ValueError, match="runs on CPU tensors"):
        K.resolve_backend("cpp", torch.device("meta"))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(0, 40), cols=st.integers(1, 40), k=st.integers(1, 200), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**16), double=st.booleans(), isa=st.sampled_from(ISAS))
def test_cpp_spmm_property_matches_dense(rows, cols, k, density, seed, double, isa):
    dtype = torch.float64 if double else torch.float32
    crow, col, val, dense = random_csr(rows, cols, density=density, dtype=dtype, seed=seed)
    B = torch.randn(cols, k, dtype=dtype, generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(_C.spmm(crow, col, val, B, isa), dense @ B, **TOL)


def test_operands_on_another_device_are_refused_before_any_launch():
    # A kernel handed a pointer from another device reads garbage or faults; "meta" stands in for a GPU.
    crow, col, val, _ = random_csr(5, 6, density=0.6)
    X, Y = torch.randn(5, 3, device="meta"), torch.randn(6, 3, device="meta")
    with pytest.raises(ValueError, match="pattern is on cpu but an operand is on meta"):
        K.sddmm(crow, col, X, Y)
    a = K.CSR(crow, col, val, 6)
    with pytest.raises(ValueError, match="pattern is on cpu"):
        K.edge_softmax(a, torch.randn(6, 2, device="meta"), torch.randn(5, 2, device="meta"))
    with pytest.raises(ValueError, match="idx is on meta"):
        K.gather(torch.randn(6, 3), torch.tensor([0, 1], device="meta"))
    with pytest.raises(ValueError, match="one device"):
        K.CSR(crow, col, val.to("meta"), 6)


# -- backend="auto" on CUDA: the choice between Triton and cuSPARSE, with fake timers (the CPU twin) --

def fake_timer(ms: dict[str, float], calls: list[str]):
    """Seconds per candidate name from ``ms``, read off the candidate (a partial(run, name)) without
    running it; ``calls`` logs what was timed."""
    def timer(fn):
        calls.append(fn.args[0])
        return ms[fn.args[0]] / 1e3
    return timer


def test_choose_fastest_takes_the_least_time_and_the_first_on_a_tie():
    calls = []
    ms = {"a": 3.0, "b": 1.0, "c": 1.0}
    best, seconds = _choice.choose_fastest({name: partial(print, name) for name in ms}, fake_timer(ms, calls))
    assert best == "b" and calls == ["a", "b", "c"]
    assert seconds == pytest.approx({name: t / 1e3 for name, t in ms.items()})
    with pytest.raises(ValueError, match="no candidates"):
        _choice.choose_fastest({}, fake_timer(ms, calls))


def test_auto_on_cpu_is_the_cpp_kernel_and_times_nothing():
    # On CPU "auto" is the C++ kernel: no timing, no choices recorded.
    crow, col, val, dense = random_csr(8, 6, seed=1)
    a = K.CSR(crow, col, val, 6)
    B = torch.randn(6, 4, requires_grad=True)
    K.spmm(a, B).sum().backward()
    assert a.kernel_choices() == {} and K.resolve_backend("auto", torch.device("cpu")) == "cpp"


def test_auto_choice_is_timed_once_per_direction_width_and_dtype(monkeypatch):
    calls = []
    monkeypatch.setattr(_choice, "TIMER", fake_timer({"triton": 2.0, "torch": 5.0}, calls))
    monkeypatch.delenv(_choice.FORCE_ENV, raising=False)
    crow, col, val, _ = random_csr(8, 6, seed=1)
    a = K.CSR(crow, col, val, 6)
    before = len(K.recorded_choices())
    for k in (4, 4, 7):
        assert _choice.auto_spmm_backend(a, "forward", torch.randn(6, k), lambda b: None) == "triton"
    assert _choice.auto_spmm_backend(a, "backward", torch.randn(8, 4, dtype=torch.float64), lambda b: None) == "triton"
    assert calls == ["triton", "torch"] * 3, "one timing per new key, none for a cached one"
    assert a.kernel_choices() == {"forward/K=4/float32": "triton", "forward/K=7/float32": "triton",
                                  "backward/K=4/float64": "triton"}
    assert a.kernel_timings()["forward/K=4/float32"] == pytest.approx({"triton": 2.0, "torch": 5.0})
    new = K.recorded_choices()[before:]
    assert [r["key"] for r in new] == list(a.kernel_choices())
    assert new[0]["rows"] == 8 and new[0]["nnz"] == a.nnz and new[0]["ms"]["torch"] == pytest.approx(5.0)
    assert not new[0]["forced"]


def test_auto_choice_can_be_forced_by_environment(monkeypatch):
    calls = []
    monkeypatch.setattr(_choice, "TIMER", fake_timer({"triton": 1.0, "torch": 2.0}, calls))
    crow, col, val, _ = random_csr(8, 6, seed=1)
    a = K.CSR(crow, col, val, 6)
    monkeypatch.setenv(_choice.FORCE_ENV, "torch")
    assert _choice.auto_spmm_backend(a, "forward", torch.randn(6, 4), lambda b: None) == "torch"
    assert calls == [] and a.kernel_choices() == {"forward/K=4/float32": "torch"}
    assert K.recorded_choices()[-1]["forced"] and K.recorded_choices()[-1]["ms"] == {}
    assert a.kernel_timings() == {"forward/K=4/float32": {}}
    monkeypatch.setenv(_choice.FORCE_ENV, "cusparse")
    with pytest.raises(ValueError, match="NETSPARSE_CUDA_SPMM='cusparse'"):
        _choice.auto_spmm_backend(a, "forward", torch.randn(6, 4), lambda b: None)


@pytest.mark.parametrize("learned", [False, True])
def test_mixed_backend_spmm_is_the_cuda_auto_path_on_cpu(monkeypatch, learned):
    # What "auto" runs on CUDA when cuSPARSE wins the forward and the backward is chosen on first use:
    # the same autograd function and the torch products on A and on the cached A^T, here on CPU.
    calls = []
    monkeypatch.setattr(_choice, "TIMER", fake_timer({"triton": 9.0, "torch": 1.0}, calls))
    monkeypatch.delenv(_choice.FORCE_ENV, raising=False)
    crow, col, val, dense = random_csr(12, 9, seed=3, dtype=torch.float64)
    a = K.CSR(crow, col, val.clone().requires_grad_(learned), 9)
    B = torch.randn(9, 5, dtype=torch.float64, requires_grad=True)
    G = torch.randn(12, 5, dtype=torch.float64)
    out = _autograd.SpMM.apply(a, a.val, B, "torch", "auto")
    torch.testing.assert_close(out, dense @ B.detach(), **TOL)
    out.backward(G)
    torch.testing.assert_close(B.grad, dense.t() @ G, **TOL)
    assert a.kernel_choices() == {"backward/K=5/float64": "torch"} and calls == ["triton", "torch"]
    if learned:
        torch.testing.assert_close(a.val.grad, dense_sddmm(dense != 0, G, B.detach()), **TOL)
    assert torch.autograd.gradcheck(lambda b: _autograd.SpMM.apply(a, a.val.detach(), b, "torch", "auto"), (B,))
