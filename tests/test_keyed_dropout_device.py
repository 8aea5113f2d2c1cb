"""Keyed dropout on the device: the torch-ops implementation of the SplitMix64 masks
(``impl="torch"``, what CUDA tensors use) is bit-identical to the C++ kernel, for node and edge
masks, every key range and dtype. CI runs it on CPU; the same comparison on CUDA runs where there is
a GPU."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import netsparse_torch.nn.dropout as dropout
from netsparse_torch.errors import ConfigError
from netsparse_torch.native import _C
from netsparse_torch.nn.dropout import (
    IMPL_ENV,
    keyed_attention_dropout,
    keyed_dropout,
    keyed_dropout_mask,
    keyed_edge_dropout_mask,
    resolve_impl,
)

INT64 = st.integers(-2**63, 2**63 - 1)
DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
# p: anywhere in [0, 1), and the places where roundings could differ (tiny, near 1, halves, thirds).
PS = st.one_of(st.floats(0.0, 1.0, exclude_max=True),
               st.sampled_from([0.0, 2.0**-53, 1e-300, 0.1, 1 / 3, 0.5, 0.9, 1 - 2.0**-53, 0.999999]))


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits, so that equal means bit-identical (and -0.0 differs from 0.0)."""
    return t.contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def node_masks(ids, features, p, seed, epoch, layer, dtype, device="cpu"):
    like = torch.empty(len(ids), features, dtype=dtype)
    ids = torch.as_tensor(ids, dtype=torch.int64)
    ref = _C.keyed_dropout_mask(like, ids, p, seed, epoch, layer)
    got = keyed_dropout_mask(like.to(device), ids.to(device), p, seed, epoch, layer, impl="torch")
    return ref, got


@settings(max_examples=150, deadline=None)
@given(ids=st.lists(INT64, max_size=12), features=st.integers(0, 9), p=PS, seed=INT64, epoch=INT64, layer=INT64,
       dtype=st.sampled_from(DTYPES))
def test_node_mask_matches_kernel(ids, features, p, seed, epoch, layer, dtype):
    ref, got = node_masks(ids, features, p, seed, epoch, layer, dtype)
    assert got.dtype == dtype and got.shape == ref.shape
    assert torch.equal(bits(got), bits(ref))


@st.composite
def patterns(draw):
    """A CSR pattern (rows x cols, sorted or not, duplicates allowed) with original ids for both sides."""
    rows, cols = draw(st.integers(0, 6)), draw(st.integers(1, 8))
    per_row = draw(st.lists(st.integers(0, 5), min_size=rows, max_size=rows))
    crow = torch.tensor([0] + per_row, dtype=torch.int64).cumsum(0)
    col = torch.tensor(draw(st.lists(st.integers(0, cols - 1), min_size=int(crow[-1]), max_size=int(crow[-1]))),
                       dtype=torch.int64)
    row_ids = torch.tensor(draw(st.lists(INT64, min_size=rows, max_size=rows)), dtype=torch.int64)
    col_ids = torch.tensor(draw(st.lists(INT64, min_size=cols, max_size=cols)), dtype=torch.int64)
    return crow, col, row_ids, col_ids


@settings(max_examples=120, deadline=None)
@given(pattern=patterns(), heads=st.integers(0, 4), p=PS, seed=INT64, epoch=INT64, layer=INT64,
       dtype=st.sampled_from(DTYPES))
def test_edge_mask_matches_kernel(pattern, heads, p, seed, epoch, layer, dtype):
    crow, col, row_ids, col_ids = pattern
    like = torch.empty(col.numel(), heads, dtype=dtype)
    ref = _C.keyed_edge_dropout_mask(like, crow, col, row_ids, col_ids, p, seed, epoch, layer)
    got = keyed_edge_dropout_mask(like, crow, col, row_ids, col_ids, p, seed, epoch, layer, impl="torch")
    assert got.shape == ref.shape and torch.equal(bits(got), bits(ref))


@pytest.mark.parametrize("chunk", [1, 7, 1 << 22])
def test_chunks_do_not_change_the_mask(monkeypatch, chunk):
    # A chunk below the feature width still takes one row at a time.
    monkeypatch.setattr(dropout, "CHUNK_ELEMENTS", chunk)
    gen = torch.Generator().manual_seed(chunk)
    ids = torch.randint(-2**62, 2**62, (300,), generator=gen)
    ref, got = node_masks(ids, 13, 0.3, 2**63 - 1, 5, 2, torch.float32)
    assert torch.equal(bits(got), bits(ref))


def test_keep_value_is_the_kernels_for_many_p():
    # 1/(1-p) rounded into each dtype as the kernel rounds it (Half and BFloat16 through float).
    for k in range(1, 2000):
        p = k / 2000.0 + 1e-9 * k
        for dtype in DTYPES:
            ref, got = node_masks([k], 64, p, 0, 0, 0, dtype)
            assert torch.equal(bits(got), bits(ref)), (p, dtype)


def test_threshold_is_exact_at_the_boundary():
    # The element whose 53-bit uniform is u is kept at p = u and dropped at the next double above.
    like = torch.empty(1, 1, dtype=torch.float64)
    ones = _C.keyed_dropout_mask(like, torch.tensor([5]), 0.0, 0, 0, 0)
    assert ones.item() == 1.0
    lo, hi = 0.0, 1.0  # bisect the kernel's own uniform of this element
    for _ in range(200):
        mid = (lo + hi) / 2
        if _C.keyed_dropout_mask(like, torch.tensor([5]), mid, 0, 0, 0).item() != 0.0:
            lo = mid
        else:
            hi = mid
    for p in (lo, math.nextafter(lo, 1.0)):
        ref, got = node_masks([5], 1, p, 0, 0, 0, torch.float64)
        assert got.item() == ref.item()
    assert node_masks([5], 1, lo, 0, 0, 0, torch.float64)[1].item() != 0.0
    assert node_masks([5], 1, math.nextafter(lo, 1.0), 0, 0, 0, torch.float64)[1].item() == 0.0


def test_impl_choice(monkeypatch):
    cpu, meta = torch.device("cpu"), torch.device("cuda", 0)
    monkeypatch.delenv(IMPL_ENV, raising=False)
    assert (resolve_impl(None, cpu), resolve_impl(None, meta)) == ("cpp", "torch")
    assert resolve_impl("torch", cpu) == "torch" and resolve_impl("cpp", meta) == "cpp"
    monkeypatch.setenv(IMPL_ENV, "torch")
    assert resolve_impl(None, cpu) == "torch"
    assert resolve_impl("auto", cpu) == "cpp"  # an explicit argument beats the environment
    monkeypatch.setenv(IMPL_ENV, "gpu")
    with pytest.raises(ConfigError, match=r"\$NETSPARSE_DROPOUT_IMPL must be one of auto, cpp, torch, got 'gpu'"):
        resolve_impl(None, cpu)
    with pytest.raises(ConfigError, match="impl must be one of"):
        keyed_dropout(torch.ones(2, 2), torch.arange(2), 0.5, seed=0, epoch=0, layer=0, impl="cuda")


def test_env_var_runs_the_device_code_on_cpu(monkeypatch):
    calls = []
    real = dropout._mask_from_keys
    monkeypatch.setattr(dropout, "_mask_from_keys", lambda *a: calls.append(1) or real(*a))
    x = torch.randn(20, 6, requires_grad=True)
    ids = torch.arange(100, 120)
    monkeypatch.delenv(IMPL_ENV, raising=False)
    ref = keyed_dropout(x, ids, 0.4, seed=9, epoch=1, layer=2)
    assert calls == []  # CPU tensors take the C++ kernel by default
    monkeypatch.setenv(IMPL_ENV, "torch")
    out = keyed_dropout(x, ids, 0.4, seed=9, epoch=1, layer=2)
    assert calls == [1]
    assert torch.equal(bits(out.detach()), bits(ref.detach()))
    g = torch.randn(20, 6)
    (grad,) = torch.autograd.grad(out, x, g)
    (grad_ref,) = torch.autograd.grad(ref, x, g)
    assert torch.equal(grad, grad_ref)


class _Csr:
    def __init__(self, crow, col):
        self.crow, self.col = crow, col


class _Pattern:
    def __init__(self, crow, col, row_ids, col_ids):
        self.a, self.row_ids, self.col_ids = _Csr(crow, col), row_ids, col_ids


def test_attention_dropout_same_for_both_impls():
    crow = torch.tensor([0, 2, 2, 5])
    col = torch.tensor([0, 3, 1, 1, 2])  # a duplicate edge shares its mask
    pattern = _Pattern(crow, col, torch.tensor([10, 11, 12]), torch.tensor([7, 8, 9, 10]))
    alpha = torch.rand(5, 3) + 0.5
    outs = [keyed_attention_dropout(alpha, pattern, 0.5, seed=1, epoch=2, layer=3, impl=impl)
            for impl in ("cpp", "torch")]
    assert torch.equal(bits(outs[0]), bits(outs[1]))
    assert torch.equal(outs[1][2] != 0, outs[1][3] != 0)


def test_torch_impl_rejects_bad_input():
    with pytest.raises(ValueError, match="one row per node id"):
        keyed_dropout_mask(torch.empty(3, 2), torch.arange(2), 0.5, 0, 0, 0, impl="torch")
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
        keyed_dropout_mask(torch.empty(3, 2), torch.arange(3), 1.0, 0, 0, 0, impl="torch")
    with pytest.raises(ValueError, match="floating"):
        keyed_dropout_mask(torch.empty(3, 2, dtype=torch.int32), torch.arange(3), 0.5, 0, 0, 0, impl="torch")
    with pytest.raises(ValueError, match="one row id per CSR row"):
        keyed_edge_dropout_mask(torch.empty(2, 1), torch.tensor([0, 2]), torch.tensor([0, 0]), torch.arange(2),
                                torch.arange(1), 0.5, 0, 0, 0, impl="torch")


@CUDA
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_masks_match_kernel(dtype):
    gen = torch.Generator().manual_seed(3)
    ids = torch.randint(-2**63, 2**63 - 1, (20_000,), generator=gen)
    ref, got = node_masks(ids, 67, 0.37, -2**63, 2**40, 7, dtype, device="cuda")
    assert got.is_cuda and torch.equal(bits(got.cpu()), bits(ref))
    rows = 3000
    crow = torch.cat([torch.zeros(1, dtype=torch.int64), torch.randint(0, 9, (rows,), generator=gen).cumsum(0)])
    col = torch.randint(0, 500, (int(crow[-1]),), generator=gen)
    row_ids, col_ids = torch.randperm(10**6, generator=gen)[:rows], torch.randint(0, 10**9, (500,), generator=gen)
    like = torch.empty(col.numel(), 4, dtype=dtype)
    ref = _C.keyed_edge_dropout_mask(like, crow, col, row_ids, col_ids, 0.6, 11, 3, 1)
    got = keyed_edge_dropout_mask(like.cuda(), crow.cuda(), col.cuda(), row_ids.cuda(), col_ids.cuda(), 0.6, 11, 3, 1)
    assert got.is_cuda and torch.equal(bits(got.cpu()), bits(ref))


@CUDA
def test_cuda_dropout_uses_the_device_and_matches_cpu():
    x = torch.randn(500, 16, dtype=torch.float64)
    ids = torch.arange(500) * 7919
    ref = keyed_dropout(x, ids, 0.25, seed=4, epoch=5, layer=6)
    out = keyed_dropout(x.cuda(), ids.cuda(), 0.25, seed=4, epoch=5, layer=6)
    assert out.is_cuda and torch.equal(bits(out.cpu()), bits(ref))


def losses_by_impl(rank, world_size, graph, cfgs):
    """Rank 0's losses per epoch for every configuration, with each mask implementation (the impl is
    read from the environment at every call, as a GPU run would read it)."""
    import os

    from netsparse_torch.run.training import Trainer

    out = {}
    for impl in ("cpp", "torch"):
        os.environ[IMPL_ENV] = impl
        for key, cfg in cfgs.items():
            out[impl, key] = [e["loss"] for e in Trainer(rank, world_size, graph, cfg).fit()["epochs"]]
    return out


def test_training_is_identical_with_either_impl(tmp_path):
    # The CPU twin of a CUDA run's dropout: GCN feature dropout and GAT attention dropout, trained
    # with the torch-ops masks, give exactly the losses of the C++ masks, at world sizes 1 and 2.
    from graphs import random_graph
    from hydra import compose, initialize_config_dir

    from netsparse_torch.config_check import config_dir
    from netsparse_torch.run.launch import launch

    graph = random_graph(n=90, m=400, features=6, classes=3)
    common = ["epochs=3", "seed=7", "hidden=8", "dropout=0.5", "strategy=sa", f"checkpoint_dir={tmp_path}"]
    with initialize_config_dir(config_dir(), version_base="1.3"):
        cfgs = {"gcn": compose("train", common),
                "gat": compose("train", [*common, "model=gat", "model.heads=2"])}
    for ws in (1, 2):
        got = launch(losses_by_impl, ws, (graph, cfgs), timeout_s=300)
        for key in cfgs:
            assert got["torch", key] == got["cpp", key], (ws, key)
            assert len(got["cpp", key]) == 3
