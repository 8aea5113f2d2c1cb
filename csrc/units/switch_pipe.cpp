// Switch middle pipe (paper §6.2.1).
#include "units/switch_pipe.h"

#include <algorithm>
#include <string>

#include "units/errors.h"

namespace netsparse::units {

SwitchPipe::SwitchPipe(const CacheConfig& cache, ConcatConfig concat) : cache_(cache), concat_(concat) {}

void SwitchPipe::begin_kernel(int64_t prop_bytes) {
  if (prop_bytes <= 0) throw ConfigInvalid("property size must be > 0 bytes, got " + std::to_string(prop_bytes));
  if (prop_bytes > UINT32_MAX) throw ConfigInvalid("property size does not fit the u32 len field");
  concat_.flush_all(concat_.now());  // a new kernel starts with empty queues
  cache_.invalidate(prop_bytes);
  concat_.begin(static_cast<uint32_t>(prop_bytes));
  scratch_.resize(static_cast<size_t>(prop_bytes));
}

void SwitchPipe::process(const uint8_t* buf, int64_t n, int64_t now) {
  const int64_t n_dests = concat_.config().n_dests;
  // A packet's PRs look up scattered sets: each set is asked for a few PRs ahead, so the misses overlap.
  constexpr int64_t kAhead = 4;
  for_each_packet(buf, n, concat_.max_packet_bytes(), [&](const PacketView& v) {
    if (v.len != cache_.prop_bytes())
      throw WrongPropertySize("packet len " + std::to_string(v.len) + " differs from the kernel's property size " +
                              std::to_string(cache_.prop_bytes()) + "; call begin_kernel first");
    if (v.dest >= n_dests)
      throw UnknownDestination("packet destination " + std::to_string(v.dest) + " out of range [0, " +
                               std::to_string(n_dests) + ")");
    const bool read = v.type == kReadType;
    ++(read ? counters.read_packets : counters.response_packets);
    (read ? counters.read_prs : counters.response_prs) += v.n_prs;
    for (int64_t i = 0; i < std::min<int64_t>(v.n_prs, kAhead); ++i) cache_.prefetch(v.pr(i).idx);
    for (int64_t i = 0; i < v.n_prs; ++i) {
      if (i + kAhead < v.n_prs) cache_.prefetch(v.pr(i + kAhead).idx);
      const PR pr = v.pr(i);
      if (!read) {  // a response: cached on its way to the requester
        if (cache_.insert(pr.idx, v.payload(i))) ++counters.inserted;
        concat_.push(kResponseType, v.dest, pr, v.payload(i), now);
      } else if (cache_.lookup(pr.idx, scratch_.data())) {  // a read the cache answers: back to its source
        if (pr.src >= n_dests)
          throw BadSource("read PR source " + std::to_string(pr.src) + " out of range");
        ++counters.hits;
        concat_.push(kResponseType, pr.src, pr, scratch_.data(), now);
      } else {
        ++counters.misses;
        concat_.push(kReadType, v.dest, pr, nullptr, now);
      }
    }
  });
}

}  // namespace netsparse::units
