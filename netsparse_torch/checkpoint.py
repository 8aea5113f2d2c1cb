"""Checkpoints of a training run, and a resume that refuses to continue a different run.

A checkpoint folder holds, per rank, ``rank<r>-of-<p>.<n>epochs.pt`` after ``n`` completed epochs (model,
optimiser, the epochs so far, every counter the report sums over the epochs, the attempts so far, and
the run's config), the latest two of each rank, and ``run.json``: the full training config and its
run-defining part (:func:`run_identity`). A run stopped while its ranks were writing leaves some rank
one checkpoint ahead of another; :func:`latest` is the newest checkpoint that every rank wrote, which
the older file of the rank ahead still holds.

``resume=true`` compares the run-defining keys of the new config with those of the checkpoint, before
any rank starts, and refuses with one error naming every key that differs; it also refuses ``epochs``
that leave nothing to train. The default folder is ``checkpoints/`` in the run's own output directory,
so runs of a sweep never share one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from omegaconf import OmegaConf, open_dict

from netsparse_torch.errors import ConfigError

RUN_FILE = "run.json"
#: The layout of the files: 2 = one file per rank and completed epoch count, with the run's counters.
FORMAT = 2
#: The keys that define what a run trains and what its report counts: the data (and its feature
#: normalisation), the model, the optimisation, the partition of the work (the checkpoint files are per
#: rank), and how the features travel: the strategy, the fabric, the modeled cluster and the hardware
#: (``hw``), with their options. Every strategy trains the same model to float rounding
#: (docs/invariance.md), but the report sums bytes, RIG and switch counters and epoch times over every
#: epoch: a run resumed with another strategy would report one strategy for epochs that ran with two.
#: Left out, because a resumed run may change them: epochs, ``device`` and the bookkeeping keys;
#: :data:`IGNORED`.
RUN_KEYS = ("dataset", "model", "seed", "lr", "weight_decay", "hidden", "dropout", "normalize_features",
            "world_size", "partition", "metis", "strategy", "fabric", "cluster", "hw")
#: Keys (and the keys below them) that say where things are, not what runs: whether shard checksums are
#: checked, and the switches' addresses, bind host and token variable (a resumed run starts fresh
#: switches on new ports).
IGNORED = ("dataset.verify", "fabric.switches", "fabric.host", "fabric.token_env")
_RANK_FILE = re.compile(r"rank(\d+)-of-(\d+)\.(\d+)epochs\.pt")


def _flat(d: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def _ignored(key: str) -> bool:
    return any(key == i or key.startswith(i + ".") for i in IGNORED)


def run_identity(cfg) -> dict[str, object]:
    """The run-defining keys of ``cfg``, flattened (``dataset.split``, ``lr``, ...). ``metis.*`` counts
    only with ``partition=metis``."""
    container = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    keys = [k for k in RUN_KEYS if k in container and (k != "metis" or container.get("partition") == "metis")]
    flat = _flat({k: container.get(k) for k in keys})
    return {k: v for k, v in flat.items() if not _ignored(k)}


def differences(saved: dict, now: dict) -> list[str]:
    """``key: saved -> now`` for every run-defining key that differs (or exists on one side only)."""
    missing = object()
    return [f"{k}: {saved.get(k, '(unset)')!r} -> {now.get(k, '(unset)')!r}"
            for k in sorted(set(saved) | set(now)) if saved.get(k, missing) != now.get(k, missing)]


def check_same_run(saved: dict, cfg, where: Path) -> None:
    if saved.get("format") != FORMAT:
        raise ConfigError(f"resume=true: the checkpoint in {where} was written by an older netsparse_torch, without "
                          "the counters a resumed report needs; start a new run (resume=false, or another "
                          "checkpoint_dir)")
    diff = differences(saved["run"], run_identity(cfg))
    if diff:
        raise ConfigError(f"resume=true: the checkpoint in {where} is of another run; differing keys: "
                          f"{'; '.join(diff)}. Resume with the checkpoint's values, or start a new run "
                          "(resume=false, or another checkpoint_dir)")


def prepare(cfg, out_dir: Path | None) -> None:
    """Launcher side, before any rank starts: set the default folder (``<out_dir>/checkpoints``) and,
    with ``resume=true``, check that the folder holds a checkpoint of this run with fewer epochs than
    ``epochs``."""
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
    check_same_run(json.loads(run_file.read_text()), cfg, folder)
    done = latest(folder, int(cfg.world_size))
    if done is None:
        raise ConfigError(f"resume=true but {folder} holds no checkpoint that every one of the "
                          f"{cfg.world_size} ranks wrote")
    if int(cfg.epochs) <= done:
        raise ConfigError(f"resume=true: the checkpoint in {folder} holds {done} completed epochs, and epochs="
                          f"{cfg.epochs} leaves none to train; set epochs above {done}")


def rank_file(folder: Path, rank: int, world_size: int, epochs: int) -> Path:
    return folder / f"rank{rank}-of-{world_size}.{epochs}epochs.pt"


def _saved(folder: Path, world_size: int) -> dict[int, set[int]]:
    """The completed-epoch counts of every rank's files in ``folder``."""
    out: dict[int, set[int]] = {r: set() for r in range(world_size)}
    for p in folder.glob(f"rank*-of-{world_size}.*epochs.pt") if folder.is_dir() else ():
        m = _RANK_FILE.fullmatch(p.name)
        if m and int(m.group(1)) < world_size:
            out[int(m.group(1))].add(int(m.group(3)))
    return out


def latest(folder: Path, world_size: int) -> int | None:
    """The completed epochs of the newest checkpoint that every rank wrote (None: there is none)."""
    common = set.intersection(*_saved(Path(folder), world_size).values())
    return max(common) if common else None


def save(folder: Path, rank: int, world_size: int, cfg, state: dict) -> None:
    """Write this rank's checkpoint after ``state["epochs_done"]`` epochs atomically, then drop its files
    older than the one before (rank 0 also writes ``run.json``)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    identity = {"format": FORMAT, "run": run_identity(cfg)}
    done = int(state["epochs_done"])
    path = rank_file(folder, rank, world_size, done)
    tmp = path.with_suffix(".tmp")
    torch.save({**state, **identity, "config": config}, tmp)
    tmp.replace(path)
    if rank == 0:
        tmp = folder / (RUN_FILE + ".tmp")
        tmp.write_text(json.dumps({**identity, "config": config}, indent=2, default=str))
        tmp.replace(folder / RUN_FILE)
    kept = sorted(_saved(folder, world_size)[rank], reverse=True)[:2]
    for old in _saved(folder, world_size)[rank] - set(kept):
        rank_file(folder, rank, world_size, old).unlink(missing_ok=True)


def load(folder: Path, rank: int, world_size: int, cfg) -> dict:
    """This rank's part of the newest checkpoint every rank wrote, after checking it is of this run
    (under torchrun, ranks on another machine have no ``run.json`` check before they start)."""
    done = latest(folder, world_size)
    if done is None:
        raise ConfigError(f"resume=true but {folder} holds no checkpoint that every one of the {world_size} ranks "
                          "wrote; run with checkpoint_every=N first (same checkpoint_dir and world_size)")
    state = torch.load(rank_file(folder, rank, world_size, done), map_location="cpu",  # load_state_dict moves it
                       weights_only=False)
    check_same_run(state, cfg, folder)
    for ahead in {n for n in _saved(folder, world_size)[rank] if n > done}:  # of an attempt that died saving
        rank_file(folder, rank, world_size, ahead).unlink(missing_ok=True)
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
