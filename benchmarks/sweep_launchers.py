"""The sensitivity sweep (``+experiment=sensitivity``: arabic and europe x K = 1, 16, 128 x every
``configs/assumption/`` choice, 66 simulations) run serially (Hydra's basic launcher: one process runs
every point) and with ``hydra/launcher=joblib`` (``--n-jobs`` worker processes), at a ``--scale`` of the
full-size analogs.

    python benchmarks/sweep_launchers.py --scale 0.01 --n-jobs 2     # the command of docs/benchmarks.md

Both sweeps read the analogs from one ``analog_cache`` filled before the timing (so neither pays the
generation) and write their reports into their own ``report_dir``; the script checks that the two give
the same modeled times for every point, prints each sweep's wall time (and the sum of its points' own
``wall_clock_s``: matrix, model and simulator, without start-up) and their ratio, and records
``uptime``'s load average before and after each sweep (the host is shared: a busy second core leaves
joblib nothing to gain). Writes benchmarks/results/sweep_launchers.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, write_result  # noqa: E402


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def sweep(tmp: Path, name: str, scale: float, launcher: list[str]) -> dict:
    """One sensitivity sweep; its wall time, the load around it and each point's modeled time."""
    matrices = f"paper:arabic@{scale:g},paper:europe@{scale:g}"
    cmd = [sys.executable, "-m", "netsparse_torch.cli.simulate", "+experiment=sensitivity", f"matrix={matrices}",
           f"report_dir={tmp / name}", f"analog_cache={tmp / 'cache'}", f"hydra.sweep.dir={tmp / (name + '-m')}",
           *launcher]
    before = uptime()
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    reports = {p.stem: json.loads(p.read_text()) for p in (tmp / name).glob("*.json")}
    return {"command": " ".join(cmd[1:]), "wall_s": wall, "uptime_before": before, "uptime_after": uptime(),
            "points": len(reports), "points_wall_s": sum(r["wall_clock_s"] for r in reports.values()),
            "netsparse_s": {k: r["strategies"]["netsparse"]["comm_time_s"] for k, r in reports.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.01, help="share of the full-size analogs' rows")
    ap.add_argument("--n-jobs", type=int, default=2, help="joblib's worker processes")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sweep-launchers-") as tmp:
        tmp = Path(tmp)
        for m in ("arabic", "europe"):  # fill the cache: neither timed sweep generates an analog
            subprocess.run([sys.executable, "-c", f"from hw_models import analogs; analogs.load("
                            f"'paper:{m}@{args.scale:g}', cache_dir={str(tmp / 'cache')!r})"], cwd=ROOT, check=True)
        serial = sweep(tmp, "serial", args.scale, [])
        joblib = sweep(tmp, "joblib", args.scale, ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.n_jobs}"])
    same = serial["netsparse_s"] == joblib["netsparse_s"]
    print(f"sensitivity sweep at scale {args.scale:g}: {serial['points']} points; host: {os.cpu_count()} CPUs")
    for name, r in (("serial (basic launcher)", serial), (f"joblib, n_jobs={args.n_jobs}", joblib)):
        print(f"  {name:<24} {r['wall_s']:7.1f} s (its points' own wall_clock_s: {r['points_wall_s']:.1f} s)   "
              f"before: {r['uptime_before']}\n"
              f"  {'':<24} {'':>9}   after:  {r['uptime_after']}")
    print(f"  serial / joblib: {serial['wall_s'] / joblib['wall_s']:.2f}x; same modeled times at every point: {same}")
    path = write_result("sweep_launchers", {"scale": args.scale, "n_jobs": args.n_jobs, "same_results": same,
                                            "serial": serial, "joblib": joblib,
                                            "ratio": serial["wall_s"] / joblib["wall_s"]})
    print(f"  written      {path}")
    if not same:
        raise SystemExit("the two sweeps disagree on a modeled time")


if __name__ == "__main__":
    main()
