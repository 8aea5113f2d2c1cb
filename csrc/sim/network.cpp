// Routes, the packet network's links, buffers and credits (see network_api.h, network.h and the top
// of simulator.cpp).
#include "sim/network.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "units/errors.h"

#include "sim/flit_network.h"
#include "sim/node.h"
#include "sim/switch.h"

namespace netsparse::sim {
using namespace netsparse::units;

Routes::Routes(const Topo& topo, int64_t hosts) : topo_(topo), hosts_(hosts) {
  const int64_t h = hosts;
  const int64_t n_links = static_cast<int64_t>(topo.link_src.size());
  if (topo.paths < 1 || topo.paths > 65535 || topo.max_hops <= 0 ||
      static_cast<int64_t>(topo.routes.size()) != topo.paths * h * h * topo.max_hops)
    throw units::ConfigInvalid("simulator: route table must be [paths (1..65535), hosts, hosts, max_hops]");
  if (topo.paths > 1) turn_.assign(h * h, 0);
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
}

std::unique_ptr<NetworkApi> make_network(SimContext& ctx, const Observe& obs) {
  if (ctx.cfg.flit_layer) {
    if (obs.link_stats_bin_ps != kLinkStatsOff)
      throw units::ConfigInvalid("simulator: link statistics cover packet links; the flit layer's links report "
                                 "their own totals (link_layer)");
    return std::make_unique<FlitNetwork>(ctx, obs.log_hops);
  }
  auto net = std::make_unique<PacketNetwork>(ctx, obs.log_hops);
  if (obs.link_stats_bin_ps != kLinkStatsOff)
    net->record_link_stats(obs.link_stats_bin_ps);
  return net;
}

PacketNetwork::PacketNetwork(SimContext& ctx, bool log_hops) : NetworkApi(ctx), log_(log_hops) {
  const Topo& topo = ctx.topo;
  const int64_t h = ctx.nodes;
  const int64_t n_links = static_cast<int64_t>(topo.link_src.size());
  out_q_.resize(n_links);
  in_flight_.resize(n_links);
  link_free_.assign(n_links, 0);
  tx_armed_.assign(n_links, 0);
  deliver_ps_.resize(n_links);
  for (int64_t l = 0; l < n_links; ++l)
    deliver_ps_[l] = topo.link_latency_ps[l] + (topo.link_dst[l] >= h ? ctx.cfg.switch_ps : 0);
  link_blocked_.assign(n_links, 0);
  pool_.resize(h + topo.n_switches);
  for (int64_t v = 0; v < h + topo.n_switches; ++v) {
    pool_[v].avail = v < h ? ctx.cfg.rx_buffer_bytes : ctx.cfg.switch_buffer_bytes;
    pool_[v].credit_ps = kNever;
  }
  for (int64_t l = 0; l < n_links; ++l) {
    int64_t& c = pool_[topo.link_dst[l]].credit_ps;
    c = std::min(c, topo.link_latency_ps[l]);
  }
  for (auto& pl : pool_)
    if (pl.credit_ps == kNever) pl.credit_ps = 0;
}

void PacketNetwork::finish() {
  if (stats_) ctx_.res.link_stats = stats_->finish();
}

void PacketNetwork::handle(const Event& e) {
  switch (e.kind()) {
    case kTxDone:
      tx_armed_[e.a] = 0;
      start(e.a, e.t);
      break;
    case kLinkArrive: arrive(ctx_.events.stream_pop(in_flight_[e.a], e), e.a, e.t); break;
    case kCredit:
      if (pool_[e.a].armed != e.t) break;
      retry_blocked(e.a, e.t);
      break;
    default: throw units::InternalError("simulator: not a network event");
  }
}

void PacketNetwork::send(int64_t link, uint32_t p, int64_t t) {
  if (log_) {
    if (serial_.size() <= p) {
      serial_.resize(p + 1);
      open_row_.resize(p + 1);
    }
    serial_[p] = serials_++;
    const Packet& k = ctx_.pkts[p];
    ctx_.res.hops.push_back(HopRow{HopRow::kSent, serial_[p], ctx_.topo.link_src[link], k.wire, t, t, t});
  }
  enqueue(link, p, t);
}

void PacketNetwork::enqueue(int64_t link, uint32_t p, int64_t t) {
  if (link < 0) throw units::InternalError("simulator: packet routed past the end of its path");
  out_q_[link].push_back(p);
  if (stats_) stats_->queue(link, t, 1);
  if (log_) {
    open_row_[p] = static_cast<int64_t>(ctx_.res.hops.size());
    ctx_.res.hops.push_back(HopRow{HopRow::kHop, serial_[p], link, ctx_.pkts[p].wire, t});
  }
  start(link, t);
}

void PacketNetwork::occupy(int64_t v, int64_t bytes) {
  Pool& pl = pool_[v];
  pl.avail -= bytes;
  pl.used += bytes;
  pl.peak = std::max(pl.peak, pl.used);
}

// `bytes` leave vertex v's buffer at `at` (maybe later than now); the senders see the credit one link
// latency after that.
void PacketNetwork::release(int64_t v, int64_t bytes, int64_t at) {
  Pool& pl = pool_[v];
  pl.used -= bytes;
  const int64_t seen = at + pl.credit_ps;
  auto it = pl.returns.end();
  while (it != pl.returns.begin() && std::prev(it)->first > seen) --it;
  pl.returns.insert(it, {seen, bytes});
  if (!pl.blocked.empty() && seen < pl.armed) {
    pl.armed = seen;
    ctx_.events.push(seen, kCredit, static_cast<uint32_t>(v));
  }
}

void PacketNetwork::refresh(Pool& pl, int64_t t) {
  while (!pl.returns.empty() && pl.returns.front().first <= t) {
    pl.avail += pl.returns.front().second;
    pl.returns.pop_front();
  }
}

// Whether link may start a packet of `wire` bytes now. Links into and out of hosts wait for credit
// (lossless); switch -> switch links never wait (see the top of simulator.cpp).
bool PacketNetwork::credit(int64_t link, int64_t wire, int64_t t) {
  if (!waits_for_credit(link)) return true;
  const int64_t v = ctx_.topo.link_dst[link];
  Pool& pl = pool_[v];
  refresh(pl, t);
  if (pl.avail >= wire) return true;
  if (!link_blocked_[link]) {
    link_blocked_[link] = 1;
    pl.blocked.push_back(link);
    if (v < ctx_.nodes) ++ctx_.res.nodes[v].credit_waits;
    else ++ctx_.res.switches[v - ctx_.nodes].credit_waits;
  }
  if (!pl.returns.empty() && pl.returns.front().first < pl.armed) {
    pl.armed = pl.returns.front().first;
    ctx_.events.push(pl.armed, kCredit, static_cast<uint32_t>(v));
  }
  return false;
}

void PacketNetwork::retry_blocked(int64_t v, int64_t t) {
  Pool& pl = pool_[v];
  pl.armed = kNever;
  std::vector<int64_t> links;
  links.swap(pl.blocked);
  for (int64_t l : links) link_blocked_[l] = 0;
  for (int64_t l : links) start(l, t);
}

void PacketNetwork::serialise(int64_t link, int64_t t) {
  if (out_q_[link].empty()) return;
  if (link_free_[link] > t) {  // a packet is on the wire: look again when it is out (one event, not per packet)
    if (!tx_armed_[link]) {
      tx_armed_[link] = 1;
      ctx_.events.push(link_free_[link], kTxDone, static_cast<uint32_t>(link));
    }
    return;
  }
  const uint32_t p = out_q_[link].front();
  const int64_t wire = ctx_.pkts[p].wire;
  if (!credit(link, wire, t)) return;
  leave_queue(link, t);
  const double ser = static_cast<double>(wire) * 1e12 / ctx_.topo.link_bytes_per_s[link];
  link_free_[link] = t + static_cast<int64_t>(std::ceil(ser - 1e-6));
  if (stats_) stats_->busy(link, t, link_free_[link], wire);
  // A switch has the packet switch latency after its last bit arrived (store-and-forward).
  ctx_.events.stream_push(in_flight_[link], link_free_[link] + deliver_ps_[link], kLinkArrive,
                          static_cast<uint32_t>(link), p);
  if (!out_q_[link].empty() && !tx_armed_[link]) {  // the next packet starts when this one is out
    tx_armed_[link] = 1;
    ctx_.events.push(link_free_[link], kTxDone, static_cast<uint32_t>(link));
  }
}

// The head packet of link's queue starts on the link: it leaves the buffer it was in (a switch's, or
// the source host's Tx buffer) and takes room in the next vertex's buffer.
void PacketNetwork::leave_queue(int64_t link, int64_t t) {
  const uint32_t p = out_q_[link].front();
  out_q_[link].pop_front();
  if (stats_) stats_->queue(link, t, -1);
  Packet& k = ctx_.pkts[p];
  const int64_t src = ctx_.topo.link_src[link];
  if (k.at >= 0) release(k.at, k.wire, t);
  if (src < ctx_.nodes) nodes_->tx_left(static_cast<uint32_t>(src), k.wire, t);
  k.at = ctx_.topo.link_dst[link];
  occupy(k.at, k.wire);
  if (k.at < ctx_.nodes) {
    NodeCounters& nc = ctx_.res.nodes[k.at];
    nc.rx_peak = std::max(nc.rx_peak, pool_[k.at].used);
  } else {
    SwitchCounters& sc = ctx_.res.switches[k.at - ctx_.nodes];
    sc.buffer_peak = std::max(sc.buffer_peak, pool_[k.at].used);
  }
  if (log_) {
    HopRow& row = ctx_.res.hops[open_row_[p]];
    row.start = t;
    if (waits_for_credit(link)) row.avail = pool_[k.at].avail;
  }
}

void PacketNetwork::arrive(uint32_t p, int64_t link, int64_t t) {
  const int64_t v = ctx_.topo.link_dst[link];
  hop(ctx_.pkts[p].h, link, t);
  const bool to_host = v < ctx_.nodes;
  if (log_) {
    ctx_.res.hops[open_row_[p]].arrive = t;
    if (to_host || switches_->extended(v - ctx_.nodes))
      ctx_.res.hops.push_back(HopRow{HopRow::kDelivered, serial_[p], v, ctx_.pkts[p].wire, t, t, t});
  }
  if (to_host) return nodes_->receive(static_cast<uint32_t>(v), p, t);
  const int64_t s = v - ctx_.nodes;
  ++ctx_.res.switches[s].packets_in;
  if (switches_->extended(s)) return switches_->arrive(s, p, link, t);
  Packet& k = ctx_.pkts[p];  // a plain switch forwards the packet on its route
  ++k.hop;
  enqueue(k.route_src < 0 ? routes_.down_link(k.dst) : routes_.route(k.route_src, k.dst, k.hop, k.path), p, t);
}

// The packet's hop since it was made or last arrived: the wait, serialisation and propagation are the
// Tx link's from a host, the Rx link's into a host, else the switch-to-switch links; a switch's latency is kept apart.
void PacketNetwork::hop(Hops& h, int64_t link, int64_t t) const {
  const int64_t span = t - h.mark;
  const int64_t latency = ctx_.topo.link_dst[link] >= ctx_.nodes ? std::min(ctx_.cfg.switch_ps, span) : 0;
  const bool from_host = ctx_.topo.link_src[link] < ctx_.nodes, to_host = ctx_.topo.link_dst[link] < ctx_.nodes;
  (from_host ? h.tx : to_host ? h.rx : h.links) += span - latency;  // the switch latency is what a journey leaves
  h.mark = t;
}

}  // namespace netsparse::sim
