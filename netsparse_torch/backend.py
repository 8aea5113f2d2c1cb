"""The ``netsparse`` torch.distributed backend.

Importing ``netsparse_torch.backend`` registers it (``import netsparse_torch`` alone stays torch-free and
does not), so ``dist.init_process_group("netsparse")`` works in any script. It wraps gloo (and nccl for
CUDA tensors when available), forwards every standard collective and counts calls and bytes per
collective in this process (:func:`comm_stats`). ``bytes`` is what this rank hands to the collective as
input: the tensors it contributes, not what it receives.

A leaf: it imports nothing of netsparse_torch (an import-linter contract in pyproject.toml), so every
layer can use it. The NetSparse remote indexed gather is :func:`netsparse_torch.comm.rig.rig`.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence

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


def _nbytes(tensors) -> int:
    if isinstance(tensors, torch.Tensor):
        return tensors.numel() * tensors.element_size()
    return sum(_nbytes(t) for t in tensors)


def comm_stats() -> dict[str, dict[str, int]]:
    """Calls and input bytes per collective issued through the netsparse backend in this process."""
    return copy.deepcopy(dict(_STATS))


def reset_comm_stats() -> None:
    _STATS.clear()


class NetsparseProcessGroup(dist.ProcessGroup):
    """A process group that counts traffic and delegates to gloo (CPU) or nccl (CUDA)."""

    def __init__(self, store, rank: int, size: int, timeout):
        super().__init__(rank, size)
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        self._nccl = None
        if torch.cuda.is_available() and dist.is_nccl_available():
            self._nccl = dist.ProcessGroupNCCL(dist.PrefixStore("nccl", store), rank, size)

    def _inner(self, tensors):
        first = tensors
        while isinstance(first, list | tuple):
            first = first[0] if first else None
        if self._nccl is not None and isinstance(first, torch.Tensor) and first.is_cuda:
            return self._nccl
        return self._gloo

    def _count(self, name: str, tensors) -> None:
        entry = _STATS[name]
        entry["calls"] += 1
        entry["bytes"] += _nbytes(tensors)

    def getBackendName(self) -> str:  # noqa: N802 (c10d's name)
        return BACKEND_NAME

    def name(self) -> str:
        return BACKEND_NAME

    def allreduce(self, tensors, opts=None):
        self._count("allreduce", tensors)
        return self._inner(tensors).allreduce(tensors, opts or AllreduceOptions())

    def allreduce_coalesced(self, tensors, opts=None):
        self._count("allreduce", tensors)
        return self._inner(tensors).allreduce_coalesced(tensors, opts or AllreduceCoalescedOptions())

    def broadcast(self, tensors, opts=None):
        self._count("broadcast", tensors if opts is None or opts.rootRank == self.rank() else [])
        return self._inner(tensors).broadcast(tensors, opts or BroadcastOptions())

    def reduce(self, tensors, opts=None):
        self._count("reduce", tensors)
        return self._inner(tensors).reduce(tensors, opts or ReduceOptions())

    def allgather(self, output_tensors, input_tensors, opts=None):
        self._count("allgather", input_tensors)
        return self._inner(input_tensors).allgather(output_tensors, input_tensors, opts or AllgatherOptions())

    def _allgather_base(self, output, input, opts=None):
        self._count("allgather", input)
        return self._inner(input)._allgather_base(output, input, opts or AllgatherOptions())

    def gather(self, output_tensors, input_tensors, opts=None):
        self._count("gather", input_tensors)
        return self._inner(input_tensors).gather(output_tensors, input_tensors, opts or GatherOptions())

    def scatter(self, output_tensors, input_tensors, opts=None):
        self._count("scatter", input_tensors)
        return self._inner(output_tensors).scatter(output_tensors, input_tensors, opts or ScatterOptions())

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        self._count("reduce_scatter", input_tensors)
        return self._inner(output_tensors).reduce_scatter(
            output_tensors, input_tensors, opts or ReduceScatterOptions()
        )

    def _reduce_scatter_base(self, output, input, opts=None):
        self._count("reduce_scatter", input)
        return self._inner(input)._reduce_scatter_base(output, input, opts or ReduceScatterOptions())

    def alltoall_base(self, output, input, output_split_sizes: Sequence[int], input_split_sizes, opts=None):
        self._count("alltoall", input)
        return self._inner(input).alltoall_base(
            output, input, output_split_sizes, input_split_sizes, opts or AllToAllOptions()
        )

    def alltoall(self, output_tensors, input_tensors, opts=None):
        self._count("alltoall", input_tensors)
        return self._inner(input_tensors).alltoall(output_tensors, input_tensors, opts or AllToAllOptions())

    def send(self, tensors, dst: int, tag: int):
        self._count("send", tensors)
        return self._inner(tensors).send(tensors, dst, tag)

    def recv(self, tensors, src: int, tag: int):
        self._count("recv", [])
        return self._inner(tensors).recv(tensors, src, tag)

    def recv_anysource(self, tensors, tag: int):
        self._count("recv", [])
        return self._inner(tensors).recv_anysource(tensors, tag)

    def barrier(self, opts=None):
        self._count("barrier", [])
        return self._gloo.barrier(opts or BarrierOptions())


def _create(store, rank: int, size: int, timeout) -> NetsparseProcessGroup:
    return NetsparseProcessGroup(store, rank, size, timeout)


def register() -> None:
    """Register the backend with torch.distributed (idempotent)."""
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu", "cuda"])


register()
