"""What the report figures show: the series behind each plot, read back from the drawn matplotlib
Figure (not pixels) and checked against the JSON report's numbers, for netsparse-train (curves.png),
netsparse-simulate (speedup, ablation and active-nodes plots) and netsparse-compare."""

from __future__ import annotations

import json

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from cli import ROOT, train_here  # noqa: E402
from conftest import DATA  # noqa: E402
from figures import record_figures  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

from hw_models.simulator import STAGES  # noqa: E402
from netsparse_torch.report import (
    curves,  # noqa: E402
    sim_figures,  # noqa: E402
)
from netsparse_torch.run import simulation as simulate  # noqa: E402

KARATE = DATA / "mtx_small" / "karate.mtx"


def _lines(ax) -> dict[str, tuple[list, list]]:
    """``{label: (xs, ys)}`` of the lines drawn on ``ax``."""
    return {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.get_lines()}


def _drawn_curves(report: dict) -> list[dict]:
    fig, axes = plt.subplots(ncols=3)
    try:
        curves.draw(fig, axes, report)
        return [_lines(ax) for ax in axes]
    finally:
        plt.close(fig)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[dict, object]:
    """A short run that evaluates after every epoch (the bug: only the final point was drawn)."""
    out = tmp_path_factory.mktemp("train")
    report, _ = train_here(out, "world_size=1", "epochs=5", "eval_every=1", curves=True)
    return report, out


def test_curves_draw_every_evaluation_of_the_report(trained):
    report, out = trained
    evals = report["evaluations"]
    assert [e["epoch"] for e in evals] == [0, 1, 2, 3, 4]  # one per epoch, the last one is the final
    assert (out / "curves.png").read_bytes().startswith(b"\x89PNG")
    loss, time_ms, drawn = _drawn_curves(report)
    assert loss == {"loss": ([e["epoch"] for e in report["epochs"]], [e["loss"] for e in report["epochs"]])}
    assert time_ms["epoch time"][1] == pytest.approx([e["time_s"] * 1e3 for e in report["epochs"]])
    assert set(drawn) == {"train_acc", "val_acc", "test_acc"}
    for metric, (xs, ys) in drawn.items():
        assert xs == [e["epoch"] for e in evals]
        assert ys == [e[metric] for e in evals]
    assert drawn["test_acc"][1][-1] == report["final"]["test_acc"]


def test_curves_series_equals_what_is_drawn(trained):
    report, _ = trained
    series = curves.curve_series(report)
    assert [series[p] for p in curves.PANELS] == _drawn_curves(report)


def test_curves_without_evaluations_show_the_final_one(trained):
    """A report from before ``evaluations`` existed still shows its final scores after the last epoch."""
    report = json.loads(json.dumps(trained[0]))
    del report["evaluations"]
    drawn = _drawn_curves(report)[2]
    last = report["epochs"][-1]["epoch"]
    assert drawn["test_acc"] == ([last], [report["final"]["test_acc"]])


# -- netsparse-simulate ------------------------------------------------------------------------------
@pytest.fixture
def drawn(monkeypatch) -> dict:
    """``{file name: (fig, axes)}`` of every figure the code under test saves: ``figure`` is wrapped so the
    test gets the very Figure that was written (its artists outlive ``plt.close``)."""
    from netsparse_torch.report import compare

    return record_figures(monkeypatch, (sim_figures, compare))


def _bars(ax) -> tuple[list[str], list[float]]:
    """Tick labels and bar heights of a single-series bar chart."""
    (container,) = ax.containers
    return [t.get_text() for t in ax.get_xticklabels()], [p.get_height() for p in container]


def _sim_cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="simulate", overrides=list(overrides))


def test_simulate_figures_show_the_report(tmp_path, drawn):
    report = simulate.run(_sim_cfg(f"matrix={KARATE}", "nodes=4", "rack_size=2", "ablation=true",
                                   "strategies=[two_face]"), tmp_path)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert set(drawn) == {"speedup.png", "ablation.png", "active_nodes.png", "critical_path.png"}
    assert all((tmp_path / name).read_bytes().startswith(b"\x89PNG") for name in drawn)
    # speedup: one bar per strategy, SUOpt's time over its time; NetSparse's is the report's speedup
    labels, heights = _bars(drawn["speedup.png"][1])
    st = saved["strategies"]
    assert labels == ["SUOpt", "SAOpt", "NetSparse", "Two-Face"]
    keys = ["su_opt", "sa_opt", "netsparse", "two_face"]
    assert heights == pytest.approx([st["su_opt"]["comm_time_s"] / st[k]["comm_time_s"] for k in keys])
    sp = saved["speedup"]
    assert heights[1:3] == pytest.approx([sp["sa_opt_vs_su_opt"], sp["netsparse_vs_su_opt"]])
    # ablation: one bar per Table 8 stage, its speedup
    labels, heights = _bars(drawn["ablation.png"][1])
    assert labels == [a["stage"] for a in saved["ablation"]] == list(STAGES)
    assert heights == pytest.approx([a["speedup_vs_su_opt"] for a in saved["ablation"]])
    # active nodes: the step line is the report's (time in us, count)
    (line,) = drawn["active_nodes.png"][1].get_lines()
    assert list(line.get_xdata()) == pytest.approx([t * 1e6 for t in saved["active_nodes"]["t_s"]])
    assert list(line.get_ydata()) == saved["active_nodes"]["count"]
    assert max(saved["active_nodes"]["count"]) == 4  # every node starts active: a series, not an empty one
    # active nodes by bound: one stacked band per group of resources the report charges (at most eight,
    # in plain words), the sum of its resources' series; the bands stack to the average active nodes
    cp = saved["critical_path"]
    bands = drawn["critical_path.png"][1].collections
    groups = {g: [sum(cp["nodes"][r][i] for r in rs if r in cp["nodes"]) for i in range(len(cp["t_s"]))]
              for g, rs in sim_figures.PLOT_GROUPS.items() if any(r in cp["nodes"] for r in rs)}
    groups = {g: ys for g, ys in groups.items() if any(ys)}
    assert [c.get_label() for c in bands] == list(groups) and len(groups) <= 8
    stacked = np.cumsum(list(groups.values()), axis=0)  # the top edge of each band
    for band, top in zip(bands, stacked, strict=True):
        (path,) = band.get_paths()
        assert path.vertices[:, 1].max() == pytest.approx(top.max())
    assert stacked[-1].max() <= 4 + 1e-9 and stacked[-1][0] == pytest.approx(4)  # all 4 start active
    # the plain data the figures are drawn from is the same
    series = sim_figures.figure_series(report)
    drawn_groups = {k: v[1] for k, v in series["critical_path.png"].items()}
    assert list(drawn_groups) == list(groups)
    for g, ys in groups.items():
        assert drawn_groups[g] == pytest.approx(ys), g
    assert series["ablation.png"]["speedup vs SUOpt"][1] == pytest.approx(heights)


# -- netsparse-compare -------------------------------------------------------------------------------
def _visible_ticks(ax) -> list:
    return [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


def _check_layout(fig, axes) -> None:
    """Every group label and the legend lie inside the figure, off every panel and off each other."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # plt.close took the pyplot canvas; the layout stays
    panels = [ax.get_window_extent(renderer) for ax in axes]
    labels = [t.get_window_extent(renderer) for ax in axes for t in _visible_ticks(ax)]
    legends = [ax.get_legend().get_window_extent(renderer) for ax in axes if ax.get_legend()]
    assert labels and legends
    for box in labels + legends:
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1
        assert not any(box.overlaps(p) for p in panels)
    assert not any(a.overlaps(b) for i, a in enumerate(labels) for b in labels[i + 1:])


def _check_bars(axes, groups: list[str], panels: dict) -> None:
    """The drawn bars are the series: one container per bar label, one height per group."""
    for ax, (ylabel, values) in zip(axes, panels.items(), strict=True):
        assert ax.get_ylabel() == ylabel
        drawn = {c.get_label(): [p.get_height() for p in c] for c in ax.containers}
        assert list(drawn) == list(values)
        for bar, heights in values.items():
            assert drawn[bar] == pytest.approx(heights), (ylabel, bar)
    assert [t.get_text() for t in _visible_ticks(axes[-1])] == groups


def test_compare_plot_of_mixed_training_runs(trained, tmp_path, drawn):
    from netsparse_torch.cli import compare as compare_cli
    from netsparse_torch.report import compare

    first, out = trained  # strategy sa, 1 rank, 5 epochs evaluated every epoch
    second, _ = train_here(tmp_path / "su", "strategy=su", "world_size=2", "epochs=2")
    png = tmp_path / "runs.png"
    assert compare_cli.main([str(out / "report.json"), str(tmp_path / "su" / "report.json"), "--plot", str(png)]) == 0
    fig, axes = drawn["runs.png"]
    groups, panels = compare.plot_series("train", compare.table("train", compare.find_reports(
        [out / "report.json", tmp_path / "su" / "report.json"])))
    assert len(groups) == 2 and all("world_size=" in g and "\n" in g for g in groups)  # mixed: several keys
    # each run is its own group; its strategy's bar holds its report's numbers, the other bar nothing
    for g, report in zip(groups, (first, second), strict=True):
        assert f"world_size={report['world_size']}" in g.split("\n")
        i = groups.index(g)
        ms, mb = panels["median epoch time (ms, measured)"], panels["feature MB per epoch (measured)"]
        assert ms[report["strategy"]][i] == pytest.approx(report["epoch_time_s"]["median"] * 1e3)
        assert mb[report["strategy"]][i] == pytest.approx(report["comm"]["feature_bytes_per_epoch"] * 1e-6)
        other = "su" if report["strategy"] == "sa" else "sa"
        assert ms[other][i] == 0.0
    _check_bars(axes, groups, panels)
    _check_layout(fig, axes)
    assert png.read_bytes().startswith(b"\x89PNG")


def test_compare_plot_of_simulations_differing_in_many_keys(tmp_path, drawn):
    from netsparse_torch.cli import compare as compare_cli
    from netsparse_torch.report import compare

    runs = [("4", "rows", "1", "leafspine", "500"), ("8", "nnz", "16", "leafspine", "250"),
            ("4", "nnz", "16", "hyperx", "500"), ("8", "rows", "1", "hyperx", "250")]
    reports = []
    for i, (nodes, part, k, topo, delay) in enumerate(runs):
        reports.append(simulate.run(_sim_cfg(f"matrix={KARATE}", f"nodes={nodes}", f"partition={part}",
                                             f"k={k}", f"topology={topo}", f"nic_delay_cycles={delay}", "plots=false"),
                                    tmp_path / f"r{i}"))
    png = tmp_path / "sims.png"
    assert compare_cli.main([str(tmp_path), "--plot", str(png)]) == 0
    fig, axes = drawn["sims.png"]
    groups, panels = compare.plot_series("simulate", compare.table("simulate", compare.find_reports([tmp_path])))
    assert all(g.count("\n") == 4 for g in groups)  # nodes, topology, K, partition, nic_delay_cycles
    times = panels["comm time (us, modeled)"]
    for report in reports:
        c = report["cluster"]
        (i,) = [j for j, g in enumerate(groups) if f"nodes={c['nodes']}\ntopology={c['topology']}\nK={report['k']}\n"
                f"partition={report['partition']}" in g]
        for bar, key in (("suopt", "su_opt"), ("saopt", "sa_opt"), ("netsparse", "netsparse")):
            assert times[bar][i] == pytest.approx(report["strategies"][key]["comm_time_s"] * 1e6)
        assert panels["tail node MB (modeled)"]["netsparse"][i] == \
            pytest.approx(report["strategies"]["netsparse"]["tail"]["wire_bytes"] * 1e-6)
    _check_bars(axes, groups, panels)
    _check_layout(fig, axes)
