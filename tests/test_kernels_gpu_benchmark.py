"""benchmarks/gpu_kernels.py keeps working: its CPU mode (tiny graphs, Triton interpreter) runs the same
code path as the GPU benchmark; without a GPU the default run says it skipped; with one, a small run."""

import json
import os
import subprocess
import sys

import devices
import pytest
from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "gpu_kernels.py"
# One chunk size in both segment orders (the chunk size is a plain argument of the same plan).
SMALL = ["--small", "--ks", "5", "32", "--chunks", "2", "--reps", "1", "--hbm-gbs", "100"]
TRITON = {"triton-c2", "triton-c2-buckets"}


def run(tmp_path, *args, interpret: bool):
    out = tmp_path / "gpu_kernels.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    res = subprocess.run([sys.executable, str(SCRIPT), *args, "--out", str(out)], env=env, capture_output=True,
                         text=True, timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    return json.loads(out.read_text()), res.stdout


@pytest.mark.skipif(not devices.TRITON_INSTALLED, reason="triton is not installed")
@pytest.mark.skipif(not devices.TRITON_INTERPRETER_LOOPS, reason="this Triton's interpreter cannot take the SpMM's "
                    "loop bound under NumPy 2 (fixed in Triton 3.9)")
def test_cpu_small_mode_runs_every_kernel_and_checks_it(tmp_path):
    data, stdout = run(tmp_path, "--device", "cpu", *SMALL, interpret=True)
    rows = data["rows"]
    assert {(r["graph"], r["class"], r["direction"], r["k"]) for r in rows} == {
        (g, c, d, k) for g, c in (("powerlaw-small", "power-law"), ("mesh-small", "mesh"))
        for d in ("forward", "backward") for k in (5, 32)}
    for r in rows:
        assert r["ok"] and set(r["ms"]) == TRITON | {"cusparse-i32", "cusparse-i64", "auto"}
        assert r["auto_choice"] in ("triton", "torch") and r["best_triton"] in TRITON
        assert r["vs_cusparse_i32"]["cusparse-i32"] == 1.0
        bound_ms = r["nnz"] * r["k"] * 4 / 100e9 * 1e3
        assert r["hbm_fraction"]["triton-c2"] == pytest.approx(bound_ms / r["ms"]["triton-c2"])
    assert data["hbm_gbs"] == 100 and data["hbm_gbs_source"] == "--hbm-gbs"
    # The goal is read at K = 32-256 only (here K=32), per graph and direction, with its class's target.
    goals = {(g["graph"], g["direction"]): g for g in data["goals"]}
    assert set(goals) == {(g, d) for g in ("powerlaw-small", "mesh-small") for d in ("forward", "backward")}
    for (graph, direction), g in goals.items():
        row = next(r for r in rows if (r["graph"], r["direction"], r["k"]) == (graph, direction, 32))
        assert g["at_k"] == 32 and g["least_ratio"] == row["vs_cusparse_i32"][row["best_triton"]]
        assert g["goal"] == (1.2 if graph == "powerlaw-small" else 1.0)
        assert g["met"] == (g["least_ratio"] >= g["goal"])
        assert g["shortfall"] == max(0.0, 1 - g["least_ratio"] / g["goal"])
    assert "goal powerlaw-small" in stdout


@pytest.mark.skipif(devices.CUDA, reason="checks the run without a GPU")
def test_without_cuda_it_skips_with_a_json_saying_so(tmp_path):
    data, stdout = run(tmp_path, interpret=False)
    assert "skipped: no CUDA device" in stdout and data["skipped"] == "no CUDA device"


@devices.requires_cuda
def test_cuda_small_run(tmp_path):
    data, _ = run(tmp_path, *SMALL, interpret=False)
    assert data["device"] == "cuda" and all(r["ok"] for r in data["rows"])
