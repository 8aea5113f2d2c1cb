"""Per-backend forward products without autograd: the C++ kernels (``cpp``) and Triton (``triton``).

:mod:`netsparse_torch.kernels` validates the inputs and wraps these in autograd functions; the
``torch`` reference backend does not come through here (plain differentiable torch ops).
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import torch

from netsparse_torch.native import _C


def triton_installed() -> bool:
    """Whether the ``triton`` package can be imported (it is optional)."""
    return importlib.util.find_spec("triton") is not None


def triton_module(device: torch.device):
    """The Triton kernels module, or a ValueError saying why it cannot run on ``device``."""
    if not triton_installed():
        raise ValueError("backend='triton' needs the triton package: pip install triton")
    if device.type != "cuda" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        raise ValueError("backend='triton' on CPU tensors runs only in the Triton interpreter: set "
                         "TRITON_INTERPRET=1 before netsparse_torch.kernels.triton_kernels is imported")
    from netsparse_torch.kernels import triton_kernels

    if device.type != "cuda" and not triton_kernels.INTERPRETED:
        raise ValueError("netsparse_torch.kernels.triton_kernels was imported before TRITON_INTERPRET=1 was "
                         "set, so its kernels cannot run on CPU tensors in this process")
    return triton_kernels


def csr_tensor(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    """A ``torch.sparse_csr_tensor`` of a pattern that :class:`~netsparse_torch.kernels.CSR` already checked.
    torch would warn once per process that its CSR support is in beta and that its invariant checks are
    off unless chosen: both are choices made here, not the user's, so a run's console does not show them."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)
        return torch.sparse_csr_tensor(crow, col, val, shape, check_invariants=False)


def spmm(backend: str, crow, col, val, B: torch.Tensor, plan=None) -> torch.Tensor:
    """``A x B`` (``plan``: the Triton program layout of the pattern, built per call when None)."""
    if backend == "cpp":
        return _C.spmm(crow, col, val, B)
    if backend == "torch":
        return torch.sparse.mm(csr_tensor(crow, col, val, (crow.numel() - 1, B.size(0))), B)
    return triton_module(B.device).spmm(crow, col, val, B, plan)


def spmm_csr(backend: str, a, val: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``A x B`` for a :class:`netsparse_torch.kernels.CSR` ``a`` with values ``val``, each backend with
    its own best indices (Triton: the cached plan; cuSPARSE: :meth:`CSR.cusparse_indices`)."""
    if backend == "torch":
        crow, col = a.cusparse_indices()
        return spmm(backend, crow, col, val, B)
    return spmm(backend, a.crow, a.col, val, B, a.triton_plan() if backend == "triton" else None)


def spmm_t_csr(backend: str, a, val: torch.Tensor, G: torch.Tensor, constant: bool) -> torch.Tensor:
    """``A^T x G``: every backend runs its forward product on the CSR of ``A^T``, never atomics. With
    ``constant`` values that is ``a``'s cached transpose; values that change every step (learned, they
    require grad) are read into the cached transposed pattern through its permutation (C++: transposed
    here)."""
    if backend == "cpp":
        t_crow, t_col, t_val = a.transpose_parts() if constant else _C.csr_transpose(a.crow, a.col, val, a.n_cols)
        return _C.spmm(t_crow, t_col, t_val.to(G.dtype), G)
    at = a.transposed()
    t_val = at.val if constant else val.detach()[a.transpose_perm()[2]]
    return spmm_csr(backend, at, t_val.to(G.dtype), G)


def spmm_t(backend: str, crow, col, val, G: torch.Tensor, n_cols: int) -> torch.Tensor:
    """``A^T x G`` without a cached transpose (the SDDMM backward): transposed here, then the forward
    kernel (C++ and Triton alike)."""
    if backend == "cpp":
        t_crow, t_col, t_val = _C.csr_transpose(crow, col, val, n_cols)
        return _C.spmm(t_crow, t_col, t_val.to(G.dtype), G)
    t_crow, t_col, t_val = transpose_torch(crow, col, val, n_cols)
    return triton_module(G.device).spmm(t_crow, t_col, t_val, G)


def transpose_torch(crow, col, val, n_cols):
    """CSR of ``A^T`` with device-agnostic torch ops (a stable sort keeps each row's columns sorted)."""
    rows = torch.repeat_interleave(torch.arange(crow.numel() - 1, device=crow.device), crow.diff())
    perm = torch.argsort(col, stable=True)
    t_crow = torch.zeros(n_cols + 1, dtype=torch.long, device=crow.device)
    t_crow[1:] = torch.bincount(col, minlength=n_cols).cumsum(0)
    return t_crow, rows[perm], val[perm]


def sddmm(backend: str, crow, col, X: torch.Tensor, Y: torch.Tensor, val) -> torch.Tensor:
    """``out[p] = val[p] * <X[row p], Y[col p]>`` (``val`` may be None)."""
    if backend == "cpp":
        return _C.sddmm(crow, col, X, Y, val)
    return triton_module(X.device).sddmm(crow, col, X, Y, val)


def gather(backend: str, B: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``out[i] = B[idx[i]]``."""
    if backend == "cpp":
        return _C.gather_rows(B, idx)
    return triton_module(B.device).gather(B, idx)


def scatter_add(backend: str, src: torch.Tensor, idx: torch.Tensor, n_out: int) -> torch.Tensor:
    """``out[idx[i]] += src[i]`` into ``n_out`` zero rows."""
    if backend == "cpp":
        return _C.scatter_add_rows(src, idx, n_out)
    return triton_module(src.device).scatter_add(src, idx, n_out)


def edge_softmax(backend: str, a, mult: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                 slope: float) -> torch.Tensor:
    """GAT attention ``alpha`` ``(nnz, H)`` on the CSR ``a`` (see :func:`netsparse_torch.kernels.edge_softmax`)."""
    if backend == "cpp":
        return _C.edge_softmax(a.crow, a.col, mult, src, dst, slope)
    return triton_module(src.device).edge_softmax(a.crow, a.col, mult, src, dst, slope)


def edge_softmax_backward(backend: str, a, alpha, grad, src, dst, slope: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(d_src, d_dst)``. Both sum each column of ``d e`` through the cached transposed pattern."""
    t_crow, t_col, perm = a.transpose_perm()
    if backend == "cpp":
        return _C.edge_softmax_backward(a.crow, a.col, alpha, grad, src, dst, slope, t_crow, perm)
    return triton_module(src.device).edge_softmax_backward(a.crow, a.col, alpha, grad, src, dst, slope, t_crow,
                                                           t_col, perm)


def spmm_heads(backend: str, a, alpha: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``out[r, head h] = sum_p alpha[p, h] B[col[p], head h]``."""
    if backend == "cpp":
        return _C.spmm_heads(a.crow, a.col, alpha, B)
    return triton_module(B.device).spmm_heads(a.crow, a.col, alpha, B)


def spmm_heads_t(backend: str, a, alpha: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``A_h^T x G`` per head: both run the forward kernel on the cached transposed pattern, reading
    ``alpha`` through its permutation (no atomics)."""
    if backend == "cpp":
        t_crow, t_col, perm = a.transpose_perm()
        return _C.spmm_heads(t_crow, t_col, alpha, G, perm)
    t_crow, t_col, perm = a.transpose_perm()
    return triton_module(G.device).spmm_heads(t_crow, t_col, alpha, G, perm)


def sddmm_heads(backend: str, crow, col, X: torch.Tensor, Y: torch.Tensor, heads: int) -> torch.Tensor:
    """``out[p, h] = <X[row p, head h], Y[col p, head h]>``."""
    if backend == "cpp":
        return _C.sddmm_heads(crow, col, X, Y, heads)
    return triton_module(X.device).sddmm_heads(crow, col, X, Y, heads)
