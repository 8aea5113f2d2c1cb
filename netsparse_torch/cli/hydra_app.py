"""What the Hydra CLIs (``netsparse-train``, ``netsparse-simulate``, ``netsparse-partition``) share: the
command line checked before any heavy import (:mod:`netsparse_torch.config_keys`), and Hydra's own
errors as one line. Hydra prints a composition error ("Could not override ...", a config it cannot find)
in several lines with a hint of its own, and exits 1; here it is one
:class:`~netsparse_torch.errors.ConfigError`, which each CLI prints as ``<prog>: error: ...`` with exit 2.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import NoReturn

from netsparse_torch.config_keys import Cli, check_command_line
from netsparse_torch.errors import ConfigError, NetsparseError

#: Set on an exception that the task (the CLI's own work) raised: that one is not Hydra's.
_TASK = "_netsparse_task_error"


def run_app(cli: Cli, hydra_main: Callable[[], None]) -> None:
    """A Hydra CLI's start: its command line checked, then ``hydra_main`` (the ``@hydra.main``
    function) with Hydra's errors as one line; any :class:`NetsparseError` is ``<prog>: error: ...``
    and exit 2."""
    try:
        check_command_line(sys.argv[1:], cli)
        with hydra_errors():
            hydra_main()
    except NetsparseError as exc:
        fail(cli.prog, exc)


def fail(prog: str, exc: NetsparseError) -> NoReturn:
    print(f"{prog}: error: {exc}", file=sys.stderr)
    sys.exit(2)


@contextlib.contextmanager
def task() -> Iterator[None]:
    """Around a CLI's work inside its ``@hydra.main`` function: what it raises stays its own error
    (a bug keeps its traceback), not one of Hydra's composition errors."""
    try:
        yield
    except BaseException as exc:
        setattr(exc, _TASK, True)
        raise


@contextlib.contextmanager
def hydra_errors() -> Iterator[None]:
    """Hydra's errors before the task runs (composing the config, applying the overrides, the run
    directory's interpolations) raised as one-line ConfigErrors. HYDRA_FULL_ERROR makes Hydra raise
    them instead of printing them."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    before = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    except (HydraException, OmegaConfBaseException) as exc:
        if getattr(exc, _TASK, False):
            raise
        raise ConfigError(hydra_message(exc)) from None
    finally:
        if before is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = before


def hydra_message(exc: BaseException) -> str:
    """Hydra's error in one line: its first line, the first line of its cause (OmegaConf's reason), and
    the choices of a config group it could not find. Hydra's hint to use ``+key`` is left out: a key
    the config lacks is one the CLI does not read (:mod:`netsparse_torch.config_keys`)."""
    parts = [_first_line(exc)]
    cause = exc.__cause__
    if cause is not None and _first_line(cause) not in parts[0]:
        parts.append(_first_line(cause))
    options = getattr(exc, "options", None)
    if options:
        parts.append(f"choose one of {', '.join(sorted(options))}")
    return "; ".join(p.rstrip(".") for p in parts if p)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
