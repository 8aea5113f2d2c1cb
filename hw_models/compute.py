"""Compute models for end-to-end strong scaling (NetSparse Figs. 13 and 21), and how compute and
communication combine.

Both models give a per-node time for the local part of a sparse kernel from per-node work counts
(:class:`NodeWork`: rows, nonzeros), so the tail node is the slowest node.

**SPADE-like accelerator** (NetSparse §8: 128 PEs at 1 GHz with 800 GB/s HBM): a roofline,

    t = max(flops / peak_flops, bytes / hbm_bytes_per_s)
    peak_flops = pes * clock * flops_per_pe_cycle

with, for SpMM (SpMV is K=1) of a node with ``nnz`` nonzeros and ``rows`` rows, ``e``-byte elements:

    flops = 2 * nnz * K                                   (one multiply-add per nonzero and column)
    bytes = nnz * (index_bytes + e) + (rows + 1) * pointer_bytes     (A in CSR)
          + nnz * K * e                                   (one B row gathered per nonzero, no reuse)
          + rows * K * e                                  (C written once)

and for SDDMM (``C = A .* (X Y^T)`` on the pattern of A): the same flops, and bytes of the pattern,
``rows * K * e`` of X, ``nnz * K * e`` of gathered Y rows and ``nnz * e`` of output values.
``flops_per_pe_cycle = 32`` (one 16-lane fp32 fused multiply-add per cycle, a 64 B line) and the
no-reuse gather are our assumptions; ``b_reuse=True`` charges each distinct B row once instead.

**CPU model**: ``t = nnz * K / rate`` with ``rate`` in nonzero-columns per second (half the
GFLOP/s), calibrated by timing the project's own local SpMM kernel on this machine
(:func:`netsparse_torch.calibration.calibrate_cpu`, a measurement, so it lives with the runtime);
``CPUModel.from_gflops`` takes a rate measured elsewhere.

**Combination** of a node's compute time ``c`` and communication time ``m``: ``none`` (no overlap)
gives ``c + m``; ``full`` overlap gives ``max(c, m)``. The end-to-end time is the tail node's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw_models.errors import ConfigError

KERNELS = ("spmm", "spmv", "sddmm")
OVERLAPS = ("none", "full")


@dataclass(frozen=True)
class NodeWork:
    """Per-node work of a partitioned sparse kernel."""

    rows: np.ndarray
    """Rows of A each node owns."""
    nnz: np.ndarray
    """Nonzeros in each node's rows."""
    distinct_cols: np.ndarray
    """Distinct column ids in each node's rows (distinct B rows it reads)."""

    @classmethod
    def of(cls, w) -> NodeWork:
        """From a :class:`hw_models.definitions.Workload` (its streaming pass counted both)."""
        return cls(np.diff(w.row_bounds), np.asarray(w.node_nnz, dtype=np.int64), w.node_distinct_cols)


def node_work(a, nodes: int, partition: str = "rows") -> NodeWork:
    """Rows, nonzeros and distinct columns per node for a 1D row partition (one streaming pass over the
    :class:`~hw_models.pattern.Pattern`; a scipy matrix is converted once)."""
    from hw_models.definitions import workload

    return NodeWork.of(workload(a, nodes, partition, cores=1))


def _check_k(k: int, kernel: str) -> int:
    if kernel not in KERNELS:
        raise ConfigError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    return 1 if kernel == "spmv" else k


@dataclass(frozen=True)
class AcceleratorModel:
    """SPADE-like accelerator roofline (NetSparse §8, Figs. 13 and 21)."""

    pes: int = 128
    """Processing elements. NetSparse §8 (SPADE-like, 128 PEs)."""
    clock_ghz: float = 1.0
    """PE clock. NetSparse §8 (1 GHz)."""
    hbm_gb_per_s: float = 800.0
    """Memory bandwidth in GB/s. NetSparse §8 (800 GB/s HBM)."""
    flops_per_pe_cycle: float = 32.0
    """Our assumption: one 16-lane fp32 multiply-add per PE per cycle."""
    element_bytes: int = 4
    """Our assumption: fp32 values and features."""
    index_bytes: int = 4
    """Our assumption: 32-bit column indices."""
    pointer_bytes: int = 8
    """Our assumption: 64-bit row pointers."""
    b_reuse: bool = False
    """Our assumption: no on-chip reuse of gathered B rows (``True`` reads each distinct row once)."""

    def __post_init__(self) -> None:
        for name in ("pes", "clock_ghz", "hbm_gb_per_s", "flops_per_pe_cycle", "element_bytes",
                     "index_bytes", "pointer_bytes"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"AcceleratorModel.{name} must be > 0, got {getattr(self, name)}")

    @property
    def peak_flops(self) -> float:
        """Peak flop/s: ``pes * clock * flops_per_pe_cycle``."""
        return self.pes * self.clock_ghz * 1e9 * self.flops_per_pe_cycle

    def flops(self, w: NodeWork, k: int, kernel: str = "spmm") -> np.ndarray:
        """``2 * nnz * K`` per node."""
        k = _check_k(k, kernel)
        return 2.0 * w.nnz * k

    def bytes(self, w: NodeWork, k: int, kernel: str = "spmm") -> np.ndarray:
        """Memory traffic per node (see the module docstring for the formula)."""
        k = _check_k(k, kernel)
        e = self.element_bytes
        gathered = (w.distinct_cols if self.b_reuse else w.nnz) * k * e
        if kernel == "sddmm":
            return w.nnz * self.index_bytes + (w.rows + 1) * self.pointer_bytes + w.rows * k * e + gathered \
                + w.nnz * e
        return w.nnz * (self.index_bytes + e) + (w.rows + 1) * self.pointer_bytes + gathered + w.rows * k * e

    def time_s(self, w: NodeWork, k: int, kernel: str = "spmm") -> np.ndarray:
        """Roofline time per node: ``max(flops / peak, bytes / bandwidth)``."""
        return np.maximum(self.flops(w, k, kernel) / self.peak_flops,
                          self.bytes(w, k, kernel) / (self.hbm_gb_per_s * 1e9))


@dataclass(frozen=True)
class CPUModel:
    """A node computes ``nnz * K`` multiply-adds at a measured rate."""

    nnz_k_per_s: float
    """Nonzero-columns per second (``GFLOP/s * 1e9 / 2``), measured on a real kernel."""
    source: str = "given"
    """Where the rate comes from (e.g. the calibration graph and K), for reports."""

    def __post_init__(self) -> None:
        if not (self.nnz_k_per_s > 0 and np.isfinite(self.nnz_k_per_s)):
            raise ConfigError(f"CPU rate must be a positive finite number, got {self.nnz_k_per_s}")

    @classmethod
    def from_gflops(cls, gflops: float, source: str = "given GFLOP/s") -> CPUModel:
        """From a measured SpMM rate in GFLOP/s (2 flops per nonzero-column)."""
        return cls(gflops * 1e9 / 2, source)

    @classmethod
    def from_seconds(cls, seconds: float, nnz: int, k: int, source: str = "given time") -> CPUModel:
        """From one measured SpMM: ``seconds`` for ``nnz`` nonzeros at width ``k``."""
        if not seconds > 0:
            raise ConfigError(f"measured time must be > 0, got {seconds}")
        return cls(nnz * k / seconds, source)

    @property
    def gflops(self) -> float:
        """The rate in GFLOP/s."""
        return 2 * self.nnz_k_per_s / 1e9

    def time_s(self, w: NodeWork, k: int, kernel: str = "spmm") -> np.ndarray:
        """``nnz * K / rate`` per node."""
        return w.nnz * _check_k(k, kernel) / self.nnz_k_per_s


def combine(compute_s: np.ndarray, comm_s: np.ndarray, overlap: str = "none") -> np.ndarray:
    """Per-node end-to-end time: ``compute + comm`` (``none``) or ``max(compute, comm)`` (``full``)."""
    if overlap not in OVERLAPS:
        raise ConfigError(f"unknown overlap {overlap!r}; choose one of {', '.join(OVERLAPS)}")
    c, m = np.broadcast_arrays(np.asarray(compute_s, dtype=np.float64), np.asarray(comm_s, dtype=np.float64))
    return c + m if overlap == "none" else np.maximum(c, m)


def end_to_end_s(compute_s: np.ndarray, comm_s: np.ndarray, overlap: str = "none") -> float:
    """The tail node's combined time."""
    return float(combine(compute_s, comm_s, overlap).max())
