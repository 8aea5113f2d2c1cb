"""Triton kernels for the local sparse products: CSR SpMM, SDDMM, gather, scatter-add, and GAT attention.

They run on CUDA tensors, autotuned over block sizes. On CPU tensors they run only under the Triton
interpreter, and ``TRITON_INTERPRET=1`` must be set before this module is imported (the ``@triton.jit``
decorator reads it); the tests do that on small inputs. Use them through
:mod:`netsparse_torch.kernels` (``backend="triton"``), which owns validation and autograd.

Layout: the SpMM balances programs by nonzeros (see the SpMM section: degree-sorted row blocks plus
long rows cut into chunks); SDDMM and the attention kernels give a program one or a few CSR rows. A
program covers one ``BLOCK_K`` tile of the feature columns. Dense operands of the SpMM and SDDMM are
passed with both strides, so a non-contiguous ``B`` is read in place. Transposed products run the
forward kernels on a transposed pattern (:mod:`netsparse_torch.kernels` caches it per CSR), so only
scatter-add, whose job it is, adds with atomics.
"""

from __future__ import annotations

import functools
import math
import os
from typing import NamedTuple

import torch
import triton
import triton.language as tl
import triton.testing

INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def on_operands_device(launch):
    """Runs ``launch`` with its first tensor argument's CUDA device current: Triton launches on the
    current device's current stream, which is not the tensors' unless the caller set it (a library
    caller on a multi-GPU node need not have)."""

    @functools.wraps(launch)
    def guarded(*args, **kwargs):
        first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
        if first is None or first.device.type != "cuda":
            return launch(*args, **kwargs)
        with torch.cuda.device(first.device):
            return launch(*args, **kwargs)

    return guarded


def _configs(space: list[dict], warps: tuple[int, ...] = (4,)) -> list[triton.Config]:
    """Autotune space on CUDA; one small config under the interpreter, where each config costs seconds."""
    if INTERPRETED:
        return [triton.Config(space[0], num_warps=1)]
    return [triton.Config(kw, num_warps=w) for kw in space for w in warps]


# Block sizes are our own assumption (no paper gives them): K tiles of 16-256 columns cover the GNN
# feature widths 16-256, and 16-32 nonzeros per step fill a warp's loads on power-law rows.
_SDDMM_SPACE = [
    {"BLOCK_ROWS": 1, "BLOCK_K": 16, "BLOCK_NNZ": 4},
    {"BLOCK_ROWS": 1, "BLOCK_K": 32, "BLOCK_NNZ": 16},
    {"BLOCK_ROWS": 1, "BLOCK_K": 64, "BLOCK_NNZ": 16},
    {"BLOCK_ROWS": 2, "BLOCK_K": 64, "BLOCK_NNZ": 32},
    {"BLOCK_ROWS": 4, "BLOCK_K": 128, "BLOCK_NNZ": 16},
]
_DENSE_SPACE = [
    {"BLOCK_R": 4, "BLOCK_K": 16},
    {"BLOCK_R": 16, "BLOCK_K": 64},
    {"BLOCK_R": 32, "BLOCK_K": 128},
]

# -- SpMM ----------------------------------------------------------------------------------------
# Built for power-law graphs, where a few rows hold most nonzeros:
#
# - every row of more than ``long_row`` nonzeros is cut into chunks of ``chunk`` nonzeros (RoDe,
#   Pang et al. PPoPP'24: a regular part and a residual), so no program runs more than ``chunk``
#   nonzeros; a fix-up kernel adds each long row's chunk sums in chunk order (no atomics: the same bits
#   on every run for a given config);
# - the segments (whole short rows and chunks) run longest first (Sputnik, Gale et al. SC'20), so the
#   longest programs start first instead of making a tail at the end; a program's BLOCK_ROWS segments
#   have about the same length, so few lanes idle;
# - each step reads BLOCK_NNZ nonzeros of every segment at once: a (rows x nonzeros x K tile) tile of B
#   rows, accumulated and reduced over the nonzeros once at the end (GE-SpMM, Huang et al. SC'20, and
#   dgSPARSE: several nonzeros per row in flight, a parallel reduction);
# - the next step's column indices and values are loaded before this step's B rows (RoDe's prefetch),
#   so a step does not wait on the index-then-B chain.
#
# The plan (the segments and their order) depends only on the pattern and is built once per CSR.
# Two orders (``make_plan(order=)``): ``longest`` sorts the segments by length, which on a mesh, whose
# rows have a few nearby degrees, interleaves rows from all over the matrix and loses the B rows that
# neighbouring rows share in L2 (cuSPARSE, in row order, reached 1.4-1.5x the gather model's HBM bound
# on the H200 at K >= 128 where our kernel did not); ``buckets`` groups segments by ceil(log2(length)),
# longest bucket first, in row order inside a bucket: nearly longest first, and a mesh's rows in one
# bucket in row order. Which is faster is the GPU's to say (benchmarks/gpu_kernels.py times both).
# The thresholds are our own assumption, to be tuned on a GPU (benchmarks/gpu_kernels.py --chunks):
# 64 nonzeros per chunk (the issue asked for 32-64), every row longer than one chunk cut.
LONG_ROW = 64
CHUNK = 64
ORDERS = ("longest", "buckets")
ORDER = "longest"

# (BLOCK_ROWS, BLOCK_NNZ, BLOCK_K), warps, stages: about 2-4K accumulator values per program.
_SEGMENTS_SPACE = [
    ({"BLOCK_ROWS": 32, "BLOCK_NNZ": 4, "BLOCK_K": 16}, 4, 2),
    ({"BLOCK_ROWS": 64, "BLOCK_NNZ": 2, "BLOCK_K": 16}, 4, 2),
    ({"BLOCK_ROWS": 16, "BLOCK_NNZ": 8, "BLOCK_K": 16}, 4, 2),
    ({"BLOCK_ROWS": 16, "BLOCK_NNZ": 4, "BLOCK_K": 32}, 4, 2),
    ({"BLOCK_ROWS": 32, "BLOCK_NNZ": 2, "BLOCK_K": 32}, 4, 2),
    ({"BLOCK_ROWS": 8, "BLOCK_NNZ": 8, "BLOCK_K": 32}, 4, 2),
    ({"BLOCK_ROWS": 8, "BLOCK_NNZ": 4, "BLOCK_K": 64}, 4, 2),
    ({"BLOCK_ROWS": 16, "BLOCK_NNZ": 2, "BLOCK_K": 64}, 4, 2),
    ({"BLOCK_ROWS": 4, "BLOCK_NNZ": 8, "BLOCK_K": 64}, 4, 2),
    ({"BLOCK_ROWS": 4, "BLOCK_NNZ": 4, "BLOCK_K": 128}, 4, 2),
    ({"BLOCK_ROWS": 8, "BLOCK_NNZ": 2, "BLOCK_K": 128}, 4, 2),
    ({"BLOCK_ROWS": 2, "BLOCK_NNZ": 8, "BLOCK_K": 128}, 4, 2),
    ({"BLOCK_ROWS": 2, "BLOCK_NNZ": 4, "BLOCK_K": 256}, 8, 2),
    ({"BLOCK_ROWS": 4, "BLOCK_NNZ": 2, "BLOCK_K": 256}, 8, 2),
    ({"BLOCK_ROWS": 1, "BLOCK_NNZ": 8, "BLOCK_K": 256}, 8, 2),
]
# Under the interpreter: small tiles, so the tests' tiny inputs still span several tiles and steps.
_SEGMENTS_INTERPRETED = {"BLOCK_ROWS": 4, "BLOCK_NNZ": 2, "BLOCK_K": 16}
_FIXUP_K = 128
_FIXUP_C = 16  # chunk sums per fix-up step


def _tuned(space, interpreted: dict) -> list[triton.Config]:
    if INTERPRETED:
        return [triton.Config(interpreted, num_warps=1)]
    return [triton.Config(kw, num_warps=w, num_stages=s) for kw, w, s in space]


def _prune_k_tiles(configs, nargs, **_):
    """Keep the configs whose K tile is the one K needs or half of it: a wider tile only masks lanes
    off, a narrower one multiplies the programs (and the autotuning time)."""
    k_tile = max(16, triton.next_power_of_2(max(int(nargs["K"]), 1)))
    kept = [c for c in configs if c.kwargs["BLOCK_K"] in (k_tile, k_tile // 2)]
    return kept or configs[:1]


def _quick_bench(fn, quantiles):
    # The default 25 ms warm-up + 100 ms per config would spend seconds per new (K, graph) key.
    return triton.testing.do_bench(fn, warmup=5, rep=20, quantiles=quantiles)


_TUNING = {"key": ["K", "GRAPH_KEY"], "prune_configs_by": {"early_config_prune": _prune_k_tiles},
           "do_bench": _quick_bench}


# GRAPH_KEY only keys the autotune cache, and n_seg only bounds: specialising on their divisibility by
# 16 would compile every config again for another graph without a faster kernel.
@triton.autotune(configs=_tuned(_SEGMENTS_SPACE, _SEGMENTS_INTERPRETED), **_TUNING)
@triton.jit(do_not_specialize=["n_seg", "GRAPH_KEY"])
def _spmm_segments_kernel(seg_start_ptr, seg_len_ptr, seg_dest_ptr, n_seg, col_ptr, val_ptr, b_ptr, out_ptr,
                          part_ptr, K, stride_bn, stride_bk, stride_on, GRAPH_KEY, BLOCK_ROWS: tl.constexpr,
                          BLOCK_NNZ: tl.constexpr, BLOCK_K: tl.constexpr):
    """For the program's BLOCK_ROWS segments (in the plan's order): the sum of val[p] * B[col[p], k-tile] over
    each segment's nonzeros, stored at out[dest] (a whole row, dest >= 0) or part[-dest - 1] (a chunk of
    a long row). One program per (segment block, K tile), K tiles fastest, so program order is the
    segments' order."""
    pid = tl.program_id(0)
    k_tiles = tl.cdiv(K, BLOCK_K)
    i = (pid // k_tiles) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    ks = (pid % k_tiles) * BLOCK_K + tl.arange(0, BLOCK_K)
    i_mask = i < n_seg
    k_mask = ks < K
    start = tl.load(seg_start_ptr + i, mask=i_mask, other=0)
    length = tl.load(seg_len_ptr + i, mask=i_mask, other=0)
    js = tl.arange(0, BLOCK_NNZ)
    p = start[:, None] + js[None, :]
    live = js[None, :] < length[:, None]
    cols = tl.load(col_ptr + p, mask=live, other=0)
    vals = tl.load(val_ptr + p, mask=live, other=0.0)
    acc = tl.zeros((BLOCK_ROWS, BLOCK_NNZ, BLOCK_K), dtype=out_ptr.dtype.element_ty)
    for step in range(0, tl.cdiv(tl.max(length, axis=0), BLOCK_NNZ)):
        # The next step's indices and values first, so their loads overlap this step's B loads.
        nxt = (step + 1) * BLOCK_NNZ + js[None, :]
        nxt_live = nxt < length[:, None]
        nxt_cols = tl.load(col_ptr + start[:, None] + nxt, mask=nxt_live, other=0)
        nxt_vals = tl.load(val_ptr + start[:, None] + nxt, mask=nxt_live, other=0.0)
        live = (step * BLOCK_NNZ + js[None, :]) < length[:, None]
        rows = cols.to(tl.int64)[:, :, None] * stride_bn  # 64-bit: col * stride can pass 2**31
        b = tl.load(b_ptr + rows + ks[None, None, :] * stride_bk, mask=live[:, :, None] & k_mask[None, None, :],
                    other=0.0)
        acc += vals[:, :, None] * b
        cols, vals = nxt_cols, nxt_vals
    total = tl.sum(acc, axis=1).to(out_ptr.dtype.element_ty)
    dest = tl.load(seg_dest_ptr + i, mask=i_mask, other=0).to(tl.int64)
    whole = dest >= 0
    k_store = k_mask[None, :]
    tl.store(out_ptr + dest[:, None] * stride_on + ks[None, :], total, mask=(i_mask & whole)[:, None] & k_store)
    tl.store(part_ptr + (-dest - 1)[:, None] * K + ks[None, :], total,
             mask=(i_mask & (dest < 0))[:, None] & k_store)


@triton.jit
def _spmm_fixup_kernel(long_rows_ptr, long_chunks_ptr, part_ptr, out_ptr, K, stride_on, BLOCK_C: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    """out[r, k-tile] = the sum of the partial sums of long row r's chunks: BLOCK_C chunks per step,
    each accumulated in its own lane and the lanes reduced at the end (a fixed order, so the same bits
    every run; a hub of 200K nonzeros has some 3K chunks, which one at a time would make a tail)."""
    i = tl.program_id(0)
    r = tl.load(long_rows_ptr + i).to(tl.int64)
    c0 = tl.load(long_chunks_ptr + i).to(tl.int64)
    c1 = tl.load(long_chunks_ptr + i + 1).to(tl.int64)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    k_mask = ks < K
    acc = tl.zeros((BLOCK_C, BLOCK_K), dtype=out_ptr.dtype.element_ty)
    for c in range(c0, c1, BLOCK_C):
        cs = c + tl.arange(0, BLOCK_C)
        acc += tl.load(part_ptr + cs[:, None] * K + ks[None, :], mask=(cs < c1)[:, None] & k_mask[None, :], other=0.0)
    tl.store(out_ptr + r * stride_on + ks, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=k_mask)


@triton.autotune(configs=_configs(_SDDMM_SPACE, (2, 4)), key=["K"])
@triton.jit
def _sddmm_kernel(crow_ptr, col_ptr, val_ptr, x_ptr, y_ptr, out_ptr, n_rows, K, stride_xn, stride_xk,
                  stride_yn, stride_yk, HAS_VAL: tl.constexpr,
                  BLOCK_ROWS: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_NNZ: tl.constexpr):
    """out[p] = val[p] * <X[r, :], Y[col[p], :]> for every nonzero p of the program's rows."""
    for i in range(BLOCK_ROWS):
        r = (tl.program_id(0) * BLOCK_ROWS + i).to(tl.int64)  # 64-bit: r * stride can pass 2**31
        if r < n_rows:
            start = tl.load(crow_ptr + r)
            end = tl.load(crow_ptr + r + 1)
            for p0 in range(start, end, BLOCK_NNZ):
                ps = p0 + tl.arange(0, BLOCK_NNZ)
                p_mask = ps < end
                cols = tl.load(col_ptr + ps, mask=p_mask, other=0)
                acc = tl.zeros((BLOCK_NNZ,), dtype=out_ptr.dtype.element_ty)
                for k0 in range(0, K, BLOCK_K):
                    ks = k0 + tl.arange(0, BLOCK_K)
                    k_mask = ks < K
                    x = tl.load(x_ptr + r * stride_xn + ks * stride_xk, mask=k_mask, other=0.0)
                    y = tl.load(y_ptr + cols[:, None] * stride_yn + ks[None, :] * stride_yk,
                                mask=p_mask[:, None] & k_mask[None, :], other=0.0)
                    acc += tl.sum(x[None, :] * y, axis=1)
                if HAS_VAL:
                    acc = acc * tl.load(val_ptr + ps, mask=p_mask, other=0.0)
                tl.store(out_ptr + ps, acc.to(out_ptr.dtype.element_ty), mask=p_mask)


@triton.jit
def _indexed_tile(idx_ptr, n, K, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """This program's positions i (rows of the dense side), columns and mask, and idx[i] (rows of the
    indexed side): the tile that gather and scatter-add share."""
    rs = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    r_mask = rs < n
    mask = r_mask[:, None] & (ks < K)[None, :]
    return rs, ks, mask, tl.load(idx_ptr + rs, mask=r_mask, other=0)


@triton.autotune(configs=_configs(_DENSE_SPACE), key=["K"])
@triton.jit
def _gather_kernel(idx_ptr, b_ptr, out_ptr, n, K, stride_bn, stride_bk, stride_on,
                   BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[i, :] = B[idx[i], :], the packing of halo rows."""
    rs, ks, mask, rows = _indexed_tile(idx_ptr, n, K, BLOCK_R, BLOCK_K)
    x = tl.load(b_ptr + rows[:, None] * stride_bn + ks[None, :] * stride_bk, mask=mask, other=0.0)
    tl.store(out_ptr + rs[:, None] * stride_on + ks[None, :], x, mask=mask)


@triton.autotune(configs=_configs(_DENSE_SPACE), key=["K"], reset_to_zero=["out_ptr"])
@triton.jit
def _scatter_add_kernel(idx_ptr, src_ptr, out_ptr, n, K, stride_sn, stride_sk, stride_on,
                        BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[idx[i], :] += src[i, :], the reverse of gather (halo gradients back to their owners)."""
    rs, ks, mask, rows = _indexed_tile(idx_ptr, n, K, BLOCK_R, BLOCK_K)
    x = tl.load(src_ptr + rs[:, None] * stride_sn + ks[None, :] * stride_sk, mask=mask, other=0.0)
    tl.atomic_add(out_ptr + rows[:, None] * stride_on + ks[None, :], x, mask=mask)


class SpMMPlan(NamedTuple):
    """How `spmm` splits one CSR pattern into programs; built once per pattern by :func:`make_plan`.

    Index tensors are int32 when the row count and nnz fit (half the index bytes per nonzero).
    """

    crow: torch.Tensor
    col: torch.Tensor
    seg_start: torch.Tensor  # the first nonzero of each segment (a whole row, or a chunk of a long row)
    seg_len: torch.Tensor  # its nonzeros, in the order the programs run (non-increasing: length or bucket)
    seg_dest: torch.Tensor  # its output row (>= 0), or -1 - its chunk's index in the partial sums
    long_rows: torch.Tensor  # the rows cut into chunks
    long_chunks: torch.Tensor  # long row i owns chunks long_chunks[i]:long_chunks[i + 1], in row order
    chunk: int
    graph_key: int  # the autotune key's pattern statistic: 64 * log2(mean segment length) + log2(nnz)

    @property
    def n_chunks(self) -> int:
        return int(self.long_chunks[-1]) if self.long_chunks.numel() else 0


def make_plan(crow: torch.Tensor, col: torch.Tensor, long_row: int = LONG_ROW, chunk: int = CHUNK,
              index_dtype: torch.dtype | None = None, order: str = ORDER) -> SpMMPlan:
    """The program layout of ``A x B`` for the pattern ``(crow, col)`` (torch ops, on its device): rows
    of more than ``long_row`` nonzeros cut into chunks of ``chunk``, the segments in ``order`` (see
    ``ORDERS`` above: longest first, or by length bucket in row order). ``index_dtype`` overrides the
    index width (int32 whenever the row count and nnz fit). The order changes no bit of the product:
    each segment is summed by one program, whichever segments share it."""
    if long_row < 0 or chunk < 1:
        raise ValueError(f"make_plan: need long_row >= 0 and chunk >= 1, got {long_row} and {chunk}")
    if order not in ORDERS:
        raise ValueError(f"make_plan: order must be one of {', '.join(ORDERS)}; got {order!r}")
    n_rows, nnz = crow.numel() - 1, col.numel()
    idx = index_dtype or (torch.int32 if max(n_rows + 1, nnz) < 2**31 else torch.int64)
    crow = crow.long()
    deg = crow.diff()
    is_long = deg > long_row
    short = torch.nonzero(~is_long).flatten()
    long_rows = torch.nonzero(is_long).flatten()
    per_row = (deg[long_rows] + chunk - 1) // chunk
    long_chunks = torch.zeros(long_rows.numel() + 1, dtype=torch.long, device=crow.device)
    long_chunks[1:] = per_row.cumsum(0)
    chunk_row = torch.repeat_interleave(long_rows, per_row)
    n_chunks = chunk_row.numel()
    within = torch.arange(n_chunks, device=crow.device) - torch.repeat_interleave(long_chunks[:-1], per_row)
    chunk_start = crow[chunk_row] + within * chunk
    chunk_len = torch.clamp(crow[chunk_row + 1] - chunk_start, max=chunk)
    seg_start = torch.cat([crow[short], chunk_start])
    seg_len = torch.cat([deg[short], chunk_len])
    seg_dest = torch.cat([short, -1 - torch.arange(n_chunks, device=crow.device)])
    # Stable: equal keys keep row order (short rows first, then the chunks, each in row order).
    key = seg_len if order == "longest" else _length_bucket(seg_len)
    perm = torch.argsort(key, descending=True, stable=True)
    mean_len = nnz / max(seg_len.numel(), 1)
    return SpMMPlan(crow.to(idx).contiguous(), col.to(idx).contiguous(), seg_start[perm].to(idx),
                    seg_len[perm].to(idx), seg_dest[perm].to(idx), long_rows.to(idx), long_chunks.to(idx),
                    int(chunk), 64 * int(math.log2(1.0 + mean_len)) + int(math.log2(1.0 + nnz)))


def _length_bucket(lengths: torch.Tensor) -> torch.Tensor:
    """ceil(log2(length)) for lengths >= 1, and -1 for empty rows (last: they only store zeros)."""
    bucket = torch.ceil(torch.log2(lengths.clamp(min=1).double())).long()
    return torch.where(lengths > 0, bucket, -1)


@on_operands_device
def spmm(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, B: torch.Tensor,
         plan: SpMMPlan | None = None) -> torch.Tensor:
    """``A x B`` for CSR ``(crow, col, val)``; inputs already validated, ``val.dtype == B.dtype``.
    ``plan`` (from :func:`make_plan` on the same pattern) is built here when not given."""
    plan = plan if plan is not None else make_plan(crow, col)
    n_rows, K = plan.crow.numel() - 1, B.size(1)
    out = torch.empty((n_rows, K), dtype=B.dtype, device=B.device)
    if n_rows == 0 or K == 0 or plan.col.numel() == 0:  # (an empty tensor's null pointer cannot be launched)
        return out.zero_()
    n_seg, n_chunks = plan.seg_len.numel(), plan.n_chunks
    part = torch.empty((max(n_chunks, 1), K), dtype=B.dtype, device=B.device)
    _spmm_segments_kernel[lambda meta: (triton.cdiv(n_seg, meta["BLOCK_ROWS"]) * triton.cdiv(K, meta["BLOCK_K"]),)](
        plan.seg_start, plan.seg_len, plan.seg_dest, n_seg, plan.col, val, B, out, part, K, B.stride(0),
        B.stride(1), out.stride(0), plan.graph_key)
    if n_chunks:
        block_c, block_k = (2, 16) if INTERPRETED else (_FIXUP_C, min(_FIXUP_K, triton.next_power_of_2(K)))
        _spmm_fixup_kernel[(plan.long_rows.numel(), triton.cdiv(K, block_k))](
            plan.long_rows, plan.long_chunks, part, out, K, out.stride(0), BLOCK_C=block_c, BLOCK_K=block_k)
    return out


@on_operands_device
def sddmm(crow: torch.Tensor, col: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
          val: torch.Tensor | None) -> torch.Tensor:
    """``out[p] = val[p] * <X[row(p)], Y[col[p]]>`` over the nonzeros of the CSR pattern."""
    n_rows, K = crow.numel() - 1, X.size(1)
    out = torch.empty(col.numel(), dtype=X.dtype, device=X.device)
    if col.numel() == 0:
        return out
    if K == 0:
        return out.zero_()
    _sddmm_kernel[lambda meta: (triton.cdiv(n_rows, meta["BLOCK_ROWS"]),)](
        crow, col, val if val is not None else out, X, Y, out, n_rows, K, X.stride(0), X.stride(1),
        Y.stride(0), Y.stride(1), HAS_VAL=val is not None)
    return out


def _dense_grid(n: int, K: int):
    return lambda meta: (triton.cdiv(n, meta["BLOCK_R"]), triton.cdiv(K, meta["BLOCK_K"]))


@on_operands_device
def gather(B: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``out[i] = B[idx[i]]``."""
    n, K = idx.numel(), B.size(1)
    out = torch.empty((n, K), dtype=B.dtype, device=B.device)
    if n and K:
        _gather_kernel[_dense_grid(n, K)](idx, B, out, n, K, B.stride(0), B.stride(1), out.stride(0))
    return out


@on_operands_device
def scatter_add(src: torch.Tensor, idx: torch.Tensor, n_out: int) -> torch.Tensor:
    """``out = zeros(n_out, K); out[idx[i]] += src[i]``."""
    n, K = idx.numel(), src.size(1)
    out = torch.zeros((n_out, K), dtype=src.dtype, device=src.device)
    if n and K:
        _scatter_add_kernel[_dense_grid(n, K)](idx, src, out, n, K, src.stride(0), src.stride(1),
                                               out.stride(0))
    return out


# -- graph attention (GAT) -------------------------------------------------------------------------
# One program per CSR row; the heads are one tile (GAT uses 1-8 heads), so the softmax needs no
# cross-program reduction. Block sizes are our assumption, as above.
_ATT_NNZ = 16


@triton.jit
def _leaky(v, slope):
    return tl.where(v > 0, v, v * slope)


@triton.jit
def _edge_softmax_kernel(crow_ptr, col_ptr, mult_ptr, src_ptr, dst_ptr, out_ptr, H, slope,
                         HAS_MULT: tl.constexpr, BLOCK_NNZ: tl.constexpr, BLOCK_H: tl.constexpr):
    """alpha[p, :] = m[p] exp(e[p, :] - max) / sum over the row, e = LeakyReLU(src[col p] + dst[r])."""
    r = tl.program_id(0).to(tl.int64)
    start = tl.load(crow_ptr + r)
    end = tl.load(crow_ptr + r + 1)
    hs = tl.arange(0, BLOCK_H)
    h_mask = hs < H
    d = tl.load(dst_ptr + r * H + hs, mask=h_mask, other=0.0)
    top = tl.full((BLOCK_H,), float("-inf"), dtype=out_ptr.dtype.element_ty)
    for p0 in range(start, end, BLOCK_NNZ):  # pass 1: each head's maximum score
        ps = p0 + tl.arange(0, BLOCK_NNZ)
        m2 = (ps < end)[:, None] & h_mask[None, :]
        cols = tl.load(col_ptr + ps, mask=ps < end, other=0)
        e = _leaky(tl.load(src_ptr + cols[:, None] * H + hs[None, :], mask=m2, other=0.0) + d[None, :], slope)
        top = tl.maximum(top, tl.max(tl.where(m2, e, float("-inf")), axis=0).to(out_ptr.dtype.element_ty))
    total = tl.zeros((BLOCK_H,), dtype=out_ptr.dtype.element_ty)
    for p0 in range(start, end, BLOCK_NNZ):  # pass 2: the weighted exponentials and their sum
        ps = p0 + tl.arange(0, BLOCK_NNZ)
        m2 = (ps < end)[:, None] & h_mask[None, :]
        cols = tl.load(col_ptr + ps, mask=ps < end, other=0)
        e = _leaky(tl.load(src_ptr + cols[:, None] * H + hs[None, :], mask=m2, other=0.0) + d[None, :], slope)
        w = tl.exp(e - top[None, :])
        if HAS_MULT:
            w = w * tl.load(mult_ptr + ps, mask=ps < end, other=0.0)[:, None]
        w = tl.where(m2, w, 0.0)
        total += tl.sum(w, axis=0)
        tl.store(out_ptr + ps[:, None] * H + hs[None, :], w.to(out_ptr.dtype.element_ty), mask=m2)
    for p0 in range(start, end, BLOCK_NNZ):  # pass 3: normalise
        ps = p0 + tl.arange(0, BLOCK_NNZ)
        m2 = (ps < end)[:, None] & h_mask[None, :]
        w = tl.load(out_ptr + ps[:, None] * H + hs[None, :], mask=m2, other=0.0)
        tl.store(out_ptr + ps[:, None] * H + hs[None, :], (w / total[None, :]).to(out_ptr.dtype.element_ty),
                 mask=m2)


@triton.jit
def _edge_softmax_bwd_kernel(crow_ptr, col_ptr, alpha_ptr, grad_ptr, src_ptr, dst_ptr, de_ptr, ddst_ptr, H, slope,
                             BLOCK_NNZ: tl.constexpr, BLOCK_H: tl.constexpr):
    """d e = alpha (g - sum_row alpha g), times LeakyReLU's slope: stored per nonzero into de (the column
    sums into d_src are a second pass over the transposed pattern) and summed into d_dst[r]."""
    r = tl.program_id(0).to(tl.int64)
    start = tl.load(crow_ptr + r)
    end = tl.load(crow_ptr + r + 1)
    hs = tl.arange(0, BLOCK_H)
    h_mask = hs < H
    d = tl.load(dst_ptr + r * H + hs, mask=h_mask, other=0.0)
    dot = tl.zeros((BLOCK_H,), dtype=ddst_ptr.dtype.element_ty)
    for p0 in range(start, end, BLOCK_NNZ):
        ps = p0 + tl.arange(0, BLOCK_NNZ)
        m2 = (ps < end)[:, None] & h_mask[None, :]
        a = tl.load(alpha_ptr + ps[:, None] * H + hs[None, :], mask=m2, other=0.0)
        g = tl.load(grad_ptr + ps[:, None] * H + hs[None, :], mask=m2, other=0.0)
        dot += tl.sum(a * g, axis=0)
    acc = tl.zeros((BLOCK_H,), dtype=ddst_ptr.dtype.element_ty)
    for p0 in range(start, end, BLOCK_NNZ):
        ps = p0 + tl.arange(0, BLOCK_NNZ)
        m2 = (ps < end)[:, None] & h_mask[None, :]
        cols = tl.load(col_ptr + ps, mask=ps < end, other=0)
        a = tl.load(alpha_ptr + ps[:, None] * H + hs[None, :], mask=m2, other=0.0)
        g = tl.load(grad_ptr + ps[:, None] * H + hs[None, :], mask=m2, other=0.0)
        raw = tl.load(src_ptr + cols[:, None] * H + hs[None, :], mask=m2, other=0.0) + d[None, :]
        de = a * (g - dot[None, :])
        de = tl.where(m2, tl.where(raw > 0, de, de * slope), 0.0)
        acc += tl.sum(de, axis=0)
        tl.store(de_ptr + ps[:, None] * H + hs[None, :], de.to(de_ptr.dtype.element_ty), mask=m2)
    tl.store(ddst_ptr + r * H + hs, acc.to(ddst_ptr.dtype.element_ty), mask=h_mask)


@triton.jit
def _spmm_heads_kernel(crow_ptr, col_ptr, alpha_ptr, perm_ptr, b_ptr, out_ptr, H, C, HC, stride_bn,
                       HAS_PERM: tl.constexpr, BLOCK_NNZ: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[r, k] = sum_p alpha[q, k // C] B[col p, k] with q = perm[p] (HAS_PERM: the pattern is the
    transpose, whose entry p is nonzero perm[p] of the matrix alpha belongs to) or q = p."""
    r = tl.program_id(0).to(tl.int64)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    k_mask = ks < HC
    heads = ks // C
    start = tl.load(crow_ptr + r)
    end = tl.load(crow_ptr + r + 1)
    acc = tl.zeros((BLOCK_K,), dtype=out_ptr.dtype.element_ty)
    for p0 in range(start, end, BLOCK_NNZ):
        ps = p0 + tl.arange(0, BLOCK_NNZ)
        m2 = (ps < end)[:, None] & k_mask[None, :]
        cols = tl.load(col_ptr + ps, mask=ps < end, other=0)
        qs = tl.load(perm_ptr + ps, mask=ps < end, other=0) if HAS_PERM else ps
        a = tl.load(alpha_ptr + qs[:, None] * H + heads[None, :], mask=m2, other=0.0)
        b = tl.load(b_ptr + cols[:, None] * stride_bn + ks[None, :], mask=m2, other=0.0)
        acc += tl.sum(a * b, axis=0)
    tl.store(out_ptr + r * HC + ks, acc.to(out_ptr.dtype.element_ty), mask=k_mask)


@triton.jit
def _sddmm_heads_kernel(crow_ptr, col_ptr, x_ptr, y_ptr, out_ptr, H, C, HC, BLOCK_NNZ: tl.constexpr,
                        BLOCK_C: tl.constexpr):
    """out[p, h] = <X[r, h*C:(h+1)*C], Y[col p, h*C:(h+1)*C]>."""
    r = tl.program_id(0).to(tl.int64)
    start = tl.load(crow_ptr + r)
    end = tl.load(crow_ptr + r + 1)
    for p0 in range(start, end, BLOCK_NNZ):
        ps = p0 + tl.arange(0, BLOCK_NNZ)
        p_mask = ps < end
        cols = tl.load(col_ptr + ps, mask=p_mask, other=0)
        for h in range(0, H):
            acc = tl.zeros((BLOCK_NNZ,), dtype=out_ptr.dtype.element_ty)
            for c0 in range(0, C, BLOCK_C):
                cs = h * C + c0 + tl.arange(0, BLOCK_C)
                c_mask = (c0 + tl.arange(0, BLOCK_C)) < C
                x = tl.load(x_ptr + r * HC + cs, mask=c_mask, other=0.0)
                y = tl.load(y_ptr + cols[:, None] * HC + cs[None, :], mask=p_mask[:, None] & c_mask[None, :], other=0.0)
                acc += tl.sum(x[None, :] * y, axis=1)
            tl.store(out_ptr + ps * H + h, acc.to(out_ptr.dtype.element_ty), mask=p_mask)


@on_operands_device
def edge_softmax(crow, col, mult, src, dst, slope: float) -> torch.Tensor:
    """GAT attention ``(nnz, H)``; inputs validated by :mod:`netsparse_torch.kernels`."""
    src, dst = src.contiguous(), dst.contiguous()
    n_rows, H = crow.numel() - 1, src.size(1)
    out = torch.empty((col.numel(), H), dtype=src.dtype, device=src.device)
    if col.numel() and H:
        _edge_softmax_kernel[(n_rows,)](crow, col, mult if mult is not None else out, src, dst, out, H, slope,
                                        HAS_MULT=mult is not None, BLOCK_NNZ=_ATT_NNZ,
                                        BLOCK_H=triton.next_power_of_2(H))
    return out


@on_operands_device
def edge_softmax_backward(crow, col, alpha, grad, src, dst, slope: float, t_crow, t_col,
                          perm) -> tuple[torch.Tensor, torch.Tensor]:
    """``(d_src, d_dst)`` of :func:`edge_softmax`. ``d_src[c] = sum of d e over column c`` runs as the
    multi-head SpMM of the transposed pattern ``(t_crow, t_col, perm)`` with a ones matrix (one channel
    per head): no atomics, the same bits every run."""
    src, dst, alpha, grad = src.contiguous(), dst.contiguous(), alpha.contiguous(), grad.contiguous()
    n_rows, H = crow.numel() - 1, src.size(1)
    d_dst = torch.zeros_like(dst)
    if not (n_rows and H and col.numel()):
        return torch.zeros_like(src), d_dst
    de = torch.empty((col.numel(), H), dtype=src.dtype, device=src.device)
    _edge_softmax_bwd_kernel[(n_rows,)](crow, col, alpha, grad, src, dst, de, d_dst, H, slope,
                                        BLOCK_NNZ=_ATT_NNZ, BLOCK_H=triton.next_power_of_2(H))
    return spmm_heads(t_crow, t_col, de, torch.ones((n_rows, H), dtype=src.dtype, device=src.device), perm), d_dst


def _heads_grid(n_rows: int, HC: int, block_k: int):
    return (max(n_rows, 1), triton.cdiv(max(HC, 1), block_k))


@on_operands_device
def spmm_heads(crow, col, alpha, B, perm=None) -> torch.Tensor:
    """Multi-head SpMM ``(crow.numel() - 1, H*C)``; with ``perm``, entry ``p`` of the pattern reads
    ``alpha[perm[p]]`` (the transposed product on a cached transposed pattern, without atomics)."""
    n_rows, HC, H = crow.numel() - 1, B.size(1), alpha.size(1)
    B = B if B.stride(1) == 1 else B.contiguous()
    out = torch.zeros((n_rows, HC), dtype=B.dtype, device=B.device)
    if n_rows and HC and col.numel():  # (an empty tensor's null pointer cannot be launched)
        block_k = min(64, triton.next_power_of_2(HC))
        _spmm_heads_kernel[_heads_grid(n_rows, HC, block_k)](
            crow, col, alpha.contiguous(), perm if perm is not None else crow, B, out, H, HC // H, HC, B.stride(0),
            HAS_PERM=perm is not None, BLOCK_NNZ=_ATT_NNZ, BLOCK_K=block_k)
    return out


@on_operands_device
def sddmm_heads(crow, col, X, Y, heads: int) -> torch.Tensor:
    """Multi-head SDDMM ``(nnz, H)``."""
    X, Y = X.contiguous(), Y.contiguous()
    n_rows, HC = crow.numel() - 1, X.size(1)
    out = torch.empty((col.numel(), heads), dtype=X.dtype, device=X.device)
    if col.numel() and n_rows:
        C = HC // heads
        _sddmm_heads_kernel[(n_rows,)](crow, col, X, Y, out, heads, C, HC, BLOCK_NNZ=_ATT_NNZ,
                                       BLOCK_C=min(64, triton.next_power_of_2(max(C, 1))))
    return out
