#pragma once
// Entry points of the CSR SpMM kernel compiled per x86 ISA level; spmm.cpp picks one at run time
// (see cpu_isa()). Plain C++ signatures so the ISA translation units need no ATen headers.
#include <cstdint>

namespace netsparse {
namespace isa {

// Each computes rows [r0, r1) of out = A x B and returns true on a column index outside
// [0, b_rows). B and out have unit column stride and row strides ldb, ldo.
#define NETSPARSE_SPMM_ROWS_DECL(name, T)                                                             \
  bool name(const int64_t* crow, const int64_t* col, const T* val, const T* B, int64_t ldb, int64_t b_rows, \
            int64_t K, T* out, int64_t ldo, int64_t r0, int64_t r1)

NETSPARSE_SPMM_ROWS_DECL(spmm_rows_generic, float);
NETSPARSE_SPMM_ROWS_DECL(spmm_rows_generic, double);
// GCC only: the ISA files rely on `#pragma GCC target`, which clang ignores (clang builds get the
// portable kernel).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define NETSPARSE_HAVE_X86_ISA 1
NETSPARSE_SPMM_ROWS_DECL(spmm_rows_avx2, float);
NETSPARSE_SPMM_ROWS_DECL(spmm_rows_avx2, double);
NETSPARSE_SPMM_ROWS_DECL(spmm_rows_avx512, float);
NETSPARSE_SPMM_ROWS_DECL(spmm_rows_avx512, double);
#endif

}  // namespace isa
}  // namespace netsparse
