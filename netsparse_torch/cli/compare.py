"""``netsparse-compare``: one table (and plot) of many training or simulator reports.

The reading, selecting and formatting are :mod:`netsparse_torch.report.compare`; this module parses the
command line and calls it.
"""

from __future__ import annotations

import argparse

from netsparse_torch.cli.failure import failing
from netsparse_torch.report.compare import KINDS, compare


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="netsparse-compare", description=__doc__.splitlines()[0],
                                 epilog="Columns: identity keys, swept config keys, results; --where/--sort name "
                                        "a column as printed.")
    ap.add_argument("paths", nargs="+", help="report files, run directories or multirun directories")
    ap.add_argument("--kind", choices=KINDS, help="only reports of this kind (needed for --csv/--json/--plot "
                                                  "when both kinds are present)")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                    help="keep the rows whose column KEY equals VALUE (repeatable)")
    ap.add_argument("--sort", metavar="COLUMN", help="sort the rows by this column")
    ap.add_argument("--reverse", action="store_true", help="sort in descending order")
    ap.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    ap.add_argument("--json", metavar="FILE", help="also write the table as JSON (a list of rows)")
    ap.add_argument("--plot", metavar="FILE.png", help="grouped bars of time and bytes per strategy")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    with failing(ap.prog):
        return compare(args)


if __name__ == "__main__":
    raise SystemExit(main())
