"""The figures and the breakdown table written beside a ``netsparse-simulate`` report (formatting only;
every value modeled). Each figure's title names the matrix, K and the cluster; times are in
microseconds; legends sit outside the axes."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from netsparse_torch.report.plots import figure, legend_outside, one_x

Series = dict[str, tuple[list, list]]
"""``{label: (xs, ys)}``: what one figure draws, as plain data (tests compare it with the report)."""

PLOT_GROUPS: dict[str, tuple[str, ...]] = {
    "RIG idx scan (client units)": ("scan_local", "scan_filtered", "scan_coalesced", "scan_issued"),
    "Idx Filter loads (SNIC memory)": ("filter_lsq", "filter_l1", "filter_l2", "filter_llc", "filter_dram"),
    "full Pending PR Table": ("pending_full",),
    "NIC: Tx link and concatenation": ("tx_link", "nic_concat"),
    "switches: latency, middle pipes, concatenation": ("switch_latency", "switch_middle", "switch_concat"),
    "switch-to-switch links": ("switch_links",),
    "Rx link and Rx (responses in)": ("rx_link", "rx"),
    "remote servers and host commands": ("remote_server", "host"),
}
"""The resources of the critical-path breakdown (``hw_models.breakdown.WORDS``) in at most eight plain
groups, one colour each (tab10), for ``critical_path.png``."""

_SPEEDUP_BARS = (("SUOpt", "su_opt"), ("SAOpt", "sa_opt"), ("NetSparse", "netsparse"), ("Two-Face", "two_face"),
                 ("SNIC sw", "snic_sw"), ("ToR sums", "switch_aggregate"))


def _known(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def title(report: dict) -> str:
    """What a figure shows: the matrix, the kernel and K, the cluster (every figure's title)."""
    c = report["cluster"]
    return f"{report['matrix'].get('name', 'matrix')}, {report['kernel']} K={report['k']}, " \
           f"{c['nodes']} nodes {c['topology']}"


def figure_series(report: dict) -> dict[str, Series]:
    """The data of each figure the report has data for, by file name: ``speedup.png`` (speedup vs SUOpt
    per strategy), ``ablation.png`` (per Table 8 stage; ``nan``, no bar, where a stage has none),
    ``active_nodes.png`` (active nodes over time, us) and ``critical_path.png`` (the same, stacked by
    what bounds each node, in :data:`PLOT_GROUPS`: ``{group: (t_us, nodes)}``; groups with no node
    left out)."""
    st = report["strategies"]
    su = st["su_opt"]["comm_time_s"]
    bars = [(label, su / st[key]["comm_time_s"]) for label, key in _SPEEDUP_BARS
            if st.get(key, {}).get("comm_time_s")]
    out = {"speedup.png": {"speedup vs SUOpt": ([b[0] for b in bars], [b[1] for b in bars])}}
    if report["ablation"]:
        ab = report["ablation"]
        out["ablation.png"] = {"speedup vs SUOpt": (
            [a["stage"] for a in ab],
            [a["speedup_vs_su_opt"] if _known(a["speedup_vs_su_opt"]) else math.nan for a in ab])}
    if report["active_nodes"]:
        an = report["active_nodes"]
        out["active_nodes.png"] = {"active nodes": ([t * 1e6 for t in an["t_s"]], list(an["count"]))}
    cp = report.get("critical_path")
    if cp and cp["nodes"]:
        t_us = [t * 1e6 for t in cp["t_s"]]
        out["critical_path.png"] = {g: (t_us, ys) for g, ys in grouped(cp["nodes"]).items() if any(ys)}
    return out


def grouped(nodes: dict[str, list[float]]) -> dict[str, list[float]]:
    """Per-resource series summed into :data:`PLOT_GROUPS` (groups in their order)."""
    length = len(next(iter(nodes.values()))) if nodes else 0
    out = {}
    for group, members in PLOT_GROUPS.items():
        parts = [nodes[m] for m in members if m in nodes]
        out[group] = [sum(v) for v in zip(*parts, strict=True)] if parts else [0.0] * length
    return out


def save_figures(report: dict, out_dir: Path) -> list[Path]:
    """Draw :func:`figure_series` beside the report: speedups carry a 1x line (below it: slower than
    SUOpt), times are in microseconds."""
    draw = {"speedup.png": _draw_speedup, "ablation.png": _draw_ablation, "active_nodes.png": _draw_active}
    out = []
    for name, series in figure_series(report).items():
        out.append(out_dir / name)
        if name == "critical_path.png":
            with figure(out[-1], figsize=(8, 3.5)) as (_, ax):
                _draw_bounds(ax, series)
                ax.set_title(title(report), fontsize=9)
            continue
        (xs, ys), = series.values()
        size = (max(4.5, 1.2 + 0.8 * len(xs)), 3) if name == "speedup.png" else (5.5, 3)
        with figure(out[-1], figsize=size) as (_, ax):
            draw[name](ax, xs, ys)
            ax.set_title(title(report), fontsize=9)
    return out


def _draw_speedup(ax, labels: list, speed: list) -> None:
    ax.bar(labels, speed, color=[f"C{i}" for i in range(len(speed))])
    one_x(ax)
    if max(speed) / min(speed) > 20:  # SAOpt is often 30x slower than SUOpt
        ax.set_yscale("log")
    ax.set_ylabel("speedup vs SUOpt (modeled)")
    ax.tick_params(axis="x", labelrotation=20, labelsize=7)


def _draw_ablation(ax, stages: list, speed: list) -> None:
    ax.bar(stages, speed)
    one_x(ax)
    ax.set_ylabel("speedup vs SUOpt (modeled)")
    ax.set_xlabel("mechanisms added cumulatively (Table 8)")
    ax.tick_params(axis="x", labelsize=7)


def _draw_active(ax, t_us: list, count: list) -> None:
    ax.step(t_us, count, where="post")
    ax.set_xlabel("time (us, modeled)")
    ax.set_ylabel("active nodes")
    ax.set_ylim(bottom=0)


def _draw_bounds(ax, series: Series) -> None:
    """NetSparse Fig. 19 split by what bounds each node: active nodes over time, stacked by group."""
    (t_us, _), *_ = series.values()
    import matplotlib

    palette, order = matplotlib.colormaps["tab10"].colors, list(PLOT_GROUPS)  # a group keeps its colour
    ax.stackplot(t_us, *[ys for _, ys in series.values()], labels=list(series),
                 colors=[palette[order.index(g)] for g in series])
    ax.set_xlabel("time (us, modeled)")
    ax.set_ylabel("active nodes, by what bounds them")
    ax.set_ylim(bottom=0)
    legend_outside(ax, fontsize=7)


BREAKDOWN_COLUMNS = ("node", "time_us", "bound")


def write_breakdown_csv(report: dict, path: Path) -> Path | None:
    """The whole critical-path breakdown as CSV: one row per node (the summary prints the tail node's
    three largest resources), its time and bound, and microseconds per resource (named as
    ``hw_models.breakdown.WORDS`` keys them; docs/simulator.md says each in words). ``None`` without a
    breakdown (a report of a run without the simulator)."""
    per = (report["strategies"].get("netsparse") or {}).get("per_node")
    if not per:
        return None
    resources = list(per["breakdown_s"])
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*BREAKDOWN_COLUMNS, *(f"{r}_us" for r in resources)])
        for node, (t, bound) in enumerate(zip(per["time_s"], per["bound"], strict=True)):
            us = [per["breakdown_s"][r][node] * 1e6 for r in resources]
            w.writerow([node, f"{t * 1e6:.9g}", bound, *(f"{u:.9g}" for u in us)])
    return path
