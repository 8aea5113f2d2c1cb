// The nodes, client side: the host's command loop, the client RIG units' Logic Engine timing and
// Idx Filter memory, the read PRs they issue, and their response writes (see node.h and the timing
// rules at the top of simulator.cpp). The critical-path accounting is in critical_path.cpp, the
// server units, SNIC buffers and NIC concatenator in serving.cpp.
#include "sim/node.h"

#include <algorithm>
#include <cmath>

#include "units/errors.h"

#include "sim/network_api.h"

namespace netsparse::sim {
using namespace netsparse::units;

// The Timing policy RigClientUnit::issue asks before each idx (see the top of simulator.cpp).
struct LogicEngineTiming {
  Nodes& nodes;
  Node& n;
  Client& u;
  int64_t now, limit;  // SNIC cycles: decisions are >= now; a decision at or after limit waits
  // Both run once per idx inside RigClientUnit::run: inlined there (an out-of-line admit was a call per idx).
  __attribute__((always_inline)) inline bool admit(uint64_t idx, bool mem);
  __attribute__((always_inline)) inline void consumed(Outcome o);
  inline int64_t local_run(int64_t k);
  // The unit's L1 and L2 sets that a filter load of idx reads first.
  void prefetch(uint64_t idx) {
    const uint32_t line = static_cast<uint32_t>(idx / nodes.filter_line_bits_);
    u.l1.prefetch(line);
    u.l2.prefetch(line);
  }
};

// A run of k local idxs behind a local idx, taken as k calls of admit and consumed(kLocal) would take
// them, in closed form: first those read behind the last decision (reads run ahead after a filter
// load) are decided in its cycle, already charged; then each of the rest streams, read one cycle after
// the last and decided the cycle after its read, one scan_local cycle each, up to the call's limit.
// Declines (0) in any other state: the idxs then go one by one.
inline int64_t LogicEngineTiming::local_run(int64_t k) {
  Path& pa = u.path;
  const int64_t c = u.decided;
  if (u.head || now > c || c >= limit || pa.fr < c) return 0;
  int64_t n = std::min(k, std::max<int64_t>(c - u.next_in, 0));
  if (n > 0) {  // decided at c <= fr: nothing to charge
    u.next_in += n;
    pa.head_read = u.next_in - 1;
    u.head_d = c;
    u.head_mem = false;
    pa.idle = kBounds;
  }
  if (n == k || pa.idle != kBounds || pa.fr != c || u.next_in != c) return n;
  const int64_t m = std::min(k - n, limit - 1 - c);  // the i-th is decided at c + i + 1 < limit
  if (m <= 0) return n;
  u.next_in = u.decided = u.head_d = pa.fr = c + m;
  pa.head_read = c + m - 1;
  u.head_mem = false;
  pa.scan[kScanLocal] += m;
  return n + m;
}

// The cycles from the last decision charged to this one go, in order, to the idx's read (one per cycle),
// its wait for an LSQ entry, its filter load, and the rest to why the unit's call came late.
inline void LogicEngineTiming::consumed(Outcome o) {
  u.head = false;
  Path& pa = u.path;
  const int64_t d = u.decided;
  const int scan = kScanLocal + static_cast<int>(o);
  if (d == pa.fr + 1 && pa.head_read == pa.fr && pa.idle == kBounds) {  // streaming: one idx this cycle
    ++pa.scan[scan];
    pa.fr = d;
    return;
  }
  if (d <= pa.fr) {  // decided in a cycle already charged (reads run ahead of decisions)
    pa.idle = kBounds;
    return;
  }
  const int64_t s = u.head_mem ? pa.head_s : pa.head_read, lat = u.head_mem ? pa.head_lat : 0;
  int64_t a = pa.fr;
  auto upto = [&](int64_t e, int b) {
    if (e <= a) return;
    const int64_t x = std::min(e, d);
    pa.scan[b] += x - a;
    a = x;
  };
  upto(pa.head_read + 1, scan);
  upto(s + 1, kFilterLsq);
  upto(s + 1 + lat, pa.head_level);
  if (a < d) {
    pa.scan[pa.idle == kBounds ? scan : pa.idle] += d - a;
    if (pa.idle == kPendingFull) nodes.stalled_on(pa, n.rig.node(), static_cast<uint32_t>(&u - n.clients.data()), d - a);
  }
  pa.idle = kBounds;
  pa.fr = d;
}

inline bool LogicEngineTiming::admit(uint64_t idx, bool mem) {
  if (!u.head) {  // read the idx: its filter load (if any) goes out now
    int64_t s = u.next_in, lat = 0;
    u.path.head_read = s;
    if (mem) {
      lat = nodes.filter_load(n, u, idx);
      s = std::max(s, u.lsq[u.lsq_pos]);  // the LSQ entry frees when the idx it held was decided
      u.head_slot = u.lsq_pos;
      u.lsq_pos = u.lsq_pos + 1 == u.lsq.size() ? 0 : u.lsq_pos + 1;
      u.path.head_s = s;  // without a load: read = LSQ-free cycle, no latency (consumed reads head_mem)
      u.path.head_lat = lat;
    }
    u.head_mem = mem;
    u.next_in = s + 1;
    u.head_d = std::max(u.decided, s + 1 + lat);
    u.head = true;
  }
  const int64_t d = std::max(u.head_d, now);
  if (d >= limit) return false;  // a response write may land first: decide on the next call
  u.decided = d;
  if (u.head_mem) u.lsq[u.head_slot] = d;
  return true;
}

Nodes::Nodes(SimContext& ctx, Workload& work, NetworkApi& net) : ctx_(ctx), cfg_(ctx.cfg), work_(work), net_(net) {
  const SimConfig& cfg = cfg_;
  cycle_ps_ = ctx.snic.ps(1);
  filter_line_bits_ = static_cast<uint64_t>(8 * cfg.line_bytes);
  dram_cycles_ = ctx.snic.up(cfg.dram_ps);
  horizon_ps_ = std::max(cfg.pcie_ps, cycle_ps_);
  const std::vector<int64_t>& cb = ctx.map.bounds;
  int64_t max_owned = 1;
  for (int64_t p = 0; p < ctx.nodes; ++p) max_owned = std::max(max_owned, cb[p + 1] - cb[p]);
  local_.assign(static_cast<size_t>(max_owned * cfg.prop_bytes), 0);
  halo_.assign(static_cast<size_t>(cfg.prop_bytes), 0);
  RigNodeConfig rc;
  rc.n_units = cfg.client_units + cfg.server_units;
  rc.n_client_units = cfg.client_units;
  rc.batch_size = -1;     // unused: the workload hands out the commands
  rc.pending_capacity = cfg.pending_entries;
  rc.filter = cfg.filter;
  rc.coalesce = cfg.coalesce;
  rc.cycles_per_pr = 0;   // unused: this model times every PR
  rc.concat.mtu = cfg.mtu;
  rc.concat.upper_bytes = cfg.upper_bytes;
  rc.concat.delay_cycles = !cfg.concat_nic                ? 0
                           : cfg.nic_delay_cycles < 0 ? units::kInfiniteDelay
                                                      : cfg.nic_delay_cycles;
  rc.event_driven = true;
  const int64_t n_cols = ctx.map.n_cols();
  const int64_t lines_per_filter = (n_cols + 8 * cfg.line_bytes - 1) / (8 * cfg.line_bytes);
  if (lines_per_filter > int64_t{UINT32_MAX})
    throw units::ConfigInvalid("simulator: the Idx Filter has more than 2^32 lines (too many columns)");
  // The LLC holds at most the node's filter lines: sized to them (never more than its capacity) it
  // hits and misses exactly like the full cache, with a fraction of the memory (set = line mod sets).
  const int64_t llc_lines = std::min(cfg.llc_bytes / cfg.line_bytes,
                                     (lines_per_filter + cfg.llc_ways - 1) / cfg.llc_ways * cfg.llc_ways);
  node_.resize(ctx.nodes);
  scan_at_.assign(static_cast<size_t>(ctx.nodes * cfg.client_units), nullptr);
  for (int64_t p = 0; p < ctx.nodes; ++p) {
    auto nd = std::make_unique<Node>(static_cast<uint32_t>(p), cb, rc);
    // Property values are irrelevant to timing: every idx lands in one shared halo slot, and every
    // node serves from one zero array.
    const int64_t owned_bytes = (cb[p + 1] - cb[p]) * cfg.prop_bytes;
    nd->rig.begin_kernel(cfg.prop_bytes, halo_.data(), cfg.prop_bytes, local_.data(), owned_bytes);
    // Every node finds a PR's owner in the one copy of the same bounds: each RigNode's own copy is a
    // KiB that the other nodes' events evict, and the owner search missed in it on most PRs.
    nd->rig.context().map = &ctx.map;
    nd->clients.resize(cfg.client_units);
    for (RigClientUnit& ru : nd->rig.clients()) ru.set_overlap(cfg.overlap_commands);
    nd->paths.resize(cfg.client_units);
    for (auto& u : nd->clients) {
      u.lsq.assign(cfg.lsq_entries, 0);
      if (cfg.filter) {
        u.l1 = LineCache(cfg.l1_bytes / cfg.line_bytes, cfg.l1_ways);
        u.l2 = LineCache(cfg.l2_bytes / cfg.line_bytes, cfg.l2_ways);
      }
    }
    if (cfg.filter) nd->llc = LineCache(std::max<int64_t>(1, llc_lines), cfg.llc_ways);
    nd->servers.resize(cfg.server_units + (cfg.dynamic_units ? cfg.client_units : 0));
    for (auto& s : nd->servers) s.lsq.assign(cfg.lsq_entries, 0);
    ctx.res.nodes[p].batch = work.batch(p);
    node_[p] = std::move(nd);
  }
}

void Nodes::start() {
  for (int64_t p = 0; p < ctx_.nodes; ++p) {
    Node& n = *node_[p];
    for (int64_t u = 0; u < cfg_.client_units && work_.has_command(p); ++u) {
      ++n.active_units;
      assign(static_cast<uint32_t>(p), static_cast<uint32_t>(u), 0);
    }
  }
}

int64_t Nodes::idxs_read() const {
  int64_t n = 0;
  for (const auto& nd : node_)
    for (const RigClientUnit& ru : nd->rig.clients()) n += ru.counters.idxs;
  return n;
}

bool Nodes::running() const {
  for (const auto& n : node_)
    if (n->active_units > 0) return true;
  return false;
}

void Nodes::handle(const Event& e) {
  switch (e.kind()) {
    case kIssue: {
      Client& u = node_[e.a]->clients[e.b];
      if (u.has_pr) {  // the fused NIC push of the PR issued at this time counts as its own event
        u.has_pr = false;
        ++ctx_.res.events;
        nic_push(e.a, kReadType, u.pr_dest, u.pr, e.t);
      }
      issue(e.a, e.b, e.t);
      break;
    }
    case kNicPush: respond(e.a, e.b, e); break;
    case kNicTimer: {
      Node& n = *node_[e.a];
      if (n.timer != e.t) break;  // superseded by an earlier timer
      n.timer = kNever;
      n.rig.nic().advance(std::max(ctx_.snic.cycle(e.t), n.rig.nic().now()));
      nic_send(e.a, e.t);
      arm_nic(e.a, e.t);
      break;
    }
    case kServe: {
      Node& n = *node_[e.a];
      if (n.serve_at != e.t) break;
      n.serve_at = kNever;
      serve_ready(e.a, e.t);
      break;
    }
    case kWrite: write_back(e.a, e.t); break;
    default: throw units::InternalError("simulator: not a node event");
  }
}

// A client unit's next call reads its timing state, its unit and its idx stream, lines that the other units'
// events have evicted since its last call: asked for while the event before it is handled, the misses
// overlap that event's work.
void Nodes::prefetch(const Event& e) const {
  if (e.kind() != kIssue) return;
  const Node& n = *node_[e.a];
  const char* u = reinterpret_cast<const char*>(&n.clients[e.b]);
  __builtin_prefetch(u);
  __builtin_prefetch(u + 64);
  __builtin_prefetch(&n.rig.clients()[e.b]);
  if (const void* next = scan_at_[ctx_.unit_slot(e.a, e.b)]) __builtin_prefetch(next);
}

// The latency in SNIC cycles of a client unit's Idx Filter load of `idx`'s bit: L1 and L2 of the unit,
// the SNIC's LLC, else DRAM; every level on the way keeps the line (LRU).
int64_t Nodes::filter_load(Node& n, Client& u, uint64_t idx) {
  const uint32_t line = static_cast<uint32_t>(idx / filter_line_bits_);
  NodeCounters& c = ctx_.res.nodes[n.rig.node()];
  if (u.l1.access(line)) {
    ++c.mem_l1;
    u.path.head_level = kFilterL1;
    return cfg_.l1_cycles;
  }
  if (u.l2.access(line)) {
    ++c.mem_l2;
    u.path.head_level = kFilterL2;
    return cfg_.l2_cycles;
  }
  if (n.llc.access(line)) {
    ++c.mem_llc;
    u.path.head_level = kFilterLlc;
    return cfg_.llc_cycles;
  }
  ++c.mem_dram;
  u.path.head_level = kFilterDram;
  return dram_cycles_;
}

// The host hands unit `unit` the next command at t_host: MMIO write, then the unit's idx DMA.
void Nodes::assign(uint32_t node, uint32_t unit, int64_t t_host) {
  Node& n = *node_[node];
  Client& u = n.clients[unit];
  const int64_t len = work_.next_command(node, n.rig.clients()[unit]);
  const int64_t at_host = t_host + 2 * cfg_.pcie_ps;  // MMIO lands, the unit's DMA request reaches the host
  const int64_t start = std::max(at_host, n.dma_free);
  const double ser = static_cast<double>(len * cfg_.idx_bytes) * 1e12 / cfg_.pcie_bytes_per_s;
  n.dma_free = start + static_cast<int64_t>(std::ceil(ser - 1e-6));
  const int64_t ready = n.dma_free + cfg_.pcie_ps;  // the last idx byte reached the SNIC
  if (cfg_.overlap_commands) age_scans(node, unit);
  u.active = true;
  u.idle_to = ready;
  u.next_in = std::max(u.next_in, ctx_.snic.up(ready));
  u.busy = true;
  ctx_.events.push(ready, kIssue, node, unit);
  // The path: the round trip up to the command's first scan cycle, then a fresh scan.
  Path& pa = u.path;
  pa.cmd_c = pa.fr = ctx_.snic.up(ready);
  std::fill(std::begin(pa.scan), std::end(pa.scan), 0);
  pa.last_resp = -1;
  PathLog& log = n.paths[unit];
  int64_t host[kBounds] = {};
  host[kHost] = ctx_.snic.ps(pa.cmd_c) - log.t;
  log.charge(ctx_.snic.ps(pa.cmd_c), host);
}

// Overlapping commands: the unit's next command starts, so its PRs so far are an older command's
// (breakdown.h, PrScan); once per command, never per PR.
void Nodes::age_scans(uint32_t node, uint32_t unit) {
  const Path& pa = node_[node]->clients[unit].path;
  PrScan* const ss = ctx_.scans.data() + ctx_.unit_slot(node, unit) * ctx_.entries;
  for (size_t id = 0; id < ctx_.entries; ++id) {
    PrScan& sc = ss[id];
    if (sc.issued == PrScan::kOlder) continue;
    const int64_t at = ctx_.snic.ps(pa.cmd_c + sc.issued);  // as issued() had it
    sc.issued = PrScan::kOlder;
    sc.scan[0] = static_cast<uint32_t>(at);
    sc.scan[1] = static_cast<uint32_t>(at >> 32);
  }
}

// The unit's command completed at t: its completion notification reaches the host one PCIe latency later.
void Nodes::complete(uint32_t node, uint32_t unit, int64_t t) {
  Node& n = *node_[node];
  n.clients[unit].active = false;
  n.clients[unit].idle_from = t;
  n.clients[unit].idle_to = kNever;
  if (cfg_.dynamic_units && !n.rx_wait.empty()) arm_serve(node, t);  // the unit may take a waiting read
  command_path(node, unit, t, false);
  const int64_t seen = t + cfg_.pcie_ps;
  if (!work_.has_command(node)) {  // the unit's last notification: its path ends when the host has it
    int64_t host[kBounds] = {};
    host[kHost] = seen - t;
    n.paths[unit].charge(seen, host);
  }
  n.host_seen = std::max(n.host_seen, seen);
  if (work_.has_command(node)) return assign(node, unit, seen);
  if (--n.active_units == 0) ctx_.res.node_done_ps[node] = n.host_seen;
}

// A read PR leaves at pr_cycle: one PR per cycle may hold it past its decision. Its journey starts,
// with the scan charges up to it (a command's scan fits 2^32 cycles: over 2 s at Table 5's clock).
void Nodes::issued(uint32_t node, uint32_t unit, const PR& pr, int64_t pr_cycle, int64_t pr_ps) {
  Path& pa = node_[node]->clients[unit].path;
  if (pr_cycle > pa.fr) {
    pa.scan[kScanIssued] += pr_cycle - pa.fr;
    pa.fr = pr_cycle;
  }
  if (pa.fr - pa.cmd_c >= int64_t{PrScan::kOlder})
    throw units::ConfigInvalid("simulator: a RIG command scanned for 2^32 SNIC cycles; use a smaller batch");
  const size_t slot = ctx_.unit_slot(node, unit);
  ctx_.hold_entry(pr.id);
  PrJourney& tr = ctx_.journey(slot, pr.id);
  tr = PrJourney{};
  tr.mark = pr_ps;
  PrScan& sc = ctx_.scan(slot, pr.id);
  sc.issued = static_cast<uint32_t>(pr_cycle - pa.cmd_c);
  for (int b = 0; b < kScanBounds; ++b) sc.scan[b] = static_cast<uint32_t>(pa.scan[b]);
}

void Nodes::issue(uint32_t node, uint32_t unit, int64_t t) {
  Node& n = *node_[node];
  Client& u = n.clients[unit];
  RigClientUnit& ru = n.rig.clients()[unit];
  if (n.tx_bytes >= cfg_.tx_buffer_bytes && ru.scanning()) {  // Tx full: no new PRs (busy stays set)
    n.tx_waiters.push_back(unit);
    ++ctx_.res.nodes[node].tx_waits;
    u.path.idle = kTxLink;
    return;
  }
  const int64_t limit_ps = std::min(t + horizon_ps_, n.writes.empty() ? kNever : n.writes.front());
  LogicEngineTiming timing{*this, n, u, ctx_.snic.up(t), ctx_.snic.up(limit_ps)};
  int64_t pr_cycle = -1, pr_ps = 0;
  ru.issue(
      n.rig.context(),
      [&](uint32_t dest, const PR& pr) {
        pr_cycle = std::max(u.decided, u.last_pr + 1);  // one read PR per cycle
        u.decided = u.last_pr = pr_cycle;
        pr_ps = ctx_.snic.ps(pr_cycle);
        issued(node, unit, pr, pr_cycle, pr_ps);
        u.pr = pr;
        u.pr_dest = dest;
        u.has_pr = true;
      },
      1, timing);
  scan_at_[ctx_.unit_slot(node, unit)] = ru.scan_at();
  if (pr_cycle >= 0) {  // the PR enters the NIC concatenator at its decision, in the next call's event
    ctx_.events.push(pr_ps, kIssue, node, unit);
    return;
  }
  if (u.head && !ru.stalled()) {  // the call reached the horizon: go on from the idx it read
    ctx_.events.push(ctx_.snic.ps(std::max(u.head_d, timing.limit)), kIssue, node, unit);
    return;
  }
  u.busy = false;  // stalled or waiting for responses: a response write wakes the unit
  if (ru.stalled()) u.path.idle = kPendingFull;
  if (!u.active) return;
  if (ru.commands_done() == ru.commands_enqueued()) return complete(node, unit, std::max(t, ctx_.snic.ps(u.decided)));
  if (cfg_.overlap_commands && !ru.scanning() && ru.commands_done() + 1 == ru.commands_enqueued() &&
      work_.has_command(node)) {  // scanned, its PRs pending: the unit asks for its next command now
    const int64_t done = std::max(t, ctx_.snic.ps(u.decided));
    u.idle_from = kNever;  // it still holds this command: no idle window before the next one
    command_path(node, unit, done, true);
    assign(node, unit, done + cfg_.pcie_ps);
  }
}

void Nodes::write_back(uint32_t p, int64_t t) {
  const Packet& k = ctx_.pkts[p];
  const uint32_t host = k.dst;
  const int64_t wire = k.wire;
  Node& n = *node_[host];
  if (n.writes.empty() || n.writes.front() != t) throw units::InternalError("simulator: response writes out of order");
  n.writes.pop_front();
  const PacketView v = ctx_.pkts.view(p);
  Packet& pk = ctx_.pkts[p];
  // The responses' Pending PR Table entries and filter words are scattered lines: each PR's are asked
  // for a few PRs ahead, so the misses overlap.
  constexpr int64_t kAhead = 4;
  const auto ahead = [&](int64_t i) {
    const PR pr = v.pr(i);
    if (pr.src_tid < cfg_.client_units) n.rig.clients()[pr.src_tid].prefetch_response(n.rig.context(), pr);
  };
  for (int64_t i = 0; i < std::min<int64_t>(v.n_prs, kAhead); ++i) ahead(i);
  ctx_.fold_packet(pk, v, t);
  for (int64_t i = 0; i < v.n_prs; ++i) {
    if (i + kAhead < v.n_prs) ahead(i + kAhead);
    const PR pr = v.pr(i);
    if (pr.src != host || pr.src_tid >= cfg_.client_units)
      throw units::InternalError("simulator: response delivered to the wrong node or unit");
    n.rig.clients()[pr.src_tid].on_response(n.rig.context(), pr, v.payload(i));
    Client& u = n.clients[pr.src_tid];
    u.path.last_resp = pr.id;
    u.path.last_resp_t = t;
    u.path.last_resp_rx = t - pk.h.mark;  // deconcatenation and DMA into host memory
    if (!u.busy) {  // wake an idle unit: it may resume, finish its command, or complete it
      u.busy = true;
      ctx_.events.push(t, kIssue, host, pr.src_tid);
    }
  }
  net_.release(host, wire, t);  // the packet leaves the Rx buffer
  ctx_.pkts.free(p);
}

void Nodes::finish() {
  for (int64_t p = 0; p < ctx_.nodes; ++p) {
    const RigCounters rc = node_[p]->rig.stats().rig;
    NodeCounters& nc = ctx_.res.nodes[p];
    nc.idxs = rc.idxs;
    nc.local = rc.local;
    nc.filtered = rc.filtered;
    nc.coalesced = rc.coalesced;
    nc.read_prs = rc.prs;
    nc.responses = rc.responses;
    nc.stalls = rc.stalls;
    nc.commands = rc.commands;
  }
  critical_paths();
}

}  // namespace netsparse::sim
