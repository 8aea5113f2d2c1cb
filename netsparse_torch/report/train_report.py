"""The training report: measured numbers only (modeled blocks are added, labelled, by the models)."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from omegaconf import OmegaConf

from hw_models.files import write_text_atomic
from netsparse_torch.errors import ConfigError
from netsparse_torch.report.provenance import provenance

#: The per-rank summary of the report: partition sizes, the rank's peak RSS (getrusage, bytes), and its
#: torch threads (``torch.get_num_threads()`` in the rank) with their source (netsparse_torch/run/threads.py).
PER_RANK = ("rank", "device", "cuda_collectives", "kernels", "rows", "nnz", "halo", "edge_cut", "peak_rss_bytes",
            "threads", "threads_source")


def _sum_collectives(per_rank: list[dict]) -> dict:
    total: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "bytes": 0})
    for r in per_rank:
        for name, s in r["collectives"].items():
            total[name]["calls"] += s["calls"]
            total[name]["bytes"] += s["bytes"]
    return dict(total)


def build_train_report(cfg, graph, result: dict, wall_s: float) -> dict:
    per_rank = result["per_rank"]
    extra = {}
    if str(cfg.strategy.name) == "netsparse":
        from netsparse_torch.comm.netsparse import summarize

        extra["netsparse"] = summarize([r["strategy_stats"] for r in per_rank])
    if per_rank[0].get("kernel_agreement"):  # CUDA: the same on every rank
        extra["kernel_agreement"] = per_rank[0]["kernel_agreement"]
    times = [e["time_s"] for e in result["epochs"]]
    dataset = {"name": graph.name, "nodes": graph.num_nodes, "nnz": int(graph.nnz), "features": graph.num_features,
               "classes": graph.num_classes}
    if getattr(graph, "label", None):  # a paper analog: its name must not read as the paper's matrix
        dataset["label"] = graph.label
    if getattr(graph, "path", None) is not None:  # a partitioned dataset: each rank read only its shard
        dataset["partitioned_path"] = str(graph.path)
    return {
        "kind": "train",
        "measured": "every number here is measured on this machine unless it sits under 'modeled'",
        "dataset": dataset,
        "model": str(cfg.model.name),
        "strategy": str(cfg.strategy.name),
        "fabric": str(cfg.fabric.name),
        "world_size": int(cfg.world_size),
        "seed": int(cfg.seed),
        "partition": {
            "mode": per_rank[0]["partition"],
            "rows": [r["rows"] for r in per_rank],
            "nnz": [r["nnz"] for r in per_rank],
            "halo": [r["halo"] for r in per_rank],
            "halo_from": [r["halo_from"] for r in per_rank],
            "edge_cut": [r["edge_cut"] for r in per_rank],
            "edge_cut_total": sum(r["edge_cut"] for r in per_rank),
        },
        "per_rank": [{k: r[k] for k in PER_RANK} for r in per_rank],
        "attempts": result["attempts"],  # which epochs ran in which attempt (netsparse_torch/run/resume.py)
        "final": result["final"],
        **{k: result[k] for k in ("best", "evaluations", "early_stop") if k in result},  # evaluation.py
        "epochs": [{k: e[k] for k in ("epoch", "loss", "time_s")} for e in result["epochs"]],
        "epoch_time_s": {"median": _median(times), "mean": sum(times) / len(times) if times else math.nan},
        "comm": {**result["comm"], "collectives": _sum_collectives(per_rank)},
        "strategy_stats": [r["strategy_stats"] for r in per_rank],
        **extra,
        "wall_s": wall_s,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "provenance": provenance(),
    }


def _median(xs: list[float]) -> float:
    if not xs:
        return math.nan
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else 0.5 * (s[mid - 1] + s[mid])


def strict(value):
    """``value`` as strict JSON data: NaN becomes ``null`` (e.g. the loss of a run with ``epochs=0``),
    +-infinity the strings ``"inf"``/``"-inf"`` (e.g. ``cache_size_bytes=.inf``), numpy scalars and arrays
    plain numbers and lists."""
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "tolist") and not isinstance(value, int | float):  # numpy scalar or array
        return strict(value.tolist())
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def write_json(report: dict, *paths: Path | str | None) -> list[Path]:
    """Write ``report`` as strict JSON (:func:`strict`; no ``NaN``/``Infinity`` tokens) to each path; the
    paths written, each once (``report_path`` may name the run directory's own ``report.json``). A path
    that cannot be written is one ConfigError naming it and those written before it."""
    text = json.dumps(strict(report), indent=2, allow_nan=False, default=float)
    written: list[Path] = []
    for p in paths:
        if p is None or Path(p).resolve() in {w.resolve() for w in written}:
            continue
        p = Path(p)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(p, text)  # a sweep's reader (collect, a rerun's skip) never sees half a report
        except OSError as exc:
            kept = f"; the report is in {', '.join(map(str, written))}" if written else ""
            raise ConfigError(f"cannot write the report to {p}: {exc.strerror or exc}{kept}") from None
        written.append(p)
    return written


def summary_lines(report: dict) -> list[str]:
    f, c = report["final"], report["comm"]
    return [
        f"netsparse-train: {report['model']} on {report['dataset']['name']} "
        f"({report['dataset']['nodes']:,} nodes), strategy={report['strategy']}, "
        f"world_size={report['world_size']}, partition={report['partition']['mode']}, device={_devices(report)}",
        f"  accuracy     test {_num(f['test_acc'])}   val {_num(f['val_acc'])}   final train loss "
        f"{_num(f['train_loss'])}",
        f"  epoch time   median {report['epoch_time_s']['median'] * 1e3:.2f} ms (measured)",
        f"  feature comm {c['feature_bytes_per_epoch']:,} B/epoch, {c['feature_bytes']:,} B in the run "
        f"(measured payload, all ranks)",
    ] + (_dataset_lines(report) + _eval_lines(report) + _partition_lines(report) + _thread_lines(report)
         + _kernel_lines(report) + _twoface_lines(report) + _netsparse_lines(report.get("netsparse"))
         + _switch_lines(report.get("switches")))


def _dataset_lines(report: dict) -> list[str]:
    """What a generated dataset is (a paper analog), so its numbers are never read as the paper's graph's."""
    label = report["dataset"].get("label")
    return [f"  dataset      {label}; features, labels and split generated"] if label else []


def _devices(report: dict) -> str:
    """``cpu``, ``cuda:0`` or e.g. ``cuda:0,cuda:1``: the distinct devices of the ranks, in rank order, and
    how their CUDA tensors travel (``nccl``, ``gloo-shared-gpu``: :mod:`netsparse_torch.backend`)."""
    seen = dict.fromkeys(r.get("device", "cpu") for r in report["per_rank"])
    paths = dict.fromkeys(r["cuda_collectives"]["cuda"] for r in report["per_rank"] if "cuda_collectives" in r)
    paths.pop("none", None)
    return ",".join(seen) + (f" (CUDA collectives: {','.join(paths)})" if paths else "")


def _num(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def _eval_lines(report: dict) -> list[str]:
    """ROC-AUC (binary tasks), the best validation epoch when it is not the last, and an early stop."""
    f, best, lines = report["final"], report.get("best") or {}, []
    if "test_roc_auc" in f:
        lines.append(f"  ROC-AUC      test {_num(f['test_roc_auc'])}   val {_num(f['val_roc_auc'])}")
    if best and best.get("epoch") != (report["epochs"][-1]["epoch"] if report["epochs"] else None):
        metric = best["metric"]
        test = metric.replace("val_", "test_")
        lines.append(f"  best         epoch {best['epoch']}: {metric} {_num(best.get(metric))}, "
                     f"{test} {_num(best.get(test))}")
    stop = report.get("early_stop")
    if stop and stop.get("stopped_at_epoch") is not None:
        lines.append(f"  early stop   after epoch {stop['stopped_at_epoch']} (patience {stop['patience']} epochs)")
    return lines


def _kernel_lines(report: dict) -> list[str]:
    """On CUDA: the SpMM kernels every rank agreed on (``kernel_agreement``: every rank's times), or how
    often ``backend="auto"`` chose each kernel where each matrix timed its own (``per_rank[].kernels``)."""
    agreed = {key: choice for a in report.get("kernel_agreement") or [] for key, choice in a["keys"].items()}
    if agreed:
        keys = ", ".join(f"{key} {choice}" for key, choice in agreed.items())
        return [f"  kernels      CUDA SpMM agreed by all ranks: {keys} (measured)"]
    chosen = Counter(c["choice"] for r in report["per_rank"] for c in r.get("kernels") or [])
    if not chosen:
        return []
    counts = ", ".join(f"{name} {n}" for name, n in sorted(chosen.items()))
    return [f"  kernels      CUDA SpMM chosen by timing, all ranks: {counts} (measured)"]


def _twoface_lines(report: dict) -> list[str]:
    """strategy=twoface: which cost model classified the stripes (a profile, or the defaults)."""
    stats = report.get("strategy_stats") or []
    if report.get("strategy") != "twoface" or not stats or "coefficients_source" not in stats[0]:
        return []
    s = stats[0]
    return [f"  twoface      cost model: {s['coefficients_source']} (overlap={s['overlap']}); stripes "
            f"sync {sum(r['sync_stripes'] for r in stats):,}, async {sum(r['async_stripes'] for r in stats):,}"]


def _partition_lines(report: dict) -> list[str]:
    p, nnz = report["partition"], report["dataset"]["nnz"]
    share = f" ({p['edge_cut_total'] / nnz:.1%} of nnz)" if nnz else ""
    rss = [r["peak_rss_bytes"] / 2**20 for r in report["per_rank"]]
    return [f"  partition    {p['mode']}: edge cut {p['edge_cut_total']:,} nonzeros{share}; per rank: rows "
            f"{_short(p['rows'])}, halo {_short(p['halo'])}, edge cut {_short(p['edge_cut'])}",
            f"  memory       peak RSS per rank {_short([round(m) for m in rss])} MiB (measured, getrusage)"]


#: What each source of a rank's thread count means (netsparse_torch/run/threads.py).
THREAD_SOURCES = {"threads": "set by the threads key", "OMP_NUM_THREADS": "from OMP_NUM_THREADS",
                  "auto": "threads=auto: cores / local ranks", "torch default": "torch's default"}


def _thread_lines(report: dict) -> list[str]:
    """Each rank's torch threads and where the number came from: an epoch time means little without it
    (one rank with every core against two ranks of one thread each)."""
    ranks = report["per_rank"]
    if not ranks or "threads" not in ranks[0]:
        return []
    sources = ", ".join(dict.fromkeys(THREAD_SOURCES.get(r["threads_source"], r["threads_source"]) for r in ranks))
    return [f"  threads      torch threads per rank {_short([r['threads'] for r in ranks])} ({sources})"]


def _short(values: list, limit: int = 8) -> str:
    """``[1,234, 5,678]``, or the first ``limit`` values and how many more."""
    shown = ", ".join(f"{v:,}" for v in values[:limit])
    return f"[{shown}{f', ... {len(values) - limit} more' if len(values) > limit else ''}]"


def _netsparse_lines(ns: dict | None) -> list[str]:
    if not ns:
        return []
    return [f"  netsparse    {ns['idxs']:,} idxs: {ns['local']:,} local, {ns['filtered']:,} filtered, "
            f"{ns['coalesced']:,} coalesced, {ns['prs_issued']:,} read PRs; {ns['prs_per_packet']:.1f} PRs/packet, "
            f"goodput {ns['goodput']:.3f} (measured packets, forward gathers)"] + _staging_lines(ns)


def _staging_lines(ns: dict) -> list[str]:
    """Features on a GPU: the copies to and from host memory around the RIG gathers, timed apart."""
    if "staging_to_host_s" not in ns:
        return []
    return [f"  staging      to host {ns['staging_to_host_s'] * 1e3:.2f} ms ({ns['staging_to_host_bytes']:,} B), "
            f"to device {ns['staging_to_device_s'] * 1e3:.2f} ms ({ns['staging_to_device_bytes']:,} B) "
            "(measured, apart from the gathers, all ranks)"]


def _switch_lines(switches: list[dict] | None) -> list[str]:
    """fabric=switch: one line per switch (measured counters of the switch service)."""
    lines = []
    for s in switches or []:
        c = s["counters"]
        cache = (f"{c['cache_hits']:,} ToR cache hits / {c['read_prs_in']:,} reads" if s["role"] == "tor"
                 else f"{c['read_prs_in']:,} reads forwarded (no cache)")
        lines.append(f"  switch {s['name']:<5} {c['prs_in']:,} PRs in, {cache}, "
                     f"{c['prs_per_packet']:.1f} PRs/packet out (measured)")
    return lines
