"""``netsparse``: the NetSparse data path on the real training path.

Forward: each rank's RIG client units turn the plan's idx stream (every nonzero's column, in CSR
order) into read PRs, with filtering and coalescing; the concatenators pack them into real encoded
NetSparse packets per destination; the fabric delivers them; the owners' server units answer with
response packets carrying the feature rows, deconcatenated into the halo buffer. The result equals
``sa`` bit for bit.

The strategy is ``sa``'s :class:`~netsparse_torch.comm.sa.HaloExchange` with a :class:`RigTransport`
in place of the all_to_all. The RIG units work in host memory; features on a GPU are staged through
pinned host buffers, and the copies are reported apart (``staging_*`` counters).

Backward: gradient rows go back to their owners by a reverse exchange (an all_to_all of exactly the
halo gradient rows, as in ``sa``), not as NetSparse packets: the paper's RIG is a gather, and the
reverse scatter-add has no RIG counterpart. Its bytes are counted in the traffic meter and in the
``backward`` entries of the statistics.
"""

from __future__ import annotations

from collections import defaultdict

import torch

from hw_models import unit_args
from hw_models.units import RigNode
from netsparse_torch.comm.halo import HostStaging, InFlight, Pending
from netsparse_torch.comm.rig import gather_columns
from netsparse_torch.comm.sa import HaloExchange
from netsparse_torch.errors import ConfigError
from netsparse_torch.fabric import CollectiveFabric, Fabric
from netsparse_torch.plan import Plan

COUNTERS = ("idxs", "local", "filtered", "coalesced", "prs_issued", "packets", "prs", "header_bytes",
            "payload_bytes", "wire_bytes", "rounds")
STAGING = ("staging_to_host_s", "staging_to_device_s", "staging_to_host_bytes", "staging_to_device_bytes")
RIG_OPTIONS = ("n_units", "n_client_units", "batch_size", "pending_capacity", "filter", "coalesce", "mtu",
               "upper_bytes", "delay_cycles")


class RigTransport:
    """The halo filled by this node's RIG units over a fabric, in host memory (NetSparse §5: the
    SmartNIC reads properties from host memory); features on a GPU are staged through pinned host
    buffers (:class:`~netsparse_torch.comm.halo.HostStaging`)."""

    name = "rig"

    def __init__(self, plan: Plan, node: RigNode, fabric: Fabric | None, overlap: bool = True,
                 staging: HostStaging | None = None):
        self.plan, self.node, self.fabric, self.overlap = plan, node, fabric, bool(overlap)
        self.staging = staging or HostStaging()
        self.slots = plan.rig_slots()
        self._layers: dict[str, dict] = defaultdict(lambda: defaultdict(int))

    def start(self, x: torch.Tensor, halo: torch.Tensor, tag: str) -> Pending:
        """Starts the RIG kernels that fill ``halo`` in a background thread; ``wait()`` on the result
        (it raises the gather's error, e.g. RigTimeoutError with the halo zeroed)."""
        self.node.reset_stats()
        staging = self.staging
        x_host = staging.to_host(x)
        halo_host = staging.host_buffer(halo)

        def gather() -> None:
            try:
                _, rounds = gather_columns(self.node, self.fabric, x_host, self.plan.rig_idxs, self.slots,
                                           self.plan.n_halo, out=halo_host)
            except BaseException:
                if halo_host is not halo:
                    halo.zero_()  # as the host halo: no half-gathered rows reach the SpMM
                raise
            staging.to_device(halo_host, halo)  # a side-stream copy on CUDA: overlaps the own-block SpMM
            self.record(tag, "forward", {**self.node.stats(), "rounds": rounds})

        return _Staged(InFlight(gather, background=self.overlap), staging)

    def record_reverse(self, tag: str, nbytes: int) -> None:
        self.record(tag, "backward", {"mechanism": "reverse_exchange", "payload_bytes": nbytes,
                                      "wire_bytes": nbytes})

    def record(self, tag: str, direction: str, stats: dict) -> None:
        entry = self._layers[f"{tag}/{direction}"]
        for key, value in stats.items():
            if key in COUNTERS:
                entry[key] += value
            elif key == "mechanism":
                entry[key] = value

    def counters(self) -> dict:
        return {"layers": {k: dict(v) for k, v in self._layers.items()}, "staging": self.staging.counters()}

    def add_counters(self, counters: dict) -> None:
        for key, stats in counters.get("layers", {}).items():
            self.record(*key.rsplit("/", 1), stats)
        self.staging.add_counters(counters.get("staging", {}))

    def stats(self) -> dict:
        """Per-layer counters and, when the gathers were staged, the staging copies' totals (read here,
        once: reading CUDA copy times waits for their events, which the gathers themselves must not)."""
        out = {"layers": {k: dict(v) for k, v in self._layers.items()}}
        staging = self.staging.stats()
        if staging["staging_to_host_bytes"]:
            out["staging"] = staging
        return out


class _Staged:
    """A RIG gather in flight; ``wait()`` joins it and makes the caller's stream wait for the copy of the
    halo to the device (the host does not wait for it)."""

    def __init__(self, inflight: InFlight, staging: HostStaging):
        self.inflight, self.staging = inflight, staging

    def wait(self) -> None:
        self.inflight.wait()
        self.staging.join()


class NetSparse(HaloExchange):
    """``sa``'s exchange with the RIG transport. Options: ``hardware`` (the run's
    :class:`~hw_models.params.HardwareParams`; default NetSparse Table 5), from which the RIG node takes
    its settings (:func:`hw_models.unit_args.rig_node`), RigNode's keywords (:data:`RIG_OPTIONS`, which
    replace single settings: a library caller's; the run layer gives none), ``fabric`` (a
    :class:`~netsparse_torch.fabric.base.Fabric` over the ranks of ``group``, e.g. the SwitchFabric
    the run layer attached; default: a :class:`~netsparse_torch.fabric.CollectiveFabric` on ``group``),
    ``overlap`` (default True: the RIG kernels run in a background thread while the own-block SpMM
    runs; False runs them before it, to measure what the overlap buys) and ``stage`` (True: stage
    through host buffers also on CPU, the CPU twin of the GPU path; on CUDA the staging always runs)."""

    name = "netsparse"

    def __init__(self, plan, group=None, fabric: Fabric | None = None, overlap: bool = True, stage: bool = False,
                 hardware=None, **options):
        node = rig_node(plan.rank, plan.bounds.tolist(), hardware, **options)
        transport = RigTransport(plan, node, _fabric(fabric, plan, group), overlap, HostStaging(always=stage))
        super().__init__(plan, group=group, transport=transport, **options)

    @property
    def node(self) -> RigNode:
        return self.transport.node


def rig_node(rank: int, bounds: list[int], hardware=None, **options) -> RigNode:
    """The RigNode of ``rank``: its settings from ``hardware`` (None: NetSparse Table 5), single ones
    replaced by ``options`` (:data:`RIG_OPTIONS`; None = not given; an infinite delay is ``math.inf``)."""
    unknown = set(options) - set(RIG_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown netsparse option(s) {sorted(unknown)}; known: {', '.join(RIG_OPTIONS)}")
    rig = {k: v for k, v in options.items() if v is not None}
    return RigNode(rank, bounds, **unit_args.rig_node(hardware, **rig))


def _fabric(fabric, plan: Plan, group) -> Fabric | None:
    if fabric is None:
        return CollectiveFabric(group) if plan.world_size > 1 else None
    if not isinstance(fabric, Fabric):
        raise ConfigError(f"netsparse: fabric must be a Fabric object (with run_kernel), got {fabric!r}; "
                          "the run layer builds it from fabric=collective|switch")
    if fabric.world_size != plan.world_size:
        raise ConfigError(f"netsparse: the fabric connects {fabric.world_size} ranks, the plan has "
                          f"{plan.world_size}")
    return fabric


def summarize(per_rank: list[dict]) -> dict:
    """The report's ``netsparse`` block: counters summed over ranks, run totals at the top level,
    and ``layers`` broken down per layer and direction."""
    layers: dict[str, dict] = defaultdict(lambda: defaultdict(int))
    for rank_stats in per_rank:
        for key, entry in rank_stats.get("layers", {}).items():
            for name, value in entry.items():
                if isinstance(value, str):
                    layers[key][name] = value
                else:
                    layers[key][name] += value
    forward = [v for k, v in layers.items() if k.endswith("/forward")]
    totals = {name: sum(v.get(name, 0) for v in forward) for name in COUNTERS}
    staged = [r["staging"] for r in per_rank if "staging" in r]
    totals.update({name: sum(st[name] for st in staged) for name in STAGING} if staged else {})
    totals["backward_bytes"] = sum(v.get("payload_bytes", 0) for k, v in layers.items() if k.endswith("/backward"))
    for entry in [totals, *forward]:
        wire = entry.get("wire_bytes", 0)
        entry["goodput"] = entry.get("payload_bytes", 0) / wire if wire else 0.0
        entry["prs_per_packet"] = entry.get("prs", 0) / entry["packets"] if entry.get("packets") else 0.0
    return {**totals, "layers": {k: dict(v) for k, v in sorted(layers.items())},
            "note": "forward gathers are NetSparse packets (header = Fig. 6 sizes + 50 B upper layers); "
                    "backward is a reverse exchange of gradient rows (payload only)"}
