"""The ``netsparse`` torch.distributed backend.

Importing ``netsparse_torch.backend`` registers it (``import netsparse_torch`` alone stays torch-free and
does not), so ``dist.init_process_group("netsparse")`` works in any script. It wraps gloo (and nccl for
CUDA tensors when each rank has its own GPU), forwards every standard collective and counts calls and
bytes per collective in this process (:func:`comm_stats`). ``bytes`` is what this rank hands to the
collective as input: the tensors it contributes, not what it receives.

**Which path CUDA tensors take** is decided once per process group, when it is created, by every rank
together (:func:`decide_cuda_path`; the answer is :func:`cuda_path` / :func:`collective_path`):

- ``"nccl"``: every rank has its own GPU and torch has NCCL.
- ``"gloo-shared-gpu"``: two or more ranks use the same GPU. NCCL refuses that
  (``ncclInvalidUsage ... Duplicate GPU detected``), so NCCL is never created and CUDA tensors go
  through gloo, staged through host memory. This is how every multi-rank CUDA path runs on a machine
  with one GPU. The lowest rank of each such host prints one line saying so (once per process).
- ``"gloo"``: GPUs, but NCCL is missing or some rank has none: gloo, host-staged, as well.
- ``"none"``: no rank has a GPU.

A rank's GPU is ``torch.cuda.current_device()`` when CUDA is initialised (call
``torch.cuda.set_device`` before ``init_process_group``), else ``LOCAL_RANK`` modulo the device count,
else its index among the ranks of its host modulo the device count. Two ranks share a GPU when their
devices have the same UUID: under SLURM or Kubernetes each rank often sees only its own GPU, as
``cuda:0``, so the device index says nothing (and ``CUDA_VISIBLE_DEVICES=1,0`` makes ``cuda:1`` of one
rank ``cuda:0`` of another). Where a UUID cannot be read, (host, device index) stands in for it.

gloo stages CUDA tensors itself for allreduce, reduce, broadcast, allgather, gather, scatter and
all_to_all_single (pinned copies on side streams). It hands raw pointers to its transport for send and
recv, and allreduce_coalesced, allgather_coalesced, the single-tensor all-gather and reduce-scatter and
the list forms of reduce_scatter and all_to_all are CPU only, so for those the backend copies to host
memory, runs gloo on the copies and copies the results back when the work is waited on.

**Every collective of torch.distributed** works as under gloo, counted (a test runs the whole API at
2 ranks against gloo: tests/test_collectives_conformance.py), and some that gloo lacks: the stacked
``[world, *shape]`` forms of ``all_gather_into_tensor`` / ``reduce_scatter_tensor`` (gloo takes only
the concatenated form, which is what the backend hands it). torch 2.13 calls these two and their
coalesced forms by new names (``all_gather_single``, ``reduce_scatter_single``), and functional
collectives look the group up by ``group_name``; the C++ defaults of all of those look for a backend
registered on the group, which a Python process group has none of, so the class defines them.

``dist.monitored_barrier`` refuses every backend but gloo (a check in torch's own code, before any
backend is asked). Use :func:`monitored_barrier` from this module instead, the same call run on the
group's inner gloo group (``netsparse_torch.backend.monitored_barrier(group, timeout, wait_all_ranks)``),
or a gloo side group: ``side = dist.new_group(backend="gloo")`` once on every rank, then
``dist.monitored_barrier(group=side)``.

**Teardown.** ``destroy_process_group()`` shuts every netsparse group down (:meth:`shutdown`): it joins
gloo's worker threads and aborts NCCL's communicators while the interpreter is whole. Without that, a
worker thread that drops its last finished work during interpreter shutdown takes the GIL there and the
process aborts with ``terminate called without an active exception`` (torch's gloo has the same race
when its group outlives ``destroy_process_group``, e.g. held by a DDP model). Call
``destroy_process_group()`` before the script ends, as torch asks.

A leaf: it imports nothing of netsparse_torch (an import-linter contract in pyproject.toml), so every
layer can use it. The NetSparse remote indexed gather is :func:`netsparse_torch.comm.rig.rig`.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import os
import socket
import sys
import uuid
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (
    AllgatherOptions,
    AllreduceCoalescedOptions,
    AllreduceOptions,
    AllToAllOptions,
    BarrierOptions,
    BroadcastOptions,
    GatherOptions,
    ReduceOptions,
    ReduceScatterOptions,
    ScatterOptions,
)

BACKEND_NAME = "netsparse"
_STATS: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "bytes": 0})
_WARNED: set[str] = set()  # shared-GPU lines already printed by this process

NCCL, SHARED_GPU, GLOO, NO_CUDA = "nccl", "gloo-shared-gpu", "gloo", "none"
NO_GPU = -1  # a rank without CUDA
UNASSIGNED = -2  # a rank with GPUs that has not chosen one: resolved from its index on its host

#: Test hook, for CI's CPU twin of the shared-GPU path: every rank claims cuda:0 of a one-GPU host and
#: CPU tensors are routed as CUDA tensors would be (the shared path, host staging included).
TWIN_ENV = "NETSPARSE_BACKEND_CPU_TWIN"
_TWIN_UUID = 1  # the twin's one GPU


def _nbytes(tensors) -> int:
    if isinstance(tensors, torch.Tensor):
        return tensors.numel() * tensors.element_size()
    return sum(_nbytes(t) for t in tensors)


def comm_stats() -> dict[str, dict[str, int]]:
    """Calls and input bytes per collective issued through the netsparse backend in this process."""
    return copy.deepcopy(dict(_STATS))


def reset_comm_stats() -> None:
    _STATS.clear()


@dataclass(frozen=True)
class CudaPlan:
    """How a process group moves CUDA tensors (:func:`decide_cuda_path`)."""

    path: str  # NCCL, SHARED_GPU, GLOO or NO_CUDA
    devices: tuple[int, ...]  # each rank's CUDA device index, NO_GPU for none
    shared: tuple[tuple[Hashable, int, tuple[int, ...]], ...]  # (host, device, ranks) of every shared GPU
    reason: str


def resolve_devices(ranks: Sequence[tuple[Hashable, int, int]]) -> tuple[int, ...]:
    """Each rank's device from ``(host, device, device_count)``: an UNASSIGNED rank takes its index
    among the ranks of its host (in rank order) modulo its host's device count."""
    seen: Counter = Counter()
    devices = []
    for host, device, count in ranks:
        local = seen[host]
        seen[host] += 1
        devices.append(local % count if device == UNASSIGNED and count > 0 else device)
    return tuple(NO_GPU if d < 0 else d for d in devices)


def decide_cuda_path(ranks: Sequence[tuple[Hashable, int, int]], nccl_available: bool,
                     uuids: Sequence[int] | None = None) -> CudaPlan:
    """The CUDA path of a group whose rank ``r`` is on host ``ranks[r][0]`` with device ``ranks[r][1]``
    (NO_GPU, UNASSIGNED or an index) of ``ranks[r][2]`` devices, that device's UUID being ``uuids[r]``
    (an int; 0 or no list: unknown). Two ranks share a GPU when their UUIDs are equal, or, where
    either is unknown, when host and index are. Pure, so every rank, given the same lists, takes the
    same decision."""
    devices = resolve_devices(ranks)
    uuids = list(uuids) if uuids is not None else [0] * len(devices)
    shared = tuple((ranks[rs[0]][0], devices[rs[0]], tuple(rs))
                   for rs in _same_gpu(ranks, devices, uuids) if len(rs) > 1)
    without = [r for r, d in enumerate(devices) if d == NO_GPU]
    if len(without) == len(devices):
        return CudaPlan(NO_CUDA, devices, (), "no rank has a CUDA device")
    if shared:
        n = sum(len(rs) for _, _, rs in shared)
        return CudaPlan(SHARED_GPU, devices, shared,
                        f"{n} ranks share {len(shared)} GPU(s); NCCL refuses two ranks on one GPU")
    if without:
        return CudaPlan(GLOO, devices, (), f"ranks {_ranks(without)} have no CUDA device")
    if not nccl_available:
        return CudaPlan(GLOO, devices, (), "this torch has no NCCL")
    return CudaPlan(NCCL, devices, (), "every rank has its own GPU")


def _same_gpu(ranks, devices: Sequence[int], uuids: Sequence[int]) -> list[list[int]]:
    """The ranks with a GPU, grouped by the GPU they use: equal UUIDs, or equal (host, index) where a
    UUID is unknown (two ranks wrongly thought to share only go through gloo; two ranks wrongly thought
    apart would fail in NCCL)."""
    parent = list(range(len(devices)))

    def root(r: int) -> int:
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    by_uuid: dict[int, int] = {}
    by_index: dict[tuple, list[int]] = defaultdict(list)
    for rank, ((host, _, _), device, gpu) in enumerate(zip(ranks, devices, uuids, strict=True)):
        if device == NO_GPU:
            continue
        if gpu:
            parent[root(rank)] = root(by_uuid.setdefault(gpu, rank))
        by_index[(host, device)].append(rank)
    for users in by_index.values():
        if any(not uuids[r] for r in users):
            for r in users[1:]:
                parent[root(r)] = root(users[0])
    groups: dict[int, list[int]] = defaultdict(list)
    for rank, device in enumerate(devices):
        if device != NO_GPU:
            groups[root(rank)].append(rank)
    return list(groups.values())


def uuid_int(text: str | None) -> int:
    """A GPU UUID as CUDA (``8-4-4-4-12`` hex) or NVML and ``CUDA_VISIBLE_DEVICES`` (``GPU-`` first)
    write it, as a 128-bit int; 0 for anything else (unknown)."""
    try:
        return uuid.UUID(str(text).removeprefix("GPU-")).int
    except ValueError:
        return 0


def gpu_uuid(device: int) -> int:
    """The UUID of this process's CUDA device ``device`` (0: unknown). Read from the device properties
    once CUDA is initialised; before that through NVML, which does not initialise CUDA here (a process
    that initialised CUDA cannot fork ranks that use it), with ``CUDA_VISIBLE_DEVICES`` applied."""
    if device < 0:
        return 0
    try:
        if torch.cuda.is_initialized():
            return uuid_int(str(torch.cuda.get_device_properties(device).uuid))
        uuids = torch.cuda._raw_device_uuid_nvml()
        return uuid_int(uuids[torch.cuda._get_nvml_device_index(device)]) if uuids else 0
    except (RuntimeError, OSError, ValueError, IndexError, AttributeError):  # no NVML, a MIG slice, an older torch
        return 0


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(map(str, ranks))


def shared_gpu_warning(plan: CudaPlan, rank: int, host: Hashable, hostname: str) -> str | None:
    """The one line the lowest sharing rank of ``host`` prints (None for every other rank)."""
    here = [(dev, rs) for h, dev, rs in plan.shared if h == host]
    if not here or rank != min(r for _, rs in here for r in rs):
        return None
    groups = "; ".join(f"ranks {_ranks(rs)} share cuda:{dev}" for dev, rs in here)
    return (f"netsparse: on host {hostname}, {groups}: CUDA collectives go through gloo (host-staged) instead "
            "of NCCL; give each rank its own GPU for NCCL")


def _twin() -> bool:
    return os.environ.get(TWIN_ENV, "") not in ("", "0")


def _host_key(hostname: str) -> int:
    """The host as an int64 that gloo can all-gather (a hash of its name)."""
    return int.from_bytes(hashlib.blake2b(hostname.encode(), digest_size=8).digest(), "little", signed=True)


def this_rank_gpu() -> tuple[int, int]:
    """``(device, device_count)`` of this process: the current device once CUDA is initialised, else
    ``LOCAL_RANK`` modulo the count, else UNASSIGNED; ``(NO_GPU, 0)`` without CUDA."""
    if _twin():
        return 0, 1
    if not torch.cuda.is_available():
        return NO_GPU, 0
    count = torch.cuda.device_count()
    if torch.cuda.is_initialized():
        return torch.cuda.current_device(), count
    local = os.environ.get("LOCAL_RANK", "")
    return (int(local) % count if local.isdigit() else UNASSIGNED), count


class _StagedWork(dist.Work):
    """One or more inner works (gloo's, or nccl's) as one; waiting on it waits on each and then runs
    ``copy_back`` (the results copied back from host or contiguous copies), once, in the waiting thread,
    so the copies are ordered on the caller's CUDA stream. (No ``get_future``: neither the package, DDP
    nor FSDP asks one of these.)"""

    def __init__(self, inner, copy_back=None):
        super().__init__()
        self._works = tuple(inner) if isinstance(inner, list | tuple) else (inner,)
        self._copy_back = copy_back

    def wait(self, timeout=None) -> bool:
        for work in self._works:
            if timeout is None:
                work.wait()
            else:
                work.wait(timeout)
        if self._copy_back is not None:
            self._copy_back()
            self._copy_back = None  # once, however often the caller waits
        return True

    def is_completed(self) -> bool:
        return self._copy_back is None and all(w.is_completed() for w in self._works)

    def _source_rank(self) -> int:  # dist.recv(src=None) asks the work who sent
        return self._works[0]._source_rank()


class _Destroyed:
    """Stands in for the inner groups once the process group is shut down: any use says so."""

    def __getattr__(self, name):
        raise RuntimeError(f"netsparse backend: {name} on a process group that destroy_process_group() (or "
                           "shutdown/abort) already shut down; create a new process group to communicate again")


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    """A contiguous host copy (a real copy even of a CPU tensor, so the twin stages as CUDA does)."""
    return t.detach().to("cpu", copy=True).contiguous()


class NetsparseProcessGroup(dist.ProcessGroup):
    """A process group that counts traffic and delegates to gloo (CPU, and CUDA on a shared GPU) or
    nccl (CUDA, one GPU per rank): see the module docstring."""

    def __init__(self, store, rank: int, size: int, timeout):
        super().__init__(rank, size)
        store = attempt_store(store)
        self._name = ""  # set by torch (_set_group_name) once the group is registered
        self._timeout = timeout  # monitored_barrier's default, as gloo's is its group's timeout
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        hostname = socket.gethostname()
        host = _host_key(hostname)
        device, count = this_rank_gpu()
        nccl_available = dist.is_nccl_available() and not _twin()
        ranks = self._exchange([host, device, count])
        self.cuda_plan = decide_cuda_path(ranks, nccl_available, self._gpu_uuids(ranks))
        self._device = self.cuda_plan.devices[rank]
        self._routed_types = ("cpu",) if _twin() else ("cuda",)
        self.device_calls: Counter = Counter()  # calls with device tensors, per route
        self._nccl = None
        if self.cuda_plan.path == NCCL:  # never otherwise: NCCL would fail on a shared GPU
            self._nccl = dist.ProcessGroupNCCL(dist.PrefixStore("nccl", store), rank, size)
        line = shared_gpu_warning(self.cuda_plan, rank, host, hostname)
        if line and line not in _WARNED:  # once per process: new_group (e.g. ds's teams) would repeat it
            _WARNED.add(line)
            print(line, file=sys.stderr, flush=True)

    def _exchange(self, values: list[int]) -> list[tuple[int, ...]]:
        """Every rank's ``values`` (int64), all-gathered on gloo."""
        mine = torch.tensor(values, dtype=torch.int64)
        everyone = [torch.empty_like(mine) for _ in range(self.size())]
        self._gloo.allgather([everyone], [mine]).wait()
        return [tuple(t.tolist()) for t in everyone]

    def _gpu_uuids(self, ranks: list[tuple[int, ...]]) -> list[int] | None:
        """Every rank's GPU UUID (0: unknown), once the devices are resolved (an UNASSIGNED rank learns
        its own only from the others' hosts); None when no rank has a GPU."""
        devices = resolve_devices(ranks)
        if all(d == NO_GPU for d in devices):
            return None
        mine = (_TWIN_UUID if _twin() else gpu_uuid(devices[self.rank()])).to_bytes(16, "little")
        halves = [int.from_bytes(mine[i:i + 8], "little", signed=True) for i in (0, 8)]  # gloo moves int64
        return [int.from_bytes(b"".join(h.to_bytes(8, "little", signed=True) for h in pair), "little")
                for pair in self._exchange(halves)]

    def _is_device(self, tensors) -> bool:
        first = tensors
        while isinstance(first, list | tuple):
            first = first[0] if first else None
        return isinstance(first, torch.Tensor) and first.device.type in self._routed_types

    def _inner(self, tensors):
        """nccl for device tensors on the NCCL path, gloo for everything else."""
        if not self._is_device(tensors):
            return self._gloo
        if self._nccl is None:
            self.device_calls["gloo"] += 1
            return self._gloo
        self._check_device(tensors)
        self.device_calls["nccl"] += 1
        return self._nccl

    def _check_device(self, tensors) -> None:
        for t in _flatten([tensors]):
            if t.device.index != self._device:
                raise RuntimeError(
                    f"netsparse backend: rank {self.rank()} passed a tensor on {t.device}, but the process group "
                    f"chose NCCL for cuda:{self._device} when it was created; call torch.cuda.set_device(<gpu>) "
                    "before init_process_group so that the backend sees each rank's GPU")

    def _staged(self, tensors) -> bool:
        """Whether this call must be staged through host copies by us (gloo cannot take the tensors)."""
        if self._nccl is None and self._is_device(tensors):
            self.device_calls["host-staged"] += 1
            return True
        return False

    def _count(self, name: str, tensors) -> None:
        entry = _STATS[name]
        entry["calls"] += 1
        entry["bytes"] += _nbytes(tensors)

    # c10d keeps a group's name on its backends, and a Python process group has none: without these,
    # group_name fails ("ProcessGroup name not set") and so does every functional collective.
    def _set_group_name(self, name: str) -> None:
        self._name = name

    @property
    def group_name(self) -> str:
        return self._name

    def getBackendName(self) -> str:  # noqa: N802 (c10d's name)
        return BACKEND_NAME

    def name(self) -> str:
        return BACKEND_NAME

    def allreduce(self, tensors, opts=None):
        self._count("allreduce", tensors)
        return self._inner(tensors).allreduce(tensors, opts or AllreduceOptions())

    def allreduce_coalesced(self, tensors, opts=None):
        self._count("allreduce", tensors)
        opts = opts or AllreduceCoalescedOptions()
        if not self._staged(tensors):  # gloo's allreduce_coalesced is CPU only
            return self._inner(tensors).allreduce_coalesced(tensors, opts)
        hosts = [_host_copy(t) for t in tensors]
        return _StagedWork(self._gloo.allreduce_coalesced(hosts, opts),
                           lambda: [t.copy_(h) for t, h in zip(tensors, hosts, strict=True)])

    def broadcast(self, tensors, opts=None):
        self._count("broadcast", tensors if opts is None or opts.rootRank == self.rank() else [])
        return self._inner(tensors).broadcast(tensors, opts or BroadcastOptions())

    def reduce(self, tensors, opts=None):
        self._count("reduce", tensors)
        return self._inner(tensors).reduce(tensors, opts or ReduceOptions())

    def allgather(self, output_tensors, input_tensors, opts=None):
        self._count("allgather", input_tensors)
        return self._inner(input_tensors).allgather(output_tensors, input_tensors, opts or AllgatherOptions())

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        self._count("allgather", input_list)
        opts = opts or AllgatherOptions()
        if not self._is_device(input_list):
            return self._gloo.allgather_coalesced(output_lists, input_list, opts)
        # gloo's allgather_coalesced is CPU only: one all-gather per tensor (each routed as usual)
        return _StagedWork([self._inner([t]).allgather([[outs[i] for outs in output_lists]], [t], opts)
                            for i, t in enumerate(input_list)])

    # torch 2.13 calls the single-tensor all-gather and reduce-scatter by these names. The C++ methods
    # behind them look for a backend registered on the group, which a Python process group has none of
    # ("No backend type associated with device type cpu"): so they are all defined here.
    def all_gather_single(self, output, input, opts=None):
        self._count("allgather", input)
        opts = opts or AllgatherOptions()
        return self._single(output, input, lambda pg, o, i: pg._allgather_base(o, i, opts))

    _allgather_base = all_gather_single

    def reduce_scatter_single(self, output, input, opts=None):
        self._count("reduce_scatter", input)
        opts = opts or ReduceScatterOptions()
        return self._single(output, input, lambda pg, o, i: pg._reduce_scatter_base(o, i, opts))

    _reduce_scatter_base = reduce_scatter_single

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        return _StagedWork([self.all_gather_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)])

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        return _StagedWork([self.reduce_scatter_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)])

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def _single(self, output, input, run):
        """``run(inner, output, input)`` for a single-tensor collective whose ``output`` is ``input``
        times the group size (all-gather) or the reverse (reduce-scatter). nccl takes the tensors as
        they are. gloo wants every rank's chunk shaped as the smaller tensor, so a stacked
        ``[world, *shape]`` form fails there: both go flat. On gloo, device tensors go through host
        copies (these two are not among those gloo stages itself: see the module docstring), and a
        non-contiguous output through a contiguous copy."""
        staged = self._staged(input)
        inner = self._gloo if staged else self._inner(input)
        if inner is self._nccl:
            return run(inner, output, input)
        source = _host_copy(input) if staged else input.contiguous()
        direct = not staged and output.is_contiguous()
        result = output if direct else torch.empty_like(output, device=source.device,
                                                        memory_format=torch.contiguous_format)
        work = run(inner, result.view(-1), source.view(-1))
        return work if direct else _StagedWork(work, lambda: output.copy_(result))

    def gather(self, output_tensors, input_tensors, opts=None):
        self._count("gather", input_tensors)
        return self._inner(input_tensors).gather(output_tensors, input_tensors, opts or GatherOptions())

    def scatter(self, output_tensors, input_tensors, opts=None):
        self._count("scatter", input_tensors)
        return self._inner(output_tensors).scatter(output_tensors, input_tensors, opts or ScatterOptions())

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        self._count("reduce_scatter", input_tensors)
        opts = opts or ReduceScatterOptions()
        if not self._staged(output_tensors):  # gloo's list-form reduce_scatter is CPU only
            return self._inner(output_tensors).reduce_scatter(output_tensors, input_tensors, opts)
        return _staged_lists(output_tensors, input_tensors,
                             lambda outs, ins: self._gloo.reduce_scatter(outs, ins, opts))

    def alltoall_base(self, output, input, output_split_sizes: Sequence[int], input_split_sizes, opts=None):
        self._count("alltoall", input)
        return self._inner(input).alltoall_base(
            output, input, output_split_sizes, input_split_sizes, opts or AllToAllOptions()
        )

    def alltoall(self, output_tensors, input_tensors, opts=None):
        self._count("alltoall", input_tensors)
        opts = opts or AllToAllOptions()
        if not self._staged(input_tensors) and (inner := self._inner(input_tensors)) is not self._gloo:
            return inner.alltoall(output_tensors, input_tensors, opts)
        return _alltoall_concatenated(self._gloo, output_tensors, input_tensors, opts)

    # gloo's send and recv hand the tensor's data pointer to its transport: a device pointer there would
    # be read as host memory, so device tensors travel as host copies.
    def send(self, tensors, dst: int, tag: int):
        self._count("send", tensors)
        if not self._staged(tensors):
            return self._inner(tensors).send(tensors, dst, tag)
        return self._gloo.send([_host_copy(t) for t in tensors], dst, tag)  # the work keeps the copy alive

    def recv(self, tensors, src: int, tag: int):
        self._count("recv", [])
        if not self._staged(tensors):
            return self._inner(tensors).recv(tensors, src, tag)
        hosts = [torch.empty_like(t, device="cpu", memory_format=torch.contiguous_format) for t in tensors]
        return _StagedWork(self._gloo.recv(hosts, src, tag), lambda: tensors[0].copy_(hosts[0]))

    def recv_anysource(self, tensors, tag: int):
        self._count("recv", [])
        if not self._staged(tensors):
            return self._inner(tensors).recv_anysource(tensors, tag)
        hosts = [torch.empty_like(t, device="cpu", memory_format=torch.contiguous_format) for t in tensors]
        return _StagedWork(self._gloo.recv_anysource(hosts, tag), lambda: tensors[0].copy_(hosts[0]))

    def batch_isend_irecv(self, ops: Sequence[dist.P2POp]) -> list:
        """The point-to-point operations ``ops`` (on this group) as one batch: on the NCCL path one NCCL
        group (a send and a receive with the same peer, posted one after the other outside a group,
        can deadlock once a message exceeds NCCL's buffers); on gloo, whose sends and receives do not
        wait for each other, one after the other."""
        tensors = [op.tensor for op in ops]
        if self._nccl is None or not self._is_device(tensors):
            return [w for op in ops if (w := _post(self, op)) is not None]
        self._check_device(tensors)
        device = tensors[0].device
        self._nccl._start_coalescing(device)
        for op in ops:
            _post(self, op)
        return [self._nccl._end_coalescing(device)]

    def barrier(self, opts=None):
        self._count("barrier", [])
        return self._gloo.barrier(opts or BarrierOptions())

    def monitored_barrier(self, timeout=None, wait_all_ranks: bool = False) -> None:
        """gloo's monitored barrier on the inner gloo group (see :func:`monitored_barrier`)."""
        self._count("barrier", [])
        self._gloo.monitored_barrier(timeout or self._timeout, wait_all_ranks)

    # destroy_process_group() calls shutdown() (and _abort_process_group abort()) on every group. gloo's
    # worker threads drop each finished work themselves, and a work whose last reference goes on such a
    # thread while the interpreter shuts down takes the GIL there, which ends the process with
    # "terminate called without an active exception" (SIGABRT). Dropping the inner
    # groups here joins those threads (their destructors release the GIL) while the interpreter is whole;
    # a work still in flight is waited for first, up to the group's timeout, as gloo's destructor does
    # whenever a plain gloo group is dropped.
    def shutdown(self) -> None:
        self._release("shutdown")

    def abort(self) -> None:
        self._release("abort")

    def _release(self, how: str) -> None:
        if isinstance(self._gloo, _Destroyed):
            return  # shut down already (destroy after abort, or twice)
        if self._nccl is not None:
            getattr(self._nccl, how)()  # aborts NCCL's communicators and stops its watchdog
        self._gloo, self._nccl = _Destroyed(), None  # the last references: gloo joins its threads here


def attempt_store(store):
    """``store``, keyed per torchrun attempt when the workers share the agent's store.

    torchrun's agent keeps one store for the whole job, so after ``--max-restarts`` restarts the
    workers the previous attempt's gloo addresses are still in it, under the same keys: a worker that
    reads a peer's key before the restarted peer rewrites it connects to a dead port ("Gloo
    connectFullMesh failed ... Connection refused"). torch keyed its default group per attempt for
    this, ``PrefixStore(f"/worker/attempt_{TORCHELASTIC_RESTART_COUNT}", store)`` whenever
    ``TORCHELASTIC_USE_AGENT_STORE`` is set; torch 2.13 dropped the prefix on the assumption of a new
    store per restart, which its agents do not make, so a plain gloo group now loses that race at
    times. The inner groups keep torch's keying."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != str(True):
        return store
    return dist.PrefixStore(f"/worker/attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)


def _post(pg: NetsparseProcessGroup, op: dist.P2POp):
    """One P2POp on ``pg`` (its peer as a rank of ``pg``), counted as dist.isend/irecv count it."""
    if op.op in (dist.isend, dist.send):
        return pg.send([op.tensor], op.group_peer, op.tag)
    return pg.recv([op.tensor], op.group_peer, op.tag)


def batch_isend_irecv(ops: Sequence[dist.P2POp]) -> list:
    """``torch.distributed.batch_isend_irecv``, grouped on a netsparse group too: torch groups the
    operations only on a plain process group and posts them one by one on any other, which on the NCCL
    path may deadlock (:meth:`NetsparseProcessGroup.batch_isend_irecv`). Returns the works to wait on."""
    if not ops:
        raise ValueError("batch_isend_irecv: no operations")
    group = ops[0].group  # P2POp puts the default group there when it is given none
    if not isinstance(group, NetsparseProcessGroup):
        return dist.batch_isend_irecv(list(ops))
    if any(op.group is not group for op in ops):
        raise ValueError("batch_isend_irecv: every operation of a batch must use the same process group")
    return group.batch_isend_irecv(ops)


def _staged_lists(outputs: list, inputs: list, run) -> _StagedWork:
    """``run(host outputs, host inputs)`` on gloo for a collective whose tensors are lists (or lists of
    lists), the outputs copied back when the work is waited on."""
    hosts = [torch.empty_like(t, device="cpu", memory_format=torch.contiguous_format) for t in outputs]
    staged_in = [[_host_copy(t) for t in ts] if isinstance(ts, list | tuple) else _host_copy(ts) for ts in inputs]
    return _StagedWork(run(hosts, staged_in), lambda: [t.copy_(h) for t, h in zip(outputs, hosts, strict=True)])


def _alltoall_concatenated(gloo, outputs: list, inputs: list, opts) -> _StagedWork:
    """The list form of all_to_all as gloo's single-tensor form on one host concatenation: gloo has no
    list form before torch 2.13 ("Backend gloo does not support alltoall"), and the host copy stages
    CUDA tensors as well."""
    send = torch.cat([t.detach().reshape(-1) for t in inputs]).cpu()  # one concatenation, then one transfer
    sizes = [t.numel() for t in outputs]
    recv = torch.empty(sum(sizes), dtype=send.dtype)
    work = gloo.alltoall_base(recv, send, sizes, [t.numel() for t in inputs], opts)
    return _StagedWork(work, lambda: [t.copy_(part.view(t.shape)) for t, part in
                                      zip(outputs, recv.split(sizes), strict=True)])


def _flatten(tensors):
    for t in tensors:
        if isinstance(t, torch.Tensor):
            yield t
        else:
            yield from _flatten(t)


def _netsparse_group(group) -> NetsparseProcessGroup:
    pg = group if group is not None else dist.group.WORLD
    if not isinstance(pg, NetsparseProcessGroup):
        raise ValueError(f"{pg!r} is not a netsparse process group: init_process_group('netsparse') (or "
                         "new_group(backend='netsparse')) creates one")
    return pg


def collective_path(group=None) -> dict:
    """How ``group`` (default: the default group) moves CUDA tensors, for this rank's report entry:
    ``cuda`` (:func:`cuda_path`), ``cuda_device`` (this rank's GPU, -1 for none), ``shares_gpu_with``
    (the other ranks on this rank's GPU), ``reason`` and ``device_calls`` (calls with device tensors
    per route: ``nccl``, ``gloo`` (gloo stages them) or ``host-staged`` (the backend stages them))."""
    pg = _netsparse_group(group)
    plan, rank = pg.cuda_plan, pg.rank()
    sharing = [r for _, dev, rs in plan.shared if rank in rs for r in rs if r != rank]
    return {"cuda": plan.path, "cuda_device": plan.devices[rank], "shares_gpu_with": sharing,
            "reason": plan.reason, "device_calls": dict(pg.device_calls)}


def cuda_path(group=None) -> str:
    """``"nccl"``, ``"gloo-shared-gpu"``, ``"gloo"`` or ``"none"``: see the module docstring."""
    return _netsparse_group(group).cuda_plan.path


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """``torch.distributed.monitored_barrier`` for a netsparse group (default: the default group).

    torch's own refuses every backend but gloo ("monitored_barrier is only implemented for GLOO
    backend", a check in torch before any backend is asked); this runs gloo's monitored barrier on the
    group's inner gloo group, with the same arguments and errors (the ranks that did not arrive within
    ``timeout``, the group's timeout if None). Counted as a barrier in :func:`comm_stats`."""
    if isinstance(timeout, int | float):
        timeout = datetime.timedelta(seconds=timeout)
    _netsparse_group(group).monitored_barrier(timeout, wait_all_ranks)


def _create(store, rank: int, size: int, timeout) -> NetsparseProcessGroup:
    return NetsparseProcessGroup(store, rank, size, timeout)


def register() -> None:
    """Register the backend with torch.distributed (idempotent)."""
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu", "cuda"])


register()
