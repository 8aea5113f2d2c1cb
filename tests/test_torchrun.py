"""Multi-node, tested: two torchrun agents on loopback, as two nodes, train exactly like one process.

Each agent is a separate ``torchrun --nnodes=2`` with a c10d rendezvous on 127.0.0.1, as a user
starts one per machine (README, "Several machines"). Only rank 0 writes the report and prints the
summary. The agents run in their own sessions and their workers in theirs (torchrun starts each
worker with a new session), so cleanup stops the agents (which stop their workers) and then kills any
process that still carries this test's tag in its environment: nothing outlives the test, even when
it fails, and a hard deadline keeps CI from hanging.
"""

import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import pytest
from cli import train_here

from netsparse_torch.run.launch import free_port

ROOT = Path(__file__).resolve().parents[1]
PROCS = (2, 1)  # worker processes on node 0 and node 1: world size 3, nodes of different sizes
EPOCHS = 3
DEADLINE_S = 240
TAG_VAR = "NETSPARSE_TEST_AGENT"


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> tuple[list[str], list[str]]:
    """The dataset overrides of the single-process reference (the in-memory graph) and of the
    two-node run (``sum(PROCS)`` METIS shards written by netsparse-partition's job, in this process:
    its command line is tests/test_train_cli.py's, each rank reading its own)."""
    out = tmp_path_factory.mktemp("shards") / "cora-metis"
    with session_cache(tmp_path_factory):
        partition_here("dataset=cora", "partition=metis", f"parts={sum(PROCS)}", f"out={out}")
    return ["dataset=cora"], ["dataset=partitioned", f"dataset.path={out}"]


@contextmanager
def session_cache(tmp_path_factory):
    """The pytest session's NETSPARSE_CACHE (tests/conftest.py) for a module-scoped fixture, which runs
    before conftest's per-test one sets it."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("NETSPARSE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        yield


def partition_here(*overrides: str) -> dict:
    """``netsparse-partition``'s job (``cli/partition.py`` ``run``) in this process; its summary is not shown."""
    from hydra import compose, initialize_config_dir

    from netsparse_torch.cli.partition import run
    from netsparse_torch.config_check import config_dir

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"), redirect_stdout(io.StringIO()):
        return run(compose(config_name="partition", overrides=list(overrides)))


def _tagged_pids(tag: str) -> list[int]:
    """Processes whose environment carries this run's tag (the agents and their workers)."""
    needle = f"{TAG_VAR}={tag}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:  # gone, or not ours
            pass
    return pids


def _stop(agents: list[subprocess.Popen], tag: str) -> None:
    """SIGTERM to each agent's process group (torchrun then stops its workers), then SIGKILL to
    whatever still carries the tag: an agent that did not stop, or workers orphaned by a dead agent."""
    for a in agents:
        if a.poll() is None:
            try:
                os.killpg(a.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    grace = time.monotonic() + 15
    while time.monotonic() < grace and any(a.poll() is None for a in agents):
        time.sleep(0.2)
    for pid in _tagged_pids(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    gone = time.monotonic() + 5
    while time.monotonic() < gone and _tagged_pids(tag):
        time.sleep(0.1)
    for a in agents:
        a.wait(timeout=10)


def _agent(node: int, port: int, tag: str, out_dir: Path, overrides: list[str]) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--nproc-per-node={PROCS[node]}",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", f"--rdzv-id={tag}",
           # Node 0 hosts the rendezvous store: both agents resolve 127.0.0.1 to "this machine", so
           # say which one; a lost peer ends the rendezvous after join_timeout instead of 600 s.
           f"--rdzv-conf=is_host={'true' if node == 0 else 'false'},join_timeout=90",
           "--local-addr=127.0.0.1", "--max-restarts=0",
           "-m", "netsparse_torch.cli.train", f"hydra.run.dir={out_dir / f'node{node}'}", "timeout_s=90", *overrides]
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK")}
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **{TAG_VAR: tag})
    with open(out_dir / f"node{node}.out", "w") as out, open(out_dir / f"node{node}.err", "w") as err:
        return subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT, start_new_session=True)


def two_nodes(out_dir: Path, overrides: list[str], attempts: int = 3) -> list[dict]:
    """Run both agents to completion; per node ``{code, out, err, report}``. A rendezvous port taken
    between choosing it and binding it is retried with another one."""
    for _ in range(attempts):
        out_dir.mkdir(parents=True, exist_ok=True)
        tag = uuid.uuid4().hex
        port = free_port()
        agents = [_agent(node, port, tag, out_dir, overrides) for node in (0, 1)]
        try:
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline and any(a.poll() is None for a in agents):
                if any(a.poll() not in (None, 0) for a in agents):  # one failed: the other will not finish
                    break
                time.sleep(0.2)
        finally:
            _stop(agents, tag)
        nodes = [{"code": a.returncode, "out": (out_dir / f"node{n}.out").read_text(),
                  "err": (out_dir / f"node{n}.err").read_text()} for n, a in enumerate(agents)]
        if not ("EADDRINUSE" in nodes[0]["err"] or "address already in use" in nodes[0]["err"].lower()):
            break
    for n, node in enumerate(nodes):
        path = out_dir / f"node{n}" / "report.json"
        node["report"] = json.loads(path.read_text()) if path.is_file() else None
    return nodes


@pytest.fixture(scope="module")
def reference(tmp_path_factory, datasets) -> dict:
    """The single-process run (``sa``; with dropout on, every strategy trains the same model), as
    netsparse-train's job in this process."""
    with session_cache(tmp_path_factory):
        report, _ = train_here(tmp_path_factory.mktemp("single"), *datasets[0], "world_size=1", "strategy=sa",
                               f"epochs={EPOCHS}")
    return report


# Two nodes cost ~25 s of CPU (5 interpreters importing torch, the workers PyG too). make test runs sa, the
# README's; the soak runs netsparse, which has no torchrun-specific code (its collectives go through the same
# netsparse backend) and matches PyG at world size 3 from METIS shards in tests/test_equivalence.py.
@pytest.mark.parametrize("strategy", ["sa", pytest.param("netsparse", marks=pytest.mark.soak)])
def test_two_torchrun_nodes_train_like_one_process(tmp_path, datasets, reference, strategy):
    nodes = two_nodes(tmp_path, [*datasets[1], f"strategy={strategy}", f"epochs={EPOCHS}"])
    log = "\n".join(f"--- node {n} (exit {d['code']}) stdout:\n{d['out'][-1500:]}\n--- stderr:\n{d['err'][-3000:]}"
                    for n, d in enumerate(nodes))
    assert [d["code"] for d in nodes] == [0, 0], log
    # Rank 0, on whichever node the rendezvous put it, wrote the one report and printed the one summary.
    reports = [d["report"] for d in nodes if d["report"] is not None]
    assert len(reports) == 1, log
    assert sum(d["out"].count("accuracy ") for d in nodes) == 1, log
    report = reports[0]
    assert report["world_size"] == sum(PROCS) and len(report["partition"]["rows"]) == sum(PROCS)
    assert report["strategy"] == strategy
    got, want = [e["loss"] for e in report["epochs"]], [e["loss"] for e in reference["epochs"]]
    assert len(got) == EPOCHS
    for epoch, (a, b) in enumerate(zip(got, want, strict=True)):
        assert abs(a - b) <= 1e-5 * abs(b), f"epoch {epoch}: loss {a} at world size 3 != {b} in one process"
