"""Collect the JSON reports of a ``netsparse-simulate`` sweep into one Markdown table.

    python -m netsparse_torch.cli.collect table7 outputs/experiments/fig12 --k 16 [--out fig12_table7.md]

Each experiment config in ``configs/experiment/`` writes its reports to ``report_dir``; the table
kinds below pick the report keys the paper's table or figure shows. All values are modeled, except in
``paper_training``, the table of a training sweep, whose measured columns say so.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from netsparse_torch.report import markdown as md
from netsparse_torch.report.plots import figure, legend_outside, one_x
from netsparse_torch.report.swept import actual_value, label, swept_keys

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
                     ("Gput", "strategies.netsparse.tail.goodput"), ("Gput SA", "strategies.sa_opt.goodput"),
                     ("Trfc vs SU", "strategies.netsparse.tail.traffic_reduction_vs_su_opt"),
                     ("#PR vs SA", "strategies.netsparse.tail.pr_reduction_vs_sa_opt"),
                     ("payload/wire", "strategies.netsparse.tail.payload_per_wire"),
                     ("line util", "strategies.netsparse.tail.line_util"),
                     ("SAOpt PRs", "strategies.sa_opt.prs"),
                     ("NetSparse PRs", "strategies.netsparse.simulator.read_prs")],
    "speedup": _ID + [("SUOpt us", "strategies.su_opt.comm_time_s"), ("SAOpt us", "strategies.sa_opt.comm_time_s"),
                      ("SAOpt vs SUOpt", "speedup.sa_opt_vs_su_opt")] + _NS,
    "sweep": _ID + [("NetSparse us", "strategies.netsparse.comm_time_s")] + _NS
    + [("PCache hit", "strategies.netsparse.tail.pcache_hit_rate"),
       ("PRs/packet", "strategies.netsparse.tail.prs_per_packet"),
       ("FC rate", "strategies.netsparse.tail.fc_rate"), ("Gput", "strategies.netsparse.tail.goodput"),
       ("line util", "strategies.netsparse.tail.line_util"),
       ("tail bound", "strategies.netsparse.tail.bound")],
}
"""Table kinds: ``speedup`` serves Fig. 12 (K sweep) and Fig. 22; ``sweep`` the parameter sweeps of
Figs. 15-18 (NetSparse time, tail statistics and the resource that bounds the tail, per swept value).
Table 7's columns read as the paper's: "Gput" and "Gput SA" are the tail node's useful payload over line
rate x time, "Trfc vs SU" and "#PR vs SA" are reductions (SUOpt bytes / NetSparse bytes, SAOpt's per-rank
filtered PRs / NetSparse PRs, at NetSparse's tail node); PR totals of the whole cluster follow."""

_MICRO = {"strategies.su_opt.comm_time_s", "strategies.sa_opt.comm_time_s", "strategies.netsparse.comm_time_s"}


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


def natural(name: str) -> tuple:
    """Sort key of a file name with numbers compared as numbers and ``.inf`` last: ``_b1024`` <
    ``_b4096`` < ``_b.inf`` (sweep tags)."""
    parts = [p for p in re.split(r"(\d+|\.inf)", name) if p]
    return tuple((0, math.inf if p == ".inf" else int(p), "") if p == ".inf" or p.isdigit() else (1, 0, p)
                 for p in parts)


def load_reports(directory: Path, k: int | None = None, table: str = "sweep") -> list[dict]:
    """Every report that ``table`` reads under ``directory`` (a training table's training reports, any
    other's simulator reports), searched recursively: a ``report_dir`` of named
    reports, or a Hydra multirun folder of any launcher (``<job>/report.json``; hidden folders such as
    ``.hydra`` and ``.submitit`` skipped; copies of one report kept once). Only those of property size
    ``k`` when given; sorted by matrix, nodes, topology, K and path (:func:`natural` order). Each carries
    ``_file``, its path under ``directory`` without ``.json``."""
    directory = Path(directory)
    files = sorted((p for p in directory.rglob("*.json")
                    if not any(part.startswith(".") for part in p.relative_to(directory).parts)),
                   key=lambda p: natural(str(p)))
    reports, seen = [], set()
    wanted = _is_training if table in TRAINING_TABLES else _is_simulation
    for f in files:
        report = _read(f)
        text = json.dumps(report, sort_keys=True)
        if wanted(report) and text not in seen:
            seen.add(text)
            reports.append(dict(report, _file=str(f.relative_to(directory).with_suffix(""))))
    if not reports:
        what = "training" if table in TRAINING_TABLES else "simulator"
        raise FileNotFoundError(f"no {what} reports under {directory}; run the experiment first (training "
                                "reports of other runs: netsparse-compare)")
    if k is not None:
        reports = [r for r in reports if r.get("k") == k]
        if not reports:
            raise FileNotFoundError(f"no JSON reports with K={k} in {directory}")
    paths = [p for _, p in _ID]

    def key(r: dict) -> tuple:
        vals = [lookup(r, p) for p in paths]
        # numbers sort numerically, names alphabetically (a path holds one kind of value in all reports)
        return tuple((0, v, "") if isinstance(v, int | float) else (1, 0, str(v)) for v in vals) + natural(r["_file"])

    return sorted(reports, key=key)


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _is_training(report) -> bool:
    return isinstance(report, dict) and report.get("kind") == "train"


def _is_simulation(report) -> bool:
    """A ``netsparse-simulate`` report (also one written before reports carried their kind)."""
    return isinstance(report, dict) and report.get("kind", "simulate") == "simulate" and "k" in report \
        and "matrix" in report


SHOWN = ("matrix", "nodes", "topology", "k")
"""Config keys the tables show in their identity columns (never a swept column of their own)."""


def markdown(kind: str, reports: list[dict]) -> list[str]:
    """The Markdown table of ``kind`` over ``reports``."""
    if kind in SPECIAL:
        return SPECIAL[kind](reports)
    if kind not in TABLES:
        raise ValueError(f"unknown table {kind!r}; choose one of {', '.join([*TABLES, *SPECIAL])}")
    swept = swept_keys(reports, SHOWN) if kind != "table3" else []
    cols = TABLES[kind]
    n_id = next((i for i, c in enumerate(cols) if c not in _ID), len(cols))  # the identity columns lead
    head, rest = cols[:n_id], cols[n_id:]
    run = ["run"] if kind in ("speedup", "sweep") else []
    rows = ([*(fmt(lookup(r, p), p in _MICRO) for _, p in head), *(fmt(actual_value(r, k)) for k in swept),
             *(fmt(lookup(r, p), p in _MICRO) for _, p in rest), *([r["_file"]] if run else [])] for r in reports)
    return md.table([h for h, _ in head] + swept + [h for h, _ in rest] + run, rows)


_SCALING = (("su_opt", "SUOpt"), ("sa_opt", "SAOpt"), ("netsparse", "NetSparse"))


def _strong_scaling(reports: list[dict]) -> list[str]:
    strats = [(s, n) for s, n in _SCALING if any(f"{s}_comm_s" in row for r in reports for row in _rows(r))]
    head = ["matrix", "compute", "nodes", "compute us"] + [f"{n} {what} us" for _, n in strats
                                                             for what in ("comm", "no-overlap", "full-overlap")]
    keys = ["compute_s"] + [f"{s}_{what}_s" for s, _ in strats for what in ("comm", "no_overlap", "full_overlap")]
    return md.table(head, ([r["matrix"]["name"], row["compute_model"], row["nodes"]]
                           + [fmt(row.get(k), micro=True) for k in keys] for r in reports for row in _rows(r)))


def _rows(report: dict) -> list[dict]:
    return (report.get("strong_scaling") or {}).get("rows", [])


def _table8(reports: list[dict]) -> list[str]:
    """NetSparse Table 8: the cumulative ablation, one row per matrix, one column per stage; each cell
    is ``speedup vs SUOpt / traffic reduction vs SU / goodput``."""
    stages = [a["stage"] for a in next((r["ablation"] for r in reports if r.get("ablation")), [])]
    named = any(_assumption(r) != "table5" for r in reports)  # a sensitivity sweep: say which run is which
    head = ["matrix", "nodes", "K"] + ["assumption"] * named + [s if i == 0 else f"+{s}" for i, s in enumerate(stages)]
    keys = ("speedup_vs_su_opt", "traffic_reduction_vs_su", "goodput")

    def cells(r: dict) -> list[str]:
        by_stage = {a["stage"]: a for a in r.get("ablation") or []}
        return [r["matrix"]["name"], fmt(r["cluster"]["nodes"]), fmt(r["k"])] + [_assumption(r)] * named + [
            " / ".join(fmt(by_stage[s][k]) for k in keys) if s in by_stage else "n/a" for s in stages]

    return md.table(head, (cells(r) for r in reports))


def _active_nodes(reports: list[dict]) -> list[str]:
    """NetSparse Fig. 19 in numbers: when the first node finishes and when the last does."""
    head = ["matrix", "nodes", "K", "first node done us", "half done us", "last node done us"]

    def cells(r: dict) -> list[str]:
        series = r.get("active_nodes") or {}
        t, count = series.get("t_s") or [], series.get("count") or []
        n = r["cluster"]["nodes"]
        first = next((ti for ti, c in zip(t, count, strict=True) if c < n), None)
        half = next((ti for ti, c in zip(t, count, strict=True) if c <= n / 2), None)
        last = next((ti for ti, c in zip(t, count, strict=True) if c == 0), None)
        return [r["matrix"]["name"], fmt(n), fmt(r["k"])] + [fmt(x, micro=True) for x in (first, half, last)]

    return md.table(head, (cells(r) for r in reports))


def _assumption(r: dict) -> str:
    """The ``configs/assumption/`` choice a report ran under (``table5``: the defaults)."""
    return (r.get("config") or {}).get("assumption_name") or "table5"


def _sensitivity(reports: list[dict]) -> list[str]:
    """Issue 26's sensitivity: one row per (matrix, assumption), per K the NetSparse time, its change
    against the same matrix and K under ``table5`` (the defaults), and the tail node's bound and share."""
    ks = sorted({r["k"] for r in reports})
    by = {(r["matrix"]["name"], _assumption(r), r["k"]): r for r in reports}
    rows = sorted({(m, a) for m, a, _ in by}, key=lambda ma: (ma[0], ma[1] != "table5", ma[1]))
    head = ["matrix", "assumption"] + [f"K={k} {what}" for k in ks for what in ("us", "vs table5", "tail bound")]

    def cells(m: str, a: str) -> list[str]:
        out = [m, a]
        for k in ks:
            r, base = by.get((m, a, k)), by.get((m, "table5", k))
            if r is None:
                out += ["n/a"] * 3
                continue
            ns = r["strategies"]["netsparse"]
            t, tail = ns["comm_time_s"], ns["tail"]
            change = f"{t / base['strategies']['netsparse']['comm_time_s'] - 1:+.1%}" if base else "n/a"
            share = tail["breakdown_s"][tail["bound"]] / t if t > 0 else 0.0
            out += [fmt(t, micro=True), change, f"node {ns['tail_node']}: {tail['bound']} {share:.0%}"]
        return out

    return md.table(head, (cells(m, a) for m, a in rows))


def _paper_training(reports: list[dict]) -> list[str]:
    """The training runs of ``+experiment=paper_training``, one row per analog: measured epoch time, feature
    bytes and peak RSS on this machine next to the modeled speedups of NetSparse over SUOpt / SAOpt on 128
    nodes, of the gathers and end to end (no overlap), on the trained graph and on its full-size original."""
    runs = [r for r in reports if r.get("kind") == "train" and r.get("modeled")]
    head = ["analog", "rows", "nonzeros", "ranks", "strategy", "epoch s (measured)", "feature B/epoch (measured)",
            "rank peak GiB (measured)", "gathers vs SUOpt / SAOpt (modeled)", "end to end (modeled)",
            "full size: gathers (modeled)", "full size: end to end (modeled)", "full-size model process (measured)"]

    def pair(block: dict | None, key: str) -> str:
        if not block:
            return "n/a"
        s = block[key] if key == "comm_speedup" else block[key]["none"]
        return f"{fmt(s['netsparse_vs_su_opt'])}x / {fmt(s['netsparse_vs_sa_opt'])}x"

    def process(block: dict | None) -> str:
        """What the model process of ``block`` cost; a block read whole from the cache says so (its
        pattern was generated and simulated by an earlier run)."""
        if not block or "process" not in block:
            return "n/a"
        p, cache = block["process"], block.get("model_cache") or {}
        cost = f"{fmt(p['peak_rss_bytes'] / 2**30)} GiB, {p['wall_s']:.0f} s"
        return cost + (", from the cache" if cache and not cache.get("gathers_computed") else "")

    def cells(r: dict) -> list:
        m, full = r["modeled"], r["modeled"].get("full_size")
        return [r["dataset"]["name"], fmt(r["dataset"]["nodes"]), fmt(r["dataset"]["nnz"]), fmt(r["world_size"]),
                r["strategy"], fmt(r["epoch_time_s"]["median"]), fmt(r["comm"]["feature_bytes_per_epoch"]),
                fmt(max(p["peak_rss_bytes"] for p in r["per_rank"]) / 2**30),
                pair(m, "comm_speedup"), pair(m, "end_to_end_speedup"), pair(full, "comm_speedup"),
                pair(full, "end_to_end_speedup"), process(full)]

    return md.table(head, (cells(r) for r in sorted(runs, key=lambda r: r["dataset"]["name"])))


SPECIAL = {"strong_scaling": _strong_scaling, "table8": _table8, "active_nodes": _active_nodes,
           "sensitivity": _sensitivity, "paper_training": _paper_training}
"""Table kinds with their own layout (Figs. 13/21, Table 8, Fig. 19, the sensitivity study, and the training
runs of ``+experiment=paper_training``)."""
TRAINING_TABLES = ("paper_training",)
"""Tables of training reports; the others read simulator reports."""


def plot(kind: str, reports: list[dict], out: Path) -> list[Path]:
    """PNG figures: speedup vs SUOpt per matrix (bars per K/topology/run), or strong scaling curves."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if kind == "strong_scaling":
        return [_plot_scaling(reports, model, out.with_name(f"{out.stem}_{model}.png"))
                for model in sorted({row["compute_model"] for r in reports for row in _rows(r)})]
    if kind == "active_nodes":
        return [_plot_active(reports, out)]
    if kind == "table8":
        return [_plot_ablation(reports, out)]
    if kind == "sweep":
        return [_plot_sweep(reports, out)]
    matrices = sorted({r["matrix"]["name"] for r in reports})
    swept = swept_keys(reports, ("matrix",))
    variants = sorted({_variant(r, swept) for r in reports}, key=lambda v: (len(v), v))
    width = 0.8 / (2 * len(variants))
    with figure(out, figsize=(max(6, 0.9 * len(matrices) * max(1, len(variants)) / 2), 3.5)) as (_, ax):
        for j, v in enumerate(variants):
            for s, (key, label) in enumerate((("sa_opt_vs_su_opt", "SAOpt"), ("netsparse_vs_su_opt", "NetSparse"))):
                ys = [next((r["speedup"][key] or 0 for r in reports if r["matrix"]["name"] == m
                            and _variant(r, swept) == v),
                           0) for m in matrices]
                xs = [i + (2 * j + s) * width - 0.4 for i in range(len(matrices))]
                ax.bar(xs, ys, width, label=f"{label} {v}", align="edge")
        ax.set_xticks(range(len(matrices)), matrices, rotation=30, ha="right", fontsize=7)
        ax.set_yscale("log")
        one_x(ax)
        ax.set_ylabel("speedup vs SUOpt (modeled)")
        legend_outside(ax)
    return [out]


def swept_values(reports: list[dict]) -> tuple[list[str], list[dict]]:
    """The swept keys of a simulator sweep (:func:`~netsparse_torch.report.swept.swept_keys`, the matrix
    left out) and each report's actual values of them."""
    keys = swept_keys(reports, ("matrix",))
    return keys, [{k: actual_value(r, k) for k in keys} for r in reports]


def _number(value) -> float | None:
    """A swept value as a number (``inf``/``.inf`` -> infinity), ``None`` when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).lstrip("."))  # ".inf" (YAML) and "inf" (strict JSON)
    except ValueError:
        return None


def _plot_sweep(reports: list[dict], out: Path) -> Path:
    """Figs. 15-18: NetSparse time and speedup over the swept value, one line per matrix (and per value of
    any second swept key); a log x axis for numeric values, infinity drawn right of the largest value."""
    keys, values = swept_values(reports)
    xkey = keys[0] if keys else "run"
    xs_raw = [v.get(xkey) if keys else r["_file"] for v, r in zip(values, reports, strict=True)]
    nums = [_number(x) for x in xs_raw]
    numeric = all(n is not None for n in nums)
    labels: dict[float, str] = {}
    if numeric:  # a log axis: 0 sits left of the smallest positive value, infinity right of the largest
        finite = [n for n in nums if math.isfinite(n) and n > 0] or [1.0]
        spot = {0.0: min(finite) / 4, math.inf: max(finite) * 4}
        xs = [spot.get(n, n) for n in nums]
        labels = {x: ("inf" if math.isinf(n) else f"{n:g}") for x, n in zip(xs, nums, strict=True)}
    else:
        order = list(dict.fromkeys(str(x) for x in xs_raw))
        xs = [order.index(str(x)) for x in xs_raw]
    series: dict[str, list[tuple]] = {}
    for r, x in zip(reports, xs, strict=True):
        label = legend(r, keys[1:])
        series.setdefault(label, []).append((x, lookup(r, "strategies.netsparse.comm_time_s"),
                                             lookup(r, "speedup.netsparse_vs_su_opt")))
    with figure(out, ncols=2, figsize=(9, 3.3)) as (_, (t_ax, s_ax)):
        for i, (label, pts) in enumerate(series.items()):
            pts.sort()
            for ax, j, scale in ((t_ax, 1, 1e6), (s_ax, 2, 1.0)):
                xy = [(p[0], p[j] * scale) for p in pts if p[j] is not None]
                if xy:
                    ax.plot(*zip(*xy, strict=True), marker="o", ms=3, color=f"C{i % 10}", label=label)
        one_x(s_ax)
        t_ax.set_ylabel("NetSparse comm time (us, modeled)")
        s_ax.set_ylabel("NetSparse speedup vs SUOpt (modeled)")
        for ax in (t_ax, s_ax):
            ax.set_xlabel(xkey)
            if numeric and all(x > 0 for x in xs):  # a negative swept value keeps a linear axis
                ax.set_xscale("log")
                ax.set_xticks(sorted(labels), [labels[x] for x in sorted(labels)], fontsize=7)
                ax.minorticks_off()
            elif not numeric:
                ax.set_xticks(range(len(order)), order, fontsize=7, rotation=30, ha="right")
        legend_outside(s_ax)
    return out


def legend(r: dict, keys: list[str]) -> str:
    """A curve's legend entry: the matrix, K and the values of ``keys``, the swept keys (what tells the
    curves apart)."""
    return label(r, [k for k in keys if k != "k"], f"{r['matrix']['name']} K={r['k']}")


def _variant(r: dict, keys: list[str]) -> str:
    """A bar's legend entry of the speedup figure: K, the topology and the other swept keys' values."""
    return label(r, [k for k in keys if k not in SHOWN], f"K={r['k']} {r['cluster']['topology']}")


def _plot_scaling(reports: list[dict], model: str, out: Path) -> Path:
    n = len(reports)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    with figure(out, dpi=110, layout_rect=(0, 0.1, 1, 1),  # room for the legend below the panels
                nrows=rows, ncols=cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False) as (fig, axes):
        _draw_scaling(fig, axes, reports, model)
    return out


def _draw_scaling(fig, axes, reports: list[dict], model: str) -> None:
    n = len(reports)
    for ax, r in zip(axes.ravel(), reports, strict=False):
        rows = [row for row in r["strong_scaling"]["rows"] if row["compute_model"] == model]
        nodes = [row["nodes"] for row in rows]
        for i, (strat, name) in enumerate(_SCALING):
            if f"{strat}_comm_s" not in rows[0]:
                continue
            for mode, style in (("no_overlap", "-"), ("full_overlap", "--")):
                ax.plot(nodes, [row[f"{strat}_{mode}_s"] * 1e6 for row in rows], f"C{i}{style}",
                        label=f"{name} {mode.replace('_', ' ')}")
        ax.plot(nodes, [row["compute_s"] * 1e6 for row in rows], "k:", label="compute only")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(r["matrix"]["name"], fontsize=8)
        ax.set_xlabel("nodes", fontsize=7)
        ax.set_ylabel("us (modeled)", fontsize=7)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, loc="lower center", ncol=4, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"strong scaling, compute model {model}", fontsize=9)


def _plot_active(reports: list[dict], out: Path) -> Path:
    swept = swept_keys(reports, ("matrix",))
    with figure(out, figsize=(5, 3)) as (_, ax):
        for r in reports:
            series = r.get("active_nodes") or {}
            ax.step([t * 1e6 for t in series.get("t_s") or []], series.get("count") or [], where="post",
                    label=legend(r, swept))
        ax.set_xlabel("time (us, modeled)")
        ax.set_ylabel("active nodes")
        legend_outside(ax)
    return out


def _plot_ablation(reports: list[dict], out: Path) -> Path:
    stages = [a["stage"] for a in (reports[0].get("ablation") or [])]
    width = 0.8 / max(1, len(stages))
    with figure(out, figsize=(7, 3.5)) as (_, ax):
        for j, stage in enumerate(stages):
            ys = [next((a["speedup_vs_su_opt"] or 0 for a in r.get("ablation") or [] if a["stage"] == stage), 0)
                  for r in reports]
            ax.bar([i + j * width - 0.4 for i in range(len(reports))], ys, width, label=stage, align="edge")
        swept = swept_keys(reports, ("matrix",))
        ax.set_xticks(range(len(reports)), [legend(r, swept) for r in reports], rotation=30, ha="right",
                      fontsize=7)
        ax.set_yscale("log")
        one_x(ax)
        ax.set_ylabel("speedup vs SUOpt (modeled)")
        legend_outside(ax)
    return out
