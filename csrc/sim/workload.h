#pragma once
// The workload (ASTRA-sim's workload layer): each node's idx stream, the column ids of its rows of A
// read in place, handed out as RIG commands of the node's batch size (§5.1, §8).
#include <cstdint>
#include <vector>

#include "sim/types.h"
#include "units/rig_unit.h"

namespace netsparse::sim {

// An idx outside the node's columns [lo, hi) names another node's property.
template <class Idx>
bool is_remote(Idx c, int64_t lo, int64_t hi) {
  return c < lo || c >= hi;
}

// The remote idxs of the node stream idx[begin, end).
template <class Idx>
int64_t remote_count(const Idx* idx, int64_t begin, int64_t end, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t i = begin; i < end; ++i) n += is_remote(idx[i], lo, hi);
  return n;
}

// snic.rig_auto_split=remote_idxs: appends to `ends` the end of each RIG command of the node stream
// idx[begin, end) (remote: outside the node's columns [lo, hi)): right after every batch-th remote
// idx, except that the local idxs after the last remote one join the last command. Commands are then
// contiguous slices with `batch` remote idxs each (the last one fewer) and their local idxs in between.
template <class Idx>
void remote_command_ends(const Idx* idx, int64_t begin, int64_t end, int64_t lo, int64_t hi, int64_t batch,
                         std::vector<int64_t>& ends) {
  int64_t run = 0;  // remote idxs since the last cut
  bool any = false;
  for (int64_t i = begin; i < end; ++i) {
    if (!is_remote(idx[i], lo, hi)) continue;
    any = true;
    if (++run == batch) {
      ends.push_back(i + 1);
      run = 0;
    }
  }
  if (end == begin) return;
  if (any && run == 0) ends.back() = end;
  else ends.push_back(end);
}

class Workload {
 public:
  // Validates the CSR against the row bounds and the columns against the column bounds' end.
  Workload(const Csr& a, const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds,
           const SimConfig& cfg);
  bool has_command(int64_t node) const { return next_[node] < end_[node]; }
  int64_t batch(int64_t node) const { return batch_[node]; }
  int64_t total_idxs() const { return total_; }  // what the client units read in all
  // Enqueues the node's next command into `unit`; returns its nonzeros.
  int64_t next_command(int64_t node, units::RigClientUnit& unit);

 private:
  Csr a_;                                    // indices: A's, or remote_ when the host filters local idxs
  std::vector<int64_t> next_, end_, batch_;  // per node: the host's command queue, idxs [next, end)
  int64_t total_ = 0;
  std::vector<int32_t> remote32_;            // cfg.host_filters_local: each node's remote idxs, in order
  std::vector<int64_t> remote64_;
  std::vector<int64_t> cuts_;  // cfg.auto_splits_remote: every command's end, node after node (else empty)
  std::vector<int64_t> cut_;   // per node: its next command's end in cuts_
  template <class Idx>
  void cut_at_remote_counts(const Idx* idx, const std::vector<int64_t>& cb, int64_t client_units);
};

}  // namespace netsparse::sim
