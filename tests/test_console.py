"""A console that shows the run: progress lines with the latest validation metric,
the last epoch before an early stop, "resumed from epoch N" (tests/test_run_control.py), Hydra's
``train.log`` with the console's lines, and under torchrun one error line for the whole job."""

import io
import shutil

import pytest
from cli import train
from test_torchrun import datasets, two_nodes  # noqa: F401 (datasets: the module-scoped fixture)

from netsparse_torch.progress import Progress, echo


def test_progress_last_step_of_an_early_stop_and_the_log_file(tmp_path):
    log = tmp_path / "train.log"
    out = io.StringIO()
    p = Progress(100, "epoch", every=10, stream=out, bar=False, log=log)
    p.note("resumed from epoch 3/100")
    for done in range(4, 13):
        p.update(done, f"loss {done}", last=done == 12)  # patience ends the loop after step 12
    p.close()
    assert out.getvalue() == "resumed from epoch 3/100\nepoch  10/100  loss 10\nepoch  12/100  loss 12\n"
    assert log.read_text() == out.getvalue()
    # On a terminal the bar shows the steps; the log file still gets the plain lines.
    bar_out, bar_log = io.StringIO(), tmp_path / "bar.log"
    with Progress(20, "epoch", every=10, stream=bar_out, bar=True, log=bar_log) as b:
        for done in range(1, 21):
            b.update(done, f"loss {done}", loss=str(done))
    assert bar_log.read_text() == "epoch 10/20  loss 10\nepoch 20/20  loss 20\n"
    assert "epoch 10/20  loss 10" not in bar_out.getvalue()
    echo("summary", bar_log, stream=io.StringIO())
    assert bar_log.read_text().endswith("epoch 20/20  loss 20\nsummary\n")


@pytest.mark.parametrize(("unit", "rate"), [("epoch", "epoch/s"), ("%", "%/s")])
def test_the_bars_rate_names_its_step(unit, rate):
    """The bar's rate is in the loop's own steps (a simulation's bar counts percent), not tqdm's "it"."""
    out = io.StringIO()
    with Progress(10, "x", stream=out, bar=True, unit=unit) as b:
        for done in range(1, 11):
            b.update(done)
    assert rate in out.getvalue() and "it/s" not in out.getvalue()


def test_early_stop_shows_its_last_epoch_with_the_validation_metric_and_train_log_is_the_console(tmp_path):
    proc, report = train(tmp_path, "world_size=2", "epochs=200", "eval_every=1", "patience=3", "lr=0.5",
                         "log_every=50", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    n = len(report["epochs"])
    assert n < 50 and report["early_stop"]["stopped_at_epoch"] == n - 1  # stopped before any due line
    epoch_lines = [line for line in proc.stdout.splitlines() if line.startswith("epoch")]
    assert len(epoch_lines) == 1, proc.stdout  # the last epoch's line, though n is not a multiple of 50
    last = report["evaluations"][-1]
    assert epoch_lines[0].startswith(f"epoch {n:3d}/200  loss {report['epochs'][-1]['loss']:.4f}  "
                                     f"val_acc {last['val_acc']:.4f}  time")
    log = (tmp_path / "run" / "train.log").read_text().splitlines()
    assert log == proc.stdout.splitlines() and any(line.startswith("  accuracy") for line in log)
    assert not (tmp_path / "run" / "epochs.jsonl").exists()  # the report holds every epoch


def _one_error_line(nodes: list[dict]) -> str:
    lines = [ln for d in nodes for ln in d["err"].splitlines() if ln.startswith("netsparse-train:")]
    assert len(lines) == 1, "\n".join(f"--- node {n}:\n{d['err'][-3000:]}" for n, d in enumerate(nodes))
    return lines[0]


# make test has both halves: every rank's bad input is one line in test_netsparse_torchrun_failure_is_the_ranks_one_line
# (partition=foo on both ranks), and one line across two nodes in test_torchrun_one_failing_rank_is_the_one_error_line.
@pytest.mark.soak
def test_torchrun_bad_input_on_every_rank_is_one_error_line(tmp_path):
    nodes = two_nodes(tmp_path, ["dataset=mtx", f"dataset.path={tmp_path / 'absent.mtx'}", "epochs=1"])
    assert all(d["code"] != 0 for d in nodes)
    assert _one_error_line(nodes) == f"netsparse-train: error: dataset file not found: {tmp_path / 'absent.mtx'}"


def test_torchrun_one_failing_rank_is_the_one_error_line(tmp_path, datasets):  # noqa: F811
    """Rank 1's shard is corrupt: its error is the line; the ranks that lose contact with it say nothing."""
    shards = tmp_path / "shards"
    shutil.copytree(datasets[1][1].split("=", 1)[1], shards)
    x = shards / "part-00001" / "x.npy"
    raw = bytearray(x.read_bytes())
    raw[-1] ^= 0xFF
    x.write_bytes(bytes(raw))
    nodes = two_nodes(tmp_path / "run", ["dataset=partitioned", f"dataset.path={shards}", "epochs=1"])
    assert any(d["code"] != 0 for d in nodes)
    line = _one_error_line(nodes)
    assert "checksum mismatch" in line and "part-00001/x.npy" in line, line


def test_netsparse_torchrun_failure_is_the_ranks_one_line(tmp_path):
    """torchrun's agent follows a failed worker with its own traceback and table; netsparse-torchrun (the
    same arguments) leaves the ranks' one line as all of stderr, with their exit code."""
    import os
    import subprocess
    import sys

    from cli import ROOT

    cmd = [sys.executable, "-m", "netsparse_torch.cli.torchrun", "--standalone", "--nproc-per-node=2", "-m",
           "netsparse_torch.cli.train", "partition=foo", f"hydra.run.dir={tmp_path / 'run'}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "netsparse-train: error: unknown partition 'foo'; choose one of rows, nnz, metis"], proc.stderr[-3000:]
