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
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from tqdm import tqdm

import netsparse_torch.backend  # noqa: F401  (registers the "netsparse" backend)
from netsparse_torch.errors import NetsparseError
from netsparse_torch.malloc import RANK_LARGEST_KEPT, keep_freed_memory
from netsparse_torch.run.forkserver import start_forkserver
from netsparse_torch.run.torchrun import under_torchrun
from netsparse_torch.signals import raise_if_stopped, rank_signals, stop_processes, torchrun_worker_signals


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Seconds a torchrun worker that lost a peer waits for the agent's stop signal before it says so.
STOP_GRACE_S = 2.0


def init_rank(rank: int, world_size: int, timeout_s: float, backend: str = "netsparse") -> None:
    keep_freed_memory(RANK_LARGEST_KEPT)
    dist.init_process_group(backend, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))


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
            result_file: str, env: dict[str, str]) -> None:
    rank_signals()
    # tqdm's default write lock is a multiprocessing semaphore, which a rank stopped by SIGTERM would
    # leave to the resource tracker (and its "leaked semaphore" warning); one writer needs no such lock.
    tqdm.set_lock(threading.RLock())
    os.environ.clear()
    # LOCAL_RANK as torchrun sets it: the GPU this rank takes, and the backend's shared-GPU check.
    os.environ.update(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_RANK=str(rank))
    # Ranks share the machine's cores: oversubscribing threads makes every collective wait.
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
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


def launch(fn: Callable, world_size: int, args: tuple = (), timeout_s: float = 120.0):
    """Call ``fn(rank, world_size, *args)`` on every rank and return rank 0's return value
    (``None`` on other ranks under torchrun)."""
    if under_torchrun():
        torchrun_worker_signals()
        rank, ws = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        init_rank(rank, ws, timeout_s)
        try:
            out = fn(rank, ws, *args)
        except dist.DistError as exc:  # a peer stopped (a signal on its node) or was lost: one line
            # Mostly the agent stopping the job, one worker after another: its signal to this rank is on
            # the way, and a stop must be reported as one (rank 0 keeps the epochs), not as a lost peer.
            time.sleep(STOP_GRACE_S)
            raise_if_stopped()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise NetsparseError(f"rank {rank}: lost contact with another process of the job ({first}); "
                                 "if a node was stopped, resume=true continues from the last checkpoint") from None
        except Exception:
            raise_if_stopped()  # an error that the agent's stop caused (a peer gone mid-call) is that stop
            raise
        finally:
            dist.destroy_process_group()
        return out if rank == 0 else None  # one report and one summary per run, not one per rank
    start_forkserver()  # no effect when the CLI started it already
    results = mp.get_context("forkserver").SimpleQueue()
    with tempfile.TemporaryDirectory(prefix="netsparse-launch-") as tmp:
        result_file = os.path.join(tmp, "rank0.pkl")
        worker_args = (fn, world_size, free_port(), timeout_s, args, results, result_file, dict(os.environ))
        ranks = mp.start_processes(_worker, args=worker_args, nprocs=world_size, join=False,
                                   start_method="forkserver")
        try:
            with _quiet_spawn_log():
                while not ranks.join():
                    pass
        except mp.ProcessExitedException as exc:
            raise NetsparseError(_first_error(results) or f"a rank exited with code {exc.exit_code}") from None
        except mp.ProcessRaisedException as exc:
            raise NetsparseError(_first_error(results) or str(exc)) from None
        except BaseException:  # a stop signal (signals.Interrupted), Ctrl-C, or any other way out
            stop_processes(ranks.processes)
            raise
        with open(result_file, "rb") as f:
            return pickle.load(f)


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


def _first_error(results) -> str | None:
    while not results.empty():
        status, value = results.get()
        if status == "error":
            return value
    return None
