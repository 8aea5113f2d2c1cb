"""``curves.png`` beside a training report: loss, epoch time and the evaluations.

Three panels over the epochs: the training loss, the measured epoch time (ms), and every evaluation the
report holds (``evaluations: [{epoch, train_acc, val_acc, test_acc, ...}]``, written by
:mod:`netsparse_torch.evaluation`: one per ``eval_every`` epochs plus the final one). A report without
that list (written before it existed) shows its final evaluation, after the last epoch.

:func:`curve_series` builds what is drawn as plain data, so a test can check a figure's content against
the report without reading pixels.
"""

from __future__ import annotations

from pathlib import Path

from netsparse_torch.report.plots import figure

Series = dict[str, dict[str, tuple[list, list]]]
"""``{panel: {label: (xs, ys)}}``: the lines of a figure, exactly as drawn."""

PANELS = ("training loss", "epoch time (ms, measured)", "evaluation")


def evaluations(report: dict) -> list[dict]:
    """The report's evaluations ``[{epoch, <metric>: value}]``, oldest first."""
    if report.get("evaluations"):
        return list(report["evaluations"])
    if not report.get("epochs"):
        return []
    final = {k: v for k, v in report["final"].items() if k != "train_loss" and v is not None}
    return [{"epoch": report["epochs"][-1]["epoch"], **final}]


def curve_series(report: dict) -> Series:
    """The lines of ``curves.png``: loss and epoch time (ms) per epoch, and one line per evaluation
    metric over the epochs it was evaluated at (an evaluation without an epoch, or a metric the run
    could not compute, is not a point)."""
    epochs = report.get("epochs") or []
    xs = [e["epoch"] for e in epochs]
    evals = [e for e in evaluations(report) if e.get("epoch") is not None]
    metrics = list(dict.fromkeys(k for e in evals for k in e if k != "epoch"))
    lines: dict[str, tuple[list, list]] = {}
    for name in metrics:
        points = [(e["epoch"], e[name]) for e in evals if e.get(name) is not None]
        if points:
            lines[name] = ([p[0] for p in points], [p[1] for p in points])
    return {PANELS[0]: {"loss": (xs, [e["loss"] for e in epochs])},
            PANELS[1]: {"epoch time": (xs, [e["time_s"] * 1e3 for e in epochs])},
            PANELS[2]: lines}


def save_curves(report: dict, out_dir: Path) -> Path | None:
    """Write ``out_dir/curves.png``; ``None`` (no file) for a run without epochs."""
    if not report.get("epochs"):
        return None
    out = Path(out_dir) / "curves.png"
    with figure(out, dpi=110, ncols=3, figsize=(11, 3.2)) as (fig, axes):
        draw(fig, axes, report)
    return out


def draw(fig, axes, report: dict) -> None:
    """Draw :func:`curve_series` on three axes (loss, time, evaluations)."""
    series = curve_series(report)
    xs = series[PANELS[0]]["loss"][0]
    for ax, panel in zip(axes, PANELS, strict=True):
        for label, (x, y) in series[panel].items():
            # Evaluations are sparse (every eval_every epochs): markers show where each one is.
            style = {"marker": "o", "ms": 3} if panel == PANELS[2] else {}
            ax.plot(x, y, label=label, **style)
        ax.set_ylabel(panel)
        ax.set_xlabel("epoch")
        ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    axes[1].set_ylim(bottom=0)
    axes[2].set_ylim(0, 1.02)  # accuracies and ROC-AUC live in [0, 1]
    if series[PANELS[2]]:
        axes[2].legend(fontsize=7, loc="best")
    fig.suptitle(f"{report['model']} on {report['dataset']['name']}, strategy={report['strategy']}, "
                 f"world_size={report['world_size']}", fontsize=9)
