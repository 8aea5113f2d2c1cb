"""torchrun, as the project runs under it.

:func:`under_torchrun` is torch-free, so the CLI can ask before importing torch.
``netsparse-torchrun`` (:mod:`netsparse_torch.cli.torchrun`) is torchrun itself (``torch.distributed.run``,
every argument the same) whose agent does not add its own report to a job that failed or was stopped.
torchrun's agent prints a failed worker's exit as a ~40-line traceback and table (torch's code: no
worker can stop it); the ranks of ``netsparse-train`` already said why in one line, so here that line
is all.
"""

from __future__ import annotations

import os

#: Exit codes after which a rank of ``netsparse-train`` has printed its one line: an error
#: (``netsparse_torch.cli.train.fail``), or a stop by SIGINT or SIGTERM.
SAID = (2, 130, 143)


def under_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def restart_count() -> int:
    """How often torchrun's agent restarted this job's workers (``--max-restarts``); 0 outside torchrun."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) if under_torchrun() else 0


def job_store(timeout_s: float = 30.0):
    """A client of the job's TCP store at ``MASTER_ADDR:MASTER_PORT``: torchrun's agent's, which outlives
    the restarts of its workers, or rank 0's under netsparse-train's own launcher. Keys that must not
    outlive an attempt carry :func:`restart_count`."""
    import datetime

    import torch.distributed as dist

    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                         timeout=datetime.timedelta(seconds=timeout_s))
