"""``make gpu-check`` on a machine without a GPU: it names what is missing or says there is no GPU, in
one line, and still writes its JSON (the GPU run itself is documented in docs/gpu.md)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import gpu_check  # noqa: E402


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_gpu_check_without_a_gpu_says_so_and_writes_its_json(tmp_path):
    out = tmp_path / "check.json"
    proc = subprocess.run([sys.executable, "tools/gpu_check.py", "--out", str(out), "--wheels", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "gpu-check: torch sees no CUDA GPU: nothing to check here (make test covers the CPU)"]
    report = json.loads(out.read_text())
    assert report["missing"] == [] and report["machine"]["cuda_available"] is False


def test_missing_packages_are_named_by_their_pip_name(monkeypatch):
    monkeypatch.setitem(gpu_check.REQUIRED, "surely_not_a_module_xyz", "surely-not-a-package")
    monkeypatch.setitem(gpu_check.REQUIRED, "surely_not_a_module_xyz.sub", "surely-not-a-package-sub")
    assert gpu_check.missing_modules() == ["surely-not-a-package", "surely-not-a-package-sub"]


def test_junit_counts_are_read_back(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text('<testsuites><testsuite name="pytest" tests="7" failures="1" errors="0" skipped="2">'
                   "</testsuite></testsuites>")
    assert gpu_check.junit_counts(xml) == {"tests": 7, "failures": 1, "errors": 0, "skipped": 2}
    assert gpu_check.junit_counts(tmp_path / "none.xml") is None
