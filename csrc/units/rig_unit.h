#pragma once
// RIG (remote indexed gather) units of a SmartNIC (paper §5.1-5.3).
//
// Client unit: runs RIG commands. A command is a batch of idxs (global column ids of nonzeros) with a
// parallel array of destination slots in the host (halo) buffer, whose row stride is the property
// size. For each idx, in order:
//   * local: owned by this node -> dropped (the kernel reads local rows directly; its slot is ignored);
//   * filtered: the node's Idx Filter bit is set -> the property is already in local memory; it is
//     copied from the slot where it first landed (filtering, §5.2);
//   * coalesced: the idx is in this unit's Pending PR Table -> the slot is recorded as a waiter
//     (coalescing, only within one unit, §5.3);
//   * otherwise a read PR {src node, src_tid = unit id, idx, id = pending entry} goes to the owner.
// A full Pending PR Table stalls the unit (in order: it stops at the idx that needs a new entry and
// resumes once responses free entries). A response writes the property to every waiting slot, sets
// the filter bit and frees the entry. A command completes when every non-dropped idx is answered;
// the unit starts its next command only then, unless set_overlap(true) (the simulator's
// snic.rig_command_overlap=overlap): then it starts an enqueued next command as soon as its current
// one is scanned, with PRs still pending (the Pending PR Table and the filter serve both), and counts
// a command done when it moves past it.
//
// A command's idxs are int64 (the training path) or int32 (the simulator reads a Pattern's column ids
// in place: 4 B per nonzero, no widened copy); its slots may be null (timing-only users: every idx
// lands in halo slot 0). issue() takes an optional Timing policy (the simulator's Logic Engine clock):
// admit(idx, filter_access) is asked before each idx is processed and may stop the call there (the
// idx is then processed first on the next call); consumed(outcome) follows every processed idx.
// local_run(k) follows the first idx of a run of local idxs, with the k local idxs right behind it:
// the policy takes the first n <= k of them at once, as k calls of admit + consumed(kLocal) would
// (n = 0: it declines, and they go one by one). prefetch(idx) is a hint for a remote idx a few places ahead
// (the state its admit will read). The training path uses NoTiming, which admits everything.
//
// Server unit: answers read PRs from the local property array (owner-local row = idx - row_start)
// with response PRs that keep {src, src_tid, idx, id} and go back to src.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "units/errors.h"
#include "units/protocol.h"

namespace netsparse::units {

// Contiguous 1D row ownership: node p owns rows [bounds[p], bounds[p+1]).
struct NodeMap {
  std::vector<int64_t> bounds;
  explicit NodeMap(std::vector<int64_t> b);
  int64_t n_nodes() const { return static_cast<int64_t>(bounds.size()) - 1; }
  int64_t n_cols() const { return bounds.back(); }
  uint32_t owner(uint64_t idx) const {
    // Few nodes: a branch-light binary search over the bounds.
    int64_t lo = 0, n = n_nodes();
    while (n > 1) {
      const int64_t half = n / 2;
      if (static_cast<uint64_t>(bounds[lo + half]) <= idx) lo += half;
      n -= half;
    }
    return static_cast<uint32_t>(lo);
  }
};

// The node's Idx Filter: one bit per column, set when a response arrives, shared by the node's
// client units; remembers the slot where each filtered property landed.
// track_slots = false keeps only the bits (n_cols / 8 bytes instead of 8 bytes more per column): for
// timing-only users whose every idx lands in halo slot 0 (the simulator); slot() is then always 0.
class IdxFilter {
 public:
  void reset(int64_t n_cols, bool track_slots = true);  // invalidate (before each kernel)
  bool test(uint64_t idx) const { return (bits_[idx >> 6] >> (idx & 63)) & 1u; }
  void set(uint64_t idx, int64_t slot) {
    bits_[idx >> 6] |= uint64_t{1} << (idx & 63);
    any_set_ = true;
    if (!slot_.empty()) slot_[idx] = slot;
  }
  int64_t slot(uint64_t idx) const { return slot_.empty() ? 0 : slot_[idx]; }
  // A hint: asks for the word of idx's bit ahead of a set() or test() (no state changes).
  void prefetch(uint64_t idx) const {
    if ((idx >> 6) < bits_.size()) __builtin_prefetch(&bits_[idx >> 6]);
  }

 private:
  std::vector<uint64_t> bits_;
  bool any_set_ = false;  // a reset with no bit set since the last one clears nothing
  std::vector<int64_t> slot_;
};

// What a node's units share during one kernel.
struct RigContext {
  uint32_t node = 0;
  const NodeMap* map = nullptr;
  int64_t row_start = 0, row_end = 0;
  IdxFilter* filter = nullptr;
  bool filter_on = true, coalesce_on = true;
  uint32_t prop_bytes = 0;
  uint8_t* halo = nullptr;  // host buffer, n_slots rows of prop_bytes
  int64_t n_slots = 0;
  const uint8_t* local = nullptr;  // local property array, (row_end - row_start) rows
};

// batch_size=auto: the RIG batch size for a node with `node_idxs` nonzeros when the
// largest node has `max_node_idxs`, with `client_units` client units. Rule and reason in the .cpp.
int64_t auto_batch_size(int64_t node_idxs, int64_t max_node_idxs, int64_t client_units);

// The one C++ encoding of a RIG batch size (RigNode and the simulator alike; hw_models/hardware.py
// writes HardwareParams' "auto" and inf in it): > 0 nonzeros per command, or one of these two.
inline constexpr int64_t kAutoBatch = -1;        // auto_batch_size
inline constexpr int64_t kWholeStreamBatch = 0;  // inf: the node's whole stream in one command

// Throws ConfigInvalid unless `batch` is > 0, kAutoBatch or kWholeStreamBatch.
void check_rig_batch(int64_t batch);
// Nonzeros per RIG command of a node with `node_idxs` nonzeros (largest node: `max_node_idxs`).
int64_t rig_batch(int64_t batch, int64_t node_idxs, int64_t max_node_idxs, int64_t client_units);

// What became of a processed idx (the simulator charges its scan cycle by it).
enum class Outcome : uint8_t { kLocal, kFiltered, kCoalesced, kIssued };

// The Timing policy of RigClientUnit::issue for users without a clock (the training path).
struct NoTiming {
  bool admit(uint64_t, bool) { return true; }
  void consumed(Outcome) {}
  int64_t local_run(int64_t k) { return k; }
  void prefetch(uint64_t) {}
};

struct RigCounters {
  int64_t idxs = 0, local = 0, filtered = 0, coalesced = 0, prs = 0, responses = 0, stalls = 0, commands = 0;
  void add(const RigCounters& o);
};

class RigClientUnit {
 public:
  // Pending PR Table of pending_capacity entries (HardwareParams.snic.pending_pr_table: NetSparse Table 5, §5.3).
  RigClientUnit(uint16_t tid, int64_t pending_capacity);
  uint16_t tid() const { return tid_; }
  void reset();  // new kernel: drops commands (the table must be empty)
  // The arrays must stay alive until the command completes; slots == nullptr = every idx in slot 0.
  void enqueue(const int64_t* idxs, const int64_t* slots, int64_t n) { cmds_.push_back(Command{idxs, slots, n, false}); }
  void enqueue(const int32_t* idxs, const int64_t* slots, int64_t n) { cmds_.push_back(Command{idxs, slots, n, true}); }
  size_t commands_enqueued() const { return cmds_.size(); }
  size_t commands_done() const { return cmd_; }
  bool finished() const { return cmd_ == cmds_.size() && pending_ == 0; }
  bool scanning() const { return cmd_ < cmds_.size() && pos_ < cmds_[cmd_].n; }  // idxs of its command left
  bool stalled() const { return stalled_; }
  void set_overlap(bool on) { overlap_ = on; }
  int64_t pending() const { return pending_; }

  // Processes idxs until the unit stalls, waits for its command to complete, or runs out of work.
  // emit(dest, pr) receives each read PR. max_prs bounds the read PRs emitted by this call (the
  // simulator issues one PR per SNIC cycle); the unit then resumes at the next idx.
  template <class Emit, class Timing = NoTiming>
  void issue(const RigContext& c, Emit&& emit, int64_t max_prs = INT64_MAX, Timing&& timing = Timing{});
  void on_response(const RigContext& c, const PR& pr, const uint8_t* payload);
  // Where the next issue() reads its next idx (nullptr: no command left), for a prefetch ahead of it.
  const void* scan_at() const {
    if (cmd_ >= cmds_.size()) return nullptr;
    const Command& cm = cmds_[cmd_];
    return static_cast<const char*>(cm.idx) + pos_ * (cm.narrow ? 4 : 8);
  }
  // A hint: asks for the lines on_response(c, pr) reads first (its Pending PR Table entry, the idx's
  // home slot and Idx Filter word), so that the misses of a packet's responses overlap.
  void prefetch_response(const RigContext& c, const PR& pr) const {
    if (pr.id < entries_.size()) __builtin_prefetch(&entries_[pr.id]);
    if (c.coalesce_on && !table_.empty()) __builtin_prefetch(&table_[home(hash_key(pr.idx))]);
    c.filter->prefetch(pr.idx);
  }

  RigCounters counters;

 private:
  struct Command {
    const void* idx;  // int64_t[n] or int32_t[n] (narrow)
    const int64_t* slot;
    int64_t n;
    bool narrow;
  };
  enum class Stop { kDone, kBudget, kStall, kClock };
  // Runs the current command from pos_ (one idx width per instantiation); updates pos_ and counters.
  template <class Idx, class Emit, class Timing>
  Stop run(const RigContext& c, const Command& cm, Emit& emit, int64_t& max_prs, Timing& timing);
  struct Entry {
    uint64_t idx;
    int64_t slot;  // first waiter
    int32_t next;  // further waiters (index into waiters_), -1 = none
    bool busy;
  };
  struct Waiter {
    int64_t slot;
    int32_t next;
  };
  // Pending PR Table lookup by idx: open addressing, linear probing, backward-shift deletion. A slot
  // keeps the top 32 bits of its idx's hash product beside the entry id: a probe compares them in the
  // slot's own line and reads the entry (a line of its own) only when they match, and deletion finds
  // each slot's home from them without reading its entry at all.
  struct Slot {
    int32_t e;     // entry id, -1 = empty
    uint32_t key;  // hash_key(idx): its slot's home(key)
  };
  int32_t find(uint64_t idx) const {
    const uint32_t key = hash_key(idx);
    for (uint64_t h = home(key);; h = (h + 1) & mask_) {
      const Slot s = table_[h];
      if (s.e < 0) return -1;
      if (s.key == key && entries_[s.e].idx == idx) return s.e;
    }
  }
  static uint32_t hash_key(uint64_t idx) { return static_cast<uint32_t>((idx * 0x9E3779B97F4A7C15ull) >> 32); }
  uint64_t home(uint32_t key) const { return key >> (shift_ - 32); }  // the slot a key's probe starts at
  void table_insert(uint64_t idx, int32_t e);
  void table_erase(uint64_t idx, int32_t e);
  void add_waiter(int32_t e, int64_t slot);

  uint16_t tid_;
  int64_t capacity_;
  std::vector<Command> cmds_;
  size_t cmd_ = 0;
  int64_t pos_ = 0;
  bool stalled_ = false, overlap_ = false;
  std::vector<Entry> entries_;
  std::vector<int32_t> free_;  // stack of free entry ids (pops 0, 1, 2, ... first)
  int64_t pending_ = 0;
  std::vector<Slot> table_;
  uint64_t mask_ = 0;
  int shift_ = 0;
  std::vector<Waiter> waiters_;
  int32_t free_waiter_ = -1;
};

template <class Idx, class Emit, class Timing>
RigClientUnit::Stop RigClientUnit::run(const RigContext& c, const Command& cm, Emit& emit, int64_t& max_prs,
                                       Timing& timing) {
  const uint64_t lo = static_cast<uint64_t>(c.row_start), span = static_cast<uint64_t>(c.row_end - c.row_start);
  const size_t pb = c.prop_bytes;
  const Idx* idxs = static_cast<const Idx*>(cm.idx);
  Stop stop = Stop::kDone;
  int64_t pos = pos_;
  int64_t run_end = pos;  // the local idxs before it were offered to timing.local_run
  // A remote idx's Idx Filter word (and the timing's state for it) is a scattered line: each is asked
  // for a few idxs ahead, so that the misses overlap the scan.
  constexpr int64_t kAhead = 8;
  for (; pos < cm.n; ++pos) {
    if (pos + kAhead < cm.n) {
      const uint64_t ahead = static_cast<uint64_t>(static_cast<int64_t>(idxs[pos + kAhead]));
      if (ahead - lo >= span && c.filter_on) {
        c.filter->prefetch(ahead);
        timing.prefetch(ahead);
      }
    }
    const uint64_t idx = static_cast<uint64_t>(static_cast<int64_t>(idxs[pos]));
    const bool local = idx - lo < span;  // unsigned wrap makes one compare
    if (!timing.admit(idx, !local && c.filter_on)) {
      stop = Stop::kClock;
      break;
    }
    if (local) {  // dropped: the kernel reads local rows directly
      ++counters.local;
      timing.consumed(Outcome::kLocal);
      if (pos + 1 < run_end) continue;
      run_end = pos + 1;  // the local idxs right behind this one, offered once
      while (run_end < cm.n && static_cast<uint64_t>(static_cast<int64_t>(idxs[run_end])) - lo < span) ++run_end;
      const int64_t n = timing.local_run(run_end - pos - 1);
      counters.local += n;
      pos += n;
      continue;
    }
    const int64_t slot = cm.slot ? cm.slot[pos] : 0;
    if (c.filter_on && c.filter->test(idx)) {
      const int64_t from = c.filter->slot(idx);
      if (from != slot) std::memcpy(c.halo + slot * pb, c.halo + from * pb, pb);
      ++counters.filtered;
      timing.consumed(Outcome::kFiltered);
      continue;
    }
    if (c.coalesce_on) {
      const int32_t e = find(idx);
      if (e >= 0) {
        add_waiter(e, slot);
        ++counters.coalesced;
        timing.consumed(Outcome::kCoalesced);
        continue;
      }
    }
    if (pending_ == capacity_) {
      stalled_ = true;
      ++counters.stalls;
      stop = Stop::kStall;
      break;
    }
    const int32_t e = free_.back();
    free_.pop_back();
    entries_[e] = Entry{idx, slot, -1, true};
    ++pending_;
    if (c.coalesce_on) table_insert(idx, e);
    ++counters.prs;
    timing.consumed(Outcome::kIssued);
    emit(c.map->owner(idx), PR{c.node, tid_, idx, static_cast<uint32_t>(e)});
    if (--max_prs == 0) {  // budget spent: resume after this idx on the next call
      ++pos;
      stop = Stop::kBudget;
      break;
    }
  }
  counters.idxs += pos - pos_;
  pos_ = pos;
  return stop;
}

template <class Emit, class Timing>
void RigClientUnit::issue(const RigContext& c, Emit&& emit, int64_t max_prs, Timing&& timing) {
  stalled_ = false;
  while (cmd_ < cmds_.size()) {
    const Command& cm = cmds_[cmd_];
    const Stop stop = cm.narrow ? run<int32_t>(c, cm, emit, max_prs, timing) : run<int64_t>(c, cm, emit, max_prs, timing);
    if (stop != Stop::kDone || (pending_ != 0 && !(overlap_ && cmd_ + 1 < cmds_.size()))) return;
    ++cmd_;
    pos_ = 0;
    ++counters.commands;
  }
}

class RigServerUnit {
 public:
  // emit(dest, pr, payload) receives each response PR.
  template <class Emit>
  void serve(const RigContext& c, const PacketView& v, Emit&& emit) {
    const uint64_t lo = static_cast<uint64_t>(c.row_start), span = static_cast<uint64_t>(c.row_end - c.row_start);
    for (int64_t i = 0; i < v.n_prs; ++i) {
      const PR pr = v.pr(i);
      if (pr.idx - lo >= span) not_owned(c, pr.idx);
      emit(pr.src, pr, c.local + (pr.idx - lo) * c.prop_bytes);
    }
    served += v.n_prs;
  }
  int64_t served = 0;

 private:
  [[noreturn]] static void not_owned(const RigContext& c, uint64_t idx);
};

}  // namespace netsparse::units
