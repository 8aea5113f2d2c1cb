#pragma once
// Packet-level discrete-event simulator of NetSparse on a cluster (issue 4 point 2, docs/simulator.md).
//
// The simulator owns time, queues and links only. Every NetSparse mechanism is the issue-3 unit:
// RIG client units (filter, coalesce, Pending PR Table) and RIG server units per node, one NIC
// Concatenator per node, one SwitchPipe (property cache + concatenator) per extended ToR switch, and
// the header model for wire bytes. Time is integer picoseconds; events are ordered by (time, seq) so
// runs are deterministic. Timing rules are those of hw_models/analytic.py (the analytic cross-check).
#include <cstdint>
#include <string>
#include <vector>

#include "units/flit_link.h"

namespace netsparse::sim {

struct SimConfig {
  // Mechanism toggles (NetSparse Table 8 stages).
  bool filter = true, coalesce = true, concat_nic = true, switch_on = true;
  int64_t prop_bytes = 64;        // bytes of one gathered property (K x element bytes)
  int64_t client_units = 16;      // RIG client units per node (half of Table 5's 32 RIG units)
  int64_t server_units = 16;      // RIG server units per node
  int64_t pending_entries = 256;  // Pending PR Table per client unit (Table 5)
  int64_t lsq_entries = 64;       // reads in flight per server unit (Table 5)
  int64_t batch = 32768;          // nonzeros per RIG command (§8; <= 0 = one command per unit)
  double snic_ghz = 2.2, switch_ghz = 2.0;          // Table 5
  int64_t nic_delay_cycles = 500;                   // Table 5; < 0 = infinite
  int64_t switch_delay_cycles = 125;                // Table 5; < 0 = infinite
  int64_t cache_latency_cycles = 16;                // Table 5
  int64_t cache_bytes = int64_t{32} << 20, cache_ways = 16, cache_segment = 16, cache_max_line = 512;
  int64_t pcie_ps = 200000;                         // one-way PCIe latency (Table 5: 200 ns)
  int64_t switch_ps = 300000;                       // switch latency (Table 5: 300 ns)
  int64_t mtu = 1500, upper_bytes = 50, concat_bytes = 12, pr_bytes = 18;  // Table 5
  int64_t buffer_bytes = 65536;  // input buffer per directed link (our assumption: 64 KiB per port)
  // Output buffer of an extended switch's NetSparse pipe (our assumption: 64 KiB for each of the 32
  // ports of Table 5, 2 MiB; NetSparse gives no number). Host packets wait (backpressure) while the
  // pipe's unsent output reaches it.
  int64_t pipe_buffer_bytes = int64_t{32} * 65536;
  int64_t series_every = 1;      // keep every n-th active-nodes sample (first and last always)
  // NetCrafter (ISCA'25) flit link layer on the inter-switch (inter-rack) links, issue 7, in the event
  // loop: each such link is a units::FlitLinkState; a packet with downstream credit enters its egress
  // queue (class 0 = read PRs, 1 = responses) and arrives at the next switch link latency after the
  // flit holding its last byte left (stitching, pooling and sequencing decide when).
  bool flit_layer = false;
  units::FlitLinkConfig flit;
};

struct Topo {
  int64_t n_hosts = 0, n_switches = 0;
  std::vector<int64_t> link_src, link_dst;  // vertices: hosts 0..h-1, then switches h..h+s-1
  std::vector<double> link_bytes_per_s;
  std::vector<int64_t> link_latency_ps;
  std::vector<uint8_t> switch_is_tor;  // extended (NetSparse) switches when switch_on
  std::vector<int64_t> routes;         // [h, h, max_hops] link ids, -1 padded
  int64_t max_hops = 0;
};

struct NodeCounters {
  int64_t idxs = 0, local = 0, filtered = 0, coalesced = 0, read_prs = 0, responses = 0, stalls = 0;
  int64_t served = 0;  // read PRs answered by this node's server units
  int64_t packets_tx = 0, packets_rx = 0, prs_tx = 0;
  int64_t header_tx = 0, payload_tx = 0, wire_tx = 0, header_rx = 0, payload_rx = 0, wire_rx = 0;
};

struct SwitchCounters {
  int64_t lookups = 0, hits = 0, inserted = 0, packets_in = 0, packets_out = 0;
  int64_t pipe_stalls = 0;  // host packets that waited for pipe output room (backpressure)
};

// One inter-switch link under the flit layer: the flit unit's accounting of the packets it carried.
struct FlitLinkResult {
  int64_t link = 0;
  double flit_ps = 0;          // one flit's serialisation time on this link
  int64_t packet_bytes = 0;    // the same packets' wire bytes as NetSparse packets (link_layer=packet)
  int64_t flit_finish_ps = 0;  // when the last flit left
  units::FlitLinkStats stats;
};

struct SimResult {
  std::vector<int64_t> node_done_ps;
  std::vector<NodeCounters> nodes;
  std::vector<SwitchCounters> switches;
  std::vector<int64_t> active_t_ps, active_count;
  int64_t events = 0, max_packet_wire = 0, drains = 0;
  std::vector<FlitLinkResult> flit_links;  // only with SimConfig::flit_layer
  double wall_s = 0;
};

// indptr/indices: CSR of A (n_rows + 1, nnz). row_bounds: node p owns rows [rb[p], rb[p+1]) of A;
// col_bounds: node p owns rows [cb[p], cb[p+1]) of B (the properties). Throws std::invalid_argument.
SimResult run(const std::vector<int64_t>& indptr, const int64_t* indices, int64_t nnz,
              const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds, const SimConfig& cfg,
              const Topo& topo);

}  // namespace netsparse::sim
