"""The one way a command line fails: ``<prog>: error: <what to do>`` as the last line on stderr, and
exit status 2 (argparse's own, so a usage line may precede it). Every entry point says its errors
through :func:`fail` (``netsparse-train`` through :func:`error_line`, which it says once per torchrun
job); none prints a traceback for bad input or exits 1 or 0 on it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import NoReturn

from netsparse_torch.errors import NetsparseError

EXIT_BAD_INPUT = 2
"""The exit status of bad input (argparse's and Hydra-free CLIs' alike)."""


def error_line(prog: str, what: object) -> str:
    """``<prog>: error: <what>``: the error's one line."""
    return f"{prog}: error: {what}"


def fail(prog: str, what: object) -> NoReturn:
    """Says ``what`` (an error or the text of one) as :func:`error_line` on stderr and exits 2."""
    print(error_line(prog, what), file=sys.stderr, flush=True)
    sys.exit(EXIT_BAD_INPUT)


@contextlib.contextmanager
def failing(prog: str, *errors: type[BaseException]) -> Iterator[None]:
    """Around a CLI's work: a :class:`NetsparseError` (or one of ``errors``) is :func:`fail`'s line, and so
    is a file the system refuses (an output under a missing or read-only folder, a full disk): named, as
    ``cp`` names it, instead of a traceback."""
    try:
        yield
    except (NetsparseError, *errors) as exc:
        fail(prog, exc)
    except OSError as exc:
        if exc.filename is None:
            raise
        fail(prog, f"{exc.filename}: {exc.strerror or exc}: choose another path, or make it writable")
