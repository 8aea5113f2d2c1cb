"""Every benchmark script imports (a moved helper once broke one without any test noticing).

The benchmarks themselves are too slow for CI; their numbers live in docs/benchmarks.md. Their top
level runs here, in the test's process (torch and PyG are already imported), and what it changes in
``sys.path``, ``sys.modules`` (``benchmarks/common.py``) and the warning filters is taken back afterwards.
"""

import runpy
import sys
import warnings
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def benchmarks_on_path():
    path, modules = sys.path[:], set(sys.modules)
    sys.path.insert(0, str(BENCHMARKS))
    with warnings.catch_warnings():
        yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        if str(BENCHMARKS) in str(getattr(sys.modules[name], "__file__", "") or ""):
            del sys.modules[name]


def test_every_benchmark_imports(benchmarks_on_path):
    scripts = sorted(BENCHMARKS.glob("*.py"))
    assert scripts
    for script in scripts:
        runpy.run_path(str(script), run_name="benchmark_import_check")
