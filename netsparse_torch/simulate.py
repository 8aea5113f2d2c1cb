"""``netsparse-simulate`` / ``python -m netsparse_torch.simulate``: modeled communication of one sparse
kernel on a NetSparse cluster (Hydra app, ``configs/simulate.yaml``).

    python -m netsparse_torch.simulate matrix=../shared/data/graphs/ego-twitter.mtx.gz k=16 nodes=128
    python -m netsparse_torch.simulate matrix=synthetic synthetic.shape=road synthetic.n=50000 topology=hyperx

Writes a JSON report (schema in docs/simulator.md, all values *modeled*), prints a Markdown summary and
saves PNG figures beside the report. The workload definitions and the SUOpt/SAOpt optima are
analytic (``hw_models``); the NetSparse block needs the C++ simulator and says so while it is absent.
"""

from __future__ import annotations

import functools
import logging
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from hw_models import analogs, analysis, compute
from hw_models.analysis import EXTRA_STRATEGIES, analyze, default_simulator
from hw_models.params import HardwareParams
from hw_models.simulator import STAGES
from netsparse_torch.config_check import config_dir
from netsparse_torch.errors import ConfigError, NetsparseError
from netsparse_torch.graph import generate, read_mtx
from netsparse_torch.plan.pattern import Pattern, as_pattern
from netsparse_torch.progress import iterate
from netsparse_torch.report import markdown as md
from netsparse_torch.report import write_json
from netsparse_torch.report.plots import figure, one_x
from netsparse_torch.report.provenance import provenance

log = logging.getLogger("netsparse_torch.simulate")


def load_matrix(cfg: DictConfig) -> tuple[Pattern, str]:
    """The matrix named by ``cfg.matrix`` as a :class:`Pattern`, and a short name for it.

    ``matrix`` is a Matrix Market path (``.mtx``/``.mtx.gz``), ``paper:<name>[@scale]`` (an analog of
    a NetSparse Table 6 matrix, :mod:`hw_models.analogs`; cached in ``cfg.analog_cache``
    when set), ``synthetic`` (generator settings in ``cfg.synthetic``) or ``synthetic:<shape>`` (the
    same with the shape given inline, handy in sweeps).
    """
    if cfg.matrix is None:
        raise ConfigError("matrix is not set: give matrix=<path.mtx[.gz]>, matrix=paper:<name> or matrix=synthetic")
    spec = str(cfg.matrix)
    if spec.startswith("paper:"):
        cache = cfg.get("analog_cache")
        return analogs.load(spec, seed=int(cfg.get("analog_seed") or 0), cache_dir=str(cache) if cache else None)
    if spec == "synthetic" or spec.startswith("synthetic:"):
        s = cfg.synthetic
        shape = spec.split(":", 1)[1] if ":" in spec else str(s.shape)
        defaults = _container((s.get("shape_params") or {}).get(shape))
        params = {**defaults, **_container(s.get("params"))}  # explicit params win over the shape's defaults
        return as_pattern(generate(shape, int(s.n), seed=int(s.seed), **params)), f"synthetic-{shape}-{s.n}"
    path = Path(str(cfg.matrix))
    return as_pattern(read_mtx(path)), path.name.split(".")[0]


def _container(node) -> object:
    """A plain Python value from an OmegaConf node (``None`` -> ``{}``)."""
    if node is None:
        return {}
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def hardware_params(cfg: DictConfig) -> HardwareParams:
    """``HardwareParams`` from the top-level shortcuts plus the free-form ``hw`` overrides."""
    hw = _container(cfg.get("hw"))
    base = {
        "cluster": {"nodes": cfg.nodes, "rack_size": cfg.rack_size, "topology": cfg.topology},
        "snic": {"rig_batch_size": cfg.batch_size, "rig_units": cfg.rig_units,
                 "concat_delay_cycles": cfg.nic_delay_cycles},
        "switch": {"concat_delay_cycles": cfg.switch_delay_cycles},
        "property_cache": {"size_bytes": cfg.cache_bytes},
        "software": {"sa_per_pr_overhead_ns": cfg.get("sa_per_pr_overhead_ns")},
    }
    if not isinstance(hw, dict):
        raise ConfigError("hw must be a mapping {section: {field: value}}")
    for section, values in hw.items():
        if not isinstance(values, dict):
            raise ConfigError(f"hw.{section} must be a mapping of fields")
        base.setdefault(section, {}).update(values)
    return HardwareParams.from_dict(base)


def run(cfg: DictConfig, out_dir: Path | None = None) -> dict:
    """Model the configured case; writes the report (and figures) and returns it."""
    t0 = time.perf_counter()
    params = hardware_params(cfg)
    a, name = load_matrix(cfg)
    simulator = with_link_layer(default_simulator(), cfg)
    mechanisms = _container(cfg.get("mechanisms"))
    report = analyze(a, params, k=int(cfg.k), kernel=str(cfg.kernel), partition=str(cfg.partition),
                     simulator=simulator, mechanisms=mechanisms, ablation=bool(cfg.ablation),
                     progress=_progress, extras=list(cfg.get("strategies") or []),
                     snic_sw_options=_container(cfg.get("snic_sw")) or {})
    report = {"kind": "simulate", **report}
    report["matrix"]["name"] = name
    if cfg.get("strong_scaling"):
        report["strong_scaling"] = strong_scaling_block(a, params, cfg)
    report["wall_clock_s"] = time.perf_counter() - t0
    report["config"] = _container(cfg)
    report["provenance"] = provenance()
    paths = write_json(report, cfg.get("report_path"), _report_dir_path(cfg, report),
                       out_dir / "report.json" if out_dir else None)
    if cfg.get("plots", True) and paths:
        paths += save_figures(report, paths[-1].parent)
    for line in summary_lines(report):
        print(line)
    for p in paths:
        print(f"  written      {p}")
    return report


def with_link_layer(simulator, cfg: DictConfig):
    """``simulator`` with ``link_layer=flit`` and the ``flit.*`` settings bound (NetCrafter flits on the
    inter-rack links, docs/seeds.md); ``link_layer=packet`` returns it unchanged."""
    mode = str(cfg.get("link_layer") or "packet")
    if mode == "packet":
        return simulator
    link_layer = {"mode": mode, "flit": _container(cfg.get("flit"))}
    from hw_models.seeds.netcrafter import sim_flit_config

    sim_flit_config(link_layer)  # bad settings fail before any run
    return functools.partial(simulator, link_layer=link_layer)


def _report_dir_path(cfg: DictConfig, report: dict) -> Path | None:
    """``report_dir/<matrix>-n<nodes>-<topology>-<kernel>-k<K>.json`` for sweeps, if ``report_dir`` is set."""
    if not cfg.get("report_dir"):
        return None
    c = report["cluster"]
    tag = cfg.get("tag") or ""
    stem = f"{report['matrix']['name']}-n{c['nodes']}-{c['topology']}-{report['kernel']}-k{report['k']}{tag}"
    return Path(str(cfg.report_dir)) / f"{stem}.json"


def strong_scaling_block(a, params: HardwareParams, cfg: DictConfig) -> dict:
    """End-to-end modeled times over ``cfg.strong_scaling`` node counts (NetSparse Figs. 13 and 21):
    SUOpt and SAOpt analytic, NetSparse simulated (C++ simulator) at every node count.

    The SPADE-like model is analytic; the CPU model's rate is *measured* here by timing
    ``netsparse_torch.kernels.spmm`` (see :func:`netsparse_torch.calibrate.calibrate_cpu`).
    """
    counts = [int(n) for n in _container(cfg.strong_scaling)]
    models: dict[str, object] = {}
    info: dict[str, dict] = {}
    for name in _container(cfg.get("compute_models") or ["spade", "cpu"]):
        if name == "spade":
            models[name] = compute.AcceleratorModel()
            info[name] = {"modeled": True, **asdict(models[name]), "formula": "max(flops/peak, bytes/HBM)"}
        elif name == "cpu":
            cpu = _cpu_model(int(cfg.k))
            models[name] = cpu
            info[name] = {"calibrated_from_measurement": True, "nnz_k_per_s": cpu.nnz_k_per_s,
                          "gflops": cpu.gflops, "source": cpu.source}
        else:
            raise ConfigError(f"unknown compute model {name!r}; choose from spade, cpu")
    rows = analysis.strong_scaling(a, params, counts, k=int(cfg.k), kernel=str(cfg.kernel),
                                   partition=str(cfg.partition), compute_models=models,
                                   simulator=with_link_layer(default_simulator(), cfg),
                                   progress=lambda counts: iterate(counts, "strong scaling"))
    return {"compute_models": info, "rows": rows}


@functools.cache
def _cpu_model(k: int) -> compute.CPUModel:
    """One CPU calibration per process and K: every job of a sweep (Hydra runs them in this process)
    uses the same measured rate, so load changes on a shared machine do not skew one matrix against
    another."""
    from netsparse_torch.calibrate import calibrate_cpu  # torch: only when the CPU model is asked for

    return calibrate_cpu(k=k, repeats=20)


def _progress(items):
    """One line per simulation when stdout is not a terminal, a bar on one (none for a single run)."""
    return iterate(items, "simulation")


def _fmt(x, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.4g}{unit}"


def summary_lines(report: dict) -> list[str]:
    """A Markdown summary: workload, the three strategies, speedups (all modeled)."""
    m, c, r, st = report["matrix"], report["cluster"], report["redundancy"], report["strategies"]
    ns = st.get("netsparse", {})
    lines = [
        f"### {m.get('name', 'matrix')}: {m['rows']:,} x {m['cols']:,}, {m['nnz']:,} nnz on {c['nodes']} nodes "
        f"({c['topology']}, rack {c['rack_size']}), {report['kernel']} K={report['k']}, "
        f"partition={report['partition']}",
        "",
        "All numbers are modeled (hw_models), none measured.",
        "",
        *md.table(["quantity", "value"], [
            ("useful / SA PRs / SU transfers", f"{r['useful_transfers']:,} / {r['sa_prs']:,} / {r['su_transfers']:,}"),
            ("SU, SA redundant per useful (Table 1)",
             f"{_fmt(r['su_redundant_per_useful'])}, {_fmt(r['sa_redundant_per_useful'])}"),
            ("dest locality of 64 PRs (Table 4)", _fmt(report["dest_locality_64"])),
            ("SA header fraction (Table 3)", _fmt(100 * report["header_fraction_sa"], " %")),
            ("SUOpt comm time", _fmt(st["su_opt"]["comm_time_s"] * 1e6, " us")),
            ("SAOpt comm time, goodput",
             f"{_fmt(st['sa_opt']['comm_time_s'] * 1e6, ' us')}, {_fmt(100 * st['sa_opt']['goodput'], ' %')}"),
            (f"SAOpt PRs ({st['sa_opt']['cores']} ranks per node, filtered per rank)",
             f"{st['sa_opt']['prs']:,} (per-node filtering: {st['sa_opt']['prs_per_node_filtering']:,})"),
            *[(f"{label} comm time", _time_or_status(st[key])) for label, key in SEED_ROWS if key in st],
            (f"NetSparse comm time{' (flits on inter-rack links)' if ns.get('link_layer') else ''}",
             _time_or_status(ns)),
            *_link_layer_rows(ns.get("link_layer")),
            *_table7_rows(ns),
            ("speedup SAOpt vs SUOpt", _fmt(report["speedup"]["sa_opt_vs_su_opt"])),
            ("speedup NetSparse vs SUOpt, vs SAOpt",
             f"{_fmt(report['speedup']['netsparse_vs_su_opt'])}, {_fmt(report['speedup']['netsparse_vs_sa_opt'])}"),
        ]),
        "",
        "Speedups are time ratios: above 1x faster, below 1x means slower.",
        *_skipped_lines(report),
    ]
    return lines


def _skipped_lines(report: dict) -> list[str]:
    """What this run did not model and the override that adds it (the ablation and the extra
    strategies are extra simulations, run only when asked)."""
    lines = []
    if not report["ablation"] and "comm_time_s" in report["strategies"].get("netsparse", {}):
        lines.append(f"Skipped: the Table 8 ablation ({len(STAGES)} more simulations); add ablation=true.")
    missing = [s for s in EXTRA_STRATEGIES if s not in report["strategies"]]
    if missing:
        lines.append(f"Skipped: the modeled alternatives {', '.join(missing)}; add strategies=[{','.join(missing)}].")
    return lines


def _table7_rows(ns: dict) -> list[tuple[str, str]]:
    """NetSparse's PRs and its Table 7 statistics at the tail node (none without the simulator)."""
    if "tail" not in ns:
        return []
    t = ns["tail"]
    prs = (ns.get("simulator") or {}).get("read_prs")
    gput = _fmt(100 * t["goodput"], " %") if t.get("goodput") is not None else "n/a"
    return [("NetSparse PRs", f"{prs:,}" if prs is not None else "n/a"),
            ("NetSparse tail (Table 7): Gput, Trfc vs SU, #PR vs SA",
             f"{gput}, {_fmt(t.get('traffic_reduction_vs_su_opt'), 'x')}, "
             f"{_fmt(t.get('pr_reduction_vs_sa_opt'), 'x')}")]


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


def save_figures(report: dict, out_dir: Path) -> list[Path]:
    """Speedup bars, the ablation and active nodes over time (those the report has data for); speedups
    carry a 1x line (below it: slower than SUOpt), times are in microseconds."""
    out = [out_dir / "speedup.png"]
    su = report["strategies"]["su_opt"]["comm_time_s"]
    speed = {label: su / report["strategies"][key]["comm_time_s"] for label, key in _SPEEDUP_BARS
             if "comm_time_s" in report["strategies"].get(key, {}) and report["strategies"][key]["comm_time_s"]}
    with figure(out[-1], figsize=(1.2 + 0.8 * len(speed), 3)) as (_, ax):
        ax.bar(list(speed), list(speed.values()), color=[f"C{i}" for i in range(len(speed))])
        one_x(ax)
        if max(speed.values()) / min(speed.values()) > 20:  # SAOpt is often 30x slower than SUOpt
            ax.set_yscale("log")
        ax.set_ylabel("speedup vs SUOpt (modeled)")
        ax.tick_params(axis="x", labelrotation=20, labelsize=7)
        ax.set_title(f"{report['matrix'].get('name', '')} K={report['k']}", fontsize=9)
    if report["ablation"]:
        out.append(out_dir / "ablation.png")
        with figure(out[-1], figsize=(5, 3)) as (_, ax):
            ax.bar([a["stage"] for a in report["ablation"]], [a["speedup_vs_su_opt"] or 0 for a in report["ablation"]])
            one_x(ax)
            ax.set_ylabel("speedup vs SUOpt (modeled)")
            ax.set_xlabel("mechanisms added cumulatively (Table 8)")
    if report["active_nodes"]:
        out.append(out_dir / "active_nodes.png")
        with figure(out[-1], figsize=(5, 3)) as (_, ax):
            ax.step([t * 1e6 for t in report["active_nodes"]["t_s"]], report["active_nodes"]["count"], where="post")
            ax.set_xlabel("time (us, modeled)")
            ax.set_ylabel("active nodes")
            ax.set_ylim(bottom=0)
    return out


_SPEEDUP_BARS = (("SUOpt", "su_opt"), ("SAOpt", "sa_opt"), ("NetSparse", "netsparse"), ("Two-Face", "two_face"),
                 ("SNIC sw", "snic_sw"), ("ToR sums", "switch_aggregate"))


@hydra.main(config_path=config_dir(), config_name="simulate", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        out_dir = Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None
        run(cfg, out_dir)
    except NetsparseError as exc:
        print(f"netsparse-simulate: error: {exc}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """Console entry point (``netsparse-simulate``)."""
    from netsparse_torch.malloc import keep_freed_memory

    keep_freed_memory()  # the simulator allocates and frees hundreds of MB: ~1 s of page faults otherwise
    _hydra_main()


if __name__ == "__main__":
    main()
