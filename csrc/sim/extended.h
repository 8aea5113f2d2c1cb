#pragma once
// The cycle of a picosecond as the simulator's clocks define it: floor(ps * ghz / 1000) computed as x87
// extended precision does (types.h, Clock), in integers, so that every platform gives what x86-64 gives.
// x87's long double has a 64-bit significand and rounds to nearest, ties to even, after the product and
// after the quotient; aarch64's long double is IEEE quad and MSVC's is a double, which round elsewhere.
#include <cmath>
#include <cstdint>

namespace netsparse::sim {

// ghz as odd 2^e exactly (odd < 2^53); false unless ghz > 0 and finite.
inline bool odd_times_power_of_two(double ghz, uint64_t& odd, int& e) {
  if (!(ghz > 0) || !std::isfinite(ghz)) return false;
  const double m = std::frexp(ghz, &e);  // ghz = m 2^e, 0.5 <= m < 1
  odd = static_cast<uint64_t>(std::ldexp(m, 53));
  e -= 53;
  while ((odd & 1) == 0) {
    odd >>= 1;
    ++e;
  }
  return true;
}

class ExtendedRate {
 public:
  using U = unsigned __int128;
  explicit ExtendedRate(double ghz) {  // ghz > 0 and finite (else every cycle is 0)
    if (!odd_times_power_of_two(ghz, odd_, e_)) {
      odd_ = 0;
      e_ = 0;
    }
  }

  // floor(ps * ghz / 1000) with x87's two roundings.
  int64_t floor_cycle(int64_t ps) const {
    if (ps == 0 || odd_ == 0) return 0;
    const bool negative = ps < 0;
    const uint64_t a = negative ? uint64_t{0} - static_cast<uint64_t>(ps) : static_cast<uint64_t>(ps);
    int exp = e_;
    const uint64_t product = round64(U{a} * odd_, exp);  // < 2^116 exact, then 64 significant bits
    const uint64_t quotient = over_1000(product, exp);
    // The floor of quotient 2^exp: its whole part, less one when it is negative and not whole. Beyond int64,
    // x87's conversion gives its minimum ("integer indefinite").
    uint64_t whole;
    bool fraction;
    if (exp >= 0) {
      if (exp >= 64 || (quotient >> (63 - exp)) != 0) return INT64_MIN;
      whole = quotient << exp;
      fraction = false;
    } else if (exp <= -64) {
      whole = 0;
      fraction = true;
    } else {
      whole = quotient >> -exp;
      fraction = (quotient & ((uint64_t{1} << -exp) - 1)) != 0;
    }
    if (!negative) return static_cast<int64_t>(whole);
    return -static_cast<int64_t>(whole) - (fraction ? 1 : 0);
  }

 private:
  static int bits(U v) {  // v > 0
    const uint64_t hi = static_cast<uint64_t>(v >> 64);
    return hi ? 128 - __builtin_clzll(hi) : 64 - __builtin_clzll(static_cast<uint64_t>(v));
  }
  // v (> 0) to 64 significant bits, nearest, ties to even; exp takes the shift.
  static uint64_t round64(U v, int& exp) {
    const int n = bits(v);
    if (n <= 64) return static_cast<uint64_t>(v);
    int sh = n - 64;
    U q = v >> sh;
    const U rest = v & ((U{1} << sh) - 1), half = U{1} << (sh - 1);
    if (rest > half || (rest == half && (q & 1))) ++q;
    if (q >> 64) {
      q >>= 1;
      ++sh;
    }
    exp += sh;
    return static_cast<uint64_t>(q);
  }
  // m 2^exp / 1000 to 64 significant bits (nearest, ties to even); m > 0.
  static uint64_t over_1000(uint64_t m, int& exp) {
    const int lead = 63 - __builtin_clzll(m);
    const U n = (U{m} << (63 - lead)) << 10;  // m's top bit at 73: the quotient has 64 or 65 bits
    exp -= (63 - lead) + 10;
    U q = n / 1000;
    const U r = n % 1000;
    bool up;
    if (q >> 64) {  // 65 bits: one more to drop, and the remainder is below its half
      const bool dropped = q & 1;
      q >>= 1;
      ++exp;
      up = dropped && (r > 0 || (q & 1));
    } else {
      up = 2 * r > 1000 || (2 * r == 1000 && (q & 1));
    }
    if (up) ++q;
    if (q >> 64) {
      q >>= 1;
      ++exp;
    }
    return static_cast<uint64_t>(q);
  }
  uint64_t odd_ = 0;
  int e_ = 0;
};

}  // namespace netsparse::sim
