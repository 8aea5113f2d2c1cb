"""``stats=links`` beside a ``netsparse-simulate`` report: ``links.csv`` (every link in every time bin) and
``links.png`` (the busiest links' utilisation over time). Formatting only; the series is
:class:`hw_models.link_stats.LinkSeries`, and every value in it is modeled."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from hw_models.link_stats import CSV_COLUMNS, LinkSeries
from netsparse_torch.report.plots import figure, legend_outside

PLOTTED = 8
"""Links in ``links.png``: the busiest over the run."""
CSV_NAME, PNG_NAME = "links.csv", "links.png"


def write_csv(series: LinkSeries, path: Path) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        w.writerows(series.rows())
    return path


def summary(series: LinkSeries) -> dict:
    """The report's ``link_stats`` block: the CSV beside the report, its bins, and the busiest links' mean
    utilisation over the run."""
    total = series.busy_ps.sum(axis=0) / max(series.end_ps, 1)
    return {"modeled": True, "csv": CSV_NAME, "bin_s": series.bin_ps * 1e-12, "bins": series.bins,
            "links": len(series.names),
            "busiest": [{"link": series.names[i], "utilisation": float(total[i])}
                        for i in series.busiest(PLOTTED)]}


def plot(series: LinkSeries, path: Path, title: str) -> Path:
    util = series.utilisation()
    t_us = (series.bin_ps * 1e-6) * (0.5 + np.arange(series.bins))  # bin centres
    with figure(path, figsize=(7, 3.2)) as (_, ax):
        for i in series.busiest(PLOTTED):
            ax.plot(t_us, util[:, i], lw=1, label=series.names[i])
        ax.set_xlabel("time (us, modeled)")
        ax.set_ylabel("link utilisation")
        ax.set_ylim(0, 1.05)
        ax.set_title(title, fontsize=9)
        legend_outside(ax)
    return path


def write(series: LinkSeries, out_dir: Path, title: str, plots: bool) -> list[Path]:
    """Writes ``links.csv`` (and ``links.png`` when ``plots``) into ``out_dir``."""
    paths = [write_csv(series, out_dir / CSV_NAME)]
    if plots:
        paths.append(plot(series, out_dir / PNG_NAME, title))
    return paths
