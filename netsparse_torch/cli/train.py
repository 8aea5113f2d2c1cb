"""``netsparse-train``: full-graph distributed GNN training (Hydra app, configs in ``configs/``).

    netsparse-train dataset=cora model=gcn strategy=sa world_size=2 epochs=200

Without torchrun it spawns ``world_size`` local ranks on loopback; under torchrun it uses
torchrun's environment, so the same command runs multi-node.
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
import threading
from typing import NoReturn

import hydra
from omegaconf import DictConfig

from netsparse_torch.cli.failure import error_line
from netsparse_torch.cli.hydra_app import from_launch_dir, help_text, hydra_errors, job_failed, task
from netsparse_torch.config_check import check_values, config_dir, in_sweep, omp_threads, set_on_command_line
from netsparse_torch.config_keys import TRAIN, check_command_line, check_composed_config, config_path_args
from netsparse_torch.errors import ConfigError, NetsparseError
from netsparse_torch.progress import append_line, hydra_log_file
from netsparse_torch.report.metrics import check_logger
from netsparse_torch.run.forkserver import start_forkserver, stop_forkserver
from netsparse_torch.run.torchrun import under_torchrun
from netsparse_torch.signals import STOP_SIGNALS, Interrupted, stop_on_signals

#: Hydra's log file of this run (``<run dir>/train.log``) once Hydra made it: the CLI's own lines too.
_log = None


@hydra.main(config_path=config_dir(), config_name="train", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    global _log
    _log = hydra_log_file()
    try:
        with task():
            check_composed_config(cfg, TRAIN)
            from_launch_dir(cfg, TRAIN.paths)
            if under_torchrun():
                cfg.world_size = torchrun_world_size(cfg)
            hardware = check_values(cfg)  # torch-free checks first: one line before torch and PyG load
            check_logger(str(cfg.get("logger") or "none"))
            if not under_torchrun():
                # The ranks' torch and PyG import (~3 s) on the second core while the launcher imports its
                # own and loads the graph; after the checks, so that a mistyped value costs no such import.
                start_forkserver()
            from netsparse_torch.run.job import run

            run(cfg, hardware)  # the run's one HardwareParams, built once
    except NetsparseError as exc:
        job_failed(TRAIN.prog, exc, lambda _, e: fail(e))


def torchrun_world_size(cfg: DictConfig) -> int:
    """Under torchrun the job's size is its WORLD_SIZE; a world_size= on the command line that says
    otherwise (``cfg`` holds it as Hydra parsed it) would be dropped without a word: one error instead.
    So is a sweep, whose jobs every worker would run one after another in the one torchrun job (the
    second hung at its start, and shared the first's checkpoint folder)."""
    if in_sweep():
        raise ConfigError("a sweep (-m) under torchrun: every worker would run each job of the sweep in this one "
                          "torchrun job; sweep without torchrun (netsparse-train -m starts each job's ranks, and "
                          "hydra/launcher=submitit_slurm sends each job to a cluster), or start one torchrun per point")
    size = int(os.environ["WORLD_SIZE"])
    if set_on_command_line("world_size") and cfg.world_size != size:
        raise ConfigError(f"world_size={cfg.world_size} disagrees with torchrun's WORLD_SIZE={size} (--nnodes x "
                          f"--nproc-per-node): drop world_size=, which torchrun sets, or start {cfg.world_size} "
                          "processes")
    return size


def fail(exc: NetsparseError) -> NoReturn:
    """One line and exit 2 (:func:`say_error`)."""
    say_error(exc)
    sys.exit(2)


def say_error(exc: NetsparseError) -> None:
    """The error's one line. Under torchrun, one line for the whole job: the first rank to fail says
    why, the others (the same error, or lost contact with that rank) stay quiet."""
    if threading.current_thread() is threading.main_thread():
        # Under torchrun another rank's failure makes the agent stop this one: a stop in the middle of
        # its torch import (first_error) would leave torch half-loaded and this rank's error unsaid.
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
    say(error_line(TRAIN.prog, exc))


def say(line: str, lead: str = "", unsure: bool = True) -> None:
    """The run's last line, on the console and in the log; under torchrun only the job's first one
    (``unsure``: whether to speak when the ranks cannot agree which that is)."""
    if not under_torchrun() or first_error(line, unsure=unsure):
        print(lead + line, file=sys.stderr)
        append_line(_log, line)


#: Seconds a failing torchrun rank waits for the job's store before it prints its error anyway.
STORE_TIMEOUT_S = 10.0


def first_error(line: str, timeout_s: float = STORE_TIMEOUT_S, unsure: bool = True) -> bool:
    """Under torchrun: whether ``line`` is the job's first error or stop, the one to print. The ranks agree
    through the job's TCP store (torchrun's agent hosts it at MASTER_ADDR:MASTER_PORT): the first rank
    to record its error wins, and a rank that fails later (the same bad input, or lost contact with the
    failed rank, which recorded before it exited) stays quiet. A rank that cannot reach the store
    prints its own: two lines beat none."""
    import datetime

    try:
        import torch.distributed as dist

        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                              timeout=datetime.timedelta(seconds=timeout_s))
        key = f"netsparse/first_error/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
        mine = f"rank {os.environ['RANK']}: {line}"  # ranks often fail with the same line: tell them apart
        return store.compare_set(key, "", mine) == mine.encode()
    except Exception:  # noqa: BLE001 (no store, or a torch import that the stop cut short)
        return unsure


def stopped_line(stop: Interrupted) -> str:
    if stop.report is None:
        return (f"netsparse-train: stopped by {stop}: every rank and switch stopped; no epoch completed, "
                "no report written")
    path, n = stop.report
    return (f"netsparse-train: stopped by {stop} at epoch {n}: every rank and switch stopped; the report of the "
            f"{n} completed epochs is in {path}")


def main() -> None:
    exit_now(run_command())


def run_command() -> int:
    """``netsparse-train`` on ``sys.argv``'s command line, in this process: says every line and returns the
    exit status (``main`` exits with it at once; tests/cli_here.py runs it without a fresh interpreter)."""
    from netsparse_torch.report.provenance import remember_command

    args = sys.argv[1:]
    remember_command()  # the reports of a launcher's jobs name the sweep's command line
    try:  # a wrong group choice or key is one line here, not Hydra's multi-line error (or silence)
        sys.argv[1:] = args = config_path_args(args)  # -cp DIR: absolute, with this package's configs behind it
        check_command_line(args, TRAIN)
        omp_threads(os.environ)  # before the forkserver loads torch (and libgomp its own complaint)
        if "--help" in args or "-h" in args:
            with hydra_errors():
                print(help_text(TRAIN, [a for a in args if not a.startswith("-")], __doc__))
            return 0
    except NetsparseError as exc:
        say_error(exc)
        return 2
    stopped = None
    try:
        with stop_on_signals(), hydra_errors():  # SIGTERM/SIGINT: every rank and switch stopped on the way out
            _hydra_main()
    except Interrupted as stop:
        stopped = stop
    except NetsparseError as exc:  # one of Hydra's own errors before the run, or a multirun job's (job_failed)
        say_error(exc)
        return 2
    except SystemExit as done:  # fail(): the error line is out
        return done.code if isinstance(done.code, int) else 1
    if stopped is not None:
        gc.collect()  # the unwound frames held the ranks' queues: free their semaphores before exit
        # Below rank 0's progress bar, which nobody closed. Under torchrun a rank stopped because another
        # failed is quiet: the failed one said why.
        # An error is said even without agreement (two lines beat none); a stop only with it: a rank
        # stopped in the middle of importing torch is one that another rank's failure stopped.
        say(stopped_line(stopped), lead="\n" if sys.stderr.isatty() else "", unsure=False)
        return stopped.exit_code
    return 0


def exit_now(code: int) -> NoReturn:
    """Exit once the run's last line is out, without the interpreter's teardown: freeing torch, PyG and
    matplotlib takes ~2 s here (and the forkserver's own copy as long again, while it still holds the
    console). The exit handlers still run: log files, the resource tracker and multiprocessing, after
    the executors' shutdowns (``threading._register_atexit``)."""
    stop_forkserver()
    # What a normal exit runs before the exit handlers: the executors' shutdowns (a joblib launcher's
    # workers; the exit handlers would otherwise wait out their 300 s idle timeout).
    for shutdown in reversed(getattr(threading, "_threading_atexits", [])):
        shutdown()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
