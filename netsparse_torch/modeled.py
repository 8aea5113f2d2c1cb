"""The ``modeled`` block of a training report: ``netsparse-train cluster=leafspine128`` (its printed
lines are :mod:`netsparse_torch.report.modeled`).

The training itself is measured on this machine. This block is *modeled*: it charges one epoch's SpMM
gathers (forward and backward, each layer's K) to a target cluster of ``cluster.nodes`` *virtual*
nodes, independent of the training's ``world_size``, with ``hw_models`` (SUOpt, SAOpt) and the C++
simulator (NetSparse), plus a compute model, and gives the speedups
(:func:`hw_models.analysis.modeled_training`).

The gathers are not written down by hand: :func:`epoch_gathers` runs the training's own model class
(:class:`netsparse_torch.nn.DistGNN`) once on a one-row probe graph whose ``propagate`` (an SpMM) and
``attention_gather`` (GAT: the rows its SDDMM scores and SpMM aggregation read, gathered once) record
every forward gather and every backward reverse exchange autograd asks for, with its width and kernel.
"""

from __future__ import annotations

import torch

from netsparse_torch.errors import ConfigError

WHAT = ("modeled, not measured: one epoch's SpMM and SDDMM gathers (forward and backward, each layer's K) on the "
        "target cluster, the report's `hardware`; SUOpt and SAOpt are analytic optima (hw_models.baselines, "
        "NetSparse §8.1), NetSparse is the C++ discrete-event simulator; compute is the compute model's local SpMM "
        "per gather (dense layers not modeled). Everything outside this block is measured on this machine.")


class _Record(torch.autograd.Function):
    """Identity that logs the gather it stands for (forward) and its reverse exchange (backward)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, log: list, tag: str, kernel: str) -> torch.Tensor:
        ctx.log, ctx.tag, ctx.kernel = log, tag, kernel
        log.append({"layer": tag, "direction": "forward", "k": int(x.size(1)), "kernel": kernel})
        return x.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        ctx.log.append({"layer": ctx.tag, "direction": "backward", "k": int(grad.size(1)), "kernel": ctx.kernel})
        return grad, None, None, None


class _ProbeGraph:
    """Stands in for :class:`~netsparse_torch.nn.DistGraph` on one node with a self loop: ``propagate``
    and ``attention_gather`` are recording identities."""

    def __init__(self) -> None:
        from netsparse_torch.kernels import CSR
        from netsparse_torch.nn import AttentionPattern

        self.log: list[dict] = []
        self.edge_weight = None  # the probe's cost is the same with weights
        self.node_ids = self.device_node_ids = torch.zeros(1, dtype=torch.long)  # a CPU graph
        one = torch.zeros(1, dtype=torch.long)
        self.pattern = AttentionPattern(CSR(torch.tensor([0, 1]), one, torch.ones(1), 1), one, one)

    def propagate(self, x: torch.Tensor, norm: str, tag: str = "") -> torch.Tensor:
        return _Record.apply(x, self.log, tag, "spmm")

    def attention_gather(self, rows: torch.Tensor, add_self_loops: bool = True, tag: str = ""):
        # One gather feeds both the scores (an SDDMM) and the aggregation: charged as the SDDMM.
        return _Record.apply(rows, self.log, tag, "sddmm"), self.pattern


def epoch_gathers(model: str, in_channels: int, hidden: int, out_channels: int, num_layers: int,
                  **options) -> list[dict]:
    """Every gather one training epoch makes, in execution order: ``{layer, direction, k, kernel}``.

    Runs :class:`~netsparse_torch.nn.DistGNN` (with the model's ``options``, e.g. GAT's heads) forward
    and backward on a probe graph, so a backward reverse exchange appears exactly when autograd needs
    it (e.g. not for SAGE's first layer, whose input features need no gradient). GCN and SAGE gathers
    are SpMMs of the propagated width; a GAT layer's single gather is an SDDMM of width ``H*C + H``
    (its projected features and source attention terms). The global RNG state is left untouched.
    """
    from netsparse_torch.nn import DistGNN

    probe = _ProbeGraph()
    with torch.random.fork_rng(devices=[]):
        net = DistGNN(model, in_channels, hidden, out_channels, num_layers, dropout=0.0, **options)
        net.eval()  # the same products as training, without dropout
        net(torch.zeros(1, in_channels), probe).sum().backward()  # type: ignore[arg-type]
    return probe.log


def check_cluster(cfg, graph, hardware) -> None:
    """Fail before training, with one ``ConfigError``, on a cluster the modeled block cannot use."""
    cluster = cfg.get("cluster")
    if cluster is None or cluster.get("nodes") is None:
        return
    if hardware.cluster.nodes > graph.num_nodes:
        raise ConfigError(f"cluster.nodes={hardware.cluster.nodes} virtual nodes > {graph.num_nodes} graph rows")
    _compute_model_name(cluster)
    if _full_size(cluster):
        if not _is_analog(graph):
            raise ConfigError("cluster.full_size=true models the full-size original of a paper analog: it needs "
                              "dataset=paper (dataset.matrix=..., dataset.scale=...)")
        _check_full_size_fits(cfg, graph, hardware)


def add_modeled(report: dict, cfg, graph, hardware, log=None) -> dict | None:
    """Put :func:`modeled_block` under ``report["modeled"]`` (no key at all for ``cluster=none``)."""
    block = modeled_block(cfg, graph, hardware, log)
    if block is not None:
        report["modeled"] = block
    return block


def modeled_block(cfg, graph, hardware, log=None) -> dict | None:
    """The ``modeled`` block for ``cfg.cluster`` on the run's ``hardware`` (the report's ``hardware``;
    its ``cluster`` section is the target cluster), or ``None`` for ``cluster=none`` (no ``nodes``).

    A paper analog (``dataset=paper``) is modeled in a process of its own (:mod:`netsparse_torch.model_process`),
    with ``cluster.full_size=true`` once more at scale 1: the block's ``full_size``, with the same fields."""
    cluster = cfg.get("cluster")
    if cluster is None or cluster.get("nodes") is None:
        return None
    from hw_models.analysis import default_simulator, modeled_training

    check_cluster(cfg, graph, hardware)
    gathers = _gathers(cfg, graph)
    partition = _virtual_partition(cfg)
    model = _compute_model(cluster)
    specs = [(g["k"], g["kernel"]) for g in gathers]
    if _is_analog(graph):
        block = _analog_block(graph, graph.scale, hardware, specs, model, partition, log)
        block["adjacency"] = _analog_adjacency(_spec(graph.matrix.name, graph.scale), str(cfg.model.name))
    else:
        adj, source = _whole_adjacency(graph)
        block = modeled_training(adj, hardware, specs, model, partition, default_simulator())
        block["adjacency"] = source
    block = _labelled(block, gathers, model, cluster)
    if _full_size(cluster):
        full = _analog_block(graph, FULL_SCALE, hardware, specs, model, partition, log)
        full["adjacency"] = _analog_adjacency(_spec(graph.matrix.name, FULL_SCALE), str(cfg.model.name))
        block["full_size"] = _labelled(full, gathers, model, cluster)
    return block


def _gathers(cfg, graph) -> list[dict]:
    from netsparse_torch.nn.models import model_options

    return epoch_gathers(str(cfg.model.name), graph.num_features, int(cfg.hidden), graph.num_classes,
                         int(cfg.model.num_layers), **model_options(cfg.model))


def _labelled(block: dict, gathers: list[dict], model, cluster) -> dict:
    block["compute"]["source"] = getattr(model, "source", "NetSparse §8 SPADE-like roofline (hw_models.compute)")
    for g, row in zip(gathers, block["per_gather"], strict=True):
        row.update(layer=g["layer"], direction=g["direction"])
    return {"what": WHAT, "cluster_name": str(cluster.name), **{k: v for k, v in block.items() if k != "what"}}


FULL_SCALE = 1.0
"""The scale of ``modeled.full_size``: the paper's full-size matrix (tests shrink it to afford a run)."""


def _spec(matrix: str, scale: float) -> str:
    return f"paper:{matrix}" + ("" if scale == 1 else f"@{scale!r}")


def _is_analog(graph) -> bool:
    from netsparse_torch.partition.analog import AnalogDataset

    return isinstance(graph, AnalogDataset)


def _full_size(cluster) -> bool:
    value = cluster.get("full_size", False)
    if not isinstance(value, bool):
        raise ConfigError(f"cluster.full_size must be true or false, got {value!r}")
    return value


def _analog_block(graph, scale: float, hardware, specs: list, model, partition: str, log) -> dict:
    """The block of ``graph``'s analog at ``scale``, modeled in a process of its own; with the graph it
    modeled and that process's peak RSS and wall time (measured)."""
    from hw_models import analogs
    from netsparse_torch.model_process import model_cache_dir, run_model

    name = analogs.display_name(graph.matrix, scale)
    spec = _spec(graph.matrix.name, scale)
    result = run_model({"name": name, "matrix": graph.matrix.name, "scale": scale, "seed": graph.analog_seed,
                        "hardware": hardware, "gathers": specs, "compute_model": model, "partition": partition,
                        "cache_dir": str(model_cache_dir()), "analog_cache": graph.analog_cache}, log)
    block = result["block"]
    block["graph"] = {"name": name, "spec": spec, "label": analogs.label(spec), **block.pop("matrix")}
    block["process"] = {"peak_rss_bytes": result["peak_rss_bytes"], "wall_s": result["wall_s"],
                        "what": "measured: the process that modeled this block (it held the whole pattern when a "
                                "gather was not cached; no rank did)"}
    return block


#: What each model's layers aggregate over, next to the raw pattern the block models.
_TRAINED_ADJACENCY = {
    "gcn": "GCN trains on D^-1/2 (A + I) D^-1/2: one self loop per node more than the modeled pattern",
    "gat": "GAT attends over A with one self loop per node: one self loop per node more than the modeled pattern",
    "sage": "SAGE's mean aggregation D^-1 A has exactly the modeled pattern",
}


def _analog_adjacency(spec: str, model: str) -> str:
    trained = _TRAINED_ADJACENCY.get(model, f"{model} trains on its own normalisation of A")
    return (f"the raw analog {spec} (no self loops added), as netsparse-simulate matrix={spec} models it; {trained} "
            "(a self loop is a local read, no gather: how much it moves the modeled numbers is in "
            "docs/experiments.md, 'Training at the paper's scale')")


def _check_full_size_fits(cfg, graph, hardware) -> None:
    """Before training: the full-size model must fit in memory unless every gather it needs is cached."""
    from hw_models.analog_model import AnalogModelCache, check_fits
    from hw_models.analysis import gather_specs
    from netsparse_torch.model_process import model_cache_dir

    specs = gather_specs([(g["k"], g["kernel"]) for g in _gathers(cfg, graph)])
    cache = AnalogModelCache(model_cache_dir(), graph.matrix, FULL_SCALE, graph.analog_seed, hardware,
                             _virtual_partition(cfg), True)
    if not cache.complete(specs):
        check_fits(graph.matrix, FULL_SCALE)


def _virtual_partition(cfg) -> str:
    """Row blocks of the virtual nodes: ``cluster.partition``, else the run's when it is a row-block mode.
    METIS parts for the training's ranks say nothing about ``cluster.nodes`` virtual nodes, so
    ``partition=metis`` models ``rows`` blocks of the numbering the adjacency has."""
    from hw_models.bounds import ROW_MODES

    partition = str(cfg.cluster.get("partition") or cfg.partition)
    return partition if partition in ROW_MODES else "rows"


def _whole_adjacency(graph) -> tuple:
    """The whole adjacency and where it came from. A partitioned dataset holds none: the modeled block,
    a whole-graph model that ``cluster=`` asks for, assembles it from the shards on the launcher (rank 0
    under torchrun), never on the training path."""
    if hasattr(graph, "adj"):
        return graph.adj, "the dataset's adjacency, original numbering"
    return graph.adjacency(), ("assembled from the partitioned dataset's shards on the launcher (rank 0 under "
                               f"torchrun) for this whole-graph model; the dataset's {graph.mode} numbering")


def _compute_model_name(cluster) -> str:
    name = str(cluster.get("compute_model") or "spade")
    if name not in ("spade", "cpu"):
        raise ConfigError(f"unknown cluster.compute_model {name!r}; choose spade or cpu")
    return name


def _compute_model(cluster):
    """SPADE-like roofline (NetSparse §8), or a CPU rate *measured* here by timing kernels.spmm."""
    from hw_models import compute
    from netsparse_torch.calibration import calibrate_cpu

    return compute.AcceleratorModel() if _compute_model_name(cluster) == "spade" else calibrate_cpu()
