"""One training job, in the launching process: load (or open) the dataset, partition it, start the
ranks (and the switches of ``fabric=switch``), and write the report and the summary.

``netsparse-train`` imports this module only once its configuration has passed the torch-free checks
of :mod:`netsparse_torch.config_check`: a mistyped value is one line in about a second, not after the
several seconds that torch and PyG take to import.
"""

from __future__ import annotations

import time
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from netsparse_torch import checkpoint
from netsparse_torch.comm import STRATEGIES
from netsparse_torch.config_check import check_values
from netsparse_torch.errors import ConfigError
from netsparse_torch.graph import load_dataset
from netsparse_torch.partition import PartitionedDataset, partition_graph, partition_settings
from netsparse_torch.report import build_train_report, summary_lines, write_json
from netsparse_torch.report.curves import save_curves
from netsparse_torch.report.metrics import check_logger
from netsparse_torch.report.modeled import add_modeled, check_cluster, modeled_lines
from netsparse_torch.run.device import device_kind
from netsparse_torch.run.launch import ByName, launch
from netsparse_torch.run.switches import switch_service

TRAIN_RANK = ByName("netsparse_torch.run.training", "train_rank")  # each rank's loop, imported by the ranks


def check_config(cfg: DictConfig) -> None:
    if str(cfg.strategy.name) not in STRATEGIES:
        raise ConfigError(f"unknown strategy {cfg.strategy.name!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    no_gather = STRATEGIES[str(cfg.strategy.name)].no_gather
    if str(cfg.model.name) == "gat" and no_gather:
        raise ConfigError(f"model=gat cannot use strategy={cfg.strategy.name}: {no_gather}; "
                          "choose su, sa, netsparse or twoface")
    check_values(cfg)


def run(cfg: DictConfig) -> dict | None:
    """Train as configured; returns the report on rank 0 (``None`` on other torchrun ranks).

    An in-memory dataset is loaded and partitioned once here (under torchrun: by every process); each
    rank builds its shard from it. A partitioned dataset (``dataset=partitioned``) is only opened here
    (its manifest): each rank memory-maps its own shard, and no process loads the whole graph.
    """
    check_config(cfg)
    device_kind(cfg.get("device", "auto"))  # device=cuda without a GPU: one line before any rank starts
    out_dir = Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None
    checkpoint.prepare(cfg, out_dir)  # default folder in the run's directory; resume=true: the same run?
    t0 = time.perf_counter()
    data = load_dataset(cfg.dataset)
    partitioning = None
    if isinstance(data, PartitionedDataset):
        data.check_world_size(int(cfg.world_size))
    else:
        partitioning = partition_graph(data.adj, int(cfg.world_size), str(cfg.partition), **partition_settings(cfg))
    check_cluster(cfg, data)
    check_logger(str(cfg.get("logger") or "none"))
    args = (data, cfg, partitioning, str(out_dir) if out_dir else None)
    with switch_service(cfg) as switches:  # fabric=switch: start (or configure) the switches; always stopped
        result = launch(TRAIN_RANK, int(cfg.world_size), args, timeout_s=float(cfg.timeout_s))
        switch_report = switches.report() if switches is not None and result is not None else None
    if result is None:
        return None
    report = build_train_report(cfg, data, result, time.perf_counter() - t0)
    if switch_report is not None:
        report["switches"] = switch_report  # measured counters of every switch, [{name, role, counters}]
    add_modeled(report, cfg, data)  # cluster=<target>: modeled epoch on virtual nodes (not measured)
    paths = write_json(report, cfg.get("report_path"), out_dir / "report.json" if out_dir else None)
    curves = save_curves(report, paths[-1].parent) if paths else None
    for line in summary_lines(report) + modeled_lines(report.get("modeled")):
        print(line)
    for p in [*paths, curves] if curves else paths:
        print(f"  written      {p}")
    return report
