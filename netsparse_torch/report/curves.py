"""``curves.png`` beside a training report: loss, epoch time and the evaluations.

Three panels over the epochs: the training loss, the measured epoch time (ms), and the accuracies of
every evaluation the report holds (``evals: [{epoch, train_acc, val_acc, test_acc, ...}]`` when the run
evaluated periodically; otherwise the final evaluation, after the last epoch).
"""

from __future__ import annotations

from pathlib import Path

from netsparse_torch.report.plots import figure


def evaluations(report: dict) -> list[dict]:
    """The report's evaluations ``[{epoch, <metric>: value}]``, oldest first."""
    if report.get("evals"):
        return list(report["evals"])
    if not report.get("epochs"):
        return []
    final = {k: v for k, v in report["final"].items() if k != "train_loss" and v is not None}
    return [{"epoch": report["epochs"][-1]["epoch"], **final}]


def save_curves(report: dict, out_dir: Path) -> Path | None:
    """Write ``out_dir/curves.png``; ``None`` (no file) for a run without epochs."""
    epochs = report.get("epochs") or []
    if not epochs:
        return None
    out = Path(out_dir) / "curves.png"
    with figure(out, dpi=110, ncols=3, figsize=(11, 3.2)) as (fig, axes):
        _draw(fig, *axes, report, epochs)
    return out


def _draw(fig, loss_ax, time_ax, eval_ax, report: dict, epochs: list[dict]) -> None:
    xs = [e["epoch"] for e in epochs]
    loss_ax.plot(xs, [e["loss"] for e in epochs])
    loss_ax.set_ylabel("training loss")
    time_ax.plot(xs, [e["time_s"] * 1e3 for e in epochs])
    time_ax.set_ylabel("epoch time (ms, measured)")
    time_ax.set_ylim(bottom=0)
    evals = evaluations(report)
    metrics = [k for k in evals[0] if k != "epoch"] if evals else []
    for name in metrics:
        points = [(e["epoch"], e[name]) for e in evals if e.get(name) is not None]
        if points:
            ex, ey = zip(*points, strict=True)
            eval_ax.plot(ex, ey, marker="o", ms=3, label=name)
    eval_ax.set_ylabel("evaluation")
    eval_ax.set_ylim(0, 1.02)  # accuracies and ROC-AUC live in [0, 1]
    if metrics:
        eval_ax.legend(fontsize=7, loc="best")
    for ax in (loss_ax, time_ax, eval_ax):
        ax.set_xlabel("epoch")
        ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    fig.suptitle(f"{report['model']} on {report['dataset']['name']}, strategy={report['strategy']}, "
                 f"world_size={report['world_size']}", fontsize=9)
