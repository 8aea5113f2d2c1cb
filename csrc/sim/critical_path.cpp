// The client units' critical paths (breakdown.h): each command's path charged from its scan and its
// last response's journey, stalls split by what held them, and each node's path (see node.h).
#include "sim/node.h"

#include <algorithm>
#include <string>

#include "units/errors.h"

namespace netsparse::sim {
using namespace netsparse::units;

namespace {
// Splits the ps of [t0, t1] over bounds in proportion to their SNIC cycles. The total is exact; a share
// is rounded down (a cycle is 454.5 ps at Table 5's 2.2 GHz) and the remainder goes to the largest.
template <class T>
void spread(const T* cyc, int64_t t0, int64_t t1, int fallback, int64_t (&out)[kBounds], int n = kScanBounds) {
  const int64_t span = t1 - t0;
  __int128 total = 0;
  int big = fallback;
  for (int b = 0; b < n; ++b) {
    total += cyc[b];
    if (cyc[b] > cyc[big]) big = b;
  }
  if (total == 0) {
    out[fallback] += span;
    return;
  }
  int64_t given = 0;
  for (int b = 0; b < n; ++b) {
    const int64_t x = static_cast<int64_t>(static_cast<__int128>(cyc[b]) * span / total);
    out[b] += x;
    given += x;
  }
  out[big] += span - given;
}
}  // namespace

// The unit's command completed at t (scan_only: overlapping commands, its scan ended at t and the
// unit asks for its next one): its critical path since the command's first scan cycle.
void Nodes::command_path(uint32_t node, uint32_t unit, int64_t t, bool scan_only) {
  const Path& pa = node_[node]->clients[unit].path;
  PathLog& log = node_[node]->paths[unit];
  const int64_t start = ctx_.snic.ps(pa.cmd_c);
  int64_t add[kBounds] = {};
  if (!scan_only && pa.last_resp >= 0 && pa.last_resp_t >= ctx_.snic.ps(pa.fr)) {  // a response came last
    const size_t slot = ctx_.unit_slot(node, unit);
    const PrJourney& tr = ctx_.journey(slot, pa.last_resp);
    const PrScan& sc = ctx_.scan(slot, pa.last_resp);
    if (sc.issued == PrScan::kOlder) {  // an older command's PR (overlapping commands): its journey spans this one
      int64_t piece[kBounds] = {};
      int64_t rest = pa.last_resp_t - sc.older_at() - pa.last_resp_rx;
      for (int j = 0; j < kJourney; ++j) {
        piece[kJourneySlots[j]] += tr.j[j];
        rest -= tr.j[j];
      }
      piece[kSwitchLatency] += std::max<int64_t>(rest, 0);
      piece[kRx] += pa.last_resp_rx;
      spread(piece, start, t, kRx, add, kBounds);
      log.charge(t, add);
      return;
    }
    const int64_t issued = ctx_.snic.ps(pa.cmd_c + sc.issued);
    spread(sc.scan, start, issued, kScanIssued, add);
    log.charge(issued, add);
    std::fill(std::begin(add), std::end(add), 0);
    int64_t rest = pa.last_resp_t - issued - pa.last_resp_rx;
    for (int j = 0; j < kJourney; ++j) {
      add[kJourneySlots[j]] = tr.j[j];
      rest -= tr.j[j];
    }
    add[kSwitchLatency] = rest;  // every other piece of the journey is charged: the switch latencies remain
    add[kRx] = pa.last_resp_rx + (t - pa.last_resp_t);  // t - last_resp_t is zero: it completes at that write
    log.charge(t, add);
  } else {  // the last idx decision came last
    spread(pa.scan, start, t, kScanLocal, add);
    log.charge(t, add);
  }
}

// A stall on a full Pending PR Table ended with the write of the unit's latest response: what held that
// response up, in proportion to its journey, is what the stall waited for (a diagnostic beside the path).
void Nodes::stalled_on(const Path& pa, uint32_t node, uint32_t unit, int64_t cycles) {
  if (pa.last_resp < 0) return;
  const size_t slot = ctx_.unit_slot(node, unit);
  const PrJourney& tr = ctx_.journey(slot, pa.last_resp);
  // its issue to within a ps (a diagnostic: no exact clock conversion on this path)
  const PrScan& sc = ctx_.scan(slot, pa.last_resp);
  const double issued = sc.issued == PrScan::kOlder ? static_cast<double>(sc.older_at())
                                                    : static_cast<double>(pa.cmd_c + sc.issued) * 1000.0 / ctx_.snic.ghz;
  const double total = static_cast<double>(pa.last_resp_t) - issued;
  double* on = node_[node]->paths[unit].stalled_on;
  if (total <= 0) return;
  double rest = total - static_cast<double>(pa.last_resp_rx);
  for (int j = 0; j < kJourney; ++j) {
    on[kJourneySlots[j]] += static_cast<double>(cycles) * static_cast<double>(tr.j[j]) / total;
    rest -= static_cast<double>(tr.j[j]);
  }
  on[kSwitchLatency] += static_cast<double>(cycles) * std::max(rest, 0.0) / total;
  on[kRx] += static_cast<double>(cycles) * static_cast<double>(pa.last_resp_rx) / total;
}

void PathLog::charge(int64_t t1, const int64_t (&add)[kBounds]) {
  PathSegment sg;
  sg.t0 = t;
  sg.t1 = t1;
  for (int b = 0; b < kBounds; ++b) {
    sg.ps[b] = add[b];
    ps[b] += add[b];
  }
  t = t1;
  if (segs.size() == kMaxSegs) {  // keep the memory bounded: halve the resolution
    for (size_t i = 0; i < kMaxSegs / 2; ++i) {
      PathSegment m = segs[2 * i];
      m.t1 = segs[2 * i + 1].t1;
      for (int b = 0; b < kBounds; ++b) m.ps[b] += segs[2 * i + 1].ps[b];
      segs[i] = m;
    }
    segs.resize(kMaxSegs / 2);
  }
  segs.push_back(sg);
}

// Each node's critical path is that of its client unit whose last completion notification reached the
// host last (the node's finish); it must tile [0, finish] exactly.
void Nodes::critical_paths() {
  SimResult& r = ctx_.res;
  r.bound_ps.assign(static_cast<size_t>(ctx_.nodes * kBounds), 0);
  r.stalled_on.assign(static_cast<size_t>(ctx_.nodes * kBounds), 0.0);
  for (int64_t p = 0; p < ctx_.nodes; ++p) {
    const PathLog* last = nullptr;
    for (const PathLog& u : node_[p]->paths)
      if (!last || u.t > last->t) last = &u;
    if (!last || last->t == 0) continue;
    int64_t sum = 0;
    bool negative = false;
    for (int b = 0; b < kBounds; ++b) {
      r.bound_ps[p * kBounds + b] = last->ps[b];
      sum += last->ps[b];
      negative |= last->ps[b] < 0;
    }
    if (last->t != r.node_done_ps[p] || sum != r.node_done_ps[p] || negative)
      throw units::InternalError("simulator: node " + std::to_string(p) + "'s critical path sums to " +
                             std::to_string(sum) + " ps (a share < 0: " + (negative ? "yes" : "no") +
                             "), not its time " + std::to_string(r.node_done_ps[p]));
    for (int b = 0; b < kBounds; ++b) r.stalled_on[p * kBounds + b] = last->stalled_on[b];
    for (PathSegment sg : last->segs) {
      sg.node = p;
      r.path.push_back(sg);
    }
  }
}

}  // namespace netsparse::sim
