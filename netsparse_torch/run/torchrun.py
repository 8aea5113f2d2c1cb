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
