"""The calibration check of the paper-scale analogs (docs/experiments.md): NetSparse Tables 1 and 4 for
each analog, computed by :mod:`hw_models.definitions` at 128 nodes, ``partition=rows``, beside the
paper's values.

    python -m hw_models.analog_calibration [--scale 1] [--matrices arabic europe ...] [--seed 0]

Prints a Markdown table (paper value, analog value, deviation per cell) and the wall time of
generation and statistics per matrix. Exits 1 when a cell is outside :data:`PAPER_TOLERANCE`.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from hw_models import analogs, definitions
from netsparse_torch.plan.pattern import Pattern
from netsparse_torch.report import markdown as md

NODES = 128
"""The paper's cluster (NetSparse Table 5), where Tables 1 and 4 are measured."""

PAPER_TOLERANCE = 0.30
"""Relative tolerance of each of the 15 cells at full size (our target for a fit to Tables 1 and 4)."""

EUROPE_SA_ABSOLUTE = 0.01
"""europe's SA ratio (0.02) is held to 0.01 absolute instead: 30 % of a ratio this close
to zero would be 0.006."""

STATS = ("su_redundant_per_useful", "sa_redundant_per_useful", "dest_locality_64")
HEADERS = {"su_redundant_per_useful": "SU red/useful (T1)", "sa_redundant_per_useful": "SA red/useful (T1)",
           "dest_locality_64": "dests in 64 PRs (T4)"}


def statistics(p: Pattern, nodes: int = NODES) -> dict[str, float]:
    """The three calibrated statistics of ``p`` on ``nodes`` nodes, ``partition=rows``."""
    w = definitions.workload(p, nodes, "rows")
    red = definitions.redundancy(w)
    return {"su_redundant_per_useful": red.su_redundant_per_useful,
            "sa_redundant_per_useful": red.sa_redundant_per_useful,
            "dest_locality_64": definitions.dest_locality(w)}


def deviation(name: str, stat: str, value: float, paper: float) -> float:
    """Deviation in units of the tolerance (<= 1 passes): relative, or absolute for europe's SA ratio."""
    if name == "europe" and stat == "sa_redundant_per_useful":
        return abs(value - paper) / EUROPE_SA_ABSOLUTE
    return abs(value / paper - 1) / PAPER_TOLERANCE


def run(names: list[str], scale: float, seed: int = 0) -> list[dict]:
    """Generate each analog, compute its statistics; one dict per matrix."""
    rows = []
    for name in names:
        m = analogs.PAPER_MATRICES[name]
        t0 = time.perf_counter()
        p = analogs.generate(m, scale, seed)
        t1 = time.perf_counter()
        stats = statistics(p)
        t2 = time.perf_counter()
        rows.append({"matrix": m, "rows": p.n_rows, "nnz": p.nnz, "stats": stats,
                     "generate_s": t1 - t0, "statistics_s": t2 - t1})
        del p
    return rows


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
    ap = argparse.ArgumentParser(prog="python -m hw_models.analog_calibration", description=__doc__.splitlines()[0])
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
