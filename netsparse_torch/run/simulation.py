"""One modeled case of ``netsparse-simulate``: the matrix, the run's hardware, the analytic optima and
the C++ simulator (:mod:`hw_models.analysis`), written as a JSON report with its figures and summary.

All values are *modeled*. Torch-free: the CPU compute model's calibration, which times the local SpMM,
loads torch only when a strong-scaling sweep asks for it.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from hw_models import analogs, analysis, compute
from hw_models.analysis import analyze, default_simulator
from hw_models.hardware import simulate_hardware
from hw_models.mtx import read_mtx
from hw_models.params import HardwareParams
from hw_models.pattern import Pattern, as_pattern
from hw_models.synthetic import generate
from netsparse_torch.errors import ConfigError
from netsparse_torch.progress import iterate
from netsparse_torch.report import link_stats as link_report
from netsparse_torch.report import write_json
from netsparse_torch.report.provenance import provenance
from netsparse_torch.report.simulation import save_figures, summary_lines
from netsparse_torch.run import link_stats


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


def run(cfg: DictConfig, out_dir: Path | None = None) -> dict:
    """Model the configured case; writes the report (and figures) and returns it."""
    t0 = time.perf_counter()
    params = simulate_hardware(cfg)  # the run's one hardware: simulator, baselines and the report's `hardware`
    a, name = load_matrix(cfg)
    links_bin_ps = link_stats.bin_ps(cfg)
    simulator = with_link_layer(default_simulator(), cfg)
    mechanisms = _container(cfg.get("mechanisms"))
    if links_bin_ps is not None:
        simulator = link_stats.Recorder(simulator, links_bin_ps, mechanisms)
    report = analyze(a, params, k=int(cfg.k), kernel=str(cfg.kernel), partition=str(cfg.partition),
                     simulator=simulator, mechanisms=mechanisms, ablation=bool(cfg.ablation),
                     progress=_progress, extras=list(cfg.get("strategies") or []),
                     snic_sw_options=_container(cfg.get("snic_sw")) or {})
    report = {"kind": "simulate", **report}
    report["matrix"]["name"] = name
    if str(cfg.matrix).startswith("paper:"):  # a name like paper-arabic reads as the real matrix: say what it is
        report["matrix"]["label"] = analogs.label(str(cfg.matrix))
    if cfg.get("strong_scaling"):
        report["strong_scaling"] = strong_scaling_block(a, params, cfg)
    links = getattr(simulator, "series", None)
    if links is not None:
        report["link_stats"] = link_report.summary(links)
    report["wall_clock_s"] = time.perf_counter() - t0
    report["config"] = _container(cfg)
    report["provenance"] = provenance()
    paths = write_json(report, cfg.get("report_path"), _report_dir_path(cfg, report),
                       out_dir / "report.json" if out_dir else None)
    if cfg.get("plots", True) and paths:
        paths += save_figures(report, paths[-1].parent)
    if links is not None and paths:
        paths += link_report.write(links, paths[-1].parent, f"busiest links, {name} K={cfg.k}", cfg.get("plots", True))
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
    ``netsparse_torch.kernels.spmm`` (see :func:`netsparse_torch.calibration.calibrate_cpu`).
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
    from netsparse_torch.calibration import calibrate_cpu  # torch: only when the CPU model is asked for

    return calibrate_cpu(k=k, repeats=20)


def _progress(items):
    """One line per simulation when stdout is not a terminal, a bar on one (none for a single run)."""
    return iterate(items, "simulation")


