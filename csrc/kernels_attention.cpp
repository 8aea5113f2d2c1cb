#include "kernels_attention.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels_csr_util.h"

namespace netsparse {
namespace {

using csr_util::check_dense;
using csr_util::nnz_chunks;

// Row chunks of about equal nonzero counts, 8 per thread (power-law rows do not leave a thread behind).
std::vector<int64_t> row_chunks(const at::Tensor& crow) {
  const int64_t rows = crow.numel() - 1;
  return nnz_chunks(crow.data_ptr<int64_t>(), rows, std::max<int64_t>(1, std::min<int64_t>(rows, 8 * at::get_num_threads())));
}

template <typename F>
void for_chunks(const std::vector<int64_t>& bounds, const F& body) {
  const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) { body(bounds[c0], bounds[c1]); });
}

template <typename T>
inline T leaky(T v, T slope) { return v > T(0) ? v : v * slope; }

void check_rows(const char* op, const char* name, const at::Tensor& t, int64_t rows) {
  TORCH_CHECK_VALUE(t.size(0) == rows, op, ": ", name, " must have ", rows, " rows, got ", t.size(0));
}

// Rows [r0, r1) of the multi-head SpMM. CC > 0 fixes the channel count at compile time (the common
// head widths), so the channel loop is unrolled and vectorised; CC == 0 reads it from C.
template <typename T, int CC>
void spmm_heads_rows(const int64_t* __restrict crow, const int64_t* __restrict col, const T* __restrict alpha,
                     const int64_t* __restrict perm, const T* __restrict B, int64_t ldb, int64_t H, int64_t C_rt,
                     T* __restrict out, int64_t r0, int64_t r1) {
  const int64_t C = CC > 0 ? CC : C_rt, HC = H * C;
  for (int64_t r = r0; r < r1; ++r) {
    T* __restrict o = out + r * HC;
    std::fill(o, o + HC, T(0));
    for (int64_t p = crow[r]; p < crow[r + 1]; ++p) {
      const T* __restrict a = alpha + (perm ? perm[p] : p) * H;
      const T* __restrict b = B + col[p] * ldb;
      for (int64_t h = 0; h < H; ++h) {
        const T w = a[h];
        T* __restrict oh = o + h * C;
        const T* __restrict bh = b + h * C;
        _Pragma("omp simd")
        for (int64_t c = 0; c < C; ++c) oh[c] += w * bh[c];
      }
    }
  }
}

}  // namespace

at::Tensor edge_softmax(const at::Tensor& crow, const at::Tensor& col, const std::optional<at::Tensor>& mult,
                        const at::Tensor& src_in, const at::Tensor& dst_in, double negative_slope) {
  csr_util::check_pattern("edge_softmax", crow, col);
  check_dense("edge_softmax", "src", src_in);
  check_dense("edge_softmax", "dst", dst_in);
  TORCH_CHECK_VALUE(src_in.scalar_type() == dst_in.scalar_type() && src_in.size(1) == dst_in.size(1),
                    "edge_softmax: src and dst must share dtype and head count");
  const int64_t rows = crow.numel() - 1, nnz = col.numel(), H = src_in.size(1);
  check_rows("edge_softmax", "dst", dst_in, rows);
  csr_util::check_columns("edge_softmax", col, src_in.size(0));
  at::Tensor m;
  if (mult.has_value()) {
    m = mult->contiguous();
    TORCH_CHECK_VALUE(m.dim() == 1 && m.numel() == nnz && m.scalar_type() == src_in.scalar_type(),
                      "edge_softmax: mult must be 1-D with one ", src_in.scalar_type(), " per nonzero");
  }
  const at::Tensor src = src_in.contiguous(), dst = dst_in.contiguous();
  at::Tensor out = at::empty({nnz, H}, src.options());
  if (nnz == 0 || H == 0) return out;
  const auto bounds = row_chunks(crow);
  AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "netsparse_edge_softmax", [&] {
    const scalar_t slope = static_cast<scalar_t>(negative_slope);
    const int64_t* crow_p = crow.data_ptr<int64_t>();
    const int64_t* col_p = col.data_ptr<int64_t>();
    const scalar_t* s_p = src.data_ptr<scalar_t>();
    const scalar_t* d_p = dst.data_ptr<scalar_t>();
    const scalar_t* m_p = m.defined() ? m.data_ptr<scalar_t>() : nullptr;
    scalar_t* o_p = out.data_ptr<scalar_t>();
    for_chunks(bounds, [&](int64_t r0, int64_t r1) {
      std::vector<scalar_t> top(H), sum(H);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t p0 = crow_p[r], p1 = crow_p[r + 1];
        const scalar_t* dr = d_p + r * H;
        std::fill(top.begin(), top.end(), -std::numeric_limits<scalar_t>::infinity());
        for (int64_t p = p0; p < p1; ++p) {  // scores, and each head's row maximum
          const scalar_t* s = s_p + col_p[p] * H;
          scalar_t* e = o_p + p * H;
          for (int64_t h = 0; h < H; ++h) {
            e[h] = leaky(s[h] + dr[h], slope);
            top[h] = std::max(top[h], e[h]);
          }
        }
        std::fill(sum.begin(), sum.end(), scalar_t(0));
        for (int64_t p = p0; p < p1; ++p) {
          const scalar_t w = m_p ? m_p[p] : scalar_t(1);
          scalar_t* e = o_p + p * H;
          for (int64_t h = 0; h < H; ++h) {
            e[h] = w * std::exp(e[h] - top[h]);
            sum[h] += e[h];
          }
        }
        for (int64_t p = p0; p < p1; ++p) {
          scalar_t* e = o_p + p * H;
          for (int64_t h = 0; h < H; ++h) e[h] = sum[h] > scalar_t(0) ? e[h] / sum[h] : scalar_t(0);
        }
      }
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> edge_softmax_backward(const at::Tensor& crow, const at::Tensor& col,
                                                         const at::Tensor& alpha_in, const at::Tensor& grad_in,
                                                         const at::Tensor& src_in, const at::Tensor& dst_in,
                                                         double negative_slope, const at::Tensor& t_crow,
                                                         const at::Tensor& t_perm) {
  csr_util::check_pattern("edge_softmax_backward", crow, col);
  csr_util::check_pattern("edge_softmax_backward (transpose)", t_crow, t_perm);
  for (const auto* t : {&alpha_in, &grad_in, &src_in, &dst_in}) check_dense("edge_softmax_backward", "input", *t);
  const int64_t rows = crow.numel() - 1, nnz = col.numel(), H = src_in.size(1), n_cols = src_in.size(0);
  const auto dtype = src_in.scalar_type();
  for (const auto* t : {&alpha_in, &grad_in, &dst_in})
    TORCH_CHECK_VALUE(t->scalar_type() == dtype && t->size(1) == H,
                      "edge_softmax_backward: every input must be ", dtype, " with ", H, " heads");
  check_rows("edge_softmax_backward", "alpha", alpha_in, nnz);
  check_rows("edge_softmax_backward", "grad", grad_in, nnz);
  check_rows("edge_softmax_backward", "dst", dst_in, rows);
  TORCH_CHECK_VALUE(t_crow.numel() == n_cols + 1 && t_perm.numel() == nnz,
                    "edge_softmax_backward: the transpose must have ", n_cols, " rows and ", nnz, " entries");
  csr_util::check_columns("edge_softmax_backward", col, n_cols);
  csr_util::check_columns("edge_softmax_backward (transpose)", t_perm, nnz);
  const at::Tensor alpha = alpha_in.contiguous(), grad = grad_in.contiguous(), src = src_in.contiguous(),
                   dst = dst_in.contiguous();
  at::Tensor d_src = at::empty({n_cols, H}, src.options()), d_dst = at::empty({rows, H}, src.options());
  at::Tensor d_raw = at::empty({nnz, H}, src.options());  // d loss / d (src[col p] + dst[r]) per nonzero
  AT_DISPATCH_FLOATING_TYPES(dtype, "netsparse_edge_softmax_backward", [&] {
    const scalar_t slope = static_cast<scalar_t>(negative_slope);
    const int64_t* crow_p = crow.data_ptr<int64_t>();
    const int64_t* col_p = col.data_ptr<int64_t>();
    const scalar_t* a_p = alpha.data_ptr<scalar_t>();
    const scalar_t* g_p = grad.data_ptr<scalar_t>();
    const scalar_t* s_p = src.data_ptr<scalar_t>();
    const scalar_t* d_p = dst.data_ptr<scalar_t>();
    scalar_t* raw_p = d_raw.data_ptr<scalar_t>();
    scalar_t* dd_p = d_dst.data_ptr<scalar_t>();
    // Per row: d e[p] = alpha[p] (g[p] - sum_q alpha[q] g[q]) (the softmax Jacobian), then LeakyReLU's.
    for_chunks(row_chunks(crow), [&](int64_t r0, int64_t r1) {
      std::vector<scalar_t> dot(H);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t p0 = crow_p[r], p1 = crow_p[r + 1];
        std::fill(dot.begin(), dot.end(), scalar_t(0));
        for (int64_t p = p0; p < p1; ++p)
          for (int64_t h = 0; h < H; ++h) dot[h] += a_p[p * H + h] * g_p[p * H + h];
        const scalar_t* dr = d_p + r * H;
        scalar_t* acc = dd_p + r * H;
        std::fill(acc, acc + H, scalar_t(0));
        for (int64_t p = p0; p < p1; ++p) {
          const scalar_t* s = s_p + col_p[p] * H;
          for (int64_t h = 0; h < H; ++h) {
            const scalar_t de = a_p[p * H + h] * (g_p[p * H + h] - dot[h]);
            const scalar_t d = s[h] + dr[h] > scalar_t(0) ? de : de * slope;
            raw_p[p * H + h] = d;
            acc[h] += d;
          }
        }
      }
    });
    // Per column: the sum over its nonzeros, in row order (the transpose lists them so).
    const int64_t* tc_p = t_crow.data_ptr<int64_t>();
    const int64_t* perm_p = t_perm.data_ptr<int64_t>();
    scalar_t* ds_p = d_src.data_ptr<scalar_t>();
    for_chunks(row_chunks(t_crow), [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        scalar_t* acc = ds_p + j * H;
        std::fill(acc, acc + H, scalar_t(0));
        for (int64_t q = tc_p[j]; q < tc_p[j + 1]; ++q)
          for (int64_t h = 0; h < H; ++h) acc[h] += raw_p[perm_p[q] * H + h];
      }
    });
  });
  return {d_src, d_dst};
}

at::Tensor spmm_heads(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& alpha_in, const at::Tensor& B_in,
                      const std::optional<at::Tensor>& perm_in) {
  csr_util::check_pattern("spmm_heads", crow, col);
  check_dense("spmm_heads", "alpha", alpha_in);
  check_dense("spmm_heads", "B", B_in);
  TORCH_CHECK_VALUE(alpha_in.scalar_type() == B_in.scalar_type(), "spmm_heads: alpha and B dtypes differ");
  const int64_t rows = crow.numel() - 1, nnz = col.numel(), H = alpha_in.size(1), HC = B_in.size(1);
  TORCH_CHECK_VALUE(H >= 1 && HC % H == 0, "spmm_heads: B has ", HC, " columns, not a multiple of ", H, " heads");
  csr_util::check_columns("spmm_heads", col, B_in.size(0));
  at::Tensor perm;
  if (perm_in.has_value()) {
    perm = perm_in->contiguous();
    TORCH_CHECK_VALUE(perm.dim() == 1 && perm.scalar_type() == at::kLong && perm.numel() == nnz,
                      "spmm_heads: perm must be 1-D int64 with one entry per nonzero");
    csr_util::check_columns("spmm_heads (perm)", perm, alpha_in.size(0));
  } else {
    check_rows("spmm_heads", "alpha", alpha_in, nnz);
  }
  const at::Tensor alpha = alpha_in.contiguous();
  const at::Tensor B = (HC <= 1 || B_in.stride(1) == 1) ? B_in : B_in.contiguous();  // row-strided B in place
  at::Tensor out = at::empty({rows, HC}, B.options().memory_format(at::MemoryFormat::Contiguous));
  if (rows == 0 || HC == 0) return out.zero_();
  const int64_t C = HC / H, ldb = B.stride(0);
  const auto bounds = row_chunks(crow);
  AT_DISPATCH_FLOATING_TYPES(B.scalar_type(), "netsparse_spmm_heads", [&] {
    const int64_t* crow_p = crow.data_ptr<int64_t>();
    const int64_t* col_p = col.data_ptr<int64_t>();
    const int64_t* perm_p = perm.defined() ? perm.data_ptr<int64_t>() : nullptr;
    const scalar_t* a_p = alpha.data_ptr<scalar_t>();
    const scalar_t* b_p = B.data_ptr<scalar_t>();
    scalar_t* o_p = out.data_ptr<scalar_t>();
    for_chunks(bounds, [&](int64_t r0, int64_t r1) {
      switch (C) {
        case 4: return spmm_heads_rows<scalar_t, 4>(crow_p, col_p, a_p, perm_p, b_p, ldb, H, C, o_p, r0, r1);
        case 8: return spmm_heads_rows<scalar_t, 8>(crow_p, col_p, a_p, perm_p, b_p, ldb, H, C, o_p, r0, r1);
        case 16: return spmm_heads_rows<scalar_t, 16>(crow_p, col_p, a_p, perm_p, b_p, ldb, H, C, o_p, r0, r1);
        case 32: return spmm_heads_rows<scalar_t, 32>(crow_p, col_p, a_p, perm_p, b_p, ldb, H, C, o_p, r0, r1);
        case 64: return spmm_heads_rows<scalar_t, 64>(crow_p, col_p, a_p, perm_p, b_p, ldb, H, C, o_p, r0, r1);
        default: return spmm_heads_rows<scalar_t, 0>(crow_p, col_p, a_p, perm_p, b_p, ldb, H, C, o_p, r0, r1);
      }
    });
  });
  return out;
}

at::Tensor sddmm_heads(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& X_in, const at::Tensor& Y_in,
                       int64_t heads) {
  csr_util::check_pattern("sddmm_heads", crow, col);
  check_dense("sddmm_heads", "X", X_in);
  check_dense("sddmm_heads", "Y", Y_in);
  const int64_t rows = crow.numel() - 1, nnz = col.numel(), HC = X_in.size(1);
  TORCH_CHECK_VALUE(X_in.scalar_type() == Y_in.scalar_type() && Y_in.size(1) == HC,
                    "sddmm_heads: X and Y must share dtype and width");
  TORCH_CHECK_VALUE(heads >= 1 && HC % heads == 0, "sddmm_heads: width ", HC, " is not a multiple of ", heads,
                    " heads");
  check_rows("sddmm_heads", "X", X_in, rows);
  csr_util::check_columns("sddmm_heads", col, Y_in.size(0));
  const at::Tensor X = X_in.contiguous(), Y = Y_in.contiguous();
  const int64_t H = heads, C = HC / H;
  at::Tensor out = at::empty({nnz, H}, X.options());
  if (nnz == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(X.scalar_type(), "netsparse_sddmm_heads", [&] {
    const int64_t* crow_p = crow.data_ptr<int64_t>();
    const int64_t* col_p = col.data_ptr<int64_t>();
    const scalar_t* x_p = X.data_ptr<scalar_t>();
    const scalar_t* y_p = Y.data_ptr<scalar_t>();
    scalar_t* o_p = out.data_ptr<scalar_t>();
    for_chunks(row_chunks(crow), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const scalar_t* __restrict x = x_p + r * HC;
        for (int64_t p = crow_p[r]; p < crow_p[r + 1]; ++p) {
          const scalar_t* __restrict y = y_p + col_p[p] * HC;
          for (int64_t h = 0; h < H; ++h) {
            scalar_t s = 0;
            _Pragma("omp simd reduction(+ : s)")
            for (int64_t c = 0; c < C; ++c) s += x[h * C + c] * y[h * C + c];
            o_p[p * H + h] = s;
          }
        }
      }
    });
  });
  return out;
}

}  // namespace netsparse
