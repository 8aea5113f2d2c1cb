"""The counter-based dropout generator (csrc/keyed_dropout.*) against a pure-Python SplitMix64
reference, its keep rate and independence, and its autograd behaviour."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from netsparse_torch.errors import ConfigError
from netsparse_torch.native import _C
from netsparse_torch.nn import DistGNN
from netsparse_torch.nn.dropout import keyed_dropout

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def splitmix64(z: int) -> int:
    return mix64((z + GOLDEN) & M64)


def ref_mask(node_ids: list[int], features: int, p: float, seed: int, epoch: int, layer: int) -> list[list[float]]:
    """The documented definition, one element at a time."""
    stream = splitmix64(splitmix64(splitmix64(seed & M64) ^ (epoch & M64)) ^ (layer & M64))
    rows = []
    for node in node_ids:
        key = splitmix64(stream ^ (node & M64))
        u = [(mix64((key + (j + 1) * GOLDEN) & M64) >> 11) * 2.0**-53 for j in range(features)]
        rows.append([1.0 / (1.0 - p) if uj >= p else 0.0 for uj in u])
    return rows


def mask(node_ids, features, p, seed=0, epoch=0, layer=0, dtype=torch.float64):
    ids = torch.as_tensor(node_ids, dtype=torch.int64)
    return _C.keyed_dropout_mask(torch.empty(len(ids), features, dtype=dtype), ids, p, seed, epoch, layer)


def test_reference_is_splitmix64():
    # The published SplitMix64 outputs for state 0 (Vigna's splitmix64.c), so the reference is the
    # real generator and not just a copy of the kernel.
    outputs = [mix64((k * GOLDEN) & M64) for k in (1, 2, 3)]
    assert outputs == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_hand_worked_case():
    # p = 0.5 keeps an element iff the top bit of its 64-bit word is set.
    stream = splitmix64(splitmix64(splitmix64(7) ^ 3) ^ 1)
    key = splitmix64(stream ^ 42)
    words = [mix64((key + (j + 1) * GOLDEN) & M64) for j in range(4)]
    expected = [[2.0 if w >> 63 else 0.0 for w in words]]
    assert mask([42], 4, 0.5, seed=7, epoch=3, layer=1).tolist() == expected


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.integers(0, 2**40), min_size=0, max_size=12), features=st.integers(0, 9),
       p=st.floats(0.0, 0.99), seed=st.integers(-2**63, 2**63 - 1), epoch=st.integers(0, 10**6),
       layer=st.integers(0, 7))
def test_kernel_matches_reference(ids, features, p, seed, epoch, layer):
    got = mask(ids, features, p, seed, epoch, layer)
    assert got.shape == (len(ids), features)
    assert got.tolist() == ref_mask(ids, features, p, seed, epoch, layer)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_rate(p):
    n, f = 4000, 32
    kept = (mask(range(n), f, p) != 0).double()
    sigma = math.sqrt(p * (1 - p) / (n * f))
    assert abs(kept.mean().item() - (1 - p)) < 5 * sigma
    # Every feature column and every block of 100 nodes keeps about 1 - p (no degenerate key).
    col_sigma = math.sqrt(p * (1 - p) / n)
    assert (kept.mean(0) - (1 - p)).abs().max().item() < 5 * col_sigma
    block_sigma = math.sqrt(p * (1 - p) / (100 * f))
    assert (kept.view(40, 100 * f).mean(1) - (1 - p)).abs().max().item() < 5 * block_sigma


@pytest.mark.parametrize("other", [{"seed": 1}, {"epoch": 1}, {"layer": 1}, {"shift": 1}])
def test_masks_of_different_keys_are_independent(other):
    # Two independent masks with keep rate 1/2 agree on half of the elements.
    n, f = 4000, 32
    base = mask(range(n), f, 0.5) != 0
    shift = other.pop("shift", 0)
    moved = mask(range(shift, n + shift), f, 0.5, **other) != 0
    agree = (base == moved).double().mean().item()
    assert abs(agree - 0.5) < 5 * math.sqrt(0.25 / (n * f))


def test_same_for_any_thread_count_and_row_order():
    ids = torch.randperm(5000, generator=torch.Generator().manual_seed(0)) * 977
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = mask(ids, 24, 0.3, seed=5, epoch=2)
        torch.set_num_threads(2)
        two = mask(ids, 24, 0.3, seed=5, epoch=2)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)
    order = torch.argsort(ids)
    assert torch.equal(mask(ids[order], 24, 0.3, seed=5, epoch=2), one[order])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_autograd_reuses_the_mask(dtype):
    x = torch.randn(50, 8, dtype=dtype, requires_grad=True)
    ids = torch.arange(100, 150)
    out = keyed_dropout(x, ids, 0.25, seed=3, epoch=4, layer=0)
    m = torch.tensor(ref_mask(list(range(100, 150)), 8, 0.25, 3, 4, 0), dtype=dtype)
    torch.testing.assert_close(out, x.detach() * m, rtol=0, atol=0)
    g = torch.randn(50, 8, dtype=dtype)
    out.backward(g)
    torch.testing.assert_close(x.grad, g * m, rtol=0, atol=0)


def test_backward_saves_no_mask():
    """The mask is drawn again in the backward: what autograd keeps from the forward is the node ids
    (which the graph holds anyway), not a tensor the size of x (for a paper-scale rank, 81 MB a layer)."""
    x = torch.randn(1000, 16, requires_grad=True)
    ids = torch.arange(1000)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = keyed_dropout(x, ids, 0.5, seed=1, epoch=0, layer=1)
    assert [t.data_ptr() for t in saved] == [ids.data_ptr()], [tuple(t.shape) for t in saved]
    out.backward(torch.ones_like(out))
    torch.testing.assert_close(x.grad, out.detach() / x.detach(), rtol=1e-6, atol=0)


def test_only_in_training_and_edge_probabilities():
    x = torch.randn(6, 5)
    ids = torch.arange(6)
    assert keyed_dropout(x, ids, 0.5, seed=0, epoch=0, layer=0, training=False) is x
    assert keyed_dropout(x, ids, 0.0, seed=0, epoch=0, layer=0) is x
    assert torch.equal(keyed_dropout(x, ids, 1.0, seed=0, epoch=0, layer=0), torch.zeros(6, 5))
    with pytest.raises(ConfigError, match=r"dropout must be a probability in \[0, 1\], got 1.5"):
        keyed_dropout(x, ids, 1.5, seed=0, epoch=0, layer=0)
    with pytest.raises(ValueError, match="one row per node id"):
        keyed_dropout(x, torch.arange(5), 0.5, seed=0, epoch=0, layer=0)
    with pytest.raises(ConfigError, match="dropout must be a probability"):
        DistGNN("gcn", 4, 8, 2, dropout=-0.1)


class _IdentityGraph:
    """Stands in for a DistGraph that owns the rows ``start..stop`` and aggregates nothing."""

    def __init__(self, start: int, stop: int):
        self.row_range = slice(start, stop)
        self.node_ids = torch.arange(start, stop)  # original ids = row ids here
        self.device_node_ids = self.node_ids  # a CPU graph
        self.edge_weight = None  # unweighted, as a DistGraph built without weights

    def propagate(self, x, norm, tag=""):
        return x


def test_model_keys_masks_on_epoch_and_node_ids():
    torch.manual_seed(0)
    model = DistGNN("gcn", 4, 16, 3, num_layers=3, dropout=0.5, seed=11)
    x = torch.randn(30, 4)
    whole = [model(x, _IdentityGraph(0, 30), epoch=e) for e in (0, 1)]
    # Without an epoch the model counts its training passes: epochs 2 and 3 here.
    counted = [model(x, _IdentityGraph(0, 30)) for _ in range(2)]
    torch.testing.assert_close(counted, [model(x, _IdentityGraph(0, 30), epoch=e) for e in (2, 3)], rtol=0, atol=0)
    assert model.steps == 4
    assert not torch.equal(whole[0], whole[1])
    # Rows 10..29 held by another "rank" see exactly the masks they saw in the whole graph.
    torch.testing.assert_close(model(x[10:], _IdentityGraph(10, 30), epoch=1), whole[1][10:], rtol=0, atol=0)
    model.eval()  # no dropout, and the count stays
    assert not torch.equal(model(x, _IdentityGraph(0, 30)), whole[1]) and model.steps == 2


def test_threshold_is_exact_at_the_boundary():
    # An element whose uniform equals p is kept (u >= p); at the next double above u it is dropped.
    stream = splitmix64(splitmix64(splitmix64(0) ^ 0) ^ 0)
    u = (mix64((splitmix64(stream ^ 5) + GOLDEN) & M64) >> 11) * 2.0**-53
    assert mask([5], 1, u).item() == 1.0 / (1.0 - u)
    assert mask([5], 1, math.nextafter(u, 1.0)).item() == 0.0
