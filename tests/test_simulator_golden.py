"""Golden simulator reports: every field and event count of a set of simulations equals the JSON in
``tests/golden/simulator.json``, apart from wall-clock fields.

The goldens were produced by the simulator before its refactor into workload / node / switch /
network (docs/benchmarks.md, simulator split); they pin behaviour, not correctness (the hand-worked tests in
test_simulator.py do that). After a deliberate behaviour change, regenerate them and say why in the
commit:

    .venv/bin/python tests/test_simulator_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import DATA  # noqa: E402

from hw_models import definitions  # noqa: E402
from hw_models.params import HardwareParams  # noqa: E402
from hw_models.simulator import mechanisms_up_to, simulate  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden" / "simulator.json"
WALL_CLOCK = {"wall_clock_s"}


def random_matrix(n: int, nnz: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    a = sp.csr_matrix((np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    a.sum_duplicates()
    return a


def matrix(name: str):
    if name == "random":
        return random_matrix(3000, 12000, 5)
    if name == "karate":
        return sp.csr_matrix(scipy.io.mmread(DATA / "mtx_small" / "karate.mtx"))
    if name == "paper:queen@small":  # about the smallest analog the generator allows (16 rows per segment)
        from hw_models import analogs

        return analogs.generate("queen", 2100 / analogs.PAPER_MATRICES["queen"].rows)
    raise KeyError(name)


P8 = {"cluster": {"nodes": 8, "rack_size": 4}}
P16 = {"cluster": {"nodes": 16, "rack_size": 4}}
FLIT = {"mode": "flit", "flit": {"flit_bytes": 16, "pool_cycles": 32, "stitching": True, "sequencing": True}}

# name: (matrix, params, k, mechanisms (None = all), link layer)
CASES: dict[str, tuple] = {
    "random-k16": ("random", P8, 16, None, None),
    "random-k64": ("random", P8, 64, None, None),
    "random-small-cache": ("random", {**P8, "property_cache": {"size_bytes": 65536}}, 16, None, None),
    "random-no-switch": ("random", P8, 16, "concat_nic", None),
    "random-no-concat": ("random", P8, 16, "coalesce", None),
    "random-rig-only": ("random", P8, 16, "rig", None),
    "random-inf-delay": ("random", {**P8, "snic": {"concat_delay_cycles": "inf"},
                                    "switch": {"concat_delay_cycles": "inf"}}, 16, None, None),
    "random-batch-fixed": ("random", {**P8, "snic": {"rig_batch_size": 256, "rig_units": 8}}, 16, None, None),
    "random-tiny-tx": ("random", {**P8, "snic": {"tx_buffer_bytes": 1500}}, 16, None, None),
    "random-tiny-rx": ("random", {**P8, "snic": {"rx_buffer_bytes": 1500}}, 16, None, None),
    "random-tiny-switch-buffer": ("random", {**P8, "switch": {"buffer_bytes": 1500}}, 16, None, None),
    "random-flit": ("random", P8, 16, None, FLIT),
    "karate-inf-cache": ("karate", {"cluster": {"nodes": 4, "rack_size": 2},
                                    "property_cache": {"size_bytes": "inf"}}, 16, None, None),
    "queen-small-k16": ("paper:queen@small", P16, 16, None, None),
    "queen-small-flit-k32": ("paper:queen@small", P16, 32, None, FLIT),
}


def report(case: str, cache: dict) -> dict:
    """One simulation as plain JSON values, without wall-clock fields."""
    name, params, k, stage, link_layer = CASES[case]
    if name not in cache:
        cache[name] = matrix(name)
    a = cache[name]
    hw = HardwareParams.from_dict(params)
    w = definitions.workload(a, hw.cluster.nodes)
    mech = None if stage is None else mechanisms_up_to(stage)
    r = simulate(a, w, hw, k, "spmm", mech, link_layer=link_layer)
    out = {"node_time_s": [float(x) for x in r.node_time_s], "tail": r.tail,
           "active_nodes": [list(r.active_nodes[0]), list(r.active_nodes[1])],
           "counters": {k: v for k, v in r.counters.items() if k not in WALL_CLOCK}}
    return json.loads(json.dumps(out))  # tuples -> lists, numpy scalars -> numbers


@pytest.fixture(scope="module")
def goldens() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def matrices() -> dict:
    return {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_equals_golden(case, goldens, matrices):
    got = report(case, matrices)
    want = goldens[case]
    assert set(got) == set(want)
    for key in want:
        assert got[key] == want[key], f"{case}: {key} differs from the golden report"


def test_every_case_has_events_of_several_kinds(goldens):
    """The goldens exercise the event kinds the refactor must keep (so a golden cannot be vacuous)."""
    kinds = set()
    for g in goldens.values():
        kinds |= set(g["counters"]["events_by_kind"])
    assert {"issue", "nic_push", "nic_timer", "switch_timer", "tx_done", "pipe_done", "write", "serve", "credit",
            "flit_tick", "link_arrive", "arrive"} <= kinds
    assert any(g["counters"]["infinite_delay_drains"] for g in goldens.values())


if __name__ == "__main__":
    cache: dict = {}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps({c: report(c, cache) for c in sorted(CASES)}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
