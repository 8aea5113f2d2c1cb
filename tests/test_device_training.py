"""Training on a device: ``device=auto|cpu|cuda``, ``DistGraph(device=)``, the host-staged RIG path, and
checkpoints across devices.

Each CUDA path has a CPU twin here that runs the same code with ``device="cpu"`` (the netsparse staging
with ``stage=True``), so CI catches plumbing errors; the CUDA tests run where torch sees a GPU
(``make gpu-check``) and are skipped with the reason elsewhere.
"""

import pytest
import torch
import torch.distributed as dist
from cli import train, train_here
from cli_here import train_error
from devices import CUDA
from graphs import random_graph
from test_equivalence import HIDDEN, LAYERS, assert_matches_pyg

from netsparse_torch.errors import ConfigError
from netsparse_torch.nn import DistGraph
from netsparse_torch.run.device import device_kind
from netsparse_torch.run.launch import launch

needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (or NETSPARSE_TEST_DEVICE=cpu)")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]


def test_device_setting():
    assert device_kind("cpu", cuda_available=True) == "cpu"
    assert device_kind("auto", cuda_available=True) == "cuda"
    assert device_kind("auto", cuda_available=False) == "cpu"
    assert device_kind("cuda", cuda_available=True) == "cuda"
    with pytest.raises(ConfigError, match="no CUDA GPU"):
        device_kind("cuda", cuda_available=False)
    with pytest.raises(ConfigError, match="device must be one of"):
        device_kind("gpu", cuda_available=True)


def test_ranks_sharing_a_gpu_print_one_line(tmp_path, monkeypatch):
    """The CPU twin of two ranks on one GPU (the backend's test hook: every rank claims cuda:0): the
    run says once that its collectives go through gloo, and the report says which path each rank took."""
    monkeypatch.setenv("NETSPARSE_BACKEND_CPU_TWIN", "1")
    proc, report = train(tmp_path, "epochs=2", "world_size=2", "strategy=ds", "strategy.replication=2")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "share cuda:0" in line]
    assert len(lines) == 1 and "gloo" in lines[0], proc.stderr
    paths = [r["cuda_collectives"] for r in report["per_rank"]]
    assert [p["cuda"] for p in paths] == ["gloo-shared-gpu"] * 2
    assert paths[0]["shares_gpu_with"] == [1] and paths[1]["shares_gpu_with"] == [0]
    assert any(line.startswith("netsparse-train:") and line.endswith("(CUDA collectives: gloo-shared-gpu)")
               for line in proc.stdout.splitlines()), proc.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_device_cuda_without_a_gpu_is_one_line_before_any_rank(tmp_path):
    line = train_error(tmp_path / "run", "device=cuda", "epochs=1")
    assert "device=cuda" in line and "no CUDA GPU" in line, line


def test_wrong_device_value_is_refused_before_torch(tmp_path):
    proc, _ = train(tmp_path, "device=tpu", timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "netsparse-train: error: device must be one of auto, cpu, cuda, got 'tpu'"


def device_layer(rank, world_size, graph, weight, device, combos):
    """Each (strategy, options, layer) on ``device``: forward and backward, rank 0's view of every rank."""
    results = {}
    for strategy, options, layer in combos:
        dg = DistGraph(graph, rank, world_size, "rows", strategy, dict(options), device=device)
        torch.manual_seed(0)
        conv = LAYERS[layer][0](dg.shard.num_features, HIDDEN).to(dg.device)
        assert dg.x.device.type == dg.adjacency("gcn").device.type == dg.plan.send_idx.device.type == device
        x = dg.x.clone().requires_grad_()
        out = conv(x, dg)
        (out * weight[dg.node_ids].to(device)).sum().backward()
        params = {n: p.grad.clone() for n, p in conv.named_parameters()}
        if world_size > 1:
            for g in params.values():
                dist.all_reduce(g)  # each rank holds its rows' share of a weight gradient
        mine = {"out": out.detach().cpu(), "x": x.grad.cpu(), "params": {n: g.cpu() for n, g in params.items()},
                "node_ids": dg.node_ids, "stats": dg.strategy.stats()}
        gathered = [mine]
        if world_size > 1:
            gathered = [None] * world_size
            dist.all_gather_object(gathered, mine)
        results[(strategy, str(options), layer)] = gathered
    return results


COMBOS = [("sa", (), "gcn"), ("netsparse", (("stage", True),), "gcn"), ("netsparse", (), "sage"),
          ("su", (), "sage"), ("twoface", (), "gcn"), ("ds", (), "gcn")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("world_size", [1, 2])
def test_strategies_on_a_device_match_pyg(device, world_size):
    """On CPU this is the twin of the CUDA run: the same calls with device="cpu", the RIG halo staged
    through host buffers. On CUDA with 2 ranks, both share the GPU (gloo collectives)."""
    graph = random_graph()
    weight = torch.randn(graph.num_nodes, HIDDEN, generator=torch.Generator().manual_seed(1))
    combos = COMBOS if world_size > 1 else COMBOS[:3]
    results = launch(device_layer, world_size, (graph, weight, device, combos), timeout_s=120)
    for (strategy, options, layer), per_rank in results.items():
        # float32 on a GPU sums in another order than the CPU reference (no TF32: torch's default)
        assert_matches_pyg(per_rank, graph, layer, weight, f"{strategy}{options}/{layer}/{device}/ws={world_size}",
                           tol=1e-4 if device == "cuda" else 1e-5)
        if strategy == "netsparse" and "stage" in options and world_size > 1:
            staging = per_rank[0]["stats"]["staging"]
            assert staging["staging_to_host_bytes"] > 0 and staging["staging_to_device_bytes"] > 0
            assert staging["staging_to_host_s"] >= 0 and staging["staging_to_device_s"] >= 0


def test_staging_on_cpu_is_off_unless_asked():
    """On CPU without stage=True the RIG units read the features in place: no staging counters."""
    results = launch(device_layer, 2, (random_graph(), torch.ones(60, HIDDEN), "cpu",
                                       [("netsparse", (), "gcn")]), timeout_s=120)
    forward = next(iter(results.values()))[0]["stats"]["layers"]["/forward"]
    stats = next(iter(results.values()))[0]["stats"]
    assert "staging" not in stats and "staging_to_host_bytes" not in forward and forward["packets"] > 0


def test_training_report_names_each_rank_device(tmp_path):
    report, printed = train_here(tmp_path, "device=cpu", "epochs=2", "world_size=2", "strategy=netsparse",
                           "+strategy.options.stage=true")
    assert [r["device"] for r in report["per_rank"]] == ["cpu", "cpu"]
    assert report["netsparse"]["staging_to_host_bytes"] > 0
    assert "device=cpu" in printed.splitlines()[0]
    staging = [line for line in printed.splitlines() if line.startswith("  staging")]
    assert len(staging) == 1 and f"{report['netsparse']['staging_to_device_bytes']:,} B" in staging[0]


def _losses(tmp_path, *overrides):
    report, _ = train_here(tmp_path, *overrides)
    return [e["loss"] for e in report["epochs"]], report


@needs_cuda
@pytest.mark.parametrize("strategy", ["su", "sa", "netsparse"])
@pytest.mark.parametrize("world_size", [1, 2])
def test_cuda_losses_equal_cpu_losses_over_20_epochs(tmp_path, strategy, world_size):
    """Dropout on (0.5, keyed masks generated on the device): the same seed trains the same model."""
    common = ["epochs=20", f"world_size={world_size}", f"strategy={strategy}", "dropout=0.5"]
    cpu, _ = _losses(tmp_path / "cpu", "device=cpu", *common)
    cuda, report = _losses(tmp_path / "cuda", "device=cuda", *common)
    assert all(r["device"].startswith("cuda") for r in report["per_rank"])
    torch.testing.assert_close(torch.tensor(cuda), torch.tensor(cpu), rtol=1e-4, atol=0)


@needs_cuda
@pytest.mark.parametrize("first,then", [("cuda", "cpu"), ("cpu", "cuda")])
def test_checkpoint_resumes_on_the_other_device(tmp_path, first, then):
    ckpt = tmp_path / "ckpt"
    common = ["world_size=2", "strategy=sa", f"checkpoint_dir={ckpt}", "checkpoint_every=3"]
    _losses(tmp_path / "a", f"device={first}", "epochs=6", *common)
    resumed, _ = _losses(tmp_path / "b", f"device={then}", "epochs=9", "resume=true", *common)
    whole, _ = _losses(tmp_path / "c", f"device={then}", "epochs=9", "world_size=2", "strategy=sa")
    torch.testing.assert_close(torch.tensor(resumed), torch.tensor(whole), rtol=1e-4, atol=0)


def test_summary_counts_the_kernels_chosen_on_cuda():
    """The summary line sums ``per_rank[].kernels`` (what ``backend="auto"`` chose by timing on CUDA)."""
    from netsparse_torch.report.train_report import _kernel_lines

    choice = {"key": "forward/K=16/float32", "rows": 5, "cols": 9, "nnz": 20, "forced": False,
              "ms": {"triton": 0.1, "torch": 0.2}}
    report = {"per_rank": [{"kernels": [dict(choice, choice="triton"), dict(choice, choice="torch")]},
                           {"kernels": [dict(choice, choice="triton")]}]}
    line = "  kernels      CUDA SpMM chosen by timing, all ranks: torch 1, triton 2 (measured)"
    assert _kernel_lines(report) == [line]
    assert _kernel_lines({"per_rank": [{"kernels": []}]}) == []
