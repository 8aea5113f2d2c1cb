#include "units/flit_link.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>

#include "units/errors.h"

namespace netsparse::units {

void FlitLinkConfig::validate() const {
  if (flit_bytes < 1) throw ConfigInvalid("flit_bytes must be >= 1, got " + std::to_string(flit_bytes));
  if (piece_overhead < 0 || piece_overhead >= flit_bytes)
    throw ConfigInvalid("piece_overhead must be in [0, flit_bytes), got " + std::to_string(piece_overhead));
  if (pool_cycles < 0) throw ConfigInvalid("pool_cycles must be >= 0, got " + std::to_string(pool_cycles));
  if (trim_granularity < 1)
    throw ConfigInvalid("trim_granularity must be >= 1, got " + std::to_string(trim_granularity));
  if (stitch_window < 0)
    throw ConfigInvalid("stitch_window must be >= 0, got " + std::to_string(stitch_window));
}

int64_t flits_for(int64_t bytes, int64_t flit_bytes) {
  if (flit_bytes < 1) throw ConfigInvalid("flit_bytes must be >= 1");
  if (bytes < 0) throw ConfigInvalid("bytes must be >= 0");
  return (bytes + flit_bytes - 1) / flit_bytes;
}

namespace {

// kDone: every byte of the packet's own service is in flits (sent, or open in its tail flit).
enum State : uint8_t { kWaiting, kQueued, kInService, kConsumed, kDone };

// A partially filled flit that is still open for stitching candidates.
// Members form an intrusive list through FlitLinkSim::next_member_: a packet belongs to at most one
// open flit (its own tail flit, or the flit that took its body or tail), so no per-flit allocation.
struct OpenFlit {
  int64_t dest;  // dense destination id
  int64_t room;
  int64_t deadline;
  int64_t first_member;
  int64_t n_members;
  bool sent;
};

}  // namespace

// The link's state machine. Packets are pushed in arrival order (all at once for run_flit_link, one
// by one in the simulator's event loop); advance(until) runs every step that starts before `until`.
// A burst of full flits stops at the next known arrival or pool deadline, or at `until`, so the
// batch run (every packet pushed, until = never) and the streaming run follow the same steps.
class FlitLinkSim {
 public:
  explicit FlitLinkSim(const FlitLinkConfig& cfg, bool track) : c_(cfg), track_(track) {}

  int64_t push(const FlitPacket& p) {
    const int64_t i = static_cast<int64_t>(pk_.size());
    pk_.push_back(p);
    rem_.push_back(sent_bytes(static_cast<size_t>(i)));
    state_.push_back(kWaiting);
    stitched_.push_back(0);
    done_.push_back(0);
    next_member_.push_back(-1);
    parts_.push_back(0);
    // destinations -> 0..D-1, so per-destination state is a vector
    const auto it = dense_.emplace(p.dest, static_cast<int64_t>(dense_.size()));
    dest_.push_back(it.first->second);
    if (it.second) {
      by_dest_.emplace_back();
      open_by_dest_.emplace_back();
    }
    ++st_.packets;
    st_.needed_bytes += rem_[i];
    st_.unstitched_flits += flits_for(rem_[i], c_.flit_bytes);
    return i;
  }

  void advance(int64_t until) {
    int64_t t = t_;
    while (t < until) {
      admit(t);
      if (send_pooled(t)) { ++t; continue; }
      if (cur_ < 0) start_next();
      if (cur_ >= 0) {
        t += step_current(t, until);
        continue;
      }
      // Idle: jump to the next arrival or pool deadline.
      int64_t next = INT64_MAX;
      if (next_arrival_ < pk_.size()) next = pk_[next_arrival_].arrival;
      if (const int64_t d = earliest_deadline(); d >= 0) next = std::min(next, d);
      if (next == INT64_MAX) break;
      t = std::min(until, std::max(t + 1, next));
    }
    t_ = t;
  }

  // A cycle no later than the next packet completion if nothing else arrives (INT64_MAX: idle), and
  // always after now, so advancing to it makes progress.
  int64_t next_event() {
    const int64_t t = t_;
    while (!urgent_.empty() && open_[urgent_.front()].sent) urgent_.pop_front();
    if (!urgent_.empty()) return t + 1;
    int64_t e = INT64_MAX;
    if (cur_ >= 0) e = full_left_ > 0 ? t + full_left_ : t + 1;
    else if (!queue_.empty()) e = t + 1;  // the next packet starts now (or joins an open flit)
    if (next_arrival_ < pk_.size()) e = std::min(e, std::max(t, pk_[next_arrival_].arrival) + 1);
    if (const int64_t d = earliest_deadline(); d >= 0) e = std::min(e, std::max(t, d) + 1);
    return e;
  }

  int64_t now() const { return t_; }

  FlitLinkStats stats() const {
    FlitLinkStats st = st_;
    st.wire_bytes = st.flits * c_.flit_bytes;
    st.overhead_bytes = st.pieces * c_.piece_overhead;
    st.padding_bytes = st.wire_bytes - st.needed_bytes - st.overhead_bytes;
    st.last_cycle = t_;
    for (auto s : stitched_) st.stitched_packets += s;
    return st;
  }

  std::vector<int64_t>& done() { return done_; }
  std::vector<std::pair<int64_t, int64_t>>& completed() { return completed_; }

 private:
  int64_t sent_bytes(size_t i) const {
    const FlitPacket& p = pk_[i];
    int64_t payload = p.payload;
    if (c_.trimming && p.useful >= 0 && p.useful < p.payload) {
      const int64_t g = c_.trim_granularity;
      payload = std::min(p.payload, (p.useful + g - 1) / g * g);
    }
    return p.header + payload;
  }

  bool pool_eligible(int64_t cls) const {
    return c_.stitching && c_.pool_cycles > 0 && cls != c_.no_pool_class;
  }

  // Reports packet i once all of its bytes are in flits that have left (streaming use only).
  void maybe_complete(int64_t i) {
    if (track_ && parts_[i] == 0 && (state_[i] == kConsumed || state_[i] == kDone)) completed_.emplace_back(i, done_[i]);
  }

  void admit(int64_t t) {
    while (next_arrival_ < pk_.size() && pk_[next_arrival_].arrival <= t) {
      const int64_t i = static_cast<int64_t>(next_arrival_++);
      state_[i] = kQueued;
      st_.trimmed_bytes += pk_[i].header + pk_[i].payload - rem_[i];
      join_open_flits(i);  // a pooled flit of this destination may take it on arrival
      if (state_[i] == kConsumed) continue;
      const int64_t key = c_.sequencing ? pk_[i].cls : 0;
      queue_.emplace(key, i);
      by_dest_[dest_[i]].push_back(i);
    }
  }

  // Try to put packet i (queued, not started) into flit f: whole packet for free, else its tail
  // piece with the ID+Size overhead.
  bool join(int64_t i, OpenFlit& f) {
    const int64_t F = c_.flit_bytes;
    if (rem_[i] <= f.room) {
      f.room -= rem_[i];
      rem_[i] = 0;
      state_[i] = kConsumed;
    } else {
      const int64_t tail = rem_[i] % F;
      if (tail == 0 || rem_[i] < F || tail + c_.piece_overhead > f.room) return false;
      f.room -= tail + c_.piece_overhead;
      rem_[i] -= tail;
      ++st_.pieces;
    }
    add_member(f, i);
    stitched_[i] = 1;
    // Selective pooling: a latency-sensitive packet must not wait; a full flit has nothing to wait for.
    if (pk_[i].cls == c_.no_pool_class || f.room == 0) f.deadline = -1;
    return true;
  }

  void add_member(OpenFlit& f, int64_t i) {
    next_member_[i] = f.first_member;
    f.first_member = i;
    ++f.n_members;
    ++parts_[i];
  }

  void join_open_flits(int64_t i) {
    if (!c_.stitching) return;
    for (int64_t id : open_by_dest_[dest_[i]]) {
      if (join(i, open_[id])) {
        if (open_[id].deadline < 0) urgent_.push_back(id);
        return;
      }
    }
  }

  void start_next() {
    while (!queue_.empty()) {
      const int64_t i = queue_.top().second;
      queue_.pop();
      if (state_[i] != kQueued) continue;
      join_open_flits(i);  // an open flit may have appeared since it arrived
      if (state_[i] == kConsumed) continue;
      state_[i] = kInService;
      cur_ = i;
      full_left_ = rem_[i] / c_.flit_bytes;
      return;
    }
  }

  // Sends the current packet's full flits up to the next event (an arrival or a pool deadline, which
  // may preempt it), or forms its tail flit, stitches queued candidates into it and either sends it
  // or pools it. Returns the cycles used.
  int64_t step_current(int64_t t, int64_t until) {
    const int64_t i = cur_;
    if (full_left_ > 0) {
      int64_t horizon = std::min(t + full_left_, until);
      if (next_arrival_ < pk_.size()) horizon = std::min(horizon, std::max(t + 1, pk_[next_arrival_].arrival));
      if (const int64_t d = earliest_deadline(); d >= 0) horizon = std::min(horizon, std::max(t + 1, d));
      const int64_t burst = horizon - t;
      full_left_ -= burst;
      st_.flits += burst;
      done_[i] = std::max(done_[i], horizon);
      if (full_left_ == 0 && rem_[i] % c_.flit_bytes == 0) {
        cur_ = -1;
        state_[i] = kDone;
        maybe_complete(i);
      }
      return burst;
    }
    cur_ = -1;
    OpenFlit f{dest_[i], c_.flit_bytes - rem_[i] % c_.flit_bytes, t + c_.pool_cycles, -1, 0, false};
    add_member(f, i);
    state_[i] = kDone;
    if (c_.stitching) scan_queue(f);
    if (!pool_eligible(pk_[i].cls)) f.deadline = -1;
    const int64_t id = static_cast<int64_t>(open_.size());
    open_.push_back(f);
    if (f.deadline < 0) {
      emit(id, t);
      return 1;
    }
    open_by_dest_[f.dest].push_back(id);
    pooled_.push_back(id);
    return 0;
  }

  void scan_queue(OpenFlit& f) {
    auto& dq = by_dest_[f.dest];
    while (!dq.empty() && state_[dq.front()] != kQueued) dq.pop_front();
    int64_t seen = 0;
    for (size_t k = 0; k < dq.size() && seen < c_.stitch_window && f.room > 0; ++k) {
      const int64_t j = dq[k];
      if (state_[j] != kQueued) continue;
      ++seen;
      join(j, f);
    }
  }

  void emit(int64_t id, int64_t t) {
    OpenFlit& f = open_[id];
    f.sent = true;
    ++st_.flits;
    if (f.n_members > 1) ++st_.stitched_flits;
    for (int64_t m = f.first_member; m >= 0; m = next_member_[m]) {
      done_[m] = std::max(done_[m], t + 1);
      --parts_[m];
      maybe_complete(m);
    }
    auto& v = open_by_dest_[f.dest];
    v.erase(std::remove(v.begin(), v.end(), id), v.end());
  }

  // Pooled flits that must leave now (flushed or past their deadline) take the link first.
  bool send_pooled(int64_t t) {
    while (!urgent_.empty() && open_[urgent_.front()].sent) urgent_.pop_front();
    while (!pooled_.empty() && open_[pooled_.front()].sent) pooled_.pop_front();
    if (!urgent_.empty()) {
      emit(urgent_.front(), t);
      urgent_.pop_front();
      return true;
    }
    if (!pooled_.empty() && open_[pooled_.front()].deadline <= t) {
      emit(pooled_.front(), t);
      pooled_.pop_front();
      return true;
    }
    return false;
  }

  int64_t earliest_deadline() {
    while (!pooled_.empty() && open_[pooled_.front()].sent) pooled_.pop_front();
    if (!urgent_.empty()) return 0;
    return pooled_.empty() ? -1 : std::max<int64_t>(0, open_[pooled_.front()].deadline);
  }

  const FlitLinkConfig c_;
  const bool track_;
  std::vector<FlitPacket> pk_;
  int64_t t_ = 0;
  std::unordered_map<int64_t, int64_t> dense_;
  std::vector<int64_t> parts_;  // open (unsent) flits holding bytes of the packet
  std::vector<std::pair<int64_t, int64_t>> completed_;
  std::vector<int64_t> rem_;
  std::vector<uint8_t> state_;
  std::vector<uint8_t> stitched_;
  std::vector<int64_t> done_;
  std::vector<int64_t> next_member_;
  std::vector<int64_t> dest_;  // dense destination ids
  size_t next_arrival_ = 0;
  int64_t cur_ = -1;
  int64_t full_left_ = 0;
  using Key = std::pair<int64_t, int64_t>;  // (priority class or 0, arrival index)
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> queue_;
  std::vector<std::deque<int64_t>> by_dest_;  // queued packets per destination, arrival order
  std::vector<OpenFlit> open_;
  std::vector<std::vector<int64_t>> open_by_dest_;  // pooled flits per destination
  std::deque<int64_t> pooled_;  // in deadline order: every pooled flit waits the same W
  std::deque<int64_t> urgent_;
  FlitLinkStats st_;
};

namespace {

void validate_packet(const FlitPacket& p, const std::string& at) {
  if (p.arrival < 0) throw ConfigInvalid("arrival must be >= 0" + at);
  if (p.header < 0 || p.payload < 0) throw ConfigInvalid("header and payload must be >= 0" + at);
  if (p.header + p.payload == 0) throw ConfigInvalid("a packet needs at least one byte" + at);
  if (p.cls < 0) throw ConfigInvalid("class must be >= 0" + at);
}

void validate_packets(const std::vector<FlitPacket>& pk) {
  for (size_t i = 0; i < pk.size(); ++i) {
    const FlitPacket& p = pk[i];
    const std::string at = " (packet " + std::to_string(i) + ")";
    if (p.arrival < 0) throw ConfigInvalid("arrival must be >= 0" + at);
    if (i > 0 && p.arrival < pk[i - 1].arrival) throw ConfigInvalid("arrivals must be sorted" + at);
    validate_packet(p, at);
  }
}

}  // namespace

FlitLinkStats run_flit_link(const FlitLinkConfig& cfg, const std::vector<FlitPacket>& packets,
                            std::vector<int64_t>* done) {
  cfg.validate();
  validate_packets(packets);
  FlitLinkSim sim(cfg, false);  // the batch run is the streaming state with every packet pushed up front
  for (const FlitPacket& p : packets) sim.push(p);
  sim.advance(INT64_MAX);
  FlitLinkStats st = sim.stats();
  if (done) *done = std::move(sim.done());
  return st;
}

FlitLinkState::FlitLinkState(const FlitLinkConfig& cfg) {
  cfg.validate();
  sim_ = std::make_unique<FlitLinkSim>(cfg, true);
}

FlitLinkState::~FlitLinkState() = default;
FlitLinkState::FlitLinkState(FlitLinkState&&) noexcept = default;
FlitLinkState& FlitLinkState::operator=(FlitLinkState&&) noexcept = default;

int64_t FlitLinkState::push(const FlitPacket& p) {
  validate_packet(p, "");
  if (p.arrival < last_arrival_ || p.arrival < sim_->now())
    throw OutOfOrder("flit link: a packet cannot arrive before the link's current cycle or an earlier packet");
  last_arrival_ = p.arrival;
  return sim_->push(p);
}

void FlitLinkState::advance(int64_t until) { sim_->advance(until); }
int64_t FlitLinkState::next_event() { return sim_->next_event(); }
int64_t FlitLinkState::now() const { return sim_->now(); }
FlitLinkStats FlitLinkState::stats() const { return sim_->stats(); }
std::vector<std::pair<int64_t, int64_t>>& FlitLinkState::completed() { return sim_->completed(); }

}  // namespace netsparse::units
