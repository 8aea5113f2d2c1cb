"""Seeded synthetic graphs for the three shapes the real files only partly cover.

All return a symmetric 0/1 pattern without self loops; they are vectorised numpy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from hw_models.errors import ConfigError

SHAPES = ("powerlaw", "banded", "road")


def power_law(n: int, avg_degree: float = 16.0, exponent: float = 2.1, seed: int = 0) -> sp.csr_matrix:
    """Web/social-like: Chung-Lu random graph with power-law expected degrees (exponent ``gamma``)."""
    rng = np.random.default_rng(seed)
    w = (np.arange(1, n + 1, dtype=np.float64)) ** (-1.0 / (exponent - 1.0))
    w *= avg_degree * n / w.sum()
    m = int(avg_degree * n / 2)
    p = w / w.sum()
    src = rng.choice(n, size=m, p=p)
    dst = rng.choice(n, size=m, p=p)
    # Shuffle ids so hubs are spread over the row blocks, as in real crawls.
    perm = rng.permutation(n)
    return _symmetric(perm[src], perm[dst], n)


def banded(n: int, bandwidth: int = 32, density: float = 0.25, seed: int = 0) -> sp.csr_matrix:
    """FEM-like: nonzeros within ``bandwidth`` of the diagonal, each kept with probability ``density``."""
    rng = np.random.default_rng(seed)
    offsets = np.arange(1, bandwidth + 1)
    rows = np.repeat(np.arange(n), offsets.size)
    cols = rows + np.tile(offsets, n)
    keep = (cols < n) & (rng.random(rows.size) < density)
    return _symmetric(rows[keep], cols[keep], n)


def road(n: int, drop: float = 0.3, diagonal: float = 0.05, seed: int = 0) -> sp.csr_matrix:
    """Road-like planar graph: a 2-D grid with a share of streets removed and a few diagonals."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    ids = np.arange(n)
    r, c = ids // side, ids % side
    pairs = []
    for dr, dc, p_keep in ((0, 1, 1 - drop), (1, 0, 1 - drop), (1, 1, diagonal)):
        nbr = (r + dr) * side + (c + dc)
        ok = (c + dc < side) & (nbr < n) & (rng.random(n) < p_keep)
        pairs.append((ids[ok], nbr[ok]))
    src = np.concatenate([p[0] for p in pairs])
    dst = np.concatenate([p[1] for p in pairs])
    return _symmetric(src, dst, n)


def generate(shape: str, n: int, seed: int = 0, **params) -> sp.csr_matrix:
    if shape not in SHAPES:
        raise ConfigError(f"unknown synthetic shape {shape!r}; choose one of {', '.join(SHAPES)}")
    if n < 2:
        raise ConfigError(f"synthetic graph needs n >= 2, got {n}")
    return {"powerlaw": power_law, "banded": banded, "road": road}[shape](n, seed=seed, **params)


def _symmetric(src: np.ndarray, dst: np.ndarray, n: int) -> sp.csr_matrix:
    keep = src != dst
    src, dst = src[keep], dst[keep]
    a = sp.csr_matrix((np.ones(2 * src.size, dtype=np.float32),
                       (np.concatenate([src, dst]), np.concatenate([dst, src]))), shape=(n, n))
    a.sum_duplicates()
    a.data[:] = 1.0
    a.sort_indices()
    return a
