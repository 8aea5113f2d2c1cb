"""Assembles the modeled-communication report (schema: docs/simulator.md) from the hw_models pieces.

Everything in the report is *modeled*, never measured: the workload definitions
(:mod:`hw_models.definitions`), the analytic optima (:mod:`hw_models.baselines`) and, when a
NetSparse simulator is plugged in, its runs. The simulator is a callable (see
:class:`NetSparseSimulator`; :func:`default_simulator` is the C++ discrete-event one). Called without
one, a report holds the analytic baselines only: the ``netsparse`` strategy block says it was not
simulated and the keys that need it are ``None``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from hw_models import baselines, breakdown, compute, definitions
from hw_models import units as _units
from hw_models.compute import KERNELS
from hw_models.errors import ConfigError
from hw_models.params import HardwareParams
from hw_models.pattern import Pattern, as_pattern
from hw_models.seeds.bf3 import TABLE2_SLOWDOWNS, TABLE2_TRANSFER_SHARES, snic_sw
from hw_models.seeds.smartfuse import switch_aggregate
from hw_models.simulator import STAGES, NetSparseRun, check_mechanisms, mechanisms_up_to, simulate
from hw_models.simulator import line_util as node_line_util
from hw_models.twoface.model import model_on_cluster


class NetSparseSimulator(Protocol):
    """``sim(a, workload, params, k, kernel, mechanisms)`` simulates NetSparse with the mechanisms
    named in ``STAGES`` switched on or off by ``mechanisms`` (a dict stage -> bool)."""

    def __call__(self, a: Pattern, w: definitions.Workload, params: HardwareParams, k: int,
                 kernel: str, mechanisms: dict[str, bool]) -> NetSparseRun: ...


def default_simulator() -> NetSparseSimulator:
    """The C++ discrete-event simulator (:func:`hw_models.simulator.simulate`)."""
    return simulate


def gathered_k(k: int, kernel: str) -> int:
    """Elements per gathered property: K for SpMM and SDDMM (rows of B, resp. of Y), 1 for SpMV."""
    if kernel not in KERNELS:
        raise ConfigError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    return 1 if kernel == "spmv" else k


EXTRA_STRATEGIES = ("two_face", "snic_sw", "switch_aggregate")
"""Modeled alternatives next to SUOpt and SAOpt: Two-Face (docs/twoface.md), ``snic_sw`` (BF3 offload) and
``switch_aggregate`` (SmartFuse push with ToR sums; SpMM only)."""


def analyze(a: Pattern | sp.spmatrix | sp.sparray, params: HardwareParams, k: int = 16, kernel: str = "spmm",
            partition: str = "rows", simulator: NetSparseSimulator | None = None,
            mechanisms: dict[str, bool] | None = None, ablation: bool = True,
            progress: Callable[[Sequence[str]], Sequence[str]] | None = None,
            extras: Sequence[str] = EXTRA_STRATEGIES, snic_sw_options: dict | None = None) -> dict:
    """The report dict (docs/simulator.md, report schema) for matrix ``a`` on the cluster ``params``.

    ``mechanisms`` switches NetSparse mechanisms for the main run (all on by default); ``ablation``
    adds one run per cumulative stage of Table 8. ``extras`` picks the modeled alternatives reported
    next to SUOpt and SAOpt (:data:`EXTRA_STRATEGIES`); ``snic_sw_options`` are the keywords of
    :func:`hw_models.seeds.bf3.snic_sw` (``slowdown``, ``transfer_share``).

    ``a`` is read in place when it is a :class:`Pattern` (a scipy matrix is converted once); no step
    copies it.
    """
    prop_k = gathered_k(k, kernel)
    mechanisms = check_mechanisms(mechanisms)
    a = as_pattern(a)
    w = workload_for(a, params, partition)
    red = definitions.redundancy(w)
    su = baselines.su_opt(w, prop_k, params)
    sa = baselines.sa_opt(w, prop_k, params)
    report: dict = {
        "modeled": True,
        "matrix": {"rows": w.n_rows, "cols": w.n_cols, "nnz": w.nnz},
        "cluster": {"nodes": params.cluster.nodes, "rack_size": params.cluster.rack_size,
                    "topology": params.cluster.topology},
        "k": k, "kernel": kernel, "partition": partition, "mechanisms": mechanisms,
        "redundancy": red.to_dict(),
        "dest_locality_64": _none_if_nan(definitions.dest_locality(w)),  # null: no node has 64 remote PRs
        "header_fraction_sa": definitions.header_fraction_sa(prop_k, params.headers),
        "strategies": {
            "su_opt": su.to_dict(),
            "sa_opt": sa_opt_block(sa, w, prop_k, params),
            **seed_strategies(a, w, params, prop_k, kernel, extras, snic_sw_options),
        },
        "speedup": {"sa_opt_vs_su_opt": _ratio(su.comm_time_s, sa.comm_time_s),
                    "netsparse_vs_su_opt": None, "netsparse_vs_sa_opt": None},
        "ablation": [],
        "simulations": 0,  # C++ simulator runs made for this report (main run + distinct ablation stages)
        "active_nodes": None,
        "critical_path": None,  # active nodes over time by the resource bounding them (hw_models.breakdown)
        "hardware": params.to_dict(),
    }
    if simulator is None:
        report["strategies"]["netsparse"] = {
            "status": "not simulated: analytic baselines only (no simulator given)"}
        return report
    _add_netsparse(report, a, w, params, prop_k, kernel, simulator, mechanisms, su, sa, ablation, progress)
    return report


def seed_strategies(a, w: definitions.Workload, params: HardwareParams, prop_k: int, kernel: str,
                    extras: Sequence[str] = EXTRA_STRATEGIES, snic_sw_options: dict | None = None) -> dict:
    """The ``strategies`` entries of the chosen ``extras`` (see :data:`EXTRA_STRATEGIES`)."""
    unknown = sorted(set(extras) - set(EXTRA_STRATEGIES))
    if unknown:
        raise ConfigError(f"unknown strategies {unknown}; choose from {', '.join(EXTRA_STRATEGIES)}")
    a = as_pattern(a)
    models = {
        "two_face": lambda: _two_face(a, w, prop_k, params),
        "snic_sw": lambda: _snic_sw(w, prop_k, params, snic_sw_options or {}),
        "switch_aggregate": lambda: switch_aggregate(a, w, prop_k, params).to_dict() if kernel == "spmm"
        else {"status": f"unavailable: the push formulation is an SpMM, not {kernel}"},
    }
    return {name: models[name]() for name in EXTRA_STRATEGIES if name in extras}


def workload_for(a: Pattern, params: HardwareParams, partition: str = "rows") -> definitions.Workload:
    """The workload of ``a`` on ``params``' cluster, with SAOpt's ranks per node (``software.cores``, split by
    ``software.rank_partition``)."""
    return definitions.workload(a, params.cluster.nodes, partition, cores=params.software.cores,
                                rank_partition=params.software.rank_partition)


def sa_opt_block(sa: baselines.BaselineResult, w: definitions.Workload, prop_k: int, params: HardwareParams) -> dict:
    """The report's ``strategies.sa_opt`` block: the baseline, its PRs (filtered per rank) next to what
    per-node filtering would issue, and the software costs it used."""
    per_pr_s, per_byte_s = baselines.sa_overheads(params)
    software = params.software
    calibrated = software.sa_per_pr_overhead_ns is None and software.sa_per_byte_overhead_ns is None
    source = "calibrated" if calibrated else "config"
    return {**sa.to_dict(), "cores": w.cores, "prs_per_node_filtering": int(w.pair_useful.sum()),
            "per_pr_overhead_s": per_pr_s, "per_byte_overhead_s": per_byte_s,
            "pr_cost_s": baselines.sa_pr_cost_s(params, prop_k),
            "overhead_source": source}


def _two_face(a: Pattern, w: definitions.Workload, prop_k: int, params: HardwareParams) -> dict:
    if a.n_rows != a.n_cols:
        return {"status": "unavailable: Two-Face stripes need a square matrix"}
    return model_on_cluster(a, w.row_bounds, prop_k, params)


def _snic_sw(w, prop_k: int, params: HardwareParams, options: dict) -> dict:
    used = {"slowdown": TABLE2_SLOWDOWNS[0], "transfer_share": TABLE2_TRANSFER_SHARES[0], **options}
    try:
        return {**snic_sw(w, prop_k, params, **used).to_dict(), **used}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"snic_sw: {exc} (options: slowdown > 0, 0 <= transfer_share < 1)") from exc


def without_wall_clock(report: dict) -> dict:
    """A copy of ``report`` without its measured wall-clock fields and its ``provenance`` (date, host,
    command): what must repeat exactly when the same config runs again (everything left is modeled)."""
    out = copy.deepcopy(report)
    out.pop("wall_clock_s", None)
    out.pop("provenance", None)
    speed = out.get("strategies", {}).get("netsparse", {}).get("simulator", {})
    for key in ("wall_clock_s", "events_per_s", "prs_per_s", "cpu_clock_s", "events_per_cpu_s"):
        speed.pop(key, None)
    return out


def _simulator_speed(run: NetSparseRun) -> dict:
    """How fast the main run simulated (measured wall clock and the loop's CPU time, which load on a shared
    host changes less; everything else in the report is modeled)."""
    wall, cpu = run.counters.get("wall_clock_s"), run.loop_cpu_s
    events, prs = run.counters.get("events"), run.counters.get("read_prs_total")
    return {"events": events, "read_prs": prs, "wall_clock_s": wall,
            "events_per_s": _ratio_opt(events, wall), "prs_per_s": _ratio_opt(prs, wall),
            "cpu_clock_s": cpu, "events_per_cpu_s": _ratio_opt(events, cpu)}


def _add_netsparse(report, a, w, params, prop_k, kernel, simulator, mechanisms, su, sa, ablation, progress) -> None:
    settings = {"main": mechanisms}
    if ablation:
        settings.update({stage: mechanisms_up_to(stage) for stage in STAGES})
    done: dict[tuple[bool, ...], NetSparseRun] = {}  # the full ablation stage often equals the main run
    runs = {}
    for name in (progress or list)(list(settings)):
        key = tuple(settings[name].values())
        if key not in done:
            done[key] = simulator(a, w, params, prop_k, kernel, settings[name])
        runs[name] = done[key]
    report["simulations"] = len(done)
    full = runs["main"]
    comm_s = float(full.node_time_s.max())
    tail = int(np.argmax(full.node_time_s))
    useful = w.useful_per_node * baselines.property_bytes(prop_k, params.headers)
    wire = full.tail.get("wire_bytes", math.nan)
    report["strategies"]["netsparse"] = {
        "comm_time_s": comm_s, "tail_node": tail,
        "tail": {**full.tail,
                 "goodput": _goodput(full, useful, params),
                 "line_util": line_util(full, params),
                 "payload_per_wire": _ratio(float(useful[tail]), wire),
                 "traffic_reduction_vs_su_opt": _ratio(float(su.rx_bytes[tail]), wire),
                 "pr_reduction_vs_sa_opt": _ratio(float(sa.prs[tail]), full.tail.get("read_prs", math.nan))},
    }
    netsparse = report["strategies"]["netsparse"]
    if full.critical_path is not None:  # runs of older simulator builds (and test doubles) have none
        netsparse["tail"].update(breakdown.tail_block(full.critical_path, tail))
        netsparse["per_node"] = breakdown.per_node(full.critical_path, full.node_time_s)
        report["critical_path"] = breakdown.active_by_bound(full.critical_path)
    if full.switch_pipes:
        netsparse["switch_pipes"] = breakdown.switch_pipes(full.switch_pipes, params.switch.clock_ghz,
                                                    params.switch.middle_pipe_prs_per_cycle)
    report["strategies"]["netsparse"]["simulator"] = _simulator_speed(full)
    if "link_layer" in full.counters:  # link_layer=flit only: packet-mode reports stay as they were
        report["strategies"]["netsparse"]["link_layer"] = full.counters["link_layer"]
    report["speedup"]["netsparse_vs_su_opt"] = _ratio(su.comm_time_s, comm_s)
    report["speedup"]["netsparse_vs_sa_opt"] = _ratio(sa.comm_time_s, comm_s)
    report["active_nodes"] = {"t_s": list(full.active_nodes[0]), "count": list(full.active_nodes[1])}
    su_total = float(su.rx_bytes.sum())
    report["ablation"] = [
        {"stage": stage, "speedup_vs_su_opt": _ratio(su.comm_time_s, float(run.node_time_s.max())),
         "traffic_reduction_vs_su": _ratio(su_total, float(run.counters.get("wire_bytes_total", math.nan))),
         "goodput": _goodput(run, useful, params)}
        for stage, run in runs.items() if stage != "main"
    ]


def line_util(run: NetSparseRun, params: HardwareParams) -> float | None:
    """The run's tail-node line utilisation (:func:`hw_models.simulator.line_util`); ``None`` without the
    per-node byte counters (test doubles)."""
    nodes = run.counters.get("nodes")
    if not nodes:
        return None
    tail = int(np.argmax(run.node_time_s))
    return node_line_util(nodes, tail, float(run.node_time_s[tail]), params)


def _goodput(run: NetSparseRun, useful_bytes: np.ndarray, params: HardwareParams) -> float | None:
    """NetSparse Table 7 "Gput": the tail node's useful payload over ``line rate * its time``."""
    tail = int(np.argmax(run.node_time_s))
    return _ratio(float(useful_bytes[tail]), params.link.bytes_per_s * float(run.node_time_s[tail]))


def strong_scaling(a: Pattern | sp.spmatrix | sp.sparray, params: HardwareParams, node_counts: Sequence[int],
                   k: int = 16, kernel: str = "spmm", partition: str = "rows",
                   compute_models: dict[str, object] | None = None,
                   simulator: NetSparseSimulator | None = None,
                   progress: Callable[[Sequence[int]], Sequence[int]] | None = None) -> list[dict]:
    """End-to-end modeled time per node count (NetSparse Figs. 13 and 21) for SUOpt, SAOpt and, with
    a ``simulator``, NetSparse (all mechanisms on, one simulation per node count).

    For each count and compute model, the tail node's compute time (``compute.node_work`` + model)
    is combined with each strategy's per-node communication time without overlap and with full
    overlap.
    """
    prop_k = gathered_k(k, kernel)
    models = compute_models or {"spade": compute.AcceleratorModel()}
    a = as_pattern(a)
    rows = []
    for n in (progress or list)([int(n) for n in node_counts]):
        hw = params.replace(cluster={"nodes": n})
        w = workload_for(a, hw, partition)
        work = compute.NodeWork.of(w)
        comm = {"su_opt": baselines.su_opt(w, prop_k, hw).node_time_s,
                "sa_opt": baselines.sa_opt(w, prop_k, hw).node_time_s}
        if simulator is not None:
            # One node owns every column: it gathers nothing and issues no RIG command (simulated, its
            # RIG units would still read each of its local idxs, one per cycle).
            comm["netsparse"] = (np.zeros(1) if n == 1 else
                                 simulator(a, w, hw, prop_k, kernel, check_mechanisms(None)).node_time_s)
        for name, model in models.items():
            comp = model.time_s(work, k, kernel)  # type: ignore[attr-defined]
            row = {"nodes": n, "compute_model": name, "compute_s": float(comp.max())}
            for strat, node_s in comm.items():
                row[f"{strat}_comm_s"] = float(node_s.max())
                row[f"{strat}_no_overlap_s"] = compute.end_to_end_s(comp, node_s, "none")
                row[f"{strat}_full_overlap_s"] = compute.end_to_end_s(comp, node_s, "full")
            rows.append(row)
    return rows


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


def _ratio(num: float, den: float) -> float | None:
    if den == 0 or math.isnan(den) or math.isnan(num):
        return None
    return num / den


def modeled_training(a: Pattern | sp.spmatrix | sp.sparray, params: HardwareParams,
                     gathers: Sequence[int | tuple[int, str]], compute_model: object | None = None,
                     partition: str = "rows", simulator: NetSparseSimulator | None = None) -> dict:
    """The ``modeled`` block of a training report: one epoch on the target cluster.

    ``gathers`` lists every gather of one epoch, forward and backward, as its K (an SpMM gather) or a
    ``(K, kernel)`` pair (e.g. a 2-layer GCN: ``[f_in, hidden]`` forward plus the backward gathers of
    the layers that need them; a GAT layer gathers ``(H*C + H, "sddmm")``). The graph is partitioned to
    ``params.cluster.nodes`` *virtual* nodes, independently of the training's world size. A backward
    gather is charged like a forward gather of the same K (our assumption: the halo gradients cross
    the same node pairs in the opposite direction, with the same volume; exact for the symmetric
    adjacencies of undirected graphs). Each gather is charged one local kernel of its K and kind on the
    compute model (the dense layers are not modeled). Per node, compute and communication add up over
    the gathers (``none``) or overlap gather by gather (``full``); the epoch time is the tail node's.
    Each distinct (K, kernel) is modeled (and simulated) once. Everything here is modeled, nothing
    measured.
    """
    specs = gather_specs(gathers)
    a = as_pattern(a)
    w = workload_for(a, params, partition)
    comm = {spec: gather_comm_times(a, w, params, *spec, simulator) for spec in dict.fromkeys(specs)}
    return training_block(params, specs, compute.NodeWork.of(w), comm, compute_model, partition, simulator is not None)


def gather_specs(gathers: Sequence[int | tuple[int, str]]) -> list[tuple[int, str]]:
    """``(K gathered, kernel)`` of every gather of :func:`modeled_training`, in order."""
    if not gathers:
        raise ConfigError("modeled_training needs at least one gather width K")
    return [(gathered_k(int(k), kernel), kernel)
            for k, kernel in (gather if isinstance(gather, tuple) else (gather, "spmm") for gather in gathers)]


def gather_comm_times(a: Pattern, w: definitions.Workload, params: HardwareParams, k: int, kernel: str,
                      simulator: NetSparseSimulator | None) -> dict[str, np.ndarray | None]:
    """Per-node communication time of one gather of width ``k`` for ``kernel``: SUOpt and SAOpt analytic,
    NetSparse simulated (``None`` without a simulator). The gathered rows are the same for SpMM and
    SDDMM (rows of B, resp. of Y)."""
    return {
        "su_opt": baselines.su_opt(w, k, params).node_time_s,
        "sa_opt": baselines.sa_opt(w, k, params).node_time_s,
        "netsparse": None if simulator is None else _simulate_sliced(simulator, a, w, params, k, kernel),
    }


def training_block(params: HardwareParams, specs: list[tuple[int, str]], work: compute.NodeWork,
                   comm: dict[tuple[int, str], dict[str, np.ndarray | None]], compute_model: object | None = None,
                   partition: str = "rows", simulated: bool = True) -> dict:
    """The block of :func:`modeled_training` from its parts: the nodes' work and each distinct gather's
    per-node communication times (:func:`gather_comm_times`), wherever they were computed or read."""
    model = compute_model or compute.AcceleratorModel()
    per = {spec: {**comm[spec], "compute": np.asarray(model.time_s(work, *spec), dtype=np.float64)}  # type: ignore[attr-defined]
           for spec in dict.fromkeys(specs)}
    ks = [k for k, _ in specs]
    strategies = ("su_opt", "sa_opt", "netsparse")
    comp = [per[spec]["compute"] for spec in specs]
    times = {strat: (None if per[specs[0]][strat] is None else [per[spec][strat] for spec in specs])
             for strat in strategies}
    comm_s = {strat: (float(np.sum(ts, axis=0).max()) if ts is not None else None) for strat, ts in times.items()}
    epoch = {mode: {strat: (float(sum(compute.combine(comp_s, gather_s, mode)
                                      for comp_s, gather_s in zip(comp, ts, strict=True)).max())
                            if ts is not None else None) for strat, ts in times.items()} for mode in compute.OVERLAPS}

    def speedups(times: dict) -> dict:
        return {"netsparse_vs_su_opt": _ratio_opt(times["su_opt"], times["netsparse"]),
                "netsparse_vs_sa_opt": _ratio_opt(times["sa_opt"], times["netsparse"]),
                "sa_opt_vs_su_opt": _ratio_opt(times["su_opt"], times["sa_opt"])}

    return {
        "what": "modeled (hw_models): communication and compute of one epoch on the target cluster; not measured",
        "cluster": {"nodes": params.cluster.nodes, "rack_size": params.cluster.rack_size,
                    "topology": params.cluster.topology},
        "virtual_nodes": params.cluster.nodes, "partition": partition, "gathers_k": ks,
        "per_gather": [{"k": k, "kernel": kernel,
                        **{f"{strat}_comm_s": _tail(per[(k, kernel)][strat]) for strat in strategies},
                        "compute_s": _tail(per[(k, kernel)]["compute"]),
                        "netsparse_slices": len(property_slices(k, params)) if simulated else None}
                       for k, kernel in specs],
        "comm_time_s": comm_s,
        "netsparse_status": "simulated" if simulated else "not simulated: no simulator given",
        "compute": {"model": type(model).__name__, "time_s": float(np.sum(comp, axis=0).max())},
        "epoch_time_s": epoch,
        "comm_speedup": speedups(comm_s),
        "end_to_end_speedup": {mode: speedups(epoch[mode]) for mode in compute.OVERLAPS},
    }


def max_packet_k(params: HardwareParams) -> int:
    """Widest property (elements) whose response PR fits one MTU packet: MTU minus the upper-layer,
    concatenation and PR headers (the larger of Table 5's and the C++ protocol unit's Fig. 6 sizes)."""
    headers = params.headers
    room = headers.mtu_bytes - headers.upper_bytes - max(headers.concat_bytes, int(_units.CONCAT_HEADER_BYTES)) \
        - max(headers.pr_bytes, int(_units.PR_HEADER_BYTES))
    return max(1, room // headers.element_bytes)


def property_slices(k: int, params: HardwareParams) -> list[int]:
    """Column slices a K-wide gather is simulated as: ``[kmax] * full + [rest]`` with ``kmax`` =
    :func:`max_packet_k`. Our assumption for properties wider than one packet (the paper's K <= 128
    always fit): each slice is its own gather of the same PRs, run one after the other."""
    kmax = max_packet_k(params)
    full, rest = divmod(k, kmax)
    return [kmax] * full + ([rest] if rest else [])


def _simulate_sliced(simulator, a, w, params, k, kernel: str = "spmm") -> np.ndarray:
    slices = property_slices(k, params)
    runs = {width: simulator(a, w, params, width, kernel, check_mechanisms(None)).node_time_s
            for width in set(slices)}
    return np.sum([runs[width] for width in slices], axis=0)


def _tail(times: np.ndarray | None) -> float | None:
    return None if times is None else float(np.max(times))


def _ratio_opt(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None else _ratio(num, den)
