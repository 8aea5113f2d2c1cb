"""``netsparse-torchrun``: torchrun, with the agent's own log lines quiet so that a run's output is
the run's (docs/run.md). Ranks find torchrun's environment through
:func:`netsparse_torch.run.torchrun.under_torchrun`.
"""

from __future__ import annotations

import sys

from netsparse_torch.run.torchrun import SAID


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
