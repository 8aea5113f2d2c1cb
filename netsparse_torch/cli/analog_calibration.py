"""The calibration check of the paper-scale analogs (docs/experiments.md): NetSparse Tables 1 and 4 for
each analog at 128 nodes beside the paper's values (:mod:`hw_models.analog_calibration`).

    python -m netsparse_torch.cli.analog_calibration [--scale 1] [--matrices arabic europe ...] [--seed 0]

Prints a Markdown table (paper value, analog value, deviation per cell) and the wall time of
generation and statistics per matrix. Exits 1 when a cell is outside ``PAPER_TOLERANCE``.
"""

from __future__ import annotations

import argparse
import math
import sys

from hw_models import analogs
from hw_models.analog_calibration import HEADERS, STATS, deviation, run
from netsparse_torch.report import markdown as md


def markdown(rows: list[dict], scale: float) -> list[str]:
    head = ["matrix", "rows", "nnz (paper)"] + [f"{HEADERS[s]} paper / analog" for s in STATS] \
        + ["generate s", "stats s"]
    return md.table(head, (_cells(r, scale) for r in rows))


def _cells(r: dict, scale: float) -> list[str]:
    """One matrix: sizes, each statistic as paper / analog (deviation; **out** past its tolerance), times."""
    m = r["matrix"]
    cells = [m.name, f"{r['rows']:,}", f"{r['nnz']:,} ({round(m.nnz * scale):,})"]
    for s in STATS:
        paper, value = m.targets()[s], r["stats"][s]
        mark = "" if deviation(m.name, s, value, paper) <= 1 else " **out**"
        cells.append(f"{paper:g} / {value:.4g} ({100 * (value / paper - 1):+.1f} %){mark}")
    return cells + [f"{r['generate_s']:.1f}", f"{r['statistics_s']:.1f}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m netsparse_torch.cli.analog_calibration",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--matrices", nargs="+", default=sorted(analogs.PAPER_MATRICES),
                    choices=sorted(analogs.PAPER_MATRICES))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = run(args.matrices, args.scale, args.seed)
    print("\n".join(markdown(rows, args.scale)))
    bad = [(r["matrix"].name, s) for r in rows for s in STATS
           if math.isnan(r["stats"][s]) or deviation(r["matrix"].name, s, r["stats"][s], r["matrix"].targets()[s]) > 1]
    if bad:
        print(f"outside tolerance: {bad}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
