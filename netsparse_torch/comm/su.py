"""``su``, sparsity-unaware: all_gather every feature row, as CAGNET's 1D algorithm does."""

from __future__ import annotations

import torch
import torch.distributed as dist

from netsparse_torch.comm.base import Strategy, row_bytes


class _SUGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: SparsityUnaware, tag: str) -> torch.Tensor:
        plan = strat.plan
        ctx.strat, ctx.tag = strat, tag
        sizes = plan.block_sizes()
        strat.traffic.add("forward", row_bytes(plan.num_nodes - plan.n_local, x), x.size(1), tag)
        if len(set(sizes)) == 1:
            parts = [x.new_empty(x.shape) for _ in sizes]
            dist.all_gather(parts, x.contiguous(), group=strat.group)
            return torch.cat(parts)
        # gloo's all_gather needs equal shapes; unequal blocks (partition=nnz) go as an all-gather-v,
        # one all_to_all in which every rank sends its block to every rank, so nothing is padded.
        full = x.new_empty(plan.num_nodes, x.size(1))
        dist.all_to_all_single(full, x.repeat(plan.world_size, 1), sizes, [plan.n_local] * plan.world_size,
                               group=strat.group)
        return full

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        strat = ctx.strat
        plan = strat.plan
        # The reverse is a reduce-scatter: each owner sums every rank's gradient for its rows.
        received = grad.new_empty(plan.world_size * plan.n_local, grad.size(1))
        dist.all_to_all_single(received, grad.contiguous(), [plan.n_local] * plan.world_size,
                               plan.block_sizes(), group=strat.group)
        strat.traffic.add("backward", row_bytes(plan.num_nodes - plan.n_local, grad), grad.size(1), ctx.tag)
        return received.view(plan.world_size, plan.n_local, -1).sum(0), None, None


class SparsityUnaware(Strategy):
    name = "su"
    space = "global"
    function = _SUGather
