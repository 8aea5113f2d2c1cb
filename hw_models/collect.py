"""Collect the JSON reports of a ``netsparse-simulate`` sweep into one Markdown table.

    python -m hw_models.collect table1 docs/experiments/table1 [--out docs/experiments/table1.md]

Each experiment config in ``configs/experiment/`` writes its reports to ``report_dir``; the table
kinds below pick the report keys the paper's table or figure shows. All values are modeled.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

Column = tuple[str, str]
"""(header, dotted path into the report)."""

_ID: list[Column] = [("matrix", "matrix.name"), ("nodes", "cluster.nodes"), ("topology", "cluster.topology"),
                     ("K", "k")]
_NS: list[Column] = [("NetSparse vs SUOpt", "speedup.netsparse_vs_su_opt"),
                     ("NetSparse vs SAOpt", "speedup.netsparse_vs_sa_opt")]

TABLES: dict[str, list[Column]] = {
    "table1": _ID[:2] + [("useful", "redundancy.useful_transfers"), ("SA PRs", "redundancy.sa_prs"),
                         ("SU transfers", "redundancy.su_transfers"),
                         ("SU redundant/useful", "redundancy.su_redundant_per_useful"),
                         ("SA redundant/useful", "redundancy.sa_redundant_per_useful")],
    "table3": [("K", "k"), ("SA header fraction", "header_fraction_sa")],
    "table4": _ID[:2] + [("dest locality (64 PRs)", "dest_locality_64")],
    "table7": _ID + [("FC rate", "strategies.netsparse.tail.fc_rate"),
                     ("PRs/packet", "strategies.netsparse.tail.prs_per_packet"),
                     ("PCache hit", "strategies.netsparse.tail.pcache_hit_rate"),
                     ("Gput SA", "strategies.sa_opt.goodput"), ("Gput NS", "strategies.netsparse.tail.goodput"),
                     ("line util", "strategies.netsparse.tail.line_util"),
                     ("traffic vs SU", "strategies.netsparse.tail.traffic_vs_su"),
                     ("PRs vs SA", "strategies.netsparse.tail.prs_vs_sa")],
    "speedup": _ID + [("SUOpt us", "strategies.su_opt.comm_time_s"), ("SAOpt us", "strategies.sa_opt.comm_time_s"),
                      ("SAOpt vs SUOpt", "speedup.sa_opt_vs_su_opt")] + _NS,
}
"""Table kinds: ``speedup`` serves Fig. 12 (K sweep), Figs. 15-18 (parameter sweeps) and Fig. 22."""

_MICRO = {"strategies.su_opt.comm_time_s", "strategies.sa_opt.comm_time_s"}


def lookup(report: dict, path: str):
    """The value at a dotted path, or ``None`` when any part is missing."""
    node = report
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def fmt(value, micro: bool = False) -> str:
    """Compact cell text; ``n/a`` for missing values (e.g. NetSparse before the simulator exists)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if micro:
        value *= 1e6
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4g}"


def load_reports(directory: Path) -> list[dict]:
    """Every ``*.json`` report in ``directory``, sorted by matrix, nodes, topology, K and file name."""
    files = sorted(Path(directory).glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no JSON reports in {directory}; run the experiment first")
    reports = [dict(json.loads(f.read_text()), _file=f.stem) for f in files]
    paths = [p for _, p in _ID]

    def key(r: dict) -> tuple:
        vals = [lookup(r, p) for p in paths]
        # numbers sort numerically, names alphabetically (a path holds one kind of value in all reports)
        return tuple((0, v, "") if isinstance(v, int | float) else (1, 0, str(v)) for v in vals) + (r["_file"],)

    return sorted(reports, key=key)


def markdown(kind: str, reports: list[dict]) -> list[str]:
    """The Markdown table of ``kind`` over ``reports``."""
    if kind == "strong_scaling":
        return _strong_scaling(reports)
    if kind not in TABLES:
        raise ValueError(f"unknown table {kind!r}; choose one of {', '.join([*TABLES, 'strong_scaling'])}")
    cols = TABLES[kind] + ([("run", "_file")] if kind == "speedup" else [])
    lines = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in reports:
        lines.append("| " + " | ".join(fmt(lookup(r, p), p in _MICRO) for _, p in cols) + " |")
    return lines


def _strong_scaling(reports: list[dict]) -> list[str]:
    head = ["matrix", "compute", "nodes", "compute us", "SUOpt comm us", "SUOpt no-overlap us",
            "SUOpt full-overlap us", "SAOpt comm us", "SAOpt no-overlap us", "SAOpt full-overlap us"]
    keys = ["compute_s", "su_opt_comm_s", "su_opt_no_overlap_s", "su_opt_full_overlap_s", "sa_opt_comm_s",
            "sa_opt_no_overlap_s", "sa_opt_full_overlap_s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        for row in (r.get("strong_scaling") or {}).get("rows", []):
            cells = [r["matrix"]["name"], row["compute_model"], str(row["nodes"])]
            lines.append("| " + " | ".join(cells + [fmt(row[k], micro=True) for k in keys]) + " |")
    return lines


def plot(kind: str, reports: list[dict], out: Path) -> list[Path]:
    """PNG figures: speedup vs SUOpt per matrix (bars per K/topology/run), or strong scaling curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.parent.mkdir(parents=True, exist_ok=True)
    if kind == "strong_scaling":
        return [_plot_scaling(plt, reports, model, out.with_name(f"{out.stem}_{model}.png"))
                for model in sorted({row["compute_model"] for r in reports
                                     for row in (r.get("strong_scaling") or {}).get("rows", [])})]
    matrices = sorted({r["matrix"]["name"] for r in reports})
    variants = sorted({_variant(r) for r in reports}, key=lambda v: (len(v), v))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(matrices) * max(1, len(variants)) / 2), 3.5))
    width = 0.8 / (2 * len(variants))
    for j, v in enumerate(variants):
        for s, (key, label) in enumerate((("sa_opt_vs_su_opt", "SAOpt"), ("netsparse_vs_su_opt", "NetSparse"))):
            ys = [next((r["speedup"][key] or 0 for r in reports if r["matrix"]["name"] == m and _variant(r) == v), 0)
                  for m in matrices]
            xs = [i + (2 * j + s) * width - 0.4 for i in range(len(matrices))]
            ax.bar(xs, ys, width, label=f"{label} {v}", align="edge")
    ax.set_xticks(range(len(matrices)), matrices, rotation=30, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set_ylabel("speedup vs SUOpt (modeled)")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return [out]


def _variant(r: dict) -> str:
    tag = r["_file"].rsplit(f"-k{r['k']}", 1)[-1]  # the sweep's tag suffix, e.g. _b4096
    return f"K={r['k']} {r['cluster']['topology']}{tag}"


def _plot_scaling(plt, reports: list[dict], model: str, out: Path) -> Path:
    n = len(reports)
    cols = min(3, n)
    fig, axes = plt.subplots((n + cols - 1) // cols, cols, figsize=(3.2 * cols, 2.6 * ((n + cols - 1) // cols)),
                             squeeze=False)
    for ax, r in zip(axes.ravel(), reports, strict=False):
        rows = [row for row in r["strong_scaling"]["rows"] if row["compute_model"] == model]
        nodes = [row["nodes"] for row in rows]
        for key, style in (("su_opt_no_overlap_s", "C0-"), ("su_opt_full_overlap_s", "C0--"),
                           ("sa_opt_no_overlap_s", "C1-"), ("sa_opt_full_overlap_s", "C1--")):
            ax.plot(nodes, [row[key] * 1e6 for row in rows], style, label=key.replace("_s", "").replace("_", " "))
        ax.plot(nodes, [row["compute_s"] * 1e6 for row in rows], "k:", label="compute only")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(r["matrix"]["name"], fontsize=8)
        ax.set_xlabel("nodes", fontsize=7)
        ax.set_ylabel("us (modeled)", fontsize=7)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=5)
    fig.suptitle(f"strong scaling, compute model {model}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: print (and optionally write) the table."""
    ap = argparse.ArgumentParser(prog="python -m hw_models.collect", description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=[*TABLES, "strong_scaling"])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--out", type=Path, help="also write the Markdown table here")
    ap.add_argument("--png", type=Path, help="also save figure(s) here (speedup, table7, strong_scaling)")
    args = ap.parse_args(argv)
    try:
        reports = load_reports(args.directory)
    except FileNotFoundError as exc:
        print(f"hw_models.collect: error: {exc}", file=sys.stderr)
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
