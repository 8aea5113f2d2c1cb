"""Sweeps on Hydra's launchers: joblib (parallel here) and submitit (Slurm, tested with its local
executor) run netsparse-simulate and netsparse-train multiruns; collect tabulates their folders with a
column per swept key; a sweep that would not fit in memory is one line before any job starts; a failed
job is one line naming it; parallel jobs generate a cached analog once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli import ROOT, run_cli
from conftest import DATA

from hw_models import analogs
from netsparse_torch.cli import collect as collect_cli
from netsparse_torch.errors import ConfigError
from netsparse_torch.report import collect
from netsparse_torch.run import sweep

KARATE = DATA / "mtx_small" / "karate.mtx"
SMALL = ["nodes=4", "rack_size=2", "plots=false"]


def _lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip()]


def _table(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return rows[0], rows[2:]


@pytest.mark.parametrize("launcher", [
    ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    # the resources of configs/hydra/launcher/slurm.yaml that submitit's local executor takes too
    ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10", "hydra.launcher.cpus_per_task=1",
     "hydra.launcher.mem_gb=8"],
], ids=["joblib", "submitit_local"])
def test_a_launcher_runs_every_point_and_collect_tabulates_the_swept_keys(tmp_path, launcher, capsys):
    """Also: each job's report names the sweep's command line, though a submitit job runs as submitit's
    own command and a joblib job in one of loky's workers."""
    # two points: the matrix is an identity column of collect's tables, rig_units a swept column of its own
    args = ["-m", *launcher, f"matrix={KARATE}", "rig_units=4,8", *SMALL, f"hydra.sweep.dir={tmp_path}"]
    proc = run_cli("netsparse_torch.cli.simulate", *args, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = sorted(tmp_path.glob("*/report.json"))
    assert len(written) == 2
    for path in written:
        assert json.loads(path.read_text())["provenance"]["command"] == ["simulate.py", *args], path
    reports = collect.load_reports(tmp_path)
    assert sorted((r["matrix"]["name"], r["hardware"]["snic"]["rig_units"]) for r in reports) == \
        [("karate", 4), ("karate", 8)]
    head, rows = _table(collect.markdown("sweep", reports))
    assert head[:5] == ["matrix", "nodes", "topology", "K", "rig_units"]
    for row, r in zip(rows, reports, strict=True):
        assert row[0] == r["matrix"]["name"] and row[4] == str(r["hardware"]["snic"]["rig_units"])
        assert row[-1] == r["_file"] and (tmp_path / f"{r['_file']}.json").is_file()  # <job>/report
    capsys.readouterr()
    assert collect_cli.main(["speedup", str(tmp_path)]) == 0  # its CLI, in this process
    assert "| rig_units |" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("launcher", [["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
                                      ["hydra/launcher=submitit_local"]], ids=["joblib", "submitit_local"])
def test_a_failed_job_is_one_line_naming_it(tmp_path, launcher):
    proc = run_cli("netsparse_torch.cli.simulate", "-m", *launcher, "matrix=/nonexistent/a.mtx,/nonexistent/b.mtx",
                   "plots=false", f"hydra.sweep.dir={tmp_path}", timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = _lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("netsparse-simulate: error: job "), proc.stderr[-3000:]
    assert "matrix=/nonexistent/" in lines[0] and "file not found" in lines[0]


# -- memory ------------------------------------------------------------------------------------------
def _huge_mtx(path: Path) -> Path:
    """A Matrix Market file whose header claims 10^11 nonzeros: a run of it would need ~400 GB (if the
    check let one start, it would fail on the missing entries within a second)."""
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n1000000000 1000000000 100000000000\n1 1\n")
    return path


@pytest.mark.parametrize("launcher, message", [
    (["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
     "hydra/launcher=joblib with hydra.launcher.n_jobs=2 runs 2 jobs at once"),
    (["hydra/launcher=submitit_local"], "hydra/launcher=submitit_local runs 2 jobs at once"),
    (["hydra/launcher=slurm", "hydra.launcher.mem_gb=8"], "hydra.launcher.mem_gb=8 is below the ~"),
], ids=["joblib", "submitit_local", "slurm"])
def test_a_sweep_that_does_not_fit_in_memory_is_one_line(tmp_path, launcher, message):
    a, b = _huge_mtx(tmp_path / "a.mtx"), _huge_mtx(tmp_path / "b.mtx")
    proc = run_cli("netsparse_torch.cli.simulate", "-m", *launcher, f"matrix={a},{b}",
                   f"hydra.sweep.dir={tmp_path / 'sweep'}", timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = _lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"netsparse-simulate: error: {message}"), proc.stderr[-3000:]
    assert not list((tmp_path / "sweep").glob("*/report.json"))  # no job started


def test_the_parallelism_that_fits_is_named():
    gib = sweep.GIB
    peaks = [("a", 3 * gib), ("b", 3 * gib), ("c", 1 * gib)]
    sweep.check_parallel(peaks, 3, 7 * gib, "x", "n={n}")  # 7 GiB: all three fit
    with pytest.raises(ConfigError, match=r"runs 3 jobs at once, estimated at 7.0 GiB together.*6.0 GiB available: "
                                          r"n=2$"):
        sweep.check_parallel(peaks, 3, 6 * gib, "x", "n={n}")  # 7 GiB at once; the two largest fit
    with pytest.raises(ConfigError, match="even one of them does not fit"):
        sweep.check_parallel(peaks, 2, 2 * gib, "x", "n={n}")
    sweep.check_slurm(peaks, 4)
    with pytest.raises(ConfigError, match="set hydra.launcher.mem_gb=4 or more"):
        sweep.check_slurm(peaks, 3)


# Measured peak RSS of full-size runs, GiB (docs/benchmarks.md, "The paper-scale model", its table of the five analogs).
MEASURED_PEAK_GIB = {"arabic": 3.91, "europe": 2.61, "queen": 2.16, "stokes": 2.49, "uk": 2.55}


def test_the_estimate_is_at_or_above_every_measured_full_size_peak():
    for name, gib in MEASURED_PEAK_GIB.items():
        m = analogs.PAPER_MATRICES[name]
        assert sweep.peak_bytes(m.rows, m.nnz) >= gib * sweep.GIB, name
        assert sweep.peak_bytes(m.rows, m.nnz) <= 1.3 * gib * sweep.GIB, name  # and not far above
    assert sweep.matrix_size({"matrix": "paper:europe@0.01"}) == (analogs.scaled_rows(analogs.PAPER_MATRICES["europe"],
                                                                                     0.01),
                                                                  int(analogs.PAPER_MATRICES["europe"].nnz * 0.01))
    assert sweep.matrix_size({"matrix": str(KARATE)}) == (34, 156)  # symmetric: both triangles
    assert sweep.matrix_size({"matrix": "/nonexistent.mtx"}) is None


# -- the Slurm config --------------------------------------------------------------------------------
class _Submitted(Exception):
    """Stops the Slurm executor at the sbatch file it would submit."""


def test_the_slurm_config_reaches_sbatch(tmp_path, monkeypatch):
    """configs/hydra/launcher/slurm.yaml through hydra-submitit-launcher's SlurmLauncher and submitit's
    Slurm executor, up to the sbatch file (no Slurm here: a stand-in srun, and the submission stopped)."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate
    from submitit.slurm import slurm

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text("#!/bin/sh\nexit 0\n")
    (fake / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    scripts = []

    def capture(self, command, uid):
        scripts.append(slurm._make_sbatch_string(command=command, folder=self.folder, **self.parameters))
        raise _Submitted

    monkeypatch.setattr(slurm.SlurmExecutor, "_make_submission_file_text", capture)
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("simulate", overrides=["hydra/launcher=slurm", "hydra.launcher.partition=research",
                                             f"hydra.sweep.dir={tmp_path / 'sweep'}"], return_hydra_config=True)
    launcher = instantiate(cfg.hydra.launcher)
    assert type(launcher).__name__ == "SlurmLauncher"
    launcher.setup(hydra_context=None, task_function=print, config=cfg)
    with pytest.raises(_Submitted):
        launcher.launch([["matrix=paper:arabic"], ["matrix=paper:uk"]], initial_job_idx=0)
    (script,) = scripts
    for flag in ("#SBATCH --partition=research", "#SBATCH --mem=8GB", "#SBATCH --cpus-per-task=2",
                 "#SBATCH --time=60", "#SBATCH --ntasks-per-node=1", "#SBATCH --nodes=1",
                 "#SBATCH --array=0-1%2"):  # array_parallelism 64, at most the sweep's 2 jobs
        assert flag in script, flag


# -- training multiruns ------------------------------------------------------------------------------
# submitit_local's training job (~30 s: submitit's controller, the job's interpreter and its forkserver)
# runs in make soak; make test keeps a training job's ranks in a launcher's job process (joblib, whose
# loky start method is the one start_forkserver must undo) and submitit's jobs of a Hydra CLI (the
# simulate sweeps above).
@pytest.mark.parametrize("launcher", [
    pytest.param(["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], id="joblib"),
    pytest.param(["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10"], id="submitit_local",
                 marks=pytest.mark.soak),
])
def test_a_training_sweep_runs_on_a_launcher(tmp_path, launcher):
    """A joblib worker (another process, under loky's start method, which the standard library's forked
    ranks do not know) and a submitit job each start the ranks of their training job."""
    proc = run_cli("netsparse_torch.cli.train", "-m", *launcher, "strategy=su", "world_size=1", "epochs=1",
                   "eval_every=0", f"hydra.sweep.dir={tmp_path}", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (report,) = [json.loads(p.read_text()) for p in tmp_path.glob("*/report.json")]
    assert report["strategy"] == "su" and len(report["epochs"]) == 1


def test_the_training_cli_exits_after_the_executors_shut_down():
    """netsparse-train's fast exit runs what a normal exit runs before the exit handlers: the executors'
    shutdowns (a joblib launcher's workers), which the handlers would otherwise wait on for 300 s."""
    code = ("import threading\nfrom netsparse_torch.cli.train import exit_now\n"
            "threading._register_atexit(lambda: print('executors shut down', flush=True))\nexit_now(0)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "executors shut down\n", proc.stderr[-2000:]


# -- shared caches -----------------------------------------------------------------------------------
def test_parallel_jobs_generate_a_cached_analog_once(tmp_path):
    """Three processes load one analog through one cache at once: one generates it, the others read its
    files; no temporary file is left."""
    log, go = tmp_path / "generated", tmp_path / "go"
    code = textwrap.dedent(f"""
        import os, sys, time
        from hw_models import analogs
        real = analogs.generate
        def counted(*a, **k):
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            return real(*a, **k)
        analogs.generate = counted
        while not os.path.exists({str(go)!r}):
            time.sleep(0.01)
        p, _ = analogs.load("paper:uk@0.02", cache_dir={str(tmp_path / 'cache')!r})
        print(p.nnz, int(p.indices[-1]), int(p.indptr[-1]))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert len({o[0] for o in outs}) == 1  # the same matrix everywhere
    assert len(log.read_text().splitlines()) == 1
    assert not list((tmp_path / "cache").glob("*.tmp"))


def test_a_training_sweep_does_not_write_one_jobs_report_over_anothers(tmp_path):
    """``report_path`` names one file for every job of a sweep: the second job wrote over the first's report
    without a word (netsparse-simulate's jobs already refused)."""
    from cli_here import error_line, train_cli

    done = train_cli(tmp_path / "run", "-m", "epochs=1,2", "world_size=1", "eval_every=0",
                     f"report_path={tmp_path / 'rep.json'}", f"hydra.sweep.dir={tmp_path / 'sweep'}")
    line = error_line(done)
    assert "job 1 (" in line and "holds the report of another run (config.epochs: 2 here, 1 there)" in line, line
    assert json.loads((tmp_path / "rep.json").read_text())["config"]["epochs"] == 1  # job 0's report is kept


def _another_jobs_report(path):
    path.write_text(json.dumps({"config": {"epochs": 7}, "hardware": {}}))


def test_a_report_another_job_wrote_meanwhile_is_not_written_over(tmp_path):
    """A parallel launcher's jobs end in any order: each looks again just before it writes ``report_path``
    (another job's report written while this one trained was replaced). Training and simulation."""
    from unittest import mock

    from cli_here import _here, error_line, train_cli

    from netsparse_torch.cli import simulate
    from netsparse_torch.run import job, simulation

    target = tmp_path / "rep.json"
    launch, model = job.launch, simulation.model
    with mock.patch.object(job, "launch", lambda *a, **k: (launch(*a, **k), _another_jobs_report(target))[0]):
        line = error_line(train_cli(tmp_path / "run", "-m", "epochs=1", "world_size=1", "eval_every=0",
                                    f"report_path={target}", f"hydra.sweep.dir={tmp_path / 'train'}"))
    assert "holds the report of another run (" in line, line
    assert json.loads(target.read_text())["config"] == {"epochs": 7}  # the other job's report, kept
    target.unlink()
    with mock.patch.object(simulation, "model", lambda *a, **k: (model(*a, **k), _another_jobs_report(target))[0]):
        done = _here("netsparse-simulate", lambda _: simulate.main(),
                     ["-m", f"matrix={KARATE}", "nodes=4", "rack_size=2", "plots=false",
                      f"report_path={target}", f"hydra.sweep.dir={tmp_path / 'sim'}"])
    assert "holds the report of another run" in error_line(done, "netsparse-simulate")
    assert json.loads(target.read_text())["config"] == {"epochs": 7}  # the other job's report, kept
