"""``netsparse-train``: full-graph distributed GNN training (Hydra app, configs in ``configs/``).

    netsparse-train dataset=cora model=gcn strategy=sa world_size=2 epochs=200

Without torchrun it spawns ``world_size`` local ranks on loopback; under torchrun it uses
torchrun's environment, so the same command runs multi-node.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from netsparse_torch import checkpoint
from netsparse_torch.comm import STRATEGIES
from netsparse_torch.config_check import check_group_overrides, check_values
from netsparse_torch.errors import ConfigError, NetsparseError
from netsparse_torch.graph import load_dataset
from netsparse_torch.partition import PartitionedDataset, partition_graph
from netsparse_torch.report import build_train_report, summary_lines, write_json
from netsparse_torch.report.curves import save_curves
from netsparse_torch.report.metrics import check_logger
from netsparse_torch.report.modeled import add_modeled, check_cluster, modeled_lines
from netsparse_torch.run.launch import launch, stop_forkserver, under_torchrun
from netsparse_torch.run.switches import switch_service
from netsparse_torch.run.training import train_rank
from netsparse_torch.signals import Interrupted, stop_on_signals

log = logging.getLogger("netsparse_torch.train")


def config_dir() -> str:
    """Installed packages carry ``netsparse_torch/configs``; a source checkout has ``configs/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "configs", here.parent / "configs"):
        if (candidate / "train.yaml").is_file():
            return str(candidate)
    raise RuntimeError("netsparse_torch: cannot find the Hydra configs (configs/train.yaml)")


def check_config(cfg: DictConfig) -> None:
    if str(cfg.strategy.name) not in STRATEGIES:
        raise ConfigError(f"unknown strategy {cfg.strategy.name!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    no_gather = STRATEGIES[str(cfg.strategy.name)].no_gather
    if str(cfg.model.name) == "gat" and no_gather:
        raise ConfigError(f"model=gat cannot use strategy={cfg.strategy.name}: {no_gather}; "
                          "choose su, sa, netsparse or twoface")
    check_values(cfg)


def partition_settings(cfg: DictConfig) -> dict:
    """METIS's settings from ``cfg.metis`` (seed, weights); ignored by rows and nnz."""
    metis = cfg.get("metis") or {}
    return {"seed": int(metis.get("seed", 0)), "weights": str(metis.get("weights", "nnz"))}


def run(cfg: DictConfig) -> dict | None:
    """Train as configured; returns the report on rank 0 (``None`` on other torchrun ranks).

    An in-memory dataset is loaded and partitioned once here (under torchrun: by every process); each
    rank builds its shard from it. A partitioned dataset (``dataset=partitioned``) is only opened here
    (its manifest): each rank memory-maps its own shard, and no process loads the whole graph.
    """
    check_config(cfg)
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
    out_dir = Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None
    args = (data, cfg, partitioning, str(out_dir) if out_dir else None)
    with switch_service(cfg) as switches:  # fabric=switch: start (or configure) the switches; always stopped
        result = launch(train_rank, int(cfg.world_size), args, timeout_s=float(cfg.timeout_s))
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


@hydra.main(config_path=config_dir(), config_name="train", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    if under_torchrun():
        cfg.world_size = int(__import__("os").environ["WORLD_SIZE"])
    try:
        run(cfg)
    except NetsparseError as exc:
        print(f"netsparse-train: error: {exc}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    try:  # a wrong config group choice is one line here, not Hydra's multi-line composition error
        check_group_overrides(sys.argv[1:], config_dir())
    except ConfigError as exc:
        print(f"netsparse-train: error: {exc}", file=sys.stderr)
        sys.exit(2)
    stopped = None
    try:
        with stop_on_signals():  # SIGTERM/SIGINT: every rank and switch stopped on the way out
            _hydra_main()
    except Interrupted as stop:
        stopped = (str(stop), stop.exit_code)
    if stopped is not None:
        gc.collect()  # the unwound frames held the ranks' queues: free their semaphores before exit
        stop_forkserver()
        lead = "\n" if sys.stderr.isatty() else ""  # below rank 0's progress bar, which nobody closed
        print(f"{lead}netsparse-train: stopped by {stopped[0]}: every rank and switch stopped, no report written",
              file=sys.stderr)
        sys.exit(stopped[1])


if __name__ == "__main__":
    main()
