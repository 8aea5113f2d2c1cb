"""FSDP on the netsparse backend, a drop-in for gloo: a small model sharded with ``fully_shard`` on CPU
trains at 2 ranks with ``backend="netsparse"``, through the backend's all-gather and reduce-scatter
(``all_gather_single`` / ``reduce_scatter_single`` with ReduceOp.AVG), and ends as the same model as
one process training on both ranks' batches."""

import torch
import torch.distributed as dist

import netsparse_torch
from netsparse_torch.run.launch import launch

STEPS, BATCH, WS = 3, 16, 2


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))


def batches(rank):
    gen = torch.Generator().manual_seed(rank)
    return [torch.randn(BATCH, 8, generator=gen) for _ in range(STEPS)]


def loss_of(model, x):
    return (model(x) - x.sum(1, keepdim=True)).pow(2).mean()


def fsdp_training(rank, world_size):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    assert dist.get_backend() == "netsparse"
    model = make_model()
    mesh = init_device_mesh("cpu", (world_size,))
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    netsparse_torch.reset_comm_stats()
    losses = []
    for x in batches(rank):
        loss = loss_of(model, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    stats = netsparse_torch.comm_stats()
    full = {name: p.full_tensor().detach() for name, p in model.state_dict().items()}  # a collective
    everyone = [None] * world_size
    dist.all_gather_object(everyone, (losses, stats))
    return everyone, full


def reference():
    """One process, one model: each step's gradient is the mean of the ranks' losses' gradients."""
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = [[], []]
    for xs in zip(*(batches(r) for r in range(WS)), strict=True):
        per_rank = [loss_of(model, x) for x in xs]
        opt.zero_grad()
        (sum(per_rank) / WS).backward()
        opt.step()
        for r, loss in enumerate(per_rank):
            losses[r].append(loss.item())
    return losses, model.state_dict()


def test_fsdp_trains_on_the_netsparse_backend():
    everyone, full = launch(fsdp_training, WS, timeout_s=120)
    ref_losses, ref_state = reference()
    for rank, (losses, stats) in enumerate(everyone):
        torch.testing.assert_close(losses, ref_losses[rank], rtol=1e-5, atol=1e-6)
        # FSDP's own collectives, counted: parameters all-gathered, gradients reduce-scattered every step
        assert stats["allgather"]["calls"] >= STEPS and stats["reduce_scatter"]["calls"] >= STEPS, stats
    assert full.keys() == ref_state.keys()
    for name, value in full.items():
        torch.testing.assert_close(value, ref_state[name], rtol=1e-5, atol=1e-6, msg=name)
