// The portable build of the CSR SpMM kernel: 16-byte vectors (SSE2 on x86-64, NEON on AArch64, or
// scalar code elsewhere). spmm.cpp falls back to it when no wider ISA is available.
#include "spmm_isa.h"

#define NETSPARSE_VEC_BYTES 16
#define NETSPARSE_MAX_ACC 8
#include "spmm_kernel.h"

NETSPARSE_DEFINE_SPMM_ROWS(spmm_rows_generic)
