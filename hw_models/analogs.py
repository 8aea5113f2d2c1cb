"""Analogs of the five matrices of NetSparse Table 6 at the paper's scale (their fit: docs/experiments.md).

``matrix=paper:<name>[@scale]`` in ``netsparse-simulate`` selects one; ``scale`` in (0, 1] keeps the
shape with that share of the rows and nonzeros (``paper:arabic@0.05``). The C++ generators
(``csrc/graph/analogs.cpp``) write a :class:`~hw_models.pattern.Pattern` directly: int32
column ids, canonical rows, one copy of the CSR, no Python loop per nonzero. Output depends only on
the parameters and the seed (counter-based random streams keyed on (seed, row)), never on threads.

The analogs are *not* the paper's matrices: they are synthetic patterns whose workload statistics
match the paper's at 128 nodes, ``partition=rows`` (Tables 1 and 4, computed by
:mod:`hw_models.definitions`). The generator parameters below were fitted to those 15 numbers only
(``benchmarks/fit_analogs.py``), never to a speedup; the calibration table is in
``docs/experiments.md``. Every position is a fraction of a segment (``segments`` = 128 row blocks
of ``numpy.array_split`` sizes), so a scaled-down analog keeps the statistics of the full one; the
tolerance that holds at ``@0.01``-``@0.05`` is :data:`SCALED_TOLERANCE`.

Optional cache: :func:`load` with ``cache_dir`` writes the pattern as ``.npy`` files (read back with
``mmap_mode``) beside a JSON sidecar with the generator version, parameters, seed, scale and a
BLAKE2b checksum; the file name carries a digest of all of them, so a sweep generates each analog
once and a changed parameter never reads a stale file. Parallel jobs of a sweep share the cache: one
generates an analog under a lock (``<stem>.lock``) while the others wait, then read its files; each file
is written under a temporary name and renamed, so no reader sees half a file. A checksum mismatch is one
:class:`~hw_models.errors.GraphInputError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hw_models.errors import ConfigError, GraphInputError
from hw_models.files import locked, temporary, write_text_atomic
from hw_models.native import graph as _graph
from hw_models.pattern import Pattern

GENERATOR_VERSION = 1
"""Bumped whenever a generator's output changes for the same parameters (invalidates caches)."""

SEGMENTS = 128
"""Row blocks the generators lay the matrix out in: the node blocks of the paper's 128 nodes."""

MIN_ROWS_PER_SEGMENT = 16
"""Smallest segment a scaled analog may have (the bands and windows need room)."""

SCALED_TOLERANCE = 0.10
"""Relative deviation of each statistic at ``@0.01``-``@0.05`` from its full-size value that the tests
allow (europe's SA ratio: 0.01 absolute). Our choice: the statistics are scale-invariant by
construction; what remains is sampling noise of the smaller matrix."""


@dataclass(frozen=True)
class PaperMatrix:
    """One matrix of NetSparse Table 6, its paper statistics and its analog's generator parameters."""

    name: str
    full_name: str
    kind: str
    rows: int
    """Rows (= columns) of the paper's matrix (NetSparse Table 6; exact SuiteSparse/LAW sizes)."""
    nnz: int
    """Nonzeros of the paper's matrix (NetSparse Table 6; exact SuiteSparse/LAW sizes)."""
    su_redundant_per_useful: float
    """NetSparse Table 1, SU redundant transfers per useful one (128 nodes)."""
    sa_redundant_per_useful: float
    """NetSparse Table 1, SA redundant transfers per useful one (128 nodes)."""
    dest_locality_64: float
    """NetSparse Table 4, distinct destinations per 64 consecutive PRs (128 nodes)."""
    family: str
    """Generator family: ``web``, ``road`` or ``fem`` (``csrc/graph/analogs.h``)."""
    params: dict = field(default_factory=dict)
    """Generator parameters, fitted by ``benchmarks/fit_analogs.py`` to the three statistics above."""
    full_size: dict = field(default_factory=dict)
    """The analog's own statistics at full size (``python -m netsparse_torch.cli.analog_calibration --scale 1``,
    docs/experiments.md): what scaled analogs are held to within :data:`SCALED_TOLERANCE`."""

    def targets(self) -> dict[str, float]:
        """The paper's statistics, keyed like the simulator report."""
        return {"su_redundant_per_useful": self.su_redundant_per_useful,
                "sa_redundant_per_useful": self.sa_redundant_per_useful,
                "dest_locality_64": self.dest_locality_64}


def _stats(su: float, sa: float, locality: float) -> dict[str, float]:
    return {"su_redundant_per_useful": su, "sa_redundant_per_useful": sa, "dest_locality_64": locality}


PAPER_MATRICES: dict[str, PaperMatrix] = {
    m.name: m for m in (
        # name, full name, kind, rows, nnz (Table 6); SU, SA redundancy (Table 1); locality (Table 4);
        # family, fitted parameters; the analog's statistics at full size (docs/experiments.md).
        PaperMatrix("arabic", "arabic-2005", "web crawl", 22_744_080, 639_999_458, 1947, 27, 2.51, "web", {
            "deg_xm": 15.001, "deg_alpha": 2.1, "deg_cap": 10000, "remote_prob": 0.06616, "dests": 3,
            "dest_decay": 0.1099, "popular_fraction": 0.02558, "local_window": 64},
            _stats(1950, 27.6, 2.49)),
        PaperMatrix("europe", "europe_osm", "road network", 50_912_018, 108_109_320, 582, 0.02, 7.43, "road", {
            "degree_probs": [0.095, 0.73, 0.135, 0.04], "far_prob": 0.09731, "far_reach": 8, "far_decay": 0.36572,
            "far_fraction": 1.0, "local_window": 32},
            _stats(629, 0.0241, 8.13)),
        PaperMatrix("queen", "Queen_4147", "3D FEM", 4_147_110, 316_548_962, 74, 25, 1.00, "fem", {
            "band_entries": 22.923, "band_width": 0.05, "coupling_entries": 53.407, "coupling_width": 0.36473,
            "sweep": 1.0006, "jump": 0.5},
            _stats(74.2, 25.0, 1.0)),
        PaperMatrix("stokes", "stokes", "FEM (Stokes flow)", 11_449_533, 349_321_980, 32, 3.6, 1.85, "fem", {
            "band_entries": 11.346, "band_width": 0.05, "coupling_entries": 19.164, "coupling_width": 0.52679,
            "sweep": 3.2074, "jump": 0.5},
            _stats(32.0, 3.6, 1.85)),
        PaperMatrix("uk", "uk-2002", "web crawl", 18_520_486, 298_113_762, 966, 4.5, 5.61, "web", {
            "deg_xm": 8.6982, "deg_alpha": 2.1, "deg_cap": 10000, "remote_prob": 0.04493, "dests": 8,
            "dest_decay": 0.44836, "popular_fraction": 0.02924, "local_window": 64},
            _stats(977, 4.57, 5.57)),
    )
}
"""The five analogs (NetSparse Tables 1, 4 and 6)."""


def parse(spec: str) -> tuple[PaperMatrix, float]:
    """``paper:<name>[@scale]`` -> (matrix, scale); unknown names and scales outside (0, 1] raise
    :class:`ConfigError`."""
    body = spec.split(":", 1)[1] if spec.startswith("paper:") else spec
    name, _, scale_text = body.partition("@")
    if name not in PAPER_MATRICES:
        raise ConfigError(f"unknown paper matrix {name!r}; choose one of {', '.join(sorted(PAPER_MATRICES))} "
                          "(e.g. matrix=paper:arabic@0.05)")
    try:
        scale = float(scale_text) if scale_text else 1.0
    except ValueError:
        raise ConfigError(f"paper matrix scale {scale_text!r} is not a number; give e.g. paper:{name}@0.05") from None
    if not (0 < scale <= 1) or math.isnan(scale):
        raise ConfigError(f"paper matrix scale must be in (0, 1], got {scale_text} (paper:{name}@{scale_text})")
    return PAPER_MATRICES[name], scale


def scaled_rows(m: PaperMatrix, scale: float) -> int:
    """Rows of the analog at ``scale`` (nonzeros follow from the per-row structure)."""
    n = int(round(m.rows * scale))
    if n < SEGMENTS * MIN_ROWS_PER_SEGMENT:
        raise ConfigError(f"paper:{m.name}@{scale:g} has {n} rows; the analog needs at least "
                          f"{SEGMENTS * MIN_ROWS_PER_SEGMENT} ({MIN_ROWS_PER_SEGMENT} per segment): use a larger scale")
    return n


def display_name(m: PaperMatrix, scale: float) -> str:
    """Report name, e.g. ``paper-arabic@0.05`` (``paper-arabic`` at full size)."""
    return f"paper-{m.name}" + ("" if scale == 1 else f"@{scale:g}")


def label(spec: str) -> str:
    """What ``paper:<name>[@scale]`` is, for a reader without the paper: e.g. ``synthetic analog of
    arabic-2005 at scale 0.05 (calibrated to Tables 1, 4, 6)``. The report's ``matrix.label`` and the
    simulator summary carry it, so no number of an analog is mistaken for one of the real matrix."""
    m, scale = parse(spec)
    at = "" if scale == 1 else f" at scale {scale:g}"
    return f"synthetic analog of {m.full_name}{at} (calibrated to Tables 1, 4, 6)"


def generate(m: PaperMatrix | str, scale: float = 1.0, seed: int = 0, params: dict | None = None) -> Pattern:
    """The analog of ``m`` at ``scale`` as a Pattern (``params`` overrides generator parameters). ``m``
    may be a spec ``[paper:]<name>[@scale]``; a scale in the spec wins over ``scale``."""
    if isinstance(m, str):
        m, scale = parse(m) if "@" in m else (parse(m)[0], scale)
    if not (0 < scale <= 1):
        raise ConfigError(f"paper matrix scale must be in (0, 1], got {scale}")
    n = scaled_rows(m, scale)
    p = {"segments": SEGMENTS, **m.params, **(params or {})}
    try:
        indptr, indices = _graph.generate_analog(m.family, n, int(seed), p)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"paper:{m.name}: {exc}") from exc
    return Pattern(indptr, indices, (n, n))


def _generator(m: PaperMatrix, scale: float) -> tuple[int, dict]:
    return scaled_rows(m, scale), {"segments": SEGMENTS, **m.params}


def generate_rows(m: PaperMatrix, scale: float, seed: int, begin: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``[begin, end)`` of the analog, ``(indptr int64 from 0, indices int32)``: exactly those rows of
    :func:`generate` (every row is a function of (seed, row) only), without generating the others."""
    n, p = _generator(m, scale)
    return _graph.generate_analog_rows(m.family, n, int(seed), p, int(begin), int(end))


def row_degrees(m: PaperMatrix, scale: float, seed: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nonzeros (int64) and diagonal flags (bool) of the analog's rows ``ids``, each row generated and
    dropped: the degree information of a halo, in O(len(ids)) memory."""
    n, p = _generator(m, scale)
    return _graph.analog_degrees(m.family, n, int(seed), p, np.ascontiguousarray(ids, dtype=np.int64))


def row_counts(m: PaperMatrix, scale: float, seed: int, chunk: int = 1 << 22) -> np.ndarray:
    """Nonzeros of every row (int64): one counting pass, ``chunk`` rows generated at a time, so it holds
    8 B per row and never the pattern (``partition=nnz``'s row pointer)."""
    return np.concatenate(list(_counts(m, scale, seed, chunk)))


def count_nonzeros(m: PaperMatrix, scale: float, seed: int, chunk: int = 1 << 22) -> int:
    """The analog's nonzeros: the counting pass of :func:`row_counts`, holding one chunk's counts at a time."""
    return sum(int(c.sum()) for c in _counts(m, scale, seed, chunk))


def _counts(m: PaperMatrix, scale: float, seed: int, chunk: int):
    n = scaled_rows(m, scale)
    for b in range(0, n, chunk):
        yield row_degrees(m, scale, seed, np.arange(b, min(b + chunk, n), dtype=np.int64))[0]


def pattern_bytes(m: PaperMatrix, scale: float = 1.0) -> int:
    """Bytes of the analog's Pattern (int64 row pointers, int32 column ids), from the paper's nonzero
    count scaled (the analog's own count is within a few percent of it: ``full_size`` statistics)."""
    return 8 * (scaled_rows(m, scale) + 1) + 4 * int(round(m.nnz * scale))


def digest(m: PaperMatrix, scale: float, seed: int) -> str:
    """The digest of the generator version, parameters, seed and scale: what names a cached analog, and
    what any result computed from the analog is cached by."""
    return _digest(_meta(m, scale, seed))


def load(spec: str, seed: int = 0, cache_dir: str | os.PathLike | None = None) -> tuple[Pattern, str]:
    """``(pattern, name)`` of ``paper:<name>[@scale]``, through the cache in ``cache_dir`` when given."""
    m, scale = parse(spec)
    name = display_name(m, scale)
    if cache_dir is None:
        return generate(m, scale, seed), name
    meta = _meta(m, scale, seed)
    stem = Path(cache_dir) / f"{name}-seed{seed}-{_digest(meta)}"
    if _files(stem)[2].is_file():
        return _read(stem, meta), name
    with locked(f"{stem}.lock"):  # a sweep's parallel jobs: one generates, the others wait and read its files
        if _files(stem)[2].is_file():
            return _read(stem, meta), name
        pattern = generate(m, scale, seed)
        _write(stem, meta, pattern)
    return pattern, name


def _meta(m: PaperMatrix, scale: float, seed: int) -> dict:
    return {"generator": "hw_models.analogs", "version": GENERATOR_VERSION, "matrix": m.name,
            "family": m.family, "params": {"segments": SEGMENTS, **m.params}, "seed": int(seed), "scale": scale}


def _digest(meta: dict) -> str:
    return hashlib.blake2b(json.dumps(meta, sort_keys=True).encode(), digest_size=6).hexdigest()


def _checksum(*arrays: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        flat = a.reshape(-1).view(np.uint8)
        for start in range(0, flat.size, 1 << 26):  # 64 MiB at a time: no copy of a memory-mapped file
            h.update(flat[start:start + (1 << 26)])
    return h.hexdigest()


def _files(stem: Path) -> tuple[Path, Path, Path]:
    return Path(f"{stem}.indptr.npy"), Path(f"{stem}.indices.npy"), Path(f"{stem}.json")


def _write(stem: Path, meta: dict, p: Pattern) -> None:
    indptr_f, indices_f, sidecar = _files(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    for path, arr in ((indptr_f, p.indptr), (indices_f, p.indices)):
        tmp = temporary(path)
        with open(tmp, "wb") as f:
            np.save(f, arr)
        os.replace(tmp, path)
    info = {**meta, "rows": p.n_rows, "nnz": p.nnz, "checksum": {"blake2b": _checksum(p.indptr, p.indices)}}
    write_text_atomic(sidecar, json.dumps(info, indent=1, sort_keys=True))  # last: only beside complete arrays



def _read(stem: Path, meta: dict) -> Pattern:
    indptr_f, indices_f, sidecar = _files(stem)
    what = f"analog cache {sidecar}"
    try:
        info = json.loads(sidecar.read_text())
        indptr = np.load(indptr_f, mmap_mode="r")
        indices = np.load(indices_f, mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise GraphInputError(f"{what} is unreadable ({exc}); delete {stem}.* to regenerate it") from exc
    if {k: info.get(k) for k in meta} != meta:
        raise GraphInputError(f"{what} was written for other parameters; delete {stem}.* to regenerate it")
    if info.get("checksum", {}).get("blake2b") != _checksum(indptr, indices):
        raise GraphInputError(f"{what}: checksum mismatch (the files are corrupt or were changed); "
                              f"delete {stem}.* to regenerate it")
    return Pattern(indptr, indices, (int(info["rows"]), int(info["rows"])))
