"""Paper-scale analogs of NetSparse Table 6: deterministic canonical patterns whose Table 1 / Table 4
statistics hold at reduced scale, the cache, and bad input."""

import json

import numpy as np
import pytest
import torch
from cli import run_cli

from hw_models import analogs
from hw_models.analog_calibration import PAPER_TOLERANCE, deviation, statistics
from netsparse_torch.errors import ConfigError, GraphInputError

NAMES = sorted(analogs.PAPER_MATRICES)


def _canonical(p):
    ids = p.indices.astype(np.int64)
    assert p.indices.dtype == np.int32 and ids.min() >= 0 and ids.max() < p.n_cols
    step = np.diff(ids)
    inside = np.ones(step.size, dtype=bool)
    inside[p.indptr[1:-1][p.indptr[1:-1] > 0] - 1] = False  # a row's first column follows another row
    return bool((step[inside[: step.size]] > 0).all())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scale", [0.01, 0.03])
def test_scaled_statistics_match_the_full_size_ones(name, scale):
    """The statistics are scale-invariant by construction: at 1-3 % of the rows each is within
    SCALED_TOLERANCE of the analog's full-size value, and so within the paper tolerance of the paper."""
    m = analogs.PAPER_MATRICES[name]
    p = analogs.generate(m, scale)
    assert p.n_rows == round(m.rows * scale) and abs(p.nnz / (m.nnz * scale) - 1) < 0.01
    got = statistics(p)
    for stat, full in m.full_size.items():
        assert got[stat] == pytest.approx(full, rel=analogs.SCALED_TOLERANCE), stat
        assert deviation(name, stat, got[stat], m.targets()[stat]) <= 1, (stat, got[stat], PAPER_TOLERANCE)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_canonical_and_thread_independent(name):
    m = analogs.PAPER_MATRICES[name]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # the generators' OpenMP is torch's (one libgomp per process)
        a = analogs.generate(m, 0.01, seed=3)
        torch.set_num_threads(1)
        b = analogs.generate(m, 0.01, seed=3)
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert _canonical(a)
    c = analogs.generate(m, 0.01, seed=4)
    assert c.nnz != a.nnz or not np.array_equal(c.indices, a.indices)


def test_fem_band_by_hand():
    """The fem family on a case small enough to check: 2 segments of 8 rows, no local band, one coupling
    entry per row whose band (half-width 0 -> one column) sits half a segment below (first half of a
    segment) or above (second half), flipped at the ends of the matrix."""
    from hw_models.native import graph as G

    indptr, indices = G.generate_analog("fem", 16, 0, {"segments": 2, "band_entries": 0.0, "coupling_entries": 1.0,
                                                       "coupling_width": 0.0, "sweep": 1.0, "jump": 0.5})
    assert indptr.tolist() == list(range(17))
    # Row r (segment s, x = r - 8s): centre 8s + 4 + (x + 0.5 - 4) -/+ 4 = r + 0.5 -/+ 4, rounded half
    # away from zero (C++ llround). Rows 0-3 would couple below the matrix (row 0: -3.5 -> -4), so they
    # flip above (4.5 -> 5, ..., 7.5 -> 8); rows 4-7: 8.5 -> 9 .. 11.5 -> 12 (segment 1); rows 8-11:
    # 4.5 -> 5 .. 7.5 -> 8 (segment 0); rows 12-15 would pass the end (16.5 -> 17) and flip: 9 .. 12.
    assert indices.tolist() == [5, 6, 7, 8, 9, 10, 11, 12, 5, 6, 7, 8, 9, 10, 11, 12]


def test_bad_input_one_clear_error_each():
    with pytest.raises(ConfigError, match="'nope'; choose one of arabic, europe, queen, stokes, uk"):
        analogs.parse("paper:nope")
    for bad in ("0", "1.5", "-0.1", "nan"):
        with pytest.raises(ConfigError, match=r"scale must be in \(0, 1\]"):
            analogs.parse(f"paper:uk@{bad}")
    with pytest.raises(ConfigError, match="not a number"):
        analogs.parse("paper:uk@half")
    with pytest.raises(ConfigError, match="use a larger scale"):
        analogs.generate("queen", 0.0001)
    with pytest.raises(ConfigError, match="unknown parameter"):
        analogs.generate("queen", 0.01, params={"bandwidth": 3})


def test_cache_roundtrip_and_checksum(tmp_path):
    p, name = analogs.load("paper:uk@0.01", cache_dir=tmp_path)
    assert name == "paper-uk@0.01"
    sidecar = next(tmp_path.glob("*.json"))
    meta = json.loads(sidecar.read_text())
    assert meta["matrix"] == "uk" and meta["scale"] == 0.01 and meta["seed"] == 0 and "blake2b" in meta["checksum"]
    q, _ = analogs.load("paper:uk@0.01", cache_dir=tmp_path)  # read back, memory-mapped
    assert isinstance(q.indices, np.memmap)
    np.testing.assert_array_equal(p.indices, q.indices)
    np.testing.assert_array_equal(p.indptr, q.indptr)
    other, _ = analogs.load("paper:uk@0.01", seed=1, cache_dir=tmp_path)  # another key, another file
    assert len(list(tmp_path.glob("*.json"))) == 2 and other.nnz != p.nnz
    indices_file = next(tmp_path.glob("*seed0*.indices.npy"))
    raw = bytearray(indices_file.read_bytes())
    raw[-1] ^= 0xFF  # one flipped byte in the last column id
    indices_file.write_bytes(bytes(raw))
    with pytest.raises(GraphInputError, match="checksum mismatch"):
        analogs.load("paper:uk@0.01", cache_dir=tmp_path)


def test_cli_unknown_matrix_and_scale_exit_2(tmp_path):
    for spec, msg in (("paper:nope", "unknown paper matrix 'nope'"), ("paper:uk@2", "scale must be in (0, 1]")):
        proc = run_cli("netsparse_torch.cli.simulate", f"matrix={spec}", f"hydra.run.dir={tmp_path}", timeout=120)
        assert proc.returncode == 2
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert lines == [f"netsparse-simulate: error: {lines[0].split('error: ', 1)[1]}"] and msg in lines[0]
