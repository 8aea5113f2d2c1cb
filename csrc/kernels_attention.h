#pragma once
// CPU kernels of graph attention (GAT, Velickovic et al., ICLR'18, eqs. 1-4) on a CSR pattern whose
// row r holds the neighbours j of node r (PyG's target i = r, source j = col[p]):
//
//   e[p, h]     = LeakyReLU(src[col[p], h] + dst[r, h])                      the scores: an SDDMM
//   alpha[p, h] = m[p] exp(e[p, h]) / sum_{q in row r} m[q] exp(e[q, h])     the per-row softmax
//   out[r, h*C:(h+1)*C] = sum_p alpha[p, h] B[col[p], h*C:(h+1)*C]          the aggregation: an SpMM
//
// with H heads of C channels. m[p] is the pattern's value, the multiplicity of the edge (a duplicate
// edge counts twice in PyG's softmax). Rows are split across threads by nonzero count; every output
// element is summed by one thread in a fixed order, so results do not depend on the thread count.
#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace netsparse {

// alpha (nnz, H) from src (n_cols, H) and dst (rows, H); mult (nnz) or none (all 1). The softmax
// subtracts each row's maximum score per head before exp.
at::Tensor edge_softmax(const at::Tensor& crow, const at::Tensor& col, const std::optional<at::Tensor>& mult,
                        const at::Tensor& src, const at::Tensor& dst, double negative_slope);

// Gradients (d_src, d_dst) of edge_softmax given alpha and d alpha. d_dst sums each row; d_src sums
// each column through the transposed pattern (t_crow: n_cols + 1 pointers; t_perm: the nonzero p of
// each transposed entry, column-major), so no atomics are needed.
std::tuple<at::Tensor, at::Tensor> edge_softmax_backward(const at::Tensor& crow, const at::Tensor& col,
                                                         const at::Tensor& alpha, const at::Tensor& grad,
                                                         const at::Tensor& src, const at::Tensor& dst,
                                                         double negative_slope, const at::Tensor& t_crow,
                                                         const at::Tensor& t_perm);

// out[r, h*C + c] = sum_p alpha[w(p), h] * B[col[p], h*C + c] with w(p) = perm[p] (or p without perm):
// the multi-head SpMM. With the transposed pattern and its perm it is the backward product A_h^T G.
// alpha is (nnz, H); B is (n_cols, H*C) with unit column stride.
at::Tensor spmm_heads(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& alpha, const at::Tensor& B,
                      const std::optional<at::Tensor>& perm);

// out[p, h] = <X[r, h*C:(h+1)*C], Y[col[p], h*C:(h+1)*C]>: the multi-head SDDMM (the gradient of
// spmm_heads with respect to alpha). X is (rows, H*C), Y is (n_cols, H*C).
at::Tensor sddmm_heads(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& X, const at::Tensor& Y,
                       int64_t heads);

}  // namespace netsparse
