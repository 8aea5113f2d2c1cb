"""The whole-graph models of a ``dataset=paper`` run, each in a process of its own.

The model of the cluster needs the whole pattern (every virtual node's rows), which no training rank,
and not the launcher, holds. Once the ranks have finished, the launcher starts
``python -m netsparse_torch.model_process`` (torch-free) for the trained analog and, with
``cluster.full_size=true``, once more for its scale-1 original. Each generates its analog (or reads it
from ``dataset.analog_cache``) only when the cache of :mod:`hw_models.analog_model` lacks a gather,
models it, and returns the block with its own peak RSS and wall time, so the report shows the model's
memory beside the ranks' and never adds it to theirs.
"""

from __future__ import annotations

import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hw_models.memory import proc_bytes
from netsparse_torch import errors
from netsparse_torch.errors import NetsparseError
from netsparse_torch.progress import echo


def model_cache_dir() -> Path:
    """Where the analogs' modeled gathers are cached (``$NETSPARSE_CACHE/modeled``, else
    ``~/.cache/netsparse_torch/modeled``): every run and world size reuses them."""
    from netsparse_torch.graph.loaders import default_cache_dir

    return default_cache_dir() / "modeled"


def run_model(request: dict, log=None) -> dict:
    """The result of :func:`model` for ``request``, computed in a child process: ``{"block",
    "peak_rss_bytes", "wall_s"}``. A :class:`NetsparseError` there is raised here, as the same class."""
    with tempfile.TemporaryDirectory(prefix="netsparse-model-") as tmp:
        src, dst = Path(tmp) / "request.pkl", Path(tmp) / "result.pkl"
        src.write_bytes(pickle.dumps({**request, "log": str(log) if log else None}))
        code = subprocess.run([sys.executable, "-m", "netsparse_torch.model_process", str(src), str(dst)]).returncode
        if not dst.is_file():
            raise NetsparseError(f"the model process of {request['name']} failed (exit code {code}); its output "
                                 "is above")
        result = pickle.loads(dst.read_bytes())
    if "error" in result:
        raise getattr(errors, result["error"], NetsparseError)(result["message"])
    return result


def model(request: dict) -> dict:
    """Model the analog ``request`` names (matrix, scale, seed, hardware, gathers, compute model,
    partition, caches) with :func:`hw_models.analog_model.analog_training`."""
    from hw_models import analogs
    from hw_models.analog_model import analog_training
    from hw_models.analysis import default_simulator
    from netsparse_torch.progress import with_progress

    t0 = time.perf_counter()
    m = analogs.PAPER_MATRICES[request["matrix"]]
    block = analog_training(m, request["scale"], request["seed"], request["hardware"], request["gathers"],
                            request["compute_model"], request["partition"], with_progress(default_simulator()),
                            cache_dir=request["cache_dir"], analog_cache=request.get("analog_cache"),
                            progress=lambda specs: _progress(specs, request["name"], request.get("log")))
    return {"block": block, "peak_rss_bytes": peak_rss_bytes(), "wall_s": time.perf_counter() - t0}


def peak_rss_bytes() -> int:
    """This process's own peak RSS: ``VmHWM`` on Linux. getrusage's ``ru_maxrss`` would not do: Linux
    carries it across ``exec``, so it would include the launcher that forked this process."""
    hwm = proc_bytes("/proc/self/status", "VmHWM")
    if hwm is not None:
        return hwm
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def _progress(specs, name: str, log):
    """A line before each gather's simulation and one after it: at full size each takes tens of seconds
    to minutes."""
    specs = list(specs)
    for i, (k, kernel) in enumerate(specs):
        t0 = time.perf_counter()
        echo(f"  modeling     {name}: {kernel} K={k} ({i + 1} of {len(specs)} gathers not cached), simulating ...",
             log)
        yield k, kernel
        echo(f"  modeling     {name}: {kernel} K={k} done in {time.perf_counter() - t0:.1f} s (cached)", log)


def main(argv: list[str]) -> int:
    request = pickle.loads(Path(argv[0]).read_bytes())
    try:
        result = model(request)
    except NetsparseError as exc:
        result = {"error": type(exc).__name__, "message": str(exc)}
    Path(argv[1]).write_bytes(pickle.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
