"""Golden critical-path breakdowns: each node's time per resource, its path's stretches and its stall
split equal those of main's build at 51d8e07, before the scan charged runs of local idxs at once
(tests/golden/sim_breakdown.json). The simulator goldens (test_simulator_golden.py) pin the counters
and times but not the breakdown, whose scan charges only weigh a command's time among the resources.

After a deliberate change of the breakdown, regenerate them and say why in the commit:

    .venv/bin/python tests/test_sim_breakdown_golden.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_simulator_golden import matrix  # noqa: E402

from hw_models import analogs, definitions  # noqa: E402
from hw_models.params import HardwareParams  # noqa: E402
from hw_models.simulator import simulate  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden" / "sim_breakdown.json"
# name: (matrix, params); the analogs have long runs of local idxs (host locality), random few
CASES = {
    "random-8": ("random", {"cluster": {"nodes": 8, "rack_size": 4}}),
    "queen-small-16": ("paper:queen@small", {"cluster": {"nodes": 16, "rack_size": 4}}),
    "arabic-small-16": ("arabic", {"cluster": {"nodes": 16, "rack_size": 4}}),
    "arabic-small-16-batch64": ("arabic", {"cluster": {"nodes": 16, "rack_size": 4}, "snic": {"rig_batch_size": 64}}),
}


def _matrix(name: str):
    if name == "arabic":
        return analogs.generate("arabic", 3000 / analogs.PAPER_MATRICES["arabic"].rows)
    return matrix(name)


def breakdown(case: str) -> dict:
    name, params = CASES[case]
    a = _matrix(name)
    hw = HardwareParams.from_dict(params)
    r = simulate(a, definitions.workload(a, hw.cluster.nodes), hw, 16)
    cp = r.critical_path
    bound_ps = np.rint(np.asarray(cp.node_s) * 1e12).astype(np.int64)
    segments = np.ascontiguousarray(np.asarray(cp.segments_ps, dtype=np.int64))
    return {"bound_ps": bound_ps.tolist(), "scan_local_ps": int(bound_ps[:, 0].sum()),
            "segments_sha256": hashlib.sha256(segments.tobytes()).hexdigest(), "segments": int(len(segments)),
            "node_s": [float(x) for x in np.asarray(cp.node_s).ravel()],
            "stalled_on": [float(x) for x in np.asarray(cp.stalled_on).ravel()]}


@pytest.mark.parametrize("case", sorted(CASES))
def test_breakdown_equals_golden(case):
    want = json.loads(GOLDEN.read_text())[case]
    got = breakdown(case)
    for key in want:
        assert got[key] == want[key], f"{case}: {key} differs from the golden breakdown"


def test_the_goldens_charge_local_scans():
    """The analog cases run the scan's local-idx runs, the random one hardly (so they cannot pass vacuously)."""
    g = json.loads(GOLDEN.read_text())
    assert all(g[c]["scan_local_ps"] > 0 for c in CASES if c != "random-8")


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps({c: breakdown(c) for c in sorted(CASES)}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
