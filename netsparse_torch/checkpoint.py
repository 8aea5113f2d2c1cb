"""Checkpoints of a training run, and a resume that refuses to continue a different run.

A checkpoint folder holds one ``rank<r>-of-<p>.pt`` per rank (model, optimiser, the epochs so far,
traffic counters, and the run's config) and ``run.json``: the full training config and its
run-defining part (:func:`run_identity`). ``resume=true`` compares the run-defining keys of the new
config with those of the checkpoint, before any rank starts, and refuses with one error naming every key
that differs. The default folder is ``checkpoints/`` in the run's own output directory, so runs of a
sweep never share one.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from omegaconf import OmegaConf, open_dict

from netsparse_torch.errors import ConfigError

RUN_FILE = "run.json"
#: The keys that define what a run trains: the data, the model, the optimisation and the partition of
#: the work (the checkpoint files are per rank). Left out, because a resumed run may change them:
#: epochs and the bookkeeping keys; the strategy and the fabric (every strategy trains the same model to
#: float rounding, docs/invariance.md, and none of their options changes the numerics beyond that); and
#: ``dataset.verify`` (whether shard checksums are checked).
RUN_KEYS = ("dataset", "model", "seed", "lr", "weight_decay", "hidden", "dropout", "world_size", "partition",
            "metis")
IGNORED = ("dataset.verify",)


def _flat(d: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def run_identity(cfg) -> dict[str, object]:
    """The run-defining keys of ``cfg``, flattened (``dataset.split``, ``lr``, ...). ``metis.*`` counts
    only with ``partition=metis``."""
    container = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    keys = [k for k in RUN_KEYS if k != "metis" or container.get("partition") == "metis"]
    flat = _flat({k: container.get(k) for k in keys})
    return {k: v for k, v in flat.items() if k not in IGNORED}


def differences(saved: dict, now: dict) -> list[str]:
    """``key: saved -> now`` for every run-defining key that differs (or exists on one side only)."""
    missing = object()
    return [f"{k}: {saved.get(k, '(unset)')!r} -> {now.get(k, '(unset)')!r}"
            for k in sorted(set(saved) | set(now)) if saved.get(k, missing) != now.get(k, missing)]


def check_same_run(saved: dict, cfg, where: Path) -> None:
    diff = differences(saved, run_identity(cfg))
    if diff:
        raise ConfigError(f"resume=true: the checkpoint in {where} is of another run; differing keys: "
                          f"{'; '.join(diff)}. Resume with the checkpoint's values, or start a new run "
                          "(resume=false, or another checkpoint_dir)")


def prepare(cfg, out_dir: Path | None) -> None:
    """Launcher side, before any rank starts: set the default folder (``<out_dir>/checkpoints``) and,
    with ``resume=true``, check that the folder holds a checkpoint of this run."""
    if cfg.get("checkpoint_dir") is None:
        if out_dir is None and (int(cfg.checkpoint_every) > 0 or bool(cfg.resume)):
            raise ConfigError("checkpoint_dir is not set and there is no Hydra run directory to put it in: "
                              "set checkpoint_dir=DIR")
        with open_dict(cfg):
            cfg.checkpoint_dir = str(out_dir / "checkpoints") if out_dir is not None else None
    if not bool(cfg.resume):
        return
    folder = Path(str(cfg.checkpoint_dir))
    run_file = folder / RUN_FILE
    if not run_file.is_file():
        raise ConfigError(f"resume=true but no checkpoint in {folder}: the default folder is the run's own "
                          "output directory, so resume the same one (hydra.run.dir=<that run's dir>) or name "
                          "its folder (checkpoint_dir=<that run's dir>/checkpoints)")
    check_same_run(json.loads(run_file.read_text())["run"], cfg, folder)


def rank_file(folder: Path, rank: int, world_size: int) -> Path:
    return folder / f"rank{rank}-of-{world_size}.pt"


def save(folder: Path, rank: int, world_size: int, cfg, state: dict) -> None:
    """Write this rank's checkpoint atomically (rank 0 also ``run.json``)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    path = rank_file(folder, rank, world_size)
    tmp = path.with_suffix(".tmp")
    torch.save({**state, "run": run_identity(cfg), "config": config}, tmp)
    tmp.replace(path)
    if rank == 0:
        tmp = folder / (RUN_FILE + ".tmp")
        tmp.write_text(json.dumps({"run": run_identity(cfg), "config": config}, indent=2, default=str))
        tmp.replace(folder / RUN_FILE)


def load(folder: Path, rank: int, world_size: int, cfg) -> dict:
    """This rank's checkpoint, after checking it is of this run (under torchrun, ranks on another
    machine have no ``run.json`` check before they start)."""
    path = rank_file(folder, rank, world_size)
    if not path.is_file():
        raise ConfigError(f"resume=true but no checkpoint at {path}; run with checkpoint_every=N first "
                          "(same checkpoint_dir and world_size)")
    state = torch.load(path, map_location="cpu", weights_only=False)  # load_state_dict moves it to the run's device
    check_same_run(state.get("run", {}), cfg, folder)
    return state


# -- the epoch log: what a stopped run still reports ---------------------------------------------------
#: Rank 0's completed epochs in the run directory, one JSON line each, written as each epoch ends. A
#: stop signal ends the ranks mid-epoch, with no chance to gather a report; the launcher then reads this
#: file back (:func:`read_epoch_log`) and reports every completed epoch, checkpoints or not.
EPOCH_LOG = "epochs.jsonl"


class EpochLog:
    """Appends ``{"epoch": {...}}`` and ``{"evaluation": {...}}`` lines to ``path`` (nothing when
    ``path`` is None: ranks other than 0, or a run without a run directory). Each line is flushed, so a
    rank killed by SIGTERM leaves every completed epoch on disk; no fsync, since the process, not the
    machine, is what stops."""

    def __init__(self, path: str | Path | None, epochs: list[dict] = (), evaluations: list[dict] = ()):
        self._file = open(path, "w") if path is not None else None  # noqa: SIM115 (closed by close())
        for e in epochs:  # a resumed run: the checkpoint's epochs first
            self.epoch(e)
        for e in evaluations:
            self.evaluation(e)

    def _write(self, record: dict) -> None:
        if self._file is not None:
            self._file.write(json.dumps(record, default=float) + "\n")
            self._file.flush()

    def epoch(self, record: dict) -> None:
        self._write({"epoch": record})

    def evaluation(self, entry: dict) -> None:
        self._write({"evaluation": entry})

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_epoch_log(path: Path) -> tuple[list[dict], list[dict]]:
    """The epochs and the evaluations of an :class:`EpochLog` (none when there is no file). A line cut
    short by the stop is dropped."""
    epochs, evaluations = [], []
    if not path.is_file():
        return epochs, evaluations
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # the last line, being written when the rank was stopped
            continue
        if "epoch" in record:
            epochs.append(record["epoch"])
        elif "evaluation" in record:
            evaluations.append(record["evaluation"])
    return epochs, evaluations
