"""``ds``, dense shifting (Bharadwaj et al., 1.5D; the Two-Face §6.3 baseline).

Ranks form ``q = p/c`` teams of ``c`` consecutive ranks (replication factor ``c``). Forward: an
all_gather inside the team gives every member the team's ``c`` feature blocks (the "block set");
then ``q`` rounds: multiply this rank's rows restricted to the block set it holds, and shift the block
set cyclically to the same member of the previous team (one batch of isend and irecv, the next shift
overlapping the compute of the current round). Backward is the reverse: partial gradients of each block set travel
the ring the other way, accumulating, and a reduce-scatter inside the team returns each block's sum
to its owner. Blocks are padded to the largest block so every message has one shape.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist

from netsparse_torch.backend import batch_isend_irecv
from netsparse_torch.comm.base import Strategy, row_bytes
from netsparse_torch.errors import ConfigError
from netsparse_torch.kernels import CSR, spmm


def check_replication(c, world_size: int) -> int:
    if not isinstance(c, int | np.integer) or isinstance(c, bool) or c < 1 or world_size % c:
        raise ConfigError(f"dense shifting: replication factor {c!r} must be a positive integer dividing "
                          f"the world size {world_size}")
    return int(c)


class _Teams:
    """Team subgroups, created once per process (``new_group`` is collective)."""

    cache: dict[tuple[int, int], list] = {}

    @classmethod
    def group(cls, world_size: int, c: int, team: int):
        key = (world_size, c)
        if key not in cls.cache:
            cls.cache[key] = [dist.new_group(list(range(t * c, (t + 1) * c))) for t in range(world_size // c)]
        return cls.cache[key][team]


def _shift(buf: torch.Tensor, to: int, frm: int) -> tuple[torch.Tensor, list]:
    """Send ``buf`` to ``to`` and receive its like from ``frm`` as one batch: with q=2 both are the same
    peer, and NCCL may deadlock on a send and a receive posted apart (backend.batch_isend_irecv)."""
    out = torch.empty_like(buf)
    return out, batch_isend_irecv([dist.P2POp(dist.isend, buf, to), dist.P2POp(dist.irecv, out, frm)])


class _DSSpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: DenseShifting, parts: list[tuple[CSR, CSR]], tag: str) -> torch.Tensor:
        ctx.strat, ctx.parts, ctx.tag = strat, parts, tag
        held = strat.team_gather(x.detach())
        out = x.new_zeros(strat.plan.n_local, x.size(1))
        for t in range(strat.q):
            nxt, reqs = _shift(held, strat.prev, strat.next) if t + 1 < strat.q else (None, [])
            out += spmm(parts[(strat.team + t) % strat.q][0], held)
            for r in reqs:
                r.wait()
            held = nxt
        strat.traffic.add("forward", strat.moved_bytes(x), x.size(1), tag)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        strat, parts = ctx.strat, ctx.parts
        g = grad.contiguous()
        acc = None
        for t in reversed(range(strat.q)):
            part = spmm(parts[(strat.team + t) % strat.q][1], g)
            acc = part if acc is None else acc + part
            if t:
                acc, reqs = _shift(acc, strat.next, strat.prev)
                for r in reqs:
                    r.wait()
        strat.traffic.add("backward", strat.moved_bytes(g), g.size(1), ctx.tag)
        return strat.team_reduce_scatter(acc), None, None, None


class DenseShifting(Strategy):
    """Option ``replication`` (c; 2, 4 or 8 in the Two-Face §6.3 runs): must divide the world size.

    Only on the default group (``group=None`` or WORLD): the shifts are point-to-point by global rank
    and the team groups are created collectively by every process of the job."""

    name = "ds"
    space = "global"
    no_gather = ("dense shifting never holds all of a row's neighbours at once: each round multiplies the "
                 "block set it holds and shifts it on, while an attention row's softmax needs every score of "
                 "the row before any aggregation")

    def __init__(self, plan, replication: int = 2, group=None, **options):
        if group is not None and group is not dist.group.WORLD:
            raise ConfigError("dense shifting (strategy=ds) runs only on the default process group (group=None): "
                              "its shifts address global ranks and its team groups need every process of the "
                              "job; use su, sa, twoface or netsparse on a subgroup")
        super().__init__(plan, group=group, **options)
        p = plan.world_size
        self.c = check_replication(replication, p)
        self.q = p // self.c
        self.team, self.member = divmod(plan.rank, self.c)
        self.prev = ((self.team - 1) % self.q) * self.c + self.member
        self.next = ((self.team + 1) % self.q) * self.c + self.member
        self.block = int(max(plan.block_sizes()))
        self._parts: dict[int, list[tuple[CSR, CSR]]] = {}
        if p > 1 and self.c > 1:
            _Teams.group(p, self.c, 0)  # every rank creates every team group, in the same order

    def team_gather(self, x: torch.Tensor) -> torch.Tensor:
        """The team's block set: ``c`` padded blocks, member order."""
        padded = x.new_zeros(self.block, x.size(1))
        padded[: x.size(0)] = x
        if self.c == 1:
            return padded
        parts = [torch.empty_like(padded) for _ in range(self.c)]
        dist.all_gather(parts, padded, group=_Teams.group(self.plan.world_size, self.c, self.team))
        return torch.cat(parts)

    def team_reduce_scatter(self, acc: torch.Tensor) -> torch.Tensor:
        n = self.plan.n_local
        if self.c == 1:
            return acc[:n].contiguous()
        mine = acc.new_empty(self.c * self.block, acc.size(1))
        dist.all_to_all_single(mine, acc.contiguous(), group=_Teams.group(self.plan.world_size, self.c, self.team))
        return mine.view(self.c, self.block, -1).sum(0)[:n]

    def moved_bytes(self, x: torch.Tensor) -> int:
        """Padded rows received: c-1 blocks in the team exchange, c blocks per shift."""
        return row_bytes(self.block * ((self.c - 1) + self.c * (self.q - 1)), x)

    def parts(self, adjacency: CSR) -> list[tuple[CSR, CSR]]:
        """This rank's rows split by team, columns re-indexed into that team's padded block set."""
        key = id(adjacency)
        if key not in self._parts:
            bounds = np.asarray(self.plan.bounds, dtype=np.int64)
            crow, col, val = (t.detach().cpu().numpy() for t in (adjacency.crow, adjacency.col, adjacency.val))
            owner = np.searchsorted(bounds, col, side="right") - 1
            pos = (owner % self.c) * self.block + col - bounds[owner]
            rows = np.repeat(np.arange(adjacency.n_rows), np.diff(crow))
            out = []
            for team in range(self.q):
                m = owner // self.c == team
                a = sp.csr_matrix((val[m], (rows[m], pos[m])), shape=(adjacency.n_rows, self.c * self.block))
                out.append((CSR.from_scipy(a, adjacency.device), CSR.from_scipy(a.T, adjacency.device)))
            self._parts[key] = out
        return self._parts[key]

    def propagate(self, adjacency: CSR, x_local: torch.Tensor, tag: str = "") -> torch.Tensor:
        if self.plan.world_size == 1:
            return spmm(adjacency, x_local)
        return _DSSpMM.apply(x_local, self, self.parts(adjacency), tag)

    def stats(self) -> dict:
        return {"replication": self.c, "rounds": self.q}
