"""What every gather strategy shares: its column space and its traffic meter."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.distributed as dist

from netsparse_torch.backend import comm_stats
from netsparse_torch.errors import ConfigError
from netsparse_torch.kernels import CSR, spmm
from netsparse_torch.plan import Plan


@dataclass
class Traffic:
    """Payload bytes of feature rows (forward) and gradient rows (backward) this rank received in the
    forward gather and sent back in the backward reverse; local rows never count. Summed over ranks
    this is the total moved between ranks. ``log`` keeps one entry per gather call and direction."""

    forward_bytes: int = 0
    backward_bytes: int = 0
    log: list[dict] = field(default_factory=list)

    def add(self, direction: str, nbytes: int, k: int, tag: str) -> None:
        if direction == "forward":
            self.forward_bytes += nbytes
        else:
            self.backward_bytes += nbytes
        self.log.append({"direction": direction, "bytes": nbytes, "k": k, "tag": tag})

    @property
    def total_bytes(self) -> int:
        return self.forward_bytes + self.backward_bytes

    def reset(self) -> None:
        self.forward_bytes = self.backward_bytes = 0
        self.log.clear()


class Strategy:
    """A forward gather plus its backward reverse, inside one autograd.Function.

    ``gather(x_local)`` (strategies with a gather ``function``) returns the matrix the local SpMM
    multiplies; its row space is ``space``:
    ``combined`` = [own rows; halo rows in plan order], ``global`` = all N rows in global order.

    Attention layers (GAT) gather every row a rank needs first and then run their local kernels (the
    scores, an SDDMM; the per-row softmax; the SpMM): :meth:`gather` with the pattern, whose columns
    :meth:`gather_layout` maps to the rows of the gathered matrix. A strategy that never holds all of a
    row's neighbours at once says why in ``no_gather`` (it cannot run attention).

    ``group`` (None: WORLD) is the process group of the plan's ranks: every collective of the strategy
    runs on it, and the plan's rank and world size must be this rank's in it.
    """

    name = "base"
    space = "combined"
    function: type[torch.autograd.Function]  # apply(x_local, strategy, tag) -> gathered matrix
    no_gather: str | None = None  # why attention layers cannot use this strategy (None: they can)

    def __init__(self, plan: Plan, group=None, **options):
        self.plan = plan
        self.group = group
        self.options = options
        self.traffic = Traffic()
        #: Collectives of the state built at a first gather (:meth:`first_use`), once per process.
        self.setup_collectives: dict[str, dict[str, int]] = {}
        check_group(plan, group)

    def gather(self, x_local: torch.Tensor, tag: str = "", adjacency: CSR | None = None) -> torch.Tensor:
        """The rows of the gathered matrix (see :meth:`gather_layout`) for ``adjacency``, this rank's
        rows in ``space``; the backward returns their gradients to the owners."""
        if self.plan.world_size == 1:
            return x_local
        return self.function.apply(x_local, self, tag)

    def gather_layout(self, adjacency: CSR, k: int) -> tuple[CSR, np.ndarray]:
        """``adjacency`` (this rank's rows in ``space``) with its columns indexing the rows of what
        :meth:`gather` returns for width ``k``, and the global id of each of those rows."""
        plan = self.plan
        if self.space == "global":
            return adjacency, np.arange(plan.num_nodes, dtype=np.int64)
        own = np.arange(plan.row_start, plan.row_start + plan.n_local, dtype=np.int64)
        return adjacency, np.concatenate([own, plan.halo_ids.astype(np.int64)])

    def propagate(self, adjacency: CSR, x_local: torch.Tensor, tag: str = "") -> torch.Tensor:
        """The distributed SpMM ``adjacency x X``; ``adjacency`` is this rank's rows in ``space``.
        Default: the local SpMM on :meth:`gather`. Strategies with their own local SpMM (Two-Face's
        one-sided SpMM, dense shifting's rounds) override it."""
        return spmm(adjacency, self.gather(x_local, tag))

    def stats(self) -> dict:
        """Strategy-specific statistics for the report (empty by default)."""
        return {}

    def counters(self) -> dict:
        """What this strategy has counted so far (nested dicts of numbers): the traffic meter's bytes and
        the strategy's own counters, those of :meth:`stats` that grow with every gather. A resumed run
        adds its checkpoint's with :meth:`add_counters`, so its report counts every epoch once."""
        return {"forward_bytes": self.traffic.forward_bytes, "backward_bytes": self.traffic.backward_bytes}

    def add_counters(self, counters: dict) -> None:
        """Add ``counters`` (what :meth:`counters` returned, e.g. in an earlier process) to this strategy's."""
        self.traffic.forward_bytes += int(counters.get("forward_bytes", 0))
        self.traffic.backward_bytes += int(counters.get("backward_bytes", 0))

    @contextlib.contextmanager
    def first_use(self) -> Iterator[None]:
        """Around state built at the first gather of a shape, which every process builds once, as it builds
        its plan (e.g. Two-Face's layouts): its collectives go to :attr:`setup_collectives`, so a resumed
        run carries over what its epochs exchanged and not a second setup."""
        before = comm_stats()
        try:
            yield
        finally:
            for name, now in comm_stats().items():
                entry = self.setup_collectives.setdefault(name, {"calls": 0, "bytes": 0})
                for key in entry:
                    entry[key] += now[key] - before.get(name, {}).get(key, 0)


def check_group(plan: Plan, group) -> None:
    """The plan was built for this rank of ``group``: a mismatch would exchange with the wrong ranks.
    (A one-rank plan runs no collective; without torch.distributed no collective can run.)"""
    if plan.world_size == 1 or not dist.is_initialized():
        return
    where = (dist.get_rank(group), dist.get_world_size(group))
    if where != (plan.rank, plan.world_size):
        raise ConfigError(f"the plan is for rank {plan.rank} of {plan.world_size}, but this process is rank "
                          f"{where[0]} of {where[1]} in its process group: build the plan with the same group")


def row_bytes(rows: int, x: torch.Tensor) -> int:
    return int(rows) * x.size(1) * x.element_size()
