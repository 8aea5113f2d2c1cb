"""SmartFuse-style in-switch aggregation (push) against NetSparse's ToR property cache (pull): the rows
that cross the spine in one SpMM, per mechanism, on the shared graphs (:mod:`hw_models.seeds.aggregate_vs_cache`).
All modeled.

    python -m netsparse_torch.cli.aggregate_vs_cache [--graphs ego-twitter ...] [--nodes 128] [--rack-size 16]
"""

from __future__ import annotations

import argparse

from hw_models.mtx import default_data_root, read_mtx
from hw_models.seeds.aggregate_vs_cache import DEFAULT_GRAPHS, compare
from netsparse_torch.report import markdown as md


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", nargs="+", default=list(DEFAULT_GRAPHS))
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--rack-size", type=int, default=16)
    args = ap.parse_args(argv)
    print(f"Rows crossing the spine in one SpMM, {args.nodes} nodes, racks of {args.rack_size} (modeled)\n")
    keys = ("pull", "pull_cache_inf", "push", "push_switch_aggregate")
    graphs = default_data_root() / "graphs"
    results = {name: compare(read_mtx(graphs / f"{name}.mtx.gz"), args.nodes, args.rack_size) for name in args.graphs}
    rows = ([name] + [f"{r[k]:,}" for k in keys] for name, r in results.items())
    print("\n".join(md.table(["graph", "pull (SA)", "pull + ToR cache (inf)", "push", "push + ToR sums"], rows,
                             align="-rrrr")))


if __name__ == "__main__":
    main()
