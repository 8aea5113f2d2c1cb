"""The printed lines of a training report's ``modeled`` block (the block itself is
:mod:`netsparse_torch.modeled`). Formatting only."""

from __future__ import annotations


def modeled_lines(block: dict | None, graph_nodes: int | None = None) -> list[str]:
    """The short modeled summary printed at the end of a training run (nothing for ``cluster=none``);
    with the graph's node count, a second line says in plain words what the communication times mean.
    The two lines compare different things, and say so: the first line's speedups are end to end (the
    slowest node's compute plus communication, no overlap), the second line's ratios communication alone,
    where the compute that every strategy shares does not dilute them."""
    if not block:
        return []
    return [_modeled_line(block)] + ([meaning_line(block, graph_nodes)] if graph_nodes else [])


def _ratio_words(a: float, b: float, name: str) -> str:
    """``"3.2x faster than SUOpt"`` or ``"4.3x slower than SUOpt"`` for times ``a`` (NetSparse) and ``b``."""
    return f"{b / a:.3g}x faster than {name}" if a <= b else f"{a / b:.3g}x slower than {name}"


def meaning_line(block: dict, graph_nodes: int) -> str:
    """What the modeled communication times say, with the reason each comparison goes the way it goes:
    SUOpt moves every row to every node in bulk, SAOpt only the needed rows as fine-grained messages,
    NetSparse the needed rows as filtered, coalesced and concatenated property reads (NetSparse §2, §8.1)."""
    t, nodes = block["comm_time_s"], block["cluster"]["nodes"]
    if t["netsparse"] is None:
        return f"  meaning      NetSparse was not modeled ({block['netsparse_status']})"
    k = sum(block["gathers_k"]) / max(len(block["gathers_k"]), 1)
    bulk = graph_nodes * k * 4 * (nodes - 1) / nodes  # float32 rows each node receives from an all-gather
    su = ("every node needs few of the rows, so fetching only those beats all-gathering"
          if t["netsparse"] <= t["su_opt"] else
          f"the whole graph is only {bulk / 1e3:,.0f} kB per node per gather here: one bulk all-gather costs "
          "less than fine-grained property reads, which pay off when each node needs a small share of a large "
          "graph")
    sa = ("NetSparse filters, coalesces and concatenates the reads SAOpt sends as separate small messages"
          if t["netsparse"] <= t["sa_opt"] else "SAOpt's messages are already few and large here")
    return (f"  meaning      communication alone: on {nodes} nodes one epoch's gathers with NetSparse would be "
            f"{_ratio_words(t['netsparse'], t['su_opt'], 'SUOpt')} ({su}) and "
            f"{_ratio_words(t['netsparse'], t['sa_opt'], 'SAOpt')} ({sa}) [modeled, NetSparse §8.1]")


def _modeled_line(block: dict) -> str:
    t, s = block["comm_time_s"], block["end_to_end_speedup"]["none"]
    c = block["cluster"]
    ns = f"{t['netsparse'] * 1e6:.4g} us" if t["netsparse"] is not None else block["netsparse_status"]
    vs = ", ".join(f"vs {name} {'n/a' if s[key] is None else f'{s[key]:.3g}x'}"
                   for name, key in (("SUOpt", "netsparse_vs_su_opt"), ("SAOpt", "netsparse_vs_sa_opt")))
    return (f"  modeled      {c['nodes']} virtual nodes ({c['topology']}), {len(block['gathers_k'])} gathers/epoch "
            f"K={block['gathers_k']}: communication alone (slowest node) SUOpt {t['su_opt'] * 1e6:.4g} us, "
            f"SAOpt {t['sa_opt'] * 1e6:.4g} us, NetSparse {ns}; end to end at the slowest node (its compute + "
            f"communication, no overlap) speedup of NetSparse {vs} (modeled, not measured; below 1x means slower)")
