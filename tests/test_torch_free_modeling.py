"""The modeling CLI starts without importing torch (netsparse-simulate's fixed overhead,
docs/benchmarks.md).

Importing torch costs ~1.2 s of the <= 5 s budget on ego-twitter; the extension only loads torch's
shared libraries. A package ``__init__`` that imports a torch-using module at the top would bring it
back silently, so this checks it in a fresh interpreter.
"""

import subprocess
import sys

MODULES = ["netsparse_torch.cli.simulate", "hw_models.analysis", "hw_models.simulator", "hw_models.mtx",
           "hw_models.analogs", "netsparse_torch.report.collect"]


def test_modeling_modules_import_without_torch():
    code = (f"import sys; import {', '.join(MODULES)}; "
            "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"torch imported by the modeling path: {out.stdout[:500]}"
