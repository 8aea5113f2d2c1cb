"""Contiguous row blocks of a given numbering.

``rows``: block sizes exactly as ``numpy.array_split(range(n), world_size)`` gives them.
``nnz``: contiguous blocks whose nonzero counts are as equal as contiguity allows (each block keeps
at least one row).
"""

from __future__ import annotations

import numpy as np

from hw_models.errors import ConfigError

ROW_MODES = ("rows", "nnz")


def row_bounds(n: int, world_size: int, mode: str = "rows", indptr: np.ndarray | None = None,
               parts: tuple[str, str] = ("world_size", "ranks")) -> np.ndarray:
    """Block boundaries ``b`` of length ``world_size + 1``: part ``p`` owns rows ``[b[p], b[p+1])``.
    ``parts``: the key that set the count and what a part is, for the errors (the simulator's nodes)."""
    key, noun = parts
    if mode not in ROW_MODES:
        raise ConfigError(f"unknown partition {mode!r} for row blocks; choose one of {', '.join(ROW_MODES)}")
    if world_size < 1:
        raise ConfigError(f"{key} must be >= 1, got {world_size}")
    if world_size > n:
        raise ConfigError(f"{key}={world_size} is larger than the graph's {n} rows; use at most {n} {noun}")
    if mode == "rows":  # numpy.array_split sizes without materialising range(n)
        base, extra = divmod(n, world_size)
        sizes = np.full(world_size, base, dtype=np.int64)
        sizes[:extra] += 1
        return np.concatenate([[0], np.cumsum(sizes)])
    if indptr is None or len(indptr) != n + 1:
        raise ConfigError("partition=nnz needs the CSR row pointer of the adjacency")
    nnz = int(indptr[-1])
    targets = (np.arange(1, world_size) * nnz) / world_size
    cuts = np.searchsorted(np.asarray(indptr), targets, side="left").astype(np.int64)
    bounds = np.concatenate([[0], cuts, [n]])
    for p in range(1, world_size):  # keep every block non-empty
        bounds[p] = min(max(bounds[p], bounds[p - 1] + 1), n - (world_size - p))
    return bounds


def owner_of(ids: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The part owning each global row id."""
    return np.searchsorted(bounds, ids, side="right") - 1
