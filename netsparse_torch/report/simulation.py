"""The printed summary and the figures of a ``netsparse-simulate`` report (formatting only; the report
is :mod:`netsparse_torch.run.simulation`'s). Every value in them is modeled."""

from __future__ import annotations

import math
from pathlib import Path

from hw_models import breakdown
from hw_models.analysis import EXTRA_STRATEGIES
from hw_models.simulator import STAGES
from netsparse_torch.report import markdown as md
from netsparse_torch.report.plots import figure, one_x


def _fmt(x, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.4g}{unit}"


def _known(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def faster(ratio, a: str, b: str) -> str:
    """``ratio`` = time of ``b`` / time of ``a`` in words with its direction: ``"NetSparse is 12.3x faster
    than SUOpt"`` or ``"SAOpt is 28.35x slower than SUOpt"`` (the JSON's speedups are such ratios, and a
    bare 0.03528 makes the reader guess which way it goes)."""
    if not _known(ratio) or ratio <= 0 or math.isinf(ratio):
        return "n/a"
    if _fmt(ratio) == "1":
        return f"{a} takes as long as {b}"
    return f"{a} is {_fmt(ratio)}x faster than {b}" if ratio > 1 else f"{a} is {_fmt(1 / ratio)}x slower than {b}"


def more(ratio, a: str, b: str, verb: str, noun: str) -> str:
    """``ratio`` = amount of ``a`` / amount of ``b`` in words, the larger side first: ``"SUOpt moves 776x
    more bytes than NetSparse"``."""
    if not _known(ratio) or ratio <= 0 or math.isinf(ratio):
        return "n/a"
    if _fmt(ratio) == "1":
        return f"{a} {verb} as many {noun} as {b}"
    return f"{a} {verb} {_fmt(ratio)}x more {noun} than {b}" if ratio > 1 else \
        f"{b} {verb} {_fmt(1 / ratio)}x more {noun} than {a}"


def matrix_label(report: dict) -> str:
    """The matrix's name, and what it is when the name alone misleads (a ``paper:`` analog)."""
    m = report["matrix"]
    return f"{m.get('name', 'matrix')}, a {m['label']}" if m.get("label") else m.get("name", "matrix")


def summary_lines(report: dict) -> list[str]:
    """A Markdown summary in plain words (all modeled), the paper's table or section in brackets: the
    workload, each strategy's time, NetSparse at its tail node, the speed ratios with their direction,
    and the ablation when the run made one."""
    m, c, k = report["matrix"], report["cluster"], report["k"]
    return [
        f"### {matrix_label(report)}: {m['rows']:,} x {m['cols']:,}, {m['nnz']:,} nnz on {c['nodes']} nodes "
        f"({c['topology']}, {c['rack_size']} nodes per rack), {report['kernel']} with K={k} values per row, "
        f"partition={report['partition']}",
        "",
        "All numbers are modeled (hw_models), none measured. The tail node is the node that finishes last.",
        "",
        *md.table(["quantity", "value"], [*_workload_rows(report), *_time_rows(report), *_speed_rows(report)]),
        "",
        "Speedups in the JSON report are time ratios (baseline time / this time): above 1x faster, "
        "below 1x means slower.",
        *_ablation_lines(report),
        *_skipped_lines(report),
    ]


def _workload_rows(report: dict) -> list[tuple[str, str]]:
    """The workload statistics of NetSparse §3 and the SAOpt rank layout."""
    r, sa, nodes = report["redundancy"], report["strategies"]["sa_opt"], report["cluster"]["nodes"]
    cores = sa["cores"]  # = hw.software.cores of this run (hw_models.analysis.workload), not a constant
    return [
        # Table 1's SA reads every remote nonzero (no filtering); SAOpt below filters per rank.
        ("remote row reads: useful (distinct per node) / SA (one per remote nonzero) / SU (all-gather) [Table 1]",
         f"{r['useful_transfers']:,} / {r['sa_prs']:,} / {r['su_transfers']:,}"),
        ("redundant reads per useful one, SU and SA [Table 1]",
         f"{_fmt(r['su_redundant_per_useful'])}, {_fmt(r['sa_redundant_per_useful'])}"),
        ("distinct destination nodes in 64 consecutive read requests [Table 4]",
         _fmt(report["dest_locality_64"]) if _known(report["dest_locality_64"]) else "n/a (no node has 64)"),
        ("share of SAOpt's bytes that are headers [Table 3]", _fmt(100 * report["header_fraction_sa"], " %")),
        ("SAOpt ranks (one per core, hw.software.cores) [§8.1]",
         f"{cores} per node x {nodes} nodes = {cores * nodes:,}; a node's rows split among them by "
         f"{_RANK_SPLIT[report['hardware']['software']['rank_partition']]} (hw.software.rank_partition)"),
        ("SAOpt read requests (each rank filters only its own repeats) [§9.1]",
         f"{sa['prs']:,} ({sa['prs_per_node_filtering']:,} if each node filtered once)"),
    ]


def _time_rows(report: dict) -> list[tuple[str, str]]:
    """Each strategy's communication time, the flit layer and NetSparse at the tail node."""
    st = report["strategies"]
    ns = st.get("netsparse", {})
    return [
        ("SUOpt comm time", _fmt(st["su_opt"]["comm_time_s"] * 1e6, " us")),
        ("SAOpt comm time, goodput",
         f"{_fmt(st['sa_opt']['comm_time_s'] * 1e6, ' us')}, {_fmt(100 * st['sa_opt']['goodput'], ' %')} "
         "of the line rate"),
        *[(f"{label} comm time", _time_or_status(st[key])) for label, key in SEED_ROWS if key in st],
        (f"NetSparse comm time{' (flits on inter-rack links)' if ns.get('link_layer') else ''}",
         _time_or_status(ns)),
        *_link_layer_rows(ns.get("link_layer")),
        *_table7_rows(ns, report["hardware"]["link"]["line_util_direction"]),
        *_bound_rows(ns),
    ]


def _bound_rows(ns: dict) -> list[tuple[str, str]]:
    """What held the tail node up (its critical path, docs/simulator.md) and the busiest ToR middle pipe."""
    t = ns.get("tail", {})
    if "breakdown_s" not in t:
        return []
    rows = [("what bounds the tail node (its critical path)", breakdown.in_words(t["breakdown_s"], ns["tail_node"])),
            ("its RIG client idx scan, by idx", breakdown.scan_in_words(t["breakdown_s"]))]
    if t.get("pending_full_by_s"):
        rows.append(("what its stalls on a full Pending PR Table waited for (responses' journeys, approx.)",
                     breakdown.shares_in_words(t["pending_full_by_s"])))
    sw = (ns.get("switch_pipes") or {}).get("summary") or {}
    if sw.get("busiest"):
        b = sw["busiest"]
        rows.append(("busiest ToR middle pipe (one PR per switch cycle)",
                     f"switch {b['switch']} pipe {b['pipe']}: {b['prs']:,} PRs, "
                     f"{_fmt(sw['max_prs_per_cycle_mean'])} PRs per cycle arriving on average, "
                     f"{_fmt(sw['max_prs_per_cycle_peak'])} at peak (most of any pipe)"))
    return rows


def _speed_rows(report: dict) -> list[tuple[str, str]]:
    sp = report["speedup"]
    return [("speed, SAOpt vs SUOpt", faster(sp["sa_opt_vs_su_opt"], "SAOpt", "SUOpt")),
            ("speed, NetSparse vs SUOpt", faster(sp.get("netsparse_vs_su_opt"), "NetSparse", "SUOpt")),
            ("speed, NetSparse vs SAOpt", faster(sp.get("netsparse_vs_sa_opt"), "NetSparse", "SAOpt"))]


def _ablation_lines(report: dict) -> list[str]:
    """The Table 8 ablation (``ablation=true``): one row per stage, each adding one mechanism."""
    if not report["ablation"]:
        return []
    rows = [(f"+{a['stage']}" if i else a["stage"], faster(a["speedup_vs_su_opt"], "NetSparse", "SUOpt"),
             more(a["traffic_reduction_vs_su"], "SUOpt", "NetSparse", "moves", "bytes"),
             _fmt(100 * a["goodput"], " %") if _known(a["goodput"]) else "n/a")
            for i, a in enumerate(report["ablation"])]
    return ["", "Ablation [Table 8]: NetSparse with its mechanisms switched on one after another (each row adds "
            "one to the rows above):", "",
            *md.table(["mechanisms", "speed", "traffic, all nodes", "goodput at the tail node"], rows)]


def _skipped_lines(report: dict) -> list[str]:
    """What this run did not model and the override that adds it (the ablation and the extra
    strategies are extra simulations, run only when asked)."""
    lines = []
    if not report["ablation"] and "comm_time_s" in report["strategies"].get("netsparse", {}):
        lines.append(f"Skipped: the Table 8 ablation ({len(STAGES)} more simulations); add ablation=true.")
    missing = [s for s in EXTRA_STRATEGIES if s not in report["strategies"]]
    if missing:
        lines.append(f"Skipped: the modeled alternatives {', '.join(missing)}; add strategies=[{','.join(missing)}].")
    return ([""] if report["ablation"] and lines else []) + lines  # a blank line after the ablation table


_RANK_SPLIT = {"rows": "equal rows", "nnz": "balanced nonzeros"}
_DIRECTION = {"rx": "received bytes", "both": "bytes received and sent"}


def _table7_rows(ns: dict, direction: str) -> list[tuple[str, str]]:
    """NetSparse's read requests and its statistics at the tail node (NetSparse Table 7's Gput, Trfc and
    #PR columns; none without the simulator)."""
    if "tail" not in ns:
        return []
    t = ns["tail"]
    prs = (ns.get("simulator") or {}).get("read_prs")
    return [("NetSparse read requests", f"{prs:,}" if prs is not None else "n/a"),
            ("goodput at the tail node, NetSparse [Table 7]",
             _fmt(100 * t["goodput"], " % of the line rate") if _known(t.get("goodput")) else "n/a"),
            ("line utilisation at the tail node, NetSparse [Table 7]",
             _fmt(100 * t["line_util"], f" % ({_DIRECTION[direction]}, hw.link.line_util_direction)")
             if _known(t.get("line_util")) else "n/a"),
            ("traffic into the tail node [Table 7]",
             more(t.get("traffic_reduction_vs_su_opt"), "SUOpt", "NetSparse", "moves", "bytes")),
            ("read requests at the tail node [Table 7]",
             more(t.get("pr_reduction_vs_sa_opt"), "SAOpt", "NetSparse", "sends", "read requests"))]


SEED_ROWS = (("Two-Face", "two_face"), ("SmartNIC software (snic_sw)", "snic_sw"),
             ("ToR sums (switch_aggregate)", "switch_aggregate"))


def _link_layer_rows(ll: dict | None) -> list[tuple[str, str]]:
    """Summary rows of the NetCrafter flit layer (``link_layer=flit``), none in packet mode."""
    if not ll:
        return []
    return [(f"NetSparse inter-rack flits ({ll['config']['flit_bytes']} B)",
             f"{ll['flits']:,} flits, {ll['wire_bytes']:,} B on the wire vs {ll['packet_wire_bytes']:,} B as packets "
             f"({_fmt(ll['wire_bytes_vs_packet'])}x), padding {_fmt(100 * (ll['padding_fraction'] or 0), ' %')}, "
             f"stitched {_fmt(100 * (ll['stitched_fraction'] or 0), ' %')} of packets"),
            ("flit layer timing", f"{ll['timing']}; last inter-rack flit at {_fmt(ll['flit_finish_s'] * 1e6, ' us')}")]


def _time_or_status(block: dict) -> str:
    return _fmt(block["comm_time_s"] * 1e6, " us") if "comm_time_s" in block else str(block.get("status", "n/a"))


# -- figures ----------------------------------------------------------------------------------------
Series = dict[str, tuple[list, list]]
"""``{label: (xs, ys)}``: what one figure draws, as plain data (tests compare it with the report)."""


def figure_series(report: dict) -> dict[str, Series]:
    """The data of each figure the report has data for, by file name: ``speedup.png`` (speedup vs SUOpt
    per strategy), ``ablation.png`` (per Table 8 stage; ``nan``, no bar, where a stage has none),
    ``active_nodes.png`` (active nodes over time, us) and ``critical_path.png`` (the same, stacked by the
    resource bounding each node: ``{resource: (t_us, nodes)}``)."""
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
        out["critical_path.png"] = {b: (t_us, list(v)) for b, v in cp["nodes"].items()}
    return out


def save_figures(report: dict, out_dir: Path) -> list[Path]:
    """Draw :func:`figure_series` beside the report: speedups carry a 1x line (below it: slower than
    SUOpt), times are in microseconds."""
    draw = {"speedup.png": _draw_speedup, "ablation.png": _draw_ablation, "active_nodes.png": _draw_active}
    out = []
    for name, series in figure_series(report).items():
        out.append(out_dir / name)
        if name == "critical_path.png":
            with figure(out[-1], figsize=(6, 3.5)) as (_, ax):
                _draw_bounds(ax, series)
            continue
        (xs, ys), = series.values()
        size = (1.2 + 0.8 * len(xs), 3) if name == "speedup.png" else (5, 3)
        with figure(out[-1], figsize=size) as (_, ax):
            draw[name](ax, xs, ys, report)
    return out


def _draw_speedup(ax, labels: list, speed: list, report: dict) -> None:
    ax.bar(labels, speed, color=[f"C{i}" for i in range(len(speed))])
    one_x(ax)
    if max(speed) / min(speed) > 20:  # SAOpt is often 30x slower than SUOpt
        ax.set_yscale("log")
    ax.set_ylabel("speedup vs SUOpt (modeled)")
    ax.tick_params(axis="x", labelrotation=20, labelsize=7)
    ax.set_title(f"{report['matrix'].get('name', '')} K={report['k']}", fontsize=9)


def _draw_ablation(ax, stages: list, speed: list, report: dict) -> None:
    ax.bar(stages, speed)
    one_x(ax)
    ax.set_ylabel("speedup vs SUOpt (modeled)")
    ax.set_xlabel("mechanisms added cumulatively (Table 8)")
    ax.tick_params(axis="x", labelsize=7)


def _draw_active(ax, t_us: list, count: list, report: dict) -> None:
    ax.step(t_us, count, where="post")
    ax.set_xlabel("time (us, modeled)")
    ax.set_ylabel("active nodes")
    ax.set_ylim(bottom=0)


def _draw_bounds(ax, series: Series) -> None:
    """NetSparse Fig. 19 split by resource: active nodes over time, stacked by what bounds each."""
    (t_us, _), *_ = series.values()
    import matplotlib

    palette, order = matplotlib.colormaps["tab20"].colors, list(breakdown.WORDS)  # one colour per resource
    ax.stackplot(t_us, *[ys for _, ys in series.values()], labels=list(series),
                 colors=[palette[order.index(b) % len(palette)] for b in series])
    ax.set_xlabel("time (us, modeled)")
    ax.set_ylabel("active nodes, by bound")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=5, ncol=2, loc="upper right")


_SPEEDUP_BARS = (("SUOpt", "su_opt"), ("SAOpt", "sa_opt"), ("NetSparse", "netsparse"), ("Two-Face", "two_face"),
                 ("SNIC sw", "snic_sw"), ("ToR sums", "switch_aggregate"))


