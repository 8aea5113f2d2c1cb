"""netsparse-train's (and netsparse-partition's) command line run in this process: ``main``'s own path
from the command line's check on (``check_command_line``, Hydra's composition under ``hydra_errors``,
the ``@hydra.main`` function with its run directory and log file, the torch-free checks, the job),
without a fresh interpreter (~5 s of Python, torch and PyG imports per run on 2 cores). The ranks fork
from this pytest worker's forkserver.

What only a fresh process shows stays with :func:`cli.run_cli`: the exit status the shell sees after
``exit_now``, a rank's error with torch's shutdown noise around it, signals, the forkserver that
``main`` starts, and the console of a terminal or a pipe (the ranks' own lines)."""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Done:
    """What a CLI ended with: its exit status, what the launching process printed (not the ranks: rank 0's
    epoch lines go to the forkserver's console), and whether the job started its ranks."""

    returncode: int
    stdout: str
    stderr: str
    ranks_started: bool = False


def train_cli(run_dir: Path, *overrides: str) -> Done:
    """``netsparse-train <overrides> hydra.run.dir=<run_dir>`` as ``main`` runs it, in this process."""
    from unittest import mock

    from netsparse_torch.cli import train as cli
    from netsparse_torch.run import job

    with mock.patch.object(job, "launch", wraps=job.launch) as launch:
        done = _here("netsparse-train", lambda _: sys.exit(cli.run_command()),
                     [*overrides, f"hydra.run.dir={run_dir}"])
    done.ranks_started = launch.called
    return done


def partition_cli(run_dir: Path, *overrides: str) -> Done:
    """``netsparse-partition <overrides> hydra.run.dir=<run_dir>``: its ``main``, in this process."""
    from netsparse_torch.cli import partition

    return _here("netsparse-partition", lambda _: partition.main(), [*overrides, f"hydra.run.dir={run_dir}"])


def simulate_cli(run_dir: Path, *overrides: str) -> Done:
    """``netsparse-simulate <overrides> hydra.run.dir=<run_dir>``: its ``main``, in this process."""
    from netsparse_torch.cli import simulate

    return _here("netsparse-simulate", lambda _: simulate.main(), [*overrides, f"hydra.run.dir={run_dir}"])


def _here(prog: str, main, args: list[str]) -> Done:
    """``main(args)`` with ``sys.argv`` set as the shell would, its exit status and printed lines; what
    the CLI's process may change for good is put back: the stop signals' handlers (``say_error``
    ignores them on its way out), the command line handed to a sweep's jobs, Hydra's global state and
    the root logger (Hydra's job logging: a handler on this run's log file and one on its stdout)."""
    from hydra.core.global_hydra import GlobalHydra

    from netsparse_torch.report.provenance import COMMAND_ENV
    from netsparse_torch.signals import STOP_SIGNALS

    out, err = io.StringIO(), io.StringIO()
    argv, handlers = sys.argv, {s: signal.getsignal(s) for s in STOP_SIGNALS}
    command = os.environ.get(COMMAND_ENV)
    root = logging.getLogger()
    root_handlers, root_level = root.handlers[:], root.level
    code = 0
    try:
        sys.argv = [prog, *args]
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main(args)
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else 1
    finally:
        sys.argv = argv
        if command is None:
            os.environ.pop(COMMAND_ENV, None)
        else:
            os.environ[COMMAND_ENV] = command
        for s, h in handlers.items():
            signal.signal(s, h)
        GlobalHydra.instance().clear()  # as a fresh process finds it (a later test's compose)
        for h in root.handlers:
            if h not in root_handlers:
                h.close()
        root.handlers[:] = root_handlers
        root.setLevel(root_level)
    return Done(code, out.getvalue(), err.getvalue())


def error_line(done: Done, prog: str = "netsparse-train") -> str:
    """The one line a CLI said for bad input: exit 2, nothing else on stderr."""
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), done.stderr[-3000:]
    return lines[0]


def train_error(run_dir: Path, *overrides: str, in_a_rank: bool = False) -> str:
    """The one line ``netsparse-train`` says for bad ``overrides`` (exit 2, nothing else on stderr),
    before any rank starts unless the error is ``in_a_rank``'s."""
    done = train_cli(run_dir, *overrides)
    assert done.ranks_started == in_a_rank, done.stderr[-3000:]
    return error_line(done)
