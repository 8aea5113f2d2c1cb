"""Files that parallel jobs of a sweep share (the analog cache, partitioned datasets, reports): written
under a temporary name and renamed, so no reader sees half a file, and generated under a lock, so two
jobs never make the same file twice; and the outputs a run will write, tried before it runs."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hw_models.errors import ConfigError


@contextlib.contextmanager
def locked(path: str | os.PathLike) -> Iterator[None]:
    """An exclusive lock on the file ``path`` (made if missing) for the ``with`` block; another process
    asking for it waits. ``flock``: the kernel releases it when its holder exits, even killed."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def temporary(path: str | os.PathLike) -> Path:
    """A temporary name beside ``path`` that no other process writes (it carries this process's id)."""
    path = Path(path)
    return path.with_name(f"{path.name}.{os.getpid()}.tmp")


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """``text`` into ``path`` through a temporary file and a rename: a reader sees the old file or the
    whole new one."""
    tmp = temporary(path)
    tmp.write_text(text)
    os.replace(tmp, path)


def check_writable(path: Path | str | None, key: str, folder: bool = False) -> None:
    """A file (or, with ``folder``, a folder) the run will write, tried before the run (the folder made, a
    file made and removed there): a path that cannot be written is one ConfigError now, not a traceback
    after the run."""
    if path is None:
        return
    p = Path(str(path))
    if p.is_dir() and not folder:
        raise ConfigError(f"{key}={p} is a directory: give a file path (e.g. {p / 'report.json'})")
    where = p if folder else p.parent
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, prefix=f".{p.name}.", suffix=".probe"):
            pass
    except OSError as exc:
        raise ConfigError(f"{key}: cannot write {p} ({exc.strerror or exc}): choose another {key}") from None
