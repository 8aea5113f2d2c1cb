"""Every benchmark script imports (a moved helper once broke one without any test noticing).

The benchmarks themselves are too slow for CI; their numbers live in docs/benchmarks.md.
"""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_every_benchmark_imports():
    scripts = sorted(p for p in BENCHMARKS.glob("*.py"))
    code = ("import runpy, sys; sys.path.insert(0, sys.argv[1]); "
            "[runpy.run_path(p, run_name='benchmark_import_check') for p in sys.argv[2:]]")
    out = subprocess.run([sys.executable, "-c", code, str(BENCHMARKS), *map(str, scripts)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
