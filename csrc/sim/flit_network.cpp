// NetCrafter flit links between switches (see flit_network.h, docs/seeds.md).
#include "sim/flit_network.h"

#include <algorithm>
#include <stdexcept>

namespace netsparse::sim {
using namespace netsparse::units;

// The flit links are every switch -> switch link (ToR <-> spine in a leaf-spine: the inter-rack links).
FlitNetwork::FlitNetwork(SimContext& ctx, bool log_hops) : PacketNetwork(ctx, log_hops) {
  const FlitLinkConfig& fc = ctx.cfg.flit;
  fc.validate();
  const Topo& topo = ctx.topo;
  const int64_t n_links = static_cast<int64_t>(topo.link_src.size());
  slot_.assign(n_links, -1);
  for (int64_t l = 0; l < n_links; ++l) {
    if (topo.link_src[l] < ctx.nodes || topo.link_dst[l] < ctx.nodes) continue;
    slot_[l] = static_cast<int64_t>(ctx.res.flit_links.size());
    FlitLinkResult r;
    r.link = l;
    r.flit_ps = static_cast<double>(fc.flit_bytes) * 1e12 / topo.link_bytes_per_s[l];
    ctx.res.flit_links.push_back(r);
    state_.emplace_back(fc);
    // one flit per cycle: the flit clock runs at line rate / flit bytes
    clock_.push_back(Clock{topo.link_bytes_per_s[l] / static_cast<double>(fc.flit_bytes) / 1e9});
  }
  ids_.resize(ctx.res.flit_links.size());
  armed_.assign(ctx.res.flit_links.size(), kNever);
}

void FlitNetwork::handle(const Event& e) {
  switch (e.kind()) {
    case kArrive: arrive(e.a, e.b, e.t); break;
    case kFlitTick: {
      const int64_t i = slot_[e.a];
      if (armed_[i] != e.t) break;  // superseded by an earlier tick
      armed_[i] = kNever;
      flit_tick(e.a, e.t);
      break;
    }
    default: PacketNetwork::handle(e);
  }
}

void FlitNetwork::start(int64_t link, int64_t t) {
  if (slot_[link] < 0) return serialise(link, t);
  flit_start(link, t);
}

// Flit link (closed loop): every queued packet enters the flit unit's egress queue at once (so
// same-destination packets queued behind each other can be stitched; switch -> switch links never wait
// for credit); the unit decides when each packet's last flit leaves, and a tick event at its
// next_event() collects them.
void FlitNetwork::flit_start(int64_t link, int64_t t) {
  const int64_t i = slot_[link];
  FlitLinkState& st = state_[i];
  const Clock& ck = clock_[i];
  st.advance(ck.cycle(t));  // the link runs up to now before anything new arrives
  // a packet enters at the first flit-cycle boundary at or after now (it cannot start before it arrived)
  const int64_t cyc = ck.up(t);
  auto& q = out_q_[link];
  while (!q.empty()) {
    const uint32_t p = q.front();
    leave_queue(link, t);
    const Packet& k = ctx_.pkts[p];
    st.push(FlitPacket{cyc, k.dst, k.header, k.payload, -1, k.type == kResponseType ? 1 : 0});
    ids_[i].push_back(p);
    ctx_.res.flit_links[i].packet_bytes += k.wire;
  }
  flit_tick(link, t);
}

// Collects the packets whose last flit has left by now (they arrive link latency after it) and arms
// the next tick.
void FlitNetwork::flit_tick(int64_t link, int64_t t) {
  const int64_t i = slot_[link];
  FlitLinkState& st = state_[i];
  const Clock& ck = clock_[i];
  st.advance(ck.cycle(t));
  FlitLinkResult& r = ctx_.res.flit_links[i];
  for (const auto& [id, done] : st.completed()) {
    const int64_t end = ck.ps(done);
    r.flit_finish_ps = std::max(r.flit_finish_ps, end);
    ctx_.events.push(std::max(t, end + deliver_ps_[link]), kArrive, ids_[i][id], static_cast<uint32_t>(link));
  }
  st.completed().clear();
  const int64_t e = st.next_event();
  if (e == INT64_MAX) return;
  const int64_t at = std::max(t, ck.ps(e));
  if (at < armed_[i]) {
    armed_[i] = at;
    ctx_.events.push(at, kFlitTick, static_cast<uint32_t>(link));
  }
}

void FlitNetwork::finish() {
  for (size_t i = 0; i < state_.size(); ++i) ctx_.res.flit_links[i].stats = state_[i].stats();
}

}  // namespace netsparse::sim
