"""What a resumed run carries over from its checkpoint, so that its report is that of one run: every
counter over every epoch once, and which epochs ran in which attempt.

A rank's counters grow in three places: the backend's collectives (:func:`comm_stats`, per process, and
the routes of its device tensors), its strategy (:meth:`~netsparse_torch.comm.base.Strategy.counters`:
bytes, RIG counters, staging copies), and, with ``fabric=switch``, the switches (read by rank 0). A
checkpoint holds what the epochs so far counted, the *loop counters*: what earlier attempts' epochs
counted plus what this attempt counted since its epochs began. The setup before the first epoch (plan
exchanges, the shard's all-reduces) and the final evaluation each run once per attempt, so they are
not carried: a resumed attempt counts its own, as the uninterrupted run counts its one.

``attempts`` in the report: ``[{"epochs": [first, end], "resumed_from", "restart", "redone"}]`` with
``epochs`` half open (``[0, 30]``: epochs 0 to 29), ``resumed_from`` the completed epochs of the
checkpoint it started from (None: from scratch), ``restart`` torchrun's restart count
(``TORCHELASTIC_RESTART_COUNT``; 0 outside torchrun) and ``redone`` the epochs that the attempt before a
torchrun restart had completed after that checkpoint, which this one ran again (None when unknown).
"""

from __future__ import annotations

import torch.distributed as dist

from netsparse_torch.backend import collective_path, comm_stats
from netsparse_torch.run import counters
from netsparse_torch.run.torchrun import job_store, restart_count, under_torchrun

_COMPLETED = "netsparse/completed_epochs/{}"  # rank 0's completed epochs in torchrun attempt {}


def rank_counters(strategy) -> dict:
    """Every counter of this rank that grows with the epochs (less the collectives that built the
    strategy's state at its first gathers: setup, which every attempt runs once)."""
    routes = collective_path()["device_calls"] if dist.is_initialized() else {}
    return {"collectives": counters.sub(comm_stats(), strategy.setup_collectives), "device_calls": routes,
            "strategy": strategy.counters()}


class Carried:
    """The counters and attempts of a run at this rank: ``state`` is its checkpoint (None: a new run),
    ``start_epoch`` the first epoch this attempt trains."""

    def __init__(self, rank: int, state: dict | None, start_epoch: int):
        self.rank = rank
        self.counters: dict = state["counters"] if state else {}
        self.switches: list[dict] = state.get("switches", []) if state else []
        self.attempts: list[dict] = list(state["attempts"]) if state else []
        self.attempt = {"epochs": [start_epoch, start_epoch], "resumed_from": start_epoch if state else None,
                        "restart": restart_count(), "redone": None}
        self._base: dict = {}
        self._store = None
        if self.attempt["restart"] > 0 and rank == 0:
            before = self._read(_COMPLETED.format(self.attempt["restart"] - 1))
            self.attempt["redone"] = max(0, before - start_epoch) if before is not None else None

    def begin(self, now: dict) -> None:
        """This attempt's epochs begin: ``now`` is :func:`rank_counters` (the setup's counts, and the
        checkpoint's strategy counters the strategy already carries)."""
        self._base = now

    def loop(self, now: dict) -> dict:
        """Every epoch's counters so far, for a checkpoint: the earlier attempts' and this one's."""
        return counters.add(self.counters, counters.sub(now, self._base))

    def epoch_done(self, done: int) -> None:
        """``done`` epochs completed: under torchrun rank 0 keeps the count in the job's store, where the
        attempt after a restart finds how many epochs it redoes."""
        self.attempt["epochs"][1] = done
        if self.rank == 0 and under_torchrun():
            try:
                self._store_client().set(_COMPLETED.format(self.attempt["restart"]), str(done))
            except Exception:  # noqa: BLE001 (no store: "redone" is unknown after a restart, never wrong)
                self._store = None

    def all_attempts(self) -> list[dict]:
        return [*self.attempts, {**self.attempt, "epochs": list(self.attempt["epochs"])}]

    def _store_client(self):
        if self._store is None:
            self._store = job_store()
        return self._store

    def _read(self, key: str) -> int | None:
        try:
            store = self._store_client()
            return int(store.get(key)) if store.check([key]) else None
        except Exception:  # noqa: BLE001 (no store: unknown)
            return None
