#pragma once
// The CSR SpMM inner kernel on raw pointers, written once and compiled once per x86 ISA level
// (kernels_spmm_avx2.cpp, kernels_spmm_avx512.cpp, and the portable build in spmm.cpp).
//
// This header includes nothing but <cstdint>, and everything in it has internal linkage (anonymous
// namespace): a translation unit compiled under `#pragma GCC target("avx512f")` must not hand the
// linker an AVX-512 copy of an inline function that a portable translation unit also uses.
//
// The including file defines NETSPARSE_VEC_BYTES (16, 32 or 64: the vector register width) and
// NETSPARSE_MAX_ACC (how many vector accumulators fit in the register file next to the loads).
#include <cstdint>

#ifndef NETSPARSE_VEC_BYTES
#error "define NETSPARSE_VEC_BYTES before including spmm_kernel.h"
#endif

namespace netsparse {
namespace spmm_kernel {
namespace {

// GCC/Clang vector extensions: one value is one SIMD register of the target ISA. The `aligned`
// variant lets a row of B start at any element (B rows are only element-aligned).
template <typename T>
struct Vec {
  static constexpr int lanes = NETSPARSE_VEC_BYTES / sizeof(T);
  typedef T type __attribute__((vector_size(NETSPARSE_VEC_BYTES)));
  typedef T unaligned __attribute__((vector_size(NETSPARSE_VEC_BYTES), aligned(sizeof(T))));
};

// How far ahead (in nonzeros) the B row of a later nonzero is prefetched. Own assumption, tuned
// on the shared graphs: long enough to cover an L3 miss at ~2-4 ns per nonzero.
constexpr int64_t kPrefetchDistance = 16;

// out[0:NV*lanes] = sum_p val[p] * B[col[p], k0 : k0 + NV*lanes]: NV vector accumulators stay in
// registers for the whole row, so each output element is written once. With few accumulators the
// nonzero loop is unrolled by two into independent accumulator sets, which hides the FMA latency.
template <typename T, int NV>
inline bool row_vectors(const int64_t* __restrict col, const T* __restrict val, int64_t p0, int64_t p1,
                        const T* __restrict B, int64_t ldb, uint64_t b_rows, T* __restrict out) {
  using V = typename Vec<T>::type;
  using VU = typename Vec<T>::unaligned;
  constexpr int L = Vec<T>::lanes;
  constexpr bool kTwoSets = 2 * NV <= NETSPARSE_MAX_ACC;
  V acc[NV], acc2[NV];
  for (int j = 0; j < NV; ++j) acc[j] = acc2[j] = V{};
  bool bad = false;
  int64_t p = p0;
  if (kTwoSets) {
    for (; p + 1 < p1; p += 2) {
      const uint64_t c0 = static_cast<uint64_t>(col[p]), c1 = static_cast<uint64_t>(col[p + 1]);
      if (p + kPrefetchDistance < p1) __builtin_prefetch(B + col[p + kPrefetchDistance] * ldb);
      if (p + kPrefetchDistance + 1 < p1) __builtin_prefetch(B + col[p + kPrefetchDistance + 1] * ldb);
      if (c0 >= b_rows || c1 >= b_rows) {
        bad = true;
        break;
      }
      const T v0 = val[p], v1 = val[p + 1];
      const T* b0 = B + c0 * ldb;
      const T* b1 = B + c1 * ldb;
      for (int j = 0; j < NV; ++j) {
        acc[j] += v0 * *reinterpret_cast<const VU*>(b0 + j * L);
        acc2[j] += v1 * *reinterpret_cast<const VU*>(b1 + j * L);
      }
    }
  }
  for (; p < p1 && !bad; ++p) {
    const uint64_t c = static_cast<uint64_t>(col[p]);
    if (p + kPrefetchDistance < p1) __builtin_prefetch(B + col[p + kPrefetchDistance] * ldb);
    if (c >= b_rows) {
      bad = true;
      break;
    }
    const T v = val[p];
    const T* b = B + c * ldb;
    for (int j = 0; j < NV; ++j) acc[j] += v * *reinterpret_cast<const VU*>(b + j * L);
  }
  for (int j = 0; j < NV; ++j) *reinterpret_cast<VU*>(out + j * L) = acc[j] + acc2[j];
  return bad;
}

// The last K % lanes columns: scalar accumulators, n < lanes.
template <typename T>
inline bool row_scalars(const int64_t* __restrict col, const T* __restrict val, int64_t p0, int64_t p1,
                        const T* __restrict B, int64_t ldb, uint64_t b_rows, T* __restrict out, int n) {
  T acc[Vec<T>::lanes] = {};
  for (int64_t p = p0; p < p1; ++p) {
    const uint64_t c = static_cast<uint64_t>(col[p]);
    if (c >= b_rows) return true;
    const T v = val[p];
    const T* b = B + c * ldb;
    for (int k = 0; k < n; ++k) acc[k] += v * b[k];
  }
  for (int k = 0; k < n; ++k) out[k] = acc[k];
  return false;
}

// The widest tile: as many vector accumulators as the register file holds.
constexpr int kTileVectors = NETSPARSE_MAX_ACC;
static_assert(kTileVectors >= 1 && kTileVectors <= 8, "row_rest dispatches 1..7 leftover vectors");

template <typename T>
inline bool row_rest(const int64_t* col, const T* val, int64_t p0, int64_t p1, const T* B, int64_t ldb,
                     uint64_t b_rows, T* out, int nv) {
  // Compile-time accumulator counts for the 1..kTileVectors-1 vectors left after the full tiles.
  switch (nv) {
    case 1: return row_vectors<T, 1>(col, val, p0, p1, B, ldb, b_rows, out);
    case 2: return row_vectors<T, 2>(col, val, p0, p1, B, ldb, b_rows, out);
    case 3: return row_vectors<T, 3>(col, val, p0, p1, B, ldb, b_rows, out);
    case 4: return row_vectors<T, 4>(col, val, p0, p1, B, ldb, b_rows, out);
    case 5: return row_vectors<T, 5>(col, val, p0, p1, B, ldb, b_rows, out);
    case 6: return row_vectors<T, 6>(col, val, p0, p1, B, ldb, b_rows, out);
    case 7: return row_vectors<T, 7>(col, val, p0, p1, B, ldb, b_rows, out);
    default: return false;
  }
}

// Rows [r0, r1) of out = A x B (out row stride ldo, B row stride ldb, column stride 1).
// Returns true when some column index is outside [0, b_rows); the rows are then incomplete.
template <typename T>
inline bool spmm_rows(const int64_t* crow, const int64_t* col, const T* val, const T* B, int64_t ldb,
                      int64_t b_rows, int64_t K, T* out, int64_t ldo, int64_t r0, int64_t r1) {
  constexpr int L = Vec<T>::lanes;
  constexpr int64_t tile = static_cast<int64_t>(kTileVectors) * L;
  const uint64_t nb = static_cast<uint64_t>(b_rows);
  bool bad = false;
  for (int64_t r = r0; r < r1 && !bad; ++r) {
    const int64_t p0 = crow[r], p1 = crow[r + 1];
    T* o = out + r * ldo;
    int64_t k0 = 0;
    for (; k0 + tile <= K; k0 += tile)
      bad |= row_vectors<T, kTileVectors>(col, val, p0, p1, B + k0, ldb, nb, o + k0);
    const int nv = static_cast<int>((K - k0) / L);
    if (nv > 0) {
      bad |= row_rest<T>(col, val, p0, p1, B + k0, ldb, nb, o + k0, nv);
      k0 += static_cast<int64_t>(nv) * L;
    }
    if (k0 < K) bad |= row_scalars<T>(col, val, p0, p1, B + k0, ldb, nb, o + k0, static_cast<int>(K - k0));
  }
  return bad;
}

}  // namespace
}  // namespace spmm_kernel
}  // namespace netsparse
