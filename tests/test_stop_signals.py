"""A stop signal to netsparse-train (SIGTERM, SIGINT, or Ctrl-C to the whole foreground process group)
stops every rank and switch of the run, prints one line and exits 128 + the signal: the CLI itself,
in a fresh interpreter, mid-training.

The tests tag the launcher's environment; the forkserver, the ranks (which get the launcher's
environment) and anything else the run starts inherit it, so "nothing survives" means no process with
the tag is left (the way tests/test_torchrun.py finds its workers)."""

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


@pytest.mark.parametrize("how, overrides", [
    ("SIGTERM", ["world_size=4"]),
    ("SIGINT", ["world_size=4"]),
    ("terminal Ctrl-C", ["world_size=4"]),  # SIGINT to the whole foreground process group
    ("SIGTERM", ["fabric=switch", "world_size=4", "cluster.rack_size=2"]),
    ("SIGINT", ["fabric=switch", "world_size=4", "cluster.rack_size=2"]),
])
def test_stop_signal_stops_every_process_of_the_run(tmp_path, how, overrides):
    tag = uuid.uuid4().hex
    ckpt = tmp_path / "ckpt"
    cmd = [sys.executable, "-m", "netsparse_torch.train", "dataset=cora", "epochs=100000", "checkpoint_every=1",
           f"checkpoint_dir={ckpt}", f"hydra.run.dir={tmp_path / 'run'}", *overrides]
    env = dict(os.environ, PYTHONUNBUFFERED="1", **{TAG_VAR: tag})
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (ckpt / "rank3-of-4.pt").exists():  # every rank is training: mid-run
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=10)
            time.sleep(0.2)
        assert len(_tagged_pids(tag)) >= 5  # the launcher's forkserver and the four ranks at least
        if how == "terminal Ctrl-C":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        gone = time.monotonic() + 10
        while _tagged_pids(tag) and time.monotonic() < gone:
            time.sleep(0.2)
        survivors = _tagged_pids(tag)
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_tagged(tag)
    assert survivors == [], f"still running 10 s after {how}: {survivors}"
    signum = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT
    assert proc.returncode == 128 + signum, err[-3000:]
    bars = re.sub(r"train:[^\r\n]*?\]", "", err)  # tqdm's bar (rank 0's, drawn until it was stopped)
    lines = [ln for ln in re.split(r"[\r\n]", bars) if ln.strip()]
    assert lines == [f"netsparse-train: stopped by {signal.Signals(signum).name}: every rank and switch "
                     "stopped, no report written"], err[-3000:]
