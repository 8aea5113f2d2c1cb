// Packets in flight (see packets.h).
#include "sim/packets.h"

namespace netsparse::sim {
using namespace netsparse::units;

// A packet from a concatenator's output; `whole` is its stream when the packet is all of it, then the
// bytes move into the packet (buffer swap, no copy) and the stream gets the recycled buffer.
uint32_t Packets::make(const PacketView& v, std::vector<uint8_t>* whole) {
  uint32_t p;
  if (!free_.empty()) {
    p = free_.back();
    free_.pop_back();
  } else {
    p = static_cast<uint32_t>(pkts_.size());
    pkts_.emplace_back();
  }
  Packet& k = pkts_[p];
  if (whole) {
    k.bytes.swap(*whole);
    whole->clear();
  } else {
    const uint8_t* start = v.prs - kConcatHeaderBytes;
    k.bytes.assign(start, start + v.bytes);
  }
  k.type = v.type;
  k.n_prs = v.n_prs;
  k.dst = v.dest;
  const ByteCount b = packet_bytes(hs_, v.n_prs, v.type == kResponseType, prop_bytes_);
  k.header = b.header;
  k.payload = b.payload;
  k.wire = b.total();
  k.hop = 0;
  k.at = -1;
  k.route_src = -1;
  k.path = 0;
  k.h = Hops{};
  max_wire_ = std::max(max_wire_, k.wire);
  return p;
}

}  // namespace netsparse::sim
