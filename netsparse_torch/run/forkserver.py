"""The forkserver that local ranks are forked from, started as early as a run knows it will need it.

The forkserver imports torch, PyG and the training loop once (~3 s of one core here) so that each rank
does not. Started before the launcher loads the dataset, that import runs on the second core while the
launcher imports torch and reads the graph, instead of after it. Torch-free, so ``netsparse-train``
can start it before it imports anything heavy.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from multiprocessing import forkserver
from pathlib import Path

#: Imported once by the forkserver, so forked ranks start with them loaded.
PRELOAD = ["torch", "torch.distributed", "netsparse_torch.run.training"]
#: On a machine with an NVIDIA GPU. Importing PyG initialises the CUDA driver there (seen on an H200:
#: torch 2.11, PyG 2.8, Triton 3.6), and a rank forked from a process that did fails its first CUDA call
#: ("CUDA error: initialization error"): there each rank imports PyG itself.
PRELOAD_CUDA = ["torch", "torch.distributed"]


def nvidia_gpu_visible() -> bool:
    """Whether this machine has an NVIDIA GPU that CUDA_VISIBLE_DEVICES leaves visible (torch-free, and
    without initialising CUDA)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "0").strip() in ("", "-1"):
        return False
    return any(Path("/dev").glob("nvidia[0-9]*")) or Path("/proc/driver/nvidia/gpus").is_dir()


def start_forkserver() -> None:
    """Start this process's forkserver now (no effect once it runs). Ranks forked from it get the
    launcher's environment at launch time, so starting early changes nothing they see."""
    if multiprocessing.get_start_method(allow_none=True) not in multiprocessing.get_all_start_methods():
        # A joblib worker (hydra/launcher=joblib) runs under loky's own start method, which a forked rank,
        # handed its parent's method to set, does not know: back to the standard library's default.
        multiprocessing.set_start_method(None, force=True)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD_CUDA if nvidia_gpu_visible() else PRELOAD)
    forkserver.ensure_running()


def stop_forkserver() -> None:
    """Stop this process's forkserver now (it would also exit once this process does, after tearing
    down its own torch: seconds in which it still holds the console). Its ranks have exited; nothing of
    it is worth that teardown."""
    server = forkserver._forkserver  # private, Python >= 3.8
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    stop = getattr(server, "_stop", None)
    if stop is not None:
        stop()  # closes its pipes and reaps it
