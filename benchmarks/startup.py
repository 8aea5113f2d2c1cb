"""Where a short Cora run's wall-clock goes: ``netsparse-train epochs=1`` from the
command to its first epoch line, its summary, and the moment its output closes (the launcher and every
process it started are gone), next to the imports that bound it from below.

    python benchmarks/startup.py [--repeats 5] [--out FILE]

The imports are timed each inside a fresh interpreter (without its start and teardown): ``torch``;
``torch_geometric.nn`` (which imports ``torch._dynamo``); and what the forkserver preloads for the ranks
(``netsparse_torch.run.training``).
Each time is the median over ``--repeats`` runs; measure on an idle machine (``uptime`` is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = {"python": "pass", "torch": "import torch", "torch + PyG layers": "import torch_geometric.nn",
           "forkserver preload (torch, PyG, training loop)":
               "import torch, torch.distributed, netsparse_torch.run.training"}


def import_s(code: str) -> float:
    """The import's own seconds, timed inside a fresh interpreter (its start and teardown left out)."""
    timed = f"import time\nt0 = time.perf_counter()\n{code}\nprint(time.perf_counter() - t0)"
    return float(subprocess.run([sys.executable, "-c", timed], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout.split()[-1])


def one_run(run_dir: str) -> dict:
    """Seconds from the command to the first epoch line, the summary's first line and the closed output."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "netsparse_torch.cli.train", "dataset=cora", "epochs=1",
                             f"hydra.run.dir={run_dir}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    marks = {}
    for line in proc.stdout:
        if line.startswith("epoch") and "first_epoch_line" not in marks:
            marks["first_epoch_line"] = time.perf_counter() - t0
        if line.startswith("netsparse-train:") and "summary" not in marks:
            marks["summary"] = time.perf_counter() - t0
    marks["output_closed"] = time.perf_counter() - t0
    if proc.wait() != 0:
        raise SystemExit(f"netsparse-train failed with code {proc.returncode}")
    return marks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "startup.json")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    imports = {name: statistics.median(import_s(code) for _ in range(args.repeats)) for name, code in IMPORTS.items()}
    with tempfile.TemporaryDirectory() as tmp:
        one_run(tmp)  # the first run fills the Planetoid cache
        runs = [one_run(tmp) for _ in range(args.repeats)]
    run = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    result = {"host_load_1min": [load, os.getloadavg()[0]], "repeats": args.repeats, "imports_s": imports,
              "cora_epochs_1_s": run}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"load average (1 min) before/after: {load:.2f} / {os.getloadavg()[0]:.2f}")
    for name, s in {**{f"import {k}": v for k, v in imports.items()}, **run}.items():
        print(f"  {name:55s} {s:6.2f} s")


if __name__ == "__main__":
    main()
