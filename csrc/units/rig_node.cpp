// One node's NetSparse pipeline: client units + Idx Filter + concatenators + server units.
#include "units/rig_node.h"

#include <algorithm>
#include <string>

#include "units/errors.h"

namespace netsparse::units {

namespace {
ConcatConfig with_dests(ConcatConfig c, int64_t n) {
  c.n_dests = n;
  return c;
}
}  // namespace

RigNode::RigNode(uint32_t node, std::vector<int64_t> row_bounds, RigNodeConfig cfg)
    : cfg_(cfg),
      map_(std::move(row_bounds)),
      reads_(with_dests(cfg.concat, map_.n_nodes())),
      // event-driven: responses share reads_, so this one stays a one-destination stub
      responses_(with_dests(cfg.concat, cfg.event_driven ? 1 : map_.n_nodes())) {
  if (node >= map_.n_nodes())
    throw ConfigInvalid("node " + std::to_string(node) + " out of range [0, " +
                        std::to_string(map_.n_nodes()) + ")");
  // The split is decided in one place (hw_models.unit_args.rig_split); here it is only checked.
  if (cfg_.n_units < 2)
    throw ConfigInvalid("rig_units must be at least 2 (a RIG node needs a client and a server unit), got " +
                        std::to_string(cfg_.n_units));
  const int64_t nc = cfg_.n_client_units;
  if (nc < 1 || nc >= cfg_.n_units || nc > 65535)
    throw ConfigInvalid("rig_client_units must be in 1..rig_units-1 = " + std::to_string(cfg_.n_units - 1) +
                        " (at least one unit serves), got " + std::to_string(nc));
  check_rig_batch(cfg_.batch_size);
  if (cfg_.cycles_per_pr < 0) throw ConfigInvalid("cycles_per_pr must be >= 0");
  for (int64_t t = 0; t < nc; ++t) clients_.emplace_back(static_cast<uint16_t>(t), cfg_.pending_capacity);
  servers_.resize(static_cast<size_t>(cfg_.n_units - nc));
  ctx_.node = node;
  ctx_.map = &map_;
  ctx_.row_start = map_.bounds[node];
  ctx_.row_end = map_.bounds[node + 1];
  ctx_.filter = &filter_;
  ctx_.filter_on = cfg_.filter;
  ctx_.coalesce_on = cfg_.coalesce;
  filter_.reset(map_.n_cols(), !cfg_.event_driven);
  // The packet log is for unit tests and the event loop (which empties it); a round-based node's
  // stream would grow it without bound.
  reads_.keep_log = cfg_.event_driven;
  responses_.keep_log = false;
}

void RigNode::begin_kernel(int64_t prop_bytes, uint8_t* halo, int64_t halo_bytes, const uint8_t* local,
                           int64_t local_bytes) {
  if (prop_bytes <= 0) throw ConfigInvalid("property size must be > 0 bytes, got " + std::to_string(prop_bytes));
  if (prop_bytes > UINT32_MAX) throw ConfigInvalid("property size does not fit the u32 len field");
  if (halo_bytes % prop_bytes != 0)
    throw ConfigInvalid("halo buffer of " + std::to_string(halo_bytes) +
                        " B is not a whole number of properties of " + std::to_string(prop_bytes) + " B");
  const int64_t rows = ctx_.row_end - ctx_.row_start;
  if (local_bytes != rows * prop_bytes)
    throw ConfigInvalid("local property array has " + std::to_string(local_bytes) + " B, expected " +
                        std::to_string(rows) + " owned rows x " + std::to_string(prop_bytes) + " B");
  if (pending() != 0) throw OutOfOrder("begin_kernel while PRs of the previous kernel are pending");
  reads_.flush_all(clock_);
  responses_.flush_all(clock_);
  reads_.begin(static_cast<uint32_t>(prop_bytes));  // throws when a response PR cannot fit the MTU
  responses_.begin(static_cast<uint32_t>(prop_bytes));
  for (auto& u : clients_) u.reset();
  filter_.reset(map_.n_cols(), !cfg_.event_driven);
  ctx_.prop_bytes = static_cast<uint32_t>(prop_bytes);
  ctx_.halo = halo;
  ctx_.n_slots = halo_bytes / prop_bytes;
  ctx_.local = local;
  halo_bytes_ = halo_bytes;
  next_client_ = 0;
  in_kernel_ = true;
}

void RigNode::submit(const int64_t* idxs, const int64_t* slots, int64_t n) {
  if (!in_kernel_) throw OutOfOrder("submit before begin_kernel");
  const uint64_t n_cols = static_cast<uint64_t>(map_.n_cols());
  const uint64_t lo = static_cast<uint64_t>(ctx_.row_start), span = static_cast<uint64_t>(ctx_.row_end - ctx_.row_start);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t idx = static_cast<uint64_t>(idxs[i]);
    if (idx >= n_cols)
      throw ConfigInvalid("idx " + std::to_string(idxs[i]) + " at position " + std::to_string(i) +
                          " out of range [0, " + std::to_string(n_cols) + ")");
    if (idx - lo >= span && static_cast<uint64_t>(slots[i]) >= static_cast<uint64_t>(ctx_.n_slots))
      throw ConfigInvalid("slot " + std::to_string(slots[i]) + " at position " + std::to_string(i) +
                          " out of range [0, " + std::to_string(ctx_.n_slots) + ") of the halo buffer");
  }
  const int64_t clients = static_cast<int64_t>(clients_.size());
  // auto: a training rank runs its rounds without a clock, so it sizes commands from its own idxs
  const int64_t batch = rig_batch(cfg_.batch_size, n, n, clients);
  for (int64_t b = 0; b < n; b += batch) {
    const int64_t m = std::min(batch, n - b);
    clients_[next_client_].enqueue(idxs + b, slots + b, m);
    next_client_ = (next_client_ + 1) % clients;
  }
}

void RigNode::pump_reads(int64_t now) {
  clock_ = std::max(clock_, now);
  for (auto& u : clients_) {
    u.issue(ctx_, [this](uint32_t dest, const PR& pr) {
      reads_.push(kReadType, dest, pr, nullptr, clock_);
      clock_ += cfg_.cycles_per_pr;
    });
  }
  reads_.flush_all(clock_);  // the end of a round is a barrier: nothing waits across rounds
}

void RigNode::serve(const uint8_t* buf, int64_t n) {
  if (!in_kernel_) throw OutOfOrder("serve before begin_kernel");
  const int64_t max_bytes = reads_.max_packet_bytes();
  for_each_packet(buf, n, max_bytes, [&](const PacketView& v) {
    if (v.type != kReadType) throw Misrouted("serve() got a response packet; pass it to absorb()");
    if (v.dest != ctx_.node)
      throw Misrouted("read packet for node " + std::to_string(v.dest) + " reached node " +
                      std::to_string(ctx_.node));
    if (v.len != ctx_.prop_bytes)
      throw WrongPropertySize("read packet len " + std::to_string(v.len) + " differs from the kernel's property size " +
                              std::to_string(ctx_.prop_bytes));
    servers_[next_server_].serve(ctx_, v, [this](uint32_t dest, const PR& pr, const uint8_t* payload) {
      if (dest >= static_cast<uint64_t>(map_.n_nodes()))
        throw BadSource("read PR names source node " + std::to_string(dest) + ", out of range");
      responses_.push(kResponseType, dest, pr, payload, clock_);
    });
    next_server_ = (next_server_ + 1) % static_cast<int64_t>(servers_.size());
  });
  responses_.flush_all(clock_);
}

void RigNode::absorb(const uint8_t* buf, int64_t n) {
  if (!in_kernel_) throw OutOfOrder("absorb before begin_kernel");
  for_each_packet(buf, n, reads_.max_packet_bytes(), [&](const PacketView& v) {
    if (v.type != kResponseType) throw Misrouted("absorb() got a read packet; pass it to serve()");
    if (v.len != ctx_.prop_bytes)
      throw WrongPropertySize("response packet len " + std::to_string(v.len) +
                              " differs from the kernel's property size " + std::to_string(ctx_.prop_bytes));
    for (int64_t i = 0; i < v.n_prs; ++i) {
      const PR pr = v.pr(i);
      if (pr.src != ctx_.node || pr.src_tid >= clients_.size())
        throw Misrouted("response PR for node " + std::to_string(pr.src) + " unit " +
                        std::to_string(pr.src_tid) + " reached node " + std::to_string(ctx_.node));
      clients_[pr.src_tid].on_response(ctx_, pr, v.payload(i));
    }
  });
}

bool RigNode::done() const {
  for (const auto& u : clients_)
    if (!u.finished()) return false;
  return true;
}

int64_t RigNode::pending() const {
  int64_t p = 0;
  for (const auto& u : clients_) p += u.pending();
  return p;
}

void RigNode::reset_stats() {
  for (auto& u : clients_) u.counters = RigCounters{};
  for (auto& u : servers_) u.served = 0;
  reads_.reset_counters();
  responses_.reset_counters();
}

RigNodeStats RigNode::stats() const {
  RigNodeStats s;
  for (const auto& u : clients_) s.rig.add(u.counters);
  for (const auto& u : servers_) s.served_prs += u.served;
  for (int t = 0; t < 2; ++t) {
    const Concatenator& c = t == 0 ? reads_ : responses_;
    s.packets[t] = c.packets[t];
    s.prs[t] = c.prs[t];
    s.encoded_bytes[t] = c.bytes[t];
  }
  return s;
}

}  // namespace netsparse::units
