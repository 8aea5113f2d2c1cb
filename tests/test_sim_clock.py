"""The simulator's clock domains (csrc/sim/types.h ``Clock``): ``cycle`` and ``ps`` take a double path,
then an exact 128-bit integer path near cycle boundaries, and must give the formulas that define them at
every picosecond and cycle, boundaries included; ``ps(c)`` is the first picosecond of cycle ``c``. The
definition is x87's long double formula, computed in integers (csrc/sim/extended.h) so that every platform
gives x86-64's cycles."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from hw_models.native import sim as _sim
from hw_models.params import HardwareParams

# Table 5's SNIC and switch clocks, a flit clock (400 Gb/s over 16 B flits), and values whose binary
# fractions are long or sit just off a round number.
# Clocks whose period is a whole number of picoseconds (2 GHz: 500 ps) put every cycle start exactly on
# an integer value of the formula, where the exact path must still agree with it.
GHZ = [HardwareParams().snic.clock_ghz, HardwareParams().switch.clock_ghz, 50e9 / 16 / 1e9, 1 / 3, 0.7,
       1.35, 2.9999999999, 1.0000000001, 7.77, 0.013, 1.0, 2.5, 1.25, 4.0, 0.5, 1.6, 3.2]


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


@pytest.mark.parametrize("ghz", GHZ)
def test_ps_is_its_definition(ghz):
    rng = np.random.default_rng(13)
    # Multiples of small numbers put a cycle's start on (or within rounding of) a whole picosecond.
    small = np.arange(1, 4000)
    cycles = np.concatenate([small, small * 11, small * 25, small * 125, rng.integers(1, 10**12, 3000),
                             rng.integers(1, 10**9, 3000) * 11])
    out = _sim.clock(ghz, np.zeros(0, np.int64), cycles)
    np.testing.assert_array_equal(out["ps"], out["defined_ps"])


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


def rounded_over_in_range(ghz: float, limit: int = 1 << 50) -> np.ndarray:
    """Picoseconds below 2^50 (the range of the double and exact paths) whose exact value ps ghz / 1000 lies
    within a few units of 1 / den of an integer, found by modular inversion; those where the long double
    formula's floor differs from the exact floor are returned."""
    f = Fraction(ghz) / 1000
    a, d = f.numerator, f.denominator
    inv = pow(a % d, -1, d)
    near = {(t * inv) % d for t in [*range(1, 1 << 13), *range(d - (1 << 13), d)]}
    ps = np.array(sorted(p for p in near if 0 < p < limit), np.int64)
    defined = _sim.clock(ghz, ps, np.zeros(0, np.int64))["defined_cycle"]
    exact = np.array([(int(p) * f).__floor__() for p in ps], np.int64)
    return ps[defined != exact]


@pytest.mark.parametrize("ghz", [2.2, 1.35, 2.9999999999, 1.0000000001, 7.77])
def test_the_exact_path_keeps_the_formulas_rounding_in_its_range(ghz):
    ps = rounded_over_in_range(ghz)
    assert len(ps) > 0  # the case is real where the exact path works
    around = np.concatenate([ps - 1, ps, ps + 1])
    out = _sim.clock(ghz, around, np.zeros(0, np.int64))
    np.testing.assert_array_equal(out["cycle"], out["defined_cycle"])
    cycles = np.unique(np.concatenate([out["defined_cycle"], out["defined_cycle"] + 1]))
    out = _sim.clock(ghz, np.zeros(0, np.int64), cycles[cycles > 0])
    np.testing.assert_array_equal(out["ps"], out["defined_ps"])


def extended_floor(ps: int, ghz: float) -> int:
    """The definition by hand: floor(ps ghz / 1000), the product and the quotient each rounded to a 64-bit
    significand, nearest, ties to even (x87 long double), in exact fractions."""

    def round64(x: Fraction) -> Fraction:
        if x == 0:
            return x
        sign, x = (-1 if x < 0 else 1), abs(x)
        e = x.numerator.bit_length() - x.denominator.bit_length()
        e -= 1 if Fraction(2) ** e > x else 0  # 2^e <= x < 2^(e + 1)
        unit = Fraction(2) ** (e - 63)
        q, rest = divmod(x / unit, 1)
        if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and q % 2 == 1):
            q += 1
        return sign * q * unit

    return (round64(round64(ps * Fraction(ghz)) / 1000)).__floor__()


def hard_picoseconds(ghz: float) -> np.ndarray:
    """Where the two roundings decide: picoseconds whose exact value is near an integer (modular inversion,
    as rounded_over_in_range), and some up to 2^62."""
    f = Fraction(ghz) / 1000
    inv = pow(f.numerator % f.denominator, -1, f.denominator)
    near = sorted({(t * inv) % f.denominator for t in [*range(1, 200), *range(f.denominator - 200, f.denominator)]})
    rng = np.random.default_rng(17)
    ps = [p for p in near if 0 < p < 1 << 62][:300] + rng.integers(1, 1 << 62, 200).tolist()
    return np.array(ps + product_ties(ghz) + [-p for p in ps[:100]], np.int64)


def product_ties(ghz: float) -> list[int]:
    """Picoseconds whose product ps ghz lies exactly halfway between two 64-bit significands, rounding down
    (even) and up (odd): ps = t 2^k with odd(ghz) t of 65 bits. (The quotient by 1000 never ties.)"""
    f = Fraction(ghz)
    odd = f.numerator >> ((f.numerator & -f.numerator).bit_length() - 1)  # ghz = odd 2^e
    t = ((1 << 64) // odd + 1) | 1
    ties = []
    for _ in range(8):
        while (odd * t).bit_length() != 65:
            t += 2
        ties += [t << k for k in (0, 3, 20) if t << k < 1 << 62]
        t += 2
    return ties


@pytest.mark.parametrize("ghz", GHZ)
def test_the_definition_is_x87s_rounding_on_every_platform(ghz):
    """defined_cycle computes x87's long double formula in integers (csrc/sim/extended.h), so aarch64 (quad)
    and MSVC (double) give x86-64's cycles: against the two roundings by hand everywhere, and against the
    formula in numpy's long double where that is x87's. The product's rounding decides floors here (the
    ROUNDED_OVER kind of cases; truncating it instead fails 21 tests of this file); the quotient's never does, as
    its error stays under the distance from x / 1000 to an integer that the product's 64 bits leave."""
    ps = hard_picoseconds(ghz)
    got = _sim.clock(ghz, ps, np.zeros(0, np.int64))["defined_cycle"]
    assert got.tolist() == [extended_floor(int(p), ghz) for p in ps]
    if np.finfo(np.longdouble).nmant == 63:
        native = np.floor(ps.astype(np.longdouble) * np.longdouble(ghz) / np.longdouble(1000)).astype(np.int64)
        np.testing.assert_array_equal(got, native)
