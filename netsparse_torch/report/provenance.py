"""Where a report came from: enough to rerun it and to trust a table made of it.

The ``provenance`` block of every report: package version, git commit of the source checkout (when
the package runs from one; ``dirty`` when it has uncommitted changes), Python and torch versions,
host name, CPU count, the date (UTC) and the command line. The full configuration is the report's
``config`` key. Nothing here imports torch (``netsparse-simulate`` stays torch-free).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import netsparse_torch


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_commit(where: Path | None = None) -> dict | None:
    """``{commit, dirty}`` of the checkout holding the package, or ``None`` (an installed copy, no git)."""
    where = where or Path(netsparse_torch.__file__).resolve().parent.parent
    if not (where / ".git").exists():
        return None
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10,
                                  check=True).stdout.strip()

        return {"commit": git("rev-parse", "HEAD"),
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return None


COMMAND_ENV = "NETSPARSE_COMMAND"
"""The command line of the CLI that started a run, for the jobs a launcher starts in other processes
(a submitit job's own command line is submitit's)."""


def remember_command() -> None:
    """Hand this process's command line to the processes it starts (a sweep's jobs)."""
    os.environ[COMMAND_ENV] = json.dumps([Path(sys.argv[0]).name, *sys.argv[1:]])


def command() -> list[str]:
    """The command line that started this run: the CLI's (:func:`remember_command`), else this process's."""
    try:
        return json.loads(os.environ[COMMAND_ENV])
    except (KeyError, ValueError):
        return [Path(sys.argv[0]).name, *sys.argv[1:]]


def provenance() -> dict:
    return {
        "package": "netsparse_torch",
        "version": _version("netsparse_torch") or netsparse_torch.__version__,
        "git": git_commit(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command(),
    }
