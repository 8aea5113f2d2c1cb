"""Run a function on every rank: under torchrun it uses torchrun's environment (multi-node works);
otherwise it starts ``world_size`` local ranks on loopback and returns rank 0's result.

Local ranks are forked from a forkserver that imported torch, PyG and this package once per parent
process: a spawned rank spends ~3 s of CPU re-importing them, which on a 2-core machine dominated
short runs and every test that launches ranks. The forkserver is a fresh interpreter that never ran a
parallel region, so forking it is safe with OpenMP. Each rank gets the parent's environment as it is
at launch time (the forkserver's own is from when it started).

A rank that fails ends the whole job: torch terminates the others, so nothing hangs. A stop signal to
the launcher (:mod:`netsparse_torch.signals`) stops every rank before it propagates.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import logging
import os
import pickle
import signal
import socket
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch.distributed as dist
import torch.multiprocessing as mp
from tqdm import tqdm

import netsparse_torch.backend  # noqa: F401  (registers the "netsparse" backend)
from netsparse_torch.errors import NetsparseError, PeerLostError
from netsparse_torch.malloc import RANK_LARGEST_KEPT, keep_freed_memory
from netsparse_torch.run.forkserver import start_forkserver
from netsparse_torch.run.liveness import Heartbeat, process_state
from netsparse_torch.run.threads import AUTO_THREADS, Threads, apply, resolve_threads
from netsparse_torch.run.torchrun import under_torchrun
from netsparse_torch.signals import (
    diagnosing,
    exit_if_stopped,
    raise_if_stopped,
    rank_signals,
    stop_processes,
    torchrun_worker_signals,
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_rank(rank: int, world_size: int, timeout_s: float, backend: str = "netsparse") -> None:
    """Joins the job's process group; a peer that does not arrive within ``timeout_s`` is one error
    line here, not the store's traceback (under torchrun each worker starts on its own, and on a loaded
    host one can be seconds behind the others: its imports)."""
    keep_freed_memory(RANK_LARGEST_KEPT)
    try:
        dist.init_process_group(backend, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=timeout_s))
    except dist.DistStoreError as exc:
        raise NetsparseError(f"rank {rank}: the job's {world_size} ranks did not all meet within timeout_s="
                             f"{timeout_s:g} s ({_first_line(exc)}); a rank that starts late, on a loaded host or a "
                             "slow file system, needs a larger timeout_s") from None


def _first_line(exc: BaseException) -> str:
    """The first line of a distributed error's message (torch's carry C++ frames below it), or its type."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class ByName:
    """A rank function named by its module and attribute, imported where it runs: the launching
    process then never imports what only the ranks need (the layers, and with them PyG: ~3.5 s of
    every run's start)."""

    module: str
    name: str

    def __call__(self, *args):
        return getattr(importlib.import_module(self.module), self.name)(*args)


def _worker(rank: int, fn: Callable, world_size: int, port: int, timeout_s: float, args: tuple, results,
            result_file: str, env: dict[str, str], threads: Threads) -> None:
    rank_signals()
    # tqdm's default write lock is a multiprocessing semaphore, which a rank stopped by SIGTERM would
    # leave to the resource tracker (and its "leaked semaphore" warning); one writer needs no such lock.
    tqdm.set_lock(threading.RLock())
    os.environ.clear()
    # LOCAL_RANK as torchrun sets it: the GPU this rank takes, and the backend's shared-GPU check.
    os.environ.update(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_RANK=str(rank))
    apply(threads)
    try:
        init_rank(rank, world_size, timeout_s)
        out = fn(rank, world_size, *args)
        if rank == 0:
            # A file, not the queue: a large result would fill the pipe while the parent, still
            # joining, does not read it; and queued tensors live in shared memory that dies with us.
            with open(result_file, "wb") as f:
                pickle.dump(out, f)
    except NetsparseError as exc:
        results.put(("error", f"rank {rank}: {exc}"))
        raise SystemExit(2) from None
    except BaseException:
        results.put(("error", f"rank {rank} failed:\n{traceback.format_exc()}"))
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def launch(fn: Callable, world_size: int, args: tuple = (), timeout_s: float = 120.0, threads=AUTO_THREADS):
    """Call ``fn(rank, world_size, *args)`` on every rank and return rank 0's return value
    (``None`` on other ranks under torchrun). ``threads``: each rank's torch threads, a number or
    ``auto`` (:mod:`netsparse_torch.run.threads`)."""
    if under_torchrun():
        return _torchrun_worker(fn, args, timeout_s, threads)
    per_rank = resolve_threads(threads, world_size)  # a bad OMP_NUM_THREADS: one line before any rank starts
    start_forkserver()  # no effect when the CLI started it already
    results = mp.get_context("forkserver").SimpleQueue()
    with tempfile.TemporaryDirectory(prefix="netsparse-launch-") as tmp:
        result_file = os.path.join(tmp, "rank0.pkl")
        worker_args = (fn, world_size, free_port(), timeout_s, args, results, result_file, dict(os.environ),
                       per_rank)
        ranks = mp.start_processes(_worker, args=worker_args, nprocs=world_size, join=False,
                                   start_method="forkserver")
        try:
            lost = _first_end(ranks.processes)
            with _quiet_spawn_log():
                while not ranks.join(grace_period=TEARDOWN_GRACE_S):
                    pass
        except mp.ProcessExitedException as exc:
            _raise_lost(lost, timeout_s)
            raise NetsparseError(_first_error(results) or f"a rank exited with code {exc.exit_code}") from None
        except mp.ProcessRaisedException as exc:
            _raise_lost(lost, timeout_s)
            raise NetsparseError(_first_error(results) or str(exc)) from None
        except BaseException:  # a stop signal (signals.Interrupted), Ctrl-C, or any other way out
            stop_processes(ranks.processes)
            raise
        with open(result_file, "rb") as f:
            return pickle.load(f)


def _torchrun_worker(fn: Callable, args: tuple, timeout_s: float, threads):
    """This torchrun worker's rank of the job; rank 0's return value (None on the others)."""
    torchrun_worker_signals()
    rank, ws = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    apply(resolve_threads(threads, int(os.environ.get("LOCAL_WORLD_SIZE", ws))))
    init_rank(rank, ws, timeout_s)
    heartbeat = Heartbeat(rank, ws) if ws > 1 else None
    try:
        out = fn(rank, ws, *args)
    except NetsparseError:
        raise
    except Exception as exc:  # a collective failed under this rank: a peer lost, the agent's stop, or a bug
        with diagnosing():
            lost = heartbeat.lost() if heartbeat is not None else []
        if rank != 0:
            exit_if_stopped()
        if lost:
            raise PeerLostError(f"rank {rank}: lost {'; '.join(lost)}", [int(w.split()[1]) for w in lost]) from None
        raise_if_stopped()  # the agent's stop, one worker after another: reported as a stop (rank 0 keeps the epochs)
        if isinstance(exc, dist.DistError):
            raise NetsparseError(f"rank {rank}: lost contact with another process of the job "
                                 f"({_first_line(exc)})") from None
        raise
    finally:
        if heartbeat is not None:
            heartbeat.close()
        dist.destroy_process_group()
    return out if rank == 0 else None  # one report and one summary per run, not one per rank


@contextlib.contextmanager
def _quiet_spawn_log():
    """torch logs a "Terminating process ... via signal SIGTERM" warning for each rank it stops after
    another failed; the job's error is one line of ours, so those lines are held back meanwhile."""
    spawn_log = logging.getLogger("torch.multiprocessing.spawn")
    level = spawn_log.level
    spawn_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        spawn_log.setLevel(level)


#: Seconds the other ranks get to end by themselves once one failed, and again after SIGTERM, before
#: SIGKILL (torch's default, 30 s, is spent in full on a rank stopped by SIGSTOP).
TEARDOWN_GRACE_S = 2.0


def _first_end(processes) -> list[str]:
    """Waits until every rank ended or one failed; then, before any rank is stopped on the way out, the
    ranks that a signal killed and those stopped (SIGSTOP), each in words."""
    import multiprocessing.connection

    while True:
        running = [p for p in processes if p.exitcode is None]
        if not running or any(p.exitcode for p in processes):
            break
        multiprocessing.connection.wait([p.sentinel for p in running])
    lost = []
    for rank, p in enumerate(processes):
        if p.exitcode is not None and p.exitcode < 0:
            lost.append(f"rank {rank} (pid {p.pid}) was killed by {signal.Signals(-p.exitcode).name}")
        elif p.exitcode is None and process_state(p.pid) in ("T", "t"):
            lost.append(f"rank {rank} (pid {p.pid}) is stopped (SIGSTOP or a debugger)")
    return lost


def _raise_lost(lost: list[str], timeout_s: float) -> None:
    if lost:
        waited = f" (the others waited timeout_s={timeout_s:g} s for it)" if "stopped" in lost[0] else ""
        raise PeerLostError(f"{'; '.join(lost)}{waited}; every other rank was stopped",
                            [int(w.split()[1]) for w in lost]) from None


def _first_error(results) -> str | None:
    while not results.empty():
        status, value = results.get()
        if status == "error":
            return value
    return None
