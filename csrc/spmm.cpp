#include "spmm.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>

namespace netsparse {
namespace {

void check_csr(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& val) {
  TORCH_CHECK(crow.dim() == 1 && crow.numel() >= 1, "spmm: crow must be 1-D with rows+1 entries");
  TORCH_CHECK(crow.scalar_type() == at::kLong && col.scalar_type() == at::kLong,
              "spmm: crow and col must be int64");
  TORCH_CHECK(col.dim() == 1 && val.dim() == 1 && col.numel() == val.numel(),
              "spmm: col and val must be 1-D of equal length");
  TORCH_CHECK(crow.is_contiguous() && col.is_contiguous() && val.is_contiguous(),
              "spmm: crow, col and val must be contiguous");
}

// Chunk boundaries (in rows) holding about equal numbers of nonzeros.
std::vector<int64_t> nnz_balanced_chunks(const int64_t* crow, int64_t rows, int64_t chunks) {
  const int64_t nnz = crow[rows];
  std::vector<int64_t> bounds(chunks + 1, rows);
  bounds[0] = 0;
  for (int64_t c = 1; c < chunks; ++c) {
    const int64_t target = nnz * c / chunks;
    bounds[c] = std::lower_bound(crow, crow + rows + 1, target) - crow;
    bounds[c] = std::max(bounds[c], bounds[c - 1]);
  }
  return bounds;
}

template <typename scalar_t>
void spmm_rows(const int64_t* crow, const int64_t* col, const scalar_t* val, const scalar_t* B, int64_t b_rows,
               int64_t K, scalar_t* out, int64_t begin, int64_t end, std::atomic<bool>& bad_index) {
  for (int64_t r = begin; r < end; ++r) {
    scalar_t* __restrict o = out + r * K;
    for (int64_t p = crow[r]; p < crow[r + 1]; ++p) {
      const int64_t c = col[p];
      if (c < 0 || c >= b_rows) {
        bad_index.store(true, std::memory_order_relaxed);
        continue;
      }
      const scalar_t v = val[p];
      const scalar_t* __restrict b = B + c * K;
      for (int64_t k = 0; k < K; ++k) o[k] += v * b[k];
    }
  }
}

}  // namespace

at::Tensor spmm(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& val, const at::Tensor& B_in) {
  check_csr(crow, col, val);
  TORCH_CHECK(B_in.dim() == 2, "spmm: B must be 2-D, got ", B_in.dim(), "-D");
  TORCH_CHECK(val.scalar_type() == B_in.scalar_type(), "spmm: val dtype ", val.scalar_type(),
              " differs from B dtype ", B_in.scalar_type());
  TORCH_CHECK(B_in.device().is_cpu(), "spmm: the C++ kernel runs on CPU tensors");
  const at::Tensor B = B_in.contiguous();
  const int64_t rows = crow.numel() - 1, K = B.size(1), b_rows = B.size(0);
  at::Tensor out = at::zeros({rows, K}, B.options());
  if (rows == 0 || K == 0) return out;
  const int64_t* crow_p = crow.data_ptr<int64_t>();
  TORCH_CHECK(crow_p[rows] == col.numel(), "spmm: crow[-1]=", crow_p[rows], " but there are ", col.numel(),
              " nonzeros");
  const int64_t chunks = std::min<int64_t>(rows, 8 * at::get_num_threads());
  const auto bounds = nnz_balanced_chunks(crow_p, rows, chunks);
  std::atomic<bool> bad_index{false};
  AT_DISPATCH_FLOATING_TYPES(B.scalar_type(), "netsparse_spmm", [&] {
    const scalar_t* val_p = val.data_ptr<scalar_t>();
    const scalar_t* b_p = B.data_ptr<scalar_t>();
    scalar_t* out_p = out.data_ptr<scalar_t>();
    const int64_t* col_p = col.data_ptr<int64_t>();
    at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        spmm_rows<scalar_t>(crow_p, col_p, val_p, b_p, b_rows, K, out_p, bounds[c], bounds[c + 1], bad_index);
    });
  });
  TORCH_CHECK(!bad_index.load(), "spmm: a column index is outside [0, ", b_rows, ")");
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> csr_transpose(const at::Tensor& crow, const at::Tensor& col,
                                                             const at::Tensor& val, int64_t n_cols) {
  check_csr(crow, col, val);
  TORCH_CHECK(n_cols >= 0, "csr_transpose: n_cols must be >= 0");
  const int64_t rows = crow.numel() - 1, nnz = col.numel();
  at::Tensor t_crow = at::zeros({n_cols + 1}, crow.options());
  at::Tensor t_col = at::empty({nnz}, col.options());
  at::Tensor t_val = at::empty({nnz}, val.options());
  const int64_t* crow_p = crow.data_ptr<int64_t>();
  const int64_t* col_p = col.data_ptr<int64_t>();
  int64_t* tc = t_crow.data_ptr<int64_t>();
  for (int64_t p = 0; p < nnz; ++p) {
    TORCH_CHECK(col_p[p] >= 0 && col_p[p] < n_cols, "csr_transpose: column ", col_p[p], " outside [0, ",
                n_cols, ")");
    ++tc[col_p[p] + 1];
  }
  for (int64_t c = 0; c < n_cols; ++c) tc[c + 1] += tc[c];
  std::vector<int64_t> next(tc, tc + n_cols);
  int64_t* out_col = t_col.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(val.scalar_type(), "netsparse_csr_transpose", [&] {
    const scalar_t* v = val.data_ptr<scalar_t>();
    scalar_t* out_val = t_val.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = crow_p[r]; p < crow_p[r + 1]; ++p) {
        const int64_t dst = next[col_p[p]]++;
        out_col[dst] = r;
        out_val[dst] = v[p];
      }
  });
  return {t_crow, t_col, t_val};
}

}  // namespace netsparse
