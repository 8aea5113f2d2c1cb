#pragma once
// CPU CSR SpMM: the local aggregation of every strategy, C = A x B.
#include <ATen/ATen.h>

#include <string>

namespace netsparse {

// out[r, :] = sum_p val[p] * B[col[p], :] for p in [crow[r], crow[r+1]). float32 and float64.
// Rows are cut into 16 chunks per thread of about equal nonzero count (not row count, so power-law
// hubs do not leave a thread behind), which at::parallel_for workers take from a shared counter.
// Each row keeps a K tile of accumulators in vector registers and is summed by one thread in a
// fixed order, so the result does not depend on the thread count.
// `isa` is "auto" (the widest the CPU supports, see cpu_isa), "avx512", "avx2" or "generic".
// B needs unit column stride only; a row-strided B (a column slice) is read in place.
at::Tensor spmm(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& val, const at::Tensor& B,
                const std::string& isa = "auto");

// The ISA "auto" picks on this CPU: "avx512", "avx2" or "generic". The environment variable
// NETSPARSE_CPU_ISA (same names) caps it, e.g. to compare kernels or to work around a bad CPU flag.
std::string cpu_isa();

// CSR of A^T (n_cols rows), so the backward product A^T x G reuses spmm without atomics.
std::tuple<at::Tensor, at::Tensor, at::Tensor> csr_transpose(const at::Tensor& crow, const at::Tensor& col,
                                                             const at::Tensor& val, int64_t n_cols);

}  // namespace netsparse
