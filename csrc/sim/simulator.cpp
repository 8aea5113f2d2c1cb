// Packet-level discrete-event simulator of NetSparse (issue 4 point 2, issue 14); design in
// docs/simulator.md. Timing rules (hw_models/analytic.py gives the same for a lone PR):
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
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <stdexcept>

#include "units/concatenator.h"
#include "units/errors.h"
#include "units/flit_link.h"
#include "units/header_model.h"
#include "units/rig_unit.h"
#include "units/switch_pipe.h"

namespace netsparse::sim {
using namespace netsparse::units;

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// In the order of NETSPARSE_SIM_EVENTS (simulator.h), which names them in the report.
enum Kind : uint8_t {
  kIssue, kNicPush, kNicTimer, kSwitchTimer, kTxDone, kArrive, kSwitchDone, kWrite, kServe, kCredit, kFlitTick,
  kLinkArrive
};
static_assert(kLinkArrive + 1 == kEventKinds, "one Kind per entry of NETSPARSE_SIM_EVENTS");
static_assert(kEventKinds <= 16, "an event key holds its kind in 4 bits");

// A heap entry is 24 bytes: the payload of a PR never rides in the heap (the heap stays in cache).
// key = seq << 4 | kind; seq is unique, so ordering by (t, key) is ordering by (t, seq).
struct Event {
  int64_t t;
  uint64_t key;
  uint32_t a, b;
  uint32_t kind() const { return static_cast<uint32_t>(key & 15); }
  uint64_t seq() const { return key >> 4; }
};

// Min-heap of events on (t, key), 4-ary: half the depth of a binary heap and a node's four children
// in two cache lines. Keys are unique, so any correct heap pops the same order.
class EventQueue {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  void push(const Event& e) {
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      const size_t up = (i - 1) / 4;
      if (!before(e, v_[up])) break;
      v_[i] = v_[up];
      i = up;
    }
    v_[i] = e;
  }
  Event pop() {
    const Event top = v_[0];
    const Event last = v_.back();
    v_.pop_back();
    const size_t n = v_.size();
    if (n == 0) return top;
    size_t i = 0;
    for (;;) {
      const size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      const size_t end = std::min(c + 4, n);
      for (size_t j = c + 1; j < end; ++j)
        if (before(v_[j], v_[best])) best = j;
      if (!before(v_[best], last)) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = last;
    return top;
  }

 private:
  static bool before(const Event& x, const Event& y) { return x.t != y.t ? x.t < y.t : x.key < y.key; }
  std::vector<Event> v_;
};

// Integer cycle <-> picosecond conversion of one clock domain (monotone, exact round trip).
struct Clock {
  double ghz;
  // The cycle that has started by `ps`.
  int64_t cycle(int64_t ps) const { return static_cast<int64_t>(std::floor(static_cast<long double>(ps) * ghz / 1000.0L)); }
  // The first picosecond of cycle `cyc`.
  int64_t ps(int64_t cyc) const {
    int64_t p = static_cast<int64_t>(std::ceil(static_cast<long double>(cyc) * 1000.0L / ghz));
    while (cycle(p) < cyc) ++p;
    while (p > 0 && cycle(p - 1) >= cyc) --p;
    return p;
  }
  // The first cycle that starts at or after `ps`.
  int64_t up(int64_t ps_) const {
    const int64_t c = cycle(ps_);
    return this->ps(c) == ps_ ? c : c + 1;
  }
};

// Set-associative LRU cache of line ids (tags only: the bits themselves are the functional Idx
// Filter). Each set keeps its ways most-recent first; set = line mod sets.
class LineCache {
 public:
  LineCache() = default;
  LineCache(int64_t lines, int64_t ways) : ways_(std::max<int64_t>(1, std::min(ways, lines))) {
    sets_ = std::max<int64_t>(1, lines / ways_);
    tags_.assign(static_cast<size_t>(sets_ * ways_), kEmpty);
  }
  // True on a hit; either way the line becomes the set's most recent (a miss evicts the LRU way).
  bool access(uint32_t line) {
    uint32_t* set = &tags_[static_cast<size_t>((line % static_cast<uint32_t>(sets_)) * ways_)];
    int64_t w = 0;
    while (w < ways_ && set[w] != line) ++w;
    const bool hit = w < ways_;
    if (!hit) w = ways_ - 1;
    for (; w > 0; --w) set[w] = set[w - 1];
    set[0] = line;
    return hit;
  }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t{0};
  int64_t ways_ = 1, sets_ = 1;
  std::vector<uint32_t> tags_;  // line ids < 2^32: columns < 2^32 * 512
};

// A server unit's response waiting for its PCIe read to complete. Its push time and seq are fixed
// when the read is scheduled; a server unit's push times strictly increase (one read per cycle), so
// each unit's responses form a FIFO and only the head sits in the event heap (k-way merge: the same
// (t, seq) order as one heap event per response).
struct Response {
  int64_t t;
  uint64_t seq;
  PR pr;
};

// An event of a stream whose times never decrease (a link's arrivals, a middle pipe's output): only
// the stream's head waits in the heap, with the seq it got when it was scheduled, so the order is
// exactly that of one heap event each (k-way merge) while the heap stays small.
struct Timed {
  int64_t t;
  uint64_t seq;
  uint32_t p;
};

struct Packet {
  std::vector<uint8_t> bytes;  // Fig. 6 encoding, as the units produce and consume it
  uint16_t type = 0;
  uint32_t n_prs = 0, dst = 0;
  int64_t wire = 0, header = 0, payload = 0;
  int64_t route_src = -1;  // host whose path table row routes it; -1 = direct ToR -> host link
  int32_t hop = 0;         // index of the link it is on (or arrived by) in that row
  int64_t at = -1;         // vertex whose buffer holds it (-1: none, or the host's Tx buffer)
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
  PR pr{};  // the read PR issued at the unit's pending kIssue event
  uint32_t pr_dest = 0;
  bool has_pr = false, busy = false, active = false;
};

struct Server {
  std::vector<int64_t> lsq;  // completion times of the last lsq_entries PCIe reads (ring)
  size_t lsq_pos = 0;
  int64_t free = 0;  // start time of its last read
  std::deque<Response> q;
};

struct Node {
  RigContext ctx;
  IdxFilter filter;
  std::vector<RigClientUnit> units;
  std::vector<Client> cl;
  std::vector<RigServerUnit> servers;
  std::vector<Server> sv;
  std::unique_ptr<Concatenator> nic;
  LineCache llc;
  int64_t timer = kNever, serve_at = kNever;
  int64_t next_pos = 0, end = 0, batch = 1;  // the host's command queue: nonzeros [next_pos, end)
  int64_t dma_free = 0, host_seen = 0, active_units = 0;
  int64_t tx_bytes = 0;
  bool serve_on_drain = false;
  std::vector<uint32_t> tx_waiters;
  std::deque<uint32_t> rx_wait;  // read packets waiting for a server unit
  std::deque<int64_t> writes;    // times of the scheduled response writes, ascending
};

// A vertex's buffer as its senders see it (credit flow control with delayed credit returns).
struct Pool {
  int64_t avail = 0, used = 0, peak = 0;
  int64_t credit_ps = 0;  // a credit reaches the senders this long after the bytes left
  std::deque<std::pair<int64_t, int64_t>> returns;  // (time the senders see it, bytes), ascending
  std::vector<int64_t> blocked;  // links waiting for credit
  int64_t armed = kNever;
};

void check_pos(int64_t v, const char* name) {
  if (v <= 0) throw ConfigInvalid(std::string("simulator: ") + name + " must be > 0, got " + std::to_string(v));
}

class Sim;

// The Timing policy RigClientUnit::issue asks before each idx (see the top of this file).
struct Engine {
  Sim& sim;
  Node& n;
  Client& u;
  int64_t now, limit;  // SNIC cycles: decisions are >= now; a decision at or after limit waits
  bool admit(uint64_t idx, bool mem);
  void consumed() { u.head = false; }
};

class Sim {
 public:
  Sim(const Csr& a, const std::vector<int64_t>& rb, const std::vector<int64_t>& cb, const SimConfig& cfg,
      const Topo& topo);
  SimResult run();
  int64_t filter_load(Node& n, Client& u, uint64_t idx);

 private:
  void push(int64_t t, uint32_t kind, uint32_t a, uint32_t b = 0) { push_seq(t, seq_++, kind, a, b); }
  void push_seq(int64_t t, uint64_t seq, uint32_t kind, uint32_t a, uint32_t b) {
    heap_.push(Event{t, seq << 4 | kind, a, b});
  }
  void handle(const Event& e);
  void stream_push(std::deque<Timed>& q, int64_t t, uint32_t kind, uint32_t a, uint32_t p) {
    const uint64_t seq = seq_++;
    if (!q.empty() && t < q.back().t) throw std::logic_error("simulator: a stream's times must not decrease");
    if (q.empty()) push_seq(t, seq, kind, a, 0);
    q.push_back(Timed{t, seq, p});
  }
  uint32_t stream_pop(std::deque<Timed>& q, const Event& e) {
    const Timed x = q.front();
    if (x.seq != e.seq() || x.t != e.t) throw std::logic_error("simulator: event stream out of order");
    q.pop_front();
    if (!q.empty()) push_seq(q.front().t, q.front().seq, e.kind(), e.a, 0);
    return x.p;
  }
  // RIG commands and client units
  void assign(uint32_t node, uint32_t unit, int64_t t_host);
  void complete(uint32_t node, uint32_t unit, int64_t t);
  void issue(uint32_t node, uint32_t unit, int64_t t);
  void write_back(uint32_t p, int64_t t);
  // server units
  void serve_ready(uint32_t host, int64_t t);
  void serve(uint32_t host, uint32_t p, int64_t t);
  void respond(uint32_t node, uint32_t unit, const Event& e);
  void arm_serve(uint32_t host, int64_t t);
  void tx_drained(uint32_t host, int64_t t);
  // NIC and switch concatenators
  void nic_push(uint32_t node, uint16_t type, uint32_t dest, const PR& pr, int64_t t);
  void nic_send(uint32_t node, int64_t t);
  void arm_nic(uint32_t node, int64_t t);
  void arm_switch(uint32_t pipe, int64_t t);
  template <class F>
  void take(Concatenator& c, F&& f);
  uint32_t make_packet(const PacketView& v, std::vector<uint8_t>* whole);
  void free_packet(uint32_t p) { free_.push_back(p); }
  // links and buffers
  void enqueue(int64_t link, uint32_t p, int64_t t);
  void try_start(int64_t link, int64_t t);
  bool credit(int64_t link, int64_t wire, int64_t t);
  void leave_queue(int64_t link, int64_t t);
  void occupy(int64_t v, int64_t bytes);
  void release(int64_t v, int64_t bytes, int64_t at);
  void refresh(Pool& pl, int64_t t);
  void retry_blocked(int64_t v, int64_t t);
  void arrive(uint32_t p, int64_t link, int64_t t);
  void host_receive(uint32_t host, uint32_t p, int64_t t);
  // extended switches
  int64_t pipe_of(int64_t s, const Packet& k, int64_t in_link) const;
  void run_pipe(uint32_t pipe, uint32_t p, int64_t t);
  void switch_out(int64_t s, uint32_t p, int64_t t);
  int64_t route(int64_t src, int64_t dst, int32_t hop) const {
    return topo_.routes[(src * nodes_ + dst) * topo_.max_hops + hop];
  }
  void drain_all(int64_t t);
  // flit layer
  void flit_setup();
  void flit_start(int64_t link, int64_t t);
  void flit_tick(int64_t link, int64_t t);
  void flit_finish();

  const Csr a_;
  const SimConfig cfg_;
  const Topo& topo_;
  int64_t nodes_;
  NodeMap map_;
  Clock snic_, sw_;
  int64_t cycle_ps_ = 0, lookup_cycles_ = 0, dram_cycles_ = 0, horizon_ps_ = 0;
  HeaderSizes hs_;
  std::vector<uint8_t> local_;  // property values are irrelevant to timing: one zero array
  std::vector<uint8_t> halo_;   // one scratch halo row (prop_bytes) shared by all nodes
  std::vector<std::unique_ptr<Node>> node_;
  // extended switches: pipes s * switch_pipes + i
  int64_t pipes_ = 1, ports_per_pipe_ = 1;
  std::vector<std::unique_ptr<SwitchPipe>> pipe_;
  std::vector<int64_t> pipe_timer_, pipe_free_;
  std::vector<std::deque<Timed>> pipe_out_;  // packets in a middle pipe, by the time it is done with them
  std::vector<int64_t> out_port_;  // per link: its port at its source switch (-1 at hosts)
  std::vector<std::vector<int64_t>> sw_hosts_;
  std::vector<int64_t> down_link_;
  // links and buffers
  std::vector<std::deque<uint32_t>> out_q_;
  std::vector<std::deque<Timed>> in_flight_;  // per link: packets on it, by arrival time
  std::vector<int64_t> link_free_;    // when the packet on the link has been serialised
  std::vector<int64_t> deliver_ps_;   // link latency, plus switch latency when it ends at a switch
  std::vector<uint8_t> tx_armed_, link_blocked_;
  std::vector<Pool> pool_;  // per vertex
  std::vector<Packet> pkts_;
  std::vector<uint32_t> free_;
  std::vector<int64_t> offs_, touched_;
  EventQueue heap_;
  uint64_t seq_ = 0;
  SimResult res_;
  // Flit layer: per link its slot in res_.flit_links or -1; per slot the flit unit's state, the
  // simulator packet of each flit-unit packet id, the flit clock and the armed tick.
  std::vector<int64_t> flit_slot_;
  std::vector<FlitLinkState> flit_state_;
  std::vector<std::vector<uint32_t>> flit_ids_;
  std::vector<Clock> flit_clock_;
  std::vector<int64_t> flit_armed_;

  friend struct Engine;
};

bool Engine::admit(uint64_t idx, bool mem) {
  if (!u.head) {  // read the idx: its filter load (if any) goes out now
    int64_t s = u.next_in, lat = 0;
    if (mem) {
      lat = sim.filter_load(n, u, idx);
      s = std::max(s, u.lsq[u.lsq_pos]);  // the LSQ entry frees when the idx it held was decided
      u.head_slot = u.lsq_pos;
      u.lsq_pos = u.lsq_pos + 1 == u.lsq.size() ? 0 : u.lsq_pos + 1;
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

Sim::Sim(const Csr& a, const std::vector<int64_t>& rb, const std::vector<int64_t>& cb, const SimConfig& cfg,
         const Topo& topo)
    : a_(a), cfg_(cfg), topo_(topo), nodes_(static_cast<int64_t>(rb.size()) - 1), map_(cb),
      snic_{cfg.snic_ghz}, sw_{cfg.switch_ghz}, hs_{cfg.upper_bytes, cfg.concat_bytes, cfg.pr_bytes} {
  if (nodes_ <= 0 || static_cast<int64_t>(cb.size()) != nodes_ + 1)
    throw ConfigInvalid("simulator: row and column bounds must name the same number of nodes");
  if (topo.n_hosts != nodes_)
    throw ConfigInvalid("simulator: topology has " + std::to_string(topo.n_hosts) + " hosts but the partition " +
                                std::to_string(nodes_) + " nodes");
  if (rb.front() != 0 || rb.back() != a.n_rows || a.indptr[0] != 0 || a.indptr[a.n_rows] != a.nnz)
    throw ConfigInvalid("simulator: indptr does not match the row bounds / nnz");
  for (size_t p = 1; p < rb.size(); ++p)
    if (rb[p] < rb[p - 1] || a.indptr[rb[p]] < a.indptr[rb[p - 1]])
      throw ConfigInvalid("simulator: row bounds and indptr must be non-decreasing");
  check_pos(cfg.prop_bytes, "property bytes");
  check_pos(cfg.client_units, "RIG client units");
  check_pos(cfg.server_units, "RIG server units");
  check_pos(cfg.lsq_entries, "LSQ entries");
  check_pos(cfg.switch_pipes, "switch pipes");
  check_pos(cfg.switch_ports, "switch ports");
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
  if (cfg.batch < -1) throw ConfigInvalid("simulator: batch must be > 0, 0 (one command) or -1 (auto)");
  for (int64_t b : {cfg.rx_buffer_bytes, cfg.tx_buffer_bytes})
    if (b < cfg.mtu) throw ConfigInvalid("simulator: SNIC Rx/Tx buffers must hold one MTU packet");
  hs_.validate();
  cycle_ps_ = snic_.ps(1);
  lookup_cycles_ = cfg.cache_latency_cycles;
  dram_cycles_ = snic_.up(cfg.dram_ps);
  horizon_ps_ = std::max(cfg.pcie_ps, cycle_ps_);
  const int64_t n_links = static_cast<int64_t>(topo.link_src.size());
  if (static_cast<int64_t>(topo.routes.size()) != nodes_ * nodes_ * topo.max_hops || topo.max_hops <= 0)
    throw ConfigInvalid("simulator: route table must be [hosts, hosts, max_hops]");
  for (int64_t l : topo.routes)
    if (l >= n_links) throw ConfigInvalid("simulator: route names an unknown link");
  for (int64_t l = 0; l < n_links; ++l)
    if (topo.link_src[l ^ 1] != topo.link_dst[l] || topo.link_dst[l ^ 1] != topo.link_src[l])
      throw ConfigInvalid("simulator: links must come in cable pairs (2k, 2k+1 = both directions)");
  const int64_t n_cols = map_.n_cols();
  auto check_cols = [&](const auto* idx) {
    for (int64_t i = 0; i < a.nnz; ++i)
      if (idx[i] < 0 || idx[i] >= n_cols)
        throw ConfigInvalid("simulator: column index " + std::to_string(idx[i]) + " out of range [0, " +
                                    std::to_string(n_cols) + ")");
  };
  if (a.narrow) check_cols(static_cast<const int32_t*>(a.indices));
  else check_cols(static_cast<const int64_t*>(a.indices));
  // Host attachment, the ToR -> host links and the switches' ports.
  const int64_t h = nodes_;
  std::vector<int64_t> host_sw(h, -1);
  down_link_.assign(h, -1);
  sw_hosts_.resize(topo.n_switches);
  out_port_.assign(n_links, -1);
  std::vector<int64_t> ports(topo.n_switches, 0);
  for (int64_t l = 0; l < n_links; ++l) {
    if (topo.link_src[l] < h && topo.link_dst[l] >= h) host_sw[topo.link_src[l]] = topo.link_dst[l] - h;
    if (topo.link_dst[l] < h && topo.link_src[l] >= h) down_link_[topo.link_dst[l]] = l;
    if (topo.link_src[l] >= h) out_port_[l] = ports[topo.link_src[l] - h]++;
  }
  for (int64_t x = 0; x < h; ++x) {
    if (host_sw[x] < 0 || down_link_[x] < 0) throw ConfigInvalid("simulator: a host has no switch link");
    sw_hosts_[host_sw[x]].push_back(x);
  }
  out_q_.resize(n_links);
  in_flight_.resize(n_links);
  link_free_.assign(n_links, 0);
  tx_armed_.assign(n_links, 0);
  deliver_ps_.resize(n_links);
  for (int64_t l = 0; l < n_links; ++l)
    deliver_ps_[l] = topo.link_latency_ps[l] + (topo.link_dst[l] >= h ? cfg.switch_ps : 0);
  link_blocked_.assign(n_links, 0);
  pool_.resize(h + topo.n_switches);
  for (int64_t v = 0; v < h + topo.n_switches; ++v) {
    pool_[v].avail = v < h ? cfg.rx_buffer_bytes : cfg.switch_buffer_bytes;
    pool_[v].credit_ps = kNever;
  }
  for (int64_t l = 0; l < n_links; ++l) {
    int64_t& c = pool_[topo.link_dst[l]].credit_ps;
    c = std::min(c, topo.link_latency_ps[l]);
  }
  for (auto& pl : pool_)
    if (pl.credit_ps == kNever) pl.credit_ps = 0;
  offs_.assign(2 * nodes_, 0);
  // Middle pipes of the extended switches (NetSparse Table 5: the ToRs).
  pipes_ = cfg.switch_pipes;
  ports_per_pipe_ = std::max<int64_t>(1, cfg.switch_ports / cfg.switch_pipes);
  ConcatConfig sc;
  sc.n_dests = nodes_;
  sc.mtu = cfg.mtu;
  sc.upper_bytes = cfg.upper_bytes;
  sc.delay_cycles = cfg.switch_delay_cycles < 0 ? -1 : cfg.switch_delay_cycles;
  pipe_.resize(topo.n_switches * pipes_);
  pipe_timer_.assign(pipe_.size(), kNever);
  pipe_free_.assign(pipe_.size(), 0);
  pipe_out_.resize(pipe_.size());
  if (cfg.switch_on)
    for (int64_t s = 0; s < topo.n_switches; ++s) {
      if (!topo.switch_is_tor[s]) continue;
      for (int64_t i = 0; i < pipes_; ++i) {
        auto& sp = pipe_[s * pipes_ + i];
        sp = std::make_unique<SwitchPipe>(CacheConfig{cfg.cache_bytes, cfg.cache_ways, cfg.cache_segment,
                                                      cfg.cache_max_line}, sc);
        sp->begin_kernel(cfg.prop_bytes);
        sp->concatenator().keep_log = true;
      }
    }
  // Nodes.
  int64_t max_owned = 1, max_idxs = 0;
  for (int64_t p = 0; p < nodes_; ++p) {
    max_owned = std::max(max_owned, cb[p + 1] - cb[p]);
    max_idxs = std::max(max_idxs, a.indptr[rb[p + 1]] - a.indptr[rb[p]]);
  }
  local_.assign(static_cast<size_t>(max_owned * cfg.prop_bytes), 0);
  halo_.assign(static_cast<size_t>(cfg.prop_bytes), 0);
  ConcatConfig nc = sc;
  nc.delay_cycles = !cfg.concat_nic ? 0 : (cfg.nic_delay_cycles < 0 ? -1 : cfg.nic_delay_cycles);
  const int64_t lines_per_filter = (n_cols + 8 * cfg.line_bytes - 1) / (8 * cfg.line_bytes);
  if (lines_per_filter > int64_t{UINT32_MAX})
    throw ConfigInvalid("simulator: the Idx Filter has more than 2^32 lines (too many columns)");
  // The LLC holds at most the node's filter lines: sized to them (never more than its capacity) it
  // hits and misses exactly like the full cache, with a fraction of the memory (set = line mod sets).
  const int64_t llc_lines = std::min(cfg.llc_bytes / cfg.line_bytes,
                                     (lines_per_filter + cfg.llc_ways - 1) / cfg.llc_ways * cfg.llc_ways);
  node_.resize(nodes_);
  res_.node_done_ps.assign(nodes_, 0);
  res_.nodes.resize(nodes_);
  res_.switches.resize(topo.n_switches);
  for (int64_t p = 0; p < nodes_; ++p) {
    auto nd = std::make_unique<Node>();
    nd->filter.reset(n_cols, false);  // timing only: every idx lands in halo slot 0
    RigContext& c = nd->ctx;
    c.node = static_cast<uint32_t>(p);
    c.map = &map_;
    c.row_start = cb[p];
    c.row_end = cb[p + 1];
    c.filter = &nd->filter;
    c.filter_on = cfg.filter;
    c.coalesce_on = cfg.coalesce;
    c.prop_bytes = static_cast<uint32_t>(cfg.prop_bytes);
    c.halo = halo_.data();
    c.n_slots = 1;
    c.local = local_.data();
    for (int64_t u = 0; u < cfg.client_units; ++u) nd->units.emplace_back(static_cast<uint16_t>(u), cfg.pending_entries);
    nd->cl.resize(cfg.client_units);
    for (auto& u : nd->cl) {
      u.lsq.assign(cfg.lsq_entries, 0);
      if (cfg.filter) {
        u.l1 = LineCache(cfg.l1_bytes / cfg.line_bytes, cfg.l1_ways);
        u.l2 = LineCache(cfg.l2_bytes / cfg.line_bytes, cfg.l2_ways);
      }
    }
    if (cfg.filter) nd->llc = LineCache(std::max<int64_t>(1, llc_lines), cfg.llc_ways);
    nd->servers.resize(cfg.server_units);
    nd->sv.resize(cfg.server_units);
    for (auto& s : nd->sv) s.lsq.assign(cfg.lsq_entries, 0);
    nd->nic = std::make_unique<Concatenator>(nc);
    nd->nic->begin(static_cast<uint32_t>(cfg.prop_bytes));
    nd->next_pos = a.indptr[rb[p]];
    nd->end = a.indptr[rb[p + 1]];
    const int64_t n = nd->end - nd->next_pos;
    nd->batch = cfg.batch > 0 ? cfg.batch
                : cfg.batch == 0 ? std::max<int64_t>(n, 1)
                                 : auto_batch_size(n, max_idxs, cfg.client_units);
    res_.nodes[p].batch = nd->batch;
    node_[p] = std::move(nd);
  }
  if (cfg.flit_layer) flit_setup();
}

// The latency in SNIC cycles of a client unit's Idx Filter load of `idx`'s bit: L1 and L2 of the unit,
// the SNIC's LLC, else DRAM; every level on the way keeps the line (LRU).
int64_t Sim::filter_load(Node& n, Client& u, uint64_t idx) {
  const uint32_t line = static_cast<uint32_t>(idx / static_cast<uint64_t>(8 * cfg_.line_bytes));
  NodeCounters& c = res_.nodes[n.ctx.node];
  if (u.l1.access(line)) {
    ++c.mem_l1;
    return cfg_.l1_cycles;
  }
  if (u.l2.access(line)) {
    ++c.mem_l2;
    return cfg_.l2_cycles;
  }
  if (n.llc.access(line)) {
    ++c.mem_llc;
    return cfg_.llc_cycles;
  }
  ++c.mem_dram;
  return dram_cycles_;
}

// The host hands unit `unit` the next command at t_host: MMIO write, then the unit's idx DMA.
void Sim::assign(uint32_t node, uint32_t unit, int64_t t_host) {
  Node& n = *node_[node];
  Client& u = n.cl[unit];
  const int64_t len = std::min(n.batch, n.end - n.next_pos);
  if (a_.narrow) n.units[unit].enqueue(static_cast<const int32_t*>(a_.indices) + n.next_pos, nullptr, len);
  else n.units[unit].enqueue(static_cast<const int64_t*>(a_.indices) + n.next_pos, nullptr, len);
  n.next_pos += len;
  const int64_t at_host = t_host + 2 * cfg_.pcie_ps;  // MMIO lands, the unit's DMA request reaches the host
  const int64_t start = std::max(at_host, n.dma_free);
  const double ser = static_cast<double>(len * cfg_.idx_bytes) * 1e12 / cfg_.pcie_bytes_per_s;
  n.dma_free = start + static_cast<int64_t>(std::ceil(ser - 1e-6));
  const int64_t ready = n.dma_free + cfg_.pcie_ps;  // the last idx byte reached the SNIC
  u.active = true;
  u.next_in = std::max(u.next_in, snic_.up(ready));
  u.busy = true;
  push(ready, kIssue, node, unit);
}

// The unit's command completed at t: its completion notification reaches the host one PCIe latency later.
void Sim::complete(uint32_t node, uint32_t unit, int64_t t) {
  Node& n = *node_[node];
  n.cl[unit].active = false;
  const int64_t seen = t + cfg_.pcie_ps;
  n.host_seen = std::max(n.host_seen, seen);
  if (n.next_pos < n.end) return assign(node, unit, seen);
  if (--n.active_units == 0) res_.node_done_ps[node] = n.host_seen;
}

void Sim::issue(uint32_t node, uint32_t unit, int64_t t) {
  Node& n = *node_[node];
  Client& u = n.cl[unit];
  RigClientUnit& ru = n.units[unit];
  if (n.tx_bytes >= cfg_.tx_buffer_bytes && ru.scanning()) {  // Tx full: no new PRs (busy stays set)
    n.tx_waiters.push_back(unit);
    ++res_.nodes[node].tx_waits;
    return;
  }
  const int64_t limit_ps = std::min(t + horizon_ps_, n.writes.empty() ? kNever : n.writes.front());
  Engine clk{*this, n, u, snic_.up(t), snic_.up(limit_ps)};
  int64_t pr_cycle = -1;
  ru.issue(
      n.ctx,
      [&](uint32_t dest, const PR& pr) {
        pr_cycle = std::max(u.decided, u.last_pr + 1);  // one read PR per cycle
        u.decided = u.last_pr = pr_cycle;
        u.pr = pr;
        u.pr_dest = dest;
        u.has_pr = true;
      },
      1, clk);
  if (pr_cycle >= 0) {  // the PR enters the NIC concatenator at its decision, in the next call's event
    push(snic_.ps(pr_cycle), kIssue, node, unit);
    return;
  }
  if (u.head && !ru.stalled()) {  // the call reached the horizon: go on from the idx it read
    push(snic_.ps(std::max(u.head_d, clk.limit)), kIssue, node, unit);
    return;
  }
  u.busy = false;  // stalled or waiting for responses: a response write wakes the unit
  if (u.active && ru.commands_done() == ru.commands_enqueued()) complete(node, unit, std::max(t, snic_.ps(u.decided)));
}

void Sim::write_back(uint32_t p, int64_t t) {
  Packet& k = pkts_[p];
  const uint32_t host = k.dst;
  Node& n = *node_[host];
  if (n.writes.empty() || n.writes.front() != t) throw std::logic_error("simulator: response writes out of order");
  n.writes.pop_front();
  const PacketView v = decode_packet(k.bytes.data(), static_cast<int64_t>(k.bytes.size()),
                                     cfg_.mtu - cfg_.upper_bytes, false);
  for (int64_t i = 0; i < v.n_prs; ++i) {
    const PR pr = v.pr(i);
    if (pr.src != host || pr.src_tid >= cfg_.client_units)
      throw std::logic_error("simulator: response delivered to the wrong node or unit");
    n.units[pr.src_tid].on_response(n.ctx, pr, v.payload(i));
    Client& u = n.cl[pr.src_tid];
    if (!u.busy) {  // wake an idle unit: it may resume, finish its command, or complete it
      u.busy = true;
      push(t, kIssue, host, pr.src_tid);
    }
  }
  release(host, k.wire, t);  // the packet leaves the Rx buffer
  free_packet(p);
}

// Read packets waiting in the Rx buffer go to the server unit free first, while one is free and the
// Tx buffer has room.
void Sim::serve_ready(uint32_t host, int64_t t) {
  Node& n = *node_[host];
  while (!n.rx_wait.empty()) {
    if (n.tx_bytes >= cfg_.tx_buffer_bytes) {
      n.serve_on_drain = true;
      return;
    }
    int64_t first = kNever;
    for (const Server& s : n.sv) first = std::min(first, s.free);
    if (first > t) return arm_serve(host, first);
    const uint32_t p = n.rx_wait.front();
    n.rx_wait.pop_front();
    serve(host, p, t);
  }
}

void Sim::arm_serve(uint32_t host, int64_t t) {
  Node& n = *node_[host];
  if (t < n.serve_at) {
    n.serve_at = t;
    push(t, kServe, host);
  }
}

void Sim::serve(uint32_t host, uint32_t p, int64_t t) {
  Node& n = *node_[host];
  uint32_t u = 0;
  for (uint32_t i = 1; i < n.sv.size(); ++i)
    if (n.sv[i].free < n.sv[u].free) u = i;
  Server& s = n.sv[u];
  Packet& k = pkts_[p];
  const PacketView v = decode_packet(k.bytes.data(), static_cast<int64_t>(k.bytes.size()),
                                     cfg_.mtu - cfg_.upper_bytes, false);
  n.servers[u].serve(n.ctx, v, [&](uint32_t dest, const PR& pr, const uint8_t*) {
    // One property read per SNIC cycle, at most lsq_entries PCIe reads in flight (Table 5 LSQ).
    int64_t start = std::max(t, s.free) + cycle_ps_;
    int64_t& slot = s.lsq[s.lsq_pos];
    start = std::max(start, slot);
    s.free = start;
    slot = start + 2 * cfg_.pcie_ps;
    s.lsq_pos = s.lsq_pos + 1 == s.lsq.size() ? 0 : s.lsq_pos + 1;
    if (dest != pr.src) throw std::logic_error("simulator: a response must go back to its requester");
    if (!s.q.empty() && slot <= s.q.back().t) throw std::logic_error("simulator: server unit push times must increase");
    const uint64_t seq = seq_++;
    if (s.q.empty()) push_seq(slot, seq, kNicPush, host, u);
    s.q.push_back(Response{slot, seq, pr});
  });
  res_.nodes[host].served += v.n_prs;
  release(host, k.wire, s.free);  // the packet leaves the Rx buffer once its last read started
  free_packet(p);
}

// The head response of server unit `unit` enters the NIC concatenator; the next one becomes the head.
void Sim::respond(uint32_t node, uint32_t unit, const Event& e) {
  auto& q = node_[node]->sv[unit].q;
  const Response r = q.front();
  if (r.seq != e.seq() || r.t != e.t) throw std::logic_error("simulator: response stream out of order");
  q.pop_front();
  if (!q.empty()) push_seq(q.front().t, q.front().seq, kNicPush, node, unit);
  nic_push(node, kResponseType, r.pr.src, r.pr, e.t);
}

// The host's Tx buffer went below its size: waiting client units and read packets go on.
void Sim::tx_drained(uint32_t host, int64_t t) {
  Node& n = *node_[host];
  for (uint32_t u : n.tx_waiters) push(t, kIssue, host, u);
  n.tx_waiters.clear();
  if (n.serve_on_drain) {
    n.serve_on_drain = false;
    arm_serve(host, t);
  }
}

// A packet from a concatenator's output; `whole` is its stream when the packet is all of it, then the
// bytes move into the packet (buffer swap, no copy) and the stream gets the recycled buffer.
uint32_t Sim::make_packet(const PacketView& v, std::vector<uint8_t>* whole) {
  uint32_t p;
  if (!free_.empty()) {
    p = free_.back();
    free_.pop_back();
  } else {
    p = static_cast<uint32_t>(pkts_.size());
    pkts_.emplace_back();
  }
  Packet& k = pkts_[p];
  if (whole) {
    k.bytes.swap(*whole);
    whole->clear();
  } else {
    const uint8_t* start = v.prs - kConcatHeaderBytes;
    k.bytes.assign(start, start + v.bytes);
  }
  k.type = v.type;
  k.n_prs = v.n_prs;
  k.dst = v.dest;
  const ByteCount b = packet_bytes(hs_, v.n_prs, v.type == kResponseType, cfg_.prop_bytes);
  k.header = b.header;
  k.payload = b.payload;
  k.wire = b.total();
  k.hop = 0;
  k.at = -1;
  k.route_src = -1;
  res_.max_packet_wire = std::max(res_.max_packet_wire, k.wire);
  return p;
}

// Hands every packet the concatenator flushed since the last call to f (as a packet id), in flush order.
template <class F>
void Sim::take(Concatenator& c, F&& f) {
  auto& log = c.log();
  if (log.empty()) return;
  touched_.clear();
  for (const PacketRecord& r : log) {
    const int64_t q = static_cast<int64_t>(r.type) * nodes_ + r.dest;
    auto& s = c.stream(r.type, r.dest);
    if (offs_[q] == 0) touched_.push_back(q);
    const PacketView v = decode_packet(s.data() + offs_[q], static_cast<int64_t>(s.size()) - offs_[q],
                                       c.max_packet_bytes(), true);
    const bool whole = offs_[q] == 0 && v.bytes == static_cast<int64_t>(s.size());
    offs_[q] += v.bytes;
    f(make_packet(v, whole ? &s : nullptr));
  }
  for (int64_t q : touched_) {
    c.stream(static_cast<uint16_t>(q / nodes_), static_cast<uint32_t>(q % nodes_)).clear();
    offs_[q] = 0;
  }
  log.clear();
}

void Sim::nic_push(uint32_t node, uint16_t type, uint32_t dest, const PR& pr, int64_t t) {
  Node& n = *node_[node];
  const uint8_t* payload = type == kResponseType ? local_.data() : nullptr;
  n.nic->push(type, dest, pr, payload, snic_.cycle(t));
  nic_send(node, t);
  arm_nic(node, t);
}

// Sends every packet the node's NIC concatenator flushed into the Tx buffer and onto the uplink.
void Sim::nic_send(uint32_t node, int64_t t) {
  Node& n = *node_[node];
  take(*n.nic, [&](uint32_t p) {
    Packet& k = pkts_[p];
    k.route_src = node;
    NodeCounters& nc = res_.nodes[node];
    ++nc.packets_tx;
    nc.prs_tx += k.n_prs;
    nc.header_tx += k.header;
    nc.payload_tx += k.payload;
    nc.wire_tx += k.wire;
    n.tx_bytes += k.wire;
    nc.tx_peak = std::max(nc.tx_peak, n.tx_bytes);
    enqueue(route(node, k.dst, 0), p, t);
  });
}

void Sim::arm_nic(uint32_t node, int64_t t) {
  Node& n = *node_[node];
  const int64_t e = n.nic->next_expiration();
  if (e == INT64_MAX) return;
  const int64_t at = std::max(t, snic_.ps(e));
  if (at < n.timer) {
    n.timer = at;
    push(at, kNicTimer, node);
  }
}

void Sim::arm_switch(uint32_t pipe, int64_t t) {
  const int64_t e = pipe_[pipe]->concatenator().next_expiration();
  if (e == INT64_MAX) return;
  const int64_t at = std::max(t, sw_.ps(e));
  if (at < pipe_timer_[pipe]) {
    pipe_timer_[pipe] = at;
    push(at, kSwitchTimer, pipe);
  }
}

void Sim::enqueue(int64_t link, uint32_t p, int64_t t) {
  if (link < 0) throw std::logic_error("simulator: packet routed past the end of its path");
  out_q_[link].push_back(p);
  try_start(link, t);
}

void Sim::occupy(int64_t v, int64_t bytes) {
  Pool& pl = pool_[v];
  pl.avail -= bytes;
  pl.used += bytes;
  pl.peak = std::max(pl.peak, pl.used);
}

// `bytes` leave vertex v's buffer at `at` (maybe later than now); the senders see the credit one link
// latency after that.
void Sim::release(int64_t v, int64_t bytes, int64_t at) {
  Pool& pl = pool_[v];
  pl.used -= bytes;
  const int64_t seen = at + pl.credit_ps;
  auto it = pl.returns.end();
  while (it != pl.returns.begin() && std::prev(it)->first > seen) --it;
  pl.returns.insert(it, {seen, bytes});
  if (!pl.blocked.empty() && seen < pl.armed) {
    pl.armed = seen;
    push(seen, kCredit, static_cast<uint32_t>(v));
  }
}

void Sim::refresh(Pool& pl, int64_t t) {
  while (!pl.returns.empty() && pl.returns.front().first <= t) {
    pl.avail += pl.returns.front().second;
    pl.returns.pop_front();
  }
}

// Whether link may start a packet of `wire` bytes now. Links into and out of hosts wait for credit
// (lossless); switch -> switch links never wait (see the top of the file).
bool Sim::credit(int64_t link, int64_t wire, int64_t t) {
  const int64_t v = topo_.link_dst[link];
  if (v >= nodes_ && topo_.link_src[link] >= nodes_) return true;
  Pool& pl = pool_[v];
  refresh(pl, t);
  if (pl.avail >= wire) return true;
  if (!link_blocked_[link]) {
    link_blocked_[link] = 1;
    pl.blocked.push_back(link);
    if (v < nodes_) ++res_.nodes[v].credit_waits;
    else ++res_.switches[v - nodes_].credit_waits;
  }
  if (!pl.returns.empty() && pl.returns.front().first < pl.armed) {
    pl.armed = pl.returns.front().first;
    push(pl.armed, kCredit, static_cast<uint32_t>(v));
  }
  return false;
}

void Sim::retry_blocked(int64_t v, int64_t t) {
  Pool& pl = pool_[v];
  pl.armed = kNever;
  std::vector<int64_t> links;
  links.swap(pl.blocked);
  for (int64_t l : links) link_blocked_[l] = 0;
  for (int64_t l : links) try_start(l, t);
}

void Sim::try_start(int64_t link, int64_t t) {
  if (!flit_slot_.empty() && flit_slot_[link] >= 0) return flit_start(link, t);
  if (out_q_[link].empty()) return;
  if (link_free_[link] > t) {  // a packet is on the wire: look again when it is out (one event, not per packet)
    if (!tx_armed_[link]) {
      tx_armed_[link] = 1;
      push(link_free_[link], kTxDone, static_cast<uint32_t>(link));
    }
    return;
  }
  const uint32_t p = out_q_[link].front();
  const int64_t wire = pkts_[p].wire;
  if (!credit(link, wire, t)) return;
  leave_queue(link, t);
  const double ser = static_cast<double>(wire) * 1e12 / topo_.link_bytes_per_s[link];
  link_free_[link] = t + static_cast<int64_t>(std::ceil(ser - 1e-6));
  // A switch has the packet switch latency after its last bit arrived (store-and-forward).
  stream_push(in_flight_[link], link_free_[link] + deliver_ps_[link], kLinkArrive, static_cast<uint32_t>(link), p);
  if (!out_q_[link].empty() && !tx_armed_[link]) {  // the next packet starts when this one is out
    tx_armed_[link] = 1;
    push(link_free_[link], kTxDone, static_cast<uint32_t>(link));
  }
}

// The head packet of link's queue starts on the link: it leaves the buffer it was in (a switch's, or
// the source host's Tx buffer) and takes room in the next vertex's buffer.
void Sim::leave_queue(int64_t link, int64_t t) {
  const uint32_t p = out_q_[link].front();
  out_q_[link].pop_front();
  Packet& k = pkts_[p];
  const int64_t src = topo_.link_src[link];
  if (k.at >= 0) release(k.at, k.wire, t);
  if (src < nodes_) {
    Node& n = *node_[src];
    n.tx_bytes -= k.wire;
    if (n.tx_bytes < cfg_.tx_buffer_bytes && (!n.tx_waiters.empty() || n.serve_on_drain))
      tx_drained(static_cast<uint32_t>(src), t);
  }
  k.at = topo_.link_dst[link];
  occupy(k.at, k.wire);
  if (k.at < nodes_) {
    NodeCounters& nc = res_.nodes[k.at];
    nc.rx_peak = std::max(nc.rx_peak, pool_[k.at].used);
  } else {
    SwitchCounters& sc = res_.switches[k.at - nodes_];
    sc.buffer_peak = std::max(sc.buffer_peak, pool_[k.at].used);
  }
}

void Sim::arrive(uint32_t p, int64_t link, int64_t t) {
  const int64_t v = topo_.link_dst[link];
  if (v < nodes_) return host_receive(static_cast<uint32_t>(v), p, t);
  const int64_t s = v - nodes_;
  ++res_.switches[s].packets_in;
  Packet& k = pkts_[p];
  if (!pipe_[s * pipes_]) {  // a plain switch forwards the packet on its route
    ++k.hop;
    return enqueue(k.route_src < 0 ? down_link_[k.dst] : route(k.route_src, k.dst, k.hop), p, t);
  }
  // Extended switch: the packet's PRs go through one middle pipe, one per switch cycle, each entering
  // the pipe's concatenator after the cache lookup.
  const int64_t pipe = s * pipes_ + pipe_of(s, k, link);
  const int64_t in = sw_.cycle(t);
  const int64_t start = std::max(in, pipe_free_[pipe]);
  pipe_free_[pipe] = start + k.n_prs;
  SwitchCounters& sc = res_.switches[s];
  sc.pipe_prs += k.n_prs;
  sc.pipe_wait_cycles += start - in;
  stream_push(pipe_out_[pipe], sw_.ps(start + k.n_prs - 1 + lookup_cycles_), kSwitchDone, static_cast<uint32_t>(pipe), p);
}

// The middle pipe of a packet at extended switch s: a read's egress port, a response's ingress port.
int64_t Sim::pipe_of(int64_t s, const Packet& k, int64_t in_link) const {
  int64_t port;
  if (k.type == kResponseType) {
    port = out_port_[in_link ^ 1];
  } else {
    const int64_t out = k.route_src < 0 ? down_link_[k.dst] : route(k.route_src, k.dst, k.hop + 1);
    if (out < 0 || topo_.link_src[out] != nodes_ + s) throw std::logic_error("simulator: read packet off its route");
    port = out_port_[out];
  }
  return std::min(port / ports_per_pipe_, pipes_ - 1);
}

void Sim::host_receive(uint32_t host, uint32_t p, int64_t t) {
  Packet& k = pkts_[p];
  NodeCounters& nc = res_.nodes[host];
  ++nc.packets_rx;
  nc.header_rx += k.header;
  nc.payload_rx += k.payload;
  nc.wire_rx += k.wire;
  Node& n = *node_[host];
  if (k.type == kResponseType) {
    n.writes.push_back(t + cfg_.pcie_ps);
    push(t + cfg_.pcie_ps, kWrite, p, host);
    return;
  }
  n.rx_wait.push_back(p);
  serve_ready(host, t);
  if (!n.rx_wait.empty()) ++nc.rx_waits;  // FIFO: if anything still waits, this packet does
}

void Sim::run_pipe(uint32_t pipe, uint32_t p, int64_t t) {
  const int64_t s = pipe / pipes_;
  Packet& k = pkts_[p];
  release(nodes_ + s, k.wire, t);  // the pipe consumed the packet
  SwitchPipe& sp = *pipe_[pipe];
  const SwitchPipeCounters before = sp.counters;
  sp.process(k.bytes.data(), static_cast<int64_t>(k.bytes.size()), std::max(sw_.cycle(t), sp.concatenator().now()));
  SwitchCounters& sc = res_.switches[s];
  sc.read_lookups += sp.counters.read_prs - before.read_prs;
  sc.read_hits += sp.counters.hits - before.hits;
  sc.inserts += sp.counters.inserted - before.inserted;
  free_packet(p);
  take(sp.concatenator(), [&](uint32_t q) { switch_out(s, q, t); });
  arm_switch(pipe, t);
}

// A packet made by a pipe of switch s takes room in the switch's buffer and follows the route of its
// first PR: from the requester (read) or the property's owner (response).
void Sim::switch_out(int64_t s, uint32_t p, int64_t t) {
  Packet& k = pkts_[p];
  ++res_.switches[s].packets_out;
  k.at = nodes_ + s;
  occupy(k.at, k.wire);
  SwitchCounters& sc = res_.switches[s];
  sc.buffer_peak = std::max(sc.buffer_peak, pool_[k.at].used);
  if (topo_.link_src[down_link_[k.dst]] == nodes_ + s) {  // the destination hangs off this switch
    k.route_src = -1;
    return enqueue(down_link_[k.dst], p, t);
  }
  const PR first =
      decode_packet(k.bytes.data(), static_cast<int64_t>(k.bytes.size()), cfg_.mtu - cfg_.upper_bytes, false).pr(0);
  int64_t rep = k.type == kResponseType ? map_.owner(first.idx) : static_cast<int64_t>(first.src);
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t hop = 0; hop < topo_.max_hops; ++hop) {
      const int64_t l = route(rep, k.dst, hop);
      if (l >= 0 && topo_.link_src[l] == nodes_ + s) {
        k.route_src = rep;
        k.hop = hop;
        return enqueue(l, p, t);
      }
    }
    rep = sw_hosts_[s].front();  // the first PR's route does not pass here: a local host's route
  }
  throw std::logic_error("simulator: no route from a switch pipe to the packet's destination");
}

void Sim::drain_all(int64_t t) {
  // Infinite concatenation delays: nothing else can happen, so flush every open queue (end of round).
  ++res_.drains;
  for (int64_t x = 0; x < nodes_; ++x) {
    node_[x]->nic->flush_all(std::max(snic_.cycle(t), node_[x]->nic->now()));
    nic_send(static_cast<uint32_t>(x), t);
  }
  for (size_t i = 0; i < pipe_.size(); ++i)
    if (pipe_[i]) {
      pipe_[i]->flush_all(std::max(sw_.cycle(t), pipe_[i]->concatenator().now()));
      const int64_t s = static_cast<int64_t>(i) / pipes_;
      take(pipe_[i]->concatenator(), [&](uint32_t p) { switch_out(s, p, t); });
    }
}

void Sim::handle(const Event& e) {
  switch (e.kind()) {
    case kIssue: {
      Client& u = node_[e.a]->cl[e.b];
      if (u.has_pr) {  // the fused NIC push of the PR issued at this time counts as its own event
        u.has_pr = false;
        ++res_.events;
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
      n.nic->advance(std::max(snic_.cycle(e.t), n.nic->now()));
      nic_send(e.a, e.t);
      arm_nic(e.a, e.t);
      break;
    }
    case kSwitchTimer: {
      if (pipe_timer_[e.a] != e.t) break;
      pipe_timer_[e.a] = kNever;
      SwitchPipe& sp = *pipe_[e.a];
      sp.advance(std::max(sw_.cycle(e.t), sp.concatenator().now()));
      const int64_t s = e.a / pipes_;
      take(sp.concatenator(), [&](uint32_t p) { switch_out(s, p, e.t); });
      arm_switch(e.a, e.t);
      break;
    }
    case kTxDone:
      tx_armed_[e.a] = 0;
      try_start(e.a, e.t);
      break;
    case kArrive: arrive(e.a, e.b, e.t); break;
    case kSwitchDone: run_pipe(e.a, stream_pop(pipe_out_[e.a], e), e.t); break;
    case kLinkArrive: arrive(stream_pop(in_flight_[e.a], e), e.a, e.t); break;
    case kServe: {
      Node& n = *node_[e.a];
      if (n.serve_at != e.t) break;
      n.serve_at = kNever;
      serve_ready(e.a, e.t);
      break;
    }
    case kCredit:
      if (pool_[e.a].armed != e.t) break;
      retry_blocked(e.a, e.t);
      break;
    case kFlitTick: {
      const int64_t i = flit_slot_[e.a];
      if (flit_armed_[i] != e.t) break;  // superseded by an earlier tick
      flit_armed_[i] = kNever;
      flit_tick(e.a, e.t);
      break;
    }
    case kWrite: write_back(e.a, e.t); break;
    default: throw std::logic_error("simulator: unknown event");
  }
}

SimResult Sim::run() {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t p = 0; p < nodes_; ++p) {  // the host hands a command to every client unit it can
    Node& n = *node_[p];
    for (int64_t u = 0; u < cfg_.client_units && n.next_pos < n.end; ++u) {
      ++n.active_units;
      assign(static_cast<uint32_t>(p), static_cast<uint32_t>(u), 0);
    }
  }
  int64_t now = 0;
  auto running = [&] {
    for (const auto& n : node_)
      if (n->active_units > 0) return true;
    return false;
  };
  for (;;) {
    while (!heap_.empty()) {
      res_.max_queue = std::max(res_.max_queue, static_cast<int64_t>(heap_.size()));
      const Event e = heap_.pop();
      now = e.t;
      ++res_.events;
      ++res_.events_by_kind[e.kind()];
      handle(e);
    }
    if (!running()) break;
    drain_all(now);
    if (heap_.empty()) throw std::logic_error("simulator: deadlock, nodes cannot finish");
  }
  for (int64_t p = 0; p < nodes_; ++p) {
    RigCounters rc;
    for (const auto& u : node_[p]->units) rc.add(u.counters);
    NodeCounters& nc = res_.nodes[p];
    nc.idxs = rc.idxs;
    nc.local = rc.local;
    nc.filtered = rc.filtered;
    nc.coalesced = rc.coalesced;
    nc.read_prs = rc.prs;
    nc.responses = rc.responses;
    nc.stalls = rc.stalls;
    nc.commands = rc.commands;
  }
  // Active nodes over time: a step down at every node's completion (ties in node order).
  std::vector<int64_t> order(nodes_);
  for (int64_t p = 0; p < nodes_; ++p) order[p] = p;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return res_.node_done_ps[x] < res_.node_done_ps[y]; });
  res_.active_t_ps.push_back(0);
  res_.active_count.push_back(nodes_);
  for (int64_t i = 0; i < nodes_; ++i) {
    res_.active_t_ps.push_back(res_.node_done_ps[order[i]]);
    res_.active_count.push_back(nodes_ - 1 - i);
  }
  flit_finish();
  res_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::move(res_);
}

// ---- flit layer (NetCrafter, issue 7) ----

// The flit layer covers every switch -> switch link (ToR <-> spine in a leaf-spine: the inter-rack links).
void Sim::flit_setup() {
  cfg_.flit.validate();
  const int64_t n_links = static_cast<int64_t>(topo_.link_src.size());
  flit_slot_.assign(n_links, -1);
  for (int64_t l = 0; l < n_links; ++l) {
    if (topo_.link_src[l] < nodes_ || topo_.link_dst[l] < nodes_) continue;
    flit_slot_[l] = static_cast<int64_t>(res_.flit_links.size());
    FlitLinkResult r;
    r.link = l;
    r.flit_ps = static_cast<double>(cfg_.flit.flit_bytes) * 1e12 / topo_.link_bytes_per_s[l];
    res_.flit_links.push_back(r);
    flit_state_.emplace_back(cfg_.flit);
    // one flit per cycle: the flit clock runs at line rate / flit bytes
    flit_clock_.push_back(Clock{topo_.link_bytes_per_s[l] / static_cast<double>(cfg_.flit.flit_bytes) / 1e9});
  }
  flit_ids_.resize(res_.flit_links.size());
  flit_armed_.assign(res_.flit_links.size(), kNever);
}

// Flit link (closed loop): every queued packet enters the flit unit's egress queue at once (so
// same-destination packets queued behind each other can be stitched; switch -> switch links never wait
// for credit); the unit decides when each packet's last flit leaves, and a tick event at its
// next_event() collects them.
void Sim::flit_start(int64_t link, int64_t t) {
  const int64_t i = flit_slot_[link];
  FlitLinkState& st = flit_state_[i];
  const Clock& ck = flit_clock_[i];
  st.advance(ck.cycle(t));  // the link runs up to now before anything new arrives
  // a packet enters at the first flit-cycle boundary at or after now (it cannot start before it arrived)
  const int64_t cyc = ck.up(t);
  auto& q = out_q_[link];
  while (!q.empty()) {
    const uint32_t p = q.front();
    leave_queue(link, t);
    const Packet& k = pkts_[p];
    st.push(FlitPacket{cyc, k.dst, k.header, k.payload, -1, k.type == kResponseType ? 1 : 0});
    flit_ids_[i].push_back(p);
    res_.flit_links[i].packet_bytes += k.wire;
  }
  flit_tick(link, t);
}

// Collects the packets whose last flit has left by now (they arrive link latency after it) and arms
// the next tick.
void Sim::flit_tick(int64_t link, int64_t t) {
  const int64_t i = flit_slot_[link];
  FlitLinkState& st = flit_state_[i];
  const Clock& ck = flit_clock_[i];
  st.advance(ck.cycle(t));
  FlitLinkResult& r = res_.flit_links[i];
  for (const auto& [id, done] : st.completed()) {
    const int64_t end = ck.ps(done);
    r.flit_finish_ps = std::max(r.flit_finish_ps, end);
    push(std::max(t, end + deliver_ps_[link]), kArrive, flit_ids_[i][id], static_cast<uint32_t>(link));
  }
  st.completed().clear();
  const int64_t e = st.next_event();
  if (e == INT64_MAX) return;
  const int64_t at = std::max(t, ck.ps(e));
  if (at < flit_armed_[i]) {
    flit_armed_[i] = at;
    push(at, kFlitTick, static_cast<uint32_t>(link));
  }
}

void Sim::flit_finish() {
  for (size_t i = 0; i < flit_state_.size(); ++i) res_.flit_links[i].stats = flit_state_[i].stats();
}

}  // namespace

SimResult run(const Csr& a, const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds,
              const SimConfig& cfg, const Topo& topo) {
  Sim s(a, row_bounds, col_bounds, cfg, topo);
  return s.run();
}

}  // namespace netsparse::sim
