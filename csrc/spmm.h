#pragma once
// CPU CSR SpMM: the local aggregation of every strategy, C = A x B.
#include <ATen/ATen.h>

namespace netsparse {

// out[r, :] = sum_p val[p] * B[col[p], :] for p in [crow[r], crow[r+1]). Rows are split across
// threads by nonzero count, not row count, so power-law rows do not leave a thread behind.
at::Tensor spmm(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& val, const at::Tensor& B);

// CSR of A^T (n_cols rows), so the backward product A^T x G reuses spmm without atomics.
std::tuple<at::Tensor, at::Tensor, at::Tensor> csr_transpose(const at::Tensor& crow, const at::Tensor& col,
                                                             const at::Tensor& val, int64_t n_cols);

}  // namespace netsparse
