"""Which peer a torchrun worker lost, when a collective fails under it.

A collective that loses a peer fails with gloo's words for the socket ("Connection reset by peer", or a
timeout after ``timeout_s`` when the peer was stopped), which name no rank. Under torchrun each worker
therefore beats in the job's store (:class:`Heartbeat`: a counter per rank, every :data:`BEAT_S`), says
where it runs, and marks itself before a stop signal ends it. A worker whose collective failed compares
its peers' beats over a few periods: a peer that stopped beating, unmarked, is lost; on the same host
its process state says how (gone, or stopped by SIGSTOP). Under netsparse-train's own launcher the
launcher sees its ranks' processes itself (:mod:`netsparse_torch.run.launch`).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

from netsparse_torch import signals
from netsparse_torch.run.torchrun import job_store, restart_count

#: Seconds between two beats of a worker. A lost peer is one without a beat for :data:`SILENT_BEATS`.
BEAT_S = 0.5
SILENT_BEATS = 6


class Heartbeat:
    """This worker's beats in the job's store (a daemon thread; ``close()`` ends them)."""

    def __init__(self, rank: int, world_size: int):
        self.rank, self.world_size = rank, world_size
        self._prefix = f"netsparse/liveness/{restart_count()}"
        self._store = job_store()  # this thread's; the beats and the stop mark have their own clients
        self._store.set(self._key("where", rank), json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
        self._mark_store = job_store()
        self._done = threading.Event()
        threading.Thread(target=self._beat, args=(job_store(),), name="netsparse-heartbeat", daemon=True).start()
        signals.before_stop_exit(self._mark_stopped)

    def _key(self, what: str, rank: int) -> str:
        return f"{self._prefix}/{what}/{rank}"

    def _beat(self, store) -> None:
        key = self._key("beats", self.rank)
        while not self._done.wait(BEAT_S):
            try:
                store.add(key, 1)
            except Exception:  # noqa: BLE001 (the store is gone: the agent is ending the job)
                return

    def _mark_stopped(self) -> None:
        """A stop signal ends this worker: peers that see it gone know it was stopped, not lost."""
        self._mark_store.set(self._key("stopped", self.rank), "1")

    def close(self) -> None:
        self._done.set()
        signals.before_stop_exit(None)

    def lost(self) -> list[str]:
        """The peers that stopped beating (and were not stopped by a signal), each described in words;
        waits :data:`SILENT_BEATS` beats."""
        peers = [r for r in range(self.world_size) if r != self.rank]
        before = {r: self._beats(r) for r in peers}
        time.sleep(SILENT_BEATS * BEAT_S)
        return [self._describe(r) for r in peers
                if self._beats(r) == before[r] and not self._store.check([self._key("stopped", r)])]

    def _beats(self, rank: int) -> int:
        return self._store.add(self._key("beats", rank), 0)

    def _describe(self, rank: int) -> str:
        key = self._key("where", rank)
        where = json.loads(self._store.get(key)) if self._store.check([key]) else {}
        host, pid = where.get("host"), where.get("pid")
        silent = f"no heartbeat for {SILENT_BEATS * BEAT_S:g} s"
        if host != socket.gethostname() or pid is None:
            return f"rank {rank} (pid {pid} on {host}) stopped answering ({silent}: killed, stopped or hung)"
        state = process_state(pid)
        if state is None or state in "ZX":
            return f"rank {rank} (pid {pid}) died ({silent}; its process is gone: killed, e.g. by SIGKILL or the " \
                   "OOM killer)"
        if state in "Tt":
            return f"rank {rank} (pid {pid}) is stopped (SIGSTOP or a debugger; {silent})"
        return f"rank {rank} (pid {pid}) stopped answering ({silent}; its process is alive, state {state})"


def process_state(pid: int) -> str | None:
    """The state letter of a process in /proc (R, S, D, T, Z, ...); None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]
