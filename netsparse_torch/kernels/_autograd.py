"""Autograd for the ``cpp`` and ``triton`` backends: each backward is again a sparse product.

For ``C = A x B`` with ``A = (crow, col, val)``: ``dB = A^T x dC`` and ``dval[p] = <dC[row p], B[col p]>``,
which is an SDDMM. For ``s = SDDMM(X, Y; val)``: ``dX = A_w x Y`` and ``dY = A_w^T x X`` with the
pattern weighted by ``w = ds * val``, and ``dval = ds * SDDMM(X, Y)``. Gather and scatter-add are each
other's backward.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from netsparse_torch.kernels import _ops


class SpMM(torch.autograd.Function):
    """``A x B``; ``a`` is a :class:`netsparse_torch.kernels.CSR` whose transpose may be cached."""

    @staticmethod
    def forward(ctx, a, val: torch.Tensor, B: torch.Tensor, backend: str) -> torch.Tensor:
        ctx.a, ctx.backend = a, backend
        ctx.save_for_backward(val, B if ctx.needs_input_grad[1] else None)
        return _ops.spmm(backend, a.crow, a.col, val, B)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        val, B = ctx.saved_tensors
        a, backend = ctx.a, ctx.backend
        d_val = d_B = None
        if ctx.needs_input_grad[2]:
            # A learned val changes every step, so only a constant val may use the cached transpose.
            cached = a.transpose_parts() if backend == "cpp" and not ctx.needs_input_grad[1] else None
            d_B = _ops.spmm_t(backend, a.crow, a.col, val, grad, a.n_cols, cached)
        if ctx.needs_input_grad[1]:
            d_val = _ops.sddmm(backend, a.crow, a.col, grad, B, None)
        return None, d_val, d_B, None


class SDDMM(torch.autograd.Function):
    """``out[p] = val[p] * <X[row p], Y[col p]>``."""

    @staticmethod
    def forward(ctx, crow, col, X, Y, val, backend: str) -> torch.Tensor:
        ctx.backend = backend
        ctx.save_for_backward(crow, col, X, Y, val)
        return _ops.sddmm(backend, crow, col, X, Y, val)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        crow, col, X, Y, val = ctx.saved_tensors
        backend = ctx.backend
        grad = grad.contiguous()
        w = grad if val is None else grad * val
        d_X = _ops.spmm(backend, crow, col, w, Y) if ctx.needs_input_grad[2] else None
        d_Y = _ops.spmm_t(backend, crow, col, w, X, Y.size(0)) if ctx.needs_input_grad[3] else None
        d_val = grad * _ops.sddmm(backend, crow, col, X, Y, None) if ctx.needs_input_grad[4] else None
        return None, None, d_X, d_Y, d_val, None


class Gather(torch.autograd.Function):
    """``out[i] = B[idx[i]]``; backward scatter-adds the row gradients to their sources."""

    @staticmethod
    def forward(ctx, B, idx, backend: str) -> torch.Tensor:
        ctx.backend, ctx.n = backend, B.size(0)
        ctx.save_for_backward(idx)
        return _ops.gather(backend, B, idx)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        (idx,) = ctx.saved_tensors
        return _ops.scatter_add(ctx.backend, grad, idx, ctx.n), None, None


class ScatterAdd(torch.autograd.Function):
    """``out[idx[i]] += src[i]``; backward gathers the output gradient rows."""

    @staticmethod
    def forward(ctx, src, idx, n_out: int, backend: str) -> torch.Tensor:
        ctx.backend = backend
        ctx.save_for_backward(idx)
        return _ops.scatter_add(backend, src, idx, n_out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        (idx,) = ctx.saved_tensors
        return _ops.gather(ctx.backend, grad, idx), None, None, None
