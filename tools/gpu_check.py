"""``make gpu-check``: on a GPU machine that already has torch, triton and PyG (and no network), build the
extension, run the GPU tests and the GPU benchmarks, and write one JSON that answers what the first
GPU run must answer.

    python3 tools/gpu_check.py [--data DIR] [--out-dir DIR] [--wheels DIR] [--full]
    python3 tools/gpu_check.py --prepare-data DIR      # copy the data the check reads (to carry it along)
    python3 tools/gpu_check.py --measure-cold-start    # no GPU needed: what the caps below are made of

Steps, each recorded in the JSON with its time, cap and outcome:

1. packages: the modules the package and its tests import. Wheels in ``--wheels`` (default ``.whl/``,
   see docs/gpu.md) are installed first into a private target folder; what is still missing is named in
   one line, and the check stops there. So is missing data (``--data``, default ``$NETSPARSE_DATA`` or
   ../shared/data: :data:`DATA_FILES`).
2. build: the C++ extension, in place (``setup.py build_ext --inplace``).
3. cold start: one Triton SpMM config compiled ahead of time for this GPU, on an empty cache: the
   seconds one compile takes here, from which the next steps' caps are set (:func:`caps`).
4. native errors: whether an error raised in the C++ extension reaches Python as a ValueError
   (tools/native_errors.py; it crashed the process on the first GPU machine), with the compilers.
5. tests: :data:`GPU_TESTS` (every test file with a CUDA test, the Triton correctness tests with the
   row over 256 nonzeros, the 1-rank NCCL test), Triton native; ``--full``: the whole suite.
6. benchmarks: benchmarks/gpu_kernels.py (Triton against cuSPARSE int32 and int64) and
   benchmarks/gpu_epoch.py (the GCN and GAT epoch against PyG).

The JSON (``--out-dir``/gpu_check.json, beside the benchmarks' own JSON and the tests' JUnit XML) has
the versions, the card, the test counts and failures, the kernel ratios against the goal and the epoch
ratios against PyG. Budget: 8 minutes (:data:`BUDGET_S`); a step never runs past what is left of it,
and a step that ends early leaves its time to the next, so the JSON is always written in time.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
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
#: What the tests and benchmarks read from the data folder (relative to it).
DATA_FILES = ("planetoid/Cora/raw", "graphs/ego-twitter.mtx.gz", "graphs/delaunay_n16.mtx.gz")
#: The tests a GPU changes: every file with a CUDA test (tests/test_gpu_check.py keeps this list whole),
#: the Triton correctness tests (native on a GPU; a row of 300 nonzeros among them) and the 1-rank NCCL
#: test of the backend.
GPU_TESTS = (
    "tests/test_kernels_triton.py", "tests/test_kernels.py", "tests/test_attention_kernels.py",
    "tests/test_kernel_agreement.py", "tests/test_kernels_gpu_benchmark.py", "tests/test_device_guards.py",
    "tests/test_halo_order.py", "tests/test_keyed_dropout_device.py", "tests/test_backend_nccl.py",
    "tests/test_backend_cuda_path.py", "tests/test_collectives_conformance.py", "tests/test_device_training.py",
    "tests/test_gat_equivalence.py",
)
SITE = Path("/tmp/netsparse-gpu-site")
BUDGET_S = 480.0
TEST_WORKERS = 8
# Seconds each step spends beyond Triton compiles, on one H100 or H200. Measured on an H200 (16 cores,
# 2026-11-28): the build about 40 s from clean, gpu_kernels 27-31 s in all (one segment order; both orders
# time twice the Triton kinds, inside its cap of 98 s); the tests and gpu_epoch are
# still estimates (their runs failed early). native_errors: one C++ call, and a debugger's backtrace if
# it crashes.
RUN_S = {"build": 90.0, "native_errors": 30.0, "tests": 120.0, "gpu_kernels": 40.0, "gpu_epoch": 60.0}
# Triton compiles on a cold cache, counted from the autotune spaces: gpu_kernels compiles the 15 SpMM
# configs and 4 fix-ups (int32 graphs); gpu_epoch the SpMM at 3 widths (about 12 configs) and the 6 GAT
# kernels; the tests every kernel at fp32/fp64 x int32/int64 over their spaces (about 120, spread over
# TEST_WORKERS workers, who repeat some).
COMPILES = {"build": 0, "native_errors": 0, "tests": 120 / (TEST_WORKERS / 2), "gpu_kernels": 19, "gpu_epoch": 18}
# Graph building in gpu_kernels (generating the two 1M-row graphs, reading two files), measured on CPU
# by --measure-cold-start: 21-29 s on a shared 2-core VM (docs/benchmarks.md).
GRAPH_BUILD_S = 30.0
MARGIN = 1.5
INTERRUPT_GRACE_S = 10.0  # a step past its cap gets this long to stop on SIGINT before SIGKILL


def caps(compile_s: float) -> dict[str, float]:
    """Each step's cap in seconds when one Triton compile takes ``compile_s`` here: its run time plus its
    compiles (and gpu_kernels' graph building), times :data:`MARGIN` for the compiles."""
    out = {name: RUN_S[name] + MARGIN * COMPILES[name] * compile_s for name in RUN_S}
    out["gpu_kernels"] += GRAPH_BUILD_S
    return {name: round(s) for name, s in out.items()}


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


def missing_data(root: Path) -> list[str]:
    return [name for name in DATA_FILES if not (root / name).exists()]


def prepare_data(source: Path, dest: Path) -> list[str]:
    """Copy :data:`DATA_FILES` from ``source`` into ``dest`` (what a borrowed GPU machine needs)."""
    for name in DATA_FILES:
        src, dst = source / name, dest / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dst)
    return list(DATA_FILES)


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


def compile_probe(arch: int) -> float:
    """Seconds to compile one Triton SpMM config for ``sm_<arch>`` on an empty cache, ahead of time (no
    GPU needed): the cold-start cost of one autotune config on this host."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from netsparse_torch.kernels import triton_kernels as tk

    fn = tk._spmm_segments_kernel.fn
    consts = {"BLOCK_ROWS": 8, "BLOCK_NNZ": 4, "BLOCK_K": 64}
    sig = {n: "constexpr" if n in consts else ("*fp32" if n in ("val_ptr", "b_ptr", "out_ptr", "part_ptr") else "*i32")
           if n.endswith("_ptr") else "i32" for n in fn.arg_names}
    saved = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="netsparse-triton-probe-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            t0 = time.perf_counter()
            triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=GPUTarget("cuda", arch, 32))
            return time.perf_counter() - t0
        finally:
            del os.environ["TRITON_CACHE_DIR"]
            if saved is not None:
                os.environ["TRITON_CACHE_DIR"] = saved


def step(name: str, cmd: list[str], timeout: float, env: dict | None = None) -> dict:
    """Run one step for at most ``timeout`` seconds; its last lines are kept for the JSON."""
    t0 = time.perf_counter()
    timeout = max(1.0, timeout)
    print(f"== {name} (cap {timeout:.0f} s): {' '.join(cmd)}", flush=True)
    # Its own session, so that a timeout ends everything it started (ninja's compilers, pytest's workers
    # holding the GPU), not only the process it started. SIGINT first: pytest then writes its JUnit XML
    # of the tests that ran.
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        with contextlib.suppress(ProcessLookupError):  # what it started and left running
            os.killpg(proc.pid, signal.SIGKILL)
        rc, out = 124, f"{out}\n{name}: timed out after {timeout:.0f} s"
    tail = out.strip().splitlines()[-15:]
    print("\n".join(tail), flush=True)
    return {"command": cmd, "rc": rc, "seconds": round(time.perf_counter() - t0, 1), "cap_s": round(timeout),
            "tail": tail}


def junit_counts(path: Path) -> dict | None:
    """Tests, failures, errors and skips of pytest's JUnit XML, and the ids of the tests that failed
    (None when pytest wrote none)."""
    if not path.exists():
        return None
    import xml.etree.ElementTree as ET

    suite = ET.parse(path).getroot()
    suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    counts["failed"] = [f"{case.get('classname')}::{case.get('name')}" for case in suite.iter("testcase")
                        if case.find("failure") is not None or case.find("error") is not None]
    return counts


def device_info() -> dict:
    import torch
    import torch.distributed

    info = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
            "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(device=props.name, device_count=torch.cuda.device_count(),
                    capability=f"{props.major}.{props.minor}", memory_gib=round(props.total_memory / 2**30, 1),
                    nccl=".".join(map(str, torch.cuda.nccl.version())) if torch.distributed.is_nccl_available()
                    else None)
    for module in ("triton", "torch_geometric", "numpy", "scipy"):
        try:
            info[module] = __import__(module).__version__
        except ImportError:
            info[module] = None
    return info


def kernel_summary(bench: dict | None) -> dict | None:
    """gpu_kernels' answer: the card, each goal (graph, direction, least ratio over K = 32-256, met or
    the shortfall) and every best-Triton ratio against cuSPARSE int32 and int64."""
    if not bench or "rows" not in bench:
        return None
    ratios = [{"graph": r["graph"], "direction": r["direction"], "k": r["k"], "best": r["best_triton"],
               "vs_cusparse_i32": round(r["vs_cusparse_i32"][r["best_triton"]], 3),
               "vs_cusparse_i64": round(r["ms"]["cusparse-i64"] / r["ms"][r["best_triton"]], 3),
               "hbm_fraction": round(r["hbm_fraction"][r["best_triton"]], 3) if r["hbm_fraction"] else None}
              for r in bench["rows"]]
    return {"device_name": bench.get("device_name"), "goals": bench.get("goals"), "ratios": ratios,
            "all_checked": all(r["ok"] for r in bench["rows"])}


def epoch_summary(bench: dict | None) -> dict | None:
    """gpu_epoch's answer: ours over PyG per case (GCN against ``GCNConv(cached=True)``, GAT against
    ``GATConv``), and the 2-rank epochs."""
    if not bench or "ratio" not in bench:
        return None
    return {"device_name": bench.get("device_name"),
            "ours_over_pyg": {name: round(case["ours_over_pyg"], 3) for name, case in bench["ratio"].items()},
            "median_s": {name: case["median_s"] for name, case in bench["ratio"].items()},
            "two_ranks_median_s": {name: case["median_s"] for name, case in bench.get("sharing", {}).items()}}


def measure_cold_start() -> dict:
    """What the caps are made of, measured on this machine (no GPU needed): one sm_90 compile, and the
    benchmark's graph builds."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_kernels

    compile_s = compile_probe(90)
    built = {}
    for name, (_, build) in gpu_kernels.SOURCES.items():
        t0 = time.perf_counter()
        build()
        built[name] = round(time.perf_counter() - t0, 1)
    return {"compile_s": round(compile_s, 2), "graph_build_s": built, "caps_s": caps(compile_s),
            "budget_s": BUDGET_S, "load_average": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="data folder (default $NETSPARSE_DATA or ../shared/data)")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results", help="where every output goes")
    ap.add_argument("--wheels", type=Path, default=ROOT / ".whl")
    ap.add_argument("--budget-s", type=float, default=BUDGET_S,
                    help="seconds for every step together (default 8 minutes); the steps are cut to fit it")
    ap.add_argument("--full", action="store_true", help="the whole test suite, not only the GPU tests")
    ap.add_argument("--test-workers", type=int, default=TEST_WORKERS, help="pytest-xdist workers of the tests")
    ap.add_argument("--skip-build", action="store_true",
                    help="use the extension already built for this Python and torch (a CPU twin on a dev machine)")
    ap.add_argument("--prepare-data", type=Path, metavar="DIR", help="copy the data the check reads into DIR")
    ap.add_argument("--measure-cold-start", action="store_true", help="print what the caps are made of, here")
    ap.add_argument("--cpu-twin", action="store_true",
                    help="run every step on a machine without a GPU (benchmarks --device cpu --small): checks "
                         "this script's plumbing, measures nothing about GPUs")
    args = ap.parse_args()
    # The steps import this checkout (the benchmarks run as scripts, outside the repository root).
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    sys.path.insert(0, str(ROOT))  # and so does this process (the cold-start probe imports the kernels)
    if args.data is not None:
        os.environ["NETSPARSE_DATA"] = str(args.data.resolve())
    data = Path(os.environ.get("NETSPARSE_DATA", ROOT.parent / "shared" / "data"))
    if args.prepare_data:
        copied = prepare_data(data, args.prepare_data)
        print(f"copied {', '.join(copied)} from {data} to {args.prepare_data}")
        return 0
    if args.measure_cold_start:
        print(json.dumps(measure_cold_start(), indent=2))
        return 0
    out_dir = args.out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict = {"check": "gpu-check (CPU twin: plumbing only)" if args.cpu_twin else "gpu-check",
                    "started": time.strftime("%Y-%m-%d %H:%M:%S"), "data": str(data), "out_dir": str(out_dir),
                    "steps": {}}

    def finish(rc: int) -> int:
        path = out_dir / "gpu_check.json"
        path.write_text(json.dumps(report, indent=2, default=str))
        print(f"wrote {path}")
        return rc

    report["wheels_installed"] = install_wheels(args.wheels)
    report["missing"] = missing_modules()
    if report["missing"]:
        print(f"gpu-check: missing Python packages: {', '.join(report['missing'])} (no network here? bring them "
              "as wheels: docs/gpu.md)", file=sys.stderr)
        return finish(2)
    report["missing_data"] = missing_data(data)
    if report["missing_data"]:
        print(f"gpu-check: missing in the data folder {data}: {', '.join(report['missing_data'])} (pass --data, "
              "or copy them with --prepare-data: docs/gpu.md)", file=sys.stderr)
        return finish(2)
    report["machine"] = device_info()
    if not report["machine"]["cuda_available"] and not args.cpu_twin:
        print("gpu-check: torch sees no CUDA GPU: nothing to check here (make test covers the CPU)", file=sys.stderr)
        return finish(2)
    return finish(run_steps(args, report, out_dir))


def run_steps(args, report: dict, out_dir: Path) -> int:
    import torch

    limits = caps(0.0)  # the build compiles no Triton kernel; the others' caps wait for the probe
    deadline = START + args.budget_s + (600 if args.full else 0)
    steps, saved = report["steps"], 0.0

    def run(name: str, cmd: list[str], env: dict | None = None) -> dict:
        nonlocal saved
        timeout = min(limits[name] + saved, deadline - time.perf_counter())
        steps[name] = step(name, cmd, timeout, env)
        saved = max(0.0, timeout - steps[name]["seconds"])
        return steps[name]

    if not args.skip_build and run("build", [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                                   {"MAX_JOBS": str(min(16, os.cpu_count() or 1))})["rc"]:
        return 1
    # The cold start, once the extension the kernels module imports is built.
    arch = 90 if args.cpu_twin else int("".join(map(str, torch.cuda.get_device_capability(0))))
    compile_s = compile_probe(arch)
    limits = caps(compile_s)
    if args.full:  # the whole suite: up to 10 more minutes, outside the 8-minute budget
        limits["tests"] += 600
    report["cold_start"] = {"compile_s": round(compile_s, 2), "arch": f"sm_{arch}", "caps_s": limits}
    # Before the tests: a C++ error that crashes the process takes a pytest worker with it.
    native = run("native_errors", [sys.executable, "tools/native_errors.py"])
    with contextlib.suppress(IndexError, ValueError):
        report["native_errors"] = json.loads(native["tail"][-1])
    selection = ["tests"] if args.full else list(GPU_TESTS)
    results = out_dir / "gpu_check_junit.xml"
    run("tests", [sys.executable, "-m", "pytest", "-q", "-n", str(args.test_workers), "--dist", "loadfile", "-p",
                  "no:cacheprovider", f"--junitxml={results}", *selection],
        {} if args.cpu_twin else {"TRITON_INTERPRET": "0"})
    report["tests"] = junit_counts(results)
    bench = {}
    twin = ["--device", "cpu", "--small"] if args.cpu_twin else []
    kernels = [*twin, "--ks", "16", "32", "--reps", "1"] if twin else []  # the Triton interpreter is slow
    for name, extra in (("gpu_kernels", kernels), ("gpu_epoch", ["--repeats", "2" if twin else "20", *twin])):
        out = out_dir / f"{name}.json"
        run(name, [sys.executable, f"benchmarks/{name}.py", "--out", str(out), *extra])
        bench[name] = json.loads(out.read_text()) if out.exists() and steps[name]["rc"] == 0 else None
    report["kernels"] = kernel_summary(bench["gpu_kernels"])
    report["epoch"] = epoch_summary(bench["gpu_epoch"])
    failed = [name for name, s in steps.items() if s["rc"]]
    report["failed_steps"] = failed
    print(f"gpu-check: {'all steps passed' if not failed else 'failed: ' + ', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
