#pragma once
// NetSparse wire protocol (paper Fig. 6): a packet is one concatenation header followed by n property
// requests (PRs). Little-endian.
//
//   concatenation header (14 B): type u16 (0 = read, 1 = response), dest u32, len u32, n_prs u32
//   PR (18 B):                   src u32, src_tid u16, idx u64, id u32, then `len` payload bytes
//                                for responses (none for reads)
//
// These are the *encoded* sizes of Fig. 6. The header model (header_model.h) separately carries the
// Table 5 sizes (12 B concatenation header) used by the paper's analytic numbers.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace netsparse::units {

constexpr uint16_t kReadType = 0;
constexpr uint16_t kResponseType = 1;
constexpr int64_t kConcatHeaderBytes = 14;  // Fig. 6
constexpr int64_t kPRHeaderBytes = 18;      // Fig. 6

struct PR {
  uint32_t src = 0;      // requesting node
  uint16_t src_tid = 0;  // requesting RIG client unit
  uint64_t idx = 0;      // global column (property row) id
  uint32_t id = 0;       // Pending PR Table entry of the requester
};

// Little-endian stores/loads (x86 and ARM hosts are little-endian; memcpy keeps them alignment-safe).
inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void store_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint16_t load_u16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t load_u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t load_u64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

inline void encode_concat_header(uint8_t* out, uint16_t type, uint32_t dest, uint32_t len, uint32_t n_prs) {
  store_u16(out, type);
  store_u32(out + 2, dest);
  store_u32(out + 6, len);
  store_u32(out + 10, n_prs);
}

// Writes one PR (and its payload when `payload` is non-null) and returns the bytes written.
inline int64_t encode_pr(uint8_t* out, const PR& pr, const uint8_t* payload, uint32_t len) {
  store_u32(out, pr.src);
  store_u16(out + 4, pr.src_tid);
  store_u64(out + 6, pr.idx);
  store_u32(out + 14, pr.id);
  if (payload == nullptr) return kPRHeaderBytes;
  std::memcpy(out + kPRHeaderBytes, payload, len);
  return kPRHeaderBytes + len;
}

inline PR decode_pr(const uint8_t* p) {
  return PR{load_u32(p), load_u16(p + 4), load_u64(p + 6), load_u32(p + 14)};
}

// Bytes of one PR on the wire for a packet type.
inline int64_t pr_wire_bytes(uint16_t type, uint32_t len) {
  return kPRHeaderBytes + (type == kResponseType ? static_cast<int64_t>(len) : 0);
}

// How many PRs fit in one packet of at most mtu - upper_bytes bytes. Throws ConfigInvalid when not
// even one PR fits (an MTU smaller than the headers).
int64_t max_prs_per_packet(int64_t mtu, int64_t upper_bytes, uint16_t type, uint32_t len);

// A validated view of one encoded packet inside a buffer.
struct PacketView {
  uint16_t type = 0;
  uint32_t dest = 0;
  uint32_t len = 0;
  uint32_t n_prs = 0;
  const uint8_t* prs = nullptr;  // first PR
  int64_t bytes = 0;             // total packet bytes
  int64_t pr_stride() const { return pr_wire_bytes(type, len); }
  PR pr(int64_t i) const { return decode_pr(prs + i * pr_stride()); }
  const uint8_t* payload(int64_t i) const { return prs + i * pr_stride() + kPRHeaderBytes; }
};

// Decodes the packet that starts at buf[0] (the buffer may hold more packets after it when
// `allow_trailing`). max_packet_bytes = MTU - upper-layer header. Throws a PacketError subclass
// (units/errors.h) for: truncated buffer, n_prs disagreeing with the length, wrong payload length,
// unknown type, and a packet larger than max_packet_bytes.
PacketView decode_packet(const uint8_t* buf, int64_t n, int64_t max_packet_bytes, bool allow_trailing);

// Calls f(view) for each back-to-back packet of a stream (as produced by the concatenator).
template <class F>
void for_each_packet(const uint8_t* buf, int64_t n, int64_t max_packet_bytes, F&& f) {
  int64_t off = 0;
  while (off < n) {
    PacketView v = decode_packet(buf + off, n - off, max_packet_bytes, true);
    f(v);
    off += v.bytes;
  }
}

}  // namespace netsparse::units
