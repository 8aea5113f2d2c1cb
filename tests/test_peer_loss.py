"""A rank that dies (SIGKILL) or stops (SIGSTOP) mid-run: the run ends with one line that names it and
says where the completed epochs are, no gloo traceback, and no process left behind; with
netsparse-train's own launcher and under torchrun.

The runs are tagged in their environment (tests/test_torchrun.py's ``_tagged_pids``), so "nothing left"
means no process with the tag, and every tagged process is killed in ``finally``.

The four runs start one after another in the background (:func:`lost_ranks`), each once the previous
one lost its rank: the next run's start (imports, the graph, the first epochs: CPU) then overlaps the
previous one's waits (``timeout_s`` on a stopped rank, the heartbeat's few seconds, and torchrun's 30 s
before it SIGKILLs a stopped worker, which no torchrun option shortens for a failed job), the longest
first."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli import ROOT
from omegaconf import OmegaConf
from test_stop_signals import _completed_epochs, _kill_tagged, _survivors
from test_torchrun import TAG_VAR, _tagged_pids, session_cache

from netsparse_torch.graph import load_dataset

#: timeout_s of these runs: how long the others wait on a stopped rank. It also bounds every wait for the
#: slowest rank's start: of the launcher's ranks, forked at once from a forkserver that imported everything
#: (3 s held with four runs at once on 2 cores at load 14, once Cora is in the cache: :func:`lost_ranks`),
#: and of torchrun's workers, fresh interpreters that meet in the job's store before init_process_group
#: (netsparse_torch/run/restart.py) and import the layers after it (3 s failed at load 8).
TIMEOUT_S = {"netsparse-train": 3, "torchrun": 10}
DEADLINE_S = 240
#: (launcher, how), the longest wait for the end first.
CASES = [("torchrun", "SIGSTOP"), ("netsparse-train", "SIGSTOP"), ("torchrun", "SIGKILL"),
         ("netsparse-train", "SIGKILL")]


def _start(tmp_path: Path, launcher: str, tag: str, cache: Path) -> subprocess.Popen:
    train = ["-m", "netsparse_torch.cli.train", "dataset=cora", "epochs=100000", "checkpoint_every=2",
             f"hydra.run.dir={tmp_path / 'run'}", f"timeout_s={TIMEOUT_S[launcher]}"]
    if launcher == "torchrun":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
               "--max-restarts=0", "--monitor-interval=0.2", *train]
    else:
        cmd = [sys.executable, *train, "world_size=2"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
               NETSPARSE_CACHE=str(cache), **{TAG_VAR: tag})
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _rank_pid(proc: subprocess.Popen, launcher: str, tag: str) -> int:
    """A rank's process: RANK=1 under torchrun; under the launcher the last rank its forkserver forked."""
    pids = [p for p in _tagged_pids(tag) if p != proc.pid]
    if launcher == "torchrun":
        return next(p for p in pids if b"RANK=1" in Path(f"/proc/{p}/environ").read_bytes().split(b"\0"))
    forkserver = next(p for p in pids if b"forkserver" in Path(f"/proc/{p}/cmdline").read_bytes())
    return max(p for p in pids if Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(forkserver))


@dataclass
class Lost:
    """How a run that lost a rank ended."""

    pid: int  # the rank killed or stopped
    returncode: int
    err: str
    survivors: list[int]  # tagged processes still running 60 s after the run's end


def _lose_a_rank(tmp_path: Path, launcher: str, how: str, turn: threading.Event, done: threading.Event,
                 cache: Path) -> Lost:
    """Once ``turn`` is set: start the run, and once a checkpoint exists ``how`` to a rank; then set
    ``done`` (the next run may start) and wait for the end."""
    turn.wait()
    tag = uuid.uuid4().hex
    proc = None
    try:
        proc = _start(tmp_path, launcher, tag, cache)
        deadline = time.monotonic() + DEADLINE_S
        while _completed_epochs(tmp_path / "run" / "epochs.jsonl") < 3:  # a checkpoint exists
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=10)[1][-3000:]
            time.sleep(0.2)
        pid = _rank_pid(proc, launcher, tag)
        os.kill(pid, getattr(signal, how))
        done.set()
        out, err = proc.communicate(timeout=DEADLINE_S)
        return Lost(pid, proc.returncode, err, _survivors(tag, 60))
    finally:
        done.set()
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        _kill_tagged(tag)


@pytest.fixture(scope="module")
def lost_ranks(request, tmp_path_factory) -> dict[tuple[str, str], Future]:
    """The outcome of each selected case's run (:class:`Lost`), as a future; the runs start in the
    order of :data:`CASES`, each after the previous one's rank was lost."""
    selected = {(item.callspec.params["launcher"], item.callspec.params["how"]) for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")}
    cases = [c for c in CASES if c in selected]
    cache = tmp_path_factory.getbasetemp() / "cache"  # tests/conftest.py's, which it sets per test
    # Cora into the cache first: a torchrun worker that finds it unprocessed has PyG process it (and so
    # imports PyG before init_process_group) while its peer reads the cache and imports PyG after it: at
    # the first collective the peer waited longer than timeout_s=10 at load 12 (4 runs of 4).
    with session_cache(tmp_path_factory):
        load_dataset(OmegaConf.create({"name": "cora"}))
    turns = [threading.Event() for _ in range(len(cases) + 1)]
    turns[0].set()
    pool = ThreadPoolExecutor(max(1, len(cases)), thread_name_prefix="lost-rank")
    futures = {(launcher, how): pool.submit(_lose_a_rank, tmp_path_factory.mktemp(f"{how}-{launcher}"), launcher,
                                            how, turns[i], turns[i + 1], cache)
               for i, (launcher, how) in enumerate(cases)}
    yield futures
    pool.shutdown(wait=True)  # each run ended (bounded by its deadlines) and its processes were killed


@pytest.mark.parametrize("launcher", ["netsparse-train", "torchrun"])
@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_a_lost_rank_is_one_line_naming_it_and_where_the_epochs_are(lost_ranks, launcher, how):
    run = lost_ranks[launcher, how].result(timeout=len(CASES) * 2 * DEADLINE_S)
    assert run.survivors == [], f"still running after {how}: {run.survivors}"
    assert run.returncode != 0
    err = run.err
    lines = [ln for ln in err.splitlines() if ln.startswith("netsparse-train: error:")]
    assert len(lines) == 1, err[-4000:]
    line = lines[0]
    print(line)
    named = re.search(r"rank (\d) \(pid (\d+)\) (was killed by SIGKILL|died|is stopped)", line)
    assert named and int(named.group(2)) == run.pid, line
    assert ("is stopped" in line) == (how == "SIGSTOP"), line
    assert re.search(r"the checkpoint of \d+ completed epochs is in \S+checkpoints", line), line
    for noise in ("Traceback", "Error executing job", "Connection reset by peer"):
        if launcher == "torchrun" and noise == "Traceback":
            continue  # torchrun's agent prints its own report of the failed worker
        assert noise not in err, err[-4000:]


def test_a_rank_that_never_arrives_is_one_line_naming_the_timeout():
    """Rank 0 of two waits for rank 1 at init_process_group (as a torchrun worker whose peer starts late
    waits): after timeout_s, one line naming it and what to do, not the store's traceback."""
    from netsparse_torch.run.launch import free_port

    code = ("from netsparse_torch.errors import NetsparseError\n"
            "from netsparse_torch.run.launch import init_rank\n"
            "try:\n    init_rank(0, 2, 1.0)\nexcept NetsparseError as exc:\n    print(exc)\n")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), TORCH_CPP_LOG_LEVEL="ERROR")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    (line,) = done.stdout.splitlines()
    assert line.startswith("rank 0: the job's 2 ranks did not all meet within timeout_s=1 s (") and \
        line.endswith("needs a larger timeout_s"), line
