"""Full-graph GCN on Cora with the library API (no Hydra), under torchrun:

    torchrun --nproc-per-node=2 examples/gcn_library.py
"""

import os

import torch
import torch.distributed as dist
from omegaconf import OmegaConf

import netsparse_torch.backend  # registers the "netsparse" backend
from netsparse_torch.graph import load_dataset
from netsparse_torch.nn import DistGNN, DistGraph


def main() -> None:
    # A GPU per rank when there are GPUs (ranks sharing one exchange through gloo), else the CPU.
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group("netsparse")
    graph = load_dataset(OmegaConf.create({"name": "cora"}))
    dg = DistGraph(graph, partition="rows", strategy="sa", device=device)  # rank, world size: the group's
    torch.manual_seed(0)  # the same initial weights on every rank
    model = DistGNN("gcn", graph.num_features, 16, graph.num_classes, dropout=0.5, seed=0).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(200):
        model.train()
        opt.zero_grad()
        out = model(dg.x, dg, epoch=epoch)  # dropout keyed on (seed, epoch, layer, node, feature)
        loss = dg.loss(out, "train")  # this rank's share of the mean over every rank's training nodes
        loss.backward()
        dg.sync_gradients(model)  # summed over ranks: the full-graph gradient
        opt.step()
    model.eval()
    with torch.no_grad():
        out = model(dg.x, dg)
    acc = dg.accuracy(out, "test")  # over every rank's test nodes
    if dist.get_rank() == 0:
        print(f"test accuracy {acc:.4f}; traffic {netsparse_torch.comm_stats()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
