"""``netsparse-reproduce``: every paper table the models reproduce exactly, paper value vs ours
(:mod:`hw_models.paper_tables`).

    netsparse-reproduce list
    netsparse-reproduce bf3_table2
    netsparse-reproduce netcrafter_table1 --json

A plain argparse CLI rather than a Hydra app: it takes one table name and has nothing to configure.
With ``--json`` it prints ``{"name": ..., "rows": [{"key": ..., "paper": ..., "ours": ...}]}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from hw_models.paper_tables import TABLES, Row, reproduce
from netsparse_torch.cli.failure import failing


def _print_table(name: str, rows: list[Row]) -> None:
    t = TABLES[name]
    print(f"{name}: {t.description} (tolerance {t.tolerance:g})")
    width = max(len(r.key) for r in rows)
    print(f"{'cell':<{width}}  {'paper':>10}  {'ours':>10}  {'deviation':>10}")
    for r in rows:
        print(f"{r.key:<{width}}  {r.paper:>10.4g}  {r.ours:>10.4g}  {r.deviation:>+10.3g}")
    worst = max(abs(r.deviation) for r in rows)
    verdict = "within" if worst <= t.tolerance + 1e-9 else "OUTSIDE"
    print(f"max |deviation| = {worst:.3g}: {verdict} tolerance")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (2 for an unknown table name)."""
    ap = argparse.ArgumentParser(prog="netsparse-reproduce", description=__doc__.split("\n")[0])
    ap.add_argument("name", help="table name, or 'list' to list them")
    ap.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    args = ap.parse_args(argv)
    try:
        status = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:  # e.g. `netsparse-reproduce ... | head`: the reader left, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.name == "list":
        for n, t in TABLES.items():
            print(f"{n:<26} {t.description}")
        return 0
    with failing("netsparse-reproduce", ValueError):
        rows = reproduce(args.name)
    if args.json:
        print(json.dumps({"name": args.name, "rows": [asdict(r) for r in rows]}))
    else:
        _print_table(args.name, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
