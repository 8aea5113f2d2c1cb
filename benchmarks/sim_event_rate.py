"""One NetSparse simulation on the default cluster (128 nodes, Table 5, K=16); prints one JSON line:
events, the C++ loop's wall time and events per second, and events per CPU second of the C++ call.
Run it alternately on two trees to compare the simulator's speed (docs/benchmarks.md):

    PYTHONPATH=<tree> .venv/bin/python benchmarks/sim_event_rate.py ego-twitter
    PYTHONPATH=<tree> .venv/bin/python benchmarks/sim_event_rate.py paper:arabic 0.1
    PYTHONPATH=<tree> .venv/bin/python benchmarks/sim_event_rate.py ego-twitter --flit   # link_layer=flit

--flit runs the flit network (NetCrafter flits on the inter-rack links, the settings'
defaults) instead of the packet network.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import scipy.io
import scipy.sparse as sp

from hw_models import analogs, definitions
from hw_models.params import HardwareParams
from hw_models.simulator import simulate

GRAPHS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "graphs"


def main(argv: list[str]) -> None:
    from hw_models.native import sim as units

    flit = "--flit" in argv
    argv = [a for a in argv if a != "--flit"]
    name = argv[0]
    if name.startswith("paper:"):
        a = analogs.generate(name.removeprefix("paper:"), float(argv[1]))
    else:
        a = sp.csr_matrix(scipy.io.mmread(GRAPHS / f"{name}.mtx.gz"))
    hw = HardwareParams()
    real, cpu = units.simulate, {}

    def timed(*args, **kwargs):
        t0 = time.thread_time()
        out = real(*args, **kwargs)
        cpu["s"] = time.thread_time() - t0
        return out

    units.simulate = timed
    link_layer = {"mode": "flit", "flit": {}} if flit else None
    r = simulate(a, definitions.workload(a, hw.cluster.nodes), hw, 16, link_layer=link_layer)
    c = r.counters
    print(json.dumps({"events": c["events"], "loop_s": c["wall_clock_s"],
                      "events_per_s": c["events"] / c["wall_clock_s"], "cpu_s": cpu["s"],
                      "events_per_cpu_s": c["events"] / cpu["s"],
                      "comm_time_us": float(r.node_time_s.max() * 1e6)}))


if __name__ == "__main__":
    main(sys.argv[1:])
