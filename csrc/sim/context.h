#pragma once
// What the simulator's parts share: the config, the topology, who owns each property, the clock
// domains, the one event queue, the packets in flight and the report they fill.
#include <cstdint>
#include <vector>

#include "sim/event_queue.h"
#include "sim/packets.h"
#include "sim/simulator.h"
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
  }

  const SimConfig& cfg;
  const Topo& topo;
  const units::NodeMap map;  // node p owns properties (rows of B) [map.bounds[p], map.bounds[p + 1])
  const int64_t nodes;       // hosts 0..nodes-1, then switches
  const Clock snic, sw;
  Events events;
  Packets pkts;
  SimResult res;
};

}  // namespace netsparse::sim
