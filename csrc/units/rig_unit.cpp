// RIG client and server units (paper §5.1-5.3).
#include "units/rig_unit.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "units/errors.h"

namespace netsparse::units {

NodeMap::NodeMap(std::vector<int64_t> b) : bounds(std::move(b)) {
  if (bounds.size() < 2 || bounds[0] != 0)
    throw ConfigInvalid("row bounds must start at 0 and name at least one node");
  for (size_t i = 1; i < bounds.size(); ++i)
    if (bounds[i] < bounds[i - 1]) throw ConfigInvalid("row bounds must be non-decreasing");
  if (n_nodes() > (int64_t{1} << 31)) throw ConfigInvalid("too many nodes for a u32 destination");
}

void IdxFilter::reset(int64_t n_cols, bool track_slots) {
  const size_t words = static_cast<size_t>((n_cols + 63) / 64);
  if (bits_.size() != words) bits_.assign(words, 0);
  else if (any_set_) std::fill(bits_.begin(), bits_.end(), 0);
  any_set_ = false;
  if (!track_slots) {
    std::vector<int64_t>().swap(slot_);  // release the per-column slots
  } else if (slot_.size() != static_cast<size_t>(n_cols)) {
    slot_.assign(static_cast<size_t>(n_cols), -1);
  }
}

// batch_size=auto (docs/simulator.md has the sweep behind it), with s = ceil(n / U):
//   own   = s                                  if s < 8192
//         = the power of two nearest 2 s       otherwise (nearest in log scale)
//   batch = min(32768, max(own, ceil(n_max / (2 U))))
// n = the node's idxs, n_max = the largest node's, U = client units per node. Every command pays the
// host's round trip (completion notification, MMIO write, idx DMA) and ends waiting for its last PRs'
// responses. A short stream is split evenly into one command per unit, so every unit works (a power
// of two would leave units idle: 10 commands of 8192 for 16 units). A long stream (s >= 8192, a
// quarter of the cap) is bound by its PR traffic instead, and a unit's Idx Filter only catches repeats
// within one command: commands twice as long, on half the units, filter more than they lose (sweep:
// 1.26x faster on arabic at 1/20 scale, 1.23x at 1/30, 1.02x on stokes at 1/20). The threshold and the
// factor 2 are our own choices from that sweep, not from the paper; with a threshold of 2048 the
// heaviest nodes of the skewed shared graphs (ego-twitter, soc-slashdot) doubled too and their tails
// were 11-15 % slower. A node much lighter than the largest does not go below half the largest node's
// per-unit share: its few PRs in flight at once are enough for it to finish before the largest node,
// and its flood would only queue at the owners everyone reads (in the sweep, soc-slashdot's tail is
// 24 % slower without this floor). The cap is NetSparse's default batch (§8): the units' idx DMAs share
// the PCIe link, so huge commands delay every unit's start.
int64_t auto_batch_size(int64_t node_idxs, int64_t max_node_idxs, int64_t client_units) {
  if (node_idxs < 0 || max_node_idxs < node_idxs || client_units < 1)
    throw ConfigInvalid("auto_batch_size: need 0 <= node idxs <= max node idxs and client units >= 1");
  constexpr int64_t kCap = 32768, kLong = 8192;
  const int64_t share = (node_idxs + client_units - 1) / client_units;
  const int64_t own = share < kLong ? share : int64_t{1} << std::lround(std::log2(2.0 * static_cast<double>(share)));
  const int64_t floor = (max_node_idxs + 2 * client_units - 1) / (2 * client_units);
  return std::max<int64_t>(1, std::min(kCap, std::max(own, floor)));
}

void check_rig_batch(int64_t batch) {
  if (batch <= 0 && batch != kAutoBatch && batch != kWholeStreamBatch)
    throw ConfigInvalid("RIG batch size must be > 0, " + std::to_string(kAutoBatch) + " (auto) or " +
                        std::to_string(kWholeStreamBatch) + " (inf, one command), got " + std::to_string(batch));
}

int64_t rig_batch(int64_t batch, int64_t node_idxs, int64_t max_node_idxs, int64_t client_units) {
  check_rig_batch(batch);
  if (batch > 0) return batch;
  if (batch == kWholeStreamBatch) return std::max<int64_t>(node_idxs, 1);
  return auto_batch_size(node_idxs, max_node_idxs, client_units);
}

void RigCounters::add(const RigCounters& o) {
  idxs += o.idxs;
  local += o.local;
  filtered += o.filtered;
  coalesced += o.coalesced;
  prs += o.prs;
  responses += o.responses;
  stalls += o.stalls;
  commands += o.commands;
}

RigClientUnit::RigClientUnit(uint16_t tid, int64_t pending_capacity) : tid_(tid), capacity_(pending_capacity) {
  if (pending_capacity <= 0 || pending_capacity > (int64_t{1} << 24))
    throw ConfigInvalid("Pending PR Table capacity must be in 1..2^24, got " + std::to_string(pending_capacity));
  entries_.resize(static_cast<size_t>(capacity_));
  uint64_t size = 1;
  shift_ = 64;
  while (size < static_cast<uint64_t>(2 * capacity_)) {  // load factor <= 1/2
    size <<= 1;
    --shift_;
  }
  if (size == 1) {  // keep the hash shift < 64
    size = 2;
    --shift_;
  }
  mask_ = size - 1;
  table_.assign(size, Slot{-1, 0});
  reset();
}

void RigClientUnit::reset() {
  if (pending_ != 0) throw OutOfOrder("RIG client unit reset with PRs still pending");
  cmds_.clear();
  cmd_ = 0;
  pos_ = 0;
  stalled_ = false;
  free_.clear();
  for (int64_t e = capacity_ - 1; e >= 0; --e) free_.push_back(static_cast<int32_t>(e));
  for (auto& en : entries_) en.busy = false;
  waiters_.clear();
  free_waiter_ = -1;
}

void RigClientUnit::table_insert(uint64_t idx, int32_t e) {
  const uint32_t key = hash_key(idx);
  uint64_t h = home(key);
  while (table_[h].e >= 0) h = (h + 1) & mask_;
  table_[h] = Slot{e, key};
}

void RigClientUnit::table_erase(uint64_t idx, int32_t e) {
  uint64_t h = home(hash_key(idx));
  while (table_[h].e != e) h = (h + 1) & mask_;
  // Backward-shift deletion keeps every probe chain unbroken without tombstones.
  uint64_t hole = h;
  for (uint64_t j = (hole + 1) & mask_; table_[j].e >= 0; j = (j + 1) & mask_) {
    const uint64_t at = home(table_[j].key);
    // Move j into the hole when its home is not cyclically in (hole, j].
    if (((j - at) & mask_) >= ((j - hole) & mask_)) {
      table_[hole] = table_[j];
      hole = j;
    }
  }
  table_[hole] = Slot{-1, 0};
}

void RigClientUnit::add_waiter(int32_t e, int64_t slot) {
  int32_t w;
  if (free_waiter_ >= 0) {
    w = free_waiter_;
    free_waiter_ = waiters_[w].next;
  } else {
    w = static_cast<int32_t>(waiters_.size());
    waiters_.push_back(Waiter{});
  }
  waiters_[w] = Waiter{slot, entries_[e].next};
  entries_[e].next = w;
}

void RigClientUnit::on_response(const RigContext& c, const PR& pr, const uint8_t* payload) {
  if (pr.id >= static_cast<uint64_t>(capacity_) || !entries_[pr.id].busy || entries_[pr.id].idx != pr.idx)
    throw Misrouted("response PR (idx " + std::to_string(pr.idx) + ", id " + std::to_string(pr.id) +
                    ") matches no pending entry of RIG unit " + std::to_string(tid_));
  Entry& en = entries_[pr.id];
  const size_t pb = c.prop_bytes;
  std::memcpy(c.halo + en.slot * pb, payload, pb);
  for (int32_t w = en.next; w >= 0;) {
    std::memcpy(c.halo + waiters_[w].slot * pb, payload, pb);
    const int32_t next = waiters_[w].next;
    waiters_[w].next = free_waiter_;
    free_waiter_ = w;
    w = next;
  }
  c.filter->set(pr.idx, en.slot);
  if (c.coalesce_on) table_erase(pr.idx, static_cast<int32_t>(pr.id));
  en.busy = false;
  free_.push_back(static_cast<int32_t>(pr.id));
  --pending_;
  ++counters.responses;
}

void RigServerUnit::not_owned(const RigContext& c, uint64_t idx) {
  throw Misrouted("read PR for idx " + std::to_string(idx) + " reached node " + std::to_string(c.node) +
                  ", which owns rows [" + std::to_string(c.row_start) + ", " + std::to_string(c.row_end) +
                  ")");
}

}  // namespace netsparse::units
