#pragma once
// Header model: header and payload bytes of a stream of NetSparse packets.
//
// Two size sets are kept explicit because the paper uses both:
//   * table5(): the model defaults of paper Table 5 -- upper layers 50 B, concatenation header 12 B,
//     PR header 18 B. The paper's analytic numbers (Table 3 header share) use these.
//   * wire():   the encoded format of paper Fig. 6 (protocol.h) -- concatenation header 14 B
//     (u16 type + u32 dest + u32 len + u32 n_prs), PR header 18 B, plus the same 50 B upper layers.
// The paper's text also quotes 10, 12 and 14 B for the concatenation header in different places.
#include <cstdint>
#include <vector>

namespace netsparse::units {

struct HeaderSizes {
  int64_t upper = 50;   // Ethernet+IP+transport headers per packet (Table 5)
  int64_t concat = 12;  // concatenation header per packet (Table 5)
  int64_t pr = 18;      // PR header per PR (Table 5 and Fig. 6)

  static HeaderSizes table5() { return HeaderSizes{50, 12, 18}; }
  static HeaderSizes wire() { return HeaderSizes{50, 14, 18}; }
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
