"""Teardown of the netsparse backend: a script that ends after
``destroy_process_group()`` exits cleanly, even when its group outlives the call (a DDP model holds
it) and gloo still has work in flight.

The abort it fixes: gloo's worker threads drop each finished work themselves; a work whose last
reference goes on such a thread while the interpreter shuts down takes the GIL there, and the thread is
unwound through C++ that does not allow it: ``terminate called without an active exception`` (or
``FATAL: exception not rethrown``), SIGABRT. ``destroy_process_group()`` now joins those threads."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from netsparse_torch.run.launch import free_port, launch

ROOT = Path(__file__).resolve().parents[1]
ABORTS = ("terminate called", "exception not rethrown")

def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def destroy_while_held(rank, world_size):
    before = threads()
    group = dist.new_group(list(range(world_size)), backend="netsparse")
    dist.all_reduce(torch.ones(3), group=group)
    started = threads()
    dist.destroy_process_group(group)  # the group is still held here, as a DDP model holds its group
    return before, started, threads()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc (Linux)")
def test_destroy_joins_gloo_threads_of_a_group_that_is_still_held():
    """The mechanism, deterministically: no gloo thread outlives destroy_process_group(), so none can
    drop a work during interpreter shutdown (before the fix, the 3 threads of a held group stayed)."""
    before, started, after = launch(destroy_while_held, 2)
    assert started > before  # gloo's worker and transport threads
    assert after == before


def used_after_destroy(rank, world_size):
    held = dist.group.WORLD
    dist.destroy_process_group()
    held.shutdown()  # a second shutdown (abort after destroy, say) is harmless
    try:
        held.allreduce([torch.ones(1)])
    except RuntimeError as exc:
        return str(exc)
    return "no error"


def test_a_group_used_after_destroy_says_so():
    message = launch(used_after_destroy, 2)
    assert "allreduce on a process group that destroy_process_group()" in message
    assert "create a new process group" in message


def example_failures(rounds: int, at_once: int) -> list[str]:
    """examples/ddp_netsparse.py under torchrun, ``rounds`` times ``at_once`` runs side by side: the
    output of each run that failed, aborted or printed no collectives line."""
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    failures = []
    for _ in range(rounds):
        procs = [subprocess.Popen([str(torchrun), "--nproc-per-node=2", "--master-addr=127.0.0.1",
                                   f"--master-port={free_port()}", str(ROOT / "examples" / "ddp_netsparse.py")],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for _ in range(at_once)]
        for p in procs:
            try:
                out, _ = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            if p.returncode != 0 or any(a in out for a in ABORTS) or "collectives:" not in out:
                failures.append(f"rc {p.returncode}:\n{out[-3000:]}")
    return failures


def test_ddp_example_under_torchrun_ends_cleanly():
    """One run of the example: it finishes, prints its collectives, and nothing aborts at exit."""
    failures = example_failures(1, 1)
    assert not failures, failures[0]


@pytest.mark.soak
def test_ddp_example_under_torchrun_never_aborts():
    """10 runs, two at a time (the contention of a shared machine is what made 2 runs in 6 abort at
    teardown before the fix): repeated runs for an intermittent failure, so make soak, not make test."""
    failures = example_failures(5, 2)
    assert not failures, f"{len(failures)} of 10 runs failed; first:\n{failures[0]}"
