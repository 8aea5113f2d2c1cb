"""``netsparse-train`` under ``torchrun --max-restarts=N``: a restarted job continues from its last
checkpoint by itself.

torchrun's agent restarts every worker of the job when one fails; the workers then run the command again
from its start, with ``TORCHELASTIC_RESTART_COUNT`` one higher. Two things must hold for them to go on
where the job was:

- *one checkpoint folder for every worker and attempt.* Each worker composes its own Hydra run directory
  (by default a timestamp: another one after a restart), so with the default ``checkpoint_dir`` rank 0 of
  the first attempt names the folder (``<its run dir>/checkpoints``) in the job's store, which the agent
  keeps across restarts, and every worker of every attempt uses it.
- *one decision for every rank.* Rank 0 of a restarted attempt looks for a checkpoint of this run in that
  folder and says, through the store, which one every rank resumes from, or that there is none yet, in
  which case the job trains again from epoch 0 and says so.
"""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import open_dict

from netsparse_torch import checkpoint
from netsparse_torch.progress import echo
from netsparse_torch.run.torchrun import job_store, restart_count, under_torchrun

_FOLDER = "netsparse/checkpoint_dir"  # the same for every attempt
_DECISION = "netsparse/resume_from/{}"  # per attempt: the completed epochs to resume from, or "none"


def continue_after_restart(cfg, out_dir: Path | None, log=None) -> None:
    """Under torchrun: the job's one checkpoint folder; after a restart, ``resume=true`` when there is a
    checkpoint of this run to go on from. Call before :func:`netsparse_torch.checkpoint.prepare`."""
    if not under_torchrun():
        return
    store = job_store(float(cfg.timeout_s))
    rank = int(os.environ["RANK"])
    if cfg.get("checkpoint_dir") is None and out_dir is not None:
        mine = str(out_dir / "checkpoints")
        folder = store.compare_set(_FOLDER, "", mine).decode() if rank == 0 else _get(store, _FOLDER)
        with open_dict(cfg):
            cfg.checkpoint_dir = folder
    restarts = restart_count()
    if restarts == 0 or bool(cfg.resume) or cfg.get("checkpoint_dir") is None:
        return
    key = _DECISION.format(restarts)
    if rank == 0:
        store.set(key, str(_resumable(cfg)))
    done = _get(store, key)
    folder = cfg.checkpoint_dir
    if done == "None":
        if rank == 0:
            echo(f"torchrun restart {restarts}: no checkpoint in {folder} yet; training again from epoch 0", log)
        return
    with open_dict(cfg):
        cfg.resume = True
    if rank == 0:
        echo(f"torchrun restart {restarts}: resuming from the checkpoint of {done} completed epochs in {folder}", log)


def _resumable(cfg) -> int | None:
    """The completed epochs of this run's newest checkpoint in ``cfg.checkpoint_dir`` (None: none yet).
    A checkpoint of another run there is the error that ``resume=true`` gives."""
    folder = Path(str(cfg.checkpoint_dir))
    if not (folder / checkpoint.RUN_FILE).is_file():
        return None
    import json

    checkpoint.check_same_run(json.loads((folder / checkpoint.RUN_FILE).read_text()), cfg, folder)
    return checkpoint.latest(folder, int(cfg.world_size))


def _get(store, key: str) -> str:
    store.wait([key])
    return store.get(key).decode()
