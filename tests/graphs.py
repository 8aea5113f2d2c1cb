"""Small test graphs with the awkward cases: duplicates, self loops, isolated and one-way edges."""

import numpy as np
import scipy.sparse as sp
import torch

from netsparse_torch.graph import Graph, csr_from_edges, random_split


def random_graph(n: int = 41, m: int = 160, features: int = 6, classes: int = 3, seed: int = 0) -> Graph:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    src = np.concatenate([src, [3, 3, 5]])  # a duplicate edge and a self loop
    dst = np.concatenate([dst, [7, 7, 5]])
    keep = (src != n - 1) & (dst != n - 1)  # the last node is isolated
    adj = csr_from_edges(src[keep], dst[keep], n, "random")
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = torch.randint(0, classes, (n,), generator=gen)
    return Graph("random", adj, x, y, *random_split(n, seed), classes).validate()


def edge_index(graph: Graph) -> torch.Tensor:
    """PyG edge_index (source, target) with one column per edge, duplicates repeated."""
    coo = graph.adj.tocoo()
    reps = coo.data.astype(np.int64)
    src = np.repeat(coo.col, reps)
    dst = np.repeat(coo.row, reps)
    return torch.from_numpy(np.vstack([src, dst]).astype(np.int64))


def conv_grads(conv_cls, dg, width: int, rank: int) -> dict:
    """A layer (seeded weights) on this rank's seeded features: its output and every gradient of
    ``out.pow(2).sum()``, the values two strategies must agree on."""
    torch.manual_seed(0)
    conv = conv_cls(width, 3)
    x = torch.randn(dg.plan.n_local, width, generator=torch.Generator().manual_seed(rank)).requires_grad_()
    out = conv(x, dg)
    out.pow(2).sum().backward()
    return {"out": out.detach(), "x": x.grad, **{n: p.grad for n, p in conv.named_parameters()}}


def weighted_data(n: int = 41, m: int = 160, seed: int = 0):
    """A PyG ``Data`` with edge weights (``edge_weight``) and the awkward cases: a duplicate edge with
    two weights, a node with three self loops of different weights and one with two, a zero weight,
    an isolated node; features, labels and masks as :func:`random_graph`'s."""
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, n, m), [3, 3, 5, 5, 5, 9, 9, 11]])
    dst = np.concatenate([rng.integers(0, n, m), [7, 7, 5, 5, 5, 9, 9, 12]])
    keep = (src != n - 1) & (dst != n - 1)  # the last node is isolated
    weight = rng.uniform(0.2, 2.0, m + 8)
    weight[-1] = 0.0  # the edge 11 -> 12 weighs nothing
    g = random_graph(n, m, seed=seed)
    return Data(x=g.x, y=g.y, train_mask=g.train_mask, val_mask=g.val_mask, test_mask=g.test_mask,
                edge_index=torch.from_numpy(np.vstack([src[keep], dst[keep]])),
                edge_weight=torch.from_numpy(weight[keep]).float(), num_nodes=n)


def random_pattern(seed: int, n: int = 800, nnz: int = 4000) -> sp.csr_matrix:
    """A random n x n pattern of about ``nnz`` unit nonzeros (repeats summed): enough traffic to congest
    a small simulated cluster."""
    rng = np.random.default_rng(seed)
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    a.sum_duplicates()
    return a
