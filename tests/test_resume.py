"""A resume keeps the report true: it refuses a run that would make the report lie (no epoch left to
train, another strategy, fabric or cluster) in one line before any rank starts, overwriting nothing;
and a run stopped at epoch M and resumed to N reports, counter for counter, what the run of N epochs
reports (timings aside), with the epochs of each attempt."""

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch
from cli import train_here
from cli_here import error_line, train_cli
from test_run_control import _composed

from netsparse_torch import checkpoint
from netsparse_torch.errors import ConfigError

EPOCHS, STOP_AT = 6, 4
RUN = ["dataset=cora", "world_size=2", "checkpoint_every=2", "logger=csv", "eval_every=2"]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory) -> Path:
    """The run directory of a 4-epoch run with checkpoints, metrics, curves and a report."""
    run = tmp_path_factory.mktemp("stopped") / "run"
    done = train_cli(run, *RUN, f"epochs={STOP_AT}")
    assert done.returncode == 0, done.stderr[-2000:]
    return run


def _files(run: Path) -> dict[str, bytes]:
    """Every file the run wrote (Hydra's own record of the last command and its log aside)."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.parts[len(run.parts)] != ".hydra" and p.name != "train.log"}


@pytest.mark.parametrize("override, words", [
    (f"epochs={STOP_AT}", [f"holds {STOP_AT} completed epochs", f"epochs={STOP_AT} leaves none to train"]),
    ("strategy=su", ["another run", "strategy.name: 'sa' -> 'su'"]),
])
def test_a_resume_that_would_make_the_report_lie_is_one_line_and_overwrites_nothing(stopped_run, override, words):
    before = _files(stopped_run)
    assert {"report.json", "metrics.csv", "curves.png", "checkpoints/run.json"} <= set(before)
    done = train_cli(stopped_run, "dataset=cora", "world_size=2", "epochs=10", "checkpoint_every=2", "logger=csv",
                     "resume=true", override)
    line = error_line(done)
    assert all(w in line for w in words), line
    assert not done.ranks_started
    assert _files(stopped_run) == before


@pytest.mark.parametrize("override, key", [
    ("epochs=1", "leaves none to train"),
    ("fabric=switch", "fabric.name: 'collective' -> 'switch'"),
    ("cluster=leafspine128", "cluster.name: 'none' -> 'leafspine128'"),
    ("+hw.snic.rig_units=16", "hw.snic.rig_units: '(unset)' -> 16"),
])
def test_every_run_defining_change_is_refused_before_any_rank_starts(stopped_run, override, key):
    cfg = _composed("dataset=cora", "world_size=2", "epochs=10", "resume=true",
                    f"checkpoint_dir={stopped_run / 'checkpoints'}", override)
    with pytest.raises(ConfigError, match="resume=true") as err:
        checkpoint.prepare(cfg, None)
    assert key in str(err.value)


def _without_timings(report: dict) -> tuple[dict, set[str]]:
    """``report`` less what an attempt measures or names for itself, and the paths of what was left out:
    the timings, the attempts (what differs by design), the run's own config, provenance and process
    facts, and the addresses of the switches (fresh ones after a resume)."""
    out = json.loads(json.dumps(report))
    left = {"wall_s", "epoch_time_s", "attempts", "config", "provenance"}
    for key in left:
        out.pop(key, None)
    for e in out["epochs"]:
        e.pop("time_s")
    left.add("epochs[].time_s")
    for r in out["per_rank"]:
        r.pop("peak_rss_bytes")
    left.add("per_rank[].peak_rss_bytes")
    for s in out.get("switches", []):
        s.pop("address")
        left.add("switches[].address")
    for stats in [out.get("netsparse", {}), *(s.get("staging", {}) for s in out["strategy_stats"])]:
        for key in [k for k in stats if k.endswith("_s")]:
            stats.pop(key)
            left.add(f"staging {key}")
    return out, left


def _without_rounds(report: dict) -> None:
    """fabric=switch: the poll rounds of the RIG kernels and the all-reduce that ends each round, which
    count wall-clock intervals (fabric/switched.py ``run_kernel``), not what the epochs moved."""
    for stats in [report["netsparse"], *report["netsparse"]["layers"].values(),
                  *(layer for s in report["strategy_stats"] for layer in s["layers"].values())]:
        stats.pop("rounds", None)
    report["comm"]["collectives"].pop("allreduce")


def _metrics(run: Path) -> list[dict]:
    with open(run / "metrics.csv", newline="") as f:
        return [{k: v for k, v in row.items() if k != "time_s"} for row in csv.DictReader(f)]


@pytest.mark.parametrize("overrides", [
    ["strategy=netsparse", "eval_every=2", "+strategy.options.stage=true"],  # RIG counters, staging copies
    ["strategy=twoface"],
    ["fabric=switch", "cluster.rack_size=1", "fabric.cache=false"],  # two ToRs and a spine
], ids=["netsparse", "twoface", "switch"])
def test_a_resumed_run_reports_what_the_uninterrupted_run_reports(tmp_path, overrides):
    common = ["dataset=cora", "world_size=2", "checkpoint_every=2", *overrides]
    whole, _ = train_here(tmp_path / "whole", *common, f"epochs={EPOCHS}", f"checkpoint_dir={tmp_path / 'a'}")
    ckpt = f"checkpoint_dir={tmp_path / 'b'}"
    first, _ = train_here(tmp_path / "first", *common, f"epochs={STOP_AT}", ckpt)
    resumed, _ = train_here(tmp_path / "resumed", *common, f"epochs={EPOCHS}", ckpt, "resume=true")
    assert resumed["attempts"] == [
        {"epochs": [0, STOP_AT], "resumed_from": None, "restart": 0, "redone": None},
        {"epochs": [STOP_AT, EPOCHS], "resumed_from": STOP_AT, "restart": 0, "redone": None}]
    assert whole["attempts"] == [{"epochs": [0, EPOCHS], "resumed_from": None, "restart": 0, "redone": None}]
    got, left = _without_timings(resumed)
    want, _ = _without_timings(whole)
    if "fabric=switch" in overrides:  # its RIG kernels poll the switches in rounds of poll_s (wall clock)
        for r in (got, want):
            _without_rounds(r)
    assert got == want
    assert left <= {"wall_s", "epoch_time_s", "attempts", "config", "provenance", "epochs[].time_s",
                    "per_rank[].peak_rss_bytes", "switches[].address", "staging staging_to_host_s",
                    "staging staging_to_device_s"}
    assert resumed["epochs"][:STOP_AT] == first["epochs"]  # the first attempt's epochs, its timings too


def test_a_resumed_runs_metrics_hold_every_epoch(tmp_path, stopped_run):
    resumed, whole = tmp_path / "resumed", tmp_path / "whole"
    shutil.copytree(stopped_run, resumed)
    for run, extra in ((resumed, ["resume=true"]), (whole, [])):
        done = train_cli(run, *RUN, f"epochs={EPOCHS}", *extra)
        assert done.returncode == 0, done.stderr[-2000:]
    assert _metrics(resumed) == _metrics(whole)
    assert [int(row["epoch"]) for row in _metrics(whole)] == list(range(EPOCHS))


def test_latest_is_the_newest_checkpoint_every_rank_wrote(tmp_path):
    """A run stopped while its ranks saved leaves one rank a checkpoint ahead: the resume takes the one
    before, which that rank still keeps; each rank keeps two, and drops the one ahead when it resumes."""
    cfg = {"dataset": {"name": "cora"}, "world_size": 2, "epochs": 9}
    for done in (2, 4, 6):
        for rank in (0, 1):
            if (done, rank) != (6, 1):  # rank 1 was stopped before it wrote its 6-epoch file
                checkpoint.save(tmp_path, rank, 2, cfg, {"epochs_done": done, "counters": {}})
    names = sorted(p.name for p in tmp_path.glob("*.pt"))
    assert names == ["rank0-of-2.4epochs.pt", "rank0-of-2.6epochs.pt", "rank1-of-2.2epochs.pt",
                     "rank1-of-2.4epochs.pt"]
    assert checkpoint.latest(tmp_path, 2) == 4
    state = checkpoint.load(tmp_path, 0, 2, cfg)
    assert state["epochs_done"] == 4
    assert not (tmp_path / "rank0-of-2.6epochs.pt").exists()
    assert checkpoint.latest(tmp_path / "none", 2) is None
    torch.save({}, tmp_path / "rank0-of-3.2epochs.pt")  # another world size's files do not count
    assert checkpoint.latest(tmp_path, 2) == 4
