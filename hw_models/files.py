"""Files that parallel jobs of a sweep share (the analog cache, partitioned datasets, reports): written
under a temporary name and renamed, so no reader sees half a file, and generated under a lock, so two
jobs never make the same file twice."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


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
