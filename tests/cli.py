"""Run the CLIs as a user would: a fresh interpreter, a hard timeout so nothing can hang a test."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(module: str, *overrides: str, timeout: float = 300, cwd: Path | None = None):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", module, *overrides]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT, env=env)


def train(tmp_path: Path, *overrides: str, timeout: float = 300):
    report = tmp_path / "report.json"
    proc = run_cli("netsparse_torch.train", f"report_path={report}", f"hydra.run.dir={tmp_path / 'run'}",
                   *overrides, timeout=timeout)
    data = json.loads(report.read_text()) if proc.returncode == 0 else None
    return proc, data
