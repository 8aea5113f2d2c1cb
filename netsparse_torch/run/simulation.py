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
from hw_models.files import check_writable
from hw_models.hardware import simulate_hardware
from hw_models.mtx import read_mtx
from hw_models.params import HardwareParams, check_flag
from hw_models.pattern import Pattern, as_pattern
from hw_models.synthetic import generate
from netsparse_torch.errors import ConfigError
from netsparse_torch.progress import iterate, with_progress
from netsparse_torch.report import link_stats as link_report
from netsparse_torch.report import write_json
from netsparse_torch.report.identity import identity, read_report, refuse_overwrite, report_identity, report_stem
from netsparse_torch.report.provenance import provenance
from netsparse_torch.report.sim_figures import save_figures, write_breakdown_csv
from netsparse_torch.report.simulation import summary_lines
from netsparse_torch.run import link_stats


def load_matrix(cfg: DictConfig) -> tuple[Pattern, str]:
    """The matrix named by ``cfg.matrix`` as a :class:`Pattern`, and a short name for it
    (:func:`matrix_name`).

    ``matrix`` is a Matrix Market path (``.mtx``/``.mtx.gz``), ``paper:<name>[@scale]`` (an analog of
    a NetSparse Table 6 matrix, :mod:`hw_models.analogs`; cached in ``cfg.analog_cache``
    when set), ``synthetic`` (generator settings in ``cfg.synthetic``) or ``synthetic:<shape>`` (the
    same with the shape given inline, handy in sweeps).
    """
    name = matrix_name(cfg)
    spec = str(cfg.matrix)
    if spec.startswith("paper:"):
        cache = cfg.get("analog_cache")
        return analogs.load(spec, seed=int(cfg.get("analog_seed") or 0), cache_dir=str(cache) if cache else None)
    if spec == "synthetic" or spec.startswith("synthetic:"):
        s = cfg.synthetic
        shape = _shape(cfg)
        defaults = _container((s.get("shape_params") or {}).get(shape))
        params = {**defaults, **_container(s.get("params"))}  # explicit params win over the shape's defaults
        return as_pattern(generate(shape, int(s.n), seed=int(s.seed), **params)), name
    return as_pattern(read_mtx(Path(spec))), name


def is_matrix_file(spec) -> bool:
    """Whether ``matrix`` names a Matrix Market file (not ``paper:<name>``, ``synthetic`` or unset)."""
    spec = "" if spec is None else str(spec)
    return bool(spec) and not (spec.startswith("paper:") or spec == "synthetic" or spec.startswith("synthetic:"))


def matrix_name(cfg: DictConfig) -> str:
    """The report's short name of ``cfg.matrix``, known before it is built: ``paper-arabic@0.05``,
    ``synthetic-road-50000`` or a Matrix Market file's name without its extensions."""
    if cfg.matrix is None:
        raise ConfigError("matrix is not set: give matrix=<path.mtx[.gz]>, matrix=paper:<name> or matrix=synthetic")
    spec = str(cfg.matrix)
    if spec.startswith("paper:"):
        return analogs.display_name(*analogs.parse(spec))
    if spec == "synthetic" or spec.startswith("synthetic:"):
        return f"synthetic-{_shape(cfg)}-{cfg.synthetic.n}"
    return Path(spec).name.split(".")[0]


def _shape(cfg: DictConfig) -> str:
    spec = str(cfg.matrix)
    return spec.split(":", 1)[1] if ":" in spec else str(cfg.synthetic.shape)


def gathered_k(cfg: DictConfig) -> int:
    """The run's K: ``cfg.k`` (16 when not given), and 1 for ``kernel=spmv``, which multiplies by a vector;
    a K given with spmv other than 1 does not apply to the run and is refused."""
    k = cfg.get("k")
    if isinstance(k, bool) or not (k is None or isinstance(k, int)):
        raise ConfigError(f"k must be a whole number >= 1, got {k!r}")
    if str(cfg.kernel) == "spmv":
        if k not in (None, 1):
            raise ConfigError(f"k={k} does not apply to kernel=spmv, which multiplies by a vector (K=1): drop k")
        return 1
    return DEFAULT_K if k is None else k


DEFAULT_K = 16
"""K of kernel=spmm and sddmm when ``k`` is not given: NetSparse Fig. 12's middle size."""


SWITCHES = ("ablation", "rerun", "plots")
"""The run's on/off keys: any other value would be read as true (``bool("maybe")``)."""


def check_switches(cfg: DictConfig) -> None:
    for key in SWITCHES:
        value = cfg.get(key)
        if value is not None:
            check_flag(key, value)


def _container(node) -> object:
    """A plain Python value from an OmegaConf node (``None`` -> ``{}``)."""
    if node is None:
        return {}
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def run(cfg: DictConfig, out_dir: Path | None = None, overrides: list[str] | tuple = (),
        multirun: bool = False) -> dict:
    """Model the configured case; writes the report (and figures) and returns it. ``overrides`` (the
    command line's) name the report in ``report_dir`` when the run has no ``tag``; in a ``multirun`` a
    point whose report is written already (same settings) is skipped unless ``rerun=true``."""
    t0 = time.perf_counter()
    check_switches(cfg)
    params = simulate_hardware(cfg)  # the run's one hardware: simulator, baselines and the report's `hardware`
    links = link_stats.recorder(cfg)
    k = gathered_k(cfg)
    config = _container(cfg)
    ident = identity(config, params.to_dict())
    dir_path = _report_dir_path(cfg, matrix_name(cfg), params, k, list(overrides))
    own = out_dir / "report.json" if out_dir else None
    finished = _finished([dir_path, own], ident) if multirun and not cfg.get("rerun") else None
    if finished is not None:
        return _skip(finished, own)
    _no_other_report(cfg, dir_path, ident, multirun)
    check_writable(cfg.get("report_path"), "report_path")  # now, not after a simulation of minutes
    check_writable(dir_path, "report_dir")
    report = model(cfg, params, k, links)
    report["wall_clock_s"] = time.perf_counter() - t0
    report["config"] = config
    report["provenance"] = provenance()
    _no_other_report(cfg, dir_path, ident, multirun)  # again: a parallel launcher's other job may have written
    _write(report, cfg, [cfg.get("report_path"), dir_path, own], links)
    return report


def _no_other_report(cfg: DictConfig, dir_path: Path | None, ident: dict, multirun: bool) -> None:
    """Neither ``report_dir``'s file nor, in a sweep (every job would write it), ``report_path`` holds the
    report of another run."""
    refuse_overwrite(dir_path, ident, OWN_NAME)
    if multirun and cfg.get("report_path"):
        refuse_overwrite(Path(str(cfg.report_path)), ident, OWN_NAME)


#: How a simulation avoids writing over another run's report.
OWN_NAME = "give this run its own tag= or report_dir=, or delete that file"


def model(cfg: DictConfig, params: HardwareParams, k: int, links: link_stats.Recorder | None = None) -> dict:
    """The modeled report of the configured matrix on ``params``: the analytic optima, the simulator and
    what ``cfg`` adds (ablation, extra strategies, strong scaling; ``links`` records stats=links)."""
    a, name = load_matrix(cfg)
    simulator = with_progress(with_link_layer(default_simulator(), cfg))
    report = analyze(a, params, k=k, kernel=str(cfg.kernel), partition=str(cfg.partition),
                     simulator=links.wrap(simulator) if links else simulator,
                     mechanisms=_container(cfg.get("mechanisms")),
                     ablation=bool(cfg.ablation), progress=_progress, extras=list(cfg.get("strategies") or []),
                     snic_sw_options=_container(cfg.get("snic_sw")) or {})
    report = {"kind": "simulate", **report}
    report["matrix"]["name"] = name
    if str(cfg.matrix).startswith("paper:"):  # a name like paper-arabic reads as the real matrix: say what it is
        report["matrix"]["label"] = analogs.label(str(cfg.matrix))
    if cfg.get("strong_scaling"):
        report["strong_scaling"] = strong_scaling_block(a, params, cfg, k)
    if links and links.series is not None:
        report["link_stats"] = link_report.summary(links.series)
    return report


def _write(report: dict, cfg: DictConfig, targets: list, links: link_stats.Recorder | None = None) -> None:
    """The report to each of ``targets`` (each once), its breakdown CSV beside each, the figures (and
    stats=links' files) beside the last, and the summary."""
    paths = write_json(report, *targets)
    csvs = [write_breakdown_csv(report, p.with_suffix(".breakdown.csv")) for p in paths]
    if cfg.get("plots", True) and paths:
        paths += save_figures(report, paths[-1].parent)
    if links and links.series is not None and paths:
        title = f"busiest links, {report['matrix']['name']} K={report['k']}"
        paths += link_report.write(links.series, paths[-1].parent, title, cfg.get("plots", True))
    paths += [p for p in csvs if p is not None]
    for line in summary_lines(report):
        print(line)
    for p in paths:
        print(f"  written      {p}")


def _finished(paths: list[Path | None], ident: dict) -> Path | None:
    """The first of ``paths`` that holds a report of this run's identity (a finished point)."""
    for path in paths:
        if path is not None and path.is_file() and report_identity(read_report(path)) == ident:
            return path
    return None


def _skip(finished: Path, own: Path | None) -> dict:
    """A finished point: its report, copied into the job's own directory (a multirun folder stays
    complete for ``collect``); one line says so."""
    report = read_report(finished)
    if own is not None and own.resolve() != finished.resolve():
        write_json(report, own)
    print(f"  skipped      finished already: {finished} has this run's report (rerun=true runs it again)")
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


def _report_dir_path(cfg: DictConfig, name: str, params: HardwareParams, k: int, overrides: list[str]) -> Path | None:
    """``report_dir/<matrix>-n<nodes>-<topology>-<kernel>-k<K><tag or overrides>.json`` for sweeps, if
    ``report_dir`` is set (:func:`netsparse_torch.report.identity.report_stem`)."""
    if not cfg.get("report_dir"):
        return None
    c = params.cluster
    stem = report_stem(name, c.nodes, c.topology, str(cfg.kernel), k, str(cfg.get("tag") or ""), overrides)
    return Path(str(cfg.report_dir)) / f"{stem}.json"


def strong_scaling_block(a, params: HardwareParams, cfg: DictConfig, k: int) -> dict:
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
            cpu = _cpu_model(k)
            models[name] = cpu
            info[name] = {"calibrated_from_measurement": True, "nnz_k_per_s": cpu.nnz_k_per_s,
                          "gflops": cpu.gflops, "source": cpu.source}
        else:
            raise ConfigError(f"unknown compute model {name!r}; choose from spade, cpu")
    rows = analysis.strong_scaling(a, params, counts, k=k, kernel=str(cfg.kernel),
                                   partition=str(cfg.partition), compute_models=models,
                                   simulator=with_progress(with_link_layer(default_simulator(), cfg)),
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


