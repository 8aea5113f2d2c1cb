"""Per link time series of a NetSparse simulation (``stats=links``), as SST's per-component statistics give
them: each directed link's utilisation, bytes, packets and egress queue in fixed time bins.

The C++ packet network records them (``csrc/sim/link_stats.h``); a switch port is the link it sends on,
so a switch's egress port queue is its outgoing link's queue. All values are modeled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw_models.errors import ConfigError

AUTOMATIC = "auto"
"""``link_stats_bin_ps`` for bins that start at 1 ns and double until the run fits 128-256 of them."""
_CXX_AUTOMATIC = -1  # csrc/sim/link_stats.h kLinkStatsAuto

CSV_COLUMNS = ("bin", "t0_us", "t1_us", "link", "src", "dst", "utilisation", "bytes", "packets",
               "mean_queue_packets", "max_queue_packets")
"""``links.csv``: one row per bin and link; utilisation is busy time over the bin's time (the last bin ends
with the run), the queue counts packets waiting to start on the link."""


def cxx_bin_ps(link_stats_bin_ps: int | str | None) -> int:
    """The simulator's argument for ``link_stats_bin_ps``: ``None`` off (0), :data:`AUTOMATIC`, or a bin
    width in ps (> 0)."""
    if link_stats_bin_ps is None:
        return 0
    if link_stats_bin_ps == AUTOMATIC:
        return _CXX_AUTOMATIC
    if isinstance(link_stats_bin_ps, bool) or not isinstance(link_stats_bin_ps, (int, np.integer)) \
            or link_stats_bin_ps <= 0:
        raise ConfigError(f"link statistics need a bin width > 0 ps or {AUTOMATIC!r}, got {link_stats_bin_ps!r}")
    return int(link_stats_bin_ps)


@dataclass(frozen=True)
class LinkSeries:
    """Each statistic as ``[bins, links]``; bin ``b`` covers ``[b, b + 1) * bin_ps``."""

    bin_ps: int
    end_ps: int
    """When the last node finished: the last bin is cut there."""
    names: tuple[str, ...]
    """Per link ``<from> > <to>``: ``node i``, ``tor s`` (a switch with hosts) or ``switch s``."""
    busy_ps: np.ndarray
    bytes: np.ndarray
    packets: np.ndarray
    queue_ps: np.ndarray
    """Integral of the queue length over the bin (packets x ps)."""
    queue_max: np.ndarray
    """Most packets waiting at once for a positive time."""

    @property
    def bins(self) -> int:
        return int(self.busy_ps.shape[0])

    def bin_span_ps(self) -> np.ndarray:
        """``[bins]`` ps each bin covers (the last one only up to the run's end)."""
        t0 = np.arange(self.bins, dtype=np.int64) * self.bin_ps
        return np.maximum(np.minimum(t0 + self.bin_ps, self.end_ps) - t0, 1)

    def utilisation(self) -> np.ndarray:
        """``[bins, links]``: busy share of each bin."""
        return self.busy_ps / self.bin_span_ps()[:, None]

    def mean_queue(self) -> np.ndarray:
        """``[bins, links]``: mean packets waiting."""
        return self.queue_ps / self.bin_span_ps()[:, None]

    def busiest(self, n: int) -> list[int]:
        """The ``n`` links busy longest over the run, busiest first (ties by link id)."""
        total = self.busy_ps.sum(axis=0)
        order = np.lexsort((np.arange(len(total)), -total))
        return [int(i) for i in order[:n] if total[i] > 0]

    def rows(self):
        """The rows of ``links.csv`` (:data:`CSV_COLUMNS`), bin after bin."""
        span = self.bin_span_ps()
        util, queue = self.utilisation(), self.mean_queue()
        for b in range(self.bins):
            t0 = b * self.bin_ps
            for li, name in enumerate(self.names):
                src, dst = name.split(" > ")
                yield (b, t0 / 1e6, (t0 + int(span[b])) / 1e6, li, src, dst, float(util[b, li]),
                       int(self.bytes[b, li]), int(self.packets[b, li]), float(queue[b, li]),
                       int(self.queue_max[b, li]))


def link_names(link_src: np.ndarray, link_dst: np.ndarray, n_hosts: int, switch_is_tor: np.ndarray) -> tuple[str, ...]:
    """``<from> > <to>`` of each directed link (vertices below ``n_hosts`` are nodes, the rest switches)."""

    def vertex(v: int) -> str:
        if v < n_hosts:
            return f"node {v}"
        s = v - n_hosts
        return f"tor {s}" if switch_is_tor[s] else f"switch {s}"

    return tuple(f"{vertex(int(s))} > {vertex(int(d))}" for s, d in zip(link_src, link_dst, strict=True))


def from_simulator(out: dict, names: tuple[str, ...], end_ps: int) -> LinkSeries:
    """The simulator's ``link_stats`` dict as a :class:`LinkSeries`."""
    return LinkSeries(bin_ps=int(out["bin_ps"]), end_ps=int(end_ps), names=names,
                      **{k: np.asarray(out[k]) for k in ("busy_ps", "bytes", "packets", "queue_ps", "queue_max")})
