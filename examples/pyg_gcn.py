"""PyG's GCN on Cora in one process (torch_geometric's examples/gcn.py, trimmed): the script that
examples/pyg_port.py ports to netsparse_torch (docs/porting.md shows the two side by side).

    PLANETOID_ROOT=DIR python examples/pyg_gcn.py     # Cora's raw files in DIR/Cora/raw, else PyG downloads them
    PLANETOID_ROOT=DIR python examples/pyg_gcn.py --use_gdc     # on the GDC graph: weighted edges

EPOCHS and DROPOUT (environment) shorten the run and turn dropout off, so that a test can compare the
losses of the two scripts epoch by epoch.
"""

import argparse
import os

import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch_geometric.datasets import Planetoid
from torch_geometric.nn import GCNConv

EPOCHS = int(os.environ.get("EPOCHS", 200))
P = float(os.environ.get("DROPOUT", 0.5))
parser = argparse.ArgumentParser()
parser.add_argument('--use_gdc', action='store_true', help='Use GDC')
args = parser.parse_args()

dataset = Planetoid(os.environ.get("PLANETOID_ROOT", "data/Planetoid"), "Cora", transform=T.NormalizeFeatures())
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


class GCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden_channels, cached=True, normalize=not args.use_gdc)
        self.conv2 = GCNConv(hidden_channels, out_channels, cached=True, normalize=not args.use_gdc)

    def forward(self, x, edge_index, edge_weight=None):
        x = F.dropout(x, p=P, training=self.training)
        x = self.conv1(x, edge_index, edge_weight).relu()
        x = F.dropout(x, p=P, training=self.training)
        return self.conv2(x, edge_index, edge_weight)


torch.manual_seed(0)
model = GCN(dataset.num_features, 16, dataset.num_classes)
optimizer = torch.optim.Adam([dict(params=model.conv1.parameters(), weight_decay=5e-4),
                              dict(params=model.conv2.parameters(), weight_decay=0)], lr=0.01)

for epoch in range(EPOCHS):
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.edge_index, data.edge_attr)
    loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch:03d} loss {loss.item():.6f}")

model.eval()
with torch.no_grad():
    pred = model(data.x, data.edge_index, data.edge_attr).argmax(dim=-1)
for split in ("train", "val", "test"):
    mask = data[f"{split}_mask"]
    print(f"{split} accuracy {int((pred[mask] == data.y[mask]).sum()) / int(mask.sum()):.4f}")
