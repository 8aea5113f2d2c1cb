"""Progress of a long loop that reads well anywhere: a terminal, a pipe or a log file.

On a terminal: one live tqdm bar whose postfix shows the latest values (loss, epoch time). When stdout
is not a terminal (a pipe, ``| tee``, CI, a batch scheduler's log file): no bar and no carriage
returns, only whole plain lines, one every ``every`` steps and always one for the last step, so a log
file reads line by line and never interleaves a bar with the text.

    progress = Progress(total=200, desc="epoch", every=10)
    for epoch in range(200):
        ...
        progress.update(epoch + 1, f"loss {loss:.4f}", loss=f"{loss:.4f}")
    progress.close()

Everything goes to stdout, so the bar and the lines never land on different streams. With ``log``
(Hydra's ``<job>.log`` of the run), the plain lines also go to that file, bar or not: the log of a run
reads like its console (:func:`echo` does the same for one line).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TextIO, TypeVar

T = TypeVar("T")

#: Lines per ``log_every`` steps when stdout is not a terminal; our choice: 20 lines for a 200-epoch run.
DEFAULT_EVERY = 10


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def _terminal_size(stream: TextIO) -> tuple[int, int]:
    """Columns and lines of the terminal behind ``stream``; zeros when it does not say."""
    try:
        return tuple(os.get_terminal_size(stream.fileno()))
    except (AttributeError, ValueError, OSError):
        return 0, 0


class Progress:
    """A bar on a terminal, whole lines every ``every`` steps otherwise; nothing when ``enabled`` is
    false (e.g. on ranks other than 0). ``initial`` steps are already done (a resumed run). ``unit``
    names a step in the bar's rate (``epoch/s``, ``%/s``)."""

    def __init__(self, total: int, desc: str, every: int = DEFAULT_EVERY, enabled: bool = True,
                 initial: int = 0, stream: TextIO | None = None, bar: bool | None = None,
                 log: str | os.PathLike | None = None, unit: str = "it"):
        if every < 1:
            raise ValueError(f"log_every must be >= 1, got {every}")
        self.total, self.desc, self.every, self.enabled = int(total), desc, int(every), enabled
        self.stream = stream or sys.stdout
        self.log = log
        self.bar = None
        if enabled and (is_terminal(self.stream) if bar is None else bar):
            from tqdm import tqdm

            # A terminal that reports no size (0 x 0, e.g. a fresh pseudo-terminal) would hide tqdm's bar.
            sized = all(_terminal_size(self.stream))
            self.bar = tqdm(total=self.total, initial=initial, desc=desc, file=self.stream, leave=False, unit=unit,
                            dynamic_ncols=sized, ncols=None if sized else 100, nrows=None if sized else 24)
        self._done = int(initial)

    def update(self, done: int, line: str = "", last: bool = False, **postfix) -> None:
        """``done`` steps of ``total`` are finished; ``line`` describes the last one (plain mode),
        ``postfix`` are the values the bar shows. ``last``: the loop ends here before ``total`` (an
        early stop), so this step gets its line too."""
        if not self.enabled:
            return
        due = last or done % self.every == 0 or done == self.total
        width = len(str(self.total))
        text = f"{self.desc} {done:{width}d}/{self.total}" + (f"  {line}" if line else "")
        if self.bar is not None:
            self.bar.update(done - self._done)
            if postfix:
                self.bar.set_postfix(postfix, refresh=True)
        elif due:
            print(text, file=self.stream, flush=True)
        if due:
            append_line(self.log, text)
        self._done = done

    def note(self, text: str) -> None:
        """A line of its own (e.g. "resumed from epoch 4/10"), above a bar that keeps running."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)
        append_line(self.log, text)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def append_line(path: str | os.PathLike | None, text: str) -> None:
    """Append ``text`` as a line to the log file ``path`` (nothing for None). Opened per line: a
    rank's lines and the launcher's land in order in a file that Hydra's logging also appends to."""
    if path is not None:
        with open(path, "a") as f:
            f.write(text + "\n")


def echo(text: str, log: str | os.PathLike | None = None, stream: TextIO | None = None) -> None:
    """Print ``text`` (stdout unless ``stream``) and append it to the log file ``log``."""
    print(text, file=stream or sys.stdout)
    append_line(log, text)


def hydra_log_file():
    """The log file of Hydra's job logging in this run (``<run dir>/<job name>.log``), when Hydra
    configured one and there is a run (else None)."""
    from pathlib import Path

    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    hc = HydraConfig.get()
    path = Path(hc.runtime.output_dir) / f"{hc.job.name}.log"
    return path if path.is_file() else None


def iterate(items: Sequence[T] | Iterable[T], desc: str, every: int = 1, min_items: int = 2) -> Iterator[T]:
    """Yield ``items`` with a :class:`Progress` (one line per finished item by default); no output
    for fewer than ``min_items`` items."""
    items = list(items)
    with Progress(len(items), desc, every=every, enabled=len(items) >= min_items) as progress:
        for i, item in enumerate(items):
            yield item
            progress.update(i + 1, f"{item} done")


def with_progress(simulator):
    """``simulator`` showing how far each run has got, by the idxs its client units have read: a bar on a
    terminal, a line at every 10 % otherwise (a batch scheduler's log). A run of under about a million events
    shows nothing. The C++ loop holds no GIL, so this is also where a Ctrl-C stops it."""

    def run(*args, **kwargs):
        bar, shown = None, 0

        def tick(read: int, total: int) -> None:
            nonlocal bar, shown
            if bar is None:
                bar = Progress(total=100, desc="simulation: idxs read, %", every=10, unit="%")
            for pct in range(shown + 1, min(100, read * 100 // max(total, 1)) + 1):
                bar.update(pct)
                shown = pct

        try:
            return simulator(*args, progress=tick, **kwargs)
        finally:
            if bar is not None:
                bar.close()

    return run
