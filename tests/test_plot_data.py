"""What the report figures show: the series behind each plot, read back from the drawn matplotlib
Figure (not pixels) and checked against the JSON report's numbers, for netsparse-train (curves.png),
netsparse-simulate (speedup, ablation and active-nodes plots) and netsparse-compare."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from cli import train_here  # noqa: E402

from netsparse_torch.report import curves  # noqa: E402


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
    report, _ = train_here(out, "world_size=1", "epochs=5", "eval_every=1")
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
