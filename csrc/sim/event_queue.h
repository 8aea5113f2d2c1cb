#pragma once
// The one event queue the simulator's parts share (workload, nodes, switches, network) (event kinds
// and clock domains: types.h). Events are ordered by (time, seq), seq a global insertion counter, so
// ties resolve in insertion order and a config always gives the same report.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <stdexcept>
#include <vector>

#include "sim/types.h"
#include "units/errors.h"

namespace netsparse::sim {

// A heap entry is 24 bytes: the payload of a PR never rides in the heap (the heap stays in cache).
// key = seq << 4 | kind; seq is unique, so ordering by (t, key) is ordering by (t, seq).
struct Event {
  int64_t t;
  uint64_t key;
  uint32_t a, b;
  uint32_t kind() const { return static_cast<uint32_t>(key & 15); }
  uint64_t seq() const { return key >> 4; }
};

// Min-heap of events on (t, key), 4-ary: half the depth of a binary heap and a node's four children
// in two cache lines. Keys are unique, so any correct heap pops the same order. pop() moves the hole
// down to a leaf along the smallest children and then sifts the last event up from there (Floyd): the
// last event belongs near the bottom, so this skips its compare at every level on the way down.
class EventQueue {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const Event& top() const { return v_[0]; }  // the next pop(); the queue must not be empty
  void push(const Event& e) {
    v_.push_back(e);
    sift_up(v_.size() - 1, e);
  }
  Event pop() {
    const Event top = v_[0];
    const Event last = v_.back();
    v_.pop_back();
    const size_t n = v_.size();
    if (n == 0) return top;
    size_t i = 0;
    for (;;) {
      const size_t c = 4 * i + 1;
      size_t best;
      if (c + 4 <= n) {  // four children: a tournament, no data-dependent branch
        const size_t a = before(v_[c + 1], v_[c]) ? c + 1 : c;
        const size_t b = before(v_[c + 3], v_[c + 2]) ? c + 3 : c + 2;
        best = before(v_[b], v_[a]) ? b : a;
      } else {
        if (c >= n) break;
        best = c;
        for (size_t j = c + 1; j < n; ++j)
          if (before(v_[j], v_[best])) best = j;
      }
      v_[i] = v_[best];
      i = best;
    }
    sift_up(i, last);
    return top;
  }

 private:
  void sift_up(size_t i, const Event& e) {
    while (i > 0) {
      const size_t up = (i - 1) / 4;
      if (!before(e, v_[up])) break;
      v_[i] = v_[up];
      i = up;
    }
    v_[i] = e;
  }
  static bool before(const Event& x, const Event& y) { return x.t < y.t || (x.t == y.t && x.key < y.key); }
  std::vector<Event> v_;
};

// An event of a stream whose times never decrease (a link's arrivals, a middle pipe's output): only
// the stream's head waits in the heap, with the seq it got when it was scheduled, so the order is
// exactly that of one heap event each (k-way merge) while the heap stays small.
struct Timed {
  int64_t t;
  uint64_t seq;
  uint32_t p;
};

// The shared queue: every part schedules through it. push() takes the next seq; a stream (times never
// decreasing) keeps only its head in the heap, with the seq it got when it was scheduled.
class Events {
 public:
  void push(int64_t t, uint32_t kind, uint32_t a, uint32_t b = 0) { push_seq(t, seq_++, kind, a, b); }
  void push_seq(int64_t t, uint64_t seq, uint32_t kind, uint32_t a, uint32_t b) {
    heap_.push(Event{t, seq << 4 | kind, a, b});
  }
  uint64_t next_seq() { return seq_++; }
  void stream_push(std::deque<Timed>& q, int64_t t, uint32_t kind, uint32_t a, uint32_t p) {
    const uint64_t seq = seq_++;
    if (!q.empty() && t < q.back().t) throw units::InternalError("simulator: a stream's times must not decrease");
    if (q.empty()) push_seq(t, seq, kind, a, 0);
    q.push_back(Timed{t, seq, p});
  }
  uint32_t stream_pop(std::deque<Timed>& q, const Event& e) {
    const Timed x = q.front();
    if (x.seq != e.seq() || x.t != e.t) throw units::InternalError("simulator: event stream out of order");
    q.pop_front();
    if (!q.empty()) push_seq(q.front().t, q.front().seq, e.kind(), e.a, 0);
    return x.p;
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  Event pop() { return heap_.pop(); }

 private:
  EventQueue heap_;
  uint64_t seq_ = 0;
};

}  // namespace netsparse::sim
