"""``python -m netsparse_torch.cli.collect``: the tables and plots of a sweep's simulator reports
(:mod:`netsparse_torch.report.collect`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from netsparse_torch.report.collect import SPECIAL, TABLES, load_reports, markdown, plot


def main(argv: list[str] | None = None) -> int:
    """CLI: print (and optionally write) the table."""
    ap = argparse.ArgumentParser(prog="python -m netsparse_torch.cli.collect", description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=[*TABLES, *SPECIAL])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--out", type=Path, help="also write the Markdown table here")
    ap.add_argument("--png", type=Path, help="also save figure(s) here (speedup, table8, active_nodes, strong_scaling)")
    ap.add_argument("--k", type=int, help="only the reports of this property size (e.g. Table 7 at K=16 of a K sweep)")
    args = ap.parse_args(argv)
    try:
        reports = load_reports(args.directory, args.k, args.kind)
    except FileNotFoundError as exc:
        print(f"netsparse_torch.cli.collect: error: {exc}", file=sys.stderr)
        return 2
    text = "\n".join(markdown(args.kind, reports)) + "\n"
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    if args.png:
        for p in plot(args.kind, reports, args.png):
            print(f"figure: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
