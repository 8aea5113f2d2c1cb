"""Paired A/B of the simulator's speed on two trees: ``benchmarks/sim_event_rate.py`` run alternately on each,
so that a drift of the host's speed (often 10-15 % within an hour on a shared VM) falls on both alike.

A tree is a folder with ``hw_models`` (its extension built), ``netsparse_torch`` and ``benchmarks``: a clone
after ``make install``, or a copy of those three folders of a checkout. One warm-up pair is not counted.
Prints the C++ call's CPU seconds of each (median), the mean of the pairs' A/B ratios with its standard
error, in how many pairs A was faster, and refuses trees that simulate different results (events and
communication time must agree).

    .venv/bin/python benchmarks/sim_ab.py TREE_A TREE_B paper:europe 0.25 --pairs 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path


def one_run(tree: Path, matrix: str, scale: str) -> dict:
    """sim_event_rate.py of ``tree`` on its own code (``PYTHONPATH`` and the working directory)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(tree / "benchmarks" / "sim_event_rate.py"), matrix, scale]
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree_a", type=Path)
    ap.add_argument("tree_b", type=Path)
    ap.add_argument("matrix", help="a graph of ../shared/data/graphs or paper:<name>")
    ap.add_argument("scale", nargs="?", default="1.0", help="the analog's scale (paper:<name> only)")
    ap.add_argument("--pairs", type=int, default=4, help="counted pairs (after one warm-up pair)")
    args = ap.parse_args(argv)
    for tree in (args.tree_a, args.tree_b):
        if not (tree / "benchmarks" / "sim_event_rate.py").is_file() or not (tree / "hw_models").is_dir():
            ap.error(f"{tree} holds no hw_models and benchmarks/sim_event_rate.py")
    cpu: dict[str, list[float]] = {"A": [], "B": []}
    results = set()
    for i in range(args.pairs + 1):
        for name, tree in (("A", args.tree_a), ("B", args.tree_b)):
            r = one_run(tree.resolve(), args.matrix, args.scale)
            results.add((r["events"], r["comm_time_us"]))
            if i > 0:
                cpu[name].append(r["cpu_s"])
    if len(results) != 1:
        sys.exit(f"sim_ab: the trees simulate different results (events, comm us): {sorted(results)}")
    ratios = [a / b for a, b in zip(cpu["A"], cpu["B"], strict=True)]
    se = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else float("nan")
    print(json.dumps({"matrix": args.matrix, "scale": args.scale, "pairs": len(ratios),
                      "a_cpu_s_median": statistics.median(cpu["A"]), "b_cpu_s_median": statistics.median(cpu["B"]),
                      "a_over_b": statistics.mean(ratios), "standard_error": se,
                      "a_faster_in": sum(r < 1 for r in ratios)}))


if __name__ == "__main__":
    main()
