"""NetCrafter's pooling-window sweep (docs/seeds.md) as a Markdown table: flits, padding, stitching and
latency for each window W, with and without selective pooling. All modeled.

    python -m netsparse_torch.cli.netcrafter_sweep
"""

from __future__ import annotations

from hw_models.seeds.netcrafter import pool_sweep
from netsparse_torch.report import markdown as md


def sweep_markdown(windows: list[int], n: int, seed: int) -> str:
    head = ["W", "selective", "flits", "vs no stitching", "padding", "stitched", "mean latency", "page-table latency"]
    rows = ([r["W"], "class 1" if selective == 1 else "off", r["flits"], f"-{100 * r['flit_saving']:.1f}%",
             f"{100 * r['padding_fraction']:.1f}%", f"{100 * r['stitched_fraction']:.1f}%",
             f"{r['mean_latency']:.1f}", f"{r['class1_latency']:.1f}"]
            for selective in (-1, 1) for r in pool_sweep(windows, n=n, seed=seed, selective_class=selective))
    return "\n".join(md.table(head, rows))


def main() -> None:
    print(sweep_markdown([0, 4, 8, 16, 32, 64, 128], n=20000, seed=0))


if __name__ == "__main__":
    main()
