// Streaming workload statistics (see node_stats.h).
#include "graph/node_stats.h"

#include "graph/parallel.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include "units/errors.h"

namespace netsparse::graph {

namespace {

// Owner node of a column: a bucket table gives a start no later than the owner, a short scan ends it
// (blocks are far wider than buckets in practice, and empty blocks are stepped over).
class OwnerLookup {
 public:
  OwnerLookup(const int64_t* cb, int64_t nodes, int64_t n_cols) : cb_(cb) {
    width_ = std::max<int64_t>(1, (n_cols + kBuckets - 1) / kBuckets);
    for (int64_t b = 0; b * width_ < n_cols; ++b)
      first_.push_back(std::upper_bound(cb, cb + nodes + 1, b * width_) - cb - 1);
  }
  int64_t operator()(int64_t c) const {
    int64_t o = first_[c / width_];
    while (cb_[o + 1] <= c) ++o;
    return o;
  }

 private:
  static constexpr int64_t kBuckets = 1 << 16;
  const int64_t* cb_;
  int64_t width_;
  std::vector<int64_t> first_;
};

// Start of part i when `len` items are split into `parts` numpy.array_split shares.
inline int64_t split_start(int64_t len, int64_t parts, int64_t i) {
  const int64_t base = len / parts, extra = len % parts;
  return i * base + std::min(i, extra);
}

// [nodes x (cores + 1)]: the first row of each rank of each node, then the node's end; `bounds` are the
// nodes' row blocks. Without `indptr`, numpy.array_split shares. With it (RankPartition::kNnz), rank i
// starts at the first row where the node's running nonzero count reaches i/cores of its total (the rule
// of the node partition `nnz`, hw_models/bounds.py, without its one-row minimum: a heavy row
// leaves ranks empty); a node without nonzeros splits its rows into shares.
std::vector<int64_t> rank_starts(const int64_t* bounds, int64_t nodes, int64_t cores, const int64_t* indptr) {
  std::vector<int64_t> out(nodes * (cores + 1));
  for (int64_t p = 0; p < nodes; ++p) {
    const int64_t lo = bounds[p], hi = bounds[p + 1];
    const int64_t base = indptr ? indptr[lo] : 0, nnz = indptr ? indptr[hi] - base : 0;
    int64_t* starts = &out[p * (cores + 1)];
    for (int64_t i = 0; i < cores; ++i)
      starts[i] = nnz == 0 ? lo + split_start(hi - lo, cores, i)
                           : std::partition_point(indptr + lo, indptr + hi, [&](int64_t x) {
                               return (x - base) * cores < i * nnz;  // counts far below 2^63 / cores
                             }) - indptr;
    starts[cores] = hi;
  }
  return out;
}

struct Bitmap {
  explicit Bitmap(int64_t n) : w((n + 63) / 64, 0) {}
  bool test_set(int64_t i) {  // true when i was not set yet
    uint64_t& word = w[i >> 6];
    const uint64_t bit = 1ULL << (i & 63);
    const bool fresh = !(word & bit);
    word |= bit;
    return fresh;
  }
  void reset(int64_t i) { w[i >> 6] &= ~(1ULL << (i & 63)); }
  void clear() { std::fill(w.begin(), w.end(), 0); }
  std::vector<uint64_t> w;
};

}  // namespace

template <class Idx>
NodeStats node_stats(const int64_t* indptr, const Idx* indices, int64_t n_cols, const int64_t* rb,
                     const int64_t* cb, int64_t nodes, int64_t cores, int64_t window, RankPartition rank_partition) {
  if (nodes < 1 || cores < 1 || window < 1 || n_cols < 1)
    throw units::ConfigInvalid("node_stats: nodes, cores, window and n_cols must be >= 1");
  NodeStats s;
  s.nodes = nodes;
  s.cores = cores;
  s.pair_prs.assign(nodes * nodes, 0);
  s.pair_useful.assign(nodes * nodes, 0);
  s.rank_pair_useful.assign(nodes * nodes, 0);
  s.rank_issued.assign(nodes * cores, 0);
  s.rank_served.assign(nodes * cores, 0);
  s.node_nnz.assign(nodes, 0);
  s.node_distinct.assign(nodes, 0);
  s.windows.assign(nodes, 0);
  s.window_distinct.assign(nodes, 0);
  const OwnerLookup owner(cb, nodes, n_cols);
  const std::vector<int64_t> a_starts =
      rank_starts(rb, nodes, cores, rank_partition == RankPartition::kNnz ? indptr : nullptr);
  const std::vector<int64_t> b_starts =
      std::equal(rb, rb + nodes + 1, cb) ? a_starts : rank_starts(cb, nodes, cores, nullptr);
  std::mutex served_mutex;
  parallel_chunks(nodes, 1, [&](int64_t begin, int64_t end) {
    Bitmap node_seen(n_cols), rank_seen(n_cols);
    std::vector<int64_t> served(nodes * cores, 0), stamp(nodes);
    for (int64_t p = begin; p < end; ++p) {
      node_seen.clear();
      std::fill(stamp.begin(), stamp.end(), -1);
      int64_t* prs = &s.pair_prs[p * nodes];
      int64_t* useful = &s.pair_useful[p * nodes];
      int64_t* rank_useful = &s.rank_pair_useful[p * nodes];
      int64_t win = 0, in_win = 0, distinct = 0;
      s.node_nnz[p] = indptr[rb[p + 1]] - indptr[rb[p]];
      for (int64_t i = 0; i < cores; ++i) {
        const int64_t first = indptr[a_starts[p * (cores + 1) + i]];
        const int64_t last = indptr[a_starts[p * (cores + 1) + i + 1]];
        for (int64_t e = first; e < last; ++e) {
          const int64_t c = static_cast<int64_t>(indices[e]);
          if (c < 0 || c >= n_cols) throw units::ConfigInvalid("node_stats: a column id is outside [0, n_cols)");
          const int64_t q = owner(c);
          const bool fresh = node_seen.test_set(c);
          s.node_distinct[p] += fresh;
          if (q == p) continue;
          useful[q] += fresh;
          ++prs[q];
          if (stamp[q] != win) {  // Table 4: distinct destinations per window, trailing window dropped
            stamp[q] = win;
            ++distinct;
          }
          if (++in_win == window) {
            s.window_distinct[p] += distinct;
            ++s.windows[p];
            ++win;
            in_win = distinct = 0;
          }
          if (rank_seen.test_set(c)) {  // SAOpt: filtering within this rank only
            ++rank_useful[q];
            ++s.rank_issued[p * cores + i];
            const int64_t* starts = &b_starts[q * (cores + 1)];  // serving rank: the last start <= c
            ++served[q * cores + (std::upper_bound(starts, starts + cores + 1, c) - starts - 1)];
          }
        }
        for (int64_t e = first; e < last; ++e) rank_seen.reset(static_cast<int64_t>(indices[e]));
      }
    }
    std::lock_guard<std::mutex> lock(served_mutex);
    for (size_t i = 0; i < served.size(); ++i) s.rank_served[i] += served[i];
  });
  return s;
}

template NodeStats node_stats<int32_t>(const int64_t*, const int32_t*, int64_t, const int64_t*, const int64_t*,
                                       int64_t, int64_t, int64_t, RankPartition);
template NodeStats node_stats<int64_t>(const int64_t*, const int64_t*, int64_t, const int64_t*, const int64_t*,
                                       int64_t, int64_t, int64_t, RankPartition);

}  // namespace netsparse::graph
