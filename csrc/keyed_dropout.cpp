#include "keyed_dropout.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

namespace netsparse {

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
  // u >= p  <=>  (w >> 11) >= p * 2^53  <=>  (w >> 11) >= ceil(p * 2^53): the same test in integers
  // (p * 2^53 is exact in double), without a 64-bit integer to double conversion per element.
  const uint64_t threshold = static_cast<uint64_t>(std::ceil(std::ldexp(p, 53)));
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

}  // namespace netsparse
