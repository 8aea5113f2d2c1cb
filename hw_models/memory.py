"""What the kernel says about memory (Linux ``/proc``), for the checks that refuse a run that would not fit."""

from __future__ import annotations

from pathlib import Path


def proc_bytes(path: str, field: str) -> int | None:
    """A ``kB`` field of a ``/proc`` status file (``MemAvailable`` of ``/proc/meminfo``, ``VmHWM`` of
    ``/proc/self/status``) in bytes; ``None`` where the file or the field is not there."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def available_bytes() -> int | None:
    """The host's available memory: ``MemAvailable``, free plus what the kernel can reclaim."""
    return proc_bytes("/proc/meminfo", "MemAvailable")
