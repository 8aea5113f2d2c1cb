"""One training job, in the launching process: load (or open) the dataset, partition it, start the
ranks (and the switches of ``fabric=switch``), and write the report and the summary.

``netsparse-train`` imports this module only once its configuration has passed the torch-free checks
of :mod:`netsparse_torch.config_check`: a mistyped value is one line in about a second, not after the
several seconds that torch and PyG take to import.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from hw_models.files import check_writable
from hw_models.params import HardwareParams
from netsparse_torch import checkpoint
from netsparse_torch.comm import STRATEGIES
from netsparse_torch.config_check import check_values, in_sweep, set_on_command_line
from netsparse_torch.errors import ConfigError, PeerLostError
from netsparse_torch.graph import load_dataset
from netsparse_torch.modeled import add_modeled, check_cluster
from netsparse_torch.partition import PartitionedDataset, partition_dataset, partition_settings
from netsparse_torch.progress import echo, hydra_log_file
from netsparse_torch.report import build_train_report, summary_lines, write_json
from netsparse_torch.report.analog import scaled_modeled_lines
from netsparse_torch.report.curves import save_curves
from netsparse_torch.report.identity import identity, refuse_overwrite
from netsparse_torch.report.metrics import check_logger
from netsparse_torch.report.plots import load_matplotlib
from netsparse_torch.run.counters import add_switches
from netsparse_torch.run.device import device_kind
from netsparse_torch.run.launch import ByName, launch
from netsparse_torch.run.restart import continue_after_restart
from netsparse_torch.run.switch_launcher import switch_service
from netsparse_torch.run.torchrun import under_torchrun
from netsparse_torch.signals import Interrupted

TRAIN_RANK = ByName("netsparse_torch.run.training", "train_rank")  # each rank's loop, imported by the ranks


def check_config(cfg: DictConfig, hardware: HardwareParams | None = None) -> HardwareParams:
    """The strategy and model checks, then the values' (:func:`check_values`, unless the caller's
    ``hardware`` says they passed); returns the run's one ``HardwareParams``."""
    if str(cfg.strategy.name) not in STRATEGIES:
        raise ConfigError(f"unknown strategy {cfg.strategy.name!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    no_gather = STRATEGIES[str(cfg.strategy.name)].no_gather
    if str(cfg.model.name) == "gat" and no_gather:
        raise ConfigError(f"model=gat cannot use strategy={cfg.strategy.name}: {no_gather}; "
                          "choose su, sa, netsparse or twoface")
    return hardware if hardware is not None else check_values(cfg)


def one_report_path(cfg: DictConfig, hardware: HardwareParams) -> None:
    """In a sweep, ``report_path`` names one file for every job: a job refuses to write over another's
    report (as ``netsparse-simulate``'s do) instead of leaving the last job's under that name. Checked
    before the training and again before the write (a parallel launcher's jobs finish in any order)."""
    if cfg.get("report_path") and in_sweep():
        refuse_overwrite(Path(str(cfg.report_path)), identity(OmegaConf.to_container(cfg, resolve=True),
                                                               hardware.to_dict()),
                         "drop report_path= from the sweep (each job's report.json is in its folder of "
                         "hydra.sweep.dir, which netsparse-compare and collect read), or delete that file")


def run(cfg: DictConfig, hardware: HardwareParams | None = None) -> dict | None:
    """Train as configured; returns the report on rank 0 (``None`` on other torchrun ranks).

    An in-memory dataset is loaded and partitioned once here (under torchrun: by every process); each
    rank builds its shard from it. A partitioned dataset (``dataset=partitioned``) is only opened here
    (its manifest): each rank memory-maps its own shard, and no process loads the whole graph. A paper
    analog (``dataset=paper``) is only described here: each rank generates its own shard, and its
    whole-graph model runs in a process of its own after training.
    """
    hardware = check_config(cfg, hardware)  # the run's one hardware: RIG nodes, switches, modeled block, report
    check_writable(cfg.get("report_path"), "report_path")  # now, not after the training
    one_report_path(cfg, hardware)
    device_kind(cfg.get("device", "auto"))  # device=cuda without a GPU: one line before any rank starts
    out_dir = Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None
    continue_after_restart(cfg, out_dir, hydra_log_file())  # torchrun --max-restarts: go on from the checkpoint
    checkpoint.prepare(cfg, out_dir)  # default folder in the run's directory; resume=true: the same run?
    if int(cfg.checkpoint_every) > 0:
        check_writable(cfg.checkpoint_dir, "checkpoint_dir", folder=True)
    t0 = time.perf_counter()
    data = load_dataset(cfg.dataset)
    partitioning = None
    if isinstance(data, PartitionedDataset):
        data.check_world_size(int(cfg.world_size))
        data.check_partition(str(cfg.partition) if set_on_command_line("partition") else None)
    else:
        data, partitioning = partition_dataset(data, int(cfg.world_size), str(cfg.partition), **partition_settings(cfg))
    check_cluster(cfg, data, hardware)
    check_logger(str(cfg.get("logger") or "none"))
    log = hydra_log_file()  # Hydra's <job>.log: the same lines as the console
    epoch_log = out_dir / checkpoint.EPOCH_LOG if out_dir else None
    if epoch_log is not None:
        epoch_log.unlink(missing_ok=True)  # an earlier run's, in a reused run directory
    args = (data, cfg, partitioning, str(out_dir) if out_dir else None, str(log) if log else None, hardware)
    written: list[tuple[Path, int]] = []  # the full report, once it is on disk
    if out_dir is not None:  # curves.png at the end: matplotlib's import (~0.5 s) while the ranks train
        threading.Thread(target=load_matplotlib, daemon=True).start()
    try:
        with switch_service(cfg, hardware) as switches:  # fabric=switch: start or configure them; always stopped
            result = launch(TRAIN_RANK, int(cfg.world_size), args, timeout_s=float(cfg.timeout_s),
                            threads=cfg.get("threads", "auto"))
            switch_report = switches.report() if switches is not None and result is not None else None
        if result is None:
            return None
        if switch_report is not None:  # a resumed run: the switches of the earlier attempts counted the epochs before
            switch_report = add_switches(result.pop("switches_before", []), switch_report)
        report = build_train_report(cfg, data, result, time.perf_counter() - t0)
        report["hardware"] = hardware.to_dict()  # once; the RIG nodes, switches and modeled block used it
        if switch_report is not None:
            report["switches"] = switch_report  # measured counters of every switch, [{name, role, counters}]
        add_modeled(report, cfg, data, hardware, log)  # cluster=<target>: modeled epoch on virtual nodes (not measured)
        one_report_path(cfg, hardware)  # again: a parallel launcher's other job may have written it meanwhile
        paths = write_json(report, cfg.get("report_path"), out_dir / "report.json" if out_dir else None)
        written += [(paths[-1], len(report["epochs"]))] if paths else []
        show_report(report, paths, log)
    except Interrupted as stop:  # every rank and switch is stopped: report the epochs they completed
        stop.report = written[0] if written else \
            write_stopped_report(cfg, data, stop, epoch_log, out_dir, time.perf_counter() - t0, hardware)
        raise
    except PeerLostError as lost:  # a rank died or was stopped, and the others with it: say what was kept
        kept = write_stopped_report(cfg, data, f"lost rank {', '.join(map(str, lost.ranks))}", epoch_log, out_dir,
                                    time.perf_counter() - t0, hardware) if reports_here() else None
        raise PeerLostError(f"{lost}; {completed_epochs(cfg, kept)}", lost.ranks) from None
    if epoch_log is not None:
        epoch_log.unlink(missing_ok=True)  # the report holds every epoch
    return report


def show_report(report: dict, paths: list[Path], log: Path | None) -> None:
    """The curves next to the report, and the summary on the console and in the log file."""
    curves = save_curves(report, paths[-1].parent) if paths else None
    for line in summary_lines(report) + scaled_modeled_lines(report.get("modeled"), report["dataset"]["nodes"]):
        echo(line, log)
    for p in [*paths, curves] if curves else paths:
        echo(f"  written      {p}", log)


def reports_here() -> bool:
    """Whether this process writes the run's report: the launcher, or rank 0 under torchrun."""
    return not under_torchrun() or os.environ.get("RANK") == "0"


def completed_epochs(cfg: DictConfig, kept: tuple[Path, int] | None) -> str:
    """Where a run that lost a rank keeps its completed epochs: the checkpoint, and the report of the
    epochs rank 0 completed (``kept``: its path and their number)."""
    folder = cfg.get("checkpoint_dir")
    done = checkpoint.latest(Path(str(folder)), int(cfg.world_size)) if folder else None
    where = (f"the checkpoint of {done} completed epochs is in {folder} (resume=true goes on from it)" if done
             else f"no checkpoint{'' if int(cfg.checkpoint_every) else ' (checkpoint_every=0)'}")
    if kept is not None:
        where += f"; the report of the {kept[1]} completed epochs is in {kept[0]}"
    return where


def write_stopped_report(cfg: DictConfig, data, stop: Interrupted | str, epoch_log: Path | None, out_dir: Path | None,
                         wall_s: float, hardware=None) -> tuple[Path, int] | None:
    """The report of a run stopped by a signal: the epochs rank 0 completed (its epoch log) and their
    evaluations, marked ``"stopped": "SIGTERM at epoch N"`` (epochs 0 to N-1 completed). Returns where
    it went and N; None when no epoch completed or there is nowhere to write."""
    epochs, evaluations = checkpoint.read_epoch_log(epoch_log) if epoch_log is not None else ([], [])
    if not epochs:
        return None
    at = epochs[-1]["epoch"] + 1
    report = stopped_report(cfg, data, epochs, evaluations, f"{stop} at epoch {at}", wall_s)
    if hardware is not None:
        report["hardware"] = hardware.to_dict()
    paths = write_json(report, cfg.get("report_path"), out_dir / "report.json" if out_dir else None)
    return (paths[-1], at) if paths else None


def stopped_report(cfg: DictConfig, data, epochs: list[dict], evaluations: list[dict], stopped: str,
                   wall_s: float) -> dict:
    """A training report of what a stopped run measured: no per-rank block, switch counters or modeled
    block (the ranks were stopped before they could send theirs); ``final`` holds the last completed
    epoch's loss, and its metrics only when that epoch was evaluated."""
    from netsparse_torch.evaluation import BestTracker, Evaluator
    from netsparse_torch.report.provenance import provenance

    tracker = BestTracker(Evaluator(data.num_classes).val_metric, int(cfg.get("patience", 0)))
    for entry in evaluations:
        tracker.update(entry["epoch"], {k: v for k, v in entry.items() if k != "epoch"})
    last = epochs[-1]
    scores = {k: v for k, v in evaluations[-1].items() if k != "epoch"} \
        if evaluations and evaluations[-1]["epoch"] == last["epoch"] else {"test_acc": None, "val_acc": None}
    times = [e["time_s"] for e in epochs]
    return {
        "kind": "train",
        "stopped": stopped,
        "measured": "every number here is measured on this machine",
        "dataset": {"name": data.name, "nodes": data.num_nodes, "nnz": int(data.nnz), "features": data.num_features,
                    "classes": data.num_classes},
        "model": str(cfg.model.name),
        "strategy": str(cfg.strategy.name),
        "fabric": str(cfg.fabric.name),
        "world_size": int(cfg.world_size),
        "seed": int(cfg.seed),
        "final": {**scores, "train_loss": last["loss"], "epoch": last["epoch"]},
        **tracker.report(),
        "epochs": [{k: e[k] for k in ("epoch", "loss", "time_s")} for e in epochs],
        "epoch_time_s": {"median": statistics.median(times), "mean": statistics.fmean(times)},
        "comm": {"feature_bytes_train": sum(e["feature_bytes"] for e in epochs)},
        "wall_s": wall_s,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "provenance": provenance(),
    }
