"""``netsparse-compare``: the reports of many runs side by side.

    netsparse-train -m strategy=su,sa world_size=2,4 epochs=5
    netsparse-compare multirun/                       # one Markdown table, one row per run
    netsparse-compare multirun/ --where world_size=4 --sort epoch_ms --csv runs.csv --plot runs.png

Takes report files, run directories or a Hydra multirun directory (searched recursively), of
``netsparse-train`` and of ``netsparse-simulate`` alike. A row holds the keys that identify the run
(dataset, model, strategy, partition, world size; matrix, nodes, topology, K, ...), every other config
key that differs between the runs (the swept keys), and the results that matter: measured test
accuracy, median epoch time and feature bytes per epoch, and, when present, the modeled times and
speedups (``modeled_*`` columns of a training run; every number of a simulation report is modeled).
``--csv`` and ``--json`` write the same table (raw numbers: seconds, bytes), ``--plot`` draws epoch
time and bytes per strategy as grouped bars.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from netsparse_torch.errors import ReportInputError
from netsparse_torch.report import markdown as md
from netsparse_torch.report.collect import natural
from netsparse_torch.report.identity import OUTPUT_KEYS
from netsparse_torch.report.plots import figure, legend_outside
from netsparse_torch.report.swept import actual_value, flatten, varying_keys

KINDS = ("train", "simulate")

Column = tuple[str, Callable[[dict], object]]
"""(name, value of a report); a column every report lacks is left out of the table."""


def _get(path: str, scale: float = 1.0) -> Callable[[dict], object]:
    def value(report: dict):
        node = report
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node * scale if scale != 1.0 and isinstance(node, int | float) else node
    return value


def _actual(key: str, kind: str) -> Callable[[dict], object]:
    """A swept key's actual value in a report, a defaulted one included (:mod:`netsparse_torch.report.swept`)."""
    return lambda report: actual_value(report, key, kind)


ID_COLUMNS: dict[str, list[Column]] = {
    "train": [("dataset", _get("dataset.name")), ("model", _get("model")), ("strategy", _get("strategy")),
              ("partition", _get("partition.mode")), ("world_size", _get("world_size")), ("fabric", _get("fabric"))],
    "simulate": [("matrix", _get("matrix.name")), ("nodes", _get("cluster.nodes")),
                 ("topology", _get("cluster.topology")), ("kernel", _get("kernel")), ("K", _get("k")),
                 ("partition", _get("partition"))],
}
"""The keys that always identify a run."""

COVERED = {"train": {"dataset", "model", "strategy", "partition", "world_size", "fabric", "checkpoint_dir",
                     "resume", "timeout_s", "log_every", "logger"},
           "simulate": {"matrix", "nodes", "topology", "kernel", "k", "partition", "strategies", "ablation",
                        "compute_models"}}
"""Config keys (first component) never shown as swept columns: identity columns already show them, or
they do not change the run's numbers."""

_E2E = "modeled.end_to_end_speedup.none"
RESULT_COLUMNS: dict[str, list[Column]] = {
    "train": [("test_acc", _get("final.test_acc")), ("val_acc", _get("final.val_acc")),
              ("epochs", lambda r: len(r.get("epochs") or [])),
              ("epoch_ms", _get("epoch_time_s.median", 1e3)),
              ("feature_bytes_per_epoch", _get("comm.feature_bytes_per_epoch")),
              ("modeled_nodes", _get("modeled.cluster.nodes")),
              ("modeled_suopt_us", _get("modeled.comm_time_s.su_opt", 1e6)),
              ("modeled_saopt_us", _get("modeled.comm_time_s.sa_opt", 1e6)),
              ("modeled_netsparse_us", _get("modeled.comm_time_s.netsparse", 1e6)),
              ("modeled_netsparse_vs_suopt", _get(f"{_E2E}.netsparse_vs_su_opt")),
              ("modeled_netsparse_vs_saopt", _get(f"{_E2E}.netsparse_vs_sa_opt"))],
    "simulate": [("suopt_us", _get("strategies.su_opt.comm_time_s", 1e6)),
                 ("saopt_us", _get("strategies.sa_opt.comm_time_s", 1e6)),
                 ("netsparse_us", _get("strategies.netsparse.comm_time_s", 1e6)),
                 ("two_face_us", _get("strategies.two_face.comm_time_s", 1e6)),
                 ("snic_sw_us", _get("strategies.snic_sw.comm_time_s", 1e6)),
                 ("switch_aggregate_us", _get("strategies.switch_aggregate.comm_time_s", 1e6)),
                 ("suopt_tail_bytes", _get("strategies.su_opt.tail_rx_bytes")),
                 ("saopt_tail_bytes", _get("strategies.sa_opt.tail_rx_bytes")),
                 ("netsparse_tail_wire_bytes", _get("strategies.netsparse.tail.wire_bytes")),
                 ("saopt_vs_suopt", _get("speedup.sa_opt_vs_su_opt")),
                 ("netsparse_vs_suopt", _get("speedup.netsparse_vs_su_opt")),
                 ("netsparse_vs_saopt", _get("speedup.netsparse_vs_sa_opt"))],
}
"""Results: training columns are measured except ``modeled_*``; simulation columns are all modeled.
Times in ms or us as named, bytes in bytes, speedups as time ratios (below 1 means slower)."""


# -- finding reports --------------------------------------------------------------------------------
def report_kind(report) -> str | None:
    """``train``, ``simulate`` (also for simulation reports written before they carried a kind), or
    ``None`` for JSON that is not a netsparse report."""
    if not isinstance(report, dict):
        return None
    if report.get("kind") in KINDS:
        return report["kind"]
    strategies = report.get("strategies")
    return "simulate" if isinstance(strategies, dict) and "su_opt" in strategies else None


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def find_reports(paths: list[Path]) -> list[dict]:
    """The reports in ``paths`` (files, or directories searched recursively), each with ``_path``;
    copies of one report (``report_path`` next to the run directory's) are kept once."""
    found: list[dict] = []
    seen: set[str] = set()
    for root in paths:
        if root.is_file():
            report = _read(root)
            if report_kind(report) is None:
                raise ReportInputError(f"{root} is not a netsparse-train or netsparse-simulate report "
                                       "(a report.json of a run directory)")
            candidates = [(root, report)]
        elif root.is_dir():
            files = sorted((p for p in root.rglob("*.json") if ".hydra" not in p.parts), key=lambda p: natural(str(p)))
            candidates = [(p, r) for p in files if report_kind(r := _read(p)) is not None]
            if not candidates:
                raise ReportInputError(f"no netsparse reports under {root} ({len(files)} other JSON files); give run "
                                       "directories or a multirun directory of netsparse-train/-simulate")
        else:
            raise ReportInputError(f"{root} does not exist")
        for path, report in candidates:
            key = json.dumps(report, sort_keys=True)
            if key not in seen:
                seen.add(key)
                found.append({**report, "_path": str(path)})
    return found


# -- the table --------------------------------------------------------------------------------------
def swept_columns(kind: str, reports: list[dict]) -> list[str]:
    """Config keys (dotted) whose values differ between ``reports`` and that no identity column shows."""
    flats = [flatten(r.get("config") or {}) for r in reports]
    return [k for k in varying_keys(flats, OUTPUT_KEYS)
            if k.split(".")[0] not in COVERED[kind] and not k.endswith(("_path", "_dir"))]


def table(kind: str, reports: list[dict]) -> list[dict]:
    """One row per report: identity, swept keys, results and the report's path (columns no report has
    are dropped)."""
    swept = swept_columns(kind, reports)
    columns = ID_COLUMNS[kind] + [(k, _actual(k, kind)) for k in swept] + RESULT_COLUMNS[kind]
    rows = [{name: value(r) for name, value in columns} | {"run": r["_path"]} for r in reports]
    keep = [name for name, _ in columns if any(row[name] is not None for row in rows)] + ["run"]
    return [{name: row[name] for name in keep} for row in rows]


def _match(value, wanted: str) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value) == wanted or (value is None and wanted in ("null", "none", "None"))
    try:
        return math.isclose(float(value), float(wanted), rel_tol=1e-9)
    except ValueError:
        return False


def select(rows: list[dict], where: list[str], sort: str | None, reverse: bool = False) -> list[dict]:
    """Rows matching every ``key=value`` of ``where`` (numbers compared as numbers), sorted by column
    ``sort`` (numbers numerically, missing values last)."""
    for cond in where:
        key, sep, wanted = cond.partition("=")
        if not sep:
            raise ReportInputError(f"--where {cond!r}: write key=value")
        if rows and key not in rows[0]:
            raise ReportInputError(f"--where: no column {key!r}; the columns are {', '.join(rows[0])}")
        rows = [r for r in rows if _match(r[key], wanted)]
    if sort:
        if rows and sort not in rows[0]:
            raise ReportInputError(f"--sort: no column {sort!r}; the columns are {', '.join(rows[0])}")
        present = [r for r in rows if r[sort] is not None]
        present.sort(key=lambda r: (0, r[sort], "") if isinstance(r[sort], int | float) else (1, 0, str(r[sort])),
                     reverse=reverse)
        rows = present + [r for r in rows if r[sort] is None]
    return rows


def cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return ["(no run matches)"]
    head = list(rows[0])
    return md.table(head, ([cell(r[c]) for c in head] for r in rows))


def write_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["run"])
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)


def write_json(rows: list[dict], path: Path) -> None:
    from netsparse_torch.report.train_report import strict

    path.write_text(json.dumps(strict(rows), indent=2, allow_nan=False) + "\n")


# -- the plot ---------------------------------------------------------------------------------------
Panels = dict[str, dict[str, list[float]]]
"""``{y label: {bar: [value per group]}}``: what :func:`plot` draws, as plain data."""


def _plot_spec(kind: str, rows: list[dict]) -> tuple[list[str], list[str], list[tuple], Callable]:
    """Group keys, bars, panels ``(column, y label, scale)`` and ``value(row, bar, column)`` of a kind."""
    if kind == "train":
        group_keys = [k for k in rows[0] if k not in ("strategy", "run") and k not in dict(RESULT_COLUMNS["train"])
                      and len({str(r[k]) for r in rows}) > 1]
        bars = list(dict.fromkeys(str(r["strategy"]) for r in rows))
        panels = [("epoch_ms", "median epoch time (ms, measured)", 1.0),
                  ("feature_bytes_per_epoch", "feature MB per epoch (measured)", 1e-6)]

        def value(row: dict, bar: str, column: str):
            return row[column] if str(row["strategy"]) == bar else None
        return group_keys, bars, panels, value
    group_keys = [k for k in rows[0] if k not in ("run",) and k not in dict(RESULT_COLUMNS["simulate"])
                  and len({str(r[k]) for r in rows}) > 1] or ["matrix"]
    bars = [n for n in ("suopt", "saopt", "netsparse", "two_face", "snic_sw", "switch_aggregate")
            if f"{n}_us" in rows[0]]
    panels = [("us", "comm time (us, modeled)", 1.0), ("bytes", "tail node MB (modeled)", 1e-6)]

    def value(row: dict, bar: str, column: str):
        key = f"{bar}_us" if column == "us" else {"suopt": "suopt_tail_bytes", "saopt": "saopt_tail_bytes",
                                                  "netsparse": "netsparse_tail_wire_bytes"}.get(bar, "")
        return row.get(key)
    return group_keys, bars, panels, value


def plot_series(kind: str, rows: list[dict]) -> tuple[list[str], Panels]:
    """The groups (``key=value`` lines of the keys that vary, or ``all``) and, per panel and bar, the
    value of each group: the mean over the group's rows (repeated runs), 0 where the bar has none."""
    group_keys, bars, panels, value = _plot_spec(kind, rows)

    def group(r: dict) -> str:
        return "\n".join(f"{k}={r[k]}" for k in group_keys) or "all"  # one key per line: labels stay narrow
    groups = list(dict.fromkeys(group(r) for r in rows))
    out: Panels = {}
    for column, label, scale in panels:
        out[label] = {}
        for bar in bars:
            ys = []
            for g in groups:
                vals = [v for r in rows if group(r) == g and (v := value(r, bar, column)) is not None]
                ys.append(sum(vals) / len(vals) * scale if vals else 0.0)
            out[label][bar] = ys
    return groups, out


def plot(kind: str, rows: list[dict], out: Path) -> Path:
    """Grouped bars: training runs as one group per world size (and any other identity or swept key
    that varies), one bar per strategy, for the median epoch time and the feature bytes per epoch;
    simulation reports as one group per matrix (and variant), one bar per modeled strategy, for the
    communication time and the tail node's bytes. The two panels are stacked and share the group labels
    (one ``key=value`` per line, horizontal), the figure widens with the groups and the legend sits right
    of the axes: labels of runs that differ in many keys never cover each other or a panel. A panel whose
bars span more than a decade has a log axis (:func:`spans_decades`)."""
    groups, panels = plot_series(kind, rows)
    bars = list(next(iter(panels.values())))
    widest = max(len(line) for g in groups for line in g.split("\n"))
    group_in = max(0.35 * len(bars), 0.075 * widest) + 0.3  # bars or the label text, whichever is wider
    lines = max(g.count("\n") + 1 for g in groups)
    size = (max(6.0, group_in * len(groups) + 2.5), 5.0 + 0.16 * lines)
    width = 0.8 / max(1, len(bars))
    with figure(out, nrows=2, sharex=True, figsize=size, layout="constrained") as (_, axes):
        for ax, (label, values) in zip(axes, panels.items(), strict=True):
            for j, bar in enumerate(bars):
                ax.bar([i - 0.4 + j * width for i in range(len(groups))], values[bar], width, align="edge", label=bar)
            ax.set_ylabel(label, fontsize=8)
            if spans_decades(values):  # 8.7 us beside 2,586 us: a linear axis hides the short bars
                ax.set_yscale("log")
        axes[1].set_xticks(range(len(groups)), groups, fontsize=7)
        legend_outside(axes[0], fontsize=7)
    return out


def spans_decades(values: dict[str, list[float]], ratio: float = 10.0) -> bool:
    """Whether the positive bar heights span more than ``ratio`` (a log axis then shows every bar)."""
    positive = [v for vs in values.values() for v in vs if v > 0]
    return bool(positive) and max(positive) > ratio * min(positive)


# -- the CLI ----------------------------------------------------------------------------------------
def compare(args: argparse.Namespace) -> int:
    reports = find_reports([Path(p) for p in args.paths])
    by_kind = {k: [r for r in reports if report_kind(r) == k] for k in KINDS}
    kinds = [k for k in KINDS if by_kind[k]] if args.kind is None else [args.kind]
    if args.kind is not None and not by_kind[args.kind]:
        raise ReportInputError(f"no {args.kind} reports among the {len(reports)} found")
    if len(kinds) > 1:
        counts = ", ".join(f"{len(by_kind[k])} {k}" for k in kinds)
        print(f"netsparse-compare: mixed report kinds ({counts}); one table per kind (pick one with --kind)",
              file=sys.stderr)
        if args.csv or args.json or args.plot:
            raise ReportInputError("--csv, --json and --plot write one kind of report: add --kind train or "
                                   "--kind simulate")
    for n, kind in enumerate(kinds):
        rows = select(table(kind, by_kind[kind]), args.where, args.sort, args.reverse)
        if len(kinds) > 1:
            print(("\n" if n else "") + f"{kind} reports:\n")
        print("\n".join(markdown(rows)))
        for path, write in ((args.csv, write_csv), (args.json, write_json)):
            if path:
                write(rows, Path(path))
                print(f"  written      {path}")
        if args.plot and rows:
            print(f"  written      {plot(kind, rows, Path(args.plot))}")
    return 0
