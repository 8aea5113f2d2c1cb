// The CSR SpMM kernel compiled for AVX512; spmm.cpp calls it only when the CPU supports it, so the
// build stays portable without -march=native.
#include "spmm_isa.h"

#ifdef NETSPARSE_HAVE_X86_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#define NETSPARSE_VEC_BYTES 64
#define NETSPARSE_MAX_ACC 8
#include "spmm_kernel.h"

NETSPARSE_DEFINE_SPMM_ROWS(spmm_rows_avx512)
#pragma GCC pop_options
#endif
