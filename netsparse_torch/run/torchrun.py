"""torchrun, as the project runs under it.

:func:`under_torchrun` is torch-free, so the CLI can ask before importing torch. :func:`main` is
``netsparse-torchrun``: torchrun itself (``torch.distributed.run``, every argument the same) whose agent
does not add its own report to a job that failed or was stopped. torchrun's agent prints a failed
worker's exit as a ~40-line traceback and table (torch's code: no worker can stop it); the ranks of
``netsparse-train`` already said why in one line, so here that line is all.
"""

from __future__ import annotations

import os
import sys

#: Exit codes after which a rank of ``netsparse-train`` has printed its one line: an error
#: (``netsparse_torch.train.fail``), or a stop by SIGINT or SIGTERM.
SAID = (2, 130, 143)


def under_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def main(argv: list[str] | None = None) -> None:
    import logging

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    args = get_args_parser().parse_args(argv)
    # The agent's "Received 15 death signal", "Sending process ... closing signal" and "failed (exitcode
    # ...)" lines; each module's logger has its own level (torch's LOGLEVEL), so each is set.
    for name, logger in logging.root.manager.loggerDict.items():
        if name.startswith("torch.distributed.elastic") and isinstance(logger, logging.Logger):
            logger.setLevel(logging.CRITICAL)
    try:
        run(args)
    except SignalException as stop:  # the agent was stopped; rank 0 said what it kept
        sys.exit(128 + int(stop.sigval))
    except ChildFailedError as failed:
        rank, failure = failed.get_first_failure()
        code = failure.exitcode
        if code not in SAID:
            died = f"was killed by {failure.signal_name()}" if code < 0 else f"exited with code {code}"
            print(f"netsparse-torchrun: rank {rank} (pid {failure.pid}) {died}; its own output, if any, is above",
                  file=sys.stderr)
        sys.exit(code if 0 < code < 256 else 1)


if __name__ == "__main__":
    main()
