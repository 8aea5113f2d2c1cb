#pragma once
// Input checks and work splitting shared by the CPU sparse kernels (SDDMM, gather, attention).
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace netsparse {
namespace csr_util {

// A contiguous int64 CSR pattern (crow: rows + 1 rising pointers from 0 to nnz; col: nnz entries).
inline void check_pattern(const char* op, const at::Tensor& crow, const at::Tensor& col) {
  TORCH_CHECK_VALUE(crow.dim() == 1 && crow.numel() >= 1 && crow.scalar_type() == at::kLong && crow.is_contiguous() &&
                        crow.device().is_cpu(),
                    op, ": crow must be a contiguous 1-D int64 CPU tensor with rows+1 entries");
  TORCH_CHECK_VALUE(col.dim() == 1 && col.scalar_type() == at::kLong && col.is_contiguous() && col.device().is_cpu(),
                    op, ": col must be a contiguous 1-D int64 CPU tensor");
  const int64_t* p = crow.data_ptr<int64_t>();
  const int64_t rows = crow.numel() - 1;
  TORCH_CHECK_VALUE(p[0] == 0 && p[rows] == col.numel(), op, ": crow must run from 0 to nnz=", col.numel());
  for (int64_t r = 0; r < rows; ++r) TORCH_CHECK_VALUE(p[r] <= p[r + 1], op, ": crow decreases at row ", r);
}

// A 2-D float32/float64 CPU tensor.
inline void check_dense(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK_VALUE(t.dim() == 2, op, ": ", name, " must be 2-D, got ", t.dim(), "-D");
  TORCH_CHECK_VALUE(t.device().is_cpu(), op, ": the C++ kernel runs on CPU tensors");
  TORCH_CHECK_VALUE(t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble, op, ": ", name,
                    " must be float32 or float64, got ", t.scalar_type());
}

// First index outside [0, bound), or -1: one pass so that the compute loops stay branch-free.
inline int64_t first_bad(const int64_t* idx, int64_t n, int64_t bound) {
  for (int64_t i = 0; i < n; ++i)
    if (static_cast<uint64_t>(idx[i]) >= static_cast<uint64_t>(bound)) return i;
  return -1;
}

inline void check_columns(const char* op, const at::Tensor& col, int64_t bound) {
  const int64_t* c = col.data_ptr<int64_t>();
  const int64_t bad = first_bad(c, col.numel(), bound);
  TORCH_CHECK_VALUE(bad < 0, op, ": column index ", bad < 0 ? 0 : c[bad], " is outside [0, ", bound, ")");
}

// `chunks` row ranges [bounds[c], bounds[c+1]) holding about equal numbers of nonzeros.
inline std::vector<int64_t> nnz_chunks(const int64_t* crow, int64_t rows, int64_t chunks) {
  std::vector<int64_t> bounds(chunks + 1, rows);
  bounds[0] = 0;
  for (int64_t c = 1; c < chunks; ++c)
    bounds[c] = std::max(bounds[c - 1],
                         static_cast<int64_t>(std::lower_bound(crow, crow + rows + 1, crow[rows] * c / chunks) - crow));
  return bounds;
}

}  // namespace csr_util
}  // namespace netsparse
