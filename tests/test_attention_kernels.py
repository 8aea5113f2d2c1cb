"""The attention kernels (csrc/kernels_attention.*, their Triton twins and the torch reference) against
a loop-by-loop Python reference and hand-worked cases: edge_softmax (scores + per-row softmax),
spmm_heads, sddmm_heads, their gradients, and the keyed attention dropout mask."""

import math
import subprocess
import sys

import devices
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_keyed_dropout import GOLDEN, M64, mix64, splitmix64  # the feature-dropout test's reference hash

from netsparse_torch import kernels as K
from netsparse_torch.kernels import CSR
from netsparse_torch.native import _C

# Every (backend, device) that runs here (Triton on CUDA when a GPU is present, else interpreted on
# CPU), plus "auto" on CUDA, which is Triton for the attention kernels.
PAIRS = devices.backend_device_pairs() + [("auto", "cuda")] * devices.CUDA
# Gradcheck perturbs one element per launch: too slow through the Triton interpreter.
GRAD_PAIRS = [(b, d) for b, d in PAIRS if not (b == "triton" and d == "cpu")]
TOL = {"atol": 1e-5, "rtol": 1e-5}


def to(a: CSR, device) -> CSR:
    return CSR(a.crow.to(device), a.col.to(device), a.val.to(device), a.n_cols)


def pattern(rows: int, cols: int, density: float = 0.35, seed: int = 0, dtype=torch.float32) -> CSR:
    """Random pattern with multiplicities 1-3, an empty row every 5th row and one dense row."""
    gen = torch.Generator().manual_seed(seed)
    dense = (torch.rand(rows, cols, generator=gen) < density).to(dtype)
    dense[::5] = 0
    if rows > 1:
        dense[1] = (torch.rand(cols, generator=gen) < 0.9).to(dtype)
    dense *= torch.randint(1, 4, (rows, cols), generator=gen).to(dtype)
    s = dense.to_sparse_csr()
    return CSR(s.crow_indices(), s.col_indices(), s.values(), cols)


def leaky(v: float, slope: float) -> float:
    return v if v > 0 else v * slope


def ref_softmax(a: CSR, src, dst, slope):
    """The definition, one nonzero and head at a time."""
    H = src.shape[1]
    alpha = torch.zeros(a.nnz, H, dtype=torch.float64)
    for r in range(a.n_rows):
        ps = range(int(a.crow[r]), int(a.crow[r + 1]))
        for h in range(H):
            e = {p: leaky(float(src[a.col[p], h]) + float(dst[r, h]), slope) for p in ps}
            top = max(e.values(), default=0.0)
            w = {p: float(a.val[p]) * math.exp(e[p] - top) for p in ps}
            total = sum(w.values())
            for p in ps:
                alpha[p, h] = w[p] / total
    return alpha


def ref_spmm_heads(a: CSR, alpha, B):
    H = alpha.shape[1]
    C = B.shape[1] // H
    out = torch.zeros(a.n_rows, B.shape[1], dtype=torch.float64)
    for r in range(a.n_rows):
        for p in range(int(a.crow[r]), int(a.crow[r + 1])):
            for h in range(H):
                out[r, h * C:(h + 1) * C] += float(alpha[p, h]) * B[a.col[p], h * C:(h + 1) * C].double()
    return out


def test_hand_worked_softmax():
    # Row 0 reads nodes 0 and 1 (node 1 twice), row 1 reads node 1 only; one head, slope 0.2.
    # e(0,0) = 1 + 0 = 1, e(0,1) = LeakyReLU(-1 + 0) = -0.2; alpha = (e^1, 2 e^-0.2) / (e^1 + 2 e^-0.2).
    a = CSR(torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1]), torch.tensor([1.0, 2.0, 1.0]), 2)
    src, dst = torch.tensor([[1.0], [-1.0]]), torch.tensor([[0.0], [5.0]])
    z = math.exp(1) + 2 * math.exp(-0.2)
    want = torch.tensor([[math.exp(1) / z], [2 * math.exp(-0.2) / z], [1.0]])
    # Aggregation: row 0 = alpha00 * B[0] + alpha01 * B[1]; row 1 = B[1].
    B = torch.tensor([[1.0, 10.0], [3.0, 30.0]])
    summed = torch.stack([want[0, 0] * B[0] + want[1, 0] * B[1], B[1]])
    for backend, device in PAIRS:
        ad, on = to(a, device), lambda t, device=device: t.to(device)
        torch.testing.assert_close(K.edge_softmax(ad, on(src), on(dst), 0.2, backend=backend).cpu(), want, **TOL)
        torch.testing.assert_close(K.spmm_heads(ad, on(want), on(B), backend=backend).cpu(), summed, **TOL)


@pytest.mark.parametrize("backend,device", PAIRS)
@pytest.mark.parametrize("rows,cols,heads,c", [(1, 3, 1, 1), (11, 9, 2, 3), (23, 31, 8, 8), (7, 12, 3, 16)])
def test_kernels_match_the_reference(backend, device, rows, cols, heads, c):
    a = pattern(rows, cols, seed=rows + heads)
    ad = to(a, device)
    gen = torch.Generator().manual_seed(heads)
    src, dst = torch.randn(cols, heads, generator=gen), torch.randn(rows, heads, generator=gen)
    alpha = K.edge_softmax(ad, src.to(device), dst.to(device), 0.2, backend=backend).cpu()
    torch.testing.assert_close(alpha.double(), ref_softmax(a, src, dst, 0.2), **TOL)
    B = torch.randn(cols, heads * c, generator=gen)
    got = K.spmm_heads(ad, alpha.to(device), B.to(device), backend=backend).cpu()
    torch.testing.assert_close(got.double(), ref_spmm_heads(a, alpha, B), **TOL)
    X = torch.randn(rows, heads * c, generator=gen)
    rows_of = torch.repeat_interleave(torch.arange(rows), a.crow.diff())
    want = (X[rows_of] * B[a.col]).view(a.nnz, heads, c).sum(2)
    torch.testing.assert_close(K.sddmm_heads(ad, X.to(device), B.to(device), heads, backend=backend).cpu(), want,
                               **TOL)


@pytest.mark.parametrize("backend,device", PAIRS)
def test_multiplicity_is_a_duplicated_edge(backend, device):
    # The same neighbourhoods with every duplicate edge stored twice (value 1 each): the two copies'
    # attention adds up to that of the single nonzero of value 2, and the aggregation is the same.
    a = pattern(9, 7, seed=4)
    reps = a.val.long()
    rows_of = torch.repeat_interleave(torch.arange(a.n_rows), a.crow.diff())
    expanded = CSR(torch.cat([torch.zeros(1, dtype=torch.long), torch.zeros(a.n_rows, dtype=torch.long)
                              .index_add(0, rows_of, reps).cumsum(0)]), a.col.repeat_interleave(reps),
                   torch.ones(int(reps.sum())), a.n_cols)
    src, dst, B = torch.randn(7, 2, device=device), torch.randn(9, 2, device=device), torch.randn(7, 6, device=device)
    a, expanded = to(a, device), to(expanded, device)
    owner = torch.arange(a.nnz, device=device).repeat_interleave(reps.to(device))
    alpha = K.edge_softmax(a, src, dst, 0.2, backend=backend)
    alpha_x = K.edge_softmax(expanded, src, dst, 0.2, backend=backend)
    torch.testing.assert_close(torch.zeros_like(alpha).index_add(0, owner, alpha_x), alpha, **TOL)
    torch.testing.assert_close(K.spmm_heads(expanded, alpha_x, B, backend=backend),
                               K.spmm_heads(a, alpha, B, backend=backend), **TOL)


@pytest.mark.parametrize("backend,device", GRAD_PAIRS)
def test_gradcheck(backend, device):
    a = to(pattern(8, 6, seed=2, dtype=torch.float64), device)
    gen = torch.Generator().manual_seed(0)

    def leaf(*shape, rand=torch.randn):
        return rand(*shape, dtype=torch.float64, generator=gen).to(device).requires_grad_()

    src, dst = leaf(6, 3), leaf(8, 3)
    assert torch.autograd.gradcheck(lambda s, d: K.edge_softmax(a, s, d, 0.2, backend=backend), (src, dst))
    alpha, B = leaf(a.nnz, 3, rand=torch.rand), leaf(6, 6)
    assert torch.autograd.gradcheck(lambda w, b: K.spmm_heads(a, w, b, backend=backend), (alpha, B))
    # Both together, through a column slice of one gathered matrix, as the GAT layer uses them.
    g = leaf(6, 9)

    def layer(g, d):
        return K.spmm_heads(a, K.edge_softmax(a, g[:, 6:], d, 0.2, backend=backend), g[:, :6], backend=backend)

    assert torch.autograd.gradcheck(layer, (g, dst))


@devices.requires_triton
def test_triton_gradients_match_torch():
    # gradcheck through the Triton interpreter takes minutes (one launch per perturbed element): the
    # Triton backward is compared with autograd through the torch backend (itself gradchecked above).
    device = devices.TRITON_DEVICE
    a = to(pattern(8, 6, seed=2, dtype=torch.float64), device)
    gen = torch.Generator().manual_seed(0)
    g = torch.randn(6, 9, dtype=torch.float64, generator=gen).to(device)
    dst = torch.randn(8, 3, dtype=torch.float64, generator=gen).to(device)
    seed = torch.randn(8, 6, dtype=torch.float64, generator=gen).to(device)
    grads = {}
    for backend in ("torch", "triton"):
        gi, di = g.clone().requires_grad_(), dst.clone().requires_grad_()
        alpha = K.edge_softmax(a, gi[:, 6:], di, 0.2, backend=backend)
        (K.spmm_heads(a, alpha, gi[:, :6], backend=backend) * seed).sum().backward()
        grads[backend] = (gi.grad, di.grad)
    for got, want in zip(grads["triton"], grads["torch"], strict=True):
        torch.testing.assert_close(got, want, **TOL)


@pytest.mark.parametrize("backend,device", PAIRS)
def test_bad_inputs_are_value_errors(backend, device):
    a = to(pattern(4, 5), device)
    with pytest.raises(ValueError, match="src must be"):
        K.edge_softmax(a, torch.randn(4, 2, device=device), torch.randn(4, 2, device=device), backend=backend)
    with pytest.raises(ValueError, match="for H=2 heads"):
        K.spmm_heads(a, torch.rand(a.nnz, 2, device=device), torch.randn(5, 3, device=device), backend=backend)
    with pytest.raises(ValueError, match="expected torch.float32"):
        K.sddmm_heads(a, torch.randn(4, 2, device=device), torch.randn(5, 2, dtype=torch.float64, device=device), 1,
                      backend=backend)
    with pytest.raises(ValueError, match="column index is outside"):
        CSR(a.crow, a.col + 10, a.val, 5)
    if device == "cpu":
        with pytest.raises(ValueError, match="outside"):
            _C.edge_softmax(a.crow, a.col + 10, None, torch.randn(5, 1), torch.randn(4, 1), 0.2)


@devices.requires_cuda
def test_operands_off_the_pattern_device_are_value_errors():
    a = pattern(4, 5)  # on CPU; the operands on the GPU
    src, dst = torch.randn(5, 2, device="cuda"), torch.randn(4, 2, device="cuda")
    with pytest.raises(ValueError, match="pattern is on cpu but an operand is on cuda"):
        K.edge_softmax(a, src, dst)
    with pytest.raises(ValueError, match="pattern is on cpu"):
        K.spmm_heads(a, torch.rand(a.nnz, 2, device="cuda"), torch.randn(5, 4, device="cuda"))


# -- attention dropout -----------------------------------------------------------------------------
DOMAIN = 0x617474656E74696F  # kAttentionDomain in csrc/keyed_dropout.h


def ref_edge_mask(edges, heads, p, seed, epoch, layer):
    """docs/invariance.md, one (source, target, head) at a time."""
    stream = splitmix64(splitmix64(splitmix64(seed & M64) ^ (epoch & M64)) ^ (layer & M64))
    stream = splitmix64(stream ^ DOMAIN)
    out = []
    for source, target in edges:
        key = splitmix64(splitmix64(stream ^ (source & M64)) ^ (target & M64))
        u = [(mix64((key + (h + 1) * GOLDEN) & M64) >> 11) * 2.0**-53 for h in range(heads)]
        out.append([1.0 / (1.0 - p) if uh >= p else 0.0 for uh in u])
    return out


def edge_mask(a: CSR, row_ids, col_ids, heads, p, seed=0, epoch=0, layer=0):
    like = torch.empty(a.nnz, heads, dtype=torch.float64)
    return _C.keyed_edge_dropout_mask(like, a.crow, a.col, torch.as_tensor(row_ids), torch.as_tensor(col_ids),
                                      p, seed, epoch, layer)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(-2**63, 2**63 - 1), epoch=st.integers(0, 10**6), layer=st.integers(-1, 4),
       heads=st.integers(1, 8), p=st.floats(0.0, 0.95), shift=st.integers(0, 2**40))
def test_edge_mask_matches_reference(seed, epoch, layer, heads, p, shift):
    a = pattern(6, 5, seed=heads)
    row_ids, col_ids = torch.arange(6) * 7 + shift, torch.arange(5) * 3 + 2 * shift
    rows_of = torch.repeat_interleave(torch.arange(6), a.crow.diff())
    edges = [(int(col_ids[c]), int(row_ids[r])) for r, c in zip(rows_of, a.col, strict=True)]
    got = edge_mask(a, row_ids, col_ids, heads, p, seed, epoch, layer)
    assert got.tolist() == ref_edge_mask(edges, heads, p, seed, epoch, layer)


def test_edge_mask_depends_only_on_the_edge():
    # The same edges in another column layout (as another strategy's gather lays them out) and row
    # order get the same masks; the reverse edge and other layers get independent ones.
    a = pattern(30, 30, density=0.5, seed=1)
    ids = torch.arange(30) * 11 + 5
    mask = edge_mask(a, ids, ids, 4, 0.5, layer=2)
    perm = torch.randperm(30, generator=torch.Generator().manual_seed(0))  # column j moves to inv[j]
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(30)
    moved = CSR(a.crow, inv[a.col], a.val, 30)
    torch.testing.assert_close(edge_mask(moved, ids, ids[perm], 4, 0.5, layer=2), mask)
    dense = torch.zeros(30, 30, 4, dtype=torch.float64)
    rows_of = torch.repeat_interleave(torch.arange(30), a.crow.diff())
    dense[rows_of, a.col] = mask
    both = (a.to_torch().to_dense() != 0) & (a.to_torch().to_dense().t() != 0)
    agree = (dense == dense.transpose(0, 1))[both].double().mean().item()
    assert 0.4 < agree < 0.6  # a reverse edge is another edge
    other = edge_mask(a, ids, ids, 4, 0.5, layer=3)
    assert 0.4 < (other == mask).double().mean().item() < 0.6


def test_edge_mask_keep_rate():
    a = pattern(200, 200, density=0.5, seed=3)
    for p in (0.1, 0.6):
        kept = (edge_mask(a, torch.arange(200), torch.arange(200), 8, p) != 0).double()
        sigma = math.sqrt(p * (1 - p) / kept.numel())
        assert abs(kept.mean().item() - (1 - p)) < 5 * sigma
        assert (kept.mean(0) - (1 - p)).abs().max().item() < 5 * math.sqrt(p * (1 - p) / a.nnz)


def test_the_torch_backend_puts_no_beta_warning_on_the_console():
    """torch warns once per process, so this runs in a fresh one: the torch backend's edge softmax and SpMM,
    and CSR.to_torch, leave stderr empty with every warning shown."""
    code = ("import torch\nfrom netsparse_torch import kernels as K\n"
            "a = K.CSR(torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1]), torch.ones(3), 2)\n"
            "x = torch.randn(2, 4)\nK.spmm(a, x, backend='torch'); a.to_torch()\n"
            "K.edge_softmax(a, torch.randn(2, 1), torch.randn(2, 1), backend='torch')\n")
    done = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-3000:]
