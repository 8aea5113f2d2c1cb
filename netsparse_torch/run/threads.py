"""How many torch threads each rank runs (``threads=`` of ``netsparse-train``), and where that number
came from, for the report.

``threads=N`` sets N per rank. ``threads=auto`` (the default) takes ``OMP_NUM_THREADS`` when it is set,
as torch itself does (torchrun sets it to 1 unless the user did), and otherwise the cores this process
may run on divided by the ranks on this node: ranks that share the cores with more threads than
there are cores make every collective wait on a descheduled thread. The number is set explicitly in
each rank, because the forkserver that forks local ranks read its environment when it started.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from netsparse_torch.config_check import AUTO_THREADS, check_threads, omp_threads


@dataclass(frozen=True)
class Threads:
    """A rank's torch thread count and its source: ``threads`` (the key), ``OMP_NUM_THREADS`` or
    ``auto`` (cores / local ranks)."""

    count: int
    source: str


def resolve_threads(setting, local_ranks: int, environ: Mapping[str, str] = os.environ,
                    cores: int | None = None) -> Threads:
    """The thread count of each of ``local_ranks`` ranks on this node for the setting ``threads=``."""
    if check_threads(setting) != AUTO_THREADS:
        return Threads(setting, "threads")
    omp = omp_threads(environ)
    if omp is not None:
        return Threads(omp, "OMP_NUM_THREADS")
    cores = cores if cores is not None else available_cores()
    return Threads(max(1, cores // max(1, local_ranks)), AUTO_THREADS)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no affinity
        return os.cpu_count() or 1


#: This rank's setting once :func:`apply` ran (None: the launcher did not set it).
_applied: Threads | None = None


def apply(threads: Threads) -> None:
    """Set this rank's torch thread count."""
    import torch

    global _applied
    torch.set_num_threads(threads.count)
    _applied = threads


def rank_threads() -> dict:
    """The rank's thread count as torch sees it now, and where it came from (``torch default`` when the
    launcher did not set it, e.g. a library user's own process)."""
    import torch

    return {"threads": torch.get_num_threads(), "threads_source": _applied.source if _applied else "torch default"}
