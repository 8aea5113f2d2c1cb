"""Relative paths on a Hydra CLI's command line are relative to the directory the command ran in, as
Hydra's ``to_absolute_path`` has them, also when Hydra moves the job into its run directory
(``hydra.job.chdir=true``, Hydra's default before 1.2) or a launcher starts it elsewhere. Before, such a
run said "dataset file not found: karate.mtx" for a file beside the user, and wrote ``report_path``,
``out`` and ``checkpoint_dir`` inside the run directory."""

from __future__ import annotations

import json
import shutil

import pytest
from cli_here import _here, partition_cli, train_cli
from conftest import DATA

from netsparse_torch.cli import simulate

KARATE = DATA / "mtx_small" / "karate.mtx"


@pytest.fixture
def beside_the_user(tmp_path, monkeypatch):
    """A working directory holding karate.mtx, as the user's shell would be."""
    shutil.copy(KARATE, tmp_path / "karate.mtx")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_partition_and_train_read_and_write_where_the_command_ran(beside_the_user):
    here = beside_the_user
    done = partition_cli(here / "prun", "dataset=mtx", "dataset.path=karate.mtx", "out=parts", "hydra.job.chdir=true")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (here / "parts" / "manifest.json").is_file()
    assert not (here / "prun" / "parts").exists()

    done = train_cli(here / "trun", "dataset=partitioned", "dataset.path=parts", "epochs=2", "checkpoint_every=1",
                     "checkpoint_dir=ckpt", "report_path=rep.json", "hydra.job.chdir=true")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((here / "rep.json").read_text())
    assert report["config"]["dataset"]["path"] == str(here / "parts")  # the report names the folder it read
    assert any((here / "ckpt").iterdir())
    assert not (here / "trun" / "rep.json").exists() and not (here / "trun" / "ckpt").exists()
    assert f"{here / 'rep.json'}" in done.stdout


def test_simulate_reads_its_matrix_and_writes_its_report_where_the_command_ran(beside_the_user):
    here = beside_the_user
    done = _here("netsparse-simulate", lambda _: simulate.main(),
                 ["matrix=karate.mtx", "nodes=4", "rack_size=2", "plots=false", "report_path=sim.json",
                  "hydra.job.chdir=true", f"hydra.run.dir={here / 'run'}"])
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((here / "sim.json").read_text())
    assert report["config"]["matrix"] == str(here / "karate.mtx")
    assert not (here / "run" / "sim.json").exists()


def test_specs_that_are_not_files_stay_as_given():
    from netsparse_torch.run.simulation import is_matrix_file

    assert [is_matrix_file(s) for s in ("paper:europe@0.01", "synthetic", "synthetic:road", None, "g.mtx")] == \
        [False, False, False, False, True]
