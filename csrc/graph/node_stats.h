// The workload definitions of hw_models/definitions.py (NetSparse Tables 1 and 4, SAOpt's per-rank
// filtering) in one streaming pass over a CSR pattern, node by node: a column bitmap per node and one
// per rank, no per-nonzero arrays.
#pragma once

#include <cstdint>
#include <vector>

namespace netsparse::graph {

struct NodeStats {
  int64_t nodes = 0, cores = 0;
  std::vector<int64_t> pair_prs;          // [nodes x nodes] remote nonzeros of p owned by q (SA PRs)
  std::vector<int64_t> pair_useful;       // [nodes x nodes] distinct columns p needs from q
  std::vector<int64_t> rank_pair_useful;  // [nodes x nodes] sum over p's ranks of distinct columns from q
  std::vector<int64_t> rank_issued;       // [nodes x cores] distinct remote columns of each rank
  std::vector<int64_t> rank_served;       // [nodes x cores] per-rank-filtered PRs each rank serves
  std::vector<int64_t> node_nnz;          // [nodes] nonzeros in p's rows
  std::vector<int64_t> node_distinct;     // [nodes] distinct columns (local ones included) in p's rows
  std::vector<int64_t> windows;           // [nodes] full windows of `window` consecutive remote PRs
  std::vector<int64_t> window_distinct;   // [nodes] sum over those windows of distinct destinations
};

// How a node's rows of A are split among its SAOpt ranks (software.rank_partition): kRows, contiguous
// numpy.array_split shares; kNnz, contiguous blocks of as equal nonzero counts as contiguity allows.
enum class RankPartition { kRows, kNnz };

// Node p owns rows [rb[p], rb[p+1]) of A and rows [cb[p], cb[p+1]) of B; its `cores` ranks own contiguous
// blocks of its rows of A (split by `rank_partition`) and the rows of B with the same ids when every node
// owns the same ids of both (rb == cb); otherwise numpy.array_split shares of its rows of B.
template <class Idx>
NodeStats node_stats(const int64_t* indptr, const Idx* indices, int64_t n_cols, const int64_t* rb,
                     const int64_t* cb, int64_t nodes, int64_t cores, int64_t window,
                     RankPartition rank_partition = RankPartition::kRows);

}  // namespace netsparse::graph
