#include "keyed_dropout.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "kernels_csr_util.h"

namespace netsparse {
namespace {

// u >= p  <=>  (w >> 11) >= p * 2^53  <=>  (w >> 11) >= ceil(p * 2^53): the same test in integers
// (p * 2^53 is exact in double), without a 64-bit integer to double conversion per element.
uint64_t keep_threshold(double p) { return static_cast<uint64_t>(std::ceil(std::ldexp(p, 53))); }

}  // namespace

at::Tensor keyed_dropout_mask(const at::Tensor& like, const at::Tensor& node_ids_in, double p, int64_t seed,
                              int64_t epoch, int64_t layer) {
  TORCH_CHECK_VALUE(like.dim() == 2 && like.device().is_cpu() && like.is_floating_point(),
                    "keyed_dropout_mask: x must be a 2-D floating CPU tensor");
  TORCH_CHECK_VALUE(node_ids_in.dim() == 1 && node_ids_in.scalar_type() == at::kLong && node_ids_in.device().is_cpu(),
                    "keyed_dropout_mask: node_ids must be a 1-D int64 CPU tensor");
  TORCH_CHECK_VALUE(node_ids_in.numel() == like.size(0), "keyed_dropout_mask: ", node_ids_in.numel(),
                    " node ids for ", like.size(0), " rows");
  TORCH_CHECK_VALUE(p >= 0.0 && p < 1.0, "keyed_dropout_mask: p must be in [0, 1), got ", p);
  const at::Tensor node_ids = node_ids_in.contiguous();
  const int64_t n = like.size(0), F = like.size(1);
  at::Tensor mask = at::empty({n, F}, like.options().memory_format(at::MemoryFormat::Contiguous));
  if (n == 0 || F == 0) return mask;
  const uint64_t stream = dropout_stream(seed, epoch, layer);
  const uint64_t threshold = keep_threshold(p);
  const int64_t* ids = node_ids.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, like.scalar_type(), "netsparse_keyed_dropout", [&] {
    const scalar_t keep = static_cast<scalar_t>(1.0 / (1.0 - p));
    const scalar_t drop = static_cast<scalar_t>(0);
    scalar_t* out = mask.data_ptr<scalar_t>();
    // Each element depends only on its keys, so the split into tasks cannot change the result.
    const int64_t grain = std::max<int64_t>(1, 16384 / F);
    at::parallel_for(0, n, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        uint64_t z = splitmix64(stream ^ static_cast<uint64_t>(ids[i]));
        scalar_t* row = out + i * F;
        for (int64_t j = 0; j < F; ++j) {
          z += kGolden;
          row[j] = (mix64(z) >> 11) >= threshold ? keep : drop;
        }
      }
    });
  });
  return mask;
}

at::Tensor keyed_edge_dropout_mask(const at::Tensor& like, const at::Tensor& crow, const at::Tensor& col,
                                   const at::Tensor& row_ids_in, const at::Tensor& col_ids_in, double p, int64_t seed,
                                   int64_t epoch, int64_t layer) {
  csr_util::check_pattern("keyed_edge_dropout_mask", crow, col);
  TORCH_CHECK_VALUE(like.dim() == 2 && like.device().is_cpu() && like.is_floating_point() && like.size(0) == col.numel(),
                    "keyed_edge_dropout_mask: like must be a 2-D floating CPU tensor with one row per nonzero");
  for (const auto* ids : {&row_ids_in, &col_ids_in})
    TORCH_CHECK_VALUE(ids->dim() == 1 && ids->scalar_type() == at::kLong && ids->device().is_cpu(),
                      "keyed_edge_dropout_mask: row_ids and col_ids must be 1-D int64 CPU tensors");
  const int64_t rows = crow.numel() - 1, nnz = col.numel(), H = like.size(1);
  TORCH_CHECK_VALUE(row_ids_in.numel() == rows, "keyed_edge_dropout_mask: ", row_ids_in.numel(), " row ids for ",
                    rows, " rows");
  csr_util::check_columns("keyed_edge_dropout_mask", col, col_ids_in.numel());
  TORCH_CHECK_VALUE(p >= 0.0 && p < 1.0, "keyed_edge_dropout_mask: p must be in [0, 1), got ", p);
  const at::Tensor row_ids = row_ids_in.contiguous(), col_ids = col_ids_in.contiguous();
  at::Tensor mask = at::empty({nnz, H}, like.options().memory_format(at::MemoryFormat::Contiguous));
  if (nnz == 0 || H == 0) return mask;
  const uint64_t stream = splitmix64(dropout_stream(seed, epoch, layer) ^ kAttentionDomain);
  const uint64_t threshold = keep_threshold(p);
  const int64_t* crow_p = crow.data_ptr<int64_t>();
  const int64_t* col_p = col.data_ptr<int64_t>();
  const int64_t* rid = row_ids.data_ptr<int64_t>();
  const int64_t* cid = col_ids.data_ptr<int64_t>();
  const auto bounds = csr_util::nnz_chunks(crow_p, rows, std::max<int64_t>(1, std::min<int64_t>(rows, 8 * at::get_num_threads())));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, like.scalar_type(), "netsparse_keyed_edge_dropout", [&] {
    const scalar_t keep = static_cast<scalar_t>(1.0 / (1.0 - p));
    const scalar_t drop = static_cast<scalar_t>(0);
    scalar_t* out = mask.data_ptr<scalar_t>();
    // Each element depends only on its keys, so neither the chunks nor the nonzero order matter.
    at::parallel_for(0, static_cast<int64_t>(bounds.size()) - 1, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t r = bounds[c0]; r < bounds[c1]; ++r) {
        const uint64_t target = static_cast<uint64_t>(rid[r]);
        for (int64_t q = crow_p[r]; q < crow_p[r + 1]; ++q) {
          uint64_t z = splitmix64(splitmix64(stream ^ static_cast<uint64_t>(cid[col_p[q]])) ^ target);
          scalar_t* row = out + q * H;
          for (int64_t h = 0; h < H; ++h) {
            z += kGolden;
            row[h] = (mix64(z) >> 11) >= threshold ? keep : drop;
          }
        }
      }
    });
  });
  return mask;
}

}  // namespace netsparse
