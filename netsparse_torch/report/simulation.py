"""The printed summary and the figures of a ``netsparse-simulate`` report (formatting only; the report
is :mod:`netsparse_torch.run.simulation`'s). Every value in them is modeled."""

from __future__ import annotations

import math

from hw_models import breakdown
from hw_models.analysis import EXTRA_STRATEGIES
from hw_models.simulator import STAGES
from netsparse_torch.report import markdown as md


def _fmt(x, unit: str = "") -> str:
    """Four significant digits in fixed notation (``64,660 us``, never ``6.466e+04 us``)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{fixed(x)}{unit}"


def fixed(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits as ``.4g`` writes it, but without an exponent: thousands
    separated above 10,000, as many decimals as needed below 0.0001."""
    text = f"{x:.{digits}g}"
    if "e" not in text or not math.isfinite(x):
        return text
    if abs(x) >= 1:
        return f"{x:,.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{decimals}f}".rstrip("0").rstrip(".")


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
    m, c = report["matrix"], report["cluster"]
    return [
        f"### {matrix_label(report)}: {m['rows']:,} x {m['cols']:,}, {m['nnz']:,} nnz on {c['nodes']} nodes "
        f"({network_words(report)}), {kernel_words(report)}, partition={report['partition']}",
        "",
        "All numbers are modeled (hw_models), none measured. The tail node is the node that finishes last.",
        hardware_line(report),
        "",
        *md.table(["quantity", "value"], [*_workload_rows(report), *_time_rows(report), *_speed_rows(report)]),
        "",
        "Speedups in the JSON report are time ratios (baseline time / this time): above 1x faster, "
        "below 1x means slower.",
        *_ablation_lines(report),
        *_skipped_lines(report),
        "",
        "Terms (PR, RIG, Idx Filter, Pending PR Table, middle pipe, SUOpt, SAOpt, goodput, ...) in plain words: "
        "netsparse-simulate --explain, or docs/simulator.md (\"Terms\").",
    ]


def network_words(report: dict) -> str:
    """The network as simulated: racks of a leaf-spine, hosts per switch of HyperX and Dragonfly (which
    have no racks: their ``rack_size`` is not read)."""
    c, topo = report["cluster"], report["hardware"]["topology"]
    if c["topology"] == "hyperx":
        shape = "x".join(str(d) for d in topo["hyperx_shape"])
        return f"HyperX {shape}, {topo['hyperx_hosts_per_switch']} hosts per switch"
    if c["topology"] == "dragonfly":
        return (f"Dragonfly, {topo['dragonfly_groups']} groups of {topo['dragonfly_switches_per_group']} switches, "
                f"{topo['dragonfly_hosts_per_switch']} hosts per switch")
    return f"{c['topology']}, {c['rack_size']} nodes per rack"


def kernel_words(report: dict) -> str:
    """``spmm with K=16 values per row``; SpMV multiplies by a vector (K=1)."""
    if report["kernel"] == "spmv":
        return "spmv (a vector: K=1 value per row)"
    return f"{report['kernel']} with K={report['k']} values per row"


def hardware_line(report: dict) -> str:
    """The hardware fields of this run that differ from NetSparse Table 5 (``HardwareParams``' defaults)."""
    from hw_models.params import HardwareParams

    table5 = HardwareParams().to_dict()
    changed = [f"hw.{section}.{name}={_show(value)} (Table 5: {_show(table5[section][name])})"
               for section, fields in report["hardware"].items() for name, value in fields.items()
               if _norm(value) != _norm(table5[section][name])]
    if not changed:
        return "Hardware: NetSparse Table 5 (hw_models/params.py), no field changed."
    return f"Hardware differing from NetSparse Table 5: {', '.join(changed)}."


def _norm(value):
    """A hardware value as JSON reads it back (tuples as lists, infinity as ``"inf"``)."""
    if isinstance(value, tuple | list):
        return [_norm(v) for v in value]
    return "inf" if isinstance(value, float) and math.isinf(value) else value


def _show(value) -> str:
    value = _norm(value)
    return "x".join(map(str, value)) if isinstance(value, list) else str(value)


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
    rows = [("what bounds the tail node (its critical path)", breakdown.in_words(t["breakdown_s"], ns["tail_node"]))]
    scan = breakdown.scan_in_words(t["breakdown_s"])
    if any(part.split()[-2] != "0" for part in scan.split(", ")):  # a line of zeros says nothing: dropped
        rows.append(("its RIG client idx scan, by idx", scan))
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
