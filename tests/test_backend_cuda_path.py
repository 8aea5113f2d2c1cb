"""Which path the netsparse backend gives CUDA tensors (issue 25 point 2): NCCL when each rank has its
own GPU, gloo (host-staged) when ranks share one, never NCCL with two ranks on one GPU.

The decision is a pure function, tested on many layouts here. The routing and the host staging run
in CI through the backend's CPU twin (``NETSPARSE_BACKEND_CPU_TWIN``: every rank claims cuda:0 and CPU
tensors are routed as CUDA tensors); the same collectives on real CUDA tensors of two ranks sharing
cuda:0 run only where there is a GPU."""

import uuid
import warnings

import pytest
import torch
import torch.distributed as dist
from hypothesis import given, settings
from hypothesis import strategies as st

from netsparse_torch.backend import (
    GLOO,
    NCCL,
    NO_CUDA,
    NO_GPU,
    SHARED_GPU,
    TWIN_ENV,
    UNASSIGNED,
    collective_path,
    cuda_path,
    decide_cuda_path,
    gpu_uuid,
    resolve_devices,
    shared_gpu_warning,
    uuid_int,
)
from netsparse_torch.run.launch import launch

A, B = "node-a", "node-b"


@pytest.mark.parametrize("ranks, nccl, path, devices", [
    ([(A, NO_GPU, 0)], True, NO_CUDA, (-1,)),
    ([(A, NO_GPU, 0), (B, NO_GPU, 0)], True, NO_CUDA, (-1, -1)),
    ([(A, 0, 1)], True, NCCL, (0,)),  # one rank, one GPU
    ([(A, 0, 2), (A, 1, 2)], True, NCCL, (0, 1)),
    ([(A, 0, 2), (A, 1, 2)], False, GLOO, (0, 1)),  # a torch without NCCL
    ([(A, 0, 1), (A, 0, 1)], True, SHARED_GPU, (0, 0)),  # the H200 case
    ([(A, 0, 1), (B, 0, 1)], True, NCCL, (0, 0)),  # the same index on two hosts is two GPUs
    ([(A, 0, 1), (B, NO_GPU, 0)], True, GLOO, (0, -1)),  # a rank without a GPU
    ([(A, UNASSIGNED, 2)] * 2, True, NCCL, (0, 1)),  # local index modulo the device count
    ([(A, UNASSIGNED, 2)] * 4, True, SHARED_GPU, (0, 1, 0, 1)),  # more ranks than GPUs
    ([(A, UNASSIGNED, 1), (B, UNASSIGNED, 1), (A, UNASSIGNED, 1), (B, UNASSIGNED, 1)], True, SHARED_GPU,
     (0, 0, 0, 0)),  # interleaved hosts: the local index counts per host
    ([(A, UNASSIGNED, 2), (B, UNASSIGNED, 2), (A, UNASSIGNED, 2), (B, UNASSIGNED, 2)], True, NCCL, (0, 0, 1, 1)),
    ([(A, 1, 2), (A, UNASSIGNED, 2)], True, SHARED_GPU, (1, 1)),  # an explicit device wins; the other guesses
    ([(A, 3, 4), (A, 2, 4), (A, 3, 4)], False, SHARED_GPU, (3, 2, 3)),  # sharing is reported with or without NCCL
])
def test_decision(ranks, nccl, path, devices):
    plan = decide_cuda_path(ranks, nccl)
    assert (plan.path, plan.devices) == (path, devices)
    assert plan.reason


def test_shared_lists_every_shared_gpu_and_its_ranks():
    ranks = [(A, 0, 2), (A, 0, 2), (A, 1, 2), (B, 0, 1), (A, 1, 2), (B, 0, 1), (B, NO_GPU, 0)]
    plan = decide_cuda_path(ranks, True)
    assert plan.path == SHARED_GPU
    assert sorted(plan.shared) == [(A, 0, (0, 1)), (A, 1, (2, 4)), (B, 0, (3, 5))]
    assert "6 ranks share 3 GPU(s)" in plan.reason


def test_gloo_reason_names_the_ranks_without_gpu():
    plan = decide_cuda_path([(A, 0, 1), (B, NO_GPU, 0), (B, NO_GPU, 0)], True)
    assert plan.reason == "ranks 1, 2 have no CUDA device"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([A, B, "node-c"]), st.integers(-2, 3), st.integers(0, 4)),
                min_size=1, max_size=12),
       st.booleans())
def test_never_nccl_with_two_ranks_on_one_gpu(raw, nccl):
    # Any layout: a device index needs a device count above it; no GPU means no devices.
    ranks = [(h, NO_GPU, 0) if d == NO_GPU or c == 0 else (h, d if d < c else UNASSIGNED, c) for h, d, c in raw]
    plan = decide_cuda_path(ranks, nccl)
    gpus = [(h, d) for (h, _, _), d in zip(ranks, plan.devices, strict=True) if d != NO_GPU]
    duplicate = len(set(gpus)) < len(gpus)
    assert (plan.path == SHARED_GPU) == duplicate
    if plan.path == NCCL:
        assert nccl and len(gpus) == len(ranks)
    assert plan.devices == resolve_devices(ranks)
    assert all(0 <= d < c for (_, _, c), d in zip(ranks, plan.devices, strict=True) if d != NO_GPU)


def test_one_warning_line_per_sharing_host_from_its_lowest_sharing_rank():
    ranks = [(A, 0, 1), (A, 0, 1), (B, 0, 2), (B, 1, 2), (B, 1, 2), (B, 0, 2)]
    plan = decide_cuda_path(ranks, True)
    lines = {r: shared_gpu_warning(plan, r, ranks[r][0], f"host-{ranks[r][0]}") for r in range(len(ranks))}
    assert [r for r, line in lines.items() if line] == [0, 2]
    assert lines[0] == ("netsparse: on host host-node-a, ranks 0, 1 share cuda:0: CUDA collectives go through gloo "
                        "(host-staged) instead of NCCL; give each rank its own GPU for NCCL")
    assert "ranks 2, 5 share cuda:0; ranks 3, 4 share cuda:1:" in lines[2]
    assert "\n" not in lines[2]
    # A host whose ranks have their own GPUs prints nothing, although the group goes through gloo.
    mixed = [(A, 0, 1), (A, 0, 1), (B, 0, 2), (B, 1, 2)]
    plan = decide_cuda_path(mixed, True)
    assert plan.path == SHARED_GPU
    assert [r for r in range(4) if shared_gpu_warning(plan, r, mixed[r][0], "h")] == [0]
    assert shared_gpu_warning(decide_cuda_path([(A, 0, 2), (A, 1, 2)], True), 0, A, "h") is None


# -- the GPU's identity is its UUID: CUDA_VISIBLE_DEVICES-style layouts, simulated -----------------------
#: Each host's GPUs in NVML order, as UUID strings ("GPU-" + 8-4-4-4-12 hex).
PHYSICAL = {host: [f"GPU-{uuid.UUID(int=(h << 8) + i)}" for i in range(4)] for h, host in enumerate((A, B), 1)}


def rank_view(host: str, visible: str | None, local_rank: int | None) -> tuple[tuple[str, int, int], int]:
    """What a rank reports, ``((host, device, device_count), uuid)``, when its environment has
    ``CUDA_VISIBLE_DEVICES=visible`` (indices or UUIDs; None: every GPU) and ``LOCAL_RANK=local_rank``
    (None: unset, the device left UNASSIGNED). The device's UUID is the one of the physical GPU that
    the rank's index names among the GPUs it sees."""
    physical = PHYSICAL[host]
    seen = physical if visible is None else [
        physical[int(v)] if v.isdigit() else v for v in visible.split(",")]
    device = UNASSIGNED if local_rank is None else local_rank % len(seen)
    return (host, device, len(seen)), 0 if device == UNASSIGNED else uuid_int(seen[device])


def decide(views, nccl=True):
    ranks, uuids = zip(*views, strict=True)
    return decide_cuda_path(list(ranks), nccl, list(uuids))


def test_one_gpu_per_rank_seen_as_cuda0_is_nccl():
    # SLURM or Kubernetes: each rank sees only its own GPU, as cuda:0. By index every rank of a host
    # would share cuda:0 (and fall back to gloo); by UUID each has its own GPU.
    views = [rank_view(h, str(i), 0) for h in (A, B) for i in range(4)]
    plan = decide(views)
    assert (plan.path, plan.devices, plan.shared) == (NCCL, (0,) * 8, ())


def test_the_same_gpu_under_two_indices_is_shared():
    # CUDA_VISIBLE_DEVICES=1,0 makes physical GPU 1 cuda:0 of rank 0; rank 1 sees it as cuda:1.
    plan = decide([rank_view(A, "1,0", 0), rank_view(A, "0,1", 1)])
    assert plan.path == SHARED_GPU and plan.shared == ((A, 0, (0, 1)),)
    assert plan.devices == (0, 1)


def test_visible_devices_by_uuid_and_by_index_name_the_same_gpu():
    by_uuid = rank_view(A, f"{PHYSICAL[A][2]},{PHYSICAL[A][3]}", 0)
    assert decide([by_uuid, rank_view(A, "2", 0)]).path == SHARED_GPU
    assert decide([by_uuid, rank_view(A, "3", 0)]).path == NCCL
    assert decide([rank_view(A, str(i), 0) for i in range(4)], nccl=False).path == GLOO


def test_without_uuids_the_host_and_index_decide():
    assert decide([((A, 0, 1), 0), ((A, 0, 1), 0)]).path == SHARED_GPU
    assert decide([((A, 0, 1), 0), ((B, 0, 1), 0)]).path == NCCL
    # One known UUID is not enough to tell two ranks apart: index and host still share.
    assert decide([((A, 0, 1), uuid_int(PHYSICAL[A][0])), ((A, 0, 1), 0)]).path == SHARED_GPU


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([A, B]), st.sets(st.integers(0, 3), min_size=1, max_size=4),
                          st.integers(0, 7)), min_size=1, max_size=8))
def test_nccl_exactly_when_no_two_ranks_see_one_physical_gpu(raw):
    views = [rank_view(host, ",".join(map(str, sorted(vis))), local) for host, vis, local in raw]
    physical = [(host, sorted(vis)[local % len(vis)]) for host, vis, local in raw]
    plan = decide(views)
    assert (plan.path == NCCL) == (len(set(physical)) == len(physical))
    assert plan.path in (NCCL, SHARED_GPU)


def test_uuid_strings_as_cuda_and_nvml_write_them():
    text = "9e0e5a3c-2d4b-4f8e-8a61-0c7b5d3e2f10"
    assert uuid_int(text) == uuid_int("GPU-" + text) == uuid.UUID(text).int
    assert uuid_int("MIG-GPU-1/2/3") == uuid_int(None) == uuid_int("0") == 0


def test_gpu_uuid_reads_nvml_through_visible_devices_without_initialising_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "_raw_device_uuid_nvml", lambda: PHYSICAL[A])
    monkeypatch.setattr(torch.cuda, "_get_nvml_device_index", lambda d: [3, 1][d])  # CUDA_VISIBLE_DEVICES=3,1
    assert gpu_uuid(1) == uuid_int(PHYSICAL[A][1]) and gpu_uuid(0) == uuid_int(PHYSICAL[A][3])
    assert gpu_uuid(NO_GPU) == 0

    def no_nvml():
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    monkeypatch.setattr(torch.cuda, "_raw_device_uuid_nvml", no_nvml)
    assert gpu_uuid(0) == 0  # unknown: the host and index decide


def test_cuda_path_needs_a_netsparse_group():
    with pytest.raises(ValueError, match="not a netsparse process group"):
        cuda_path(object())


def collectives(rank, world_size, device, own_group=False):
    """Every collective the package uses, and a DDP step, on ``device`` tensors; returns what each rank
    saw. ``own_group``: on a process group created after ``torch.cuda.set_device(device)``, so that
    the backend knows both ranks use that GPU whatever the machine's GPU count."""
    group = None
    if own_group:
        if torch.device(device).type == "cuda":
            torch.cuda.set_device(device)
        group = dist.new_group(list(range(world_size)), backend="netsparse")
    seen = {}
    t = torch.full((4,), float(rank + 1), device=device)
    dist.all_reduce(t, group=group)
    seen["all_reduce"] = t.tolist()
    pair = [torch.full((2,), float(rank), device=device), torch.full((1,), 10.0 * rank, device=device)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated in torch, still a backend method
        dist.all_reduce_coalesced(pair, group=group)
    seen["all_reduce_coalesced"] = [x.tolist() for x in pair]
    split_in, split_out = ([1, 2], [1, 3]) if rank == 0 else ([3, 1], [2, 1])  # uneven, as the strategies send
    out = torch.empty(sum(split_out), device=device)
    dist.all_to_all_single(out, torch.arange(float(sum(split_in)), device=device) + 10 * rank, split_out, split_in,
                           group=group)
    seen["all_to_all_single"] = out.tolist()
    # The list forms of reduce_scatter and all_to_all: gloo takes them on CPU tensors only.
    mine = torch.empty(2, device=device)
    dist.reduce_scatter(mine, [torch.full((2,), rank + 1.0 + i, device=device) for i in range(world_size)],
                        group=group)
    seen["reduce_scatter"] = mine.tolist()
    outs = [torch.empty(2, device=device) for _ in range(world_size)]
    dist.all_to_all(outs, [torch.full((2,), 10.0 * rank + i, device=device) for i in range(world_size)], group=group)
    seen["all_to_all"] = [o.tolist() for o in outs]
    parts = [torch.empty(2, device=device) for _ in range(world_size)]
    dist.all_gather(parts, torch.full((2,), float(rank), device=device), group=group)
    seen["all_gather"] = [p.tolist() for p in parts]
    b = torch.full((3,), float(rank), device=device)
    dist.broadcast(b, src=1, group=group)
    seen["broadcast"] = b.tolist()
    dist.barrier(group=group)
    objs = [None] * world_size
    dist.all_gather_object(objs, {"rank": rank}, group=group)
    seen["all_gather_object"] = objs
    # Point to point as dense shifting does it: both ranks post a send and a receive at once.
    peer = 1 - rank
    got = torch.zeros(3, device=device)
    works = [dist.isend(torch.arange(3.0, device=device) * (rank + 1), peer, group=group),
             dist.irecv(got, peer, group=group)]
    for w in works:
        w.wait()
    seen["isend_irecv"] = got.tolist()
    if rank == 0:
        dist.send(torch.tensor([7.0, 8.0], device=device), 1, group=group)
    else:
        r = torch.zeros(2, device=device)
        dist.recv(r, 0, group=group)
        seen["send_recv"] = r.tolist()
    seen["ddp_in_sync"] = ddp_step(rank, world_size, device, group)
    seen["devices"] = sorted({str(x.device) for x in (t, out, b, got)})
    seen["path"] = collective_path(group)
    everyone = [None] * world_size
    dist.all_gather_object(everyone, seen, group=group)
    return everyone


def ddp_step(rank, world_size, device, group) -> bool:
    """Two DDP steps from different inputs: the replicas stay equal (its broadcast and allreduces)."""
    torch.manual_seed(rank)  # different initial weights: DDP's first broadcast must fix them
    model = torch.nn.Linear(4, 3).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[torch.device(device).index] if torch.device(device).type == "cuda" else None,
        process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        ddp(torch.randn(8, 4, device=device)).pow(2).mean().backward()
        opt.step()
    weights = [torch.empty_like(model.weight) for _ in range(world_size)]
    dist.all_gather(weights, model.weight.detach(), group=group)
    return all(torch.equal(w, weights[0]) for w in weights)


EXPECTED = [
    {"all_reduce": [3.0] * 4, "all_to_all_single": [0.0, 10.0, 11.0, 12.0], "isend_irecv": [0.0, 2.0, 4.0],
     "reduce_scatter": [3.0, 3.0], "all_to_all": [[0.0, 0.0], [10.0, 10.0]]},
    {"all_reduce": [3.0] * 4, "all_to_all_single": [1.0, 2.0, 13.0], "isend_irecv": [0.0, 1.0, 2.0],
     "send_recv": [7.0, 8.0], "reduce_scatter": [5.0, 5.0], "all_to_all": [[1.0, 1.0], [11.0, 11.0]]},
]


def check(seen):
    for rank, mine in enumerate(seen):
        for key, value in EXPECTED[rank].items():
            assert mine[key] == value, (rank, key)
        assert mine["all_gather"] == [[0.0, 0.0], [1.0, 1.0]]
        assert mine["broadcast"] == [1.0] * 3
        assert mine["all_gather_object"] == [{"rank": 0}, {"rank": 1}]
        assert mine["ddp_in_sync"]
        assert mine["all_reduce_coalesced"] == [[1.0, 1.0], [10.0]]
        assert mine["path"]["cuda"] == SHARED_GPU
        assert mine["path"]["cuda_device"] == 0 and mine["path"]["shares_gpu_with"] == [1 - rank]


@pytest.mark.parametrize("own_group", [False, True], ids=["default-group", "new-group"])
def test_cpu_twin_of_two_ranks_sharing_a_gpu(monkeypatch, own_group):
    monkeypatch.setenv(TWIN_ENV, "1")
    seen = launch(collectives, 2, ("cpu", own_group), timeout_s=120)
    check(seen)
    # all_reduce_coalesced, the list forms of reduce_scatter and all_to_all, sends and receives were
    # staged by the backend (rank 0: isend, irecv, send; rank 1: isend, irecv, recv); everything else
    # went to gloo as it is.
    for mine in seen:
        assert mine["path"]["device_calls"]["host-staged"] == 6
        assert mine["path"]["device_calls"]["gloo"] >= 6
        assert "nccl" not in mine["path"]["device_calls"]


def plain(rank, world_size):
    return collective_path()


def test_cpu_machine_has_no_cuda_path():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the path depends on it")
    path = launch(plain, 2)
    assert path == {"cuda": NO_CUDA, "cuda_device": NO_GPU, "shares_gpu_with": [],
                    "reason": "no rank has a CUDA device", "device_calls": {}}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_two_ranks_share_cuda0_through_gloo(monkeypatch):
    # Both ranks on cuda:0, as on a one-GPU machine: NCCL would fail with "Duplicate GPU detected";
    # the backend routes every collective through gloo instead.
    monkeypatch.delenv(TWIN_ENV, raising=False)
    seen = launch(collectives, 2, ("cuda:0", True), timeout_s=300)
    check(seen)
    for mine in seen:
        assert mine["devices"] == ["cuda:0"]
        assert "nccl" not in mine["path"]["device_calls"]
        assert mine["path"]["device_calls"]["host-staged"] == 6
