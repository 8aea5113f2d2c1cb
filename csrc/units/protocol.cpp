// NetSparse wire protocol (paper Fig. 6): validation of decoded packets.
#include "units/protocol.h"

#include <string>

#include "units/errors.h"

namespace netsparse::units {

int64_t max_prs_per_packet(int64_t mtu, int64_t upper_bytes, uint16_t type, uint32_t len) {
  if (upper_bytes < 0) throw ConfigInvalid("upper-layer header bytes must be >= 0");
  const int64_t room = mtu - upper_bytes - kConcatHeaderBytes;
  const int64_t per_pr = pr_wire_bytes(type, len);
  if (room < per_pr)
    throw ConfigInvalid("MTU " + std::to_string(mtu) + " is smaller than the headers: one " +
                                (type == kResponseType ? "response" : "read") + " PR needs " +
                                std::to_string(upper_bytes + kConcatHeaderBytes + per_pr) + " B (upper " +
                                std::to_string(upper_bytes) + " + concatenation " +
                                std::to_string(kConcatHeaderBytes) + " + PR " + std::to_string(per_pr) + ")");
  return room / per_pr;
}

PacketView decode_packet(const uint8_t* buf, int64_t n, int64_t max_packet_bytes, bool allow_trailing) {
  if (n < kConcatHeaderBytes)
    throw MalformedPacket("malformed packet: truncated concatenation header (" + std::to_string(n) +
                                " B, need " + std::to_string(kConcatHeaderBytes) + ")");
  PacketView v;
  v.type = load_u16(buf);
  v.dest = load_u32(buf + 2);
  v.len = load_u32(buf + 6);
  v.n_prs = load_u32(buf + 10);
  if (v.type != kReadType && v.type != kResponseType)
    throw MalformedPacket("malformed packet: unknown type " + std::to_string(v.type) +
                                " (0 = read, 1 = response)");
  v.prs = buf + kConcatHeaderBytes;
  const int64_t body = n - kConcatHeaderBytes;
  const int64_t stride = v.pr_stride();
  const int64_t need = static_cast<int64_t>(v.n_prs) * stride;
  if (!allow_trailing && need != body) {
    // One packet must be exactly n_prs PRs. The checks run in this order because a damaged buffer can
    // fit several explanations; the first that fits names the problem.
    const std::string got = std::to_string(body) + " B of PRs";
    if (body % stride == 0)  // whole PRs, but not n_prs of them
      throw NPrsMismatch("malformed packet: n_prs=" + std::to_string(v.n_prs) + " disagrees with the length (" +
                                  got + " = " + std::to_string(body / stride) + " PRs)");
    if (v.n_prs > 0 && body % v.n_prs == 0 && body / v.n_prs >= kPRHeaderBytes)  // n_prs PRs, payloads not `len`
      throw MalformedPacket("malformed packet: wrong payload length: each of the " + std::to_string(v.n_prs) +
                                  " PRs carries " + std::to_string(body / v.n_prs - kPRHeaderBytes) +
                                  " B, expected " + std::to_string(stride - kPRHeaderBytes) + " (type " +
                                  std::to_string(v.type) + ", len " + std::to_string(v.len) + ")");
    if (body > need)
      throw NPrsMismatch("malformed packet: n_prs=" + std::to_string(v.n_prs) + " disagrees with the length (" +
                                  got + ", " + std::to_string(body - need) + " B after the last PR)");
  }
  if (need > body) {
    // The header is intact but fewer PRs follow than it announces (a cut-off packet looks the same);
    // with no PR bytes at all, nothing confirms the header.
    const std::string msg = "malformed packet: truncated: n_prs=" + std::to_string(v.n_prs) + " needs " +
                                std::to_string(need) + " B of PRs, buffer has " + std::to_string(body);
    if (body == 0) throw MalformedPacket(msg);
    throw NPrsMismatch(msg);
  }
  v.bytes = kConcatHeaderBytes + need;
  if (v.bytes > max_packet_bytes)
    throw OversizePacket("malformed packet: " + std::to_string(v.bytes) + " B is larger than the MTU allows (" +
                                std::to_string(max_packet_bytes) + " B = MTU - upper-layer header)");
  return v;
}

}  // namespace netsparse::units
