"""One CUDA SpMM kernel per width and dtype for a whole run, taken by every rank together: each rank
times the candidates on its own rows in its turn, and all take the candidate whose slowest rank is
fastest. On CPU the timings are fake (the candidates are never run) and the ranks are real."""

import time
from functools import partial

import devices
import pytest
import torch
import torch.distributed as dist
from test_kernels import random_csr

from netsparse_torch import kernels as K
from netsparse_torch.kernels import _choice
from netsparse_torch.run.launch import launch

#: Each rank's fake milliseconds: rank 0 finds Triton faster, rank 1 cuSPARSE; the slowest rank of
#: each candidate is rank 1 for Triton (5 ms) and rank 0 for cuSPARSE (3 ms): cuSPARSE it is.
MS = [{"triton": 1.0, "torch": 3.0}, {"triton": 5.0, "torch": 2.0}]


def test_decide_takes_the_candidate_whose_slowest_rank_is_fastest():
    assert _choice.decide(MS) == "torch"
    assert _choice.decide(MS[:1]) == "triton"
    assert _choice.decide([{"triton": 2.0, "torch": 2.0}]) == "triton", "a tie goes to the first listed"


def turn_timer(ms: dict, log: list):
    """Fake seconds by candidate name (read off the partial, never run), logging when each timing ran."""
    def timer(fn):
        t0 = time.monotonic()
        time.sleep(0.05)
        log.append((t0, time.monotonic()))
        return ms[fn.args[0]] / 1e3
    return timer


def agree_at_two_ranks(rank, world_size):
    _choice.forget_agreements()
    crow, col, val, _ = random_csr(30 + 10 * rank, 20, seed=rank)
    a, other = K.CSR(crow, col, val, 20), K.CSR(*random_csr(7, 20, seed=9)[:3], 20)
    log = []

    def exchange(obj):
        everyone = [None] * world_size
        dist.all_gather_object(everyone, obj)
        return everyone

    agreement = _choice.agree(a, 16, torch.float32, rank, world_size, exchange, timer=turn_timer(MS[rank], log))
    # Any other matrix of the run, any direction: the agreed kernel, untimed.
    picked = [_choice.auto_spmm_backend(other, d, torch.randn(7, 16), lambda b: None) for d in ("forward", "backward")]
    mine = {"agreement": agreement, "picked": picked, "log": log, "recorded": K.recorded_choices()[-2:]}
    return exchange(mine)


def test_ranks_that_prefer_different_kernels_run_the_same_one(monkeypatch):
    monkeypatch.delenv(_choice.FORCE_ENV, raising=False)
    seen = launch(agree_at_two_ranks, 2, timeout_s=120)
    keys = {"forward/K=16/float32": "torch", "backward/K=16/float32": "torch"}
    for mine in seen:
        assert mine["agreement"]["keys"] == keys
        assert mine["picked"] == ["torch", "torch"]
        assert [r["how"] for r in mine["recorded"]] == ["agreed", "agreed"] and mine["recorded"][0]["ms"] == {}
    # every rank's times are in the record, per key and candidate
    assert seen[0]["agreement"]["ms_per_rank"] == [{key: ms for key in keys} for ms in MS]
    # the ranks timed in turns: rank 1 started after rank 0 had finished
    assert max(end for _, end in seen[0]["log"]) <= min(start for start, _ in seen[1]["log"])


def test_an_agreed_key_is_never_timed_again_and_a_forced_kernel_wins(monkeypatch):
    _choice.forget_agreements()
    calls = []
    monkeypatch.delenv(_choice.FORCE_ENV, raising=False)
    a = K.CSR(*random_csr(9, 6, seed=2)[:3], 6)
    _choice.agree(a, 4, torch.float32, 0, 1, lambda x: [x], timer=lambda fn: calls.append(fn.args[0]) or 1e-3)
    assert calls == ["triton", "torch"] * 2 and _choice.agreed(4, torch.float32)
    assert not _choice.agreed(5, torch.float32)
    b = K.CSR(*random_csr(9, 6, seed=3)[:3], 6)
    monkeypatch.setattr(_choice, "TIMER", lambda fn: pytest.fail("an agreed key was timed"))
    assert _choice.auto_spmm_backend(b, "forward", torch.randn(6, 4), lambda name: None) == "triton"
    monkeypatch.setenv(_choice.FORCE_ENV, "torch")
    c = K.CSR(*random_csr(9, 6, seed=4)[:3], 6)
    assert _choice.auto_spmm_backend(c, "forward", torch.randn(6, 4), lambda name: None) == "torch"
    _choice.forget_agreements()
    assert _choice.agreed_choices() == []


def test_agreement_times_the_columns_the_rows_read_with_real_candidates():
    # The candidates really run (on CPU: the Triton candidate needs the interpreter, so time torch only
    # through a timer that calls each candidate and checks it against the dense product).
    crow, col, val, dense = random_csr(12, 40, density=0.1, seed=5)
    a = K.CSR(crow, col, val, 40)
    shapes = []

    def timer(fn):
        if fn.args[0] == "torch":
            out = fn()
            shapes.append(tuple(out.shape))
        return 1e-3

    _choice.forget_agreements()
    _choice.agree(a, 3, torch.float32, 0, 1, lambda x: [x], timer=timer)
    used = int(torch.unique(col).numel())
    assert shapes == [(12, 3), (used, 3)], "forward A x B, backward A^T x G on the read columns only"
    _choice.forget_agreements()


def test_cusparse_gets_int32_indices_where_they_fit(monkeypatch):
    crow, col, val, dense = random_csr(10, 8, seed=6)
    a = K.CSR(crow, col, val, 8)
    seen = []
    real = torch.sparse_csr_tensor

    def spy(c, k, v, size, **kwargs):
        seen.append((c.dtype, k.dtype))
        return real(c, k, v, size, **kwargs)

    monkeypatch.setattr(torch, "sparse_csr_tensor", spy)
    B = torch.randn(8, 3)
    torch.testing.assert_close(K._ops.spmm_csr("torch", a, val, B), dense @ B)
    torch.testing.assert_close(K._ops.spmm_t_csr("torch", a, val, torch.randn(10, 3), constant=True).shape,
                               torch.Size([8, 3]))
    assert seen == [(torch.int32, torch.int32)] * 2
    assert a.crow.dtype == torch.int64, "the CSR itself keeps int64 (its other kernels read those)"


def distgraph_agrees(rank, world_size):
    """DistGraph.propagate on CPU with the CUDA dispatch's choice switched on: one agreement per width,
    on every rank, before the first aggregation of that width."""
    from graphs import random_graph

    from netsparse_torch.nn import DistGCNConv, DistGraph, training

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "resolve_backend", lambda backend, device: "triton")
        mp.setattr(_choice, "TIMER", partial(lambda r, fn: MS[r][fn.args[0]] / 1e3, rank))
        mp.delenv(_choice.FORCE_ENV, raising=False)
        _choice.forget_agreements()
        dg = DistGraph(random_graph(), rank, world_size, strategy="sa")
        for width in (4, 4, 3):
            torch.manual_seed(0)
            DistGCNConv(dg.shard.num_features, width)(dg.x, dg)
        mine = [a["keys"] for a in _choice.agreed_choices()]
    everyone = [None] * world_size
    dist.all_gather_object(everyone, mine)
    return everyone


def test_distgraph_agrees_once_per_width_on_every_rank(monkeypatch):
    monkeypatch.delenv(_choice.FORCE_ENV, raising=False)
    seen = launch(distgraph_agrees, 2, timeout_s=120)
    assert seen[0] == seen[1] == [{f"{d}/K={k}/float32": "torch" for d in ("forward", "backward")} for k in (4, 3)]


def test_summary_names_the_agreed_kernels():
    from netsparse_torch.report.train_report import _kernel_lines

    report = {"per_rank": [{"kernels": []}],
              "kernel_agreement": [{"keys": {"forward/K=16/float32": "torch", "backward/K=16/float32": "triton"}}]}
    assert _kernel_lines(report) == ["  kernels      CUDA SpMM agreed by all ranks: forward/K=16/float32 torch, "
                                     "backward/K=16/float32 triton (measured)"]


@pytest.mark.skipif(not devices.CUDA, reason="needs a CUDA GPU")
def test_a_cuda_graph_agrees_its_kernels_with_real_timings_and_stays_exact(monkeypatch):
    from graphs import random_graph

    from netsparse_torch.nn import DistGCNConv, DistGraph

    monkeypatch.delenv(_choice.FORCE_ENV, raising=False)
    _choice.forget_agreements()
    outs = []
    for device in ("cpu", "cuda"):
        dg = DistGraph(random_graph(), 0, 1, strategy="sa", device=device)
        torch.manual_seed(0)
        outs.append(DistGCNConv(dg.shard.num_features, 16).to(device)(dg.x, dg).cpu())
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    (agreement,) = _choice.agreed_choices()
    assert set(agreement["keys"]) == {"forward/K=16/float32", "backward/K=16/float32"}
    assert all(ms > 0 for times in agreement["ms_per_rank"][0].values() for ms in times.values())
    _choice.forget_agreements()
