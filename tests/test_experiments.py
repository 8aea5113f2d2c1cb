"""Every experiment config (docs/experiments.md) runs through the C++ simulator with one command, and
netsparse_torch.report.collect turns its reports into the documented tables. Shrunk here to 400 rows on 4 nodes
(the paper analogs the configs sweep are replaced by that small matrix; their specs are checked to
parse)."""

import json

import pytest
from conftest import DATA, ROOT
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from hw_models import analogs
from netsparse_torch.config_check import config_dir
from netsparse_torch.config_keys import SIMULATE, TRAIN, experiments
from netsparse_torch.report import collect
from netsparse_torch.run import simulation as simulate

#: netsparse-train's experiments (they choose a training dataset) and netsparse-simulate's, as the CLIs' checks
#: tell them apart; together every YAML of configs/experiment.
TRAIN_EXPERIMENTS = experiments(config_dir(), TRAIN)
EXPERIMENTS = experiments(config_dir(), SIMULATE)
KARATE = DATA / "mtx_small" / "karate.mtx"
SMALL = [f"matrix={KARATE}", "nodes=4", "rack_size=2", "plots=false", "compute_models=[spade]"]
# a 400-row synthetic matrix on 4 nodes stands in for the paper analogs the sweeps name
SYNTH = [*SMALL[1:], "matrix=synthetic:powerlaw", "synthetic.n=400"]


def _sweep(name: str) -> dict[str, list[str]]:
    params = OmegaConf.load(ROOT / "configs" / "experiment" / f"{name}.yaml").hydra.sweeper.params
    return {k: str(v).split(",") for k, v in params.items()}


def _points(name: str) -> list[list[str]]:
    """The first and the last value of every swept key but the matrix (e.g. batch_size=.inf)."""
    sweep = {k: v for k, v in _sweep(name).items() if k != "matrix"}
    return [[f"{k}={v[i]}" for k, v in sweep.items()] for i in sorted({0, -1})] if sweep else [[]]


def test_every_experiment_is_documented_with_its_command():
    doc = (ROOT / "docs" / "experiments.md").read_text()
    assert EXPERIMENTS and TRAIN_EXPERIMENTS == ["paper_training"]
    every = sorted(p.stem for p in (ROOT / "configs" / "experiment").glob("*.yaml"))
    assert sorted(TRAIN_EXPERIMENTS + EXPERIMENTS) == every
    for name in EXPERIMENTS:
        assert f"python -m netsparse_torch.cli.simulate +experiment={name}" in doc, name
    for name in TRAIN_EXPERIMENTS:
        assert f"python -m netsparse_torch.cli.train +experiment={name}" in doc, name


def test_paper_training_runs_and_collects(tmp_path, monkeypatch):
    """+experiment=paper_training at a test's size (one tiny analog, 2 ranks; the full-size block at a
    stand-in scale), and its collect table: one row per run with the measured and modeled columns."""
    from cli import train_here

    monkeypatch.setattr("netsparse_torch.modeled.FULL_SCALE", 1e-4)
    sweep = _sweep("paper_training")
    assert sweep == {"dataset.matrix": ["arabic", "europe", "queen", "stokes", "uk"]}
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["+experiment=paper_training", "dataset.matrix=uk"])
    assert cfg.report_path == "outputs/experiments/paper_training/uk@0.01.json" and cfg.cluster.full_size
    report, _ = train_here(tmp_path, "+experiment=paper_training", "dataset.matrix=europe", "dataset.scale=5e-5",
                           "world_size=2", "epochs=1")
    assert report["strategy"] == "netsparse" and report["modeled"]["full_size"]["graph"]["rows"] == 5091
    table = collect.markdown("paper_training", collect.load_reports(tmp_path, table="paper_training"))
    assert len(table) == 3 and table[0].startswith("| analog | rows | nonzeros | ranks | strategy | epoch s (measured)")
    m, full = report["modeled"], report["modeled"]["full_size"]
    cells = table[2].strip("| ").split(" | ")
    assert cells[:5] == ["paper-europe@5e-05", "2,546", collect.fmt(report["dataset"]["nnz"]), "2", "netsparse"]
    assert cells[8] == (f"{collect.fmt(m['comm_speedup']['netsparse_vs_su_opt'])}x / "
                        f"{collect.fmt(m['comm_speedup']['netsparse_vs_sa_opt'])}x")
    assert cells[11] == (f"{collect.fmt(full['end_to_end_speedup']['none']['netsparse_vs_su_opt'])}x / "
                         f"{collect.fmt(full['end_to_end_speedup']['none']['netsparse_vs_sa_opt'])}x")
    peak = collect.fmt(full["process"]["peak_rss_bytes"] / 2**30)
    assert cells[12] == f"{peak} GiB, {full['process']['wall_s']:.0f} s"  # this run generated and simulated it
    full["model_cache"]["gathers_computed"] = []  # as a later run, which reads the block from the cache
    assert collect.markdown("paper_training", [report])[2].endswith(", from the cache |")


def test_swept_matrices_exist():
    for name in EXPERIMENTS:
        for m in _sweep(name).get("matrix", []):
            if m.startswith("paper:"):
                matrix, scale = analogs.parse(m)  # an unknown name or a bad scale raises ConfigError
                assert analogs.scaled_rows(matrix, scale) > 0, (name, m)
            else:
                assert m.startswith("synthetic:") or (ROOT / m).is_file(), (name, m)


def test_collect_filters_by_k(tmp_path):
    for k in (1, 16):
        (tmp_path / f"m-k{k}.json").write_text(json.dumps({"k": k, "matrix": {"name": "m"}}))
    assert [r["k"] for r in collect.load_reports(tmp_path, k=16)] == [16]
    assert len(collect.load_reports(tmp_path)) == 2
    with pytest.raises(FileNotFoundError, match="K=128"):
        collect.load_reports(tmp_path, k=128)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_runs_through_the_simulator(tmp_path, name):
    for i, point in enumerate(_points(name)):
        racks = not any(p in point for p in ("topology=hyperx", "topology=dragonfly"))  # else refused
        overrides = [f"+experiment={name}", *[o for o in SYNTH if racks or not o.startswith("rack_size=")],
                     f"report_dir={tmp_path}", f"tag=_{i}", *point]
        if name == "fig13_21":
            overrides.append("strong_scaling=[1,2,4]")
        with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
            cfg = compose(config_name="simulate", overrides=overrides)
        r = simulate.run(cfg)
        ns = r["strategies"]["netsparse"]
        assert ns["comm_time_s"] > 0 and r["speedup"]["netsparse_vs_su_opt"] > 0, (name, point)
        if cfg.ablation:
            assert [a["stage"] for a in r["ablation"]] == ["rig", "filter", "coalesce", "concat_nic", "switch"]
        if name == "fig13_21":
            rows = r["strong_scaling"]["rows"]
            assert [row["nodes"] for row in rows] == [1, 2, 4]
            assert all(row["netsparse_comm_s"] >= 0 for row in rows) and rows[-1]["netsparse_comm_s"] > 0
    reports = collect.load_reports(tmp_path)
    assert len(reports) == len(_points(name))
    json.dumps(reports)  # the reports are plain JSON


def test_collect_table8_and_active_nodes(tmp_path):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose(config_name="simulate", overrides=[*SMALL, f"report_dir={tmp_path}", "ablation=true"])
    r = simulate.run(cfg)
    reports = collect.load_reports(tmp_path)
    t8 = collect.markdown("table8", reports)
    assert t8[0] == "| matrix | nodes | K | rig | +filter | +coalesce | +concat_nic | +switch |"
    first, last = r["ablation"][0], r["ablation"][-1]
    cell = " / ".join(collect.fmt(first[k]) for k in ("speedup_vs_su_opt", "traffic_reduction_vs_su", "goodput"))
    assert len(t8) == 3 and t8[2].startswith(f"| karate | 4 | 16 | {cell} |")
    assert t8[2].endswith(f" / {collect.fmt(last['goodput'])} |")
    act = collect.markdown("active_nodes", reports)
    last = r["active_nodes"]["t_s"][r["active_nodes"]["count"].index(0)]
    assert act[2].endswith(f"| {collect.fmt(last, micro=True)} |")
    # the last node finishes when NetSparse's communication does (the tail node's time)
    assert last == pytest.approx(r["strategies"]["netsparse"]["comm_time_s"])
    for kind in ("table8", "active_nodes"):
        assert [p.name for p in collect.plot(kind, reports, tmp_path / f"{kind}.png")] == [f"{kind}.png"]


def test_collect_sensitivity(tmp_path):
    """One row per (matrix, assumption); each K's change is against the same matrix and K at the defaults."""
    runs = {}
    for a in ("table5", "command_overlap", "client_units_8"):
        with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
            cfg = compose(config_name="simulate",
                          overrides=[*SYNTH, f"report_dir={tmp_path}", f"assumption={a}", f"tag=_{a}"])
        runs[a] = simulate.run(cfg)
    assert runs["command_overlap"]["hardware"]["snic"]["rig_command_overlap"] == "overlap"
    assert runs["client_units_8"]["hardware"]["snic"]["rig_client_units"] == 8
    table = collect.markdown("sensitivity", collect.load_reports(tmp_path))
    assert table[0] == "| matrix | assumption | K=16 us | K=16 vs table5 | K=16 tail bound |"
    assert [row.split(" | ")[1] for row in table[2:]] == ["table5", "client_units_8", "command_overlap"]
    t0 = runs["table5"]["strategies"]["netsparse"]["comm_time_s"]
    ns = runs["client_units_8"]["strategies"]["netsparse"]
    change = f"{ns['comm_time_s'] / t0 - 1:+.1%}"
    assert f"| {collect.fmt(ns['comm_time_s'], micro=True)} | {change} | node {ns['tail_node']}: " in table[3]
    assert "| +0.0% |" in table[2]
    t8 = collect.markdown("table8", collect.load_reports(tmp_path))  # which run is which, when they differ
    assert t8[0].startswith("| matrix | nodes | K | assumption |")
    assert sorted(row.split(" | ")[3].strip(" |") for row in t8[2:]) == ["client_units_8", "command_overlap", "table5"]


def test_simulate_refuses_an_unknown_assumption_in_one_line():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "netsparse_torch.cli.simulate", "assumption=nope"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "netsparse-simulate: error: unknown assumption 'nope'; choose one of "
        + ", ".join(sorted(p.stem for p in (ROOT / "configs" / "assumption").glob("*.yaml")))]


def _assumption_index() -> dict[str, list[str]]:
    """docs/simulator.md's table of the modelling assumptions: field -> its values, the default first."""
    doc = (ROOT / "docs" / "simulator.md").read_text()
    section = doc.split("## The modelling assumptions behind the bounds", 1)[1].split("\n## ", 1)[0]
    index = {}
    for row in section.splitlines():
        cells = row.split(" | ")
        if row.startswith("| ") and len(cells) == 4 and "`: " in cells[1]:
            field, values = cells[1].split("`: ", 1)
            index[field.strip("`")] = [v.strip().strip("`") for v in values.split(", ")]
    return index


def test_every_assumption_knob_is_indexed_with_its_default():
    """Each field of the index is a HardwareParams field whose default is the index's first value, and
    every configs/assumption/ file changes only indexed fields."""
    from hw_models.params import HardwareParams

    index = _assumption_index()
    assert len(index) >= 9
    defaults = HardwareParams().to_dict()
    for field, values in index.items():
        section, name = field.split(".")
        default = defaults[section][name]
        assert values[0] == ("null (half)" if default is None else str(default)), field
    for path in (ROOT / "configs" / "assumption").glob("*.yaml"):
        hw = OmegaConf.to_container(OmegaConf.load(path)).get("hw") or {}
        changed = [f"{section}.{name}" for section, fields in hw.items() for name in fields]
        assert (path.stem == "table5") == (not changed), path.stem
        assert set(changed) <= set(index), (path.stem, changed)
