"""Local compute kernels with one dispatch point.

``spmm(crow, col, val, B)`` computes the CSR product ``A x B`` for the local aggregation. It is
differentiable in ``B`` (and in ``val`` through the torch reference). ``backend="auto"`` picks the
C++ kernel on CPU; ``backend="torch"`` is the ``torch.sparse`` reference.
"""

from __future__ import annotations

import torch

from netsparse_torch import _C

BACKENDS = ("auto", "cpp", "torch")


class CSR:
    """A CSR matrix with its transpose computed once, for the backward product ``A^T x G``."""

    def __init__(self, crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, n_cols: int):
        self.crow, self.col, self.val = crow.contiguous(), col.contiguous(), val.contiguous()
        self.n_rows, self.n_cols = crow.numel() - 1, int(n_cols)
        self._t: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    @property
    def nnz(self) -> int:
        return self.col.numel()

    def transpose_parts(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self._t is None:
            self._t = _C.csr_transpose(self.crow, self.col, self.val, self.n_cols)
        return self._t

    def to_torch(self) -> torch.Tensor:
        return torch.sparse_csr_tensor(self.crow, self.col, self.val, (self.n_rows, self.n_cols))


class _CppSpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: CSR, B: torch.Tensor) -> torch.Tensor:
        ctx.a = a
        return _C.spmm(a.crow, a.col, a.val.to(B.dtype), B)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        crow_t, col_t, val_t = ctx.a.transpose_parts()
        return None, _C.spmm(crow_t, col_t, val_t.to(grad.dtype), grad.contiguous())


def spmm(a: CSR, B: torch.Tensor, *, backend: str = "auto") -> torch.Tensor:
    """``A x B`` for a :class:`CSR` ``a`` of shape ``(n_rows, n_cols)`` and dense ``B`` ``(n_cols, K)``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown spmm backend {backend!r}; choose one of {BACKENDS}")
    if B.dim() != 2 or B.size(0) != a.n_cols:
        raise ValueError(f"spmm: B must be ({a.n_cols}, K), got {tuple(B.shape)}")
    if backend == "torch" or B.is_cuda:
        return torch.sparse.mm(a.to_torch().to(B.device, B.dtype), B)
    return _CppSpMM.apply(a, B)
