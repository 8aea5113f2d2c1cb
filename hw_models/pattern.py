"""The sparsity pattern of a matrix at the papers' scale: CSR without values, int32 column ids.

A NetSparse workload only needs *which* entries exist (a nonzero ``(r, c)`` makes the owner of row
``r`` read property ``c``), so the values that scipy carries (float64 by default: 8 B per nonzero)
are dead weight at 10^8-10^9 nonzeros. :class:`Pattern` holds ``indptr`` (int64, one per row + 1)
and ``indices`` (int32 when the column count allows: 4 B per nonzero), in canonical order: columns
ascending within a row, no duplicates. It is the one matrix type of the modeling path
(``hw_models``); generators of paper-scale analogs write it directly, and scipy matrices convert
with :func:`as_pattern` (a copy only when the input is not already canonical with int32 ids).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from hw_models.errors import GraphInputError

INT32_MAX = np.iinfo(np.int32).max


@dataclass(frozen=True, eq=False)
class Pattern:
    """A canonical CSR pattern: ``indptr`` int64 ``[n_rows + 1]``, ``indices`` int32/int64 ``[nnz]``."""

    indptr: np.ndarray
    indices: np.ndarray
    shape: tuple[int, int]

    def __post_init__(self) -> None:
        n_rows, n_cols = self.shape
        if self.indptr.dtype != np.int64 or self.indptr.ndim != 1 or len(self.indptr) != n_rows + 1:
            raise GraphInputError(f"Pattern: indptr must be int64 of length n_rows + 1 = {n_rows + 1}")
        if self.indices.dtype not in (np.int32, np.int64) or self.indices.ndim != 1:
            raise GraphInputError("Pattern: indices must be a 1-D int32 or int64 array")
        if int(self.indptr[-1]) != len(self.indices) or int(self.indptr[0]) != 0:
            raise GraphInputError("Pattern: indptr must start at 0 and end at len(indices)")
        if n_rows < 1 or n_cols < 1:
            raise GraphInputError(f"Pattern: expected a non-empty matrix, got shape {self.shape}")

    @property
    def nnz(self) -> int:
        return len(self.indices)

    @property
    def n_rows(self) -> int:
        return self.shape[0]

    @property
    def n_cols(self) -> int:
        return self.shape[1]

    def row_nnz(self) -> np.ndarray:
        """Nonzeros per row (int64)."""
        return np.diff(self.indptr)

    def to_scipy(self) -> sp.csr_matrix:
        """A float32 scipy CSR of ones (a copy of the pattern: for small matrices and tests only)."""
        return sp.csr_matrix((np.ones(self.nnz, dtype=np.float32), self.indices.copy(), self.indptr.copy()),
                             shape=self.shape)


def as_pattern(a: Pattern | sp.spmatrix | sp.sparray) -> Pattern:
    """``a`` as a canonical :class:`Pattern`; a :class:`Pattern` is returned as it is.

    A scipy matrix is summed over duplicates (explicit zeros stay entries: they are stored, so a
    kernel reads them) and sorted by column within each row, on a copy; ``indices`` become int32
    when every column id fits.
    """
    if isinstance(a, Pattern):
        return a
    if not sp.issparse(a):
        raise GraphInputError(f"expected a scipy sparse matrix or a Pattern, got {type(a).__name__}")
    if a.ndim != 2 or 0 in a.shape:
        raise GraphInputError(f"expected a non-empty 2-D sparse matrix, got shape {a.shape}")
    m = sp.csr_matrix(a, copy=True)
    m.sum_duplicates()
    m.sort_indices()
    dtype = np.int32 if m.shape[1] - 1 <= INT32_MAX else np.int64
    return Pattern(m.indptr.astype(np.int64), m.indices.astype(dtype), (int(m.shape[0]), int(m.shape[1])))


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``numpy.unique`` of a 1-D array, by one sort. numpy 2.3+ takes a hash-based path for integers,
    which took 25 s for 2.7 M int32 column ids on this project's host (numpy 2.4.6) against 0.23 s for
    this: a rank's halo at the papers' scale."""
    s = np.sort(np.asarray(a).ravel())
    if s.size == 0:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
