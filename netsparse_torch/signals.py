"""Stopping a run on SIGTERM or SIGINT (what schedulers, ``docker stop``, ``kill`` and a terminal's Ctrl-C
send): the launcher turns the signal into :class:`Interrupted`, which unwinds through
:func:`~netsparse_torch.run.launch.launch` (it stops every rank) and the switch service (it stops the
switches); the training job then writes the report of the epochs that completed, and the CLI prints
one line and exits ``128 + signal``.

Ranks ignore SIGINT (a terminal's Ctrl-C reaches the whole foreground process group; the launcher stops
the ranks itself) and die by SIGTERM's default action, which prints nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_PR_SET_PDEATHSIG = 1


class Interrupted(BaseException):
    """A stop signal arrived. A ``BaseException`` like ``KeyboardInterrupt``, so no ``except Exception``
    on the way out swallows it."""

    def __init__(self, signum: int):
        self.signum = signum
        #: Set on the way out by the training job: (path, N) of the report of the N completed epochs.
        self.report: tuple | None = None
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise :class:`Interrupted` in the main thread. The first
    one wins: later ones are ignored while the run shuts down, so a second Ctrl-C cannot cut the
    cleanup short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise_interrupted) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _raise_interrupted(signum, _frame):
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def rank_signals() -> None:
    """In a rank forked by the launcher: ignore SIGINT, die by SIGTERM, and die with the forkserver
    (which exits when the launcher does, even by SIGKILL), so no rank outlives its launcher."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the launcher's own stop is all there is
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def torchrun_worker_signals() -> None:
    """Under torchrun the agent forwards the signal it got to its workers. Rank 0 of ``netsparse-train``
    (within :func:`stop_on_signals`) stops as the launcher does, to write the report of the completed
    epochs: it notes the signal, and :func:`raise_if_stopped` raises :class:`Interrupted` at the next
    epoch's end, or where a collective fails because the other workers are gone (raised from inside a
    collective or an autograd callback, it would come out as some other error). Every other worker exits
    at once and quietly (no traceback per worker), with the signal's exit code, so the agent reports one
    stopped job."""

    def handler(signum, frame):
        if _diagnosing:  # a lost peer is being named: the agent's stop waits for that line
            _note_stop(signum, frame)
            return
        _run_before_exit()
        os._exit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        return
    for s in STOP_SIGNALS:
        rank0_cli = os.environ.get("RANK") == "0" and signal.getsignal(s) is _raise_interrupted
        signal.signal(s, _note_stop if rank0_cli else handler)


_stop_signal: int | None = None
_diagnosing = False
_before_exit = None


def _note_stop(signum, _frame):
    global _stop_signal
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    _stop_signal = signum
    _run_before_exit()


def before_stop_exit(hook) -> None:
    """``hook()`` runs when a stop signal reaches a torchrun worker, before it ends (None: no hook)."""
    global _before_exit
    _before_exit = hook


def _run_before_exit() -> None:
    if _before_exit is not None:
        try:
            _before_exit()
        except Exception:  # noqa: BLE001 (the store is gone with the agent: nothing to tell)
            pass


@contextmanager
def diagnosing() -> Iterator[None]:
    """While a torchrun worker names the peer it lost, a stop signal is noted instead of ending it at
    once (the agent stops the job when a worker dies); :func:`exit_if_stopped` ends it afterwards."""
    global _diagnosing
    _diagnosing = True
    try:
        yield
    finally:
        _diagnosing = False


def exit_if_stopped() -> None:
    """A worker other than rank 0 that a stop signal reached while :func:`diagnosing` exits now, quietly,
    as it would have (rank 0 reports the stop: :func:`raise_if_stopped`)."""
    if _stop_signal is not None:
        os._exit(128 + _stop_signal)


def raise_if_stopped() -> None:
    """:class:`Interrupted` if a stop signal was noted (:func:`torchrun_worker_signals`)."""
    if _stop_signal is not None:
        raise Interrupted(_stop_signal)


def stop_processes(processes, grace_s: float = 3.0) -> int:
    """SIGTERM to every live process, SIGKILL to those still alive after ``grace_s``; returns how many
    were running."""
    alive = [p for p in processes if p.is_alive()]
    for p in alive:
        p.terminate()
    deadline = time.monotonic() + grace_s
    for p in alive:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in alive:
        if p.is_alive():
            p.kill()
            p.join(5)
    return len(alive)
