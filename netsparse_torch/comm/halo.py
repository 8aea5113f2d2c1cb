"""The halo exchange: a forward transport that fills the halo, and the reverse exchange shared by all.

A strategy that gathers halo rows (``sa``, ``netsparse``) is one :class:`HaloExchange` (in
:mod:`netsparse_torch.comm.sa`) composed with a :class:`Transport`:

- :class:`AllToAll`: one ``all_to_all`` of exactly the rows each peer asked for (``sa``);
- :class:`~netsparse_torch.comm.netsparse.RigTransport`: the node's RIG units over a fabric (``netsparse``).

``Transport.start`` returns a :class:`Pending`, the typed awaitable of one gather: the caller computes
(the own-block SpMM) and then calls ``wait()``; until then no other collective may run on the group.
The backward reverse (each halo gradient row back to its owner) is the same all_to_all for every
transport.

:class:`HostStaging` is how a transport that works in host memory (the RIG units read properties from
host memory, as the SmartNIC does, NetSparse §5) serves features that live on a GPU: the owner rows go
to pinned host memory, and the filled halo comes back with a non-blocking copy on a side stream that
overlaps the own-block SpMM. The copies are timed apart from the gather.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol

import torch
import torch.distributed as dist

from netsparse_torch.kernels import gather
from netsparse_torch.plan import Plan


class Pending(Protocol):
    """One gather in flight: ``wait()`` returns once the halo buffer holds every row (or raises the
    gather's error)."""

    def wait(self) -> object: ...


class Transport(Protocol):
    """Fills a halo buffer with the rows the plan asks for."""

    name: str

    def start(self, x: torch.Tensor, halo: torch.Tensor, tag: str) -> Pending:
        """Start filling ``halo`` (``plan.n_halo`` rows, ``x``'s width, dtype and device) from the owners'
        rows ``x``."""
        ...

    def record_reverse(self, tag: str, nbytes: int) -> None:
        """Called after the backward reverse exchange of ``nbytes`` payload bytes (statistics)."""
        ...

    def stats(self) -> dict:
        ...


class Done:
    """An exchange that finished (or had nothing to move) before the caller waits on it."""

    def wait(self) -> None:
        return None


class InFlight:
    """A gather running in a background thread (or inline with ``background=False``).

    ``wait()`` joins it and returns its result, or raises its error in the caller's thread. The gather
    may issue the fabric's collectives from its thread; the caller must not issue collectives on the
    same group until ``wait()`` returns (gloo serves one thread at a time per group), which the
    own-block SpMM that overlaps it does not. The C++ node calls and the SpMM release the GIL, so both
    run at once."""

    def __init__(self, work: Callable[[], object], background: bool = True):
        self._work = work
        self._result: object = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="netsparse-halo", daemon=True)
            self._thread.start()
        else:
            self._run()

    def _run(self) -> None:
        try:
            self._result = self._work()
        except BaseException as e:  # handed to the caller's thread by wait()
            self._error = e

    def wait(self) -> object:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._result


class AllToAll:
    """``sa``'s transport: pack the asked-for rows (the gather kernel) and one all_to_all."""

    name = "all_to_all"

    def __init__(self, plan: Plan, group=None):
        self.plan, self.group = plan, group

    def start(self, x: torch.Tensor, halo: torch.Tensor, tag: str) -> Pending:
        plan = self.plan
        send = gather(x, plan.send_idx)  # the packing kernel: C++ on CPU, Triton on CUDA
        return dist.all_to_all_single(halo, send, plan.recv_counts, plan.send_counts, group=self.group,
                                      async_op=True)

    def record_reverse(self, tag: str, nbytes: int) -> None:
        pass

    def stats(self) -> dict:
        return {}


def reverse_exchange(plan: Plan, grad_halo: torch.Tensor, group) -> tuple[torch.Tensor, Pending]:
    """Start sending each halo gradient row back to its owner; returns the buffer of the rows that come
    back (``plan.send_idx`` order) and the handle to wait on before adding them (``add_returned``)."""
    back = grad_halo.new_empty(plan.send_idx.numel(), grad_halo.size(1))
    work = dist.all_to_all_single(back, grad_halo.contiguous(), plan.send_counts, plan.recv_counts, group=group,
                                  async_op=True)
    return back, work


def add_returned(grad_x: torch.Tensor, plan: Plan, back: torch.Tensor, work: Pending) -> torch.Tensor:
    work.wait()
    return add_rows(grad_x, plan.send_idx, back)


# The rounds of each send list by id, computed once per list and dropped with it (a tensor compares
# element-wise, so it cannot key a WeakKeyDictionary).
_ROUNDS: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}


def occurrence_rounds(idx: torch.Tensor) -> list[torch.Tensor]:
    """The positions of ``idx`` by occurrence: round ``k`` holds, in position order, the position of
    every value's ``k``-th appearance (``k`` from 0). No round repeats a value. Torch ops on ``idx``'s
    device, one host read (the number of rounds)."""
    n = idx.numel()
    if n == 0:
        return []
    order = torch.argsort(idx, stable=True)
    ranks = torch.arange(n, device=idx.device)
    starts = torch.ones(n, dtype=torch.bool, device=idx.device)
    starts[1:] = idx[order[1:]] != idx[order[:-1]]
    first = torch.cummax(torch.where(starts, ranks, 0), 0).values  # where each value's run begins
    occurrence = torch.empty_like(ranks)
    occurrence[order] = ranks - first
    return [torch.nonzero(occurrence == k).flatten() for k in range(int(occurrence.max()) + 1)]


def add_rows(target: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``target[idx[i]] += rows[i]`` in place, the rows of one target row added in ``i`` order on every
    device. From 3 ranks on a row is sent to several peers and ``idx`` repeats it; ``index_add_`` adds
    repeats in order on CPU but with atomics on CUDA, in whatever order they land. So the repeats go
    in rounds of distinct rows (:func:`occurrence_rounds`): the same bits on CPU and CUDA, every run."""
    if id(idx) not in _ROUNDS:
        _ROUNDS[id(idx)] = [(positions, idx[positions]) for positions in occurrence_rounds(idx)]
        weakref.finalize(idx, _ROUNDS.pop, id(idx), None)
    for positions, distinct in _ROUNDS[id(idx)]:
        target.index_add_(0, distinct, rows[positions])
    return target


class HostStaging:
    """Moves a gather's operands between the features' device and host memory, timing each copy.

    On CPU tensors nothing is copied unless ``always`` (the CPU twin of the GPU path, which runs the
    same steps with plain host buffers). On CUDA the owner rows go to a pinned buffer (the copy is
    waited for: the RIG units read it from another thread), and :meth:`to_device` copies the filled host
    halo back on a side stream of the halo's device; :meth:`join` makes the caller's stream on that
    device wait for that copy. Every stream and event is the tensors' device's, never the current
    device's: a library caller need not have called ``torch.cuda.set_device``.
    """

    def __init__(self, always: bool = False):
        self.always = bool(always)
        self.seconds = {"to_host": 0.0, "to_device": 0.0}
        self.bytes = {"to_host": 0, "to_device": 0}
        self._streams: dict[torch.device, torch.cuda.Stream] = {}
        self._ready: torch.cuda.Event | None = None
        self._copied: tuple[torch.device, torch.cuda.Event] | None = None
        self._timing: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    def needed(self, device: torch.device) -> bool:
        return device.type != "cpu" or self.always

    def to_host(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (C-contiguous) in host memory, complete when this returns."""
        if not self.needed(x.device):
            return x.contiguous()
        t0 = time.perf_counter()
        host = torch.empty(x.shape, dtype=x.dtype, pin_memory=x.is_cuda)
        host.copy_(x, non_blocking=x.is_cuda)
        if x.is_cuda:
            torch.cuda.current_stream(x.device).synchronize()  # the RIG units read it from another thread
        self._add("to_host", time.perf_counter() - t0, host)
        return host

    def host_buffer(self, like: torch.Tensor) -> torch.Tensor:
        """A host buffer for ``like`` (itself when no staging is needed). Call it in the caller's thread:
        on CUDA it marks where the caller's stream stands, so that the copy back into ``like`` waits for
        what that stream queued before (``like`` may be memory a kernel still reads)."""
        if not self.needed(like.device):
            return like
        if like.is_cuda:
            self._ready = torch.cuda.current_stream(like.device).record_event()
        return torch.empty(like.shape, dtype=like.dtype, pin_memory=like.is_cuda)

    def to_device(self, host: torch.Tensor, out: torch.Tensor) -> None:
        """Copy the filled ``host`` into ``out`` (may run in the gather's thread); no-op when they are one."""
        if host is out:
            return
        if not out.is_cuda:
            t0 = time.perf_counter()
            out.copy_(host)
            self._add("to_device", time.perf_counter() - t0, host)
            return
        if out.device not in self._streams:
            self._streams[out.device] = torch.cuda.Stream(out.device)
        stream = self._streams[out.device]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # The device context too: this may run in the gather's thread, whose current device is its own.
        with torch.cuda.device(out.device), torch.cuda.stream(stream):
            if self._ready is not None:
                stream.wait_event(self._ready)
            start.record()
            out.copy_(host, non_blocking=True)
            end.record()
        out.record_stream(stream)  # the allocator must not hand its memory out before the copy ends
        self._copied = (out.device, end)
        self._timing.append((start, end))
        self.bytes["to_device"] += host.numel() * host.element_size()

    def join(self) -> None:
        """The caller's stream on the halo's device waits for the last copy to it (CUDA); it does not
        block the host."""
        if self._copied is not None:
            device, copied = self._copied
            torch.cuda.current_stream(device).wait_event(copied)
            self._copied = self._ready = None

    def _add(self, way: str, seconds: float, t: torch.Tensor) -> None:
        self.seconds[way] += seconds
        self.bytes[way] += t.numel() * t.element_size()

    def counters(self) -> dict:
        """Seconds and bytes of the copies so far, by direction."""
        self._read_timing()
        return {"seconds": dict(self.seconds), "bytes": dict(self.bytes)}

    def add_counters(self, counters: dict) -> None:
        for way, seconds in counters.get("seconds", {}).items():
            self.seconds[way] += seconds
        for way, nbytes in counters.get("bytes", {}).items():
            self.bytes[way] += nbytes

    def _read_timing(self) -> None:
        """Add the CUDA copies' times, read from their events."""
        for start, end in self._timing:
            end.synchronize()
            self.seconds["to_device"] += start.elapsed_time(end) / 1e3
        self._timing.clear()

    def stats(self) -> dict:
        """Seconds and bytes of the copies so far (CUDA copies are read from their events here)."""
        self._read_timing()
        return {"staging_to_host_s": self.seconds["to_host"], "staging_to_device_s": self.seconds["to_device"],
                "staging_to_host_bytes": self.bytes["to_host"], "staging_to_device_bytes": self.bytes["to_device"]}
