"""Fit the generator parameters of the paper-scale analogs to the workload statistics of NetSparse
Tables 1 and 4 (and the Table 6 nonzeros per row), at a reduced scale (the statistics are
scale-invariant by construction). This is how ``hw_models.analogs.PAPER_MATRICES`` got
its numbers; the fit only ever sees the 15 statistics and the sizes, never a speedup.

    python benchmarks/fit_analogs.py [--matrices uk europe] [--scale 0.02] [--iters 150]

For each matrix: Nelder-Mead on the sum of squared deviations (in units of the calibration tolerance,
``hw_models.analog_calibration.deviation``) of SU and SA redundancy per useful transfer and
destination locality, plus the log-ratio of nonzeros per row (ten times tighter), over the family's
continuous parameters (integer ones stay as given). Prints the fitted parameters as a Python dict.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models import analogs  # noqa: E402
from hw_models.analog_calibration import deviation, statistics  # noqa: E402

# The continuous parameters fitted per family, with bounds (log-transformed where positive).
FREE = {
    "web": {"remote_prob": (0.005, 0.5), "dest_decay": (0.01, 1.0), "popular_fraction": (0.001, 1.0)},
    "road": {"far_prob": (0.01, 0.5), "far_decay": (0.01, 1.0), "far_fraction": (0.005, 1.0)},
    "fem": {"coupling_entries": (1.0, 200.0), "coupling_width": (0.01, 2.0), "sweep": (0.2, 12.0)},
}


def web_xm(mean: float, alpha: float, cap: int) -> float:
    """``deg_xm`` so that E[min(cap, max(1, floor(xm * u^(-1/alpha))))] = mean: the expectation is
    ``1 + sum_{k=2}^{cap} min(1, (xm / k)^alpha)``, increasing in xm (bisection)."""
    k = np.arange(2, cap + 1, dtype=np.float64)

    def e(xm: float) -> float:
        return 1 + float(np.minimum(1.0, (xm / k) ** alpha).sum())

    lo, hi = 1e-3, float(cap)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if e(mid) < mean else (lo, mid)
    return 0.5 * (lo + hi)


def objective(m: analogs.PaperMatrix, params: dict, scale: float) -> tuple[float, dict]:
    p = analogs.generate(m, scale, 0, params)
    stats = statistics(p)
    stats["nnz_per_row"] = p.nnz / p.n_rows
    target = {**m.targets(), "nnz_per_row": m.nnz / m.rows}
    if any(not (v > 0) or math.isnan(v) for v in stats.values()):
        return 1e6, stats
    # Each statistic in units of its tolerance; nonzeros per row held ten times tighter.
    fit = sum(deviation(m.name, k, stats[k], target[k]) ** 2 for k in m.targets())
    return fit + (10 * math.log(stats["nnz_per_row"] / target["nnz_per_row"])) ** 2, stats


def fit(m: analogs.PaperMatrix, scale: float, iters: int) -> dict:
    free = FREE[m.family]
    base = dict(m.params)
    names = list(free)

    def unpack(z: np.ndarray) -> dict:
        out = dict(base)
        for name, v in zip(names, z, strict=True):
            lo, hi = free[name]
            out[name] = float(math.exp(min(max(v, math.log(lo)), math.log(hi))))
        if m.family == "web":  # the degree scale follows from the mean degree (Table 6)
            out["deg_xm"] = web_xm(m.nnz / m.rows, out["deg_alpha"], out["deg_cap"])
        if m.family == "fem":  # the local band takes the rest of the row
            out["band_entries"] = max(0.0, m.nnz / m.rows - out["coupling_entries"])
        return out

    best = {"f": math.inf}

    def f(z):
        params = unpack(z)
        val, stats = objective(m, params, scale)
        if val < best["f"]:
            best.update(f=val, params=params, stats=stats)
            print(f"  {m.name}: f={val:.4f} {({k: round(v, 4) for k, v in stats.items()})}", flush=True)
        return val

    z0 = np.array([math.log(min(max(base[n], free[n][0]), free[n][1])) for n in names])
    minimize(f, z0, method="Nelder-Mead", options={"maxfev": iters, "xatol": 1e-3, "fatol": 1e-5})
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", nargs="+", default=sorted(analogs.PAPER_MATRICES))
    ap.add_argument("--scale", type=float, default=0.02)
    ap.add_argument("--iters", type=int, default=150)
    args = ap.parse_args(argv)
    for name in args.matrices:
        m = analogs.PAPER_MATRICES[name]
        best = fit(m, args.scale, args.iters)
        params = {k: (round(v, 5) if isinstance(v, float) else v) for k, v in best["params"].items()}
        print(f"{name}: {params}\n  stats {best['stats']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
