"""Local compute kernels with one dispatch point: SpMM, SDDMM, gather and scatter-add, and attention.

``spmm`` is the local aggregation ``C = A x B`` that every strategy ends with; ``sddmm`` computes
``<X[r], Y[c]>`` on the nonzeros ``(r, c)`` of a pattern (attention scores, the gradient of the SpMM
values); ``gather``/``scatter_add`` pack halo rows and return their gradients. Graph attention (GAT)
adds ``edge_softmax`` (the additive scores, an SDDMM, with LeakyReLU and the per-row softmax) and
``spmm_heads`` (the SpMM with one attention value per nonzero and head). All are differentiable.

Backends:

- ``"auto"``: the C++ kernel on CPU. On CUDA tensors Triton (torch if triton is not installed), except
  the SpMM of a :class:`CSR`: there the Triton kernel is timed against ``torch.sparse.mm`` (cuSPARSE)
  once per feature width, dtype and direction and the faster kept, by every rank of a distributed run
  together (``DistGraph.propagate``; :func:`agreed_choices`) or else by each CSR
  (:meth:`CSR.kernel_choices`); ``NETSPARSE_CUDA_SPMM=triton|torch`` forces one. The one-shot form
  ``spmm(crow, col, val, B)`` has no CSR to remember a choice on and uses ``torch.sparse.mm`` on CUDA;
- ``"cpp"``: the C++ kernels of ``netsparse_torch._C`` (CPU, float32/float64, ``at::parallel_for``);
- ``"triton"``: :mod:`netsparse_torch.kernels.triton_kernels` (CUDA, or CPU under ``TRITON_INTERPRET=1``);
- ``"torch"``: the reference, plain torch ops (``torch.sparse.mm``, ``index_select``, ``index_add``).
"""

from __future__ import annotations

import torch

from netsparse_torch.kernels import _autograd, _choice, _ops
from netsparse_torch.kernels._choice import agreed_choices, recorded_choices
from netsparse_torch.native import _C

BACKENDS = ("auto", "cpp", "triton", "torch")

__all__ = ["BACKENDS", "CSR", "agreed_choices", "cpu_isa", "edge_softmax", "gather", "recorded_choices",
           "resolve_backend", "scatter_add", "sddmm", "sddmm_heads", "spmm", "spmm_heads"]


def cpu_isa() -> str:
    """The SIMD level of the C++ SpMM on this CPU: ``avx512``, ``avx2`` or ``generic``.

    Chosen at run time (the build has no ``-march=native``); the environment variable
    ``NETSPARSE_CPU_ISA`` caps it.
    """
    return _C.cpu_isa()


def resolve_backend(backend: str, device: torch.device) -> str:
    """The concrete backend (``cpp``, ``triton`` or ``torch``) that ``backend`` means on ``device``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown kernel backend {backend!r}; choose one of {BACKENDS}")
    if backend == "auto":
        if device.type == "cpu":
            return "cpp"
        return "triton" if device.type == "cuda" and _ops.triton_installed() else "torch"
    if backend == "cpp" and device.type != "cpu":
        raise ValueError(f"backend='cpp' runs on CPU tensors, got a {device.type} tensor")
    if backend == "triton":
        _ops.triton_module(device)
    return backend


def _check_csr_structure(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, n_cols: int) -> None:
    if crow.dim() != 1 or crow.numel() < 1 or col.dim() != 1 or val.dim() != 1:
        raise ValueError("CSR: crow, col and val must be 1-D and crow must have rows+1 entries")
    if crow.dtype not in (torch.int32, torch.int64) or col.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"CSR: crow and col must be integer tensors, got {crow.dtype} and {col.dtype}")
    if col.numel() != val.numel():
        raise ValueError(f"CSR: col has {col.numel()} entries but val has {val.numel()}")
    if not crow.device == col.device == val.device:
        raise ValueError(f"CSR: crow, col and val must be on one device, got {crow.device}, {col.device} and "
                         f"{val.device}")
    if not val.is_floating_point():
        raise ValueError(f"CSR: val must be floating point, got {val.dtype}")
    if n_cols < 0:
        raise ValueError(f"CSR: n_cols must be >= 0, got {n_cols}")
    if int(crow[0]) != 0 or int(crow[-1]) != col.numel() or bool((crow[1:] < crow[:-1]).any()):
        raise ValueError(f"CSR: crow must rise from 0 to nnz={col.numel()}")


def _check_columns(col: torch.Tensor, n_cols: int) -> None:
    if col.numel() and (int(col.min()) < 0 or int(col.max()) >= n_cols):
        raise ValueError(f"CSR: a column index is outside [0, {n_cols})")


class CSR:
    """A CSR matrix ``(n_rows, n_cols)`` with its transpose computed once, for the backward ``A^T x G``.

    The constructor checks the structure and the column range once, so the products can trust it.
    """

    def __init__(self, crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, n_cols: int,
                 *, check_columns: bool = True):
        _check_csr_structure(crow, col, val, int(n_cols))
        if check_columns:
            _check_columns(col, int(n_cols))
        self.crow, self.col, self.val = crow.long().contiguous(), col.long().contiguous(), val.contiguous()
        self.n_rows, self.n_cols = crow.numel() - 1, int(n_cols)
        self._t: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self._t_perm: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self._splits: dict[int, tuple[CSR, CSR]] = {}
        self._t_csr: CSR | None = None
        self._plan = None
        self._cusparse: tuple[torch.Tensor, torch.Tensor] | None = None
        self._choices: dict[str, str] = {}
        self._timings: dict[str, dict[str, float]] = {}

    @property
    def nnz(self) -> int:
        return self.col.numel()

    @property
    def device(self) -> torch.device:
        return self.col.device

    def to(self, device: torch.device | str) -> CSR:
        """This matrix on ``device`` (itself when already there); its caches are rebuilt there on use."""
        device = torch.device(device)
        if self.device == device:
            return self
        return CSR(self.crow.to(device), self.col.to(device), self.val.to(device), self.n_cols, check_columns=False)

    @classmethod
    def from_scipy(cls, m, device: torch.device | str = "cpu") -> CSR:
        """A ``scipy.sparse.csr_matrix`` as a float32 CSR on ``device`` (int64 indices, shape kept)."""
        m = m.tocsr()
        m.sort_indices()
        parts = (m.indptr.astype("int64"), m.indices.astype("int64"), m.data.astype("float32"))
        crow, col, val = (torch.from_numpy(p).to(device) for p in parts)
        return cls(crow, col, val, m.shape[1], check_columns=False)

    def transpose_parts(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(crow, col, val)`` of ``A^T``, computed on first use and cached (values as of then)."""
        if self._t is None:
            if self.device.type == "cpu":
                self._t = _C.csr_transpose(self.crow, self.col, self.val.detach(), self.n_cols)
            else:
                self._t = _ops.transpose_torch(self.crow, self.col, self.val.detach(), self.n_cols)
        return self._t

    def transpose_perm(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(crow, col, perm)`` of the pattern of ``A^T``: transposed entry ``q`` is nonzero ``perm[q]`` of
        ``A`` (each transposed row in increasing row order). For products with values that change every
        step (attention), which are read through ``perm``; computed on first use and cached."""
        if self._t_perm is None:
            perm = torch.arange(self.nnz, device=self.device)
            self._t_perm = _ops.transpose_torch(self.crow, self.col, perm, self.n_cols)
        return self._t_perm

    def transposed(self) -> CSR:
        """``A^T`` as a CSR (values as of first use), cached with its own Triton plan: the backward
        ``A^T x G`` runs the forward kernels on it instead of scattering with atomics. Transposed entry
        ``q`` is nonzero ``transpose_perm()[2][q]`` of ``A``, so changing values are read through it."""
        if self._t_csr is None:
            t_crow, t_col, perm = self.transpose_perm()
            self._t_csr = CSR(t_crow, t_col, self.val.detach()[perm], self.n_rows, check_columns=False)
        return self._t_csr

    def triton_plan(self):
        """How the Triton SpMM splits this pattern into programs (built on first use and cached)."""
        if self._plan is None:
            self._plan = _ops.triton_module(self.device).make_plan(self.crow, self.col)
        return self._plan

    def kernel_choice(self, key: str, candidates, timer, how: str = "timed") -> str:
        """The cached choice for ``key``, else the fastest of ``candidates`` (name -> callable) under
        ``timer`` (callable -> seconds), cached and recorded (``how``: see :func:`_choice.record`). See
        :mod:`netsparse_torch.kernels._choice`."""
        if key not in self._choices:
            choice, seconds = _choice.choose_fastest(candidates, timer)
            self._choices[key], self._timings[key] = choice, seconds
            _choice.record(self, key, choice, seconds, how)
        return self._choices[key]

    def cusparse_indices(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(crow, col)`` as ``torch.sparse.mm`` reads them fastest: int32 where the sizes fit (torch
        hands cuSPARSE the tensors' index type, and int32 halves the index bytes), else int64; converted
        once and cached."""
        if self._cusparse is None:
            small = max(self.n_rows + 1, self.n_cols, self.nnz) < 2**31
            self._cusparse = (self.crow.int(), self.col.int()) if small else (self.crow, self.col)
        return self._cusparse

    def kernel_choices(self) -> dict[str, str]:
        """The SpMM kernels ``backend="auto"`` chose on CUDA for this matrix, e.g.
        ``{"forward/K=16/float32": "triton", "backward/K=16/float32": "torch"}`` (empty on CPU)."""
        return dict(self._choices)

    def kernel_timings(self) -> dict[str, dict[str, float]]:
        """Milliseconds of each candidate when each choice of :meth:`kernel_choices` was made (none for a
        choice forced by ``NETSPARSE_CUDA_SPMM``)."""
        return {key: {name: s * 1e3 for name, s in times.items() if s == s}  # s == s: not NaN (untimed)
                for key, times in self._timings.items()}

    def split_columns(self, at: int) -> tuple[CSR, CSR]:
        """``(A[:, :at], A[:, at:])`` as two CSRs (the second's columns shifted by ``-at``), each row's
        nonzeros in their original order; computed once per ``at`` and cached (values as of then)."""
        if at not in self._splits:
            rows = torch.repeat_interleave(torch.arange(self.n_rows, device=self.device), self.crow.diff())
            first = self.col < at
            crow_first = torch.zeros_like(self.crow)
            crow_first[1:] = torch.bincount(rows[first], minlength=self.n_rows).cumsum(0)
            val = self.val.detach()
            self._splits[at] = (CSR(crow_first, self.col[first], val[first], at, check_columns=False),
                                CSR(self.crow - crow_first, self.col[~first] - at, val[~first], self.n_cols - at,
                                    check_columns=False))
        return self._splits[at]

    def t_matmul(self, G: torch.Tensor, backend: str = "auto") -> torch.Tensor:
        """``A^T x G`` with the cached transpose, outside autograd (for hand-written backwards)."""
        _check_dense("t_matmul", "G", G)
        if G.size(0) != self.n_rows or G.device != self.device:
            raise ValueError(f"t_matmul: G must be ({self.n_rows}, K) on {self.device}, got {tuple(G.shape)} on "
                             f"{G.device}")
        requested, backend = backend, resolve_backend(backend, G.device)
        val = self.val.detach()
        if requested == "auto" and backend == "triton":
            backend = _choice.auto_spmm_backend(self, "backward", G,
                                                lambda b: _ops.spmm_t_csr(b, self, val, G, constant=True))
        return _ops.spmm_t_csr(backend, self, val, G, constant=True)

    def to_torch(self) -> torch.Tensor:
        """The same matrix as a ``torch.sparse_csr_tensor`` (differentiable in ``val``)."""
        return _ops.csr_tensor(self.crow, self.col, self.val, (self.n_rows, self.n_cols))


def _check_dense(op: str, name: str, t: torch.Tensor) -> None:
    if t.dim() != 2:
        raise ValueError(f"{op}: {name} must be 2-D, got shape {tuple(t.shape)}")
    if t.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"{op}: {name} must be float32 or float64, got {t.dtype}")


def spmm(*args: torch.Tensor | CSR, backend: str = "auto") -> torch.Tensor:
    """``A x B``: either ``spmm(crow, col, val, B)`` or ``spmm(a, B)`` with a :class:`CSR` ``a``.

    ``A`` is ``(n_rows, B.size(0))`` (or ``(a.n_rows, a.n_cols)``), ``B`` is dense ``(n_cols, K)``.
    Differentiable in ``B`` and ``val``; ``val`` is cast to ``B.dtype``.
    """
    if len(args) == 2 and isinstance(args[0], CSR):
        a, B = args
    elif len(args) == 4:
        crow, col, val, B = args
        _check_dense("spmm", "B", B)
        # No CSR outlives this call to remember a timed choice on, so "auto" means cuSPARSE on CUDA.
        if backend == "auto" and B.device.type == "cuda":
            backend = "torch"
        backend_now = resolve_backend(backend, B.device)
        # The C++ kernel checks each column index as it reads it, so it skips the O(nnz) pre-check.
        a = CSR(crow, col, val, B.size(0), check_columns=backend_now != "cpp")
    else:
        raise ValueError("spmm takes (crow, col, val, B) or (csr, B)")
    _check_dense("spmm", "B", B)
    if B.size(0) != a.n_cols:
        raise ValueError(f"spmm: B must be ({a.n_cols}, K), got {tuple(B.shape)}")
    if B.device != a.device:
        raise ValueError(f"spmm: A is on {a.device} but B is on {B.device}")
    requested, backend = backend, resolve_backend(backend, B.device)
    val = a.val if a.val.dtype == B.dtype else a.val.to(B.dtype)
    if backend == "torch":
        return _ops.spmm("torch", a.crow, a.col, val, B)
    if requested == "auto" and backend == "triton":  # CUDA: the faster of Triton and cuSPARSE, per direction
        fwd = _choice.auto_spmm_backend(a, "forward", B, lambda b: _ops.spmm_csr(b, a, val.detach(), B.detach()))
        return _autograd.SpMM.apply(a, val, B, fwd, "auto")
    return _autograd.SpMM.apply(a, val, B, backend, backend)


def sddmm(crow: torch.Tensor, col: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
          val: torch.Tensor | None = None, *, backend: str = "auto") -> torch.Tensor:
    """``out[p] = val[p] * <X[r], Y[col[p]]>`` for every nonzero ``p`` of CSR row ``r``.

    ``X`` is ``(n_rows, K)``, ``Y`` is ``(n_cols, K)``; without ``val`` the pattern weights are 1.
    Differentiable in ``X``, ``Y`` and ``val``.
    """
    _check_dense("sddmm", "X", X)
    _check_dense("sddmm", "Y", Y)
    if X.dtype != Y.dtype or X.size(1) != Y.size(1):
        raise ValueError(f"sddmm: X {tuple(X.shape)} {X.dtype} and Y {tuple(Y.shape)} {Y.dtype} must share "
                         "dtype and width")
    a = CSR(crow, col, val if val is not None else torch.empty(col.numel(), device=col.device), Y.size(0))
    if X.size(0) != a.n_rows:
        raise ValueError(f"sddmm: X must have one row per CSR row ({a.n_rows}), got {X.size(0)}")
    _check_device("sddmm", a, X, Y)
    backend = resolve_backend(backend, X.device)
    val = None if val is None else a.val.to(X.dtype)
    if backend == "torch":
        rows = torch.repeat_interleave(torch.arange(a.n_rows, device=X.device), a.crow.diff())
        out = (X.index_select(0, rows) * Y.index_select(0, a.col)).sum(1)
        return out if val is None else out * val
    return _autograd.SDDMM.apply(a.crow, a.col, X, Y, val, backend)


def _check_device(op: str, a: CSR, *dense: torch.Tensor) -> None:
    """A kernel handed a pointer from another device reads garbage or faults: refuse before any launch."""
    for t in dense:
        if t.device != a.device:
            raise ValueError(f"{op}: the sparse pattern is on {a.device} but an operand is on {t.device}; move "
                             "both to one device")


def _check_index(op: str, idx: torch.Tensor, bound: int, like: torch.Tensor) -> torch.Tensor:
    if idx.dim() != 1 or idx.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{op}: idx must be a 1-D integer tensor, got {idx.dtype} {tuple(idx.shape)}")
    if idx.device != like.device:
        raise ValueError(f"{op}: idx is on {idx.device} but the rows are on {like.device}")
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= bound):
        raise ValueError(f"{op}: an index is outside [0, {bound})")
    return idx.long().contiguous()


def gather(B: torch.Tensor, idx: torch.Tensor, *, backend: str = "auto") -> torch.Tensor:
    """``halo[i] = B[idx[i]]``: pack the rows ``idx`` of ``B`` (differentiable in ``B``)."""
    _check_dense("gather", "B", B)
    idx = _check_index("gather", idx, B.size(0), B)
    backend = resolve_backend(backend, B.device)
    if backend == "torch":
        return B.index_select(0, idx)
    return _autograd.Gather.apply(B, idx, backend)


def scatter_add(src: torch.Tensor, idx: torch.Tensor, n_out: int, *, backend: str = "auto") -> torch.Tensor:
    """``out = zeros(n_out, K); out[idx[i]] += src[i]``: return halo rows (or their gradients) to owners."""
    _check_dense("scatter_add", "src", src)
    if idx.dim() == 1 and idx.numel() != src.size(0):
        raise ValueError(f"scatter_add: idx has {idx.numel()} entries but src has {src.size(0)} rows")
    idx = _check_index("scatter_add", idx, n_out, src)
    backend = resolve_backend(backend, src.device)
    if backend == "torch":
        return torch.zeros(n_out, src.size(1), dtype=src.dtype, device=src.device).index_add(0, idx, src)
    return _autograd.ScatterAdd.apply(src, idx, n_out, backend)


def _check_pattern_operand(op: str, name: str, t: torch.Tensor, rows: int, width: int | None,
                           like: torch.Tensor) -> None:
    _check_dense(op, name, t)
    if t.size(0) != rows or (width is not None and t.size(1) != width):
        want = f"({rows}, {width})" if width is not None else f"{rows} rows"
        raise ValueError(f"{op}: {name} must be {want}, got {tuple(t.shape)}")
    if t.dtype != like.dtype or t.device != like.device:
        raise ValueError(f"{op}: {name} is {t.dtype} on {t.device}, expected {like.dtype} on {like.device}")


def edge_softmax(a: CSR, src: torch.Tensor, dst: torch.Tensor, negative_slope: float = 0.2, *,
                 backend: str = "auto") -> torch.Tensor:
    """GAT attention (Velickovic et al., eqs. 1-3) on the pattern ``a``, whose row ``r`` lists the
    neighbours ``j`` (sources) of node ``r`` (target), one value ``m`` (the edge's multiplicity) each::

        e[p, h] = LeakyReLU(src[col[p], h] + dst[r, h])                    (an SDDMM of the scores)
        alpha[p, h] = m[p] exp(e[p, h]) / sum_{q in row r} m[q] exp(e[q, h])

    ``src`` is ``(a.n_cols, H)``, ``dst`` is ``(a.n_rows, H)``; returns ``alpha`` ``(nnz, H)``,
    differentiable in ``src`` and ``dst``. A duplicate edge stored once with ``m = 2`` gets the
    attention of its two copies in PyG's ``GATConv``.
    """
    _check_pattern_operand("edge_softmax", "src", src, a.n_cols, None, src)
    _check_pattern_operand("edge_softmax", "dst", dst, a.n_rows, src.size(1), src)
    _check_device("edge_softmax", a, src)
    backend = resolve_backend(backend, src.device)
    mult = a.val.detach().to(src.dtype)
    if backend == "torch":
        return _edge_softmax_torch(a, mult, src, dst, float(negative_slope))
    return _autograd.EdgeSoftmax.apply(a, mult, src, dst, float(negative_slope), backend)


def _edge_softmax_torch(a: CSR, mult: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, slope: float) -> torch.Tensor:
    rows = torch.repeat_interleave(torch.arange(a.n_rows, device=src.device), a.crow.diff())
    e = torch.nn.functional.leaky_relu(src.index_select(0, a.col) + dst.index_select(0, rows), slope)
    top = torch.full_like(dst, float("-inf")).scatter_reduce(0, rows.unsqueeze(1).expand_as(e), e.detach(), "amax")
    w = mult.unsqueeze(1) * (e - top.index_select(0, rows)).exp()
    total = torch.zeros_like(dst).index_add(0, rows, w)
    return w / total.index_select(0, rows)


def spmm_heads(a: CSR, alpha: torch.Tensor, B: torch.Tensor, *, backend: str = "auto") -> torch.Tensor:
    """``out[r, h*C:(h+1)*C] = sum_p alpha[p, h] B[col[p], h*C:(h+1)*C]``: the SpMM of GAT's
    aggregation with one value per nonzero and head (``a.val`` is not used).

    ``alpha`` is ``(nnz, H)``, ``B`` is ``(a.n_cols, H*C)``; differentiable in both.
    """
    _check_dense("spmm_heads", "B", B)
    _check_pattern_operand("spmm_heads", "alpha", alpha, a.nnz, None, B)
    heads = alpha.size(1)
    if B.size(0) != a.n_cols or heads < 1 or B.size(1) % heads:
        raise ValueError(f"spmm_heads: B must be ({a.n_cols}, H*C) for H={heads} heads, got {tuple(B.shape)}")
    _check_device("spmm_heads", a, B)
    backend = resolve_backend(backend, B.device)
    if backend == "torch":
        rows = torch.repeat_interleave(torch.arange(a.n_rows, device=B.device), a.crow.diff())
        msg = alpha.unsqueeze(2) * B.index_select(0, a.col).view(a.nnz, heads, B.size(1) // heads)
        return torch.zeros(a.n_rows, B.size(1), dtype=B.dtype, device=B.device).index_add(0, rows, msg.flatten(1))
    return _autograd.SpMMHeads.apply(a, alpha, B, backend)


def sddmm_heads(a: CSR, X: torch.Tensor, Y: torch.Tensor, heads: int, *, backend: str = "auto") -> torch.Tensor:
    """``out[p, h] = <X[r, h*C:(h+1)*C], Y[col[p], h*C:(h+1)*C]>`` on the nonzeros of ``a`` (the
    gradient of :func:`spmm_heads` in ``alpha``); not differentiable."""
    _check_pattern_operand("sddmm_heads", "X", X, a.n_rows, None, X)
    _check_pattern_operand("sddmm_heads", "Y", Y, a.n_cols, X.size(1), X)
    if heads < 1 or X.size(1) % heads:
        raise ValueError(f"sddmm_heads: width {X.size(1)} is not a multiple of {heads} heads")
    _check_device("sddmm_heads", a, X)
    backend = resolve_backend(backend, X.device)
    if backend == "torch":
        rows = torch.repeat_interleave(torch.arange(a.n_rows, device=X.device), a.crow.diff())
        prod = X.index_select(0, rows) * Y.index_select(0, a.col)
        return prod.view(a.nnz, heads, X.size(1) // heads).sum(2)
    return _ops.sddmm_heads(backend, a.crow, a.col, X.detach(), Y.detach(), heads)
