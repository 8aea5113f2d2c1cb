"""World sizes 1 and 2 at the default threads and at ``threads=1``: epoch time, and epoch time x the
threads of all ranks (thread-ms per epoch), so that a speedup from a second rank is not read where the
second rank only got the cores that one rank left idle (or one rank lost its cores to another job).

    python benchmarks/threads_world_size.py --host idle      # the one command; --host loaded on a busy host

Runs ``netsparse-train strategy=sa`` on Cora and ego-twitter (``dataset=mtx``) for each world size
(1, 2) and ``threads`` (``auto``, ``1``), ``--epochs`` epochs, in ``--rounds`` rounds that alternate the
eight cases (load from other processes then hits them alike). Each case's epoch time is the median over
rounds of the run's median epoch (the report's ``epoch_time_s.median``); its threads are what each rank's
``torch.get_num_threads()`` said (the report's ``per_rank[].threads``). ``uptime``'s load average is
recorded before and after every run. Prints a Markdown table; writes
benchmarks/results/threads_world_size-<host>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GRAPHS, ROOT, write_result  # noqa: E402

DATASETS = {"cora": ["dataset=cora"],
            "ego-twitter": ["dataset=mtx", f"dataset.path={GRAPHS / 'ego-twitter.mtx.gz'}"]}
CASES = [(d, ws, t) for d in DATASETS for ws in (1, 2) for t in ("auto", "1")]


def one_run(dataset: str, world_size: int, threads: str, epochs: int) -> dict:
    """One ``netsparse-train`` run: its median epoch, each rank's threads and their source, the load around it."""
    with tempfile.TemporaryDirectory(prefix="threads-ws-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "netsparse_torch.cli.train", *DATASETS[dataset], "strategy=sa",
               f"world_size={world_size}", f"threads={threads}", f"epochs={epochs}", "log_every=1000",
               f"report_path={report}", f"hydra.run.dir={tmp}/run"]
        load_before = os.getloadavg()[0]
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
        data = json.loads(report.read_text())
    return {"epoch_s": data["epoch_time_s"]["median"], "threads": [r["threads"] for r in data["per_rank"]],
            "threads_source": data["per_rank"][0]["threads_source"], "load_1min": [load_before, os.getloadavg()[0]]}


def summarize(runs: list[dict]) -> dict:
    epoch_s = statistics.median(r["epoch_s"] for r in runs)
    threads = runs[-1]["threads"]
    return {"epoch_ms": epoch_s * 1e3, "threads_per_rank": threads, "threads_source": runs[-1]["threads_source"],
            "thread_ms": epoch_s * 1e3 * sum(threads), "runs": runs}


def table(results: dict) -> list[str]:
    lines = ["| dataset | world_size | threads= | threads per rank (source) | epoch ms "
             "| epoch ms x threads of all ranks |", "|---|---:|---|---|---:|---:|"]
    for (dataset, ws, threads), r in results.items():
        lines.append(f"| {dataset} | {ws} | {threads} | {r['threads_per_rank']} ({r['threads_source']}) | "
                     f"{r['epoch_ms']:.2f} | {r['thread_ms']:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", choices=("idle", "loaded"), required=True,
                        help="the host's state while it runs: the label of the numbers and of the JSON file")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    runs: dict[tuple, list[dict]] = {case: [] for case in CASES}
    for i in range(args.rounds):
        for case in CASES:
            runs[case].append(one_run(*case, args.epochs))
            print(f"round {i + 1}/{args.rounds} {case}: {runs[case][-1]['epoch_s'] * 1e3:.2f} ms", flush=True)
    results = {case: summarize(r) for case, r in runs.items()}
    loads = [x for r in runs.values() for run in r for x in run["load_1min"]]
    end = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nhost {args.host}: {os.cpu_count()} cores; uptime before: {uptime}; after: {end}; "
          f"1-min load during the runs {min(loads):.2f}-{max(loads):.2f}")
    print("\n".join(table(results)))
    path = write_result(f"threads_world_size-{args.host}", {
        "host": args.host, "epochs": args.epochs, "rounds": args.rounds, "cpus": os.cpu_count(),
        "uptime_before": uptime, "uptime_after": end, "load_1min_range": [min(loads), max(loads)],
        "results": [{"dataset": d, "world_size": ws, "threads": t, **r} for (d, ws, t), r in results.items()]})
    print(f"written {path}")


if __name__ == "__main__":
    main()
