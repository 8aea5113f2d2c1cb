"""The calibration check of the paper-scale analogs (docs/experiments.md): NetSparse Tables 1 and 4 for
each analog, computed by :mod:`hw_models.definitions` at 128 nodes, ``partition=rows``, beside the
paper's values.

Its command line is :mod:`netsparse_torch.cli.analog_calibration`.
"""

from __future__ import annotations

import time

from hw_models import analogs, definitions
from hw_models.pattern import Pattern

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
