"""Keep freed heap memory in the rank processes instead of handing it back to the OS (glibc only).

Each distributed SpMM call allocates tens of MB: halo and send buffers, outputs, gradients. glibc
serves large blocks with mmap and returns them with munmap when freed, so the next call page-faults
the same memory back in. On this project's VMs that costs about 2 us per 4 KiB page: filling a fresh
25 MB halo took 14.2 ms against 2.3 ms for a reused one. PyTorch's CPU tuning guide suggests
jemalloc or tcmalloc for the same reason; this is the in-process equivalent: no mmap for heap blocks
and a 1 GiB trim threshold, so freed blocks are reused. ``NETSPARSE_MALLOC=system`` keeps glibc's
defaults.

Ranks keep blocks up to :data:`RANK_LARGEST_KEPT` only. At the papers' scale a rank's activations are
blocks of 80 MB and more, and a heap that never returns them fragments: a europe@0.1 rank of 4 peaked at
1.6-1.7 GiB with every block kept against 1.25 GiB with glibc's defaults (docs/benchmarks.md).
"""

from __future__ import annotations

import ctypes
import os

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4  # glibc malloc.h
_TRIM_THRESHOLD = 1 << 30

RANK_LARGEST_KEPT = 64 << 20
"""Largest block a rank keeps (our choice): every per-call tensor of a rank of up to about 1 M rows at
K=16 is reused; larger ones get their own mmap, returned to the OS when freed."""


def keep_freed_memory(largest_kept: int | None = None) -> bool:
    """Tune glibc malloc as above; returns whether it applied (not on other C libraries, or opted out).
    ``largest_kept``: blocks above it keep glibc's own mmap (``None``: every block comes from the heap)."""
    if os.environ.get("NETSPARSE_MALLOC", "keep") == "system":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # not glibc
    mmap = mallopt(_M_MMAP_MAX, 0) if largest_kept is None else mallopt(_M_MMAP_THRESHOLD, int(largest_kept))
    return bool(mmap) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
