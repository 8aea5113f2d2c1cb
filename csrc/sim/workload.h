#pragma once
// The workload (ASTRA-sim's workload layer): each node's idx stream, the column ids of its rows of A
// read in place, handed out as RIG commands of the node's batch size (§5.1, §8).
#include <cstdint>
#include <vector>

#include "sim/types.h"
#include "units/rig_unit.h"

namespace netsparse::sim {

class Workload {
 public:
  // Validates the CSR against the row bounds and the columns against the column bounds' end.
  Workload(const Csr& a, const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds,
           const SimConfig& cfg);
  bool has_command(int64_t node) const { return next_[node] < end_[node]; }
  int64_t batch(int64_t node) const { return batch_[node]; }
  // Enqueues the node's next command into `unit`; returns its nonzeros.
  int64_t next_command(int64_t node, units::RigClientUnit& unit);

 private:
  Csr a_;                                    // indices: A's, or remote_ when the host filters local idxs
  std::vector<int64_t> next_, end_, batch_;  // per node: the host's command queue, idxs [next, end)
  std::vector<int32_t> remote32_;            // cfg.host_filters_local: each node's remote idxs, in order
  std::vector<int64_t> remote64_;
};

}  // namespace netsparse::sim
