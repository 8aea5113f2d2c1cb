"""Run the CLIs as a user would: a fresh interpreter, a hard timeout so nothing can hang a test; or,
for a test that needs only the report and the summary, the training job in the test's own process."""

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(module: str, *overrides: str, timeout: float = 300, cwd: Path | None = None):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", module, *overrides]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT, env=env)


def train(tmp_path: Path, *overrides: str, timeout: float = 300):
    report = tmp_path / "report.json"
    proc = run_cli("netsparse_torch.cli.train", f"report_path={report}", f"hydra.run.dir={tmp_path / 'run'}",
                   *overrides, timeout=timeout)
    data = json.loads(report.read_text()) if proc.returncode == 0 else None
    return proc, data


def train_here(tmp_path: Path, *overrides: str, curves: bool = False) -> tuple[dict, str]:
    """``netsparse-train``'s job (``run/job.py`` ``run``) in this process: its ranks fork from this
    pytest worker's forkserver, which imports torch and PyG once per worker instead of once per run
    with the launcher's own imports on top (~10 s of CPU per run on 2 cores). Returns the report as the
    CLI writes it (``write_json``: strict JSON, read back) and the summary the job printed. With
    ``curves`` the job writes the report itself and draws curves.png beside it (matplotlib, ~0.5 s a
    run, so only for the tests that check them). Exit codes, one-line errors, signals and Hydra's run
    directory belong to the CLI: test those with :func:`train`."""
    from hydra import compose, initialize_config_dir

    from netsparse_torch.config_check import config_dir
    from netsparse_torch.report import write_json
    from netsparse_torch.run.job import run

    tmp_path.mkdir(parents=True, exist_ok=True)
    report = tmp_path / "report.json"
    printed = io.StringIO()
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"), redirect_stdout(printed):
        written = [f"report_path={report}"] if curves else []  # else the returned report, written below
        returned = run(compose(config_name="train", overrides=[*written, *overrides]))
    if not curves:
        write_json(returned, report)
    return json.loads(report.read_text()), printed.getvalue()
