"""A plain DDP script: the only netsparse-specific line is the backend name.

    torchrun --nproc-per-node=2 examples/ddp_netsparse.py
"""

import torch
import torch.distributed as dist

import netsparse_torch.backend  # registers the "netsparse" backend


def main() -> None:
    dist.init_process_group("netsparse")
    try:
        train()
    finally:
        # Before the interpreter ends, on every path: it stops the backend's threads (torch asks it too).
        dist.destroy_process_group()


def train() -> None:
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(20):
        x = torch.randn(64, 32)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).backward()
        opt.step()
    if dist.get_rank() == 0:
        print("collectives:", netsparse_torch.comm_stats())


if __name__ == "__main__":
    main()
