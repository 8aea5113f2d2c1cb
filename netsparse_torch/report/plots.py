"""The matplotlib boilerplate of every report figure: a headless (Agg) figure saved beside the report.

A leaf (matplotlib only, imported when a figure is made): a run that plots nothing never imports
matplotlib.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def load_matplotlib():
    """matplotlib's pyplot on the Agg backend (no display: reports are written by batch jobs and ranks).
    Also called ahead, in a thread, by a launcher that will plot once its ranks are done."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def figure(path: Path, *, dpi: int = 120, layout_rect: tuple | None = None, **subplots) -> Iterator[tuple]:
    """``with figure(path, figsize=(5, 3)) as (fig, ax):`` draws on ``plt.subplots(**subplots)``; on
    leaving, the layout is tightened (within ``layout_rect``, room left for a figure legend; unless
    ``subplots`` names a ``layout`` engine, e.g. ``layout="constrained"``), the figure
    is written to ``path`` at ``dpi`` and closed. On an error it is closed and nothing is written."""
    plt = load_matplotlib()
    fig, axes = plt.subplots(**subplots)
    try:
        yield fig, axes
        if "layout" not in subplots:  # a figure that chose its layout engine (e.g. constrained) keeps it
            fig.tight_layout(**({"rect": layout_rect} if layout_rect else {}))
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


def one_x(ax, label: str = "1x (SUOpt)") -> None:
    """The 1x reference line of a speedup plot: bars below it are slower than the baseline."""
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label=label)


def legend_outside(ax, fontsize: int = 6) -> None:
    """A legend right of the axes, where it cannot cover data."""
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
