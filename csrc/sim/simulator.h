#pragma once
// Packet-level discrete-event simulator of NetSparse on a cluster (issue 4 point 2, issue 14;
// docs/simulator.md).
//
// The simulator owns time, queues, links and buffers only. Every NetSparse mechanism is the issue-3
// unit: RIG client units (filter, coalesce, Pending PR Table) and RIG server units per node, one NIC
// Concatenator per node, one SwitchPipe (property cache + concatenator) per middle pipe of an extended
// ToR switch, and the header model for wire bytes. Time is integer picoseconds; events are ordered by
// (time, seq) so runs are deterministic. Timing rules are those of hw_models/analytic.py (the analytic
// cross-check) and the comment at the top of simulator.cpp.
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
  int64_t lsq_entries = 64;       // LSQ per RIG unit (Table 5): filter loads (client), PCIe reads (server)
  // Nonzeros per RIG command (§8): > 0 fixed; 0 = the node's whole stream in one command (inf);
  // -1 = auto, units::auto_batch_size(node nonzeros, largest node nonzeros, client units) (issue 14).
  int64_t batch = -1;
  double snic_ghz = 2.2, switch_ghz = 2.0;          // Table 5
  int64_t nic_delay_cycles = 500;                   // Table 5; < 0 = infinite
  int64_t switch_delay_cycles = 125;                // Table 5; < 0 = infinite
  int64_t cache_latency_cycles = 16;                // Table 5
  // Property cache of one middle pipe (the switch's Table 5 capacity / pipes, hw_models/simulator.py).
  int64_t cache_bytes = int64_t{4} << 20, cache_ways = 16, cache_segment = 16, cache_max_line = 512;
  int64_t switch_pipes = 8, switch_ports = 32;      // Table 5: 8 middle pipes, 32 ports (4 per pipe)
  int64_t pcie_ps = 200000;                         // one-way PCIe latency (Table 5: 200 ns)
  double pcie_bytes_per_s = 128e9;                  // idx DMA bandwidth (our assumption: Gen6 x16)
  int64_t idx_bytes = 4;                            // bytes per idx in a RIG command (our assumption)
  // The client unit's Idx Filter memory (L1/L2 per unit, §8.2; LLC per SNIC; latencies ours).
  int64_t line_bytes = 64;
  int64_t l1_bytes = 32768, l1_ways = 4, l1_cycles = 4;
  int64_t l2_bytes = 131072, l2_ways = 8, l2_cycles = 12;
  int64_t llc_bytes = int64_t{16} << 20, llc_ways = 16, llc_cycles = 40;
  int64_t dram_ps = 100000;
  int64_t switch_ps = 300000;                       // switch latency (Table 5: 300 ns)
  int64_t mtu = 1500, upper_bytes = 50, concat_bytes = 12, pr_bytes = 18;  // Table 5
  // Buffers (Table 5): one shared packet buffer per switch, Rx and Tx buffers per SNIC.
  int64_t switch_buffer_bytes = int64_t{96} << 20;
  int64_t rx_buffer_bytes = int64_t{2} << 20, tx_buffer_bytes = int64_t{2} << 20;
  // NetCrafter (ISCA'25) flit link layer on the inter-switch (inter-rack) links, issue 7, in the event
  // loop: each such link is a units::FlitLinkState; a packet enters its egress queue (class 0 = read
  // PRs, 1 = responses) and arrives at the next switch link latency after the flit holding its last
  // byte left (stitching, pooling and sequencing decide when).
  bool flit_layer = false;
  units::FlitLinkConfig flit;
};

struct Topo {
  int64_t n_hosts = 0, n_switches = 0;
  // Vertices: hosts 0..h-1, then switches h..h+s-1. Links come in cable pairs: 2k and 2k+1 are the
  // two directions of one cable (hw_models/topology.py builds them so); a switch's ports are its
  // outgoing links in id order.
  std::vector<int64_t> link_src, link_dst;
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
  int64_t commands = 0, batch = 0;                            // RIG commands run, the node's batch size
  int64_t mem_l1 = 0, mem_l2 = 0, mem_llc = 0, mem_dram = 0;  // Idx Filter loads by the level that hit
  int64_t tx_waits = 0;     // client-unit calls that waited for Tx buffer room
  int64_t rx_waits = 0;     // read packets that waited in the Rx buffer for a server unit or Tx room
  int64_t rx_peak = 0, tx_peak = 0;  // buffer occupancy peaks (bytes)
  int64_t credit_waits = 0;          // times the ToR -> host link waited for Rx credit
};

struct SwitchCounters {
  int64_t lookups = 0, hits = 0, inserted = 0, packets_in = 0, packets_out = 0;
  int64_t pipe_prs = 0, pipe_wait_cycles = 0;  // PRs through the middle pipes; cycles packets queued for a pipe
  int64_t buffer_peak = 0, credit_waits = 0;   // shared packet buffer peak (bytes); host links that waited
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
  int64_t max_queue = 0;  // most events pending at once
  int64_t events_by_kind[16] = {};
  std::vector<FlitLinkResult> flit_links;  // only with SimConfig::flit_layer
  double wall_s = 0;
};

// The CSR of A without values. indptr: n_rows + 1 offsets; indices: nnz column ids, int32 (narrow)
// or int64, read in place (never copied or widened).
struct Csr {
  const int64_t* indptr = nullptr;
  int64_t n_rows = 0;
  const void* indices = nullptr;
  bool narrow = true;
  int64_t nnz = 0;
};

// row_bounds: node p owns rows [rb[p], rb[p+1]) of A; col_bounds: node p owns rows [cb[p], cb[p+1])
// of B (the properties). Throws std::invalid_argument.
SimResult run(const Csr& a, const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds,
              const SimConfig& cfg, const Topo& topo);

}  // namespace netsparse::sim
