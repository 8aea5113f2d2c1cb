// The extended ToRs' middle pipes (see switch.h and the top of simulator.cpp).
#include "sim/switch.h"

#include <algorithm>
#include <stdexcept>

#include "sim/network_api.h"
#include "units/errors.h"

namespace netsparse::sim {
using namespace netsparse::units;

Switches::Switches(SimContext& ctx, NetworkApi& net) : ctx_(ctx), net_(net) {
  const SimConfig& cfg = ctx.cfg;
  pipes_ = cfg.switch_pipes;
  ports_per_pipe_ = std::max<int64_t>(1, cfg.switch_ports / cfg.switch_pipes);
  lookup_cycles_ = cfg.cache_latency_cycles;
  prs_per_cycle_ = cfg.pipe_prs_per_cycle;
  ConcatConfig sc;
  sc.n_dests = ctx.nodes;
  sc.mtu = cfg.mtu;
  sc.upper_bytes = cfg.upper_bytes;
  sc.delay_cycles = cfg.switch_delay_cycles < 0 ? units::kInfiniteDelay : cfg.switch_delay_cycles;
  pipe_.resize(ctx.topo.n_switches * pipes_);
  pipe_timer_.assign(pipe_.size(), kNever);
  timer_cycle_.assign(pipe_.size(), 0);
  pipe_free_.assign(pipe_.size(), 0);
  pipe_out_.resize(pipe_.size());
  window_.assign(pipe_.size(), -1);
  window_prs_.assign(pipe_.size(), 0);
  if (!cfg.switch_on) return;
  // The simulator's properties are zeros and nobody reads a hit's payload: the caches keep no data.
  CacheConfig cc{cfg.cache_bytes, cfg.cache_ways, cfg.cache_segment, cfg.cache_max_line};
  cc.no_data = true;
  for (int64_t s = 0; s < ctx.topo.n_switches; ++s) {
    if (!ctx.topo.switch_is_tor[s]) continue;
    for (int64_t i = 0; i < pipes_; ++i) {
      auto& sp = pipe_[s * pipes_ + i];
      sp = std::make_unique<SwitchPipe>(cc, sc);
      sp->begin_kernel(cfg.prop_bytes);
      sp->concatenator().keep_log = true;
    }
  }
}

void Switches::handle(const Event& e) {
  switch (e.kind()) {
    case kSwitchTimer: {
      if (pipe_timer_[e.a] != e.t) break;
      pipe_timer_[e.a] = kNever;
      SwitchPipe& sp = *pipe_[e.a];
      sp.advance(std::max(ctx_.sw.cycle(e.t), sp.concatenator().now()));
      ctx_.pkts.take(sp.concatenator(), [&](uint32_t p) { out(e.a, p, e.t); });
      arm(e.a, e.t);
      break;
    }
    case kSwitchDone: run_pipe(e.a, ctx_.events.stream_pop(pipe_out_[e.a], e), e.t); break;
    default: throw units::InternalError("simulator: not a switch event");
  }
}

namespace {
// The sum of floor(x / r) over 0 <= x < m (m: a pipe's backlog, so no overflow).
int64_t floor_sum(int64_t m, int64_t r) {
  const int64_t q = m / r;
  return r * q * (q - 1) / 2 + (m % r) * q;
}
}  // namespace

// The packet's PRs go through one middle pipe, prs_per_cycle_ per switch cycle (issue slots: the
// pipe's slot k is in cycle k / prs_per_cycle_), each entering the pipe's concatenator after the cache
// lookup.
void Switches::arrive(int64_t s, uint32_t p, int64_t in_link, int64_t t) {
  const Packet& k = ctx_.pkts[p];
  const int64_t pipe = s * pipes_ + pipe_of(s, k, in_link);
  const int64_t r = prs_per_cycle_, n = k.n_prs;
  const int64_t in = ctx_.sw.cycle(t);
  const int64_t slot = std::max(in * r, pipe_free_[pipe]);
  const int64_t start = r == 1 ? slot : slot / r, last = r == 1 ? slot + n - 1 : (slot + n - 1) / r;  // no division at 1
  pipe_free_[pipe] = slot + n;
  SwitchCounters& sc = ctx_.res.switches[s];
  sc.pipe_prs += n;
  sc.pipe_wait_cycles += start - in;
  PipeCounters& pc = ctx_.res.pipes[pipe];
  ++pc.packets;
  pc.prs += n;
  if (pc.packets == 1) pc.first_cycle = in;
  pc.last_in_cycle = in;
  pc.last_cycle = last + lookup_cycles_;
  pc.wait_cycles += start - in;
  pc.pr_wait_cycles += r == 1 ? n * (start - in) + n * (n - 1) / 2  // the i-th waits i more
                              : floor_sum(slot - in * r + n, r) - floor_sum(slot - in * r, r);  // to its slot's cycle
  pc.max_wait_cycles = std::max(pc.max_wait_cycles, start - in);
  pc.max_backlog = std::max(pc.max_backlog, pipe_free_[pipe] - in * r);  // slots not taken yet = PRs queued
  if (in >> 10 != window_[pipe]) {
    window_[pipe] = in >> 10;
    window_prs_[pipe] = 0;
  }
  window_prs_[pipe] += n;
  pc.peak_window_prs = std::max(pc.peak_window_prs, window_prs_[pipe]);
  ctx_.events.stream_push(pipe_out_[pipe], ctx_.sw.ps(last + lookup_cycles_), kSwitchDone, static_cast<uint32_t>(pipe), p);
}

// The middle pipe of a packet at extended switch s: a read's egress port, a response's ingress port.
int64_t Switches::pipe_of(int64_t s, const Packet& k, int64_t in_link) const {
  int64_t port;
  if (k.type == kResponseType) {
    port = net_.routes().port(in_link ^ 1);
  } else {
    const int64_t out = k.route_src < 0 ? net_.routes().down_link(k.dst) : net_.routes().route(k.route_src, k.dst, k.hop + 1, k.path);
    if (out < 0 || ctx_.topo.link_src[out] != ctx_.nodes + s) throw units::InternalError("simulator: read packet off its route");
    port = net_.routes().port(out);
  }
  return std::min(port / ports_per_pipe_, pipes_ - 1);
}

void Switches::run_pipe(uint32_t pipe, uint32_t p, int64_t t) {
  const int64_t s = pipe / pipes_;
  Packet& k = ctx_.pkts[p];
  net_.release(ctx_.nodes + s, k.wire, t);  // the pipe consumed the packet
  k.h.middle += t - k.h.mark;  // queued for the pipe, one PR per cycle, cache lookup
  const PacketView v = ctx_.pkts.view(p);
  ctx_.fold_packet(k, v, t);
  SwitchPipe& sp = *pipe_[pipe];
  const SwitchPipeCounters before = sp.counters;
  sp.process(k.bytes.data(), static_cast<int64_t>(k.bytes.size()), std::max(ctx_.sw.cycle(t), sp.concatenator().now()));
  SwitchCounters& sc = ctx_.res.switches[s];
  sc.read_lookups += sp.counters.read_prs - before.read_prs;
  sc.read_hits += sp.counters.hits - before.hits;
  sc.inserts += sp.counters.inserted - before.inserted;
  PipeCounters& pc = ctx_.res.pipes[pipe];
  pc.read_prs += sp.counters.read_prs - before.read_prs;
  pc.hits += sp.counters.hits - before.hits;
  pc.misses += sp.counters.misses - before.misses;
  pc.inserts += sp.counters.inserted - before.inserted;
  ctx_.pkts.free(p);
  ctx_.pkts.take(sp.concatenator(), [&](uint32_t q) { out(pipe, q, t); });
  arm(pipe, t);
}

// A packet made by a pipe of switch s takes room in the switch's buffer and follows the route of its
// first PR: from the requester (read) or the property's owner (response).
void Switches::out(uint32_t pipe, uint32_t p, int64_t t) {
  const int64_t s = pipe / pipes_;
  Packet& k = ctx_.pkts[p];
  k.h.born = k.h.mark = t;
  k.h.born_pipe = static_cast<int32_t>(pipe);
  ++ctx_.res.switches[s].packets_out;
  k.at = ctx_.nodes + s;
  net_.occupy(k.at, k.wire);
  SwitchCounters& sc = ctx_.res.switches[s];
  sc.buffer_peak = std::max(sc.buffer_peak, net_.used(k.at));
  const int64_t down = net_.routes().down_link(k.dst);
  if (ctx_.topo.link_src[down] == ctx_.nodes + s) {  // the destination hangs off this switch
    k.route_src = -1;
    return net_.send(down, p, t);
  }
  const PR first = ctx_.pkts.view(p).pr(0);
  int64_t rep = k.type == kResponseType ? ctx_.map.owner(first.idx) : static_cast<int64_t>(first.src);
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t hop = 0; hop < ctx_.topo.max_hops; ++hop) {
      int64_t l = net_.routes().route(rep, k.dst, hop, 0);
      if (l >= 0 && ctx_.topo.link_src[l] == ctx_.nodes + s) {
        // A pair's paths differ only in the spine, so each leaves this ToR at the same hop.
        k.path = net_.routes().next_path(rep, k.dst);
        l = net_.routes().route(rep, k.dst, hop, k.path);
        if (ctx_.topo.link_src[l] != ctx_.nodes + s)
          throw units::InternalError("simulator: a pair's paths leave a switch at different hops");
        k.route_src = rep;
        k.hop = hop;
        return net_.send(l, p, t);
      }
    }
    rep = net_.routes().hosts_of(s).front();  // the first PR's route does not pass here: a local host's route
  }
  throw units::InternalError("simulator: no route from a switch pipe to the packet's destination");
}

void Switches::arm(uint32_t pipe, int64_t t) {
  const int64_t e = pipe_[pipe]->concatenator().next_expiration();
  if (e == INT64_MAX) return;
  // A timer armed for an expiration no later than e, at an earlier t, is no later than this one would be.
  if (pipe_timer_[pipe] != kNever && e >= timer_cycle_[pipe]) return;
  const int64_t at = std::max(t, ctx_.sw.ps(e));
  if (at < pipe_timer_[pipe]) {
    pipe_timer_[pipe] = at;
    timer_cycle_[pipe] = e;
    ctx_.events.push(at, kSwitchTimer, pipe);
  }
}

void Switches::drain_all(int64_t t) {
  for (size_t i = 0; i < pipe_.size(); ++i)
    if (pipe_[i]) {
      pipe_[i]->flush_all(std::max(ctx_.sw.cycle(t), pipe_[i]->concatenator().now()));
      ctx_.pkts.take(pipe_[i]->concatenator(), [&](uint32_t p) { out(static_cast<uint32_t>(i), p, t); });
    }
}

void Switches::finish() {
  std::vector<PipeCounters> kept;
  for (size_t i = 0; i < pipe_.size() && !ctx_.res.pipes.empty(); ++i) {
    if (!pipe_[i]) continue;
    PipeCounters pc = ctx_.res.pipes[i];
    pc.switch_id = static_cast<int64_t>(i) / pipes_;
    pc.pipe = static_cast<int64_t>(i) % pipes_;
    if (pc.packets == 0) pc.first_cycle = pc.last_in_cycle = pc.last_cycle = -1;
    kept.push_back(pc);
  }
  ctx_.res.pipes = std::move(kept);
}

}  // namespace netsparse::sim
