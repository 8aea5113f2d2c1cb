// Packet-level discrete-event simulator of NetSparse; design in
// docs/simulator.md. Split like the hardware, after ASTRA-sim's workload / system / network layers,
// around one event queue (event_queue.h): the workload (workload.*: each node's idx stream as RIG
// commands), the system side: the nodes (node.*: host, RIG units, NIC) and the extended switches
// (switch.*: middle pipes), and the network behind its interface (network_api.h: routes; network.*:
// links, buffers, credits; flit_network.*: NetCrafter flit links between switches). This file checks the config,
// builds the parts and runs the event loop. Timing rules (hw_models/analytic.py gives the same for a
// lone PR):
//
// Host side of RIG (§5.1). The host hands RIG commands of `batch` consecutive nonzeros of the node's
// rows to whichever client unit is free: the command's MMIO write lands one PCIe latency later, the
// unit DMAs its idxs (request one PCIe latency, then idx_bytes x n at the PCIe bandwidth, shared by
// the node's DMAs, then one PCIe latency), and when the command completes the unit posts a completion
// notification that lands one PCIe latency later; only then does the host hand that unit its next
// command. The node is done when the host has every completion.
//
// Client unit Logic Engine (§5.3). It reads one idx per SNIC cycle, in order, skipped ones (local,
// filtered, coalesced) included. A remote idx with the filter on loads its Idx Filter bit through the
// unit's L1/L2 and the SNIC's LLC or DRAM (LRU of 64 B lines, hw_models/params.py gives the
// latencies); the LSQ holds lsq_entries loads, an entry is freed when its idx is decided. An idx read
// at cycle s is decided at max(previous decision, s + 1 + load latency); a read PR leaves at its
// decision (at most one per cycle) and enters the NIC concatenator then. Filter bits and the Pending
// PR Table are read at the decision; the unit's issue call runs ahead without events only until the
// node's next response write (the only thing that changes them) or one PCIe latency, whichever is
// first, so work scales with PRs and packets, not nonzeros.
//
// Server unit. A read packet waits in the SNIC Rx buffer until a server unit is free (the one free
// first takes it) and the Tx buffer has room; the unit reads one property per SNIC cycle over PCIe
// (2 x one-way latency), at most lsq_entries in flight, and pushes each response into the NIC
// concatenator when its read returns. A response packet is written to host memory one PCIe latency
// after it arrived; then the client unit frees its Pending PR Table entries and sets filter bits.
//
// Network. A link serialises one packet at a time (Table 5 wire bytes / line rate); the last bit
// arrives link latency later (store-and-forward). Buffers are Table 5's: a 96 MB packet buffer shared
// by a switch's ports, 2 MB Rx and 2 MB Tx buffers per SNIC. Links into a host and from a host wait
// for credit (lossless); credits return one link latency after the packet left the buffer. Links
// between switches never wait (no cyclic wait; the in-flight bytes, bounded by the Pending PR Tables,
// stay below one switch buffer with Table 5 numbers, docs/simulator.md). Client units issue nothing
// and server units take no read packet while the Tx buffer is full.
//
// Switches. A plain switch forwards after switch latency. An extended ToR (§6.2.1) has one middle
// pipe per 4 ports (Table 5: 8 pipes, 32 ports), each with its own property cache and concatenator. A
// read packet is processed in the pipe of its egress port, a response packet in the pipe of its
// ingress port; a pipe takes one PR per switch cycle, and a PR enters the pipe's concatenator after
// the cache lookup latency. A packet a pipe makes follows the route of its first PR (read: from its
// requester; response: from the property's owner).
#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include "sim/context.h"
#include "sim/network_api.h"
#include "sim/node.h"
#include "sim/switch.h"
#include "sim/workload.h"
#include "units/errors.h"

namespace netsparse::sim {
using units::ConfigInvalid;

namespace {

void check_pos(int64_t v, const char* name) {
  if (v <= 0) throw ConfigInvalid(std::string("simulator: ") + name + " must be > 0, got " + std::to_string(v));
}

void check_config(const SimConfig& cfg) {
  check_pos(cfg.prop_bytes, "property bytes");
  check_pos(cfg.client_units, "RIG client units");
  check_pos(cfg.server_units, "RIG server units");
  check_pos(cfg.lsq_entries, "LSQ entries");
  check_pos(cfg.switch_pipes, "switch pipes");
  check_pos(cfg.switch_ports, "switch ports");
  check_pos(cfg.pipe_prs_per_cycle, "middle pipe PRs per cycle");
  check_pos(cfg.idx_bytes, "idx bytes");
  check_pos(cfg.line_bytes, "cache line bytes");
  for (int64_t v : {cfg.l1_bytes, cfg.l2_bytes, cfg.llc_bytes, cfg.l1_ways, cfg.l2_ways, cfg.llc_ways})
    check_pos(v, "filter cache sizes and ways");
  check_pos(cfg.switch_buffer_bytes, "switch buffer bytes");
  if (cfg.client_units > 65535) throw ConfigInvalid("simulator: at most 65535 RIG client units (u16 tid)");
  if (!(cfg.snic_ghz > 0) || !(cfg.switch_ghz > 0)) throw ConfigInvalid("simulator: clocks must be > 0 GHz");
  if (!(cfg.pcie_bytes_per_s > 0)) throw ConfigInvalid("simulator: PCIe bandwidth must be > 0");
  if (cfg.pcie_ps < 0 || cfg.switch_ps < 0 || cfg.cache_latency_cycles < 0 || cfg.dram_ps < 0 ||
      cfg.l1_cycles < 0 || cfg.l2_cycles < 0 || cfg.llc_cycles < 0)
    throw ConfigInvalid("simulator: latencies must be >= 0");
  units::check_rig_batch(cfg.batch);
  for (int64_t b : {cfg.rx_buffer_bytes, cfg.tx_buffer_bytes})
    if (b < cfg.mtu) throw ConfigInvalid("simulator: SNIC Rx/Tx buffers must hold one MTU packet");
  units::HeaderSizes{cfg.upper_bytes, cfg.concat_bytes, cfg.pr_bytes}.validate();
}

void check_partition(const std::vector<int64_t>& rb, const std::vector<int64_t>& cb, const Topo& topo) {
  const int64_t nodes = static_cast<int64_t>(rb.size()) - 1;
  if (nodes <= 0 || static_cast<int64_t>(cb.size()) != nodes + 1)
    throw ConfigInvalid("simulator: row and column bounds must name the same number of nodes");
  if (topo.n_hosts != nodes)
    throw ConfigInvalid("simulator: topology has " + std::to_string(topo.n_hosts) + " hosts but the partition " +
                        std::to_string(nodes) + " nodes");
}

// The parts around one event queue; each event goes to the part that owns its kind. The system side
// (nodes, switches) reaches the network only through NetworkApi (network_api.h).
class Sim {
 public:
  Sim(const Csr& a, const std::vector<int64_t>& rb, const std::vector<int64_t>& cb, const SimConfig& cfg,
      const Topo& topo, const Observe& obs)
      : ctx_(cfg, topo, cb),
        work_(a, rb, cb, cfg),
        net_(make_network(ctx_, obs)),
        switches_(ctx_, *net_),
        nodes_(ctx_, work_, *net_),
        progress_(obs.progress),
        progress_events_(std::max<int64_t>(1, obs.progress_events)) {
    net_->attach(&nodes_, &switches_);
  }
  SimResult run();

 private:
  void handle(const Event& e);
  void drain_all(int64_t t);  // infinite concatenation delays: nothing else can happen (end of round)
  void report_active_nodes();

  SimContext ctx_;
  Workload work_;
  std::unique_ptr<NetworkApi> net_;
  Switches switches_;
  Nodes nodes_;
  std::function<void(int64_t, int64_t)> progress_;
  int64_t progress_events_;
};

void Sim::handle(const Event& e) {
  switch (e.kind()) {
    case kIssue: case kNicPush: case kNicTimer: case kWrite: case kServe: return nodes_.handle(e);
    case kSwitchTimer: case kSwitchDone: return switches_.handle(e);
    case kTxDone: case kArrive: case kLinkArrive: case kCredit: case kFlitTick: return net_->handle(e);
    default: throw units::InternalError("simulator: unknown event");
  }
}

void Sim::drain_all(int64_t t) {
  ++ctx_.res.drains;
  nodes_.drain_all(t);
  switches_.drain_all(t);
}

// CPU seconds of the calling thread (the loop is single-threaded): a speed that load on a shared host
// does not change as much as it changes the wall clock.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

SimResult Sim::run() {
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_s();
  SimResult& res = ctx_.res;
  Events& events = ctx_.events;
  nodes_.start();
  int64_t now = 0;
  int64_t report_in = progress_ ? progress_events_ : INT64_MAX;  // events to the next progress call
  for (;;) {
    while (!events.empty()) {
      if (--report_in == 0) {
        progress_(nodes_.idxs_read(), work_.total_idxs());
        report_in = progress_events_;
      }
      res.max_queue = std::max(res.max_queue, static_cast<int64_t>(events.size()));
      const Event e = events.pop();
      if (!events.empty()) nodes_.prefetch(events.top());
      now = e.t;
      ++res.events;
      ++res.events_by_kind[e.kind()];
      handle(e);
    }
    if (!nodes_.running()) break;
    drain_all(now);
    if (events.empty()) throw units::InternalError("simulator: deadlock, nodes cannot finish");
  }
  nodes_.finish();
  net_->finish();
  switches_.finish();
  res.max_packet_wire = ctx_.pkts.max_wire();
  report_active_nodes();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.cpu_s = thread_cpu_s() - cpu0;
  return std::move(res);
}

// Active nodes over time: a step down at every node's completion (ties in node order).
void Sim::report_active_nodes() {
  SimResult& res = ctx_.res;
  const int64_t n = ctx_.nodes;
  std::vector<int64_t> order(n);
  for (int64_t p = 0; p < n; ++p) order[p] = p;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return res.node_done_ps[a] < res.node_done_ps[b]; });
  res.active_t_ps.push_back(0);
  res.active_count.push_back(n);
  for (int64_t i = 0; i < n; ++i) {
    res.active_t_ps.push_back(res.node_done_ps[order[i]]);
    res.active_count.push_back(n - 1 - i);
  }
}

}  // namespace

SimResult run(const Csr& a, const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds,
              const SimConfig& cfg, const Topo& topo, const Observe& obs) {
  check_partition(row_bounds, col_bounds, topo);
  check_config(cfg);
  Sim s(a, row_bounds, col_bounds, cfg, topo, obs);
  return s.run();
}

}  // namespace netsparse::sim
