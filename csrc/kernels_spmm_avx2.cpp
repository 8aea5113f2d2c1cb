// The CSR SpMM kernel compiled for AVX2; spmm.cpp calls it only when the CPU supports it, so the
// build stays portable without -march=native.
#include "spmm_isa.h"

#ifdef NETSPARSE_HAVE_X86_ISA
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define NETSPARSE_VEC_BYTES 32
#define NETSPARSE_MAX_ACC 8
#include "spmm_kernel.h"

namespace netsparse {
namespace isa {

NETSPARSE_SPMM_ROWS_DECL(spmm_rows_avx2, float) {
  return spmm_kernel::spmm_rows<float>(crow, col, val, B, ldb, b_rows, K, out, ldo, r0, r1);
}
NETSPARSE_SPMM_ROWS_DECL(spmm_rows_avx2, double) {
  return spmm_kernel::spmm_rows<double>(crow, col, val, B, ldb, b_rows, K, out, ldo, r0, r1);
}

}  // namespace isa
}  // namespace netsparse
#pragma GCC pop_options
#endif
