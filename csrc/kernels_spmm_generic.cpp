// The portable build of the CSR SpMM kernel: 16-byte vectors (SSE2 on x86-64, NEON on AArch64, or
// scalar code elsewhere). spmm.cpp falls back to it when no wider ISA is available.
#include "spmm_isa.h"

#define NETSPARSE_VEC_BYTES 16
#define NETSPARSE_MAX_ACC 8
#include "spmm_kernel.h"

namespace netsparse {
namespace isa {

NETSPARSE_SPMM_ROWS_DECL(spmm_rows_generic, float) {
  return spmm_kernel::spmm_rows<float>(crow, col, val, B, ldb, b_rows, K, out, ldo, r0, r1);
}
NETSPARSE_SPMM_ROWS_DECL(spmm_rows_generic, double) {
  return spmm_kernel::spmm_rows<double>(crow, col, val, B, ldb, b_rows, K, out, ldo, r0, r1);
}

}  // namespace isa
}  // namespace netsparse
