"""The steps of a full-graph training loop that differ from one process, as :class:`DistGraph` methods.

Each rank holds its rows of the model's output. A loop is the full-graph (one-process) loop when:

- the loss of a rank is its share of the mean over *every* rank's split rows: summed over this rank's
  rows, divided by the global count (:func:`split_loss`). A per-rank mean weighs each rank's rows by
  the rank's size, and is ``nan`` on a rank that holds none of the split;
- the gradients are *summed* over ranks (:func:`sync_gradients`): the sum of the shares' gradients is
  the full-graph gradient. DDP averages instead (it divides by the world size), so under DDP
  :func:`sync_gradients` multiplies DDP's average back to the sum;
- metrics count over every rank (:func:`accuracy`), so a rank without test nodes is no special case.

A rank that forgets to synchronise trains its own weights, silently. Three checks catch it, each a
:class:`~netsparse_torch.errors.ConfigError` on every rank:

- the distributed aggregation itself (:func:`check_aggregation`, whatever the loss): at its first calls
  and then at every power-of-two call, a checksum of the parameters that produced its input is
  compared across ranks (:func:`check_in_sync`: one all-gather of three float64 per rank). A loop that
  keeps PyG's ``F.cross_entropy(out[mask], y[mask])`` and never sums its gradients is stopped at the
  first aggregation after its first optimizer step;
- a backward through a :func:`split_loss` followed by another :func:`split_loss` without
  :func:`sync_gradients` in between (local, every step);
- at the first ``check_steps`` calls of :func:`split_loss`, the checksum of the parameters behind ``out``.

All assume what the helpers assume: every parameter is replicated on every rank (``check_steps=0``
turns the checks off for a model with rank-local parameters, e.g. sharded node embeddings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from netsparse_torch.errors import ConfigError
from netsparse_torch.kernels import _choice, resolve_backend

if TYPE_CHECKING:
    from netsparse_torch.nn.dist_graph import DistGraph

SYNC_HINT = "call dg.sync_gradients(model) after loss.backward() and before optimizer.step()"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def all_reduce(dg: DistGraph, t: torch.Tensor, op=dist.ReduceOp.SUM) -> torch.Tensor:
    """``t`` reduced over the graph's ranks (in place; a no-op at world size 1, even without a process
    group)."""
    if dg.world_size > 1:
        dist.all_reduce(t, op=op, group=dg.group)
    return t


def split_size(dg: DistGraph, split: str) -> int:
    """Nodes of ``split`` on every rank together (one all-reduce, the first time per split)."""
    if split not in dg._split_sizes:
        total = int(all_reduce(dg, dg.mask(split).sum().to(torch.float64).reshape(1)).item())
        if total == 0:
            raise ConfigError(f"split {split!r} has no nodes on any rank: its mask ({split}_mask) is all False (a "
                              f"PyG Data without {split}_mask has none: set data.{split}_mask, e.g. with "
                              "torch_geometric.transforms.RandomNodeSplit)")
        dg._split_sizes[split] = total
    return dg._split_sizes[split]


def _check_rows(dg: DistGraph, out: torch.Tensor, what: str) -> None:
    rows = dg.row_range.stop - dg.row_range.start
    if out.dim() != 2 or out.size(0) != rows:
        raise ConfigError(f"{what}: out has shape {tuple(out.shape)}, expected ({rows}, classes): "
                          "pass the model's output on dg.x, this rank's rows")


def split_loss(dg: DistGraph, out: torch.Tensor, split: str = "train") -> torch.Tensor:
    """This rank's share of the cross-entropy averaged over every rank's ``split`` nodes:
    ``sum over this rank's split rows / global count``. Summed over ranks it is the one-process
    ``F.cross_entropy(out[mask], y[mask])``, and so are its gradients once :func:`sync_gradients` sums
    them. ``out`` are logits or log-probabilities (``log_softmax`` of log-probabilities changes nothing).
    """
    _check_rows(dg, out, "dg.loss")
    if dg._backward_unsynced:
        raise ConfigError(f"dg.loss: the previous loss was backpropagated but its gradients were never summed "
                          f"over ranks, so each rank trains its own weights; {SYNC_HINT}")
    dg._loss_calls += 1
    if dg.check_steps and dg._loss_calls <= dg.check_steps and out.grad_fn is not None:
        check_in_sync(dg, output_parameters(out), _when(dg._loss_calls))
    mask = dg.mask(split)
    loss = F.cross_entropy(out[mask], dg.y[mask], reduction="sum") / split_size(dg, split)
    if loss.requires_grad and dg.check_steps:
        loss.register_hook(dg._backward_seen)
    return loss


#: Aggregation calls up to this one are all checked; later ones at powers of two. Dense enough to reach
#: past the first optimizer step of a deep model evaluated every epoch (8 layers: 16 calls an epoch),
#: sparse enough that a long run pays a few dozen all-gathers of three numbers in all.
DENSE_CHECKS = 16


def check_aggregation(dg: DistGraph, x: torch.Tensor) -> None:
    """Before an aggregation of ``x``: at the checked calls, raise on every rank when the parameters that
    produced ``x`` (the leaves of its autograd graph) differ between ranks. Every rank aggregates the same
    number of times (each aggregation is a collective), so the ranks check at the same calls."""
    if not dg.check_steps or dg.world_size == 1:
        return
    dg._aggregations += 1
    n = dg._aggregations
    if n > DENSE_CHECKS and n & (n - 1):
        return
    params = output_parameters(x) if x.grad_fn is not None else []
    fix = (SYNC_HINT if dg._aggregation_in_sync else
           f"build the model after the same torch.manual_seed(seed) on every rank (or wrap it in DDP), and {SYNC_HINT}")
    check_in_sync(dg, params, f"at aggregation {n}, so each rank trains its own weights: {fix} (a model with "
                  "rank-local parameters turns this check off with DistGraph(..., check_steps=0))")
    dg._aggregation_in_sync = dg._aggregation_in_sync or bool(params)


def agree_kernels(dg: DistGraph, adjacency, x: torch.Tensor) -> None:
    """Before the first aggregation of each width and dtype on CUDA: every rank times the SpMM kernels
    on its rows and all take one choice for the run (:func:`netsparse_torch.kernels._choice.agree`), so
    no two ranks run different kernels. Every rank aggregates the same widths in the same order (each
    aggregation is a collective), so the ranks agree at the same calls. Nothing on CPU, or when
    ``NETSPARSE_CUDA_SPMM`` forces a kernel."""
    k = x.size(1)
    if (resolve_backend("auto", x.device) != "triton" or _choice.forced_backend() is not None
            or _choice.agreed(k, x.dtype)):
        return

    def exchange(obj) -> list:
        if dg.world_size == 1:
            return [obj]
        everyone = [None] * dg.world_size
        dist.all_gather_object(everyone, obj, group=dg.group)
        return everyone

    _choice.agree(adjacency, k, x.dtype, dg.rank, dg.world_size, exchange)


def _when(call: int) -> str:
    if call == 1:
        return ("at the first call of dg.loss, before any step: build the model after the same "
                "torch.manual_seed(seed) on every rank (or wrap it in DDP, which copies rank 0's)")
    return f"at the {_ordinal(call)} call of dg.loss, after {call - 1} step(s): {SYNC_HINT}"


def output_parameters(out: torch.Tensor) -> list[torch.nn.Parameter]:
    """The parameters ``out`` was computed from: the leaves of its autograd graph (no model needed)."""
    seen, params, stack = set(), [], [out.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        var = getattr(fn, "variable", None)  # an AccumulateGrad node: its leaf tensor
        if isinstance(var, torch.nn.Parameter):
            params.append(var)
        stack.extend(f for f, _ in fn.next_functions)
    return params


def _checksum(params: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """(count, sum, sum of squares) of ``params`` in float64, independent of their order (sorted before
    adding), so that ranks that walk the same parameters in another order agree bit for bit."""
    if not params:
        return torch.zeros(3, dtype=torch.float64, device=device)
    per = torch.stack([torch.stack([p.detach().double().sum(), p.detach().double().square().sum()])
                       for p in params]).to(device)
    sums = per.sort(dim=0).values.sum(dim=0)
    return torch.cat([torch.tensor([float(len(params))], dtype=torch.float64, device=device), sums])


def check_in_sync(dg: DistGraph, params, when: str = f"now: {SYNC_HINT}") -> None:
    """Raise on every rank when ``params`` (a model, or its parameters) differ between ranks: a checksum
    per rank (count, sum and sum of squares in float64), all-gathered, compared exactly (the summed
    gradients and so the updates are bit-identical on every rank). Every rank calls it together."""
    if dg.world_size == 1:
        return
    if isinstance(params, torch.nn.Module):
        params = list(params.parameters())
    mine = _checksum(list(params), dg.device)
    every = [torch.empty_like(mine) for _ in range(dg.world_size)]
    dist.all_gather(every, mine, group=dg.group)
    differ = [r for r, c in enumerate(every) if not torch.equal(c, every[0])]
    if differ:
        raise ConfigError(f"parameters of rank {differ[0]} differ from rank 0 {when}")


def sync_gradients(dg: DistGraph, model: torch.nn.Module, complete: bool = False) -> None:
    """Make every rank's gradients the full-graph gradient: their sum over ranks (with :func:`split_loss`,
    the one-process gradient). A :class:`~torch.nn.parallel.DistributedDataParallel` model was already
    averaged by DDP during the backward: its gradients are multiplied by the world size instead (no
    second all-reduce). A parameter that no rank has a gradient for keeps none, as in one process.
    ``complete``: the caller's loss reaches every parameter on every rank (``netsparse-train``'s, a loss
    over the whole model's output, zero on a rank without training nodes), so no flag of which gradients
    exist rides along with them; a missing one is then an error."""
    dg._backward_unsynced = False
    if dg.world_size == 1:
        return
    if isinstance(model, DistributedDataParallel):
        _undo_ddp_average(dg, model)
        return
    by_dtype: dict[torch.dtype, list[torch.nn.Parameter]] = {}
    for p in model.parameters():
        if p.requires_grad:
            by_dtype.setdefault(p.dtype, []).append(p)
    for params in by_dtype.values():
        if complete:
            _sum_complete(dg, params)
        else:
            _sum_flat(dg, params)


def _sum_complete(dg: DistGraph, params: list[torch.nn.Parameter]) -> None:
    """Sum the gradients of ``params`` (one dtype), which every rank has, in one flat all-reduce."""
    missing = [i for i, p in enumerate(params) if p.grad is None]
    if missing:
        raise RuntimeError(f"sync_gradients(complete=True): parameter {missing[0]} has no gradient on rank "
                           f"{dg.rank}; the loss does not reach every parameter")
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    all_reduce(dg, flat)
    offset = 0
    for p in params:
        p.grad.copy_(flat[offset: offset + p.numel()].view_as(p))
        offset += p.numel()


def _sum_flat(dg: DistGraph, params: list[torch.nn.Parameter]) -> None:
    """Sum the gradients of ``params`` (one dtype) over ranks in one flat all-reduce. A flag per parameter
    rides along: a gradient that no rank has stays ``None`` (the optimizer skips it, as in one process),
    and a rank whose loss did not reach a parameter that others' did adds zeros."""
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
                     + [torch.tensor([p.grad is not None for p in params], dtype=params[0].dtype,
                                     device=params[0].device)])
    all_reduce(dg, flat)
    has = flat[-len(params):].tolist()
    offset = 0
    for p, h in zip(params, has, strict=True):
        if h:
            summed = flat[offset: offset + p.numel()].view_as(p)
            if p.grad is None:
                p.grad = summed.clone()
            else:
                p.grad.copy_(summed)
        offset += p.numel()


def _undo_ddp_average(dg: DistGraph, model: DistributedDataParallel) -> None:
    ddp_world = dist.get_world_size(model.process_group)
    if ddp_world != dg.world_size:
        raise ConfigError(f"the DDP model averages over {ddp_world} ranks but the graph spans {dg.world_size}: "
                          "wrap the model in DDP with the graph's process group (process_group=dg.group)")
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad.mul_(ddp_world)


@torch.no_grad()
def accuracy(dg: DistGraph, out: torch.Tensor, split: str = "test") -> float:
    """The fraction of every rank's ``split`` nodes whose argmax of ``out`` is their label, the same
    float on every rank (exact counts summed over ranks; a rank without such nodes adds zeros)."""
    _check_rows(dg, out, "dg.accuracy")
    mask = dg.mask(split)
    correct = (out[mask].argmax(dim=1) == dg.y[mask]).sum().to(torch.float64).reshape(1)
    return float(all_reduce(dg, correct).item()) / split_size(dg, split)


def total(dg: DistGraph, value) -> float:
    """The sum over ranks of a scalar (a tensor or a number), e.g. each rank's :func:`split_loss`: the
    whole graph's loss, on every rank. Every rank calls it together."""
    t = torch.as_tensor(value.detach() if isinstance(value, torch.Tensor) else value, dtype=torch.float64)
    return float(all_reduce(dg, t.reshape(1).to(dg.device)).item())
