// The nodes, serving side: read packets waiting in the Rx buffer, the server RIG units' PCIe reads,
// client units serving while idle (dynamic unit roles), the Tx buffer, and the NIC concatenator
// that packs the read PRs and responses (see node.h and the timing rules at the top of simulator.cpp).
#include "sim/node.h"

#include <algorithm>

#include "units/errors.h"

#include "sim/network_api.h"

namespace netsparse::sim {
using namespace netsparse::units;

// Read packets waiting in the Rx buffer go to the server unit free first, while one is free and the
// Tx buffer has room.
void Nodes::serve_ready(uint32_t host, int64_t t) {
  Node& n = *node_[host];
  while (!n.rx_wait.empty()) {
    if (n.tx_bytes >= cfg_.tx_buffer_bytes) {
      n.serve_on_drain = true;
      return;
    }
    int64_t first = kNever;
    const uint32_t u = serving_unit(n, t, first);
    if (first > t) return arm_serve(host, first);
    const uint32_t p = n.rx_wait.front();
    n.rx_wait.pop_front();
    serve(host, p, t, u);
  }
}

// The unit that takes the next read packet at t, and (first) when one is free: the server unit free
// first (the lowest index on ties). Dynamic unit roles: an idle client unit takes it instead if its
// first read would start earlier (units server_units + client in n.servers; see idle_client).
uint32_t Nodes::serving_unit(const Node& n, int64_t t, int64_t& first) const {
  uint32_t u = 0;
  for (uint32_t i = 1; i < static_cast<uint32_t>(cfg_.server_units); ++i)
    if (n.servers[i].free < n.servers[u].free) u = i;
  first = n.servers[u].free;
  if (!cfg_.dynamic_units) return u;
  const int64_t start = first <= t ? first_read(n.servers[u], t) : kNever;
  if (start == t + cycle_ps_) return u;  // nothing starts sooner
  return idle_client(n, t, start, u, first);
}

// When a unit free by t (its last read started) would start a packet's first read: the next cycle, or
// when its oldest PCIe read returns if all its LSQ entries are in flight.
int64_t Nodes::first_read(const Server& s, int64_t t) const {
  return std::max(std::max(t, s.free) + cycle_ps_, s.lsq[s.lsq_pos]);
}

// The idle client unit, free by t, whose first read would start soonest and before `beat` (the lowest
// index on ties), else `u`; when no unit is free at t (beat = kNever), first = the earliest time a
// client unit idle then is free (a unit that completes later arms a serve event itself).
uint32_t Nodes::idle_client(const Node& n, int64_t t, int64_t beat, uint32_t u, int64_t& first) const {
  const uint32_t servers = static_cast<uint32_t>(cfg_.server_units);
  const bool none_free = beat == kNever;
  for (uint32_t c = 0; c < n.clients.size(); ++c) {
    const Client& cu = n.clients[c];
    const Server& slot = n.servers[servers + c];
    const int64_t at = std::max(slot.free, cu.idle_from);
    if (std::max(at, t) >= cu.idle_to) continue;  // it holds a command by then
    if (at > t) {
      if (none_free) first = std::min(first, at);
      continue;
    }
    const int64_t start = first_read(slot, t);
    if (start < beat) {
      beat = start;
      u = servers + c;
      first = t;
    }
  }
  return u;
}

void Nodes::arm_serve(uint32_t host, int64_t t) {
  Node& n = *node_[host];
  if (t < n.serve_at) {
    n.serve_at = t;
    ctx_.events.push(t, kServe, host);
  }
}

void Nodes::serve(uint32_t host, uint32_t p, int64_t t, uint32_t u) {
  Node& n = *node_[host];
  Server& s = n.servers[u];
  const bool client = u >= static_cast<uint32_t>(cfg_.server_units);
  const PacketView v = ctx_.pkts.view(p);
  const Packet& pk = ctx_.pkts[p];
  ctx_.fold_packet(pk, v, pk.h.mark);  // from its arrival to its push into the NIC: the server
  RigServerUnit& functional = client ? n.client_serving : n.rig.servers()[u];
  functional.serve(n.rig.context(), v, [&](uint32_t dest, const PR& pr, const uint8_t*) {
    // One property read per SNIC cycle, at most lsq_entries PCIe reads in flight (Table 5 LSQ).
    int64_t start = std::max(t, s.free) + cycle_ps_;
    int64_t& slot = s.lsq[s.lsq_pos];
    start = std::max(start, slot);
    s.free = start;
    slot = start + 2 * cfg_.pcie_ps;
    s.lsq_pos = s.lsq_pos + 1 == s.lsq.size() ? 0 : s.lsq_pos + 1;
    if (dest != pr.src) throw units::InternalError("simulator: a response must go back to its requester");
    if (!s.q.empty() && slot <= s.q.back().t) throw units::InternalError("simulator: server unit push times must increase");
    PrJourney& tr = ctx_.journey_of(pr);
    tr.j[journey(kRemoteServer)] += slot - tr.mark;
    tr.mark = slot;
    const uint64_t seq = ctx_.events.next_seq();
    if (s.q.empty()) ctx_.events.push_seq(slot, seq, kNicPush, host, u);
    s.q.push_back(Response{slot, seq, pr});
  });
  ctx_.res.nodes[host].served += v.n_prs;
  net_.release(host, ctx_.pkts[p].wire, s.free);  // the packet leaves the Rx buffer once its last read started
  ctx_.pkts.free(p);
  if (client) delay_command(host, u - static_cast<uint32_t>(cfg_.server_units), s.free);
}

// Dynamic unit roles: a client unit's next command, if one is on its way, starts no earlier than the
// cycle after the last read of the packet the unit serves started; the wait is charged to remote_server
// (the path has been charged up to the command's first scan cycle by assign, so it appends).
void Nodes::delay_command(uint32_t node, uint32_t unit, int64_t last_read) {
  Client& u = node_[node]->clients[unit];
  if (u.idle_to == kNever) return;  // no command on its way
  Path& pa = u.path;
  const int64_t c = ctx_.snic.cycle(last_read) + 1;
  if (c <= pa.cmd_c) return;
  if (node_[node]->paths[unit].t != ctx_.snic.ps(pa.cmd_c))
    throw units::InternalError("simulator: a client unit served a read packet while it held a RIG command");
  int64_t wait[kBounds] = {};
  wait[kRemoteServer] = ctx_.snic.ps(c) - ctx_.snic.ps(pa.cmd_c);
  node_[node]->paths[unit].charge(ctx_.snic.ps(c), wait);
  pa.cmd_c = pa.fr = c;
  u.next_in = std::max(u.next_in, c);
}

// The head response of server unit `unit` enters the NIC concatenator; the next one becomes the head.
void Nodes::respond(uint32_t node, uint32_t unit, const Event& e) {
  auto& q = node_[node]->servers[unit].q;
  const Response r = q.front();
  if (r.seq != e.seq() || r.t != e.t) throw units::InternalError("simulator: response stream out of order");
  q.pop_front();
  if (!q.empty()) ctx_.events.push_seq(q.front().t, q.front().seq, kNicPush, node, unit);
  nic_push(node, kResponseType, r.pr.src, r.pr, e.t);
}

void Nodes::receive(uint32_t host, uint32_t p, int64_t t) {
  const Packet& k = ctx_.pkts[p];
  NodeCounters& nc = ctx_.res.nodes[host];
  ++nc.packets_rx;
  nc.header_rx += k.header;
  nc.payload_rx += k.payload;
  nc.wire_rx += k.wire;
  Node& n = *node_[host];
  if (k.type == kResponseType) {
    n.writes.push_back(t + cfg_.pcie_ps);
    ctx_.events.push(t + cfg_.pcie_ps, kWrite, p, host);
    return;
  }
  n.rx_wait.push_back(p);
  serve_ready(host, t);
  if (!n.rx_wait.empty()) ++nc.rx_waits;  // FIFO: if anything still waits, this packet does
}

void Nodes::tx_left(uint32_t host, int64_t wire, int64_t t) {
  Node& n = *node_[host];
  n.tx_bytes -= wire;
  if (n.tx_bytes < cfg_.tx_buffer_bytes && (!n.tx_waiters.empty() || n.serve_on_drain)) tx_drained(host, t);
}

// The host's Tx buffer went below its size: waiting client units and read packets go on.
void Nodes::tx_drained(uint32_t host, int64_t t) {
  Node& n = *node_[host];
  for (uint32_t u : n.tx_waiters) ctx_.events.push(t, kIssue, host, u);
  n.tx_waiters.clear();
  if (n.serve_on_drain) {
    n.serve_on_drain = false;
    arm_serve(host, t);
  }
}

void Nodes::nic_push(uint32_t node, uint16_t type, uint32_t dest, const PR& pr, int64_t t) {
  Node& n = *node_[node];
  const uint8_t* payload = type == kResponseType ? local_.data() : nullptr;
  n.rig.nic().push(type, dest, pr, payload, ctx_.snic.cycle(t));
  nic_send(node, t);
  arm_nic(node, t);
}

// Sends every packet the node's NIC concatenator flushed into the Tx buffer and onto the uplink.
void Nodes::nic_send(uint32_t node, int64_t t) {
  Node& n = *node_[node];
  ctx_.pkts.take(n.rig.nic(), [&](uint32_t p) {
    Packet& k = ctx_.pkts[p];
    k.route_src = node;
    k.path = net_.routes().next_path(node, k.dst);
    k.h.born = k.h.mark = t;
    NodeCounters& nc = ctx_.res.nodes[node];
    ++nc.packets_tx;
    nc.prs_tx += k.n_prs;
    nc.header_tx += k.header;
    nc.payload_tx += k.payload;
    nc.wire_tx += k.wire;
    n.tx_bytes += k.wire;
    nc.tx_peak = std::max(nc.tx_peak, n.tx_bytes);
    net_.send(net_.routes().route(node, k.dst, 0, k.path), p, t);
  });
}

void Nodes::arm_nic(uint32_t node, int64_t t) {
  Node& n = *node_[node];
  const int64_t e = n.rig.nic().next_expiration();
  if (e == INT64_MAX) return;
  // A timer armed for an expiration no later than e, at an earlier t, is no later than this one would be.
  if (n.timer != kNever && e >= n.timer_cycle) return;
  const int64_t at = std::max(t, ctx_.snic.ps(e));
  if (at < n.timer) {
    n.timer = at;
    n.timer_cycle = e;
    ctx_.events.push(at, kNicTimer, node);
  }
}

void Nodes::drain_all(int64_t t) {
  for (int64_t p = 0; p < ctx_.nodes; ++p) {
    Concatenator& nic = node_[p]->rig.nic();
    nic.flush_all(std::max(ctx_.snic.cycle(t), nic.now()));
    nic_send(static_cast<uint32_t>(p), t);
  }
}

}  // namespace netsparse::sim
