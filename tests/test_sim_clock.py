"""The simulator's clock domains (csrc/sim/types.h ``Clock``): ``cycle`` takes an exact integer path and
must give the long double formula that defines it at every picosecond, cycle boundaries included;
``ps(c)`` is the first picosecond of cycle ``c``."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from hw_models.native import sim as _sim
from hw_models.params import HardwareParams

# Table 5's SNIC and switch clocks, a flit clock (400 Gb/s over 16 B flits), and values whose binary
# fractions are long or sit just off a round number.
GHZ = [HardwareParams().snic.clock_ghz, HardwareParams().switch.clock_ghz, 50e9 / 16 / 1e9, 1 / 3, 0.7,
       1.35, 2.9999999999, 1.0000000001, 7.77, 0.013]


def boundaries(ghz: float, cycles: np.ndarray) -> np.ndarray:
    """Every picosecond within two of the first picosecond of each cycle, and those cycles' starts."""
    first = _sim.clock(ghz, np.zeros(0, np.int64), cycles)["ps"]
    return np.unique(np.clip(np.concatenate([first + d for d in range(-2, 3)]), 0, None))


@pytest.mark.parametrize("ghz", GHZ)
def test_cycle_is_its_definition_at_every_boundary(ghz):
    rng = np.random.default_rng(7)
    cycles = np.concatenate([np.arange(0, 5000), rng.integers(0, 10**9, 5000), rng.integers(0, 10**13, 2000)])
    ps = np.concatenate([boundaries(ghz, cycles), rng.integers(0, 10**15, 5000)])
    out = _sim.clock(ghz, ps, np.zeros(0, np.int64))
    np.testing.assert_array_equal(out["cycle"], out["defined_cycle"])


@pytest.mark.parametrize("ghz", GHZ)
def test_ps_is_the_first_picosecond_of_its_cycle(ghz):
    rng = np.random.default_rng(11)
    cycles = np.concatenate([np.arange(1, 3000), rng.integers(1, 10**12, 3000)])
    first = _sim.clock(ghz, np.zeros(0, np.int64), cycles)["ps"]
    at = _sim.clock(ghz, first, np.zeros(0, np.int64))["defined_cycle"]
    before = _sim.clock(ghz, first - 1, np.zeros(0, np.int64))["defined_cycle"]
    assert (at >= cycles).all() and (before < cycles).all()


def test_negative_times_keep_the_formula():
    ps = np.arange(-3000, 1, dtype=np.int64)
    out = _sim.clock(2.2, ps, np.zeros(0, np.int64))
    np.testing.assert_array_equal(out["cycle"], out["defined_cycle"])


# (ghz, ps) where the long double formula lands on the other side of a cycle boundary than exact
# arithmetic does (found by a search of cycle starts): the exact path must not be taken there.
ROUNDED_OVER = [(2.2, 4502079978048636), (1 / 3, 18017947748271001), (0.7, 9009657476848572),
                (1.35, 1687674259131111), (1.0000000001, 5577829537768217), (0.013, 26831406801769232)]


@pytest.mark.parametrize(("ghz", "ps"), ROUNDED_OVER)
def test_cycle_keeps_the_formulas_rounding(ghz, ps):
    exact = (ps * Fraction(ghz) / 1000).__floor__()
    out = _sim.clock(ghz, np.array([ps - 1, ps, ps + 1], np.int64), np.zeros(0, np.int64))
    assert out["defined_cycle"][1] == exact + 1  # the case is real: rounding crossed the boundary
    np.testing.assert_array_equal(out["cycle"], out["defined_cycle"])
