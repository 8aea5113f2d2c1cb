"""Logs that read well anywhere (a terminal, a pipe, a log file) and tracked metrics.

Through a pipe (CI, ``| tee``, a scheduler's log): whole plain lines, one every ``log_every`` epochs and
one for the last, no bar and no carriage return. Through a pseudo-terminal: one live bar with the loss
and epoch time in its postfix. ``logger=csv|tensorboard`` write per-epoch metrics into the run dir.
"""

import csv
import fcntl
import io
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

import pytest
from cli import ROOT, run_cli, train
from cli_here import partition_cli
from conftest import DATA

from netsparse_torch.progress import Progress

KARATE = DATA / "mtx_small" / "karate.mtx"


def test_progress_lines_every_n_and_the_last(tmp_path):
    out = io.StringIO()
    p = Progress(25, "epoch", every=10, stream=out, bar=False)
    for done in range(1, 26):
        p.update(done, f"loss {done}")
    p.close()
    assert out.getvalue() == "epoch 10/25  loss 10\nepoch 20/25  loss 20\nepoch 25/25  loss 25\n"
    quiet = io.StringIO()
    q = Progress(5, "epoch", every=1, stream=quiet, bar=False, enabled=False)  # ranks other than 0
    q.update(5, "x")
    assert quiet.getvalue() == ""
    resumed, log = io.StringIO(), tmp_path / "train.log"
    r = Progress(6, "epoch", every=2, stream=resumed, bar=False, initial=3, log=log)
    r.note("resumed from epoch 3/6")  # on the console as in the log, above the epochs' lines
    for done in (4, 5, 6):
        r.update(done)
    assert resumed.getvalue() == log.read_text() == "resumed from epoch 3/6\nepoch 4/6\nepoch 6/6\n"


def test_piped_training_prints_whole_lines_every_log_every(tmp_path):
    """Also ``logger=tensorboard``: event files that tensorboard reads back."""
    tb = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                             reason="tensorboard is not installed (pip install 'netsparse_torch[tensorboard]')")
    proc, report = train(tmp_path, "world_size=2", "epochs=12", "log_every=5", "logger=tensorboard", timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "\r" not in proc.stdout and "\r" not in proc.stderr  # no bar, nothing overwritten
    epoch_lines = [line for line in proc.stdout.splitlines() if line.startswith("epoch")]
    assert [line.split()[1] for line in epoch_lines] == ["5/12", "10/12", "12/12"]
    for line, index in zip(epoch_lines, (4, 9, 11), strict=True):  # each line is whole: its epoch's loss
        assert f"loss {report['epochs'][index]['loss']:.4f}" in line
    assert any(line.startswith("  accuracy") for line in proc.stdout.splitlines())
    run_dir = tmp_path / "run"
    events = tb.EventAccumulator(str(run_dir))
    events.Reload()
    assert {"loss", "time_s", "feature_bytes", "test_acc"} <= set(events.Tags()["scalars"])
    losses = events.Scalars("loss")
    assert [e.step for e in losses] == list(range(12))
    assert [e.value for e in losses] == pytest.approx([e["loss"] for e in report["epochs"]], rel=1e-6)
    (test_acc,) = events.Scalars("test_acc")  # evaluated once, after the last epoch
    assert test_acc.step == 11 and test_acc.value == pytest.approx(report["final"]["test_acc"], rel=1e-6)
    assert (run_dir / "curves.png").read_bytes().startswith(b"\x89PNG")


def _run_in_pty(cmd: list[str], timeout: float, size: tuple[int, int] | None = (40, 120)) -> tuple[int, str]:
    """Run ``cmd`` with stdout and stderr on a pseudo-terminal of ``size`` (lines, columns; ``None``: the
    0 x 0 of a fresh one); its exit code and everything it wrote."""
    master, slave = pty.openpty()
    if size is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="120")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                proc.kill()
                raise AssertionError(f"no end after {timeout} s: {b''.join(chunks)[-2000:]!r}")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def test_terminal_training_shows_one_bar_with_loss_and_epoch_time(tmp_path):
    """Also ``logger=csv``: one row per epoch with the documented columns."""
    code, out = _run_in_pty([sys.executable, "-m", "netsparse_torch.cli.train", "world_size=2", "epochs=12",
                             "log_every=5", "logger=csv", f"hydra.run.dir={tmp_path}"], timeout=900)
    assert code == 0, out[-2000:]
    assert "\r" in out and "loss=" in out and "epoch_ms=" in out  # the bar redraws itself in place
    assert "epoch  5/12  loss" not in out and "epoch 12/12  loss" not in out  # no plain lines on a terminal
    assert "accuracy" in out
    with open(tmp_path / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["epoch", "loss", "time_s", "feature_bytes", "train_acc", "val_acc", "test_acc",
                             "train_roc_auc", "val_roc_auc", "test_roc_auc"]
    assert [int(r["epoch"]) for r in rows] == list(range(12))
    report = json.loads((tmp_path / "report.json").read_text())
    assert [float(r["loss"]) for r in rows] == [e["loss"] for e in report["epochs"]]
    assert [float(r["time_s"]) for r in rows] == [e["time_s"] for e in report["epochs"]]
    assert sum(int(r["feature_bytes"]) for r in rows) == report["comm"]["feature_bytes_train"]
    assert all(r["test_acc"] == "" for r in rows[:-1])  # evaluated once, after the last epoch
    assert float(rows[-1]["test_acc"]) == report["final"]["test_acc"]
    assert float(rows[-1]["val_acc"]) == report["final"]["val_acc"]


def test_bar_shows_on_a_terminal_that_reports_no_size():
    """A fresh pseudo-terminal says 0 x 0; tqdm would hide its bar there."""
    script = ("from netsparse_torch.progress import Progress\n"
              "with Progress(3, 'epoch') as p:\n"
              "    for i in (1, 2, 3):\n"
              "        p.update(i, 'x', loss='0.5')\n")
    code, out = _run_in_pty([sys.executable, "-c", script], timeout=120, size=None)
    assert code == 0 and "3/3" in out and "loss=0.5" in out and "epoch 3/3  x" not in out


def test_piped_simulation_prints_one_line_per_simulation(tmp_path):
    proc = run_cli("netsparse_torch.cli.simulate", f"matrix={KARATE}", "nodes=4", "rack_size=2", "ablation=true",
                   "plots=false", f"hydra.run.dir={tmp_path}", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "\r" not in proc.stdout and "\r" not in proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("simulation")]
    assert lines == [f"simulation {i}/6  {stage} done" for i, stage in
                     enumerate(["main", "rig", "filter", "coalesce", "concat_nic", "switch"], start=1)]


def test_unknown_logger_is_one_line_before_any_rank(tmp_path):
    proc = run_cli("netsparse_torch.cli.train", "logger=wandb", f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "netsparse-train: error: unknown logger 'wandb'; choose one of none, csv, tensorboard"]


def test_piped_partition_writes_whole_lines(tmp_path):
    """netsparse-partition prints from its own process (no ranks): its main in this process, on a stdout
    that is not a terminal, as a pipe is not."""
    proc = partition_cli(tmp_path / "run", "dataset=cora", "parts=2", f"out={tmp_path / 'shards'}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "\r" not in proc.stdout and "\r" not in proc.stderr
    assert "shards written 2/2  part 1: 1,354 rows" in proc.stdout.splitlines()  # rows: array_split of 2,708
