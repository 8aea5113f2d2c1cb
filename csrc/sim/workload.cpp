// The nodes' idx streams and RIG commands (see workload.h).
#include "sim/workload.h"

#include <algorithm>
#include <stdexcept>

#include "units/errors.h"
#include <string>

namespace netsparse::sim {

namespace {
template <class Idx>
void check_cols(const Idx* idx, int64_t nnz, int64_t n_cols) {
  for (int64_t i = 0; i < nnz; ++i)
    if (idx[i] < 0 || idx[i] >= n_cols)
      throw units::ConfigInvalid("simulator: column index " + std::to_string(idx[i]) + " out of range [0, " +
                                  std::to_string(n_cols) + ")");
}
}  // namespace

Workload::Workload(const Csr& a, const std::vector<int64_t>& rb, int64_t n_cols, const SimConfig& cfg) : a_(a) {
  if (rb.front() != 0 || rb.back() != a.n_rows || a.indptr[0] != 0 || a.indptr[a.n_rows] != a.nnz)
    throw units::ConfigInvalid("simulator: indptr does not match the row bounds / nnz");
  for (size_t p = 1; p < rb.size(); ++p)
    if (rb[p] < rb[p - 1] || a.indptr[rb[p]] < a.indptr[rb[p - 1]])
      throw units::ConfigInvalid("simulator: row bounds and indptr must be non-decreasing");
  if (a.narrow) check_cols(static_cast<const int32_t*>(a.indices), a.nnz, n_cols);
  else check_cols(static_cast<const int64_t*>(a.indices), a.nnz, n_cols);
  const int64_t nodes = static_cast<int64_t>(rb.size()) - 1;
  int64_t max_idxs = 0;
  for (int64_t p = 0; p < nodes; ++p) {
    next_.push_back(a.indptr[rb[p]]);
    end_.push_back(a.indptr[rb[p + 1]]);
    max_idxs = std::max(max_idxs, end_[p] - next_[p]);
  }
  for (int64_t p = 0; p < nodes; ++p) {
    const int64_t n = end_[p] - next_[p];
    batch_.push_back(units::rig_batch(cfg.batch, n, max_idxs, cfg.client_units));
  }
}

int64_t Workload::next_command(int64_t node, units::RigClientUnit& unit) {
  const int64_t len = std::min(batch_[node], end_[node] - next_[node]);
  if (a_.narrow) unit.enqueue(static_cast<const int32_t*>(a_.indices) + next_[node], nullptr, len);
  else unit.enqueue(static_cast<const int64_t*>(a_.indices) + next_[node], nullptr, len);
  next_[node] += len;
  return len;
}

}  // namespace netsparse::sim
