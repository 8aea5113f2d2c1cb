#pragma once
// Concatenator (paper §6.1.2): packs PRs bound for the same destination into one packet.
//
// One concatenation queue per (type, destination), each bounded by one packet of at most
// MTU - upper-layer header bytes. A queue's expiration time is the time of its first entry plus
// delay_cycles; the expiration queue is a circular FIFO of {queue, expiration time} (a FIFO suffices
// because the delay is constant, so expirations come out in insertion order). A queue flushes when
// it is full or has expired. Time is a virtual cycle counter supplied by the caller, so the unit is
// deterministic. delay_cycles = 0 gives one PR per packet; a negative delay means "never expire",
// which gives MTU-full packets (plus whatever flush_all() drains at the end).
//
// Virtualised concatenation queues (§7.2, option): the queue bytes come from a fixed pool of
// sub-MTU physical queues linked per destination. When the pool runs dry the oldest open logical
// queue is flushed early (our assumption of the paper's "free a physical queue" policy).
//
// The deconcatenator is decode_packet()/for_each_packet() in protocol.h.
#include <cstdint>
#include <vector>

#include "units/errors.h"
#include "units/protocol.h"

namespace netsparse::units {

// No value lives here: the bindings set every field (from hw_models/unit_args.py, which names each
// value's source in HardwareParams); fields are value-initialised (zero, no virtual queues) until then.
// The one C++ encoding of an infinite concatenation delay (units and simulator alike;
// hw_models/hardware.py writes HardwareParams' inf in it).
inline constexpr int64_t kInfiniteDelay = -1;

struct ConcatConfig {
  int64_t n_dests{};
  int64_t mtu{};          // MTU including the upper-layer header (paper §6.1.2)
  int64_t upper_bytes{};  // upper-layer header per packet (paper Table 5)
  // Concatenation delay in cycles (NIC and switch values: paper Table 5, §6.1.2), or kInfiniteDelay
  // (queues flush only when full or on flush_all()).
  int64_t delay_cycles{};
  bool virtual_queues{};      // §7.2 virtualised concatenation queues
  int64_t phys_queue_bytes{};  // size of one physical queue (virtual mode)
  int64_t phys_queues{};       // physical queues in the pool (virtual mode)
  void validate() const;
};

enum FlushReason : uint8_t { kFlushFull = 0, kFlushExpired = 1, kFlushAll = 2, kFlushPool = 3 };

struct PacketRecord {
  uint32_t dest;
  uint16_t type;
  uint32_t n_prs;
  int64_t time;   // cycle of the flush
  uint8_t reason; // FlushReason
};

class Concatenator {
 public:
  explicit Concatenator(const ConcatConfig& cfg);

  // Starts a kernel with property size `len` (the same for every PR). Queues must be empty.
  // Throws when one PR of either type does not fit in a packet.
  void begin(uint32_t len);
  uint32_t len() const { return len_; }
  const ConcatConfig& config() const { return cfg_; }
  int64_t max_packet_bytes() const { return cfg_.mtu - cfg_.upper_bytes; }
  int64_t max_prs(uint16_t type) const { return max_prs_[type]; }

  // Appends one PR (payload = len bytes for responses, nullptr for reads) at cycle `now`.
  void push(uint16_t type, uint32_t dest, const PR& pr, const uint8_t* payload, int64_t now) {
    if (now < now_) time_error(now);
    now_ = now;
    if (fifo_size_ != 0 && fifo_[fifo_head_].exp <= now) advance(now);
    const int64_t q = static_cast<int64_t>(type) * cfg_.n_dests + dest;
    if (dest >= static_cast<uint64_t>(cfg_.n_dests) || type > kResponseType) dest_error(type, dest);
    Queue& qu = queues_[q];
    const int64_t pr_bytes = pr_wire_bytes(type, len_);
    if (cfg_.virtual_queues) reserve_pool(q, pr_bytes, now);
    if (qu.n_prs == 0) open(q, now);
    uint8_t* base = storage_.data() + q * max_packet_bytes();
    encode_pr(base + qu.used, pr, type == kResponseType ? payload : nullptr, len_);
    qu.used += pr_bytes;
    ++qu.n_prs;
    if (qu.n_prs == max_prs_[type]) flush(q, now, kFlushFull);
    else if (cfg_.delay_cycles >= 0 && now >= qu.exp) flush(q, now, kFlushExpired);
  }

  void advance(int64_t now);    // flushes every expired queue (in expiration order)
  void flush_all(int64_t now);  // flushes every open queue (end of a round / kernel)
  bool empty() const { return open_queues_ == 0; }
  // Cycle at which advance() next has work (the oldest FIFO entry's expiration; may be a stale entry,
  // then advance() just drops it), or INT64_MAX when nothing is queued. The simulator's timer uses it.
  int64_t next_expiration() const { return fifo_size_ != 0 ? fifo_[fifo_head_].exp : INT64_MAX; }
  int64_t now() const { return now_; }

  // Output: back-to-back encoded packets per (type, destination), and a log of every packet.
  std::vector<uint8_t>& stream(uint16_t type, uint32_t dest) { return out_[type * cfg_.n_dests + dest]; }
  std::vector<PacketRecord>& log() { return log_; }
  bool keep_log = true;

  // Counters per type.
  int64_t packets[2] = {0, 0};
  int64_t prs[2] = {0, 0};
  int64_t bytes[2] = {0, 0};  // encoded bytes (without the upper-layer header)
  int64_t flushes[4] = {0, 0, 0, 0};  // by FlushReason
  int64_t pool_in_use() const { return pool_used_; }
  void reset_counters() {
    for (int t = 0; t < 2; ++t) packets[t] = prs[t] = bytes[t] = 0;
    for (auto& f : flushes) f = 0;
  }

 private:
  struct Queue {
    int64_t used = kConcatHeaderBytes;  // bytes written incl. the header slot
    uint32_t n_prs = 0;
    uint32_t gen = 0;
    int64_t exp = 0;
    int64_t phys = 0;  // physical queues held (virtual mode)
  };
  struct FifoEntry {
    int64_t q;
    uint32_t gen;
    int64_t exp;
  };
  void open(int64_t q, int64_t now);
  void flush(int64_t q, int64_t now, FlushReason why);
  void reserve_pool(int64_t q, int64_t pr_bytes, int64_t now);
  void fifo_push(const FifoEntry& e);
  void fifo_pop();
  [[noreturn]] void time_error(int64_t now) const;
  [[noreturn]] void dest_error(uint16_t type, uint32_t dest) const;

  ConcatConfig cfg_;
  uint32_t len_ = 0;
  int64_t max_prs_[2] = {0, 0};
  int64_t now_ = INT64_MIN;
  std::vector<Queue> queues_;
  std::vector<uint8_t> storage_;  // one packet buffer per queue
  std::vector<std::vector<uint8_t>> out_;
  std::vector<PacketRecord> log_;
  std::vector<FifoEntry> fifo_;  // circular
  int64_t fifo_head_ = 0, fifo_size_ = 0;
  int64_t open_queues_ = 0;
  int64_t pool_used_ = 0;
};

}  // namespace netsparse::units
