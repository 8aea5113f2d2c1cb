"""A rank's share of a graph: its shard, its plan, its strategy, and its rows of the normalised adjacencies."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from hw_models.bounds import owner_of
from netsparse_torch.comm import Strategy, make_strategy
from netsparse_torch.errors import ConfigError
from netsparse_torch.graph import Graph, from_pyg
from netsparse_torch.graph.loaders import pyg_edge_weight
from netsparse_torch.kernels import CSR
from netsparse_torch.nn import training
from netsparse_torch.nn.edge_weights import GraphWeightsCheck
from netsparse_torch.partition import PartitionedDataset, Partitioning, Shard, rank_shard
from netsparse_torch.partition.analog import AnalogDataset
from netsparse_torch.partition.shard import WEIGHTED
from netsparse_torch.partition.source import Source
from netsparse_torch.plan import build_plan
from netsparse_torch.plan.plan import request_rows


@dataclass
class AttentionPattern:
    """GAT's pattern on one rank. ``a``: rows are this rank's nodes (the targets), columns the rows of
    the gathered matrix (the sources), values the edge multiplicities. ``row_ids`` and ``col_ids`` are
    the original node ids of its rows and columns (the keys of attention dropout)."""

    a: CSR
    row_ids: torch.Tensor
    col_ids: torch.Tensor


def _as_source(data) -> tuple[Source, tuple[str, torch.Tensor] | None]:
    """``data`` as one of the inputs :func:`~netsparse_torch.partition.rank_shard` reads: a PyG ``Data``
    (anything with an ``edge_index``) becomes a :class:`Graph`; anything else unknown is one error.
    Second: the PyG edge weights taken, ``(attribute, tensor)``, if any."""
    if isinstance(data, (Graph, PartitionedDataset, AnalogDataset, Shard, str, Path)):
        return data, None
    if getattr(data, "edge_index", None) is not None:
        return from_pyg(data), pyg_edge_weight(data)
    raise ConfigError(f"DistGraph takes a PyG Data, a netsparse_torch.graph.Graph, a partitioned dataset "
                      f"(its directory or PartitionedDataset) or a Shard; got {type(data).__name__}")


def _check_not_launched() -> None:
    """A process of a launched job (torchrun's WORLD_SIZE > 1) that has not initialised torch.distributed
    would build a one-rank graph and train all of it, as would each of its peers: one error instead."""
    size = os.environ.get("WORLD_SIZE", "")
    if size.isdigit() and int(size) > 1:
        raise ConfigError(f"this process is rank {os.environ.get('RANK', '?')} of a {size}-process job (WORLD_SIZE="
                          f"{size}) but torch.distributed is not initialized, so DistGraph would hold the whole "
                          "graph on every process: call torch.distributed.init_process_group() first (or pass "
                          "rank= and world_size= for a graph of this process alone)")


def graph_device(device: torch.device | str | None, cuda_count: int | None = None) -> torch.device:
    """``device`` (``None``: the CPU) as a ``torch.device``; a CUDA device that this process does not
    have is one ConfigError, not torch's assertion deep in the first copy. ``cuda_count``: the GPUs
    torch sees (None: ask torch)."""
    try:
        device = torch.device(device) if device is not None else torch.device("cpu")
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"DistGraph: device {device!r} is not a torch device ({str(exc).splitlines()[0]})") from None
    if device.type != "cuda":
        return device
    count = (torch.cuda.device_count() if torch.cuda.is_available() else 0) if cuda_count is None else cuda_count
    if count == 0:
        raise ConfigError(f"DistGraph: device {str(device)!r} but torch sees no CUDA GPU "
                          "(torch.cuda.is_available() is False): use device='cpu'")
    if device.index is not None and device.index >= count:
        raise ConfigError(f"DistGraph: device {str(device)!r} but torch sees {count} CUDA GPU(s), cuda:0 to "
                          f"cuda:{count - 1}: use cuda:(LOCAL_RANK % {count}), as netsparse-train does")
    return device


class DistGraph:
    """What the distributed layers take in place of PyG's ``edge_index``.

    ``data`` is a whole :class:`~netsparse_torch.graph.Graph` or a PyG ``Data`` (``x``, ``y``,
    ``edge_index``, masks; converted by :func:`~netsparse_torch.graph.from_pyg`), cut by ``partition``
    (``rows``, ``nnz``, ``metis`` or a precomputed :class:`~netsparse_torch.partition.Partitioning`); a
    partitioned dataset (:class:`~netsparse_torch.partition.PartitionedDataset` or its directory: only
    this rank's shard is read, and its own partition is used); or this rank's
    :class:`~netsparse_torch.partition.Shard`.
    A ``Data``'s ``edge_weight`` (else a one-weight ``edge_attr``) and a graph's or dataset's weights
    come along: a ``DistGCNConv`` call aggregates with them when it passes them (``conv(x, dg,
    data.edge_weight)`` or ``dg.edge_weight``; :mod:`~netsparse_torch.nn.edge_weights`), and without
    them otherwise, as PyG's ``GCNConv`` does.
    Every rank of ``group`` (None: the default process group; ``rank`` and ``world_size`` are this
    rank's in it, by default those of the process group, or 0 and 1 without one) builds it together
    (the plan exchanges request ids), and its strategy runs on it.
    ``propagate(x_local, norm)`` is the distributed SpMM ``Â[rows] x X``: the strategy gathers the
    remote rows, the C++ kernel aggregates.

    Rows are numbered in the partition's order (``metis`` renumbers nodes so that each rank's rows are
    the contiguous block ``row_range``); ``node_ids`` are their original ids, and ``rows`` indexes the
    whole graph's per-node tensors (``data.y[dg.rows]`` is ``dg.y``).

    The training loop's distributed steps are methods (:mod:`netsparse_torch.nn.training`):
    :meth:`loss` (this rank's share of the global mean), :meth:`sync_gradients` (sum over ranks, also
    under DDP), :meth:`accuracy` and :meth:`total` (over every rank), and :meth:`check_in_sync`.
    ``check_steps``: how many first calls of :meth:`loss` compare a checksum of the parameters across
    ranks; 0 turns off every check of :mod:`~netsparse_torch.nn.training` (this one, the one for a
    backward left unsynchronised, and the one :meth:`propagate` and :meth:`attention_gather` make at
    their first calls and then at every power-of-two call, whatever the loss), for a model whose
    parameters are not all replicated on every rank.
    """

    def __init__(self, data: Source, rank: int | None = None, world_size: int | None = None,
                 partition: str | Partitioning = "rows", strategy: str = "sa", strategy_options: dict | None = None,
                 verify: bool = True, group=None, device: torch.device | str | None = None, check_steps: int = 3):
        device = graph_device(device)  # before any collective: a missing GPU fails every rank alike
        initialized = dist.is_available() and dist.is_initialized()
        if not initialized and (rank is None or world_size is None):
            _check_not_launched()
        rank = (dist.get_rank(group) if initialized else 0) if rank is None else rank
        world_size = (dist.get_world_size(group) if initialized else 1) if world_size is None else world_size
        source, pyg_weights = _as_source(data)
        self.shard: Shard = rank_shard(source, rank, world_size, partition, verify, group)
        self._weights = GraphWeightsCheck(pyg_weights, self.shard.weighted)
        #: Where the graph's tensors live: features, labels, masks, adjacencies and the plan's index
        #: tensors (``None``: CPU). A model trained on it moves there with ``.to(graph.device)``.
        self.device = device
        self.rank, self.world_size, self.group = rank, world_size, group
        self.bounds = self.shard.bounds
        r0, r1 = int(self.bounds[rank]), int(self.bounds[rank + 1])
        #: This rank's rows in the partition's numbering (global row ids of the plan and the strategy).
        self.row_range = slice(r0, r1)
        #: Original (pre-permutation) node ids of this rank's rows, a LongTensor.
        self.node_ids = torch.as_tensor(np.asarray(self.shard.node_ids), dtype=torch.long)
        self._renumbered = not torch.equal(self.node_ids, torch.arange(r0, r1))
        self.plan = build_plan(self.shard.adj, self.bounds, rank, world_size, group).to(self.device)
        self.strategy: Strategy = make_strategy(strategy, self.plan, group, **(strategy_options or {}))
        self._adjacency: dict[str, CSR] = {}
        self._attention: dict[tuple[str, int], AttentionPattern] = {}
        self._node_data: dict[str, torch.Tensor] = {}
        # State of the training helpers (netsparse_torch/nn/training.py).
        self.check_steps = int(check_steps)
        self._split_sizes: dict[str, int] = {}
        self._loss_calls = 0
        self._backward_unsynced = False
        self._aggregations = 0
        self._aggregation_in_sync = False

    # -- the training loop's distributed steps (netsparse_torch/nn/training.py) ---------------------
    def loss(self, out: torch.Tensor, split: str = "train") -> torch.Tensor:
        """This rank's share of the cross-entropy averaged over every rank's ``split`` nodes; summed over
        ranks (:meth:`total`) it is the one-process loss, and after :meth:`sync_gradients` so is the
        gradient. Its first ``check_steps`` calls check that every rank holds the same parameters."""
        return training.split_loss(self, out, split)

    def sync_gradients(self, model: torch.nn.Module) -> None:
        """Sum ``model``'s gradients over ranks (a DDP model's average is multiplied back to the sum):
        call it after ``loss.backward()``, before ``optimizer.step()``, with or without DDP."""
        training.sync_gradients(self, model)

    def accuracy(self, out: torch.Tensor, split: str = "test") -> float:
        """Accuracy over every rank's ``split`` nodes, the same float on every rank."""
        return training.accuracy(self, out, split)

    def total(self, value) -> float:
        """The sum over ranks of a scalar, e.g. :meth:`loss`: the whole graph's loss, on every rank."""
        return training.total(self, value)

    def split_size(self, split: str) -> int:
        """The number of ``split`` nodes on every rank together."""
        return training.split_size(self, split)

    def check_in_sync(self, model) -> None:
        """Raise a ConfigError on every rank when ``model``'s parameters (or the iterable of tensors
        given) differ between ranks. Every rank calls it together."""
        training.check_in_sync(self, model)

    def check_state(self) -> dict:
        """Where the checks of :mod:`~netsparse_torch.nn.training` stand (how many aggregations and loss
        calls ran): a checkpoint keeps it, so that a resumed run checks at the calls the uninterrupted
        run checks (each check is one all-gather, which the traffic counters see)."""
        return {"aggregations": self._aggregations, "aggregation_in_sync": self._aggregation_in_sync,
                "loss_calls": self._loss_calls}

    def load_check_state(self, state: dict) -> None:
        self._aggregations = int(state["aggregations"])
        self._aggregation_in_sync = bool(state["aggregation_in_sync"])
        self._loss_calls = int(state["loss_calls"])

    def _backward_seen(self, grad: torch.Tensor) -> None:
        """Hook on each :meth:`loss`: its backward ran, so gradients now wait for :meth:`sync_gradients`."""
        self._backward_unsynced = True

    def _on_device(self, name: str, host: torch.Tensor) -> torch.Tensor:
        """``host`` (a shard tensor) on the graph's device, copied once."""
        if name not in self._node_data:
            self._node_data[name] = host.to(self.device)
        return self._node_data[name]

    @property
    def rows(self) -> slice | torch.Tensor:
        """This rank's nodes as an index into the whole graph's per-node tensors, so that ``data.y[dg.rows]``
        is ``dg.y``: the slice of its rows where the partition keeps the original numbering (``rows``,
        ``nnz``), else :attr:`node_ids` (``metis`` renumbers, so the slice would pick other nodes).
        The rows in the partition's numbering: :attr:`row_range`."""
        return self.node_ids if self._renumbered else self.row_range

    @property
    def x(self) -> torch.Tensor:
        return self._on_device("x", self.shard.x)

    @property
    def y(self) -> torch.Tensor:
        return self._on_device("y", self.shard.y)

    def mask(self, split: str) -> torch.Tensor:
        return self._on_device(f"{split}_mask", self.shard.mask(split))

    @property
    def device_node_ids(self) -> torch.Tensor:
        """:attr:`node_ids` on the graph's device (the keys of dropout masks generated there)."""
        return self._on_device("node_ids", self.node_ids)

    @property
    def edge_weight(self):
        """The graph's edge weights, to pass to ``DistGCNConv``: the PyG ``Data``'s tensor it was built
        from, a :class:`~netsparse_torch.nn.edge_weights.GraphWeights` for weights held in the shard,
        or None for a graph without weights."""
        return self._weights.handle

    def weighted_norm(self, norm: str, edge_weight, layer: str) -> str:
        """``norm`` of the edge weights when ``edge_weight`` are the graph's, ``norm`` itself when None;
        other weights are one ConfigError naming ``layer``."""
        return WEIGHTED + norm if self._weights.uses(edge_weight, layer) else norm

    def adjacency(self, norm: str) -> CSR:
        """This rank's rows of the ``norm``-normalised adjacency, in the strategy's column space."""
        if norm not in self._adjacency:
            local = self.plan.localize(self.shard.normalized(norm), self.strategy.space)
            self._adjacency[norm] = local.to(self.device)
        return self._adjacency[norm]

    def propagate(self, x_local: torch.Tensor, norm: str, tag: str = "") -> torch.Tensor:
        training.check_aggregation(self, x_local)
        training.agree_kernels(self, self.adjacency(norm), x_local)
        return self.strategy.propagate(self.adjacency(norm), x_local, tag)

    def attention_gather(self, rows: torch.Tensor, add_self_loops: bool = True,
                         tag: str = "") -> tuple[torch.Tensor, AttentionPattern]:
        """The distributed part of an attention layer: gather, through the strategy, the rows of
        ``rows`` (one per node of this rank: for GAT, its projected features and its source attention
        term) that this rank's attention pattern reads, once. Returns them with the pattern whose
        columns index them; the scores (SDDMM), the softmax and the aggregation then run locally.
        ``add_self_loops`` picks the pattern: exactly one self loop per node, or the graph as it is.
        The backward returns the gradients of every gathered row to its owner."""
        if self.strategy.no_gather:
            raise ConfigError(f"strategy {self.strategy.name!r} cannot run attention layers: "
                              f"{self.strategy.no_gather}; choose su, sa, netsparse or twoface")
        norm = "self_loops" if add_self_loops else "sum"
        training.check_aggregation(self, rows)
        pattern = self.attention_pattern(add_self_loops, rows.size(1))
        return self.strategy.gather(rows, tag, self.adjacency(norm)), pattern

    def attention_pattern(self, add_self_loops: bool, k: int) -> AttentionPattern:
        """The attention pattern in the layout of the strategy's gather at width ``k`` (cached). Every
        rank builds it together the first time (the original ids of remote columns are asked from
        their owners)."""
        norm = "self_loops" if add_self_loops else "sum"
        key = (norm, int(k))
        if key not in self._attention:
            a, gathered = self.strategy.gather_layout(self.adjacency(norm), int(k))
            self._attention[key] = AttentionPattern(a, self.node_ids.to(self.device),
                                                    self.original_ids(gathered).to(self.device))
        return self._attention[key]

    def original_ids(self, ids: np.ndarray) -> torch.Tensor:
        """Original node ids of the rows ``ids`` (global ids in the partition's numbering). With
        ``world_size > 1`` every rank calls it together: each asks the owners of its remote ids
        (three all_to_alls, O(len(ids)) per rank)."""
        ids = np.asarray(ids, dtype=np.int64)
        r0 = self.row_range.start
        own = (ids >= r0) & (ids < self.row_range.stop)
        out = np.empty(ids.size, dtype=np.int64)
        node_ids = self.node_ids.numpy()
        out[own] = node_ids[ids[own] - r0]
        if self.world_size > 1:
            remote = ids[~own]
            order = np.argsort(owner_of(remote, self.bounds), kind="stable")
            want = np.ascontiguousarray(remote[order])
            recv_counts, asked, send_counts = request_rows(want, self.bounds, self.world_size, self.group)
            answer = torch.empty(want.size, dtype=torch.long)
            dist.all_to_all_single(answer, self.node_ids[asked - r0], recv_counts, send_counts, group=self.group)
            remote_ids = np.empty(remote.size, dtype=np.int64)
            remote_ids[order] = answer.numpy()
            out[~own] = remote_ids
        return torch.from_numpy(out)

    def to_original(self, local: torch.Tensor) -> torch.Tensor:
        """Every rank's rows of ``local`` (a per-node tensor of this rank's rows) in original node order,
        on every rank. O(whole graph): for small graphs, tests and final per-node results."""
        if self.world_size == 1:
            parts, ids = [local.detach().cpu()], [self.node_ids]
        else:
            parts, ids = [None] * self.world_size, [None] * self.world_size
            dist.all_gather_object(parts, local.detach().cpu())
            dist.all_gather_object(ids, self.node_ids)
        out = torch.empty((self.shard.num_nodes, *local.shape[1:]), dtype=local.dtype)
        out[torch.cat(ids)] = torch.cat(parts).to(local.dtype)
        return out
