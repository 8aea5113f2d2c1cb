#pragma once
// What the simulator's parts share: the config, the topology, who owns each property, the clock
// domains, the one event queue, the packets in flight and the report they fill.
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
    trace.resize(static_cast<size_t>(nodes * c.client_units));
    scans.resize(trace.size());
  }

  // The journey of the read PR (or its response) of Pending PR Table entry `entry` of `unit` at `node`;
  // a unit's entries grow when it issues (ids are handed out lowest first).
  PrJourney& journey_of(const units::PR& pr) { return trace[unit_slot(pr.src, pr.src_tid)][pr.id]; }
  // The index of client unit `unit` of `node` in trace and scans.
  size_t unit_slot(int64_t node, int64_t unit) const {
    return static_cast<size_t>(node) * static_cast<size_t>(cfg.client_units) + static_cast<size_t>(unit);
  }
  // A unit takes packet k apart at t: its hops go into each PR's journey, which goes on from t.
  void fold_packet(const Packet& k, const units::PacketView& v, int64_t t) {
    int64_t concat = 0;
    const uint8_t* pr = v.prs;
    const int64_t stride = v.pr_stride();
    for (int64_t i = 0; i < v.n_prs; ++i, pr += stride) {  // src u32, src_tid u16, id u32 at 14 (Fig. 6)
      PrJourney& tr = trace[unit_slot(units::load_u32(pr), units::load_u16(pr + 4))][units::load_u32(pr + 14)];
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
  std::vector<std::vector<PrJourney>> trace;  // per (node, client unit): per Pending PR Table entry
  std::vector<std::vector<PrScan>> scans;     // the same
};

}  // namespace netsparse::sim
