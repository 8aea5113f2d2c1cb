#pragma once
// Switch middle pipe (paper §6.2.1): the NetSparse logic of a top-of-rack switch, behind the switch
// service and the simulator.
//   read packet:     deconcatenate; look up each PR in the property cache; a hit becomes a response
//                    PR (fields unchanged, cached payload) to the PR's source; a miss goes on
//                    unchanged to the packet's destination; then concatenate per destination.
//   response packet: deconcatenate; insert each property if absent; concatenate to the destination.
// The switch concatenator's delay is the switch's (125 cycles in paper Table 5, §6.1.2).
#include <cstdint>

#include "units/concatenator.h"
#include "units/property_cache.h"

namespace netsparse::units {

struct SwitchPipeCounters {
  int64_t read_packets = 0, response_packets = 0, read_prs = 0, response_prs = 0;
  int64_t hits = 0, misses = 0, inserted = 0;
};

class SwitchPipe {
 public:
  SwitchPipe(const CacheConfig& cache, ConcatConfig concat);
  // Starts a kernel: invalidates the cache, sets the property size (packets must carry this len).
  void begin_kernel(int64_t prop_bytes);
  // Processes back-to-back packets arriving at cycle `now`. Outputs accumulate in stream().
  void process(const uint8_t* buf, int64_t n, int64_t now);
  void advance(int64_t now) { concat_.advance(now); }
  void flush_all(int64_t now) { concat_.flush_all(now); }
  std::vector<uint8_t>& stream(uint16_t type, uint32_t dest) { return concat_.stream(type, dest); }
  Concatenator& concatenator() { return concat_; }
  PropertyCache& cache() { return cache_; }
  SwitchPipeCounters counters;

 private:
  PropertyCache cache_;
  Concatenator concat_;
  std::vector<uint8_t> scratch_;
};

}  // namespace netsparse::units
