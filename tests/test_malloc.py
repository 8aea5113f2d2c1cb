"""Rank processes keep freed heap memory (netsparse_torch.malloc): with glibc, a large block comes
from the heap arena instead of its own mmap, so freeing it does not hand it back to the OS."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import ctypes, json, sys
import numpy as np
from netsparse_torch.malloc import keep_freed_memory

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
applied = keep_freed_memory(*[int(a) for a in sys.argv[1:]])
before = libc.mallinfo2()
block = np.ones(48 * 2**20 // 8)  # 48 MiB
after = libc.mallinfo2()
big = np.ones(96 * 2**20 // 8)  # 96 MiB
bigger = libc.mallinfo2()
print(json.dumps({"applied": applied, "mmapped": after.hblkhd - before.hblkhd, "arena": after.arena - before.arena,
                  "big_mmapped": bigger.hblkhd - after.hblkhd}))
"""


def probe(*args: str, **env) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], env={**os.environ, **env}, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_large_blocks_come_from_the_arena_unless_opted_out():
    kept = probe()
    # the arena grows by about the block (free arena bytes left by earlier imports may serve part of it)
    assert kept["applied"] and kept["mmapped"] < 2**20 and kept["arena"] >= 47 * 2**20
    system = probe(NETSPARSE_MALLOC="system")
    assert not system["applied"] and system["mmapped"] >= 48 * 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_ranks_hand_blocks_above_their_limit_back_to_the_os():
    from netsparse_torch.malloc import RANK_LARGEST_KEPT

    ranks = probe(str(RANK_LARGEST_KEPT))
    assert ranks["applied"] and ranks["mmapped"] < 2**20 and ranks["big_mmapped"] >= 96 * 2**20
    assert probe()["big_mmapped"] < 2**20  # every block kept: the simulator's setting
