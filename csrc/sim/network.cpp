// Links, buffers, credits, routing and the flit layer (see network.h and the top of simulator.cpp).
#include "sim/network.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "units/errors.h"

#include "sim/node.h"
#include "sim/switch.h"

namespace netsparse::sim {
using namespace netsparse::units;

Network::Network(SimContext& x) : x_(x) {
  const Topo& topo = x.topo;
  const int64_t h = x.nodes;
  const int64_t n_links = static_cast<int64_t>(topo.link_src.size());
  if (static_cast<int64_t>(topo.routes.size()) != h * h * topo.max_hops || topo.max_hops <= 0)
    throw units::ConfigInvalid("simulator: route table must be [hosts, hosts, max_hops]");
  for (int64_t l : topo.routes)
    if (l >= n_links) throw units::ConfigInvalid("simulator: route names an unknown link");
  for (int64_t l = 0; l < n_links; ++l)
    if (topo.link_src[l ^ 1] != topo.link_dst[l] || topo.link_dst[l ^ 1] != topo.link_src[l])
      throw units::ConfigInvalid("simulator: links must come in cable pairs (2k, 2k+1 = both directions)");
  // Host attachment, the ToR -> host links and the switches' ports.
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
  for (int64_t v = 0; v < h; ++v) {
    if (host_sw[v] < 0 || down_link_[v] < 0) throw units::ConfigInvalid("simulator: a host has no switch link");
    sw_hosts_[host_sw[v]].push_back(v);
  }
  out_q_.resize(n_links);
  in_flight_.resize(n_links);
  link_free_.assign(n_links, 0);
  tx_armed_.assign(n_links, 0);
  deliver_ps_.resize(n_links);
  for (int64_t l = 0; l < n_links; ++l)
    deliver_ps_[l] = topo.link_latency_ps[l] + (topo.link_dst[l] >= h ? x.cfg.switch_ps : 0);
  link_blocked_.assign(n_links, 0);
  pool_.resize(h + topo.n_switches);
  for (int64_t v = 0; v < h + topo.n_switches; ++v) {
    pool_[v].avail = v < h ? x.cfg.rx_buffer_bytes : x.cfg.switch_buffer_bytes;
    pool_[v].credit_ps = kNever;
  }
  for (int64_t l = 0; l < n_links; ++l) {
    int64_t& c = pool_[topo.link_dst[l]].credit_ps;
    c = std::min(c, topo.link_latency_ps[l]);
  }
  for (auto& pl : pool_)
    if (pl.credit_ps == kNever) pl.credit_ps = 0;
  if (x.cfg.flit_layer) flit_setup();
}

void Network::handle(const Event& e) {
  switch (e.kind()) {
    case kTxDone:
      tx_armed_[e.a] = 0;
      try_start(e.a, e.t);
      break;
    case kArrive: arrive(e.a, e.b, e.t); break;
    case kLinkArrive: arrive(x_.events.stream_pop(in_flight_[e.a], e), e.a, e.t); break;
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
    default: throw std::logic_error("simulator: not a network event");
  }
}

void Network::enqueue(int64_t link, uint32_t p, int64_t t) {
  if (link < 0) throw std::logic_error("simulator: packet routed past the end of its path");
  out_q_[link].push_back(p);
  try_start(link, t);
}

void Network::occupy(int64_t v, int64_t bytes) {
  Pool& pl = pool_[v];
  pl.avail -= bytes;
  pl.used += bytes;
  pl.peak = std::max(pl.peak, pl.used);
}

// `bytes` leave vertex v's buffer at `at` (maybe later than now); the senders see the credit one link
// latency after that.
void Network::release(int64_t v, int64_t bytes, int64_t at) {
  Pool& pl = pool_[v];
  pl.used -= bytes;
  const int64_t seen = at + pl.credit_ps;
  auto it = pl.returns.end();
  while (it != pl.returns.begin() && std::prev(it)->first > seen) --it;
  pl.returns.insert(it, {seen, bytes});
  if (!pl.blocked.empty() && seen < pl.armed) {
    pl.armed = seen;
    x_.events.push(seen, kCredit, static_cast<uint32_t>(v));
  }
}

void Network::refresh(Pool& pl, int64_t t) {
  while (!pl.returns.empty() && pl.returns.front().first <= t) {
    pl.avail += pl.returns.front().second;
    pl.returns.pop_front();
  }
}

// Whether link may start a packet of `wire` bytes now. Links into and out of hosts wait for credit
// (lossless); switch -> switch links never wait (see the top of simulator.cpp).
bool Network::credit(int64_t link, int64_t wire, int64_t t) {
  const int64_t v = x_.topo.link_dst[link];
  if (v >= x_.nodes && x_.topo.link_src[link] >= x_.nodes) return true;
  Pool& pl = pool_[v];
  refresh(pl, t);
  if (pl.avail >= wire) return true;
  if (!link_blocked_[link]) {
    link_blocked_[link] = 1;
    pl.blocked.push_back(link);
    if (v < x_.nodes) ++x_.res.nodes[v].credit_waits;
    else ++x_.res.switches[v - x_.nodes].credit_waits;
  }
  if (!pl.returns.empty() && pl.returns.front().first < pl.armed) {
    pl.armed = pl.returns.front().first;
    x_.events.push(pl.armed, kCredit, static_cast<uint32_t>(v));
  }
  return false;
}

void Network::retry_blocked(int64_t v, int64_t t) {
  Pool& pl = pool_[v];
  pl.armed = kNever;
  std::vector<int64_t> links;
  links.swap(pl.blocked);
  for (int64_t l : links) link_blocked_[l] = 0;
  for (int64_t l : links) try_start(l, t);
}

void Network::try_start(int64_t link, int64_t t) {
  if (!flit_slot_.empty() && flit_slot_[link] >= 0) return flit_start(link, t);
  if (out_q_[link].empty()) return;
  if (link_free_[link] > t) {  // a packet is on the wire: look again when it is out (one event, not per packet)
    if (!tx_armed_[link]) {
      tx_armed_[link] = 1;
      x_.events.push(link_free_[link], kTxDone, static_cast<uint32_t>(link));
    }
    return;
  }
  const uint32_t p = out_q_[link].front();
  const int64_t wire = x_.pkts[p].wire;
  if (!credit(link, wire, t)) return;
  leave_queue(link, t);
  const double ser = static_cast<double>(wire) * 1e12 / x_.topo.link_bytes_per_s[link];
  link_free_[link] = t + static_cast<int64_t>(std::ceil(ser - 1e-6));
  // A switch has the packet switch latency after its last bit arrived (store-and-forward).
  x_.events.stream_push(in_flight_[link], link_free_[link] + deliver_ps_[link], kLinkArrive,
                        static_cast<uint32_t>(link), p);
  if (!out_q_[link].empty() && !tx_armed_[link]) {  // the next packet starts when this one is out
    tx_armed_[link] = 1;
    x_.events.push(link_free_[link], kTxDone, static_cast<uint32_t>(link));
  }
}

// The head packet of link's queue starts on the link: it leaves the buffer it was in (a switch's, or
// the source host's Tx buffer) and takes room in the next vertex's buffer.
void Network::leave_queue(int64_t link, int64_t t) {
  const uint32_t p = out_q_[link].front();
  out_q_[link].pop_front();
  Packet& k = x_.pkts[p];
  const int64_t src = x_.topo.link_src[link];
  if (k.at >= 0) release(k.at, k.wire, t);
  if (src < x_.nodes) nodes_->tx_left(static_cast<uint32_t>(src), k.wire, t);
  k.at = x_.topo.link_dst[link];
  occupy(k.at, k.wire);
  if (k.at < x_.nodes) {
    NodeCounters& nc = x_.res.nodes[k.at];
    nc.rx_peak = std::max(nc.rx_peak, pool_[k.at].used);
  } else {
    SwitchCounters& sc = x_.res.switches[k.at - x_.nodes];
    sc.buffer_peak = std::max(sc.buffer_peak, pool_[k.at].used);
  }
}

void Network::arrive(uint32_t p, int64_t link, int64_t t) {
  const int64_t v = x_.topo.link_dst[link];
  hop(x_.pkts[p].h, link, t);
  if (v < x_.nodes) return nodes_->receive(static_cast<uint32_t>(v), p, t);
  const int64_t s = v - x_.nodes;
  ++x_.res.switches[s].packets_in;
  if (switches_->extended(s)) return switches_->arrive(s, p, link, t);
  Packet& k = x_.pkts[p];  // a plain switch forwards the packet on its route
  ++k.hop;
  enqueue(k.route_src < 0 ? down_link_[k.dst] : route(k.route_src, k.dst, k.hop), p, t);
}

// The packet's hop since it was made or last arrived: the wait, serialisation and propagation are the
// Tx link's from a host, the Rx link's into a host, else the switch-to-switch links; a switch's latency is kept apart.
void Network::hop(Hops& h, int64_t link, int64_t t) const {
  const int64_t span = t - h.mark;
  const int64_t latency = x_.topo.link_dst[link] >= x_.nodes ? std::min(x_.cfg.switch_ps, span) : 0;
  const bool from_host = x_.topo.link_src[link] < x_.nodes, to_host = x_.topo.link_dst[link] < x_.nodes;
  (from_host ? h.tx : to_host ? h.rx : h.links) += span - latency;  // the switch latency is what a journey leaves
  h.mark = t;
}

// ---- flit layer (NetCrafter, docs/seeds.md) ----

// The flit layer covers every switch -> switch link (ToR <-> spine in a leaf-spine: the inter-rack links).
void Network::flit_setup() {
  const FlitLinkConfig& fc = x_.cfg.flit;
  fc.validate();
  const Topo& topo = x_.topo;
  const int64_t n_links = static_cast<int64_t>(topo.link_src.size());
  flit_slot_.assign(n_links, -1);
  for (int64_t l = 0; l < n_links; ++l) {
    if (topo.link_src[l] < x_.nodes || topo.link_dst[l] < x_.nodes) continue;
    flit_slot_[l] = static_cast<int64_t>(x_.res.flit_links.size());
    FlitLinkResult r;
    r.link = l;
    r.flit_ps = static_cast<double>(fc.flit_bytes) * 1e12 / topo.link_bytes_per_s[l];
    x_.res.flit_links.push_back(r);
    flit_state_.emplace_back(fc);
    // one flit per cycle: the flit clock runs at line rate / flit bytes
    flit_clock_.push_back(Clock{topo.link_bytes_per_s[l] / static_cast<double>(fc.flit_bytes) / 1e9});
  }
  flit_ids_.resize(x_.res.flit_links.size());
  flit_armed_.assign(x_.res.flit_links.size(), kNever);
}

// Flit link (closed loop): every queued packet enters the flit unit's egress queue at once (so
// same-destination packets queued behind each other can be stitched; switch -> switch links never wait
// for credit); the unit decides when each packet's last flit leaves, and a tick event at its
// next_event() collects them.
void Network::flit_start(int64_t link, int64_t t) {
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
    const Packet& k = x_.pkts[p];
    st.push(FlitPacket{cyc, k.dst, k.header, k.payload, -1, k.type == kResponseType ? 1 : 0});
    flit_ids_[i].push_back(p);
    x_.res.flit_links[i].packet_bytes += k.wire;
  }
  flit_tick(link, t);
}

// Collects the packets whose last flit has left by now (they arrive link latency after it) and arms
// the next tick.
void Network::flit_tick(int64_t link, int64_t t) {
  const int64_t i = flit_slot_[link];
  FlitLinkState& st = flit_state_[i];
  const Clock& ck = flit_clock_[i];
  st.advance(ck.cycle(t));
  FlitLinkResult& r = x_.res.flit_links[i];
  for (const auto& [id, done] : st.completed()) {
    const int64_t end = ck.ps(done);
    r.flit_finish_ps = std::max(r.flit_finish_ps, end);
    x_.events.push(std::max(t, end + deliver_ps_[link]), kArrive, flit_ids_[i][id], static_cast<uint32_t>(link));
  }
  st.completed().clear();
  const int64_t e = st.next_event();
  if (e == INT64_MAX) return;
  const int64_t at = std::max(t, ck.ps(e));
  if (at < flit_armed_[i]) {
    flit_armed_[i] = at;
    x_.events.push(at, kFlitTick, static_cast<uint32_t>(link));
  }
}

void Network::finish() {
  for (size_t i = 0; i < flit_state_.size(); ++i) x_.res.flit_links[i].stats = flit_state_[i].stats();
}

}  // namespace netsparse::sim
