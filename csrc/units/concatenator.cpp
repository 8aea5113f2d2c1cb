// Concatenator (paper §6.1.2) with optional virtualised queues (§7.2).
#include "units/concatenator.h"

#include <limits>
#include <string>

#include "units/errors.h"

namespace netsparse::units {

namespace {
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

void ConcatConfig::validate() const {
  if (n_dests <= 0 || n_dests > (int64_t{1} << 31))
    throw ConfigInvalid("concatenator needs 1..2^31 destinations, got " + std::to_string(n_dests));
  if (upper_bytes < 0) throw ConfigInvalid("upper-layer header bytes must be >= 0");
  if (mtu - upper_bytes < kConcatHeaderBytes + kPRHeaderBytes)
    throw ConfigInvalid("MTU " + std::to_string(mtu) + " is smaller than the headers (upper " +
                        std::to_string(upper_bytes) + " + concatenation 14 + PR 18 B)");
  if (delay_cycles < 0 && delay_cycles != kInfiniteDelay)
    throw ConfigInvalid("concatenation delay_cycles must be >= 0 or " + std::to_string(kInfiniteDelay) +
                        " (infinite), got " + std::to_string(delay_cycles));
  if (virtual_queues && (phys_queue_bytes <= 0 || phys_queues <= 0))
    throw ConfigInvalid("virtualised queues need phys_queue_bytes > 0 and phys_queues > 0");
}

Concatenator::Concatenator(const ConcatConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  queues_.resize(2 * cfg_.n_dests);
  storage_.resize(static_cast<size_t>(2 * cfg_.n_dests * max_packet_bytes()));
  out_.resize(2 * cfg_.n_dests);
  fifo_.resize(64);
  begin(0);
}

void Concatenator::begin(uint32_t len) {
  if (open_queues_ != 0) throw OutOfOrder("concatenator: begin() with open queues; flush_all() first");
  max_prs_[kReadType] = max_prs_per_packet(cfg_.mtu, cfg_.upper_bytes, kReadType, len);
  max_prs_[kResponseType] = max_prs_per_packet(cfg_.mtu, cfg_.upper_bytes, kResponseType, len);
  if (cfg_.virtual_queues && cfg_.phys_queues * cfg_.phys_queue_bytes < pr_wire_bytes(kResponseType, len))
    throw ConfigInvalid("virtualised queue pool (" + std::to_string(cfg_.phys_queues) + " x " +
                        std::to_string(cfg_.phys_queue_bytes) + " B) cannot hold one PR of " +
                        std::to_string(pr_wire_bytes(kResponseType, len)) + " B");
  len_ = len;
}

void Concatenator::time_error(int64_t now) const {
  throw OutOfOrder("concatenator: time went backwards (" + std::to_string(now) + " < " +
                   std::to_string(now_) + ")");
}

void Concatenator::dest_error(uint16_t type, uint32_t dest) const {
  throw UnknownDestination("concatenator: destination " + std::to_string(dest) + " out of range [0, " +
                           std::to_string(cfg_.n_dests) + ") or unknown type " + std::to_string(type));
}

void Concatenator::fifo_push(const FifoEntry& e) {
  const int64_t cap = static_cast<int64_t>(fifo_.size());
  if (fifo_size_ == cap) {  // grow the ring, keeping FIFO order (stale entries can accumulate)
    std::vector<FifoEntry> bigger(2 * cap);
    for (int64_t i = 0; i < fifo_size_; ++i) bigger[i] = fifo_[(fifo_head_ + i) % cap];
    fifo_.swap(bigger);
    fifo_head_ = 0;
  }
  fifo_[(fifo_head_ + fifo_size_) % fifo_.size()] = e;
  ++fifo_size_;
}

void Concatenator::fifo_pop() {
  fifo_head_ = (fifo_head_ + 1) % static_cast<int64_t>(fifo_.size());
  --fifo_size_;
}

void Concatenator::open(int64_t q, int64_t now) {
  Queue& qu = queues_[q];
  qu.exp = cfg_.delay_cycles < 0 ? kNever : now + cfg_.delay_cycles;
  // Every open queue has one live FIFO entry (also with an infinite delay, where the FIFO gives the
  // age order that the virtualised pool evicts by).
  fifo_push(FifoEntry{q, qu.gen, qu.exp});
  ++open_queues_;
}

void Concatenator::flush(int64_t q, int64_t now, FlushReason why) {
  Queue& qu = queues_[q];
  const uint16_t type = static_cast<uint16_t>(q / cfg_.n_dests);
  const uint32_t dest = static_cast<uint32_t>(q % cfg_.n_dests);
  uint8_t* base = storage_.data() + q * max_packet_bytes();
  encode_concat_header(base, type, dest, len_, qu.n_prs);
  std::vector<uint8_t>& out = out_[q];
  out.insert(out.end(), base, base + qu.used);
  if (keep_log) log_.push_back(PacketRecord{dest, type, qu.n_prs, now, why});
  ++packets[type];
  prs[type] += qu.n_prs;
  bytes[type] += qu.used;
  ++flushes[why];
  pool_used_ -= qu.phys;
  qu.phys = 0;
  qu.used = kConcatHeaderBytes;
  qu.n_prs = 0;
  ++qu.gen;  // makes this queue's FIFO entry stale
  --open_queues_;
}

void Concatenator::advance(int64_t now) {
  while (fifo_size_ != 0) {
    const FifoEntry e = fifo_[fifo_head_];
    const Queue& qu = queues_[e.q];
    const bool live = qu.gen == e.gen && qu.n_prs != 0;
    if (live && e.exp > now) break;
    fifo_pop();
    if (live) flush(e.q, now, kFlushExpired);
  }
}

void Concatenator::flush_all(int64_t now) {
  if (now < now_) time_error(now);
  now_ = now;
  // Oldest first, so the log order matches the expiration order.
  while (fifo_size_ != 0) {
    const FifoEntry e = fifo_[fifo_head_];
    fifo_pop();
    if (queues_[e.q].gen == e.gen && queues_[e.q].n_prs != 0) flush(e.q, now, kFlushAll);
  }
}

void Concatenator::reserve_pool(int64_t q, int64_t pr_bytes, int64_t now) {
  Queue& qu = queues_[q];
  const int64_t data = qu.used - kConcatHeaderBytes;
  int64_t extra = ceil_div(data + pr_bytes, cfg_.phys_queue_bytes) - qu.phys;
  while (pool_used_ + extra > cfg_.phys_queues) {
    // Flush the oldest open logical queue to free its physical queues (possibly q itself).
    const FifoEntry e = fifo_[fifo_head_];
    fifo_pop();
    if (queues_[e.q].gen != e.gen || queues_[e.q].n_prs == 0) continue;
    flush(e.q, now, kFlushPool);
    if (e.q == q) extra = ceil_div(pr_bytes, cfg_.phys_queue_bytes);
  }
  qu.phys += extra;
  pool_used_ += extra;
}

}  // namespace netsparse::units
