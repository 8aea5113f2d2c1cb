"""The import-linter contracts of pyproject.toml hold: ``lint-imports`` (from this venv) exits 0.
They say the backend is a leaf and the run layer sits above the strategies and the fabrics."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " kept, 0 broken" in proc.stdout  # the contracts were read and checked
