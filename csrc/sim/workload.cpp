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

// The host knows the partition (snic.rig_local_idxs=host_filtered): it keeps only each node's remote
// idxs, so its commands carry no local idx. next/end become each node's range in the returned stream.
template <class Idx>
std::vector<Idx> remote_only(const Idx* idx, std::vector<int64_t>& next, std::vector<int64_t>& end,
                             const std::vector<int64_t>& cb) {
  int64_t n = 0;
  for (size_t p = 0; p < next.size(); ++p) n += remote_count(idx, next[p], end[p], cb[p], cb[p + 1]);
  std::vector<Idx> out;
  out.reserve(static_cast<size_t>(n));
  for (size_t p = 0; p < next.size(); ++p) {
    const int64_t first = static_cast<int64_t>(out.size());
    for (int64_t i = next[p]; i < end[p]; ++i)
      if (is_remote(idx[i], cb[p], cb[p + 1])) out.push_back(idx[i]);
    next[p] = first;
    end[p] = static_cast<int64_t>(out.size());
  }
  return out;
}
}  // namespace

Workload::Workload(const Csr& a, const std::vector<int64_t>& rb, const std::vector<int64_t>& cb,
                   const SimConfig& cfg)
    : a_(a) {
  const int64_t n_cols = cb.back();
  if (rb.front() != 0 || rb.back() != a.n_rows || a.indptr[0] != 0 || a.indptr[a.n_rows] != a.nnz)
    throw units::ConfigInvalid("simulator: indptr does not match the row bounds / nnz");
  for (size_t p = 1; p < rb.size(); ++p)
    if (rb[p] < rb[p - 1] || a.indptr[rb[p]] < a.indptr[rb[p - 1]])
      throw units::ConfigInvalid("simulator: row bounds and indptr must be non-decreasing");
  if (a.narrow) check_cols(static_cast<const int32_t*>(a.indices), a.nnz, n_cols);
  else check_cols(static_cast<const int64_t*>(a.indices), a.nnz, n_cols);
  const int64_t nodes = static_cast<int64_t>(rb.size()) - 1;
  for (int64_t p = 0; p < nodes; ++p) {
    next_.push_back(a.indptr[rb[p]]);
    end_.push_back(a.indptr[rb[p + 1]]);
  }
  if (cfg.host_filters_local && a.narrow) {
    remote32_ = remote_only(static_cast<const int32_t*>(a.indices), next_, end_, cb);
    a_.indices = remote32_.data();
  } else if (cfg.host_filters_local) {
    remote64_ = remote_only(static_cast<const int64_t*>(a.indices), next_, end_, cb);
    a_.indices = remote64_.data();
  }
  for (int64_t p = 0; p < nodes; ++p) total_ += end_[p] - next_[p];
  if (cfg.auto_splits_remote && cfg.batch == units::kAutoBatch) {
    if (a_.narrow) cut_at_remote_counts(static_cast<const int32_t*>(a_.indices), cb, cfg.client_units);
    else cut_at_remote_counts(static_cast<const int64_t*>(a_.indices), cb, cfg.client_units);
    return;
  }
  // The batch counts the idxs a command carries, so a filtered stream's batches are of remote idxs.
  int64_t max_idxs = 0;
  for (int64_t p = 0; p < nodes; ++p) max_idxs = std::max(max_idxs, end_[p] - next_[p]);
  for (int64_t p = 0; p < nodes; ++p) {
    const int64_t n = end_[p] - next_[p];
    batch_.push_back(units::rig_batch(cfg.batch, n, max_idxs, cfg.client_units));
  }
}

// snic.rig_auto_split=remote_idxs: the host, which knows the partition, applies auto's rule to the
// nodes' remote idx counts and ends a node's k-th command right after its (k batch)-th remote idx (the
// last one at the stream's end), so every command carries the same number of remote idxs, the PRs
// that fill a unit's Pending PR Table, and the local idxs between them for the unit to drop. Equal
// idx counts are not equal PR work when a node's remote idxs sit in a few heavy rows.
template <class Idx>
void Workload::cut_at_remote_counts(const Idx* idx, const std::vector<int64_t>& cb, int64_t client_units) {
  const auto nodes = static_cast<int64_t>(next_.size());
  std::vector<int64_t> remote(static_cast<size_t>(nodes), 0);
  for (int64_t p = 0; p < nodes; ++p) remote[p] = remote_count(idx, next_[p], end_[p], cb[p], cb[p + 1]);
  const int64_t max_remote = nodes ? *std::max_element(remote.begin(), remote.end()) : 0;
  for (int64_t p = 0; p < nodes; ++p) {
    const int64_t batch = units::auto_batch_size(remote[p], max_remote, client_units);
    batch_.push_back(batch);
    cut_.push_back(static_cast<int64_t>(cuts_.size()));
    remote_command_ends(idx, next_[p], end_[p], cb[p], cb[p + 1], batch, cuts_);
  }
}

int64_t Workload::next_command(int64_t node, units::RigClientUnit& unit) {
  const int64_t len = cut_.empty() ? std::min(batch_[node], end_[node] - next_[node])
                                   : cuts_[static_cast<size_t>(cut_[node]++)] - next_[node];
  if (a_.narrow) unit.enqueue(static_cast<const int32_t*>(a_.indices) + next_[node], nullptr, len);
  else unit.enqueue(static_cast<const int64_t*>(a_.indices) + next_[node], nullptr, len);
  next_[node] += len;
  return len;
}

}  // namespace netsparse::sim
