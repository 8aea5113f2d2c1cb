"""The NCCL path of the netsparse backend, on one GPU: a 1-rank group creates its NCCL process group
(``ProcessGroupNCCL`` on a ``PrefixStore``) and moves CUDA tensors through it, collectives and a
grouped send and receive (what ``ds`` posts). Only where there is a GPU and torch has NCCL; the
decision itself is tested on CPU in tests/test_backend_cuda_path.py."""

import devices
import pytest
import torch
import torch.distributed as dist

from netsparse_torch.backend import NCCL, batch_isend_irecv, collective_path
from netsparse_torch.run.launch import launch

pytestmark = pytest.mark.skipif(not devices.CUDA or not dist.is_nccl_available(), reason="needs a CUDA GPU and NCCL")


def one_rank_on_nccl(rank, world_size):
    torch.cuda.set_device(0)
    group = dist.new_group([0], backend="netsparse")
    dev = torch.device("cuda", 0)
    seen = {}
    t = torch.arange(4.0, device=dev)
    dist.all_reduce(t, group=group)
    seen["all_reduce"] = t.tolist()
    parts = [torch.empty(3, device=dev)]
    dist.all_gather(parts, torch.full((3,), 2.0, device=dev), group=group)
    seen["all_gather"] = parts[0].tolist()
    out = torch.empty(3, device=dev)
    dist.all_to_all_single(out, torch.tensor([1.0, 2.0, 3.0], device=dev), group=group)
    seen["all_to_all_single"] = out.tolist()
    mine = torch.empty(2, device=dev)
    dist.reduce_scatter_tensor(mine, torch.tensor([5.0, 6.0], device=dev), group=group)
    seen["reduce_scatter_tensor"] = mine.tolist()
    seen["path"] = collective_path(group)
    dist.barrier(group=group)
    return seen


def test_one_rank_takes_the_nccl_path_and_its_collectives_run():
    seen = launch(one_rank_on_nccl, 1, timeout_s=180)
    assert seen["path"]["cuda"] == NCCL and seen["path"]["cuda_device"] == 0
    assert seen["path"]["device_calls"]["nccl"] >= 4 and "host-staged" not in seen["path"]["device_calls"]
    assert seen["all_reduce"] == [0.0, 1.0, 2.0, 3.0] and seen["all_gather"] == [2.0] * 3
    assert seen["all_to_all_single"] == [1.0, 2.0, 3.0] and seen["reduce_scatter_tensor"] == [5.0, 6.0]


def grouped_send_to_self(rank, world_size):
    torch.cuda.set_device(0)
    group = dist.new_group([0], backend="netsparse")
    dev = torch.device("cuda", 0)
    got = torch.zeros(1 << 20, device=dev)  # 4 MiB: past NCCL's eager buffers
    sent = torch.arange(float(1 << 20), device=dev)
    works = batch_isend_irecv([dist.P2POp(dist.isend, sent, 0, group), dist.P2POp(dist.irecv, got, 0, group)])
    for w in works:
        w.wait()
    return len(works), bool(torch.equal(got, sent))


def test_a_grouped_send_and_receive_is_one_nccl_group():
    n_works, equal = launch(grouped_send_to_self, 1, timeout_s=180)
    assert n_works == 1 and equal
