"""The halo gradients come back to their owners in a fixed order on every device: from 3 ranks on a row
is sent to several peers, and ``index_add_`` adds such repeats with atomics on CUDA (in whatever order
they land). The returned rows are added in rounds of distinct rows, each row's in send order, which
on CPU is bit for bit what ``index_add_`` gives."""

import devices
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from netsparse_torch.comm.halo import Done, add_returned, add_rows, occurrence_rounds
from netsparse_torch.run.launch import launch


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40))
def test_rounds_hold_each_value_once_in_send_order(values):
    idx = torch.tensor(values, dtype=torch.long)
    rounds = occurrence_rounds(idx)
    assert sorted(torch.cat(rounds).tolist() if rounds else []) == list(range(len(values)))
    for k, positions in enumerate(rounds):
        assert positions.tolist() == sorted(positions.tolist())
        assert len(set(idx[positions].tolist())) == positions.numel(), "a round repeats a row"
        # round k holds the k-th appearance of each of its values
        assert all(values[:p].count(values[p]) == k for p in positions.tolist())


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=50), st.integers(1, 5), st.integers(0, 2**16))
def test_add_rows_is_index_add_bit_for_bit_on_cpu(values, k, seed):
    idx = torch.tensor(values, dtype=torch.long)
    gen = torch.Generator().manual_seed(seed)
    rows = torch.randn(len(values), k, generator=gen) * 1e3
    target = torch.randn(10, k, generator=gen)
    assert torch.equal(add_rows(target.clone(), idx, rows), target.clone().index_add_(0, idx, rows))


def spy_index_add(monkeypatch) -> list[bool]:
    """Records, for every ``index_add_`` call, whether its index repeats a row."""
    seen, real = [], torch.Tensor.index_add_

    def index_add_(self, dim, index, source, **kw):
        seen.append(index.unique().numel() < index.numel())
        return real(self, dim, index, source, **kw)

    monkeypatch.setattr(torch.Tensor, "index_add_", index_add_)
    return seen


def test_returned_rows_never_reach_index_add_with_a_repeat(monkeypatch):
    from netsparse_torch.plan import Plan

    send_idx = torch.tensor([0, 2, 3, 1, 2, 0, 2])  # to rank 1: 0 2 3; to rank 2: 1 2; to rank 3: 0 2
    plan = Plan(0, 4, None, None, [0] * 4, send_idx, [0, 3, 2, 2])
    back = torch.randn(7, 3)
    expected = torch.zeros(4, 3).index_add_(0, send_idx, back)
    repeats = spy_index_add(monkeypatch)
    got = add_returned(torch.zeros(4, 3), plan, back, Done())
    assert torch.equal(got, expected)
    assert repeats == [False, False, False]  # rows 0 and 2 twice, row 2 three times: three rounds


def sa_backward_at_3_ranks(rank, world_size):
    import torch.distributed as dist
    from graphs import random_graph

    from netsparse_torch.nn import DistGCNConv, DistGraph

    dg = DistGraph(random_graph(), rank, world_size, strategy="sa")
    with pytest.MonkeyPatch.context() as mp:
        repeats = spy_index_add(mp)
        torch.manual_seed(0)
        x = dg.x.clone().requires_grad_()
        DistGCNConv(dg.shard.num_features, 4)(x, dg).pow(2).sum().backward()
    send = dg.plan.send_idx
    everyone = [None] * world_size
    dist.all_gather_object(everyone, {"repeats": repeats, "send_repeats": send.unique().numel() < send.numel()})
    return everyone


def test_sa_backward_at_3_ranks_adds_no_repeat_with_index_add():
    seen = launch(sa_backward_at_3_ranks, 3, timeout_s=120)
    assert any(r["send_repeats"] for r in seen), "the graph must send some row to two peers"
    assert all(r["repeats"] and not any(r["repeats"]) for r in seen)


@pytest.mark.skipif(not devices.CUDA, reason="needs a CUDA GPU")
def test_cuda_adds_the_returned_rows_as_the_cpu_does_bit_for_bit():
    gen = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 500, (60_000,), generator=gen)  # every row about 120 times
    rows = torch.randn(60_000, 16, generator=gen) * 1e3
    target = torch.randn(500, 16, generator=gen)
    cpu = add_rows(target.clone(), idx, rows)
    for _ in range(2):
        assert torch.equal(add_rows(target.cuda(), idx.cuda(), rows.cuda()).cpu(), cpu)
