"""``make gpu-check``: on a GPU machine that already has torch, triton and PyG (and no network), build the
extension, run the CUDA tests and the GPU benchmarks, and write one JSON.

    python3 tools/gpu_check.py [--out FILE] [--wheels DIR] [--full]

Steps, each recorded in the JSON with its time and outcome:

1. packages: the modules the package and its tests import. Wheels in ``--wheels`` (default ``.whl/``,
   see docs/gpu.md) are installed first into a private target folder; what is still missing is named in
   one line, and the check stops there.
2. build: the C++ extension, in place (``setup.py build_ext --inplace``).
3. tests: the CUDA tests and their CPU twins (``pytest -k "cuda or gpu or device"``; ``--full``: the
   whole suite), Triton native.
4. benchmarks: benchmarks/gpu_kernels.py and benchmarks/gpu_epoch.py.

Budget: 8 minutes on one H100 or H200 (:data:`BUDGET_S`): each step has its own cap and never runs past
what is left of the budget, so the JSON is always written in time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = time.perf_counter()
#: import name -> the package to bring (pip name), for everything the package, its tests and the
#: benchmarks import on a GPU machine.
REQUIRED = {
    "torch": "torch", "triton": "triton", "torch_geometric": "torch-geometric", "numpy": "numpy",
    "scipy": "scipy", "hydra": "hydra-core", "omegaconf": "omegaconf", "antlr4": "antlr4-python3-runtime",
    "tqdm": "tqdm", "grpc": "grpcio", "grpc_tools": "grpcio-tools", "google.protobuf": "protobuf",
    "matplotlib": "matplotlib", "sklearn": "scikit-learn", "pymetis": "pymetis", "pytest": "pytest",
    "xdist": "pytest-xdist", "hypothesis": "hypothesis", "ninja": "ninja",
}
SITE = Path("/tmp/netsparse-gpu-site")
BUDGET_S = 480.0
#: Each step's cap in seconds (our estimates on 16 cores: build ~40 s, tests ~90 s, each benchmark ~60 s).
CAPS = {"build": 120, "tests": 150, "gpu_kernels": 100, "gpu_epoch": 110}


def missing_modules() -> list[str]:
    gone = []
    for module, package in REQUIRED.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a dotted name whose parent is missing
            found = False
        if not found:
            gone.append(package)
    return gone


def install_wheels(wheels: Path) -> list[str]:
    """Install every wheel in ``wheels`` into :data:`SITE` (no index, no dependencies) and put it first on
    the path of this process and of the steps it starts."""
    files = sorted(str(p) for p in wheels.glob("*.whl")) if wheels.is_dir() else []
    if files:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--upgrade", "--target", str(SITE), *files], check=True)
        sys.path.insert(0, str(SITE))
        os.environ["PYTHONPATH"] = os.pathsep.join([str(SITE), os.environ["PYTHONPATH"]])
        importlib.invalidate_caches()
    return [Path(f).name for f in files]


def step(name: str, cmd: list[str], deadline: float, env: dict | None = None) -> dict:
    """Run one step until its cap (:data:`CAPS`) or the check's ``deadline`` (``time.perf_counter()``),
    whichever comes first; its last lines are kept for the JSON."""
    t0 = time.perf_counter()
    timeout = max(1.0, min(CAPS[name], deadline - t0))
    print(f"== {name}: {' '.join(cmd)}", flush=True)
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        printed = "".join(p.decode(errors="replace") if isinstance(p, bytes) else p
                          for p in (exc.stdout, exc.stderr) if p)
        rc, out = 124, f"{printed}\n{name}: timed out after {timeout:.0f} s"
    tail = out.strip().splitlines()[-15:]
    print("\n".join(tail), flush=True)
    return {"command": cmd, "rc": rc, "seconds": round(time.perf_counter() - t0, 1), "tail": tail}


def junit_counts(path: Path) -> dict | None:
    """Tests, failures, errors and skips of pytest's JUnit XML (None when pytest wrote none)."""
    if not path.exists():
        return None
    import xml.etree.ElementTree as ET

    suite = ET.parse(path).getroot()
    suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
    return {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}


def device_info() -> dict:
    import torch

    info = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
            "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["device"] = torch.cuda.get_device_name(0)
        info["device_count"] = torch.cuda.device_count()
    for module in ("triton", "torch_geometric"):
        try:
            info[module] = __import__(module).__version__
        except ImportError:
            info[module] = None
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gpu_check.json")
    ap.add_argument("--wheels", type=Path, default=ROOT / ".whl")
    ap.add_argument("--full", action="store_true", help="the whole test suite, not only the CUDA tests")
    ap.add_argument("--cpu-twin", action="store_true",
                    help="run every step on a machine without a GPU (benchmarks --device cpu --small): checks "
                         "this script's plumbing, measures nothing about GPUs")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # The steps import this checkout (the benchmarks run as scripts, outside the repository root).
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    report: dict = {"check": "gpu-check (CPU twin: plumbing only)" if args.cpu_twin else "gpu-check",
                    "started": time.strftime("%Y-%m-%d %H:%M:%S"), "steps": {}}

    def finish(rc: int) -> int:
        args.out.write_text(json.dumps(report, indent=2, default=str))
        print(f"wrote {args.out}")
        return rc

    report["wheels_installed"] = install_wheels(args.wheels)
    report["missing"] = missing_modules()
    if report["missing"]:
        print(f"gpu-check: missing Python packages: {', '.join(report['missing'])} (no network here? bring them "
              "as wheels: docs/gpu.md)", file=sys.stderr)
        return finish(2)
    report["machine"] = device_info()
    if not report["machine"]["cuda_available"] and not args.cpu_twin:
        print("gpu-check: torch sees no CUDA GPU: nothing to check here (make test covers the CPU)", file=sys.stderr)
        return finish(2)
    deadline = START + BUDGET_S
    if args.full:  # the whole suite: up to 10 more minutes, outside the 8-minute budget
        CAPS["tests"], deadline = 600, deadline + 450
    steps = report["steps"]
    jobs = str(min(16, os.cpu_count() or 1))
    steps["build"] = step("build", [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], deadline,
                          {"MAX_JOBS": jobs})
    if steps["build"]["rc"]:
        return finish(1)
    selection = [] if args.full else ["-k", "cuda or gpu or device"]
    results = args.out.parent / "gpu_check_junit.xml"
    steps["tests"] = step("tests", [sys.executable, "-m", "pytest", "-q", "-n", "8", "--dist", "loadfile",
                                    "-p", "no:cacheprovider", f"--junitxml={results}", *selection, "tests"],
                          deadline, {} if args.cpu_twin else {"TRITON_INTERPRET": "0"})
    steps["tests"]["counts"] = junit_counts(results)
    bench = {}
    twin = ["--device", "cpu", "--small"] if args.cpu_twin else []
    kernels = [*twin, "--ks", "16", "--reps", "1"] if twin else []  # the Triton interpreter is slow
    for name, extra in (("gpu_kernels", kernels), ("gpu_epoch", ["--repeats", "2" if twin else "20", *twin])):
        out = args.out.parent / f"{name}.json"
        steps[name] = step(name, [sys.executable, f"benchmarks/{name}.py", "--out", str(out), *extra], deadline)
        bench[name] = json.loads(out.read_text()) if out.exists() and steps[name]["rc"] == 0 else None
    report["benchmarks"] = bench
    failed = [name for name, s in steps.items() if s["rc"]]
    report["failed_steps"] = failed
    print(f"gpu-check: {'all steps passed' if not failed else 'failed: ' + ', '.join(failed)}")
    return finish(1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
