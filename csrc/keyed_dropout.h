#pragma once
// Counter-based dropout: every mask element is a pure function of (seed, epoch, layer, node, feature),
// so a run draws the same masks at every world size, partition, strategy and thread count.
#include <ATen/ATen.h>

#include <cstdint>

namespace netsparse {

// SplitMix64 (Steele, Lea, Flood, OOPSLA'14; constants of Stafford's "Mix13" finaliser, as in
// java.util.SplittableRandom): mix64 is the finaliser, splitmix64(z) the generator's output for state z.
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline uint64_t splitmix64(uint64_t z) { return mix64(z + kGolden); }

// The stream of one (seed, epoch, layer): each key is folded in with one SplitMix64 step.
inline uint64_t dropout_stream(int64_t seed, int64_t epoch, int64_t layer) {
  return splitmix64(splitmix64(splitmix64(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(epoch)) ^
                    static_cast<uint64_t>(layer));
}

// mask[i, j] = 1/(1-p) if u >= p else 0, where u = (w >> 11) * 2^-53 is the 53-bit uniform of
// w = mix64(row_i + (j+1) * golden), row_i = splitmix64(stream ^ node_ids[i]): element j of a row is
// the (j+1)-th output of a SplitMix64 generator seeded with the row's key. Shape and dtype of `like`
// (a 2-D CPU floating tensor with one row per node id); 0 <= p < 1.
at::Tensor keyed_dropout_mask(const at::Tensor& like, const at::Tensor& node_ids, double p, int64_t seed,
                              int64_t epoch, int64_t layer);

// Attention dropout: the same generator keyed on edges. For the nonzero p of row r of a CSR pattern
// (the edge from source col_ids[col[p]] to target row_ids[r], both original node ids) and head h:
// mask[p, h] = 1/(1-p) if u >= p else 0, where u is the 53-bit uniform of
// w = mix64(edge + (h+1) * golden), edge = splitmix64(splitmix64(attention_stream ^ source) ^ target),
// attention_stream = splitmix64(dropout_stream(seed, epoch, layer) ^ kAttentionDomain).
// Shape and dtype of `like` (nnz x heads).
constexpr uint64_t kAttentionDomain = 0x617474656E74696FULL;  // "attentio": our choice, any constant
                                                              // that separates edge from node masks

at::Tensor keyed_edge_dropout_mask(const at::Tensor& like, const at::Tensor& crow, const at::Tensor& col,
                                   const at::Tensor& row_ids, const at::Tensor& col_ids, double p, int64_t seed,
                                   int64_t epoch, int64_t layer);

}  // namespace netsparse
