"""Golden training reports: short ``netsparse-train`` runs (GCN and SAGE, 2 epochs, a small seeded
synthetic graph, world sizes 1-4, every strategy and the switch fabric) report the same losses,
accuracies, partition sizes, byte counts and RIG/stripe counters as ``tests/golden/train.json``.

The goldens were produced by the code of commit c5cea68, before the package layers were reorganised
(run/, plan/, an injected fabric); they pin behaviour, not correctness (test_equivalence.py checks the
numbers against PyG, test_invariance.py across world sizes). Fields that measure this machine rather than the
training are left out: wall-clock times (``time_s``, ``epoch_time_s``, ``wall_s``), peak RSS,
``provenance`` (host, date, versions, command line) and the echoed ``config`` (the overrides name the
run). With ``fabric=switch`` the RIG kernel runs event-driven, so what depends on when packets arrive is
left out too: packets and the PRs and bytes in them (a ToR cache hit answers a read on the way), rounds,
the completion polls (all_reduce calls) and the switches' counters; the losses, the feature bytes and
every idx's fate (local, filtered, coalesced, read PR issued) stay. After a deliberate behaviour change,
regenerate the goldens and say why in the commit:

    .venv/bin/python tests/test_golden_train.py

Comparison: integers, strings and the structure exactly; floats within 1e-6 relative. JSON keeps a
Python float exactly (repr round-trips), and on one host two runs are bit-identical; the tolerance
absorbs the last-bit differences of the BLAS kernels torch picks on another CPU, and is far below
what a changed loss, accuracy or byte count moves.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from cli import train_here

GOLDEN = Path(__file__).resolve().parent / "golden" / "train.json"
REL = 1e-6

# A synthetic power-law graph: small enough that a run takes a second or two, irregular enough for halos
# of several sizes, coalesced RIG idxs and both synchronous and asynchronous Two-Face stripes.
GRAPH = ["dataset=synthetic", "dataset.num_nodes=600", "dataset.num_features=12", "dataset.num_classes=3",
         "epochs=2", "hidden=8", "seed=3"]

# name: overrides (dropout stays at its default 0.5: the keyed dropout masks are part of the golden)
CASES: dict[str, list[str]] = {
    "gcn-sa-w1": ["model=gcn", "strategy=sa", "world_size=1"],
    "gcn-su-w2": ["model=gcn", "strategy=su", "world_size=2"],
    "gcn-sa-w2": ["model=gcn", "strategy=sa", "world_size=2"],
    "gcn-ds-w2": ["model=gcn", "strategy=ds", "world_size=2"],
    "gcn-twoface-w2": ["model=gcn", "strategy=twoface", "world_size=2"],
    "gcn-netsparse-w2": ["model=gcn", "strategy=netsparse", "world_size=2"],
    "gcn-netsparse-switch-w2": ["model=gcn", "fabric=switch", "cluster.rack_size=1", "world_size=2"],
    "sage-su-nnz-w3": ["model=sage", "strategy=su", "partition=nnz", "world_size=3"],
    # RIG batches of 64 nonzeros: later commands find earlier responses in the Idx Filter.
    "sage-netsparse-b64-w4": ["model=sage", "strategy=netsparse", "strategy.options.batch_size=64", "world_size=4"],
    "sage-twoface-w4": ["model=sage", "strategy=twoface", "world_size=4"],
}

#: Report fields that measure the machine, not the training (see the module docstring).
MACHINE = {"wall_s", "epoch_time_s", "provenance", "config"}
#: Per-rank fields of the machine: peak RSS, and where the rank ran (its device, its CUDA collectives, the
#: CUDA kernels timed and chosen there, its torch threads).
PER_RANK_MACHINE = {"peak_rss_bytes", "device", "cuda_collectives", "kernels", "threads", "threads_source"}
#: RIG counters that depend on packet arrival times when the switch fabric runs a kernel event-driven.
ARRIVAL = {"packets", "prs", "payload_bytes", "header_bytes", "wire_bytes", "goodput", "prs_per_packet", "rounds"}


def scrub(report: dict) -> dict:
    """The report without the fields of :data:`MACHINE`, per-epoch times and :data:`PER_RANK_MACHINE`; with the switch
    fabric also without the :data:`ARRIVAL` counters, the collective counts and the switches' counters."""
    out = {k: v for k, v in report.items() if k not in MACHINE}
    out["epochs"] = [{k: v for k, v in e.items() if k != "time_s"} for e in report["epochs"]]
    out["per_rank"] = [{k: v for k, v in r.items() if k not in PER_RANK_MACHINE} for r in report["per_rank"]]
    if report["fabric"] == "switch":
        out["comm"] = {k: v for k, v in report["comm"].items() if k != "collectives"}
        out["netsparse"] = without(report["netsparse"], ARRIVAL)
        out["strategy_stats"] = without(report["strategy_stats"], ARRIVAL)
        out["switches"] = [{"name": s["name"], "role": s["role"]} for s in report["switches"]]
    return out


def without(value, keys: set[str]):
    """``value`` with every dict entry named in ``keys`` removed, at any depth."""
    if isinstance(value, dict):
        return {k: without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without(v, keys) for v in value]
    return value


def train_report(case: str) -> dict:
    """One in-process ``netsparse-train`` run, as the JSON it writes (strict: NaN -> null)."""
    with tempfile.TemporaryDirectory() as tmp:
        return scrub(train_here(Path(tmp), *GRAPH, *CASES[case])[0])


def differences(got, want, where: str = "") -> list[str]:
    """Where ``got`` and ``want`` differ: structure, ints and strings exactly, floats within REL."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{where}: keys {sorted(set(got) ^ set(want))} added or missing"]
        return [d for k in want for d in differences(got[k], want[k], f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, golden {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in differences(g, w, f"{where}[{i}]")]
    if isinstance(want, float) and isinstance(got, float):
        return [] if math.isclose(got, want, rel_tol=REL) else [f"{where}: {got!r}, golden {want!r}"]
    if type(got) is not type(want) or got != want:
        return [f"{where}: {got!r}, golden {want!r}"]
    return []


@pytest.fixture(scope="module")
def goldens() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_equals_golden(case, goldens):
    diffs = differences(train_report(case), goldens[case])
    assert not diffs, f"{case} differs from its golden report:\n" + "\n".join(diffs[:20])


def test_goldens_cover_what_they_pin(goldens):
    """Every strategy, both fabrics, both models, world sizes 1-4, and nonzero bytes and RIG counters
    (so a golden cannot be vacuous)."""
    assert {g["strategy"] for g in goldens.values()} == {"su", "sa", "ds", "twoface", "netsparse"}
    assert {g["fabric"] for g in goldens.values()} == {"collective", "switch"}
    assert {g["model"] for g in goldens.values()} == {"gcn", "sage"}
    assert {g["world_size"] for g in goldens.values()} == {1, 2, 3, 4}
    for name, g in goldens.items():
        assert len(g["epochs"]) == 2 and all(math.isfinite(e["loss"]) for e in g["epochs"]), name
        assert (g["comm"]["feature_bytes"] > 0) == (g["world_size"] > 1), name
    rig = [g["netsparse"] for g in goldens.values() if g["strategy"] == "netsparse"]
    assert all(r["prs_issued"] and r["coalesced"] for r in rig) and any(r["filtered"] for r in rig)
    twoface = [s for g in goldens.values() if g["strategy"] == "twoface" for s in g["strategy_stats"]]
    assert any(s["sync_stripes"] for s in twoface) and any(s["async_stripes"] for s in twoface)


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps({c: train_report(c) for c in sorted(CASES)}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
