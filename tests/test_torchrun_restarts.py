"""torchrun's fault tolerance: ``--max-restarts`` restarts the workers after one is killed, and the
restarted job ends as an uninterrupted one would.

A user script on ``init_process_group("netsparse")`` connects again after the restart (the backend's
inner groups key their store entries per attempt, netsparse_torch/backend.py ``attempt_store``) and
computes what gloo computes. ``netsparse-train`` goes on from its last checkpoint by itself
(netsparse_torch/run/restart.py) and ends with the uninterrupted run's losses; its report lists the
attempts, with the epochs each redid."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from cli import ROOT, train_here
from test_stop_signals import _completed_epochs, _kill_tagged
from test_torchrun import TAG_VAR, _tagged_pids, session_cache

SCRIPT_TIMEOUT_S = 120
DEADLINE_S = 300

#: A user script on the netsparse backend: the default group and a new_group, a few all_reduces, and rank 1
#: killed (SIGKILL, by itself) in the first attempt when KILL_AT is set; then what gloo computes, the same
#: steps on two gloo groups of the same processes. In the restarted attempt rank 1 joins late, so its peer
#: certainly finds the first attempt's entries in torchrun's store before rank 1 writes new ones.
USER_SCRIPT = """\
import datetime, os, signal, time

import torch
import torch.distributed as dist

import netsparse_torch.backend  # noqa: F401 (registers the backend)

attempt, rank = int(os.environ["TORCHELASTIC_RESTART_COUNT"]), int(os.environ["RANK"])
kill_at = int(os.environ.get("KILL_AT", "-1"))
if attempt > 0 and rank == 1:
    time.sleep(3)
dist.init_process_group("netsparse", timeout=datetime.timedelta(seconds=60))


def steps(world, side, kill_at=-1):
    x = torch.arange(4, dtype=torch.float64) + rank
    for step in range(6):
        dist.all_reduce(x, group=world)
        dist.all_reduce(x, group=side)
        x = x / 3
        if attempt == 0 and rank == 1 and step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    return x.tolist()


got = steps(None, dist.new_group(backend="netsparse"), kill_at)
gloo = steps(dist.new_group(backend="gloo"), dist.new_group(backend="gloo"))
os.write(1, f"attempt {attempt} rank {rank} result {got} gloo {gloo}\\n".encode())  # one write: the ranks share a pipe
dist.destroy_process_group()
"""


def torchrun(script: Path, *args: str, env: dict[str, str] | None = None, restarts: int = 1):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           f"--max-restarts={restarts}", "--monitor-interval=0.2", str(script), *args]
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **(env or {}))
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S, env=full_env)


def results(out: str) -> dict[tuple[int, int], tuple[str, str]]:
    """Each rank's result line (the netsparse result, the gloo one); unanchored, because two ranks'
    lines can still meet on one line of the agent's merged output."""
    found = re.findall(r"attempt (\d+) rank (\d+) result (\[[^\]]*\]) gloo (\[[^\]]*\])", out)
    return {(int(a), int(r)): (got, gloo) for a, r, got, gloo in found}


def test_a_user_script_on_the_netsparse_backend_restarts_as_under_gloo(tmp_path):
    script = tmp_path / "allreduce.py"
    script.write_text(USER_SCRIPT)
    killed = torchrun(script, env={"KILL_AT": "2"})
    assert killed.returncode == 0, killed.stderr[-3000:]
    got = results(killed.stdout)
    assert set(got) == {(1, 0), (1, 1)}, killed.stdout  # the first attempt ended with the kill
    assert [got[(1, r)][0] for r in (0, 1)] == [got[(1, r)][1] for r in (0, 1)]


# -- netsparse-train under torchrun --max-restarts -------------------------------------------------------
EPOCHS = 40
TRAIN = ["dataset=cora", f"epochs={EPOCHS}", "timeout_s=60", "log_every=100"]


def _start_train(run: Path, tag: str, restarts: int, *overrides: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           f"--max-restarts={restarts}", "--monitor-interval=0.2", "-m", "netsparse_torch.cli.train", *TRAIN,
           f"hydra.run.dir={run}", *overrides]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **{TAG_VAR: tag})
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _wait_for(proc: subprocess.Popen, ready, deadline: float) -> None:
    while not ready():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=30)
        time.sleep(0.05)


def _kill_worker(tag: str, rank: int) -> None:
    for pid in _tagged_pids(tag):
        try:
            if f"RANK={rank}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                os.kill(pid, signal.SIGKILL)
                return
        except OSError:  # gone meanwhile
            pass
    raise AssertionError(f"no worker of rank {rank}")


def killed_run(tmp_path: Path, kills: list[tuple[int, int]], *overrides: str) -> tuple[dict, str, list[int]]:
    """netsparse-train under torchrun with one restart per kill: ``kills`` are ``(epochs, rank)``, SIGKILL to
    that rank's worker once its attempt completed that many epochs. Returns the report, the output and
    the epochs each killed attempt had completed when the kill was sent."""
    tag, run = uuid.uuid4().hex, tmp_path / "run"
    proc = _start_train(run, tag, len(kills), *overrides)
    seen = []
    try:
        deadline = time.monotonic() + DEADLINE_S
        log, epochs = run / "train.log", run / "epochs.jsonl"
        for attempt, (at, rank) in enumerate(kills):
            _wait_for(proc, lambda a=attempt: a == 0 or f"torchrun restart {a}:" in _text(log), deadline)
            _wait_for(proc, lambda n=at: _completed_epochs(epochs) >= n, deadline)
            _kill_worker(tag, rank)
            # The epochs completed when the kill landed: the ranks may finish one more between the read
            # above and the kill, and none after it (an epoch needs every rank); rank 0 may still be
            # writing that one's line, so read it once it had time to.
            time.sleep(1.0)
            seen.append(_completed_epochs(epochs))
        out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        _kill_tagged(tag)
    assert proc.returncode == 0, err[-4000:]
    return json.loads((run / "report.json").read_text()), out + err, seen


def _text(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> list[float]:
    """The losses of the same run, uninterrupted, at the same world size: netsparse-train's job in this
    process, on its own launcher (a run is the same model under either; one torch thread per rank, as
    OMP_NUM_THREADS=1 gives the torchrun workers)."""
    with session_cache(tmp_path_factory):
        report, _ = train_here(tmp_path_factory.mktemp("uninterrupted"), *TRAIN, "world_size=2", "threads=1")
    return [e["loss"] for e in report["epochs"]]


def check_restarted(report: dict, want: list[float], seen: list[int], every: int) -> None:
    """The restarted run's losses are the uninterrupted ones; its attempts say where each one started and
    what it redid."""
    assert [e["epoch"] for e in report["epochs"]] == list(range(EPOCHS))
    assert [e["loss"] for e in report["epochs"]] == want
    last = report["attempts"][-1]
    assert last["restart"] == len(seen) and last["epochs"][1] == EPOCHS
    start = last["resumed_from"] or 0
    assert start % every == 0 and start <= seen[-1] <= start + last["redone"]


def test_netsparse_train_restarted_by_torchrun_goes_on_from_its_checkpoint(tmp_path, uninterrupted):
    """The first kill comes before any checkpoint (the restart trains again from epoch 0 and says so),
    the second after one (the restart resumes from it); the run ends with the uninterrupted losses."""
    report, out, seen = killed_run(tmp_path, [(1, 1), (20, 0)], "checkpoint_every=8")
    assert seen[0] < 8, "the first kill was meant to come before the first checkpoint"
    assert "torchrun restart 1: no checkpoint in" in out and "training again from epoch 0" in out
    assert "torchrun restart 2: resuming from the checkpoint of" in out
    check_restarted(report, uninterrupted, seen, 8)
    first = report["attempts"][0]
    assert first["restart"] == 1 and first["resumed_from"] is None and first["redone"] >= seen[0]
    assert len(report["attempts"]) == 2


RESTARTS = 10


@pytest.mark.soak
def test_sigkill_at_a_random_epoch_ends_with_the_uninterrupted_losses(tmp_path, uninterrupted):
    """SIGKILL to a random worker at a random epoch, 10 times: each run restarts and ends with the
    uninterrupted run's losses."""
    rng = random.Random(0)
    failures = []
    for n in range(RESTARTS):
        at, rank = rng.randrange(2, EPOCHS - 4), rng.randrange(2)
        try:
            report, _, seen = killed_run(tmp_path / str(n), [(at, rank)], "checkpoint_every=5")
            check_restarted(report, uninterrupted, seen, 5)
        except AssertionError as e:
            failures.append(f"kill of rank {rank} after epoch {at}: {str(e)[-2000:]}")
    assert not failures, f"{len(failures)} of {RESTARTS} failed; first: {failures[0]}"
