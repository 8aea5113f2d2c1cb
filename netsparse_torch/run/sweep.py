"""A ``netsparse-simulate`` sweep on Hydra's launchers: whether its jobs fit in memory at once.

``hydra/launcher=joblib`` runs ``hydra.launcher.n_jobs`` jobs at once on this host and
``submitit_local`` all of them; ``submitit_slurm`` (``hydra/launcher=slurm``, configs/hydra/launcher/)
gives each job ``hydra.launcher.mem_gb``. :class:`MemoryCheck`, a Hydra callback of the simulator's
config, refuses in one line a sweep whose jobs would not fit, before any job starts: each job's peak is
estimated from its matrix's rows and nonzeros (:func:`peak_bytes`), the jobs that run at once are the
largest ones, and the host's available memory is ``MemAvailable`` of ``/proc/meminfo``. Torch-free.
"""

from __future__ import annotations

import gzip
import itertools
import math
import os
import sys
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from hw_models import memory
from netsparse_torch.errors import ConfigError

GIB = 1 << 30

BASE_BYTES = 1 * GIB
"""A run's memory before its matrix: the interpreter, numpy, scipy, matplotlib and the simulator's
fixed state. Fitted to the measured peaks of docs/benchmarks.md (ego-twitter, 2.7 M nonzeros: 0.94 GiB)."""
BYTES_PER_NNZ = 4
"""A column id (int32) per nonzero: the one copy of the matrix (``hw_models.pattern``)."""
BYTES_PER_ROW = 28
"""Per row: the row pointer (int64) and the per-row state of the workload pass and the simulator.
Fitted with :data:`BASE_BYTES` and :data:`BYTES_PER_NNZ` so that the estimate is at or above every
full-size peak measured in docs/benchmarks.md (arabic 3.91 GiB, europe 2.61, queen 2.16, stokes 2.49,
uk 2.55): 3.92, 2.68, 2.28, 2.60, 3.14 GiB."""

LAUNCHERS = {"JoblibLauncher": "joblib", "LocalLauncher": "submitit_local", "SlurmLauncher": "submitit_slurm"}
"""Launcher classes (``hydra.launcher._target_``) whose jobs the check sizes."""


def peak_bytes(rows: int, nnz: int) -> int:
    """Estimated peak memory of one ``netsparse-simulate`` run of a ``rows``-row matrix with ``nnz``
    nonzeros (an estimate fitted to measured peaks, see :data:`BYTES_PER_ROW`)."""
    return BASE_BYTES + BYTES_PER_NNZ * nnz + BYTES_PER_ROW * rows


def matrix_size(job: dict[str, str]) -> tuple[int, int] | None:
    """``(rows, nonzeros)`` of a job's matrix without building it: a paper analog's share of the paper's
    sizes, a synthetic shape's generator parameters, a Matrix Market file's header (symmetric files count
    twice); ``None`` when it cannot be told (an unreadable file: the job itself will say why)."""
    spec = job.get("matrix") or ""
    if spec.startswith("paper:"):
        from hw_models import analogs

        m, scale = analogs.parse(spec)
        return analogs.scaled_rows(m, scale), int(m.nnz * scale)
    if spec == "synthetic" or spec.startswith("synthetic:"):
        shape = spec.split(":", 1)[1] if ":" in spec else job.get("synthetic.shape", "powerlaw")
        n = int(float(job.get("synthetic.n", 20000)))
        return n, n * _synthetic_degree(shape, job)
    return _mtx_size(Path(spec))


def _synthetic_degree(shape: str, job: dict[str, str]) -> int:
    """Nonzeros per row of a synthetic shape, from its parameters (hw_models.synthetic)."""
    def param(name: str, default: float) -> float:
        return float(job.get(f"synthetic.params.{name}", job.get(f"synthetic.shape_params.{shape}.{name}", default)))

    if shape == "banded":
        return math.ceil((2 * param("bandwidth", 64) + 1) * param("density", 0.6))
    if shape == "road":
        return 4
    return math.ceil(param("avg_degree", 24.0))


def _mtx_size(path: Path) -> tuple[int, int] | None:
    try:
        with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as f:
            banner = f.readline().lower()
            line = f.readline()
            while line.startswith("%") or not line.strip():
                line = f.readline()
        rows, cols, entries = (int(x) for x in line.split()[:3])
    except (OSError, ValueError, EOFError):
        return None
    symmetric = any(s in banner for s in ("symmetric", "hermitian"))
    return max(rows, cols), entries * (2 if symmetric else 1)


def sweep_jobs(config: DictConfig) -> list[dict[str, str]]:
    """The jobs of a multirun as the basic sweeper makes them (``hydra.sweeper.params``, then the command
    line's overrides; each swept key's values crossed), each as ``{key: value}`` of the keys
    :func:`matrix_size` reads, taken from the job's overrides or else from the config."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    lines = [f"{k}={v}" for k, v in params.items()] + list(OmegaConf.select(config, "hydra.overrides.task") or [])
    values: dict[str, list[str]] = {}
    for o in OverridesParser.create().parse_overrides(lines):
        key = o.get_key_element().lstrip("+~")
        values[key] = [str(v) for v in (o.sweep_iterator() if o.is_sweep_override() else [o.value()])]
    base = {k: str(OmegaConf.select(config, k)) for k in ("matrix", "synthetic.shape", "synthetic.n")}
    base |= {f"synthetic.shape_params.{s}.{p}": str(v) for s, ps in (OmegaConf.select(config, "synthetic.shape_params")
                                                                      or {}).items() for p, v in ps.items()}
    keys = list(values)
    return [base | {k: v for k, v in zip(keys, combo, strict=True) if k == "matrix" or k.startswith("synthetic.")}
            for combo in itertools.product(*values.values())]


def available_bytes() -> int:
    """The host's available memory (``MemAvailable``: free plus what the kernel can reclaim)."""
    available = memory.available_bytes()
    if available is not None:
        return available
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def joblib_workers(n_jobs: int) -> int:
    """The processes joblib starts for ``n_jobs`` (negative: the CPUs plus one plus ``n_jobs``)."""
    import joblib

    cpus = joblib.cpu_count()
    return max(1, n_jobs if n_jobs > 0 else cpus + 1 + n_jobs)


def check_parallel(peaks: list[tuple[str, int]], parallel: int, available: int, how: str, fewer: str) -> None:
    """Refuse, in one :class:`ConfigError`, ``parallel`` jobs at once whose largest peaks (``peaks``:
    (matrix, bytes) per job) add up to more than ``available``; the message names the most that fit
    (``fewer``: how to ask for them, ``{n}`` in it replaced by their number)."""
    ordered = sorted(peaks, key=lambda p: p[1], reverse=True)
    at_once = ordered[:parallel]
    need = sum(b for _, b in at_once)
    if need <= available:
        return
    fits = next(n for n in range(len(at_once), -1, -1) if sum(b for _, b in ordered[:n]) <= available)
    big, big_b = at_once[0]
    what = (f"{how} runs {len(at_once)} jobs at once, estimated at {need / GIB:.1f} GiB together (the largest: "
            f"{big}, ~{big_b / GIB:.1f} GiB from its rows and nonzeros), but this host has {available / GIB:.1f} "
            "GiB available")
    if fits == 0:
        raise ConfigError(f"{what}; even one of them does not fit: run it on a larger machine "
                          "(hydra/launcher=slurm)")
    raise ConfigError(f"{what}: {fewer.format(n=fits)}")


def check_slurm(peaks: list[tuple[str, int]], mem_gb) -> None:
    """Refuse a Slurm job size (``hydra.launcher.mem_gb``) below the largest job's estimated peak."""
    if mem_gb is None or not peaks:
        return
    big, big_b = max(peaks, key=lambda p: p[1])
    if big_b > float(mem_gb) * 1e9:
        raise ConfigError(f"hydra.launcher.mem_gb={mem_gb} is below the ~{big_b / 1e9:.1f} GB that one run of {big} "
                          f"needs (estimated from its rows and nonzeros): set hydra.launcher.mem_gb="
                          f"{math.ceil(big_b / 1e9)} or more")


class MemoryCheck(Callback):
    """Hydra callback (configs/simulate.yaml, ``hydra.callbacks``): before a multirun launches, its jobs
    must fit in memory as the launcher runs them (the module's docstring); else ``<prog>: error: ...``
    and exit 2."""

    def __init__(self, prog: str = "netsparse-simulate") -> None:
        self.prog = prog

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        try:
            check_sweep(config)
        except ConfigError as exc:
            # Hydra turns a callback's exception into a warning and launches anyway: an exit stops it.
            print(f"{self.prog}: error: {exc}", file=sys.stderr)
            sys.exit(2)


def check_sweep(config: DictConfig) -> None:
    """Refuse (:class:`ConfigError`) a multirun whose jobs do not fit in memory as its launcher runs them."""
    target = str(OmegaConf.select(config, "hydra.launcher._target_") or "")
    launcher = LAUNCHERS.get(target.rpartition(".")[2])
    if launcher is None:
        return  # the basic launcher runs the jobs one after another, in this process
    peaks = []
    for job in sweep_jobs(config):
        size = matrix_size(job)
        if size is not None:
            peaks.append((job["matrix"], peak_bytes(*size)))
    if launcher == "submitit_slurm":
        check_slurm(peaks, OmegaConf.select(config, "hydra.launcher.mem_gb"))
    elif launcher == "joblib":
        n_jobs = int(OmegaConf.select(config, "hydra.launcher.n_jobs") or -1)
        check_parallel(peaks, joblib_workers(n_jobs), available_bytes(),
                       f"hydra/launcher=joblib with hydra.launcher.n_jobs={n_jobs}",
                       "set hydra.launcher.n_jobs={n} (or fewer)")
    else:  # submitit's local executor starts every job at once
        check_parallel(peaks, len(peaks), available_bytes(), "hydra/launcher=submitit_local",
                       "use hydra/launcher=joblib hydra.launcher.n_jobs={n} (or fewer)")
