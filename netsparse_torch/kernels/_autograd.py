"""Autograd for the ``cpp`` and ``triton`` backends: each backward is again a sparse product.

For ``C = A x B`` with ``A = (crow, col, val)``: ``dB = A^T x dC`` and ``dval[p] = <dC[row p], B[col p]>``,
which is an SDDMM. For ``s = SDDMM(X, Y; val)``: ``dX = A_w x Y`` and ``dY = A_w^T x X`` with the
pattern weighted by ``w = ds * val``, and ``dval = ds * SDDMM(X, Y)``. Gather and scatter-add are each
other's backward.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from netsparse_torch.kernels import _choice, _ops


class SpMM(torch.autograd.Function):
    """``A x B``; ``a`` is a :class:`netsparse_torch.kernels.CSR` whose transpose may be cached. ``backend``
    runs the forward product, ``bwd_backend`` the backward one (``"auto"``: chosen per CSR on first use)."""

    @staticmethod
    def forward(ctx, a, val: torch.Tensor, B: torch.Tensor, backend: str, bwd_backend: str) -> torch.Tensor:
        ctx.a, ctx.bwd_backend = a, bwd_backend
        # The SDDMM of d val has no cuSPARSE twin here: Triton on CUDA whichever SpMM won, C++ on CPU.
        ctx.sddmm_backend = "cpp" if B.device.type == "cpu" and backend != "triton" else "triton"
        ctx.save_for_backward(val, B if ctx.needs_input_grad[1] else None)
        return _ops.spmm_csr(backend, a, val, B)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        val, B = ctx.saved_tensors
        a, backend = ctx.a, ctx.bwd_backend
        d_val = d_B = None
        if ctx.needs_input_grad[2]:
            # A learned val changes every step, so only a constant val may use the cached transposed values.
            constant = not ctx.needs_input_grad[1]
            if backend == "auto":
                backend = _choice.auto_spmm_backend(a, "backward", grad,
                                                    lambda b: _ops.spmm_t_csr(b, a, val, grad, constant))
            d_B = _ops.spmm_t_csr(backend, a, val, grad, constant)
        if ctx.needs_input_grad[1]:
            d_val = _ops.sddmm(ctx.sddmm_backend, a.crow, a.col, grad, B, None)
        return None, d_val, d_B, None, None


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


class EdgeSoftmax(torch.autograd.Function):
    """GAT's ``alpha = softmax_row(m * exp(LeakyReLU(src[col] + dst[row])))``; ``a`` is the pattern (a
    :class:`netsparse_torch.kernels.CSR` whose transpose is cached), ``mult`` its multiplicities.

    Backward: ``d e[p] = alpha[p] (d alpha[p] - sum_q alpha[q] d alpha[q])`` over the row (the softmax
    Jacobian), times LeakyReLU's slope, then summed per row into ``d dst`` and per column into ``d src``.
    """

    @staticmethod
    def forward(ctx, a, mult, src, dst, slope: float, backend: str) -> torch.Tensor:
        ctx.a, ctx.slope, ctx.backend = a, slope, backend
        alpha = _ops.edge_softmax(backend, a, mult, src, dst, slope)
        ctx.save_for_backward(alpha, src, dst)
        return alpha

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        alpha, src, dst = ctx.saved_tensors
        d_src, d_dst = _ops.edge_softmax_backward(ctx.backend, ctx.a, alpha, grad.contiguous(), src, dst, ctx.slope)
        return None, None, d_src, d_dst, None, None


class SpMMHeads(torch.autograd.Function):
    """``out[r, head h] = sum_p alpha[p, h] B[col p, head h]``: ``d alpha`` is the multi-head SDDMM of
    the output gradient with ``B``, ``d B`` the per-head transposed product."""

    @staticmethod
    def forward(ctx, a, alpha: torch.Tensor, B: torch.Tensor, backend: str) -> torch.Tensor:
        ctx.a, ctx.backend = a, backend
        ctx.save_for_backward(alpha, B)
        return _ops.spmm_heads(backend, a, alpha, B)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        alpha, B = ctx.saved_tensors
        a, backend = ctx.a, ctx.backend
        grad = grad.contiguous()
        d_alpha = _ops.sddmm_heads(backend, a.crow, a.col, grad, B, alpha.size(1)) if ctx.needs_input_grad[1] else None
        d_B = _ops.spmm_heads_t(backend, a, alpha, grad) if ctx.needs_input_grad[2] else None
        return None, d_alpha, d_B, None
