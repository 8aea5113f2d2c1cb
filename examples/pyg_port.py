"""examples/pyg_gcn.py ported to netsparse_torch: the same GCN on Cora, trained on the whole graph across
ranks (docs/porting.md explains each changed line, marked ``# port``).

    PLANETOID_ROOT=DIR torchrun --nproc-per-node=2 examples/pyg_port.py
    PLANETOID_ROOT=DIR torchrun --nproc-per-node=2 examples/pyg_port.py --use_gdc     # weighted edges

With the same seed it trains the same model at every world size (dropout keyed on node ids:
tests/test_invariance.py checks the training loop at 1-3 ranks), and with DROPOUT=0 the same losses as
examples/pyg_gcn.py (tests/test_porting.py runs this script at 2 ranks beside PyG's, with and without GDC).
"""

import argparse
import os

import torch
import torch.distributed as dist  # port
import torch_geometric.transforms as T
from torch_geometric.datasets import Planetoid

import netsparse_torch.backend  # noqa: F401  port: registers the "netsparse" backend
from netsparse_torch.nn import DistGCNConv, DistGraph, keyed_dropout  # port: instead of GCNConv

EPOCHS = int(os.environ.get("EPOCHS", 200))
P = float(os.environ.get("DROPOUT", 0.5))
parser = argparse.ArgumentParser()
parser.add_argument('--use_gdc', action='store_true', help='Use GDC')
args = parser.parse_args()

dist.init_process_group("netsparse")  # port
if dist.get_rank() > 0:  # port: rank 0 downloads and processes Cora first,
    dist.barrier()       # port: the others then read its files
dataset = Planetoid(os.environ.get("PLANETOID_ROOT", "data/Planetoid"), "Cora", transform=T.NormalizeFeatures())
if dist.get_rank() == 0:  # port
    dist.barrier()        # port
data = dataset[0]
if args.use_gdc:
    transform = T.GDC(
        self_loop_weight=1,
        normalization_in='sym',
        normalization_out='col',
        diffusion_kwargs=dict(method='ppr', alpha=0.05),
        sparsification_kwargs=dict(method='topk', k=128, dim=0),
        exact=True,
    )
    data = transform(data)
dg = DistGraph(data)  # port: this rank's rows of the graph, and how it exchanges the others


class GCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = DistGCNConv(in_channels, hidden_channels, cached=True, normalize=not args.use_gdc)  # port
        self.conv2 = DistGCNConv(hidden_channels, out_channels, cached=True, normalize=not args.use_gdc)  # port

    def forward(self, x, dg, edge_weight=None, epoch=0):
        # port: dropout masks keyed on (seed, epoch, layer, node id): the same at every world size
        x = keyed_dropout(x, dg.device_node_ids, P, seed=0, epoch=epoch, layer=0, training=self.training)
        x = self.conv1(x, dg, edge_weight).relu()
        x = keyed_dropout(x, dg.device_node_ids, P, seed=0, epoch=epoch, layer=1, training=self.training)
        return self.conv2(x, dg, edge_weight)


torch.manual_seed(0)  # the same initial weights on every rank
model = GCN(dataset.num_features, 16, dataset.num_classes)
optimizer = torch.optim.Adam([dict(params=model.conv1.parameters(), weight_decay=5e-4),
                              dict(params=model.conv2.parameters(), weight_decay=0)], lr=0.01)

for epoch in range(EPOCHS):
    model.train()
    optimizer.zero_grad()
    out = model(dg.x, dg, data.edge_attr, epoch)  # port: this rank's rows
    loss = dg.loss(out, "train")  # port: this rank's share of the mean over every rank's training nodes
    loss.backward()
    dg.sync_gradients(model)  # port: sum the gradients over ranks
    optimizer.step()
    total = dg.total(loss)  # port: the whole graph's loss
    if dist.get_rank() == 0:  # port
        print(f"epoch {epoch:03d} loss {total:.6f}")

model.eval()
with torch.no_grad():
    out = model(dg.x, dg, data.edge_attr)  # port
for split in ("train", "val", "test"):
    acc = dg.accuracy(out, split)  # port: over every rank's nodes of the split
    if dist.get_rank() == 0:  # port
        print(f"{split} accuracy {acc:.4f}")
dist.destroy_process_group()  # port
