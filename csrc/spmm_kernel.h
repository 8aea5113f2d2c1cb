#pragma once
// The CSR SpMM inner kernel on raw pointers, written once and compiled once per x86 ISA level
// (kernels_spmm_generic.cpp, kernels_spmm_avx2.cpp, kernels_spmm_avx512.cpp); spmm.cpp picks one.
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

// GCC vector extensions: one value is one SIMD register of the target ISA. The `aligned`
// variant lets a row of B start at any element (B rows are only element-aligned).
template <typename T>
struct Vec {
  static constexpr int lanes = NETSPARSE_VEC_BYTES / sizeof(T);
  typedef T type __attribute__((vector_size(NETSPARSE_VEC_BYTES)));
  typedef T unaligned __attribute__((vector_size(NETSPARSE_VEC_BYTES), aligned(sizeof(T))));
};

// How far ahead (in nonzeros) the B rows of later nonzeros are prefetched. Own assumption, tuned on
// the shared graphs (benchmarks/local_spmm.py): ~50-100 ns of work ahead covers an L3/DRAM miss.
#ifndef NETSPARSE_PREFETCH_DISTANCE
#define NETSPARSE_PREFETCH_DISTANCE 24
#endif
constexpr int64_t kPrefetchDistance = NETSPARSE_PREFETCH_DISTANCE;

// Prefetch the tile's cache lines of the B row that nonzero q reads, if q is still in this chunk.
// The limit is the chunk's last nonzero, not the row's: power-law graphs have mostly short rows,
// so a per-row prefetch would rarely run ahead far enough.
template <typename T, int NV>
inline void prefetch_row(const int64_t* __restrict col, int64_t q, int64_t q_end, const T* B, int64_t ldb) {
  if (q < q_end) {
    const char* b = reinterpret_cast<const char*>(B + col[q] * ldb);
    for (int line = 0; line < NV * NETSPARSE_VEC_BYTES; line += 64) __builtin_prefetch(b + line);
  }
}

// For every row r in [r0, r1): out[r, 0:NV*lanes] = sum_p val[p] * B[col[p], 0:NV*lanes]. NV vector
// accumulators stay in registers for the whole row, so each output element is written once and
// empty rows come out as zeros. With few accumulators the nonzero loop is unrolled by two into
// independent accumulator sets, which hides the FMA latency. The row loop lives in here so a row
// costs no call or setup beyond its accumulator init (power-law graphs have mostly short rows).
template <typename T, int NV>
inline bool rows_tile(const int64_t* __restrict crow, const int64_t* __restrict col, const T* __restrict val,
                      int64_t r0, int64_t r1, const T* __restrict B, int64_t ldb, uint64_t b_rows,
                      T* __restrict out, int64_t ldo) {
  using V = typename Vec<T>::type;
  using VU = typename Vec<T>::unaligned;
  constexpr int L = Vec<T>::lanes;
  const int64_t pf_end = crow[r1];
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t p1 = crow[r + 1];
    int64_t p = crow[r];
    V acc[NV];
    for (int j = 0; j < NV; ++j) acc[j] = V{};
    if constexpr (2 * NV <= NETSPARSE_MAX_ACC) {
      V acc2[NV];
      for (int j = 0; j < NV; ++j) acc2[j] = V{};
      for (; p + 1 < p1; p += 2) {
        const uint64_t c0 = static_cast<uint64_t>(col[p]), c1 = static_cast<uint64_t>(col[p + 1]);
        prefetch_row<T, NV>(col, p + kPrefetchDistance, pf_end, B, ldb);
        prefetch_row<T, NV>(col, p + kPrefetchDistance + 1, pf_end, B, ldb);
        if (c0 >= b_rows || c1 >= b_rows) return true;
        const T v0 = val[p], v1 = val[p + 1];
        const T* b0 = B + c0 * ldb;
        const T* b1 = B + c1 * ldb;
        for (int j = 0; j < NV; ++j) {
          acc[j] += v0 * *reinterpret_cast<const VU*>(b0 + j * L);
          acc2[j] += v1 * *reinterpret_cast<const VU*>(b1 + j * L);
        }
      }
      for (int j = 0; j < NV; ++j) acc[j] += acc2[j];
    }
    for (; p < p1; ++p) {
      const uint64_t c = static_cast<uint64_t>(col[p]);
      prefetch_row<T, NV>(col, p + kPrefetchDistance, pf_end, B, ldb);
      if (c >= b_rows) return true;
      const T v = val[p];
      const T* b = B + c * ldb;
      for (int j = 0; j < NV; ++j) acc[j] += v * *reinterpret_cast<const VU*>(b + j * L);
    }
    T* o = out + r * ldo;
    for (int j = 0; j < NV; ++j) *reinterpret_cast<VU*>(o + j * L) = acc[j];
  }
  return false;
}

// The last K % lanes columns (n < lanes) of every row: scalar accumulators.
template <typename T>
inline bool rows_scalars(const int64_t* __restrict crow, const int64_t* __restrict col, const T* __restrict val,
                         int64_t r0, int64_t r1, const T* __restrict B, int64_t ldb, uint64_t b_rows,
                         T* __restrict out, int64_t ldo, int n) {
  for (int64_t r = r0; r < r1; ++r) {
    T acc[Vec<T>::lanes] = {};
    for (int64_t p = crow[r]; p < crow[r + 1]; ++p) {
      const uint64_t c = static_cast<uint64_t>(col[p]);
      if (c >= b_rows) return true;
      const T v = val[p];
      const T* b = B + c * ldb;
      for (int k = 0; k < n; ++k) acc[k] += v * b[k];
    }
    for (int k = 0; k < n; ++k) out[r * ldo + k] = acc[k];
  }
  return false;
}

// The widest tile: as many vector accumulators as the register file holds next to the loads.
constexpr int kTileVectors = NETSPARSE_MAX_ACC;
static_assert(kTileVectors >= 1 && kTileVectors <= 8, "rows_rest dispatches 1..7 leftover vectors");

template <typename T>
inline bool rows_rest(const int64_t* crow, const int64_t* col, const T* val, int64_t r0, int64_t r1, const T* B,
                      int64_t ldb, uint64_t b_rows, T* out, int64_t ldo, int nv) {
  // Compile-time accumulator counts for the 1..kTileVectors-1 vectors left after the full tiles.
  switch (nv) {
    case 1: return rows_tile<T, 1>(crow, col, val, r0, r1, B, ldb, b_rows, out, ldo);
    case 2: return rows_tile<T, 2>(crow, col, val, r0, r1, B, ldb, b_rows, out, ldo);
    case 3: return rows_tile<T, 3>(crow, col, val, r0, r1, B, ldb, b_rows, out, ldo);
    case 4: return rows_tile<T, 4>(crow, col, val, r0, r1, B, ldb, b_rows, out, ldo);
    case 5: return rows_tile<T, 5>(crow, col, val, r0, r1, B, ldb, b_rows, out, ldo);
    case 6: return rows_tile<T, 6>(crow, col, val, r0, r1, B, ldb, b_rows, out, ldo);
    case 7: return rows_tile<T, 7>(crow, col, val, r0, r1, B, ldb, b_rows, out, ldo);
    default: return false;
  }
}

// Rows [r0, r1) of out = A x B (out row stride ldo, B row stride ldb, column stride 1), one K tile
// at a time. Returns true when some column index is outside [0, b_rows); the rows are then incomplete.
template <typename T>
inline bool spmm_rows(const int64_t* crow, const int64_t* col, const T* val, const T* B, int64_t ldb,
                      int64_t b_rows, int64_t K, T* out, int64_t ldo, int64_t r0, int64_t r1) {
  constexpr int L = Vec<T>::lanes;
  constexpr int64_t tile = static_cast<int64_t>(kTileVectors) * L;
  const uint64_t nb = static_cast<uint64_t>(b_rows);
  int64_t k0 = 0;
  for (; k0 + tile <= K; k0 += tile)
    if (rows_tile<T, kTileVectors>(crow, col, val, r0, r1, B + k0, ldb, nb, out + k0, ldo)) return true;
  const int nv = static_cast<int>((K - k0) / L);
  if (nv > 0) {
    if (rows_rest<T>(crow, col, val, r0, r1, B + k0, ldb, nb, out + k0, ldo, nv)) return true;
    k0 += static_cast<int64_t>(nv) * L;
  }
  if (k0 < K) return rows_scalars<T>(crow, col, val, r0, r1, B + k0, ldb, nb, out + k0, ldo, static_cast<int>(K - k0));
  return false;
}

}  // namespace
}  // namespace spmm_kernel
}  // namespace netsparse

// The including file's entry points: `name` for float and for double, in netsparse::isa (declared in
// spmm_isa.h), compiled for the ISA that file selects.
#define NETSPARSE_DEFINE_SPMM_ROWS(name)                                                          \
  namespace netsparse {                                                                           \
  namespace isa {                                                                                 \
  NETSPARSE_SPMM_ROWS_DECL(name, float) {                                                         \
    return spmm_kernel::spmm_rows<float>(crow, col, val, B, ldb, b_rows, K, out, ldo, r0, r1);    \
  }                                                                                               \
  NETSPARSE_SPMM_ROWS_DECL(name, double) {                                                        \
    return spmm_kernel::spmm_rows<double>(crow, col, val, B, ldb, b_rows, K, out, ldo, r0, r1);   \
  }                                                                                               \
  }                                                                                               \
  }
