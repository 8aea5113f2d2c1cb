#include "kernels_sparse_ops.h"

#include "kernels_csr_util.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

namespace netsparse {
namespace {

using csr_util::check_dense;
using csr_util::first_bad;
using csr_util::nnz_chunks;

// A matrix with unit column stride is read in place; any other layout is copied once.
at::Tensor unit_col_stride(const at::Tensor& t) { return (t.size(1) <= 1 || t.stride(1) == 1) ? t : t.contiguous(); }

// Row stride of a 2-D tensor, also for one column (a one-column slice keeps its parent's row stride).
int64_t row_stride(const at::Tensor& t) { return t.stride(0); }

void check_index(const char* op, const at::Tensor& idx) {
  TORCH_CHECK_VALUE(idx.dim() == 1 && idx.scalar_type() == at::kLong && idx.device().is_cpu(), op,
                    ": idx must be a 1-D int64 CPU tensor");
}

}  // namespace

at::Tensor sddmm(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& X_in, const at::Tensor& Y_in,
                 const std::optional<at::Tensor>& val) {
  TORCH_CHECK_VALUE(crow.dim() == 1 && crow.numel() >= 1 && crow.scalar_type() == at::kLong && crow.is_contiguous(),
                    "sddmm: crow must be a contiguous 1-D int64 tensor with rows+1 entries");
  TORCH_CHECK_VALUE(col.dim() == 1 && col.scalar_type() == at::kLong && col.is_contiguous(),
                    "sddmm: col must be a contiguous 1-D int64 tensor");
  check_dense("sddmm", "X", X_in);
  check_dense("sddmm", "Y", Y_in);
  TORCH_CHECK_VALUE(X_in.scalar_type() == Y_in.scalar_type(), "sddmm: X and Y dtypes differ");
  TORCH_CHECK_VALUE(X_in.size(1) == Y_in.size(1), "sddmm: X has ", X_in.size(1), " columns but Y has ",
                    Y_in.size(1));
  const int64_t rows = crow.numel() - 1, nnz = col.numel(), K = X_in.size(1), ny = Y_in.size(0);
  TORCH_CHECK_VALUE(X_in.size(0) == rows, "sddmm: X must have ", rows, " rows (one per CSR row), got ",
                    X_in.size(0));
  const int64_t* crow_p = crow.data_ptr<int64_t>();
  TORCH_CHECK_VALUE(crow_p[0] == 0 && crow_p[rows] == nnz, "sddmm: crow must run from 0 to nnz=", nnz);
  for (int64_t r = 0; r < rows; ++r) TORCH_CHECK_VALUE(crow_p[r] <= crow_p[r + 1], "sddmm: crow decreases at row ", r);
  at::Tensor v;
  if (val.has_value()) {
    v = val->contiguous();
    TORCH_CHECK_VALUE(v.dim() == 1 && v.numel() == nnz && v.scalar_type() == X_in.scalar_type(),
                      "sddmm: val must be 1-D with one ", X_in.scalar_type(), " per nonzero");
  }
  const int64_t bad = first_bad(col.data_ptr<int64_t>(), nnz, ny);
  TORCH_CHECK_VALUE(bad < 0, "sddmm: column index ", bad < 0 ? 0 : col.data_ptr<int64_t>()[bad],
                    " is outside [0, ", ny, ")");
  const at::Tensor X = unit_col_stride(X_in), Y = unit_col_stride(Y_in);
  at::Tensor out = at::empty({nnz}, X.options());
  if (nnz == 0) return out;
  const int64_t ldx = row_stride(X), ldy = row_stride(Y);
  const int64_t chunks = std::min<int64_t>(rows, 8 * at::get_num_threads());
  const auto bounds = nnz_chunks(crow_p, rows, chunks);
  AT_DISPATCH_FLOATING_TYPES(X.scalar_type(), "netsparse_sddmm", [&] {
    const scalar_t* x_p = X.data_ptr<scalar_t>();
    const scalar_t* y_p = Y.data_ptr<scalar_t>();
    const scalar_t* v_p = v.defined() ? v.data_ptr<scalar_t>() : nullptr;
    const int64_t* col_p = col.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t r = bounds[c0]; r < bounds[c1]; ++r) {
        const scalar_t* __restrict x = x_p + r * ldx;
        for (int64_t p = crow_p[r]; p < crow_p[r + 1]; ++p) {
          const scalar_t* __restrict y = y_p + col_p[p] * ldy;
          scalar_t s = 0;
          _Pragma("omp simd reduction(+ : s)")
          for (int64_t k = 0; k < K; ++k) s += x[k] * y[k];
          o[p] = v_p ? v_p[p] * s : s;
        }
      }
    });
  });
  return out;
}

at::Tensor gather_rows(const at::Tensor& B_in, const at::Tensor& idx_in) {
  check_dense("gather", "B", B_in);
  check_index("gather", idx_in);
  const at::Tensor idx = idx_in.contiguous(), B = unit_col_stride(B_in);
  const int64_t n = idx.numel(), K = B.size(1), ldb = row_stride(B);
  const int64_t* ip = idx.data_ptr<int64_t>();
  const int64_t bad = first_bad(ip, n, B.size(0));
  TORCH_CHECK_VALUE(bad < 0, "gather: index ", bad < 0 ? 0 : ip[bad], " is outside [0, ", B.size(0), ")");
  at::Tensor out = at::empty({n, K}, B.options().memory_format(at::MemoryFormat::Contiguous));
  if (n == 0 || K == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(B.scalar_type(), "netsparse_gather", [&] {
    const scalar_t* b = B.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    // Grain of about 64 KiB of rows per task: fewer, larger tasks than per-row scheduling.
    const int64_t grain = std::max<int64_t>(1, 65536 / (K * static_cast<int64_t>(sizeof(scalar_t))));
    at::parallel_for(0, n, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) std::memcpy(o + i * K, b + ip[i] * ldb, K * sizeof(scalar_t));
    });
  });
  return out;
}

at::Tensor scatter_add_rows(const at::Tensor& src_in, const at::Tensor& idx_in, int64_t n_out) {
  check_dense("scatter_add", "src", src_in);
  check_index("scatter_add", idx_in);
  TORCH_CHECK_VALUE(n_out >= 0, "scatter_add: n_out must be >= 0, got ", n_out);
  TORCH_CHECK_VALUE(idx_in.numel() == src_in.size(0), "scatter_add: idx has ", idx_in.numel(),
                    " entries but src has ", src_in.size(0), " rows");
  const at::Tensor idx = idx_in.contiguous(), src = unit_col_stride(src_in);
  const int64_t n = idx.numel(), K = src.size(1), lds = row_stride(src);
  const int64_t* ip = idx.data_ptr<int64_t>();
  const int64_t bad = first_bad(ip, n, n_out);
  TORCH_CHECK_VALUE(bad < 0, "scatter_add: index ", bad < 0 ? 0 : ip[bad], " is outside [0, ", n_out, ")");
  at::Tensor out = at::zeros({n_out, K}, src.options().memory_format(at::MemoryFormat::Contiguous));
  if (n == 0 || K == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "netsparse_scatter_add", [&] {
    const scalar_t* s = src.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    // Column slices of at least 16 elements (one 64-byte line of float32) per task.
    at::parallel_for(0, K, 16, [&](int64_t k0, int64_t k1) {
      for (int64_t i = 0; i < n; ++i) {
        scalar_t* __restrict dst = o + ip[i] * K;
        const scalar_t* __restrict from = s + i * lds;
        _Pragma("omp simd")
        for (int64_t k = k0; k < k1; ++k) dst[k] += from[k];
      }
    });
  });
  return out;
}

}  // namespace netsparse
