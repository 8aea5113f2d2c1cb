#pragma once
// The nodes (ASTRA-sim's system layer): per node the host's RIG command loop, the client RIG units
// with their Logic Engine timing and Idx Filter memory, the server RIG units, the NIC concatenator and
// the SNIC's Rx/Tx buffer waits. The RIG units and the concatenator are one units::RigNode per node,
// the composition the training path uses; this file only times them. Timing rules: the top of simulator.cpp.
// Defined in node.cpp (host, client units), serving.cpp (server units, SNIC buffers, NIC) and
// critical_path.cpp (the client units' critical paths).
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sim/breakdown.h"
#include "sim/context.h"
#include "sim/workload.h"
#include "units/concatenator.h"
#include "units/rig_node.h"
#include "units/rig_unit.h"
#include "units/set_index.h"

namespace netsparse::sim {

class NetworkApi;

// Set-associative LRU cache of line ids (tags only: the bits themselves are the functional Idx
// Filter). Each set keeps its ways most-recent first; set = line mod sets.
class LineCache {
 public:
  LineCache() = default;
  LineCache(int64_t lines, int64_t ways) : ways_(std::max<int64_t>(1, std::min(ways, lines))) {
    const int64_t sets = std::max<int64_t>(1, lines / ways_);
    set_of_ = units::SetIndex<uint32_t>(static_cast<uint32_t>(sets));
    tags_.assign(static_cast<size_t>(sets * ways_), kEmpty);
  }
  // True on a hit; either way the line becomes the set's most recent (a miss evicts the LRU way).
  bool access(uint32_t line) {
    uint32_t* set = &tags_[static_cast<size_t>(set_of_(line) * ways_)];
    int64_t w = 0;
    while (w < ways_ && set[w] != line) ++w;
    const bool hit = w < ways_;
    if (!hit) w = ways_ - 1;
    for (; w > 0; --w) set[w] = set[w - 1];
    set[0] = line;
    return hit;
  }
  void prefetch(uint32_t line) const {
    __builtin_prefetch(&tags_[static_cast<size_t>(set_of_(line) * ways_)]);
  }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t{0};
  int64_t ways_ = 1;
  units::SetIndex<uint32_t> set_of_;
  std::vector<uint32_t> tags_;  // line ids < 2^32: columns < 2^32 * 512
};

// A server unit's response waiting for its PCIe read to complete. Its push time and seq are fixed
// when the read is scheduled; a server unit's push times strictly increase (one read per cycle), so
// each unit's responses form a FIFO and only the head sits in the event heap (k-way merge: the same
// (t, seq) order as one heap event per response).
struct Response {
  int64_t t;
  uint64_t seq;
  units::PR pr;
};

// A client unit's critical path (breakdown.h): the current command's scan, charged idx by idx in SNIC
// cycles (touched per idx: kept beside the unit's clock).
struct Path {
  int64_t fr = 0, cmd_c = 0;        // cycles: decisions charged up to fr; the command's scan began at cmd_c
  int64_t head_read = 0, head_s = 0, head_lat = 0;  // the head idx: read cycle, LSQ-free cycle, load latency
  uint8_t head_level = kFilterL1;
  uint8_t idle = kBounds;           // why the unit waited when its next call came late (kBounds: it did not)
  int64_t scan[kScanBounds] = {};   // cycles of this command's scan
  int64_t last_resp = -1;           // Pending PR Table entry of this command's latest response
  int64_t last_resp_t = 0, last_resp_rx = 0;  // its write, and its packet's Rx step
};

// The unit's path so far in ps (completed commands and host round trips), kept as stretches for the plot.
struct PathLog {
  int64_t t = 0;                    // ps: the unit's time is charged up to here
  int64_t ps[kBounds] = {};
  double stalled_on[kBounds] = {};  // its stalls' cycles, split like the journeys of the responses ending them
  std::vector<PathSegment> segs;    // at most kMaxSegs; pairs merge when full
  static constexpr size_t kMaxSegs = 64;
  void charge(int64_t t1, const int64_t (&add)[kBounds]);
};

// The Logic Engine clock of one client unit, in SNIC cycles.
struct Client {
  int64_t next_in = 0;   // cycle the next idx can be read
  int64_t decided = 0;   // decision cycle of the last idx
  int64_t last_pr = -1;  // cycle of the last read PR
  std::vector<int64_t> lsq;  // decision cycles of the filter loads holding the LSQ entries (ring)
  size_t lsq_pos = 0, head_slot = 0;
  bool head = false, head_mem = false;  // an idx read but not processed yet (stalled, or the call ended)
  int64_t head_d = 0;
  LineCache l1, l2;
  units::PR pr{};  // the read PR issued at the unit's pending kIssue event
  uint32_t pr_dest = 0;
  bool has_pr = false, busy = false, active = false;
  // Dynamic unit roles (SimConfig::dynamic_units): the unit holds no command in [idle_from, idle_to) (ps),
  // from its completion (or time 0) until its next command's idxs arrive, and may serve reads then.
  int64_t idle_from = 0, idle_to = kNever;
  Path path;
};

struct Server {
  std::vector<int64_t> lsq;  // completion times of the last lsq_entries PCIe reads (ring)
  size_t lsq_pos = 0;
  int64_t free = 0;  // start time of its last read
  std::deque<Response> q;
};

// One node: the RIG node the training path uses (units::RigNode: client and server units, Idx Filter,
// NIC concatenator), event-driven, plus the timing state this model keeps beside it.
struct Node {
  Node(uint32_t p, const std::vector<int64_t>& col_bounds, const units::RigNodeConfig& c)
      : rig(p, col_bounds, c) {}
  units::RigNode rig;
  std::vector<Client> clients;  // per client unit
  std::vector<PathLog> paths;  // per client unit
  std::vector<Server> servers;  // per server unit, then (dynamic unit roles) per client unit's serving
  units::RigServerUnit client_serving;  // the functional serve of client units acting as servers
  LineCache llc;
  int64_t timer = kNever, serve_at = kNever;
  int64_t timer_cycle = 0;  // the NIC expiration (SNIC cycle) the armed timer is for
  int64_t dma_free = 0, host_seen = 0, active_units = 0;
  int64_t tx_bytes = 0;
  bool serve_on_drain = false;
  std::vector<uint32_t> tx_waiters;
  std::deque<uint32_t> rx_wait;  // read packets waiting for a server unit
  std::deque<int64_t> writes;    // times of the scheduled response writes, ascending
};

class Nodes {
 public:
  Nodes(SimContext& ctx, Workload& work, NetworkApi& net);
  void start();                      // the host hands a command to every client unit it can
  void handle(const Event& e);       // issue, nic_push, nic_timer, write, serve
  void prefetch(const Event& e) const;  // a hint: the state e's handler reads first (no state changes)
  void receive(uint32_t host, uint32_t p, int64_t t);  // a packet reached the host's SNIC
  void tx_left(uint32_t host, int64_t wire, int64_t t);  // a packet left the host's Tx buffer
  void drain_all(int64_t t);          // flush every NIC queue (infinite delays, end of round)
  bool running() const;
  int64_t idxs_read() const;  // by every client unit so far
  void finish();                      // the RIG units' counters into the report

 private:
  friend struct LogicEngineTiming;
  int64_t filter_load(Node& n, Client& u, uint64_t idx);
  void assign(uint32_t node, uint32_t unit, int64_t t_host);
  void age_scans(uint32_t node, uint32_t unit);
  void complete(uint32_t node, uint32_t unit, int64_t t);
  void issued(uint32_t node, uint32_t unit, const units::PR& pr, int64_t pr_cycle, int64_t pr_ps);
  void command_path(uint32_t node, uint32_t unit, int64_t t, bool scan_only);
  void critical_paths();
  void stalled_on(const Path& pa, uint32_t node, uint32_t unit, int64_t cycles);
  void issue(uint32_t node, uint32_t unit, int64_t t);
  void write_back(uint32_t p, int64_t t);
  void serve_ready(uint32_t host, int64_t t);
  uint32_t serving_unit(const Node& n, int64_t t, int64_t& first) const;
  int64_t first_read(const Server& s, int64_t t) const;
  uint32_t idle_client(const Node& n, int64_t t, int64_t beat, uint32_t u, int64_t& first) const;
  void serve(uint32_t host, uint32_t p, int64_t t, uint32_t u);
  void delay_command(uint32_t node, uint32_t unit, int64_t last_read);
  void respond(uint32_t node, uint32_t unit, const Event& e);
  void arm_serve(uint32_t host, int64_t t);
  void tx_drained(uint32_t host, int64_t t);
  void nic_push(uint32_t node, uint16_t type, uint32_t dest, const units::PR& pr, int64_t t);
  void nic_send(uint32_t node, int64_t t);
  void arm_nic(uint32_t node, int64_t t);

  SimContext& ctx_;
  const SimConfig& cfg_;
  Workload& work_;
  NetworkApi& net_;
  int64_t cycle_ps_ = 0, dram_cycles_ = 0, horizon_ps_ = 0;
  uint64_t filter_line_bits_ = 1;  // Idx Filter bits per SNIC cache line
  std::vector<uint8_t> local_;  // property values are irrelevant to timing: one zero array
  std::vector<uint8_t> halo_;   // one scratch halo row (prop_bytes) shared by all nodes
  std::vector<std::unique_ptr<Node>> node_;
  std::vector<const void*> scan_at_;  // per client unit (unit_slot): its next idx, for prefetch()
};

}  // namespace netsparse::sim
