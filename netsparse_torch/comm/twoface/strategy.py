"""``twoface``: the Two-Face hybrid collective plus one-sided SpMM on ``torch.distributed``.

Synchronous transfers: one grouped exchange (``all_to_all_single``) in which each owner sends every
dense synchronous stripe to each rank of its destination set. We chose it over one broadcast per
destination set on a subgroup because the destination sets differ per stripe: subgroups would need up
to 2^p communicators created collectively up front, and p small broadcasts per stripe cost p latencies,
while one exchange moves exactly the same bytes (each stripe once per destination) in one call.
Asynchronous transfers: a second exchange of only the needed rows of asynchronous stripes, coalesced
up to (127/K)+1 rows apart (Two-Face §5.2). Both are issued non-blocking (``async_op=True``); the
local-input SpMM runs while they fly, then the one-sided SpMM on the fetched rows, then the dense
stripes. Backward is the reverse: the transposed parts produce the halo gradients, which go back to
their owners through the reverse exchanges, again overlapped with the local transposed SpMM.

Attention layers (GAT) need every row before their local kernels, so :class:`_TwoFaceGather` moves
the same stripes and fetched rows (the layout of the attention pattern at the gathered width) and
returns ``[X_own; async rows; sync rows]``; its backward is the same pair of reverse exchanges.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from hw_models.twoface.classify import (
    ASYNC,
    KIND_NAMES,
    LOCAL,
    SYNC,
    check_width,
    classify,
    default_stripe_width,
    find_stripes,
)
from hw_models.twoface.cost import CostModel
from netsparse_torch.comm.base import Strategy, row_bytes
from netsparse_torch.comm.halo import Done, add_rows
from netsparse_torch.comm.twoface.layout import Layout, Transfer, build_layout
from netsparse_torch.kernels import CSR, gather, spmm


def _start(out: torch.Tensor, inp: torch.Tensor, out_counts: list[int], in_counts: list[int], xfer: Transfer):
    if not xfer.active:
        return Done()
    return dist.all_to_all_single(out, inp, out_counts, in_counts, group=xfer.group, async_op=True)


def _forward_exchange(x: torch.Tensor, xfer: Transfer):
    recv = x.new_empty(xfer.n_recv, x.size(1))
    return recv, _start(recv, gather(x, xfer.send_idx), xfer.recv_counts, xfer.send_counts, xfer)


def _backward_exchange(g_rows: torch.Tensor, xfer: Transfer):
    back = g_rows.new_empty(xfer.send_idx.numel(), g_rows.size(1))
    return back, _start(back, g_rows.contiguous(), xfer.send_counts, xfer.recv_counts, xfer)


def _add_spmm(out: torch.Tensor, a, z: torch.Tensor) -> None:
    if a.col.numel():  # an empty part (no stripe of its class on this rank) costs no pass over out
        out += spmm(a, z)


class _TwoFaceSpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: TwoFace, layout: Layout, tag: str) -> torch.Tensor:
        ctx.strat, ctx.layout, ctx.tag = strat, layout, tag
        x = x.detach()
        z_sync, w_sync = _forward_exchange(x, layout.sync_xfer)  # the big dense stripes start first
        z_async, w_async = _forward_exchange(x, layout.async_xfer)
        out = spmm(layout.local.a, x)
        w_async.wait()
        _add_spmm(out, layout.async_.a, z_async)
        w_sync.wait()
        _add_spmm(out, layout.sync.a, z_sync)
        strat.count("forward", layout, x, tag)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        layout, strat = ctx.layout, ctx.strat
        g = grad.contiguous()
        back_sync, w_sync = _backward_exchange(spmm(layout.sync.a_t, g), layout.sync_xfer)
        back_async, w_async = _backward_exchange(spmm(layout.async_.a_t, g), layout.async_xfer)
        gx = spmm(layout.local.a_t, g)
        _add_returned(gx, layout, (back_async, w_async), (back_sync, w_sync))
        strat.count("backward", layout, g, ctx.tag)
        return gx, None, None, None


def _add_returned(gx: torch.Tensor, layout: Layout, async_back: tuple, sync_back: tuple) -> None:
    """Add the gradients returned for the rows this rank sent, asynchronous stripes first."""
    for (back, work), xfer in ((async_back, layout.async_xfer), (sync_back, layout.sync_xfer)):
        work.wait()
        add_rows(gx, xfer.send_idx, back)


class _TwoFaceGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: TwoFace, layout: Layout, tag: str) -> torch.Tensor:
        ctx.strat, ctx.layout, ctx.tag = strat, layout, tag
        x = x.detach()
        z_sync, w_sync = _forward_exchange(x, layout.sync_xfer)
        z_async, w_async = _forward_exchange(x, layout.async_xfer)
        w_async.wait()
        w_sync.wait()
        strat.count("forward", layout, x, tag)
        return torch.cat([x, z_async, z_sync])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        layout, strat = ctx.layout, ctx.strat
        g = grad.contiguous()
        n, n_async = strat.plan.n_local, layout.async_xfer.n_recv
        back_sync, w_sync = _backward_exchange(g[n + n_async:], layout.sync_xfer)
        back_async, w_async = _backward_exchange(g[n: n + n_async], layout.async_xfer)
        gx = g[:n].clone()
        _add_returned(gx, layout, (back_async, w_async), (back_sync, w_sync))
        strat.count("backward", layout, g, ctx.tag)
        return gx, None, None, None


class TwoFace(Strategy):
    """Options: ``width`` (stripe width W, default :func:`default_stripe_width`), ``profile`` (a
    ``netsparse-calibrate`` JSON with the coefficients and the measured overlap; default: Two-Face
    Table 3 and ``overlap=max``, :data:`~hw_models.twoface.cost.DEFAULT_SOURCE`),
    ``memory_limit_bytes`` (memory guard on synchronously received stripes, default none)."""

    name = "twoface"
    space = "global"

    def __init__(self, plan, width: int | None = None, profile: str | None = None,
                 memory_limit_bytes: float | None = None, group=None, **options):
        super().__init__(plan, group=group, **options)
        self.width = check_width(width) if width is not None else default_stripe_width(plan.num_nodes,
                                                                                      plan.world_size)
        self.cost = CostModel.resolve(profile)
        self.memory_limit_bytes = memory_limit_bytes
        self._layouts: dict[tuple[int, int], Layout] = {}
        self.sync_bytes = self.async_bytes = 0

    def layout(self, adjacency: CSR, k: int) -> Layout:
        key = (id(adjacency), k)
        if key not in self._layouts:
            plan = self.plan
            rows = _scipy_rows(adjacency, plan.num_nodes)
            stripes = classify(find_stripes(rows, plan.bounds, plan.rank, self.width), k, self.cost.coefficients,
                               self.width, self.memory_limit_bytes, overlap=self.cost.overlap)
            with self.first_use():
                self._layouts[key] = build_layout(rows, stripes, plan.bounds, plan.rank, plan.world_size, k,
                                                  self.width, self.group, adjacency.device)
        return self._layouts[key]

    def propagate(self, adjacency: CSR, x_local: torch.Tensor, tag: str = "") -> torch.Tensor:
        if self.plan.world_size == 1:
            return spmm(adjacency, x_local)
        return _TwoFaceSpMM.apply(x_local, self, self.layout(adjacency, x_local.size(1)), tag)

    def gather(self, x_local: torch.Tensor, tag: str = "", adjacency: CSR | None = None) -> torch.Tensor:
        if self.plan.world_size == 1:
            return x_local
        if adjacency is None:
            raise ValueError("twoface: gather needs the adjacency whose columns it serves (its stripes)")
        return _TwoFaceGather.apply(x_local, self, self.layout(adjacency, x_local.size(1)), tag)

    def gather_layout(self, adjacency: CSR, k: int) -> tuple[CSR, np.ndarray]:
        """Columns of ``adjacency`` re-indexed into ``[own rows; async rows; sync rows]``."""
        plan = self.plan
        if plan.world_size == 1:
            return super().gather_layout(adjacency, k)
        lay = self.layout(adjacency, k)
        cols = adjacency.col.cpu().numpy()
        kind = lay.stripes.kind[lay.stripes.of_nnz]
        n, n_async = plan.n_local, lay.async_rows.size
        out = np.empty_like(cols)
        for which, base, rows in ((ASYNC, n, lay.async_rows), (SYNC, n + n_async, lay.sync_rows)):
            m = kind == which
            out[m] = base + np.searchsorted(rows, cols[m])
        m = kind == LOCAL
        out[m] = cols[m] - plan.row_start
        ids = np.concatenate([np.arange(plan.row_start, plan.row_start + n), lay.async_rows, lay.sync_rows])
        csr = CSR(adjacency.crow, torch.from_numpy(out).to(adjacency.device), adjacency.val, ids.size)
        return csr, ids.astype(np.int64)

    def count(self, direction: str, layout: Layout, x: torch.Tensor, tag: str) -> None:
        s, a = row_bytes(layout.sync_xfer.n_recv, x), row_bytes(layout.async_xfer.n_recv, x)
        self.sync_bytes += s
        self.async_bytes += a
        self.traffic.add(direction, s + a, x.size(1), tag)

    def counters(self) -> dict:
        return {**super().counters(), "sync_bytes": self.sync_bytes, "async_bytes": self.async_bytes}

    def add_counters(self, counters: dict) -> None:
        super().add_counters(counters)
        self.sync_bytes += int(counters.get("sync_bytes", 0))
        self.async_bytes += int(counters.get("async_bytes", 0))

    def stats(self) -> dict:
        by_k = {}
        for (_, k), lay in self._layouts.items():
            by_k[str(k)] = {**lay.stripes.counts(), "sync_rows": lay.sync_xfer.n_recv,
                            "async_rows": lay.async_xfer.n_recv,
                            "dense_stripes_sent": sum(len(d) for d in lay.destinations.values())}
        totals = {f"{n}_stripes": sum(v[f"{n}_stripes"] for v in by_k.values()) for n in KIND_NAMES.values()}
        return {"stripe_width": self.width, "coefficients": self.cost.coefficients.to_dict(),
                "coefficients_source": self.cost.source, "overlap": self.cost.overlap, **totals,
                "sync_bytes": self.sync_bytes, "async_bytes": self.async_bytes, "by_k": by_k}


def _scipy_rows(adjacency: CSR, n_cols: int):
    import scipy.sparse as sp

    crow, col, val = (t.detach().cpu().numpy() for t in (adjacency.crow, adjacency.col, adjacency.val))
    return sp.csr_matrix((val.astype(np.float32), col, crow), shape=(adjacency.n_rows, n_cols))
