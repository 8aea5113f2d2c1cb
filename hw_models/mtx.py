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
    path = _existing(path)
    try:
        m = scipy.io.mmread(str(path))
    except Exception as exc:  # scipy raises several types for a bad header or body
        raise GraphInputError(f"{path}: not a readable Matrix Market file ({exc})") from exc
    if not sp.issparse(m):
        m = sp.csr_matrix(m)
    m = m.tocsr()
    m.data[:] = 1.0
    m.sum_duplicates()
    m.sort_indices()
    return m



def _existing(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise DatasetNotFoundError(f"dataset file not found: {path}")
    return path
