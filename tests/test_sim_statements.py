"""The simulator's report says exactly what was simulated: its name carries what makes the run
different (or the run refuses to overwrite another's), a rerun of a sweep skips its finished points,
a key that does not apply to the run is refused in one line, the summary lists the hardware that differs
from Table 5, --help lists the simulator's groups, and the hardware can be a YAML file."""

from __future__ import annotations

import json

import pytest
from cli import ROOT, run_cli
from conftest import DATA
from hydra import compose, initialize_config_dir

from hw_models.params import HardwareParams
from netsparse_torch.errors import ConfigError
from netsparse_torch.report import collect
from netsparse_torch.report.identity import override_suffix
from netsparse_torch.run import simulation as simulate

KARATE = DATA / "mtx_small" / "karate.mtx"
SMALL = [f"matrix={KARATE}", "nodes=4", "rack_size=2", "plots=false"]


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="simulate", overrides=list(overrides))


def _one_line(proc) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


# -- names, overwrites, reruns -----------------------------------------------------------------------
def test_a_swept_hardware_key_gives_each_run_its_own_report(tmp_path):
    """A swept +hw.* key must not make every run write the same file (collect would show one row)."""
    proc = run_cli("netsparse_torch.cli.simulate", "-m", *SMALL, "+hw.snic.rig_units=4,8",
                   f"report_dir={tmp_path / 'r'}", f"hydra.sweep.dir={tmp_path / 'm'}", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = sorted(p.name for p in (tmp_path / "r").glob("*.json"))
    assert names == ["karate-n4-leafspine-spmm-k16_hw.snic.rig_units=4,rack_size=2.json",
                     "karate-n4-leafspine-spmm-k16_hw.snic.rig_units=8,rack_size=2.json"]
    reports = collect.load_reports(tmp_path / "r")
    head, *rows = collect.markdown("sweep", reports)
    assert "| hw.snic.rig_units |" in head and len(rows) == 3  # the rule line and two runs
    assert [r["hardware"]["snic"]["rig_units"] for r in reports] == [4, 8]


def test_a_report_of_other_settings_is_never_overwritten(tmp_path):
    simulate.run(_cfg(*SMALL, f"report_dir={tmp_path}", "tag=_x", "rig_units=4"))
    with pytest.raises(ConfigError, match=r"holds the report of another run \(config.rig_units: 8 here, 4 there"):
        simulate.run(_cfg(*SMALL, f"report_dir={tmp_path}", "tag=_x", "rig_units=8"))
    simulate.run(_cfg(*SMALL, f"report_dir={tmp_path}", "tag=_x", "rig_units=4"))  # the same run: rewritten


@pytest.mark.parametrize("key", ["report_path", "report_dir"])
def test_a_report_that_cannot_be_written_is_one_error_before_the_simulation(tmp_path, monkeypatch, key):
    """A report path under a file (or /proc) failed with a traceback after the whole simulation."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    target = blocker / ("r.json" if key == "report_path" else "reports")
    monkeypatch.setattr(simulate, "model", lambda *a, **k: pytest.fail("simulated before the path was checked"))
    with pytest.raises(ConfigError, match=rf"^{key}: cannot write {target}\S* \(.+\): choose another {key}$"):
        simulate.run(_cfg(*SMALL, f"{key}={target}"))
    with pytest.raises(ConfigError, match=rf"^report_path={tmp_path} is a directory: give a file path"):
        simulate.run(_cfg(*SMALL, f"report_path={tmp_path}"))


def test_a_rerun_of_a_sweep_skips_its_finished_points(tmp_path, capsys):
    cfg = _cfg(*SMALL, f"report_dir={tmp_path / 'r'}")
    first = simulate.run(cfg, tmp_path / "job0", ["rig_units=4"], multirun=True)
    (written,) = (tmp_path / "r").glob("*.json")
    stamp = written.stat().st_mtime_ns
    capsys.readouterr()
    again = simulate.run(cfg, tmp_path / "job1", ["rig_units=4"], multirun=True)  # another sweep folder
    out = capsys.readouterr().out
    assert f"skipped      finished already: {written}" in out and "rerun=true" in out
    assert written.stat().st_mtime_ns == stamp and again["wall_clock_s"] == first["wall_clock_s"]
    assert json.loads((tmp_path / "job1" / "report.json").read_text()) == json.loads(written.read_text())
    simulate.run(_cfg(*SMALL, f"report_dir={tmp_path / 'r'}", "rerun=true"), tmp_path / "job2", ["rig_units=4"],
                 multirun=True)
    assert written.stat().st_mtime_ns != stamp  # asked to: run again
    other = simulate.run(_cfg(*SMALL, f"report_dir={tmp_path / 'r'}", "rig_units=8"), tmp_path / "job3",
                         ["rig_units=8"], multirun=True)
    assert other["hardware"]["snic"]["rig_units"] == 8  # another point is no finished one


def test_override_suffix_names_a_run():
    assert override_suffix(["matrix=a.mtx", "k=16", "+hw.snic.rig_units=8", "assumption=client_units_8",
                            "report_dir=x", "hydra.sweep.dir=y", "+experiment=fig12"]) == \
        "_assumption=client_units_8,hw.snic.rig_units=8"
    assert override_suffix(["hw_file=/some/where/big.yaml"]) == "_hw_file=big.yaml"
    assert override_suffix([f"+hw.snic.rig_units={'9' * 200}"]).startswith("_cfg-")
    assert override_suffix(["nodes=4", "plots=false"]) == ""


# -- keys that do not apply --------------------------------------------------------------------------
def test_k_with_spmv_is_refused_and_spmv_reports_k_1(capsys):
    """kernel=spmv with k=16 would print "K=16" and report k: 16 beside SUOpt's K=1 result: refused."""
    with pytest.raises(ConfigError, match="k=16 does not apply to kernel=spmv"):
        simulate.run(_cfg(*SMALL, "kernel=spmv", "k=16"))
    spmv = simulate.run(_cfg(*SMALL, "kernel=spmv"))
    summary = capsys.readouterr().out
    k1 = simulate.run(_cfg(*SMALL, "kernel=spmm", "k=1"))
    assert spmv["k"] == 1 and "spmv (a vector: K=1 value per row)" in summary and "K=16" not in summary
    assert spmv["strategies"]["su_opt"]["comm_time_s"] == k1["strategies"]["su_opt"]["comm_time_s"]
    assert simulate.run(_cfg(*SMALL, "kernel=spmv", "k=1"))["k"] == 1
    assert simulate.run(_cfg(*SMALL))["k"] == 16  # spmm's default


def test_k_with_spmv_on_the_command_line_is_one_line(tmp_path):
    proc = run_cli("netsparse_torch.cli.simulate", *SMALL, "kernel=spmv", "k=16", f"hydra.run.dir={tmp_path}")
    assert _one_line(proc) == "netsparse-simulate: error: k=16 does not apply to kernel=spmv, which multiplies by " \
                              "a vector (K=1): drop k"


@pytest.mark.parametrize("key", ["ablation", "plots", "rerun"])
def test_an_on_off_key_takes_only_true_or_false(key):
    """``ablation=maybe`` was read as true (and then failed on something else)."""
    with pytest.raises(ConfigError, match=f"^{key} must be true or false, got 'maybe'$"):
        simulate.run(_cfg(*[o for o in SMALL if not o.startswith(key)], f"{key}=maybe"))


@pytest.mark.parametrize("overrides, given", [
    (["topology=hyperx", "rack_size=4"], "rack_size=4"),
    (["topology=dragonfly", "+hw.cluster.rack_size=8"], "hw.cluster.rack_size"),
    (["+hw.cluster={topology: hyperx, rack_size: 4}"], "hw.cluster.rack_size"),
])
def test_a_rack_size_without_racks_is_refused(overrides, given):
    """A rack size means nothing on a topology without racks (hyperx would print "16 nodes per rack", and
    rack_size=4 would give an identical time): refused."""
    with pytest.raises(ConfigError, match=f"^{given}.* does not apply to topology=(hyperx|dragonfly), which has no "
                                          "racks: its hosts per switch are hw.topology.(hyperx|dragonfly)"):
        simulate.run(_cfg(f"matrix={KARATE}", "nodes=8", "plots=false", *overrides))


def test_hyperx_is_named_by_its_own_shape(capsys):
    simulate.run(_cfg(f"matrix={KARATE}", "nodes=8", "plots=false", "topology=hyperx"))
    head = capsys.readouterr().out.splitlines()[0]
    assert "(HyperX 4x4x2, 4 hosts per switch)" in head and "per rack" not in head


@pytest.mark.parametrize("args, start", [
    (["+cluster=hyperx128"], "netsparse-simulate: error: +cluster=hyperx128: netsparse-simulate reads no config "
                             "group cluster"),
    (["+node=16"], "netsparse-simulate: error: unknown key node; the closest known key is nodes"),
])
def test_training_groups_and_unknown_keys_are_one_line(tmp_path, args, start):
    proc = run_cli("netsparse_torch.cli.simulate", *args, f"hydra.run.dir={tmp_path}", timeout=120)
    assert _one_line(proc).startswith(start)


# -- what the summary and --help say -----------------------------------------------------------------
def test_the_summary_lists_the_hardware_that_differs_from_table_5(capsys):
    simulate.run(_cfg(*SMALL, "rig_units=8", "+hw.link.bandwidth_gbps=100"))
    lines = capsys.readouterr().out.splitlines()
    table5 = HardwareParams()
    (line,) = [ln for ln in lines if ln.startswith("Hardware differing from NetSparse Table 5: ")]
    assert line == (f"Hardware differing from NetSparse Table 5: hw.cluster.nodes=4 (Table 5: {table5.cluster.nodes}), "
                    f"hw.cluster.rack_size=2 (Table 5: {table5.cluster.rack_size}), hw.link.bandwidth_gbps=100 "
                    f"(Table 5: {table5.link.bandwidth_gbps}), hw.snic.rig_units=8 (Table 5: {table5.snic.rig_units}).")
    simulate.run(_cfg("matrix=synthetic:powerlaw", "synthetic.n=2000", "plots=false"))
    assert "Hardware: NetSparse Table 5 (hw_models/params.py), no field changed." in capsys.readouterr().out


def test_help_lists_only_the_simulator_s_groups():
    proc = run_cli("netsparse_torch.cli.simulate", "--help", "k=8", timeout=60)
    assert proc.returncode == 0, proc.stderr
    groups = proc.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    assert "\nhw: table5\n" in groups and "\nassumption: " in groups and "\n+experiment: fig12" in groups
    for training in ("cluster", "dataset", "model", "strategy", "fabric"):
        assert f"\n{training}:" not in groups, training
    assert "hydra/launcher: basic, joblib, submitit_local, submitit_slurm, slurm" in groups
    assert "\nk: 8\n" in proc.stdout  # the composed config, with the overrides given


# -- the hardware as a file --------------------------------------------------------------------------
def test_the_hardware_as_a_yaml_file(tmp_path, capsys):
    hw = tmp_path / "cluster.yaml"
    hw.write_text("cluster: {nodes: 4, rack_size: 2}\nsnic:\n  rig_units: 8\n  concat_delay_cycles: .inf\n")
    proc = run_cli("netsparse_torch.cli.simulate", f"matrix={KARATE}", f"hw={hw}", "plots=false",
                   f"hydra.run.dir={tmp_path / 'run'}", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["config"]["hw_file"] == str(hw) and report["cluster"]["nodes"] == 4
    assert report["hardware"]["snic"]["rig_units"] == 8 and report["hardware"]["snic"]["concat_delay_cycles"] == "inf"
    with pytest.raises(ConfigError, match="hw_file.snic.rig_units=8 and rig_units=4 disagree"):
        simulate.run(_cfg(f"matrix={KARATE}", f"hw_file={hw}", "rig_units=4", "plots=false"))
    for text, message in (("snic: [1, 2]", "hw_file.snic must be a mapping of fields"),
                          ("nic: {x: 1}", r"unknown hardware file .* section\(s\) \['nic'\]"),
                          ("snic: {rig_units: [", "is not YAML")):
        hw.write_text(text)
        with pytest.raises(ConfigError, match=message):
            simulate.run(_cfg(f"matrix={KARATE}", f"hw_file={hw}", "plots=false"))
    proc = run_cli("netsparse_torch.cli.simulate", f"matrix={KARATE}", f"hw={tmp_path / 'missing.yaml'}",
                   f"hydra.run.dir={tmp_path / 'run2'}", timeout=120)
    assert _one_line(proc) == f"netsparse-simulate: error: hardware file {tmp_path / 'missing.yaml'}: " \
                              "No such file or directory"
