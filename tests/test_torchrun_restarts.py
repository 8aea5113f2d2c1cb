"""torchrun's fault tolerance: ``--max-restarts`` restarts the workers after one is killed, and the
restarted job ends as an uninterrupted one would.

A user script on ``init_process_group("netsparse")`` connects again after the restart (the backend's
inner groups key their store entries per attempt, netsparse_torch/backend.py ``attempt_store``) and
computes what gloo computes."""

import os
import re
import subprocess
import sys
from pathlib import Path

from cli import ROOT

SCRIPT_TIMEOUT_S = 120

#: A user script: the default group and a new_group, a few all_reduces, and rank 1 killed (SIGKILL, by
#: itself) in the first attempt when KILL_AT is set. In the restarted attempt rank 1 joins late, so its
#: peer certainly finds the first attempt's entries in torchrun's store before rank 1 writes new ones.
USER_SCRIPT = """\
import datetime, os, signal, sys, time

import torch
import torch.distributed as dist

backend = sys.argv[1]
if backend == "netsparse":
    import netsparse_torch.backend  # noqa: F401 (registers the backend)
attempt, rank = int(os.environ["TORCHELASTIC_RESTART_COUNT"]), int(os.environ["RANK"])
kill_at = int(os.environ.get("KILL_AT", "-1"))
if attempt > 0 and rank == 1:
    time.sleep(3)
dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
side = dist.new_group(backend=backend)
x = torch.arange(4, dtype=torch.float64) + rank
for step in range(6):
    dist.all_reduce(x)
    dist.all_reduce(x, group=side)
    x = x / 3
    if attempt == 0 and rank == 1 and step == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
print(f"attempt {attempt} rank {rank} result {x.tolist()}", flush=True)
dist.destroy_process_group()
"""


def torchrun(script: Path, *args: str, env: dict[str, str] | None = None, restarts: int = 1):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           f"--max-restarts={restarts}", "--monitor-interval=0.2", str(script), *args]
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **(env or {}))
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S, env=full_env)


def results(out: str) -> dict[tuple[int, int], str]:
    return {(int(a), int(r)): v for a, r, v in re.findall(r"^attempt (\d+) rank (\d+) result (.*)$", out, re.M)}


def test_a_user_script_on_the_netsparse_backend_restarts_as_under_gloo(tmp_path):
    script = tmp_path / "allreduce.py"
    script.write_text(USER_SCRIPT)
    gloo = torchrun(script, "gloo")  # no kill: what the restarted job must end with
    assert gloo.returncode == 0, gloo.stderr[-3000:]
    want = results(gloo.stdout)
    assert set(want) == {(0, 0), (0, 1)}, gloo.stdout
    killed = torchrun(script, "netsparse", env={"KILL_AT": "2"})
    assert killed.returncode == 0, killed.stderr[-3000:]
    got = results(killed.stdout)
    assert set(got) == {(1, 0), (1, 1)}, killed.stdout  # the first attempt ended with the kill
    assert [got[(1, r)] for r in (0, 1)] == [want[(0, r)] for r in (0, 1)]
