"""A long simulation says how far it has got and stops on Ctrl-C: the C++ loop calls ``progress(read, total)``
every ``progress_events`` events with the GIL (hw_models.simulator.simulate), and ``netsparse-simulate`` shows
it as a bar or as lines (netsparse_torch.run.simulation.with_progress)."""

from __future__ import annotations

import functools
import signal

import pytest

from hw_models import analogs, definitions
from hw_models import simulator as sim
from hw_models.params import HardwareParams

HW = HardwareParams().replace(cluster={"nodes": 8, "rack_size": 4})


@pytest.fixture(scope="module")
def case():
    a = analogs.generate("europe", 0.002)
    return a, definitions.workload(a, 8)


@pytest.fixture
def often(monkeypatch):
    """The binding with a progress call every 200 events (a small graph has a few thousand)."""
    monkeypatch.setattr(sim._sim, "simulate", functools.partial(sim._sim.simulate, progress_events=200))


def test_progress_counts_the_idxs_read(case, often):
    a, w = case
    calls = []
    run = sim.simulate(a, w, HW, 16, progress=lambda read, total: calls.append((read, total)))
    assert len(calls) >= 5 and {t for _, t in calls} == {a.nnz}  # every idx of the matrix is read once
    reads = [r for r, _ in calls]
    assert reads == sorted(reads) and 0 < reads[0] and reads[-1] <= a.nnz
    assert run.node_time_s.tolist() == sim.simulate(a, w, HW, 16).node_time_s.tolist()  # watching changes nothing


def test_what_progress_raises_stops_the_run(case, often):
    a, w = case

    def stop(read, total):
        raise RuntimeError(f"stop at {read} of {total}")

    with pytest.raises(RuntimeError, match=rf"stop at \d+ of {a.nnz}"):
        sim.simulate(a, w, HW, 16, progress=stop)

    with pytest.raises(KeyboardInterrupt):  # a Ctrl-C that arrives while the loop runs, seen at the next call
        sim.simulate(a, w, HW, 16, progress=lambda read, total: signal.raise_signal(signal.SIGINT))
    assert sim.simulate(a, w, HW, 16).counters["events"] > 0  # and the next run is whole


def test_the_cli_shows_a_line_every_ten_percent(capsys):
    from netsparse_torch.progress import with_progress

    def fake(*args, progress, **kwargs):
        for read in (5, 27, 31, 64, 100):
            progress(read, 100)
        return "done"

    assert with_progress(fake)(1, 2, key=3) == "done"
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"simulation: idxs read, % {p:3d}/100" for p in range(10, 101, 10)]


def test_ctrl_c_stops_netsparse_simulate_at_its_next_progress_line(tmp_path):
    """The console script as a user runs it: a SIGINT after its first progress line ends it within seconds, in
    one line and exit 130, with no report (before, the C++ loop held on to the end of the simulation)."""
    import subprocess
    import sys
    import time

    from cli import ROOT

    report = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "netsparse_torch.cli.simulate", "matrix=paper:europe@0.1", "plots=false",
           f"report_path={report}", f"hydra.run.dir={tmp_path}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        while line and not line.startswith("simulation: idxs read"):
            line = proc.stdout.readline()
        assert line, proc.stderr.read()[-2000:]
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - t0
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert [ln for ln in err.splitlines() if ln.strip()] == [
        "netsparse-simulate: stopped by SIGINT (Ctrl-C)"]
    assert not report.exists() and stopped_in < 5, stopped_in
