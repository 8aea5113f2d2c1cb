#pragma once
// Packet-level discrete-event simulator of NetSparse on a cluster (design:
// docs/simulator.md).
//
// The simulator owns time, queues, links and buffers only. Every NetSparse mechanism is a
// csrc/units/ unit: RIG client units (filter, coalesce, Pending PR Table) and RIG server units per node, one NIC
// Concatenator per node, one SwitchPipe (property cache + concatenator) per middle pipe of an extended
// ToR switch, and the header model for wire bytes. Time is integer picoseconds; events are ordered by
// (time, seq) so runs are deterministic. Timing rules are those of hw_models/analytic.py (the analytic
// cross-check) and the comment at the top of simulator.cpp.
#include <cstdint>
#include <vector>

#include "sim/types.h"

namespace netsparse::sim {

// row_bounds: node p owns rows [rb[p], rb[p+1]) of A; col_bounds: node p owns rows [cb[p], cb[p+1])
// of B (the properties). obs: what to record beside the report (SimResult::hops, link_stats).
// Throws units::ConfigInvalid.
SimResult run(const Csr& a, const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds,
              const SimConfig& cfg, const Topo& topo, const Observe& obs = {});

}  // namespace netsparse::sim
