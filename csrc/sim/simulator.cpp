// Packet-level discrete-event simulator of NetSparse (issue 4 point 2); design in docs/simulator.md.
//
// Timing rules (the same as hw_models/analytic.py, so a lone PR reproduces it):
//   * a RIG client unit issues at most one read PR per SNIC cycle; the PR enters the NIC
//     concatenator one cycle after the issue decision;
//   * NIC and ToR concatenators flush full or expired queues (their own rule, issue-3 unit);
//   * a link serialises one packet at a time (Table 5 wire bytes / line rate) and starts a packet only
//     when the downstream input buffer has room for it (credit flow control, lossless); the last bit
//     arrives link latency later (store-and-forward);
//   * a switch forwards after switch latency; an extended ToR (switch mechanism on) instead runs the
//     switch pipe after switch latency + property-cache lookup latency;
//   * a server unit reads one property per SNIC cycle over PCIe (2 x one-way latency), at most
//     lsq_entries reads in flight, then pushes the response into the NIC concatenator;
//   * a response packet is written to host memory one PCIe latency after arrival, then the client
//     unit's on_response frees its Pending PR Table entries.
// A node is done when every one of its client units has finished its RIG commands.
#include "sim/simulator.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <algorithm>
#include <stdexcept>

#include "units/concatenator.h"
#include "units/flit_link.h"
#include "units/header_model.h"
#include "units/rig_unit.h"
#include "units/switch_pipe.h"

namespace netsparse::sim {
using namespace netsparse::units;

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

enum Kind : uint8_t { kIssue, kNicPush, kNicTimer, kSwitchTimer, kTxDone, kArrive, kSwitchDone, kForward, kWrite, kPipeResume, kFlitTick };

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

// A server unit's response waiting for its PCIe read to complete. Its push time and seq are fixed
// when the read is scheduled; a server unit's push times strictly increase (one read per cycle), so
// each unit's responses form a FIFO and only the head sits in the event heap (k-way merge: the same
// (t, seq) order as one heap event per response).
struct Response {
  int64_t t;
  uint64_t seq;
  PR pr;
};

// The read PR a client unit issued this cycle; it enters the NIC concatenator one cycle later, in
// the same event as the unit's next issue decision (that event's seq directly follows the push's,
// so nothing can be ordered between them: fusing them keeps the order exact).
struct IssuedPR {
  PR pr;
  uint32_t dest = 0;
  bool has = false;
};

struct Packet {
  std::vector<uint8_t> bytes;  // Fig. 6 encoding, as the units produce and consume it
  uint16_t type = 0;
  uint32_t n_prs = 0, dst = 0;
  int64_t wire = 0, header = 0, payload = 0;
  int64_t route_src = -1;  // host whose path table row routes it; -1 = direct ToR -> host link
  int32_t hop = 0;
  int64_t held = -1;  // link whose downstream input buffer holds the packet
  int32_t pipe = -1;  // extended switch whose pipe output buffer holds it until it starts on its link
};

// Integer cycle <-> picosecond conversion of one clock domain (monotone, exact round trip).
struct Clock {
  double ghz;
  int64_t cycle(int64_t ps) const { return static_cast<int64_t>(std::floor(static_cast<long double>(ps) * ghz / 1000.0L)); }
  int64_t ps(int64_t cyc) const {
    int64_t p = static_cast<int64_t>(std::ceil(static_cast<long double>(cyc) * 1000.0L / ghz));
    while (cycle(p) < cyc) ++p;
    while (p > 0 && cycle(p - 1) >= cyc) --p;
    return p;
  }
};

struct Node {
  RigContext ctx;
  IdxFilter filter;
  std::vector<RigClientUnit> clients;
  std::vector<IssuedPR> issued;  // per client unit
  std::vector<uint8_t> busy, finished;
  std::vector<RigServerUnit> servers;
  std::vector<std::vector<int64_t>> lsq;  // completion time of the last lsq_entries reads, a ring
  std::vector<int64_t> lsq_pos, server_free;
  std::vector<std::deque<Response>> responses;  // per server unit, push times ascending
  std::unique_ptr<Concatenator> nic;
  int64_t timer = kNever;
  int64_t unfinished = 0, next_server = 0;
};

void check_pos(int64_t v, const char* name) {
  if (v <= 0) throw std::invalid_argument(std::string("simulator: ") + name + " must be > 0, got " + std::to_string(v));
}

class Sim {
 public:
  Sim(const std::vector<int64_t>& indptr, const int64_t* indices, int64_t nnz, const std::vector<int64_t>& rb,
      const std::vector<int64_t>& cb, const SimConfig& cfg, const Topo& topo);
  SimResult run();

 private:
  void push(int64_t t, uint32_t kind, uint32_t a, uint32_t b = 0) { push_seq(t, seq_++, kind, a, b); }
  void push_seq(int64_t t, uint64_t seq, uint32_t kind, uint32_t a, uint32_t b) {
    heap_.push(Event{t, seq << 4 | kind, a, b});
  }
  void handle(const Event& e);
  void issue(uint32_t node, uint32_t unit, int64_t t);
  void respond(uint32_t node, uint32_t unit, const Event& e);
  void nic_push(uint32_t node, uint16_t type, uint32_t dest, const PR& pr, int64_t t);
  void nic_send(uint32_t node, int64_t t);
  void arm_nic(uint32_t node, int64_t t);
  void arm_switch(uint32_t s, int64_t t);
  template <class F>
  void take(Concatenator& c, F&& f);
  uint32_t make_packet(const PacketView& v, std::vector<uint8_t>* whole);
  void free_packet(uint32_t p) { free_.push_back(p); }
  void enqueue(int64_t link, uint32_t p, int64_t t);
  void try_start(int64_t link, int64_t t);
  void arrive(uint32_t p, int64_t link, int64_t t);
  void host_receive(uint32_t host, uint32_t p, int64_t t);
  void switch_out(uint32_t s, uint32_t p, int64_t t);
  void pipe_in(uint32_t s, uint32_t p, int64_t t);
  void run_pipe(uint32_t s, uint32_t p, int64_t t);
  void pipe_resume(uint32_t s, int64_t t);
  void write_back(uint32_t p, int64_t t);
  int64_t route(int64_t src, int64_t dst, int32_t hop) const { return topo_.routes[(src * nodes_ + dst) * topo_.max_hops + hop]; }
  void drain_all(int64_t t);
  void flit_setup();
  void flit_start(int64_t link, int64_t t);
  void flit_tick(int64_t link, int64_t t);
  void flit_finish();
  int64_t leave_queue(int64_t link, int64_t t);

  const SimConfig cfg_;
  const Topo& topo_;
  int64_t nodes_;
  NodeMap map_;
  Clock snic_, sw_;
  int64_t cycle_ps_ = 0, lookup_ps_ = 0;  // one SNIC cycle; the property-cache lookup (switch clock)
  HeaderSizes hs_;
  std::vector<int64_t> zero_slots_;
  std::vector<uint8_t> local_;  // property values are irrelevant to timing: one zero array
  std::vector<uint8_t> halo_;   // one scratch halo row (prop_bytes) shared by all nodes
  std::vector<std::unique_ptr<Node>> node_;
  std::vector<std::unique_ptr<SwitchPipe>> pipe_;  // extended switches only
  std::vector<int64_t> sw_timer_;
  std::vector<int64_t> pipe_backlog_;                // bytes of pipe-made packets not yet on a link
  std::vector<std::deque<uint32_t>> pipe_blocked_;   // host packets waiting for pipe output room
  std::vector<uint8_t> resume_armed_;
  std::vector<std::vector<int64_t>> sw_hosts_;
  std::vector<int64_t> sw_rr_, down_link_;
  std::vector<std::deque<uint32_t>> out_q_;
  std::vector<uint8_t> link_busy_;
  std::vector<int64_t> credit_;
  std::vector<Packet> pkts_;
  std::vector<uint32_t> free_;
  std::vector<int64_t> offs_;
  std::vector<int64_t> touched_;
  EventQueue heap_;
  uint64_t seq_ = 0;
  int64_t running_ = 0;
  SimResult res_;
  // Flit layer: per link its slot in res_.flit_links or -1; per slot the flit unit's state, the
  // simulator packet of each flit-unit packet id, the flit clock and the armed tick.
  std::vector<int64_t> flit_slot_;
  std::vector<FlitLinkState> flit_state_;
  std::vector<std::vector<uint32_t>> flit_ids_;
  std::vector<Clock> flit_clock_;
  std::vector<int64_t> flit_armed_;
};

Sim::Sim(const std::vector<int64_t>& indptr, const int64_t* indices, int64_t nnz, const std::vector<int64_t>& rb,
         const std::vector<int64_t>& cb, const SimConfig& cfg, const Topo& topo)
    : cfg_(cfg), topo_(topo), nodes_(static_cast<int64_t>(rb.size()) - 1), map_(cb),
      snic_{cfg.snic_ghz}, sw_{cfg.switch_ghz}, hs_{cfg.upper_bytes, cfg.concat_bytes, cfg.pr_bytes} {
  if (nodes_ <= 0 || static_cast<int64_t>(cb.size()) != nodes_ + 1)
    throw std::invalid_argument("simulator: row and column bounds must name the same number of nodes");
  if (topo.n_hosts != nodes_)
    throw std::invalid_argument("simulator: topology has " + std::to_string(topo.n_hosts) + " hosts but the partition " +
                                std::to_string(nodes_) + " nodes");
  if (static_cast<int64_t>(indptr.size()) != rb.back() + 1 || indptr.back() != nnz)
    throw std::invalid_argument("simulator: indptr does not match the row bounds / nnz");
  check_pos(cfg.prop_bytes, "property bytes");
  check_pos(cfg.client_units, "RIG client units");
  check_pos(cfg.server_units, "RIG server units");
  check_pos(cfg.lsq_entries, "LSQ entries");
  check_pos(cfg.buffer_bytes, "buffer bytes");
  check_pos(cfg.pipe_buffer_bytes, "switch pipe buffer bytes");
  if (!(cfg.snic_ghz > 0) || !(cfg.switch_ghz > 0)) throw std::invalid_argument("simulator: clocks must be > 0 GHz");
  if (cfg.pcie_ps < 0 || cfg.switch_ps < 0 || cfg.cache_latency_cycles < 0)
    throw std::invalid_argument("simulator: latencies must be >= 0");
  hs_.validate();
  cycle_ps_ = snic_.ps(1);
  lookup_ps_ = sw_.ps(cfg.cache_latency_cycles);
  if (cfg.buffer_bytes < cfg.mtu) throw std::invalid_argument("simulator: buffer bytes must hold one MTU packet");
  const int64_t n_links = static_cast<int64_t>(topo.link_src.size());
  if (static_cast<int64_t>(topo.routes.size()) != nodes_ * nodes_ * topo.max_hops || topo.max_hops <= 0)
    throw std::invalid_argument("simulator: route table must be [hosts, hosts, max_hops]");
  for (int64_t l : topo.routes)
    if (l >= n_links) throw std::invalid_argument("simulator: route names an unknown link");
  for (int64_t i = 0; i < nnz; ++i)
    if (indices[i] < 0 || indices[i] >= map_.n_cols())
      throw std::invalid_argument("simulator: column index " + std::to_string(indices[i]) + " out of range");
  // Host attachment and the ToR -> host links, from the link list.
  const int64_t h = nodes_;
  std::vector<int64_t> host_sw(h, -1);
  down_link_.assign(h, -1);
  sw_hosts_.resize(topo.n_switches);
  for (int64_t l = 0; l < n_links; ++l) {
    if (topo.link_src[l] < h && topo.link_dst[l] >= h) host_sw[topo.link_src[l]] = topo.link_dst[l] - h;
    if (topo.link_dst[l] < h && topo.link_src[l] >= h) down_link_[topo.link_dst[l]] = l;
  }
  for (int64_t x = 0; x < h; ++x) {
    if (host_sw[x] < 0 || down_link_[x] < 0) throw std::invalid_argument("simulator: a host has no switch link");
    sw_hosts_[host_sw[x]].push_back(x);
  }
  sw_rr_.assign(topo.n_switches, 0);
  out_q_.resize(n_links);
  link_busy_.assign(n_links, 0);
  credit_.assign(n_links, cfg.buffer_bytes);
  offs_.assign(2 * nodes_, 0);
  // Switch pipes at extended switches (NetSparse Table 5: the ToRs).
  ConcatConfig sc;
  sc.n_dests = nodes_;
  sc.mtu = cfg.mtu;
  sc.upper_bytes = cfg.upper_bytes;
  sc.delay_cycles = cfg.switch_delay_cycles < 0 ? -1 : cfg.switch_delay_cycles;
  pipe_.resize(topo.n_switches);
  sw_timer_.assign(topo.n_switches, kNever);
  pipe_backlog_.assign(topo.n_switches, 0);
  pipe_blocked_.resize(topo.n_switches);
  resume_armed_.assign(topo.n_switches, 0);
  if (cfg.switch_on)
    for (int64_t s = 0; s < topo.n_switches; ++s)
      if (topo.switch_is_tor[s]) {
        pipe_[s] = std::make_unique<SwitchPipe>(
            CacheConfig{cfg.cache_bytes, cfg.cache_ways, cfg.cache_segment, cfg.cache_max_line}, sc);
        pipe_[s]->begin_kernel(cfg.prop_bytes);
        pipe_[s]->concatenator().keep_log = true;
      }
  // Nodes: RIG commands of `batch` nonzeros in CSR order, dealt round-robin to the client units.
  int64_t max_cmd = 1, max_owned = 1;
  for (int64_t p = 0; p < nodes_; ++p) {
    const int64_t n = indptr[rb[p + 1]] - indptr[rb[p]];
    max_cmd = std::max(max_cmd, cfg.batch > 0 ? std::min(cfg.batch, n) : n);
    max_owned = std::max(max_owned, cb[p + 1] - cb[p]);
  }
  zero_slots_.assign(max_cmd, 0);
  local_.assign(static_cast<size_t>(max_owned * cfg.prop_bytes), 0);
  halo_.assign(static_cast<size_t>(cfg.prop_bytes), 0);
  ConcatConfig nc = sc;
  nc.delay_cycles = !cfg.concat_nic ? 0 : (cfg.nic_delay_cycles < 0 ? -1 : cfg.nic_delay_cycles);
  node_.resize(nodes_);
  for (int64_t p = 0; p < nodes_; ++p) {
    auto nd = std::make_unique<Node>();
    nd->filter.reset(map_.n_cols(), false);  // timing only: every idx lands in halo slot 0
    RigContext& c = nd->ctx;
    c.node = static_cast<uint32_t>(p);
    c.map = &map_;
    c.row_start = cb[p];
    c.row_end = cb[p + 1];
    c.filter = &nd->filter;
    c.filter_on = cfg.filter;
    c.coalesce_on = cfg.coalesce;
    c.prop_bytes = static_cast<uint32_t>(cfg.prop_bytes);
    c.halo = halo_.data();  // timing only: every idx lands in one shared scratch slot
    c.n_slots = 1;
    c.local = local_.data();
    for (int64_t u = 0; u < cfg.client_units; ++u)
      nd->clients.emplace_back(static_cast<uint16_t>(u), cfg.pending_entries);
    nd->issued.resize(cfg.client_units);
    nd->busy.assign(cfg.client_units, 0);
    nd->finished.assign(cfg.client_units, 0);
    nd->servers.resize(cfg.server_units);
    nd->lsq.assign(cfg.server_units, std::vector<int64_t>(cfg.lsq_entries, 0));
    nd->lsq_pos.assign(cfg.server_units, 0);
    nd->server_free.assign(cfg.server_units, 0);
    nd->responses.resize(cfg.server_units);
    nd->nic = std::make_unique<Concatenator>(nc);
    nd->nic->begin(static_cast<uint32_t>(cfg.prop_bytes));
    const int64_t lo = indptr[rb[p]], hi = indptr[rb[p + 1]];
    const int64_t step = cfg.batch > 0 ? cfg.batch : std::max<int64_t>(hi - lo, 1);
    int64_t j = 0;
    for (int64_t s = lo; s < hi; s += step, ++j)
      nd->clients[j % cfg.client_units].enqueue(indices + s, zero_slots_.data(), std::min(step, hi - s));
    nd->unfinished = cfg.client_units;
    node_[p] = std::move(nd);
  }
  if (cfg.client_units > 65535) throw std::invalid_argument("simulator: at most 65535 RIG client units (u16 tid)");
  res_.node_done_ps.assign(nodes_, 0);
  res_.nodes.resize(nodes_);
  res_.switches.resize(topo.n_switches);
  if (cfg.flit_layer) flit_setup();
}

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

// A packet leaves link's output queue for the link (its downstream credit is taken): it leaves the
// switch pipe's output buffer if it was there. Returns the link whose input buffer held it (or -1).
int64_t Sim::leave_queue(int64_t link, int64_t t) {
  const uint32_t p = out_q_[link].front();
  Packet& k = pkts_[p];
  out_q_[link].pop_front();
  credit_[link] -= k.wire;
  const int64_t prev = k.held;
  k.held = link;
  if (k.pipe >= 0) {  // leaves the pipe's output buffer: blocked host packets may enter the pipe
    const int32_t s = k.pipe;
    k.pipe = -1;
    pipe_backlog_[s] -= k.wire;
    if (!pipe_blocked_[s].empty() && pipe_backlog_[s] < cfg_.pipe_buffer_bytes && !resume_armed_[s]) {
      resume_armed_[s] = 1;
      push(t, kPipeResume, static_cast<uint32_t>(s));
    }
  }
  return prev;
}

// Flit link (closed loop): every queued packet with downstream credit enters the flit unit's egress
// queue at once (so same-destination packets queued behind each other can be stitched); the unit
// decides when each packet's last flit leaves, and a tick event at its next_event() collects them.
void Sim::flit_start(int64_t link, int64_t t) {
  const int64_t i = flit_slot_[link];
  FlitLinkState& st = flit_state_[i];
  const Clock& ck = flit_clock_[i];
  st.advance(ck.cycle(t));  // the link runs up to now before anything new arrives
  // a packet enters at the first flit-cycle boundary at or after now (it cannot start before it arrived)
  const int64_t cyc = ck.cycle(t) + (ck.ps(ck.cycle(t)) < t ? 1 : 0);
  auto& q = out_q_[link];
  while (!q.empty() && credit_[link] >= pkts_[q.front()].wire) {
    const uint32_t p = q.front();
    const int64_t prev = leave_queue(link, t);
    const Packet& k = pkts_[p];
    st.push(FlitPacket{cyc, k.dst, k.header, k.payload, -1, k.type == kResponseType ? 1 : 0});
    flit_ids_[i].push_back(p);
    res_.flit_links[i].packet_bytes += k.wire;
    if (prev >= 0) {  // the packet left the previous hop's input buffer
      credit_[prev] += k.wire;
      try_start(prev, t);
    }
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
    push(std::max(t, end + topo_.link_latency_ps[link]), kArrive, flit_ids_[i][id], static_cast<uint32_t>(link));
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
  k.held = -1;
  k.pipe = -1;
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

// Sends every packet the node's NIC concatenator flushed onto the host's uplink.
void Sim::nic_send(uint32_t node, int64_t t) {
  take(*node_[node]->nic, [&](uint32_t p) {
    Packet& k = pkts_[p];
    k.route_src = node;
    NodeCounters& nc = res_.nodes[node];
    ++nc.packets_tx;
    nc.prs_tx += k.n_prs;
    nc.header_tx += k.header;
    nc.payload_tx += k.payload;
    nc.wire_tx += k.wire;
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

void Sim::arm_switch(uint32_t s, int64_t t) {
  const int64_t e = pipe_[s]->concatenator().next_expiration();
  if (e == INT64_MAX) return;
  const int64_t at = std::max(t, sw_.ps(e));
  if (at < sw_timer_[s]) {
    sw_timer_[s] = at;
    push(at, kSwitchTimer, s);
  }
}

void Sim::enqueue(int64_t link, uint32_t p, int64_t t) {
  if (link < 0) throw std::logic_error("simulator: packet routed past the end of its path");
  out_q_[link].push_back(p);
  try_start(link, t);
}

void Sim::try_start(int64_t link, int64_t t) {
  if (!flit_slot_.empty() && flit_slot_[link] >= 0) return flit_start(link, t);
  if (link_busy_[link] || out_q_[link].empty()) return;
  const uint32_t p = out_q_[link].front();
  Packet& k = pkts_[p];
  if (credit_[link] < k.wire) return;  // downstream buffer full: wait for its credit (lossless)
  link_busy_[link] = 1;
  const int64_t prev = leave_queue(link, t);
  const double ser = static_cast<double>(k.wire) * 1e12 / topo_.link_bytes_per_s[link];
  const int64_t ser_ps = static_cast<int64_t>(std::ceil(ser - 1e-6));
  push(t + ser_ps, kTxDone, static_cast<uint32_t>(link));
  push(t + ser_ps + topo_.link_latency_ps[link], kArrive, p, static_cast<uint32_t>(link));
  if (prev >= 0) {  // the packet left the previous hop's input buffer
    credit_[prev] += k.wire;
    try_start(prev, t);
  }
}

void Sim::arrive(uint32_t p, int64_t link, int64_t t) {
  const int64_t v = topo_.link_dst[link];
  if (v < nodes_) {
    Packet& k = pkts_[p];
    credit_[link] += k.wire;  // the NIC consumes packets at once
    k.held = -1;
    try_start(link, t);
    host_receive(static_cast<uint32_t>(v), p, t);
    return;
  }
  const uint32_t s = static_cast<uint32_t>(v - nodes_);
  ++res_.switches[s].packets_in;
  if (pipe_[s]) {
    push(t + cfg_.switch_ps + lookup_ps_, kSwitchDone, p, s);
  } else {
    push(t + cfg_.switch_ps, kForward, p);
  }
}

void Sim::host_receive(uint32_t host, uint32_t p, int64_t t) {
  Packet& k = pkts_[p];
  NodeCounters& nc = res_.nodes[host];
  ++nc.packets_rx;
  nc.header_rx += k.header;
  nc.payload_rx += k.payload;
  nc.wire_rx += k.wire;
  if (k.type == kResponseType) {
    push(t + cfg_.pcie_ps, kWrite, p, host);
    return;
  }
  Node& n = *node_[host];
  const int64_t u = n.next_server++ % cfg_.server_units;
  const PacketView v = decode_packet(k.bytes.data(), static_cast<int64_t>(k.bytes.size()),
                                     cfg_.mtu - cfg_.upper_bytes, false);
  const int64_t cyc = cycle_ps_;
  n.servers[u].serve(n.ctx, v, [&](uint32_t dest, const PR& pr, const uint8_t*) {
    // One property read per SNIC cycle, at most lsq_entries PCIe reads in flight (Table 5 LSQ).
    int64_t start = std::max(t, n.server_free[u]) + cyc;
    int64_t& slot = n.lsq[u][n.lsq_pos[u]];
    start = std::max(start, slot);
    n.server_free[u] = start;
    slot = start + 2 * cfg_.pcie_ps;
    n.lsq_pos[u] = (n.lsq_pos[u] + 1) % cfg_.lsq_entries;
    auto& q = n.responses[u];
    if (dest != pr.src) throw std::logic_error("simulator: a response must go back to its requester");
    if (!q.empty() && slot <= q.back().t) throw std::logic_error("simulator: server unit push times must increase");
    const uint64_t seq = seq_++;
    if (q.empty()) push_seq(slot, seq, kNicPush, host, static_cast<uint32_t>(u));
    q.push_back(Response{slot, seq, pr});
  });
  res_.nodes[host].served += v.n_prs;
  free_packet(p);
}

void Sim::write_back(uint32_t p, int64_t t) {
  Packet& k = pkts_[p];
  const uint32_t host = k.dst;
  Node& n = *node_[host];
  const PacketView v = decode_packet(k.bytes.data(), static_cast<int64_t>(k.bytes.size()),
                                     cfg_.mtu - cfg_.upper_bytes, false);
  for (int64_t i = 0; i < v.n_prs; ++i) {
    const PR pr = v.pr(i);
    if (pr.src != host || pr.src_tid >= cfg_.client_units)
      throw std::logic_error("simulator: response delivered to the wrong node or unit");
    n.clients[pr.src_tid].on_response(n.ctx, pr, v.payload(i));
    if (!n.busy[pr.src_tid]) {  // wake an idle unit: it may resume, start its next command, or finish
      n.busy[pr.src_tid] = 1;
      push(t, kIssue, host, pr.src_tid);
    }
  }
  free_packet(p);
}

void Sim::issue(uint32_t node, uint32_t unit, int64_t t) {
  Node& n = *node_[node];
  RigClientUnit& u = n.clients[unit];
  const int64_t before = u.counters.prs;
  IssuedPR& out = n.issued[unit];
  u.issue(n.ctx, [&](uint32_t dest, const PR& pr) { out = IssuedPR{pr, dest, true}; }, 1);
  if (u.counters.prs != before) {
    push(t + cycle_ps_, kIssue, node, unit);  // one PR per SNIC cycle; it reaches the NIC then too
    return;
  }
  n.busy[unit] = 0;
  if (u.finished() && !n.finished[unit]) {
    n.finished[unit] = 1;
    if (--n.unfinished == 0) {
      res_.node_done_ps[node] = t;
      --running_;
      res_.active_t_ps.push_back(t);
      res_.active_count.push_back(running_);
    }
  }
}

// The head response of server unit `unit` enters the NIC concatenator; the next one becomes the head.
void Sim::respond(uint32_t node, uint32_t unit, const Event& e) {
  auto& q = node_[node]->responses[unit];
  const Response r = q.front();
  if (r.seq != e.seq() || r.t != e.t) throw std::logic_error("simulator: response stream out of order");
  q.pop_front();
  if (!q.empty()) push_seq(q.front().t, q.front().seq, kNicPush, node, unit);
  nic_push(node, kResponseType, r.pr.src, r.pr, e.t);
}

void Sim::switch_out(uint32_t s, uint32_t p, int64_t t) {
  Packet& k = pkts_[p];
  ++res_.switches[s].packets_out;
  k.pipe = static_cast<int32_t>(s);
  pipe_backlog_[s] += k.wire;
  if (down_link_[k.dst] >= 0 && topo_.link_src[down_link_[k.dst]] == nodes_ + static_cast<int64_t>(s)) {
    enqueue(down_link_[k.dst], p, t);  // the destination hangs off this switch
    return;
  }
  // Leaves towards another switch: follow the path of one of this switch's hosts, taken round-robin
  // (deterministic spraying over the uplinks, as the topology's hash spreads flows).
  const auto& hosts = sw_hosts_[s];
  k.route_src = hosts[sw_rr_[s]++ % static_cast<int64_t>(hosts.size())];
  k.hop = 1;
  enqueue(route(k.route_src, k.dst, 1), p, t);
}

// A packet reaches an extended switch's pipe. Lossless bounded pipe output (issue 4: backpressure):
// while the pipe's output backlog (its packets not yet started on a link) is at least
// pipe_buffer_bytes, a packet from one of the switch's hosts waits in its input buffer, so its credit
// is not returned and the host's uplink stops. Packets from other switches always enter: a cycle
// of switches waiting on each other's pipes could deadlock, and their volume is bounded end to end
// by the requesters' Pending PR Tables.
void Sim::pipe_in(uint32_t s, uint32_t p, int64_t t) {
  const bool from_host = topo_.link_src[pkts_[p].held] < nodes_;
  if (from_host && (pipe_backlog_[s] >= cfg_.pipe_buffer_bytes || !pipe_blocked_[s].empty())) {
    pipe_blocked_[s].push_back(p);  // FIFO: a later host packet never overtakes a blocked one
    ++res_.switches[s].pipe_stalls;
    return;
  }
  run_pipe(s, p, t);
}

void Sim::pipe_resume(uint32_t s, int64_t t) {
  resume_armed_[s] = 0;
  auto& q = pipe_blocked_[s];
  while (!q.empty() && pipe_backlog_[s] < cfg_.pipe_buffer_bytes) {
    const uint32_t p = q.front();
    q.pop_front();
    run_pipe(s, p, t);
  }
}

void Sim::run_pipe(uint32_t s, uint32_t p, int64_t t) {
  Packet& k = pkts_[p];
  const int64_t held = k.held;
  credit_[held] += k.wire;  // the pipe consumed the packet: its input buffer space is free
  k.held = -1;
  SwitchPipe& sp = *pipe_[s];
  const SwitchPipeCounters before = sp.counters;
  sp.process(k.bytes.data(), static_cast<int64_t>(k.bytes.size()), std::max(sw_.cycle(t), sp.concatenator().now()));
  SwitchCounters& sc = res_.switches[s];
  sc.lookups += sp.counters.read_prs - before.read_prs;
  sc.hits += sp.counters.hits - before.hits;
  sc.inserted += sp.counters.inserted - before.inserted;
  free_packet(p);
  try_start(held, t);
  take(sp.concatenator(), [&](uint32_t q) { switch_out(s, q, t); });
  arm_switch(s, t);
}

void Sim::drain_all(int64_t t) {
  // Infinite concatenation delays: nothing else can happen, so flush every open queue (end of round).
  ++res_.drains;
  for (int64_t x = 0; x < nodes_; ++x) {
    node_[x]->nic->flush_all(std::max(snic_.cycle(t), node_[x]->nic->now()));
    nic_send(static_cast<uint32_t>(x), t);
  }
  for (size_t s = 0; s < pipe_.size(); ++s)
    if (pipe_[s]) {
      pipe_[s]->flush_all(std::max(sw_.cycle(t), pipe_[s]->concatenator().now()));
      take(pipe_[s]->concatenator(), [&](uint32_t p) { switch_out(static_cast<uint32_t>(s), p, t); });
    }
}

void Sim::handle(const Event& e) {
  switch (e.kind()) {
    case kIssue: {
      IssuedPR& pr = node_[e.a]->issued[e.b];
      if (pr.has) {  // the fused NIC push of the PR issued one cycle ago counts as its own event
        pr.has = false;
        ++res_.events;
        nic_push(e.a, kReadType, pr.dest, pr.pr, e.t);
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
      if (sw_timer_[e.a] != e.t) break;
      sw_timer_[e.a] = kNever;
      SwitchPipe& sp = *pipe_[e.a];
      sp.advance(std::max(sw_.cycle(e.t), sp.concatenator().now()));
      take(sp.concatenator(), [&](uint32_t p) { switch_out(e.a, p, e.t); });
      arm_switch(e.a, e.t);
      break;
    }
    case kTxDone:
      link_busy_[e.a] = 0;
      try_start(e.a, e.t);
      break;
    case kArrive: arrive(e.a, e.b, e.t); break;
    case kForward: {
      Packet& k = pkts_[e.a];
      ++k.hop;
      enqueue(k.route_src < 0 ? down_link_[k.dst] : route(k.route_src, k.dst, k.hop), e.a, e.t);
      break;
    }
    case kSwitchDone: pipe_in(e.b, e.a, e.t); break;
    case kPipeResume: pipe_resume(e.a, e.t); break;
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
  running_ = nodes_;
  res_.active_t_ps.push_back(0);
  res_.active_count.push_back(running_);
  for (int64_t p = 0; p < nodes_; ++p)
    for (int64_t u = 0; u < cfg_.client_units; ++u) {
      node_[p]->busy[u] = 1;
      push(0, kIssue, static_cast<uint32_t>(p), static_cast<uint32_t>(u));
    }
  int64_t now = 0;
  for (;;) {
    while (!heap_.empty()) {
      const Event e = heap_.pop();
      now = e.t;
      ++res_.events;
      handle(e);
    }
    if (running_ == 0) break;
    drain_all(now);
    if (heap_.empty())
      throw std::logic_error("simulator: deadlock, " + std::to_string(running_) + " nodes cannot finish");
  }
  for (int64_t p = 0; p < nodes_; ++p) {
    RigCounters rc;
    for (const auto& u : node_[p]->clients) rc.add(u.counters);
    NodeCounters& nc = res_.nodes[p];
    nc.idxs = rc.idxs;
    nc.local = rc.local;
    nc.filtered = rc.filtered;
    nc.coalesced = rc.coalesced;
    nc.read_prs = rc.prs;
    nc.responses = rc.responses;
    nc.stalls = rc.stalls;
  }
  flit_finish();
  res_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::move(res_);
}

}  // namespace

SimResult run(const std::vector<int64_t>& indptr, const int64_t* indices, int64_t nnz,
              const std::vector<int64_t>& row_bounds, const std::vector<int64_t>& col_bounds, const SimConfig& cfg,
              const Topo& topo) {
  Sim s(indptr, indices, nnz, row_bounds, col_bounds, cfg, topo);
  return s.run();
}

}  // namespace netsparse::sim
