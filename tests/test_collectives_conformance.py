"""The netsparse backend is a drop-in for gloo: every call of torch.distributed's
API, at 2 ranks, gives the same results under netsparse as under gloo, and the expected values.

One launch runs the whole API twice, on a gloo group and on the netsparse default group, so that both
see the same calls in the same process. Where gloo itself lacks a call (``GLOO_LACKS``), netsparse
implements it from what gloo has: there only the expected value is checked, and gloo is checked to
still lack it (so the list stays true). Every netsparse call is counted in ``comm_stats()``."""

import datetime
import warnings

import pytest
import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

import netsparse_torch
from netsparse_torch.backend import TWIN_ENV, collective_path, monitored_barrier
from netsparse_torch.run.launch import launch

#: torch 2.13's name for all_gather_into_tensor; a GPU machine's torch 2.11 has only the old one.
GATHER_SINGLE = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

WS = 2
OPS = {"sum": ReduceOp.SUM, "product": ReduceOp.PRODUCT, "min": ReduceOp.MIN, "max": ReduceOp.MAX}
INT_OPS = {"band": ReduceOp.BAND, "bor": ReduceOp.BOR, "bxor": ReduceOp.BXOR}


def _l(t):
    return t.tolist() if isinstance(t, torch.Tensor) else [_l(x) for x in t]


def reduce_ops(g, r, dev):
    out = {}
    for name, op in OPS.items():
        t = torch.tensor([r + 1.0, r + 2.0], device=dev)
        dist.all_reduce(t, op=op, group=g)
        out[name] = t.tolist()
    for name, op in INT_OPS.items():
        t = torch.tensor([r + 5, 12], dtype=torch.int64, device=dev)
        dist.all_reduce(t, op=op, group=g)
        out[name] = t.tolist()
    return out


def all_reduce_avg(g, r, dev):
    t = torch.tensor([r * 2.0, 4.0], device=dev)
    dist.all_reduce(t, op=ReduceOp.AVG, group=g)
    return t.tolist()


def all_reduce_dtypes(g, r, dev):
    out = {}
    for dtype in (torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32, torch.uint8):
        t = torch.tensor([r + 1, 3], dtype=dtype, device=dev)
        dist.all_reduce(t, group=g)
        out[str(dtype)] = t.tolist()
    c = torch.tensor([1 + 1j * r], device=dev)
    dist.all_reduce(c, group=g)
    out["complex"] = [c.real.tolist(), c.imag.tolist()]
    return out


def all_reduce_async(g, r, dev):
    t = torch.full((3,), r + 1.0, device=dev)
    work = dist.all_reduce(t, group=g, async_op=True)
    work.wait()
    return t.tolist()


def all_reduce_coalesced(g, r, dev):
    pair = [torch.full((2,), float(r), device=dev), torch.full((1,), 10.0 * r, device=dev)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated in torch, still a backend method
        dist.all_reduce_coalesced(pair, group=g)
    return _l(pair)


def broadcast(g, r, dev):
    t = torch.full((3,), float(r), device=dev)
    dist.broadcast(t, src=1, group=g)
    return t.tolist()


def all_gather(g, r, dev):
    parts = [torch.empty(2, device=dev) for _ in range(WS)]
    dist.all_gather(parts, torch.full((2,), float(r), device=dev), group=g)
    return _l(parts)


def all_gather_into_tensor(g, r, dev):
    x = torch.tensor([r * 10.0, r * 10.0 + 1], device=dev)
    cat, base = torch.empty(2 * WS, device=dev), torch.empty(2 * WS, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated names of all_gather_single
        dist.all_gather_into_tensor(cat, x, group=g)
        dist._all_gather_base(base, x, group=g)
    single = torch.empty(2 * WS, dtype=torch.int64, device=dev)
    work = GATHER_SINGLE(single, torch.tensor([r, 7], device=dev), group=g, async_op=True)
    work.wait()
    rows = torch.empty(2 * WS, 3, device=dev)  # 2-D: concatenated along the first dimension
    GATHER_SINGLE(rows, torch.full((2, 3), float(r), device=dev), group=g)
    return {"cat": cat.tolist(), "base": base.tolist(), "single": single.tolist(), "rows": rows.tolist()}


def all_gather_into_tensor_stacked(g, r, dev):
    """The stacked form ``[world, *shape]`` (torch documents both; FSDP uses the flat one)."""
    stack = torch.empty(WS, 2, device=dev)
    GATHER_SINGLE(stack, torch.tensor([r * 10.0, r * 10.0 + 1], device=dev), group=g)
    strided = torch.empty(2, WS, device=dev).t()  # a non-contiguous output
    GATHER_SINGLE(strided, torch.tensor([r + 0.5, r + 1.5], device=dev), group=g)
    return {"stack": stack.tolist(), "strided": strided.tolist()}


def all_gather_coalesced(g, r, dev):
    inputs = [torch.full((2,), float(r), device=dev), torch.full((1,), r + 5.0, device=dev)]
    outputs = [[torch.empty_like(t) for t in inputs] for _ in range(WS)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        dist.all_gather_coalesced(outputs, inputs, group=g)
    return _l(outputs)


def reduce_scatter(g, r, dev):
    out = torch.empty(2, device=dev)
    dist.reduce_scatter(out, [torch.full((2,), r + 1.0 + i, device=dev) for i in range(WS)], group=g)
    return out.tolist()


def reduce_scatter_tensor(g, r, dev):
    x = torch.arange(4.0, device=dev) + r
    cat, base = torch.empty(2, device=dev), torch.empty(2, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        dist.reduce_scatter_tensor(cat, x, group=g)
        dist._reduce_scatter_base(base, x, group=g)
    mx = torch.empty(2, device=dev)
    dist.reduce_scatter_single(mx, x * (1 - 2 * r), op=ReduceOp.MAX, group=g)
    avg = torch.empty(2, device=dev)
    dist.reduce_scatter_single(avg, x, op=ReduceOp.AVG, group=g, async_op=True).wait()  # FSDP's call
    return {"cat": cat.tolist(), "base": base.tolist(), "max": mx.tolist(), "avg": avg.tolist()}


def reduce_scatter_tensor_stacked(g, r, dev):
    stack = torch.empty(2, device=dev)
    dist.reduce_scatter_single(stack, (torch.arange(4.0, device=dev) + r).view(WS, 2), group=g)
    return stack.tolist()


def coalescing_manager(g, r, dev):
    """The coalesced calls FSDP and torch's own tests make (all_reduce, all-gather, reduce-scatter)."""
    ar = [torch.full((2,), r + 1.0, device=dev), torch.full((1,), 3.0, device=dev)]
    with dist._coalescing_manager(group=g):
        for t in ar:
            dist.all_reduce(t, group=g)
    ag = [torch.empty(2 * WS, device=dev), torch.empty(WS, device=dev)]
    with dist._coalescing_manager(group=g, async_ops=True) as cm:
        GATHER_SINGLE(ag[0], torch.full((2,), float(r), device=dev), group=g)
        GATHER_SINGLE(ag[1], torch.full((1,), r + 4.0, device=dev), group=g)
    cm.wait()
    rs = [torch.empty(2, device=dev), torch.empty(1, device=dev)]
    with dist._coalescing_manager(group=g):
        dist.reduce_scatter_single(rs[0], torch.arange(4.0, device=dev) + r, group=g)
        dist.reduce_scatter_single(rs[1], torch.tensor([r, 1.0], device=dev), group=g)
    return {"all_reduce": _l(ar), "all_gather": _l(ag), "reduce_scatter": _l(rs)}


def reduce(g, r, dev):
    t = torch.tensor([r + 1.0, 2.0], device=dev)
    dist.reduce(t, dst=0, group=g, op=ReduceOp.MAX)
    return t.tolist() if r == 0 else None  # only the destination's tensor is defined


def gather(g, r, dev):
    parts = [torch.empty(2, device=dev) for _ in range(WS)] if r == 1 else None
    dist.gather(torch.full((2,), r + 3.0, device=dev), parts, dst=1, group=g)
    return _l(parts) if r == 1 else None


def scatter(g, r, dev):
    out = torch.empty(2, device=dev)
    chunks = [torch.full((2,), 20.0 + i, device=dev) for i in range(WS)] if r == 0 else None
    dist.scatter(out, chunks, src=0, group=g)
    return out.tolist()


def all_to_all(g, r, dev):
    ins = [torch.full((2,), 10.0 * r + i, device=dev) for i in range(WS)]
    outs = [torch.empty(2, device=dev) for _ in range(WS)]
    dist.all_to_all(outs, ins, group=g)
    even = torch.empty(4, device=dev)
    dist.all_to_all_single(even, torch.arange(4.0, device=dev) + 10 * r, group=g)
    split_in, split_out = ([1, 2], [1, 3]) if r == 0 else ([3, 1], [2, 1])
    uneven = torch.empty(sum(split_out), device=dev)
    dist.all_to_all_single(uneven, torch.arange(float(sum(split_in)), device=dev) + 10 * r, split_out, split_in,
                           group=g)
    return {"list": _l(outs), "even": even.tolist(), "uneven": uneven.tolist()}


def point_to_point(g, r, dev):
    peer = 1 - r
    out = {}
    if r == 0:
        dist.send(torch.tensor([7.0, 8.0], device=dev), 1, group=g)
    else:
        t = torch.zeros(2, device=dev)
        dist.recv(t, 0, group=g)
        out["send_recv"] = t.tolist()
    got = torch.zeros(3, device=dev)
    works = [dist.isend(torch.arange(3.0, device=dev) * (r + 1), peer, group=g), dist.irecv(got, peer, group=g)]
    for w in works:
        w.wait()
    out["isend_irecv"] = got.tolist()
    batch = torch.zeros(2, device=dev)
    ops = [dist.P2POp(dist.isend, torch.full((2,), r + 0.5, device=dev), peer, group=g),
           dist.P2POp(dist.irecv, batch, peer, group=g)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    out["batch_isend_irecv"] = batch.tolist()
    if r == 1:
        dist.send(torch.tensor([5.0], device=dev), 0, group=g)
    else:
        anyone = torch.zeros(1, device=dev)
        sender = dist.recv(anyone, group=g)  # src=None: any source; returns who sent
        out["recv_any_source"] = [anyone.tolist(), sender]
    return out


def barriers(g, r, dev):
    dist.barrier(group=g)
    if dist.get_backend(g) == "gloo":
        dist.monitored_barrier(group=g, timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)
    else:  # torch's dist.monitored_barrier refuses every backend but gloo: the backend's own runs gloo's
        monitored_barrier(group=g, timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)
    return "passed"


def object_collectives(g, r, dev):
    out = {}
    objs = [{"from": r}, [r]] if r == 1 else [None, None]
    dist.broadcast_object_list(objs, src=1, group=g)
    out["broadcast_object_list"] = objs
    gathered = [None] * WS
    dist.all_gather_object(gathered, ("rank", r), group=g)
    out["all_gather_object"] = gathered
    at_dst = [None] * WS if r == 0 else None
    dist.gather_object({"r": r}, at_dst, dst=0, group=g)
    out["gather_object"] = at_dst
    got = [None]
    dist.scatter_object_list(got, [f"to {i}" for i in range(WS)] if r == 1 else None, src=1, group=g)
    out["scatter_object_list"] = got
    box = [f"hello from {r}"] if r == 0 else [None]
    if r == 0:
        dist.send_object_list(box, dst=1, group=g)
    else:
        dist.recv_object_list(box, src=0, group=g)
    out["send_recv_object_list"] = box
    return out


def subgroups(g, r, dev):
    backend = dist.get_backend(g)
    pair = dist.new_group([0, 1], backend=backend)
    alone = dist.new_group([1], backend=backend)
    t = torch.full((2,), r + 1.0, device=dev)
    dist.all_reduce(t, group=pair)
    mine = torch.full((1,), 9.0, device=dev)
    if r == 1:
        dist.all_reduce(mine, group=alone)
    return {"pair": t.tolist(), "alone": mine.tolist(), "same backend": dist.get_backend(pair) == backend}


def ddp(g, r, dev):
    torch.manual_seed(r)  # different initial weights: DDP's first broadcast must make them equal
    model = torch.nn.Linear(4, 3).to(dev)
    wrapped = torch.nn.parallel.DistributedDataParallel(model, process_group=g)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + r)
    for _ in range(2):
        opt.zero_grad()
        wrapped(torch.randn(8, 4, generator=gen).to(dev)).pow(2).mean().backward()
        opt.step()
    return [round(x, 5) for x in model.weight.detach().flatten().tolist()]


def functional(g, r, dev):
    """torch.distributed's functional collectives (what torch.compile and DTensor call)."""
    import torch.distributed._functional_collectives as fc

    group = g or dist.group.WORLD
    summed = fc.all_reduce(torch.full((2,), r + 1.0, device=dev), "sum", group)
    gathered = getattr(fc, "all_gather_single", None) or fc.all_gather_tensor
    gathered = gathered(torch.full((1,), float(r), device=dev), 0, group)
    return {"all_reduce": fc.wait_tensor(summed).tolist(), "all_gather": fc.wait_tensor(gathered).tolist()}


CALLS = [reduce_ops, all_reduce_avg, all_reduce_dtypes, all_reduce_async, all_reduce_coalesced, broadcast,
         all_gather, all_gather_into_tensor, all_gather_into_tensor_stacked, all_gather_coalesced, reduce_scatter,
         reduce_scatter_tensor, reduce_scatter_tensor_stacked, coalescing_manager, functional, reduce, gather,
         scatter, all_to_all, point_to_point, barriers, object_collectives, subgroups, ddp]

#: Calls that gloo itself refuses in torch 2.13 (gloo's own error): the stacked ``[world, *shape]`` forms.
GLOO_LACKS = {"all_gather_into_tensor_stacked", "reduce_scatter_tensor_stacked"}
if torch.torch_version.TorchVersion(torch.__version__) < "2.13":
    GLOO_LACKS.add("all_to_all")  # gloo's list form came with torch 2.13 (netsparse's does not need it)


def run_api(g, r, dev) -> dict:
    """Every call on group ``g``; a call that raises records its error (the same on both ranks, before
    any message moves, so later calls stay paired)."""
    seen = {}
    for call in CALLS:
        try:
            seen[call.__name__] = call(g, r, dev)
        except Exception as exc:  # noqa: BLE001 (recorded and compared: the test fails on it)
            seen[call.__name__] = f"error: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
    return seen


def conformance(rank, world_size, device, with_gloo=True):
    under_gloo = run_api(dist.new_group(list(range(world_size)), backend="gloo"), rank, device) if with_gloo else {}
    netsparse_torch.reset_comm_stats()
    under_netsparse = run_api(None, rank, device)
    seen = (under_gloo, under_netsparse, netsparse_torch.comm_stats(), collective_path())
    everyone = [None] * world_size
    dist.all_gather_object(everyone, seen)
    return everyone


EXPECTED_BOTH = {
    "reduce_ops": {"sum": [3.0, 5.0], "product": [2.0, 6.0], "min": [1.0, 2.0], "max": [2.0, 3.0],
                   "band": [4, 12], "bor": [7, 12], "bxor": [3, 0]},
    "all_reduce_avg": [1.0, 4.0],
    "all_reduce_dtypes": {**{str(d): [3, 6] for d in (torch.bfloat16, torch.float16, torch.float64, torch.int64,
                                                      torch.int32, torch.uint8)}, "complex": [[2.0], [1.0]]},
    "all_reduce_async": [3.0] * 3,
    "all_reduce_coalesced": [[1.0, 1.0], [10.0]],
    "broadcast": [1.0] * 3,
    "all_gather": [[0.0, 0.0], [1.0, 1.0]],
    "all_gather_into_tensor": {"cat": [0.0, 1.0, 10.0, 11.0], "base": [0.0, 1.0, 10.0, 11.0],
                               "single": [0, 7, 1, 7], "rows": [[0.0] * 3] * 2 + [[1.0] * 3] * 2},
    "all_gather_into_tensor_stacked": {"stack": [[0.0, 1.0], [10.0, 11.0]], "strided": [[0.5, 1.5], [1.5, 2.5]]},
    "all_gather_coalesced": [[[0.0, 0.0], [5.0]], [[1.0, 1.0], [6.0]]],
    "functional": {"all_reduce": [3.0, 3.0], "all_gather": [0.0, 1.0]},
    "barriers": "passed",
    "subgroups": {"pair": [3.0, 3.0], "alone": [9.0], "same backend": True},
}
EXPECTED_RANK = [
    {"reduce_scatter": [3.0, 3.0],
     "reduce_scatter_tensor": {"cat": [1.0, 3.0], "base": [1.0, 3.0], "max": [0.0, 1.0], "avg": [0.5, 1.5]},
     "reduce_scatter_tensor_stacked": [1.0, 3.0],
     "coalescing_manager": {"all_reduce": [[3.0, 3.0], [6.0]], "all_gather": [[0.0, 0.0, 1.0, 1.0], [4.0, 5.0]],
                            "reduce_scatter": [[1.0, 3.0], [1.0]]},
     "reduce": [2.0, 2.0], "gather": None, "scatter": [20.0, 20.0],
     "all_to_all": {"list": [[0.0, 0.0], [10.0, 10.0]], "even": [0.0, 1.0, 10.0, 11.0],
                    "uneven": [0.0, 10.0, 11.0, 12.0]},
     "point_to_point": {"isend_irecv": [0.0, 2.0, 4.0], "batch_isend_irecv": [1.5, 1.5], "recv_any_source": [[5.0], 1]},
     "object_collectives": {"broadcast_object_list": [{"from": 1}, [1]],
                            "all_gather_object": [("rank", 0), ("rank", 1)],
                            "gather_object": [{"r": 0}, {"r": 1}], "scatter_object_list": ["to 0"],
                            "send_recv_object_list": ["hello from 0"]}},
    {"reduce_scatter": [5.0, 5.0],
     "reduce_scatter_tensor": {"cat": [5.0, 7.0], "base": [5.0, 7.0], "max": [2.0, 3.0], "avg": [2.5, 3.5]},
     "reduce_scatter_tensor_stacked": [5.0, 7.0],
     "coalescing_manager": {"all_reduce": [[3.0, 3.0], [6.0]], "all_gather": [[0.0, 0.0, 1.0, 1.0], [4.0, 5.0]],
                            "reduce_scatter": [[5.0, 7.0], [2.0]]},
     "reduce": None, "gather": [[3.0, 3.0], [4.0, 4.0]], "scatter": [21.0, 21.0],
     "all_to_all": {"list": [[1.0, 1.0], [11.0, 11.0]], "even": [2.0, 3.0, 12.0, 13.0], "uneven": [1.0, 2.0, 13.0]},
     "point_to_point": {"send_recv": [7.0, 8.0], "isend_irecv": [0.0, 1.0, 2.0], "batch_isend_irecv": [0.5, 0.5]},
     "object_collectives": {"broadcast_object_list": [{"from": 1}, [1]],
                            "all_gather_object": [("rank", 0), ("rank", 1)],
                            "gather_object": None, "scatter_object_list": ["to 1"],
                            "send_recv_object_list": ["hello from 0"]}},
]


def check_expected(everyone):
    """Every call gave its expected value on every rank (DDP: the replicas are equal)."""
    assert {c.__name__ for c in CALLS} == set(EXPECTED_BOTH) | set(EXPECTED_RANK[0]) | {"ddp"}
    for rank, (_, seen, _, _) in enumerate(everyone):
        for name, value in {**EXPECTED_BOTH, **EXPECTED_RANK[rank]}.items():
            assert seen[name] == value, f"rank {rank}, {name}: {seen[name]}"
    assert everyone[0][1]["ddp"] == everyone[1][1]["ddp"]


@pytest.fixture(scope="module")
def on_cpu():
    return launch(conformance, WS, ("cpu",), timeout_s=60)


def test_every_call_gives_the_expected_values(on_cpu):
    check_expected(on_cpu)


def test_same_results_as_gloo(on_cpu):
    for rank, (gloo, netsparse, _, _) in enumerate(on_cpu):
        for name in gloo.keys() - GLOO_LACKS:
            assert gloo[name] == netsparse[name], f"rank {rank}, {name}: gloo {gloo[name]}, netsparse {netsparse[name]}"
        for name in GLOO_LACKS:  # netsparse does more than gloo here; if gloo learns them, drop them from the list
            assert str(gloo[name]).startswith("error: RuntimeError"), (rank, name, gloo[name])


def test_every_call_is_counted(on_cpu):
    for _, _, stats, _ in on_cpu:
        assert {"allreduce", "broadcast", "allgather", "reduce_scatter", "reduce", "gather", "scatter", "alltoall",
                "send", "recv", "barrier"} <= stats.keys()
        # cat, base, max, avg, stacked, 2 coalesced, the list form; input bytes: 16 each, 8 + 8 in the list form
        assert stats["reduce_scatter"] == {"calls": 8, "bytes": 7 * 16 + 8}


def test_cpu_twin_of_the_shared_gpu_path(monkeypatch):
    """CPU tensors routed as CUDA tensors of two ranks sharing a GPU: host staging included."""
    monkeypatch.setenv(TWIN_ENV, "1")
    everyone = launch(conformance, WS, ("cpu", False), timeout_s=60)
    check_expected(everyone)
    for _, _, _, path in everyone:
        assert path["device_calls"]["host-staged"] > 10


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_tensors_on_a_shared_gpu(monkeypatch):
    monkeypatch.delenv(TWIN_ENV, raising=False)
    everyone = launch(conformance, WS, ("cuda:0", False), timeout_s=300)
    check_expected(everyone)


def monitored_barrier_misses_a_rank(rank, world_size):
    if rank == 1:
        return None  # never arrives
    try:
        monitored_barrier(timeout=1.0)
    except RuntimeError as exc:
        return str(exc)
    return "no error"


def test_monitored_barrier_names_the_rank_that_did_not_arrive():
    message = launch(monitored_barrier_misses_a_rank, WS, timeout_s=30)
    assert "Rank 1 failed to pass monitoredBarrier" in message, message
