"""The per-rank full-graph training loop behind ``netsparse-train``."""

from __future__ import annotations

import contextlib
import resource
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from hw_models.hardware import TRAIN_SHORTCUTS, train_hardware
from netsparse_torch import checkpoint
from netsparse_torch.backend import collective_path, comm_stats
from netsparse_torch.evaluation import SPLITS, BestTracker, Evaluator
from netsparse_torch.kernels import _choice, agreed_choices, recorded_choices
from netsparse_torch.nn import DistGNN, DistGraph
from netsparse_torch.nn.models import model_options
from netsparse_torch.nn.training import sync_gradients
from netsparse_torch.partition import Partitioning, rank_shard
from netsparse_torch.partition.source import Source
from netsparse_torch.progress import DEFAULT_EVERY, Progress
from netsparse_torch.report.metrics import MetricsLogger, open_logger
from netsparse_torch.run import counters
from netsparse_torch.run.device import device_kind, rank_device
from netsparse_torch.run.resume import Carried, rank_counters
from netsparse_torch.run.threads import rank_threads
from netsparse_torch.signals import raise_if_stopped


def _allreduce(value: float | int, op=dist.ReduceOp.SUM, dtype=torch.float64) -> float:
    t = torch.tensor([value], dtype=dtype)
    if dist.is_initialized():
        dist.all_reduce(t, op=op)
    return t.item()


def normalize_features(x: torch.Tensor) -> torch.Tensor:
    """PyG's ``T.NormalizeFeatures`` on this rank's rows: subtract the minimum over every rank's
    features, then divide each row by its sum (at least 1). The same rows as a one-process run."""
    low = _allreduce(float(x.min()) if x.numel() else float("inf"), op=dist.ReduceOp.MIN)
    x = x - low
    return x / x.sum(dim=-1, keepdim=True).clamp(min=1.0)


def peak_rss_bytes() -> int:
    """This process's peak resident set size (getrusage; Linux reports KiB, macOS bytes). A rank forked
    from the launcher's forkserver starts with the pages it shares with it (torch and the package)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class Trainer:
    """One rank's model, optimiser and data; ``fit`` returns the report fragment (rank 0's view).
    ``hardware``: the run's :class:`~hw_models.params.HardwareParams` (None: built from ``cfg``), the
    one source of the RIG node's settings."""

    def __init__(self, rank: int, world_size: int, data: Source, cfg, partitioning: Partitioning | None = None,
                 hardware=None):
        self.rank, self.world_size, self.cfg = rank, world_size, cfg
        self.device = rank_device(device_kind(cfg.get("device", "auto")), rank)  # before any collective
        _choice.forget_agreements()  # this run's ranks agree their CUDA kernels anew (DistGraph.propagate)
        hardware = hardware if hardware is not None else train_hardware(cfg)
        options = strategy_options(cfg, hardware)
        shard = rank_shard(data, rank, world_size, partitioning or str(cfg.partition),
                           verify=bool(cfg.dataset.get("verify", True)))
        if cfg.get("normalize_features", False):
            shard.x = normalize_features(shard.x)
        self.fabric = None  # fabric=switch: this rank's SwitchFabric (collective: the strategy's default)
        if str(cfg.fabric.name) == "switch":
            from netsparse_torch.run.switch_launcher import attach_rank

            self.fabric = options["fabric"] = attach_rank(rank, world_size, cfg, shard.bounds, hardware)
        self.dg = DistGraph(shard, rank, world_size, strategy=str(cfg.strategy.name), strategy_options=options,
                            device=self.device)
        # The same initial weights on every rank and at every world size; dropout masks are keyed on
        # (seed, epoch, layer, node id, feature), so no rank draws from its own RNG stream.
        torch.manual_seed(int(cfg.seed))
        self.model = DistGNN(str(cfg.model.name), shard.num_features, int(cfg.hidden), shard.num_classes,
                             int(cfg.model.num_layers), float(cfg.dropout), seed=int(cfg.seed),
                             **model_options(cfg.model)).to(self.device)  # initialised on CPU: the same on any device
        self.opt = torch.optim.Adam(self.model.parameters(), lr=float(cfg.lr),
                                    weight_decay=float(cfg.weight_decay))
        self.n_train = int(_allreduce(int(shard.train_mask.sum())))
        self.evaluator = Evaluator(shard.num_classes)
        self.tracker = BestTracker(self.evaluator.val_metric, int(cfg.get("patience", 0)))
        self.epochs: list[dict] = []
        self.start_epoch = 0
        self.ckpt_dir = Path(str(cfg.checkpoint_dir)) if cfg.get("checkpoint_dir") else None
        self.carried = Carried(rank, self._load_checkpoint() if cfg.resume else None, self.start_epoch)

    # -- one step -------------------------------------------------------------------------------
    def train_epoch(self, epoch: int) -> float:
        self.model.train()
        self.opt.zero_grad()
        out = self.model(self.dg.x, self.dg, epoch=epoch)
        mask = self.dg.mask("train")
        loss = F.cross_entropy(out[mask], self.dg.y[mask], reduction="sum") / max(self.n_train, 1)
        loss.backward()
        sync_gradients(self.dg, self.model, complete=True)  # the loss reaches every parameter on every rank
        self.opt.step()
        return _allreduce(loss.item())

    @torch.no_grad()
    def evaluate(self) -> dict[str, float | None]:
        """Train/val/test metrics of the whole graph (netsparse_torch/evaluation.py)."""
        self.model.eval()
        out = self.model(self.dg.x, self.dg)
        return self.evaluator(out, self.dg.y, {split: self.dg.mask(split) for split in SPLITS})

    def _eval_due(self, epoch: int) -> bool | None:
        """Evaluate after ``epoch`` when ``eval_every`` says so: None when not due, else whether
        patience ends the run."""
        every = int(self.cfg.get("eval_every", 0))
        if every <= 0 or (epoch + 1) % every:
            return None
        return self.tracker.update(epoch, self.evaluate())

    def _final_scores(self) -> dict[str, float | None]:
        """The metrics after the last epoch run (evaluated now unless that epoch just was)."""
        last = self.epochs[-1]["epoch"] if self.epochs else None
        if self.tracker.history and self.tracker.history[-1]["epoch"] == last:
            entry = self.tracker.history[-1]
            return {k: v for k, v in entry.items() if k != "epoch"}
        scores = self.evaluate()
        self.tracker.update(last, scores)
        return scores

    # -- the run --------------------------------------------------------------------------------
    def fit(self, run_dir: str | None = None, log: str | None = None) -> dict:
        """Train from ``start_epoch`` to ``cfg.epochs`` (or an early stop). Rank 0 shows the epochs (a
        bar, or a line every ``log_every`` epochs, also appended to the log file ``log``), writes the
        ``logger=`` metrics and the epoch log into ``run_dir``; a CSV row and an epoch-log line are
        flushed per epoch, so a stopped run keeps what it finished."""
        epochs = int(self.cfg.epochs)
        traffic = self.dg.strategy.traffic
        progress, metrics = self._progress(epochs, log), self._metrics(run_dir)
        epoch_log = checkpoint.EpochLog(Path(run_dir) / checkpoint.EPOCH_LOG if run_dir and self.rank == 0 else None,
                                        self.epochs, self.tracker.history)
        if self.start_epoch > 0:
            progress.note(f"resumed from epoch {self.start_epoch}/{epochs} (checkpoint in {self.ckpt_dir})")
            replay(metrics, self.epochs, self.tracker.history)
        self.carried.begin(rank_counters(self.dg.strategy))
        try:
            for epoch in range(self.start_epoch, epochs):
                if self._one_epoch(epoch, progress, metrics, epoch_log):
                    break
                raise_if_stopped()  # rank 0 under torchrun: the agent's stop, once this epoch is logged
        finally:
            epoch_log.close()
        progress.close()
        train_bytes = int(_allreduce(traffic.total_bytes))
        scores = self._final_scores()
        if self.epochs:
            metrics.log(self.epochs[-1]["epoch"], **scores)
        metrics.close()
        return self._report(scores, train_bytes)

    def _one_epoch(self, epoch: int, progress: Progress, metrics: MetricsLogger, epoch_log) -> bool:
        """Train ``epoch``, evaluate it when due, show it and checkpoint it; whether patience ends the run."""
        traffic = self.dg.strategy.traffic
        before = traffic.total_bytes
        t0 = time.perf_counter()
        loss = self.train_epoch(epoch)
        dt = _allreduce(time.perf_counter() - t0, op=dist.ReduceOp.MAX)
        moved = int(_allreduce(traffic.total_bytes - before))
        self.epochs.append({"epoch": epoch, "loss": loss, "time_s": dt, "feature_bytes": moved})
        self.carried.epoch_done(epoch + 1)
        epoch_log.epoch(self.epochs[-1])
        metrics.log(epoch, loss=loss, time_s=dt, feature_bytes=moved)
        stop = self._eval_due(epoch)  # before the checkpoint, which keeps the evaluations
        if stop is not None:
            epoch_log.evaluation(self.tracker.history[-1])
            metrics.log(epoch, **{k: v for k, v in self.tracker.history[-1].items() if k != "epoch"})
        self._show(progress, epoch, loss, dt, moved, last=bool(stop))
        every = int(self.cfg.checkpoint_every)
        if every > 0 and (epoch + 1) % every == 0:
            self._save_checkpoint(epoch)
        return bool(stop)

    def _show(self, progress: Progress, epoch: int, loss: float, dt: float, moved: int, last: bool) -> None:
        """Rank 0's line (or bar postfix) of ``epoch``, with the latest validation metric once there is
        one (``eval_every``); the last epoch before an early stop always gets its line."""
        metric = self.tracker.metric
        val = self.tracker.history[-1].get(metric) if self.tracker.history else None
        shown = f"  {metric} {val:.4f}" if val is not None else ""
        postfix = {"loss": f"{loss:.4f}", **({metric: f"{val:.4f}"} if val is not None else {}),
                   "epoch_ms": f"{dt * 1e3:.1f}"}
        progress.update(epoch + 1, f"loss {loss:.4f}{shown}  time {dt * 1e3:8.2f} ms  feature bytes {moved:,}",
                        last=last, **postfix)

    def _progress(self, epochs: int, log: str | None = None) -> Progress:
        """Rank 0's epoch progress: a bar on a terminal, a line every ``log_every`` epochs otherwise."""
        return Progress(epochs, "epoch", every=int(self.cfg.get("log_every") or DEFAULT_EVERY), unit="epoch",
                        enabled=self.rank == 0, initial=self.start_epoch, log=log)

    def _metrics(self, run_dir: str | None) -> MetricsLogger:
        """Rank 0's ``logger=`` (metrics.csv or TensorBoard events in the run directory)."""
        name = str(self.cfg.get("logger") or "none")
        return open_logger(name, run_dir) if self.rank == 0 else MetricsLogger()

    def _report(self, scores: dict, train_bytes: int) -> dict:
        traffic = self.dg.strategy.traffic
        plan = self.dg.plan
        shard = self.dg.shard
        local = {"rank": self.rank, "device": str(self.device), "rows": plan.n_local, "nnz": shard.nnz,
                 "halo": plan.n_halo,
                 "halo_from": plan.recv_counts, "edge_cut": shard.edge_cut, "partition": shard.mode,
                 "peak_rss_bytes": peak_rss_bytes(), **rank_threads(), "kernels": recorded_choices(),
                 "kernel_agreement": agreed_choices(),
                 "strategy_stats": self.dg.strategy.stats(), **self._carried_on()}
        per_rank = [local]
        if self.world_size > 1:
            per_rank = [None] * self.world_size
            dist.all_gather_object(per_rank, local)
        run_epochs = list(self.epochs)
        return {
            "attempts": self.carried.all_attempts(),
            "switches_before": self.carried.switches,  # fabric=switch: what earlier attempts' switches counted
            "final": {**scores, "train_loss": self.epochs[-1]["loss"] if self.epochs else float("nan")},
            **self.tracker.report(),  # best, evaluations, early_stop
            "epochs": run_epochs,
            "per_rank": per_rank,
            "comm": {
                "feature_bytes": int(_allreduce(traffic.total_bytes)),
                "feature_bytes_train": train_bytes,
                "feature_bytes_per_epoch": run_epochs[-1]["feature_bytes"] if run_epochs else 0,
                "forward_bytes": int(_allreduce(traffic.forward_bytes)),
                "backward_bytes": int(_allreduce(traffic.backward_bytes)),
            },
        }

    def _carried_on(self) -> dict:
        """The backend's counters of this rank for the report: this process's and, after a resume, what
        the earlier attempts' epochs counted (netsparse_torch/run/resume.py)."""
        path = collective_path()
        path["device_calls"] = counters.add(self.carried.counters.get("device_calls", {}), path["device_calls"])
        return {"collectives": counters.add(self.carried.counters.get("collectives", {}), comm_stats()),
                "cuda_collectives": path}

    def close(self) -> None:
        """Detach from the switch service (fabric=switch)."""
        if self.fabric is not None:
            self.fabric.close()
            self.fabric = None

    # -- checkpoints (netsparse_torch/checkpoint.py) ----------------------------------------------
    def _save_checkpoint(self, epoch: int) -> None:
        state = {"epochs_done": epoch + 1, "model": self.model.state_dict(), "opt": self.opt.state_dict(),
                 "epochs": self.epochs, "evaluations": self.tracker.state(),
                 "counters": self.carried.loop(rank_counters(self.dg.strategy)),
                 "attempts": self.carried.all_attempts(), "switches": self._switch_counters(epoch),
                 "checks": self.dg.check_state()}
        checkpoint.save(self.ckpt_dir, self.rank, self.world_size, self.cfg, state)

    def _switch_counters(self, epoch: int) -> list[dict]:
        """fabric=switch, rank 0: the switches' counters of every epoch so far. Read while every rank waits
        at this checkpoint (a rank that went on would already send the next epoch's packets)."""
        if self.fabric is None:
            return []
        from netsparse_torch.run.switch_launcher import switch_counters

        with checkpoint_pause(self.rank, self.world_size, epoch, float(self.cfg.timeout_s)):
            reading = switch_counters(self.cfg) if self.rank == 0 else []
        return counters.add_switches(self.carried.switches, reading) if self.rank == 0 else []

    def _load_checkpoint(self) -> dict:
        state = checkpoint.load(self.ckpt_dir, self.rank, self.world_size, self.cfg)
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.epochs = state["epochs"]
        self.tracker.load_state(state.get("evaluations"))
        self.dg.strategy.add_counters(state["counters"].get("strategy", {}))
        self.dg.load_check_state(state["checks"])
        self.start_epoch = int(state["epochs_done"])
        return state


def replay(metrics: MetricsLogger, epochs: list[dict], evaluations: list[dict]) -> None:
    """A resumed run's metrics file starts with the checkpoint's epochs and evaluations, as its report does."""
    evaluated = {e["epoch"]: {k: v for k, v in e.items() if k != "epoch"} for e in evaluations}
    for e in epochs:
        metrics.log(e["epoch"], loss=e["loss"], time_s=e["time_s"], feature_bytes=e["feature_bytes"])
        if e["epoch"] in evaluated:
            metrics.log(e["epoch"], **evaluated[e["epoch"]])


@contextlib.contextmanager
def checkpoint_pause(rank: int, world_size: int, epoch: int, timeout_s: float):
    """Every rank waits here until rank 0 has run the block, through the job's store: a barrier of the
    backend would be one more collective in the report's counts, which a run without checkpoints lacks."""
    from netsparse_torch.run.torchrun import job_store, restart_count

    store = job_store(timeout_s)
    key = f"netsparse/checkpoint_pause/{restart_count()}/{epoch}"
    if rank == 0:
        store.wait([f"{key}/{r}" for r in range(1, world_size)])
        yield
        store.set(key, "done")
    else:
        store.set(f"{key}/{rank}", "here")
        yield
        store.wait([key])


def strategy_options(cfg, hardware) -> dict:
    """The strategy's options: its config's, less the hardware shortcuts, which reach the strategy
    resolved in ``hardware`` (netsparse: the RIG node's settings)."""
    options = {k: v for k, v in (cfg.strategy.get("options") or {}).items()
               if f"strategy.options.{k}" not in TRAIN_SHORTCUTS}
    if str(cfg.strategy.name) == "netsparse":
        options["hardware"] = hardware
    return options


def train_rank(rank: int, world_size: int, data: Source, cfg, partitioning: Partitioning | None = None,
               run_dir: str | None = None, log: str | None = None, hardware=None) -> dict:
    """Entry point of each rank (see :func:`netsparse_torch.run.launch.launch`): ``data`` is the whole graph
    (cut by ``partitioning``, or by ``cfg.partition`` on the rank) or a partitioned dataset (this rank
    reads only its shard); rank 0 writes ``logger=`` metrics and the epoch log into ``run_dir`` and its
    progress lines also into the log file ``log``."""
    trainer = Trainer(rank, world_size, data, cfg, partitioning, hardware)
    try:
        return trainer.fit(run_dir, log)
    finally:
        trainer.close()
