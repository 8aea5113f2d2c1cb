#pragma once
// What the simulator's parts share: the config, the topology, who owns each property, the clock
// domains, the one event queue, the packets in flight and the report they fill.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/breakdown.h"
#include "sim/event_queue.h"
#include "sim/packets.h"
#include "sim/types.h"
#include "units/rig_unit.h"

namespace netsparse::sim {

struct SimContext {
  SimContext(const SimConfig& c, const Topo& t, const std::vector<int64_t>& col_bounds)
      : cfg(c),
        topo(t),
        map(col_bounds),
        nodes(static_cast<int64_t>(col_bounds.size()) - 1),
        snic{c.snic_ghz},
        sw{c.switch_ghz},
        pkts(nodes, units::HeaderSizes{c.upper_bytes, c.concat_bytes, c.pr_bytes}, c.prop_bytes,
             c.mtu - c.upper_bytes) {
    res.node_done_ps.assign(nodes, 0);
    res.nodes.resize(nodes);
    res.switches.resize(t.n_switches);
    if (c.switch_on) res.pipes.resize(static_cast<size_t>(t.n_switches * c.switch_pipes));
  }

  // The journey of the read PR (or its response) of Pending PR Table entry `id` of the client unit in
  // `slot`, and its scan charges.
  PrJourney& journey(size_t slot, uint64_t id) { return trace[slot * entries + id]; }
  PrScan& scan(size_t slot, uint64_t id) { return scans[slot * entries + id]; }
  PrJourney& journey_of(const units::PR& pr) { return journey(unit_slot(pr.src, pr.src_tid), pr.id); }
  // The index of client unit `unit` of `node` among all client units.
  size_t unit_slot(int64_t node, int64_t unit) const {
    return static_cast<size_t>(node) * static_cast<size_t>(cfg.client_units) + static_cast<size_t>(unit);
  }
  // Makes room for entry `id` in every unit's records. Ids are handed out lowest first, so the records
  // grow only when some unit reaches a new most PRs in flight: Table 5's 256 in one allocation, at the
  // first issue.
  void hold_entry(uint64_t id) {
    if (id < entries) return;
    const size_t n = std::min<size_t>(static_cast<size_t>(cfg.pending_entries),
                                      std::max<size_t>({static_cast<size_t>(id) + 1, 2 * entries, 256}));
    const size_t n_units = static_cast<size_t>(nodes * cfg.client_units);
    std::vector<PrJourney> t(n_units * n);
    std::vector<PrScan> s(n_units * n);
    for (size_t u = 0; u < n_units && entries > 0; ++u) {
      std::copy_n(trace.begin() + static_cast<ptrdiff_t>(u * entries), entries, t.begin() + static_cast<ptrdiff_t>(u * n));
      std::copy_n(scans.begin() + static_cast<ptrdiff_t>(u * entries), entries, s.begin() + static_cast<ptrdiff_t>(u * n));
    }
    trace.swap(t);
    scans.swap(s);
    entries = n;
  }
  // The journey of the PR whose Fig. 6 header starts at `pr` (src u32, src_tid u16, id u32 at 14).
  PrJourney* journey_at(const uint8_t* pr) {
    return &journey(unit_slot(units::load_u32(pr), units::load_u16(pr + 4)), units::load_u32(pr + 14));
  }
  // A unit takes packet k apart at t: its hops go into each PR's journey, which goes on from t. A
  // packet's PRs come from many units, so their journeys are scattered lines that all miss: each is
  // prefetched a few PRs ahead, so that the misses overlap instead of waiting one after another.
  void fold_packet(const Packet& k, const units::PacketView& v, int64_t t) {
    constexpr int64_t kAhead = 8;
    int64_t concat = 0;
    const uint8_t* pr = v.prs;
    const int64_t stride = v.pr_stride(), n = v.n_prs;
    for (int64_t i = 0; i < std::min(n, kAhead); ++i) __builtin_prefetch(journey_at(pr + i * stride), 1);
    for (int64_t i = 0; i < n; ++i, pr += stride) {
      if (i + kAhead < n) __builtin_prefetch(journey_at(pr + kAhead * stride), 1);
      PrJourney& tr = *journey_at(pr);
      concat += k.h.born - tr.mark;
      fold(tr, k.h);
      tr.mark = t;
    }
    if (k.h.born_pipe >= 0) {
      PipeCounters& pc = res.pipes[static_cast<size_t>(k.h.born_pipe)];
      pc.concat_wait_ps += concat;
      pc.concat_prs += v.n_prs;
    }
  }

  const SimConfig& cfg;
  const Topo& topo;
  const units::NodeMap map;  // node p owns properties (rows of B) [map.bounds[p], map.bounds[p + 1])
  const int64_t nodes;       // hosts 0..nodes-1, then switches
  const Clock snic, sw;
  Events events;
  Packets pkts;
  SimResult res;
  // One flat array each, `entries` records per client unit (unit_slot order): finding a PR's record
  // is one multiply-add, with no per-unit vector to load first (that load missed as often as the record).
  size_t entries = 0;
  std::vector<PrJourney> trace;
  std::vector<PrScan> scans;
};

}  // namespace netsparse::sim
