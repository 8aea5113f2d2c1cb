#pragma once
// CPU companions of the SpMM: SDDMM (attention scores, the gradient of the SpMM values, the SDDMM
// communication pattern) and the gather / scatter-add that pack and unpack halo rows.
#include <ATen/ATen.h>

#include <optional>

namespace netsparse {

// out[p] = val[p] * <X[r, :], Y[col[p], :]> for every nonzero p of row r (val omitted: 1).
// X is (rows, K), Y is (ny, K); float32 or float64; rows split across threads by nonzero count.
at::Tensor sddmm(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& X, const at::Tensor& Y,
                 const std::optional<at::Tensor>& val);

// out[i, :] = B[idx[i], :] (halo[i] = B[idx[i]]), rows copied in parallel.
at::Tensor gather_rows(const at::Tensor& B, const at::Tensor& idx);

// out = zeros(n_out, K); out[idx[i], :] += src[i, :]. Threads split the K columns, so the sum
// order per output element is the index order: deterministic and free of atomics.
at::Tensor scatter_add_rows(const at::Tensor& src, const at::Tensor& idx, int64_t n_out);

}  // namespace netsparse
