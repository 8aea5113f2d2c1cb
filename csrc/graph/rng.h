// Counter-based random streams: every draw is a function of (seed, key, position) only, so results
// do not depend on the thread count or on the order in which rows are generated.
#pragma once

#include <cstdint>

namespace netsparse::graph {

// splitmix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The state of the stream keyed on (seed, key); next() walks it like splitmix64.
inline uint64_t stream(uint64_t seed, uint64_t key) { return mix64(mix64(seed) ^ (key * 0xD1B54A32D192ED03ULL)); }

inline uint64_t next(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  return mix64(state);
}

// Uniform in [0, 1) with 53 random bits.
inline double uniform(uint64_t& state) { return static_cast<double>(next(state) >> 11) * 0x1.0p-53; }

// Uniform integer in [0, m), m >= 1 (multiply-shift: bias below 2^-64 * m, irrelevant here).
inline int64_t below(uint64_t& state, int64_t m) {
  return static_cast<int64_t>((static_cast<__uint128_t>(next(state)) * static_cast<uint64_t>(m)) >> 64);
}

}  // namespace netsparse::graph
