"""Helpers shared by the benchmarks: timing, JSON output, graph paths."""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import torch

from hw_models.mtx import default_data_root

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GRAPHS = default_data_root() / "graphs"


def median_time(fn, repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired(fns: dict, repeats: int, sync=lambda: None) -> dict[str, list[float]]:
    """Seconds of each of ``fns`` per round, called in alternation round after round (so load from other
    processes hits them alike), after one warm-up round; ``sync`` runs around each call."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(repeats + 1):
        for name, fn in fns.items():
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            if i:
                times[name].append(time.perf_counter() - t0)
    return times


def machine() -> dict:
    return {"python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu": platform.processor() or platform.machine()}


def write_result(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"benchmark": name, "machine": machine(), **payload}, indent=2))
    return path
