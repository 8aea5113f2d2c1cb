"""``make gpu-check`` without a GPU: it names what is missing (packages, data) or says there is no GPU, in
one line, and still writes its JSON; its test selection covers every CUDA test; its caps fit the
budget; its summary reads the benchmarks' JSON (the GPU run itself is documented in docs/gpu.md)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import gpu_check  # noqa: E402


def check(tmp_path, *args):
    proc = subprocess.run([sys.executable, "tools/gpu_check.py", "--out-dir", str(tmp_path / "out"), "--wheels",
                           str(tmp_path), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return proc, json.loads((tmp_path / "out" / "gpu_check.json").read_text())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_gpu_check_without_a_gpu_says_so_and_writes_its_json(tmp_path):
    proc, report = check(tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "gpu-check: torch sees no CUDA GPU: nothing to check here (make test covers the CPU)"]
    assert report["missing"] == [] and report["missing_data"] == [] and report["machine"]["cuda_available"] is False


def test_missing_data_is_named_in_one_line(tmp_path):
    (tmp_path / "data" / "graphs").mkdir(parents=True)
    (tmp_path / "data" / "graphs" / "ego-twitter.mtx.gz").write_bytes(b"")
    proc, report = check(tmp_path, "--data", str(tmp_path / "data"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"gpu-check: missing in the data folder {tmp_path / 'data'}: planetoid/Cora/raw, graphs/delaunay_n16.mtx.gz "
        "(pass --data, or copy them with --prepare-data: docs/gpu.md)"]
    assert report["missing_data"] == ["planetoid/Cora/raw", "graphs/delaunay_n16.mtx.gz"]


def test_prepared_data_is_what_the_check_reads(tmp_path):
    source = tmp_path / "source"
    for name in gpu_check.DATA_FILES:
        path = source / name
        if name.endswith(".gz"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
        else:
            path.mkdir(parents=True)
            (path / "ind.cora.x").write_bytes(b"y")
    (source / "graphs" / "unused.mtx.gz").write_bytes(b"z")
    gpu_check.prepare_data(source, tmp_path / "carried")
    assert gpu_check.missing_data(tmp_path / "carried") == []
    assert not (tmp_path / "carried" / "graphs" / "unused.mtx.gz").exists()
    assert (tmp_path / "carried" / "planetoid" / "Cora" / "raw" / "ind.cora.x").read_bytes() == b"y"


#: How a test says that it runs only on a GPU.
CUDA_ONLY = re.compile(r"requires_cuda|needs a CUDA GPU|devices\.CUDA|\bcuda\b\)|not torch\.cuda\.is_available\(\)")


def test_the_selection_holds_every_file_with_a_cuda_test():
    with_cuda = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py")
                 if CUDA_ONLY.search(p.read_text()) and p.name != "test_gpu_check.py"}
    assert with_cuda - set(gpu_check.GPU_TESTS) == set()
    assert all((ROOT / name).exists() for name in gpu_check.GPU_TESTS)
    # the Triton correctness tests, with the row over 256 nonzeros, and the 1-rank NCCL test
    assert "def test_default_plan_on_a_row_over_256_nonzeros" in (ROOT / "tests/test_kernels_triton.py").read_text()
    assert {"tests/test_kernels_triton.py", "tests/test_backend_nccl.py"} <= set(gpu_check.GPU_TESTS)


def test_caps_grow_with_the_compile_time_and_fit_the_budget_on_a_fast_host():
    fast, slow = gpu_check.caps(0.5), gpu_check.caps(2.0)
    assert fast["build"] == slow["build"] and all(fast[k] < slow[k] for k in ("tests", "gpu_kernels", "gpu_epoch"))
    assert sum(gpu_check.caps(1.0).values()) <= gpu_check.BUDGET_S


def test_missing_packages_are_named_by_their_pip_name(monkeypatch):
    monkeypatch.setitem(gpu_check.REQUIRED, "surely_not_a_module_xyz", "surely-not-a-package")
    monkeypatch.setitem(gpu_check.REQUIRED, "surely_not_a_module_xyz.sub", "surely-not-a-package-sub")
    assert gpu_check.missing_modules() == ["surely-not-a-package", "surely-not-a-package-sub"]


def test_junit_counts_and_failures_are_read_back(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text('<testsuites><testsuite name="pytest" tests="7" failures="1" errors="1" skipped="2">'
                   '<testcase classname="tests.test_a" name="test_ok"/>'
                   '<testcase classname="tests.test_a" name="test_bad"><failure message="x"/></testcase>'
                   '<testcase classname="tests.test_b" name="test_err"><error message="y"/></testcase>'
                   "</testsuite></testsuites>")
    assert gpu_check.junit_counts(xml) == {"tests": 7, "failures": 1, "errors": 1, "skipped": 2,
                                           "failed": ["tests.test_a::test_bad", "tests.test_b::test_err"]}
    assert gpu_check.junit_counts(tmp_path / "none.xml") is None


def test_summaries_read_the_benchmarks_json():
    ms = {"triton-c32": 2.0, "triton-c64": 1.0, "cusparse-i32": 1.5, "cusparse-i64": 3.0, "auto": 1.0}
    row = {"graph": "g", "direction": "forward", "k": 64, "best_triton": "triton-c64", "ms": ms,
           "vs_cusparse_i32": {k: 1.5 / v for k, v in ms.items()}, "hbm_fraction": {k: 0.2 / v for k, v in ms.items()},
           "ok": True}
    goals = [{"graph": "g", "direction": "forward", "goal": 1.2, "least_ratio": 1.5, "met": True}]
    kernels = gpu_check.kernel_summary({"device_name": "card", "rows": [row], "goals": goals})
    assert kernels["goals"] == goals and kernels["device_name"] == "card" and kernels["all_checked"]
    assert kernels["ratios"] == [{"graph": "g", "direction": "forward", "k": 64, "best": "triton-c64",
                                  "vs_cusparse_i32": 1.5, "vs_cusparse_i64": 3.0, "hbm_fraction": 0.2}]
    epoch = gpu_check.epoch_summary({"device_name": "card", "ratio": {"gcn": {"ours_over_pyg": 0.8,
                                                                              "median_s": {"ours": 0.4, "pyg": 0.5}}},
                                     "sharing": {"2 ranks sa": {"median_s": 0.9}}})
    assert epoch == {"device_name": "card", "ours_over_pyg": {"gcn": 0.8},
                     "median_s": {"gcn": {"ours": 0.4, "pyg": 0.5}}, "two_ranks_median_s": {"2 ranks sa": 0.9}}
    assert gpu_check.kernel_summary(None) is None and gpu_check.epoch_summary({"skipped": "no GPU"}) is None


def test_a_step_past_its_cap_ends_everything_it_started(tmp_path, monkeypatch):
    import time

    monkeypatch.setattr(gpu_check, "INTERRUPT_GRACE_S", 1.0)  # bash waiting on its child ignores the SIGINT
    pid_file = tmp_path / "child.pid"
    result = gpu_check.step("slow", ["bash", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], 2)
    assert result["rc"] == 124 and result["tail"][-1] == "slow: timed out after 2 s"
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    for _ in range(50):  # killed: gone, or a zombie until its new parent reaps it
        if not stat.exists() or stat.read_text().split(")")[-1].split()[0] == "Z":
            return
        time.sleep(0.1)
    pytest.fail("the step's background child still runs")


def test_the_native_error_probe_sees_a_value_error_here():
    out = subprocess.run([sys.executable, str(ROOT / "tools/native_errors.py")], capture_output=True, text=True)
    result = json.loads(out.stdout)
    assert out.returncode == 0 and result["value_error_reaches_python"] and result["rc"] == 0, result
