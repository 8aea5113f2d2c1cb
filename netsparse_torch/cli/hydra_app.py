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
from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn

from netsparse_torch.cli.failure import fail
from netsparse_torch.config_keys import Cli, check_command_line, config_path_args, file_choices
from netsparse_torch.errors import ConfigError, NetsparseError

#: Set on an exception that the task (the CLI's own work) raised: that one is not Hydra's.
_TASK = "_netsparse_task_error"


def run_app(cli: Cli, hydra_main: Callable[[], None], doc: str | None = None,
            flags: dict[str, Callable[[], str]] | None = None) -> None:
    """A Hydra CLI's start: its command line checked, then ``hydra_main`` (the ``@hydra.main``
    function) with Hydra's errors as one line; any :class:`NetsparseError` is ``<prog>: error: ...``
    and exit 2. ``--help`` prints :func:`help_text` (``doc``: the CLI's own lines); each of ``flags``
    (``--explain``) prints its text, and neither runs anything."""
    from netsparse_torch.report.provenance import remember_command

    args = sys.argv[1:]
    try:
        sys.argv[1:] = args = config_path_args(file_choices(args, cli))  # hw=file.yaml, -cp DIR: absolute
        remember_command()  # the reports of a launcher's jobs name the sweep's command line
        check_command_line(args, cli)
        for flag, text in (flags or {}).items():
            if flag in args:
                print(text())
                return
        if doc is not None and ("--help" in args or "-h" in args):
            with hydra_errors():
                print(help_text(cli, [a for a in args if not a.startswith("-")], doc))
            return
        with hydra_errors():
            hydra_main()
    except NetsparseError as exc:
        fail(cli.prog, exc)
    except KeyboardInterrupt:  # a simulation stops at its next progress call (hw_models.simulator.simulate)
        print(f"{cli.prog}: stopped by SIGINT (Ctrl-C)", file=sys.stderr, flush=True)
        sys.exit(130)


LAUNCHERS = ("basic", "joblib", "submitit_local", "submitit_slurm", "slurm")
"""``hydra/launcher`` choices (Hydra's basic one, the two plugins' and configs/hydra/launcher/slurm.yaml)."""


def help_text(cli: Cli, overrides: list[str], doc: str) -> str:
    """``--help``: the CLI's ``doc``, the config groups it reads (Hydra's own lists every folder of
    configs/, the other CLIs' too), the launchers and the config composed with ``overrides``."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from netsparse_torch.config_check import config_dir, group_choices
    from netsparse_torch.config_keys import experiments

    def choices(group: str) -> list[str]:  # one folder holds both CLIs' experiments
        return experiments(config_dir(), cli) if group == "experiment" else group_choices(config_dir(), group)

    groups = "\n".join(f"{g}: {', '.join(choices(g))}" for g in cli.groups)
    added = "\n".join(f"+{g}: {', '.join(choices(g))}" for g in cli.add_groups)
    files = "".join(f"\n{g}=path/to/file.yaml reads the {g} sections from a file" for g in cli.file_groups)
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose(cli.config, overrides=overrides)
    intro = doc.strip().replace("``", "")
    return (f"{intro}\n\n== Configuration groups ==\nCompose your configuration from those groups "
            f"(group=option)\n\n{groups}{chr(10) + added if added else ''}{files}\n\n== Launchers ==\n"
            f"Sweeps (-m, multirun) run on hydra/launcher: {', '.join(LAUNCHERS)} (README, \"Sweeps\")\n\n"
            f"== Config ==\nOverride anything in the config (foo.bar=value); Hydra's own options: --hydra-help\n\n"
            f"{OmegaConf.to_yaml(cfg)}")


def job_failed(prog: str, exc: NetsparseError, say: Callable[[str, NetsparseError], NoReturn] = fail) -> NoReturn:
    """A task's error: in a single run ``say(prog, exc)`` (one line, exit 2); in a multirun the error,
    naming its job, is raised to the launcher, which hands it back to the sweep (an exit would end a
    joblib worker or a submitit job without a result, which the launcher reports as a traceback); the
    sweep stops with it and :func:`run_app` prints it as one line."""
    from hydra.core.hydra_config import HydraConfig

    from netsparse_torch.config_check import in_sweep

    if not in_sweep():
        say(prog, exc)
    job = HydraConfig.get().job
    exc.args = (f"job {job.num} ({' '.join(HydraConfig.get().overrides.task)}): {exc}",)
    raise exc


def from_launch_dir(cfg, keys: Iterable[str]) -> None:
    """Each of ``keys`` (dotted) that holds a relative path made absolute from the directory the command ran
    in (Hydra's ``to_absolute_path``): a job that Hydra moved into its run directory
    (``hydra.job.chdir=true``) or that a launcher started elsewhere reads and writes where the user meant,
    and its report names the file it read."""
    from hydra.utils import to_absolute_path
    from omegaconf import OmegaConf

    for key in keys:
        value = OmegaConf.select(cfg, key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            OmegaConf.update(cfg, key, to_absolute_path(value), merge=False)


@contextlib.contextmanager
def task() -> Iterator[None]:
    """Around a CLI's work inside its ``@hydra.main`` function: what it raises stays its own error
    (a bug keeps its traceback), not one of Hydra's composition errors. An interpolation of the command
    line that cannot be resolved (``nodes=${oops}``) shows only when the task reads the key: it is the
    user's, one :class:`ConfigError`."""
    from omegaconf.errors import InterpolationResolutionError

    try:
        yield
    except InterpolationResolutionError as exc:
        key = getattr(exc, "full_key", None)
        raise ConfigError(f"{key}: {hydra_message(exc)}" if key else hydra_message(exc)) from None
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
    stderr = sys.stderr
    sys.stderr = _WithoutJobErrorLine(stderr)
    try:
        yield
    except (HydraException, OmegaConfBaseException) as exc:
        if getattr(exc, _TASK, False):
            raise
        raise ConfigError(hydra_message(exc)) from None
    except OSError as exc:  # Hydra making the run's directory or its log file there
        if getattr(exc, _TASK, False) or exc.filename is None:
            raise
        raise ConfigError(f"{exc.filename}: {exc.strerror or exc}: Hydra cannot make the run's directory or its "
                          "log there; choose another hydra.run.dir (hydra.sweep.dir for a sweep)") from None
    finally:
        sys.stderr = stderr
        if before is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = before


class _WithoutJobErrorLine:
    """``sys.stderr`` without the line Hydra writes before it re-raises a failed job's error ("Error
    executing job with overrides: [...]"): the error's own line (:func:`job_failed`) names the job."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return len(text) if text.startswith("Error executing job with overrides:") else self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


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
