"""The netsparse backend: a plain DDP script that only changes the backend name runs unchanged,
and the backend counts calls and bytes per collective."""

import subprocess
import sys

import torch
import torch.distributed as dist

import netsparse_torch
from netsparse_torch.run.launch import free_port, launch


def ddp_script(rank, world_size):
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(rank)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(8, 4, generator=gen)).pow(2).mean().backward()
        opt.step()
    weights = [None] * world_size
    dist.all_gather_object(weights, model.module.weight.detach())
    assert dist.get_backend() == "netsparse"
    return weights, netsparse_torch.comm_stats()


def test_ddp_runs_unchanged_on_netsparse_backend():
    weights, stats = launch(ddp_script, 2)
    torch.testing.assert_close(weights[0], weights[1])  # DDP kept the replicas in sync
    assert stats["allreduce"]["calls"] >= 3  # one gradient bucket per step at least
    assert stats["broadcast"]["calls"] >= 1  # DDP's initial parameter broadcast


def counted(rank, world_size):
    netsparse_torch.reset_comm_stats()
    dist.all_reduce(torch.ones(10))
    out = torch.empty(6)
    dist.all_to_all_single(out, torch.arange(6.0))
    return netsparse_torch.comm_stats()


def test_comm_stats_counts_bytes():
    stats = launch(counted, 2)
    assert stats["allreduce"] == {"calls": 1, "bytes": 40}
    assert stats["alltoall"] == {"calls": 1, "bytes": 24}


def test_backend_registered_on_import():
    """In a fresh interpreter (this one imported the launcher, which imports the backend)."""
    code = ("import torch.distributed as dist; import netsparse_torch.backend; "
            "assert 'netsparse' in dist.Backend.backend_list")
    assert subprocess.run([sys.executable, "-c", code], timeout=300).returncode == 0
    assert free_port() > 0
