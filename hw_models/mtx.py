"""Matrix Market input without torch (``netsparse-simulate`` and the hw_models tools need only the
pattern; the training loaders in :mod:`netsparse_torch.graph.loaders` build on it)."""

from __future__ import annotations

import os
from pathlib import Path

import scipy.io
import scipy.sparse as sp

from hw_models.errors import DatasetNotFoundError, GraphInputError


def default_data_root() -> Path:
    """The shared data directory: ``$NETSPARSE_DATA``, else ``../shared/data`` beside the project."""
    env = os.environ.get("NETSPARSE_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def read_mtx(path: Path) -> sp.csr_matrix:
    """The sparsity pattern of a Matrix Market file (``.mtx`` or ``.mtx.gz``), symmetric files expanded."""
    m = _read(_existing(path))
    m.data[:] = 1.0
    return m


def read_mtx_values(path: Path) -> sp.csr_matrix:
    """The values of a Matrix Market file, on the same pattern as :func:`read_mtx` (duplicate entries
    add, explicit zeros stay entries). A ``pattern`` file has no values and a ``complex`` one no real
    ones: each is one :class:`GraphInputError`."""
    path = _existing(path)
    try:
        field = scipy.io.mminfo(str(path))[4]
    except Exception as exc:  # scipy raises several types for a bad header
        raise GraphInputError(f"{path}: not a readable Matrix Market file ({exc})") from exc
    if field in ("pattern", "complex"):
        raise GraphInputError(f"{path}: a {field} Matrix Market file has no real values to weigh edges with; "
                              "leave dataset.weighted=false (the graph is its pattern)")
    return _read(path).astype("float64")


def _read(path: Path) -> sp.csr_matrix:
    try:
        m = scipy.io.mmread(str(path))
    except Exception as exc:  # scipy raises several types for a bad header or body
        raise GraphInputError(f"{path}: not a readable Matrix Market file ({exc})") from exc
    if not sp.issparse(m):
        m = sp.csr_matrix(m)
    m = m.tocsr()
    m.sum_duplicates()
    m.sort_indices()
    return m


def _existing(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise DatasetNotFoundError(f"dataset file not found: {path}")
    return path
