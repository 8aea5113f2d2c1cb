"""hw_models.analysis and the netsparse-simulate CLI: report schema, simulator plumbing, bad input."""

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from cli import run_cli
from conftest import DATA, ROOT
from hydra import compose, initialize_config_dir

from hw_models import analysis as A
from hw_models import baselines as B
from hw_models import definitions as D
from hw_models import simulator as sim
from hw_models.hardware import simulate_hardware
from hw_models.params import HardwareParams
from hw_models.simulator import STAGES, NetSparseRun, mechanisms_up_to
from netsparse_torch.errors import ConfigError, DatasetNotFoundError, GraphInputError
from netsparse_torch.report import simulation as sim_report
from netsparse_torch.run import simulation as simulate

LUX = DATA / "graphs" / "luxembourg_osm.mtx.gz"
KARATE = DATA / "mtx_small" / "karate.mtx"


def _cfg(*overrides):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="simulate", overrides=list(overrides))


class FakeSimulator:
    """Stands in for the C++ simulator: node i finishes at (i + 1) us, fewer bytes per stage."""

    def __init__(self):
        self.calls = []

    def __call__(self, a, w, params, k, kernel, mechanisms):
        self.calls.append(dict(mechanisms))
        on = sum(mechanisms.values())
        times = (np.arange(w.nodes) + 1) * 1e-6 / on
        tail = {"fc_rate": 0.5, "prs_per_packet": 10.0, "pcache_hit_rate": 0.2, "goodput": 0.1 * on,
                "line_util": 0.9, "wire_bytes": 1000.0, "read_prs": 4.0}
        return NetSparseRun(times, tail, ([0.0, float(times.max())], [w.nodes, 0]),
                            {"wire_bytes_total": 1e4 / on})


def _small():
    return sp.random(64, 64, density=0.1, random_state=0, format="csr")


def test_report_without_simulator_has_the_analytic_keys():
    p = HardwareParams().replace(cluster={"nodes": 4, "rack_size": 2})
    r = A.analyze(_small(), p, k=16)
    w = D.workload(_small(), 4)
    assert r["modeled"] is True and r["matrix"] == {"rows": 64, "cols": 64, "nnz": _small().nnz}
    assert r["cluster"] == {"nodes": 4, "rack_size": 2, "topology": "leafspine"}
    assert r["redundancy"] == D.redundancy(w).to_dict()
    assert r["strategies"]["su_opt"]["comm_time_s"] == B.su_opt(w, 16, p).comm_time_s
    assert r["strategies"]["sa_opt"]["goodput"] == B.sa_opt(w, 16, p).goodput
    assert r["speedup"]["sa_opt_vs_su_opt"] == pytest.approx(
        r["strategies"]["su_opt"]["comm_time_s"] / r["strategies"]["sa_opt"]["comm_time_s"])
    assert r["strategies"]["netsparse"]["status"].startswith("not simulated")
    assert r["speedup"]["netsparse_vs_su_opt"] is None and r["ablation"] == []
    assert r["header_fraction_sa"] == pytest.approx(160 / 224)  # Table 3, K=16



def test_report_carries_two_face_snic_sw_and_switch_aggregate():
    from hw_models.seeds.bf3 import snic_sw
    from hw_models.seeds.smartfuse import switch_aggregate
    from hw_models.twoface.cost import Coefficients
    from hw_models.twoface.model import cluster_coefficients, model_two_face

    p = HardwareParams().replace(cluster={"nodes": 4, "rack_size": 2})
    a, w = _small(), D.workload(_small(), 4)
    st = A.analyze(a, p, k=16)["strategies"]
    coeffs = cluster_coefficients(50e9, 450e-9, 300e-9)  # Table 5: 400 Gb/s, 450 ns links, 300 ns switches
    tf = st["two_face"]
    assert tf["coefficients"] == pytest.approx(coeffs.to_dict())
    coeffs = Coefficients(**tf["coefficients"])
    expect = model_two_face(a, w.row_bounds, 16, coeffs, tf["stripe_width"])
    assert {k: tf[k] for k in expect} == pytest.approx(expect)
    for width in (1, 2, 4, 8, 16):  # the tuned width is the best power of two (megatiles are 16 wide)
        assert tf["comm_time_s"] <= model_two_face(a, w.row_bounds, 16, coeffs, width)["comm_time_s"]
    assert st["two_face"]["sync_stripes"] + st["two_face"]["async_stripes"] > 0
    assert st["snic_sw"]["comm_time_s"] == snic_sw(w, 16, p).comm_time_s
    assert st["switch_aggregate"]["comm_time_s"] == switch_aggregate(a, w, 16, p).comm_time_s
    spmv = A.analyze(a, p, k=16, kernel="spmv")["strategies"]
    assert "unavailable" in spmv["switch_aggregate"]["status"] and "comm_time_s" in spmv["two_face"]
    lines = "\n".join(sim_report.summary_lines(A.analyze(a, p, k=16)))
    assert "Two-Face" in lines and "snic_sw" in lines and "switch_aggregate" in lines

def test_simulator_plugs_in_and_ablation_is_cumulative():
    p = HardwareParams().replace(cluster={"nodes": 4, "rack_size": 2})
    fake = FakeSimulator()
    r = A.analyze(_small(), p, k=16, simulator=fake)
    # main run == the full "switch" stage, so it is simulated once: 5 calls for 6 settings.
    assert len(fake.calls) == 5
    assert fake.calls[1] == {"rig": True, "filter": False, "coalesce": False, "concat_nic": False, "switch": False}
    ns = r["strategies"]["netsparse"]
    assert ns["comm_time_s"] == pytest.approx(4e-6 / 5) and ns["tail_node"] == 3
    su = r["strategies"]["su_opt"]
    assert r["speedup"]["netsparse_vs_su_opt"] == pytest.approx(su["comm_time_s"] / (4e-6 / 5))
    w = D.workload(_small(), 4)
    assert ns["tail"]["traffic_reduction_vs_su_opt"] == pytest.approx(B.su_opt(w, 16).rx_bytes[3] / 1000.0)
    assert [a["stage"] for a in r["ablation"]] == list(STAGES)
    useful = w.useful_per_node[3] * 64  # the tail (node 3) finishes at 4 us / (mechanisms on)
    assert [a["goodput"] for a in r["ablation"]] == pytest.approx([useful * on / (50e9 * 4e-6) for on in range(1, 6)])
    speeds = [a["speedup_vs_su_opt"] for a in r["ablation"]]
    assert speeds == sorted(speeds)
    assert r["active_nodes"] == {"t_s": [0.0, pytest.approx(4e-6 / 5)], "count": [4, 0]}


def test_goodput_and_table7_reductions_by_hand():
    """NetSparse Table 7 definitions on a tiny case. 2 nodes own rows {0, 1} and {2, 3}; node 0 needs
    columns {2, 3}, node 1 columns {0, 1}: 2 useful properties of 64 B (K=16) each."""
    a = sp.coo_matrix((np.ones(8), ([0, 0, 1, 1, 2, 3, 3, 3], [2, 3, 2, 0, 0, 0, 1, 3])), shape=(4, 4))
    p = HardwareParams().replace(cluster={"nodes": 2, "rack_size": 2})

    def sim(a, w, params, k, kernel, mechanisms):  # node 0 is the tail: 10 ns, 400 wire bytes, 2 read PRs
        return NetSparseRun(np.array([10e-9, 5e-9]), {"wire_bytes": 400.0, "read_prs": 2.0, "goodput": 0.99},
                            ([0.0], [2]), {"wire_bytes_total": 600.0})

    r = A.analyze(a, p, k=16, simulator=sim, ablation=False)
    tail = r["strategies"]["netsparse"]["tail"]
    assert tail["goodput"] == pytest.approx(128 / (50e9 * 10e-9))  # 0.256 of the line rate
    assert tail["payload_per_wire"] == pytest.approx(128 / 400)
    # Trfc vs SU: SUOpt's 2 rows x 64 B at node 0 over NetSparse's 400 B; #PR vs SA: SAOpt issues 3 PRs
    # at node 0 (rank 0 = row 0 needs {2, 3}, rank 1 = row 1 needs {2} again) over NetSparse's 2.
    assert tail["traffic_reduction_vs_su_opt"] == pytest.approx(128 / 400)
    assert tail["pr_reduction_vs_sa_opt"] == pytest.approx(3 / 2)
    su, sa = r["strategies"]["su_opt"], r["strategies"]["sa_opt"]
    assert su["goodput"] == pytest.approx(1.0)  # every row SU moves here is useful, at line rate
    # SAOpt: node 0's rank 0 issues 2 and serves 2 PRs at c(16) = 409.6 ns: 1638.4 ns for 128 B.
    assert sa["comm_time_s"] == pytest.approx(4 * 409.6e-9) and sa["goodput"] == pytest.approx(128 / (50e9 * 1638.4e-9))
    assert (sa["prs"], sa["tail_prs"], sa["prs_per_node_filtering"], sa["cores"]) == (6, 3, 4, 64)


def test_mechanism_toggles_and_kernels():
    assert mechanisms_up_to("coalesce") == {"rig": True, "filter": True, "coalesce": True,
                                               "concat_nic": False, "switch": False}
    fake = FakeSimulator()
    p = HardwareParams().replace(cluster={"nodes": 2})
    A.analyze(_small(), p, simulator=fake, mechanisms={"switch": False}, ablation=False)
    assert fake.calls == [{"rig": True, "filter": True, "coalesce": True, "concat_nic": True, "switch": False}]
    assert A.gathered_k(64, "spmv") == 1 and A.gathered_k(64, "sddmm") == 64
    with pytest.raises(ConfigError, match="unknown NetSparse mechanism"):
        A.analyze(_small(), p, mechanisms={"cache": True})
    for value in ("false", "maybe", 0, None):  # bool() would switch a mechanism on, or off, silently
        with pytest.raises(ConfigError, match=rf"mechanisms.filter must be true or false, got {value!r}"):
            A.analyze(_small(), p, simulator=fake, mechanisms={"filter": value})
    with pytest.raises(ConfigError, match="unknown kernel"):
        A.analyze(_small(), p, kernel="spgemm")


def test_strong_scaling_rows():
    p = HardwareParams()
    rows = A.strong_scaling(_small(), p, [1, 2, 4], k=16)
    assert [r["nodes"] for r in rows] == [1, 2, 4]
    assert rows[0]["su_opt_comm_s"] == 0.0 and rows[0]["su_opt_no_overlap_s"] == rows[0]["compute_s"]
    for r in rows:
        for s in ("su_opt", "sa_opt"):
            assert r[f"{s}_full_overlap_s"] <= r[f"{s}_no_overlap_s"]
            assert r[f"{s}_full_overlap_s"] >= max(r["compute_s"], r[f"{s}_comm_s"]) - 1e-18


def test_strong_scaling_one_node_gathers_nothing():
    """With one node every column is local: no RIG command, no communication, for NetSparse too."""
    rows = A.strong_scaling(_small(), HardwareParams(), [1, 2], k=16, simulator=sim.simulate)
    assert rows[0]["netsparse_comm_s"] == 0.0 and rows[0]["netsparse_no_overlap_s"] == rows[0]["compute_s"]
    assert rows[1]["netsparse_comm_s"] > 0.0


def test_cli_run_luxembourg_paper_shape(tmp_path):
    """Road network: SA is nearly free of redundancy (Table 1, europe_osm) and SU very redundant."""
    r = simulate.run(_cfg(f"matrix={LUX}", "plots=false"), tmp_path)
    red = r["redundancy"]
    assert red["sa_redundant_per_useful"] < 0.1 and red["su_redundant_per_useful"] > 100
    # SU moves ~600x more rows than needed; SAOpt pays per-PR software on its slowest rank (8x here).
    assert r["speedup"]["sa_opt_vs_su_opt"] > 5
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["redundancy"] == red and saved["matrix"]["name"] == "luxembourg_osm"


def test_cli_determinism_and_figures(tmp_path):
    a = simulate.run(_cfg(f"matrix={KARATE}", "nodes=4", "rack_size=2"), tmp_path / "a")
    b = simulate.run(_cfg(f"matrix={KARATE}", "nodes=4", "rack_size=2"), tmp_path / "b")
    speed = a["strategies"]["netsparse"]["simulator"]
    assert speed["events"] > 0 and speed["events_per_s"] > 0 and speed["prs_per_s"] > 0
    assert speed["cpu_clock_s"] > 0 and speed["events_per_cpu_s"] == speed["events"] / speed["cpu_clock_s"]
    assert a["wall_clock_s"] != b["wall_clock_s"]  # measured, so they differ; the rest is modeled
    a, b = A.without_wall_clock(a), A.without_wall_clock(b)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert (tmp_path / "a" / "speedup.png").stat().st_size > 0


def test_cli_shortcuts_reach_the_parameters():
    p = simulate_hardware(_cfg("batch_size=.inf", "cache_size_bytes=.inf", "rig_units=8", "topology=hyperx",
                          "+hw.link.bandwidth_gbps=100", "sa_per_pr_overhead_ns=5"))
    assert p.snic.rig_batch_size == math.inf and p.property_cache.size_bytes == math.inf
    assert p.snic.rig_units == 8 and p.cluster.topology == "hyperx" and p.link.bandwidth_gbps == 100
    assert p.software.sa_per_pr_overhead_ns == 5


@pytest.mark.parametrize(("overrides", "error", "match"), [
    (["matrix=/nonexistent/x.mtx"], DatasetNotFoundError, "not found"),
    (["matrix=" + str(DATA / "README.md")], GraphInputError, "not a readable Matrix Market"),
    ([f"matrix={KARATE}", "nodes=35", "rack_size=5"], ConfigError,
     r"^nodes=35 is larger than the graph's 34 rows; use at most 34 nodes$"),  # the simulator's key, not world_size
    ([f"matrix={KARATE}", "rig_units=-2"], ConfigError, "rig_units must be > 0"),
    ([f"matrix={KARATE}", "k=0"], ConfigError, "k must be >= 1"),
    ([f"matrix={KARATE}", "topology=torus"], ConfigError, "unknown topology 'torus'"),
])
def test_bad_input(tmp_path, overrides, error, match):
    with pytest.raises(error, match=match):
        simulate.run(_cfg(*overrides, "plots=false"), tmp_path)


def test_cli_exits_nonzero_with_one_line(tmp_path):
    proc = run_cli("netsparse_torch.cli.simulate", "topology=torus", f"matrix={KARATE}",
                   f"hydra.run.dir={tmp_path}", timeout=120)
    assert proc.returncode == 2
    assert "netsparse-simulate: error: unknown topology 'torus'" in proc.stderr


def test_strong_scaling_through_the_cli(tmp_path):
    cfg = _cfg(f"matrix={KARATE}", "nodes=4", "rack_size=2", "plots=false", "strong_scaling=[1,2,4]",
               "compute_models=[spade,cpu]",
               f"report_dir={tmp_path / 'reports'}", "tag=_x")
    r = simulate.run(cfg, tmp_path)
    block = r["strong_scaling"]
    assert block["compute_models"]["cpu"]["calibrated_from_measurement"] is True
    assert block["compute_models"]["spade"]["pes"] == 128
    assert [(row["nodes"], row["compute_model"]) for row in block["rows"]] == [
        (n, m) for n in (1, 2, 4) for m in ("spade", "cpu")]
    assert json.loads((tmp_path / "reports" / "karate-n4-leafspine-spmm-k16_x.json").read_text()) == \
        json.loads(json.dumps(r))
    with pytest.raises(ConfigError, match="unknown compute model"):
        simulate.run(_cfg(f"matrix={KARATE}", "nodes=2", "plots=false", "strong_scaling=[1]",
                          "compute_models=[gpu]"), tmp_path)


def test_collect_tables(tmp_path):
    from netsparse_torch.cli import collect as collect_cli
    from netsparse_torch.report import collect

    d = tmp_path / "reports"
    for k in (16, 1):
        simulate.run(_cfg(f"matrix={KARATE}", "nodes=4", "rack_size=2", f"k={k}", "plots=false",
                          f"report_dir={d}", "strong_scaling=[1,4]", "compute_models=[spade]"))
    reports = collect.load_reports(d)
    assert [r["k"] for r in reports] == [1, 16]  # numeric order
    t3 = collect.markdown("table3", reports)
    assert t3[2:] == ["| 1 | 0.9756 |", "| 16 | 0.7143 |"]  # NetSparse Table 3: 97.6 %, 71.4 %
    t1 = collect.markdown("table1", reports)
    red = reports[0]["redundancy"]
    assert t1[2].startswith(f"| karate | 4 | {red['useful_transfers']:,} | {red['sa_prs']:,} |")
    # The simulator fills the NetSparse columns (they read n/a only when it is absent).
    assert "n/a" not in collect.markdown("speedup", reports)[2]
    assert reports[0]["strategies"]["netsparse"]["comm_time_s"] > 0
    assert len(collect.markdown("strong_scaling", reports)) == 2 + 2 * 2
    sweep = [[c.strip() for c in row.split("|")] for row in collect.markdown("sweep", reports)]
    col = sweep[0].index("tail bound")  # the resource that bounds the tail, as the report names it
    assert [row[col] for row in sweep[2:]] == [r["strategies"]["netsparse"]["tail"]["bound"] for r in reports]
    with pytest.raises(SystemExit) as done:  # one line, exit 2 (tests/test_cli_failure.py)
        collect_cli.main(["table1", str(tmp_path / "empty")])
    assert done.value.code == 2
    with pytest.raises(ValueError, match="unknown table"):
        collect.markdown("table9", reports)


def test_modeled_training_block_by_hand():
    from hw_models import compute as C

    rows = [0, 0, 1, 1, 2, 3, 3, 3]  # the hand case of test_hw_models_baselines: 4 nonzeros per node
    cols = [2, 3, 2, 0, 0, 0, 1, 3]
    a = sp.coo_matrix((np.ones(8), (rows, cols)), shape=(4, 4))
    p = HardwareParams().replace(cluster={"nodes": 2}, software={"sa_per_pr_overhead_ns": 0})
    m = A.modeled_training(a, p, [16, 8], compute_model=C.CPUModel.from_gflops(2.0))  # 1e9 nnz*K per s
    # SUOpt: 2 rows of (16 + 8) * 4 B = 192 B at 50 GB/s. SAOpt (network only; 64 ranks per node, one
    # row each, so 3 PRs each way after per-rank filtering): a 62 + 3 * 18 = 116 B read packet plus a
    # 62 + 3 * 82 = 308 B response packet at K=16, and 116 + 62 + 3 * (18 + 32) = 328 B at K=8.
    assert m["comm_time_s"]["su_opt"] == pytest.approx(192 / 50e9)
    assert m["comm_time_s"]["sa_opt"] == pytest.approx((424 + 328) / 50e9)
    assert m["comm_time_s"]["netsparse"] is None and m["netsparse_status"].startswith("not simulated")
    # compute: 4 nonzeros * (16 + 8) / 1e9 = 96 ns per node.
    assert m["compute"]["time_s"] == pytest.approx(96e-9)
    assert m["epoch_time_s"]["none"]["su_opt"] == pytest.approx(96e-9 + 192 / 50e9)
    assert m["epoch_time_s"]["full"]["su_opt"] == pytest.approx(96e-9)  # compute hides comm per gather
    assert m["virtual_nodes"] == 2 and "not measured" in m["what"]
    fake = A.modeled_training(a, p, [16], simulator=FakeSimulator())
    assert fake["comm_time_s"]["netsparse"] == pytest.approx(2e-6 / 5)
    assert fake["comm_speedup"]["netsparse_vs_su_opt"] == pytest.approx(fake["comm_time_s"]["su_opt"] / 4e-7)
    with pytest.raises(ConfigError, match="at least one gather"):
        A.modeled_training(a, p, [])
    # A GAT gather is an SDDMM of its K: the same rows cross the network (SDDMM reads rows of Y as
    # SpMM reads rows of B), the simulator is asked for kernel=sddmm, and the gathers stay in order.
    kernels = []

    class KernelSim(FakeSimulator):
        def __call__(self, a, w, params, k, kernel, mechanisms):
            kernels.append((k, kernel))
            return super().__call__(a, w, params, k, kernel, mechanisms)

    gat = A.modeled_training(a, p, [(16, "sddmm"), 8], compute_model=C.CPUModel.from_gflops(2.0),
                             simulator=KernelSim())
    assert [(g["k"], g["kernel"]) for g in gat["per_gather"]] == [(16, "sddmm"), (8, "spmm")]
    assert kernels == [(16, "sddmm"), (8, "spmm")]
    assert gat["comm_time_s"]["su_opt"] == m["comm_time_s"]["su_opt"]
    assert gat["comm_time_s"]["sa_opt"] == m["comm_time_s"]["sa_opt"]
    with pytest.raises(ConfigError, match="unknown kernel 'gat'"):
        A.modeled_training(a, p, [(16, "gat")])


def test_synthetic_matrices():
    from hw_models.synthetic import generate

    a, name = simulate.load_matrix(_cfg("matrix=synthetic:banded", "synthetic.n=300"))
    assert name == "synthetic-banded-300"
    assert (a.to_scipy() != generate("banded", 300, seed=0, bandwidth=64, density=0.6)).nnz == 0  # shape_params apply
    a, _ = simulate.load_matrix(_cfg("matrix=synthetic", "synthetic.shape=road", "synthetic.n=300",
                                     "+synthetic.params.drop=0.0", "+synthetic.params.diagonal=0.0"))
    assert (a.to_scipy() != generate("road", 300, seed=0, drop=0.0, diagonal=0.0)).nnz == 0  # explicit params win
    a, name = simulate.load_matrix(_cfg("matrix=paper:queen@0.01"))
    assert name == "paper-queen@0.01" and a.indices.dtype == np.int32 and a.n_rows == 41471
    with pytest.raises(ConfigError, match="unknown synthetic shape"):
        simulate.load_matrix(_cfg("matrix=synthetic:torus"))


def test_cli_picks_the_extra_strategies_and_snic_sw_parameters(tmp_path):
    base = ["matrix=" + str(KARATE), "nodes=4", "rack_size=2", "ablation=false", "plots=false"]
    r = simulate.run(_cfg(*base, "strategies=[snic_sw]", "snic_sw.slowdown=1.0", "snic_sw.transfer_share=0.0"))
    assert set(r["strategies"]) == {"su_opt", "sa_opt", "snic_sw", "netsparse"}
    assert r["strategies"]["snic_sw"]["slowdown"] == 1.0
    slow = simulate.run(_cfg(*base, "strategies=[snic_sw]"))["strategies"]["snic_sw"]
    assert slow["comm_time_s"] >= r["strategies"]["snic_sw"]["comm_time_s"]
    with pytest.raises(ConfigError, match="unknown strategies"):
        simulate.run(_cfg(*base, "strategies=[nosuch]"))
    with pytest.raises(ConfigError, match="snic_sw"):
        simulate.run(_cfg(*base, "strategies=[snic_sw]", "snic_sw.slowdown=0"))


def test_line_util_counts_received_or_both_directions_by_hand():
    """One PR from node 0 to node 3 (test_simulator's lone PR): the tail, node 0, sends one 80 B read
    packet (50 + 12 + 18 B) and receives one 144 B response (plus 16 x 4 B of payload). ``rx`` reads
    144 B / (rate x t); ``both`` (144 + 80) B / (2 x rate x t). A reading only: every time stays."""
    a = sp.csr_matrix((np.ones(1), ([0], [3])), shape=(4, 4))
    reports = {d: A.analyze(a, HardwareParams.from_dict({"cluster": {"nodes": 4, "rack_size": 2},
                                                          "link": {"line_util_direction": d}}),
                            k=16, simulator=A.default_simulator(), ablation=False)["strategies"]["netsparse"]
               for d in ("rx", "both")}
    rx, both = reports["rx"], reports["both"]
    assert rx["tail_node"] == both["tail_node"] == 0 and rx["per_node"]["time_s"] == both["per_node"]["time_s"]
    t = rx["comm_time_s"]
    assert rx["tail"]["line_util"] == pytest.approx(144 / (50e9 * t))
    assert both["tail"]["line_util"] == pytest.approx((144 + 80) / (2 * 50e9 * t))
    fake = A.analyze(_small(), HardwareParams().replace(cluster={"nodes": 4, "rack_size": 2}), k=16,
                     simulator=FakeSimulator(), ablation=False)
    assert fake["strategies"]["netsparse"]["tail"]["line_util"] is None  # no per-node byte counters


def test_rank_partition_reaches_the_sa_opt_baseline():
    """software.rank_partition: the report's SAOpt uses the workload split that way."""
    a = sp.random(120, 120, density=0.05, random_state=3, format="csr")
    p = HardwareParams().replace(cluster={"nodes": 4, "rack_size": 2}, software={"cores": 8, "rank_partition": "nnz"})
    got = A.analyze(a, p, k=16)["strategies"]["sa_opt"]
    want = B.sa_opt(D.workload(a, 4, cores=8, rank_partition="nnz"), 16, p)
    assert got["comm_time_s"] == want.comm_time_s and got["prs"] == int(want.prs.sum())
    rows = B.sa_opt(D.workload(a, 4, cores=8), 16, p.replace(software={"rank_partition": "rows"}))
    assert rows.comm_time_s != want.comm_time_s  # the two splits differ on this matrix
