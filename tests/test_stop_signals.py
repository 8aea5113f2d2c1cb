"""A stop signal to netsparse-train (SIGTERM, SIGINT, or Ctrl-C to the whole foreground process group)
stops every rank and switch of the run, writes the report of every completed epoch (marked
``"stopped"``), prints one line and exits 128 + the signal: the CLI itself, in a fresh interpreter,
mid-training.

The tests tag the launcher's environment; the forkserver, the ranks (which get the launcher's
environment) and anything else the run starts inherit it, so "nothing survives" means no process with
the tag is left (the way tests/test_torchrun.py finds its workers)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
from cli import ROOT
from test_torchrun import _tagged_pids

TAG_VAR = "NETSPARSE_TEST_AGENT"  # the variable tests/test_torchrun.py's _tagged_pids looks for


def _kill_tagged(tag: str) -> None:
    for pid in _tagged_pids(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _survivors(tag: str, within_s: float) -> list[int]:
    """The tagged processes still running after waiting up to ``within_s`` for them to go."""
    gone = time.monotonic() + within_s
    while _tagged_pids(tag) and time.monotonic() < gone:
        time.sleep(0.2)
    return _tagged_pids(tag)


def _completed_epochs(epoch_log) -> int:
    try:
        return sum(1 for line in epoch_log.read_text().splitlines() if line.startswith('{"epoch"'))
    except OSError:
        return 0


#: Each case is a whole run (~10 s of CPU, mostly imports). SIGTERM and SIGINT to the launcher take one
#: path (``signals.stop_on_signals``: the signal's number is all that differs), so ``make test`` runs
#: each signal, each fabric, checkpoints on and off and the evaluations once; the soak runs the other
#: combinations.
@pytest.mark.parametrize("how, overrides", [
    ("SIGTERM", ["world_size=4", "checkpoint_every=1", "eval_every=2"]),
    pytest.param("SIGINT", ["world_size=4", "checkpoint_every=1"], marks=pytest.mark.soak),
    ("terminal Ctrl-C", ["world_size=4"]),  # SIGINT to the whole foreground process group; no checkpoints
    pytest.param("SIGTERM", ["fabric=switch", "world_size=4", "cluster.rack_size=2"], marks=pytest.mark.soak),
    ("SIGINT", ["fabric=switch", "world_size=4", "cluster.rack_size=2", "checkpoint_every=1"]),
    # no checkpoints: the report still keeps every epoch
    pytest.param("SIGTERM", ["world_size=2", "eval_every=2"], marks=pytest.mark.soak),
])
def test_stop_signal_stops_every_process_of_the_run(tmp_path, how, overrides):
    tag = uuid.uuid4().hex
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "netsparse_torch.cli.train", "dataset=cora", "epochs=100000",
           f"checkpoint_dir={tmp_path / 'ckpt'}", f"hydra.run.dir={run_dir}", *overrides]
    env = dict(os.environ, PYTHONUNBUFFERED="1", **{TAG_VAR: tag})
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    ranks = 4 if "world_size=4" in overrides else 2
    try:
        deadline = time.monotonic() + 180
        while _completed_epochs(run_dir / "epochs.jsonl") < 3:  # every rank is training: mid-run
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=10)
            time.sleep(0.2)
        assert len(_tagged_pids(tag)) >= ranks + 1  # the launcher's forkserver and the ranks at least
        if how == "terminal Ctrl-C":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        survivors = _survivors(tag, 10)
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_tagged(tag)
    assert survivors == [], f"still running 10 s after {how}: {survivors}"
    signum = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT
    assert proc.returncode == 128 + signum, err[-3000:]
    report = json.loads((run_dir / "report.json").read_text())
    n = len(report["epochs"])
    assert n >= 3 and [e["epoch"] for e in report["epochs"]] == list(range(n))
    name = signal.Signals(signum).name
    assert report["stopped"] == f"{name} at epoch {n}" and report["final"]["epoch"] == n - 1
    assert report["final"]["train_loss"] == report["epochs"][-1]["loss"]
    if "eval_every=2" in overrides:  # the evaluations of the completed epochs, and the best of them
        evaluated, due = [e["epoch"] for e in report["evaluations"]], list(range(1, n, 2))
        # the signal may have come during the evaluation of the last completed epoch
        assert evaluated == due or (due[-1] == n - 1 and evaluated == due[:-1]), (evaluated, n)
        assert report["best"]["epoch"] in evaluated and report["best"]["metric"] == "val_acc"
    bars = re.sub(r"train:[^\r\n]*?\]", "", err)  # tqdm's bar (rank 0's, drawn until it was stopped)
    lines = [ln for ln in re.split(r"[\r\n]", bars) if ln.strip()]
    line = (f"netsparse-train: stopped by {name} at epoch {n}: every rank and switch stopped; the report of the "
            f"{n} completed epochs is in {run_dir / 'report.json'}")
    assert lines == [line], err[-3000:]
    assert (run_dir / "train.log").read_text().splitlines()[-1] == line  # the log reads like the console


# Both agents are torchrun's own code (torch.distributed.run.run), which forwards the SIGTERM to the same
# ranks: the soak runs plain torchrun, whose only difference is its own output after rank 0's line.
@pytest.mark.parametrize("launcher", ["netsparse-torchrun", pytest.param("torchrun", marks=pytest.mark.soak)])
def test_sigterm_under_torchrun_keeps_the_report(tmp_path, launcher):
    """SIGTERM to torchrun's agent (a scheduler's stop): the agent forwards it, rank 0 writes the report of
    its completed epochs and says so in one line; netsparse-torchrun adds nothing to that line."""
    tag = uuid.uuid4().hex
    run_dir = tmp_path / "run"
    agent = [sys.executable, "-m", "netsparse_torch.cli.torchrun"] if launcher == "netsparse-torchrun" \
        else [str(os.path.join(os.path.dirname(sys.executable), "torchrun"))]
    cmd = [*agent, "--standalone", "--nproc-per-node=2", "-m", "netsparse_torch.cli.train", "dataset=cora",
           "epochs=100000", f"hydra.run.dir={run_dir}"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", **{TAG_VAR: tag})
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while _completed_epochs(run_dir / "epochs.jsonl") < 3:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=10)
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_tagged(tag)
    assert (run_dir / "report.json").exists(), f"rc {proc.returncode}\n{err[-3000:]}"
    report = json.loads((run_dir / "report.json").read_text())
    n = len(report["epochs"])
    assert n >= 3 and report["stopped"] == f"SIGTERM at epoch {n}"
    line = (f"netsparse-train: stopped by SIGTERM at epoch {n}: every rank and switch stopped; the report of the "
            f"{n} completed epochs is in {run_dir / 'report.json'}")
    ours = [ln for ln in err.splitlines() if ln.startswith("netsparse-train:")]
    assert ours == [line], err[-3000:]
    if launcher == "netsparse-torchrun":
        assert proc.returncode == 128 + signal.SIGTERM and err.strip().splitlines() == [line], err[-3000:]
