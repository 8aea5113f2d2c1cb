"""The printed lines of a paper analog's modeled blocks (``dataset=paper``): the trained graph's and, with
``cluster.full_size=true``, its full-size original's, each under a line that says which graph it models.
Formatting only; other datasets get :func:`~netsparse_torch.report.modeled.modeled_lines` unchanged."""

from __future__ import annotations

from netsparse_torch.report.modeled import modeled_lines


def scaled_modeled_lines(block: dict | None, graph_nodes: int | None = None) -> list[str]:
    """The modeled summary of a training run: both blocks of an analog, each with its scope line."""
    if not block or "graph" not in block:
        return modeled_lines(block, graph_nodes)
    nodes = block["cluster"]["nodes"]
    lines = [_scope("modeled", f"this graph on {nodes} nodes", block)] + modeled_lines(block, graph_nodes)
    lines += _process_lines(block)
    full = block.get("full_size")
    if full:
        lines += [_scope("full size", f"the paper's full-size graph on {nodes} nodes", full)]
        lines += modeled_lines(full, full["graph"]["rows"]) + _process_lines(full)
    return lines


def _scope(tag: str, what: str, block: dict) -> str:
    g = block["graph"]
    return f"  {tag:<12} {what}: {g['name']}, {g['rows']:,} rows, {g['nnz']:,} nonzeros ({g['label']})"


def _process_lines(block: dict) -> list[str]:
    p = block.get("process")
    if not p:
        return []
    cached = not (block.get("model_cache") or {}).get("pattern_generated", True)
    how = "every gather read from the cache" if cached else "after the ranks; no rank holds the whole pattern"
    return [f"  model proc   peak RSS {p['peak_rss_bytes'] / 2**30:.2f} GiB, {p['wall_s']:.1f} s (measured: the "
            f"process that modeled it, {how})"]
