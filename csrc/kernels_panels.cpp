#include "kernels_panels.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <atomic>

namespace netsparse {
namespace {

void check_index_tensor(const char* name, const at::Tensor& t) {
  TORCH_CHECK_VALUE(t.dim() == 1 && t.scalar_type() == at::kLong && t.is_contiguous() && t.device().is_cpu(),
                    "spmm_panels: ", name, " must be a contiguous 1-D int64 CPU tensor");
}

template <typename T>
bool run_panel(const int64_t* row, const int64_t* col, const T* val, const T* B, int64_t ldb, int64_t b_rows,
               int64_t K, T* out, int64_t first_row, int64_t last_row, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const int64_t r = row[i], c = col[i];
    // One unsigned compare each: a bad index stops the panel and is reported after the loop.
    if (r < first_row || r >= last_row || static_cast<uint64_t>(c) >= static_cast<uint64_t>(b_rows)) return false;
    const T v = val[i];
    const T* b = B + c * ldb;
    T* o = out + r * K;
#pragma omp simd
    for (int64_t j = 0; j < K; ++j) o[j] += v * b[j];
  }
  return true;
}

}  // namespace

at::Tensor spmm_panels(const at::Tensor& panel_ptr, const at::Tensor& row, const at::Tensor& col,
                       const at::Tensor& val, const at::Tensor& B_in, int64_t n_rows, int64_t panel_rows) {
  check_index_tensor("panel_ptr", panel_ptr);
  check_index_tensor("row", row);
  check_index_tensor("col", col);
  TORCH_CHECK_VALUE(panel_rows >= 1, "spmm_panels: panel_rows must be >= 1, got ", panel_rows);
  TORCH_CHECK_VALUE(n_rows >= 0, "spmm_panels: n_rows must be >= 0, got ", n_rows);
  const int64_t panels = (n_rows + panel_rows - 1) / panel_rows, nnz = col.numel();
  TORCH_CHECK_VALUE(panel_ptr.numel() == panels + 1, "spmm_panels: panel_ptr needs ", panels + 1,
                    " entries for ", n_rows, " rows in panels of ", panel_rows, ", got ", panel_ptr.numel());
  TORCH_CHECK_VALUE(row.numel() == nnz && val.dim() == 1 && val.numel() == nnz,
                    "spmm_panels: row, col and val must have the same length");
  TORCH_CHECK_VALUE(B_in.dim() == 2 && B_in.device().is_cpu(), "spmm_panels: B must be a 2-D CPU tensor");
  TORCH_CHECK_VALUE(val.scalar_type() == B_in.scalar_type() &&
                        (B_in.scalar_type() == at::kFloat || B_in.scalar_type() == at::kDouble),
                    "spmm_panels: val and B must both be float32 or both float64");
  const int64_t* pp = panel_ptr.data_ptr<int64_t>();
  for (int64_t q = 0; q < panels; ++q)
    TORCH_CHECK_VALUE(pp[q] <= pp[q + 1], "spmm_panels: panel_ptr must be non-decreasing");
  TORCH_CHECK_VALUE(panels == 0 ? nnz == 0 : (pp[0] == 0 && pp[panels] == nnz),
                    "spmm_panels: panel_ptr must run from 0 to nnz = ", nnz);
  const at::Tensor B = (B_in.size(1) <= 1 || B_in.stride(1) == 1) ? B_in : B_in.contiguous();
  const at::Tensor v = val.contiguous();
  const int64_t K = B.size(1);
  at::Tensor out = at::zeros({n_rows, K}, B.options().memory_format(at::MemoryFormat::Contiguous));
  if (nnz == 0 || K == 0) return out;
  std::atomic<bool> bad{false};
  AT_DISPATCH_FLOATING_TYPES(B.scalar_type(), "spmm_panels", [&] {
    const int64_t *r = row.data_ptr<int64_t>(), *c = col.data_ptr<int64_t>();
    const scalar_t* vp = v.data_ptr<scalar_t>();
    const scalar_t* bp = B.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    // Panels write disjoint output rows, so they need no synchronisation.
    at::parallel_for(0, panels, 1, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q)
        if (!run_panel(r, c, vp, bp, B.stride(0), B.size(0), K, op, q * panel_rows,
                       std::min(n_rows, (q + 1) * panel_rows), pp[q], pp[q + 1]))
          bad.store(true, std::memory_order_relaxed);
    });
  });
  TORCH_CHECK_VALUE(!bad.load(), "spmm_panels: a row outside its panel or a column outside [0, ", B.size(0), ")");
  return out;
}

}  // namespace netsparse
