#pragma once
// Header model: header and payload bytes of a stream of NetSparse packets.
//
// Two size sets are kept explicit because the paper uses both:
//   * the modeled sizes of paper Table 5 (upper layers 50 B, concatenation header 12 B, PR header 18 B),
//     which the paper's analytic numbers (Table 3 header share) use: hw_models/unit_args.py builds
//     them from HardwareParams.headers;
//   * wire(upper): the encoded format of paper Fig. 6 (protocol.h) -- concatenation header 14 B
//     (u16 type + u32 dest + u32 len + u32 n_prs), PR header 18 B, plus the given upper layers.
// The paper's text also quotes 10, 12 and 14 B for the concatenation header in different places.
#include <cstdint>
#include <vector>

#include "units/protocol.h"

namespace netsparse::units {

// No value lives here (the model's sizes come from HardwareParams.headers); zero until set.
struct HeaderSizes {
  int64_t upper{};   // Ethernet+IP+transport headers per packet
  int64_t concat{};  // concatenation header per packet
  int64_t pr{};      // PR header per PR

  static HeaderSizes wire(int64_t upper) { return HeaderSizes{upper, kConcatHeaderBytes, kPRHeaderBytes}; }
  void validate() const;
};

struct ByteCount {
  int64_t header = 0;
  int64_t payload = 0;
  int64_t total() const { return header + payload; }
};

// One packet of n_prs PRs; payload = len bytes per PR for responses, none for reads.
ByteCount packet_bytes(const HeaderSizes& h, int64_t n_prs, bool response, int64_t len);

// A stream of packets given as parallel arrays: PRs per packet and whether each is a response.
ByteCount stream_bytes(const HeaderSizes& h, const int64_t* n_prs, const uint8_t* response, int64_t n_packets,
                       int64_t len);

// Header share of SA-style traffic (paper Table 3): every PR travels alone in one read packet and
// its answer in one response packet, K elements of elem_bytes each.
double sa_header_share(const HeaderSizes& h, int64_t k, int64_t elem_bytes);

}  // namespace netsparse::units
